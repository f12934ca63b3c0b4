/*
 * scenarios.c - the built-in scenarios of `vidmm run` (see scenario.h).
 *
 *   desktop  four processes (compositor, browser, editor, background
 *            indexer) own twice the memory segments of a discrete GPU;
 *            frames of make-resident / GPU reads and writes / evict, a
 *            pinned small budget for the background process (trim and
 *            retry), a reservation for the compositor, offer/reclaim of
 *            the browser's caches, a primary on the display; the
 *            compositor submits physical-mode work on two rings.
 *   game     a frame loop: two primaries flipped every frame (the GPU
 *            renders into the back buffer, the display shows the front),
 *            render targets kept resident, three levels whose textures
 *            are streamed in and out every frame; GPU work submitted in
 *            virtual mode per frame, its checksums verified.
 *   compute  a data set three times the memory segments streamed through
 *            the GPU chunk by chunk (with prefetch), weights pinned on the
 *            residency list, a result per chunk written by the GPU and
 *            evicted with its content, results checked by the CPU at the
 *            end, and one deliberate access to an evicted chunk (a fault);
 *            each chunk's work is a virtual-mode submission.
 *   igpu     an integrated GPU in IoMmu mode (softgpu's igpu preset): the
 *            GPU reaches system pages at their CPU addresses, residency is
 *            accounting against the non-local (system memory) budget - the
 *            OS pins the background process's to a quarter of the
 *            aperture; vidmm enforces budgets on the local group only
 *            today, so the report shows that process over its budget -
 *            and an AccessedPhysically ring is mapped into the aperture
 *            while resident.
 *
 * Every allocation's bytes are a seeded pattern; every GPU access checks
 * them (through softgpu's MMU walker on GpuMmu adapters), so a wrong
 * placement, a lost eviction or a stale page-table entry shows up as a
 * MISMATCH or a fault.
 */
#include "scenario.h"
#include "splitmix.h"

#include <stdlib.h>
#include <string.h>

#define SC_MAX_PROCS 8
#define SC_MAX_ALLOCS 512

struct sc_proc {
    const char *name;
    uint32_t p, d, q;
    uint32_t priority;
};

struct sc_alloc {
    uint32_t a, v;               /* allocation id, its mapping in the owner's VA space */
    uint64_t size, seed;         /* the pattern it holds now */
    int owner;                   /* index into sc.proc */
    int dirty;                   /* the GPU wrote it: evict without NOT_WRITTEN */
    int nocheck;                 /* holds GPU results, not a pattern */
};

struct sc {
    struct tr *t;
    FILE *log;
    uint64_t rng;
    uint64_t next_seed;
    int errors;
    struct sc_proc proc[SC_MAX_PROCS];
    int nproc;
    struct sc_alloc al[SC_MAX_ALLOCS];
    int nal;
    uint64_t local;              /* bytes of memory segments */
    uint64_t driver_outcomes;    /* unplanned statuses on a plug-in driver (sc_unexpected) */
};

static void sc_init(struct sc *s, struct tr *t, const struct scenario_params *p, FILE *log)
{
    memset(s, 0, sizeof(*s));
    s->t = t;
    s->log = log;
    s->rng = p->seed;
    s->next_seed = 1000;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        if (vidmm_segment_query(t->adapter, id, &si) == VIDMM_OK && si.kind == VIDMM_SEGMENT_KIND_MEMORY)
            s->local += si.size;
    }
}

/* An outcome the scenario did not plan for: counted, and said on the log.
 * On a plug-in driver the plan is softgpu's: a call the tool does not
 * make there is counted by the recording layer, and another status is
 * that driver's outcome (said, not an error); bytes that differ
 * (MISMATCH) are an error on any driver (docs/DECISIONS.md D80). */
static void sc_unexpected(struct sc *s, const char *what, vidmm_status st)
{
    if (s->t->hdr.plugin && st == TR_NOT_APPLICABLE)
        return;
    if (s->t->hdr.plugin && st != TR_MISMATCH) {
        s->driver_outcomes++;
        if (s->log && s->driver_outcomes <= 20)
            fprintf(s->log, "vidmm run: %s from %s: an outcome of driver %s (not an error there)\n",
                    tr_status_name(st), what, tr_driver_name(s->t));
        return;
    }
    s->errors++;
    const char *why = st < 0 ? vidmm_last_error() : "";   /* the library's reason (vidmm/status.h) */
    if (s->log)
        fprintf(s->log, "vidmm run: unexpected %s from %s%s%s\n", tr_status_name(st), what, *why ? ": " : "", why);
}

static int sc_proc_open(struct sc *s, const char *name, uint32_t priority, int queue_priority)
{
    struct sc_proc *p = &s->proc[s->nproc];
    p->name = name;
    p->priority = priority;
    vidmm_status st = tr_process_create(s->t, name, &p->p);
    if (st >= 0)
        st = tr_device_create(s->t, p->p, &p->d);
    if (st >= 0)
        st = tr_queue_create(s->t, p->d, queue_priority, &p->q);
    if (st < 0)
        sc_unexpected(s, "process setup", st);
    return s->nproc++;
}

/* A new allocation owned by process owner: created evicted (so a process
 * can own more than the GPU holds), filled by the CPU with a fresh
 * pattern, given the owner's priority, mapped anywhere in its VA space. */
