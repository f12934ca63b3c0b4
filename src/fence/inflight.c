/*
 * inflight.c - submitted work in flight: the records of submissions,
 * their retirement as context fences pass, and the waits on them.
 *
 * Every submission becomes a record: its context, the context fence
 * value that marks its end, and the allocations it references (the
 * device's residency list in virtual mode, the allocation list in
 * physical mode), each of which has its `busy` count raised.  The driver
 * reports completion through vidmm_cb_notify_context_fence, which only
 * moves the context's completed value (under the fence lock, from any
 * thread); records are retired lazily on vidmm's side - at the next
 * submission, wait, destroy or eviction that needs it - where the busy
 * counts drop.  Eviction skips busy allocations (residency) and, when
 * nothing idle may go, waits here for some record to retire; moves, CPU
 * locks and explicit evictions wait for the allocation to go idle.
 *
 * Deferred destruction (allocation/allocation.c) queues busy allocations
 * here; vidmm_inflight_reap releases the idle ones at the start of a
 * public entry through the destroy upcall.
 *
 * Locking: internal waits hold the adapter lock (the engines progress
 * without it); the driver's callbacks take only the fence lock.
 */
#include "fence/fence.h"
#include "fence/inflight.h"
#include "fence/hang.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- state ------------------------------------------------------------ */

vidmm_status vidmm_inflight_init(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = vidmm_hzalloc(a->ha, VIDMM_SITE_SUBMIT_STATE, sizeof(*s), _Alignof(struct vidmm_submit_state));
    if (!s)
        return VIDMM_E_NO_HOST_MEMORY;
    a->sub = s;
    return VIDMM_OK;
}

void vidmm_inflight_free_record(struct vidmm_adapter *a, struct vidmm_submission *r)
{
    vidmm_hfree(a->ha, r->list, (size_t)r->list_cap * sizeof(*r->list), _Alignof(struct vidmm_allocation *));
    vidmm_hfree(a->ha, r, sizeof(*r), _Alignof(struct vidmm_submission));
}

/* Retire every record whose fence passed: its allocations' busy counts
 * drop.  Submission lock held.  Returns the records retired. */
