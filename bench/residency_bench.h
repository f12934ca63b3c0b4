/*
 * residency_bench.h - residency benchmarks (bench/residency_bench.c).
 */
#ifndef VIDMM_RESIDENCY_BENCH_H
#define VIDMM_RESIDENCY_BENCH_H

/* "MR": make-resident cost per already-resident allocation with 10^3 to
 * 10^6 allocations alive (target <= 20 ns, flat).  Honours
 * bench_opts.quick and bench_opts.only. */
void bench_residency(void);

/* "share": the same for shared allocations (vidmm/share.h), named by their
 * creator's and by an opener's handles, as ratios to private ones
 * measured in the same run.  Honours bench_opts.quick and .only. */
void bench_share(void);

#endif
