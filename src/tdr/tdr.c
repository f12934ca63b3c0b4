/*
 * tdr.c - timeout detection and recovery (vidmm/tdr.h).
 *
 * Detection.  Every engine's progress is tracked from the fences: a node
 * (contexts' work) or the paging engine that holds unfinished work and
 * completed nothing for the timeout is hung.  Submissions and the
 * driver's callbacks only move counters; the detector samples them and
 * keeps, per engine, when it last saw it idle or progressing, so no clock
 * is read on the submission path (a hang is thus found at most one
 * timeout and two slices after the later of its start and the start of
 * the wait that finds it).  Nothing polls on its own:
 * vidmm's waits (paging fences, in-flight submissions, context and
 * paging-queue waits) sleep in slices of a quarter of the timeout and
 * look for hangs between slices, and vidmm_adapter_detect_hangs lets the
 * embedding OS layer look from its own timer.  A waiter that finds a hang
 * recovers it if it can take the adapter lock (recursive: a waiter
 * inside an entry already holds it); otherwise the holder will, since
 * whoever holds the lock and waits runs the same check.  An adapter
 * reset is never run below a public entry: there it is left pending,
 * the holder's waits on the engines it stops fail (its paging waits
 * only once the paging engine is stuck: a node's reset leaves that
 * engine running), and the outermost entry runs it as it unwinds
 * (docs/RESET_AND_POWER.md "Where a reset runs").
 *
 * Recovery, adapter lock held, never nested:
 *  - engine reset: the driver abandons the buffer its node is stuck on
 *    and names it; that buffer's fence is treated as passed and its
 *    context's device is guilty (error state).  Memory is untouched.
 *  - adapter reset when the engine reset is missing, fails, names a
 *    buffer vidmm does not know, or the paging engine hung: the partly
 *    written paging buffer is submitted first (so the reset drops it
 *    with the rest: nothing half-built runs afterwards), the driver drops
 *    all work, every fence passes, the records of submitted work retire,
 *    the driver restarts, page tables are rebuilt (their memory lost its
 *    content), and the content of every allocation is repaired by policy
 *    D30: restored in place from a current system copy, otherwise zero-
 *    filled and counted lost.  Devices whose work was dropped are told
 *    (INNOCENT); the guilty one is in error.
 *
 * An allocation's content is "aborted" when the last paging operation
 * that wrote it (paging_fence, noted by the content-move helpers) had not
 * completed before the reset: its bytes are undefined wherever it lives.
 */
#include "model/objects.h"
#include "handle/handle.h"
#include "handle/lookup.h"
#include "placement/placement.h"
#include "paging_process/paging_process.h"
#include "device/device.h"
#include "fence/fence.h"
#include "fence/hang.h"
#include "fence/inflight.h"
#include "mmu/mmu.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"
#include "tdr/tdr.h"

#include <errno.h>
#include <string.h>

/* ---- devices ---------------------------------------------------------------- */

/* the fence lock held. */
static void device_guilty(struct vidmm_adapter *a, struct vidmm_device *d)
{
    if (d->reset_status != VIDMM_RESET_GUILTY || !d->lost)
        vidmm_fence_stats(a)->devices_guilty++;
    d->lost = 1;
    d->reset_status = VIDMM_RESET_GUILTY;
    d->resets++;
}

static void device_innocent(struct vidmm_adapter *a, struct vidmm_device *d)
{
    if (d->reset_status == VIDMM_RESET_GUILTY && d->lost)
        return;
    d->reset_status = VIDMM_RESET_INNOCENT;
    d->resets++;
    vidmm_fence_stats(a)->devices_innocent++;
}

/* ---- engine reset ---------------------------------------------------------- */

