/*
 * hang.c - fence waits and hang detection (docs/RESET_AND_POWER.md).
 *
 * Every engine's progress is tracked from the fences: a node (contexts'
 * work) or the paging engine that holds unfinished work and completed
 * nothing for the timeout is hung.  Submissions and the driver's
 * callbacks only move counters; the detector samples them and keeps, per
 * engine, when it last saw it idle or progressing, so no clock is read
 * on the submission path.  Nothing polls on its own: vidmm's waits
 * (paging fences, in-flight submissions, context and paging-queue
 * waits) sleep in slices of a quarter of the timeout and look for hangs
 * between slices, and vidmm_adapter_detect_hangs lets the embedding OS
 * layer look from its own timer.
 *
 * Recovery is the tdr layer's (tdr/tdr.c), far above this one: a hang
 * found here is handed to it through the adapter's upcall table
 * (model/objects.h), which confirms it and leaves its reset pending for
 * the outermost entry to run as it unwinds.  Meanwhile the waits for
 * contexts' work return; paging waits go on until the paging engine is
 * stuck too (a node's reset leaves it running: docs/DECISIONS.md D61).
 */
#include "model/objects.h"
#include "fence/fence.h"
#include "fence/fence_state.h"
#include "fence/fence.h"
#include "fence/hang.h"

#include <errno.h>
#include <string.h>

uint64_t vidmm_fence_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void vidmm_fence_note_paging(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    al->paging_fence = a->fence->paging_next;
}

/* ---- detection ------------------------------------------------------------ */

/* One engine's sample: idle or progressed since the last one = seen now;
 * busy without progress for the timeout = hung.  Busy now but idle at
 * the last sample: the work started since, so its timeout starts now
 * (the last progress may be older than the timeout after an idle gap,
 * and the fresh buffer is not hung for that). */
static int sample(uint64_t busy, uint64_t completed, uint64_t *seen, uint64_t *seen_ns, int *was_busy, uint64_t now,
                  uint64_t timeout)
{
    if (!busy || !*was_busy || completed != *seen || !*seen_ns) {
        *seen = completed;
        *seen_ns = now;
        *was_busy = busy != 0;
        return 0;
    }
    return now - *seen_ns > timeout;
}

/* Sample every engine, the fence lock held: 1 and *node (-1 = the paging
 * engine) for the first hung one.  While a reset is pending only the
 * paging engine can still matter: a node's reset stops nothing on it,
 * so the paging waits go on and must still find it stuck (which makes
 * the pending reset an adapter reset and lets them give up). */
static int find_hang_locked(struct vidmm_adapter *a, uint64_t now, int *node)
{
    struct vidmm_fence_state *t = a->fence;
    int pending = vidmm_entry_reset_any(a);
    if (t->in_recovery || (pending && t->paging_stopped) || t->adapter_removed)
        return 0;   /* already being dealt with, or beyond a reset (D94) */
    if (t->paging_fault && !(pending && t->pending_paging)) {
        *node = -1;   /* an unrecoverable paging fault: no timeout to wait */
        return 1;
    }
    if (!t->timeout_ns)
        return 0;
    int hung = 0;
    if (sample(t->paging_submitted > t->paging_completed, t->paging_completed, &t->paging_seen,
               &t->paging_seen_ns, &t->paging_busy, now, t->timeout_ns)) {
        *node = -1;
        hung = 1;
    }
    uint32_t nodes = a->caps.node_count ? a->caps.node_count : 1;
    for (uint32_t n = 0; n < nodes; n++) {
        if (sample(t->node_submitted[n] > t->node_completed[n], t->node_completed[n], &t->node_seen[n],
                   &t->node_seen_ns[n], &t->node_busy[n], now, t->timeout_ns) && !hung && !pending) {
            *node = (int)n;
            hung = 1;
        }
    }
    return hung;
}

/* Look for a hang; the fence lock not held.  1 if a reset (engine or
 * adapter) was made now (see below).  Also without submission state (the
 * close tears it down first): a paging hang must still be reset. */
