/*
 * vidmm/residency.h - residency (WDDM 2 style), paging queues, priorities,
 * budgets, trim, offer and reclaim.
 *
 * Every device keeps a residency requirement list: make-resident adds
 * allocations to it (a reference count per device and allocation),
 * evict drops references.  vidmm keeps what is on the lists resident as
 * far as memory allows: when a segment is full it evicts (transfers the
 * content to system memory, or discards it when known clean or offered)
 * in the order the adapter's eviction policy gives (vidmm/policy.h),
 * honouring priorities and each process's fair share, and restores an
 * evicted allocation on its next make-resident.  GPU virtual addresses
 * never change: page tables follow through paging operations; an evicted
 * allocation's entries are invalid, so a GPU access to it faults.
 *
 * Which creation makes an allocation resident (WDDM's CreateResident):
 * vidmm_allocation_create always does (it is create2 with
 * VIDMM_CREATE_RESIDENT); vidmm_allocation_create2 and
 * vidmm_device_allocation_create do only with VIDMM_CREATE_RESIDENT, and
 * otherwise the allocation starts evicted and becomes resident on its
 * first make-resident (docs/RESIDENCY.md "Creating resident or not").
 * Either way an allocation no device lists may be evicted whenever memory
 * is needed.  An allocation is owned, for accounting, by the first
 * process whose device references it.
 *
 * Budgets are per process and segment group (local = memory segments;
 * non-local = aperture and system memory).  A process's budget is the
 * group's capacity while the group is not over-committed, and its fair
 * share (capacity / processes using the group, never below its
 * reservation) when it is; vidmm_process_set_budget overrides it, as the
 * OS would (docs/DECISIONS.md D20-D23).
 */
#ifndef VIDMM_RESIDENCY_H
#define VIDMM_RESIDENCY_H

#include "vidmm/export.h"

#include "vidmm/allocation.h"
#include "vidmm/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- paging queues and monitored fences ---------------------------- */

/* D3DDDI_PAGINGQUEUE_PRIORITY. */
#define VIDMM_PAGING_QUEUE_BELOW_NORMAL (-1)
#define VIDMM_PAGING_QUEUE_NORMAL 0
#define VIDMM_PAGING_QUEUE_ABOVE_NORMAL 1

/* A paging queue of a device (type 5 handle) with its monitored 64-bit
 * fence.  Destroying the device destroys its queues. */
VIDMM_API vidmm_status vidmm_paging_queue_create(struct vidmm_adapter *adapter, vidmm_handle device, int priority,
                                       vidmm_handle *queue);
VIDMM_API vidmm_status vidmm_paging_queue_destroy(struct vidmm_adapter *adapter, vidmm_handle queue);
/* The queue fence's current (completed) value. */
VIDMM_API vidmm_status vidmm_paging_queue_fence(struct vidmm_adapter *adapter, vidmm_handle queue, uint64_t *completed);
/* CPU wait until the fence reaches value, at most timeout_ns
 * (UINT64_MAX = forever): VIDMM_OK or VIDMM_E_TIMEOUT. */
VIDMM_API vidmm_status vidmm_paging_queue_wait(struct vidmm_adapter *adapter, vidmm_handle queue, uint64_t value,
                                     uint64_t timeout_ns);

/* ---- make resident / evict ----------------------------------------- */

#define VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER 0x1u  /* over budget is fine; over capacity is not */
#define VIDMM_MAKE_RESIDENT_MUST_SUCCEED      0x2u  /* with CANT_TRIM_FURTHER: failure loses the device */

struct vidmm_make_resident_args {
    vidmm_handle paging_queue;           /* of the device */
    const vidmm_handle *allocations;
    uint32_t count;
    uint32_t flags;                      /* VIDMM_MAKE_RESIDENT_* */
    uint64_t paging_fence_value;         /* out: wait for it on the queue fence (0 = done) */
    uint64_t bytes_to_trim;              /* out on VIDMM_E_OVER_BUDGET */
};
/* All or nothing: VIDMM_OK (resident now), VIDMM_PENDING (on the list,
 * paging queued: wait for paging_fence_value), VIDMM_E_OVER_BUDGET
 * (nothing changed; trim bytes_to_trim, retry, at last with
 * CANT_TRIM_FURTHER), VIDMM_E_NO_SEGMENT_SPACE (cannot fit even after
 * evicting what may be evicted; no reference taken). */
VIDMM_API vidmm_status vidmm_make_resident(struct vidmm_adapter *adapter, vidmm_handle device,
                                 struct vidmm_make_resident_args *args);

#define VIDMM_EVICT_ONLY_IF_NECESSARY 0x1u  /* keep it resident until memory is needed */
#define VIDMM_EVICT_NOT_WRITTEN_TO    0x2u  /* the GPU did not write it: content may be discarded */

/* D3DDDI_EVICT: the counterpart of vidmm_make_resident_args. */
struct vidmm_evict_args {
    const vidmm_handle *allocations;
    uint32_t count;
    uint32_t flags;                      /* VIDMM_EVICT_* */
    uint64_t bytes_to_trim;              /* out: how far the process is still over its local budget */
};
/* Drop one reference per listed allocation (each must be on the device's
 * list; all or nothing: a bad handle changes nothing).  At zero
 * references the allocation leaves the list and, unless
 * EVICT_ONLY_IF_NECESSARY, is evicted now. */
VIDMM_API vidmm_status vidmm_evict(struct vidmm_adapter *adapter, vidmm_handle device, struct vidmm_evict_args *args);

/* Eviction priority (VIDMM_PRIORITY_* scale, 0 invalid).  New
 * allocations get the driver's, else NORMAL. */
