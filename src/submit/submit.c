/*
 * submit.c - command submission on virtual and physical engines, context
 * fences, and the lifetimes of allocations that submitted work uses.
 *
 * Every submission becomes a record: its context, the context fence
 * value that marks its end, and the allocations it references (the
 * device's residency list in virtual mode, the allocation list in
 * physical mode), each of which has its `busy` count raised.  The driver
 * reports completion through vidmm_cb_notify_context_fence, which only
 * moves the context's completed value (under the fence lock, from any
 * thread); records are retired lazily on vidmm's side - at the next
 * submission, wait, destroy or eviction that needs it - where the busy
 * counts drop.  Eviction skips busy allocations (residency.c) and, when
 * nothing idle may go, waits here for some record to retire; moves, CPU
 * locks and explicit evictions wait for the allocation to go idle.
 *
 * Deferred destruction: destroying a busy allocation hides its handle at
 * once (handle.c refuses zombies), drops it from every residency list,
 * and queues it; it is released (destroy_now) at a later safe point -
 * the start of a public entry, never inside a placement - once idle.
 *
 * Physical mode knows every buffer it patched, adapter-wide (physbuf.c):
 * one still in flight is refused (BUSY), and a buffer submitted again on
 * the same context is patched only where an allocation moved.
 *
 * Locking: the adapter lock (recursive: entries call helpers that take
 * it again; it was this file's submission lock, docs/THREADING.md)
 * serialises every public entry; lock order is adapter lock ->
 * the fence lock.  Internal waits for fences hold the adapter lock (the
 * engines progress without it); vidmm_context_wait does not hold it.
 */
#include "handle/lookup.h"
#include "fence/fence.h"
#include "fence/inflight.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "fence/hang.h"
#include "paging/paging.h"
#include "residency/residency.h"
#include "submit/physbuf.h"
#include "submit/submit.h"
#include "vidmm/submit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int dev_lost(struct vidmm_adapter *a, const struct vidmm_device *d)
{
    pthread_mutex_lock(&a->fence_lock);
    int l = d->lost;
    pthread_mutex_unlock(&a->fence_lock);
    return l;
}


void vidmm_submit_context_gone(struct vidmm_adapter *a, struct vidmm_context *c)
{
    vidmm_inflight_context_gone(a, c);
    vidmm_physbuf_context_gone(a, c);
}

void vidmm_submit_fini(struct vidmm_adapter *a)
{
    vidmm_physbuf_fini(a);
}

/* ---- submission --------------------------------------------------------- */

/* Make the pinned allocations of list resident (restore the evicted),
 * then finish the paging so the engine sees them in place. */
static vidmm_status make_list_resident(struct vidmm_adapter *a, struct vidmm_allocation **list, uint32_t n,
                                       int physical)
{
    vidmm_status st = VIDMM_OK;
    for (uint32_t i = 0; i < n && st >= 0; i++) {
        struct vidmm_allocation *al = list[i];
        if (!al->resident) {
            st = vidmm_residency_restore(a, al);
        } else if (physical && al->pl.sys && !al->pl.ap_mapped && a->aperture_id &&
                   (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) &&
                   (al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(a->aperture_id))) {
            /* Resident in plain system pages (moved to segment 0): a
             * physical engine reaches it only through the aperture. */
            vidmm_residency_leave(a, al);
            st = vidmm_aperture_map(a, al, &al->pl, a->aperture_id);
            if (st >= 0)
                al->pl.segment_id = a->aperture_id;
            vidmm_residency_enter(a, al);
        }
    }
    if (st >= 0)
        st = vidmm_paging_flush(a);
    return st;
}

/* Hand the record over: raise busy counts, mark use for the eviction
 * policy, publish the fence. */
static void commit_record(struct vidmm_adapter *a, struct vidmm_context *c, struct vidmm_submission *r)
{
    struct vidmm_submit_state *s = a->sub;
    for (uint32_t i = 0; i < r->count; i++)
        r->list[i]->busy++;
    vidmm_residency_use(a, r->list, r->count);
    r->ctx = c;
    r->seq = ++s->seq;
    r->next = s->head;   /* order does not matter: retire scans them all */
    s->head = r;
    s->in_flight++;
}

