/*
 * replay.c - the trace reader (see replay.h).
 *
 * A line is split into whitespace-separated tokens; " = " (a lone "="
 * token) separates the call from its recorded result.  Arguments are
 * positional ids (P3, A12, ...) and key=value tokens, in any order after
 * the ids.  Each call line is executed by the recording-layer wrapper of
 * its verb, which formats the line it would record; the replay compares
 * that line's result part with the recorded one, token for token.  So a
 * replay checks every status and every output (GPU VAs, fences, bytes to
 * trim, reclaim results) without knowing what each verb returns.
 */
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOKENS 64

int tr_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul > 1 && *end == 'i')
        end++;
    if (mul > 1 && *end == 'B')
        end++;
    if (*end || end == s || v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

/* ---- reading lines -------------------------------------------------- */

/* The longest line read.  Real trace lines are well under 1 KiB; the cap
 * keeps a file that is no trace (a device such as /dev/zero, a binary, a
 * text without newlines) from growing the line buffer until the host
 * runs out of memory, and names the real cause instead. */
#define TR_MAX_LINE (1u << 20)

static int line_fault(struct replay *r, const char *what)
{
    fprintf(stderr, "%s:%" PRIu64 ": %s\n", r->path, r->lineno + 1, what);
    r->failed = 1;
    return -1;
}

/* One raw line into r->buf (newline kept, NUL-terminated): its length,
 * or -1 at the end of the file or on a fault (r->failed, reported). */
static long read_line(struct replay *r)
{
    size_t len = 0;
    for (;;) {
        if (r->buf_cap - len < 2) {
            if (r->buf_cap >= TR_MAX_LINE)
                return line_fault(r, "line longer than 1 MiB: not a vidmm trace");
            size_t cap = r->buf_cap ? r->buf_cap * 2 : 256;
            if (cap > TR_MAX_LINE)
                cap = TR_MAX_LINE;
            char *nb = realloc(r->buf, cap);
            if (!nb)
                return line_fault(r, "out of memory for the line buffer");
            r->buf = nb;
            r->buf_cap = cap;
        }
        int c = getc(r->f);
        if (c == EOF)
            break;
        if (c == '\0')
            return line_fault(r, "binary data (a NUL byte): not a vidmm trace");
        r->buf[len++] = (char)c;
        if (c == '\n')
            break;
    }
    if (ferror(r->f)) {
        char m[160];
        snprintf(m, sizeof m, "read error: %s", strerror(errno));
        return line_fault(r, m);
    }
    if (len == 0)
        return -1;
    r->buf[len] = '\0';
    return (long)len;
}

/* The next non-blank, non-comment line, stripped of its newline and of a
 * trailing comment; NULL at the end of the file or on a fault (then
 * r->failed is set and the fault reported). */
static char *next_line(struct replay *r)
{
    if (r->pending) {
        r->pending = 0;
        return r->buf;
    }
    for (;;) {
        if (read_line(r) < 0)
            return NULL;
        r->lineno++;
        char *hash = strchr(r->buf, '#');
        if (hash)
            *hash = '\0';
        size_t len = strlen(r->buf);
        while (len && (r->buf[len - 1] == '\n' || r->buf[len - 1] == '\r' || r->buf[len - 1] == ' ' ||
                       r->buf[len - 1] == '\t'))
            r->buf[--len] = '\0';
        char *s = r->buf;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s)
            return s;
    }
}

static int tokenize(char *s, char **tok, int max)
{
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        if (n == max)
            return -1;
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (*s)
            *s++ = '\0';
    }
    return n;
}

static int bad(struct replay *r, const char *what, const char *tok)
{
    fprintf(stderr, "%s:%" PRIu64 ": %s%s%s\n", r->path, r->lineno, what, tok ? ": " : "", tok ? tok : "");
    return 1;
}

static int read_header(struct replay *r, struct tr_header *h);

int replay_open(struct replay *r, const char *path, struct tr_header *h, int strict)
{
    memset(r, 0, sizeof(*r));
    r->path = path;
    r->strict = strict;
    r->f = fopen(path, "r");
    if (!r->f) {
        fprintf(stderr, "vidmm: cannot open '%s': %s\n", path, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fileno(r->f), &sb) == 0) {
        /* fopen accepts a directory; its first read fails.  Say so before
         * the caller starts an adapter for it. */
        if (S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "vidmm: '%s' is a directory, not a trace\n", path);
            replay_close(r);
            return 1;
        }
        r->file_size = (uint64_t)sb.st_size;
    }
    /* On a fault nothing stays open: the caller has nothing to close. */
    if (read_header(r, h)) {
        replay_close(r);
        return 1;
    }
    return 0;
}

/* The header lines, up to "begin" or the first call line.  0, or 1 with
 * a message on stderr. */
