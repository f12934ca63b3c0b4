/*
 * device.c - devices and contexts inside a process.
 *
 * A device hangs off its process (a doubly linked list), a context off
 * its device.  Both are reached through typed handle tables of the
 * adapter (core/objtab.c).  A virtual-mode context on a GpuMmu adapter
 * gets the process's root page table bound to it through the driver's
 * set_root_page_table, with the context handle as the token the driver
 * gives back in page-fault reports; the process keeps its own binding
 * (token = process handle) for accesses that name no context.
 *
 * A fault report names a token.  A context token puts that context's
 * device in the error state; a process token puts every device of the
 * process there (the GPU could not say which one ran).  Either way the
 * process records the fault, and its VA changes answer DEVICE_LOST
 * (process.c): the address space is shared by its devices, so it is the
 * unit of error for VA changes (docs/DECISIONS.md D19).
 *
 * Locking: the context table is read by fault reports, which may come
 * from a driver thread, so contexts are added, removed and looked up
 * under the fence lock, and the error fields are written under it.
 */
#include "handle/lookup.h"
#include "model/objects.h"
#include "device/device.h"
#include "mmu/mmu.h"
#include "process/process.h"
#include "residency/residency.h"
#include "submit/submit.h"

#include <stdio.h>
#include <string.h>

static int dev_lost(struct vidmm_adapter *a, const struct vidmm_device *d)
{
    pthread_mutex_lock(&a->fence_lock);
    int lost = d->lost;
    pthread_mutex_unlock(&a->fence_lock);
    return lost;
}

static vidmm_status device_create(struct vidmm_adapter *a, vidmm_handle process, vidmm_handle *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    *out = VIDMM_HANDLE_NULL;
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, process, &p);
    if (st < 0)
        return st;
    struct vidmm_device *d = vidmm_hzalloc(a->ha, VIDMM_SITE_DEVICE_OBJECT, sizeof(*d), _Alignof(struct vidmm_device));
    if (!d)
        return VIDMM_E_NO_HOST_MEMORY;
    st = vidmm_objtab_add(&a->devices, a->ha, d, &d->self);
    if (st < 0) {
        vidmm_hfree(a->ha, d, sizeof(*d), _Alignof(struct vidmm_device));
        return st;
    }
    d->process = p;
    /* Under the fence lock: a fault report for the process token walks the
     * list from the driver's thread (vidmm_device_fault_locked). */
    pthread_mutex_lock(&a->fence_lock);
    d->next = p->devices;
    if (p->devices)
        p->devices->prev = d;
    p->devices = d;
    pthread_mutex_unlock(&a->fence_lock);
    if (!p->device_count++)
        a->processes_with_devices++;
    *out = d->self;
    return VIDMM_OK;
}

static void context_free(struct vidmm_adapter *a, struct vidmm_context *c)
{
    struct vidmm_device *d = c->device;
    vidmm_submit_context_gone(a, c);   /* its submitted work finishes first */
    if (c->root_bound)
        vidmm_process_bind_root(a, d->process, c->self, 0);
    pthread_mutex_lock(&a->fence_lock);
    vidmm_objtab_remove(&a->contexts, c->self);
    pthread_mutex_unlock(&a->fence_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        d->contexts = c->next;
    if (c->next)
        c->next->prev = c->prev;
    d->context_count--;
    vidmm_hfree(a->ha, c, sizeof(*c), _Alignof(struct vidmm_context));
}

static void device_free(struct vidmm_adapter *a, struct vidmm_device *d)
{
    while (d->contexts)
        context_free(a, d->contexts);
    vidmm_residency_device_gone(a, d);
    struct vidmm_process *p = d->process;
    pthread_mutex_lock(&a->fence_lock);   /* see device_create */
    if (d->prev)
        d->prev->next = d->next;
    else
        p->devices = d->next;
    if (d->next)
        d->next->prev = d->prev;
    pthread_mutex_unlock(&a->fence_lock);
    if (!--p->device_count)
        a->processes_with_devices--;
    vidmm_objtab_remove(&a->devices, d->self);
    vidmm_hfree(a->ha, d, sizeof(*d), _Alignof(struct vidmm_device));
}

static vidmm_status device_destroy(struct vidmm_adapter *a, vidmm_handle device)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_device *d;
    vidmm_status st = vidmm_device_lookup(a, device, &d);
    if (st < 0)
        return st;
    device_free(a, d);
    return VIDMM_OK;
}

