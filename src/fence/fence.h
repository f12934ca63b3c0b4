/*
 * fence.h - every engine's fences and the reset records (internal,
 * never installed).
 *
 * The state is opaque (fence/fence_state.h); these are the only ways
 * other modules read or move it.  _locked: the caller holds the fence
 * lock (docs/THREADING.md); the others take it themselves where they
 * need it.
 */
#ifndef VIDMM_FENCE_FENCE_H
#define VIDMM_FENCE_FENCE_H

#include "model/objects.h"

/* Create the fence lock, its condition and the state (the adapter open,
 * before anything can wait); the default hang timeout. */
vidmm_status vidmm_fence_init(struct vidmm_adapter *a);
void vidmm_fence_fini(struct vidmm_adapter *a);

/* ---- the paging engine ---- */

/* The fence the paging buffer being written will signal (adapter lock). */
uint64_t vidmm_fence_paging_next(const struct vidmm_adapter *a);

/* The last paging fence handed to the driver, or 0. */
static inline uint64_t vidmm_fence_paging_last(const struct vidmm_adapter *a)
{
    return vidmm_fence_paging_next(a) - 1;
}

uint64_t vidmm_fence_paging_completed(struct vidmm_adapter *a);
uint64_t vidmm_fence_paging_completed_locked(const struct vidmm_adapter *a);

/* A paging buffer goes to the driver: its fence is published before the
 * driver runs it (a synchronous driver signals from inside the call),
 * then _end says whether the driver took it (the next buffer gets the
 * next fence) or refused it (the fence is handed out again). */
uint64_t vidmm_fence_paging_begin(struct vidmm_adapter *a);
void vidmm_fence_paging_end(struct vidmm_adapter *a, int taken);

/* A paging buffer faulted (D31): the next wait or hang poll resets the
 * adapter.  Remembers what had completed before it. */
void vidmm_fence_paging_fault_locked(struct vidmm_adapter *a);

/* A reported paging fault no reset is handling yet. */
int vidmm_fence_paging_fault_unhandled_locked(const struct vidmm_adapter *a);

/* ---- contexts' nodes (counters for hang detection) ---- */

/* delta buffers handed to node (-1: one the driver refused). */
void vidmm_fence_node_submitted_locked(struct vidmm_adapter *a, uint32_t node, int delta);
void vidmm_fence_node_completed_locked(struct vidmm_adapter *a, uint32_t node, uint64_t count);

/* ---- reset records (the tdr layer's bookkeeping) ---- */

/* A hang on node is confirmed: its reset is pending for the calling
 * thread; the caller's waits for submitted work return (its paging
 * waits do not: that engine still runs). */
void vidmm_fence_mark_pending(struct vidmm_adapter *a, int node);

/* The paging engine joins the pending reset (making it an adapter reset;
 * a node already pending stays its guilty node): a paging fault, or with
 * stopped, a confirmed paging hang, after which paging waits give up. */
void vidmm_fence_mark_paging_pending(struct vidmm_adapter *a, int stopped);

/* Take the calling thread's pending reset: 1, *node, and *paging (it
 * must reset the paging engine: an adapter reset), or 0. */
int vidmm_fence_take_pending(struct vidmm_adapter *a, int *node, int *paging);

/* The reset records now: a reset running; one pending (any thread); it
 * resets the paging engine; that engine is confirmed stuck. */
struct vidmm_reset_view {
    int running, pending, paging, stopped;
};
void vidmm_fence_reset_view(struct vidmm_adapter *a, struct vidmm_reset_view *v);

/* The calling thread's pending reset found the paging engine stuck:
 * nothing queued on it runs before the reset, which drops it. */
int vidmm_fence_paging_stopped_locked(const struct vidmm_adapter *a);

/* The adapter is removed: its driver refused an adapter reset (tdr/).
 * From then on the CPU gets no pointer into its segments (D94).  Set
 * and read under the fence lock. */
void vidmm_fence_remove_adapter_locked(struct vidmm_adapter *a);
int vidmm_fence_adapter_removed_locked(const struct vidmm_adapter *a);
int vidmm_fence_is_adapter_removed(struct vidmm_adapter *a);

/* The calling thread's pending reset resets the paging engine (an
 * adapter reset): every paging fence passes before the entry returns,
 * and results of paging since the fault cannot be trusted. */
int vidmm_fence_paging_reset_pending_locked(const struct vidmm_adapter *a);
int vidmm_fence_paging_reset_pending(struct vidmm_adapter *a);

/* Paging buffer `fence` (an allocation's paging_fence) was handed to the
 * driver, has not completed, and the paging engine is not stopped: it
 * may still read or write what it names, which must not be freed yet
 * (the rule vidmm_unplace checks). */
int vidmm_fence_paging_outstanding(struct vidmm_adapter *a, uint64_t fence);

void vidmm_fence_set_recovery(struct vidmm_adapter *a, int running);

/* The paging engine has a reported fault (a hang with no timeout). */
int vidmm_fence_paging_faulted(struct vidmm_adapter *a);

/* The driver calls node (-1: paging) responsive: its timeout starts again. */
void vidmm_fence_seen_now(struct vidmm_adapter *a, int node);

/* An engine reset aborted one buffer on node. */
void vidmm_fence_node_reset_locked(struct vidmm_adapter *a, uint32_t node, uint64_t now);

/* An adapter reset: every fence passes, the samples restart at now, the
 * generation moves.  Returns the last paging fence known good (before a
 * reported fault, if any): what completed after it is undefined. */
uint64_t vidmm_fence_adapter_reset_locked(struct vidmm_adapter *a, uint64_t now);

/* Adapter resets so far: a content move compares it before and after. */
uint64_t vidmm_fence_generation(const struct vidmm_adapter *a);

/* The recovery statistics, counted where each event is seen. */
struct vidmm_tdr_stats *vidmm_fence_stats(struct vidmm_adapter *a);

void vidmm_fence_set_timeout(struct vidmm_adapter *a, uint64_t timeout_ns);
void vidmm_fence_get_stats(struct vidmm_adapter *a, struct vidmm_tdr_stats *out);

#endif
