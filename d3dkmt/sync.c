/*
 * sync.c - monitored fences (created ones and the paging queues'),
 * CPU signal and wait, GPU signal after a submission, and trim
 * notifications.
 *
 * A monitored fence's value lives in host memory (its
 * FenceValueCPUVirtualAddress).  A CPU signal writes it; a GPU signal
 * (D3DKMTSignalSynchronizationObjectFromGpu) is queued behind the
 * context's last submission and written once that submission's context
 * fence has passed - seen by any thunk that reads the fence (waits
 * poll every millisecond).  A paging queue's fence is the backend's
 * paging-queue fence, copied to its CPU address when read.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define LOCK(rt) pthread_mutex_lock(&(rt)->lock)
#define UNLOCK(rt) pthread_mutex_unlock(&(rt)->lock)

NTSTATUS d3dkmt_wait_one(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, D3DKMT_HANDLE sync, uint64_t value);

NTSTATUS d3dkmt_sync_create_locked(struct d3dkmt_runtime *rt, struct d3dkmt_adapter *ad, D3DKMT_HANDLE device,
                                   uint32_t kind, vidmm_handle queue, uint64_t initial, D3DKMT_HANDLE *out)
{
    struct d3dkmt_sync *s = d3dkmt_alloc(rt, sizeof *s);
    NTSTATUS st;
    if (!s)
        return STATUS_NO_MEMORY;
    s->cpu_value = d3dkmt_alloc(rt, sizeof *s->cpu_value);
    if (!s->cpu_value) {
        d3dkmt_free(rt, s, sizeof *s);
        return STATUS_NO_MEMORY;
    }
    s->o.type = T_SYNC;
    s->o.adapter = ad;
    s->o.device = device;
    s->o.vh = queue;
    s->kind = kind;
    *s->cpu_value = initial;
    st = d3dkmt_insert(rt, T_SYNC, s, out);
    if (st != STATUS_SUCCESS)
        d3dkmt_obj_free(rt, s);
    return st;
}

/* Bring a fence's value up to date; *value receives it.  0 when the
 * handle is not a fence of device (device 0: any). */
static int sync_read(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, D3DKMT_HANDLE h, uint64_t *value)
{
    struct d3dkmt_pending local[16];
    struct d3dkmt_sync *s;
    uint32_t i, n;
    LOCK(rt);
    s = d3dkmt_lookup(rt, h, T_SYNC);
    if (!s || (device && s->o.device != device)) {
        UNLOCK(rt);
        return 0;
    }
    if (s->kind == SYNC_PAGING) {
        struct d3dkmt_adapter *ad = s->o.adapter;
        vidmm_handle q = s->o.vh;
        uint64_t v = 0;
        UNLOCK(rt);
        if (ad->be->paging_queue_fence(ad, q, &v) < 0)
            return 0;
        LOCK(rt);
        s = d3dkmt_lookup(rt, h, T_SYNC);
        if (s && v > *s->cpu_value)
            *s->cpu_value = v;
        *value = s ? *s->cpu_value : v;
        UNLOCK(rt);
        return 1;
    }
    n = s->npending < 16u ? s->npending : 16u;
    if (n)   /* memcpy's source may not be NULL even for 0 bytes */
        memcpy(local, s->pending, n * sizeof *local);
    UNLOCK(rt);
    for (i = 0; i < n; i++) {
        uint64_t submitted = 0, completed = 0;
        vidmm_status vs = local[i].adapter->be->context_fence(local[i].adapter, local[i].ctx, &submitted,
                                                              &completed);
        /* A context destroyed since has finished its work. */
        local[i].ctx_fence = (vs < 0 || completed >= local[i].ctx_fence) ? 0 : local[i].ctx_fence;
    }
    LOCK(rt);
    s = d3dkmt_lookup(rt, h, T_SYNC);
    if (!s) {
        UNLOCK(rt);
        return 0;
    }
    for (i = 0; i < n; i++) {
        uint32_t j;
        if (local[i].ctx_fence != 0)
            continue;
        for (j = 0; j < s->npending; j++) {
            if (s->pending[j].seq == local[i].seq) {
                if (local[i].value > *s->cpu_value)
                    *s->cpu_value = local[i].value;
                s->pending[j] = s->pending[--s->npending];
                break;
            }
        }
    }
    *value = *s->cpu_value;
    UNLOCK(rt);
    return 1;
}

