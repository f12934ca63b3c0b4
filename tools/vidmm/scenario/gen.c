/*
 * gen.c - `vidmm gen`, `vidmm fuzz-scenarios` and `vidmm shrink`: random
 * multi-process scenarios in the scenario language (docs/TRACE_FORMAT.md)
 * run with the WDDM rules checker, and a shrinker for the ones that fail.
 *
 *   vidmm gen [--seed N] [--calls K] [--adapter dgpu|wddm1]   > FILE
 *   vidmm fuzz-scenarios [--seconds S | --count N] [--seed N] [--calls K]
 *                        [--adapter dgpu|wddm1]
 *                        [--save DIR]
 *   vidmm shrink FILE > MIN
 *
 * A generated scenario: a dgpu (64 KiB-page memory segments) or wddm1
 * (4 KiB pages) adapter with small segments, a policy, one to four
 * processes with a device and a paging queue each, allocations of mixed
 * kinds (textures, constants, staging, AccessedPhysically rings) whose
 * sizes add up to 1.2-3x the memory segments, priorities, budgets and
 * reservations; then K calls: make-resident (sometimes CantTrimFurther),
 * evict, moves to every segment, maps, CPU writes and checks, GPU reads
 * and writes through the page tables, offer/reclaim, virtual-mode
 * submissions, destroys.  Results are not stated (the generator cannot
 * know them); what fails a run is a rule violation (support/rules_check.h),
 * a read-back that differs from bytes the generator knows (CPU checks and
 * GPU reads of content no offer, GPU write or discard made unknown), or
 * a check-adapter that finds a structure violation.
 *
 * The shrinker is delta debugging over lines (ddmin): it removes chunks
 * of call lines, halving the chunk size down to one line, and keeps a
 * removal when the scenario still fails the same way (the same first
 * rule, or the same kind of failure).  Removing a line that defines an
 * object (P, D, Q, A, V, C, B) removes every line naming it, so the
 * result is always a well-formed scenario.  The header is kept.
 *
 * Every run prints its seed; `vidmm gen --seed N` gives back the scenario
 * of seed N that fuzz-scenarios ran.
 */
#include "cli/cli.h"
#include "trace/replay.h"
#include "splitmix.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)
#define KIB ((uint64_t)1 << 10)

/* ---- text buffers ----------------------------------------------------- */

static void out(struct tr_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void out(struct tr_buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tr_buf_printf(b, "%s", line);
}

/* ---- the generator ---------------------------------------------------- */

static uint64_t below(uint64_t *s, uint64_t n)
{
    return n ? splitmix64_next(s) % n : 0;
}

#define G_PROCS 4
#define G_ALLOCS 48

struct g_alloc {
    int alive;
    int owner;                   /* process index */
    uint64_t size;
    int mapped;                  /* has a VA range (id = v) */
    uint32_t v;
    uint64_t seed;               /* known content (0 = unknown) */
    int offered;
    int cpu;                     /* CPU-visible: may be written and checked */
    int cmd;                     /* holds command buffers: its bytes are not a pattern */
    int heap;                    /* a Direct3D 12 heap */
};

/* Direct3D 12 heaps the generator makes, and whether the CPU reaches them. */
struct g_heap {
    const char *props;
    int cpu;
};
static const struct g_heap heaps[] = {
    { "default", 0 },
    { "upload", 1 },
    { "readback", 1 },
    { "gpu-upload", 1 },
    { "custom cpu-page=not-available pool=L1", 0 },
    { "custom cpu-page=write-combine pool=L0", 1 },
};

struct gen {
    uint64_t rng;
    struct tr_buf *b;
    int wddm1;
    uint32_t aperture;
    int nproc;
    struct g_alloc al[G_ALLOCS + 1];   /* ids 1..nal */
    uint32_t nal, nva, nctx, nbuf;
    uint32_t cmd_alloc[G_PROCS];       /* per process: its command-buffer allocation (0 = none) */
    uint32_t ctx[G_PROCS];
    uint64_t next_seed;
};

static const char *const kinds[] = { "texture", "texture", "texture", "constant", "staging", "ring" };
static const uint32_t prios[] = { 0x28000000u, 0x50000000u, 0x78000000u, 0xa0000000u, 0xc8000000u };

/* 1..n allocation ids of process pi (alive), written as a list. */
static int pick_list(struct gen *g, int pi, char *buf, size_t n, uint32_t *first)
{
    uint32_t ids[G_ALLOCS], k = 0;
    for (uint32_t a = 1; a <= g->nal; a++)
        if (g->al[a].alive && g->al[a].owner == pi)
            ids[k++] = a;
    if (!k)
        return 0;
    uint32_t want = 1 + (uint32_t)below(&g->rng, k < 4 ? k : 4);
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < want; i++) {
        uint32_t j = i + (uint32_t)below(&g->rng, k - i);
        uint32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
        at += (size_t)snprintf(buf + at, n - at, "%sA%u", i ? "," : "", ids[i]);
    }
    *first = ids[0];
    return (int)want;
}

