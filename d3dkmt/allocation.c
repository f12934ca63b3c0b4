/*
 * d3dkmt/allocation.c - the allocation thunks: create and destroy, CPU
 * access (D3DKMTLock2, D3DKMTUnlock2), residency (D3DKMTMakeResident,
 * D3DKMTEvict), priorities, and D3DKMTOfferAllocations /
 * D3DKMTReclaimAllocations2.
 */
#include "thunks.h"

#include <string.h>

/* ---- allocations --------------------------------------------------------- */

static const uint32_t k_unsupported_create_flags_mask = 0x007FFFFFu; /* every documented bit */

static uint32_t create_flags_value(const D3DKMT_CREATEALLOCATIONFLAGS *f)
{
    uint32_t v;
    memcpy(&v, f, sizeof v);
    return v;
}

NTSTATUS D3DKMTCreateAllocation2(D3DKMT_CREATEALLOCATION *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct devref d;
    uint32_t i, n, done = 0;
    NTSTATUS st = STATUS_SUCCESS;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    n = args->NumAllocations;
    if (n == 0 || n > MAX_ALLOCATIONS_PER_CREATE || !args->pAllocationInfo2)
        return STATUS_INVALID_PARAMETER;
    /* hGlobalShare is an output (Windows clears it when nothing is
     * shared); hPrivateRuntimeResourceHandle is the runtime's opaque
     * tracing handle, accepted and left as it is. */
    if (args->hResource || (create_flags_value(&args->Flags) & k_unsupported_create_flags_mask) ||
        (create_flags_value(&args->Flags) & 0x7F800000u))
        return STATUS_NOT_SUPPORTED;
    for (i = 0; i < n; i++) {
        const D3DDDI_ALLOCATIONINFO2 *ai = &args->pAllocationInfo2[i];
        if (!ai->pPrivateDriverData || ai->PrivateDriverDataSize == 0)
            return STATUS_INVALID_PARAMETER;
        if (ai->Flags.Primary || ai->Flags.Stereo || ai->pSystemMem)
            return STATUS_NOT_SUPPORTED;
        if (ai->Flags.OverridePriority && ai->Priority == 0)
            return STATUS_INVALID_PARAMETER;
    }
    if (!d3dkmt_lock_device(rt, args->hDevice, &d))
        return STATUS_INVALID_PARAMETER;
    UNLOCK(rt);
    for (i = 0; i < n && st == STATUS_SUCCESS; i++) {
        D3DDDI_ALLOCATIONINFO2 *ai = &args->pAllocationInfo2[i];
        struct d3dkmt_allocation *a = d3dkmt_alloc(rt, sizeof *a);
        vidmm_handle vh;
        vidmm_status vs;
        if (!a) {
            st = STATUS_NO_MEMORY;
            break;
        }
        vs = d.ad->be->device_allocation_create(d.ad, d.vdev, ai->pPrivateDriverData, ai->PrivateDriverDataSize,
                                                args->Flags.CreateResident ? VIDMM_CREATE_RESIDENT : 0u, &vh);
        if (vs >= 0 && ai->Flags.OverridePriority) {
            vs = d.ad->be->allocation_set_priority(d.ad, vh, ai->Priority);
            if (vs < 0)
                d.ad->be->allocation_destroy(d.ad, vh);
        }
        if (vs < 0) {
            d3dkmt_free(rt, a, sizeof *a);
            st = d3dkmt_nt(vs);
            break;
        }
        a->o.type = T_ALLOCATION;
        a->o.adapter = d.ad;
        a->o.device = d.handle;
        a->o.vh = vh;
        LOCK(rt);
        st = d3dkmt_insert(rt, T_ALLOCATION, a, &ai->hAllocation);
        UNLOCK(rt);
        if (st != STATUS_SUCCESS) {
            d.ad->be->allocation_destroy(d.ad, vh);
            d3dkmt_free(rt, a, sizeof *a);
            break;
        }
        ai->GpuVirtualAddress = 0;
        done++;
    }
    if (st != STATUS_SUCCESS) {
        /* All or nothing. */
        for (i = 0; i < done; i++) {
            struct d3dkmt_allocation *a;
            vidmm_handle vh = 0;
            LOCK(rt);
            a = d3dkmt_lookup(rt, args->pAllocationInfo2[i].hAllocation, T_ALLOCATION);
            if (a) {
                vh = a->o.vh;
                d3dkmt_remove(rt, a->o.handle);
                d3dkmt_obj_free(rt, a);
            }
            UNLOCK(rt);
            if (vh)
                d.ad->be->allocation_destroy(d.ad, vh);
            args->pAllocationInfo2[i].hAllocation = 0;
        }
    } else {
        args->hGlobalShare = 0;   /* nothing shared */
    }
    return st;
}

NTSTATUS D3DKMTCreateAllocation(D3DKMT_CREATEALLOCATION *args)
{
    return D3DKMTCreateAllocation2(args);
}