void vidmm_device_destroy_all(struct vidmm_adapter *a, struct vidmm_process *p)
{
    while (p->devices)
        device_free(a, p->devices);
}

static vidmm_status device_query(const struct vidmm_adapter *a, vidmm_handle device, struct vidmm_device_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    struct vidmm_device *d;
    vidmm_status st = vidmm_device_lookup(a, device, &d);
    if (st < 0)
        return st;
    memset(out, 0, sizeof(*out));
    out->process = d->process->self;
    out->contexts = d->context_count;
    pthread_mutex_t *lock = (pthread_mutex_t *)&a->fence_lock;
    pthread_mutex_lock(lock);
    out->lost = (uint32_t)d->lost;
    out->faults = d->faults;
    out->fault_va = d->fault_va;
    out->fault_flags = d->fault_flags;
    out->reset_status = d->reset_status;
    out->resets = d->resets;
    pthread_mutex_unlock(lock);
    return VIDMM_OK;
}

static vidmm_status context_create(struct vidmm_adapter *a, vidmm_handle device, const struct vidmm_context_desc *desc,
                                  vidmm_handle *out)
{
    if (!a || !desc || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !desc ? "desc is NULL" : "context is NULL");
    *out = VIDMM_HANDLE_NULL;
    struct vidmm_device *d;
    vidmm_status st = vidmm_device_lookup(a, device, &d);
    if (st < 0)
        return st;
    uint32_t nodes = a->caps.node_count ? a->caps.node_count : 1;
    if (desc->node >= nodes)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "node %u: the adapter has %u engine nodes", desc->node, nodes);
    if (desc->mode > VIDMM_CONTEXT_PHYSICAL || desc->flags || desc->reserved)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "mode %u, flags 0x%x, reserved %u: mode VIRTUAL or PHYSICAL, the rest 0",
                          desc->mode, desc->flags, desc->reserved);
    if (desc->mode == VIDMM_CONTEXT_VIRTUAL && !a->has_gpummu && !d->process->iommu)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "a virtual context needs a GpuMmu or IoMmu adapter");
    if (dev_lost(a, d))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "device 0x%llx is lost", (unsigned long long)device);
    struct vidmm_context *c = vidmm_hzalloc(a->ha, VIDMM_SITE_CONTEXT_OBJECT, sizeof(*c), _Alignof(struct vidmm_context));
    if (!c)
        return VIDMM_E_NO_HOST_MEMORY;
    pthread_mutex_lock(&a->fence_lock);
    st = vidmm_objtab_add(&a->contexts, a->ha, c, &c->self);
    pthread_mutex_unlock(&a->fence_lock);
    if (st < 0) {
        vidmm_hfree(a->ha, c, sizeof(*c), _Alignof(struct vidmm_context));
        return st;
    }
    c->device = d;
    c->node = desc->node;
    c->mode = desc->mode;
    c->next = d->contexts;
    if (d->contexts)
        d->contexts->prev = c;
    d->contexts = c;
    d->context_count++;
    if (c->mode == VIDMM_CONTEXT_VIRTUAL && vidmm_pt_root(d->process)) {
        vidmm_process_bind_root(a, d->process, c->self, 1);
        c->root_bound = a->ops.set_root_page_table != NULL;
    }
    *out = c->self;
    return VIDMM_OK;
}

void vidmm_process_rebind_root(struct vidmm_adapter *a, struct vidmm_process *p)
{
    vidmm_process_bind_root(a, p, p->self, 1);
    for (struct vidmm_device *d = p->devices; d; d = d->next)
        for (struct vidmm_context *c = d->contexts; c; c = c->next)
            if (c->root_bound)
                vidmm_process_bind_root(a, p, c->self, 1);
}

static vidmm_status context_destroy(struct vidmm_adapter *a, vidmm_handle context)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_context *c;
    vidmm_status st = vidmm_context_lookup(a, context, &c);
    if (st < 0)
        return st;
    context_free(a, c);
    return VIDMM_OK;
}

static vidmm_status context_query(const struct vidmm_adapter *a, vidmm_handle context, struct vidmm_context_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    struct vidmm_context *c;
    vidmm_status st = vidmm_context_lookup((struct vidmm_adapter *)a, context, &c);   /* the lock is not state */
    if (st < 0)
        return st;
    memset(out, 0, sizeof(*out));
    out->device = c->device->self;
    out->process = c->device->process->self;
    out->node = c->node;
    out->mode = c->mode;
    out->root_bound = (uint32_t)c->root_bound;
    return VIDMM_OK;
}

