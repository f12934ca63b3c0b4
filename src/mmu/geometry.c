/*
 * geometry.c - the GpuMmu page-table geometry: queried from the driver at
 * adapter start-up (DXGKQAITYPE_GPUMMUCAPS, then one
 * DXGKQAITYPE_PAGETABLELEVELDESC per level) and validated, because every
 * later page-table operation computes indices and table sizes from it.
 *
 * Translation (the DXGK_PAGE_TABLE_LEVEL_DESC reference page): VA bits 0-11 are the byte in a 4 KiB
 * page, the next bits index the leaf (level 0), then level 1, and so on;
 * the root is the top level.  So the VA width is 12 + the sum of the
 * levels' index bits, and a table of level L covers 4 KiB << (bits of
 * levels 0..L).
 */
#include "model/objects.h"
#include "mmu/mmu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static vidmm_status bad(char *msg, size_t n, const char *fmt, ...)
{
    if (msg && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, n, fmt, ap);
        va_end(ap);
    }
    return VIDMM_E_BAD_DRIVER_DESC;
}

vidmm_status vidmm_gpummu_init(struct vidmm_adapter *a, char *msg, size_t n)
{
    struct vidmm_gpummu_info *g = &a->gpummu;
    memset(g, 0, sizeof(*g));
    a->has_gpummu = 0;
    if (!(a->caps.memory_management_caps & VIDMM_CAPS_GPUMMU))
        return VIDMM_OK;
    vidmm_status st = vidmm_driver_query(a, VIDMM_QAI_GPUMMUCAPS, NULL, 0, &g->caps, sizeof(g->caps));
    if (st < 0)
        return bad(msg, n, "driver reports GpuMmuSupported but the GPUMMUCAPS query failed: %s", vidmm_status_str(st));
    uint32_t levels = g->caps.page_table_level_count;
    if (levels < VIDMM_MIN_PAGE_TABLE_LEVELS || levels > VIDMM_MAX_PAGE_TABLE_LEVELS)
        return bad(msg, n, "GpuMmu: %u page-table levels; between %u and %u are allowed", levels,
                   VIDMM_MIN_PAGE_TABLE_LEVELS, VIDMM_MAX_PAGE_TABLE_LEVELS);
    if (g->caps.page_table_update_mode > VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL)
        return bad(msg, n, "GpuMmu: unknown page-table update mode %u", g->caps.page_table_update_mode);
    if (g->caps.leaf_page_table_size_for_64k_pages_in_bytes % VIDMM_PAGE_4K)
        return bad(msg, n, "GpuMmu: 64 KB leaf table size %u is not a multiple of 4 KB",
                   g->caps.leaf_page_table_size_for_64k_pages_in_bytes);
    g->level_count = levels;
    uint32_t bits = 12;
    for (uint32_t l = 0; l < levels; l++) {
        struct vidmm_query_page_table_level_in in;
        memset(&in, 0, sizeof(in));
        in.level_index = (uint16_t)l;
        struct vidmm_page_table_level_desc *d = &g->level[l];
        st = vidmm_driver_query(a, VIDMM_QAI_PAGETABLELEVELDESC, &in, sizeof(in), d, sizeof(*d));
        if (st < 0)
            return bad(msg, n, "GpuMmu: level %u description query failed: %s", l, vidmm_status_str(st));
        if (d->page_table_index_bit_count == 0 || d->page_table_index_bit_count > 30)
            return bad(msg, n, "GpuMmu: level %u indexes %u VA bits (1..30 allowed)", l,
                       d->page_table_index_bit_count);
        /* A 2-level root may report size 0: it is resizable, sized by
         * the driver's get_root_page_table_size (docs/DECISIONS.md D26). */
        int resizable = levels == 2 && l == 1 && d->page_table_size_in_bytes == 0;
        if (resizable && !a->ops.get_root_page_table_size)
            return bad(msg, n, "GpuMmu: 2-level root of size 0 (resizable) needs the get_root_page_table_size op");
        if (resizable && d->page_table_segment_id == 0)
            return bad(msg, n, "GpuMmu: a resizable root must live in a memory segment");
        if (resizable && d->paging_process_page_table_segment_id == 0 &&
            (g->caps.flags & VIDMM_GPUMMU_VIRTUAL_PAGING_OPS))
            return bad(msg, n, "GpuMmu: the paging process's resizable root must live in a memory segment");
        g->root_resizable |= (uint32_t)resizable;
        if ((!resizable && d->page_table_size_in_bytes == 0) || d->page_table_size_in_bytes % VIDMM_PAGE_4K)
            return bad(msg, n, "GpuMmu: level %u table size %llu is not a non-zero multiple of 4 KB", l,
                       (unsigned long long)d->page_table_size_in_bytes);
        if (d->page_table_alignment_in_bytes & (d->page_table_alignment_in_bytes - 1))
            return bad(msg, n, "GpuMmu: level %u table alignment is not a power of two", l);
        uint32_t segs[2] = { d->page_table_segment_id, d->paging_process_page_table_segment_id };
        for (int k = 0; k < 2; k++) {
            uint32_t id = segs[k];
            if (id >= a->segment_count)
                return bad(msg, n, "GpuMmu: level %u page tables in segment %u, which does not exist", l, id);
            if (id && a->seg[id].kind != VIDMM_SEGMENT_KIND_MEMORY)
                return bad(msg, n, "GpuMmu: level %u page tables in segment %u, which is not a memory segment", l, id);
            if (id == 0 && d->page_table_size_in_bytes > VIDMM_PAGE_4K)
                return bad(msg, n, "GpuMmu: level %u tables in system memory must be at most 4 KB", l);
            if (id && d->page_table_size_in_bytes % a->seg[id].page_size)
                return bad(msg, n, "GpuMmu: level %u table size %llu is not a multiple of segment %u's %u-byte page", l,
                           (unsigned long long)d->page_table_size_in_bytes, id, a->seg[id].page_size);
        }
        /* The 64 KB-entry leaf lives where level 0's tables do: the
         * segment allocates whole pages, so a size that is not a multiple
         * of them would be accounted short (found by fuzz/driver_desc). */
        uint32_t leaf64 = g->caps.leaf_page_table_size_for_64k_pages_in_bytes;
        for (int k = 0; l == 0 && leaf64 && k < 2; k++)
            if (segs[k] && leaf64 % a->seg[segs[k]].page_size)
                return bad(msg, n, "GpuMmu: 64 KB leaf table size %u is not a multiple of segment %u's %u-byte page",
                           leaf64, segs[k], a->seg[segs[k]].page_size);
        if (g->caps.page_table_update_mode == VIDMM_PAGE_TABLE_UPDATE_CPU_VIRTUAL && d->page_table_segment_id &&
            !a->seg[d->page_table_segment_id].cpu_base)
            return bad(msg, n, "GpuMmu: CPU_VIRTUAL page-table updates need level %u's tables where the CPU reaches them", l);
        bits += d->page_table_index_bit_count;
        g->leaf_span[l] = 1ull << (bits < 64 ? bits : 63);
    }
    if (bits != g->caps.virtual_address_bit_count)
        return bad(msg, n, "GpuMmu: %u VA bits reported but 12 + the levels' index bits make %u",
                   g->caps.virtual_address_bit_count, bits);
    if (bits > 63)
        return bad(msg, n, "GpuMmu: %u VA bits; at most 63", bits);
    g->va_size = 1ull << bits;
    a->has_gpummu = 1;
    return VIDMM_OK;
}

static vidmm_status adapter_query_gpummu(const struct vidmm_adapter *a, struct vidmm_gpummu_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    if (!a->has_gpummu)
        return VIDMM_E_NOT_SUPPORTED;
    *out = a->gpummu;
    return VIDMM_OK;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_adapter_query_gpummu(const struct vidmm_adapter *a, struct vidmm_gpummu_info *out)
{
    VIDMM_ENTRY(a, adapter_query_gpummu(a, out));
}