static int sc_alloc(struct sc *s, int owner, enum softgpu_alloc_kind kind, uint64_t size, int resident,
                    const char *name)
{
    if (s->nal == SC_MAX_ALLOCS)
        return -1;
    struct sc_alloc *x = &s->al[s->nal];
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.size = size;
    d.cpu_visible = 1;
    x->size = size;
    x->owner = owner;
    x->seed = s->next_seed++;
    vidmm_status st = tr_create(s->t, &d, 1, resident ? VIDMM_CREATE_RESIDENT : 0, name, &x->a);
    if (st < 0) {
        sc_unexpected(s, "create2", st);
        return -1;
    }
    if ((st = tr_write(s->t, x->a, x->seed)) < 0)
        sc_unexpected(s, "write", st);
    if (owner >= 0) {
        if (s->proc[owner].priority && (st = tr_priority(s->t, x->a, s->proc[owner].priority)) < 0)
            sc_unexpected(s, "priority", st);
        struct tr_addr any = { 0, 0 };
        if ((st = tr_map(s->t, s->proc[owner].p, any, 0, 0, x->a, 0, size, 0, 0, &x->v)) < 0)
            sc_unexpected(s, "map", st);
    }
    return s->nal++;
}

static int in_list(const uint32_t *list, uint32_t n, uint32_t a)
{
    for (uint32_t i = 0; i < n; i++)
        if (list[i] == a)
            return 1;
    return 0;
}

/* What a user-mode driver does when make-resident answers over budget:
 * evict its resident allocations that no list references (least
 * recently created first) until bytes_to_trim is covered.  Such an
 * allocation is evicted by taking a reference and dropping it. */
static void sc_trim(struct sc *s, int pi, const uint32_t *keep, uint32_t nkeep, uint64_t bytes)
{
    struct sc_proc *p = &s->proc[pi];
    for (int i = 0; i < s->nal && bytes; i++) {
        struct sc_alloc *x = &s->al[i];
        struct vidmm_residency_state rs;
        if (x->owner != pi || in_list(keep, nkeep, x->a) ||
            vidmm_allocation_residency(s->t->adapter, tr_handle(s->t, TR_ALLOC, x->a), &rs) < 0 || !rs.resident ||
            rs.references)
            continue;
        uint64_t fence = 0;
        vidmm_status st = tr_make_resident(s->t, p->d, p->q, &x->a, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, &fence,
                                           NULL);
        if (st == VIDMM_PENDING)
            st = tr_wait(s->t, p->q, fence);
        if (st < 0)
            continue;
        if (tr_evict(s->t, p->d, &x->a, 1, x->dirty ? 0 : VIDMM_EVICT_NOT_WRITTEN_TO, NULL) >= 0) {
            x->dirty = 0;
            bytes = bytes > x->size ? bytes - x->size : 0;
        }
    }
}

/* Make list resident for process pi: trim and retry on over budget, the
 * last time saying it cannot trim further; wait for the paging fence. */
static vidmm_status sc_make_resident(struct sc *s, int pi, const uint32_t *list, uint32_t n)
{
    struct sc_proc *p = &s->proc[pi];
    uint64_t fence = 0, trim = 0;
    vidmm_status st = tr_make_resident(s->t, p->d, p->q, list, n, 0, &fence, &trim);
    if (st == VIDMM_E_OVER_BUDGET) {
        sc_trim(s, pi, list, n, trim);
        st = tr_make_resident(s->t, p->d, p->q, list, n, 0, &fence, &trim);
        if (st == VIDMM_E_OVER_BUDGET)
            st = tr_make_resident(s->t, p->d, p->q, list, n, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, &fence, &trim);
    }
    if (st == VIDMM_PENDING)
        st = tr_wait(s->t, p->q, fence);
    return st;
}

static struct sc_alloc *sc_find(struct sc *s, uint32_t a)
{
    for (int i = 0; i < s->nal; i++)
        if (s->al[i].a == a)
            return &s->al[i];
    return NULL;
}

/* The GPU reads every listed allocation of process pi and checks it. */
static void sc_gpu_read_all(struct sc *s, int pi, const uint32_t *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct sc_alloc *x = sc_find(s, list[i]);
        if (!x || x->owner != pi)
            continue;
        struct tr_addr va = { x->v, 0 };
        vidmm_status st = tr_gpu_read(s->t, s->proc[pi].p, va, x->size, x->seed);
        if (st < 0 && st != TR_MISMATCH)
            sc_unexpected(s, "gpu-read", st);
    }
}

/* The GPU renders into x: a new pattern. */
static void sc_gpu_write(struct sc *s, struct sc_alloc *x)
{
    struct tr_addr va = { x->v, 0 };
    uint64_t seed = s->next_seed++;
    vidmm_status st = tr_gpu_write(s->t, s->proc[x->owner].p, va, x->size, seed);
    if (st < 0) {
        sc_unexpected(s, "gpu-write", st);
        return;
    }
    x->seed = seed;
    x->dirty = 1;
}

