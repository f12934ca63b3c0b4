/*
 * va_bench.h - GPU VA bookkeeping benchmark (bench/va_bench.c).
 */
#ifndef VIDMM_VA_BENCH_H
#define VIDMM_VA_BENCH_H

/* Prints two tables: workload G of docs/PERFORMANCE.md (map/unmap with
 * splits, against drm_gpuvm when a G peer is linked, peers.h) and reserve/free "anywhere" at
 * 10^3 and 10^6 live reservations (the growth factor must stay
 * logarithmic).  Honours bench_opts.quick and bench_opts.check. */
void bench_va(void);

#endif