int vidmm_hang_poll(struct vidmm_adapter *a)
{
    int node;
    pthread_mutex_lock(&a->fence_lock);
    int hung = find_hang_locked(a, vidmm_fence_now(), &node);
    pthread_mutex_unlock(&a->fence_lock);
    if (!hung)
        return 0;
    if (vidmm_adapter_trylock(a) != 0)
        return 0;   /* its holder waits too and will recover */
    /* Look again under the lock: another thread may have recovered. */
    pthread_mutex_lock(&a->fence_lock);
    hung = find_hang_locked(a, vidmm_fence_now(), &node);
    pthread_mutex_unlock(&a->fence_lock);
    int done = 0;
    /* The reset is left pending.  If this poll took the adapter lock
     * itself (a wait outside any entry, or the hang-detection entry), it
     * is the entry boundary: nothing above it holds adapter state, so
     * the reset runs now.  Inside an entry the holder's waits return and
     * the entry runs it as it unwinds. */
    if (hung && a->up.recover(a, node) && vidmm_entry_depth(a) == 1)
        done = a->up.run_pending(a) != 0;
    vidmm_adapter_unlock(a);
    return done;
}

void vidmm_reset_schedule(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    vidmm_fence_paging_fault_locked(a);
    int pending = vidmm_reset_pending_locked(a);
    pthread_mutex_unlock(&a->fence_lock);
    /* Refused while a reset runs (its own paging was refused): the fault
     * stays for the next wait or poll, and the next entry starts with it. */
    if (!pending && a->up.recover && !a->up.recover(a, -1))
        vidmm_entry_carry_reset(a, 1);
}

int vidmm_reset_pending_locked(const struct vidmm_adapter *a)
{
    return vidmm_entry_reset_flagged(a, NULL);
}

int vidmm_reset_pending(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    int r = vidmm_reset_pending_locked(a);
    pthread_mutex_unlock(&a->fence_lock);
    return r;
}

int vidmm_fence_wait(struct vidmm_adapter *a, const struct timespec *until)
{
    uint64_t slice = a->fence->timeout_ns / 4;
    if (!a->fence->timeout_ns || a->fence->in_recovery) {
        if (!until) {
            pthread_cond_wait(&a->fence_cond, &a->fence_lock);
            return 0;
        }
        return pthread_cond_timedwait(&a->fence_cond, &a->fence_lock, until) == ETIMEDOUT ? ETIMEDOUT : 0;
    }
    if (slice < 1000000)
        slice = 1000000;
    if (slice > 100000000)
        slice = 100000000;
    struct timespec w;
    clock_gettime(CLOCK_REALTIME, &w);
    uint64_t ns = (uint64_t)w.tv_nsec + slice;
    w.tv_sec += (time_t)(ns / 1000000000u);
    w.tv_nsec = (long)(ns % 1000000000u);
    int last = 0;
    if (until && (until->tv_sec < w.tv_sec || (until->tv_sec == w.tv_sec && until->tv_nsec <= w.tv_nsec))) {
        w = *until;
        last = 1;
    }
    if (pthread_cond_timedwait(&a->fence_cond, &a->fence_lock, &w) != ETIMEDOUT)
        return 0;
    if (last)
        return ETIMEDOUT;
    if (vidmm_reset_pending_locked(a) && vidmm_fence_paging_stopped_locked(a))
        return 0;   /* nothing more to find: the caller sees it and returns */
    pthread_mutex_unlock(&a->fence_lock);
    (void)vidmm_hang_poll(a);
    pthread_mutex_lock(&a->fence_lock);
    return 0;
}

vidmm_status vidmm_fence_wait_reached(struct vidmm_adapter *a, vidmm_fence_reached_fn reached, void *arg,
                                      uint64_t timeout_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ns != UINT64_MAX) {
        uint64_t ns = (uint64_t)until.tv_nsec + timeout_ns % 1000000000u;
        until.tv_sec += (time_t)(timeout_ns / 1000000000u + ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
    }
    int done = reached(a, arg);
    while (done == 0) {
        if (a->fence->adapter_removed)
            return VIDMM_E_DEVICE_LOST;   /* its driver refused a reset: nothing more completes (D94) */
        if (vidmm_reset_pending_locked(a))
            return VIDMM_E_TIMEOUT;   /* called back under the adapter lock: the reset runs as it unwinds */
        int rc = vidmm_fence_wait(a, timeout_ns == UINT64_MAX ? NULL : &until);
        done = reached(a, arg);   /* the lock was dropped to look for hangs: the object may be gone */
        if (done == 0 && rc == ETIMEDOUT)
            return VIDMM_E_TIMEOUT;
    }
    return done > 0 ? VIDMM_OK : (vidmm_status)done;
}