static struct vidmm_submission *new_record(struct vidmm_adapter *a, uint32_t n)
{
    struct vidmm_submission *r = vidmm_hzalloc(a->ha, VIDMM_SITE_SUBMIT_RECORD, sizeof(*r), _Alignof(struct vidmm_submission));
    if (!r)
        return NULL;
    if (n) {
        r->list = vidmm_halloc(a->ha, VIDMM_SITE_SUBMIT_RECORD_LIST, (size_t)n * sizeof(*r->list), _Alignof(struct vidmm_allocation *));
        if (!r->list) {
            vidmm_hfree(a->ha, r, sizeof(*r), _Alignof(struct vidmm_submission));
            return NULL;
        }
    }
    r->count = r->list_cap = n;
    return r;
}

/* Common entry checks: the context in the mode wanted, its device alive. */
static vidmm_status enter(struct vidmm_adapter *a, vidmm_handle context, uint32_t mode, struct vidmm_context **out)
{
    struct vidmm_context *c;
    vidmm_status st = vidmm_context_lookup(a, context, &c);
    if (st < 0)
        return st;
    if (c->mode != mode)
        return vidmm_fail(VIDMM_E_STATE, "context 0x%llx is a %s context", (unsigned long long)context,
                          c->mode == VIDMM_CONTEXT_VIRTUAL ? "virtual" : "physical");
    if (mode == VIDMM_CONTEXT_VIRTUAL ? !a->ops.submit_command_virtual || !c->root_bound
                                      : !a->ops.submit_command_physical || !a->ops.patch)
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "the driver has no %s submission (or the context has no page tables)",
                          mode == VIDMM_CONTEXT_VIRTUAL ? "virtual" : "physical");
    if (dev_lost(a, c->device))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "the device of context 0x%llx is lost", (unsigned long long)context);
    vidmm_inflight_retire(a);
    vidmm_inflight_reap(a);
    *out = c;
    return VIDMM_OK;
}

static vidmm_status submit_to_driver(struct vidmm_adapter *a, struct vidmm_context *c, uint64_t va, const void *buf,
                                     uint32_t size, uint64_t *fence)
{
    struct vidmm_submit_context_args sa;
    memset(&sa, 0, sizeof(sa));
    sa.adapter = a;
    sa.context = c->self;
    sa.node = c->node;
    sa.dma_buffer_virtual_address = va;
    sa.dma_buffer = buf;
    sa.dma_buffer_size = size;
    /* Published before the driver runs it: a synchronous driver signals
     * from inside the call, and the callback ignores values beyond it. */
    pthread_mutex_lock(&a->fence_lock);
    sa.fence = ++c->fence_submitted;
    vidmm_fence_node_submitted_locked(a, c->node, 1);   /* counters only: no clock on the submission path */
    pthread_mutex_unlock(&a->fence_lock);
    vidmm_status st = buf ? a->ops.submit_command_physical(a->driver, &sa)
                          : a->ops.submit_command_virtual(a->driver, &sa);
    if (st < 0) {
        pthread_mutex_lock(&a->fence_lock);
        c->fence_submitted--;   /* never ran: the value is handed out again */
        vidmm_fence_node_submitted_locked(a, c->node, -1);
        pthread_mutex_unlock(&a->fence_lock);
        return st == VIDMM_E_INVALID_ARG ? st : VIDMM_E_DRIVER_FAILURE;
    }
    *fence = sa.fence;
    return VIDMM_OK;
}

