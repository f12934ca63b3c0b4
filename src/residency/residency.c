/*
 * residency.c - residency requirement lists, eviction and restore.
 *
 * Model (WDDM 2).  Each device keeps a list of the allocations it needs
 * resident, with a reference count per (device, allocation) pair
 * (struct vidmm_residency_ref, linked into both the device's list and the
 * allocation's).  An allocation is either resident - it has a GPU
 * placement, and its PTEs in every process are valid - or evicted: its
 * bytes live in system pages (its placement is then the system backing)
 * and its PTEs are invalid, so a GPU access faults.
 *
 * Eviction under pressure.  When a memory segment cannot hold an
 * allocation being placed or restored, make_room() asks the eviction
 * policy for the segment's resident allocations in eviction order and
 * evicts, in four passes, what it may (D42, D62):
 *   0. offered allocations (their content is simply dropped);
 *   1. allocations no device lists;
 *   2. listed allocations whose every listing process is over its budget
 *      in the segment's group: a process within its budget keeps its
 *      devices' lists, also against its own later requests;
 *   3. for a requester that stays within its fair share of the segment,
 *      listed allocations whose every listing process is another one
 *      over its fair share of that segment, whatever their budgets.
 * Every supported segment is tried with passes 0-1 before pass 2 runs
 * anywhere, and with passes 0-2 before pass 3.
 * Never: allocations of the request being served (pinned by epoch),
 * locked or displayed ones, ones submitted GPU work still uses (busy;
 * when no segment has room otherwise, the restore waits for that work
 * and tries again), or ones of higher priority than the request
 * (MAXIMUM only by MAXIMUM).  When no victim is left the request tries
 * its next segment; priority therefore decides how hard a preference is
 * honoured.  A contiguous request (AccessedPhysically, primaries) that
 * no hole can hold is planned with the eviction scan instead: only the
 * blocks overlapping the cheapest hole formed from candidates in that
 * order are evicted (docs/EVICTION.md).
 *
 * Backing copy.  An allocation restored from system memory keeps its
 * system pages as a backing copy while it is resident in a memory
 * segment.  When it is evicted and known not written since
 * (VIDMM_EVICT_NOT_WRITTEN_TO), the copy is current and the content is
 * discarded instead of transferred.  Any CPU lock or explicit move drops
 * the copy.  Offered allocations are discarded outright: their content is
 * lost and reclaim says so.
 *
 * Paging is asynchronous: evictions and restores are submitted, not
 * waited for (the engine runs paging buffers in order, so a page freed by
 * an eviction is only reused by later operations), and make-resident
 * returns VIDMM_PENDING with a value of the device's paging-queue fence.
 * CPU access waits: lock, destroy and every freeing of system pages drain
 * the paging queue first.
 */
#include "model/objects.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "paging_process/paging_process.h"
#include "fence/hang.h"
#include "fence/inflight.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"
#include "residency/res_state.h"

#include <stdio.h>
#include <string.h>


/* ---- policy state ---------------------------------------------------- */

vidmm_status vidmm_residency_init(struct vidmm_adapter *a)
{
    struct vidmm_residency_mgr *r = vidmm_hzalloc(a->ha, VIDMM_SITE_RES_STATE, sizeof(*r), _Alignof(struct vidmm_residency_mgr));
    if (!r)
        return VIDMM_E_NO_HOST_MEMORY;
    a->res = r;
    vidmm_evict_scan_init(&r->evict_scan, a->ha);
    r->policy = &vidmm_policy_lru;
    vidmm_status st = r->policy->create(a->ha, a->segment_count, &r->policy_state);
    if (st < 0)
        vidmm_residency_fini(a);
    return st;
}

void vidmm_residency_fini(struct vidmm_adapter *a)
{
    struct vidmm_residency_mgr *r = a->res;
    if (!r)
        return;
    vidmm_evict_scan_fini(&r->evict_scan);
    if (r->policy && r->policy_state)
        r->policy->destroy(r->policy_state);
    vidmm_hfree(a->ha, r, sizeof(*r), _Alignof(struct vidmm_residency_mgr));
    a->res = NULL;
}

void vidmm_residency_init_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al, vidmm_handle h,
                                     uint32_t priority)
{
    al->res.pe.allocation = h;
    al->res.pe.priority = priority;
    al->res.pe.next_use = VIDMM_NEXT_USE_NEVER;
    al->res.pe.last_use = vidmm_residency_clock_locked(a);
}

uint64_t vidmm_residency_clock_locked(const struct vidmm_adapter *a)
{
    return a->res->clock;
}

void vidmm_residency_use(struct vidmm_adapter *a, struct vidmm_allocation *const *list, uint32_t n)
{
    struct vidmm_residency_mgr *r = a->res;
    uint64_t now = ++r->clock;
    for (uint32_t i = 0; i < n; i++) {
        struct vidmm_allocation *al = list[i];
        al->res.pe.last_use = now;
        if (al->res.in_memory_segment)
            r->policy->touch(r->policy_state, &al->res.pe);
    }
}

uint64_t vidmm_residency_request_begin(struct vidmm_adapter *a)
{
    return ++a->res->epoch;
}

