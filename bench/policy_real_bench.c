/*
 * policy_real_bench.c - eviction policies scored on the real manager.
 *
 * The same reference strings as a user-mode driver would produce drive
 * vidmm on softgpu (synchronous copy engine, so runs are deterministic):
 * each request is a list of allocations that must be resident together
 * (make-resident), after which the list is evicted "only if necessary",
 * so what leaves memory and when is decided by the eviction policy under
 * pressure.  Before each request the listed allocations get their next
 * use as a hint (vidmm_allocation_set_next_use), which only Belady's
 * policy reads.  Every policy runs the identical string; the report gives
 * paging bytes (restored + evicted) and simulated paging time (bytes at
 * 10 GB/s plus 20 us per paging operation) as ratios to Belady's.
 *
 * Workloads, on a 64 MiB invisible segment (allocations 64 KiB-1 MiB):
 *   loop   a cyclic scan over a working set of 1.3x the segment;
 *   drift  a working set of 0.8x that slides over a population of 3x,
 *          with Zipf-like popularity inside it;
 *   multi  three processes (LOW, NORMAL, HIGH priority), working sets of
 *          0.6x each, interleaved;
 *   sweep  a working set of 1.2x that slides over a population of 3x,
 *          walked in order (a drift that recency misleads).
 * Allocations may also live in the aperture (system memory): a request
 * that may not evict what holds memory (priorities) settles there, and
 * such a restore moves no bytes.
 */
#include "bench.h"
#include "policy_real_bench.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"
#include "splitmix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RP_SEG (64ull << 20)
#define RP_MAX_LIST 8

struct rp_trace {
    uint32_t nalloc;
    uint64_t *size;
    int *owner;              /* process index */
    uint32_t nreq;
    uint32_t *req_len;
    uint32_t (*req)[RP_MAX_LIST];   /* allocation indices */
    uint64_t *next;          /* [request * RP_MAX_LIST + k]: request index of next use, or UINT64_MAX */
};

static int rp_alloc_trace(struct rp_trace *t, uint32_t nalloc, uint32_t nreq)
{
    memset(t, 0, sizeof *t);
    t->nalloc = nalloc;
    t->nreq = nreq;
    t->size = calloc(nalloc, sizeof *t->size);
    t->owner = calloc(nalloc, sizeof *t->owner);
    t->req_len = calloc(nreq, sizeof *t->req_len);
    t->req = calloc(nreq, sizeof *t->req);
    t->next = calloc((size_t)nreq * RP_MAX_LIST, sizeof *t->next);
    return t->size && t->owner && t->req_len && t->req && t->next ? 0 : -1;
}

static void rp_free_trace(struct rp_trace *t)
{
    free(t->size);
    free(t->owner);
    free(t->req_len);
    free(t->req);
    free(t->next);
}

static uint64_t rp_size(uint64_t *s)
{
    return (64ull << 10) << (splitmix64_next(s) % 5);   /* 64 KiB .. 1 MiB */
}

/* Sizes until the population holds `bytes`. */
static uint32_t rp_population(struct rp_trace *t, uint64_t bytes, uint64_t *s, int owner, uint32_t first,
                              uint32_t cap)
{
    uint64_t total = 0;
    uint32_t i = first;
    while (total < bytes && i < cap) {
        t->size[i] = rp_size(s);
        t->owner[i] = owner;
        total += t->size[i];
        i++;
    }
    return i;
}

/* Next-use indices, from the back. */
static void rp_next_uses(struct rp_trace *t)
{
    uint64_t *last = malloc(t->nalloc * sizeof *last);
    if (!last)
        return;
    for (uint32_t i = 0; i < t->nalloc; i++)
        last[i] = UINT64_MAX;
    for (uint32_t r = t->nreq; r-- > 0;)
        for (uint32_t k = 0; k < t->req_len[r]; k++) {
            uint32_t x = t->req[r][k];
            t->next[(size_t)r * RP_MAX_LIST + k] = last[x];
            last[x] = r;
        }
    free(last);
}

static int rp_make_loop(struct rp_trace *t, uint32_t nreq)
{
    uint64_t s = 11;
    if (rp_alloc_trace(t, 4096, nreq))
        return -1;
    uint32_t n = rp_population(t, RP_SEG * 13 / 10, &s, 0, 0, 4096);
    t->nalloc = n;
    for (uint32_t r = 0; r < nreq; r++) {
        t->req_len[r] = 1;
        t->req[r][0] = r % n;
    }
    rp_next_uses(t);
    return 0;
}