static vidmm_status engine_reset(struct vidmm_adapter *a, uint32_t node)
{
    if (!a->ops.reset_engine)
        return VIDMM_E_NOT_SUPPORTED;
    struct vidmm_reset_engine_args r;
    memset(&r, 0, sizeof(r));
    r.node = node;
    vidmm_status st = a->ops.reset_engine(a->driver, &r);
    if (st < 0)
        return VIDMM_E_DRIVER_FAILURE;
    pthread_mutex_lock(&a->fence_lock);
    uint64_t now = vidmm_fence_now();
    if (!r.context) {
        /* Nothing was stuck after all (it finished meanwhile). */
        pthread_mutex_unlock(&a->fence_lock);
        vidmm_fence_seen_now(a, (int)node);
        return VIDMM_OK;
    }
    struct vidmm_context *c = vidmm_objtab_get(&a->contexts, r.context);
    if (!c || c->node != node || r.last_aborted_fence != c->fence_completed + 1 ||
        r.last_aborted_fence > c->fence_submitted) {
        pthread_mutex_unlock(&a->fence_lock);
        return VIDMM_E_DRIVER_FAILURE;   /* LastAbortedFenceId vidmm cannot place: escalate */
    }
    c->fence_completed = r.last_aborted_fence;
    vidmm_fence_node_reset_locked(a, node, now);
    device_guilty(a, c->device);
    pthread_cond_broadcast(&a->fence_cond);
    pthread_mutex_unlock(&a->fence_lock);
    vidmm_fence_stats(a)->engine_resets++;
    return VIDMM_OK;
}

/* ---- adapter reset ---------------------------------------------------------- */

/* The driver cannot reset: the adapter is removed and every device is
 * put in error (nothing of the adapter can be trusted, D94). */
static void adapter_dead(struct vidmm_adapter *a)
{
    pthread_mutex_lock(&a->fence_lock);
    vidmm_fence_remove_adapter_locked(a);
    struct vidmm_process *p;
    vidmm_for_each_process(a, p)
        for (struct vidmm_device *d = p->devices; d; d = d->next)
            device_guilty(a, d);
    pthread_cond_broadcast(&a->fence_cond);
    pthread_mutex_unlock(&a->fence_lock);
}

/* Rebuild every page table and write every allocation's entries again. */
vidmm_status vidmm_tdr_rebuild_page_tables(struct vidmm_adapter *a)
{
    vidmm_status st = VIDMM_OK, r;
    if (!a->has_gpummu)
        return VIDMM_OK;
    r = vidmm_paging_process_rebuild(a);
    if (r < 0)
        st = r;
    struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        if (vidmm_pt_root(p)) {
            r = vidmm_pt_rebuild(a, p);
            /* Zero reservations have no allocation to remap them below. */
            if (r >= 0)
                r = vidmm_process_rewrite_zero(a, p);
            if (r < 0 && st >= 0)
                st = r;
        }
    }
    uint32_t it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        r = vidmm_process_remap_allocation(a, al);
        if (r < 0 && st >= 0)
            st = r;
    }
    vidmm_for_each_process(a, p) {
        if (vidmm_pt_root(p)) {
            r = vidmm_pt_flush(a, p);
            if (r < 0 && st >= 0)
                st = r;
            vidmm_process_rebind_root(a, p);
        }
    }
    return st;
}

/* Policy D30 for one allocation after the reset. */
static vidmm_status repair(struct vidmm_adapter *a, struct vidmm_allocation *al, uint64_t done_before,
                           int paging_hang)
{
    int aborted = al->paging_fence > done_before;
    vidmm_status st = VIDMM_OK;
    int lost = 0;
    if (al->resident && vidmm_seg_is_memory(a, al->pl.segment_id)) {
        if (!aborted && vidmm_residency_backing_current(al)) {
            st = vidmm_copy_content(a, al, vidmm_residency_backing(al), &al->pl);
            vidmm_fence_stats(a)->allocations_restored++;
        } else {
            lost = 1;
        }
    } else if (aborted) {
        lost = 1;
    }
    if (lost) {
        if (vidmm_residency_has_backing(al))
            vidmm_residency_drop_backing(a, al);
        st = vidmm_fill_content(a, al, &al->pl, 0);
        al->reset_lost++;
        vidmm_fence_stats(a)->allocations_lost++;
        if (aborted && paging_hang && vidmm_residency_owner(al)) {
            /* WDDM: the devices owning what the hung paging touched. */
            struct vidmm_process *p = vidmm_process_get(a, vidmm_residency_owner(al));
            pthread_mutex_lock(&a->fence_lock);
            for (struct vidmm_device *d = p ? p->devices : NULL; d; d = d->next)
                device_guilty(a, d);
            pthread_mutex_unlock(&a->fence_lock);
        }
    }
    return st;
}

