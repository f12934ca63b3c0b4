/*
 * replay.c - executing a trace (see replay.h): a table of the verbs, one
 * handler each, over the reader's line and argument parsing
 * (trace_read.c).
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
#include "trace_read.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- one line ------------------------------------------------------- */

/* A call line being executed: what every verb's handler reads. */
struct call {
    struct replay *r;
    struct tr *t;
    struct rd_args a;            /* key=value arguments */
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
    return rd_map_set(r, k, fid, id) ? rd_bad(r, "out of memory", NULL) : 0;
}

static int do_process(struct call *c)
{
    uint32_t fid, id = 0;
    if (rd_def(c->r, TR_PROC, c->pos[0], &fid))
        return 1;
    tr_process_create(c->t, rd_kv(&c->a, "name"), &id);
    return def_done(c->r, TR_PROC, fid, id);
}

static int do_process_destroy(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_PROC, c->pos[0], &x))
        return 1;
    tr_process_destroy(c->t, x);
    return 0;
}

static int do_device(struct call *c)
{
    uint32_t fid, x, id = 0;
    if (rd_def(c->r, TR_DEV, c->pos[0], &fid) || rd_ref(c->r, TR_PROC, c->pos[1], &x))
        return 1;
    tr_device_create(c->t, x, &id);
    return def_done(c->r, TR_DEV, fid, id);
}

static int do_device_destroy(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_DEV, c->pos[0], &x))
        return 1;
    tr_device_destroy(c->t, x);
    return 0;
}

static int do_queue(struct call *c)
{
    uint32_t fid, x, id = 0;
    if (rd_def(c->r, TR_QUEUE, c->pos[0], &fid) || rd_ref(c->r, TR_DEV, c->pos[1], &x))
        return 1;
    const char *ps = rd_kv(&c->a, "priority");
    char *end = NULL;
    long prio = ps ? strtol(ps, &end, 10) : 0;
    if (ps && (end == ps || *end || prio < INT32_MIN || prio > INT32_MAX))
        return rd_bad(c->r, "queue priority: an integer (-1 below normal, 0 normal, 1 above normal)", ps);
    tr_queue_create(c->t, x, (int)prio, &id);
    return def_done(c->r, TR_QUEUE, fid, id);
}

static int do_queue_destroy(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_QUEUE, c->pos[0], &x))
        return 1;
    tr_queue_destroy(c->t, x);
    return 0;
}

/* A heap property: a name of the format's, or a number (what a refused
 * value recorded as); absent = 0 (unknown) unless required. */
static int rd_prop(struct replay *r, const struct rd_args *a, const char *key, const char *const *names, uint32_t n,
                   int required, uint32_t *out)
{
    const char *v = rd_kv(a, key);
    *out = 0;
    if (!v)
        return required ? rd_bad(r, "missing argument", key) : 0;
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(v, names[i]) && strcmp(names[i], "?")) {
            *out = i;
            return 0;
        }
    return rd_kv_u32(a, key, 0, 1, out);
}