static int rp_make_drift(struct rp_trace *t, uint32_t nreq)
{
    uint64_t s = 22;
    if (rp_alloc_trace(t, 4096, nreq))
        return -1;
    uint32_t n = rp_population(t, RP_SEG * 3, &s, 0, 0, 4096);
    t->nalloc = n;
    /* The window holds about 0.8x of the segment: count its members. */
    uint64_t avg = RP_SEG * 3 / n;
    uint32_t w = (uint32_t)(RP_SEG * 8 / 10 / (avg ? avg : 1));
    if (w < 4)
        w = 4;
    for (uint32_t r = 0; r < nreq; r++) {
        uint32_t base = (uint32_t)((uint64_t)r * (n - w) / nreq);   /* slides across the population */
        uint32_t len = 1 + (uint32_t)(splitmix64_next(&s) % 3);
        t->req_len[r] = len;
        for (uint32_t k = 0; k < len; k++) {
            /* Zipf-ish: a uniform pick squared leans to the window's front. */
            uint64_t u = splitmix64_next(&s) % 1024;
            uint32_t off = (uint32_t)(u * u * w / (1024 * 1024));
            t->req[r][k] = base + off;
        }
    }
    rp_next_uses(t);
    return 0;
}

/* A drifting working set that recency misleads: a window of 1.2x the
 * segment slides over a population of 3x, and the requests walk the
 * window in order (1-3 consecutive allocations each), as a renderer
 * streams a scene's visible set frame after frame while the camera
 * moves.  Added beside drift (whose 0.8x window fits in memory, so its
 * paging is almost all compulsory); drift is unchanged. */
static int rp_make_sweep(struct rp_trace *t, uint32_t nreq)
{
    uint64_t s = 44;
    if (rp_alloc_trace(t, 4096, nreq))
        return -1;
    uint32_t n = rp_population(t, RP_SEG * 3, &s, 0, 0, 4096);
    t->nalloc = n;
    uint64_t avg = RP_SEG * 3 / n;
    uint32_t w = (uint32_t)(RP_SEG * 12 / 10 / (avg ? avg : 1));
    if (w < 4)
        w = 4;
    uint32_t pos = 0;
    for (uint32_t r = 0; r < nreq; r++) {
        uint32_t base = (uint32_t)((uint64_t)r * (n - w) / nreq);
        uint32_t len = 1 + (uint32_t)(splitmix64_next(&s) % 3);
        t->req_len[r] = len;
        for (uint32_t k = 0; k < len; k++)
            t->req[r][k] = base + (pos + k) % w;
        pos = (pos + len) % w;
    }
    rp_next_uses(t);
    return 0;
}

static int rp_make_multi(struct rp_trace *t, uint32_t nreq)
{
    uint64_t s = 33;
    if (rp_alloc_trace(t, 4096, nreq))
        return -1;
    uint32_t b0 = 0, b1 = rp_population(t, RP_SEG * 6 / 10, &s, 0, 0, 4096);
    uint32_t b2 = rp_population(t, RP_SEG * 6 / 10, &s, 1, b1, 4096);
    uint32_t b3 = rp_population(t, RP_SEG * 6 / 10, &s, 2, b2, 4096);
    t->nalloc = b3;
    uint32_t base[3] = { b0, b1, b2 }, count[3] = { b1 - b0, b2 - b1, b3 - b2 };
    for (uint32_t r = 0; r < nreq; r++) {
        int p = (int)(splitmix64_next(&s) % 3);
        uint32_t len = 1 + (uint32_t)(splitmix64_next(&s) % 4);
        t->req_len[r] = len;
        for (uint32_t k = 0; k < len; k++) {
            /* Each process loops over its set, with some random reuse. */
            uint32_t pos = (splitmix64_next(&s) % 4) ? (uint32_t)((r / 3 + k) % count[p]) : (uint32_t)(splitmix64_next(&s) % count[p]);
            t->req[r][k] = base[p] + pos;
        }
    }
    rp_next_uses(t);
    return 0;
}