static void adapter_reset(struct vidmm_adapter *a, struct vidmm_context *guilty, int paging_hang)
{
    vidmm_fence_stats(a)->adapter_resets++;
    vidmm_entry_carry_reset(a, 0);   /* this is the reset it was carried for */
    /* What is half built goes to the engine so the reset drops it too. */
    (void)vidmm_paging_submit(a, NULL);
    if (!a->ops.reset_from_timeout || a->ops.reset_from_timeout(a->driver) < 0) {
        adapter_dead(a);
        return;
    }
    uint64_t now = vidmm_fence_now();
    pthread_mutex_lock(&a->fence_lock);
    /* Every fence passes; what paging completed after done_before (a
     * faulted buffer and what followed it) is undefined. */
    uint64_t done_before = vidmm_fence_adapter_reset_locked(a, now);
    struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        for (struct vidmm_device *d = p->devices; d; d = d->next) {
            int dropped = 0;
            for (struct vidmm_context *c = d->contexts; c; c = c->next) {
                if (c->fence_completed < c->fence_submitted) {
                    c->fence_completed = c->fence_submitted;
                    dropped = 1;
                }
            }
            if (guilty && guilty->device == d)
                device_guilty(a, d);
            else if (dropped)
                device_innocent(a, d);
        }
    }
    pthread_cond_broadcast(&a->fence_cond);
    pthread_mutex_unlock(&a->fence_lock);

    vidmm_inflight_retire_all(a);
    (void)vidmm_paging_flush(a);   /* every fence passed: the ring empties */
    if (a->ops.restart_from_timeout)
        (void)a->ops.restart_from_timeout(a->driver);

    /* Page tables first: virtual content moves go through them.  The
     * GART survives a reset, but a refused map or unmap may have left it
     * saying something else than vidmm's records: every aperture mapping
     * is written again too.  Once all of it ran, nothing reaches the
     * quarantine (the memory refused steps left reachable): it is
     * freed.  A rebuild the driver refuses leaves entries vidmm cannot
     * vouch for: another reset follows (at the next wait or poll, or the
     * start of the next entry), and the quarantine waits for it. */
    vidmm_status st = vidmm_tdr_rebuild_page_tables(a);
    uint32_t ai = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &ai)) != NULL;) {
        vidmm_status m = vidmm_aperture_rewrite(a, al);
        if (m < 0 && st >= 0)
            st = m;
    }
    vidmm_status f = vidmm_paging_flush(a);
    if (st >= 0 && f >= 0)
        st = vidmm_quarantine_release(a);
    if (st < 0 || f < 0)
        vidmm_reset_schedule(a);
    uint32_t it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;)
        (void)repair(a, al, done_before, paging_hang);
    (void)vidmm_paging_flush(a);
}

/* node >= 0: the oldest unfinished buffer of that node is the guilty
 * one; paging: the paging engine hung or faulted too (or alone). */
static void run_adapter_reset(struct vidmm_adapter *a, int node, int paging)
{
    vidmm_fence_set_recovery(a, 1);
    struct vidmm_context *guilty = NULL;
    if (node >= 0) {
        uint64_t fence = 0;
        guilty = vidmm_inflight_oldest_on_node(a, (uint32_t)node, &fence);
    }
    adapter_reset(a, guilty, paging || node < 0);
    vidmm_fence_set_recovery(a, 0);
}

/* Adapter lock held (the hang detector in a fence wait, or the
 * hang-detection entry).  Confirms the hang on node (-1 = the paging
 * engine) unless the driver calls the engine responsive, and leaves the
 * reset pending: it runs at the entry boundary (vidmm_tdr_run_pending),
 * never under a caller that may hold pointers into what a reset frees
 * or rewrites.  Meanwhile the holder's waits for submitted work return
 * and its operation backs out with VIDMM_E_TIMEOUT; its paging waits go
 * on until the paging engine is confirmed stuck as well (a node's reset
 * leaves that engine running), which this also does while a node's reset
 * is pending: the paging engine joins it, making it an adapter reset.
 * A paging fault needs no confirmation (the buffer's results are wrong
 * whatever the engine does next) but stops nothing.  1 if a reset is
 * pending now that was not, or now covers the paging engine. */
