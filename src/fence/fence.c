/*
 * fence.c - every engine's fences and the reset records.
 *
 * The paging engine's fences are 64-bit and increase by one per paging
 * buffer; contexts' fences live in their contexts, and only per-node
 * counters of them are kept here, for hang detection (hang.c).  The
 * driver reports paging completion through vidmm_cb_notify_fence().
 *
 * What a reset records (pending, running, how many so far, statistics)
 * is kept here rather than in tdr/, far above, because the waits of this
 * layer must see a pending reset and return without calling up
 * (docs/ARCHITECTURE.md "Layers").
 */
#include "model/objects.h"
#include "fence/fence.h"
#include "fence/fence_state.h"
#include "fence/hang.h"

#include <string.h>

vidmm_status vidmm_fence_init(struct vidmm_adapter *a)
{
    struct vidmm_fence_state *f =
        vidmm_hzalloc(a->ha, VIDMM_SITE_FENCE_STATE, sizeof(*f), _Alignof(struct vidmm_fence_state));
    if (!f)
        return VIDMM_E_NO_HOST_MEMORY;
    if (pthread_mutex_init(&a->fence_lock, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&a->fence_cond, NULL) != 0) {
        pthread_mutex_destroy(&a->fence_lock);
        goto fail;
    }
    f->timeout_ns = VIDMM_TDR_DEFAULT_TIMEOUT_NS;
    f->paging_next = 1;
    a->fence = f;
    return VIDMM_OK;
fail:
    vidmm_hfree(a->ha, f, sizeof(*f), _Alignof(struct vidmm_fence_state));
    return VIDMM_E_NO_HOST_MEMORY;
}

void vidmm_fence_fini(struct vidmm_adapter *a)
{
    if (!a->fence)
        return;
    pthread_cond_destroy(&a->fence_cond);
    pthread_mutex_destroy(&a->fence_lock);
    vidmm_hfree(a->ha, a->fence, sizeof(*a->fence), _Alignof(struct vidmm_fence_state));
    a->fence = NULL;
}

void vidmm_cb_notify_fence(struct vidmm_adapter *a, uint64_t fence)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->fence_lock);
    struct vidmm_fence_state *f = a->fence;
    /* Beyond what was submitted is a driver bug: ignored rather than
     * letting it release paging memory still in use. */
    if (fence > f->paging_completed && fence <= f->paging_submitted)
        f->paging_completed = fence;
    pthread_cond_broadcast(&a->fence_cond);
    pthread_mutex_unlock(&a->fence_lock);
}

/* ---- the paging engine ---- */

uint64_t vidmm_fence_paging_next(const struct vidmm_adapter *a)
{
    return a->fence->paging_next;
}

uint64_t vidmm_fence_paging_completed_locked(const struct vidmm_adapter *a)
{
    return a->fence->paging_completed;
}

uint64_t vidmm_fence_paging_completed(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    uint64_t c = a->fence->paging_completed;
    pthread_mutex_unlock(&a->fence_lock);
    return c;
}

uint64_t vidmm_fence_paging_begin(struct vidmm_adapter *a)
{
    struct vidmm_fence_state *f = a->fence;
    pthread_mutex_lock(&a->fence_lock);
    (void)VIDMM_BUG_ON_MSG(a, f->paging_next <= f->paging_completed,
                           "paging begin: fence %llu would not be past the completed %llu (paging fences only grow)",
                           (unsigned long long)f->paging_next, (unsigned long long)f->paging_completed);
    f->paging_submitted = f->paging_next;
    pthread_mutex_unlock(&a->fence_lock);
    return f->paging_next;
}

void vidmm_fence_paging_end(struct vidmm_adapter *a, int taken)
{
    struct vidmm_fence_state *f = a->fence;
    if (taken) {
        f->paging_next++;
        return;
    }
    pthread_mutex_lock(&a->fence_lock);
    f->paging_submitted = f->paging_next - 1;
    pthread_mutex_unlock(&a->fence_lock);
}

void vidmm_fence_paging_fault_locked(struct vidmm_adapter *a)
{
    struct vidmm_fence_state *f = a->fence;
    if (!f->paging_fault) {
        f->paging_fault = 1;
        f->paging_fault_before = f->paging_completed;
    }
}

int vidmm_fence_paging_fault_unhandled_locked(const struct vidmm_adapter *a)
{
    return a->fence->paging_fault && !a->fence->in_recovery;
}

/* ---- contexts' nodes ---- */

void vidmm_fence_node_submitted_locked(struct vidmm_adapter *a, uint32_t node, int delta)
{
    a->fence->node_submitted[node] += (uint64_t)(int64_t)delta;
}

void vidmm_fence_node_completed_locked(struct vidmm_adapter *a, uint32_t node, uint64_t count)
{
    a->fence->node_completed[node] += count;
}

/* ---- reset records ---- */

void vidmm_fence_mark_pending(struct vidmm_adapter *a, int node)
{
    pthread_mutex_lock(&a->fence_lock);
    vidmm_entry_reset_set(a, node);
    pthread_cond_broadcast(&a->fence_cond);   /* the owner's waits return */
    pthread_mutex_unlock(&a->fence_lock);
}

void vidmm_fence_mark_paging_pending(struct vidmm_adapter *a, int stopped)
{
    struct vidmm_fence_state *f = a->fence;
    pthread_mutex_lock(&a->fence_lock);
    /* A node's reset pending already keeps its node: that context's
     * device stays the guilty one of the adapter reset. */
    if (!vidmm_entry_reset_any(a))
        vidmm_entry_reset_set(a, -1);
    f->pending_paging = 1;
    if (stopped)
        f->paging_stopped = 1;
    pthread_cond_broadcast(&a->fence_cond);   /* the owner's waits look again */
    pthread_mutex_unlock(&a->fence_lock);
}

