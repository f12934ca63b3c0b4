/*
 * scale_bench.c - "NP": the cost of a call against the number of live
 * processes.
 *
 * One adapter (softgpu dgpu, synchronous engines) with P live processes,
 * P = 1, 16, 256, 1,024, 4,096, each with a device, a paging queue and
 * PS_ALLOCS resident 4 KiB allocations (so the adapter holds
 * P x PS_ALLOCS allocations too).  Three representative calls, timed in
 * the same run for every P and reported as ratios to the P = 1 figure
 * (growth at most logarithmic is the target, docs/PERFORMANCE.md):
 *
 *   MR  make-resident of an already-resident list (one process's
 *       PS_ALLOCS allocations; the calls rotate over up to 64 processes
 *       spread over the P);
 *   AC  allocation create + destroy (4 KiB, never made resident);
 *   PC  process create + destroy (its root page table is placed and
 *       freed each time);
 *   MV  evict + make-resident of a 64 KiB allocation in local memory
 *       mapped in one process's VA space (its PTEs rewritten twice: the
 *       walk over the processes that map it);
 *   PL  a process's life as a vidmmd client's: process, device, paging
 *       queue, PS_ALLOCS allocations created through the device
 *       (private) and made resident, then the process destroyed with
 *       all of it (its teardown walks what it owns and created).
 *
 * Median of 5 runs of each loop, after one warm-up adapter.  The local
 * segments are sized for the
 * P root page tables (128 KiB per process here).
 */
#include "bench.h"
#include "scale_bench.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PS_ALLOCS 4u
#define PS_SPREAD 64u

struct ps_proc {
    vidmm_handle proc, dev, queue;
    vidmm_handle al[PS_ALLOCS];
};

struct ps_result {
    double mr, ac, pc, mv, pl;   /* ns per call (PL: per life); < 0: failed */
};

static double median5(uint64_t *ns, uint32_t calls)
{
    qsort(ns, 5, sizeof ns[0], bench_cmp_u64);
    return (double)ns[2] / (double)calls;
}

static int ps_make_resident(struct vidmm_adapter *a, const struct ps_proc *p)
{
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = p->queue;
    m.allocations = p->al;
    m.count = PS_ALLOCS;
    m.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    vidmm_status st = vidmm_make_resident(a, p->dev, &m);
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, p->queue, m.paging_fence_value, UINT64_MAX);
    return st < 0 ? -1 : 0;
}

