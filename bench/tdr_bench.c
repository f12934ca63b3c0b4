/*
 * tdr_bench.c - how long an adapter reset and a power cycle take.
 *
 * softgpu dgpu, synchronous engines, a driver without reset_engine (so a
 * hang is recovered by an adapter reset).  Process D owns N allocations
 * of 64 KiB resident in the invisible memory segment: the even ones were
 * restored from their system copy and are clean (restored again after
 * the reset), the odd ones were written by the CPU while resident (lost:
 * zero-filled).  Every allocation is mapped in D's VA space, so the page
 * tables to rebuild grow with N.  Process H hangs a node on a WAIT.  The
 * figure is the wall time of the vidmm_adapter_detect_hangs call that
 * finds the hang (a first poll starts the detector's clock) once the timeout
 * passed: the whole recovery (driver reset, fences, page-table rebuild,
 * restores and fills).  The restore rate is compared with memcpy of the
 * same bytes in the same run.  Then standby + resume + make-resident of
 * everything: saving and bringing back N x 64 KiB.
 */
#include "bench.h"
#include "bench_softgpu.h"
#include "tdr_bench.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SZ 65536u

struct tb_env {
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_driver_ops ops;
    vidmm_handle dp, dd, dq;     /* data process */
    vidmm_handle hp, hd, hq, hctx; /* hanging process */
    vidmm_handle *h;
    uint32_t n;
};

/* A CPU-visible SZ-byte allocation in segment seg. */
static void cpu_desc(struct softgpu_alloc_desc *sd, uint32_t seg)
{
    memset(sd, 0, sizeof *sd);
    sd->kind = SOFTGPU_ALLOC_EXPLICIT;
    sd->cpu_visible = 1;
    sd->info.size = SZ;
    sd->info.supported_write_segment_set = VIDMM_SEGMENT_BIT(seg);
    sd->info.flags = VIDMM_ALLOC_CPU_VISIBLE;
}

static int fill(struct tb_env *e, vidmm_handle h, uint32_t v)
{
    void *p = NULL;
    if (vidmm_allocation_lock(e->a, h, &p) != VIDMM_OK)
        return -1;
    memset(p, (int)v, SZ);
    return vidmm_allocation_unlock(e->a, h) != VIDMM_OK;
}

static int env_open(struct tb_env *e, uint32_t n)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    e->ops = *softgpu_driver_ops();
    e->ops.reset_engine = NULL;   /* every hang becomes an adapter reset */
    if (bench_sg_open(&e->ops, &e->sg, &e->a))
        return -1;
    if (vidmm_adapter_set_tdr_timeout(e->a, 1000000) != VIDMM_OK)
        return -1;
    e->h = calloc(n, sizeof *e->h);
    if (!e->h || vidmm_process_create(e->a, &e->dp) || vidmm_device_create(e->a, e->dp, &e->dd) ||
        vidmm_paging_queue_create(e->a, e->dd, 0, &e->dq) || vidmm_process_create(e->a, &e->hp) ||
        vidmm_device_create(e->a, e->hp, &e->hd) || vidmm_paging_queue_create(e->a, e->hd, 0, &e->hq))
        return -1;
    struct vidmm_context_desc cd = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    if (vidmm_context_create(e->a, e->hd, &cd, &e->hctx))
        return -1;
    struct softgpu_alloc_desc sd;
    cpu_desc(&sd, 2);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t va;
        if (vidmm_allocation_create2(e->a, &sd, sizeof sd, 0, &e->h[i]) != VIDMM_OK || fill(e, e->h[i], i | 1u) ||
            vidmm_gpuva_map(e->a, e->dp, 0, 0, 0, e->h[i], 0, SZ, 0, 0, &va))
            return -1;
    }
    if (bench_make_resident(e->a, e->dd, e->dq, e->h, n))
        return -1;
    for (uint32_t i = 1; i < n; i += 2)
        if (fill(e, e->h[i], 0x5A))   /* written while resident: no current system copy */
            return -1;
    return 0;
}

static void env_close(struct tb_env *e)
{
    if (e->a)
        vidmm_adapter_close(e->a);
    if (e->sg)
        softgpu_destroy(e->sg);
    free(e->h);
}

