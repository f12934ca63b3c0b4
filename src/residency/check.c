/*
 * check.c - the residency checker (vidmm_residency_check): the reference
 * records against the devices' lists and the allocations', the fast
 * tables against the records, owners, demand and usage totals against
 * what the allocations say.  Reads only; each violation is counted and
 * the last described in msg.
 */
#include "model/objects.h"
#include "handle/handle.h"
#include "handle/lookup.h"
#include "process/process.h"
#include "residency/residency.h"
#include "residency/res_state.h"
#include "core/report.h"

#include <stdio.h>
#include <string.h>

/* ---- the checker ----------------------------------------------------------- */

/* Device d's fast table: every record's slot has its entry (chunk);
 * an ok entry names a live allocation with a record of d that is
 * resident, owned, not offered, in the entry's group, last used no later
 * than now; an entry that is not ok holds nothing. */
static int check_slots(const struct vidmm_adapter *a, const struct vidmm_device *d, uint32_t pi, char *msg, size_t n)
{
    int e = 0;
    for (const struct vidmm_residency_ref *r = d->res.refs; r; r = r->dev_next)
        if (!vidmm_residency_slot_of(d, r->al->self)) {
            e++;
            snprintf(msg, n, "process %u: a device's reference to slot %u has no entry in its fast table (%u slots)", pi,
                     (unsigned)VIDMM_HANDLE_SLOT(r->al->self), d->res.res_slot_cap);
        }
    if (d->res.res_slot_cap != d->res.res_dir_len << VIDMM_RES_CHUNK_SHIFT) {
        e++;
        snprintf(msg, n, "process %u: fast table of %u chunks says %u slots", pi, d->res.res_dir_len, d->res.res_slot_cap);
    }
    for (uint32_t s = 0; s < d->res.res_slot_cap; s++) {
        const struct vidmm_residency_slot *t = vidmm_residency_slot_at(d, s);
        if (!t) {   /* a chunk never made: no entry in it */
            s |= VIDMM_RES_CHUNK - 1u;
            continue;
        }
        if (!t->ok) {
            if (t->extra) {
                e++;
                snprintf(msg, n, "process %u: fast table slot %u holds %u references but is not ok", pi, s, t->extra);
            }
            continue;
        }
        const struct vidmm_allocation *al = vidmm_objtab_at(&a->allocations, s);
        const struct vidmm_residency_ref *r = NULL;
        if (al && al->live && !al->zombie && al->handle_gen == t->gen)
            for (r = al->res.refs; r && r->dev != d; r = r->al_next)
                ;
        if (!r) {
            e++;
            snprintf(msg, n, "process %u: fast table slot %u (generation %u) names no allocation on the device's list",
                     pi, s, t->gen);
            continue;
        }
        unsigned g = al->res.in_memory_segment ? VIDMM_SEGMENT_GROUP_LOCAL : VIDMM_SEGMENT_GROUP_NON_LOCAL;
        if (!al->resident || !al->res.owned || al->res.offered || t->group != g || t->clock > a->res->clock) {
            e++;
            snprintf(msg, n, "process %u: fast table slot %u: resident %d owned %u offered %d group %u (entry %u), "
                     "clock %llu (now %llu)", pi, s, al->resident, al->res.owned, al->res.offered, g, t->group,
                     (unsigned long long)t->clock, (unsigned long long)a->res->clock);
        }
    }
    return e;
}

/* Each process's resident bytes per segment, and its counts of owned
 * and private allocations, against the allocations: USAGE_WINDOW table
 * slots per pass over the allocations, a bounded stack whatever the
 * number of processes, O(allocations x slots / 64). */
#define USAGE_WINDOW 64u
static int check_usage(const struct vidmm_adapter *a, char *msg, size_t n)
{
    int e = 0;
    uint64_t usage[USAGE_WINDOW][VIDMM_MAX_SEGMENTS + 1];
    uint64_t owned[USAGE_WINDOW], priv[USAGE_WINDOW];
    for (uint32_t base = 0; base < a->processes.used; base += USAGE_WINDOW) {
        memset(usage, 0, sizeof(usage));
        memset(owned, 0, sizeof(owned));
        memset(priv, 0, sizeof(priv));
        uint32_t it = 0;
        for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
            const struct vidmm_process *cp = al->private_process ? vidmm_process_get(a, al->private_process) : NULL;
            uint32_t cs = cp ? vidmm_process_slot(cp) : UINT32_MAX;
            if (cs >= base && cs - base < USAGE_WINDOW)
                priv[cs - base]++;
            if (!al->res.pe.process)
                continue;
            const struct vidmm_process *p = vidmm_residency_owner_process(a, al);
            uint32_t s = p ? vidmm_process_slot(p) : UINT32_MAX;
            if (s >= base && s - base < USAGE_WINDOW) {
                owned[s - base]++;
                if (al->resident)
                    usage[s - base][al->pl.segment_id] += al->size;
            }
        }
        for (uint32_t s = base; s < base + USAGE_WINDOW && s < a->processes.used; s++) {
            const struct vidmm_process *p = vidmm_process_at(a, s);
            if (!p)
                continue;
            for (uint32_t id = 0; id <= VIDMM_MAX_SEGMENTS; id++)
                if (p->res.seg_usage[id] != usage[s - base][id]) {
                    e++;
                    snprintf(msg, n, "process %u: usage of segment %u is %llu, allocations say %llu", s, id,
                             (unsigned long long)p->res.seg_usage[id], (unsigned long long)usage[s - base][id]);
                }
            if (p->res.owned_allocations != owned[s - base] || p->private_allocations != priv[s - base]) {
                e++;
                snprintf(msg, n, "process %u: counts %llu owned and %llu private allocations, allocations say %llu and %llu",
                         s, (unsigned long long)p->res.owned_allocations, (unsigned long long)p->private_allocations,
                         (unsigned long long)owned[s - base], (unsigned long long)priv[s - base]);
            }
        }
    }
    return e;
}

