/*
 * res_state.h - the residency manager's own state (private to
 * src/residency/: other modules reach it through residency/residency.h).
 */
#ifndef VIDMM_RESIDENCY_RES_STATE_H
#define VIDMM_RESIDENCY_RES_STATE_H

#include "model/objects.h"
#include "seg/evict_scan.h"
#include "process/process.h"

/* A device's paging queue and its monitored fence (guarded by the fence lock). */
struct vidmm_paging_queue {
    struct vidmm_device *device;
    vidmm_handle self;
    int priority;
    uint64_t submitted;             /* last value handed out */
    uint64_t completed;             /* monitored fence value */
    /* Values handed out whose paging work is still running: value i is
     * done once the adapter's paging fence reaches pend_fence[i]. */
#define VIDMM_QUEUE_PENDING 16u
    uint64_t pend_value[VIDMM_QUEUE_PENDING];
    uint64_t pend_fence[VIDMM_QUEUE_PENDING];
    uint32_t pend_first, pend_count;
    struct vidmm_paging_queue *next;
};

struct vidmm_residency_mgr {
    const struct vidmm_eviction_policy *policy;
    void *policy_state;
    uint64_t clock;             /* reference clock */
    uint64_t epoch;             /* request being served (pins) */
    uint64_t undo_epoch;        /* != 0: a make-resident records what it changes */
    uint64_t over_epoch;        /* eviction round: processes' over-budget cache */
    /* Per segment, for one eviction round: the processes holding bytes
     * in it (fair share, D62). */
    uint64_t holders_epoch[VIDMM_MAX_SEGMENTS + 1];
    uint32_t holders[VIDMM_MAX_SEGMENTS + 1];
    /* Refusals that broke the fair share (vidmm_residency_check_refusal), the
     * last one described: the rules checker reports them. */
    uint64_t unfair_refusals;
    char unfair_refusal[200];
    uint64_t demand_total[2];       /* sum of the processes' demand per group (budgets read it) */
    uint64_t usage_total[2];        /* sum of the processes' usage per group (seg_usage) */
    uint32_t budget_overrides;      /* processes with a budget set by the OS side in either group */
    uint32_t trim_depth;            /* a walk is running (callbacks may call back in) */
    struct vidmm_residency_stats stats;
    struct vidmm_evict_scan evict_scan; /* planner for contiguous requests */
    uint64_t trim_round;            /* trim notification walks so far (budget.c) */
};

/* A device's make-resident fast table (d->res.res_dir: chunks of
 * VIDMM_RES_CHUNK entries, one entry per allocation slot; every slot the
 * device holds a reference record for has its chunk).  An entry that is ok
 * says: the allocation in that slot, of generation gen, is on the
 * device's list (its record exists), resident, owned and not offered,
 * in segment group `group` (local = in the eviction policy).  A
 * make-resident whose every member has an ok entry takes its references
 * here - extra counts them, clock is their last use - without reading
 * the objects or the records, which at 10^5 and more allocations are
 * cache and TLB misses; members in the policy still get their touch.
 * vidmm_residency_fold moves extra into the record's count and the
 * allocation's total and clock into use_clock, before anything reads
 * the exact count (evict, the checker) or changes the state an ok entry
 * stands for: vidmm_residency_leave (placement, residency, owner, priority),
 * offer and the record's unlink clear the entry.  The full path makes
 * it ok again at the next make-resident. */
struct vidmm_residency_slot {
    uint64_t clock;     /* reference clock of the last fast use */
    uint32_t extra;     /* references taken here, not yet in the record */
    uint16_t gen;       /* the allocation handle's generation */
    uint8_t ok;
    uint8_t group;      /* VIDMM_SEGMENT_GROUP_* while ok */
};

/* Fold the entries of al's records (every device) into the records and
 * al; keep = 0 also clears them (the state they stand for changes). */
void vidmm_residency_fold(struct vidmm_adapter *a, struct vidmm_allocation *al, int keep);