static struct ps_result ps_run(uint32_t np)
{
    struct ps_result res = { -1, -1, -1, -1, -1 };
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.synchronous = 1;
    uint64_t seg = ((uint64_t)np * (128u << 10) + (64u << 20)) & ~(uint64_t)((1u << 20) - 1);
    cfg.segment_size[1] = seg;
    cfg.segment_size[2] = seg;
    struct softgpu *sg = NULL;
    if (softgpu_create(&cfg, &sg) != VIDMM_OK)
        return res;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    ci.max_processes = np + 16;
    struct vidmm_adapter *a = NULL;
    if (vidmm_adapter_open(&ci, &a) != VIDMM_OK) {
        softgpu_destroy(sg);
        return res;
    }
    struct ps_proc *ps = calloc(np, sizeof *ps);
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_STAGING;
    d.cpu_visible = 1;
    d.size = 4096;
    uint32_t made = 0;
    if (!ps)
        goto out;
    for (; made < np; made++) {
        struct ps_proc *p = &ps[made];
        if (vidmm_process_create(a, &p->proc) || vidmm_device_create(a, p->proc, &p->dev) ||
            vidmm_paging_queue_create(a, p->dev, VIDMM_PAGING_QUEUE_NORMAL, &p->queue))
            goto out;
        for (uint32_t k = 0; k < PS_ALLOCS; k++)
            if (vidmm_allocation_create(a, &d, sizeof d, &p->al[k]) != VIDMM_OK)
                goto out;
        if (ps_make_resident(a, p) < 0)
            goto out;
    }
    uint64_t ns[5];
    /* MR: already resident, already referenced. */
    uint32_t spread = np < PS_SPREAD ? np : PS_SPREAD, calls = bench_opts.quick ? 2000 : 20000;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t c = 0; c < calls; c++)
            if (ps_make_resident(a, &ps[(uint64_t)(c % spread) * np / spread]) < 0)
                goto out;
        ns[r] = bench_now_ns() - t0;
    }
    res.mr = median5(ns, calls);
    /* AC: in the middle process's name (a device allocation would be
     * private; a plain one is what most calls create). */
    calls = bench_opts.quick ? 500 : 5000;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t c = 0; c < calls; c++) {
            vidmm_handle h = 0;
            if (vidmm_allocation_create(a, &d, sizeof d, &h) != VIDMM_OK ||
                vidmm_allocation_destroy(a, h) != VIDMM_OK)
                goto out;
        }
        ns[r] = bench_now_ns() - t0;
    }
    res.ac = median5(ns, calls);
    /* PC */
    calls = bench_opts.quick ? 200 : 2000;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t c = 0; c < calls; c++) {
            vidmm_handle h = 0;
            if (vidmm_process_create(a, &h) != VIDMM_OK || vidmm_process_destroy(a, h) != VIDMM_OK)
                goto out;
        }
        ns[r] = bench_now_ns() - t0;
    }
    res.pc = median5(ns, calls);
    /* MV: a texture in local memory, mapped in the middle process. */
    {
        struct ps_proc *p = &ps[np / 2];
        struct softgpu_alloc_desc t;
        memset(&t, 0, sizeof t);
        t.kind = SOFTGPU_ALLOC_TEXTURE;
        t.size = 64u << 10;
        vidmm_handle h = 0;
        uint64_t va = 0;
        if (vidmm_allocation_create(a, &t, sizeof t, &h) != VIDMM_OK ||
            vidmm_gpuva_map(a, p->proc, 0, 0, 0, h, 0, t.size, 0, 0, &va) != VIDMM_OK)
            goto out;
        struct vidmm_make_resident_args m;
        memset(&m, 0, sizeof m);
        m.paging_queue = p->queue;
        m.allocations = &h;
        m.count = 1;
        m.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        struct vidmm_evict_args e;
        memset(&e, 0, sizeof e);
        e.allocations = &h;
        e.count = 1;
        calls = bench_opts.quick ? 200 : 2000;
        for (int r = 0; r < 5; r++) {
            uint64_t t0 = bench_now_ns();
            for (uint32_t c = 0; c < calls; c++) {
                vidmm_status st = vidmm_make_resident(a, p->dev, &m);
                if (st == VIDMM_PENDING)
                    st = vidmm_paging_queue_wait(a, p->queue, m.paging_fence_value, UINT64_MAX);
                if (st < 0 || vidmm_evict(a, p->dev, &e) != VIDMM_OK)
                    goto out;
            }
            ns[r] = bench_now_ns() - t0;
        }
        res.mv = median5(ns, calls);
    }
    /* PL */
    calls = bench_opts.quick ? 100 : 1000;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t c = 0; c < calls; c++) {
            struct ps_proc q;
            memset(&q, 0, sizeof q);
            if (vidmm_process_create(a, &q.proc) || vidmm_device_create(a, q.proc, &q.dev) ||
                vidmm_paging_queue_create(a, q.dev, VIDMM_PAGING_QUEUE_NORMAL, &q.queue))
                goto out;
            for (uint32_t k = 0; k < PS_ALLOCS; k++)
                if (vidmm_device_allocation_create(a, q.dev, &d, sizeof d, 0, &q.al[k]) != VIDMM_OK)
                    goto out;
            if (ps_make_resident(a, &q) < 0 || vidmm_process_destroy(a, q.proc) != VIDMM_OK)
                goto out;
        }
        ns[r] = bench_now_ns() - t0;
    }
    res.pl = median5(ns, calls);
    if (bench_opts.check && vidmm_adapter_check(a, NULL, 0))
        res.mr = res.ac = res.pc = res.mv = res.pl = -2;
out:
    if (made < np || res.pl < 0) {
        fprintf(stderr, "bench NP: %u processes: setup or a timed call failed (%u made)\n", np, made);
        bench_fail();
    }
    free(ps);
    vidmm_adapter_close(a);   /* destroys the processes and allocations */
    softgpu_destroy(sg);
    return res;
}

void bench_scale(void)
{
    if (!bench_only("NP"))
        return;
    static const uint32_t counts[] = { 1u, 16u, 256u, 1024u, 4096u };
    printf("\n== NP: cost of a call against live processes (%u resident allocations each; ns per call, ratio "
           "to 1 process) ==\n",
           PS_ALLOCS);
    printf("%9s %8s %5s %8s %5s %8s %5s %8s %5s %8s %5s\n", "processes", "MR ns", "ratio", "AC ns", "ratio",
           "PC ns", "ratio", "MV ns", "ratio", "PL ns", "ratio");
    (void)ps_run(16);   /* warm-up, not reported: the first adapter's host pages, the CPU's clock */
    struct ps_result base = { 0, 0, 0, 0, 0 };
    for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        struct ps_result r = ps_run(counts[i]);
        if (i == 0)
            base = r;
        printf("%9u %8.1f %5.2f %8.1f %5.2f %8.1f %5.2f %8.1f %5.2f %8.1f %5.2f\n", counts[i], r.mr,
               base.mr > 0 ? r.mr / base.mr : 0, r.ac, base.ac > 0 ? r.ac / base.ac : 0, r.pc,
               base.pc > 0 ? r.pc / base.pc : 0, r.mv, base.mv > 0 ? r.mv / base.mv : 0, r.pl,
               base.pl > 0 ? r.pl / base.pl : 0);
        fflush(stdout);
    }
}
