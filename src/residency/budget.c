/*
 * budget.c - per-process budgets and reservations per segment group, and
 * trim notifications.
 *
 * WDDM leaves the budget formula to the OS (wddm-facts 6.3: NOT FOUND);
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
 * A process whose usage exceeds its budget gets TRIM_TO_BUDGET
 * notifications on its devices' callbacks, with the excess.
 */
#include "core/vidmm_int.h"

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
    uint64_t n = 0;
    for (uint32_t i = 0; i < VIDMM_MAX_PROCESSES; i++)
        n += a->procs[i] && a->procs[i]->devices;
    return capacity(a, group) / (n ? n : 1);
}

uint64_t vidmm_res_usage(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group)
{
    uint64_t u = 0;
    for (uint32_t id = 0; id < a->segment_count; id++) {
        int local = id && a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY;
        if (local == (group == VIDMM_SEGMENT_GROUP_LOCAL))
            u += p->seg_usage[id];
    }
    return u;
}

uint64_t vidmm_res_budget(const struct vidmm_adapter *a, const struct vidmm_process *p, unsigned group)
{
    if (p->budget_override[group])
        return p->budget_override[group];
    uint64_t cap = capacity(a, group), demand = 0;
    for (uint32_t i = 0; i < VIDMM_MAX_PROCESSES; i++)
        if (a->procs[i])
            demand += a->procs[i]->demand[group];
    if (demand <= cap)
        return cap;
    uint64_t f = fair(a, group);
    return f > p->reservation[group] ? f : p->reservation[group];
}

/* Callbacks may call back into anything - destroy devices (their own or
 * others'), the process, change budgets - so the walk keeps no pointer
 * across a call: each round marks the devices it notified, and after
 * every callback the process is looked up again by handle and its list
 * walked from the start for the next device not yet notified. */
void vidmm_res_notify_trim(struct vidmm_adapter *a, struct vidmm_process *p)
{
    uint64_t u = vidmm_res_usage(a, p, VIDMM_SEGMENT_GROUP_LOCAL);
    uint64_t b = vidmm_res_budget(a, p, VIDMM_SEGMENT_GROUP_LOCAL);
    if (u <= b)
        return;
    vidmm_handle self = p->self;
    uint64_t round = ++a->trim_round;
    for (;;) {
        struct vidmm_device *d = p->devices;
        while (d && (!d->trim_cb || d->trim_round == round))
            d = d->next;
        if (!d)
            return;
        d->trim_round = round;
        a->res_stats.trim_notifications++;
        d->trim_cb(d->trim_ctx, d->self, VIDMM_TRIM_TO_BUDGET, u - b);
        p = vidmm_process_get(a, self);
        if (!p)
            return;
        u = vidmm_res_usage(a, p, VIDMM_SEGMENT_GROUP_LOCAL);
        b = vidmm_res_budget(a, p, VIDMM_SEGMENT_GROUP_LOCAL);
        if (u <= b)
            return;
    }
}

static vidmm_status query_video_memory_info(const struct vidmm_adapter *a, vidmm_handle process,
                                           enum vidmm_segment_group group, struct vidmm_video_memory_info *out)
{
    if (!a || !out || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return VIDMM_E_INVALID_ARG;
    const struct vidmm_process *p = vidmm_process_get(a, process);
    if (!p)
        return VIDMM_E_INVALID_HANDLE;
    memset(out, 0, sizeof(*out));
    out->budget = vidmm_res_budget(a, p, group);
    out->current_usage = vidmm_res_usage(a, p, group);
    out->current_reservation = p->reservation[group];
    uint64_t f = fair(a, group);
    out->available_for_reservation = f < out->budget ? f : out->budget;
    return VIDMM_OK;
}

static vidmm_status change_video_memory_reservation(struct vidmm_adapter *a, vidmm_handle process,
                                                   enum vidmm_segment_group group, uint64_t reservation)
{
    if (!a || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_process *p = vidmm_process_get(a, process);
    if (!p)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_video_memory_info info;
    (void)vidmm_query_video_memory_info(a, process, group, &info);
    if (reservation > info.available_for_reservation)
        return VIDMM_E_INVALID_ARG;
    p->reservation[group] = reservation;
    return VIDMM_OK;
}

static vidmm_status process_set_budget(struct vidmm_adapter *a, vidmm_handle process, enum vidmm_segment_group group,
                                      uint64_t budget)
{
    if (!a || (unsigned)group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_process *p = vidmm_process_get(a, process);
    if (!p)
        return VIDMM_E_INVALID_HANDLE;
    p->budget_override[group] = budget;
    if (group == VIDMM_SEGMENT_GROUP_LOCAL)
        vidmm_res_notify_trim(a, p);
    return VIDMM_OK;
}

static vidmm_status register_trim_notification(struct vidmm_adapter *a, vidmm_handle device,
                                              vidmm_trim_callback callback, void *context)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_device *d = vidmm_objtab_get(&a->devices, device);
    if (!d)
        return VIDMM_E_INVALID_HANDLE;
    d->trim_cb = callback;
    d->trim_ctx = callback ? context : NULL;
    return VIDMM_OK;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_change_video_memory_reservation(struct vidmm_adapter *a, vidmm_handle process,
                                                   enum vidmm_segment_group group, uint64_t reservation)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    vidmm_adapter_lock(a);
    vidmm_status st = change_video_memory_reservation(a, process, group, reservation);
    vidmm_adapter_unlock(a);
    return st;
}

vidmm_status vidmm_process_set_budget(struct vidmm_adapter *a, vidmm_handle process,
                                      enum vidmm_segment_group group, uint64_t budget)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    vidmm_adapter_lock(a);
    vidmm_status st = process_set_budget(a, process, group, budget);
    vidmm_adapter_unlock(a);
    return st;
}

vidmm_status vidmm_query_video_memory_info(const struct vidmm_adapter *a, vidmm_handle process,
                                           enum vidmm_segment_group group, struct vidmm_video_memory_info *out)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    vidmm_adapter_lock(a);
    vidmm_status st = query_video_memory_info(a, process, group, out);
    vidmm_adapter_unlock(a);
    return st;
}

vidmm_status vidmm_register_trim_notification(struct vidmm_adapter *a, vidmm_handle device,
                                              vidmm_trim_callback callback, void *context)
{
    if (!a)
        return VIDMM_E_INVALID_ARG;
    vidmm_adapter_lock(a);
    vidmm_status st = register_trim_notification(a, device, callback, context);
    vidmm_adapter_unlock(a);
    return st;
}