/* al's references, those on fast tables included. */
uint32_t vidmm_residency_references(const struct vidmm_adapter *a, const struct vidmm_allocation *al);

/* Entries per chunk of a device's table (struct vidmm_device.res.res_dir):
 * 256 x 16 bytes, one 4 KiB block. */
#define VIDMM_RES_CHUNK_SHIFT 8u
#define VIDMM_RES_CHUNK (1u << VIDMM_RES_CHUNK_SHIFT)

/* What a directory entry of a chunk never made points at: read-only
 * zeros (no entry ok), so the fast path reads through any directory
 * entry without testing it; nothing ever writes it (residency/api.c). */
extern const struct vidmm_residency_slot vidmm_residency_no_chunk[VIDMM_RES_CHUNK];

/* The entry of slot s in d's table, or NULL when its chunk was never made. */
static inline struct vidmm_residency_slot *vidmm_residency_slot_at(const struct vidmm_device *d, uint32_t s)
{
    uint32_t c = s >> VIDMM_RES_CHUNK_SHIFT;
    if (c >= d->res.res_dir_len || d->res.res_dir[c] == vidmm_residency_no_chunk)
        return NULL;
    return &d->res.res_dir[c][s & (VIDMM_RES_CHUNK - 1u)];
}

/* The entry of handle h's slot in d's table, or NULL. */
static inline struct vidmm_residency_slot *vidmm_residency_slot_of(const struct vidmm_device *d, vidmm_handle h)
{
    return vidmm_residency_slot_at(d, VIDMM_HANDLE_SLOT(h));
}

/* A process's demand (bytes on its devices' lists) changes: keep the
 * adapter's total with it, so a budget needs no walk of every process. */
static inline void vidmm_residency_demand_add(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->res.demand[g] += n;
    a->res->demand_total[g] += n;
}

static inline void vidmm_residency_demand_sub(struct vidmm_adapter *a, struct vidmm_process *p, unsigned g, uint64_t n)
{
    p->res.demand[g] -= n;
    a->res->demand_total[g] -= n;
}

/* ---- helpers of the residency module's files ---------------------- */

/* The allocation whose policy entry e is. */
#define ENTRY_OF(e) ((struct vidmm_allocation *)((char *)(e) - offsetof(struct vidmm_allocation, res.pe)))

/* The segment group of segment id. */
static inline unsigned vidmm_residency_group_of(const struct vidmm_adapter *a, uint32_t id)
{
    return vidmm_seg_is_memory(a, id) ? VIDMM_SEGMENT_GROUP_LOCAL : VIDMM_SEGMENT_GROUP_NON_LOCAL;
}

/* The process accounted for al's residency, or NULL. */
static inline struct vidmm_process *vidmm_residency_owner_process(const struct vidmm_adapter *a,
                                                                  const struct vidmm_allocation *al)
{
    return al->res.pe.process ? vidmm_process_get(a, al->res.pe.process) : NULL;
}

/* The live device named by h, or NULL. */
static inline struct vidmm_device *vidmm_residency_device_of(const struct vidmm_adapter *a, vidmm_handle h)
{
    return vidmm_objtab_get(&a->devices, h);
}

/* Is device d lost (read under the fence lock: faults come from driver threads)? */
static inline int vidmm_residency_device_lost(struct vidmm_adapter *a, const struct vidmm_device *d)
{
    pthread_mutex_lock(&a->fence_lock);
    int l = d->lost;
    pthread_mutex_unlock(&a->fence_lock);
    return l;
}

/* A new value of queue q's fence for paging work that finishes with
 * adapter paging fence f; 0 when that work is already done (the fence
 * moved to the new value at once) (paging_queue.c). */
uint64_t vidmm_residency_queue_signal(struct vidmm_adapter *a, struct vidmm_paging_queue *q, uint64_t f);

/* The fair share of segment id for process p (fair_share.c, D62):
 * size / holders, p counted among them. */
uint64_t vidmm_residency_fair_share(struct vidmm_adapter *a, uint32_t id, const struct vidmm_process *p);

#endif