uint32_t vidmm_inflight_retire(struct vidmm_adapter *a)
{
    VIDMM_ASSERT_LOCKED(a);
    struct vidmm_submit_state *s = a->sub;
    struct vidmm_submission *done = NULL;
    pthread_mutex_lock(&a->fence_lock);
    for (struct vidmm_submission **pp = &s->head; *pp;) {
        struct vidmm_submission *r = *pp;
        if (r->ctx->fence_completed >= r->fence) {
            *pp = r->next;
            r->next = done;
            done = r;
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&a->fence_lock);
    uint32_t n = 0;
    while (done) {
        struct vidmm_submission *r = done;
        done = r->next;
        for (uint32_t i = 0; i < r->count; i++)
            if (!VIDMM_BUG_ON_MSG(a, r->list[i]->busy == 0,
                                  "retire: allocation 0x%llx named by a finished submission is not busy (a record "
                                  "names each allocation once)", (unsigned long long)r->list[i]->self))
                r->list[i]->busy--;
        vidmm_inflight_free_record(a, r);
        s->in_flight--;
        n++;
    }
    return n;
}

/* Release the zombies nothing uses any more.  Only at the start of a
 * public entry: destroy_now pages and rewrites page tables. */
void vidmm_inflight_reap(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = a->sub;
    for (struct vidmm_allocation **pp = &s->zombies; *pp;) {
        struct vidmm_allocation *al = *pp;
        if (al->busy) {
            pp = &al->zombie_next;
            continue;
        }
        *pp = al->zombie_next;
        al->zombie_next = NULL;
        s->zombie_count--;
        s->stats.deferred_freed++;
        a->up.destroy_now(a, al);
    }
}

/* Is any in-flight record done?  Under the fence lock. */
static int any_done_locked(const struct vidmm_submit_state *s)
{
    for (const struct vidmm_submission *r = s->head; r; r = r->next)
        if (r->ctx->fence_completed >= r->fence)
            return 1;
    return 0;
}

/* Wait until some in-flight record is done (none in flight: return at
 * once).  Submission lock held: the GPU finishes work on its own, and
 * the driver's callbacks take only the fence lock. */
static void wait_any(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = a->sub;
    pthread_mutex_lock(&a->fence_lock);
    while (s->head && !any_done_locked(s) && !vidmm_reset_pending_locked(a))
        (void)vidmm_fence_wait(a, NULL);   /* a hung engine is reset between slices */
    pthread_mutex_unlock(&a->fence_lock);
}

struct vidmm_context *vidmm_inflight_oldest_on_node(struct vidmm_adapter *a, uint32_t node, uint64_t *fence)
{
    struct vidmm_context *c = NULL;
    pthread_mutex_lock(&a->fence_lock);
    uint64_t best = UINT64_MAX;
    for (const struct vidmm_submission *r = a->sub ? a->sub->head : NULL; r; r = r->next) {
        if (r->ctx->node == node && r->ctx->fence_completed < r->fence && r->seq < best) {
            best = r->seq;
            c = r->ctx;
            *fence = r->fence;
        }
    }
    pthread_mutex_unlock(&a->fence_lock);
    return c;
}

void vidmm_inflight_wait_all(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = a->sub;
    while (s && s->head && !vidmm_reset_pending(a)) {
        wait_any(a);
        vidmm_inflight_retire(a);
    }
}

void vidmm_inflight_retire_all(struct vidmm_adapter *a)
{
    if (a->sub)
        (void)vidmm_inflight_retire(a);
}

void vidmm_inflight_fini(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = a->sub;
    if (!s)
        return;
    vidmm_adapter_lock(a);
    while (s->head) {
        wait_any(a);
        a->up.run_pending(a);   /* the close holds nothing a reset frees here */
        vidmm_inflight_retire(a);
    }
    vidmm_inflight_reap(a);
    vidmm_adapter_unlock(a);
    vidmm_hfree(a->ha, s->alist, (size_t)s->alist_cap * sizeof(*s->alist), _Alignof(struct vidmm_allocation_list_entry));
    vidmm_hfree(a->ha, s->plist, (size_t)s->plist_cap * sizeof(*s->plist), _Alignof(struct vidmm_patch_location));
    vidmm_hfree(a->ha, s, sizeof(*s), _Alignof(struct vidmm_submit_state));
    a->sub = NULL;
}

void vidmm_inflight_wait_idle(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    struct vidmm_submit_state *s = a->sub;
    if (!s || !al->busy)
        return;
    vidmm_adapter_lock(a);
    vidmm_inflight_retire(a);
    while (al->busy && !vidmm_reset_pending(a)) {
        wait_any(a);
        vidmm_inflight_retire(a);
    }
    vidmm_adapter_unlock(a);   /* still busy: a reset is pending, the caller backs out */
}

int vidmm_inflight_wait_some(struct vidmm_adapter *a)
{
    struct vidmm_submit_state *s = a->sub;
    if (!s)
        return 0;
    vidmm_adapter_lock(a);
    int r = 0;
    if (vidmm_inflight_retire(a)) {
        r = 1;
    } else if (s->head) {
        wait_any(a);
        r = vidmm_inflight_retire(a) != 0;
    }
    if (r)
        s->stats.eviction_waits++;
    vidmm_adapter_unlock(a);
    return r;
}

/* ---- the driver's completion callback ------------------------------------ */

void vidmm_cb_notify_context_fence(struct vidmm_adapter *a, uint64_t context, uint32_t node, uint64_t fence)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->fence_lock);
    struct vidmm_context *c = vidmm_objtab_get(&a->contexts, context);
    /* A fence of another node, or beyond what was submitted, is a driver
     * bug: ignored rather than letting it release memory in use. */
    if (c && c->node == node && fence > c->fence_completed && fence <= c->fence_submitted) {
        vidmm_fence_node_completed_locked(a, node, fence - c->fence_completed);
        c->fence_completed = fence;
    }
    pthread_cond_broadcast(&a->fence_cond);
    pthread_mutex_unlock(&a->fence_lock);
}

/* A context goes: its records point at it, so wait for its work and
 * retire them.  A recovery point: a context destroy and its callers
 * (device and process destruction, the close) hold nothing a reset
 * frees, so a reset left pending runs here. */
void vidmm_inflight_context_gone(struct vidmm_adapter *a, struct vidmm_context *c)
{
    struct vidmm_submit_state *s = a->sub;
    if (!s)
        return;
    vidmm_adapter_lock(a);
    for (;;) {
        pthread_mutex_lock(&a->fence_lock);
        int idle = c->fence_completed >= c->fence_submitted;
        pthread_mutex_unlock(&a->fence_lock);
        if (idle)
            break;
        wait_any(a);
        a->up.run_pending(a);
        vidmm_inflight_retire(a);
    }
    vidmm_inflight_retire(a);
    vidmm_adapter_unlock(a);
}

