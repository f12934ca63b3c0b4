/*
 * api.c - the public residency entries: make-resident and evict,
 * priorities, offer/reclaim, the policy switch and statistics (paging
 * queues are paging_queue.c's).
 *
 * make-resident is all or nothing, in named phases (make_resident runs
 * them in order):
 *   validate  the arguments, the device, its paging queue;
 *   scan      pin every member for this request, find its reference
 *             record, count what must come in (or take the fast table's
 *             path when every member is on the list and resident);
 *   budget    add the new references' demand, refuse a list over the
 *             caller's budget or one that cannot fit at all;
 *   reserve   the missing reference records (the only host allocations);
 *   restore   the evicted members, which may evict others, each change
 *             recorded under the call's undo epoch;
 *   roll back on a failure of reserve or restore: what the call made
 *             resident is evicted again (discarded: its system copy is
 *             current; one the driver refuses to evict stays resident,
 *             its content intact), its victims go back to the pages they
 *             left when that needs no eviction, the demand and statistics
 *             are taken back, the new records freed;
 *   commit    link the new records, take the references, tell the
 *             policy (nothing fails from here);
 *   record    submit the paging, hand out the queue's fence value, note
 *             the outcome for the rules checker, notify trims.
 */
#include "model/objects.h"
#include "handle/lookup.h"
#include "fence/fence.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "fence/hang.h"
#include "paging/paging.h"
#include "residency/residency.h"
#include "residency/res_state.h"

#include <string.h>
#include <time.h>

/* ---- make resident ---------------------------------------------------------- */

static struct vidmm_residency_ref *ref_of(struct vidmm_allocation *al, const struct vidmm_device *d)
{
    for (struct vidmm_residency_ref *r = al->res.refs; r; r = r->al_next)
        if (r->dev == d)
            return r;
    return NULL;
}

/* Could the evicted members that only memory segments take (need bytes,
 * segments segs) fit?  Necessary, not sufficient (fragmentation and
 * contiguity are ignored; the restores find out and a failure is
 * undone): free bytes plus what the eviction rules may free for a
 * request.  Cheap when there is room; walks the segments' resident
 * allocations only when there is not. */
static int memory_may_fit(struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t need, uint32_t segs)
{
    uint64_t room = 0;
    for (uint32_t id = 1; id < a->segment_count && room < need; id++)
        if (segs & VIDMM_SEGMENT_BIT(id))
            room += a->seg[id].size - a->seg[id].committed;
    for (uint32_t id = 1; id < a->segment_count && room < need; id++)
        if (segs & VIDMM_SEGMENT_BIT(id))
            room += vidmm_residency_evictable_bytes(a, id, p);
    return room >= need;
}

/* Take back the demand a make-resident added for its new references. */
static void drop_demand(struct vidmm_adapter *a, struct vidmm_process *p, const uint64_t add[2])
{
    vidmm_residency_demand_sub(a, p, VIDMM_SEGMENT_GROUP_LOCAL, add[VIDMM_SEGMENT_GROUP_LOCAL]);
    vidmm_residency_demand_sub(a, p, VIDMM_SEGMENT_GROUP_NON_LOCAL, add[VIDMM_SEGMENT_GROUP_NON_LOCAL]);
}

/* The fast path's test (res_state.h): every member of the list has an
 * ok entry in the device's fast table - it is on the list, resident,
 * owned, not offered.  Reads the handles and the entries only (one
 * 16-byte entry per member, not the object and its record); sets the
 * groups the list lives in.  0: some member needs the full path. */
static int fast_scan(const struct vidmm_adapter *a, const struct vidmm_device *d, const vidmm_handle *list,
                     uint32_t n, int touched[2])
{
    const struct vidmm_residency_slot *const *dir = (const struct vidmm_residency_slot *const *)d->res.res_dir;
    uint32_t len = d->res.res_dir_len;   /* chunks never made read as vidmm_residency_no_chunk: nothing ok */
    uint64_t hi = ((uint64_t)a->allocations.type << 16) | a->allocations.salt;
    unsigned groups = 0;
    if (!n || !len)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        vidmm_handle h = list[i];
        if (i + 8 < n) {
            uint32_t p = VIDMM_HANDLE_SLOT(list[i + 8]);
            if ((p >> VIDMM_RES_CHUNK_SHIFT) < len)
                __builtin_prefetch(&dir[p >> VIDMM_RES_CHUNK_SHIFT][p & (VIDMM_RES_CHUNK - 1u)]);
        }
        uint32_t s = VIDMM_HANDLE_SLOT(h), c = s >> VIDMM_RES_CHUNK_SHIFT;
        if ((h >> VIDMM_HANDLE_SALT_SHIFT) != hi || c >= len)
            return 0;
        const struct vidmm_residency_slot *e = &dir[c][s & (VIDMM_RES_CHUNK - 1u)];
        if (!e->ok || e->gen != (uint16_t)VIDMM_HANDLE_GEN(h) || e->extra == UINT32_MAX)
            return 0;
        groups |= 1u << e->group;
    }
    touched[VIDMM_SEGMENT_GROUP_LOCAL] = (groups >> VIDMM_SEGMENT_GROUP_LOCAL) & 1;
    touched[VIDMM_SEGMENT_GROUP_NON_LOCAL] = (groups >> VIDMM_SEGMENT_GROUP_NON_LOCAL) & 1;
    return 1;
}