/* create and create2 (which adds flags=). */
static int do_create(struct call *c)
{
    struct replay *r = c->r;
    const struct rd_args *a = &c->a;
    uint32_t fid, id = 0;
    if (rd_def(r, TR_ALLOC, c->pos[0], &fid))
        return 1;
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    if (rd_kind(r, rd_kv(a, "kind"), &d.kind))
        return 1;
    uint32_t cflags = 0, dev = 0;
    if (c->v == TV_CREATE2) {
        if (rd_flags(r, rd_kv(a, "flags"), tr_create_flag_names, &cflags))
            return 1;
        /* device=D<n>: a device allocation, private to its process. */
        const char *dv = rd_kv(a, "device");
        if (dv && rd_ref(r, TR_DEV, dv, &dev))
            return 1;
    }
    if (d.kind == SOFTGPU_ALLOC_HEAP) {
        if (rd_kv_u64(a, "size", 0, 1, &d.size) || rd_kv_u64(a, "align", 0, 0, &d.alignment) ||
            rd_prop(r, a, "heap", tr_heap_type_names, 6, 1, &d.heap.type) ||
            rd_prop(r, a, "cpu-page", tr_cpu_page_names, 4, 0, &d.heap.cpu_page_property) ||
            rd_prop(r, a, "pool", tr_memory_pool_names, 3, 0, &d.heap.memory_pool))
            return 1;
    } else if (d.kind == SOFTGPU_ALLOC_EXPLICIT) {
        if (rd_kv_u64(a, "size", 0, 1, &d.info.size) || rd_kv_u64(a, "align", 0, 0, &d.info.alignment) ||
            rd_kv_u32(a, "write-set", 0, 1, &d.info.supported_write_segment_set) ||
            rd_kv_u32(a, "read-set", 0, 0, &d.info.supported_read_segment_set) ||
            rd_kv_u32(a, "evict-set", 0, 0, &d.info.eviction_segment_set) ||
            rd_kv_u32(a, "pref", 0, 0, &d.info.preferred_segment) ||
            rd_kv_u32(a, "alloc-flags", 0, 0, &d.info.flags) || rd_kv_u32(a, "priority", 0, 0, &d.info.priority))
            return 1;
    } else {
        if (rd_kv_u64(a, "size", 0, 1, &d.size) || rd_kv_u64(a, "align", 0, 0, &d.alignment) ||
            rd_kv_u32(a, "cpu", 0, 0, &d.cpu_visible))
            return 1;
    }
    if (dev)
        tr_create_on(c->t, dev, &d, cflags, rd_kv(a, "name"), &id);
    else
        tr_create(c->t, &d, c->v == TV_CREATE2, cflags, rd_kv(a, "name"), &id);
    return def_done(r, TR_ALLOC, fid, id);
}

static int do_destroy(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x))
        return 1;
    tr_destroy(c->t, x);
    return 0;
}

static int do_priority(struct call *c)
{
    uint32_t x;
    uint64_t u;
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x) || tr_parse_u64(c->pos[1], &u) || u > UINT32_MAX)
        return rd_bad(c->r, "usage", "priority A<n> VALUE");
    tr_priority(c->t, x, (uint32_t)u);
    return 0;
}

/* move and move-discard. */
static int do_move(struct call *c)
{
    uint32_t x, y;
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x) || rd_kv_u32(&c->a, "segment", 0, 1, &y))
        return 1;
    tr_move(c->t, x, y, c->v == TV_MOVE_DISCARD);
    return 0;
}

static int do_flip(struct call *c)
{
    uint32_t x = 0;
    uint64_t u;
    if (tr_parse_u64(c->pos[0], &u) || u > UINT32_MAX)
        return rd_bad(c->r, "usage", "flip SOURCE A<n>|-");
    if (strcmp(c->pos[1], "-") && rd_ref(c->r, TR_ALLOC, c->pos[1], &x))
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
    if (rd_def(r, TR_VA, c->pos[0], &fid) || rd_ref(r, TR_PROC, c->pos[1], &x) || rd_kv_addr(&c->a, "base", 0, &base) ||
        rd_kv_u64(&c->a, "min", 0, 0, &min) || rd_kv_u64(&c->a, "max", 0, 0, &max) || rd_kv_u64(&c->a, "size", 0, 1, &size))
        return 1;
    const char *m = rd_kv(&c->a, "mode");
    unsigned mode = m && !strcmp(m, "zero") ? VIDMM_GPUVA_RESERVE_ZERO : VIDMM_GPUVA_RESERVE_NO_ACCESS;
    if (m && strcmp(m, "zero") && strcmp(m, "no-access"))
        return rd_bad(r, "mode must be zero or no-access", m);
    tr_reserve(c->t, x, base, min, max, size, mode, &id);
    return def_done(r, TR_VA, fid, id);
}

