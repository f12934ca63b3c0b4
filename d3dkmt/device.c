/*
 * d3dkmt/device.c - the device, paging-queue and context thunks:
 * D3DKMTCreateDevice and D3DKMTDestroyDevice (everything the device
 * owns goes with it), D3DKMTCreatePagingQueue (with its fence object),
 * D3DKMTDestroyPagingQueue, D3DKMTCreateContextVirtual,
 * D3DKMTDestroyContext, D3DKMTSubmitCommand.
 */
#include "thunks.h"

#include <string.h>

/* ---- devices ------------------------------------------------------------ */

NTSTATUS D3DKMTCreateDevice(D3DKMT_CREATEDEVICE *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad;
    struct d3dkmt_obj *o;
    vidmm_handle vdev;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    ad = adapter_of(rt, args->hAdapter);
    UNLOCK(rt);
    if (!ad)
        return STATUS_INVALID_PARAMETER;
    o = d3dkmt_alloc(rt, sizeof *o);
    if (!o)
        return STATUS_NO_MEMORY;
    vs = ad->be->device_create(ad, ad->process, &vdev);
    if (vs < 0) {
        d3dkmt_free(rt, o, sizeof *o);
        return d3dkmt_nt(vs);
    }
    o->type = T_DEVICE;
    o->adapter = ad;
    o->vh = vdev;
    LOCK(rt);
    st = d3dkmt_insert(rt, T_DEVICE, o, &args->hDevice);
    if (st == STATUS_SUCCESS)
        o->device = o->handle;
    UNLOCK(rt);
    if (st != STATUS_SUCCESS) {
        ad->be->device_destroy(ad, vdev);
        d3dkmt_free(rt, o, sizeof *o);
        return st;
    }
    args->pCommandBuffer = NULL;
    args->CommandBufferSize = 0;
    args->pAllocationList = NULL;
    args->AllocationListSize = 0;
    args->pPatchLocationList = NULL;
    args->PatchLocationListSize = 0;
    return STATUS_SUCCESS;
}

/* Allocations leave the table under the lock; the backend destroys
 * them after it (never call the backend holding rt->lock). */
void d3dkmt_destroy_doomed(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, vidmm_handle vdev,
                           struct doomed *list, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        while (list[i].locks > 0) {
            ad->be->device_unlock(ad, vdev, list[i].vh);
            list[i].locks--;
        }
        ad->be->allocation_destroy(ad, list[i].vh);
    }
    (void)rt;
}

/* Takes the device and everything it owns out of the table, then
 * destroys them in the backend: allocations (unlocked first), then the
 * device (its queues and contexts go with it). */
void d3dkmt_destroy_device_locked_out(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device)
{
    struct d3dkmt_obj *dev;
    struct d3dkmt_adapter *ad;
    struct doomed *list = NULL;
    uint32_t i, n = 0, cap = 0;
    vidmm_handle vdev;
    LOCK(rt);
    dev = d3dkmt_lookup(rt, device, T_DEVICE);
    if (!dev) {
        UNLOCK(rt);
        return;
    }
    ad = dev->adapter;
    vdev = dev->vh;
    d3dkmt_regs_drop_device(rt, device);
    for (i = 0; i < rt->capacity; i++)
        if (rt->entries[i].type == T_ALLOCATION && ((struct d3dkmt_obj *)rt->entries[i].obj)->device == device)
            cap++;
    if (cap)
        list = d3dkmt_alloc(rt, cap * sizeof *list);
    for (i = 0; i < rt->capacity; i++) {
        struct d3dkmt_entry *e = &rt->entries[i];
        struct d3dkmt_obj *o;
        if (e->type == T_FREE || e->type == T_ADAPTER || e->type == T_DEVICE)
            continue;
        o = e->obj;
        if (o->device != device)
            continue;
        if (e->type == T_ALLOCATION) {
            struct d3dkmt_allocation *a = e->obj;
            if (list) {
                list[n].vh = a->o.vh;
                list[n].locks = a->locks;
                n++;
            }
            /* Without memory for the list the allocations stay in the
             * backend until its process is destroyed (runtime close). */
        }
        d3dkmt_remove(rt, o->handle);
        d3dkmt_obj_free(rt, o);
    }
    d3dkmt_remove(rt, device);
    d3dkmt_obj_free(rt, dev);
    UNLOCK(rt);
    d3dkmt_destroy_doomed(rt, ad, vdev, list, n);
    d3dkmt_free(rt, list, cap * sizeof *list);
    ad->be->device_destroy(ad, vdev);
    pthread_cond_broadcast(&rt->fence_cv);
}

