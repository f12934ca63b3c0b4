/*
 * vkgpu.c - vkgpu's ops table, its answers to DxgkDdiQueryAdapterInfo
 * (driver caps and the two-call segment query), describe_allocation,
 * power states, and creation.
 *
 * What vkgpu declares: one node (the Vulkan queue); GpuMmu only with
 * gpummu on a device with sparse binding (mmu.c; else physical mode: a
 * GPU virtual address that survives a move needs sparse binding), and
 * then 64 KB-page segments where it binds 64 KiB units; no IoMmu; an
 * aperture segment whose GART vkgpu keeps (system pages reach the device
 * by host import for each transfer); no CPU host aperture (Vulkan cannot
 * re-point a CPU window at device pages), no per-engine reset (Vulkan
 * only knows device loss).  docs/VKGPU.md.
 */
#include "vkgpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- DxgkDdiQueryAdapterInfo -------------------------------------------- */

static vidmm_status query_segments(struct vkgpu *g, const struct vidmm_query_adapter_info_args *args)
{
    if (!args->output || args->output_size < sizeof(struct vidmm_query_segment_out))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_query_segment_out *out = args->output;
    if (!out->segment_descriptor) {                /* first call: the count */
        out->nb_segment = g->ap_id;
        return VIDMM_OK;
    }
    size_t stride = out->segment_descriptor_stride;
    if (out->nb_segment < g->ap_id || stride < sizeof(struct vidmm_segment_descriptor))
        return VIDMM_E_INVALID_ARG;
    unsigned char *p = (unsigned char *)out->segment_descriptor;
    for (uint32_t i = 1; i <= g->nseg; i++) {
        struct vidmm_segment_descriptor d;
        memset(&d, 0, sizeof d);
        /* 64 KB pages where GpuMmu binds 64 KiB units (mmu.c). */
        int big = g->mmu && g->block == VK_PAGE64;
        d.flags = VIDMM_SEGMENT_LOCAL_BUDGET_GROUP | (g->seg[i].map ? VIDMM_SEGMENT_CPU_VISIBLE : 0) |
                  (big ? VIDMM_SEGMENT_USE_64KB_PAGES : 0);
        d.page_size = big ? VK_PAGE64 : VK_PAGE;
        d.base_address = g->seg[i].base;
        d.size = g->seg[i].size;
        d.cpu_translated_address = g->seg[i].map;
        memcpy(p + (i - 1) * stride, &d, sizeof d);
    }
    struct vidmm_segment_descriptor d;
    memset(&d, 0, sizeof d);
    d.flags = VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP;
    d.page_size = VK_PAGE;
    d.base_address = g->ap_base;
    d.size = g->ap_pages * VK_PAGE;
    d.commit_limit = d.size;
    memcpy(p + (g->ap_id - 1) * stride, &d, sizeof d);
    out->nb_segment = g->ap_id;
    out->paging_buffer_segment_id = 0;             /* paging buffers are host memory vkgpu reads */
    out->paging_buffer_size = g->cfg.paging_buffer_size;
    out->paging_buffer_private_data_size = 0;
    return VIDMM_OK;
}

static vidmm_status query_adapter_info(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args)
        return VIDMM_E_INVALID_ARG;
    switch (args->type) {
    case VIDMM_QAI_DRIVERCAPS: {
        if (!args->output || args->output_size < sizeof(struct vidmm_driver_caps))
            return VIDMM_E_INVALID_ARG;
        struct vidmm_driver_caps caps;
        memset(&caps, 0, sizeof caps);
        caps.wddm_version = 0x2000;
        /* Physical mode, or GpuMmu through sparse binding (mmu.c). */
        caps.memory_management_caps = g->mmu ? VIDMM_CAPS_GPUMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING : 0;
        /* Overlapping copies inside an arena are split (engine.c). */
        caps.physical_adapter_flags = VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED;
        caps.node_count = 1;
        memcpy(args->output, &caps, sizeof caps);
        return VIDMM_OK;
    }
    case VIDMM_QAI_QUERYSEGMENT:
        return query_segments(g, args);
    case VIDMM_QAI_GPUMMUCAPS:
    case VIDMM_QAI_PAGETABLELEVELDESC:
        return vk_mmu_query(g, args);
    default:
        return VIDMM_E_NOT_SUPPORTED;              /* GPUMMUCAPS, PAGETABLELEVELDESC: no GpuMmu */
    }
}