static uint32_t pick_alloc(struct gen *g, int pi)
{
    uint32_t ids[G_ALLOCS], k = 0;
    for (uint32_t a = 1; a <= g->nal; a++)
        if (g->al[a].alive && (pi < 0 || g->al[a].owner == pi))
            ids[k++] = a;
    return k ? ids[below(&g->rng, k)] : 0;
}

static void gen_alloc(struct gen *g, int pi, uint64_t size)
{
    if (g->nal == G_ALLOCS)
        return;
    uint32_t a = ++g->nal;
    struct g_alloc *x = &g->al[a];
    memset(x, 0, sizeof(*x));
    x->alive = 1;
    x->owner = pi;
    x->size = size;
    const char *kind = kinds[below(&g->rng, sizeof kinds / sizeof kinds[0])];
    int heap = below(&g->rng, 6) == 0;
    if (heap) {
        /* A Direct3D 12 heap (docs/SOFTGPU.md "Direct3D 12 heaps"); the
         * ones the CPU reaches get patterns like any CPU-visible kind. */
        const struct g_heap *h = &heaps[below(&g->rng, sizeof heaps / sizeof heaps[0])];
        x->cpu = h->cpu;
        x->heap = 1;
        out(g->b, "create2 A%u flags=%s kind=heap size=%" PRIu64 " heap=%s\n", a,
            below(&g->rng, 4) ? "-" : "resident", size, h->props);
    } else {
        x->cpu = strcmp(kind, "texture") != 0 || below(&g->rng, 2);
        out(g->b, "create2 A%u flags=%s kind=%s size=%" PRIu64 " cpu=%d\n", a, below(&g->rng, 4) ? "-" : "resident",
            kind, size, x->cpu);
    }
    if (below(&g->rng, 3) == 0)
        out(g->b, "priority A%u 0x%x\n", a, prios[below(&g->rng, 5)]);
    if (x->cpu) {
        x->seed = g->next_seed++;
        out(g->b, "write A%u seed=%" PRIu64 "\n", a, x->seed);
    }
    if (below(&g->rng, 4)) {
        x->mapped = 1;
        x->v = ++g->nva;
        if (x->heap && size >= 128 * KIB && below(&g->rng, 2)) {
            /* A resource placed at the heap's start over part of it: its
             * bytes are the heap's first bytes, so patterns still check. */
            uint64_t part = (1 + below(&g->rng, size / (64 * KIB) - 1)) * 64 * KIB;
            out(g->b, "place V%u P%d A%u offset=0 size=%" PRIu64 "\n", x->v, pi + 1, a, part);
        } else {
            out(g->b, "map V%u P%d A%u\n", x->v, pi + 1, a);
        }
    }
}