NTSTATUS D3DKMTCreateSynchronizationObject2(D3DKMT_CREATESYNCHRONIZATIONOBJECT2 *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_obj *dev;
    struct d3dkmt_sync *s;
    NTSTATUS st;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->Info.Type < D3DDDI_SYNCHRONIZATION_MUTEX || args->Info.Type >= D3DDDI_SYNCHRONIZATION_TYPE_LIMIT)
        return STATUS_INVALID_PARAMETER;
    if (args->Info.Type != D3DDDI_MONITORED_FENCE || args->Info.Flags.Shared || args->Info.Flags.NtSecuritySharing ||
        args->Info.Flags.CrossAdapter)
        return STATUS_NOT_SUPPORTED;
    LOCK(rt);
    dev = d3dkmt_lookup(rt, args->hDevice, T_DEVICE);
    if (!dev) {
        UNLOCK(rt);
        return STATUS_INVALID_PARAMETER;
    }
    st = d3dkmt_sync_create_locked(rt, dev->adapter, dev->handle, SYNC_MONITORED, 0,
                                   args->Info.MonitoredFence.InitialFenceValue, &args->hSyncObject);
    if (st == STATUS_SUCCESS) {
        s = d3dkmt_lookup(rt, args->hSyncObject, T_SYNC);
        args->Info.MonitoredFence.FenceValueCPUVirtualAddress = s->cpu_value;
        args->Info.MonitoredFence.FenceValueGPUVirtualAddress = 0;
    }
    UNLOCK(rt);
    return st;
}

NTSTATUS D3DKMTDestroySynchronizationObject(const D3DKMT_DESTROYSYNCHRONIZATIONOBJECT *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_sync *s;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    s = d3dkmt_lookup(rt, args->hSyncObject, T_SYNC);
    if (!s) {
        UNLOCK(rt);
        return STATUS_INVALID_HANDLE;
    }
    if (s->kind == SYNC_PAGING) {
        /* The paging queue owns it. */
        UNLOCK(rt);
        return STATUS_INVALID_PARAMETER;
    }
    d3dkmt_remove(rt, s->o.handle);
    d3dkmt_obj_free(rt, s);
    UNLOCK(rt);
    pthread_cond_broadcast(&rt->fence_cv);
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTSignalSynchronizationObjectFromCpu(const D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    uint32_t i;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->ObjectCount == 0 || !args->ObjectHandleArray || !args->FenceValueArray || args->Flags.Reserved ||
        args->Flags.EnqueueCpuEvent)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    if (!d3dkmt_lookup(rt, args->hDevice, T_DEVICE)) {
        UNLOCK(rt);
        return STATUS_INVALID_PARAMETER;
    }
    for (i = 0; i < args->ObjectCount; i++) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->ObjectHandleArray[i], T_SYNC);
        if (!s || s->o.device != args->hDevice) {
            UNLOCK(rt);
            return STATUS_INVALID_HANDLE;
        }
        if (s->kind != SYNC_MONITORED ||
            (args->FenceValueArray[i] < *s->cpu_value && !args->Flags.AllowFenceRewind)) {
            UNLOCK(rt);
            return STATUS_INVALID_PARAMETER;
        }
    }
    for (i = 0; i < args->ObjectCount; i++) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->ObjectHandleArray[i], T_SYNC);
        *s->cpu_value = args->FenceValueArray[i];
    }
    pthread_cond_broadcast(&rt->fence_cv);
    UNLOCK(rt);
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTSignalSynchronizationObjectFromGpu(const D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_context *c;
    uint32_t i;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->ObjectCount == 0 || !args->ObjectHandleArray || !args->MonitoredFenceValueArray)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    c = d3dkmt_lookup(rt, args->hContext, T_CONTEXT);
    if (!c) {
        UNLOCK(rt);
        return STATUS_INVALID_HANDLE;
    }
    for (i = 0; i < args->ObjectCount; i++) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->ObjectHandleArray[i], T_SYNC);
        if (!s || s->o.device != c->o.device) {
            UNLOCK(rt);
            return STATUS_INVALID_HANDLE;
        }
        if (s->kind != SYNC_MONITORED) {
            UNLOCK(rt);
            return STATUS_INVALID_PARAMETER;
        }
    }
    for (i = 0; i < args->ObjectCount; i++) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->ObjectHandleArray[i], T_SYNC);
        uint64_t v = args->MonitoredFenceValueArray[i];
        if (c->last_fence == 0) {
            if (v > *s->cpu_value)
                *s->cpu_value = v;
            continue;
        }
        if (s->npending == s->cap) {
            uint32_t ncap = s->cap ? s->cap * 2u : 4u;
            struct d3dkmt_pending *np = d3dkmt_alloc(rt, ncap * sizeof *np);
            if (!np) {
                UNLOCK(rt);
                return STATUS_NO_MEMORY;
            }
            if (s->pending)
                memcpy(np, s->pending, s->npending * sizeof *np);
            d3dkmt_free(rt, s->pending, s->cap * sizeof *np);
            s->pending = np;
            s->cap = ncap;
        }
        s->pending[s->npending].seq = rt->next_seq++;
        s->pending[s->npending].adapter = c->o.adapter;
        s->pending[s->npending].ctx = c->o.vh;
        s->pending[s->npending].ctx_fence = c->last_fence;
        s->pending[s->npending].value = v;
        s->npending++;
    }
    pthread_cond_broadcast(&rt->fence_cv);
    UNLOCK(rt);
    return STATUS_SUCCESS;
}