static int read_header(struct replay *r, struct tr_header *h)
{
    tr_header_defaults(h);
    snprintf(h->scenario, sizeof h->scenario, "file");
    int seen_version = 0;
    char *s;
    while ((s = next_line(r)) != NULL) {
        char *tok[8];
        char copy[512];
        snprintf(copy, sizeof copy, "%s", s);
        int n = tokenize(copy, tok, 8);
        if (n <= 0)
            continue;
        uint64_t v;
        if (!strcmp(tok[0], "begin"))
            return 0;
        if (!strcmp(tok[0], "vidmm-trace") && n == 2) {
            if (tr_parse_u64(tok[1], &v) || v != TR_FORMAT_VERSION) {
                bad(r, "unsupported trace format version", tok[1]);
                return 1;
            }
            seen_version = 1;
        } else if (!strcmp(tok[0], "scenario") && n == 2) {
            snprintf(h->scenario, sizeof h->scenario, "%s", tok[1]);
        } else if (!strcmp(tok[0], "adapter") && n == 2) {
            snprintf(h->preset, sizeof h->preset, "%s", tok[1]);
        } else if (!strcmp(tok[0], "segment") && n == 3) {
            if (tr_parse_u64(tok[1], &v) || v == 0 || v > SOFTGPU_MAX_SEGMENTS ||
                tr_parse_u64(tok[2], &h->segment_size[v]))
                return bad(r, "bad segment line (want: segment ID SIZE)", NULL);
        } else if (!strcmp(tok[0], "mmu-levels") && n == 2) {
            if (tr_parse_u64(tok[1], &v) || v > 6)
                return bad(r, "bad mmu-levels", tok[1]);
            h->mmu_levels = (uint32_t)v;
        } else if (!strcmp(tok[0], "system-memory") && n == 2) {
            if (tr_parse_u64(tok[1], &h->system_memory))
                return bad(r, "bad system-memory", tok[1]);
        } else if (!strcmp(tok[0], "synchronous") && n == 2) {
            if (tr_parse_u64(tok[1], &v) || v > 1)
                return bad(r, "bad synchronous (0 or 1)", tok[1]);
            h->synchronous = (int)v;
        } else if (!strcmp(tok[0], "policy") && n == 2) {
            snprintf(h->policy, sizeof h->policy, "%s", tok[1]);
        } else if (!strcmp(tok[0], "seed") && n == 2) {
            if (tr_parse_u64(tok[1], &h->seed))
                return bad(r, "bad seed", tok[1]);
        } else {
            /* A scenario file may leave out the header and "begin". */
            if (r->strict && !seen_version)
                return bad(r, "not a vidmm trace (no 'vidmm-trace 1' header)", NULL);
            r->pending = 1;
            memmove(r->buf, s, strlen(s) + 1);
            return 0;
        }
    }
    if (r->failed)
        return 1;
    if (r->strict && !seen_version)
        return bad(r, "not a vidmm trace (no 'vidmm-trace 1' header)", NULL);
    return 0;
}

void replay_close(struct replay *r)
{
    if (r->f)
        fclose(r->f);
    free(r->buf);
    for (int k = 0; k < TR_KINDS; k++)
        free(r->map[k]);
    free(r->last_fence);
    memset(r, 0, sizeof(*r));
}

/* ---- ids ------------------------------------------------------------ */

/* The file id of token s for kind k ("A12" -> 12), 0 if not one. */
static uint32_t file_id(enum tr_kind k, const char *s)
{
    if (s[0] != tr_kind_prefix[k] || !s[1])
        return 0;
    char *end;
    unsigned long v = strtoul(s + 1, &end, 10);
    if (*end || v == 0 || v > (1ul << 24))
        return 0;
    return (uint32_t)v;
}

static int map_set(struct replay *r, enum tr_kind k, uint32_t fid, uint32_t id)
{
    if (fid >= r->map_cap[k]) {
        uint32_t nc = r->map_cap[k] ? r->map_cap[k] : 256;
        while (nc <= fid)
            nc *= 2;
        uint32_t *n = realloc(r->map[k], (size_t)nc * sizeof(*n));
        if (!n)
            return -1;
        memset(n + r->map_cap[k], 0, (size_t)(nc - r->map_cap[k]) * sizeof(*n));
        r->map[k] = n;
        r->map_cap[k] = nc;
    }
    r->map[k][fid] = id;
    return 0;
}

/* The recording-layer id of an existing object named by token s. */
static int ref(struct replay *r, enum tr_kind k, const char *s, uint32_t *id)
{
    uint32_t fid = file_id(k, s);
    if (!fid || fid >= r->map_cap[k] || !r->map[k][fid]) {
        char what[48];
        snprintf(what, sizeof what, "expected a known %c id", tr_kind_prefix[k]);
        return bad(r, what, s);
    }
    *id = r->map[k][fid];
    return 0;
}

/* A new object's file id (must not be in use). */
static int def(struct replay *r, enum tr_kind k, const char *s, uint32_t *fid)
{
    *fid = file_id(k, s);
    if (!*fid) {
        char what[48];
        snprintf(what, sizeof what, "expected a new %c id", tr_kind_prefix[k]);
        return bad(r, what, s);
    }
    if (*fid < r->map_cap[k] && r->map[k][*fid])
        return bad(r, "id defined twice", s);
    return 0;
}

/* ---- key=value arguments -------------------------------------------- */

struct args {
    char **tok;
    int n;                       /* call tokens (before "=") */
    struct replay *r;
};

static const char *kv(const struct args *a, const char *key)
{
    size_t kl = strlen(key);
    for (int i = 1; i < a->n; i++)
        if (!strncmp(a->tok[i], key, kl) && a->tok[i][kl] == '=')
            return a->tok[i] + kl + 1;
    return NULL;
}

static int kv_u64(const struct args *a, const char *key, uint64_t def_value, int required, uint64_t *out)
{
    const char *v = kv(a, key);
    if (!v) {
        if (required) {
            char what[64];
            snprintf(what, sizeof what, "missing %s=", key);
            return bad(a->r, what, NULL);
        }
        *out = def_value;
        return 0;
    }
    if (tr_parse_u64(v, out)) {
        char what[64];
        snprintf(what, sizeof what, "bad number for %s", key);
        return bad(a->r, what, v);
    }
    return 0;
}

static int kv_u32(const struct args *a, const char *key, uint32_t def_value, int required, uint32_t *out)
{
    uint64_t v;
    if (kv_u64(a, key, def_value, required, &v))
        return 1;
    if (v > UINT32_MAX)
        return bad(a->r, "value out of range", key);
    *out = (uint32_t)v;
    return 0;
}

