/*
 * backend_vidmm.c - the in-process backend: the thunks' backend table
 * pointing straight at libvidmm's public entries.
 */
#include "internal.h"

const struct d3dkmt_backend d3dkmt_backend_vidmm = {
    .name = "vidmm",
    .adapter_query_info = vidmm_adapter_query_info,
    .segment_query = vidmm_segment_query,
    .process_create = vidmm_process_create,
    .process_destroy = vidmm_process_destroy,
    .device_create = vidmm_device_create,
    .device_destroy = vidmm_device_destroy,
    .paging_queue_create = vidmm_paging_queue_create,
    .paging_queue_destroy = vidmm_paging_queue_destroy,
    .paging_queue_fence = vidmm_paging_queue_fence,
    .device_allocation_create = vidmm_device_allocation_create,
    .allocation_destroy = vidmm_allocation_destroy,
    .device_lock = vidmm_device_lock,
    .device_unlock = vidmm_device_unlock,
    .make_resident = vidmm_make_resident,
    .evict = vidmm_evict,
    .allocation_set_priority = vidmm_allocation_set_priority,
    .offer = vidmm_offer,
    .reclaim = vidmm_reclaim,
    .query_video_memory_info = vidmm_query_video_memory_info,
    .change_video_memory_reservation = vidmm_change_video_memory_reservation,
    .register_trim_notification = vidmm_register_trim_notification,
    .gpuva_reserve = vidmm_gpuva_reserve,
    .gpuva_map = vidmm_gpuva_map,
    .gpuva_free = vidmm_gpuva_free,
    .gpuva_update = vidmm_gpuva_update,
    .context_create = vidmm_context_create,
    .context_destroy = vidmm_context_destroy,
    .submit_virtual = vidmm_submit_virtual,
    .context_fence = vidmm_context_fence,
};