NTSTATUS D3DKMTDestroyAllocation2(const D3DKMT_DESTROYALLOCATION2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct doomed *list;
    struct devref d;
    uint32_t i;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->hResource)
        return STATUS_NOT_SUPPORTED;
    if (!args->phAllocationList || args->AllocationCount == 0)
        return STATUS_INVALID_PARAMETER;
    if (!d3dkmt_lock_device(rt, args->hDevice, &d))
        return STATUS_INVALID_PARAMETER;
    /* All or nothing: every handle first. */
    for (i = 0; i < args->AllocationCount; i++) {
        struct d3dkmt_allocation *a = d3dkmt_lookup(rt, args->phAllocationList[i], T_ALLOCATION);
        uint32_t j;
        if (!a || a->o.device != d.handle) {
            UNLOCK(rt);
            return STATUS_INVALID_HANDLE;
        }
        for (j = 0; j < i; j++)
            if (args->phAllocationList[j] == args->phAllocationList[i]) {
                UNLOCK(rt);
                return STATUS_INVALID_PARAMETER;
            }
    }
    list = d3dkmt_alloc(rt, args->AllocationCount * sizeof *list);
    if (!list) {
        UNLOCK(rt);
        return STATUS_NO_MEMORY;
    }
    for (i = 0; i < args->AllocationCount; i++) {
        struct d3dkmt_allocation *a = d3dkmt_lookup(rt, args->phAllocationList[i], T_ALLOCATION);
        list[i].vh = a->o.vh;
        list[i].locks = a->locks;
        d3dkmt_remove(rt, a->o.handle);
        d3dkmt_obj_free(rt, a);
    }
    UNLOCK(rt);
    d3dkmt_destroy_doomed(rt, d.ad, d.vdev, list, args->AllocationCount);
    d3dkmt_free(rt, list, args->AllocationCount * sizeof *list);
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTLock2(D3DKMT_LOCK2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct devref d;
    vidmm_handle va = 0;
    vidmm_status vs;
    void *p = NULL;
    NTSTATUS st;
    if (!args || !rt || args->Flags.Value != 0)
        return STATUS_INVALID_PARAMETER;
    st = d3dkmt_device_handles(rt, args->hDevice, &args->hAllocation, 1, &d, &va);
    if (st != STATUS_SUCCESS)
        return st;
    vs = d.ad->be->device_lock(d.ad, d.vdev, va, &p);
    if (vs < 0)
        return d3dkmt_nt(vs);
    LOCK(rt);
    {
        struct d3dkmt_allocation *a = d3dkmt_lookup(rt, args->hAllocation, T_ALLOCATION);
        if (a)
            a->locks++;
    }
    UNLOCK(rt);
    args->pData = p;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTUnlock2(const D3DKMT_UNLOCK2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_allocation *a;
    struct devref d;
    vidmm_status vs;
    vidmm_handle va;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (!d3dkmt_lock_device(rt, args->hDevice, &d))
        return STATUS_INVALID_PARAMETER;
    a = d3dkmt_lookup(rt, args->hAllocation, T_ALLOCATION);
    if (!a || a->o.device != d.handle) {
        UNLOCK(rt);
        return STATUS_INVALID_HANDLE;
    }
    if (a->locks == 0) {
        UNLOCK(rt);
        return STATUS_INVALID_PARAMETER;
    }
    va = a->o.vh;
    a->locks--;
    UNLOCK(rt);
    vs = d.ad->be->device_unlock(d.ad, d.vdev, va);
    return d3dkmt_nt(vs);
}

/* ---- residency ---------------------------------------------------------- */

NTSTATUS D3DKMTMakeResident(D3DDDI_MAKERESIDENT *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct vidmm_make_resident_args mr;
    struct queueref q;
    vidmm_handle *list;
    vidmm_status vs;
    NTSTATUS st;
    uint32_t n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    n = args->NumAllocations;
    if (n == 0 || n > MAX_MAKE_RESIDENT || !args->AllocationList || args->Flags.Reserved ||
        (args->Flags.MustSucceed && !args->Flags.CantTrimFurther))
        return STATUS_INVALID_PARAMETER;
    st = d3dkmt_queue_list(rt, args->hPagingQueue, args->AllocationList, n, &q, &list);
    if (st != STATUS_SUCCESS)
        return st;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q.vq;
    mr.allocations = list;
    mr.count = n;
    mr.flags = (args->Flags.CantTrimFurther ? VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER : 0u) |
               (args->Flags.MustSucceed ? VIDMM_MAKE_RESIDENT_MUST_SUCCEED : 0u);
    vs = q.ad->be->make_resident(q.ad, q.vdev, &mr);
    d3dkmt_free(rt, list, n * sizeof *list);
    args->PagingFenceValue = vs >= 0 ? mr.paging_fence_value : 0;
    args->NumBytesToTrim = vs == VIDMM_E_OVER_BUDGET ? mr.bytes_to_trim : 0;
    return d3dkmt_nt(vs);
}

NTSTATUS D3DKMTEvict(D3DKMT_EVICT *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct vidmm_evict_args ev;
    struct devref d;
    vidmm_handle *list;
    vidmm_status vs;
    NTSTATUS st;
    uint32_t n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    n = args->NumAllocations;
    if (n == 0 || n > MAX_MAKE_RESIDENT || !args->AllocationList || args->Flags.Reserved)
        return STATUS_INVALID_PARAMETER;
    st = d3dkmt_device_list(rt, args->hDevice, args->AllocationList, n, &d, &list);
    if (st != STATUS_SUCCESS)
        return st;
    memset(&ev, 0, sizeof ev);
    ev.allocations = list;
    ev.count = n;
    ev.flags = (args->Flags.EvictOnlyIfNecessary ? VIDMM_EVICT_ONLY_IF_NECESSARY : 0u) |
               (args->Flags.NotWrittenTo ? VIDMM_EVICT_NOT_WRITTEN_TO : 0u);
    vs = d.ad->be->evict(d.ad, d.vdev, &ev);
    d3dkmt_free(rt, list, n * sizeof *list);
    args->NumBytesToTrim = vs >= 0 ? ev.bytes_to_trim : 0;
    return d3dkmt_nt(vs);
}

NTSTATUS D3DKMTSetAllocationPriority(const D3DKMT_SETALLOCATIONPRIORITY *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct devref d;
    vidmm_handle *list;
    vidmm_status vs = VIDMM_OK;
    NTSTATUS st;
    uint32_t i, n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->hResource)
        return STATUS_NOT_SUPPORTED;
    n = args->AllocationCount;
    if (n == 0 || !args->phAllocationList || !args->pPriorities)
        return STATUS_INVALID_PARAMETER;
    for (i = 0; i < n; i++)
        if (args->pPriorities[i] == 0)
            return STATUS_INVALID_PARAMETER;
    st = d3dkmt_device_list(rt, args->hDevice, args->phAllocationList, n, &d, &list);
    if (st != STATUS_SUCCESS)
        return st;
    for (i = 0; i < n && vs >= 0; i++)
        vs = d.ad->be->allocation_set_priority(d.ad, list[i], args->pPriorities[i]);
    d3dkmt_free(rt, list, n * sizeof *list);
    return d3dkmt_nt(vs);
}