static void nap(struct d3dkmt_runtime *rt)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    LOCK(rt);
    (void)pthread_cond_timedwait(&rt->fence_cv, &rt->lock, &ts);
    UNLOCK(rt);
}

NTSTATUS d3dkmt_wait_one(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device, D3DKMT_HANDLE sync, uint64_t value)
{
    for (;;) {
        uint64_t v = 0;
        if (!sync_read(rt, device, sync, &v))
            return STATUS_INVALID_HANDLE;
        if (v >= value)
            return STATUS_SUCCESS;
        nap(rt);
    }
}

NTSTATUS D3DKMTWaitForSynchronizationObjectFromCpu(const D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    uint32_t i;
    int ok;
    if (!args || !rt)
        return STATUS_INVALID_PARAMETER;
    if (args->ObjectCount == 0 || !args->ObjectHandleArray || !args->FenceValueArray || args->Flags.Reserved)
        return STATUS_INVALID_PARAMETER;
    if (args->hAsyncEvent)
        return STATUS_NOT_SUPPORTED;
    LOCK(rt);
    ok = d3dkmt_lookup(rt, args->hDevice, T_DEVICE) != NULL;
    for (i = 0; ok && i < args->ObjectCount; i++) {
        struct d3dkmt_sync *s = d3dkmt_lookup(rt, args->ObjectHandleArray[i], T_SYNC);
        if (!s || s->o.device != args->hDevice) {
            UNLOCK(rt);
            return STATUS_INVALID_HANDLE;
        }
    }
    UNLOCK(rt);
    if (!ok)
        return STATUS_INVALID_PARAMETER;
    for (;;) {
        uint32_t reached = 0;
        for (i = 0; i < args->ObjectCount; i++) {
            uint64_t v = 0;
            if (!sync_read(rt, args->hDevice, args->ObjectHandleArray[i], &v))
                return STATUS_INVALID_HANDLE;
            reached += v >= args->FenceValueArray[i] ? 1u : 0u;
        }
        if (reached == args->ObjectCount || (args->Flags.WaitAny && reached > 0))
            return STATUS_SUCCESS;
        nap(rt);
    }
}

/* ---- trim notifications -------------------------------------------------- */

#define MAX_CALLBACKS_PER_NOTIFICATION 16u

void d3dkmt_trim_trampoline(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct d3dkmt_adapter *ad = context;
    struct d3dkmt_runtime *rt = ad->rt, *saved;
    struct d3dkmt_trim_reg local[MAX_CALLBACKS_PER_NOTIFICATION];
    uint32_t i, n = 0;
    LOCK(rt);
    for (i = 0; i < rt->nregs && n < MAX_CALLBACKS_PER_NOTIFICATION; i++)
        if (rt->regs[i].adapter == ad && rt->regs[i].vdev == device)
            local[n++] = rt->regs[i];
    UNLOCK(rt);
    /* The callback may call thunks: they act on the device's runtime. */
    saved = d3dkmt_thread_bound();
    d3dkmt_runtime_bind_thread(rt);
    for (i = 0; i < n; i++) {
        D3DKMT_TRIMNOTIFICATION tn;
        memset(&tn, 0, sizeof tn);
        tn.Context = local[i].context;
        tn.Flags.PeriodicTrim = (flags & VIDMM_TRIM_PERIODIC) ? 1u : 0u;
        tn.Flags.TrimToBudget = (flags & VIDMM_TRIM_TO_BUDGET) ? 1u : 0u;
        tn.NumBytesToTrim = bytes_to_trim;
        local[i].callback(&tn);
    }
    d3dkmt_runtime_bind_thread(saved);
}

