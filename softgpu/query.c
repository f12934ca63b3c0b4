/*
 * query.c - DxgkDdiQueryAdapterInfo and DxgkDdiCreateAllocation of softgpu.
 *
 * query_adapter_info answers DRIVERCAPS and the two-call QUERYSEGMENT:
 * the first call (segment_descriptor NULL) returns nb_segment only, the
 * second fills nb_segment descriptors walking segment_descriptor_stride
 * and the paging-buffer fields.  GPUMMUCAPS and PAGETABLELEVELDESC are
 * answered by mmu.c, which owns the page-table geometry.
 *
 * describe_allocation reads a struct softgpu_alloc_desc and maps its kind
 * onto the preset's segments by role: CPU-visible memory (vis), invisible
 * memory (invis), the aperture (ap, i.e. system memory) and, on wddm1,
 * the AGP aperture.  A role the preset lacks is skipped, so on igpu every
 * kind lands in the aperture.  SOFTGPU_ALLOC_HEAP carries a Direct3D 12
 * heap's properties instead of a kind's role, and softgpu_heap maps them the
 * way a Direct3D 12 driver's CreateHeap does (L1 local, L0 system).
 */
#include "softgpu_int.h"

#include <stddef.h>
#include <string.h>

static vidmm_status softgpu_query_segment(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args)
{
    if (args->input && args->input_size < sizeof(struct vidmm_query_segment_in))
        return VIDMM_E_INVALID_ARG;
    if (!args->output || args->output_size < sizeof(struct vidmm_query_segment_out))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_query_segment_out *out = args->output;
    if (!out->segment_descriptor) {
        out->nb_segment = sg->nb_segment;
        return VIDMM_OK;
    }
    if (out->nb_segment < sg->nb_segment ||
        out->segment_descriptor_stride < sizeof(struct vidmm_segment_descriptor) ||
        out->segment_descriptor_stride % _Alignof(struct vidmm_segment_descriptor) != 0)
        return VIDMM_E_INVALID_ARG;
    unsigned char *p = (unsigned char *)out->segment_descriptor;
    for (uint32_t id = 1; id <= sg->nb_segment; id++, p += out->segment_descriptor_stride) {
        const struct softgpu_segment *s = &sg->seg[id];
        struct vidmm_segment_descriptor d;
        memset(&d, 0, sizeof d);
        d.flags = s->flags;
        d.base_address = s->base_address;
        d.size = s->size;
        d.commit_limit = s->commit_limit;
        if (s->flags & VIDMM_SEGMENT_CPU_VISIBLE)
            d.cpu_translated_address = s->mem;
        if (s->host_ap) {
            d.cpu_host_aperture.cpu_address = s->host_ap;
            d.cpu_host_aperture.size_in_pages = s->host_ap_pages;
        }
        memcpy(p, &d, sizeof d);
    }
    out->nb_segment = sg->nb_segment;
    out->paging_buffer_segment_id = sg->paging_buffer_segment_id;
    out->paging_buffer_size = sg->paging_buffer_size;
    out->paging_buffer_private_data_size = 0;
    return VIDMM_OK;
}

vidmm_status softgpu_query_adapter_info(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args)
        return VIDMM_E_INVALID_ARG;
    switch (args->type) {
    case VIDMM_QAI_DRIVERCAPS:
        if (!args->output || args->output_size < sizeof(struct vidmm_driver_caps))
            return VIDMM_E_INVALID_ARG;
        memcpy(args->output, &sg->caps, sizeof sg->caps);
        return VIDMM_OK;
    case VIDMM_QAI_QUERYSEGMENT:
        return softgpu_query_segment(sg, args);
    case VIDMM_QAI_GPUMMUCAPS:
        return softgpu_query_gpummu_caps(sg, args);
    case VIDMM_QAI_PAGETABLELEVELDESC:
        return softgpu_query_page_table_level(sg, args);
    default:
        return VIDMM_E_NOT_SUPPORTED;
    }
}

/* Builds set and preference list from up to 4 segment ids in preference
 * order; ids of 0 (role absent) are skipped. */
struct softgpu_placement {
    uint32_t set;
    uint32_t pref;
    uint32_t slots;
};

static void softgpu_support(struct softgpu_placement *pl, uint32_t id)
{
    if (id)
        pl->set |= VIDMM_SEGMENT_BIT(id);
}

