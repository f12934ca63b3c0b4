/*
 * content.h - content moves and the system paging process (internal, never installed).
 */
#ifndef VIDMM_PAGING_PROCESS_PAGING_PROCESS_H
#define VIDMM_PAGING_PROCESS_PAGING_PROCESS_H

#include "model/objects.h"

vidmm_status vidmm_discard_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                   const struct vidmm_placement *pl);

/* the system paging process (GpuMmu adapters whose
 * driver sets VIDMM_GPUMMU_VIRTUAL_PAGING_OPS; a no-op otherwise). */
vidmm_status vidmm_paging_process_init(struct vidmm_adapter *a, char *msg, size_t n);

void vidmm_paging_process_fini(struct vidmm_adapter *a);

/* Content moves through the scratch window, chunked by its size (called
 * only from vidmm_copy_content / vidmm_fill_content). */
vidmm_status vidmm_paging_process_copy(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                           const struct vidmm_placement *dst);

vidmm_status vidmm_paging_process_fill(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *pl,
                           uint32_t pattern);

/* A page fault for token t: 1 if it named the paging process (counted;
 * called with the fence lock held). */
int vidmm_paging_process_fault_locked(struct vidmm_adapter *a, uint64_t t, uint64_t va);

/* For vidmm_adapter_check: its tables per segment, and its violations. */
/* Write the system paging process's page tables again (an adapter reset
 * or a resume lost them); its windows hold nothing afterwards. */
vidmm_status vidmm_paging_process_rebuild(struct vidmm_adapter *a);

int vidmm_paging_process_check(const struct vidmm_adapter *a, uint64_t *bytes_per_segment, char *msg, size_t n);

vidmm_status vidmm_copy_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *src, const struct vidmm_placement *dst);

vidmm_status vidmm_fill_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *pl, uint32_t pattern);

#endif