/* ---- DxgkDdiCreateAllocation ---------------------------------------------- */

/* Segments in preference order for a kind: CPU-visible first or last. */
static uint32_t preference(const struct vkgpu *g, int visible_first, uint32_t allowed, uint32_t slot)
{
    uint32_t pref = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 1; i <= g->nseg && slot < VIDMM_PREF_SLOTS; i++) {
            int vis = g->seg[i].map != NULL;
            if ((allowed & VIDMM_SEGMENT_BIT(i)) && (vis == visible_first) == (pass == 0)) {
                pref |= VIDMM_PREF(slot, i, 0);
                slot++;
            }
        }
    return pref;
}

static vidmm_status describe_allocation(void *driver, struct vidmm_describe_allocation_args *args)
{
    struct vkgpu *g = driver;
    struct vidmm_allocation_info *info = args ? args->info : NULL;
    struct vkgpu_alloc_desc d;
    if (!g || !info || !info->private_driver_data || info->private_driver_data_size != sizeof d)
        return VIDMM_E_INVALID_ARG;
    memcpy(&d, info->private_driver_data, sizeof d);
    if (d.size == 0 || d.kind < VKGPU_ALLOC_LOCAL || d.kind > VKGPU_ALLOC_PHYSICAL || d.cpu_visible > 1)
        return VIDMM_E_INVALID_ARG;
    uint32_t all = 0, visible = 0;
    for (uint32_t i = 1; i <= g->nseg; i++) {
        all |= VIDMM_SEGMENT_BIT(i);
        visible |= g->seg[i].map ? VIDMM_SEGMENT_BIT(i) : 0;
    }
    /* Device-local and command-read data live in the arenas only
     * (evicted to system memory: submit.c resolves arena addresses
     * only); uploads may also sit in the aperture. */
    uint32_t set = d.cpu_visible ? visible : all;
    if (d.kind == VKGPU_ALLOC_UPLOAD)
        set |= VIDMM_SEGMENT_BIT(g->ap_id);
    if (!set)
        return VIDMM_E_NOT_SUPPORTED;              /* CPU access asked of a device with no mappable memory */
    info->size = d.size;
    info->alignment = 0;
    info->supported_write_segment_set = set;
    info->supported_read_segment_set = set;
    info->eviction_segment_set = 0;
    info->priority = 0;
    info->driver_allocation = NULL;
    info->flags = (d.cpu_visible ? VIDMM_ALLOC_CPU_VISIBLE : 0) |
                  (d.kind == VKGPU_ALLOC_PHYSICAL ? VIDMM_ALLOC_ACCESSED_PHYSICALLY : 0);
    info->preferred_segment = d.kind == VKGPU_ALLOC_UPLOAD ? VIDMM_PREF(0, g->ap_id, 0) | preference(g, 1, set, 1)
                                                           : preference(g, 0, set, 0);
    return VIDMM_OK;
}

/* ---- power ------------------------------------------------------------------ */

/* Vulkan has no device power states to enter: the arenas are process
 * memory the driver below keeps (or pages itself).  vidmm has saved the
 * segments' content before a state where they are not preserved, and
 * restores it after; vkgpu only makes sure nothing runs meanwhile. */
static vidmm_status set_power_state(void *driver, uint32_t state)
{
    struct vkgpu *g = driver;
    if (!g || state > VIDMM_POWER_HIBERNATE)
        return VIDMM_E_INVALID_ARG;
    return vkgpu_wait_idle(g);
}

/* ---- creation --------------------------------------------------------------- */