static vidmm_status submit_virtual(struct vidmm_adapter *a, vidmm_handle context, uint64_t gpu_va, uint32_t size,
                              uint64_t *fence)
{
    if (!a || !fence || !size || gpu_va > UINT64_MAX - size)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !fence ? "fence is NULL"
                          : !size ? "size 0" : "gpu_va + size overflows");
    *fence = 0;
    struct vidmm_submit_state *s = a->sub;
    struct vidmm_context *c = NULL;
    vidmm_status st = VIDMM_E_STATE;   /* powered down (power.h) */
    if (a->power_state != VIDMM_POWER_D0)
        goto out;
    st = enter(a, context, VIDMM_CONTEXT_VIRTUAL, &c);
    if (st < 0)
        goto out;
    /* The device's residency list, as it is now: what the buffer may
     * touch (vidmm does not look inside it). */
    struct vidmm_device *d = c->device;
    struct vidmm_submission *r = new_record(a, (uint32_t)vidmm_residency_list_length(d));
    if (!r) {
        st = VIDMM_E_NO_HOST_MEMORY;
        goto out;
    }
    uint64_t epoch = vidmm_residency_request_begin(a);   /* pinned: restoring one never evicts another */
    uint32_t n = 0;
    for (struct vidmm_residency_ref *ref = vidmm_residency_list_of(d); ref; ref = ref->dev_next) {
        (void)vidmm_residency_pin(ref->al, epoch);
        r->list[n++] = ref->al;
    }
    st = make_list_resident(a, r->list, n, 0);
    vidmm_residency_request_end(a);   /* unpin */
    /* The buffer may write them: their system copies are no proof of the
     * content after a reset or for standby.  Marked after the restores,
     * which start an allocation clean: one this submission brought back
     * is written by it all the same. */
    for (uint32_t i = 0; st >= 0 && i < n; i++)
        vidmm_residency_gpu_listed(r->list[i]);
    if (st >= 0)
        st = submit_to_driver(a, c, gpu_va, NULL, size, fence);
    if (st < 0) {
        vidmm_inflight_free_record(a, r);
        goto out;
    }
    r->fence = *fence;
    commit_record(a, c, r);
    s->stats.virtual_submissions++;
out:
    return st;
}

vidmm_status vidmm_submit_virtual(struct vidmm_adapter *a, vidmm_handle context, uint64_t gpu_va, uint32_t size,
                                  uint64_t *fence)
{
    VIDMM_ENTRY(a, submit_virtual(a, context, gpu_va, size, fence));
}

static vidmm_status grow_scratch(struct vidmm_adapter *a, uint32_t nal, uint32_t npatch)
{
    struct vidmm_submit_state *s = a->sub;
    if (nal > s->alist_cap) {
        void *n = vidmm_halloc(a->ha, VIDMM_SITE_SUBMIT_SCRATCH_ALIST, (size_t)nal * sizeof(*s->alist), _Alignof(struct vidmm_allocation_list_entry));
        if (!n)
            return VIDMM_E_NO_HOST_MEMORY;
        vidmm_hfree(a->ha, s->alist, (size_t)s->alist_cap * sizeof(*s->alist),
                    _Alignof(struct vidmm_allocation_list_entry));
        s->alist = n;
        s->alist_cap = nal;
    }
    if (npatch > s->plist_cap) {
        void *n = vidmm_halloc(a->ha, VIDMM_SITE_SUBMIT_SCRATCH_PLIST, (size_t)npatch * sizeof(*s->plist), _Alignof(struct vidmm_patch_location));
        if (!n)
            return VIDMM_E_NO_HOST_MEMORY;
        vidmm_hfree(a->ha, s->plist, (size_t)s->plist_cap * sizeof(*s->plist), _Alignof(struct vidmm_patch_location));
        s->plist = n;
        s->plist_cap = npatch;
    }
    return VIDMM_OK;
}

/* Where the GPU reaches a resident AccessedPhysically allocation: one
 * contiguous range of a memory segment, or its aperture mapping. */
static int physical_address(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t *seg,
                            uint64_t *off)
{
    const struct vidmm_placement *pl = &al->pl;
    if (pl->segment_id && a->seg[pl->segment_id].kind == VIDMM_SEGMENT_KIND_MEMORY && pl->pages.count == 1) {
        *seg = pl->segment_id;
        *off = pl->pages.ext[0].offset;
        return 1;
    }
    if (pl->ap_mapped) {
        *seg = pl->ap_segment;
        *off = pl->ap_offset;
        return 1;
    }
    return 0;
}

/* Everything about the lists, before anything changes. */
static vidmm_status check_physical(struct vidmm_adapter *a, const struct vidmm_context *c,
                                   const struct vidmm_submit_physical_args *args)
{
    uint32_t n = args->allocation_count;
    for (uint32_t i = 0; i < n; i++) {
        const struct vidmm_allocation *al =
            vidmm_handle_get_for(a, args->allocations[i].allocation, c->device->process->self);
        if (!al)
            return VIDMM_E_INVALID_HANDLE;
        if (args->allocations[i].flags & ~VIDMM_SUBMIT_WRITE || args->allocations[i].reserved)
            return VIDMM_E_INVALID_ARG;
        if (!(al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY))
            return VIDMM_E_NOT_ACCESSED_PHYSICALLY;   /* the "GPU segments" page: only these have physical references */
    }
    for (uint32_t i = 0; i < args->patch_count; i++) {
        const struct vidmm_patch_location *p = &args->patches[i];
        if (p->allocation_index >= n || p->patch_offset >= args->size ||
            p->allocation_offset >= vidmm_handle_get(a, args->allocations[p->allocation_index].allocation)->size)
            return VIDMM_E_INVALID_ARG;
    }
    return VIDMM_OK;
}