/* An address: V<n>, V<n>+OFF, or a number. */
static int parse_addr(struct replay *r, const char *s, struct tr_addr *out)
{
    out->v = 0;
    out->off = 0;
    if (s[0] == 'V') {
        char name[32];
        const char *plus = strchr(s, '+');
        size_t len = plus ? (size_t)(plus - s) : strlen(s);
        if (len >= sizeof name)
            return bad(r, "bad address", s);
        memcpy(name, s, len);
        name[len] = '\0';
        if (ref(r, TR_VA, name, &out->v))
            return 1;
        if (plus && tr_parse_u64(plus + 1, &out->off))
            return bad(r, "bad address offset", s);
        return 0;
    }
    if (tr_parse_u64(s, &out->off))
        return bad(r, "bad address", s);
    return 0;
}

static int kv_addr(const struct args *a, const char *key, int required, struct tr_addr *out)
{
    const char *v = kv(a, key);
    out->v = 0;
    out->off = 0;
    if (!v) {
        if (required) {
            char what[64];
            snprintf(what, sizeof what, "missing %s=", key);
            return bad(a->r, what, NULL);
        }
        return 0;
    }
    return parse_addr(a->r, v, out);
}

/* Flags: "-", a number, or names joined by ','. */
static int parse_flags(struct replay *r, const char *s, const char *const names[2], uint32_t *out)
{
    *out = 0;
    if (!s || !strcmp(s, "-"))
        return 0;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", s);
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (names && !strcmp(p, names[0]))
            *out |= 1u;
        else if (names && !strcmp(p, names[1]))
            *out |= 2u;
        else if (!tr_parse_u64(p, &v) && v <= UINT32_MAX)
            *out |= (uint32_t)v;
        else
            return bad(r, "unknown flag", p);
    }
    return 0;
}