VIDMM_API vidmm_status vidmm_allocation_set_priority(struct vidmm_adapter *adapter, vidmm_handle allocation, uint32_t priority);

struct vidmm_residency_state {
    uint32_t resident;                   /* has a GPU placement now */
    uint32_t priority;
    uint32_t references;                 /* on residency lists, summed over devices */
    uint32_t offered;
    vidmm_handle owner;                  /* accounting process, 0 until referenced */
    uint64_t evictions, restores;
};
VIDMM_API vidmm_status vidmm_allocation_residency(const struct vidmm_adapter *adapter, vidmm_handle allocation,
                                        struct vidmm_residency_state *out);

/* Trace hint for Belady's policy: the reference clock at which the
 * allocation is used next (VIDMM_NEXT_USE_NEVER). */
VIDMM_API vidmm_status vidmm_allocation_set_next_use(struct vidmm_adapter *adapter, vidmm_handle allocation, uint64_t clock);
/* The reference clock: bumped by every make-resident. */
VIDMM_API uint64_t vidmm_residency_clock(const struct vidmm_adapter *adapter);

/* Replace the eviction policy (NULL = vidmm_policy_lru).  Resident
 * allocations are handed to the new policy in the old one's order. */
VIDMM_API vidmm_status vidmm_adapter_set_eviction_policy(struct vidmm_adapter *adapter,
                                               const struct vidmm_eviction_policy *policy);

/* ---- offer / reclaim ------------------------------------------------ */

/* D3DKMT_OFFER_PRIORITY. */
#define VIDMM_OFFER_LOW    1u   /* no useful content: discarded first */
#define VIDMM_OFFER_NORMAL 2u
#define VIDMM_OFFER_HIGH   3u   /* hard to regenerate: discarded last */
#define VIDMM_OFFER_AUTO   4u   /* from the eviction priority */

/* Offered allocations may be discarded under pressure (their memory is
 * given back when they are evicted).  They must be reclaimed before use. */
VIDMM_API vidmm_status vidmm_offer(struct vidmm_adapter *adapter, vidmm_handle device, const vidmm_handle *allocations,
                         uint32_t count, uint32_t offer_priority);

/* D3DDDI_RECLAIM_RESULT. */
#define VIDMM_RECLAIM_OK        0u
#define VIDMM_RECLAIM_DISCARDED 1u   /* content lost: reads as zero */
/* Take back offered allocations; results[i] (count entries) says whether
 * each one's content survived.  Fence semantics as make-resident. */
VIDMM_API vidmm_status vidmm_reclaim(struct vidmm_adapter *adapter, vidmm_handle paging_queue, const vidmm_handle *allocations,
                           uint32_t count, uint32_t *results, uint64_t *paging_fence_value);

/* ---- budgets -------------------------------------------------------- */

enum vidmm_segment_group {
    VIDMM_SEGMENT_GROUP_LOCAL = 0,       /* memory segments */
    VIDMM_SEGMENT_GROUP_NON_LOCAL = 1    /* aperture and system memory */
};

/* D3DKMT_QUERYVIDEOMEMORYINFO. */
struct vidmm_video_memory_info {
    uint64_t budget;
    uint64_t current_usage;              /* resident bytes the process owns in the group */
    uint64_t current_reservation;
    uint64_t available_for_reservation;  /* <= budget */
};
VIDMM_API vidmm_status vidmm_query_video_memory_info(const struct vidmm_adapter *adapter, vidmm_handle process,
                                           enum vidmm_segment_group group, struct vidmm_video_memory_info *out);
/* D3DKMTChangeVideoMemoryReservation: 0..available_for_reservation. */
VIDMM_API vidmm_status vidmm_change_video_memory_reservation(struct vidmm_adapter *adapter, vidmm_handle process,
                                                   enum vidmm_segment_group group, uint64_t reservation);
/* The OS side: pin a process's budget (0 = automatic again).  A process
 * then over budget gets a trim notification. */
VIDMM_API vidmm_status vidmm_process_set_budget(struct vidmm_adapter *adapter, vidmm_handle process,
                                      enum vidmm_segment_group group, uint64_t budget);

/* D3DDDI_TRIMRESIDENCYSET_FLAGS. */
#define VIDMM_TRIM_PERIODIC  0x1u
#define VIDMM_TRIM_TO_BUDGET 0x4u
/* vidmm's own bit: the bytes to trim are of the non-local segment group
 * (without it, of the local group). */
#define VIDMM_TRIM_NON_LOCAL 0x100u
/* Called (from the thread that caused it, never with vidmm state
 * half-changed) when a process is over its budget in a group - after
 * its own make-resident, another process's (whose demand lowered every
 * budget), or a budget change - once per device and group in each walk.
 * The callback may call back into anything: evict, destroy this or
 * another device, or the process.  NULL unregisters.  It runs
 * with the adapter lock held (docs/THREADING.md): calls back into vidmm
 * on the same thread are fine, waiting for another thread that calls
 * vidmm is a deadlock; the thread may belong to another process. */
typedef void (*vidmm_trim_callback)(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim);
VIDMM_API vidmm_status vidmm_register_trim_notification(struct vidmm_adapter *adapter, vidmm_handle device,
                                              vidmm_trim_callback callback, void *context);

/* ---- statistics ----------------------------------------------------- */

struct vidmm_residency_stats {
    uint64_t evictions, restores, discards, relocations;
    uint64_t bytes_evicted, bytes_restored, bytes_discarded, bytes_relocated;
    uint64_t make_resident_calls, over_budget, trim_notifications;
};
VIDMM_API vidmm_status vidmm_residency_get_stats(const struct vidmm_adapter *adapter, struct vidmm_residency_stats *out);

#ifdef __cplusplus
}
#endif
#endif