int vidmm_fence_take_pending(struct vidmm_adapter *a, int *node, int *paging)
{
    struct vidmm_fence_state *f = a->fence;
    pthread_mutex_lock(&a->fence_lock);
    int pending = vidmm_entry_reset_flagged(a, node);
    if (pending) {
        *paging = f->pending_paging;
        vidmm_entry_reset_clear(a);
        f->pending_paging = 0;
        f->paging_stopped = 0;
    }
    pthread_mutex_unlock(&a->fence_lock);
    return pending;
}

void vidmm_fence_reset_view(struct vidmm_adapter *a, struct vidmm_reset_view *v)
{
    struct vidmm_fence_state *f = a->fence;
    pthread_mutex_lock(&a->fence_lock);
    v->running = f->in_recovery;
    v->pending = vidmm_entry_reset_any(a);
    v->paging = v->pending && f->pending_paging;
    v->stopped = v->pending && f->paging_stopped;
    pthread_mutex_unlock(&a->fence_lock);
}

void vidmm_fence_remove_adapter_locked(struct vidmm_adapter *a)
{
    a->fence->adapter_removed = 1;
}

int vidmm_fence_adapter_removed_locked(const struct vidmm_adapter *a)
{
    return a->fence->adapter_removed;
}

int vidmm_fence_is_adapter_removed(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    int r = a->fence->adapter_removed;
    pthread_mutex_unlock(&a->fence_lock);
    return r;
}

int vidmm_fence_paging_stopped_locked(const struct vidmm_adapter *a)
{
    return a->fence->paging_stopped && vidmm_entry_reset_flagged(a, NULL);
}

int vidmm_fence_paging_reset_pending_locked(const struct vidmm_adapter *a)
{
    return a->fence->pending_paging && vidmm_entry_reset_flagged(a, NULL);
}

int vidmm_fence_paging_reset_pending(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    int r = vidmm_fence_paging_reset_pending_locked(a);
    pthread_mutex_unlock(&a->fence_lock);
    return r;
}

int vidmm_fence_paging_outstanding(struct vidmm_adapter *a, uint64_t fence)
{
    struct vidmm_fence_state *f = a->fence;
    pthread_mutex_lock(&a->fence_lock);
    /* Handed to the driver (below paging_next: the adapter lock guards
     * it), not completed, and the engine not known to be stuck nor the
     * adapter removed (its driver could not reset it, D94). */
    int r = fence < f->paging_next && fence > f->paging_completed && !f->in_recovery &&
            !vidmm_fence_paging_stopped_locked(a) && !f->adapter_removed;
    pthread_mutex_unlock(&a->fence_lock);
    return r;
}

void vidmm_fence_set_recovery(struct vidmm_adapter *a, int running)
{
    pthread_mutex_lock(&a->fence_lock);
    a->fence->in_recovery = running;   /* waiters read it under the fence lock */
    pthread_mutex_unlock(&a->fence_lock);
}

int vidmm_fence_paging_faulted(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    int r = a->fence->paging_fault;
    pthread_mutex_unlock(&a->fence_lock);
    return r;
}

void vidmm_fence_seen_now(struct vidmm_adapter *a, int node)
{
    pthread_mutex_lock(&a->fence_lock);
    if (node < 0)
        a->fence->paging_seen_ns = vidmm_fence_now();
    else
        a->fence->node_seen_ns[node] = vidmm_fence_now();
    pthread_mutex_unlock(&a->fence_lock);
}

void vidmm_fence_node_reset_locked(struct vidmm_adapter *a, uint32_t node, uint64_t now)
{
    struct vidmm_fence_state *f = a->fence;
    f->node_completed[node]++;
    f->node_seen[node] = f->node_completed[node];
    f->node_seen_ns[node] = now;
}

uint64_t vidmm_fence_adapter_reset_locked(struct vidmm_adapter *a, uint64_t now)
{
    struct vidmm_fence_state *f = a->fence;
    uint64_t done_before = f->paging_completed;
    if (f->paging_fault && f->paging_fault_before < done_before)
        done_before = f->paging_fault_before;   /* the faulted buffer and what followed: undefined */
    f->paging_fault = 0;
    if (f->paging_next - 1 > f->paging_completed)
        f->paging_completed = f->paging_next - 1;
    f->paging_submitted = f->paging_completed;
    f->paging_seen = f->paging_completed;
    f->paging_seen_ns = now;
    for (uint32_t n = 0; n < VIDMM_MAX_NODES; n++) {
        f->node_completed[n] = f->node_submitted[n];
        f->node_seen[n] = f->node_completed[n];
        f->node_seen_ns[n] = now;
    }
    f->generation++;
    return done_before;
}

uint64_t vidmm_fence_generation(const struct vidmm_adapter *a)
{
    return a->fence->generation;
}

struct vidmm_tdr_stats *vidmm_fence_stats(struct vidmm_adapter *a)
{
    return &a->fence->stats;
}

void vidmm_fence_set_timeout(struct vidmm_adapter *a, uint64_t timeout_ns)
{
    pthread_mutex_lock(&a->fence_lock);
    a->fence->timeout_ns = timeout_ns;
    pthread_cond_broadcast(&a->fence_cond);   /* waiters pick the new slice */
    pthread_mutex_unlock(&a->fence_lock);
}

void vidmm_fence_get_stats(struct vidmm_adapter *a, struct vidmm_tdr_stats *out)
{
    pthread_mutex_lock(&a->fence_lock);
    *out = a->fence->stats;
    out->timeout_ns = a->fence->timeout_ns;
    pthread_mutex_unlock(&a->fence_lock);
}
