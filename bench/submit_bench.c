/*
 * submit_bench.c - submissions per second and the cost of patching.
 *
 * softgpu dgpu in synchronous mode (the buffer runs inside the submit
 * call, so the figure is vidmm's and the driver's CPU path, not a thread
 * hand-off).  N allocations of 64 KiB, all resident:
 *   virtual   on the device's residency list; the buffer (one NOP) sits
 *             at a GPU VA; each submission walks the list (residency
 *             check, busy marking), submits, and the next one retires it;
 *   physical  AccessedPhysically allocations in the invisible segment,
 *             all in the allocation list, one patch location each (a
 *             WRITE64 to each): once with every location patched, once
 *             as a reused buffer where nothing moved (no patch written).
 * The patch cost per location is (full - reused) / N.  Median of 5 runs.
 */
#include "bench.h"
#include "bench_softgpu.h"
#include "submit_bench.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sb_env {
    struct softgpu *sg;
    struct vidmm_adapter *a;
    vidmm_handle p, d, q, vctx, pctx;
    vidmm_handle *h;
    uint32_t n;
    uint64_t cmd_va;
    uint8_t *buf;
    struct vidmm_submit_allocation *al;
    struct vidmm_patch_location *pl;
    uint32_t buf_size;
};

static void env_close(struct sb_env *e)
{
    vidmm_adapter_close(e->a);
    softgpu_destroy(e->sg);
    free(e->h);
    free(e->buf);
    free(e->al);
    free(e->pl);
}

static int env_open(struct sb_env *e, uint32_t n, int physical)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    if (bench_sg_open(NULL, &e->sg, &e->a))
        return -1;
    e->h = calloc(n, sizeof *e->h);
    if (!e->h || vidmm_process_create(e->a, &e->p) || vidmm_device_create(e->a, e->p, &e->d) ||
        vidmm_paging_queue_create(e->a, e->d, 0, &e->q))
        return -1;
    struct vidmm_context_desc vd = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 }, pd = { 1, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    if (vidmm_context_create(e->a, e->d, &vd, &e->vctx) || vidmm_context_create(e->a, e->d, &pd, &e->pctx))
        return -1;
    struct softgpu_alloc_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.kind = SOFTGPU_ALLOC_EXPLICIT;
    sd.info.size = 65536;
    sd.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(2);
    sd.info.flags = physical ? VIDMM_ALLOC_ACCESSED_PHYSICALLY : 0;
    for (uint32_t i = 0; i < n; i++)
        if (vidmm_allocation_create(e->a, &sd, sizeof sd, &e->h[i]) != VIDMM_OK)
            return -1;
    if (!physical) {
        if (bench_make_resident(e->a, e->d, e->q, e->h, n))
            return -1;
        /* The buffer: one NOP in a CPU-visible allocation mapped in the VA space. */
        sd.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(1);
        sd.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
        vidmm_handle cmd;
        void *p = NULL;
        if (vidmm_allocation_create(e->a, &sd, sizeof sd, &cmd) || vidmm_allocation_lock(e->a, cmd, &p))
            return -1;
        struct softgpu_cmdbuf cb = { p, 0, 65536 };
        softgpu_cmd_nop(&cb);
        vidmm_allocation_unlock(e->a, cmd);
        if (bench_make_resident(e->a, e->d, e->q, &cmd, 1) ||
            vidmm_gpuva_map(e->a, e->p, 0, 0, 0, cmd, 0, 65536, 0, 0, &e->cmd_va))
            return -1;
        e->buf_size = cb.size;
        return 0;
    }
    e->buf_size = 24u * n;
    e->buf = malloc(e->buf_size);
    e->al = calloc(n, sizeof *e->al);
    e->pl = calloc(n, sizeof *e->pl);
    if (!e->buf || !e->al || !e->pl)
        return -1;
    struct softgpu_cmdbuf cb = { e->buf, 0, e->buf_size };
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = cb.size;
        softgpu_cmd_write64(&cb, 0, i);
        e->al[i].allocation = e->h[i];
        e->pl[i] = (struct vidmm_patch_location){ i, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
    }
    return 0;
}

/* ns per submission (submit + wait), mode 0 virtual, 1 physical full
 * patch, 2 physical reused buffer. */
static double run(struct sb_env *e, int mode, uint32_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < iters; i++) {
        uint64_t fence = 0;
        vidmm_handle ctx = mode ? e->pctx : e->vctx;
        vidmm_status st;
        if (mode == 0) {
            st = vidmm_submit_virtual(e->a, e->vctx, e->cmd_va, e->buf_size, &fence);
        } else {
            struct vidmm_submit_physical_args pa;
            memset(&pa, 0, sizeof pa);
            pa.buffer = e->buf;
            pa.size = e->buf_size;
            pa.allocations = e->al;
            pa.allocation_count = e->n;
            pa.patches = e->pl;
            pa.patch_count = e->n;
            pa.flags = mode == 2 ? VIDMM_SUBMIT_REUSED : 0;
            st = vidmm_submit_physical(e->a, e->pctx, &pa);
            fence = pa.fence;
        }
        if (st != VIDMM_OK || vidmm_context_wait(e->a, ctx, fence, UINT64_MAX) != VIDMM_OK)
            return -1;
    }
    return (double)(bench_now_ns() - t0) / iters;
}

void bench_submit(void)
{
    if (bench_opts.only && !strstr(bench_opts.only, "S"))
        return;
    static const uint32_t ns[] = { 1, 100, 10000 };
    printf("\n== S: command submission (softgpu dgpu, synchronous engines; median of 5) ==\n");
    printf("%8s  %14s  %14s  %14s  %14s\n", "allocs", "virtual sub/s", "phys sub/s", "phys reused/s",
           "patch ns/loc");
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        uint32_t iters = n >= 10000 ? 200 : n >= 100 ? 4000 : 20000;
        if (bench_opts.quick)
            iters = iters / 20 + 1;
        double r[3][5];
        for (int phys = 0; phys < 2; phys++) {
            struct sb_env e;
            if (env_open(&e, n, phys) < 0) {
                printf("%8u  setup failed\n", n);
                env_close(&e);
                return;
            }
            /* Physical: full and reused runs alternate on the same
             * allocations, so their difference is the patching. */
            int first = phys ? 1 : 0, last = phys ? 2 : 0;
            for (int mode = first; mode <= last; mode++)
                (void)run(&e, mode, iters / 10 + 1);   /* warm up: first patch, caches */
            for (int rep = 0; rep < 5; rep++)
                for (int mode = first; mode <= last; mode++)
                    r[mode][rep] = run(&e, mode, iters);
            env_close(&e);
            for (int mode = first; mode <= last; mode++)
                qsort(r[mode], 5, sizeof(double), bench_cmp_double);
        }
        double v = r[0][2], pf = r[1][2], pr = r[2][2];
        printf("%8u  %14.0f  %14.0f  %14.0f  %14.2f\n", n, 1e9 / v, 1e9 / pf, 1e9 / pr, (pf - pr) / n);
    }
}