/* The fast path's commit: one reference and a use at `now` per member,
 * in the entries; members in the policy (local) are touched once each
 * (mark: this call's epoch, for duplicates). */
static void fast_commit(struct vidmm_adapter *a, struct vidmm_device *d, const vidmm_handle *list, uint32_t n,
                        uint64_t now, uint64_t mark)
{
    struct vidmm_residency_slot *const *dir = d->res.res_dir;   /* fast_scan found every entry ok: in real chunks */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = VIDMM_HANDLE_SLOT(list[i]);
        struct vidmm_residency_slot *e = &dir[s >> VIDMM_RES_CHUNK_SHIFT][s & (VIDMM_RES_CHUNK - 1u)];
        e->extra++;
        e->clock = now;
        if (e->group == VIDMM_SEGMENT_GROUP_LOCAL) {
            struct vidmm_allocation *al = vidmm_objtab_at(&a->allocations, s);
            if (al->res.request_epoch == mark)
                continue;
            al->res.request_epoch = mark;
            al->res.use_clock = now;
            al->res.pe.last_use = now;
            a->res->policy->touch(a->res->policy_state, &al->res.pe);
        }
    }
}

const struct vidmm_residency_slot vidmm_residency_no_chunk[VIDMM_RES_CHUNK];

/* The chunk of slot s in d's fast table (every record's slot has its
 * entry): the directory grown geometrically, the chunk made zeroed; both
 * kept. */
static vidmm_status fast_reserve(struct vidmm_adapter *a, struct vidmm_device *d, uint32_t s)
{
    uint32_t c = s >> VIDMM_RES_CHUNK_SHIFT;
    if (c >= d->res.res_dir_len) {
        uint32_t len = d->res.res_dir_len ? d->res.res_dir_len : 4;
        while (len <= c)
            len *= 2;
        struct vidmm_residency_slot **dir = vidmm_hzalloc(a->ha, VIDMM_SITE_RES_SLOTS, (size_t)len * sizeof(*dir),
                                                    _Alignof(struct vidmm_residency_slot *));
        if (!dir)
            return VIDMM_E_NO_HOST_MEMORY;
        if (d->res.res_dir)
            memcpy(dir, d->res.res_dir, (size_t)d->res.res_dir_len * sizeof(*dir));
        for (uint32_t k = d->res.res_dir_len; k < len; k++)
            dir[k] = (struct vidmm_residency_slot *)vidmm_residency_no_chunk;   /* read, never written */
        if (d->res.res_dir)
            vidmm_hfree(a->ha, d->res.res_dir, (size_t)d->res.res_dir_len * sizeof(*dir), _Alignof(struct vidmm_residency_slot *));
        d->res.res_dir = dir;
        d->res.res_dir_len = len;
        d->res.res_slot_cap = len << VIDMM_RES_CHUNK_SHIFT;
    }
    if (d->res.res_dir[c] == vidmm_residency_no_chunk) {
        struct vidmm_residency_slot *chunk = vidmm_hzalloc(a->ha, VIDMM_SITE_RES_SLOTS,
                                                     VIDMM_RES_CHUNK * sizeof(struct vidmm_residency_slot),
                                                     _Alignof(struct vidmm_residency_slot));
        if (!chunk)
            return VIDMM_E_NO_HOST_MEMORY;
        d->res.res_dir[c] = chunk;
    }
    return VIDMM_OK;
}

/* One make-resident call, as its phases pass it along (make_resident
 * below runs them in order). */
struct mr_call {
    struct vidmm_adapter *a;
    struct vidmm_make_resident_args *args;
    struct vidmm_device *d;
    struct vidmm_process *p;
    struct vidmm_paging_queue *q;
    const vidmm_handle *list;
    uint32_t n;
    uint64_t epoch;                 /* this request's: members are pinned while it is current */
    uint64_t work_before;           /* paging work queued before the call */
    int fast;                       /* every member has an ok fast-table entry: references only */
    uint64_t need[2];               /* bytes that must come in (or change owner), per group */
    uint64_t add_demand[2];         /* demand of the new references, per group */
    uint64_t unowned[2];            /* resident, not owned: the commit gives them to the caller */
    uint64_t mem_need;              /* evicted members only memory segments take ... */
    uint32_t mem_segs;              /* ... and those segments */
    int touched[2];                 /* groups the list is (or will be) resident in */
    uint32_t missing_refs, evicted;
    uint64_t usage[2];              /* the caller's usage before anything came in */
    struct vidmm_residency_ref *fresh; /* records the reserve phase made, through dev_next */
    uint64_t restored;              /* members the restore phase brought in */
    struct vidmm_residency_stats stats_before;
};

/* Validate: the arguments, the device and its paging queue.  Then the
 * call is counted and gets its epoch (its pin). */