/* Pin the listed allocations (each once, into r) and make them resident. */
static vidmm_status pin_physical(struct vidmm_adapter *a, const struct vidmm_submit_physical_args *args,
                                 struct vidmm_submission *r)
{
    uint64_t epoch = vidmm_residency_request_begin(a);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < args->allocation_count; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, args->allocations[i].allocation);
        if (vidmm_residency_pin(al, epoch)) {
            r->list[distinct++] = al;
        }
    }
    r->count = distinct;
    vidmm_status st = make_list_resident(a, r->list, distinct, 1);
    vidmm_residency_request_end(a);
    return st;
}

/* The allocation list as the driver sees it, in the scratch list. */
static vidmm_status fill_alist(struct vidmm_adapter *a, const struct vidmm_submit_physical_args *args)
{
    struct vidmm_submit_state *s = a->sub;
    for (uint32_t i = 0; i < args->allocation_count; i++) {
        const struct vidmm_allocation *al = vidmm_handle_get(a, args->allocations[i].allocation);
        struct vidmm_allocation_list_entry *le = &s->alist[i];
        uint32_t seg;
        uint64_t off;
        if (!physical_address(a, al, &seg, &off))
            return VIDMM_E_STATE;   /* resident, yet out of physical reach: cannot happen with D3/D6 */
        le->driver_allocation = al->info.driver_allocation;
        le->flags = args->allocations[i].flags & VIDMM_SUBMIT_WRITE ? VIDMM_ALLOCATION_LIST_WRITE : 0;
        le->segment_id = seg;
        le->segment_offset = off;
        le->size = al->size;
    }
    return VIDMM_OK;
}

/* The patch locations to write, into the scratch list: every one, or for
 * a buffer the caller says is unchanged (REUSED) those the buffer's last
 * patch - on this context, for this allocation at this address - did not
 * already write (physbuf.c).  Returns how many. */
static uint32_t pick_patches(struct vidmm_adapter *a, const struct vidmm_context *c,
                             const struct vidmm_submit_physical_args *args, const struct vidmm_physbuf_claim *cl)
{
    struct vidmm_submit_state *s = a->sub;
    int reused = (args->flags & VIDMM_SUBMIT_REUSED) != 0;
    uint32_t np = 0;
    for (uint32_t i = 0; i < args->patch_count; i++) {
        uint32_t k = args->patches[i].allocation_index;
        if (reused && vidmm_physbuf_patched(cl, c, k, args->allocations[k].allocation, &s->alist[k]))
            continue;
        s->plist[np++] = args->patches[i];
    }
    return np;
}

static vidmm_status patch_buffer(struct vidmm_adapter *a, const struct vidmm_context *c,
                                 const struct vidmm_submit_physical_args *args, uint32_t np,
                                 struct vidmm_physbuf_claim *cl)
{
    if (!np)
        return VIDMM_OK;
    struct vidmm_submit_state *s = a->sub;
    struct vidmm_patch_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.context = c->self;
    pa.node = c->node;
    pa.dma_buffer = args->buffer;
    pa.dma_buffer_size = args->size;
    pa.allocation_list = s->alist;
    pa.allocation_list_size = args->allocation_count;
    pa.patch_location_list = s->plist;
    pa.patch_location_list_size = np;
    pa.submission_fence = c->fence_submitted + 1;
    cl->patched = 1;   /* from here the buffer's bytes may differ from what vidmm knew */
    return a->ops.patch(a->driver, &pa) < 0 ? VIDMM_E_INVALID_ARG : VIDMM_OK;
}

