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

/* Mark allocation al's content as written by the paging buffer being
 * built (an adapter reset that drops that buffer loses the content). */
void vidmm_fence_note_paging(struct vidmm_adapter *a, struct vidmm_allocation *al);

#endif
