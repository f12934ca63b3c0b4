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
    uint32_t trim_depth;            /* a walk is running (callbacks may call back in) */
    struct vidmm_residency_stats stats;
    struct vidmm_evict_scan evict_scan; /* planner for contiguous requests */
    uint64_t trim_round;            /* trim notification walks so far (budget.c) */
};

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
