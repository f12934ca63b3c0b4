/*
 * backend_client.c - the remote backend: the thunks' backend table over
 * libvidmm-client, on a connection to vidmmd (docs/D3DKMT.md "A remote
 * adapter"), and d3dkmt_runtime_add_remote, which opens the connection
 * and registers it.  In its own object file: programs that never call it
 * do not need libvidmm-client.
 *
 * The connection is the runtime's vidmm process on the daemon's adapter
 * (one per d3dkmt_runtime_add_remote), so the process handles the thunks
 * pass are ignored here.  Locks are the client library's: the pointer is
 * a private copy of the allocation (docs/DAEMON.md "CPU access"), written
 * back at unlock.  Trim notifications come as events from the daemon and
 * reach the runtime's trampoline on the thread that next calls the
 * backend (vidmm_client_register_trim_notification).
 */
#include "internal.h"

#include "d3dkmt/remote.h"
#include "vidmm-client/client.h"

#include <string.h>

static vidmm_status rb_adapter_query_info(struct d3dkmt_adapter *ad, struct vidmm_adapter_info *out)
{
    return vidmm_client_adapter_query_info(ad->conn, out);
}
static vidmm_status rb_segment_query(struct d3dkmt_adapter *ad, uint32_t id, struct vidmm_segment_info *out)
{
    return vidmm_client_segment_query(ad->conn, id, out);
}
/* The connection is the process: created with it, destroyed with it. */
static vidmm_status rb_process_create(struct d3dkmt_adapter *ad, vidmm_handle *out)
{
    if (!ad->conn || !out)
        return VIDMM_E_INVALID_ARG;
    *out = D3DKMT_REMOTE_PROCESS;
    return VIDMM_OK;
}
static vidmm_status rb_process_destroy(struct d3dkmt_adapter *ad, vidmm_handle process)
{
    (void)ad;
    return process == D3DKMT_REMOTE_PROCESS ? VIDMM_OK : VIDMM_E_INVALID_HANDLE;
}
static vidmm_status rb_device_create(struct d3dkmt_adapter *ad, vidmm_handle process, vidmm_handle *out)
{
    (void)process;
    return vidmm_client_device_create(ad->conn, out);
}
static vidmm_status rb_device_destroy(struct d3dkmt_adapter *ad, vidmm_handle device)
{
    return vidmm_client_device_destroy(ad->conn, device);
}
static vidmm_status rb_paging_queue_create(struct d3dkmt_adapter *ad, vidmm_handle device, int prio, vidmm_handle *out)
{
    return vidmm_client_paging_queue_create(ad->conn, device, prio, out);
}
static vidmm_status rb_paging_queue_destroy(struct d3dkmt_adapter *ad, vidmm_handle queue)
{
    return vidmm_client_paging_queue_destroy(ad->conn, queue);
}
static vidmm_status rb_paging_queue_fence(struct d3dkmt_adapter *ad, vidmm_handle queue, uint64_t *done)
{
    return vidmm_client_paging_queue_fence(ad->conn, queue, done);
}
static vidmm_status rb_device_allocation_create(struct d3dkmt_adapter *ad, vidmm_handle device, const void *priv,
                                                size_t size, uint32_t flags, vidmm_handle *out)
{
    return vidmm_client_device_allocation_create(ad->conn, device, priv, size, flags, out);
}
static vidmm_status rb_allocation_destroy(struct d3dkmt_adapter *ad, vidmm_handle h)
{
    return vidmm_client_allocation_destroy(ad->conn, h);
}
/* The daemon locks through the connection's own device; the thunks
 * checked that the allocation is the calling device's. */