static vidmm_status mr_validate(struct vidmm_adapter *a, vidmm_handle device, struct vidmm_make_resident_args *args,
                                struct mr_call *c)
{
    if (!a || !args || (args->count && !args->allocations) ||
        (args->flags & ~(VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER | VIDMM_MAKE_RESIDENT_MUST_SUCCEED)) ||
        (args->flags & VIDMM_MAKE_RESIDENT_MUST_SUCCEED && !(args->flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER)))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !args ? "args is NULL"
                          : (args->count && !args->allocations) ? "count > 0 with no allocation list"
                          : "flags: unknown bits, or MUST_SUCCEED without CANT_TRIM_FURTHER");
    struct vidmm_device *d;
    vidmm_status st = vidmm_device_lookup(a, device, &d);
    if (st < 0)
        return st;
    struct vidmm_paging_queue *q = vidmm_objtab_get(&a->queues, args->paging_queue);
    if (!q || q->device != d)
        return vidmm_fail(VIDMM_E_INVALID_HANDLE, "paging queue handle 0x%llx: not a paging queue of device 0x%llx",
                          (unsigned long long)args->paging_queue, (unsigned long long)device);
    if (vidmm_residency_device_lost(a, d))
        return VIDMM_E_DEVICE_LOST;
    args->paging_fence_value = 0;
    args->bytes_to_trim = 0;
    c->a = a;
    c->args = args;
    c->d = d;
    c->p = d->process;
    c->q = q;
    c->list = args->allocations;
    c->n = args->count;
    a->res->stats.make_resident_calls++;
    c->epoch = ++a->res->epoch;
    c->work_before = vidmm_paging_work_mark(a);
    return VIDMM_OK;
}

/* Lists stream through objects that are rarely in cache: fetch the
 * object 16 ahead and the reference record 4 ahead of member i, so the
 * misses overlap instead of queueing. */
static void mr_prefetch(const struct vidmm_adapter *a, const vidmm_handle *list, uint32_t n, uint32_t i)
{
    if (i + 16 < n && VIDMM_HANDLE_TYPE(list[i + 16]) == VIDMM_HANDLE_TYPE_ALLOCATION) {
        uint32_t idx = VIDMM_HANDLE_SLOT(list[i + 16]);
        const char *o = vidmm_objtab_at(&a->allocations, idx);
        if (o) {
            __builtin_prefetch(o);        /* lookup, pin, reference list */
            __builtin_prefetch(o + 64);   /* the policy entry (last use, owner) */
        }
    }
    if (i + 4 < n && VIDMM_HANDLE_TYPE(list[i + 4]) == VIDMM_HANDLE_TYPE_ALLOCATION) {
        uint32_t idx = VIDMM_HANDLE_SLOT(list[i + 4]);
        const struct vidmm_allocation *o = vidmm_objtab_at(&a->allocations, idx);
        if (o && o->res.refs)
            __builtin_prefetch(o->res.refs);
    }
}

/* Scan: every member already on the list and resident takes the fast
 * table's path (references only).  Otherwise each handle is checked,
 * each member pinned once and its reference record found, and what must
 * come in is counted, per segment group.  Changes nothing but the pins
 * (undone by the caller's epoch bump on failure). */
static vidmm_status mr_scan(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    c->fast = fast_scan(a, c->d, c->list, c->n, c->touched);
    for (uint32_t i = 0; i < c->n && !c->fast; i++) {
        struct vidmm_allocation *al;
        vidmm_status st = vidmm_allocation_lookup_for(a, c->list[i], c->p->self, &al);
        if (st < 0) {
            a->res->epoch++;   /* unpin */
            return st;
        }
        mr_prefetch(a, c->list, c->n, i);
        if (al->res.request_epoch == c->epoch)
            continue;
        al->res.request_epoch = c->epoch;
        struct vidmm_residency_ref *r = al->res.refs;
        while (r && r->dev != c->d)
            r = r->al_next;
        al->res.scratch_ref = r;
        c->missing_refs += r == NULL;
        uint32_t only_mem = 0;
        unsigned home = r && al->resident ? 0 : vidmm_residency_home(a, al, &only_mem);
        /* in_memory_segment (first cache line) says "resident in a memory
         * segment": the placement is not read on the hot path. */
        unsigned now_in = al->res.in_memory_segment ? VIDMM_SEGMENT_GROUP_LOCAL : VIDMM_SEGMENT_GROUP_NON_LOCAL;
        c->touched[al->resident ? now_in : home] = 1;
        if (!r) {
            c->add_demand[home] += al->size;
            c->touched[home] = 1;   /* its demand lowers that group's budget */
        }
        if (!al->resident) {
            c->evicted++;
            c->need[home] += al->size;
            if (only_mem) {
                c->mem_need += al->size;
                c->mem_segs |= only_mem;
            }
        } else if (!al->res.owned) {
            c->unowned[now_in] += al->size;
        }
    }
    return VIDMM_OK;
}

/* A refusal for want of room: the fair-share rule is checked (D62), the
 * pins dropped, and a MUST_SUCCEED caller's device is lost. */
static vidmm_status mr_no_room(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    vidmm_residency_check_refusal(a, c->p, c->list, c->n);   /* the fair-share rule (D62) */
    a->res->epoch++;
    if (c->args->flags & VIDMM_MAKE_RESIDENT_MUST_SUCCEED) {
        pthread_mutex_lock(&a->fence_lock);
        c->d->lost = 1;
        pthread_mutex_unlock(&a->fence_lock);
    }
    return VIDMM_E_NO_SEGMENT_SPACE;
}