static const struct vidmm_driver_ops vk_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    .query_adapter_info = query_adapter_info,
    .describe_allocation = describe_allocation,
    .build_paging_buffer = vk_build_paging_buffer,
    .submit_command = vk_submit_command,
    .submit_command_physical = vk_submit_command_physical,
    .set_root_page_table = vk_mmu_set_root,
    .submit_command_virtual = vk_mmu_submit_virtual,
    .patch = vk_patch,
    .query_engine_status = vk_query_engine_status,
    .reset_from_timeout = vk_reset_from_timeout,
    .restart_from_timeout = vk_restart_from_timeout,
    .set_power_state = set_power_state,
    /* NULL: destroy_allocation (no per-allocation state), the CPU host
     * aperture, get_root_page_table_size (fixed roots), reset_engine. */
};

const struct vidmm_driver_ops *vkgpu_driver_ops(void)
{
    return &vk_ops;
}

void vkgpu_fill_adapter_create_info(struct vkgpu *g, struct vidmm_adapter_create_info *info)
{
    if (!info)
        return;
    info->abi_version = VIDMM_ABI_VERSION;
    info->ops = &vk_ops;
    info->driver = g;
    info->agp_aperture_base = 0;
    info->agp_aperture_size = 0;
}

vidmm_status vkgpu_query_device(const struct vkgpu *g, struct vkgpu_device_info *out)
{
    if (!g || !out)
        return VIDMM_E_INVALID_ARG;
    struct vkgpu *m = (struct vkgpu *)g;          /* the counters move under the engine lock */
    pthread_mutex_lock(&m->lock);
    *out = g->info;
    out->sparse_binds = g->sparse_binds;
    out->bind_batches = g->bind_batches;
    out->gpummu = (uint32_t)g->mmu;
    out->page_size = g->mmu ? (uint32_t)g->block : VK_PAGE;
    pthread_mutex_unlock(&m->lock);
    return VIDMM_OK;
}

vidmm_status vkgpu_create(const struct vkgpu_config *config, struct vkgpu **out)
{
    if (!config || !out || !config->notify_fence ||
        (config->paging_buffer_size && (config->paging_buffer_size < 4096 || config->paging_buffer_size % 4096)) ||
        config->aperture_size % VK_PAGE || config->aperture_size > (64ull << 30) || config->gpummu > 1 ||
        config->page64 > 1 || (config->page64 && !config->gpummu))
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    struct vkgpu *g = calloc(1, sizeof *g);
    if (!g)
        return VIDMM_E_NO_HOST_MEMORY;
    g->cfg = *config;
    if (!g->cfg.paging_buffer_size)
        g->cfg.paging_buffer_size = VK_PAGING_BUFFER;
    vidmm_status st = vk_device_open(g, config->error_message, config->error_message_size);
    if (st >= 0 && (st = vk_engine_start(g)) < 0 && config->error_message && config->error_message_size)
        snprintf(config->error_message, config->error_message_size, "vkgpu: the engine could not start");
    if (st >= 0 && (st = vk_mmu_init(g)) < 0 && config->error_message && config->error_message_size)
        snprintf(config->error_message, config->error_message_size,
                 "vkgpu: GpuMmu asked for, but the device has no sparse residency buffers of blocks of at most "
                 "64 KiB on its paging queue");
    g->cfg.device = NULL;                          /* the caller's strings are not kept */
    g->cfg.error_message = NULL;
    g->cfg.error_message_size = 0;
    if (st < 0) {
        vk_engine_stop(g);
        vk_mmu_fini(g);
        vk_device_close(g);
        free(g);
        return st;
    }
    *out = g;
    return VIDMM_OK;
}

void vkgpu_destroy(struct vkgpu *g)
{
    if (!g)
        return;
    if (g->held)
        vkgpu_hold_queue(g, 0);                    /* a test's gate: what waits there runs now */
    if (g->thread_started && !g->lost)
        vkgpu_wait_idle(g);
    vk_engine_stop(g);
    for (uint32_t i = 0; i < VK_RING; i++)
        free(g->ring[i].imports);
    vk_mmu_fini(g);
    vk_device_close(g);
    free(g);
}