static int do_map(struct call *c)
{
    struct replay *r = c->r;
    const struct rd_args *a = &c->a;
    struct tr_addr base;
    uint64_t min, max, off, dprot, size;
    uint32_t fid, x, y, prot, id = 0;
    if (rd_def(r, TR_VA, c->pos[0], &fid) || rd_ref(r, TR_PROC, c->pos[1], &x) || rd_ref(r, TR_ALLOC, c->pos[2], &y) ||
        rd_kv_addr(a, "base", 0, &base) || rd_kv_u64(a, "min", 0, 0, &min) || rd_kv_u64(a, "max", 0, 0, &max) ||
        rd_kv_u64(a, "offset", 0, 0, &off) || rd_kv_u32(a, "protection", 0, 0, &prot) ||
        rd_kv_u64(a, "driver-protection", 0, 0, &dprot))
        return 1;
    struct tr_obj *ao = tr_get(c->t, TR_ALLOC, y);
    uint64_t rest = ao && ao->size > off ? ao->size - off : 0;
    if (rd_kv_u64(a, "size", rest, 0, &size))
        return 1;
    tr_map(c->t, x, base, min, max, y, off, size, prot, dprot, &id);
    return def_done(r, TR_VA, fid, id);
}

/* place V<n> P<n> A<n> offset=N size=N [align=N]: a placed resource. */
static int do_place(struct call *c)
{
    struct replay *r = c->r;
    const struct rd_args *a = &c->a;
    uint64_t off, size, align;
    uint32_t fid, x, y, id = 0;
    if (rd_def(r, TR_VA, c->pos[0], &fid) || rd_ref(r, TR_PROC, c->pos[1], &x) || rd_ref(r, TR_ALLOC, c->pos[2], &y) ||
        rd_kv_u64(a, "offset", 0, 0, &off) || rd_kv_u64(a, "align", 65536, 0, &align))
        return 1;
    struct tr_obj *ao = tr_get(c->t, TR_ALLOC, y);
    uint64_t rest = ao && ao->size > off ? ao->size - off : 0;
    if (rd_kv_u64(a, "size", rest, 0, &size))
        return 1;
    tr_place(c->t, x, y, off, size, align, &id);
    return def_done(r, TR_VA, fid, id);
}

/* unmap and free. */
static int do_unmap(struct call *c)
{
    struct tr_addr va;
    uint32_t x;
    uint64_t size;
    if (rd_ref(c->r, TR_PROC, c->pos[0], &x) || rd_kv_addr(&c->a, "va", 1, &va) ||
        rd_kv_u64(&c->a, "size", rd_range_rest(c->t, va), 0, &size))
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
    if (rd_ref(r, TR_DEV, c->pos[0], &x) || rd_ref(r, TR_QUEUE, c->pos[1], &y) ||
        rd_flags(r, rd_kv(&c->a, "flags"), tr_make_resident_flag_names, &flags) ||
        rd_list(r, c->pos[2], &list, &cnt))
        return 1;
    if (tr_make_resident(c->t, x, y, list, cnt, flags, &fence, NULL) == VIDMM_PENDING)
        rd_remember_fence(r, y, fence);
    free(list);
    return 0;
}

static int do_evict(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, flags, x;
    if (rd_ref(r, TR_DEV, c->pos[0], &x) || rd_flags(r, rd_kv(&c->a, "flags"), tr_evict_flag_names, &flags) ||
        rd_list(r, c->pos[1], &list, &cnt))
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
    if (rd_ref(r, TR_QUEUE, c->pos[0], &x))
        return 1;
    const char *fs = rd_kv(&c->a, "fence");
    if (fs && !strcmp(fs, "last"))
        fence = x < r->last_fence_cap ? r->last_fence[x] : 0;
    else if (rd_kv_u64(&c->a, "fence", 0, 1, &fence))
        return 1;
    /* Another driver numbers its paging fences otherwise: a recorded
     * value may never come on this one.  Waiting for all the queue got
     * is at least what the trace waited for (docs/DECISIONS.md D81). */
    if (r->foreign_driver && !(fs && !strcmp(fs, "last")))
        fence = x < r->last_fence_cap ? r->last_fence[x] : 0;
    tr_wait(c->t, x, fence);
    return 0;
}

