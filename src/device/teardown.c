/*
 * teardown.c - a process's end, and page faults.
 *
 * A process goes as WDDM tears one down: its devices (and their contexts,
 * whose work is waited for), its private allocations (docs/DECISIONS.md
 * D38), its residency references, then its page tables and VA space.
 * That order needs every layer below, so it lives here, above them
 * (docs/ARCHITECTURE.md "Layers").
 *
 * A page fault the driver reports names a context token, a process token
 * or the system paging process: the paging process only counts it; a
 * device (or every device of the process) enters the error state.
 */
#include "handle/lookup.h"
#include "model/objects.h"
#include "allocation/allocation.h"
#include "paging_process/paging_process.h"
#include "device/device.h"
#include "mmu/mmu.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"

static void process_free(struct vidmm_adapter *a, struct vidmm_process *p)
{
    vidmm_device_destroy_all(a, p);
    vidmm_allocation_destroy_private(a, p->self);   /* process exit takes its allocations (D38) */
    vidmm_residency_process_gone(a, p);
    (void)vidmm_paging_flush(a);
    vidmm_process_bind_root(a, p, p->self, 0);
    vidmm_pt_destroy(a, vidmm_pt_root(p));
    vidmm_va_space_fini(&p->vs);   /* p leaves the user lists of what it still maps */
    vidmm_process_free_users(a, p);
    vidmm_pt_process_fini(a, p);
    /* Under the fence lock: a fault report may be looking the slot up. */
    pthread_mutex_lock(&a->fence_lock);
    vidmm_objtab_remove(&a->processes, p->self);
    vidmm_process_unlist(a, p);
    pthread_mutex_unlock(&a->fence_lock);
    vidmm_hfree(a->ha, p, sizeof(*p), _Alignof(struct vidmm_process));
}

static vidmm_status process_destroy(struct vidmm_adapter *a, vidmm_handle h)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_process *p;
    vidmm_status st = vidmm_process_lookup(a, h, &p);
    if (st < 0)
        return st;
    process_free(a, p);
    return VIDMM_OK;
}

void vidmm_process_destroy_all(struct vidmm_adapter *a)
{
    while (a->process_first)
        process_free(a, a->process_first);
}

void vidmm_cb_notify_page_fault(struct vidmm_adapter *a, uint64_t context, uint64_t va, uint32_t flags)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->fence_lock);
    if (vidmm_paging_process_fault_locked(a, context, va)) {
        pthread_mutex_unlock(&a->fence_lock);
        return;   /* a paging operation faulted: counted for the paging process, no device to blame */
    }
    struct vidmm_process *p = vidmm_device_fault_locked(a, context, va, flags);
    if (!p) {
        pthread_mutex_unlock(&a->fence_lock);
        return; /* the context or process is gone: nothing to put in error */
    }
    vidmm_process_note_fault_locked(p, va, flags);
    pthread_mutex_unlock(&a->fence_lock);
}

vidmm_status vidmm_process_destroy(struct vidmm_adapter *a, vidmm_handle h)
{
    VIDMM_ENTRY(a, process_destroy(a, h));
}