struct rp_result {
    uint64_t bytes;
    uint64_t ops;
    double sim_ms;
    int ok;
    uint64_t sys_refs[3], refs[3];
};

static struct rp_result rp_run(const struct rp_trace *t, const struct vidmm_eviction_policy *policy, int class_major)
{
    struct rp_result res;
    memset(&res, 0, sizeof res);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = 16ull << 20;
    cfg.segment_size[2] = RP_SEG + (4ull << 20);   /* the page tables live here too */
    cfg.synchronous = 1;
    struct softgpu *sg = NULL;
    struct vidmm_adapter *a = NULL;
    if (softgpu_create(&cfg, &sg) != VIDMM_OK)
        return res;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    vidmm_handle *h = calloc(t->nalloc, sizeof *h);
    vidmm_handle proc[3] = { 0, 0, 0 }, dev[3] = { 0, 0, 0 }, q[3] = { 0, 0, 0 };
    if (!h || vidmm_adapter_open(&ci, &a) != VIDMM_OK || vidmm_adapter_set_eviction_policy(a, policy) != VIDMM_OK)
        goto out;
    static const uint32_t prio[3] = { VIDMM_PRIORITY_LOW, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_HIGH };
    for (int p = 0; p < 3; p++)
        if (vidmm_process_create(a, &proc[p]) || vidmm_device_create(a, proc[p], &dev[p]) ||
            vidmm_paging_queue_create(a, dev[p], 0, &q[p]))
            goto out;
    int multi = 0;
    for (uint32_t i = 0; i < t->nalloc; i++)
        multi |= t->owner[i] != 0;
    for (uint32_t i = 0; i < t->nalloc; i++) {
        struct softgpu_alloc_desc d;
        memset(&d, 0, sizeof d);
        d.kind = SOFTGPU_ALLOC_EXPLICIT;
        d.info.size = t->size[i];
        /* Memory first; the aperture (system memory reached through the
         * page tables) when a request may not evict what holds memory -
         * a LOW request facing HIGH allocations, for instance. */
        d.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
        if (vidmm_allocation_create2(a, &d, sizeof d, 0, &h[i]) != VIDMM_OK ||
            vidmm_allocation_set_priority(a, h[i], multi ? prio[t->owner[i]] : VIDMM_PRIORITY_NORMAL) != VIDMM_OK)
            goto out;
    }
    struct vidmm_residency_stats before;
    vidmm_residency_get_stats(a, &before);
    uint64_t clock0 = vidmm_residency_clock(a);
    for (uint32_t r = 0; r < t->nreq; r++) {
        vidmm_handle list[RP_MAX_LIST];
        int p = t->owner[t->req[r][0]];
        for (uint32_t k = 0; k < t->req_len[r]; k++) {
            uint32_t x = t->req[r][k];
            list[k] = h[x];
            uint64_t nx = t->next[(size_t)r * RP_MAX_LIST + k];
            /* make-resident number r runs at clock0 + r + 1. */
            uint64_t hint = nx == UINT64_MAX ? VIDMM_NEXT_USE_NEVER : clock0 + nx + 1;
            if (class_major) {
                /* Lower class first, then Belady's order within a class. */
                uint64_t c = multi ? (uint64_t)t->owner[x] : 1;
                hint = (3 - c) << 56 | (hint < (1ull << 56) ? hint : (1ull << 56) - 1);
            }
            vidmm_allocation_set_next_use(a, h[x], hint);
        }
        struct vidmm_make_resident_args m;
        memset(&m, 0, sizeof m);
        m.paging_queue = q[p];
        m.allocations = list;
        m.count = t->req_len[r];
        m.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        vidmm_status st = vidmm_make_resident(a, dev[p], &m);
        if (st == VIDMM_PENDING)
            st = vidmm_paging_queue_wait(a, q[p], m.paging_fence_value, UINT64_MAX);
        if (st < 0 || vidmm_evict(a, dev[p], &(struct vidmm_evict_args){ .allocations = list, .count = m.count, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }) < 0)
            goto out;
        for (uint32_t k = 0; k < m.count; k++) {
            struct vidmm_allocation_state as;
            if (vidmm_allocation_query(a, list[k], &as) == VIDMM_OK && as.segment_id != 2)
                res.sys_refs[p]++;
            res.refs[p]++;
        }
    }
    struct vidmm_residency_stats after;
    vidmm_residency_get_stats(a, &after);
    res.bytes = (after.bytes_restored - before.bytes_restored) + (after.bytes_evicted - before.bytes_evicted);
    res.ops = (after.restores - before.restores) + (after.evictions - before.evictions);
    res.sim_ms = (double)res.bytes / 10e9 * 1e3 + (double)res.ops * 0.020;
    res.ok = !bench_opts.check || vidmm_adapter_check(a, NULL, 0) == 0;
out:
    if (a) {
        for (int p = 0; p < 3; p++)
            if (proc[p])
                vidmm_process_destroy(a, proc[p]);
        vidmm_adapter_close(a);
    }
    free(h);
    softgpu_destroy(sg);
    return res;
}

