/*
 * paging_bench.h - softgpu paging throughput benchmark (bench/paging_bench.c).
 */
#ifndef VIDMM_PAGING_BENCH_H
#define VIDMM_PAGING_BENCH_H

/* Prints a table: memcpy and non-temporal fill baselines next to softgpu
 * TRANSFER and FILL (build_paging_buffer + submit_command), GB/s and
 * ratios, for 64 KiB .. 256 MiB.  Honours bench_opts.quick. */
void bench_paging(void);

#endif