static void gen_call(struct gen *g)
{
    int pi = (int)below(&g->rng, (uint64_t)g->nproc);
    char list[128];
    uint32_t a = 0;
    uint64_t r = below(&g->rng, 100);
    if (r < 30) {
        if (pick_list(g, pi, list, sizeof list, &a))
            out(g->b, "make-resident D%d Q%d%s %s\n", pi + 1, pi + 1, below(&g->rng, 5) ? "" : " flags=cant-trim",
                list);
    } else if (r < 42) {
        if (pick_list(g, pi, list, sizeof list, &a))
            out(g->b, "evict D%d%s %s\n", pi + 1, below(&g->rng, 3) ? "" : " flags=if-necessary", list);
    } else if (r < 48) {
        a = pick_alloc(g, -1);
        if (a) {
            static const uint32_t dg[] = { 0, 1, 2, 3 }, w1[] = { 0, 1, 2, 4 };
            out(g->b, "move A%u segment=%u\n", a, (g->wddm1 ? w1 : dg)[below(&g->rng, 4)]);
        }
    } else if (r < 58) {
        a = pick_alloc(g, pi);
        if (a && g->al[a].cpu && !g->al[a].cmd) {
            if (g->al[a].seed && !g->al[a].offered && below(&g->rng, 2)) {
                out(g->b, "check A%u seed=%" PRIu64 "\n", a, g->al[a].seed);
            } else if (!g->al[a].offered) {
                g->al[a].seed = g->next_seed++;
                out(g->b, "write A%u seed=%" PRIu64 "\n", a, g->al[a].seed);
            }
        }
    } else if (r < 72) {
        a = pick_alloc(g, pi);
        if (a && g->al[a].mapped && !g->al[a].offered && !g->al[a].cmd) {
            if (g->al[a].seed && below(&g->rng, 2)) {
                out(g->b, "gpu-read P%d va=V%u seed=%" PRIu64 "\n", pi + 1, g->al[a].v, g->al[a].seed);
            } else {
                /* A fault may leave it half written: unknown after. */
                out(g->b, "gpu-write P%d va=V%u seed=%" PRIu64 "\n", pi + 1, g->al[a].v, g->next_seed++);
                g->al[a].seed = 0;
            }
        }
    } else if (r < 77) {
        if (pick_list(g, pi, list, sizeof list, &a)) {
            out(g->b, "offer D%d priority=%s %s\n", pi + 1, below(&g->rng, 2) ? "low" : "normal", list);
            for (char *p = list; (p = strchr(p, 'A')) != NULL; p++) {
                uint32_t id = (uint32_t)strtoul(p + 1, NULL, 10);
                g->al[id].offered = 1;
                g->al[id].seed = 0;   /* may be discarded */
            }
            out(g->b, "reclaim Q%d %s\n", pi + 1, list);
            for (char *p = list; (p = strchr(p, 'A')) != NULL; p++)
                g->al[strtoul(p + 1, NULL, 10)].offered = 0;
        }
    } else if (r < 83) {
        /* A virtual-mode submission reading one of its allocations. */
        a = pick_alloc(g, pi);
        uint32_t cb = g->cmd_alloc[pi];
        if (a && cb && a != cb && g->al[a].mapped && g->al[cb].alive) {
            uint32_t b = ++g->nbuf;
            out(g->b, "make-resident D%d Q%d A%u,A%u\n", pi + 1, pi + 1, cb, a);
            out(g->b, "cmdbuf B%u cmds=checksum:V%u:4096:V%u+0x800 to=A%u offset=0\n", b, g->al[a].v, g->al[cb].v, cb);
            out(g->b, "submit-virtual C%u va=V%u size=32\n", g->ctx[pi], g->al[cb].v);
            out(g->b, "context-fence C%u\n", g->ctx[pi]);
        }
    } else if (r < 86) {
        a = pick_alloc(g, pi);
        if (a && a != g->cmd_alloc[pi]) {
            out(g->b, "destroy A%u\n", a);
            g->al[a].alive = 0;
        }
    } else if (r < 90) {
        gen_alloc(g, pi, (1 + below(&g->rng, 16)) * 256 * KIB);
    } else if (r < 93) {
        out(g->b, "budget P%d %s %" PRIu64 "\n", pi + 1, below(&g->rng, 2) ? "local" : "non-local",
            below(&g->rng, 3) ? (2 + below(&g->rng, 14)) * MIB : 0);
    } else if (r < 95) {
        out(g->b, "reservation P%d local %" PRIu64 "\n", pi + 1, below(&g->rng, 3) * MIB);
    } else {
        out(g->b, "check-adapter\n");
    }
}