/* Budget: the request's own new references count toward the demand that
 * sets every budget first, so the caller is checked against the budget
 * it will have once the call succeeded; then, unless CantTrimFurther, a
 * group the list lives in must stay within its budget, and the evicted
 * members must be able to fit at all (optimistic: free bytes plus what
 * may be evicted, fragmentation ignored) - a list that cannot is refused
 * before any paging.  A refusal takes the demand back. */
static vidmm_status mr_budget(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    struct vidmm_process *p = c->p;
    uint64_t budget[2];
    for (unsigned g = 0; g < 2; g++) {
        vidmm_residency_demand_add(a, p, g, c->add_demand[g]);
        c->need[g] += c->unowned[g];
    }
    for (unsigned g = 0; g < 2; g++) {
        c->usage[g] = vidmm_residency_usage(a, p, g);
        budget[g] = vidmm_residency_budget(a, p, g);
    }
    for (unsigned g = 0; g < 2 && !(c->args->flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER); g++) {
        /* Also when nothing comes in: a caller already over its budget
         * in a group its list lives in is told to trim.  The local
         * group's excess when both are over (the caller trims, retries,
         * and learns the other next). */
        if (c->touched[g] && c->usage[g] + c->need[g] > budget[g]) {
            c->args->bytes_to_trim = c->usage[g] + c->need[g] - budget[g];
            drop_demand(a, p, c->add_demand);
            a->res->stats.over_budget++;
            a->res->epoch++;
            return vidmm_fail(VIDMM_E_OVER_BUDGET,
                              "the list needs %llu bytes of the %s group over the process's budget: trim bytes_to_trim and retry",
                              (unsigned long long)c->args->bytes_to_trim, g ? "non-local" : "local");
        }
    }
    if (c->mem_need && !memory_may_fit(a, p, c->mem_need, c->mem_segs)) {
        drop_demand(a, p, c->add_demand);
        (void)mr_no_room(c);
        return vidmm_fail(VIDMM_E_NO_SEGMENT_SPACE,
                          "%llu bytes of the list cannot fit in its segments even after evicting everything evictable",
                          (unsigned long long)c->mem_need);
    }
    return VIDMM_OK;
}

/* Reserve: the missing reference records - the only host allocations of
 * the call - and their fast-table entries.  The records are kept on
 * c->fresh, unlinked, until the commit (each member finds its own through
 * scratch_ref, duplicates in the list too). */
static vidmm_status mr_reserve(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    for (uint32_t i = 0; i < c->n; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, c->list[i]);
        if (al->res.scratch_ref)
            continue;
        /* Every record has its entry, at its allocation's own slot (list[i]
         * may be an opener's handle of a shared allocation). */
        vidmm_status st = fast_reserve(a, c->d, VIDMM_HANDLE_SLOT(al->self));
        if (st < 0)
            return st;
        struct vidmm_residency_ref *r = vidmm_hzalloc(a->ha, VIDMM_SITE_RES_REFERENCE, sizeof(*r), _Alignof(struct vidmm_residency_ref));
        if (!r)
            return VIDMM_E_NO_HOST_MEMORY;
        r->al = al;
        r->dev = c->d;
        r->dev_next = c->fresh;
        c->fresh = r;
        al->res.scratch_ref = r;   /* duplicates in the list find it */
    }
    return VIDMM_OK;
}

/* Restore: bring every evicted member in (which may evict others; each
 * change is recorded under the call's undo epoch).  Then, unless
 * CantTrimFurther, where the list landed decides the groups: one that
 * fell back to the other group must fit that group's budget too. */
static vidmm_status mr_restore(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    struct vidmm_process *p = c->p;
    vidmm_status st = VIDMM_OK;
    for (uint32_t i = 0; i < c->n && st >= 0; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, c->list[i]);
        if (al->resident)
            continue;
        if (!al->res.owned) {   /* the first user owns it for accounting */
            vidmm_residency_set_owner(a, al, p);
            al->res.scratch_ref->pending = 1;   /* unowned = unreferenced: the record is fresh */
        }
        int was_lost = al->res.content_lost;
        st = vidmm_residency_restore(a, al);
        if (st >= 0) {
            c->restored++;
            al->res.undo.epoch = c->epoch;
            al->res.undo.kind = VIDMM_UNDO_RESTORED;
            al->res.undo.lost = (uint8_t)was_lost;
        }
    }
    for (unsigned g = 0; g < 2 && st >= 0 && !(c->args->flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER); g++) {
        uint64_t u = vidmm_residency_usage(a, p, g) + c->unowned[g];
        uint64_t b = vidmm_residency_budget(a, p, g);
        if (u > b && u > c->usage[g]) {
            c->args->bytes_to_trim = u - b;
            a->res->stats.over_budget++;
            st = VIDMM_E_OVER_BUDGET;
        }
    }
    return st;
}

/* Roll back a failed reserve or restore.  vidmm_residency_undo evicts
 * again what the call made resident and puts its victims back where
 * they were when that needs no eviction (see there for what a driver
 * refusal leaves); the undone paging is not counted, the refusal is; the
 * demand is taken back, the new records freed and the members this call
 * gave an owner unowned again (D35).  Returns st. */
