/*
 * fair_share.c - the fair share of a segment (D62): each process holding
 * bytes in it, the requester included, may hold size / holders.  The
 * eviction's pass 3 (residency.c) evicts for a requester within its share
 * what only processes over theirs list; at a refusal for want of room,
 * vidmm_residency_check_refusal verifies that the requester could not
 * have been served that way (the rules checker reports the refusals that
 * broke the rule).
 */
#include "model/objects.h"
#include "handle/handle.h"
#include "handle/lookup.h"
#include "placement/placement.h"
#include "process/process.h"
#include "residency/residency.h"
#include "residency/res_state.h"

#include <stdio.h>
#include <string.h>

/* Process p's fair share of segment id (D62): the segment's bytes over
 * the processes holding bytes in it, p included.  The count is cached
 * for one eviction round (res_over_epoch), like the budgets. */
uint64_t vidmm_residency_fair_share(struct vidmm_adapter *a, uint32_t id, const struct vidmm_process *p)
{
    struct vidmm_residency_mgr *r = a->res;
    if (r->holders_epoch[id] != r->over_epoch) {
        uint32_t n = 0;
        const struct vidmm_process *q;
        vidmm_for_each_process(a, q)
            n += q->res.seg_usage[id] != 0;
        r->holders[id] = n;
        r->holders_epoch[id] = r->over_epoch;
    }
    uint64_t n = (uint64_t)r->holders[id] + (p->res.seg_usage[id] == 0);
    return a->seg[id].size / (n ? n : 1);
}

/* ---- the fair-share rule, checked at refusals (D62) -------------------- */

/* Bytes of segment id that passes 0-1 free (offered, unlisted) plus, per
 * process q other than p over its share, what q holds there listed only
 * by such processes - at most q's excess over its share.  One walk of
 * the segment's allocations and two of the processes. */
static uint64_t fair_room(struct vidmm_adapter *a, uint32_t id, struct vidmm_process *p, uint64_t fair)
{
    uint64_t room = a->seg[id].size - a->seg[id].committed;
    struct vidmm_process *q;
    vidmm_for_each_process(a, q)
        q->res.fair_held = 0;
    for (struct vidmm_policy_entry *e = a->res->policy->first(a->res->policy_state, id); e;
         e = a->res->policy->next(a->res->policy_state, e)) {
        const struct vidmm_allocation *v = ENTRY_OF(e);
        if (v->lock_count || v->displayed || v->busy || v->res.request_epoch == a->res->epoch)
            continue;
        if (v->res.offered || !v->res.refs) {
            room += v->size;
            continue;
        }
        q = vidmm_residency_owner_process(a, v);
        int others_over = q && q != p && q->res.seg_usage[id] > fair;
        for (const struct vidmm_residency_ref *r = v->res.refs; r && others_over; r = r->al_next)
            others_over = r->dev->process != p && r->dev->process->res.seg_usage[id] > fair;
        if (others_over)
            q->res.fair_held += v->size;
    }
    vidmm_for_each_process(a, q)
        if (q->res.fair_held)
            room += (q->res.fair_held < q->res.seg_usage[id] - fair ? q->res.fair_held : q->res.seg_usage[id] - fair);
    return room;
}

void vidmm_residency_check_refusal(struct vidmm_adapter *a, struct vidmm_process *p, const vidmm_handle *list,
                             uint32_t n)
{
    uint64_t need[VIDMM_MAX_SEGMENTS + 1] = { 0 };
    uint32_t segs = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const struct vidmm_allocation *al = vidmm_handle_get_for(a, list[i], p->self);
        if (!al || al->resident)
            continue;
        uint32_t mine = 0;
        for (uint32_t id = 1; id < a->segment_count; id++) {
            const struct vidmm_segment *s = &a->seg[id];
            if (!(al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(id)) || !vidmm_seg_is_memory(a, id) ||
                vidmm_needs_contiguous(a, al, s))
                continue;
            mine |= VIDMM_SEGMENT_BIT(id);
            need[id] += (al->size + s->page_size - 1) / s->page_size * s->page_size;   /* a duplicate counts twice: conservative */
        }
        segs &= mine;
    }
    for (uint32_t id = 1; id < a->segment_count && segs != UINT32_MAX; id++) {
        if (!(segs & VIDMM_SEGMENT_BIT(id)) || !need[id])
            continue;
        uint32_t holders = 0;
        const struct vidmm_process *q;
        vidmm_for_each_process(a, q)
            holders += q->res.seg_usage[id] != 0;
        uint64_t fair = a->seg[id].size / (holders + (p->res.seg_usage[id] == 0));
        if (p->res.seg_usage[id] + need[id] > fair)
            continue;
        uint64_t room = fair_room(a, id, p, fair);
        if (room < need[id])
            continue;
        a->res->unfair_refusals++;
        snprintf(a->res->unfair_refusal, sizeof a->res->unfair_refusal,
                 "process %u refused %llu bytes of segment %u holding %llu of its fair share %llu, while %llu bytes "
                 "are free or held by processes over their share", vidmm_process_slot(p),
                 (unsigned long long)need[id], id, (unsigned long long)p->res.seg_usage[id], (unsigned long long)fair,
                 (unsigned long long)room);
        return;
    }
}

uint64_t vidmm_residency_unfair_refusals(const struct vidmm_adapter *a, const char **last)
{
    *last = a->res->unfair_refusal;
    return a->res->unfair_refusals;
}
