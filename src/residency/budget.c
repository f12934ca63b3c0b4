/*
 * budget.c - per-process budgets and reservations per segment group, and
 * trim notifications.
 *
 * WDDM leaves the budget formula to the OS (no published formula);
 * vidmm's choice (docs/DECISIONS.md D21):
 *   capacity(local)     = bytes of the memory segments;
 *   capacity(non-local) = the system-memory commit limit;
 *   pressure            = the processes' demand (bytes on their residency
 *                         lists) exceeds the capacity;
 *   fair share          = capacity / processes with devices;
 *   budget              = an override set by the OS side if any, else the
 *                         capacity without pressure, else the fair share
 *                         (never below the process's reservation);
 *   available for reservation = the fair share (<= budget).
 * A process whose usage exceeds its budget in a group gets TRIM_TO_BUDGET
 * notifications on its devices' callbacks, with the excess (and
 * VIDMM_TRIM_NON_LOCAL for the non-local group): after every
 * make-resident that changes the demand, every process is looked at, not
 * only the caller, since one process's demand lowers every budget.
 */
#include "model/objects.h"
#include "handle/lookup.h"
#include "process/process.h"
#include "residency/residency.h"
#include "residency/res_state.h"

#include <string.h>

static uint64_t capacity(const struct vidmm_adapter *a, unsigned group)
{
    if (group == VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return a->seg[0].commit_limit;
    uint64_t c = 0;
    for (uint32_t id = 1; id < a->segment_count; id++)
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY)
            c += a->seg[id].size;
    return c;
}

static uint64_t fair(const struct vidmm_adapter *a, unsigned group)
{
    uint64_t n = a->processes_with_devices;   /* kept by device/device.c: O(1) */
    return capacity(a, group) / (n ? n : 1);
}

uint64_t vidmm_residency_usage(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group)
{
    uint64_t u = 0;
    for (uint32_t id = 0; id < a->segment_count; id++) {
        int local = id && a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY;
        if (local == (group == VIDMM_SEGMENT_GROUP_LOCAL))
            u += p->res.seg_usage[id];
    }
    return u;
}

uint64_t vidmm_residency_budget(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group)
{
    if (p->res.budget_override[group])
        return p->res.budget_override[group];
    uint64_t cap = capacity(a, group);
    if (a->res->demand_total[group] <= cap)
        return cap;
    uint64_t f = fair(a, group);
    return f > p->res.reservation[group] ? f : p->res.reservation[group];
}

/* Notify process ph's devices, group by group, while it is over budget.
 * A callback may evict, destroy its own or another device, or the
 * process: nothing is held across it but handles and the walk's round
 * mark, and the device list is searched again from its head each time
 * (the first device not yet told in this round). */
static void notify_process(struct vidmm_adapter *a, vidmm_handle ph, uint64_t round)
{
    for (unsigned g = 0; g < 2; g++) {
        for (;;) {
            struct vidmm_process *p = vidmm_process_get(a, ph);
            if (!p)
                return;
            uint64_t u = vidmm_residency_usage(a, p, g), b = vidmm_residency_budget(a, p, g);
            if (u <= b)
                break;
            struct vidmm_device *d = p->devices;
            while (d && (!d->res.trim_cb || d->res.trim_round[g] == round))
                d = d->next;
            if (!d)
                break;
            d->res.trim_round[g] = round;
            a->res->stats.trim_notifications++;
            uint32_t flags = VIDMM_TRIM_TO_BUDGET | (g == VIDMM_SEGMENT_GROUP_NON_LOCAL ? VIDMM_TRIM_NON_LOCAL : 0u);
            d->res.trim_cb(d->res.trim_ctx, d->self, flags, u - b);
        }
    }
}

void vidmm_residency_notify_trim(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (a->res->trim_depth)
        return;   /* called back from a callback: the running walk looks again */
    a->res->trim_depth++;
    notify_process(a, p->self, ++a->res->trim_round);
    a->res->trim_depth--;
}

/* Can any process be over its budget?  Not when no budget is set by the
 * OS side and, in each group, neither the demand nor the usage of all
 * processes together exceeds the capacity: every budget is then the
 * capacity, and every usage is at most the total.  O(1): the walk over
 * every process is left for pressure. */
static int anyone_may_be_over(const struct vidmm_adapter *a)
{
    if (a->res->budget_overrides)
        return 1;
    for (unsigned g = 0; g < 2; g++) {
        uint64_t cap = capacity(a, g);
        if (a->res->demand_total[g] > cap || a->res->usage_total[g] > cap)
            return 1;
    }
    return 0;
}