/* An allocation list: "-" or A<n>,A<m>,... into a malloc'ed array. */
static int parse_list(struct replay *r, const char *s, uint32_t **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return bad(r, "missing allocation list", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    uint32_t *list = malloc((size_t)count * sizeof(*list));
    if (!list)
        return bad(r, "out of memory", NULL);
    const char *p = s;
    for (uint32_t i = 0; i < count; i++) {
        char name[32];
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len >= sizeof name) {
            free(list);
            return bad(r, "bad allocation list", s);
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (ref(r, TR_ALLOC, name, &list[i])) {
            free(list);
            return 1;
        }
        p = comma ? comma + 1 : p + len;
    }
    *out = list;
    *n = count;
    return 0;
}

/* The positional (non key=value) tokens after the verb. */
static int positional(const struct args *a, const char **pos, int max)
{
    int n = 0;
    for (int i = 1; i < a->n; i++)
        if (!strchr(a->tok[i], '=') && n < max)
            pos[n++] = a->tok[i];
    return n;
}

static int want_pos(struct replay *r, int have, int want, const char *usage)
{
    if (have >= want)
        return 0;
    return bad(r, "missing arguments; usage", usage);
}

static int parse_kind(struct replay *r, const char *s, enum softgpu_alloc_kind *k)
{
    for (uint32_t i = 1; i <= SOFTGPU_ALLOC_EXPLICIT; i++)
        if (s && !strcmp(s, tr_alloc_kind_name(i))) {
            *k = (enum softgpu_alloc_kind)i;
            return 0;
        }
    return bad(r, "unknown allocation kind", s ? s : "(none)");
}

static int parse_group(struct replay *r, const char *s, enum vidmm_segment_group *g)
{
    if (!strcmp(s, "local"))
        *g = VIDMM_SEGMENT_GROUP_LOCAL;
    else if (!strcmp(s, "non-local"))
        *g = VIDMM_SEGMENT_GROUP_NON_LOCAL;
    else
        return bad(r, "segment group must be local or non-local", s);
    return 0;
}

static void remember_fence(struct replay *r, uint32_t q, uint64_t fence)
{
    if (q >= r->last_fence_cap) {
        uint32_t nc = r->last_fence_cap ? r->last_fence_cap : 64;
        while (nc <= q)
            nc *= 2;
        uint64_t *n = realloc(r->last_fence, (size_t)nc * sizeof(*n));
        if (!n)
            return;
        memset(n + r->last_fence_cap, 0, (size_t)(nc - r->last_fence_cap) * sizeof(*n));
        r->last_fence = n;
        r->last_fence_cap = nc;
    }
    if (fence)
        r->last_fence[q] = fence;
}

/* A command list: "-" or OP[:OPERAND...],... (malloc'ed). */
static int parse_cmds(struct replay *r, const char *s, struct tr_cmd **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return bad(r, "missing cmds=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    struct tr_cmd *cmds = calloc(count, sizeof(*cmds));
    char *copy = strdup(s);
    if (!cmds || !copy) {
        free(cmds);
        free(copy);
        return bad(r, "out of memory", NULL);
    }
    uint32_t i = 0;
    int err = 0;
    for (char *save = NULL, *c = strtok_r(copy, ",", &save); c && !err; c = strtok_r(NULL, ",", &save), i++) {
        char *fsave = NULL, *f = strtok_r(c, ":", &fsave);
        if (!f || tr_cmd_parse_name(f, &cmds[i].op)) {
            err = bad(r, "unknown command", f ? f : c);
            break;
        }
        int want = tr_cmd_operands(cmds[i].op), got = 0;
        for (f = strtok_r(NULL, ":", &fsave); f && !err; f = strtok_r(NULL, ":", &fsave), got++)
            err = got >= want ? bad(r, "too many operands", f) : parse_addr(r, f, &cmds[i].arg[got]);
        if (!err && got != want)
            err = bad(r, "wrong operand count for command", tr_cmd_name(cmds[i].op));
    }
    free(copy);
    if (err || i != count) {
        free(cmds);
        return err ? 1 : bad(r, "bad command list", s);
    }
    *out = cmds;
    *n = count;
    return 0;
}

/* A physical allocation list: "-" or A<n>[:write],... */
static int parse_submit_allocs(struct replay *r, const char *s, uint32_t **ids, uint32_t **flags, uint32_t *n)
{
    *ids = NULL;
    *flags = NULL;
    *n = 0;
    if (!s)
        return bad(r, "missing allocs=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    uint32_t *a = calloc(count, sizeof(*a)), *fl = calloc(count, sizeof(*fl));
    char *copy = strdup(s);
    int err = !a || !fl || !copy ? bad(r, "out of memory", NULL) : 0;
    uint32_t i = 0;
    for (char *save = NULL, *c = err ? NULL : strtok_r(copy, ",", &save); c && !err;
         c = strtok_r(NULL, ",", &save), i++) {
        char *colon = strchr(c, ':');
        if (colon) {
            *colon++ = '\0';
            for (char *fs = NULL, *f = strtok_r(colon, ":", &fs); f && !err; f = strtok_r(NULL, ":", &fs)) {
                uint64_t v;
                if (!strcmp(f, "write"))
                    fl[i] |= VIDMM_SUBMIT_WRITE;
                else if (!tr_parse_u64(f, &v) && v <= UINT32_MAX)
                    fl[i] |= (uint32_t)v;
                else
                    err = bad(r, "unknown allocation flag", f);
            }
        }
        if (!err)
            err = ref(r, TR_ALLOC, c, &a[i]);
    }
    free(copy);
    if (err || i != count) {
        free(a);
        free(fl);
        return err ? 1 : bad(r, "bad allocation list", s);
    }
    *ids = a;
    *flags = fl;
    *n = count;
    return 0;
}

/* Patch locations: "-" or INDEX+ALLOCATION_OFFSET@PATCH_OFFSET,... */
static int parse_patches(struct replay *r, const char *s, struct tr_patch **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return bad(r, "missing patches=", NULL);
    if (!strcmp(s, "-"))
        return 0;
    uint32_t count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    struct tr_patch *pl = calloc(count, sizeof(*pl));
    if (!pl)
        return bad(r, "out of memory", NULL);
    const char *p = s;
    for (uint32_t i = 0; i < count; i++) {
        char *end;
        unsigned long long ix = strtoull(p, &end, 10), ao = 0, po = 0;
        int ok = end != p && *end == '+';
        if (ok) {
            const char *q = end + 1;
            ao = strtoull(q, &end, 0);
            ok = end != q && *end == '@';
        }
        if (ok) {
            const char *q = end + 1;
            po = strtoull(q, &end, 0);
            ok = end != q && (*end == ',' || !*end) && ix <= UINT32_MAX && ao <= UINT32_MAX && po <= UINT32_MAX;
        }
        if (!ok) {
            free(pl);
            return bad(r, "bad patch location (want INDEX+OFFSET@PATCH_OFFSET)", p);
        }
        pl[i].index = (uint32_t)ix;
        pl[i].allocation_offset = (uint32_t)ao;
        pl[i].patch_offset = (uint32_t)po;
        p = *end ? end + 1 : end;
    }
    *out = pl;
    *n = count;
    return 0;
}

/* The default size of a GPU access at va: the rest of the VA range. */
static uint64_t range_rest(struct tr *t, struct tr_addr va)
{
    struct tr_obj *o = tr_get(t, TR_VA, va.v);
    return o && o->size > va.off ? o->size - va.off : 0;
}

/* ---- one line ------------------------------------------------------- */

/* A call line being executed: what every verb's handler reads. */
struct call {
    struct replay *r;
    struct tr *t;
    struct args a;               /* key=value arguments */
    const char **pos;            /* positional arguments after the verb */
    int np;
    enum tr_verb v;              /* lets one handler serve a pair of verbs */
};

/* Each handler parses its line's arguments and runs the recording-layer
 * wrapper of its verb.  Returns 0, or 1 after reporting a bad line. */
typedef int (*verb_fn)(struct call *c);

/* Bind file id fid of kind k to the id the wrapper just gave. */
static int def_done(struct replay *r, enum tr_kind k, uint32_t fid, uint32_t id)
{
    return map_set(r, k, fid, id) ? bad(r, "out of memory", NULL) : 0;
}

static int do_process(struct call *c)
{
    uint32_t fid, id = 0;
    if (def(c->r, TR_PROC, c->pos[0], &fid))
        return 1;
    tr_process_create(c->t, kv(&c->a, "name"), &id);
    return def_done(c->r, TR_PROC, fid, id);
}

static int do_process_destroy(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_PROC, c->pos[0], &x))
        return 1;
    tr_process_destroy(c->t, x);
    return 0;
}

static int do_device(struct call *c)
{
    uint32_t fid, x, id = 0;
    if (def(c->r, TR_DEV, c->pos[0], &fid) || ref(c->r, TR_PROC, c->pos[1], &x))
        return 1;
    tr_device_create(c->t, x, &id);
    return def_done(c->r, TR_DEV, fid, id);
}

static int do_device_destroy(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_DEV, c->pos[0], &x))
        return 1;
    tr_device_destroy(c->t, x);
    return 0;
}

static int do_queue(struct call *c)
{
    uint32_t fid, x, id = 0;
    if (def(c->r, TR_QUEUE, c->pos[0], &fid) || ref(c->r, TR_DEV, c->pos[1], &x))
        return 1;
    const char *ps = kv(&c->a, "priority");
    long prio = ps ? strtol(ps, NULL, 10) : 0;
    tr_queue_create(c->t, x, (int)prio, &id);
    return def_done(c->r, TR_QUEUE, fid, id);
}

