/*
 * softgpu.c - the softgpu device: presets, creation, and test access.
 *
 * A preset is a list of segment templates (flags, size, page size).
 * softgpu_create applies the per-segment size overrides, lays the
 * segments out in the GPU physical address space (memory segments from
 * 0, apertures above all memory, the AGP segment at the AGP aperture the
 * preset declares), then creates each segment's backing: a memfd for
 * memory (memory.c), a GART for apertures (aperture.c), a host window for
 * a CPU host aperture (host_aperture.c), and for GpuMmu presets the
 * page-table geometry (mmu.c), and last the copy engine (engine.c: its
 * thread, unless the config asks for synchronous execution).  The driver
 * ops live in query.c (query_adapter_info, describe_allocation),
 * paging.c (build and execute paging buffers), mmu.c (page-table
 * updates, the walker) and host_aperture.c.
 *
 * The test accessors here (stats, read/write_physical, check) run
 * between softgpu_lock_access and softgpu_unlock: after every submitted buffer has
 * executed (except those a hung or held engine will not run), and with
 * the engine kept from starting another meanwhile.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SOFTGPU_AGP_BASE 0xE0000000ull

struct softgpu_seg_template {
    uint32_t flags;
    uint32_t page_size;
    uint64_t size;
    uint32_t host_ap_pages;   /* CPU host aperture window, in segment pages */
};

struct softgpu_preset {
    const char *name;
    uint32_t nb_segment;
    struct softgpu_seg_template seg[5];   /* [1..nb_segment] */
    uint32_t caps, adapter_flags;
    uint32_t paging_buffer_segment_id;
    uint32_t vis_id, invis_id, ap_id, agp_id;
    int virtual_paging;              /* advertises TRANSFER_VIRTUAL / FILL_VIRTUAL by default */
};

#define DGPU_VIS (VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP)
#define DGPU_INVIS (VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP)
#define DGPU_AP (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP)
#define GPUMMU_CAPS (VIDMM_CAPS_GPUMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING)

static const struct softgpu_preset softgpu_presets[] = {
    { "dgpu", 3,
      { {0, 0, 0, 0},
        {DGPU_VIS, SOFTGPU_PAGE_64K, SOFTGPU_MIB(256), 0},
        {DGPU_INVIS, SOFTGPU_PAGE_64K, SOFTGPU_GIB(4), 256},
        {DGPU_AP, SOFTGPU_PAGE_4K, SOFTGPU_GIB(2), 0} },
      GPUMMU_CAPS, VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED, 3, 1, 2, 3, 0, 1 },
    { "igpu", 1,
      { {0, 0, 0, 0},
        {VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP,
         SOFTGPU_PAGE_4K, SOFTGPU_GIB(2), 0} },
      VIDMM_CAPS_IOMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING, 0, 1, 0, 0, 1, 0, 0 },
    { "wddm1", 4,
      { {0, 0, 0, 0},
        {VIDMM_SEGMENT_CPU_VISIBLE, SOFTGPU_PAGE_4K, SOFTGPU_MIB(64), 0},
        {0, SOFTGPU_PAGE_4K, SOFTGPU_MIB(192), 0},
        {VIDMM_SEGMENT_AGP, SOFTGPU_PAGE_4K, SOFTGPU_MIB(64), 0},
        {VIDMM_SEGMENT_APERTURE, SOFTGPU_PAGE_4K, SOFTGPU_MIB(256), 0} },
      GPUMMU_CAPS, VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED, 4, 1, 2, 4, 3, 0 },
    { "big", 3,
      { {0, 0, 0, 0},
        {DGPU_VIS, SOFTGPU_PAGE_64K, SOFTGPU_MIB(256), 0},
        {DGPU_INVIS, SOFTGPU_PAGE_64K, SOFTGPU_GIB(80), 256},
        {DGPU_AP, SOFTGPU_PAGE_4K, SOFTGPU_GIB(2), 0} },
      GPUMMU_CAPS, VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED, 3, 1, 2, 3, 0, 1 },
};
#define SOFTGPU_NB_PRESETS (sizeof softgpu_presets / sizeof softgpu_presets[0])

