/*
 * paging.c - DxgkDdiBuildPagingBuffer for vkgpu: vidmm's paging
 * operations as vkgpu's own records (struct vk_rec, 32 bytes), which
 * engine.c turns into Vulkan commands when the buffer is submitted.
 *
 * TRANSFER becomes COPY records and FILL becomes FILL records, one per
 * VK_CHUNK bytes: the chunk is the restart granularity of the
 * multipass protocol (a small buffer takes a few chunks, the next buffer
 * resumes at multipass_offset); at submission consecutive chunks merge
 * back into one vkCmdCopyBuffer region.  DISCARD_CONTENT needs nothing
 * on a Vulkan device.  MAP / UNMAP_APERTURE_SEGMENT become one record
 * each, applied to vkgpu's GART when the buffer is recorded.  The GpuMmu
 * operations (UPDATE_PAGE_TABLE, FLUSH_TLB, TRANSFER_VIRTUAL,
 * FILL_VIRTUAL) are mmu.c's, refused without GpuMmu.
 */
#include "vkgpu_int.h"

#include <string.h>

/* The host address of bytes [mdl_offset pages, + size) of an MDL, or 0. */
static uint64_t mdl_range(const struct vidmm_mdl *mdl, uint64_t mdl_offset, uint64_t size)
{
    if (!mdl || !mdl->base || mdl_offset > mdl->page_count || size > (mdl->page_count - mdl_offset) * VK_PAGE)
        return 0;
    return (uint64_t)(uintptr_t)mdl->base + mdl_offset * VK_PAGE;
}

/* A segment side (memory or aperture): the offset of address in
 * segment id, or -1. */
static int seg_side(const struct vkgpu *g, uint32_t id, uint64_t address, uint64_t size, uint64_t *offset)
{
    uint64_t base = id == g->ap_id ? g->ap_base : id && id <= g->nseg ? g->seg[id].base : 0;
    if (!base || address < base)
        return -1;
    *offset = address - base;
    return vk_side_ok(g, id, *offset, size) ? 0 : -1;
}

/* MAP / UNMAP_APERTURE_SEGMENT: one record each, nothing split. */
static vidmm_status build_map(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args, int map)
{
    const struct vidmm_paging_map_aperture *m = &args->u.map_aperture_segment;
    const struct vidmm_paging_unmap_aperture *u = &args->u.unmap_aperture_segment;
    uint32_t id = map ? m->segment_id : u->segment_id;
    uint64_t first = map ? m->offset_in_pages : u->offset_in_pages;
    uint64_t pages = map ? m->number_of_pages : u->number_of_pages;
    if (id != g->ap_id || pages == 0 || first > g->ap_pages || pages > g->ap_pages - first)
        return VIDMM_E_INVALID_ARG;
    struct vk_rec r;
    memset(&r, 0, sizeof r);
    r.op = map ? VK_REC_MAP : VK_REC_UNMAP;
    r.dst_seg = (uint8_t)id;
    r.dst = first;
    r.size = pages;
    r.src = map ? mdl_range(m->mdl, m->mdl_offset, pages * VK_PAGE) : (uint64_t)(uintptr_t)u->dummy_page;
    if (!r.src || r.src % VK_PAGE)
        return VIDMM_E_INVALID_ARG;
    if (args->dma_size < sizeof r)
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    memcpy(args->dma_buffer, &r, sizeof r);
    args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof r;
    args->dma_size -= (uint32_t)sizeof r;
    return VIDMM_OK;
}

