/*
 * pte_bench.h - GpuMmu page-table update benchmark (bench/pte_bench.c).
 */
#ifndef VIDMM_PTE_BENCH_H
#define VIDMM_PTE_BENCH_H

/* Prints a table: softgpu UPDATE_PAGE_TABLE (build_paging_buffer +
 * submit_command) in ns per PTE for sequential runs of 512, 4096 and
 * 262144 leaf PTEs and for random single-PTE updates over 1 GiB of
 * tables, next to raw 8-byte store baselines from the same run. */
void bench_pte(void);

#endif