static const char *const softgpu_preset_name_list[] = { "dgpu", "igpu", "wddm1", "big", NULL };

const char *const *softgpu_preset_names(void)
{
    return softgpu_preset_name_list;
}

static const struct vidmm_driver_ops softgpu_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    .query_adapter_info = softgpu_query_adapter_info,
    .describe_allocation = softgpu_describe_allocation,
    .destroy_allocation = NULL,
    .build_paging_buffer = softgpu_build_paging_buffer,
    .submit_command = softgpu_submit_command,
    .map_cpu_host_aperture = softgpu_map_cpu_host_aperture,
    .unmap_cpu_host_aperture = softgpu_unmap_cpu_host_aperture,
    .set_root_page_table = softgpu_set_root_page_table,
    .get_root_page_table_size = softgpu_get_root_page_table_size,
    .submit_command_virtual = softgpu_submit_command_virtual,
    .submit_command_physical = softgpu_submit_command_physical,
    .patch = softgpu_patch,
    .reset_engine = softgpu_reset_engine,
    .query_engine_status = softgpu_query_engine_status,
    .reset_from_timeout = softgpu_reset_from_timeout,
    .restart_from_timeout = softgpu_restart_from_timeout,
    .set_power_state = softgpu_set_power_state,
};

const struct vidmm_driver_ops *softgpu_driver_ops(void)
{
    return &softgpu_ops;
}

static uint64_t softgpu_align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/* Next free GPU range of size bytes at or above *cursor, skipping the
 * AGP aperture window. */
static uint64_t softgpu_place(uint64_t *cursor, uint64_t size, uint64_t align, uint64_t agp_base, uint64_t agp_size)
{
    uint64_t b = softgpu_align_up(*cursor, align);
    if (agp_size && b < agp_base + agp_size && agp_base < b + size)
        b = softgpu_align_up(agp_base + agp_size, align);
    *cursor = b + size;
    return b;
}

