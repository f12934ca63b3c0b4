/*
 * thunks.c - adapters, devices, paging queues, allocations, residency,
 * budgets, GPU virtual addresses, contexts and submission.
 *
 * Every thunk: NULL arguments and malformed fields first
 * (STATUS_INVALID_PARAMETER), then the handles under the runtime lock,
 * copied out; then the backend call without the lock; then the handle
 * table updated under the lock.  docs/D3DKMT.md gives each thunk's
 * statuses.
 */
#include "internal.h"

#include <string.h>

#define LOCK(rt) pthread_mutex_lock(&(rt)->lock)
#define UNLOCK(rt) pthread_mutex_unlock(&(rt)->lock)

#define MAX_ALLOCATIONS_PER_CREATE 1024u     /* D3DKMT_CREATEALLOCATION_MAX */
#define MAX_MAKE_RESIDENT 10240u             /* D3DKMT_MAKERESIDENT_ALLOC_MAX */

static struct d3dkmt_adapter *adapter_of(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h)
{
    return d3dkmt_lookup(rt, h, T_ADAPTER);
}

/* A copy of a device's identity, taken under the lock. */
struct devref {
    struct d3dkmt_adapter *ad;
    vidmm_handle vdev;
    D3DKMT_HANDLE handle;
};

static int device_ref(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *out)
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
static int alloc_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
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
static int lock_device(struct d3dkmt_runtime *rt, D3DKMT_HANDLE h, struct devref *d)
{
    LOCK(rt);
    if (device_ref(rt, h, d))
        return 1;
    UNLOCK(rt);
    return 0;
}

/* The handle-list prologue of the thunks that name allocations of one
 * device: under the lock, the device (STATUS_INVALID_PARAMETER when h
 * names none) and the n allocations of in, each of that device
 * (STATUS_INVALID_HANDLE otherwise), translated into out; the lock is
 * released either way. */
static NTSTATUS device_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                               struct devref *d, vidmm_handle *out)
{
    int ok;
    if (!lock_device(rt, device, d))
        return STATUS_INVALID_PARAMETER;
    ok = alloc_handles(rt, d->handle, in, n, out);
    UNLOCK(rt);
    return ok ? STATUS_SUCCESS : STATUS_INVALID_HANDLE;
}

/* device_handles into a list of n handles allocated here first
 * (STATUS_NO_MEMORY).  On success the caller frees *list with
 * d3dkmt_free(rt, *list, n * sizeof **list); on failure it is freed. */
static NTSTATUS device_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, const D3DKMT_HANDLE *in, uint32_t n,
                            struct devref *d, vidmm_handle **list)
{
    NTSTATUS st;
    *list = d3dkmt_alloc(rt, n * sizeof **list);
    if (!*list)
        return STATUS_NO_MEMORY;
    st = device_handles(rt, device, in, n, d, *list);
    if (st != STATUS_SUCCESS) {
        d3dkmt_free(rt, *list, n * sizeof **list);
        *list = NULL;
    }
    return st;
}

/* A paging queue's identity, taken under the lock. */
struct queueref {
    struct d3dkmt_adapter *ad;
    vidmm_handle vq;
    vidmm_handle vdev;      /* its device's (0 if the device went) */
};

/* The prologue of the thunks that name allocations through a paging
 * queue: under the lock, the queue and the n allocations of in, each of
 * the queue's device, translated into out; STATUS_INVALID_HANDLE when
 * either is wrong.  The lock is released either way. */
static NTSTATUS queue_handles(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                              struct queueref *q, vidmm_handle *out)
{
    struct d3dkmt_queue *pq;
    int ok;
    LOCK(rt);
    pq = d3dkmt_lookup(rt, queue, T_QUEUE);
    ok = pq && alloc_handles(rt, pq->o.device, in, n, out);
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
static NTSTATUS queue_list(struct d3dkmt_runtime *rt, D3DKMT_HANDLE queue, const D3DKMT_HANDLE *in, uint32_t n,
                           struct queueref *q, vidmm_handle **list)
{
    NTSTATUS st;
    *list = d3dkmt_alloc(rt, n * sizeof **list);
    if (!*list)
        return STATUS_NO_MEMORY;
    st = queue_handles(rt, queue, in, n, q, *list);
    if (st != STATUS_SUCCESS) {
        d3dkmt_free(rt, *list, n * sizeof **list);
        *list = NULL;
    }
    return st;
}

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

/* Takes the device and everything it owns out of the table, then
 * destroys them in the backend: allocations (unlocked first), then the
 * device (its queues and contexts go with it). */
struct doomed {
    vidmm_handle vh;
    uint32_t locks;
};

/* Allocations leave the table under the lock; the backend destroys
 * them after it (never call the backend holding rt->lock). */
static void destroy_doomed(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, vidmm_handle vdev,
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
    destroy_doomed(rt, ad, vdev, list, n);
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
    if (!lock_device(rt, args->hDevice, &d))
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
    if (!lock_device(rt, args->hDevice, &d))
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
    if (!lock_device(rt, args->hDevice, &d))
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
    destroy_doomed(rt, d.ad, d.vdev, list, args->AllocationCount);
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
    st = device_handles(rt, args->hDevice, &args->hAllocation, 1, &d, &va);
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
    if (!lock_device(rt, args->hDevice, &d))
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
    st = queue_list(rt, args->hPagingQueue, args->AllocationList, n, &q, &list);
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
    st = device_list(rt, args->hDevice, args->AllocationList, n, &d, &list);
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
    st = device_list(rt, args->hDevice, args->phAllocationList, n, &d, &list);
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
    st = device_list(rt, args->hDevice, args->HandleList, n, &d, &list);
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
    st = queue_list(rt, args->hPagingQueue, args->HandleList, n, &q, &list);
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
    st = queue_handles(rt, args->hPagingQueue, &args->hAllocation, 1, &q, &alloc);
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

/* sync.c: wait until a fence object reaches a value. */
NTSTATUS d3dkmt_wait_one(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, D3DKMT_HANDLE sync, uint64_t value);

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
    if (!device_ref(rt, args->hDevice, &d)) {
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
            if (!alloc_handles(rt, d.handle, &in->Map.hAllocation, 1, &op->allocation))
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
    if (!lock_device(rt, args->hDevice, &d))
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
