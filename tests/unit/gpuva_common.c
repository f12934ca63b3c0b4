/*
 * gpuva_common.c - see gpuva_common.h.
 */
#include "gpuva_common.h"

#include "harness/test.h"

#include <stdlib.h>
#include <string.h>

vidmm_handle gv_alloc_flags(struct vidmm_adapter *a, uint32_t set, uint32_t flags, uint64_t size)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.info.size = size;
    d.info.supported_write_segment_set = set;
    d.info.flags = flags;
    vidmm_handle h = 0;
    T_ST(vidmm_allocation_create(a, &d, sizeof(d), &h), VIDMM_OK);
    return h;
}

vidmm_handle gv_alloc_in(struct vidmm_adapter *a, uint32_t set, uint64_t size)
{
    return gv_alloc_flags(a, set, VIDMM_ALLOC_CPU_VISIBLE, size);
}

uint32_t gv_leaf_page_size(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va)
{
    struct vidmm_physical_address root;
    struct softgpu_translation t;
    if (vidmm_process_root_page_table(a, proc, &root) < 0 ||
        softgpu_translate(sg, &root, va, SOFTGPU_ACCESS_READ, &t) != VIDMM_OK)
        return 0;
    return t.page_size;
}

void gv_pattern(struct vidmm_adapter *a, vidmm_handle h, uint64_t seed)
{
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(a, h, &st), VIDMM_OK);
    void *p = NULL;
    T_ST(vidmm_allocation_lock(a, h, &p), VIDMM_OK);
    if (!p)
        return;
    uint64_t *w = p, s = seed;
    for (uint64_t i = 0; i < st.size / 8; i++)
        w[i] = t_rand(&s);
    T_ST(vidmm_allocation_unlock(a, h), VIDMM_OK);
}

int gv_gpu_sees(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va, uint64_t off,
                uint64_t size, uint64_t seed)
{
    struct vidmm_physical_address root;
    if (vidmm_process_root_page_table(a, proc, &root) < 0)
        return 0;
    uint64_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    int ok = softgpu_read_virtual(sg, &root, va, buf, size) == VIDMM_OK;
    uint64_t s = seed;
    for (uint64_t i = 0; i < off / 8; i++)
        (void)t_rand(&s);
    for (uint64_t i = 0; ok && i < size / 8; i++)
        ok = buf[i] == (seed ? t_rand(&s) : 0);
    free(buf);
    return ok;
}

int gv_gpu_faults(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va)
{
    struct vidmm_physical_address root;
    if (vidmm_process_root_page_table(a, proc, &root) < 0)
        return 0;
    struct softgpu_translation t;
    return softgpu_translate(sg, &root, va, SOFTGPU_ACCESS_READ, &t) == VIDMM_E_PAGE_FAULT;
}