void vidmm_residency_request_end(struct vidmm_adapter *a)
{
    a->res->epoch++;
}


static void owned_unlink(struct vidmm_process *p, struct vidmm_allocation *al)
{
    if (al->owned.prev)
        al->owned.prev->owned.next = al->owned.next;
    else
        p->res.owned_first = al->owned.next;
    if (al->owned.next)
        al->owned.next->owned.prev = al->owned.prev;
    al->owned.prev = al->owned.next = NULL;
    p->res.owned_allocations--;
}

void vidmm_residency_set_owner(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_process *p)
{
    vidmm_residency_leave(a, al);
    struct vidmm_process *was = vidmm_residency_owner_process(a, al);
    if (was)
        owned_unlink(was, al);
    if (p) {
        al->owned.prev = NULL;
        al->owned.next = p->res.owned_first;
        if (p->res.owned_first)
            p->res.owned_first->owned.prev = al;
        p->res.owned_first = al;
        p->res.owned_allocations++;
    }
    al->res.pe.process = p ? p->self : 0;
    al->res.owned = p != NULL;
    vidmm_residency_enter(a, al);
}

void vidmm_residency_fold(struct vidmm_adapter *a, struct vidmm_allocation *al, int keep)
{
    (void)a;
    uint16_t gen = (uint16_t)VIDMM_HANDLE_GEN(al->self);
    for (struct vidmm_residency_ref *r = al->res.refs; r; r = r->al_next) {
        struct vidmm_residency_slot *e = vidmm_residency_slot_of(r->dev, al->self);
        if (!e || !e->ok || e->gen != gen)
            continue;
        r->count += e->extra;
        al->res.ref_total += e->extra;
        e->extra = 0;
        if (e->clock > al->res.use_clock)
            al->res.use_clock = e->clock;
        e->ok = (uint8_t)(keep != 0);
    }
}

uint32_t vidmm_residency_references(const struct vidmm_adapter *a, const struct vidmm_allocation *al)
{
    (void)a;
    uint32_t n = al->res.ref_total;
    uint16_t gen = (uint16_t)VIDMM_HANDLE_GEN(al->self);
    for (const struct vidmm_residency_ref *r = al->res.refs; r; r = r->al_next) {
        const struct vidmm_residency_slot *e = vidmm_residency_slot_of(r->dev, al->self);
        if (e && e->ok && e->gen == gen)
            n += e->extra;
    }
    return n;
}

void vidmm_residency_leave(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    vidmm_residency_fold(a, al, 0);   /* the fast entries stand for the state that changes now */
    if (al->res.in_memory_segment) {
        a->res->policy->remove(a->res->policy_state, &al->res.pe, VIDMM_POLICY_EVICTED);
        al->res.in_memory_segment = 0;
    }
    struct vidmm_process *p = vidmm_residency_owner_process(a, al);
    if (p && al->resident) {
        VIDMM_BUG_ON_MSG(a, p->res.seg_usage[al->pl.segment_id] < al->size,
                         "residency usage: a process's resident bytes in a segment would go below zero");
        p->res.seg_usage[al->pl.segment_id] -= al->size;
        a->res->usage_total[vidmm_seg_is_memory(a, al->pl.segment_id) ? 0 : 1] -= al->size;
    }
}

void vidmm_residency_enter(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    struct vidmm_process *p = vidmm_residency_owner_process(a, al);
    if (p && al->resident) {
        p->res.seg_usage[al->pl.segment_id] += al->size;
        a->res->usage_total[vidmm_seg_is_memory(a, al->pl.segment_id) ? 0 : 1] += al->size;
    }
    if (al->resident && vidmm_seg_is_memory(a, al->pl.segment_id)) {
        VIDMM_BUG_ON_MSG(a, al->res.in_memory_segment,
                         "eviction policy: an allocation enters the policy while it is in it");
        if (al->res.use_clock > al->res.pe.last_use)
            al->res.pe.last_use = al->res.use_clock;   /* uses while outside the policy */
        al->res.pe.segment_id = al->pl.segment_id;
        al->res.pe.size = al->size;
        a->res->policy->insert(a->res->policy_state, &al->res.pe);
        al->res.in_memory_segment = 1;
    }
}

void vidmm_residency_drop_backing(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    if (al->res.backing.sys)
        vidmm_unplace(a, al, &al->res.backing);
    al->res.backing_valid = 0;
}

/* ---- eviction ---------------------------------------------------------- */

/* An eviction the driver refused: al is resident again where it was;
 * write its entries back.  Refused too, they may be invalid or half
 * written: a reset rewrites them (al owns everything they may reach). */
static void repoint(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    vidmm_status r = vidmm_process_remap_allocation(a, al);
    if (r >= 0)
        r = vidmm_paging_flush(a);
    if (r < 0)
        vidmm_reset_schedule(a);
}

/* Move a resident allocation out: content to system pages (or dropped),
 * PTEs invalid.  Fails only for host memory / commit limit, changing
 * nothing. */