static vidmm_status submit_physical(struct vidmm_adapter *a, vidmm_handle context,
                                   struct vidmm_submit_physical_args *args)
{
    if (!a || !args || !args->buffer || !args->size || (args->flags & ~VIDMM_SUBMIT_REUSED) ||
        (args->allocation_count && !args->allocations) ||
        (args->patch_count && !args->patches))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !args ? "args is NULL"
                          : (!args->buffer || !args->size) ? "empty command buffer"
                          : (args->flags & ~VIDMM_SUBMIT_REUSED) ? "flags: only VIDMM_SUBMIT_REUSED is defined"
                          : "a count without its list (allocations or patches NULL)");
    args->fence = 0;
    args->patched = 0;
    struct vidmm_submit_state *s = a->sub;
    struct vidmm_context *c = NULL;
    if (a->power_state != VIDMM_POWER_D0)
        return VIDMM_E_STATE;   /* powered down (power.h) */
    vidmm_status st = enter(a, context, VIDMM_CONTEXT_PHYSICAL, &c);
    if (st >= 0)
        st = check_physical(a, c, args);
    uint32_t n = args->allocation_count;
    struct vidmm_physbuf_claim cl;
    if (st >= 0)   /* VIDMM_E_BUSY while the GPU may still read the buffer: no patching under its feet */
        st = vidmm_physbuf_claim(a, args->buffer, args->size, n, &cl);
    if (st < 0)
        return st;
    st = grow_scratch(a, n, args->patch_count);
    struct vidmm_submission *r = st >= 0 ? new_record(a, n) : NULL;
    if (!r) {
        vidmm_physbuf_release(a, &cl);
        return st < 0 ? st : VIDMM_E_NO_HOST_MEMORY;
    }
    st = pin_physical(a, args, r);
    if (st >= 0)
        st = fill_alist(a, args);
    uint32_t np = st >= 0 ? pick_patches(a, c, args, &cl) : 0;
    if (st >= 0)
        st = patch_buffer(a, c, args, np, &cl);
    uint64_t fence = 0;
    if (st >= 0)
        st = submit_to_driver(a, c, 0, args->buffer, args->size, &fence);
    if (st < 0) {
        vidmm_physbuf_release(a, &cl);   /* a buffer patched, not submitted: what it holds is unknown */
        vidmm_inflight_free_record(a, r);
        return st;
    }
    vidmm_physbuf_commit(a, &cl, c, fence, args->allocations, s->alist);
    /* A write makes the system copy stale: a later eviction copies. */
    for (uint32_t i = 0; i < n; i++)
        if (args->allocations[i].flags & VIDMM_SUBMIT_WRITE)
            vidmm_residency_gpu_written(vidmm_handle_get(a, args->allocations[i].allocation));
    r->fence = fence;
    commit_record(a, c, r);
    s->stats.physical_submissions++;
    s->stats.patch_locations_written += np;
    s->stats.patch_locations_skipped += args->patch_count - np;
    args->fence = fence;
    args->patched = np;
    return VIDMM_OK;
}

vidmm_status vidmm_submit_physical(struct vidmm_adapter *a, vidmm_handle context,
                                   struct vidmm_submit_physical_args *args)
{
    VIDMM_ENTRY(a, submit_physical(a, context, args));
}

/* ---- fences ----------------------------------------------------------- */

static vidmm_status context_fence_plain(struct vidmm_adapter *a, vidmm_handle context, uint64_t *submitted,
                                 uint64_t *completed)
{
    if (!a || (!submitted && !completed))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "submitted and completed are both NULL");
    pthread_mutex_lock(&a->fence_lock);
    struct vidmm_context *c;
    vidmm_status st = vidmm_context_lookup_locked(a, context, &c);
    if (c) {
        if (submitted)
            *submitted = c->fence_submitted;
        if (completed)
            *completed = c->fence_completed;
    }
    pthread_mutex_unlock(&a->fence_lock);
    return st;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_context_fence(struct vidmm_adapter *a, vidmm_handle context, uint64_t *submitted,
                                 uint64_t *completed)
{
    vidmm_error_clear();
    vidmm_status st = context_fence_plain(a, context, submitted, completed);
    vidmm_error_finish(__func__, st);
    return st;
}

/* vidmm_fence_wait_reached's question for a context: looked up again
 * each time (the fence lock is dropped while hangs are looked for). */
struct context_wait {
    vidmm_handle context;
    uint64_t value;
};
static int context_reached(struct vidmm_adapter *a, void *arg)
{
    const struct context_wait *w = arg;
    const struct vidmm_context *c = vidmm_objtab_get(&a->contexts, w->context);
    if (!c)
        return VIDMM_E_INVALID_HANDLE;
    return c->fence_completed >= w->value;
}

