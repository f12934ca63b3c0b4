/*
 * hang.h - fence waits and hang detection (internal, never installed).
 */
#ifndef VIDMM_FENCE_HANG_H
#define VIDMM_FENCE_HANG_H

#include "model/objects.h"

uint64_t vidmm_fence_now(void);

/* Wait on fence_cond (the fence lock held) until woken, `until` passes
 * (NULL = no deadline) or a slice of the hang timeout passes, in which
 * case hangs are looked for and recovered (the fence lock is dropped
 * meanwhile).  ETIMEDOUT once `until` passed, else 0. */
int vidmm_fence_wait(struct vidmm_adapter *a, const struct timespec *until);

/* What a CPU wait waits for, asked under the fence lock: 1 once the
 * value is reached, 0 not yet, or a negative status that ends the wait
 * (the object waited on is gone: the lock was dropped meanwhile). */
typedef int (*vidmm_fence_reached_fn)(struct vidmm_adapter *a, void *arg);

/* The one loop of a CPU wait for a fence value (vidmm_context_wait,
 * vidmm_paging_queue_wait), the fence lock held: sleep until reached
 * says so, timeout_ns passes (UINT64_MAX = never) or a reset is pending
 * for the caller (it runs as the caller unwinds).  VIDMM_OK,
 * VIDMM_E_TIMEOUT, or reached's negative status. */
vidmm_status vidmm_fence_wait_reached(struct vidmm_adapter *a, vidmm_fence_reached_fn reached, void *arg,
                                      uint64_t timeout_ns);

/* Look for a hang (or a reported paging fault) now and recover it;
 * the fence lock not held.  1 if a reset was made. */
int vidmm_hang_poll(struct vidmm_adapter *a);

/* Is a reset pending for the calling thread (it holds the adapter
 * lock)?  Its waits for submitted work then return at once (the hung
 * node will not progress before the reset); its paging waits return only
 * once the paging engine is stopped too (fence.h,
 * vidmm_fence_paging_stopped_locked).  _locked: the fence lock held. */
int vidmm_reset_pending_locked(const struct vidmm_adapter *a);

int vidmm_reset_pending(struct vidmm_adapter *a);

/* A refused driver step left entries (page tables, the aperture) that
 * vidmm can no longer vouch for (docs/ARCHITECTURE.md "Prepare, point,
 * then free"): the adapter is reset as the current entry returns (or at
 * the next wait or poll when a reset is running now), as for a faulted
 * paging buffer, and the reset rewrites every entry.  The adapter lock
 * held. */
void vidmm_reset_schedule(struct vidmm_adapter *a);

/* Mark allocation al's content as written by the paging buffer being
 * built (an adapter reset that drops that buffer loses the content). */
void vidmm_fence_note_paging(struct vidmm_adapter *a, struct vidmm_allocation *al);

#endif
