/*
 * tdr_bench.h - recovery benchmarks (bench/tdr_bench.c).
 */
#ifndef VIDMM_TDR_BENCH_H
#define VIDMM_TDR_BENCH_H

/* "TDR": time to recover an adapter reset with N allocations resident in
 * video memory (half restored from a system copy, half zero-filled), page
 * tables rebuilt; and the time to go to standby and back.  Honours
 * bench_opts.quick and bench_opts.only. */
void bench_tdr(void);

#endif