static vidmm_status mr_roll_back(struct mr_call *c, vidmm_status st)
{
    struct vidmm_adapter *a = c->a;
    vidmm_residency_undo(a, c->epoch);
    uint64_t over = a->res->stats.over_budget;
    a->res->stats = c->stats_before;
    a->res->stats.over_budget = over;
    drop_demand(a, c->p, c->add_demand);
    while (c->fresh) {
        struct vidmm_residency_ref *r = c->fresh;
        c->fresh = r->dev_next;
        if (r->pending)   /* owned by this call: unowned again (D35) */
            vidmm_residency_set_owner(a, r->al, NULL);
        vidmm_hfree(a->ha, r, sizeof(*r), _Alignof(struct vidmm_residency_ref));
    }
    if (st == VIDMM_E_NO_SEGMENT_SPACE)
        return mr_no_room(c);
    a->res->epoch++;
    return st;
}

/* Commit, first step: link the new records into the device's list and
 * their allocation's (the demand is counted again as each is linked). */
static void mr_link_records(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    struct vidmm_device *d = c->d;
    drop_demand(a, c->p, c->add_demand);
    while (c->fresh) {
        struct vidmm_residency_ref *r = c->fresh;
        c->fresh = r->dev_next;
        struct vidmm_allocation *al = r->al;
        VIDMM_BUG_ON_MSG(a, r->count != 0, "residency list: a new reference record already holds references");
        r->pending = 0;
        r->al_next = al->res.refs;
        al->res.refs = r;
        r->dev_prev = NULL;
        r->dev_next = d->res.refs;
        if (d->res.refs)
            d->res.refs->dev_prev = r;
        d->res.refs = r;
        d->res.ref_count++;
        vidmm_residency_demand_add(a, c->p, vidmm_residency_home_group(a, al), al->size);
    }
}

/* Commit, second step (nothing fails): one reference per member, a use
 * at the new clock, the policy touched, the members' fast-table entries
 * made ok for the next call; then the pins dropped. */
static void mr_commit(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    struct vidmm_device *d = c->d;
    uint64_t now = ++a->res->clock;
    uint64_t mark = ++a->res->epoch;   /* committed in this call: duplicates see it */
    if (c->fast)
        fast_commit(a, d, c->list, c->n, now, mark);
    for (uint32_t i = 0; i < c->n && !c->fast; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, c->list[i]);
        VIDMM_BUG_ON_MSG(a, !al->resident, "make-resident commit: a member of the list is not resident");
        al->res.scratch_ref->count++;
        al->res.ref_total++;
        al->res.offered = 0;
        if (al->res.request_epoch == mark)
            continue;   /* a duplicate in the list */
        al->res.request_epoch = mark;
        al->res.use_clock = now;
        if (!al->res.owned)
            vidmm_residency_set_owner(a, al, c->p);
        /* Only the policy reads the clock of its entries; one not in a
         * memory segment catches up when it enters one. */
        if (al->res.in_memory_segment) {
            al->res.pe.last_use = now;
            a->res->policy->touch(a->res->policy_state, &al->res.pe);
        }
        /* Resident, owned, not offered, on the list: the next call may
         * take the fast path.  A shared allocation only on its creator's
         * devices, which name it by its own handle: the fast path checks
         * the handle's slot and generation, not which process may use
         * that handle, so an opener's device must not have an entry the
         * creator's handle would pass (vidmm/share.h).  Openers take the
         * full path. */
        if (al->shared && al->private_process != c->p->self)
            continue;
        struct vidmm_residency_slot *e = vidmm_residency_slot_of(d, al->self);
        if (!e)
            continue;   /* not reached: every record has its entry */
        e->ok = 1;
        e->gen = (uint16_t)VIDMM_HANDLE_GEN(al->self);
        e->group = (uint8_t)(al->res.in_memory_segment ? VIDMM_SEGMENT_GROUP_LOCAL : VIDMM_SEGMENT_GROUP_NON_LOCAL);
        e->clock = now;
    }
    a->res->epoch++;   /* unpin */
}

/* Record: submit the paging work the call queued and hand the caller the
 * paging queue's fence value to wait for (VIDMM_PENDING); note, for the
 * rules checker (src/adapter/rules.c), per group this call was checked
 * against, whether it said CantTrimFurther and what usage and budget it
 * left (CantTrimFurther covers both groups: its own demand may lower the
 * budget of a group its list did not land in); and tell whoever this
 * request's demand put over a budget. */
static vidmm_status mr_record(struct mr_call *c)
{
    struct vidmm_adapter *a = c->a;
    struct vidmm_process *p = c->p;
    vidmm_status ret = VIDMM_OK;
    if (c->restored || vidmm_paging_work_mark(a) != c->work_before) {
        uint64_t f = 0;
        vidmm_status st = vidmm_paging_submit(a, &f);
        if (st < 0)
            return st;
        c->args->paging_fence_value = vidmm_residency_queue_signal(a, c->q, f);
        ret = c->args->paging_fence_value ? VIDMM_PENDING : VIDMM_OK;
    }
    int cant = (c->args->flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER) != 0;
    for (unsigned g = 0; g < 2; g++) {
        if (!cant && !c->touched[g])
            continue;
        p->res.last_mr_cant_trim[g] = cant;
        p->res.budget_after_mr[g] = vidmm_residency_budget(a, p, g);
        p->res.usage_after_mr[g] = vidmm_residency_usage(a, p, g);
    }
    if (c->add_demand[0] || c->add_demand[1] || c->need[0] || c->need[1])
        vidmm_residency_notify_all(a);
    return ret;
}

