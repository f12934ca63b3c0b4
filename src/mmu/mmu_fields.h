/*
 * mmu_fields.h - the GPU MMU's state in a process (its `mmu` member,
 * mmu/page_table.c): the page-table tree, the buffer PTE writes go
 * through, and the span to flush.  model/objects.h embeds it; only
 * src/mmu/ names the member (others call mmu/mmu.h).  Types only.
 */
#ifndef VIDMM_MMU_MMU_FIELDS_H
#define VIDMM_MMU_MMU_FIELDS_H

#include <stdint.h>

struct vidmm_page_table;
struct vidmm_pte;

struct vidmm_process_mmu {
    struct vidmm_page_table *root;  /* NULL in IoMmu mode */
    int paging_process;             /* the system paging process: tables in the paging-process segments */
    struct vidmm_pte *pte_buf;      /* one leaf table's worth of entries: writes never allocate */
    uint32_t pte_buf_len;
    uint64_t epoch;                 /* bumped by every prepare; tables remember theirs */
    uint64_t flush_lo, flush_hi;    /* VA span whose PTEs changed since the last FLUSH_TLB */
    uint64_t root_grows;            /* times a resizable root grew */
};

#endif