NTSTATUS D3DKMTDestroyDevice(const D3DKMT_DESTROYDEVICE *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    int ok;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    ok = d3dkmt_lookup(rt, args->hDevice, T_DEVICE) != NULL;
    UNLOCK(rt);
    if (!ok)
        return STATUS_INVALID_PARAMETER;
    d3dkmt_destroy_device_locked_out(rt, args->hDevice);
    return STATUS_SUCCESS;
}

/* ---- paging queues ------------------------------------------------------- */

NTSTATUS D3DKMTCreatePagingQueue(D3DKMT_CREATEPAGINGQUEUE *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct devref d;
    struct d3dkmt_queue *q;
    struct d3dkmt_sync *s;
    vidmm_handle vq;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->Priority < D3DDDI_PAGINGQUEUE_PRIORITY_BELOW_NORMAL ||
        args->Priority > D3DDDI_PAGINGQUEUE_PRIORITY_ABOVE_NORMAL || args->PhysicalAdapterIndex != 0)
        return STATUS_INVALID_PARAMETER;
    if (!d3dkmt_lock_device(rt, args->hDevice, &d))
        return STATUS_INVALID_PARAMETER;
    UNLOCK(rt);
    q = d3dkmt_alloc(rt, sizeof *q);
    if (!q)
        return STATUS_NO_MEMORY;
    vs = d.ad->be->paging_queue_create(d.ad, d.vdev, (int)args->Priority, &vq);
    if (vs < 0) {
        d3dkmt_free(rt, q, sizeof *q);
        return d3dkmt_nt(vs);
    }
    q->o.type = T_QUEUE;
    q->o.adapter = d.ad;
    q->o.device = d.handle;
    q->o.vh = vq;
    LOCK(rt);
    st = d3dkmt_insert(rt, T_QUEUE, q, &args->hPagingQueue);
    if (st == STATUS_SUCCESS) {
        st = d3dkmt_sync_create_locked(rt, d.ad, d.handle, SYNC_PAGING, vq, 0, &q->sync);
        if (st != STATUS_SUCCESS)
            d3dkmt_remove(rt, q->o.handle);
    }
    if (st == STATUS_SUCCESS) {
        s = d3dkmt_lookup(rt, q->sync, T_SYNC);
        args->hSyncObject = q->sync;
        args->FenceValueCPUVirtualAddress = s->cpu_value;
    }
    UNLOCK(rt);
    if (st != STATUS_SUCCESS) {
        d.ad->be->paging_queue_destroy(d.ad, vq);
        d3dkmt_free(rt, q, sizeof *q);
    }
    return st;
}

NTSTATUS D3DKMTDestroyPagingQueue(D3DDDI_DESTROYPAGINGQUEUE *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_queue *q;
    struct d3dkmt_adapter *ad;
    vidmm_handle vq;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    q = d3dkmt_lookup(rt, args->hPagingQueue, T_QUEUE);
    if (!q) {
        UNLOCK(rt);
        return STATUS_INVALID_HANDLE;
    }
    ad = q->o.adapter;
    vq = q->o.vh;
    {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, q->sync, T_SYNC);
        d3dkmt_remove(rt, q->sync);
        d3dkmt_obj_free(rt, s);
    }
    d3dkmt_remove(rt, q->o.handle);
    d3dkmt_obj_free(rt, q);
    UNLOCK(rt);
    pthread_cond_broadcast(&rt->fence_cv);
    return d3dkmt_nt(ad->be->paging_queue_destroy(ad, vq));
}

/* ---- contexts and submission ------------------------------------------------ */

