/*
 * backend_vidmm.c - the in-process backend: the thunks' backend table
 * over libvidmm's public entries, on the adapter the runtime was given
 * (ad->va).  Each entry is the library call with the same arguments.
 */
#include "internal.h"

static vidmm_status be_adapter_query_info(struct d3dkmt_adapter *ad, struct vidmm_adapter_info *out)
{
    return vidmm_adapter_query_info(ad->va, out);
}
static vidmm_status be_segment_query(struct d3dkmt_adapter *ad, uint32_t id, struct vidmm_segment_info *out)
{
    return vidmm_segment_query(ad->va, id, out);
}
static vidmm_status be_process_create(struct d3dkmt_adapter *ad, vidmm_handle *out)
{
    return vidmm_process_create(ad->va, out);
}
static vidmm_status be_process_destroy(struct d3dkmt_adapter *ad, vidmm_handle process)
{
    return vidmm_process_destroy(ad->va, process);
}
static vidmm_status be_device_create(struct d3dkmt_adapter *ad, vidmm_handle process, vidmm_handle *out)
{
    return vidmm_device_create(ad->va, process, out);
}
static vidmm_status be_device_destroy(struct d3dkmt_adapter *ad, vidmm_handle device)
{
    return vidmm_device_destroy(ad->va, device);
}
static vidmm_status be_paging_queue_create(struct d3dkmt_adapter *ad, vidmm_handle device, int prio, vidmm_handle *out)
{
    return vidmm_paging_queue_create(ad->va, device, prio, out);
}
static vidmm_status be_paging_queue_destroy(struct d3dkmt_adapter *ad, vidmm_handle queue)
{
    return vidmm_paging_queue_destroy(ad->va, queue);
}
static vidmm_status be_paging_queue_fence(struct d3dkmt_adapter *ad, vidmm_handle queue, uint64_t *done)
{
    return vidmm_paging_queue_fence(ad->va, queue, done);
}
static vidmm_status be_device_allocation_create(struct d3dkmt_adapter *ad, vidmm_handle device, const void *priv,
                                                size_t size, uint32_t flags, vidmm_handle *out)
{
    return vidmm_device_allocation_create(ad->va, device, priv, size, flags, out);
}
static vidmm_status be_allocation_destroy(struct d3dkmt_adapter *ad, vidmm_handle h)
{
    return vidmm_allocation_destroy(ad->va, h);
}
static vidmm_status be_device_lock(struct d3dkmt_adapter *ad, vidmm_handle device, vidmm_handle h, void **p)
{
    return vidmm_device_lock(ad->va, device, h, p);
}
static vidmm_status be_device_unlock(struct d3dkmt_adapter *ad, vidmm_handle device, vidmm_handle h)
{
    return vidmm_device_unlock(ad->va, device, h);
}
static vidmm_status be_make_resident(struct d3dkmt_adapter *ad, vidmm_handle device, struct vidmm_make_resident_args *a)
{
    return vidmm_make_resident(ad->va, device, a);
}
static vidmm_status be_evict(struct d3dkmt_adapter *ad, vidmm_handle device, struct vidmm_evict_args *a)
{
    return vidmm_evict(ad->va, device, a);
}
static vidmm_status be_allocation_set_priority(struct d3dkmt_adapter *ad, vidmm_handle h, uint32_t prio)
{
    return vidmm_allocation_set_priority(ad->va, h, prio);
}
static vidmm_status be_offer(struct d3dkmt_adapter *ad, vidmm_handle device, const vidmm_handle *list, uint32_t n,
                             uint32_t prio)
{
    return vidmm_offer(ad->va, device, list, n, prio);
}
static vidmm_status be_reclaim(struct d3dkmt_adapter *ad, vidmm_handle queue, const vidmm_handle *list, uint32_t n,
                               uint32_t *results, uint64_t *fence)
{
    return vidmm_reclaim(ad->va, queue, list, n, results, fence);
}
static vidmm_status be_query_video_memory_info(struct d3dkmt_adapter *ad, vidmm_handle process,
                                               enum vidmm_segment_group g, struct vidmm_video_memory_info *out)
{
    return vidmm_query_video_memory_info(ad->va, process, g, out);
}
static vidmm_status be_change_video_memory_reservation(struct d3dkmt_adapter *ad, vidmm_handle process,
                                                       enum vidmm_segment_group g, uint64_t bytes)
{
    return vidmm_change_video_memory_reservation(ad->va, process, g, bytes);
}
static vidmm_status be_register_trim_notification(struct d3dkmt_adapter *ad, vidmm_handle device,
                                                  vidmm_trim_callback cb, void *context)
{
    return vidmm_register_trim_notification(ad->va, device, cb, context);
}
static vidmm_status be_gpuva_reserve(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t base, uint64_t min,
                                     uint64_t max, uint64_t size, unsigned mode, uint64_t *va)
{
    return vidmm_gpuva_reserve(ad->va, process, base, min, max, size, mode, va);
}
static vidmm_status be_gpuva_map(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t base, uint64_t min,
                                 uint64_t max, vidmm_handle h, uint64_t offset, uint64_t size, unsigned prot,
                                 uint64_t driver_prot, uint64_t *va)
{
    return vidmm_gpuva_map(ad->va, process, base, min, max, h, offset, size, prot, driver_prot, va);
}
static vidmm_status be_gpuva_free(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t va, uint64_t size)
{
    return vidmm_gpuva_free(ad->va, process, va, size);
}
static vidmm_status be_gpuva_update(struct d3dkmt_adapter *ad, vidmm_handle process,
                                    const struct vidmm_gpuva_update_op *ops, uint32_t n)
{
    return vidmm_gpuva_update(ad->va, process, ops, n);
}
static vidmm_status be_context_create(struct d3dkmt_adapter *ad, vidmm_handle device,
                                      const struct vidmm_context_desc *desc, vidmm_handle *out)
{
    return vidmm_context_create(ad->va, device, desc, out);
}
static vidmm_status be_context_destroy(struct d3dkmt_adapter *ad, vidmm_handle ctx)
{
    return vidmm_context_destroy(ad->va, ctx);
}
static vidmm_status be_submit_virtual(struct d3dkmt_adapter *ad, vidmm_handle ctx, uint64_t va, uint32_t size,
                                      uint64_t *fence)
{
    return vidmm_submit_virtual(ad->va, ctx, va, size, fence);
}
static vidmm_status be_context_fence(struct d3dkmt_adapter *ad, vidmm_handle ctx, uint64_t *sub, uint64_t *done)
{
    return vidmm_context_fence(ad->va, ctx, sub, done);
}

