/*
 * policy_real_bench.h - eviction policies on the real manager ("RP").
 */
#ifndef VIDMM_POLICY_REAL_BENCH_H
#define VIDMM_POLICY_REAL_BENCH_H

/* Paging bytes and simulated paging time of every built-in policy as a
 * ratio to Belady's on the loop, drift and multi workloads. */
void bench_policy_real(void);

#endif
