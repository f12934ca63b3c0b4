/*
 * paging_queue.c - paging queues (D3DKMTCreatePagingQueue): a device's
 * queues and their monitored fences.  Paging work residency queues is
 * done once the adapter's paging fence passes; a queue hands out its own
 * values for it (vidmm_residency_queue_signal) and moves its fence as
 * the adapter's passes them.  Waits sleep on the fence lock, not the
 * adapter lock.
 */
#include "model/objects.h"
#include "handle/lookup.h"
#include "fence/fence.h"
#include "fence/hang.h"
#include "residency/residency.h"
#include "residency/res_state.h"

#include <errno.h>
#include <time.h>

/* ---- paging queues ------------------------------------------------------ */

vidmm_status vidmm_paging_queue_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_paging_queue **out)
{
    *out = vidmm_objtab_get(&a->queues, h);
    return *out ? VIDMM_OK
                : vidmm_fail(VIDMM_E_INVALID_HANDLE, "paging queue handle 0x%llx: not a live paging queue of this adapter",
                             (unsigned long long)h);
}

static vidmm_status paging_queue_create(struct vidmm_adapter *a, vidmm_handle device, int priority,
                                       vidmm_handle *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    *out = VIDMM_HANDLE_NULL;
    struct vidmm_device *d;
    vidmm_status lookup_st = vidmm_device_lookup(a, device, &d);
    if (lookup_st < 0)
        return lookup_st;
    if (priority < VIDMM_PAGING_QUEUE_BELOW_NORMAL || priority > VIDMM_PAGING_QUEUE_ABOVE_NORMAL)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "priority %d: not a VIDMM_PAGING_QUEUE_* value (%d to %d)", priority,
                          VIDMM_PAGING_QUEUE_BELOW_NORMAL, VIDMM_PAGING_QUEUE_ABOVE_NORMAL);
    if (vidmm_residency_device_lost(a, d))
        return VIDMM_E_DEVICE_LOST;
    struct vidmm_paging_queue *q = vidmm_hzalloc(a->ha, VIDMM_SITE_QUEUE_OBJECT, sizeof(*q), _Alignof(struct vidmm_paging_queue));
    if (!q)
        return VIDMM_E_NO_HOST_MEMORY;
    vidmm_status st = vidmm_objtab_add(&a->queues, a->ha, q, &q->self);
    if (st < 0) {
        vidmm_hfree(a->ha, q, sizeof(*q), _Alignof(struct vidmm_paging_queue));
        return st;
    }
    q->device = d;
    q->priority = priority;
    q->next = d->res.queues;
    d->res.queues = q;
    *out = q->self;
    return VIDMM_OK;
}

static vidmm_status paging_queue_destroy(struct vidmm_adapter *a, vidmm_handle queue)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_paging_queue *q;
    vidmm_status lookup_st = vidmm_paging_queue_lookup(a, queue, &q);
    if (lookup_st < 0)
        return lookup_st;
    struct vidmm_paging_queue **pp = &q->device->res.queues;
    while (*pp != q)
        pp = &(*pp)->next;
    *pp = q->next;
    vidmm_objtab_remove(&a->queues, q->self);
    vidmm_hfree(a->ha, q, sizeof(*q), _Alignof(struct vidmm_paging_queue));
    return VIDMM_OK;
}

/* Under the fence lock: move the fence past the values whose paging work
 * the adapter finished. */
static void resolve(const struct vidmm_adapter *a, struct vidmm_paging_queue *q)
{
    while (q->pend_count && q->pend_fence[q->pend_first] <= vidmm_fence_paging_completed_locked(a)) {
        q->completed = q->pend_value[q->pend_first];
        q->pend_first = (q->pend_first + 1) % VIDMM_QUEUE_PENDING;
        q->pend_count--;
    }
}