/* Evict a list; clean ones may be discarded later, dirty ones transfer. */
static void sc_evict(struct sc *s, int pi, const uint32_t *list, uint32_t n, uint32_t extra_flags)
{
    uint32_t clean[SC_MAX_ALLOCS], dirty[SC_MAX_ALLOCS], nc = 0, nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct sc_alloc *x = sc_find(s, list[i]);
        if (x && x->dirty)
            dirty[nd++] = list[i];
        else
            clean[nc++] = list[i];
    }
    vidmm_status st;
    if (nc && (st = tr_evict(s->t, s->proc[pi].d, clean, nc, extra_flags | VIDMM_EVICT_NOT_WRITTEN_TO, NULL)) < 0)
        sc_unexpected(s, "evict", st);
    if (nd && (st = tr_evict(s->t, s->proc[pi].d, dirty, nd, extra_flags, NULL)) < 0)
        sc_unexpected(s, "evict", st);
    if (!(extra_flags & VIDMM_EVICT_ONLY_IF_NECESSARY))
        for (uint32_t i = 0; i < nd; i++)
            sc_find(s, dirty[i])->dirty = 0;
}

static void sc_check_adapter(struct sc *s)
{
    if (tr_check_adapter(s->t) < 0 && s->log)
        fprintf(s->log, "vidmm run: adapter check failed\n");
}

/* Submit a virtual-mode GPU program: build it into the command buffer
 * allocation cb (mapped at cb's VA), submit it on context c, wait for
 * its fence.  Returns the status of the first failing step. */
static vidmm_status sc_submit_virtual(struct sc *s, uint32_t c, struct sc_alloc *cb, const struct tr_cmd *cmds,
                                      uint32_t n)
{
    uint32_t b = 0;
    uint64_t fence = 0;
    vidmm_status st = tr_cmdbuf(s->t, cmds, n, cb->a, 0, &b);
    if (st < 0) {
        sc_unexpected(s, "cmdbuf", st);
        return st;
    }
    struct tr_addr va = { cb->v, 0 };
    st = tr_submit_virtual(s->t, c, va, (uint32_t)tr_get(s->t, TR_BUF, b)->size, &fence);
    if (st < 0) {
        sc_unexpected(s, "submit-virtual", st);
        return st;
    }
    if ((st = tr_context_wait(s->t, c, fence)) < 0)
        sc_unexpected(s, "context-wait", st);
    return st;
}

/* The CPU checks a GPU-computed value against its own expectation. */
static void sc_result(struct sc *s, struct sc_alloc *x, uint64_t offset, uint64_t expect)
{
    vidmm_status st = tr_result(s->t, x->a, offset, expect, NULL);
    if (st < 0)
        sc_unexpected(s, "result", st);
}

static struct tr_cmd sc_cmd(uint32_t op, uint32_t v0, uint64_t o0, uint32_t v1, uint64_t o1, uint32_t v2, uint64_t o2)
{
    struct tr_cmd c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.arg[0].v = v0;
    c.arg[0].off = o0;
    c.arg[1].v = v1;
    c.arg[1].off = o1;
    c.arg[2].v = v2;
    c.arg[2].off = o2;
    return c;
}

/* ---- desktop -------------------------------------------------------- */

/* The compositor's copy engine runs a physical-mode context: two
 * AccessedPhysically rings, a command buffer in host memory with an
 * allocation list and patch locations for every address.  Returns the
 * context (0: none), its command buffer in *pbuf. */
static uint32_t desktop_compose_setup(struct sc *s, int cout, uint32_t *pbuf)
{
    struct tr *t = s->t;
    uint32_t pctx = 0;
    s->al[cout].nocheck = 1;
    vidmm_status cst = tr_context_create(t, s->proc[0].d, SOFTGPU_NODE_COPY, VIDMM_CONTEXT_PHYSICAL, &pctx);
    if (cst < 0) {
        sc_unexpected(s, "context", cst);
        pctx = 0;
    }
    /* Addresses are 0 until patched: copy out+4096 <- src (4 KiB),
     * checksum that copy into out+8, checksum src into out+0. */
    struct tr_cmd prog[3] = {
        sc_cmd(SOFTGPU_CMD_COPY, 0, 0, 0, 0, 0, 4096),
        sc_cmd(SOFTGPU_CMD_CHECKSUM, 0, 0, 0, 4096, 0, 0),
        sc_cmd(SOFTGPU_CMD_CHECKSUM, 0, 0, 0, 256u << 10, 0, 0),
    };
    if (pctx && (cst = tr_cmdbuf(t, prog, 3, 0, 0, pbuf)) < 0) {
        sc_unexpected(s, "cmdbuf", cst);
        pctx = 0;
    }
    return pctx;
}

/* Compose frame f: the results are cleared, the buffer submitted again
 * (after the first frame as reused: only the locations of a ring that
 * moved are patched), and checked by the CPU. */
