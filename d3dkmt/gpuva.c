/*
 * d3dkmt/gpuva.c - the GPU virtual address thunks:
 * D3DKMTReserveGpuVirtualAddress, D3DKMTMapGpuVirtualAddress,
 * D3DKMTFreeGpuVirtualAddress, D3DKMTUpdateGpuVirtualAddress.
 */
#include "thunks.h"

#include <string.h>

/* ---- GPU virtual addresses ------------------------------------------------ */

static unsigned protection_of(const D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE *p)
{
    return (p->Write ? 0u : VIDMM_GPUVA_READ_ONLY) | (p->Execute ? 0u : VIDMM_GPUVA_NO_EXECUTE);
}

NTSTATUS D3DKMTReserveGpuVirtualAddress(D3DDDI_RESERVEGPUVIRTUALADDRESS *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad = NULL;
    uint64_t va = 0;
    vidmm_status vs;
    unsigned mode;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->ReservationType == D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_ACCESS)
        mode = VIDMM_GPUVA_RESERVE_NO_ACCESS;
    else if (args->ReservationType == D3DDDIGPUVIRTUALADDRESS_RESERVE_ZERO)
        mode = VIDMM_GPUVA_RESERVE_ZERO;
    else if (args->ReservationType == D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_COMMIT)
        return STATUS_NOT_SUPPORTED;
    else
        return STATUS_INVALID_PARAMETER;
    if (args->Size == 0)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    {
        struct d3dkmt_queue *q = d3dkmt_lookup(rt, args->hPagingQueue, T_QUEUE);
        ad = q ? q->o.adapter : adapter_of(rt, args->hAdapter);
    }
    UNLOCK(rt);
    if (!ad)
        return STATUS_INVALID_HANDLE;
    vs = ad->be->gpuva_reserve(ad, ad->process, args->BaseAddress, args->MinimumAddress, args->MaximumAddress,
                               args->Size, mode, &va);
    if (vs < 0)
        return d3dkmt_nt(vs);
    args->VirtualAddress = va;
    args->PagingFenceValue = 0;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTMapGpuVirtualAddress(D3DDDI_MAPGPUVIRTUALADDRESS *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad;
    struct queueref q;
    vidmm_handle alloc = 0;
    uint64_t va = 0, fence = 0;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->SizeInPages == 0 || args->SizeInPages > (UINT64_MAX >> 12) || args->OffsetInPages > (UINT64_MAX >> 12) ||
        args->Protection.Zero || args->Protection.NoAccess || args->Protection.SystemUseOnly)
        return STATUS_INVALID_PARAMETER;
    st = d3dkmt_queue_handles(rt, args->hPagingQueue, &args->hAllocation, 1, &q, &alloc);
    if (st != STATUS_SUCCESS)
        return st;
    ad = q.ad;
    vs = ad->be->gpuva_map(ad, ad->process, args->BaseAddress, args->MinimumAddress, args->MaximumAddress, alloc,
                           args->OffsetInPages << 12, args->SizeInPages << 12, protection_of(&args->Protection),
                           args->DriverProtection, &va);
    if (vs < 0)
        return d3dkmt_nt(vs);
    /* The entries are written when the map returns: the fence value to
     * wait for is one the queue has already reached. */
    ad->be->paging_queue_fence(ad, q.vq, &fence);
    args->VirtualAddress = va;
    args->PagingFenceValue = fence;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTFreeGpuVirtualAddress(const D3DKMT_FREEGPUVIRTUALADDRESS *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->Size == 0)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    ad = adapter_of(rt, args->hAdapter);
    UNLOCK(rt);
    if (!ad)
        return STATUS_INVALID_PARAMETER;
    return d3dkmt_nt(ad->be->gpuva_free(ad, ad->process, args->BaseAddress, args->Size));
}

NTSTATUS D3DKMTUpdateGpuVirtualAddress(const D3DKMT_UPDATEGPUVIRTUALADDRESS *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct vidmm_gpuva_update_op *ops;
    struct devref d;
    vidmm_status vs;
    NTSTATUS st = STATUS_SUCCESS;
    uint32_t i, n;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    n = args->NumOperations;
    if (n == 0 || !args->Operations || args->Flags.Reserved)
        return STATUS_INVALID_PARAMETER;
    ops = d3dkmt_alloc(rt, n * sizeof *ops);
    if (!ops)
        return STATUS_NO_MEMORY;
    LOCK(rt);
    if (!d3dkmt_device_ref(rt, args->hDevice, &d)) {
        st = STATUS_INVALID_PARAMETER;
    } else if (args->hContext) {
        struct d3dkmt_context *c = d3dkmt_lookup(rt, args->hContext, T_CONTEXT);
        if (!c || c->o.device != d.handle)
            st = STATUS_INVALID_HANDLE;
    }
    if (st == STATUS_SUCCESS && args->hFenceObject) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->hFenceObject, T_SYNC);
        if (!s || s->o.device != d.handle)
            st = STATUS_INVALID_HANDLE;
    }
    for (i = 0; i < n && st == STATUS_SUCCESS; i++) {
        const D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION *in = &args->Operations[i];
        struct vidmm_gpuva_update_op *op = &ops[i];
        switch (in->OperationType) {
        case D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP:
        case D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP_PROTECT:
            op->type = VIDMM_GPUVA_UPDATE_MAP;
            op->va = in->Map.BaseAddress;
            op->size = in->Map.SizeInBytes;
            op->offset = in->Map.AllocationOffsetInBytes;
            if (!d3dkmt_alloc_handles(rt, d.handle, &in->Map.hAllocation, 1, &op->allocation))
                st = STATUS_INVALID_HANDLE;
            if (in->OperationType == D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP_PROTECT) {
                if (in->MapProtect.Protection.Zero || in->MapProtect.Protection.NoAccess)
                    st = STATUS_INVALID_PARAMETER;
                op->protection = protection_of(&in->MapProtect.Protection);
                op->driver_protection = in->MapProtect.DriverProtection;
            }
            break;
        case D3DDDI_UPDATEGPUVIRTUALADDRESS_UNMAP:
            op->type = VIDMM_GPUVA_UPDATE_UNMAP;
            op->va = in->Unmap.BaseAddress;
            op->size = in->Unmap.SizeInBytes;
            op->unmap_mode = in->Unmap.Protection.Zero ? VIDMM_GPUVA_RESERVE_ZERO : VIDMM_GPUVA_RESERVE_NO_ACCESS;
            break;
        case D3DDDI_UPDATEGPUVIRTUALADDRESS_COPY:
            op->type = VIDMM_GPUVA_UPDATE_COPY;
            op->source = in->Copy.SourceAddress;
            op->size = in->Copy.SizeInBytes;
            op->va = in->Copy.DestAddress;
            break;
        default:
            st = STATUS_INVALID_PARAMETER;
            break;
        }
    }
    UNLOCK(rt);
    if (st == STATUS_SUCCESS && args->hFenceObject)
        st = d3dkmt_wait_one(rt, d.handle, args->hFenceObject, args->FenceValue);
    if (st == STATUS_SUCCESS) {
        vs = d.ad->be->gpuva_update(d.ad, d.ad->process, ops, n);
        st = d3dkmt_nt(vs);
    }
    d3dkmt_free(rt, ops, n * sizeof *ops);
    return st;
}