static void softgpu_prefer(struct softgpu_placement *pl, uint32_t id, int top)
{
    if (!id || pl->slots >= VIDMM_PREF_SLOTS)
        return;
    for (uint32_t i = 0; i < pl->slots; i++)
        if (VIDMM_PREF_ID(pl->pref, i) == id)
            return;
    pl->pref |= VIDMM_PREF(pl->slots, id, top);
    pl->slots++;
}

/* GPU-only data (TEXTURE, an L1 heap): local memory, invisible first,
 * system memory (the aperture) last. */
static void softgpu_gpu_data(const struct softgpu *sg, struct softgpu_placement *pl)
{
    softgpu_support(pl, sg->vis_id), softgpu_support(pl, sg->invis_id), softgpu_support(pl, sg->ap_id);
    softgpu_prefer(pl, sg->invis_id, 0), softgpu_prefer(pl, sg->vis_id, 0), softgpu_prefer(pl, sg->ap_id, 0);
}

/* A Direct3D 12 heap's properties to segments (softgpu.h lists the
 * rules): resolve the heap type to its custom page property and pool as
 * GetCustomHeapProperties does, refuse what Direct3D 12 refuses, then
 * place L1 in local memory and L0 in system memory.  Returns -1 when the
 * properties are invalid for this adapter. */
static int softgpu_heap(const struct softgpu *sg, const struct softgpu_heap_properties *h, struct softgpu_placement *pl,
                   uint32_t *flags)
{
    uint32_t vis = sg->vis_id, invis = sg->invis_id, ap = sg->ap_id, agp = sg->agp_id;
    int local = vis || invis;   /* a NUMA adapter: it has memory of its own */
    uint32_t page = h->cpu_page_property, pool = h->memory_pool;
    if (h->reserved)
        return -1;
    switch (h->type) {
    case SOFTGPU_HEAP_DEFAULT:
    case SOFTGPU_HEAP_UPLOAD:
    case SOFTGPU_HEAP_READBACK:
    case SOFTGPU_HEAP_GPU_UPLOAD:
        if (page != SOFTGPU_CPU_PAGE_UNKNOWN || pool != SOFTGPU_MEMORY_POOL_UNKNOWN)
            return -1;
        break;
    case SOFTGPU_HEAP_CUSTOM:
        if (page < SOFTGPU_CPU_PAGE_NOT_AVAILABLE || page > SOFTGPU_CPU_PAGE_WRITE_BACK ||
            pool < SOFTGPU_MEMORY_POOL_L0 || pool > SOFTGPU_MEMORY_POOL_L1)
            return -1;
        break;
    default:
        return -1;
    }
    if (h->type == SOFTGPU_HEAP_GPU_UPLOAD) {
        /* CPU-visible local memory: the one heap that asks for the BAR. */
        if (!vis)
            return -1;
        softgpu_support(pl, vis);
        softgpu_prefer(pl, vis, 0);
        *flags |= VIDMM_ALLOC_CPU_VISIBLE;
        return 0;
    }
    if (h->type == SOFTGPU_HEAP_DEFAULT)
        page = SOFTGPU_CPU_PAGE_NOT_AVAILABLE, pool = local ? SOFTGPU_MEMORY_POOL_L1 : SOFTGPU_MEMORY_POOL_L0;
    else if (h->type == SOFTGPU_HEAP_UPLOAD)
        page = SOFTGPU_CPU_PAGE_WRITE_COMBINE, pool = SOFTGPU_MEMORY_POOL_L0;
    else if (h->type == SOFTGPU_HEAP_READBACK)
        page = SOFTGPU_CPU_PAGE_WRITE_BACK, pool = SOFTGPU_MEMORY_POOL_L0;
    if (pool == SOFTGPU_MEMORY_POOL_L1) {
        /* Local memory, which the CPU does not reach on a NUMA adapter. */
        if (!local || page != SOFTGPU_CPU_PAGE_NOT_AVAILABLE)
            return -1;
        softgpu_gpu_data(sg, pl);
        return 0;
    }
    /* L0: system memory, reached by the GPU through the aperture (or AGP). */
    if (!ap && !agp)
        return -1;
    softgpu_support(pl, ap), softgpu_support(pl, agp);
    softgpu_prefer(pl, ap, 0), softgpu_prefer(pl, agp, 0);
    if (page != SOFTGPU_CPU_PAGE_NOT_AVAILABLE)
        *flags |= VIDMM_ALLOC_CPU_VISIBLE;
    if (page == SOFTGPU_CPU_PAGE_WRITE_BACK)
        *flags |= VIDMM_ALLOC_CACHED;
    return 0;
}