NTSTATUS D3DKMTCreateContextVirtual(D3DKMT_CREATECONTEXTVIRTUAL *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct vidmm_context_desc desc;
    struct d3dkmt_context *c;
    struct devref d;
    vidmm_handle vc;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->EngineAffinity > 1 || args->Flags.Reserved || (args->pPrivateDriverData == NULL) != (args->PrivateDriverDataSize == 0))
        return STATUS_INVALID_PARAMETER;
    if (args->Flags.HwQueueSupported || args->Flags.NullRendering)
        return STATUS_NOT_SUPPORTED;
    if (!d3dkmt_lock_device(rt, args->hDevice, &d))
        return STATUS_INVALID_PARAMETER;
    UNLOCK(rt);
    c = d3dkmt_alloc(rt, sizeof *c);
    if (!c)
        return STATUS_NO_MEMORY;
    memset(&desc, 0, sizeof desc);
    desc.node = args->NodeOrdinal;
    desc.mode = VIDMM_CONTEXT_VIRTUAL;
    vs = d.ad->be->context_create(d.ad, d.vdev, &desc, &vc);
    if (vs < 0) {
        d3dkmt_free(rt, c, sizeof *c);
        return d3dkmt_nt(vs);
    }
    c->o.type = T_CONTEXT;
    c->o.adapter = d.ad;
    c->o.device = d.handle;
    c->o.vh = vc;
    LOCK(rt);
    st = d3dkmt_insert(rt, T_CONTEXT, c, &args->hContext);
    UNLOCK(rt);
    if (st != STATUS_SUCCESS) {
        d.ad->be->context_destroy(d.ad, vc);
        d3dkmt_free(rt, c, sizeof *c);
    }
    return st;
}

NTSTATUS D3DKMTDestroyContext(const D3DKMT_DESTROYCONTEXT *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_context *c;
    struct d3dkmt_adapter *ad;
    vidmm_handle vc;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    c = d3dkmt_lookup(rt, args->hContext, T_CONTEXT);
    if (!c) {
        UNLOCK(rt);
        return STATUS_INVALID_HANDLE;
    }
    ad = c->o.adapter;
    vc = c->o.vh;
    d3dkmt_remove(rt, c->o.handle);
    d3dkmt_obj_free(rt, c);
    UNLOCK(rt);
    return d3dkmt_nt(ad->be->context_destroy(ad, vc));
}

NTSTATUS D3DKMTSubmitCommand(const D3DKMT_SUBMITCOMMAND *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    vidmm_handle vc[D3DDDI_MAX_BROADCAST_CONTEXT];
    struct d3dkmt_adapter *ad = NULL;
    D3DKMT_HANDLE device = 0;
    uint32_t i, n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    n = args->BroadcastContextCount;
    if (n == 0 || n > D3DDDI_MAX_BROADCAST_CONTEXT || args->CommandLength == 0 || args->Commands == 0 ||
        args->NumPrimaries > D3DDDI_MAX_WRITTEN_PRIMARIES || args->Flags.Reserved ||
        (args->pPrivateDriverData == NULL) != (args->PrivateDriverDataSize == 0))
        return STATUS_INVALID_PARAMETER;
    if (args->NumPrimaries || args->NumHistoryBuffers || args->Flags.NullRendering)
        return STATUS_NOT_SUPPORTED;
    LOCK(rt);
    for (i = 0; i < n; i++) {
        struct d3dkmt_context *c = d3dkmt_lookup(rt, args->BroadcastContext[i], T_CONTEXT);
        if (!c || (device && c->o.device != device)) {
            UNLOCK(rt);
            return STATUS_INVALID_HANDLE;
        }
        device = c->o.device;
        ad = c->o.adapter;
        vc[i] = c->o.vh;
    }
    UNLOCK(rt);
    for (i = 0; i < n; i++) {
        uint64_t fence = 0;
        vidmm_status vs = ad->be->submit_virtual(ad, vc[i], args->Commands, args->CommandLength, &fence);
        struct d3dkmt_context *c;
        if (vs < 0)
            return d3dkmt_nt(vs);
        LOCK(rt);
        c = d3dkmt_lookup(rt, args->BroadcastContext[i], T_CONTEXT);
        if (c && fence > c->last_fence)
            c->last_fence = fence;
        UNLOCK(rt);
    }
    return STATUS_SUCCESS;
}