static void desktop_compose(struct sc *s, uint32_t f, struct sc_alloc *src, struct sc_alloc *out, uint32_t pctx,
                            uint32_t pbuf)
{
    struct tr *t = s->t;
    static const struct tr_patch patches[6] = {
        { 1, 4096, 0 + SOFTGPU_CMD_OPERAND(0) }, { 0, 0, 0 + SOFTGPU_CMD_OPERAND(1) },
        { 1, 4096, 32 + SOFTGPU_CMD_OPERAND(0) }, { 1, 8, 32 + SOFTGPU_CMD_OPERAND(2) },
        { 0, 0, 64 + SOFTGPU_CMD_OPERAND(0) }, { 1, 0, 64 + SOFTGPU_CMD_OPERAND(2) },
    };
    uint32_t al[2] = { src->a, out->a }, alf[2] = { 0, VIDMM_SUBMIT_WRITE };
    uint64_t fence = 0;
    vidmm_status st;
    if ((st = tr_write(t, out->a, 0)) < 0)
        sc_unexpected(s, "write", st);
    /* Every fourth frame the source ring moves (to the aperture and
     * back): its three locations are patched again. */
    if (f % 4 == 2 && (st = tr_move(t, src->a, f % 8 == 2 ? 3 : 1, 0)) < 0)
        sc_unexpected(s, "move", st);
    st = tr_submit_physical(t, pctx, pbuf, al, alf, 2, patches, 6, f ? VIDMM_SUBMIT_REUSED : 0, &fence, NULL);
    if (st < 0)
        sc_unexpected(s, "submit-physical", st);
    else if ((st = tr_context_wait(t, pctx, fence)) < 0)
        sc_unexpected(s, "context-wait", st);
    else {
        sc_result(s, out, 0, tr_pattern_checksum(src->size, src->seed));
        sc_result(s, out, 8, tr_pattern_checksum(4096, src->seed));
    }
}

static int run_desktop(struct tr *t, const struct scenario_params *prm, FILE *log)
{
    struct sc *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    sc_init(s, t, prm, log);
    static const struct {
        const char *name;
        uint32_t priority;
        int queue, share;        /* % of the over-commitment target */
    } def[4] = {
        { "compositor", VIDMM_PRIORITY_HIGH, VIDMM_PAGING_QUEUE_ABOVE_NORMAL, 15 },
        { "browser", VIDMM_PRIORITY_NORMAL, VIDMM_PAGING_QUEUE_NORMAL, 35 },
        { "editor", VIDMM_PRIORITY_NORMAL, VIDMM_PAGING_QUEUE_NORMAL, 30 },
        { "indexer", VIDMM_PRIORITY_LOW, VIDMM_PAGING_QUEUE_BELOW_NORMAL, 20 },
    };
    for (int i = 0; i < 4; i++)
        sc_proc_open(s, def[i].name, def[i].priority, def[i].queue);
    /* The compositor's primary, on the display for the whole run. */
    int prim = sc_alloc(s, 0, SOFTGPU_ALLOC_PRIMARY, 4u << 20, 1, "desktop-primary");
    vidmm_status fst;
    if (prim >= 0 && (fst = tr_flip(t, 0, s->al[prim].a)) < 0)
        sc_unexpected(s, "flip", fst);
    /* The compositor's copy engine runs a physical-mode context: two
     * AccessedPhysically rings, a command buffer in host memory with an
     * allocation list and patch locations for every address. */
    int csrc = sc_alloc(s, -1, SOFTGPU_ALLOC_RING, 256u << 10, 0, "compose-src");
    int cout = sc_alloc(s, -1, SOFTGPU_ALLOC_RING, 64u << 10, 0, "compose-out");
    uint32_t pctx = 0, pbuf = 0;
    if (csrc >= 0 && cout >= 0)
        pctx = desktop_compose_setup(s, cout, &pbuf);
    /* Twice the memory segments in textures of 1-4 MiB. */
    uint64_t target = 2 * s->local;
    for (int i = 0; i < 4; i++) {
        uint64_t mine = 0, quota = target * (uint64_t)def[i].share / 100;
        int k = 0;
        while (mine < quota && s->nal < SC_MAX_ALLOCS - 8) {
            char name[32];
            snprintf(name, sizeof name, "%s-%d", def[i].name, k++);
            uint64_t size = (1ull << 20) << (splitmix64_next(&s->rng) % 3);
            if (sc_alloc(s, i, SOFTGPU_ALLOC_TEXTURE, size, 0, name) < 0)
                break;
            mine += size;
        }
    }
    /* The OS pins the background indexer to a small budget; the
     * compositor reserves memory it must never lose. */
    vidmm_status st = tr_budget(t, s->proc[3].p, VIDMM_SEGMENT_GROUP_LOCAL, s->local / 8);
    if (st < 0)
        sc_unexpected(s, "budget", st);
    st = tr_reservation(t, s->proc[0].p, VIDMM_SEGMENT_GROUP_LOCAL, s->local / 16);
    if (st < 0)
        sc_unexpected(s, "reservation", st);
    sc_check_adapter(s);

    uint32_t frames = prm->frames ? prm->frames : 12;
    uint32_t offered[64], noffered = 0;
    for (uint32_t f = 0; f < frames; f++) {
        tr_frame(t, f);
        if (pctx)
            desktop_compose(s, f, &s->al[csrc], &s->al[cout], pctx, pbuf);
        for (int pi = 0; pi < 4; pi++) {
            uint32_t list[SC_MAX_ALLOCS], n = 0;
            uint64_t bytes = 0, cap = pi == 3 ? s->local * 3 / 32 : s->local / 3;
            /* The browser takes back the caches it offered last frame. */
            if (pi == 1 && noffered) {
                uint32_t res[64];
                uint64_t fence = 0;
                st = tr_reclaim(t, s->proc[1].q, offered, noffered, res, &fence);
                if (st == VIDMM_PENDING)
                    st = tr_wait(t, s->proc[1].q, fence);
                if (st < 0)
                    sc_unexpected(s, "reclaim", st);
                for (uint32_t i = 0; i < noffered && st >= 0; i++) {
                    struct sc_alloc *x = sc_find(s, offered[i]);
                    if (res[i] == VIDMM_RECLAIM_DISCARDED && x) {
                        /* Lost: the content reads as zero; regenerate it. */
                        x->seed = s->next_seed++;
                        tr_write(t, x->a, x->seed);
                    }
                }
                noffered = 0;
            }
            for (int i = 0; i < s->nal; i++) {
                struct sc_alloc *x = &s->al[i];
                if (x->owner == pi && i != prim && splitmix64_next(&s->rng) % 3 && bytes + x->size <= cap) {
                    list[n++] = x->a;
                    bytes += x->size;
                }
            }
            st = sc_make_resident(s, pi, list, n);
            if (st < 0) {
                if (st != VIDMM_E_NO_SEGMENT_SPACE)
                    sc_unexpected(s, "make-resident", st);
                continue;
            }
            sc_gpu_read_all(s, pi, list, n);
            /* The process renders into one of its surfaces. */
            if (n)
                sc_gpu_write(s, sc_find(s, list[splitmix64_next(&s->rng) % n]));
            sc_evict(s, pi, list, n, VIDMM_EVICT_ONLY_IF_NECESSARY);
            /* The browser offers two of its caches until next frame. */
            if (pi == 1)
                for (uint32_t i = 0; i < n && noffered < 2; i++)
                    if (!sc_find(s, list[i])->dirty)
                        offered[noffered++] = list[i];
            if (pi == 1 && noffered && (st = tr_offer(t, s->proc[1].d, offered, noffered, VIDMM_OFFER_LOW)) < 0) {
                sc_unexpected(s, "offer", st);
                noffered = 0;
            }
        }
        if (f % 4 == 3)
            sc_check_adapter(s);
    }
    /* Everyone's content, read back by the CPU wherever it is now. */
    for (int i = 0; i < s->nal; i++)
        if (!in_list(offered, noffered, s->al[i].a) && !s->al[i].nocheck)
            tr_check(t, s->al[i].a, s->al[i].seed);
    if (pctx)
        tr_context_fence(t, pctx, NULL, NULL);
    sc_check_adapter(s);
    int errors = s->errors;
    free(s);
    return errors;
}