/* Writes chunks multipass_offset.. of one operation (whole.size bytes). */
static vidmm_status emit_chunks(struct vidmm_build_paging_buffer_args *args, const struct vk_rec *whole)
{
    uint64_t chunks = (whole->size + VK_CHUNK - 1) / VK_CHUNK;
    uint64_t k = args->multipass_offset;
    if (k >= chunks)
        return VIDMM_E_INVALID_ARG;                /* a resume past the end: not a request we made */
    for (; k < chunks; k++) {
        if (args->dma_size < sizeof(struct vk_rec)) {
            args->multipass_offset = (uint32_t)k;
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        uint64_t off = k * VK_CHUNK;
        struct vk_rec r = *whole;
        if (r.op == VK_REC_COPY)
            r.src += off;
        r.dst += off;
        r.size = whole->size - off < VK_CHUNK ? whole->size - off : VK_CHUNK;
        memcpy(args->dma_buffer, &r, sizeof r);
        args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof r;
        args->dma_size -= (uint32_t)sizeof r;
    }
    return VIDMM_OK;
}

static vidmm_status build_transfer(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_transfer *t = &args->u.transfer;
    struct vk_rec r;
    memset(&r, 0, sizeof r);
    r.op = VK_REC_COPY;
    r.size = t->transfer_size;
    if (t->source.segment_id > VK_MAX_SEG + 1 || t->destination.segment_id > VK_MAX_SEG + 1)
        return VIDMM_E_INVALID_ARG;
    r.src_seg = (uint8_t)t->source.segment_id;
    r.dst_seg = (uint8_t)t->destination.segment_id;
    if (r.src_seg ? seg_side(g, r.src_seg, t->source.segment_address, r.size, &r.src) < 0
                  : !(r.src = mdl_range(t->source.mdl, t->mdl_offset, r.size)))
        return VIDMM_E_INVALID_ARG;
    if (r.dst_seg ? seg_side(g, r.dst_seg, t->destination.segment_address, r.size, &r.dst) < 0
                  : !(r.dst = mdl_range(t->destination.mdl, t->mdl_offset, r.size)))
        return VIDMM_E_INVALID_ARG;
    if (!r.src_seg && !r.dst_seg)
        return VIDMM_E_INVALID_ARG;                /* system to system: not a GPU transfer */
    if (r.size == 0)
        return VIDMM_OK;
    return emit_chunks(args, &r);
}

static vidmm_status build_fill(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_fill *f = &args->u.fill;
    struct vk_rec r;
    memset(&r, 0, sizeof r);
    r.op = VK_REC_FILL;
    r.size = f->fill_size;
    r.src = f->fill_pattern;
    r.dst_seg = (uint8_t)f->destination_segment_id;
    /* vkCmdFillBuffer writes whole 32-bit words at 4-byte offsets. */
    if (f->destination_segment_id > g->nseg ||
        seg_side(g, f->destination_segment_id, f->destination_segment_address, r.size, &r.dst) < 0 ||
        r.size % 4 || r.dst % 4)
        return VIDMM_E_INVALID_ARG;
    if (r.size == 0)
        return VIDMM_OK;
    return emit_chunks(args, &r);
}

vidmm_status vk_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !args->dma_buffer)
        return VIDMM_E_INVALID_ARG;
    switch (args->operation) {
    case VIDMM_PAGING_TRANSFER:
        return build_transfer(g, args);
    case VIDMM_PAGING_FILL:
        return build_fill(g, args);
    case VIDMM_PAGING_DISCARD_CONTENT: {
        /* A hint: the arena keeps its bytes; only the range is checked. */
        const struct vidmm_paging_discard_content *d = &args->u.discard_content;
        uint64_t off;
        return seg_side(g, d->segment_id, d->segment_address, d->size, &off) < 0 ? VIDMM_E_INVALID_ARG : VIDMM_OK;
    }
    case VIDMM_PAGING_UPDATE_PAGE_TABLE:
        return vk_mmu_build_update(g, args);
    case VIDMM_PAGING_FLUSH_TLB:
        /* The binds complete before anything submitted after them runs. */
        return g->mmu ? VIDMM_OK : VIDMM_E_INVALID_ARG;
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT:
        return build_map(g, args, 1);
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT:
        return build_map(g, args, 0);
    case VIDMM_PAGING_TRANSFER_VIRTUAL:
    case VIDMM_PAGING_FILL_VIRTUAL:
        return vk_mmu_build_virtual(g, args);      /* refused without GpuMmu */
    default:
        return VIDMM_E_INVALID_ARG;
    }
}