vidmm_status softgpu_describe_allocation(void *driver, struct vidmm_describe_allocation_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || !args->info)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_allocation_info *info = args->info;
    size_t n = info->private_driver_data_size;
    if (!info->private_driver_data ||
        (n != sizeof(struct softgpu_alloc_desc) && n != offsetof(struct softgpu_alloc_desc, heap)))
        return VIDMM_E_INVALID_ARG;
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    memcpy(&desc, info->private_driver_data, n);
    if (desc.kind == SOFTGPU_ALLOC_HEAP && n != sizeof desc)
        return VIDMM_E_INVALID_ARG;
    const void *pd = info->private_driver_data;
    size_t pds = info->private_driver_data_size;

    if (desc.kind == SOFTGPU_ALLOC_EXPLICIT) {
        *info = desc.info;
        info->private_driver_data = pd;
        info->private_driver_data_size = pds;
        return VIDMM_OK;
    }
    if (desc.size == 0 || (desc.alignment & (desc.alignment - 1)) != 0)
        return VIDMM_E_INVALID_ARG;

    uint32_t vis = sg->vis_id, invis = sg->invis_id, ap = sg->ap_id, agp = sg->agp_id;
    struct softgpu_placement pl = { 0, 0, 0 };
    uint32_t flags = 0;
    switch (desc.kind) {
    case SOFTGPU_ALLOC_TEXTURE:
        softgpu_gpu_data(sg, &pl);
        break;
    case SOFTGPU_ALLOC_CONSTANT:
        softgpu_support(&pl, vis), softgpu_support(&pl, invis), softgpu_support(&pl, ap);
        softgpu_prefer(&pl, vis, 0), softgpu_prefer(&pl, ap, 0);
        flags |= VIDMM_ALLOC_CPU_VISIBLE;
        break;
    case SOFTGPU_ALLOC_STAGING:
        softgpu_support(&pl, vis), softgpu_support(&pl, ap), softgpu_support(&pl, agp);
        softgpu_prefer(&pl, ap, 0), softgpu_prefer(&pl, agp, 0), softgpu_prefer(&pl, vis, 1);
        flags |= VIDMM_ALLOC_CPU_VISIBLE;
        break;
    case SOFTGPU_ALLOC_PRIMARY:
        softgpu_support(&pl, vis), softgpu_support(&pl, invis), softgpu_support(&pl, ap);
        softgpu_prefer(&pl, vis, 0), softgpu_prefer(&pl, invis, 0);
        if (!vis && !invis)
            softgpu_prefer(&pl, ap, 0);
        flags |= VIDMM_ALLOC_PRIMARY;
        break;
    case SOFTGPU_ALLOC_RING:
        softgpu_support(&pl, vis), softgpu_support(&pl, ap);
        softgpu_prefer(&pl, vis, 1), softgpu_prefer(&pl, ap, 0);
        flags |= VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_CPU_VISIBLE;
        break;
    case SOFTGPU_ALLOC_HEAP:
        if (desc.cpu_visible || softgpu_heap(sg, &desc.heap, &pl, &flags) < 0)
            return VIDMM_E_INVALID_ARG;
        break;
    default:
        return VIDMM_E_INVALID_ARG;
    }
    if (desc.cpu_visible)
        flags |= VIDMM_ALLOC_CPU_VISIBLE;

    uint64_t align = SOFTGPU_PAGE_4K;
    for (uint32_t id = 1; id <= sg->nb_segment; id++)
        if ((pl.set & VIDMM_SEGMENT_BIT(id)) && sg->seg[id].page_size == SOFTGPU_PAGE_64K)
            align = SOFTGPU_PAGE_64K;
    if (desc.alignment > align)
        align = desc.alignment;

    memset(info, 0, sizeof *info);
    info->private_driver_data = pd;
    info->private_driver_data_size = pds;
    info->size = desc.size;
    info->alignment = align;
    info->supported_read_segment_set = pl.set;
    info->supported_write_segment_set = pl.set;
    info->eviction_segment_set = 0;
    info->preferred_segment = pl.pref;
    info->flags = flags;
    info->priority = 0;
    info->driver_allocation = NULL;
    return VIDMM_OK;
}