NTSTATUS D3DKMTOfferAllocations(const D3DKMT_OFFERALLOCATIONS *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct devref d;
    vidmm_handle *list;
    vidmm_status vs;
    NTSTATUS st;
    uint32_t n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->pResources)
        return args->HandleList ? STATUS_INVALID_PARAMETER : STATUS_NOT_SUPPORTED;
    n = args->NumAllocations;
    if (n == 0 || !args->HandleList || args->Priority < D3DKMT_OFFER_PRIORITY_LOW ||
        args->Priority > D3DKMT_OFFER_PRIORITY_AUTO || args->Flags.Reserved)
        return STATUS_INVALID_PARAMETER;
    st = d3dkmt_device_list(rt, args->hDevice, args->HandleList, n, &d, &list);
    if (st != STATUS_SUCCESS)
        return st;
    vs = d.ad->be->offer(d.ad, d.vdev, list, n, (uint32_t)args->Priority);
    d3dkmt_free(rt, list, n * sizeof *list);
    return d3dkmt_nt(vs);
}

NTSTATUS D3DKMTReclaimAllocations2(D3DKMT_RECLAIMALLOCATIONS2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct queueref q;
    vidmm_handle *list;
    uint32_t *results, i, n;
    uint64_t fence = 0;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->pResources)
        return args->HandleList ? STATUS_INVALID_PARAMETER : STATUS_NOT_SUPPORTED;
    n = args->NumAllocations;
    if (n == 0 || !args->HandleList)
        return STATUS_INVALID_PARAMETER;
    results = d3dkmt_alloc(rt, n * sizeof *results);
    if (!results)
        return STATUS_NO_MEMORY;
    st = d3dkmt_queue_list(rt, args->hPagingQueue, args->HandleList, n, &q, &list);
    if (st != STATUS_SUCCESS) {
        d3dkmt_free(rt, results, n * sizeof *results);
        return st;
    }
    vs = q.ad->be->reclaim(q.ad, q.vq, list, n, results, &fence);
    if (vs >= 0 && args->pResults)
        for (i = 0; i < n; i++)
            args->pResults[i] = results[i] == VIDMM_RECLAIM_DISCARDED ? D3DDDI_RECLAIM_RESULT_DISCARDED
                                                                      : D3DDDI_RECLAIM_RESULT_OK;
    args->PagingFenceValue = vs >= 0 ? fence : 0;
    d3dkmt_free(rt, list, n * sizeof *list);
    d3dkmt_free(rt, results, n * sizeof *results);
    return d3dkmt_nt(vs);
}