/* ---- game ----------------------------------------------------------- */

/* Level l's textures, adding up to 60% of memory: the first one's index
 * and their count. */
static void game_level(struct sc *s, int l, int *first, int *count)
{
    *first = s->nal;
    uint64_t bytes = 0;
    int k = 0;
    while (bytes < s->local * 6 / 10 && s->nal < SC_MAX_ALLOCS - 8) {
        char name[32];
        snprintf(name, sizeof name, "level%d-tex%d", l, k++);
        uint64_t size = (1ull << 20) << (splitmix64_next(&s->rng) % 3);
        if (sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, size, 0, name) < 0)
            break;
        bytes += size;
    }
    *count = s->nal - *first;
}

/* Frame f's GPU work: clear part of the G-buffer g, resolve the depth
 * buffer dp into it, checksum both into r and signal the frame. */
static void game_gpu_work(struct sc *s, uint32_t f, uint32_t ctx, struct sc_alloc *g, struct sc_alloc *dp,
                          struct sc_alloc *r, struct sc_alloc *cmdb)
{
    uint32_t pattern = 0x9E3779B9u * (f + 1);
    struct tr_cmd prog[5] = {
        sc_cmd(SOFTGPU_CMD_FILL, g->v, 0, 0, 1u << 20, 0, pattern),
        sc_cmd(SOFTGPU_CMD_CHECKSUM, g->v, 0, 0, 1u << 20, r->v, 0),
        sc_cmd(SOFTGPU_CMD_COPY, g->v, 0, dp->v, 0, 0, g->size),
        sc_cmd(SOFTGPU_CMD_CHECKSUM, g->v, 0, 0, g->size, r->v, 8),
        sc_cmd(SOFTGPU_CMD_SIGNAL, r->v, 16, 0, f + 1, 0, 0),
    };
    if (sc_submit_virtual(s, ctx, cmdb, prog, 5) >= 0) {
        g->seed = dp->seed;
        g->dirty = 1;
        sc_result(s, r, 0, tr_fill_checksum(1u << 20, pattern));
        sc_result(s, r, 8, tr_pattern_checksum(g->size, dp->seed));
        sc_result(s, r, 16, f + 1);
    }
}