static vidmm_status evict_one(struct vidmm_adapter *a, struct vidmm_allocation *al, int not_written)
{
    vidmm_status st;
    int discard = al->res.offered || (not_written && al->res.backing.sys && al->res.backing_valid);
    uint32_t from = al->pl.segment_id;
    int had_backing = al->res.backing.sys != NULL;
    uint32_t extents = !al->pl.sys && al->pl.pages.count <= 2 ? al->pl.pages.count : 0;
    uint64_t ext_off[2] = { 0, 0 }, ext_len[2] = { 0, 0 };
    for (uint32_t i = 0; i < extents; i++) {
        ext_off[i] = al->pl.pages.ext[i].offset;
        ext_len[i] = al->pl.pages.ext[i].size;
    }
    enum vidmm_layout layout = al->layout;
    if (vidmm_seg_is_memory(a, al->pl.segment_id)) {
        struct vidmm_placement bk = al->res.backing;
        int fresh = !bk.sys;
        if (fresh) {
            st = vidmm_place(a, al, 0, 0, &bk);
            if (st < 0)
                return st;
        }
        vidmm_residency_leave(a, al);
        if (discard) {
            st = vidmm_discard_content(a, al, &al->pl);
            if (st >= 0 && al->res.offered && (fresh || !al->res.backing_valid)) {
                /* The content is gone: it reads as zero.  Wait first: an
                 * earlier restore may still be reading the old copy. */
                st = vidmm_paging_flush(a);
                if (st >= 0)
                    memset(bk.sys, 0, (size_t)al->size);
                al->res.content_lost = 1;
                al->res.offer_discarded = 1;   /* reclaim reports it even if a submission restores it first */
            }
        } else {
            st = vidmm_copy_content(a, al, &al->pl, &bk);
        }
        if (st >= 0) {
            al->resident = 0;
            st = vidmm_process_remap_allocation(a, al);   /* invalid entries before the pages go */
        }
        /* Submitted, not waited for: the freed pages are only reused by
         * later paging operations, which the engine runs in order. */
        if (st >= 0)
            st = vidmm_paging_submit(a, NULL);
        if (st < 0) {
            /* A driver failure: keep the allocation where it was. */
            al->resident = 1;
            repoint(a, al);
            if (fresh)
                vidmm_unplace(a, al, &bk);   /* no entry ever reached it */
            vidmm_residency_enter(a, al);
            return st;
        }
        vidmm_unplace(a, al, &al->pl);
        al->pl = bk;
        memset(&al->res.backing, 0, sizeof(al->res.backing));
        al->res.backing_valid = 0;
        a->res->stats.evictions++;
        if (discard) {
            a->res->stats.discards++;
            a->res->stats.bytes_discarded += al->size;
        } else {
            a->res->stats.bytes_evicted += al->size;
        }
    } else {
        /* System pages: nothing moves; the aperture mapping (kept only
         * while resident) and the PTEs go. */
        vidmm_residency_leave(a, al);
        al->resident = 0;
        st = vidmm_process_remap_allocation(a, al);   /* invalid entries first */
        if (st >= 0)
            st = vidmm_paging_submit(a, NULL);
        if (st >= 0 && al->pl.ap_mapped && !al->displayed)
            st = vidmm_aperture_unmap(a, al, &al->pl);   /* then the aperture range (the pages stay) */
        if (st < 0) {
            /* Resident again, its entries valid again, before it says so. */
            al->resident = 1;
            repoint(a, al);
            vidmm_residency_enter(a, al);
            return st;
        }
        if (!al->pl.ap_mapped)
            al->pl.segment_id = 0;
        a->res->stats.evictions++;
    }
    al->res.evictions++;
    if (a->res->undo_epoch && al->res.undo.epoch != a->res->undo_epoch) {
        /* A victim of a make-resident that may still fail: remember
         * where it was so the failure can put it back. */
        al->res.undo.epoch = a->res->undo_epoch;
        al->res.undo.kind = VIDMM_UNDO_VICTIM;
        al->res.undo.seg = from;
        al->res.undo.top = (al->info.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT) != 0;
        al->res.undo.fresh = !had_backing;   /* its system pages were made for this eviction */
        al->res.undo.extents = (uint8_t)extents;   /* to go back on the very same pages */
        al->res.undo.layout = layout;
        for (uint32_t i = 0; i < extents; i++) {
            al->res.undo.off[i] = ext_off[i];
            al->res.undo.len[i] = ext_len[i];
        }
    }
    vidmm_residency_enter(a, al);
    return VIDMM_OK;
}

vidmm_status vidmm_residency_evict(struct vidmm_adapter *a, struct vidmm_allocation *al, int not_written)
{
    VIDMM_ASSERT_LOCKED(a);
    vidmm_inflight_wait_idle(a, al);   /* an explicit evict waits for the work that uses it */
    if (al->busy)
        return VIDMM_E_TIMEOUT;      /* an engine hung: reset as the entry returns */
    return evict_one(a, al, not_written);
}

/* Is process p over its budget in group g?  Cached for one eviction
 * round (res_over_epoch): the budget walks every process. */
static int over_budget(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g)
{
    if (p->res.over_epoch[g] != a->res->over_epoch) {
        p->res.over_epoch[g] = a->res->over_epoch;
        p->res.over_val[g] = vidmm_residency_usage(a, p, g) > vidmm_residency_budget(a, p, g);
    }
    return p->res.over_val[g];
}