/* make-resident (D3DKMTMakeResident), all or nothing: validate, scan,
 * budget; when something is missing, reserve the records and restore the
 * evicted members under an undo epoch, rolling every change back on a
 * failure; then commit the references and record the outcome. */
static vidmm_status make_resident(struct vidmm_adapter *a, vidmm_handle device, struct vidmm_make_resident_args *args)
{
    struct mr_call c;
    memset(&c, 0, sizeof(c));
    vidmm_status st = mr_validate(a, device, args, &c);
    if (st >= 0)
        st = mr_scan(&c);
    if (st >= 0)
        st = mr_budget(&c);
    if (st < 0)
        return st;
    if (c.missing_refs || c.evicted) {
        st = mr_reserve(&c);
        a->res->undo_epoch = c.epoch;
        c.stats_before = a->res->stats;
        if (st >= 0)
            st = mr_restore(&c);
        if (st < 0)
            return mr_roll_back(&c, st);
        a->res->undo_epoch = 0;
        mr_link_records(&c);
    }
    mr_commit(&c);
    return mr_record(&c);
}

/* ---- evict ------------------------------------------------------------------ */

static vidmm_status evict(struct vidmm_adapter *a, vidmm_handle device, const vidmm_handle *allocs, uint32_t count,
                         uint32_t flags, uint64_t *bytes_to_trim)
{
    if (!a || (count && !allocs) || (flags & ~(VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO)))
        return vidmm_fail(VIDMM_E_INVALID_ARG, (count && !allocs) ? "count > 0 with no allocation list"
                                                                   : "flags 0x%x: unknown bits", flags);
    struct vidmm_device *d;
    vidmm_status lookup_st = vidmm_device_lookup(a, device, &d);
    if (lookup_st < 0)
        return lookup_st;
    /* Validate: each must be on the list, as often as it is named. */
    vidmm_status st = VIDMM_OK;
    uint32_t i;
    for (i = 0; i < count; i++) {
        struct vidmm_allocation *al = vidmm_handle_get_for(a, allocs[i], d->process->self);
        if (al)
            vidmm_residency_fold(a, al, 1);   /* exact counts in the records */
        struct vidmm_residency_ref *r = al ? ref_of(al, d) : NULL;
        if (!al) {
            st = VIDMM_E_INVALID_HANDLE;
            break;
        }
        if (!r || r->pending == r->count) {
            st = vidmm_fail(VIDMM_E_STATE, "allocation 0x%llx: not on device 0x%llx's residency list%s",
                            (unsigned long long)allocs[i], (unsigned long long)device,
                            r ? " as often as it is named" : "");
            break;
        }
        r->pending++;
    }
    if (st >= 0) {
        /* Evictions first, references after: an eviction the driver
         * fails leaves every reference as it was (all or nothing).  An
         * allocation goes when this call drops its last reference. */
        uint64_t mark = ++a->res->epoch;
        for (uint32_t j = 0; j < count && st >= 0; j++) {
            struct vidmm_allocation *al = vidmm_handle_get(a, allocs[j]);
            struct vidmm_residency_ref *r = ref_of(al, d);
            if (al->res.request_epoch == mark)
                continue;   /* a duplicate in the list */
            al->res.request_epoch = mark;
            if (r->count != r->pending || al->res.ref_total != r->pending || !al->resident ||
                (flags & VIDMM_EVICT_ONLY_IF_NECESSARY) || al->lock_count || al->displayed)
                continue;
            /* NOT_WRITTEN_TO: the GPU did not write since make-resident,
             * so a backing copy stays current; otherwise it is stale. */
            if (!(flags & VIDMM_EVICT_NOT_WRITTEN_TO))
                al->res.backing_valid = 0;
            st = vidmm_residency_evict(a, al, (flags & VIDMM_EVICT_NOT_WRITTEN_TO) != 0);
        }
        a->res->epoch++;
    }
    if (st < 0) {
        for (uint32_t j = 0; j < i && j < count; j++) {
            struct vidmm_residency_ref *r = ref_of(vidmm_handle_get(a, allocs[j]), d);
            r->pending = 0;
        }
        return st;
    }
    for (i = 0; i < count; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, allocs[i]);
        struct vidmm_residency_ref *r = ref_of(al, d);
        if (!(flags & VIDMM_EVICT_NOT_WRITTEN_TO))
            al->res.backing_valid = 0;
        r->pending--;
        r->count--;
        al->res.ref_total--;
        if (r->count == 0)
            vidmm_residency_unlink_ref(a, r);   /* it leaves the device's list */
    }
    if (bytes_to_trim) {
        uint64_t u = vidmm_residency_usage(a, d->process, VIDMM_SEGMENT_GROUP_LOCAL);
        uint64_t b = vidmm_residency_budget(a, d->process, VIDMM_SEGMENT_GROUP_LOCAL);
        *bytes_to_trim = u > b ? u - b : 0;
    }
    return st < 0 ? st : VIDMM_OK;
}