static int do_queue_destroy(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_QUEUE, c->pos[0], &x))
        return 1;
    tr_queue_destroy(c->t, x);
    return 0;
}

/* create and create2 (which adds flags=). */
static int do_create(struct call *c)
{
    struct replay *r = c->r;
    const struct args *a = &c->a;
    uint32_t fid, id = 0;
    if (def(r, TR_ALLOC, c->pos[0], &fid))
        return 1;
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    if (parse_kind(r, kv(a, "kind"), &d.kind))
        return 1;
    uint32_t cflags = 0;
    if (c->v == TV_CREATE2) {
        if (parse_flags(r, kv(a, "flags"), tr_create_flag_names, &cflags))
            return 1;
    }
    if (d.kind == SOFTGPU_ALLOC_EXPLICIT) {
        if (kv_u64(a, "size", 0, 1, &d.info.size) || kv_u64(a, "align", 0, 0, &d.info.alignment) ||
            kv_u32(a, "write-set", 0, 1, &d.info.supported_write_segment_set) ||
            kv_u32(a, "read-set", 0, 0, &d.info.supported_read_segment_set) ||
            kv_u32(a, "evict-set", 0, 0, &d.info.eviction_segment_set) ||
            kv_u32(a, "pref", 0, 0, &d.info.preferred_segment) ||
            kv_u32(a, "alloc-flags", 0, 0, &d.info.flags) || kv_u32(a, "priority", 0, 0, &d.info.priority))
            return 1;
    } else {
        if (kv_u64(a, "size", 0, 1, &d.size) || kv_u64(a, "align", 0, 0, &d.alignment) ||
            kv_u32(a, "cpu", 0, 0, &d.cpu_visible))
            return 1;
    }
    tr_create(c->t, &d, c->v == TV_CREATE2, cflags, kv(a, "name"), &id);
    return def_done(r, TR_ALLOC, fid, id);
}

static int do_destroy(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_ALLOC, c->pos[0], &x))
        return 1;
    tr_destroy(c->t, x);
    return 0;
}

static int do_priority(struct call *c)
{
    uint32_t x;
    uint64_t u;
    if (ref(c->r, TR_ALLOC, c->pos[0], &x) || tr_parse_u64(c->pos[1], &u) || u > UINT32_MAX)
        return bad(c->r, "usage", "priority A<n> VALUE");
    tr_priority(c->t, x, (uint32_t)u);
    return 0;
}

/* move and move-discard. */
static int do_move(struct call *c)
{
    uint32_t x, y;
    if (ref(c->r, TR_ALLOC, c->pos[0], &x) || kv_u32(&c->a, "segment", 0, 1, &y))
        return 1;
    tr_move(c->t, x, y, c->v == TV_MOVE_DISCARD);
    return 0;
}

static int do_flip(struct call *c)
{
    uint32_t x = 0;
    uint64_t u;
    if (tr_parse_u64(c->pos[0], &u) || u > UINT32_MAX)
        return bad(c->r, "usage", "flip SOURCE A<n>|-");
    if (strcmp(c->pos[1], "-") && ref(c->r, TR_ALLOC, c->pos[1], &x))
        return 1;
    tr_flip(c->t, (uint32_t)u, x);
    return 0;
}

static int do_reserve(struct call *c)
{
    struct replay *r = c->r;
    struct tr_addr base;
    uint32_t fid, x, id = 0;
    uint64_t min, max, size;
    if (def(r, TR_VA, c->pos[0], &fid) || ref(r, TR_PROC, c->pos[1], &x) || kv_addr(&c->a, "base", 0, &base) ||
        kv_u64(&c->a, "min", 0, 0, &min) || kv_u64(&c->a, "max", 0, 0, &max) || kv_u64(&c->a, "size", 0, 1, &size))
        return 1;
    const char *m = kv(&c->a, "mode");
    unsigned mode = m && !strcmp(m, "zero") ? VIDMM_GPUVA_RESERVE_ZERO : VIDMM_GPUVA_RESERVE_NO_ACCESS;
    if (m && strcmp(m, "zero") && strcmp(m, "no-access"))
        return bad(r, "mode must be zero or no-access", m);
    tr_reserve(c->t, x, base, min, max, size, mode, &id);
    return def_done(r, TR_VA, fid, id);
}

static int do_map(struct call *c)
{
    struct replay *r = c->r;
    const struct args *a = &c->a;
    struct tr_addr base;
    uint64_t min, max, off, dprot, size;
    uint32_t fid, x, y, prot, id = 0;
    if (def(r, TR_VA, c->pos[0], &fid) || ref(r, TR_PROC, c->pos[1], &x) || ref(r, TR_ALLOC, c->pos[2], &y) ||
        kv_addr(a, "base", 0, &base) || kv_u64(a, "min", 0, 0, &min) || kv_u64(a, "max", 0, 0, &max) ||
        kv_u64(a, "offset", 0, 0, &off) || kv_u32(a, "protection", 0, 0, &prot) ||
        kv_u64(a, "driver-protection", 0, 0, &dprot))
        return 1;
    struct tr_obj *ao = tr_get(c->t, TR_ALLOC, y);
    uint64_t rest = ao && ao->size > off ? ao->size - off : 0;
    if (kv_u64(a, "size", rest, 0, &size))
        return 1;
    tr_map(c->t, x, base, min, max, y, off, size, prot, dprot, &id);
    return def_done(r, TR_VA, fid, id);
}

/* unmap and free. */
static int do_unmap(struct call *c)
{
    struct tr_addr va;
    uint32_t x;
    uint64_t size;
    if (ref(c->r, TR_PROC, c->pos[0], &x) || kv_addr(&c->a, "va", 1, &va) ||
        kv_u64(&c->a, "size", range_rest(c->t, va), 0, &size))
        return 1;
    if (c->v == TV_UNMAP)
        tr_unmap(c->t, x, va, size);
    else
        tr_free(c->t, x, va, size);
    return 0;
}