void vidmm_residency_notify_all(struct vidmm_adapter *a)
{
    if (a->res->trim_depth || !anyone_may_be_over(a))
        return;
    a->res->trim_depth++;
    uint64_t round = ++a->res->trim_round;
    /* A callback may destroy any process, the next one included: walk
     * the table's slots (O(slots in use), rebuilt from the slot each
     * step) rather than the list, which a destroy may cut. */
    uint32_t it = 0;
    for (struct vidmm_process *p; (p = vidmm_objtab_next(&a->processes, &it)) != NULL;)
        notify_process(a, p->self, round);
    a->res->trim_depth--;
}

static vidmm_status query_video_memory_info(const struct vidmm_adapter *a, vidmm_handle process,
                                           enum vidmm_segment_group group, struct vidmm_video_memory_info *out)
{
    if (!a || !out || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : !out ? "out is NULL"
                          : "segment group %u: LOCAL (0) or NON_LOCAL (1)", (unsigned)group);
    struct vidmm_process *p;
    vidmm_status lookup_st = vidmm_process_lookup(a, process, &p);
    if (lookup_st < 0)
        return lookup_st;
    memset(out, 0, sizeof(*out));
    out->budget = vidmm_residency_budget(a, p, group);
    out->current_usage = vidmm_residency_usage(a, p, group);
    out->current_reservation = p->res.reservation[group];
    uint64_t f = fair(a, group);
    out->available_for_reservation = f < out->budget ? f : out->budget;
    return VIDMM_OK;
}

static vidmm_status change_video_memory_reservation(struct vidmm_adapter *a, vidmm_handle process,
                                                   enum vidmm_segment_group group, uint64_t reservation)
{
    if (!a || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "segment group %u: LOCAL (0) or NON_LOCAL (1)",
                          (unsigned)group);
    struct vidmm_process *p;
    vidmm_status lookup_st = vidmm_process_lookup(a, process, &p);
    if (lookup_st < 0)
        return lookup_st;
    struct vidmm_video_memory_info info;
    (void)vidmm_query_video_memory_info(a, process, group, &info);
    if (reservation > info.available_for_reservation)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "reservation %llu bytes: above the %llu available for reservation",
                          (unsigned long long)reservation, (unsigned long long)info.available_for_reservation);
    p->res.reservation[group] = reservation;
    return VIDMM_OK;
}

static vidmm_status process_set_budget(struct vidmm_adapter *a, vidmm_handle process, enum vidmm_segment_group group,
                                      uint64_t budget)
{
    if (!a || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "segment group %u: LOCAL (0) or NON_LOCAL (1)",
                          (unsigned)group);
    struct vidmm_process *p;
    vidmm_status lookup_st = vidmm_process_lookup(a, process, &p);
    if (lookup_st < 0)
        return lookup_st;
    int had = p->res.budget_override[0] || p->res.budget_override[1];
    p->res.budget_override[group] = budget;
    a->res->budget_overrides += (uint32_t)(p->res.budget_override[0] || p->res.budget_override[1]) - (uint32_t)had;
    /* A budget is never below the reservation (docs/DECISIONS.md D44):
     * the OS taking the budget lower takes the reservation with it. */
    if (budget && p->res.reservation[group] > budget)
        p->res.reservation[group] = budget;
    vidmm_residency_notify_trim(a, p);
    return VIDMM_OK;
}

static vidmm_status register_trim_notification(struct vidmm_adapter *a, vidmm_handle device,
                                              vidmm_trim_callback callback, void *context)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_device *d;
    vidmm_status lookup_st = vidmm_device_lookup(a, device, &d);
    if (lookup_st < 0)
        return lookup_st;
    d->res.trim_cb = callback;
    d->res.trim_ctx = callback ? context : NULL;
    return VIDMM_OK;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_change_video_memory_reservation(struct vidmm_adapter *a, vidmm_handle process,
                                                   enum vidmm_segment_group group, uint64_t reservation)
{
    VIDMM_ENTRY(a, change_video_memory_reservation(a, process, group, reservation));
}

vidmm_status vidmm_process_set_budget(struct vidmm_adapter *a, vidmm_handle process,
                                      enum vidmm_segment_group group, uint64_t budget)
{
    VIDMM_ENTRY(a, process_set_budget(a, process, group, budget));
}

vidmm_status vidmm_query_video_memory_info(const struct vidmm_adapter *a, vidmm_handle process,
                                           enum vidmm_segment_group group, struct vidmm_video_memory_info *out)
{
    VIDMM_ENTRY(a, query_video_memory_info(a, process, group, out));
}

vidmm_status vidmm_register_trim_notification(struct vidmm_adapter *a, vidmm_handle device,
                                              vidmm_trim_callback callback, void *context)
{
    VIDMM_ENTRY(a, register_trim_notification(a, device, callback, context));
}

void vidmm_residency_last_request(const struct vidmm_process *p, unsigned g, int *cant_trim, uint64_t *usage,
                                  uint64_t *budget)
{
    *cant_trim = p->res.last_mr_cant_trim[g];
    *usage = p->res.usage_after_mr[g];
    *budget = p->res.budget_after_mr[g];
}