static int run_game(struct tr *t, const struct scenario_params *prm, FILE *log)
{
    struct sc *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    sc_init(s, t, prm, log);
    sc_proc_open(s, "game", VIDMM_PRIORITY_HIGH, VIDMM_PAGING_QUEUE_ABOVE_NORMAL);
    sc_proc_open(s, "launcher", VIDMM_PRIORITY_LOW, VIDMM_PAGING_QUEUE_NORMAL);
    /* A swap chain of two 1920x1080 32-bit primaries, and render targets. */
    int prim[2], rt[3];
    prim[0] = sc_alloc(s, 0, SOFTGPU_ALLOC_PRIMARY, 1920u * 1088u * 4u, 1, "backbuffer-0");
    prim[1] = sc_alloc(s, 0, SOFTGPU_ALLOC_PRIMARY, 1920u * 1088u * 4u, 1, "backbuffer-1");
    rt[0] = sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, 8u << 20, 0, "depth");
    rt[1] = sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, 8u << 20, 0, "gbuffer");
    rt[2] = sc_alloc(s, 0, SOFTGPU_ALLOC_CONSTANT, 1u << 20, 0, "constants");
    if (prim[0] < 0 || prim[1] < 0 || rt[0] < 0 || rt[1] < 0 || rt[2] < 0) {
        int e = s->errors + 1;
        free(s);
        return e;
    }
    /* The GPU's command buffer and the results its programs write. */
    int cmdb = sc_alloc(s, 0, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 0, "commands");
    int res = sc_alloc(s, 0, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 0, "gpu-results");
    if (cmdb < 0 || res < 0) {
        int e = s->errors + 1;
        free(s);
        return e;
    }
    s->al[res].nocheck = 1;
    uint32_t pinned[7] = { s->al[prim[0]].a, s->al[prim[1]].a, s->al[rt[0]].a, s->al[rt[1]].a, s->al[rt[2]].a,
                           s->al[cmdb].a, s->al[res].a };
    /* The render targets stay on the residency list for the whole game. */
    vidmm_status st = sc_make_resident(s, 0, pinned, 7);
    if (st < 0)
        sc_unexpected(s, "make-resident", st);
    /* A virtual-mode context on the graphics engine (none on an adapter
     * without GPU virtual addressing: the frames then skip the GPU work). */
    uint32_t ctx = 0;
    st = tr_context_create(t, s->proc[0].d, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL, &ctx);
    if (st < 0) {
        if (st != VIDMM_E_NOT_SUPPORTED)
            sc_unexpected(s, "context", st);
        ctx = 0;
    }
    /* The launcher idles in the background with a little memory. */
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "launcher-%d", i);
        sc_alloc(s, 1, SOFTGPU_ALLOC_TEXTURE, 2u << 20, 0, name);
    }
    /* Three levels, each with textures adding up to 60% of memory. */
    int level_first[3], level_count[3];
    for (int l = 0; l < 3; l++)
        game_level(s, l, &level_first[l], &level_count[l]);
    sc_check_adapter(s);
    uint32_t frames = prm->frames ? prm->frames : 30;
    int level = -1;
    for (uint32_t f = 0; f < frames; f++) {
        tr_frame(t, f);
        int want = (int)(f * 3 / frames);
        uint32_t list[SC_MAX_ALLOCS], n = 0;
        if (want != level) {
            /* Level change: the old level's textures go (clean). */
            if (level >= 0) {
                for (int i = 0; i < level_count[level]; i++)
                    list[n++] = s->al[level_first[level] + i].a;
                st = tr_evict(t, s->proc[0].d, list, n, VIDMM_EVICT_NOT_WRITTEN_TO, NULL);
                if (st < 0)
                    sc_unexpected(s, "evict", st);
                n = 0;
            }
            level = want;
            /* The new level's textures go on the list (loading screen). */
            for (int i = 0; i < level_count[level]; i++)
                list[n++] = s->al[level_first[level] + i].a;
            st = sc_make_resident(s, 0, list, n);
            if (st < 0)
                sc_unexpected(s, "make-resident (level load)", st);
            n = 0;
        }
        /* Streaming: this frame's extra references (about a third of the
         * level), read by the GPU, then dropped. */
        for (int i = 0; i < level_count[level]; i++)
            if (splitmix64_next(&s->rng) % 3 == 0)
                list[n++] = s->al[level_first[level] + i].a;
        st = sc_make_resident(s, 0, list, n);
        if (st < 0)
            sc_unexpected(s, "make-resident (streaming)", st);
        else
            sc_gpu_read_all(s, 0, list, n);
        /* Render the frame into the back buffer, then flip it. */
        struct sc_alloc *back = &s->al[prim[f % 2]];
        sc_gpu_read_all(s, 0, &s->al[rt[2]].a, 1);
        sc_gpu_write(s, &s->al[rt[0]]);
        if (ctx)
            game_gpu_work(s, f, ctx, &s->al[rt[1]], &s->al[rt[0]], &s->al[res], &s->al[cmdb]);
        sc_gpu_write(s, back);
        if ((st = tr_flip(t, 0, back->a)) < 0)
            sc_unexpected(s, "flip", st);
        /* The display reads what is shown. */
        sc_gpu_read_all(s, 0, &back->a, 1);
        if (n && (st = tr_evict(t, s->proc[0].d, list, n, VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO,
                                NULL)) < 0)
            sc_unexpected(s, "evict (streaming)", st);
        /* Now and then the launcher wakes up and draws a little. */
        if (f % 10 == 5) {
            uint32_t l[4], m = 0;
            for (int i = 0; i < s->nal && m < 4; i++)
                if (s->al[i].owner == 1)
                    l[m++] = s->al[i].a;
            if ((st = sc_make_resident(s, 1, l, m)) >= 0) {
                sc_gpu_read_all(s, 1, l, m);
                sc_evict(s, 1, l, m, 0);
            } else {
                sc_unexpected(s, "make-resident (launcher)", st);
            }
        }
        if (f % 10 == 9)
            sc_check_adapter(s);
    }
    for (int i = 0; i < 2; i++)
        tr_check(t, s->al[prim[i]].a, s->al[prim[i]].seed);
    if (ctx) {
        tr_context_fence(t, ctx, NULL, NULL);
        if ((st = tr_context_destroy(t, ctx)) < 0)
            sc_unexpected(s, "context-destroy", st);
    }
    sc_check_adapter(s);
    int errors = s->errors;
    free(s);
    return errors;
}