/* Hang H's node, wait past the timeout, time the recovery. */
static double recover_ns(struct tb_env *e)
{
    struct softgpu_alloc_desc sd;
    cpu_desc(&sd, 1);
    vidmm_handle cmd;
    uint64_t va = 0, fence = 0;
    void *p = NULL;
    if (vidmm_allocation_create(e->a, &sd, sizeof sd, &cmd) || vidmm_gpuva_map(e->a, e->hp, 0, 0, 0, cmd, 0, SZ, 0, 0, &va) ||
        bench_make_resident(e->a, e->hd, e->hq, &cmd, 1) || vidmm_allocation_lock(e->a, cmd, &p))
        return -1;
    struct softgpu_cmdbuf cb = { p, 0, SZ };
    softgpu_cmd_wait(&cb, va + 4096, 1);   /* nobody writes it */
    vidmm_allocation_unlock(e->a, cmd);
    if (vidmm_submit_virtual(e->a, e->hctx, va, cb.size, &fence) != VIDMM_OK)
        return -1;
    /* The detector samples progress: the first poll starts the clock,
     * a poll after the timeout finds the hang and recovers (timed). */
    int rec = 0;
    if (vidmm_adapter_detect_hangs(e->a, &rec) != VIDMM_OK || rec)
        return -1;
    struct timespec ts = { 0, 3000000 };
    nanosleep(&ts, NULL);
    uint64_t t0 = bench_now_ns();
    vidmm_status st = vidmm_adapter_detect_hangs(e->a, &rec);
    uint64_t t1 = bench_now_ns();
    if (st != VIDMM_OK || !rec)
        return -1;
    return (double)(t1 - t0);
}

static double memcpy_ns(uint64_t bytes)
{
    uint8_t *s = malloc(bytes), *d = malloc(bytes);
    if (!s || !d) {
        free(s);
        free(d);
        return -1;
    }
    memset(s, 1, bytes);
    memset(d, 2, bytes);
    uint64_t t0 = bench_now_ns();
    memcpy(d, s, bytes);
    uint64_t t1 = bench_now_ns();
    volatile uint8_t sink = d[bytes / 2];
    (void)sink;
    free(s);
    free(d);
    return (double)(t1 - t0);
}

static double power_cycle_ns(struct tb_env *e)
{
    uint64_t t0 = bench_now_ns();
    if (vidmm_adapter_set_power_state(e->a, VIDMM_POWER_STANDBY) != VIDMM_OK ||
        vidmm_adapter_set_power_state(e->a, VIDMM_POWER_D0) != VIDMM_OK ||
        bench_make_resident(e->a, e->dd, e->dq, e->h, e->n))
        return -1;
    return (double)(bench_now_ns() - t0);
}

void bench_tdr(void)
{
    if (bench_opts.only && !strstr(bench_opts.only, "TDR"))
        return;
    static const uint32_t ns[] = { 256, 1024, 4096 };
    uint32_t count = bench_opts.quick ? 1 : 3;
    printf("\n== TDR: adapter reset recovery and power cycle (dgpu, synchronous, 64 KiB allocations) ==\n");
    printf("%8s %12s %12s %14s %12s %14s\n", "allocs", "recover ms", "us/alloc", "restore GB/s", "memcpy GB/s",
           "standby+resume ms");
    for (uint32_t k = 0; k < count; k++) {
        struct tb_env e;
        if (env_open(&e, ns[k])) {
            printf("%8u setup failed\n", ns[k]);
            env_close(&e);
            continue;
        }
        double r = recover_ns(&e);
        struct vidmm_tdr_stats s;
        vidmm_adapter_get_tdr_stats(e.a, &s);
        uint64_t bytes = s.allocations_restored * (uint64_t)SZ;
        double m = memcpy_ns(bytes ? bytes : SZ);
        double pc = power_cycle_ns(&e);
        printf("%8u %12.2f %12.2f %14.2f %12.2f %14.2f   (restored %llu, lost %llu)\n", ns[k], r / 1e6,
               r / 1e3 / ns[k], r > 0 ? (double)bytes / r : 0, m > 0 ? (double)bytes / m : 0, pc / 1e6,
               (unsigned long long)s.allocations_restored, (unsigned long long)s.allocations_lost);
        env_close(&e);
    }
}