int vidmm_tdr_recover(struct vidmm_adapter *a, int node)
{
    struct vidmm_reset_view v;
    vidmm_fence_reset_view(a, &v);
    if (v.running || (v.pending && (node >= 0 || v.stopped)))
        return 0;   /* being dealt with: nothing more to confirm */
    int fault = node < 0 && !v.paging && vidmm_fence_paging_faulted(a);
    uint32_t responsive = 0;
    if (!fault && a->ops.query_engine_status &&
        a->ops.query_engine_status(a->driver, node < 0 ? VIDMM_PAGING_ENGINE : (uint32_t)node, &responsive) >= 0 &&
        responsive) {
        vidmm_fence_seen_now(a, node);   /* slow, not stuck: another timeout from now */
        return 0;
    }
    if (node >= 0 || !v.paging) {   /* a fault confirmed stuck later is the same paging hang */
        vidmm_fence_stats(a)->hangs++;
        if (node < 0)
            vidmm_fence_stats(a)->paging_hangs++;
    }
    if (node < 0)
        vidmm_fence_mark_paging_pending(a, !fault);
    else
        vidmm_fence_mark_pending(a, node);   /* the owner's waits for submitted work return */
    return 1;
}

/* At an entry boundary: the outermost entry as it unwinds (the entry
 * mechanism, model/entry.c), the hang-detection poll when it took the
 * adapter lock itself, and the recovery points of the close and of a
 * context destroy, whose callers hold nothing a reset frees.  An engine
 * hang gets an engine reset (one fence passes, one device in error,
 * nothing freed) and, when that is missing or fails, an adapter reset,
 * as a paging hang does.  0: nothing was pending; VIDMM_TDR_RAN_ENGINE or
 * VIDMM_TDR_RAN_ADAPTER: what ran. */
int vidmm_tdr_run_pending(struct vidmm_adapter *a)
{
    int node, paging = 0;
    if (!vidmm_fence_take_pending(a, &node, &paging))
        return 0;
    if (node >= 0 && !paging) {
        vidmm_fence_set_recovery(a, 1);
        vidmm_status st = engine_reset(a, (uint32_t)node);
        vidmm_fence_set_recovery(a, 0);
        if (st >= 0)
            return VIDMM_TDR_RAN_ENGINE;
    }
    run_adapter_reset(a, node, paging);
    return VIDMM_TDR_RAN_ADAPTER;
}

/* ---- public entries ---------------------------------------------------------- */

static vidmm_status adapter_set_tdr_timeout_plain(struct vidmm_adapter *a, uint64_t timeout_ns)
{
    if (!a || (timeout_ns && timeout_ns < 1000000))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "timeout %llu ns: 0 (off) or at least 1 ms",
                          (unsigned long long)timeout_ns);
    vidmm_fence_set_timeout(a, timeout_ns);
    return VIDMM_OK;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_adapter_set_tdr_timeout(struct vidmm_adapter *a, uint64_t timeout_ns)
{
    vidmm_error_clear();
    vidmm_status st = adapter_set_tdr_timeout_plain(a, timeout_ns);
    vidmm_error_finish(__func__, st);
    return st;
}

static vidmm_status adapter_detect_hangs_plain(struct vidmm_adapter *a, int *recovered)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    int r = vidmm_hang_poll(a);
    if (recovered)
        *recovered = r;
    return VIDMM_OK;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_adapter_detect_hangs(struct vidmm_adapter *a, int *recovered)
{
    vidmm_error_clear();
    vidmm_status st = adapter_detect_hangs_plain(a, recovered);
    vidmm_error_finish(__func__, st);
    return st;
}

static vidmm_status adapter_get_tdr_stats_plain(const struct vidmm_adapter *a, struct vidmm_tdr_stats *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    struct vidmm_adapter *m = (struct vidmm_adapter *)a;   /* the locks are not part of the state */
    vidmm_adapter_lock(m);
    vidmm_fence_get_stats(m, out);
    vidmm_adapter_unlock(m);
    return VIDMM_OK;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_adapter_get_tdr_stats(const struct vidmm_adapter *a, struct vidmm_tdr_stats *out)
{
    vidmm_error_clear();
    vidmm_status st = adapter_get_tdr_stats_plain(a, out);
    vidmm_error_finish(__func__, st);
    return st;
}