/* ---- compute -------------------------------------------------------- */

static int run_compute(struct tr *t, const struct scenario_params *prm, FILE *log)
{
    struct sc *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    sc_init(s, t, prm, log);
    sc_proc_open(s, "trainer", VIDMM_PRIORITY_NORMAL, VIDMM_PAGING_QUEUE_NORMAL);
    int weights = sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, 8u << 20, 0, "weights");
    if (weights < 0) {
        int e = s->errors + 1;
        free(s);
        return e;
    }
    int kern = sc_alloc(s, 0, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 0, "kernels");
    int sums = sc_alloc(s, 0, SOFTGPU_ALLOC_CONSTANT, 64u << 10, 0, "checksums");
    if (kern < 0 || sums < 0) {
        int e = s->errors + 1;
        free(s);
        return e;
    }
    s->al[sums].nocheck = 1;
    uint32_t w = s->al[weights].a;
    uint32_t pinned[3] = { w, s->al[kern].a, s->al[sums].a };
    vidmm_status st = sc_make_resident(s, 0, pinned, 3);
    if (st < 0)
        sc_unexpected(s, "make-resident (weights)", st);
    uint32_t ctx = 0;
    st = tr_context_create(t, s->proc[0].d, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL, &ctx);
    if (st < 0) {
        if (st != VIDMM_E_NOT_SUPPORTED)
            sc_unexpected(s, "context", st);
        ctx = 0;
    }
    /* The data set: three times the memory segments in 4 MiB chunks, each
     * with a 256 KiB result the GPU writes. */
    uint64_t chunk = 4u << 20;
    int nchunks = (int)(3 * s->local / chunk);
    if (nchunks > (SC_MAX_ALLOCS - 12) / 2)
        nchunks = (SC_MAX_ALLOCS - 12) / 2;
    int first_chunk = s->nal;
    for (int i = 0; i < nchunks; i++) {
        char name[32];
        snprintf(name, sizeof name, "chunk-%d", i);
        sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, chunk, 0, name);
    }
    int first_result = s->nal;
    for (int i = 0; i < nchunks; i++) {
        char name[32];
        snprintf(name, sizeof name, "result-%d", i);
        sc_alloc(s, 0, SOFTGPU_ALLOC_TEXTURE, 256u << 10, 0, name);
    }
    if (s->nal != first_result + nchunks) {
        int e = s->errors + 1;
        free(s);
        return e;
    }
    sc_check_adapter(s);
    uint32_t passes = prm->frames ? prm->frames : 2;
    for (uint32_t pass = 0; pass < passes; pass++) {
        tr_frame(t, pass);
        for (int i = 0; i < nchunks; i++) {
            struct sc_alloc *c = &s->al[first_chunk + i], *r = &s->al[first_result + i];
            /* This chunk, its result, and the next chunk (prefetch). */
            uint32_t list[3] = { c->a, r->a, s->al[first_chunk + (i + 1) % nchunks].a };
            st = sc_make_resident(s, 0, list, 3);
            if (st < 0) {
                sc_unexpected(s, "make-resident (chunk)", st);
                continue;
            }
            sc_gpu_read_all(s, 0, list, 1);
            sc_gpu_read_all(s, 0, &w, 1);
            if (ctx) {
                /* The kernel: the result is the chunk's first 256 KiB;
                 * checksums of the chunk and of the result. */
                struct sc_alloc *k = &s->al[sums];
                struct tr_cmd prog[3] = {
                    sc_cmd(SOFTGPU_CMD_COPY, r->v, 0, c->v, 0, 0, r->size),
                    sc_cmd(SOFTGPU_CMD_CHECKSUM, c->v, 0, 0, c->size, k->v, 16u * (uint64_t)i),
                    sc_cmd(SOFTGPU_CMD_CHECKSUM, r->v, 0, 0, r->size, k->v, 16u * (uint64_t)i + 8),
                };
                if (sc_submit_virtual(s, ctx, &s->al[kern], prog, 3) >= 0) {
                    r->seed = c->seed;
                    r->dirty = 1;
                    sc_result(s, k, 16u * (uint64_t)i, tr_pattern_checksum(c->size, c->seed));
                    sc_result(s, k, 16u * (uint64_t)i + 8, tr_pattern_checksum(r->size, c->seed));
                }
            } else {
                sc_gpu_write(s, r);
            }
            /* The chunk is clean (discarded under pressure, its system
             * copy kept); the result goes out with its bytes. */
            sc_evict(s, 0, list, 3, 0);
        }
        sc_check_adapter(s);
    }
    /* A bug on purpose, in a process of its own: a profiler maps a chunk
     * and reads it without making it resident.  The access faults
     * instead of reading stale memory; the profiler's device is lost,
     * the trainer goes on. */
    int probe = sc_proc_open(s, "profiler", 0, VIDMM_PAGING_QUEUE_NORMAL);
    struct tr_addr any = { 0, 0 }, va = { 0, 0 };
    st = tr_map(t, s->proc[probe].p, any, 0, 0, s->al[first_chunk].a, 0, chunk, VIDMM_GPUVA_READ_ONLY, 0, &va.v);
    if (st < 0)
        sc_unexpected(s, "map (profiler)", st);
    st = tr_gpu_read(t, s->proc[probe].p, va, 4096, s->al[first_chunk].seed);
    if (st != VIDMM_E_PAGE_FAULT)
        sc_unexpected(s, "gpu-read of an evicted chunk (want E_PAGE_FAULT)", st);
    /* The CPU collects every result. */
    for (int i = 0; i < nchunks; i++)
        tr_check(t, s->al[first_result + i].a, s->al[first_result + i].seed);
    if (ctx)
        tr_context_fence(t, ctx, NULL, NULL);
    sc_check_adapter(s);
    int errors = s->errors;
    free(s);
    return errors;
}