vidmm_status softgpu_create(const struct softgpu_config *config, struct softgpu **out)
{
    if (!out)
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    if (!config || !config->preset)
        return VIDMM_E_INVALID_ARG;
    const struct softgpu_preset *pr = NULL;
    for (size_t i = 0; i < SOFTGPU_NB_PRESETS; i++)
        if (strcmp(softgpu_presets[i].name, config->preset) == 0)
            pr = &softgpu_presets[i];
    if (!pr)
        return VIDMM_E_INVALID_ARG;
    for (uint32_t id = pr->nb_segment + 1; id <= SOFTGPU_MAX_SEGMENTS; id++)
        if (config->segment_size[id] != 0)
            return VIDMM_E_INVALID_ARG;       /* override of a segment the preset lacks */
    if (config->segment_size[0] != 0)
        return VIDMM_E_INVALID_ARG;           /* segment 0 is system memory */
    uint32_t pbs = config->paging_buffer_size ? config->paging_buffer_size : (uint32_t)SOFTGPU_KIB(64);
    if (pbs % SOFTGPU_PAGE_4K != 0)
        return VIDMM_E_INVALID_ARG;

    struct softgpu *sg = calloc(1, sizeof *sg);
    if (!sg)
        return VIDMM_E_NO_HOST_MEMORY;
    strncpy(sg->preset, pr->name, sizeof sg->preset - 1);
    sg->nb_segment = pr->nb_segment;
    sg->paging_buffer_segment_id = pr->paging_buffer_segment_id;
    sg->paging_buffer_size = pbs;
    softgpu_copy_tuner_init(&sg->copy_tuner);
    sg->caps.wddm_version = 0x2000;
    sg->caps.memory_management_caps = pr->caps;
    sg->caps.physical_adapter_flags = pr->adapter_flags;
    sg->caps.node_count = SOFTGPU_NODES;
    sg->vis_id = pr->vis_id;
    sg->invis_id = pr->invis_id;
    sg->ap_id = pr->ap_id;
    sg->agp_id = pr->agp_id;
    for (uint32_t id = 0; id <= SOFTGPU_MAX_SEGMENTS; id++)
        sg->seg[id].memfd = -1;
    if (!(pr->caps & VIDMM_CAPS_GPUMMU) && config->mmu_levels != 0) {
        free(sg);
        return VIDMM_E_INVALID_ARG;           /* page-table levels on an IoMmu-only preset */
    }
    if (config->scheduler > SOFTGPU_SCHED_MANUAL)
        return VIDMM_E_INVALID_ARG;
    if (config->paging_ops > SOFTGPU_PAGING_VIRTUAL ||
        (config->paging_ops == SOFTGPU_PAGING_VIRTUAL && !(pr->caps & VIDMM_CAPS_GPUMMU))) {
        free(sg);
        return VIDMM_E_INVALID_ARG;           /* virtual ops need virtual addresses: a GpuMmu preset */
    }
    sg->virtual_paging = config->paging_ops == SOFTGPU_PAGING_PRESET ? pr->virtual_paging
                                                                      : config->paging_ops == SOFTGPU_PAGING_VIRTUAL;

    /* Sizes. */
    uint64_t memory_total = 0;
    for (uint32_t id = 1; id <= pr->nb_segment; id++) {
        const struct softgpu_seg_template *t = &pr->seg[id];
        struct softgpu_segment *s = &sg->seg[id];
        uint64_t size = config->segment_size[id] ? config->segment_size[id] : t->size;
        if (size % t->page_size != 0 || size > SOFTGPU_GIB(1024) ||
            (size_t)size != size) {
            free(sg);
            return VIDMM_E_INVALID_ARG;
        }
        s->flags = t->flags;
        if (!(t->flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP))) {
            if ((config->standby_preserved | config->hibernate_preserved) & (1u << id))
                s->flags |= VIDMM_SEGMENT_PRESERVED_DURING_STANDBY;
            if (config->hibernate_preserved & (1u << id))
                s->flags |= VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE;
        }
        s->page_size = t->page_size;
        s->size = size;
        s->commit_limit = size;
        s->is_memory = !(t->flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP));
        if (s->is_memory)
            memory_total += size;
        if (t->host_ap_pages)
            s->host_ap_pages = (uint32_t)(size / t->page_size < t->host_ap_pages ? size / t->page_size
                                                                                 : t->host_ap_pages);
    }
    if (config->prefault && memory_total > softgpu_available_ram()) {
        free(sg);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    /* The MMU geometry depends on the page-table segment's page size. */
    if (pr->caps & VIDMM_CAPS_GPUMMU) {
        vidmm_status mst = softgpu_mmu_init(sg, config->mmu_levels);
        if (mst != VIDMM_OK) {
            free(sg);
            return mst;
        }
    }

    /* GPU physical layout. */
    if (sg->agp_id) {
        sg->agp_base = SOFTGPU_AGP_BASE;
        sg->agp_size = sg->seg[sg->agp_id].size;
        sg->seg[sg->agp_id].base_address = sg->agp_base;
    }
    uint64_t cursor = 0;
    for (uint32_t id = 1; id <= sg->nb_segment; id++)
        if (sg->seg[id].is_memory)
            sg->seg[id].base_address = softgpu_place(&cursor, sg->seg[id].size, sg->seg[id].page_size,
                                                sg->agp_base, sg->agp_size);
    for (uint32_t id = 1; id <= sg->nb_segment; id++)
        if (sg->seg[id].flags & VIDMM_SEGMENT_APERTURE)
            sg->seg[id].base_address = softgpu_place(&cursor, sg->seg[id].size, SOFTGPU_GIB(1),
                                                sg->agp_base, sg->agp_size);

    /* Backing. */
    vidmm_status st = VIDMM_OK;
    sg->dummy_page = mmap(NULL, SOFTGPU_PAGE_4K, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sg->dummy_page == MAP_FAILED) {
        sg->dummy_page = NULL;
        st = VIDMM_E_NO_HOST_MEMORY;
    }
    for (uint32_t id = 1; st == VIDMM_OK && id <= sg->nb_segment; id++) {
        struct softgpu_segment *s = &sg->seg[id];
        if (s->is_memory) {
            st = softgpu_memory_create(s, id, config->prefault);
            if (st == VIDMM_OK && (s->flags & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) && s->host_ap_pages)
                st = softgpu_host_aperture_create(s);
        } else {
            st = softgpu_gart_create(s);
        }
    }
    /* The engine last: once its thread runs, the device must be whole. */
    int mode = config->scheduler == SOFTGPU_SCHED_MANUAL ? SOFTGPU_MODE_MANUAL
               : config->scheduler == SOFTGPU_SCHED_SYNCHRONOUS || config->synchronous ? SOFTGPU_MODE_SYNCHRONOUS
                                                                                        : SOFTGPU_MODE_THREADED;
    if (st == VIDMM_OK)
        st = softgpu_engine_init(sg, mode);
    if (st == VIDMM_OK)
        st = softgpu_cmdproc_init(sg, mode);
    if (st != VIDMM_OK) {
        softgpu_destroy(sg);
        return st;
    }
    *out = sg;
    return VIDMM_OK;
}