/* Pass 3 (D62): may a request of rp that adds `want` bytes to v's
 * segment take v?  Only while rp stays within its fair share of that
 * segment, and only when every process listing v is another one over
 * its fair share there - whatever their budgets for the whole group.
 * One share for all: the requester counts among the holders. */
static int fair_victim(struct vidmm_adapter *a, const struct vidmm_allocation *v, const struct vidmm_process *rp,
                       uint64_t want)
{
    uint32_t id = v->pl.segment_id;
    if (!rp || !vidmm_seg_is_memory(a, id))
        return 0;
    uint64_t fair = vidmm_residency_fair_share(a, id, rp);
    if (rp->res.seg_usage[id] + want > fair)
        return 0;
    for (const struct vidmm_residency_ref *r = v->res.refs; r; r = r->al_next) {
        const struct vidmm_process *q = r->dev->process;
        if (q == rp || q->res.seg_usage[id] <= fair)
            return 0;
    }
    return 1;
}

/* May v go to make room for req (NULL: a page table) of process rp
 * (NULL: none), which adds `want` bytes, at priority prio in pass
 * `pass`?  Passes (D22, revised by D42 and D62):
 *   0 offered allocations (their content may be dropped);
 *   1 allocations no device lists;
 *   2 listed allocations whose every listing process is over its budget
 *     in v's segment group: a process within its budget keeps what its
 *     devices made resident (their submissions rely on it), and a device
 *     never loses its own list to its own request unless its budget
 *     requires it;
 *   3 listed allocations whose every listing process is over its fair
 *     share of v's segment, for a requester that stays within its own
 *     (segments are shared out one by one, whatever the group budgets). */
/* count_busy: planning, not evicting - allocations submitted work still
 * uses count (a restore waits for that work). */
static int evictable(struct vidmm_adapter *a, const struct vidmm_allocation *v, const struct vidmm_allocation *req,
                     const struct vidmm_process *rp, uint64_t want, uint32_t prio, int pass, int count_busy)
{
    if (v == req || v->res.request_epoch == a->res->epoch || v->lock_count || v->displayed || (v->busy && !count_busy))
        return 0;                  /* busy: submitted GPU work still uses it (its fence has not passed) */
    if (v->res.pe.priority > prio || (v->res.pe.priority >= VIDMM_PRIORITY_MAXIMUM && prio < VIDMM_PRIORITY_MAXIMUM))
        return 0;
    if (v->res.offered)
        return 1;
    if (pass == 0)
        return 0;
    if (v->res.ref_total == 0)
        return 1;
    if (pass == 1)
        return 0;
    unsigned g = vidmm_residency_group_of(a, v->pl.segment_id);
    int over = 1;
    for (const struct vidmm_residency_ref *r = v->res.refs; r && over; r = r->al_next)
        over = over_budget(a, r->dev->process, g);
    if (over)
        return 1;
    return pass >= 3 && fair_victim(a, v, rp, want);
}

#define VICTIM_BATCH 32u

/* Evict from segment id until `need` more bytes are free, or nothing
 * more may go (passes 0..max_pass).  VIDMM_E_NO_SEGMENT_SPACE when
 * nothing was evicted. */
static vidmm_status make_room(struct vidmm_adapter *a, uint32_t id, struct vidmm_allocation *req, uint64_t need,
                              uint32_t prio, int max_pass)
{
    uint64_t freed = 0;
    const struct vidmm_process *rp = req ? vidmm_residency_owner_process(a, req) : NULL;
    for (int pass = 0; pass <= max_pass && freed < need; pass++) {
        /* Pass 3 takes one victim at a time: each changes who is over
         * its fair share. */
        uint32_t cap = pass == 3 ? 1 : VICTIM_BATCH;
        for (;;) {
            /* Collect a batch first: the policy's order must not change
             * under the iteration. */
            struct vidmm_allocation *batch[VICTIM_BATCH];
            uint32_t n = 0;
            uint64_t bytes = 0;
            a->res->over_epoch++;   /* budgets and fair shares move as victims leave */
            for (struct vidmm_policy_entry *e = a->res->policy->first(a->res->policy_state, id); e && n < cap;
                 e = a->res->policy->next(a->res->policy_state, e)) {
                struct vidmm_allocation *v = ENTRY_OF(e);
                if (!evictable(a, v, req, rp, req ? req->size : 0, prio, pass, 0))
                    continue;
                batch[n++] = v;
                bytes += v->size;
                if (freed + bytes >= need)
                    break;
            }
            if (n == 0)
                break;
            for (uint32_t i = 0; i < n; i++) {
                vidmm_status st = evict_one(a, batch[i], 0);
                if (st < 0)
                    return freed ? VIDMM_OK : st;
                freed += batch[i]->size;
            }
            if (freed >= need)
                break;
        }
    }
    return freed ? VIDMM_OK : VIDMM_E_NO_SEGMENT_SPACE;
}

/* ---- placement with eviction ------------------------------------------ */