/* A new value for paging work that finishes with adapter fence f. */
uint64_t vidmm_residency_queue_signal(struct vidmm_adapter *a, struct vidmm_paging_queue *q, uint64_t f)
{
    pthread_mutex_lock(&a->fence_lock);
    resolve(a, q);
    uint64_t v = ++q->submitted;
    if (f <= vidmm_fence_paging_completed_locked(a)) {
        q->completed = v;   /* already done */
        pthread_mutex_unlock(&a->fence_lock);
        return 0;
    }
    while (q->pend_count == VIDMM_QUEUE_PENDING) {
        /* Too many values in flight: wait for the oldest (hangs are
         * found between slices). */
        if (vidmm_fence_paging_reset_pending_locked(a)) {
            /* The pending reset resets the paging engine (an adapter
             * reset), which passes every paging fence before this entry
             * returns: the oldest value is as good as done.  A node's
             * reset alone passes none of them: wait. */
            q->completed = q->pend_value[q->pend_first];
            q->pend_first = (q->pend_first + 1) % VIDMM_QUEUE_PENDING;
            q->pend_count--;
            break;
        }
        (void)vidmm_fence_wait(a, NULL);
        resolve(a, q);
    }
    uint32_t i = (q->pend_first + q->pend_count) % VIDMM_QUEUE_PENDING;
    q->pend_value[i] = v;
    q->pend_fence[i] = f;
    q->pend_count++;
    pthread_mutex_unlock(&a->fence_lock);
    return v;
}

static vidmm_status paging_queue_fence(struct vidmm_adapter *a, vidmm_handle queue, uint64_t *completed)
{
    if (!a || !completed)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "completed is NULL");
    struct vidmm_paging_queue *q;
    vidmm_status lookup_st = vidmm_paging_queue_lookup(a, queue, &q);
    if (lookup_st < 0)
        return lookup_st;
    pthread_mutex_lock(&a->fence_lock);
    resolve(a, q);
    *completed = q->completed;
    pthread_mutex_unlock(&a->fence_lock);
    return VIDMM_OK;
}

/* vidmm_fence_wait_reached's question for a paging queue. */
struct queue_wait {
    struct vidmm_paging_queue *q;
    uint64_t value;
};
static int queue_reached(struct vidmm_adapter *a, void *arg)
{
    struct queue_wait *w = arg;
    resolve(a, w->q);
    return w->q->completed >= w->value;
}

static vidmm_status paging_queue_wait_plain(struct vidmm_adapter *a, vidmm_handle queue, uint64_t value, uint64_t timeout_ns)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    /* The lookup under the adapter lock, the sleep without it (a CPU wait
     * must not stop other threads; the fence moves under the fence lock). */
    vidmm_adapter_lock(a);
    struct vidmm_paging_queue *q;
    vidmm_status lookup_st = vidmm_paging_queue_lookup(a, queue, &q);
    vidmm_adapter_unlock(a);
    if (lookup_st < 0)
        return lookup_st;
    pthread_mutex_lock(&a->fence_lock);
    /* The queue must outlive the wait (destroying it meanwhile is the caller's error, THREADING.md). */
    vidmm_status st = vidmm_fence_wait_reached(a, queue_reached, &(struct queue_wait){ q, value }, timeout_ns);
    pthread_mutex_unlock(&a->fence_lock);
    return st;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_paging_queue_wait(struct vidmm_adapter *a, vidmm_handle queue, uint64_t value, uint64_t timeout_ns)
{
    vidmm_error_clear();
    vidmm_status st = paging_queue_wait_plain(a, queue, value, timeout_ns);
    vidmm_error_finish(__func__, st);
    return st;
}

vidmm_status vidmm_paging_queue_create(struct vidmm_adapter *a, vidmm_handle device, int priority, vidmm_handle *out)
{
    VIDMM_ENTRY(a, paging_queue_create(a, device, priority, out));
}

vidmm_status vidmm_paging_queue_destroy(struct vidmm_adapter *a, vidmm_handle queue)
{
    VIDMM_ENTRY(a, paging_queue_destroy(a, queue));
}

vidmm_status vidmm_paging_queue_fence(struct vidmm_adapter *a, vidmm_handle queue, uint64_t *completed)
{
    VIDMM_ENTRY(a, paging_queue_fence(a, queue, completed));
}