static int do_make_resident(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, flags, x, y;
    uint64_t fence = 0;
    if (ref(r, TR_DEV, c->pos[0], &x) || ref(r, TR_QUEUE, c->pos[1], &y) ||
        parse_flags(r, kv(&c->a, "flags"), tr_make_resident_flag_names, &flags) ||
        parse_list(r, c->pos[2], &list, &cnt))
        return 1;
    if (tr_make_resident(c->t, x, y, list, cnt, flags, &fence, NULL) == VIDMM_PENDING)
        remember_fence(r, y, fence);
    free(list);
    return 0;
}

static int do_evict(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, flags, x;
    if (ref(r, TR_DEV, c->pos[0], &x) || parse_flags(r, kv(&c->a, "flags"), tr_evict_flag_names, &flags) ||
        parse_list(r, c->pos[1], &list, &cnt))
        return 1;
    tr_evict(c->t, x, list, cnt, flags, NULL);
    free(list);
    return 0;
}

static int do_wait(struct call *c)
{
    struct replay *r = c->r;
    uint32_t x;
    uint64_t fence;
    if (ref(r, TR_QUEUE, c->pos[0], &x))
        return 1;
    const char *fs = kv(&c->a, "fence");
    if (fs && !strcmp(fs, "last"))
        fence = x < r->last_fence_cap ? r->last_fence[x] : 0;
    else if (kv_u64(&c->a, "fence", 0, 1, &fence))
        return 1;
    tr_wait(c->t, x, fence);
    return 0;
}

static int do_offer(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, x, prio = VIDMM_OFFER_NORMAL;
    uint64_t u;
    static const char *const pn[] = { "low", "normal", "high", "auto" };
    const char *ps = kv(&c->a, "priority");
    if (ps) {
        prio = 0;
        for (uint32_t i = 0; i < 4; i++)
            if (!strcmp(ps, pn[i]))
                prio = i + 1;
        if (!prio && (tr_parse_u64(ps, &u) || u > UINT32_MAX))
            return bad(r, "offer priority: low, normal, high, auto", ps);
        if (!prio)
            prio = (uint32_t)u;
    }
    if (ref(r, TR_DEV, c->pos[0], &x) || parse_list(r, c->pos[1], &list, &cnt))
        return 1;
    tr_offer(c->t, x, list, cnt, prio);
    free(list);
    return 0;
}

static int do_reclaim(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, x;
    uint64_t fence = 0;
    if (ref(r, TR_QUEUE, c->pos[0], &x) || parse_list(r, c->pos[1], &list, &cnt))
        return 1;
    if (tr_reclaim(c->t, x, list, cnt, NULL, &fence) == VIDMM_PENDING)
        remember_fence(r, x, fence);
    free(list);
    return 0;
}

/* budget and reservation. */
static int do_budget(struct call *c)
{
    struct replay *r = c->r;
    enum vidmm_segment_group g = VIDMM_SEGMENT_GROUP_LOCAL;
    uint32_t x;
    uint64_t bytes;
    if (ref(r, TR_PROC, c->pos[0], &x) || parse_group(r, c->pos[1], &g))
        return 1;
    if (tr_parse_u64(c->pos[2], &bytes))
        return bad(r, "bad byte count", c->pos[2]);
    if (c->v == TV_BUDGET)
        tr_budget(c->t, x, g, bytes);
    else
        tr_reservation(c->t, x, g, bytes);
    return 0;
}

/* write and check. */
static int do_write(struct call *c)
{
    uint32_t x;
    uint64_t seed;
    if (ref(c->r, TR_ALLOC, c->pos[0], &x) || kv_u64(&c->a, "seed", 0, 1, &seed))
        return 1;
    if (c->v == TV_WRITE)
        tr_write(c->t, x, seed);
    else
        tr_check(c->t, x, seed);
    return 0;
}

/* gpu-read and gpu-write. */
static int do_gpu_access(struct call *c)
{
    struct tr_addr va;
    uint32_t x;
    uint64_t size, seed;
    if (ref(c->r, TR_PROC, c->pos[0], &x) || kv_addr(&c->a, "va", 1, &va) ||
        kv_u64(&c->a, "size", range_rest(c->t, va), 0, &size) || kv_u64(&c->a, "seed", 0, 1, &seed))
        return 1;
    if (size % 8)
        return bad(c->r, "GPU access size must be a multiple of 8", NULL);
    if (c->v == TV_GPU_READ)
        tr_gpu_read(c->t, x, va, size, seed);
    else
        tr_gpu_write(c->t, x, va, size, seed);
    return 0;
}

static int do_check_adapter(struct call *c)
{
    tr_check_adapter(c->t);
    return 0;
}

static int do_context(struct call *c)
{
    struct replay *r = c->r;
    uint32_t fid, x, id = 0;
    if (def(r, TR_CTX, c->pos[0], &fid) || ref(r, TR_DEV, c->pos[1], &x))
        return 1;
    const char *ns = kv(&c->a, "node"), *ms = kv(&c->a, "mode");
    uint32_t node = 0, mode = VIDMM_CONTEXT_VIRTUAL;
    if (ns && !strcmp(ns, "graphics"))
        node = SOFTGPU_NODE_GRAPHICS;
    else if (ns && !strcmp(ns, "compute"))
        node = SOFTGPU_NODE_COMPUTE;
    else if (ns && !strcmp(ns, "copy"))
        node = SOFTGPU_NODE_COPY;
    else if (kv_u32(&c->a, "node", 0, 0, &node))
        return 1;
    if (ms && !strcmp(ms, "physical"))
        mode = VIDMM_CONTEXT_PHYSICAL;
    else if (ms && strcmp(ms, "virtual"))
        return bad(r, "mode must be virtual or physical", ms);
    tr_context_create(c->t, x, node, mode, &id);
    return def_done(r, TR_CTX, fid, id);
}