/* Supported segments in placement order (as placement.c orders them). */
uint32_t vidmm_residency_order(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         uint32_t order[VIDMM_MAX_SEGMENTS], int top[VIDMM_MAX_SEGMENTS])
{
    uint32_t n = 0, taken = 0;
    int from_end = (al->info.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT) != 0;
    for (uint32_t slot = 0; slot < VIDMM_PREF_SLOTS; slot++) {
        uint32_t id = VIDMM_PREF_ID(al->info.preferred_segment, slot);
        if (id == 0)
            break;
        if (taken & VIDMM_SEGMENT_BIT(id))
            continue;
        taken |= VIDMM_SEGMENT_BIT(id);
        top[n] = VIDMM_PREF_TOP(al->info.preferred_segment, slot) ? 1 : from_end;
        order[n++] = id;
    }
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t id = 1; id < a->segment_count; id++) {
            if (!(al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(id)) || (taken & VIDMM_SEGMENT_BIT(id)))
                continue;
            if ((pass == 0) != vidmm_seg_is_memory(a, id))
                continue;
            taken |= VIDMM_SEGMENT_BIT(id);
            top[n] = from_end;
            order[n++] = id;
        }
    return n;
}

unsigned vidmm_residency_home(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t *only_memory)
{
    uint32_t order[VIDMM_MAX_SEGMENTS];
    int top[VIDMM_MAX_SEGMENTS];
    uint32_t n = vidmm_residency_order(a, al, order, top), mem = 0;
    for (uint32_t k = 0; k < n && only_memory; k++) {
        if (!vidmm_seg_is_memory(a, order[k])) {
            mem = 0;
            break;
        }
        mem |= VIDMM_SEGMENT_BIT(order[k]);
    }
    if (only_memory)
        *only_memory = mem;
    return n ? vidmm_residency_group_of(a, order[0]) : VIDMM_SEGMENT_GROUP_NON_LOCAL;
}

/* The group an allocation is meant for: that of its first choice. */
unsigned vidmm_residency_home_group(const struct vidmm_adapter *a, const struct vidmm_allocation *al)
{
    return vidmm_residency_home(a, al, NULL);
}

/* A contiguous request of size/align that free space cannot hold: plan
 * with the eviction scan (src/seg/evict_scan.c, drm_mm_scan style) over
 * the candidates in policy order and pass order, then evict only the
 * blocks that overlap the hole it found.  VIDMM_E_NO_SEGMENT_SPACE when
 * no hole can be formed from what may be evicted. */
static vidmm_status scan_room(struct vidmm_adapter *a, uint32_t id, struct vidmm_allocation *req, uint64_t size,
                              uint64_t align, uint32_t prio, int max_pass)
{
    struct vidmm_segment *s = &a->seg[id];
    if (align < s->page_size)
        align = s->page_size;
    vidmm_status st = vidmm_evict_scan_begin(&a->res->evict_scan, &s->ra, size, align, 0, 0,
                                             (uint32_t)(s->ra.live_count < UINT32_MAX ? s->ra.live_count : UINT32_MAX));
    if (st < 0)
        return st;
    int found = 0;
    const struct vidmm_process *rp = req ? vidmm_residency_owner_process(a, req) : NULL;
    a->res->over_epoch++;
    for (int pass = 0; pass <= max_pass && !found; pass++)
        for (struct vidmm_policy_entry *e = a->res->policy->first(a->res->policy_state, id); e && !found;
             e = a->res->policy->next(a->res->policy_state, e)) {
            struct vidmm_allocation *v = ENTRY_OF(e);
            if (!evictable(a, v, req, rp, size, prio, pass, 0))
                continue;
            /* Extents already added in an earlier pass answer
             * INVALID_HANDLE: nothing to do. */
            for (uint32_t x = 0; x < v->pl.pages.count && !found; x++)
                found = vidmm_evict_scan_add(&a->res->evict_scan, v->pl.pages.ext[x].node, (uint64_t)(uintptr_t)v) == 1;
        }
    st = VIDMM_E_NO_SEGMENT_SPACE;
    if (found) {
        st = VIDMM_OK;
        for (uint32_t i = 0; i < a->res->evict_scan.victim_count && st >= 0; i++) {
            struct vidmm_allocation *v = (struct vidmm_allocation *)(uintptr_t)a->res->evict_scan.victims[i].tag;
            if (v->resident && v->pl.segment_id == id)   /* listed once per extent: evict once */
                st = evict_one(a, v, 0);
        }
    }
    vidmm_evict_scan_end(&a->res->evict_scan);
    return st;
}

uint64_t vidmm_residency_evictable_bytes(struct vidmm_adapter *a, uint32_t id, const struct vidmm_process *p)
{
    uint64_t n = 0;
    a->res->over_epoch++;
    for (struct vidmm_policy_entry *e = a->res->policy->first(a->res->policy_state, id); e; e = a->res->policy->next(a->res->policy_state, e)) {
        struct vidmm_allocation *v = ENTRY_OF(e);
        if (evictable(a, v, NULL, p, 0, UINT32_MAX, 3, 1))
            n += v->size;
    }
    return n;
}

