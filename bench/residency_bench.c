/*
 * residency_bench.c - make-resident cost per already-resident allocation.
 *
 * An igpu adapter (IoMmu: system memory only, 4 KiB allocations, so a
 * million of them fit this machine) with N allocations alive, all on one
 * device's residency list.  Each timed call makes 1024 of them resident
 * again; references just count up, so the figure is the bookkeeping per
 * allocation: handle lookup, reference record, policy touch.  Three
 * patterns: a hot list of allocations created together (the first 1024:
 * a frame's working set; shows whether N itself costs anything), a hot
 * list spread over the N (every object, handle slot and reference record
 * on its own page: TLB-bound at large N), and streaming lists
 * (consecutive lists walk all N in creation order, so at large N every
 * object comes from DRAM).  Median of 5 runs of N/1024
 * calls (at least 256).
 */
#include "bench.h"
#include "residency_bench.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MR_LIST 1024u

/* An igpu adapter on softgpu with room for n 4 KiB allocations; NULL if
 * either cannot be made. */
static struct vidmm_adapter *mr_open(uint32_t n, struct softgpu **sg)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "igpu";
    cfg.segment_size[1] = (uint64_t)n * 4096u + (64u << 20);
    *sg = NULL;
    if (softgpu_create(&cfg, sg) != VIDMM_OK)
        return NULL;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(*sg, &ci);
    struct vidmm_adapter *a = NULL;
    if (vidmm_adapter_open(&ci, &a) != VIDMM_OK) {
        softgpu_destroy(*sg);
        *sg = NULL;
        return NULL;
    }
    return a;
}

/* ns per allocation of make-resident of lists of MR_LIST of the n
 * allocations h through device d and queue q, after one untimed pass
 * that makes the first references (allocates the records).  pattern 2:
 * the lists walk all n (cold objects); otherwise one list made resident
 * again each call (a frame's working set, warm) - 1: spread over the n,
 * 0: the first MR_LIST.  Median of 5 runs of max(256, n / MR_LIST)
 * calls; -1 on a failed call, -2 when --check finds the adapter broken. */
static double mr_time(struct vidmm_adapter *a, vidmm_handle d, vidmm_handle q, const vidmm_handle *h, uint32_t n,
                      int pattern)
{
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = q;
    m.count = MR_LIST;
    for (uint32_t i = 0; i + MR_LIST <= n; i += MR_LIST) {
        m.allocations = h + i;
        if (vidmm_make_resident(a, d, &m) < 0)
            return -1;
    }
    uint32_t lists = n / MR_LIST;
    vidmm_handle hot[MR_LIST];
    for (uint32_t i = 0; i < MR_LIST; i++)
        hot[i] = h[(uint64_t)i * lists];
    uint32_t calls = lists < 256 ? 256 : lists;
    uint64_t ns[5];
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t c = 0; c < calls; c++) {
            m.allocations = pattern == 2 ? h + (uint64_t)(c % lists) * MR_LIST : pattern == 1 ? hot : h;
            if (vidmm_make_resident(a, d, &m) < 0)
                return -1;
        }
        ns[r] = bench_now_ns() - t0;
    }
    qsort(ns, 5, sizeof ns[0], bench_cmp_u64);
    if (bench_opts.check && vidmm_adapter_check(a, NULL, 0))
        return -2;
    return (double)ns[2] / ((double)calls * MR_LIST);
}

static double mr_run(uint32_t n, int pattern)
{
    struct softgpu *sg = NULL;
    struct vidmm_adapter *a = mr_open(n, &sg);
    if (!a)
        return -1;
    vidmm_handle p = 0, d = 0, q = 0;
    vidmm_handle *h = malloc((size_t)n * sizeof *h);
    double result = -1;
    if (!h || vidmm_process_create(a, &p) || vidmm_device_create(a, p, &d) ||
        vidmm_paging_queue_create(a, d, 0, &q))
        goto out;
    struct softgpu_alloc_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.kind = SOFTGPU_ALLOC_STAGING;
    sd.size = 4096;
    for (uint32_t i = 0; i < n; i++)
        if (vidmm_allocation_create(a, &sd, sizeof sd, &h[i]) != VIDMM_OK)
            goto out;
    result = mr_time(a, d, q, h, n, pattern);
out:
    free(h);
    vidmm_adapter_close(a);
    softgpu_destroy(sg);
    return result;
}