static int do_offer(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *list, cnt, x, prio = VIDMM_OFFER_NORMAL;
    uint64_t u;
    static const char *const pn[] = { "low", "normal", "high", "auto" };
    const char *ps = rd_kv(&c->a, "priority");
    if (ps) {
        prio = 0;
        for (uint32_t i = 0; i < 4; i++)
            if (!strcmp(ps, pn[i]))
                prio = i + 1;
        if (!prio && (tr_parse_u64(ps, &u) || u > UINT32_MAX))
            return rd_bad(r, "offer priority: low, normal, high, auto", ps);
        if (!prio)
            prio = (uint32_t)u;
    }
    if (rd_ref(r, TR_DEV, c->pos[0], &x) || rd_list(r, c->pos[1], &list, &cnt))
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
    if (rd_ref(r, TR_QUEUE, c->pos[0], &x) || rd_list(r, c->pos[1], &list, &cnt))
        return 1;
    if (tr_reclaim(c->t, x, list, cnt, NULL, &fence) == VIDMM_PENDING)
        rd_remember_fence(r, x, fence);
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
    if (rd_ref(r, TR_PROC, c->pos[0], &x) || rd_group(r, c->pos[1], &g))
        return 1;
    if (tr_parse_u64(c->pos[2], &bytes))
        return rd_bad(r, "bad byte count", c->pos[2]);
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
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x) || rd_kv_u64(&c->a, "seed", 0, 1, &seed))
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
    if (rd_ref(c->r, TR_PROC, c->pos[0], &x) || rd_kv_addr(&c->a, "va", 1, &va) ||
        rd_kv_u64(&c->a, "size", rd_range_rest(c->t, va), 0, &size) || rd_kv_u64(&c->a, "seed", 0, 1, &seed))
        return 1;
    if (size % 8)
        return rd_bad(c->r, "GPU access size must be a multiple of 8", NULL);
    if (c->v == TV_GPU_READ)
        tr_gpu_read(c->t, x, va, size, seed);
    else
        tr_gpu_write(c->t, x, va, size, seed);
    return 0;
}

/* lock and unlock. */
static int do_lock(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x))
        return 1;
    if (c->v == TV_LOCK)
        tr_lock(c->t, x);
    else
        tr_unlock(c->t, x);
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
    if (rd_def(r, TR_CTX, c->pos[0], &fid) || rd_ref(r, TR_DEV, c->pos[1], &x))
        return 1;
    const char *ns = rd_kv(&c->a, "node"), *ms = rd_kv(&c->a, "mode");
    uint32_t node = 0, mode = VIDMM_CONTEXT_VIRTUAL;
    if (ns && !strcmp(ns, "graphics"))
        node = SOFTGPU_NODE_GRAPHICS;
    else if (ns && !strcmp(ns, "compute"))
        node = SOFTGPU_NODE_COMPUTE;
    else if (ns && !strcmp(ns, "copy"))
        node = SOFTGPU_NODE_COPY;
    else if (rd_kv_u32(&c->a, "node", 0, 0, &node))
        return 1;
    if (ms && !strcmp(ms, "physical"))
        mode = VIDMM_CONTEXT_PHYSICAL;
    else if (ms && strcmp(ms, "virtual"))
        return rd_bad(r, "mode must be virtual or physical", ms);
    tr_context_create(c->t, x, node, mode, &id);
    return def_done(r, TR_CTX, fid, id);
}

static int do_context_destroy(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_CTX, c->pos[0], &x))
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
    const char *to = rd_kv(&c->a, "to");
    if (rd_def(r, TR_BUF, c->pos[0], &fid) || (to && rd_ref(r, TR_ALLOC, to, &y)) ||
        rd_kv_u64(&c->a, "offset", 0, 0, &offset) || rd_cmds(r, rd_kv(&c->a, "cmds"), &cmds, &cnt))
        return 1;
    tr_cmdbuf(c->t, cmds, cnt, y, offset, &id);
    free(cmds);
    return def_done(r, TR_BUF, fid, id);
}

