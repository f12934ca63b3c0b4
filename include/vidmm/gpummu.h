/*
 * vidmm/gpummu.h - the GPU MMU as the manager sees it (GpuMmu model).
 *
 * An adapter whose driver sets VIDMM_CAPS_GPUMMU describes its page-table
 * geometry at start-up (DXGK_GPUMMUCAPS and one DXGK_PAGE_TABLE_LEVEL_DESC
 * per level); vidmm validates it and owns the page tables from then on.
 */
#ifndef VIDMM_GPUMMU_H
#define VIDMM_GPUMMU_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_gpummu_info {
    struct vidmm_gpummu_caps caps;
    uint32_t level_count;                       /* = caps.page_table_level_count */
    struct vidmm_page_table_level_desc level[VIDMM_MAX_PAGE_TABLE_LEVELS]; /* [0] = leaf */
    uint64_t va_size;                           /* 1 << virtual_address_bit_count */
    uint64_t leaf_span[VIDMM_MAX_PAGE_TABLE_LEVELS]; /* bytes of VA one table of each level covers */
    uint32_t root_resizable;                    /* 2 levels, root sized by get_root_page_table_size */
    uint32_t reserved;
};

/* VIDMM_E_NOT_SUPPORTED when the adapter does not use the GpuMmu model. */
VIDMM_API vidmm_status vidmm_adapter_query_gpummu(const struct vidmm_adapter *adapter, struct vidmm_gpummu_info *out);

/* The system paging process (Microsoft's 'System paging process' page): on a GpuMmu adapter whose
 * driver takes TRANSFER_VIRTUAL / FILL_VIRTUAL, vidmm moves every
 * allocation's content through a scratch VA window of its own GPU VA
 * space (docs/ARCHITECTURE.md).  For tests and tools. */
struct vidmm_paging_process_info {
    struct vidmm_physical_address root;   /* its root page table */
    uint32_t root_entries;                /* NumEntries it was bound with */
    uint32_t page_tables;                 /* tables it owns (pinned) */
    uint64_t page_table_bytes;            /* segment bytes of those tables */
    uint64_t scratch_va;                  /* source window: [scratch_va, scratch_va + window_size) */
    uint64_t window_size;                 /* destination window follows; the largest chunk */
    uint64_t moves;                       /* content moves (copies and fills) run through it */
    uint64_t chunks;                      /* window remappings: one virtual op each */
    uint64_t faults;                      /* GPU page faults the driver reported for it (a vidmm or driver bug) */
    uint64_t last_fault_va;
    /* ABI generation 3 (written only for a caller that declared it):
     * the same two windows with 64 KB page-table entries, used for the
     * bytes of a chunk that are whole 64 KB pages of a 64 KB-page memory
     * segment.  Source [scratch_va_64k, +window_size), destination right
     * after; 0 when the adapter's leaves cannot hold 64 KB entries. */
    uint64_t scratch_va_64k;
    uint64_t chunks_64k;                  /* chunks with a side through a 64 KB window */
};

/* VIDMM_E_NOT_SUPPORTED when the adapter has no paging process (no
 * GpuMmu, or the driver does not set VIDMM_GPUMMU_VIRTUAL_PAGING_OPS). */
VIDMM_API vidmm_status vidmm_adapter_query_paging_process(const struct vidmm_adapter *adapter,
                                                struct vidmm_paging_process_info *out);

#ifdef __cplusplus
}
#endif
#endif
