/*
 * vidmm/gpummu.h - the GPU MMU as the manager sees it (GpuMmu model).
 *
 * An adapter whose driver sets VIDMM_CAPS_GPUMMU describes its page-table
 * geometry at start-up (DXGK_GPUMMUCAPS and one DXGK_PAGE_TABLE_LEVEL_DESC
 * per level); vidmm validates it and owns the page tables from then on.
 */
#ifndef VIDMM_GPUMMU_H
#define VIDMM_GPUMMU_H

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
vidmm_status vidmm_adapter_query_gpummu(const struct vidmm_adapter *adapter, struct vidmm_gpummu_info *out);

#ifdef __cplusplus
}
#endif
#endif