const struct d3dkmt_backend d3dkmt_backend_vidmm = {
    .name = "vidmm",
    .adapter_query_info = be_adapter_query_info,
    .segment_query = be_segment_query,
    .process_create = be_process_create,
    .process_destroy = be_process_destroy,
    .device_create = be_device_create,
    .device_destroy = be_device_destroy,
    .paging_queue_create = be_paging_queue_create,
    .paging_queue_destroy = be_paging_queue_destroy,
    .paging_queue_fence = be_paging_queue_fence,
    .device_allocation_create = be_device_allocation_create,
    .allocation_destroy = be_allocation_destroy,
    .device_lock = be_device_lock,
    .device_unlock = be_device_unlock,
    .make_resident = be_make_resident,
    .evict = be_evict,
    .allocation_set_priority = be_allocation_set_priority,
    .offer = be_offer,
    .reclaim = be_reclaim,
    .query_video_memory_info = be_query_video_memory_info,
    .change_video_memory_reservation = be_change_video_memory_reservation,
    .register_trim_notification = be_register_trim_notification,
    .gpuva_reserve = be_gpuva_reserve,
    .gpuva_map = be_gpuva_map,
    .gpuva_free = be_gpuva_free,
    .gpuva_update = be_gpuva_update,
    .context_create = be_context_create,
    .context_destroy = be_context_destroy,
    .submit_virtual = be_submit_virtual,
    .context_fence = be_context_fence,
};
