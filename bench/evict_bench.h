/*
 * evict_bench.h - workload E of docs/PERFORMANCE.md: eviction under
 * over-commitment (bench/evict_bench.c).
 */
#ifndef VIDMM_EVICT_BENCH_H
#define VIDMM_EVICT_BENCH_H

/* Runs E with naive LRU-until-fit and with the eviction scan
 * (seg/evict_scan.h) over vidmm's range allocator: ns per request,
 * mean occupancy and evictions per request, same-run ratios.  Selected by
 * --only E; honours bench_opts.quick and bench_opts.check. */
void bench_evict(void);

#endif