void softgpu_destroy(struct softgpu *sg)
{
    if (!sg)
        return;
    /* Drain first: queued buffers still read and write the segments.
     * The nodes go before the copy engine, whose idleness they wait for. */
    softgpu_cmdproc_fini(sg);
    softgpu_engine_fini(sg);
    for (uint32_t id = 1; id <= sg->nb_segment; id++) {
        struct softgpu_segment *s = &sg->seg[id];
        softgpu_host_aperture_destroy(s);
        softgpu_memory_destroy(s);
        softgpu_gart_destroy(s);
    }
    if (sg->dummy_page)
        munmap(sg->dummy_page, SOFTGPU_PAGE_4K);
    free(sg);
}

void softgpu_fill_adapter_create_info(struct softgpu *sg, struct vidmm_adapter_create_info *info)
{
    if (!info)
        return;
    info->abi_version = VIDMM_ABI_VERSION;
    info->ops = &softgpu_ops;
    info->driver = sg;
    info->host_allocator = NULL;
    info->agp_aperture_base = sg ? sg->agp_base : 0;
    info->agp_aperture_size = sg ? sg->agp_size : 0;
}

void softgpu_get_stats(const struct softgpu *sg, struct softgpu_stats *out)
{
    if (!out)
        return;
    if (!sg) {
        memset(out, 0, sizeof *out);
        return;
    }
    softgpu_lock_access(sg);
    *out = sg->stats;
    softgpu_unlock(sg);
}

void softgpu_inject_insufficient_dma(struct softgpu *sg, uint32_t n)
{
    if (sg)
        sg->inject_insufficient = n;
}

uint8_t *softgpu_resolve(struct softgpu *sg, const struct softgpu_segment *s, uint64_t offset, uint64_t len,
                    uint64_t *run, int *mapped)
{
    if (s->is_memory) {
        *run = len;
        *mapped = 1;
        return s->mem + offset;
    }
    uint64_t page = offset / SOFTGPU_PAGE_4K, in = offset % SOFTGPU_PAGE_4K;
    uint64_t n = SOFTGPU_PAGE_4K - in;
    *run = n < len ? n : len;
    *mapped = softgpu_gart_is_mapped(s, page);
    uint8_t *p = s->gart[page] ? s->gart[page] : sg->dummy_page;
    return p + in;
}