/* The scenario of seed into b. */
static void generate(uint64_t seed, uint32_t calls, const char *preset, struct tr_buf *b)
{
    struct gen g;
    memset(&g, 0, sizeof g);
    g.rng = seed;
    g.b = b;
    g.next_seed = 1000;
    g.wddm1 = preset ? !strcmp(preset, "wddm1") : below(&g.rng, 2) == 1;
    g.aperture = g.wddm1 ? 4 : 3;
    static const char *const policies[] = { "lru", "adaptive", "reuse", "belady" };
    uint64_t s1 = (2 + below(&g.rng, 3)) * 2 * MIB, s2 = (2 + below(&g.rng, 5)) * 2 * MIB;
    out(b, "# vidmm gen --seed %" PRIu64 " --calls %u\n", seed, calls);
    out(b, "adapter %s\nsegment 1 %" PRIu64 "\nsegment 2 %" PRIu64 "\n", g.wddm1 ? "wddm1" : "dgpu", s1, s2);
    out(b, "policy %s\nseed %" PRIu64 "\n", policies[below(&g.rng, 4)], seed);
    g.nproc = 1 + (int)below(&g.rng, G_PROCS);
    for (int p = 0; p < g.nproc; p++) {
        out(b, "process P%d\ndevice D%d P%d\nqueue Q%d D%d\n", p + 1, p + 1, p + 1, p + 1, p + 1);
        if (below(&g.rng, 2)) {
            g.ctx[p] = ++g.nctx;
            out(b, "context C%u D%d node=graphics mode=virtual\n", g.ctx[p], p + 1);
            gen_alloc(&g, p, 64 * KIB);
            g.cmd_alloc[p] = g.nal;
            if (!g.al[g.nal].mapped) {
                g.al[g.nal].mapped = 1;
                g.al[g.nal].v = ++g.nva;
                out(b, "map V%u P%d A%u\n", g.al[g.nal].v, p + 1, g.nal);
            }
            g.al[g.nal].seed = 0;
            g.al[g.nal].cmd = 1;
        }
        if (below(&g.rng, 3) == 0)
            out(b, "budget P%d local %" PRIu64 "\n", p + 1, (s1 + s2) / (uint64_t)(2 + below(&g.rng, 3)));
        if (below(&g.rng, 4) == 0)
            out(b, "reservation P%d local %" PRIu64 "\n", p + 1, MIB);
    }
    /* 1.2-3x over-commitment of the memory segments. */
    uint64_t target = (s1 + s2) * (12 + below(&g.rng, 19)) / 10, total = 0;
    while (total < target && g.nal < G_ALLOCS - 8) {
        uint64_t size = (1 + below(&g.rng, 24)) * 256 * KIB;
        gen_alloc(&g, (int)below(&g.rng, (uint64_t)g.nproc), size);
        total += size;
    }
    for (uint32_t i = 0; i < calls; i++)
        gen_call(&g);
    out(b, "check-adapter\n");
}

/* ---- running a scenario text in-process ---------------------------------- */

struct outcome {
    char what[96];               /* "ok", a rule's name, "data.mismatch", "adapter.check", "malformed" */
    uint64_t calls, checked;
};

static int write_temp(const char *text, size_t len, char *path, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/vidmm-gen-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        done += (size_t)w;
    }
    close(fd);
    return 0;
}

/* Run text (a scenario file) with the rules checker; quiet: stderr off. */
static int run_text(const char *text, size_t len, int quiet, struct outcome *o)
{
    memset(o, 0, sizeof(*o));
    char path[256];
    if (write_temp(text, len, path, sizeof path)) {
        fprintf(stderr, "vidmm: cannot write a temporary file: %s\n", strerror(errno));
        return -1;
    }
    int saved = -1;
    if (quiet) {
        fflush(stderr);
        saved = dup(2);
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0) {
            dup2(nul, 2);
            close(nul);
        }
    }
    struct replay r;
    struct tr_header h;
    struct tr t;
    int rc = -1;
    if (replay_open(&r, path, &h, 0) == 0) {
        if (tr_open(&t, &h, NULL) == 0) {
            if (tr_enable_rules(&t, 1) == 0) {
                int bad = replay_run(&r, &t);
                rc = 0;
                o->calls = t.calls;
                o->checked = t.rules_checks;
                if (bad)
                    snprintf(o->what, sizeof o->what, "malformed");
                else if (t.rules_violations)
                    snprintf(o->what, sizeof o->what, "%.*s", (int)strcspn(t.rules_report, ":\n"), t.rules_report);
                else if (t.check_failures)
                    snprintf(o->what, sizeof o->what, "data.mismatch");
                else if (t.adapter_check_failures)
                    snprintf(o->what, sizeof o->what, "adapter.check");
                else
                    snprintf(o->what, sizeof o->what, "ok");
            }
            tr_close(&t);
        }
        replay_close(&r);
    }
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
    }
    unlink(path);
    if (rc < 0 && !o->what[0])
        snprintf(o->what, sizeof o->what, "malformed");
    return rc;
}