vidmm_status vidmm_residency_make_room(struct vidmm_adapter *a, uint32_t id, uint64_t size, uint64_t align)
{
    if (!vidmm_seg_is_memory(a, id))
        return VIDMM_E_NO_SEGMENT_SPACE;
    vidmm_status st = scan_room(a, id, NULL, size, align, UINT32_MAX, 1);
    if (st == VIDMM_E_NO_HOST_MEMORY) {   /* no memory for the roster: evict in order */
        const struct vidmm_segment *s = &a->seg[id];
        uint64_t free_bytes = s->size - s->committed;
        st = make_room(a, id, NULL, size > free_bytes ? size - free_bytes : 1, UINT32_MAX, 1);
    }
    return st == VIDMM_E_COMMIT_LIMIT ? VIDMM_E_NO_SEGMENT_SPACE : st;
}

/* Place al in memory segment id, evicting as needed (passes 0..max_pass;
 * max_pass < 0: free space only). */
static vidmm_status place_evicting(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t id, int top,
                                   uint32_t prio, int max_pass, struct vidmm_placement *pl)
{
    int contiguous = vidmm_needs_contiguous(a, al, &a->seg[id]);
    for (;;) {
        vidmm_status st = vidmm_place(a, al, id, top, pl);
        if (st != VIDMM_E_NO_SEGMENT_SPACE || max_pass < 0)
            return st;
        if (contiguous) {
            st = scan_room(a, id, al, al->size, al->alignment, prio, max_pass);
            if (st >= 0)
                continue;
            if (st != VIDMM_E_NO_HOST_MEMORY)
                return st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT ? VIDMM_E_NO_SEGMENT_SPACE : st;
            /* No memory for the roster: fall back to evicting in order. */
        }
        const struct vidmm_segment *s = &a->seg[id];
        uint64_t free_bytes = s->size - s->committed;
        uint64_t need = al->size > free_bytes ? al->size - free_bytes : al->size;
        /* Enough bytes are free but not in one piece: evict in policy
         * order until a hole forms (one victim's worth at a time). */
        if (al->size <= free_bytes)
            need = 1;
        st = make_room(a, id, al, need, prio, max_pass);
        if (st < 0)   /* nothing could go, or the driver failed an eviction */
            return st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT ? VIDMM_E_NO_SEGMENT_SPACE : st;
    }
}

/* A restore whose entries the driver refused: back to evicted, the
 * entries written invalid again, and only then the new place freed (its
 * system pages were kept as the backing copy: they are the placement
 * again).  If even the invalid entries are refused, the allocation stays
 * resident where the entries may reach (it owns that memory) and a
 * reset rewrites them. */
static void unrestore(struct vidmm_adapter *a, struct vidmm_allocation *al, int lost, int mapped)
{
    al->resident = 0;
    vidmm_status r = vidmm_process_remap_allocation(a, al);
    if (r >= 0)
        r = vidmm_paging_flush(a);
    if (r < 0) {
        al->resident = 1;
        vidmm_reset_schedule(a);
        return;
    }
    al->res.content_lost = lost;
    if (al->res.backing.sys) {
        struct vidmm_placement gpu;
        vidmm_placement_take(&gpu, &al->pl);
        vidmm_placement_take(&al->pl, &al->res.backing);
        memset(&al->res.backing, 0, sizeof(al->res.backing));
        al->res.backing_valid = 0;
        a->res->stats.bytes_restored -= al->size;   /* counted when the copy was made */
        vidmm_unplace(a, al, &gpu);
    } else if (mapped) {
        (void)vidmm_aperture_unmap_or_quarantine(a, al, &al->pl);
        al->pl.segment_id = 0;
    }
}

/* Restore an evicted allocation into memory segment id (evicting) or
 * map it where it is (aperture / system): prepare (place and copy, or
 * map), then point (its entries written and submitted); it stays
 * resident only when both were (unrestore takes a refused one back). */