static vidmm_status rb_device_lock(struct d3dkmt_adapter *ad, vidmm_handle device, vidmm_handle h, void **p)
{
    (void)device;
    return vidmm_client_allocation_lock(ad->conn, h, p);
}
static vidmm_status rb_device_unlock(struct d3dkmt_adapter *ad, vidmm_handle device, vidmm_handle h)
{
    (void)device;
    return vidmm_client_allocation_unlock(ad->conn, h);
}
static vidmm_status rb_make_resident(struct d3dkmt_adapter *ad, vidmm_handle device, struct vidmm_make_resident_args *a)
{
    return vidmm_client_make_resident(ad->conn, device, a);
}
static vidmm_status rb_evict(struct d3dkmt_adapter *ad, vidmm_handle device, struct vidmm_evict_args *a)
{
    return vidmm_client_evict(ad->conn, device, a);
}
static vidmm_status rb_allocation_set_priority(struct d3dkmt_adapter *ad, vidmm_handle h, uint32_t prio)
{
    return vidmm_client_allocation_set_priority(ad->conn, h, prio);
}
static vidmm_status rb_offer(struct d3dkmt_adapter *ad, vidmm_handle device, const vidmm_handle *list, uint32_t n,
                             uint32_t prio)
{
    return vidmm_client_offer(ad->conn, device, list, n, prio);
}
static vidmm_status rb_reclaim(struct d3dkmt_adapter *ad, vidmm_handle queue, const vidmm_handle *list, uint32_t n,
                               uint32_t *results, uint64_t *fence)
{
    return vidmm_client_reclaim(ad->conn, queue, list, n, results, fence);
}
static vidmm_status rb_query_video_memory_info(struct d3dkmt_adapter *ad, vidmm_handle process,
                                               enum vidmm_segment_group g, struct vidmm_video_memory_info *out)
{
    if (process != D3DKMT_REMOTE_PROCESS)
        return VIDMM_E_INVALID_HANDLE;
    return vidmm_client_query_video_memory_info(ad->conn, g, out);
}
static vidmm_status rb_change_video_memory_reservation(struct d3dkmt_adapter *ad, vidmm_handle process,
                                                       enum vidmm_segment_group g, uint64_t bytes)
{
    if (process != D3DKMT_REMOTE_PROCESS)
        return VIDMM_E_INVALID_HANDLE;
    return vidmm_client_change_video_memory_reservation(ad->conn, g, bytes);
}
static vidmm_status rb_register_trim_notification(struct d3dkmt_adapter *ad, vidmm_handle device,
                                                  vidmm_trim_callback cb, void *context)
{
    return vidmm_client_register_trim_notification(ad->conn, device, cb, context);
}
static vidmm_status rb_gpuva_reserve(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t base, uint64_t min,
                                     uint64_t max, uint64_t size, unsigned mode, uint64_t *va)
{
    (void)process;
    return vidmm_client_gpuva_reserve(ad->conn, base, min, max, size, mode, va);
}
static vidmm_status rb_gpuva_map(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t base, uint64_t min,
                                 uint64_t max, vidmm_handle h, uint64_t offset, uint64_t size, unsigned prot,
                                 uint64_t driver_prot, uint64_t *va)
{
    (void)process;
    return vidmm_client_gpuva_map(ad->conn, base, min, max, h, offset, size, prot, driver_prot, va);
}
static vidmm_status rb_gpuva_free(struct d3dkmt_adapter *ad, vidmm_handle process, uint64_t va, uint64_t size)
{
    (void)process;
    return vidmm_client_gpuva_free(ad->conn, va, size);
}
static vidmm_status rb_gpuva_update(struct d3dkmt_adapter *ad, vidmm_handle process,
                                    const struct vidmm_gpuva_update_op *ops, uint32_t n)
{
    (void)process;
    return vidmm_client_gpuva_update(ad->conn, ops, n);
}
static vidmm_status rb_context_create(struct d3dkmt_adapter *ad, vidmm_handle device,
                                      const struct vidmm_context_desc *desc, vidmm_handle *out)
{
    return vidmm_client_context_create(ad->conn, device, desc, out);
}
static vidmm_status rb_context_destroy(struct d3dkmt_adapter *ad, vidmm_handle ctx)
{
    return vidmm_client_context_destroy(ad->conn, ctx);
}
static vidmm_status rb_submit_virtual(struct d3dkmt_adapter *ad, vidmm_handle ctx, uint64_t va, uint32_t size,
                                      uint64_t *fence)
{
    return vidmm_client_submit_virtual(ad->conn, ctx, va, size, fence);
}
static vidmm_status rb_context_fence(struct d3dkmt_adapter *ad, vidmm_handle ctx, uint64_t *sub, uint64_t *done)
{
    return vidmm_client_context_fence(ad->conn, ctx, sub, done);
}