/* ---- the shrinker ------------------------------------------------------------- */

struct lines {
    char **l;
    uint32_t n;
    uint32_t header;             /* the first header lines are always kept */
};

static int is_header(const char *s)
{
    static const char *const h[] = { "#", "vidmm-trace", "scenario", "adapter", "segment", "mmu-levels",
                                     "system-memory", "synchronous", "policy", "seed", "begin" };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        if (!strncmp(s, h[i], strlen(h[i])) && (s[strlen(h[i])] == ' ' || s[strlen(h[i])] == '\0' || i == 0))
            return 1;
    return s[0] == '\0';
}

/* The object a line defines ("A3"), or "".  A CPU or GPU write defines
 * its pattern ("seed=1012"): the checks of that pattern name it, so a
 * check never outlives the write it checks. */
static void defines(const char *s, char *id, size_t n)
{
    if (!strncmp(s, "write ", 6) || !strncmp(s, "gpu-write ", 10)) {
        const char *p = strstr(s, " seed=");
        snprintf(id, n, "%.*s", p ? (int)strcspn(p + 1, " ") : 0, p ? p + 1 : "");
        return;
    }
    static const char *const verbs[] = { "process", "device", "queue", "create", "create2", "map", "reserve",
                                         "context", "cmdbuf" };
    id[0] = '\0';
    const char *sp = strchr(s, ' ');
    if (!sp)
        return;
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if ((size_t)(sp - s) == strlen(verbs[i]) && !strncmp(s, verbs[i], strlen(verbs[i]))) {
            size_t k = strcspn(sp + 1, " ");
            snprintf(id, n, "%.*s", (int)k, sp + 1);
            return;
        }
}

/* Does line s name object id (a whole token: delimited by space, comma,
 * '=', ':', '+' or the end)? */
static int names(const char *s, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = s; (p = strstr(p, id)) != NULL; p++) {
        char before = p == s ? ' ' : p[-1], after = p[n];
        if (strchr(" ,=:", before) && (after == '\0' || strchr(" ,:+\n", after)))
            return 1;
    }
    return 0;
}

/* keep[i] for the candidate that drops [from, to) and, transitively, the
 * lines naming what the dropped lines define. */
static void close_over(const struct lines *L, char *keep)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t i = L->header; i < L->n; i++) {
            if (keep[i])
                continue;
            /* An offer and the reclaim after it go together: an offered
             * allocation's content is not the generator's to check. */
            if (!strncmp(L->l[i], "offer ", 6) && i + 1 < L->n && keep[i + 1] && !strncmp(L->l[i + 1], "reclaim ", 8)) {
                keep[i + 1] = 0;
                changed = 1;
            }
            if (!strncmp(L->l[i], "reclaim ", 8) && i > L->header && keep[i - 1] && !strncmp(L->l[i - 1], "offer ", 6)) {
                keep[i - 1] = 0;
                changed = 1;
            }
            char id[32];
            defines(L->l[i], id, sizeof id);
            if (!id[0])
                continue;
            for (uint32_t j = L->header; j < L->n; j++)
                if (keep[j] && j != i && names(L->l[j], id)) {
                    keep[j] = 0;
                    changed = 1;
                }
        }
    }
}

static size_t join(const struct lines *L, const char *keep, struct tr_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
    for (uint32_t i = 0; i < L->n; i++)
        if (!keep || keep[i])
            tr_buf_printf(b, "%s\n", L->l[i]);
    return b->len;
}

static int split(const char *text, struct lines *L)
{
    memset(L, 0, sizeof(*L));
    uint32_t cap = 64;
    L->l = malloc(cap * sizeof(*L->l));
    if (!L->l)
        return -1;
    int in_header = 1;
    for (const char *p = text; *p;) {
        size_t k = strcspn(p, "\n");
        if (L->n == cap) {
            char **nl = realloc(L->l, (size_t)cap * 2 * sizeof(*nl));
            if (!nl)
                return -1;
            L->l = nl;
            cap *= 2;
        }
        char *s = malloc(k + 1);
        if (!s)
            return -1;
        memcpy(s, p, k);
        s[k] = '\0';
        if (in_header && !is_header(s))
            in_header = 0;
        L->l[L->n++] = s;
        if (in_header)
            L->header = L->n;
        p += k;
        if (*p)
            p++;
    }
    return 0;
}