static int do_submit_virtual(struct call *c)
{
    struct tr_addr va;
    uint32_t x, size;
    if (rd_ref(c->r, TR_CTX, c->pos[0], &x) || rd_kv_addr(&c->a, "va", 1, &va) || rd_kv_u32(&c->a, "size", 0, 1, &size))
        return 1;
    tr_submit_virtual(c->t, x, va, size, NULL);
    return 0;
}

static int do_submit_physical(struct call *c)
{
    struct replay *r = c->r;
    uint32_t *ids, *fl, cnt, np2, x, y, flags = 0;
    struct tr_patch *pl;
    const char *fs = rd_kv(&c->a, "flags");
    if (fs && !strcmp(fs, "reused"))
        flags = VIDMM_SUBMIT_REUSED;
    else if (fs && rd_flags(r, fs, NULL, &flags))
        return 1;
    if (rd_ref(r, TR_CTX, c->pos[0], &x) || rd_ref(r, TR_BUF, c->pos[1], &y) ||
        rd_submit_allocs(r, rd_kv(&c->a, "allocs"), &ids, &fl, &cnt))
        return 1;
    if (rd_patches(r, rd_kv(&c->a, "patches"), &pl, &np2)) {
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
    if (rd_ref(c->r, TR_CTX, c->pos[0], &x) || rd_kv_u64(&c->a, "fence", 0, 1, &fence))
        return 1;
    tr_context_wait(c->t, x, fence);
    return 0;
}

static int do_context_fence(struct call *c)
{
    uint32_t x;
    if (rd_ref(c->r, TR_CTX, c->pos[0], &x))
        return 1;
    tr_context_fence(c->t, x, NULL, NULL);
    return 0;
}

static int do_result(struct call *c)
{
    uint32_t x;
    uint64_t offset, expect;
    if (rd_ref(c->r, TR_ALLOC, c->pos[0], &x) || rd_kv_u64(&c->a, "offset", 0, 0, &offset) ||
        rd_kv_u64(&c->a, "expect", 0, 1, &expect))
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
    [TV_LOCK]            = { 1, "lock|unlock A<n>", do_lock },
    [TV_UNLOCK]          = { 1, "lock|unlock A<n>", do_lock },
    [TV_PLACE]           = { 3, "place V<n> P<n> A<n> offset=N [size=N] [align=N]", do_place },
};

/* Whether got is tokens tok[from..n-1] joined by single blanks. */
static int result_equal(char **tok, int from, int n, const char *got)
{
    for (int i = from; i < n; i++) {
        if (i > from && *got++ != ' ')
            return 0;
        size_t l = strlen(tok[i]);
        if (strncmp(got, tok[i], l))
            return 0;
        got += l;
    }
    return *got == '\0';
}

/* The calls whose stated results hold on any driver: bytes read back
 * and the checkers' verdicts. */
static int integrity_verb(enum tr_verb v)
{
    return v == TV_WRITE || v == TV_CHECK || v == TV_GPU_READ || v == TV_GPU_WRITE || v == TV_RESULT ||
           v == TV_CHECK_ADAPTER;
}

static int exec_line(struct replay *r, struct tr *t, char *line)
{
    char *tok[RD_MAX_TOKENS];
    int n = rd_tokenize(line, tok, RD_MAX_TOKENS);
    if (n < 0)
        return rd_bad(r, "too many tokens", NULL);
    if (n == 0)
        return 0;   /* next_line gives no blank line; this keeps tok[0] defined for the compiler */
    int eq = n;
    for (int i = 0; i < n; i++)
        if (!strcmp(tok[i], "=")) {
            eq = i;
            break;
        }
    const char *pos[8];
    struct rd_seen seen;
    memset(&seen, 0, sizeof seen);
    struct call c = { r, t, { tok, eq, r, &seen }, pos, 0, TV_COUNT };
    c.np = rd_positional(&c.a, pos, 8);
    const char *verb = tok[0];

    if (!strcmp(verb, "frame")) {
        uint64_t u;
        if (c.np < 1 || tr_parse_u64(pos[0], &u))
            return rd_bad(r, "usage", "frame N");
        tr_frame(t, u);
        return 0;
    }
    int v;
    for (v = 0; v < TV_COUNT; v++)
        if (!strcmp(verb, tr_verb_names[v]))
            break;
    if (v == TV_COUNT || !verb_table[v].fn) {
        char what[1024];
        int len = snprintf(what, sizeof what, "unknown verb '%s' (frame", verb);
        for (int k = 0; k < TV_COUNT && len > 0 && (size_t)len < sizeof what; k++)
            if (verb_table[k].fn)
                len += snprintf(what + len, sizeof what - (size_t)len, ", %s", tr_verb_names[k]);
        if (len > 0 && (size_t)len < sizeof what)
            snprintf(what + len, sizeof what - (size_t)len, ")");
        return rd_bad(r, what, NULL);
    }
    if (r->strict && eq == n)
        return rd_bad(r, "call line without a recorded result", verb);

    if (r->foreign_driver && eq + 1 < n && !strcmp(tok[eq + 1], "NOT_APPLICABLE")) {
        /* Not made where the trace was recorded, and what follows assumes
         * it was not: not made here either (docs/DECISIONS.md D81). */
        r->skipped_na++;
        return 0;
    }
    const struct verb_entry *e = &verb_table[v];
    c.v = (enum tr_verb)v;
    if (rd_want_pos(r, c.np, e->npos, e->usage) || e->fn(&c) || rd_unknown_keys(&c.a, verb))
        return 1;
    r->executed++;
    char why[512];
    snprintf(why, sizeof why, "%s", vidmm_last_error());   /* why the call failed, if it did */

    /* Compare what the call gave with what the line says it gave (any
     * length: a make-resident of 10,000 allocations has a long line). */
    const char *got = tr_last_result(t);
    int na = !strncmp(got, "NOT_APPLICABLE", 14);
    if (na && r->foreign_driver && (c.v == TV_CREATE || c.v == TV_CREATE2)) {
        /* What follows is built on an allocation the driver cannot make. */
        fprintf(stderr, "%s:%" PRIu64 ": %s: the driver cannot make this allocation: the rest is not applicable\n",
                r->path, r->lineno, verb);
        r->not_applicable = 1;
        return 0;
    }
    if (eq < n && r->foreign_driver && (na || !integrity_verb(c.v))) {
        /* Another driver's outcome, not a fault (D80): listed, counted. */
        if (!na && !result_equal(tok, eq + 1, n, got) && r->driver_outcomes++ < 20) {
            fprintf(stderr, "%s:%" PRIu64 ": %s: stated '", r->path, r->lineno, verb);
            for (int i = eq + 1; i < n; i++)
                fprintf(stderr, "%s%s", i > eq + 1 ? " " : "", tok[i]);
            fprintf(stderr, "', this driver gave '%s' (its outcome, not compared)\n", got);
        }
    } else if (eq < n) {
        r->checked++;
        if (!result_equal(tok, eq + 1, n, got)) {
            r->mismatches++;
            if (r->reported++ < 20) {
                fprintf(stderr, "%s:%" PRIu64 ": %s: recorded '", r->path, r->lineno, verb);
                for (int i = eq + 1; i < n; i++)
                    fprintf(stderr, "%s%s", i > eq + 1 ? " " : "", tok[i]);
                fprintf(stderr, "', replay gave '%s'%s%s\n", got, why[0] ? " - " : "", why);
            }
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
    while ((s = rd_next_line(r)) != NULL) {
        if (!strcmp(s, "begin"))
            continue;
        if (exec_line(r, t, s)) {
            if (r->progress && last_pct >= 0)
                fputc('\n', stderr);
            return 1;
        }
        if (r->not_applicable)
            return 0;
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