void bench_policy_real(void)
{
    if (bench_opts.only && !strstr(bench_opts.only, "RP"))
        return;
    uint32_t nreq = bench_opts.quick ? 1500 : 6000;
    printf("\n== RP: eviction policies on the real manager (64 MiB segment, %u requests; ratio to Belady) ==\n",
           nreq);
    const struct vidmm_eviction_policy *const *pol = vidmm_policies();
    static const char *const wname[4] = { "loop", "drift", "multi", "sweep" };
    for (int w = 0; w < 4; w++) {
        struct rp_trace t;
        int rc = w == 0   ? rp_make_loop(&t, nreq)
                 : w == 1 ? rp_make_drift(&t, nreq)
                 : w == 2 ? rp_make_multi(&t, nreq)
                          : rp_make_sweep(&t, nreq);
        if (rc) {
            rp_free_trace(&t);
            continue;
        }
        if (w != 2) {
            /* A lower bound for any policy when every allocation must be
             * in the memory segment (one NORMAL process: 0% system-memory
             * references): each allocation named is restored at least
             * once (all start evicted), and at the end at most the
             * segment's size stays resident. */
            uint64_t named = 0;
            unsigned char *seen = calloc(t.nalloc, 1);
            for (uint32_t r = 0; seen && r < t.nreq; r++)
                for (uint32_t k = 0; k < t.req_len[r]; k++)
                    if (!seen[t.req[r][k]]++)
                        named += t.size[t.req[r][k]];
            free(seen);
            uint64_t cap = RP_SEG + (4ull << 20);
            printf("  %-6s compulsory paging >= %.1f MiB (%.1f named, at most %.1f resident at the end)\n", wname[w],
                   (double)(named + (named > cap ? named - cap : 0)) / (1 << 20), (double)named / (1 << 20),
                   (double)cap / (1 << 20));
        }
        struct rp_result opt = rp_run(&t, &vidmm_policy_belady, 0);
        struct rp_result cls = rp_run(&t, &vidmm_policy_belady, 1);
        printf("  %-6s %-10s %12s %10s %8s %8s %8s %8s\n", wname[w], "policy", "paging MiB", "sim ms", "bytes/B",
               "time/B", "bytes/Bc", "sys refs");
        for (int i = 0; pol[i] || i == 0 || pol[i - 1]; i++) {
            /* After the built-in policies: Belady with class-major hints. */
            const struct vidmm_eviction_policy *p = pol[i];
            struct rp_result r = !p ? cls : p == &vidmm_policy_belady ? opt : rp_run(&t, p, 0);
            uint64_t sys = r.sys_refs[0] + r.sys_refs[1] + r.sys_refs[2], refs = r.refs[0] + r.refs[1] + r.refs[2];
            printf("  %-6s %-10s %12.1f %10.1f %8.3f %8.3f %8.3f %7.1f%%%s\n", wname[w], p ? p->name : "belady/cls",
                   (double)r.bytes / (1 << 20), r.sim_ms, opt.bytes ? (double)r.bytes / (double)opt.bytes : 0.0,
                   opt.sim_ms > 0 ? r.sim_ms / opt.sim_ms : 0.0, cls.bytes ? (double)r.bytes / (double)cls.bytes : 0.0,
                   refs ? 100.0 * (double)sys / (double)refs : 0.0, r.ok ? "" : "  CHECK FAILED");
            if (!p)
                break;
        }
        rp_free_trace(&t);
        fflush(stdout);
    }
}
