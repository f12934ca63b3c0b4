/*
 * vidmm/submit.h - command submission on virtual and physical engines,
 * context fences, and the lifetimes of allocations used by GPU work.
 *
 * A context (vidmm/device.h) runs on one engine (node) in one of two
 * modes (Microsoft's 'GPU virtual memory in WDDM 2.0' page):
 *
 *   virtual   the command buffer lives at a GPU virtual address of the
 *             process and uses GPU virtual addresses throughout; vidmm
 *             never looks inside it.  Before it is handed to the driver
 *             the device's residency list is made resident (what was
 *             evicted is restored), and every allocation on it is marked
 *             in use until the submission's fence passes.
 *   physical  the command buffer is host memory holding segment
 *             addresses: it comes with an allocation list (handle + write
 *             flag, DXGK_ALLOCATIONLIST) and a patch-location list
 *             (D3DDDI_PATCHLOCATIONLIST).  Only AccessedPhysically
 *             allocations may be listed (VIDMM_E_NOT_ACCESSED_PHYSICALLY
 *             otherwise).  Listed allocations are made resident, the
 *             driver's patch op writes their (segment, offset) at the
 *             patch locations - for a buffer submitted again
 *             (VIDMM_SUBMIT_REUSED) on the same context only where an
 *             allocation moved since it was last patched - and the
 *             buffer is submitted.  A write flag makes the allocation's
 *             backing copy stale (it is then copied, not discarded, on
 *             eviction).  The caller keeps the buffer untouched until
 *             the submission's fence passed; vidmm knows every buffer
 *             in flight, on every context of the adapter, and refuses
 *             (VIDMM_E_BUSY) to patch or submit one, or any buffer
 *             overlapping it, until then.
 *
 * Each submission signals the context's monitored 64-bit fence with the
 * next value (1, 2, ...).  Query it, or wait on the CPU with a timeout.
 *
 * Lifetimes: eviction and moves skip allocations that submitted work
 * still uses, and wait for that work when nothing else can make room;
 * destroying such an allocation is deferred - its handle is gone at once,
 * its memory is released once the work finished - without blocking.
 *
 * Threading: like every entry, these may be called from several threads
 * at once (docs/THREADING.md); submission serialises on the adapter lock,
 * vidmm_context_fence and vidmm_context_wait take only the fence lock and
 * the wait sleeps without the adapter lock.  Destroying a context another
 * thread waits on is the caller's error.
 */
#ifndef VIDMM_SUBMIT_H
#define VIDMM_SUBMIT_H

#include "vidmm/export.h"

#include "vidmm/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Virtual mode: gpu_va/size name the command buffer in the process's
 * GPU address space.  *fence receives the context fence value that marks
 * its completion.  VIDMM_E_INVALID_ARG (size 0, NULL fence),
 * VIDMM_E_INVALID_HANDLE, VIDMM_E_STATE (a physical-mode context),
 * VIDMM_E_NOT_SUPPORTED (no driver support / no GPU page tables),
 * VIDMM_E_DEVICE_LOST, VIDMM_E_NO_SEGMENT_SPACE (the residency list does
 * not fit even after eviction; nothing was submitted). */
VIDMM_API vidmm_status vidmm_submit_virtual(struct vidmm_adapter *adapter, vidmm_handle context, uint64_t gpu_va,
                                  uint32_t size, uint64_t *fence);

/* D3DDDI_ALLOCATIONLIST: an allocation and how the buffer uses it. */
#define VIDMM_SUBMIT_WRITE 0x1u          /* WriteOperation */
struct vidmm_submit_allocation {
    vidmm_handle allocation;
    uint32_t flags;                      /* VIDMM_SUBMIT_WRITE */
    uint32_t reserved;
};

/* The buffer is the one submitted before from the same address and
 * size, unchanged since except by vidmm's patching.  A location is left
 * as it is only when the buffer's last patch was for this context, with
 * the same allocation at that allocation-list index, and that
 * allocation has not moved since; every other location is patched (all
 * of them after a submission on another context, or once vidmm forgot
 * the buffer - it remembers the 256 idle buffers submitted last).  So a
 * buffer never carries one context's addresses into another's work.
 * Without the flag every location is patched. */
#define VIDMM_SUBMIT_REUSED 0x1u

struct vidmm_submit_physical_args {
    void *buffer;                        /* host memory, patched in place */
    uint32_t size;
    uint32_t allocation_count;
    const struct vidmm_submit_allocation *allocations;
    const struct vidmm_patch_location *patches;   /* vidmm/driver.h */
    uint32_t patch_count;
    uint32_t flags;                      /* VIDMM_SUBMIT_REUSED */
    uint64_t fence;                      /* out: the context fence value of this submission */
    uint32_t patched;                    /* out: patch locations written this time */
    uint32_t reserved;
};

/* Physical mode.  VIDMM_E_INVALID_ARG (bad sizes, a patch location
 * outside the buffer or its allocation, an allocation index out of range,
 * the driver refusing the patch), VIDMM_E_INVALID_HANDLE,
 * VIDMM_E_NOT_ACCESSED_PHYSICALLY, VIDMM_E_STATE (a virtual-mode
 * context), VIDMM_E_BUSY (the buffer, or a buffer it overlaps, was
 * submitted on any context of the adapter and that submission has not
 * finished; however many buffers were submitted since), VIDMM_E_NO_HOST_MEMORY,
 * VIDMM_E_NOT_SUPPORTED, VIDMM_E_DEVICE_LOST, VIDMM_E_NO_SEGMENT_SPACE.
 * Nothing is submitted on failure. */
VIDMM_API vidmm_status vidmm_submit_physical(struct vidmm_adapter *adapter, vidmm_handle context,
                                   struct vidmm_submit_physical_args *args);

/* The context fence: the last value submitted and the last completed. */
VIDMM_API vidmm_status vidmm_context_fence(struct vidmm_adapter *adapter, vidmm_handle context, uint64_t *submitted,
                                 uint64_t *completed);
/* CPU wait until the context fence reaches value, at most timeout_ns
 * (UINT64_MAX = forever): VIDMM_OK, VIDMM_E_TIMEOUT,
 * VIDMM_E_INVALID_ARG (a value never submitted). */
VIDMM_API vidmm_status vidmm_context_wait(struct vidmm_adapter *adapter, vidmm_handle context, uint64_t value,
                                uint64_t timeout_ns);

struct vidmm_submit_stats {
    uint64_t virtual_submissions, physical_submissions;
    uint64_t patch_locations_written, patch_locations_skipped;
    uint64_t in_flight;                  /* submissions whose fence has not been seen yet */
    uint64_t deferred_destroys;          /* allocations destroyed while in use, not yet freed */
    uint64_t deferred_freed;             /* of those, freed since */
    uint64_t eviction_waits;             /* times eviction waited for GPU work to make room */
};
VIDMM_API vidmm_status vidmm_submit_get_stats(struct vidmm_adapter *adapter, struct vidmm_submit_stats *out);

#ifdef __cplusplus
}
#endif
#endif