int vidmm_residency_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    int e = 0;
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        uint32_t i = it - 1;
        uint32_t total = 0;
        for (const struct vidmm_residency_ref *r = al->res.refs; r; r = r->al_next) {
            total += r->count;
            if (r->al != al || !r->count) {
                e++;
                snprintf(msg, n, "allocation %u: bad residency reference", i);
            }
        }
        if (total != al->res.ref_total) {
            e++;
            snprintf(msg, n, "allocation %u: %u references, counter says %u", i, total, al->res.ref_total);
        }
        int want = al->resident && vidmm_seg_is_memory(a, al->pl.segment_id);
        if (want != al->res.in_memory_segment) {
            e++;
            snprintf(msg, n, "allocation %u: policy membership %d, expected %d", i, al->res.in_memory_segment, want);
        }
        if (!al->resident && (!al->pl.sys || (al->pl.ap_mapped && !al->displayed))) {
            e++;
            snprintf(msg, n, "allocation %u: evicted but not in plain system pages", i);
        }
        if (al->res.backing.sys && !vidmm_seg_is_memory(a, al->pl.segment_id)) {
            e++;
            snprintf(msg, n, "allocation %u: backing copy outside a memory segment", i);
        }
        if (al->res.owned != (al->res.pe.process != 0)) {
            e++;
            snprintf(msg, n, "allocation %u: owned flag disagrees with the policy entry's owner", i);
        }
        if (al->res.pe.priority == 0) {
            e++;
            snprintf(msg, n, "allocation %u: priority 0", i);
        }
        if (al->resident && al->res.pe.process) {
            const struct vidmm_process *p = vidmm_residency_owner_process(a, al);
            if (!p) {
                e++;
                snprintf(msg, n, "allocation %u: owned by a dead process", i);
            }
        }
    }
    e += check_usage(a, msg, n);
    uint64_t demand[2] = { 0, 0 }, usage[2] = { 0, 0 };
    uint32_t overrides = 0;
    const struct vidmm_process *p;
    vidmm_for_each_process(a, p) {
        uint32_t i = vidmm_process_slot(p);
        demand[0] += p->res.demand[0];
        demand[1] += p->res.demand[1];
        for (uint32_t id = 0; id < a->segment_count; id++)
            usage[vidmm_seg_is_memory(a, id) ? 0 : 1] += p->res.seg_usage[id];
        overrides += p->res.budget_override[0] || p->res.budget_override[1];
        for (const struct vidmm_device *d = p->devices; d; d = d->next) {
            uint64_t refs = 0;
            for (const struct vidmm_residency_ref *r = d->res.refs; r; r = r->dev_next) {
                refs++;
                if (r->dev != d || (r->dev_next && r->dev_next->dev_prev != r)) {
                    e++;
                    snprintf(msg, n, "process %u: residency list broken", i);
                    break;
                }
            }
            e += check_slots(a, d, i, msg, n);
            if (refs != d->res.ref_count) {
                e++;
                snprintf(msg, n, "process %u: device lists %llu allocations, counter %llu", i,
                         (unsigned long long)refs, (unsigned long long)d->res.ref_count);
            }
        }
    }
    if (a->res->policy->check && a->res->policy->check(a->res->policy_state)) {
        e++;
        snprintf(msg, n, "eviction policy %s: state inconsistent", a->res->policy->name);
    }
    if (overrides != a->res->budget_overrides) {
        e++;
        snprintf(msg, n, "%u processes have a budget override, the adapter counts %u", overrides,
                 a->res->budget_overrides);
    }
    for (unsigned g = 0; g < 2; g++)
        if (usage[g] != a->res->usage_total[g]) {
            e++;
            snprintf(msg, n, "usage of group %u: processes hold %llu, the adapter's total says %llu", g,
                     (unsigned long long)usage[g], (unsigned long long)a->res->usage_total[g]);
        }
    for (unsigned g = 0; g < 2; g++)
        if (demand[g] != a->res->demand_total[g]) {
            e++;
            snprintf(msg, n, "demand of group %u: processes hold %llu, the adapter's total says %llu", g,
                     (unsigned long long)demand[g], (unsigned long long)a->res->demand_total[g]);
        }
    return e;
}

uint64_t vidmm_residency_check_owned(const struct vidmm_process *p, struct vidmm_report *r)
{
    uint64_t owned = 0;
    for (const struct vidmm_allocation *al = p->res.owned_first; al && owned <= p->res.owned_allocations;
         al = al->owned.next) {
        owned++;
        if (vidmm_residency_owner(al) != p->self || (al->owned.next && al->owned.next->owned.prev != al) ||
            (al == p->res.owned_first && al->owned.prev))
            vidmm_report_add(r, "process %u: list of owned allocations broken", vidmm_process_slot(p));
    }
    return owned;
}