/* ---- priorities, hints, state ------------------------------------------------ */

static vidmm_status allocation_set_priority(struct vidmm_adapter *a, vidmm_handle h, uint32_t priority)
{
    if (!a || priority == 0)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "priority 0: priorities start at 1");
    struct vidmm_allocation *al;
    vidmm_status lookup_st = vidmm_allocation_lookup(a, h, &al);
    if (lookup_st < 0)
        return lookup_st;
    vidmm_residency_leave(a, al);
    al->res.pe.priority = priority;
    vidmm_residency_enter(a, al);
    return VIDMM_OK;
}

static vidmm_status allocation_set_next_use(struct vidmm_adapter *a, vidmm_handle h, uint64_t clock)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_allocation *al;
    vidmm_status lookup_st = vidmm_allocation_lookup(a, h, &al);
    if (lookup_st < 0)
        return lookup_st;
    al->res.pe.next_use = clock;
    if (al->res.in_memory_segment)
        a->res->policy->touch(a->res->policy_state, &al->res.pe);
    return VIDMM_OK;
}

static uint64_t residency_clock(const struct vidmm_adapter *a)
{
    return a ? a->res->clock : 0;
}

static vidmm_status allocation_residency(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_residency_state *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    struct vidmm_allocation *al;
    vidmm_status lookup_st = vidmm_allocation_lookup(a, h, &al);
    if (lookup_st < 0)
        return lookup_st;
    memset(out, 0, sizeof(*out));
    out->resident = (uint32_t)al->resident;
    out->priority = al->res.pe.priority;
    out->references = vidmm_residency_references(a, al);
    out->offered = (uint32_t)al->res.offered;
    out->owner = al->res.pe.process;
    out->evictions = al->res.evictions;
    out->restores = al->res.restores;
    return VIDMM_OK;
}

static vidmm_status adapter_set_eviction_policy(struct vidmm_adapter *a, const struct vidmm_eviction_policy *policy)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    if (!policy)
        policy = &vidmm_policy_lru;
    if (!policy->create || !policy->destroy || !policy->insert || !policy->touch || !policy->remove ||
        !policy->first || !policy->next)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "policy '%s' lacks one of create, destroy, insert, touch, remove, first, next",
                          policy->name ? policy->name : "(unnamed)");
    void *state = NULL;
    vidmm_status st = policy->create(a->ha, a->segment_count, &state);
    if (st < 0)
        return st;
    /* Entries' private fields belong to the old policy: clear them before
     * the new one sees them. */
    const struct vidmm_eviction_policy *old = a->res->policy;
    void *old_state = a->res->policy_state;
    struct vidmm_allocation **order = NULL;
    uint64_t n = 0;
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;)
        n += al->res.in_memory_segment;
    if (n) {
        order = vidmm_halloc(a->ha, VIDMM_SITE_RES_POLICY_ORDER, (size_t)n * sizeof(*order), _Alignof(struct vidmm_allocation *));
        if (!order) {
            policy->destroy(state);
            return VIDMM_E_NO_HOST_MEMORY;
        }
    }
    uint64_t k = 0;
    for (uint32_t id = 1; id < a->segment_count; id++)
        for (struct vidmm_policy_entry *e = old->first(old_state, id); e && k < n; e = old->next(old_state, e))
            order[k++] = (struct vidmm_allocation *)((char *)e - offsetof(struct vidmm_allocation, res.pe));
    it = 0;
    for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        {
            memset(al->res.pe.link, 0, sizeof(al->res.pe.link));
            memset(al->res.pe.key, 0, sizeof(al->res.pe.key));
            al->res.pe.flags = 0;
        }
    }
    old->destroy(old_state);
    a->res->policy = policy;
    a->res->policy_state = state;
    /* In the old eviction order, so the new policy starts with the same
     * history (an insert counts as the latest use). */
    for (uint64_t j = 0; j < k; j++)
        policy->insert(state, &order[j]->res.pe);
    vidmm_hfree(a->ha, order, (size_t)n * sizeof(*order), _Alignof(struct vidmm_allocation *));
    return VIDMM_OK;
}

static vidmm_status residency_get_stats(const struct vidmm_adapter *a, struct vidmm_residency_stats *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    *out = a->res->stats;
    return VIDMM_OK;
}

/* ---- offer / reclaim ---------------------------------------------------------- */

