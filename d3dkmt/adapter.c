/*
 * d3dkmt/adapter.c - the adapter thunks: D3DKMTEnumAdapters2,
 * D3DKMTOpenAdapterFromLuid, D3DKMTCloseAdapter, D3DKMTQueryAdapterInfo
 * (the segment sums as Microsoft's 'Calculating graphics memory' adds
 * them up), and the budgets: D3DKMTQueryVideoMemoryInfo,
 * D3DKMTChangeVideoMemoryReservation.
 */
#include "thunks.h"

#include <string.h>

/* ---- adapters ----------------------------------------------------------- */

static NTSTATUS open_adapter_handle(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, D3DKMT_HANDLE *out)
{
    return d3dkmt_insert(rt, T_ADAPTER, ad, out);
}

NTSTATUS D3DKMTEnumAdapters2(D3DKMT_ENUMADAPTERS2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    uint32_t i, n = 0;
    NTSTATUS st = STATUS_SUCCESS;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    for (i = 0; i < rt->adapter_count; i++)
        n += rt->adapters[i].live ? 1u : 0u;
    if (!args->pAdapters) {
        args->NumAdapters = n;
        UNLOCK(rt);
        return STATUS_SUCCESS;
    }
    if (args->NumAdapters < n) {
        args->NumAdapters = n;
        UNLOCK(rt);
        return STATUS_BUFFER_TOO_SMALL;
    }
    n = 0;
    for (i = 0; i < rt->adapter_count && st == STATUS_SUCCESS; i++) {
        struct d3dkmt_adapter *ad = &rt->adapters[i];
        D3DKMT_ADAPTERINFO *info = &args->pAdapters[n];
        if (!ad->live)
            continue;
        st = open_adapter_handle(rt, ad, &info->hAdapter);
        if (st != STATUS_SUCCESS)
            break;
        info->AdapterLuid = ad->luid;
        info->NumOfSources = 0;
        info->bPrecisePresentRegionsPreferred = 0;
        n++;
    }
    if (st != STATUS_SUCCESS) {
        while (n > 0)
            d3dkmt_remove(rt, args->pAdapters[--n].hAdapter);
    } else {
        args->NumAdapters = n;
    }
    UNLOCK(rt);
    return st;
}

NTSTATUS D3DKMTOpenAdapterFromLuid(D3DKMT_OPENADAPTERFROMLUID *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    NTSTATUS st = STATUS_INVALID_PARAMETER;
    uint32_t i;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    for (i = 0; i < rt->adapter_count; i++) {
        struct d3dkmt_adapter *ad = &rt->adapters[i];
        if (ad->live && ad->luid.LowPart == args->AdapterLuid.LowPart &&
            ad->luid.HighPart == args->AdapterLuid.HighPart) {
            st = open_adapter_handle(rt, ad, &args->hAdapter);
            break;
        }
    }
    UNLOCK(rt);
    return st;
}

NTSTATUS D3DKMTCloseAdapter(const D3DKMT_CLOSEADAPTER *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    NTSTATUS st = STATUS_INVALID_PARAMETER;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    if (adapter_of(rt, args->hAdapter)) {
        d3dkmt_remove(rt, args->hAdapter);
        st = STATUS_SUCCESS;
    }
    UNLOCK(rt);
    return st;
}

static uint32_t driver_version(uint32_t wddm)
{
    return ((wddm >> 12) & 0xFu) * 1000u + ((wddm >> 8) & 0xFu) * 100u;
}

/* Sums of the adapter's segments, as Microsoft's 'Calculating graphics
 * memory' page adds them up.  The segment groups are what the budgets
 * (D3DKMTQueryVideoMemoryInfo) divide: LocalMemory the memory segments,
 * NonLocalMemory the system memory the non-local group's allocations
 * live in (its commit limit; the aperture is a window onto it, not more
 * of it), so no budget exceeds its group (docs/DECISIONS.md D74). */