static void mark_lost(struct vidmm_device *d, uint64_t va, uint32_t flags)
{
    if (!d->lost) {
        d->lost = 1;
        d->fault_va = va;
        d->fault_flags = flags;
        /* The faulted buffer was stopped: an engine reset of that buffer
         * (WDDM resets the engine at a fault), the device guilty. */
        d->reset_status = VIDMM_RESET_GUILTY;
        d->resets++;
    }
    d->faults++;
}

struct vidmm_process *vidmm_device_fault_locked(struct vidmm_adapter *a, uint64_t token, uint64_t va, uint32_t flags)
{
    struct vidmm_context *c = vidmm_objtab_get(&a->contexts, token);
    if (c) {
        mark_lost(c->device, va, flags);
        return c->device->process;
    }
    struct vidmm_process *p = vidmm_process_get(a, token);
    if (p)
        for (struct vidmm_device *d = p->devices; d; d = d->next)
            mark_lost(d, va, flags);
    return p;
}

int vidmm_device_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    int e = 0;
    uint64_t devices = 0, contexts = 0;
    if (vidmm_objtab_check(&a->devices)) {
        e++;
        snprintf(msg, n, "device handle table inconsistent");
    }
    if (vidmm_objtab_check(&a->contexts)) {
        e++;
        snprintf(msg, n, "context handle table inconsistent");
    }
    uint32_t with_devices = 0;
    const struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        uint32_t i = vidmm_process_slot(p);
        with_devices += p->devices != NULL;
        uint32_t nd = 0;
        for (const struct vidmm_device *d = p->devices; d; d = d->next) {
            nd++;
            if (d->process != p || vidmm_objtab_get(&a->devices, d->self) != d ||
                (d->next && d->next->prev != d) || (d == p->devices && d->prev)) {
                e++;
                snprintf(msg, n, "process %u: device list broken", i);
            }
            uint32_t nc = 0;
            for (const struct vidmm_context *c = d->contexts; c; c = c->next) {
                nc++;
                if (c->device != d || vidmm_objtab_get(&a->contexts, c->self) != c ||
                    (c->next && c->next->prev != c) || (c == d->contexts && c->prev) ||
                    c->root_bound != (c->mode == VIDMM_CONTEXT_VIRTUAL && vidmm_pt_root(p) && a->ops.set_root_page_table)) {
                    e++;
                    snprintf(msg, n, "process %u: context list broken", i);
                }
            }
            if (nc != d->context_count) {
                e++;
                snprintf(msg, n, "process %u: device counts %u contexts, list holds %u", i, d->context_count, nc);
            }
            contexts += nc;
        }
        if (nd != p->device_count) {
            e++;
            snprintf(msg, n, "process %u: counts %u devices, list holds %u", i, p->device_count, nd);
        }
        devices += nd;
    }
    if (with_devices != a->processes_with_devices) {
        e++;
        snprintf(msg, n, "%u processes have devices, the adapter counts %u", with_devices, a->processes_with_devices);
    }
    if (devices != a->devices.live || contexts != a->contexts.live) {
        e++;
        snprintf(msg, n, "handle tables hold %u devices and %u contexts, processes %llu and %llu", a->devices.live,
                 a->contexts.live, (unsigned long long)devices, (unsigned long long)contexts);
    }
    return e;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_context_create(struct vidmm_adapter *a, vidmm_handle device,
                                  const struct vidmm_context_desc *desc, vidmm_handle *out)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : context_create(a, device, desc, out));
}

vidmm_status vidmm_context_destroy(struct vidmm_adapter *a, vidmm_handle context)
{
    VIDMM_ENTRY(a, context_destroy(a, context));
}

vidmm_status vidmm_context_query(const struct vidmm_adapter *a, vidmm_handle context, struct vidmm_context_info *out)
{
    VIDMM_ENTRY(a, context_query(a, context, out));
}

vidmm_status vidmm_device_create(struct vidmm_adapter *a, vidmm_handle process, vidmm_handle *out)
{
    VIDMM_ENTRY(a, device_create(a, process, out));
}

vidmm_status vidmm_device_destroy(struct vidmm_adapter *a, vidmm_handle device)
{
    VIDMM_ENTRY(a, device_destroy(a, device));
}

vidmm_status vidmm_device_query(const struct vidmm_adapter *a, vidmm_handle device, struct vidmm_device_info *out)
{
    VIDMM_ENTRY(a, device_query(a, device, out));
}