/* ---- igpu ----------------------------------------------------------- */

static int run_igpu(struct tr *t, const struct scenario_params *prm, FILE *log)
{
    struct sc *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    sc_init(s, t, prm, log);
    /* No memory segments: working sets are sized against the aperture. */
    struct vidmm_segment_info ap;
    vidmm_segment_query(t->adapter, 1, &ap);
    s->local = ap.size;
    sc_proc_open(s, "photos", VIDMM_PRIORITY_NORMAL, VIDMM_PAGING_QUEUE_NORMAL);
    sc_proc_open(s, "video", VIDMM_PRIORITY_HIGH, VIDMM_PAGING_QUEUE_ABOVE_NORMAL);
    /* The video decoder's ring: AccessedPhysically, so the aperture maps
     * it while it is resident. */
    int ring = sc_alloc(s, 1, SOFTGPU_ALLOC_RING, 256u << 10, 0, "decode-ring");
    uint64_t target = s->local * 3 / 2;
    for (int pi = 0; pi < 2; pi++) {
        uint64_t mine = 0;
        int k = 0;
        while (mine < target / 2 && s->nal < SC_MAX_ALLOCS - 8) {
            char name[32];
            snprintf(name, sizeof name, "%s-%d", s->proc[pi].name, k++);
            uint64_t size = (1ull << 20) << (splitmix64_next(&s->rng) % 3);
            if (sc_alloc(s, pi, SOFTGPU_ALLOC_TEXTURE, size, 0, name) < 0)
                break;
            mine += size;
        }
    }
    /* The photo viewer went to the background: the OS pins its budget. */
    vidmm_status bst = tr_budget(t, s->proc[0].p, VIDMM_SEGMENT_GROUP_NON_LOCAL, s->local / 4);
    if (bst < 0)
        sc_unexpected(s, "budget", bst);
    sc_check_adapter(s);
    uint32_t frames = prm->frames ? prm->frames : 10;
    for (uint32_t f = 0; f < frames; f++) {
        tr_frame(t, f);
        for (int pi = 0; pi < 2; pi++) {
            uint32_t list[SC_MAX_ALLOCS], n = 0;
            uint64_t bytes = 0, cap = s->local * 2 / 5;
            if (pi == 1 && ring >= 0)
                list[n++] = s->al[ring].a;
            for (int i = 0; i < s->nal; i++) {
                struct sc_alloc *x = &s->al[i];
                if (x->owner == pi && i != ring && splitmix64_next(&s->rng) % 2 && bytes + x->size <= cap) {
                    list[n++] = x->a;
                    bytes += x->size;
                }
            }
            vidmm_status st = sc_make_resident(s, pi, list, n);
            if (st < 0) {
                sc_unexpected(s, "make-resident", st);
                continue;
            }
            sc_gpu_read_all(s, pi, list, n);
            if (n > 1)
                sc_gpu_write(s, sc_find(s, list[1 + splitmix64_next(&s->rng) % (n - 1)]));
            /* The last frame's working sets stay resident (the report
             * shows them against the budgets). */
            if (f + 1 < frames)
                sc_evict(s, pi, list, n, 0);
        }
        if (f % 5 == 4)
            sc_check_adapter(s);
    }
    for (int i = 0; i < s->nal; i++)
        tr_check(t, s->al[i].a, s->al[i].seed);
    sc_check_adapter(s);
    int errors = s->errors;
    free(s);
    return errors;
}

/* ---- table ---------------------------------------------------------- */

static const struct scenario sc_desktop = {
    "desktop", "four processes over-committing a discrete GPU 2x (budgets, trim, offer/reclaim, physical submission)", "dgpu",
    { 0, 32ull << 20, 64ull << 20 }, 12, run_desktop,
};
static const struct scenario sc_game = {
    "game", "a frame loop flipping two primaries, render targets pinned, level textures streamed, GPU work submitted", "dgpu",
    { 0, 32ull << 20, 96ull << 20 }, 30, run_game,
};
static const struct scenario sc_compute = {
    "compute", "a data set 3x video memory streamed through the GPU chunk by chunk", "dgpu",
    { 0, 16ull << 20, 48ull << 20 }, 2, run_compute,
};
static const struct scenario sc_igpu = {
    "igpu", "an integrated GPU in IoMmu mode: system memory, a pinned budget, a physically accessed ring", "igpu",
    { 0, 64ull << 20 }, 10, run_igpu,
};

static const struct scenario *const sc_table[] = { &sc_desktop, &sc_game, &sc_compute, &sc_igpu, NULL };

const struct scenario *const *scenarios(void)
{
    return sc_table;
}

const struct scenario *scenario_find(const char *name)
{
    for (int i = 0; sc_table[i]; i++)
        if (!strcmp(sc_table[i]->name, name))
            return sc_table[i];
    return NULL;
}