static NTSTATUS segment_sums(struct d3dkmt_adapter *ad, D3DKMT_SEGMENTGROUPSIZEINFO *out)
{
    struct vidmm_adapter_info ai;
    uint64_t aperture = 0, system_limit = 0;
    vidmm_status st;
    uint32_t id;
    memset(out, 0, sizeof *out);
    st = ad->be->adapter_query_info(ad, &ai);
    if (st < 0)
        return d3dkmt_nt(st);
    for (id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        st = ad->be->segment_query(ad, id, &si);
        if (st < 0)
            return d3dkmt_nt(st);
        switch (si.kind) {
        case VIDMM_SEGMENT_KIND_SYSTEM:
            system_limit = si.size;
            break;
        case VIDMM_SEGMENT_KIND_MEMORY:
            if (si.flags & VIDMM_SEGMENT_POPULATED_FROM_SYSTEM)
                out->LegacyInfo.DedicatedSystemMemorySize += si.size;
            else
                out->LegacyInfo.DedicatedVideoMemorySize += si.size;
            if (si.flags & VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP)
                out->NonLocalMemory += si.size;
            else
                out->LocalMemory += si.size;
            break;
        case VIDMM_SEGMENT_KIND_APERTURE:
        case VIDMM_SEGMENT_KIND_AGP:
            aperture += si.commit_limit;
            break;
        }
    }
    if (ai.aperture_segment_commit_limit && ai.aperture_segment_commit_limit < aperture)
        aperture = ai.aperture_segment_commit_limit;
    if (system_limit && aperture > system_limit)
        aperture = system_limit;
    out->LegacyInfo.SharedSystemMemorySize = aperture;
    out->NonLocalMemory += system_limit;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTQueryAdapterInfo(const D3DKMT_QUERYADAPTERINFO *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad;
    struct vidmm_adapter_info ai;
    vidmm_status vs;
    size_t need;
    if (!args || !rt || !args->pPrivateDriverData)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    ad = adapter_of(rt, args->hAdapter);
    UNLOCK(rt);
    if (!ad)
        return STATUS_INVALID_PARAMETER;
    switch (args->Type) {
    case KMTQAITYPE_CHECKDRIVERUPDATESTATUS:
        need = sizeof(BOOL);
        break;
    case KMTQAITYPE_DRIVERVERSION:
        need = sizeof(D3DKMT_DRIVERVERSION);
        break;
    case KMTQAITYPE_GETSEGMENTSIZE:
        need = sizeof(D3DKMT_SEGMENTSIZEINFO);
        break;
    case KMTQAITYPE_GETSEGMENTGROUPSIZE:
        need = sizeof(D3DKMT_SEGMENTGROUPSIZEINFO);
        break;
    case KMTQAITYPE_ADAPTERTYPE:
        need = sizeof(D3DKMT_ADAPTERTYPE);
        break;
    case KMTQAITYPE_WDDM_2_0_CAPS:
        need = sizeof(D3DKMT_WDDM_2_0_CAPS);
        break;
    case KMTQAITYPE_PHYSICALADAPTERCOUNT:
        need = sizeof(UINT);
        break;
    default:
        return STATUS_NOT_SUPPORTED;
    }
    if (args->PrivateDriverDataSize != need)
        return STATUS_INVALID_PARAMETER;
    vs = ad->be->adapter_query_info(ad, &ai);
    if (vs < 0)
        return d3dkmt_nt(vs);
    switch (args->Type) {
    case KMTQAITYPE_CHECKDRIVERUPDATESTATUS:
        *(BOOL *)args->pPrivateDriverData = 0;
        return STATUS_SUCCESS;
    case KMTQAITYPE_DRIVERVERSION:
        *(D3DKMT_DRIVERVERSION *)args->pPrivateDriverData = (D3DKMT_DRIVERVERSION)driver_version(ai.wddm_version);
        return STATUS_SUCCESS;
    case KMTQAITYPE_GETSEGMENTSIZE: {
        D3DKMT_SEGMENTGROUPSIZEINFO g;
        NTSTATUS st = segment_sums(ad, &g);
        if (st == STATUS_SUCCESS)
            memcpy(args->pPrivateDriverData, &g.LegacyInfo, sizeof g.LegacyInfo);
        return st;
    }
    case KMTQAITYPE_GETSEGMENTGROUPSIZE: {
        D3DKMT_SEGMENTGROUPSIZEINFO g, *out = args->pPrivateDriverData;
        NTSTATUS st;
        if (out->PhysicalAdapterIndex != 0)
            return STATUS_INVALID_PARAMETER;
        st = segment_sums(ad, &g);
        if (st == STATUS_SUCCESS)
            *out = g;
        return st;
    }
    case KMTQAITYPE_ADAPTERTYPE: {
        D3DKMT_ADAPTERTYPE t;
        memset(&t, 0, sizeof t);
        t.RenderSupported = 1;
        *(D3DKMT_ADAPTERTYPE *)args->pPrivateDriverData = t;
        return STATUS_SUCCESS;
    }
    case KMTQAITYPE_WDDM_2_0_CAPS: {
        D3DKMT_WDDM_2_0_CAPS c;
        memset(&c, 0, sizeof c);
        c.GpuMmuSupported = (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? 1u : 0u;
        c.IoMmuSupported = (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? 1u : 0u;
        *(D3DKMT_WDDM_2_0_CAPS *)args->pPrivateDriverData = c;
        return STATUS_SUCCESS;
    }
    case KMTQAITYPE_PHYSICALADAPTERCOUNT:
        *(UINT *)args->pPrivateDriverData = 1;
        return STATUS_SUCCESS;
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

/* ---- budgets -------------------------------------------------------------- */

static NTSTATUS budget_target(struct d3dkmt_runtime *rt, HANDLE process, D3DKMT_HANDLE adapter, UINT index,
                              D3DKMT_MEMORY_SEGMENT_GROUP group, struct d3dkmt_adapter **out)
{
    if (process != NULL && process != D3DKMT_CURRENT_PROCESS)
        return STATUS_INVALID_HANDLE;
    LOCK(rt);
    *out = adapter_of(rt, adapter);
    UNLOCK(rt);
    if (!*out || index != 0 ||
        (group != D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL && group != D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL))
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTQueryVideoMemoryInfo(D3DKMT_QUERYVIDEOMEMORYINFO *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct vidmm_video_memory_info mi;
    struct d3dkmt_adapter *ad;
    vidmm_status vs;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    st = budget_target(rt, args->hProcess, args->hAdapter, args->PhysicalAdapterIndex, args->MemorySegmentGroup, &ad);
    if (st != STATUS_SUCCESS)
        return st;
    vs = ad->be->query_video_memory_info(ad, ad->process, (enum vidmm_segment_group)args->MemorySegmentGroup,
                                         &mi);
    if (vs < 0)
        return d3dkmt_nt(vs);
    args->Budget = mi.budget;
    args->CurrentUsage = mi.current_usage;
    args->CurrentReservation = mi.current_reservation;
    args->AvailableForReservation = mi.available_for_reservation;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTChangeVideoMemoryReservation(const D3DKMT_CHANGEVIDEOMEMORYRESERVATION *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_adapter *ad;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    st = budget_target(rt, args->hProcess, args->hAdapter, args->PhysicalAdapterIndex, args->MemorySegmentGroup, &ad);
    if (st != STATUS_SUCCESS)
        return st;
    return d3dkmt_nt(ad->be->change_video_memory_reservation(
        ad, ad->process, (enum vidmm_segment_group)args->MemorySegmentGroup, args->Reservation));
}