void bench_residency(void)
{
    if (bench_opts.only && !strstr(bench_opts.only, "MR"))
        return;
    printf("\n== MR: make-resident per already-resident allocation (lists of %u) ==\n", MR_LIST);
    printf("%10s %16s %16s %16s\n", "allocs", "hot, created together", "hot, spread", "streaming lists");
    static const uint32_t sizes[] = { 1000u, 10000u, 100000u, 1000000u };
    for (unsigned i = 0; i < 4; i++) {
        uint32_t n = sizes[i];
        if (bench_opts.quick && n > 100000u)
            break;
        n = (n + MR_LIST - 1) / MR_LIST * MR_LIST;
        double together = mr_run(n, 0), spread = mr_run(n, 1);
        printf("%10u %16.1f %16.1f %16.1f\n", n, together, spread, mr_run(n, 2));
        fflush(stdout);
    }
}

/* ---- SH: make-resident of shared allocations ------------------------------ */

/* Per already-resident allocation, lists of 1024 on igpu: n private
 * allocations (the fast table) against n shared ones named by their
 * creator's handles and by an opener's (the full path: the fast table is
 * never used for shared allocations, vidmm/share.h).  kind 0 private, 1
 * shared through the creator, 2 shared through an opener. */
static double sh_run(uint32_t n, int kind)
{
    struct softgpu *sg = NULL;
    struct vidmm_adapter *a = mr_open(n, &sg);
    if (!a)
        return -1;
    vidmm_handle pa = 0, da = 0, pb = 0, db = 0, q = 0;
    vidmm_handle *h = malloc((size_t)n * sizeof *h);
    double result = -1;
    if (!h || vidmm_process_create(a, &pa) || vidmm_device_create(a, pa, &da) || vidmm_process_create(a, &pb) ||
        vidmm_device_create(a, pb, &db))
        goto out;
    vidmm_handle dev = kind == 2 ? db : da;
    if (vidmm_paging_queue_create(a, dev, 0, &q))
        goto out;
    struct softgpu_alloc_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.kind = SOFTGPU_ALLOC_STAGING;
    sd.size = 4096;
    for (uint32_t i = 0; i < n; i++) {
        if (vidmm_device_allocation_create(a, da, &sd, sizeof sd, VIDMM_CREATE_RESIDENT | (kind ? VIDMM_CREATE_SHARED : 0),
                                           &h[i]) != VIDMM_OK)
            goto out;
        if (kind == 2) {
            struct vidmm_share_token t;
            if (vidmm_share_export(a, pa, h[i], &t) != VIDMM_OK || vidmm_share_open(a, pb, &t, &h[i]) != VIDMM_OK)
                goto out;
        }
    }
    result = mr_time(a, dev, q, h, n, 2);
out:
    free(h);
    vidmm_adapter_close(a);
    softgpu_destroy(sg);
    return result;
}

void bench_share(void)
{
    if (bench_opts.only && !strstr(bench_opts.only, "share"))
        return;
    printf("\n== share: make-resident per already-resident shared allocation (lists of %u, streaming) ==\n", MR_LIST);
    printf("%10s %12s %12s %12s %14s %14s\n", "allocs", "private ns", "creator ns", "opener ns", "creator/priv",
           "opener/priv");
    static const uint32_t sizes[] = { 1024u, 10240u, 102400u };
    for (unsigned i = 0; i < 3; i++) {
        uint32_t n = sizes[i];
        if (bench_opts.quick && n > 10240u)
            break;
        double p = sh_run(n, 0), c = sh_run(n, 1), o = sh_run(n, 2);
        printf("%10u %12.1f %12.1f %12.1f %13.2fx %13.2fx\n", n, p, c, o, p > 0 ? c / p : 0, p > 0 ? o / p : 0);
        fflush(stdout);
    }
}