static void lines_free(struct lines *L)
{
    for (uint32_t i = 0; i < L->n; i++)
        free(L->l[i]);
    free(L->l);
    memset(L, 0, sizeof(*L));
}

/* Shrink text failing as `want` to a minimal scenario (in b).  Returns
 * the runs made. */
static uint64_t shrink(const char *text, const char *want, struct tr_buf *b)
{
    struct lines L;
    uint64_t runs = 0;
    if (split(text, &L)) {
        lines_free(&L);
        return 0;
    }
    char *keep = malloc(L.n + 1), *cand = malloc(L.n + 1);
    if (!keep || !cand) {
        free(keep);
        free(cand);
        lines_free(&L);
        return 0;
    }
    memset(keep, 1, L.n);
    struct tr_buf tmp;
    memset(&tmp, 0, sizeof tmp);
    for (uint32_t chunk = (L.n - L.header) / 2 ? (L.n - L.header) / 2 : 1;; chunk /= 2) {
        if (!chunk)
            chunk = 1;
        int progress = 1;
        while (progress) {
            progress = 0;
            /* Live call lines, in order. */
            for (uint32_t at = L.header; at < L.n;) {
                memcpy(cand, keep, L.n);
                uint32_t dropped = 0, i = at;
                for (; i < L.n && dropped < chunk; i++)
                    if (cand[i]) {
                        cand[i] = 0;
                        dropped++;
                    }
                if (!dropped)
                    break;
                close_over(&L, cand);
                size_t len = join(&L, cand, &tmp);
                struct outcome o;
                runs++;
                if (!tmp.oom && run_text(tmp.p, len, 1, &o) == 0 && !strcmp(o.what, want)) {
                    memcpy(keep, cand, L.n);
                    progress = 1;
                } else {
                    at = i;
                }
            }
        }
        if (chunk == 1)
            break;
    }
    join(&L, keep, b);
    tr_buf_free(&tmp);
    free(keep);
    free(cand);
    lines_free(&L);
    return runs;
}

/* ---- commands ------------------------------------------------------------------- */

struct gen_options {
    uint64_t seed, calls, seconds, count;
    int seed_given;
    const char *preset, *save, *file;
};

/* gen, fuzz-scenarios and shrink share one parser; each verb accepts only
 * its own options, so a misplaced one is named rather than ignored. */