static vidmm_status softgpu_physical(struct softgpu *sg, uint32_t segment_id, uint64_t offset, uint8_t *dst,
                                const uint8_t *src, size_t size)
{
    if (!sg || segment_id == 0 || segment_id > sg->nb_segment || (size && !dst && !src))
        return VIDMM_E_INVALID_ARG;
    struct softgpu_segment *s = &sg->seg[segment_id];
    if (offset > s->size || size > s->size - offset)
        return VIDMM_E_INVALID_ARG;
    softgpu_lock_access(sg);
    /* Check the whole range first so a refused call changes nothing. */
    if (!s->is_memory)
        for (uint64_t p = offset / SOFTGPU_PAGE_4K; size && p <= (offset + size - 1) / SOFTGPU_PAGE_4K; p++)
            if (!softgpu_gart_is_mapped(s, p)) {
                softgpu_unlock(sg);
                return VIDMM_E_INVALID_ARG;
            }
    uint64_t done = 0;
    while (done < size) {
        uint64_t run;
        int mapped;
        uint8_t *h = softgpu_resolve(sg, s, offset + done, size - done, &run, &mapped);
        if (dst)
            memcpy(dst + done, h, (size_t)run);
        else
            memcpy(h, src + done, (size_t)run);
        done += run;
    }
    softgpu_unlock(sg);
    return VIDMM_OK;
}

vidmm_status softgpu_read_physical(struct softgpu *sg, uint32_t segment_id, uint64_t offset, void *dst, size_t size)
{
    if (size && !dst)
        return VIDMM_E_INVALID_ARG;
    return softgpu_physical(sg, segment_id, offset, dst, NULL, size);
}

vidmm_status softgpu_write_physical(struct softgpu *sg, uint32_t segment_id, uint64_t offset, const void *src,
                                    size_t size)
{
    if (size && !src)
        return VIDMM_E_INVALID_ARG;
    return softgpu_physical(sg, segment_id, offset, NULL, src, size);
}

vidmm_status softgpu_segment_memory(struct softgpu *sg, uint32_t segment_id, void **host, uint64_t *size)
{
    if (!sg || !host || !size || segment_id == 0 || segment_id > sg->nb_segment)
        return VIDMM_E_INVALID_ARG;
    const struct softgpu_segment *s = &sg->seg[segment_id];
    if (!s->is_memory || !s->mem)
        return VIDMM_E_INVALID_ARG;   /* an aperture has no memory of its own */
    *host = s->mem;
    *size = s->size;
    return VIDMM_OK;
}

int softgpu_check(const struct softgpu *sg)
{
    if (!sg)
        return 1;
    int bad = 0;
    uint64_t gart_mapped = 0, host_mapped = 0;
    if (sg->nb_segment == 0 || sg->nb_segment > SOFTGPU_MAX_SEGMENTS)
        return 1;
    softgpu_lock_access(sg);
    for (uint32_t id = 1; id <= sg->nb_segment; id++) {
        const struct softgpu_segment *s = &sg->seg[id];
        if (s->size == 0 || s->size % s->page_size)
            bad++;
        if (s->is_memory) {
            if (!s->mem || s->memfd < 0 || s->gart)
                bad++;
            if (s->host_ap)
                bad += softgpu_host_aperture_check(s, &host_mapped);
        } else {
            if (!s->gart || s->mem || s->gart_pages != s->size / SOFTGPU_PAGE_4K)
                bad++;
            else
                bad += softgpu_gart_check(sg, s, &gart_mapped);
        }
        /* GPU ranges must not overlap. */
        for (uint32_t j = id + 1; j <= sg->nb_segment; j++) {
            const struct softgpu_segment *o = &sg->seg[j];
            if (s->base_address < o->base_address + o->size && o->base_address < s->base_address + s->size)
                bad++;
        }
    }
    if (gart_mapped != sg->stats.aperture_pages_mapped)
        bad++;
    if (host_mapped != sg->stats.host_aperture_pages_mapped)
        bad++;
    softgpu_unlock(sg);
    return bad;
}