static vidmm_status restore_into(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t id, int top,
                                 uint32_t prio, int max_pass, int exact)
{
    vidmm_status st;
    int mapped = 0;   /* the aperture mapping is this restore's */
    if (vidmm_seg_is_memory(a, id)) {
        if (al->lock_count)
            return VIDMM_E_BUSY;   /* a locked evicted allocation stays in system memory */
        struct vidmm_placement dst;
        /* exact: back on the pages an undone eviction took it from. */
        st = exact ? vidmm_place_at(a, al, id, al->res.undo.off, al->res.undo.len, al->res.undo.extents, &dst)
                   : place_evicting(a, al, id, top, prio, max_pass, &dst);
        if (st < 0)
            return st;
        if (exact)
            al->layout = al->res.undo.layout;
        st = vidmm_process_prepare_move(a, al, &dst);
        if (st >= 0)
            st = al->res.content_lost ? vidmm_fill_content(a, al, &dst, 0) : vidmm_copy_content(a, al, &al->pl, &dst);
        if (st >= 0)
            st = vidmm_paging_submit(a, NULL);
        if (st < 0) {
            vidmm_unplace(a, al, &dst);
            return st;
        }
        /* The system pages stay as the backing copy. */
        al->res.backing = al->pl;
        al->res.backing_valid = !al->res.content_lost;
        al->res.gpu_dirty = 0;
        al->pl = dst;
        if (al->pl.pages.count && al->pl.pages.ext == dst.pages.inline_ext)
            al->pl.pages.ext = al->pl.pages.inline_ext;
        a->res->stats.bytes_restored += al->size;
    } else {
        const struct vidmm_segment *s = &a->seg[id];
        int map = s->kind == VIDMM_SEGMENT_KIND_AGP ||
                  (s->kind == VIDMM_SEGMENT_KIND_APERTURE && (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY));
        /* Page tables first, as a move does: system pages cannot keep
         * 64 KB leaf entries, so split them while failing changes
         * nothing. */
        st = vidmm_process_prepare_move(a, al, &al->pl);
        if (st < 0)
            return st;
        if (map && !al->pl.ap_mapped) {
            st = vidmm_aperture_map(a, al, &al->pl, id);
            if (st < 0)
                return st;
            al->pl.segment_id = id;
            mapped = 1;
        }
        if (al->res.content_lost) {
            st = vidmm_paging_flush(a);   /* no GPU access to the old bytes in flight */
            if (st < 0) {
                if (mapped) {   /* evicted again: plain system pages */
                    (void)vidmm_aperture_unmap_or_quarantine(a, al, &al->pl);
                    al->pl.segment_id = 0;
                }
                return st;
            }
            memset(al->pl.sys, 0, (size_t)al->size);
        }
    }
    /* Point: the entries are written, and submitted, before the
     * allocation counts as resident. */
    int lost = al->res.content_lost;
    al->res.content_lost = 0;
    al->resident = 1;
    st = vidmm_process_remap_allocation(a, al);
    if (st >= 0)
        st = vidmm_paging_submit(a, NULL);
    if (st < 0) {
        unrestore(a, al, lost, mapped);
        return st;
    }
    al->res.restores++;
    a->res->stats.restores++;
    return VIDMM_OK;
}

vidmm_status vidmm_residency_restore(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    VIDMM_ASSERT_LOCKED(a);
    if (al->resident)
        return VIDMM_OK;
    uint32_t order[VIDMM_MAX_SEGMENTS];
    int top[VIDMM_MAX_SEGMENTS];
    uint32_t n = vidmm_residency_order(a, al, order, top);
    vidmm_status last = VIDMM_E_NO_SEGMENT_SPACE;
    vidmm_residency_leave(a, al);
    for (int again = 1; again;) {
        again = 0;
        /* First with priorities honoured: a request may only push out
         * allocations of its priority or lower, else it takes its next
         * choice.  When no supported segment takes it that way, priority
         * is a hint, not a wall: the memory segments are tried again
         * evicting anything idle, rather than fail.  Within each, every
         * supported segment is tried in preference order taking only
         * what no device lists (passes 0-1) before anything listed is
         * evicted (pass 2) anywhere, and fair share (pass 3) last. */
        for (int relax = 0; relax < 2 && !again; relax++) {
            uint32_t prio = relax ? UINT32_MAX : al->res.pe.priority;
            int stop = 0;
            for (int max_pass = 1; max_pass <= 3 && !stop; max_pass++) {
                for (uint32_t i = 0; i < n; i++) {
                    if ((relax || max_pass >= 2) && !vidmm_seg_is_memory(a, order[i]))
                        continue;   /* nothing to evict there: tried already */
                    vidmm_status st = restore_into(a, al, order[i], top[i], prio, max_pass, 0);
                    if (st >= 0) {
                        vidmm_residency_enter(a, al);
                        return VIDMM_OK;
                    }
                    last = st;
                    if (st == VIDMM_E_NO_HOST_MEMORY || st == VIDMM_E_DRIVER_FAILURE) {
                        stop = 1;
                        break;
                    }
                }
            }
            if (last != VIDMM_E_NO_SEGMENT_SPACE && last != VIDMM_E_BUSY && last != VIDMM_E_TOO_LARGE &&
                last != VIDMM_E_COMMIT_LIMIT)
                break;
        }
        /* No segment has room among idle allocations: wait for submitted
         * work to end (what it used becomes evictable) and try again. */
        if ((last == VIDMM_E_NO_SEGMENT_SPACE || last == VIDMM_E_BUSY || last == VIDMM_E_TOO_LARGE ||
             last == VIDMM_E_COMMIT_LIMIT) && vidmm_inflight_wait_some(a))
            again = 1;
    }
    vidmm_residency_enter(a, al);
    /* The wait for submitted work stopped on a hang: its reset runs at
     * the entry boundary, which then tries the call again. */
    if (last < 0 && vidmm_reset_pending(a))
        return VIDMM_E_TIMEOUT;
    return last == VIDMM_E_BUSY || last == VIDMM_E_TOO_LARGE || last == VIDMM_E_COMMIT_LIMIT ? VIDMM_E_NO_SEGMENT_SPACE : last;
}