static vidmm_status offer(struct vidmm_adapter *a, vidmm_handle device, const vidmm_handle *allocs, uint32_t count,
                         uint32_t offer_priority)
{
    if (!a || (count && !allocs) || offer_priority < VIDMM_OFFER_LOW || offer_priority > VIDMM_OFFER_AUTO)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : (count && !allocs) ? "allocations is NULL with count %u"
                          : "offer_priority %u: not a VIDMM_OFFER_* value", count && !allocs ? count : offer_priority);
    struct vidmm_device *d;
    vidmm_status lookup_st = vidmm_device_lookup(a, device, &d);
    if (lookup_st < 0)
        return lookup_st;
    for (uint32_t i = 0; i < count; i++) {
        struct vidmm_allocation *al;
        vidmm_status al_st = vidmm_allocation_lookup_for(a, allocs[i], d->process->self, &al);
        if (al_st < 0)
            return al_st;
        if (al->lock_count || al->displayed)
            return VIDMM_E_BUSY;
    }
    for (uint32_t i = 0; i < count; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, allocs[i]);
        vidmm_residency_fold(a, al, 0);   /* offered: no fast path */
        al->res.offered = 1;
        al->res.offer_discarded = 0;
        al->res.offer_priority = offer_priority;
        /* Still on a residency list: the GPU may have written it since
         * its restore and no evict said otherwise, so a discard must not
         * fall back on the backing copy and report the content kept. */
        if (al->res.ref_total)
            al->res.backing_valid = 0;
    }
    return VIDMM_OK;
}

static vidmm_status reclaim(struct vidmm_adapter *a, vidmm_handle queue, const vidmm_handle *allocs, uint32_t count,
                           uint32_t *results, uint64_t *fence)
{
    if (!a || (count && (!allocs || !results)))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !allocs ? "allocations is NULL with count %u"
                                                                      : "results is NULL with count %u", count);
    struct vidmm_paging_queue *q;
    vidmm_status lookup_st = vidmm_paging_queue_lookup(a, queue, &q);
    if (lookup_st < 0)
        return lookup_st;
    for (uint32_t i = 0; i < count; i++) {
        struct vidmm_allocation *al;
        vidmm_status al_st = vidmm_allocation_lookup_for(a, allocs[i], q->device->process->self, &al);
        if (al_st < 0)
            return al_st;
    }
    if (fence)
        *fence = 0;
    vidmm_status st = VIDMM_OK;
    for (uint32_t i = 0; i < count; i++) {
        struct vidmm_allocation *al = vidmm_handle_get(a, allocs[i]);
        results[i] = al->res.content_lost || al->res.offer_discarded ? VIDMM_RECLAIM_DISCARDED : VIDMM_RECLAIM_OK;
        al->res.offered = 0;
        al->res.offer_discarded = 0;
        /* On a residency list: page it back in now. */
        if (!al->resident && al->res.ref_total) {
            vidmm_status r = vidmm_residency_restore(a, al);
            if (r < 0 && st >= 0)
                st = r;
        }
    }
    return st;
}

/* make-resident and evict run under the submission lock, so threads that
 * submit may also change their residency lists (vidmm/submit.h). */
vidmm_status vidmm_make_resident(struct vidmm_adapter *a, vidmm_handle device, struct vidmm_make_resident_args *args)
{
    VIDMM_ENTRY(a, a->power_state != VIDMM_POWER_D0 ? VIDMM_E_STATE   /* powered down (power.h) */
                                                       : make_resident(a, device, args));
}

vidmm_status vidmm_evict(struct vidmm_adapter *a, vidmm_handle device, struct vidmm_evict_args *args)
{
    VIDMM_ENTRY(a, !args                  ? vidmm_fail(VIDMM_E_INVALID_ARG, "args is NULL")
                   : vidmm_powered_down(a) ? VIDMM_E_STATE
                                           : evict(a, device, args->allocations, args->count, args->flags,
                                                   &args->bytes_to_trim));
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_adapter_set_eviction_policy(struct vidmm_adapter *a, const struct vidmm_eviction_policy *policy)
{
    VIDMM_ENTRY(a, adapter_set_eviction_policy(a, policy));
}

vidmm_status vidmm_allocation_residency(const struct vidmm_adapter *a, vidmm_handle h,
                                        struct vidmm_residency_state *out)
{
    VIDMM_ENTRY(a, allocation_residency(a, h, out));
}

vidmm_status vidmm_allocation_set_next_use(struct vidmm_adapter *a, vidmm_handle h, uint64_t clock)
{
    VIDMM_ENTRY(a, allocation_set_next_use(a, h, clock));
}

vidmm_status vidmm_allocation_set_priority(struct vidmm_adapter *a, vidmm_handle h, uint32_t priority)
{
    VIDMM_ENTRY(a, allocation_set_priority(a, h, priority));
}

vidmm_status vidmm_offer(struct vidmm_adapter *a, vidmm_handle device, const vidmm_handle *allocs, uint32_t count,
                         uint32_t offer_priority)
{
    VIDMM_ENTRY(a, offer(a, device, allocs, count, offer_priority));
}

vidmm_status vidmm_reclaim(struct vidmm_adapter *a, vidmm_handle queue, const vidmm_handle *allocs,
                           uint32_t count, uint32_t *results, uint64_t *fence)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : reclaim(a, queue, allocs, count, results, fence));
}

uint64_t vidmm_residency_clock(const struct vidmm_adapter *a)
{
    if (!a)
        return 0;
    vidmm_adapter_lock(a);
    uint64_t v = residency_clock(a);
    vidmm_adapter_unlock(a);
    return v;
}

vidmm_status vidmm_residency_get_stats(const struct vidmm_adapter *a, struct vidmm_residency_stats *out)
{
    VIDMM_ENTRY(a, residency_get_stats(a, out));
}