static int parse(const char *cmd, int argc, char **argv, struct gen_options *o)
{
    int fuzz = !strcmp(cmd, "fuzz-scenarios"), shrinking = !strcmp(cmd, "shrink");
    memset(o, 0, sizeof(*o));
    o->calls = 120;
    enum { O_SEED = 256, O_CALLS, O_SECONDS, O_COUNT, O_ADAPTER, O_SAVE };
    static const struct option gen_opts[] = {
        { "seed", required_argument, NULL, O_SEED }, { "calls", required_argument, NULL, O_CALLS },
        { "adapter", required_argument, NULL, O_ADAPTER }, { NULL, 0, NULL, 0 },
    };
    static const struct option fuzz_opts[] = {
        { "seed", required_argument, NULL, O_SEED },       { "calls", required_argument, NULL, O_CALLS },
        { "adapter", required_argument, NULL, O_ADAPTER }, { "seconds", required_argument, NULL, O_SECONDS },
        { "count", required_argument, NULL, O_COUNT },     { "save", required_argument, NULL, O_SAVE },
        { NULL, 0, NULL, 0 },
    };
    static const struct option no_opts[] = { { NULL, 0, NULL, 0 } };
    int rc = 0, have_seconds = 0, have_count = 0;
    cli_getopt_begin();
    for (int c; (c = cli_getopt(cmd, argc, argv, "", shrinking ? no_opts : fuzz ? fuzz_opts : gen_opts, &rc)) != -1;) {
        uint64_t *num = c == O_SEED ? &o->seed : c == O_CALLS ? &o->calls : c == O_SECONDS ? &o->seconds
                      : c == O_COUNT ? &o->count : NULL;
        const char *name = c == O_SEED ? "--seed" : c == O_CALLS ? "--calls" : c == O_SECONDS ? "--seconds" : "--count";
        if (c == '?')
            return rc;
        if (num) {
            if (tr_parse_u64(optarg, num))
                return cli_usage_error(cmd, "%s %s: not a number (decimal or 0x hex)", name, optarg);
            o->seed_given |= c == O_SEED;
            have_seconds |= c == O_SECONDS;
            have_count |= c == O_COUNT;
            if (c == O_CALLS && (o->calls == 0 || o->calls > 100000))
                return cli_usage_error(cmd, "--calls %s: want 1-100000", optarg);
            /* 0 would mean "the default" to the loop below: say so rather
             * than run something else than asked. */
            if ((c == O_SECONDS || c == O_COUNT) && *num == 0)
                return cli_usage_error(cmd, "%s 0: want at least 1 (leave it out for the default, 10 seconds)",
                                       name);
        } else if (c == O_ADAPTER) {
            if (strcmp(optarg, "dgpu") && strcmp(optarg, "wddm1"))
                return cli_usage_error(cmd, "--adapter %s: generated scenarios use dgpu or wddm1", optarg);
            o->preset = optarg;
        } else if (c == O_SAVE) {
            o->save = optarg;
        } else {
            return cli_usage_error(cmd, "unknown option");
        }
    }
    for (int i = cli_operand_first(); i < argc; i++) {
        if (!shrinking)
            return cli_usage_error(cmd, "unknown argument '%s'", argv[i]);
        if (o->file)
            return cli_usage_error(cmd, "'%s': one file at a time ('%s' was given first)", argv[i], o->file);
        o->file = argv[i];
    }
    if (fuzz && have_seconds && have_count)
        return cli_usage_error(cmd, "--seconds and --count: give one of them");
    if (!o->seed_given)
        o->seed = (uint64_t)time(NULL);
    return 0;
}

int cli_gen(int argc, char **argv)
{
    struct gen_options o;
    int rc = parse("gen", argc, argv, &o);
    if (rc)
        return rc;
    struct tr_buf b;
    memset(&b, 0, sizeof b);
    generate(o.seed, (uint32_t)o.calls, o.preset, &b);
    if (b.oom) {
        fprintf(stderr, "vidmm gen: out of memory\n");
        return 1;
    }
    fputs(b.p, stdout);
    tr_buf_free(&b);
    fprintf(stderr, "vidmm gen: seed %" PRIu64 "\n", o.seed);
    return fflush(stdout) ? 1 : 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    struct tr_buf b;
    memset(&b, 0, sizeof b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[n] = '\0';
        tr_buf_printf(&b, "%s", chunk);
    }
    fclose(f);
    if (b.oom || !b.p) {
        tr_buf_free(&b);
        return NULL;
    }
    return b.p;
}

/* A recorded trace shrinks as a scenario: its version line and end
 * record go (a shorter trace would no longer match its end record). */
static void unseal(char *text)
{
    char *w = text;
    for (char *l = text; *l;) {
        size_t n = strcspn(l, "\n");
        size_t adv = n + (l[n] == '\n');
        if (strncmp(l, "vidmm-trace ", 12) && strncmp(l, "end calls=", 10)) {
            memmove(w, l, adv);
            w += adv;
        }
        l += adv;
    }
    *w = '\0';
}

int cli_shrink(int argc, char **argv)
{
    struct gen_options o;
    int rc = parse("shrink", argc, argv, &o);
    if (rc)
        return rc;
    if (!o.file)
        return cli_usage_error("shrink", "which scenario file? (vidmm shrink FILE)");
    char *text = slurp(o.file);
    if (!text) {
        fprintf(stderr, "vidmm shrink: cannot read '%s': %s\n", o.file, strerror(errno));
        return 1;
    }
    unseal(text);
    struct outcome first;
    if (run_text(text, strlen(text), 1, &first) < 0 || !strcmp(first.what, "ok") ||
        !strcmp(first.what, "malformed")) {
        fprintf(stderr, "vidmm shrink: '%s' does not fail (%s): nothing to shrink\n", o.file,
                first.what[0] ? first.what : "cannot run");
        free(text);
        return 1;
    }
    struct tr_buf b;
    memset(&b, 0, sizeof b);
    uint64_t runs = shrink(text, first.what, &b);
    fprintf(stdout, "# shrunk from %s: fails with %s\n%s", o.file, first.what, b.p ? b.p : "");
    fprintf(stderr, "vidmm shrink: %s, %" PRIu64 " runs\n", first.what, runs);
    tr_buf_free(&b);
    free(text);
    return fflush(stdout) ? 1 : 0;
}