const struct d3dkmt_backend d3dkmt_backend_client = {
    .name = "vidmmd",
    .adapter_query_info = rb_adapter_query_info,
    .segment_query = rb_segment_query,
    .process_create = rb_process_create,
    .process_destroy = rb_process_destroy,
    .device_create = rb_device_create,
    .device_destroy = rb_device_destroy,
    .paging_queue_create = rb_paging_queue_create,
    .paging_queue_destroy = rb_paging_queue_destroy,
    .paging_queue_fence = rb_paging_queue_fence,
    .device_allocation_create = rb_device_allocation_create,
    .allocation_destroy = rb_allocation_destroy,
    .device_lock = rb_device_lock,
    .device_unlock = rb_device_unlock,
    .make_resident = rb_make_resident,
    .evict = rb_evict,
    .allocation_set_priority = rb_allocation_set_priority,
    .offer = rb_offer,
    .reclaim = rb_reclaim,
    .query_video_memory_info = rb_query_video_memory_info,
    .change_video_memory_reservation = rb_change_video_memory_reservation,
    .register_trim_notification = rb_register_trim_notification,
    .gpuva_reserve = rb_gpuva_reserve,
    .gpuva_map = rb_gpuva_map,
    .gpuva_free = rb_gpuva_free,
    .gpuva_update = rb_gpuva_update,
    .context_create = rb_context_create,
    .context_destroy = rb_context_destroy,
    .submit_virtual = rb_submit_virtual,
    .context_fence = rb_context_fence,
};

static void release_connection(void *owner)
{
    vidmm_client_disconnect(owner);
}

NTSTATUS d3dkmt_runtime_add_remote(struct d3dkmt_runtime *rt, const char *socket_path, LUID luid)
{
    struct vidmm_client *conn = NULL;
    vidmm_status vs;
    NTSTATUS st;
    if (!rt || (luid.LowPart == 0 && luid.HighPart == 0))
        return STATUS_INVALID_PARAMETER;
    /* Refuse a LUID in use before connecting: the daemon never sees a
     * process that would be torn down at once. */
    st = d3dkmt_luid_check(rt, luid);
    if (st != STATUS_SUCCESS)
        return st;
    vs = vidmm_client_connect(socket_path, &conn);
    if (vs < 0)
        return d3dkmt_nt(vs);
    st = d3dkmt_adapter_register(rt, &d3dkmt_backend_client, NULL, conn, D3DKMT_REMOTE_PROCESS, luid,
                                 release_connection, conn);
    if (st != STATUS_SUCCESS)
        vidmm_client_disconnect(conn);
    return st;
}

NTSTATUS d3dkmt_runtime_vidmm_client(struct d3dkmt_runtime *rt, LUID luid, struct vidmm_client **conn)
{
    NTSTATUS st = STATUS_INVALID_PARAMETER;
    uint32_t i;
    if (!rt || !conn)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&rt->lock);
    for (i = 0; i < rt->adapter_count; i++)
        if (rt->adapters[i].live && rt->adapters[i].luid.LowPart == luid.LowPart &&
            rt->adapters[i].luid.HighPart == luid.HighPart) {
            *conn = rt->adapters[i].conn;
            st = rt->adapters[i].conn ? STATUS_SUCCESS : STATUS_NOT_SUPPORTED;
        }
    pthread_mutex_unlock(&rt->lock);
    return st;
}