void d3dkmt_regs_drop_device(struct d3dkmt_runtime *rt, D3DKMT_HANDLE device)
{
    uint32_t i = 0;
    while (i < rt->nregs) {
        if (rt->regs[i].device == device)
            rt->regs[i] = rt->regs[--rt->nregs];
        else
            i++;
    }
}

NTSTATUS D3DKMTRegisterTrimNotification(D3DKMT_REGISTERTRIMNOTIFICATION *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_obj *dev;
    struct d3dkmt_adapter *ad;
    struct d3dkmt_trim_reg *r;
    vidmm_handle vdev;
    int first = 1;
    uintptr_t id;
    uint32_t i;
    vidmm_status vs;
    if (!args || !rt || !args->Callback)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    dev = d3dkmt_lookup(rt, args->hDevice, T_DEVICE);
    if (!dev || dev->adapter->luid.LowPart != args->AdapterLuid.LowPart ||
        dev->adapter->luid.HighPart != args->AdapterLuid.HighPart) {
        UNLOCK(rt);
        return STATUS_INVALID_PARAMETER;
    }
    ad = dev->adapter;
    vdev = dev->vh;
    for (i = 0; i < rt->nregs; i++)
        if (rt->regs[i].device == args->hDevice)
            first = 0;
    if (rt->nregs == rt->regs_cap) {
        uint32_t ncap = rt->regs_cap ? rt->regs_cap * 2u : 8u;
        struct d3dkmt_trim_reg *nr = d3dkmt_alloc(rt, ncap * sizeof *nr);
        if (!nr) {
            UNLOCK(rt);
            return STATUS_NO_MEMORY;
        }
        if (rt->regs)
            memcpy(nr, rt->regs, rt->nregs * sizeof *nr);
        d3dkmt_free(rt, rt->regs, rt->regs_cap * sizeof *nr);
        rt->regs = nr;
        rt->regs_cap = ncap;
    }
    id = rt->next_reg_id++;
    r = &rt->regs[rt->nregs++];
    r->id = id;
    r->adapter = ad;
    r->vdev = vdev;
    r->device = args->hDevice;
    r->callback = args->Callback;
    r->context = args->Context;
    UNLOCK(rt);
    if (first) {
        vs = ad->be->register_trim_notification(ad, vdev, d3dkmt_trim_trampoline, ad);
        if (vs < 0) {
            LOCK(rt);
            for (i = 0; i < rt->nregs; i++)
                if (rt->regs[i].id == id)
                    rt->regs[i] = rt->regs[--rt->nregs];
            UNLOCK(rt);
            return d3dkmt_nt(vs);
        }
    }
    args->Handle = (void *)id;
    return STATUS_SUCCESS;
}

NTSTATUS D3DKMTUnregisterTrimNotification(D3DKMT_UNREGISTERTRIMNOTIFICATION *args)
{
    struct d3dkmt_runtime *rt = d3dkmt_rt();
    struct d3dkmt_trim_reg gone[MAX_CALLBACKS_PER_NOTIFICATION];
    uint32_t i = 0, j, ngone = 0;
    if (!args || !rt || !args->Callback)
        return STATUS_INVALID_PARAMETER;
    LOCK(rt);
    while (i < rt->nregs) {
        struct d3dkmt_trim_reg *r = &rt->regs[i];
        if (r->callback == args->Callback && (!args->Handle || (uintptr_t)args->Handle == r->id)) {
            if (ngone < MAX_CALLBACKS_PER_NOTIFICATION)
                gone[ngone++] = *r;
            *r = rt->regs[--rt->nregs];
        } else {
            i++;
        }
    }
    /* Devices left without a registration stop their notifications. */
    for (j = 0; j < ngone; j++)
        for (i = 0; i < rt->nregs; i++)
            if (rt->regs[i].device == gone[j].device)
                gone[j].vdev = 0;
    UNLOCK(rt);
    if (ngone == 0)
        return STATUS_INVALID_PARAMETER;
    for (j = 0; j < ngone; j++)
        if (gone[j].vdev)
            gone[j].adapter->be->register_trim_notification(gone[j].adapter, gone[j].vdev, NULL, NULL);
    return STATUS_SUCCESS;
}