#define MAX_RULES 32

int cli_fuzz_scenarios(int argc, char **argv)
{
    struct gen_options o;
    int rc = parse("fuzz-scenarios", argc, argv, &o);
    if (rc)
        return rc;
    if (!o.seconds && !o.count)
        o.seconds = 10;
    /* The folder is checked before the run, not at its first failure. */
    if (o.save && ((mkdir(o.save, 0777) && errno != EEXIST) || access(o.save, W_OK))) {
        fprintf(stderr, "vidmm fuzz-scenarios: --save %s: cannot create or write: %s\n", o.save, strerror(errno));
        return 1;
    }
    fprintf(stderr, "vidmm fuzz-scenarios: seeds from %" PRIu64 " (rerun one: vidmm gen --seed N --calls %" PRIu64
                    " > f; vidmm run f)\n", o.seed, o.calls);
    struct {
        char what[96];
        uint64_t runs, first_seed;
    } by[MAX_RULES];
    uint32_t nby = 0;
    uint64_t runs = 0, calls = 0, checked = 0, failed = 0;
    time_t t0 = time(NULL);
    for (uint64_t seed = o.seed;; seed++) {
        if (o.count ? runs >= o.count : (uint64_t)(time(NULL) - t0) >= o.seconds)
            break;
        struct tr_buf b;
        memset(&b, 0, sizeof b);
        generate(seed, (uint32_t)o.calls, o.preset, &b);
        struct outcome r;
        if (b.oom || run_text(b.p, b.len, 1, &r) < 0) {
            tr_buf_free(&b);
            fprintf(stderr, "vidmm fuzz-scenarios: cannot run seed %" PRIu64 "\n", seed);
            return 1;
        }
        runs++;
        calls += r.calls;
        checked += r.checked;
        if (strcmp(r.what, "ok")) {
            failed++;
            uint32_t k = 0;
            while (k < nby && strcmp(by[k].what, r.what))
                k++;
            if (k == nby && nby < MAX_RULES) {
                snprintf(by[nby].what, sizeof by[nby].what, "%s", r.what);
                by[nby].runs = 0;
                by[nby].first_seed = seed;
                nby++;
            }
            if (k < nby)
                by[k].runs++;
            printf("fuzz-scenarios: seed %" PRIu64 " fails: %s\n", seed, r.what);
            /* The first failure of each kind is shrunk and kept. */
            if (o.save && k < nby && by[k].runs == 1) {
                struct tr_buf m;
                memset(&m, 0, sizeof m);
                uint64_t sr = shrink(b.p, r.what, &m);
                char path[512];
                snprintf(path, sizeof path, "%s/gen-%" PRIu64 "-%s.scn", o.save, seed, r.what);
                FILE *f = fopen(path, "w");
                if (f) {
                    fprintf(f, "# %s: vidmm gen --seed %" PRIu64 " --calls %" PRIu64 ", shrunk (%" PRIu64
                               " runs)\n%s", r.what, seed, o.calls, sr, m.p ? m.p : "");
                    fclose(f);
                    printf("fuzz-scenarios: minimal repro %s\n", path);
                }
                tr_buf_free(&m);
            }
        }
        tr_buf_free(&b);
    }
    printf("fuzz-scenarios: %" PRIu64 " scenarios, %" PRIu64 " calls, %" PRIu64 " checked by the rules, %" PRIu64
           " failed\n", runs, calls, checked, failed);
    for (uint32_t k = 0; k < nby; k++)
        printf("fuzz-scenarios:   %s: %" PRIu64 " scenarios (first seed %" PRIu64 ")\n", by[k].what, by[k].runs,
               by[k].first_seed);
    return failed ? 1 : 0;
}