static vidmm_status context_wait_plain(struct vidmm_adapter *a, vidmm_handle context, uint64_t value, uint64_t timeout_ns)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    pthread_mutex_lock(&a->fence_lock);
    struct vidmm_context *c;
    vidmm_status st = vidmm_context_lookup_locked(a, context, &c);
    if (st >= 0 && value > c->fence_submitted)   /* would never be signalled */
        st = vidmm_fail(VIDMM_E_INVALID_ARG, "fence %llu: the context has submitted only up to %llu",
                        (unsigned long long)value, (unsigned long long)c->fence_submitted);
    else if (st >= 0)
        st = vidmm_fence_wait_reached(a, context_reached, &(struct context_wait){ context, value }, timeout_ns);
    pthread_mutex_unlock(&a->fence_lock);
    return st;
}

/* Outside VIDMM_ENTRY (see the body above): the thread's last error is
 * kept here. */
vidmm_status vidmm_context_wait(struct vidmm_adapter *a, vidmm_handle context, uint64_t value, uint64_t timeout_ns)
{
    vidmm_error_clear();
    vidmm_status st = context_wait_plain(a, context, value, timeout_ns);
    vidmm_error_finish(__func__, st);
    return st;
}

static vidmm_status submit_get_stats(struct vidmm_adapter *a, struct vidmm_submit_stats *out)
{
    if (!out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "out is NULL");
    struct vidmm_submit_state *s = a->sub;
    vidmm_inflight_retire(a);
    *out = s->stats;
    out->in_flight = s->in_flight;
    return VIDMM_OK;
}

vidmm_status vidmm_submit_get_stats(struct vidmm_adapter *a, struct vidmm_submit_stats *out)
{
    VIDMM_ENTRY(a, submit_get_stats(a, out));
}

/* ---- the checker ------------------------------------------------------------ */

int vidmm_submit_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    const struct vidmm_submit_state *s = a->sub;
    if (!s)
        return 0;
    int e = vidmm_physbuf_check(a, msg, n);
    uint64_t records = 0, zombies = 0;
    for (const struct vidmm_submission *r = s->head; r; r = r->next)
        records++;
    if (records != s->in_flight) {
        e++;
        snprintf(msg, n, "%llu records in flight, counter says %llu", (unsigned long long)records,
                 (unsigned long long)s->in_flight);
    }
    for (const struct vidmm_allocation *al = s->zombies; al; al = al->zombie_next) {
        zombies++;
        if (!al->zombie || !al->live || vidmm_residency_refs_of(al)) {
            e++;
            snprintf(msg, n, "deferred destruction list holds a live or listed allocation");
        }
    }
    if (zombies != s->zombie_count || zombies != s->stats.deferred_destroys - s->stats.deferred_freed) {
        e++;
        snprintf(msg, n, "%llu deferred destructions listed, counters say %llu", (unsigned long long)zombies,
                 (unsigned long long)s->zombie_count);
    }
    /* Busy counts = records naming each allocation. */
    uint32_t used = a->allocations.used;
    uint32_t *cnt = used ? vidmm_hzalloc(a->ha, VIDMM_SITE_SUBMIT_CHECK_COUNTS, (size_t)used * sizeof(uint32_t), _Alignof(uint32_t))
                         : NULL;
    if (cnt) {
        for (const struct vidmm_submission *r = s->head; r; r = r->next)
            for (uint32_t i = 0; i < r->count; i++) {
                uint32_t slot = VIDMM_HANDLE_SLOT(r->list[i]->self);
                if (slot < used && vidmm_objtab_at(&a->allocations, slot) == r->list[i])
                    cnt[slot]++;
                else {
                    e++;
                    snprintf(msg, n, "an in-flight record names a released allocation");
                }
            }
        uint64_t z = 0;
        uint32_t it = 0;
        for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
            uint32_t i = it - 1;
            z += al->zombie != 0;
            if (al->busy != cnt[i]) {
                e++;
                snprintf(msg, n, "allocation %u: busy %u, in-flight records name it %u times", i, al->busy, cnt[i]);
            }
        }
        if (z != zombies) {
            e++;
            snprintf(msg, n, "%llu zombies in the table, %llu listed", (unsigned long long)z,
                     (unsigned long long)zombies);
        }
        vidmm_hfree(a->ha, cnt, (size_t)used * sizeof(uint32_t), _Alignof(uint32_t));
    }
    return e;
}
