/*
 * res_state.h - the residency manager's own state (private to
 * src/residency/: other modules reach it through residency/residency.h).
 */
#ifndef VIDMM_RESIDENCY_RES_STATE_H
#define VIDMM_RESIDENCY_RES_STATE_H

#include "model/objects.h"
#include "seg/evict_scan.h"

struct vidmm_res_state {
    const struct vidmm_eviction_policy *policy;
    void *policy_state;
    uint64_t clock;             /* reference clock */
    uint64_t epoch;             /* request being served (pins) */
    uint64_t undo_epoch;        /* != 0: a make-resident records what it changes */
    uint64_t over_epoch;        /* eviction round: processes' over-budget cache */
    uint64_t demand_total[2];       /* sum of the processes' demand per group (budgets read it) */
    uint64_t usage_total[2];        /* sum of the processes' usage per group (seg_usage) */
    uint32_t budget_overrides;      /* processes with a budget set by the OS side in either group */
    uint32_t trim_depth;            /* a walk is running (callbacks may call back in) */
    struct vidmm_residency_stats stats;
    struct vidmm_evict_scan evict_scan; /* planner for contiguous requests */
    uint64_t trim_round;            /* trim notification walks so far (budget.c) */
};

/* A device's make-resident fast table (d->res_slots, d->res_slot_cap
 * entries, one per allocation slot; every slot the device holds a
 * reference record for is below the capacity).  An entry that is ok
 * says: the allocation in that slot, of generation gen, is on the
 * device's list (its record exists), resident, owned and not offered,
 * in segment group `group` (local = in the eviction policy).  A
 * make-resident whose every member has an ok entry takes its references
 * here - extra counts them, clock is their last use - without reading
 * the objects or the records, which at 10^5 and more allocations are
 * cache and TLB misses; members in the policy still get their touch.
 * vidmm_res_fold moves extra into the record's count and the
 * allocation's total and clock into use_clock, before anything reads
 * the exact count (evict, the checker) or changes the state an ok entry
 * stands for: vidmm_res_leave (placement, residency, owner, priority),
 * offer and the record's unlink clear the entry.  The full path makes
 * it ok again at the next make-resident. */
struct vidmm_res_slot {
    uint64_t clock;     /* reference clock of the last fast use */
    uint32_t extra;     /* references taken here, not yet in the record */
    uint16_t gen;       /* the allocation handle's generation */
    uint8_t ok;
    uint8_t group;      /* VIDMM_SEGMENT_GROUP_* while ok */
};

/* Fold the entries of al's records (every device) into the records and
 * al; keep = 0 also clears them (the state they stand for changes). */
void vidmm_res_fold(struct vidmm_adapter *a, struct vidmm_allocation *al, int keep);

/* al's references, those on fast tables included. */
uint32_t vidmm_res_references(const struct vidmm_adapter *a, const struct vidmm_allocation *al);

/* The entry of handle h's slot in d's table, or NULL beyond it. */
static inline struct vidmm_res_slot *vidmm_res_slot_of(const struct vidmm_device *d, vidmm_handle h)
{
    uint32_t s = (uint32_t)h & 0xFFFFFFu;
    return s < d->res_slot_cap ? &d->res_slots[s] : NULL;
}

/* A process's demand (bytes on its devices' lists) changes: keep the
 * adapter's total with it, so a budget needs no walk of every process. */
static inline void vidmm_res_demand_add(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->demand[g] += n;
    a->res->demand_total[g] += n;
}

static inline void vidmm_res_demand_sub(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->demand[g] -= n;
    a->res->demand_total[g] -= n;
}

#endif
