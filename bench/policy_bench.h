/*
 * policy_bench.h - eviction-policy simulator benchmark (bench/policy_bench.c).
 */
#ifndef VIDMM_POLICY_BENCH_H
#define VIDMM_POLICY_BENCH_H

/* Prints two tables: paging bytes and simulated paging time of every
 * built-in policy on the loop, drift, multi and random reference strings
 * (ratio to Belady), and ns per touch / per miss of each policy at 10^3 ..
 * 10^6 resident entries.  Selected by --only policy; honours
 * bench_opts.quick and bench_opts.check. */
void bench_policy(void);

#endif
