/*
 * scale_bench.h - the process-count benchmark (bench/scale_bench.c).
 */
#ifndef VIDMM_SCALE_BENCH_H
#define VIDMM_SCALE_BENCH_H

/* "NP": make-resident of a resident list, allocation create+destroy and
 * process create+destroy with 1 to 4,096 live processes, as ratios to
 * the 1-process figure of the same run.  Honours bench_opts.quick,
 * bench_opts.check and bench_opts.only. */
void bench_scale(void);

#endif
