/*
 * submit_bench.h - command-submission benchmarks (bench/submit_bench.c).
 */
#ifndef VIDMM_SUBMIT_BENCH_H
#define VIDMM_SUBMIT_BENCH_H

/* "S": submissions per second with 1, 100 and 10,000 referenced
 * allocations in virtual and physical mode, and the cost of patching per
 * patch location.  Honours bench_opts.quick and bench_opts.only. */
void bench_submit(void);

#endif