static int do_context_destroy(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_CTX, c->pos[0], &x))
        return 1;
    tr_context_destroy(c->t, x);
    return 0;
}

static int do_cmdbuf(struct call *c)
{
    struct replay *r = c->r;
    struct tr_cmd *cmds;
    uint32_t cnt, fid, y = 0, id = 0;
    uint64_t offset;
    const char *to = kv(&c->a, "to");
    if (def(r, TR_BUF, c->pos[0], &fid) || (to && ref(r, TR_ALLOC, to, &y)) ||
        kv_u64(&c->a, "offset", 0, 0, &offset) || parse_cmds(r, kv(&c->a, "cmds"), &cmds, &cnt))
        return 1;
    tr_cmdbuf(c->t, cmds, cnt, y, offset, &id);
    free(cmds);
    return def_done(r, TR_BUF, fid, id);
}

static int do_submit_virtual(struct call *c)
{
    struct tr_addr va;
    uint32_t x, size;
    if (ref(c->r, TR_CTX, c->pos[0], &x) || kv_addr(&c->a, "va", 1, &va) || kv_u32(&c->a, "size", 0, 1, &size))
        return 1;
    tr_submit_virtual(c->t, x, va, size, NULL);
    return 0;
}

static int do_submit_physical(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *ids, *fl, cnt, np2, x, y, flags = 0;
    struct tr_patch *pl;
    const char *fs = kv(&c->a, "flags");
    if (fs && !strcmp(fs, "reused"))
        flags = VIDMM_SUBMIT_REUSED;
    else if (fs && parse_flags(r, fs, NULL, &flags))
        return 1;
    if (ref(r, TR_CTX, c->pos[0], &x) || ref(r, TR_BUF, c->pos[1], &y) ||
        parse_submit_allocs(r, kv(&c->a, "allocs"), &ids, &fl, &cnt))
        return 1;
    if (parse_patches(r, kv(&c->a, "patches"), &pl, &np2)) {
        free(ids);
        free(fl);
        return 1;
    }
    tr_submit_physical(c->t, x, y, ids, fl, cnt, pl, np2, flags, NULL, NULL);
    free(ids);
    free(fl);
    free(pl);
    return 0;
}

static int do_context_wait(struct call *c)
{
    uint32_t x;
    uint64_t fence;
    if (ref(c->r, TR_CTX, c->pos[0], &x) || kv_u64(&c->a, "fence", 0, 1, &fence))
        return 1;
    tr_context_wait(c->t, x, fence);
    return 0;
}

static int do_context_fence(struct call *c)
{
    uint32_t x;
    if (ref(c->r, TR_CTX, c->pos[0], &x))
        return 1;
    tr_context_fence(c->t, x, NULL, NULL);
    return 0;
}

static int do_result(struct call *c)
{
    uint32_t x;
    uint64_t offset, expect;
    if (ref(c->r, TR_ALLOC, c->pos[0], &x) || kv_u64(&c->a, "offset", 0, 0, &offset) ||
        kv_u64(&c->a, "expect", 0, 1, &expect))
        return 1;
    tr_result(c->t, x, offset, expect, NULL);
    return 0;
}

/* Every verb the replay executes: how many positional arguments it needs
 * (checked before its handler runs, so a handler may read pos[0..npos-1]
 * freely), the usage line shown when they are missing, and its handler.
 * Indexed by verb, so the names stay those of the format (tr_verb_names). */
static const struct verb_entry {
    int npos;
    const char *usage;
    verb_fn fn;
} verb_table[TV_COUNT] = {
    [TV_PROCESS]         = { 1, "process P<n> [name=NAME]", do_process },
    [TV_PROCESS_DESTROY] = { 1, "process-destroy P<n>", do_process_destroy },
    [TV_DEVICE]          = { 2, "device D<n> P<n>", do_device },
    [TV_DEVICE_DESTROY]  = { 1, "device-destroy D<n>", do_device_destroy },
    [TV_QUEUE]           = { 2, "queue Q<n> D<n> [priority=N]", do_queue },
    [TV_QUEUE_DESTROY]   = { 1, "queue-destroy Q<n>", do_queue_destroy },
    [TV_CREATE]          = { 1, "create A<n> kind=K size=N ...", do_create },
    [TV_CREATE2]         = { 1, "create A<n> kind=K size=N ...", do_create },
    [TV_DESTROY]         = { 1, "destroy A<n>", do_destroy },
    [TV_PRIORITY]        = { 2, "priority A<n> VALUE", do_priority },
    [TV_MOVE]            = { 1, "move A<n> segment=ID", do_move },
    [TV_MOVE_DISCARD]    = { 1, "move A<n> segment=ID", do_move },
    [TV_FLIP]            = { 2, "flip SOURCE A<n>|-", do_flip },
    [TV_RESERVE]         = { 2, "reserve V<n> P<n> size=N ...", do_reserve },
    [TV_MAP]             = { 3, "map V<n> P<n> A<n> ...", do_map },
    [TV_UNMAP]           = { 1, "unmap|free P<n> va=ADDR [size=N]", do_unmap },
    [TV_FREE]            = { 1, "unmap|free P<n> va=ADDR [size=N]", do_unmap },
    [TV_MAKE_RESIDENT]   = { 3, "make-resident D<n> Q<n> LIST [flags=F]", do_make_resident },
    [TV_EVICT]           = { 2, "evict D<n> LIST [flags=F]", do_evict },
    [TV_WAIT]            = { 1, "wait Q<n> fence=N|last", do_wait },
    [TV_OFFER]           = { 2, "offer D<n> LIST [priority=P]", do_offer },
    [TV_RECLAIM]         = { 2, "reclaim Q<n> LIST", do_reclaim },
    [TV_BUDGET]          = { 3, "budget|reservation P<n> local|non-local BYTES", do_budget },
    [TV_RESERVATION]     = { 3, "budget|reservation P<n> local|non-local BYTES", do_budget },
    [TV_WRITE]           = { 1, "write|check A<n> seed=N", do_write },
    [TV_CHECK]           = { 1, "write|check A<n> seed=N", do_write },
    [TV_GPU_READ]        = { 1, "gpu-read|gpu-write P<n> va=ADDR seed=N [size=N]", do_gpu_access },
    [TV_GPU_WRITE]       = { 1, "gpu-read|gpu-write P<n> va=ADDR seed=N [size=N]", do_gpu_access },
    [TV_CHECK_ADAPTER]   = { 0, "check-adapter", do_check_adapter },
    [TV_CONTEXT]         = { 2, "context C<n> D<n> node=N mode=virtual|physical", do_context },
    [TV_CONTEXT_DESTROY] = { 1, "context-destroy C<n>", do_context_destroy },
    [TV_CMDBUF]          = { 1, "cmdbuf B<n> cmds=LIST [to=A<n> offset=N]", do_cmdbuf },
    [TV_SUBMIT_VIRTUAL]  = { 1, "submit-virtual C<n> va=ADDR size=N", do_submit_virtual },
    [TV_SUBMIT_PHYSICAL] = { 2, "submit-physical C<n> B<n> allocs=LIST patches=LIST [flags=reused]",
                             do_submit_physical },
    [TV_CONTEXT_WAIT]    = { 1, "context-wait C<n> fence=N", do_context_wait },
    [TV_CONTEXT_FENCE]   = { 1, "context-fence C<n>", do_context_fence },
    [TV_RESULT]          = { 1, "result A<n> offset=N expect=V", do_result },
};