void vidmm_residency_undo(struct vidmm_adapter *a, uint64_t epoch)
{
    a->res->undo_epoch = 0;
    /* What the call made resident goes back out: its system copy is
     * current (nothing ran on it), so this discards, no transfer. */
    uint32_t it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->res.undo.epoch != epoch || al->res.undo.kind != VIDMM_UNDO_RESTORED || !al->resident)
            continue;
        if (evict_one(a, al, 1) < 0)
            continue;   /* the driver failed it: it stays resident, its content intact */
        al->res.content_lost = al->res.undo.lost;
        al->res.evictions--;   /* not an eviction anyone asked for: the counts stay as they were */
        al->res.restores--;
    }
    /* Then the victims, where they were, if that needs no eviction. */
    it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->res.undo.epoch != epoch || al->res.undo.kind != VIDMM_UNDO_VICTIM || al->resident)
            continue;
        vidmm_residency_leave(a, al);
        if (restore_into(a, al, al->res.undo.seg, al->res.undo.top, UINT32_MAX, -1, al->res.undo.extents != 0) >= 0) {
            al->res.evictions--;
            al->res.restores--;
            if (al->res.undo.fresh)   /* it had no system copy before: none now */
                vidmm_residency_drop_backing(a, al);
        }
        vidmm_residency_enter(a, al);
    }
}

/* ---- teardown hooks ------------------------------------------------------ */

void vidmm_residency_unlink_ref(struct vidmm_adapter *a, struct vidmm_residency_ref *r)
{
    struct vidmm_allocation *al = r->al;
    struct vidmm_device *d = r->dev;
    struct vidmm_residency_slot *e = vidmm_residency_slot_of(d, al->self);
    if (e && e->ok && e->gen == (uint16_t)VIDMM_HANDLE_GEN(al->self)) {
        /* Its fast references go with the record. */
        if (e->clock > al->res.use_clock)
            al->res.use_clock = e->clock;
        memset(e, 0, sizeof(*e));
    }
    struct vidmm_residency_ref **pp = &al->res.refs;
    while (*pp != r)
        pp = &(*pp)->al_next;
    *pp = r->al_next;
    if (r->dev_prev)
        r->dev_prev->dev_next = r->dev_next;
    else
        d->res.refs = r->dev_next;
    if (r->dev_next)
        r->dev_next->dev_prev = r->dev_prev;
    VIDMM_BUG_ON_MSG(a, al->res.ref_total < r->count,
                     "residency references: an allocation's total is below the count of one of its records");
    VIDMM_BUG_ON_MSG(a, d->res.ref_count == 0, "residency list: a record on a device's list its count says is empty");
    al->res.ref_total -= r->count;
    d->res.ref_count--;
    vidmm_residency_demand_sub(a, d->process, vidmm_residency_home_group(a, al), al->size);
    vidmm_hfree(a->ha, r, sizeof(*r), _Alignof(struct vidmm_residency_ref));
}

void vidmm_residency_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    while (al->res.refs)
        vidmm_residency_unlink_ref(a, al->res.refs);
    vidmm_residency_leave(a, al);
    struct vidmm_process *owner = vidmm_residency_owner_process(a, al);
    if (owner)
        owned_unlink(owner, al);
    a->res->policy->remove(a->res->policy_state, &al->res.pe, VIDMM_POLICY_DESTROYED);
    vidmm_residency_drop_backing(a, al);
}

void vidmm_residency_device_gone(struct vidmm_adapter *a, struct vidmm_device *d)
{
    while (d->res.refs)
        vidmm_residency_unlink_ref(a, d->res.refs);
    for (uint32_t c = 0; c < d->res.res_dir_len; c++)
        if (d->res.res_dir[c] != vidmm_residency_no_chunk)
            vidmm_hfree(a->ha, d->res.res_dir[c], VIDMM_RES_CHUNK * sizeof(struct vidmm_residency_slot),
                        _Alignof(struct vidmm_residency_slot));
    if (d->res.res_dir)
        vidmm_hfree(a->ha, d->res.res_dir, (size_t)d->res.res_dir_len * sizeof(*d->res.res_dir), _Alignof(struct vidmm_residency_slot *));
    d->res.res_dir = NULL;
    d->res.res_dir_len = 0;
    d->res.res_slot_cap = 0;
    while (d->res.queues) {
        struct vidmm_paging_queue *q = d->res.queues;
        d->res.queues = q->next;
        vidmm_objtab_remove(&a->queues, q->self);
        vidmm_hfree(a->ha, q, sizeof(*q), _Alignof(struct vidmm_paging_queue));
    }
}

void vidmm_residency_process_gone(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (p->res.budget_override[0] || p->res.budget_override[1])
        a->res->budget_overrides--;
    p->res.budget_override[0] = p->res.budget_override[1] = 0;
    /* O(what it owns): its list. */
    while (p->res.owned_first)
        vidmm_residency_set_owner(a, p->res.owned_first, NULL);
}

void vidmm_residency_process_lets_go(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_process *p)
{
    struct vidmm_residency_ref **pp = &al->res.refs;
    while (*pp) {
        if ((*pp)->dev->process == p)
            vidmm_residency_unlink_ref(a, *pp);   /* unlinks *pp: the next one moves up */
        else
            pp = &(*pp)->al_next;
    }
    if (al->res.pe.process == p->self)
        vidmm_residency_set_owner(a, al, NULL);   /* off p's list of owned allocations too */
}
