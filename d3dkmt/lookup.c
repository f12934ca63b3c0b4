/*
 * d3dkmt/lookup.c - the prologue of the thunks that name objects: the
 * device or paging queue, and the allocations of it a thunk lists,
 * looked up and copied out under the runtime lock, with the status each
 * failure gives (docs/D3DKMT.md).  Once a copy per thunk, now one.
 */
#include "thunks.h"

#include <string.h>

int d3dkmt_device_ref(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *out)
{
    struct d3dkmt_obj *o = d3dkmt_lookup(rt, h, T_DEVICE);
    if (!o)
        return 0;
    out->ad = o->adapter;
    out->vdev = o->vh;
    out->handle = h;
    return 1;
}

/* Translate n allocation handles of one device; 0 on a bad one. */
int d3dkmt_alloc_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                         vidmm_handle *out)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        struct d3dkmt_allocation *a = d3dkmt_lookup(rt, in[i], T_ALLOCATION);
        if (!a || a->o.device != device)
            return 0;
        out[i] = a->o.vh;
    }
    return 1;
}

/* The runtime locked, with device h's identity copied into d: 1.  0
 * when h names no device, the lock released again (the thunk answers
 * STATUS_INVALID_PARAMETER). */
int d3dkmt_lock_device(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *d)
{
    LOCK(rt);
    if (d3dkmt_device_ref(rt, h, d))
        return 1;
    UNLOCK(rt);
    return 0;
}

/* The handle-list prologue of the thunks that name allocations of one
 * device: under the lock, the device (STATUS_INVALID_PARAMETER when h
 * names none) and the n allocations of in, each of that device
 * (STATUS_INVALID_HANDLE otherwise), translated into out; the lock is
 * released either way. */
NTSTATUS d3dkmt_device_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                               struct devref *d, vidmm_handle *out)
{
    int ok;
    if (!d3dkmt_lock_device(rt, device, d))
        return STATUS_INVALID_PARAMETER;
    ok = d3dkmt_alloc_handles(rt, d->handle, in, n, out);
    UNLOCK(rt);
    return ok ? STATUS_SUCCESS : STATUS_INVALID_HANDLE;
}

/* device_handles into a list of n handles allocated here first
 * (STATUS_NO_MEMORY).  On success the caller frees *list with
 * d3dkmt_free(rt, *list, n * sizeof **list); on failure it is freed. */
NTSTATUS d3dkmt_device_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                            struct devref *d, vidmm_handle **list)
{
    NTSTATUS st;
    *list = d3dkmt_alloc(rt, n * sizeof **list);
    if (!*list)
        return STATUS_NO_MEMORY;
    st = d3dkmt_device_handles(rt, device, in, n, d, *list);
    if (st != STATUS_SUCCESS) {
        d3dkmt_free(rt, *list, n * sizeof **list);
        *list = NULL;
    }
    return st;
}

/* The prologue of the thunks that name allocations through a paging
 * queue: under the lock, the queue and the n allocations of in, each of
 * the queue's device, translated into out; STATUS_INVALID_HANDLE when
 * either is wrong.  The lock is released either way. */
NTSTATUS d3dkmt_queue_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                              struct queueref *q, vidmm_handle *out)
{
    struct d3dkmt_queue *pq;
    int ok;
    LOCK(rt);
    pq = d3dkmt_lookup(rt, queue, T_QUEUE);
    ok = pq && d3dkmt_alloc_handles(rt, pq->o.device, in, n, out);
    if (ok) {
        struct d3dkmt_obj *dev = d3dkmt_lookup(rt, pq->o.device, T_DEVICE);
        q->ad = pq->o.adapter;
        q->vq = pq->o.vh;
        q->vdev = dev ? dev->vh : 0;
    }
    UNLOCK(rt);
    return ok ? STATUS_SUCCESS : STATUS_INVALID_HANDLE;
}

/* queue_handles into a list allocated here, as device_list does. */
NTSTATUS d3dkmt_queue_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                           struct queueref *q, vidmm_handle **list)
{
    NTSTATUS st;
    *list = d3dkmt_alloc(rt, n * sizeof **list);
    if (!*list)
        return STATUS_NO_MEMORY;
    st = d3dkmt_queue_handles(rt, queue, in, n, q, *list);
    if (st != STATUS_SUCCESS) {
        d3dkmt_free(rt, *list, n * sizeof **list);
        *list = NULL;
    }
    return st;
}