static int exec_line(struct replay *r, struct tr *t, char *line)
{
    char *tok[MAX_TOKENS];
    int n = tokenize(line, tok, MAX_TOKENS);
    if (n < 0)
        return bad(r, "too many tokens", NULL);
    if (n == 0)
        return 0;   /* next_line gives no blank line; this keeps tok[0] defined for the compiler */
    int eq = n;
    for (int i = 0; i < n; i++)
        if (!strcmp(tok[i], "=")) {
            eq = i;
            break;
        }
    const char *pos[8];
    struct call c = { r, t, { tok, eq, r }, pos, 0, TV_COUNT };
    c.np = positional(&c.a, pos, 8);
    const char *verb = tok[0];

    if (!strcmp(verb, "frame")) {
        uint64_t u;
        if (c.np < 1 || tr_parse_u64(pos[0], &u))
            return bad(r, "usage", "frame N");
        tr_frame(t, u);
        return 0;
    }
    int v;
    for (v = 0; v < TV_COUNT; v++)
        if (!strcmp(verb, tr_verb_names[v]))
            break;
    if (v == TV_COUNT || !verb_table[v].fn)
        return bad(r, "unknown verb", verb);
    if (r->strict && eq == n)
        return bad(r, "call line without a recorded result", verb);

    const struct verb_entry *e = &verb_table[v];
    c.v = (enum tr_verb)v;
    if (want_pos(r, c.np, e->npos, e->usage) || e->fn(&c))
        return 1;
    r->executed++;

    /* Compare what the call gave with what the line says it gave. */
    if (eq < n) {
        char want[4096], got[4096];
        size_t used = 0;
        want[0] = '\0';
        for (int i = eq + 1; i < n && used < sizeof want; i++)
            used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", i > eq + 1 ? " " : "", tok[i]);
        snprintf(got, sizeof got, "%s", tr_last_result(t));
        r->checked++;
        if (strcmp(want, got)) {
            r->mismatches++;
            if (r->reported++ < 20)
                fprintf(stderr, "%s:%" PRIu64 ": %s: recorded '%s', replay gave '%s'\n", r->path, r->lineno, verb,
                        want, got);
        }
    }
    return 0;
}

static void progress(struct replay *r, int *last_pct)
{
    long off = ftell(r->f);
    if (off < 0 || !r->file_size)
        return;
    int pct = (int)((uint64_t)off * 100 / r->file_size);
    if (pct == *last_pct)
        return;
    *last_pct = pct;
    char bar[41];
    for (int i = 0; i < 40; i++)
        bar[i] = i < pct * 40 / 100 ? '#' : '.';
    bar[40] = '\0';
    fprintf(stderr, "\r[%s] %3d%% line %" PRIu64, bar, pct, r->lineno);
}

int replay_run(struct replay *r, struct tr *t)
{
    char *s;
    int last_pct = -1;
    while ((s = next_line(r)) != NULL) {
        if (!strcmp(s, "begin"))
            continue;
        if (exec_line(r, t, s)) {
            if (r->progress && last_pct >= 0)
                fputc('\n', stderr);
            return 1;
        }
        if (t->rules_violations) {
            /* The first violation ends the run: what follows would be
             * built on a state WDDM does not allow. */
            if (r->progress && last_pct >= 0)
                fputc('\n', stderr);
            fprintf(stderr, "%s:%" PRIu64 ": stopped at the first rule violation\n", r->path, r->lineno);
            return 0;
        }
        if (r->progress && (r->lineno & 255) == 0)
            progress(r, &last_pct);
    }
    if (r->progress && last_pct >= 0)
        fprintf(stderr, "\r%*s\r", 70, "");
    if (r->failed)
        return 1;   /* reported by next_line */
    return 0;
}
