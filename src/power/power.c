/*
 * power.c - adapter power transitions (vidmm/power.h).
 *
 * Going down, the rule in the remarks of the DXGK_SEGMENTFLAGS reference page (D32)
 * decides per memory segment whether its content survives: a segment
 * flagged PRESERVED_DURING_STANDBY keeps it through standby,
 * PRESERVED_DURING_HIBERNATE through hibernate.  Everything else that
 * lives there is evicted to system memory through the ordinary eviction
 * path (so it comes back through the ordinary restore path), after every
 * engine went idle.  Eviction keeps what it can without a copy: offered
 * allocations and those whose system copy is current are dropped, not
 * transferred.  Page tables are not saved (the system paging process's
 * tables are rebuilt after power transitions in WDDM too): on resume
 * every table is written again from vidmm's own records.
 */
#include "model/objects.h"
#include "core/error.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "fence/hang.h"
#include "fence/inflight.h"
#include "paging/paging.h"
#include "residency/residency.h"
#include "tdr/tdr.h"

#include <string.h>

static int preserved(const struct vidmm_adapter *a, uint32_t id, uint32_t state)
{
    uint32_t f = a->seg[id].flags;
    if (a->seg[id].kind != VIDMM_SEGMENT_KIND_MEMORY)
        return 1;   /* aperture and system pages live in system memory */
    if (state == VIDMM_POWER_STANDBY)
        return (f & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY) != 0;
    /* Partial preservation names a limit vidmm does not model: not kept. */
    return (f & VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE) != 0;
}

static vidmm_status go_down(struct vidmm_adapter *a, uint32_t state)
{
    /* Nothing may be locked or shown where content will be lost: the
     * CPU pointer would outlive the bytes, and scan-out would read
     * memory that no longer holds the primary (evicting it would leave
     * the source showing unmapped system pages).  The caller blanks the
     * source first (a flip to no allocation) and shows it again after
     * resume (docs/DECISIONS.md D41).  Checked before anything changes. */
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->resident && (al->lock_count || al->displayed) &&
            !preserved(a, al->pl.segment_id, state))
            return vidmm_fail(VIDMM_E_BUSY, "allocation 0x%llx is %s in a segment the state does not preserve",
                              (unsigned long long)al->self, al->lock_count ? "locked" : "scanned out");
    }
    vidmm_inflight_wait_all(a);
    if (vidmm_reset_pending(a))
        return VIDMM_E_TIMEOUT;   /* an engine hung: reset as the call returns, the adapter stays in D0 */
    vidmm_status st = vidmm_paging_flush(a);
    it = 0;
    for (struct vidmm_allocation *al; st >= 0 && (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (!al->resident || preserved(a, al->pl.segment_id, state))
            continue;
        /* A system copy is current only if neither the CPU (a lock
         * clears backing_valid) nor the GPU (a submission listing it sets
         * gpu_dirty) may have written since it was made. */
        int clean = vidmm_residency_backing_current(al);
        int dropped = vidmm_residency_is_offered(al) || clean;
        uint64_t size = al->size;
        st = vidmm_residency_evict(a, al, clean);
        if (st < 0)
            break;
        if (dropped) {
            a->power_stats.allocations_discarded++;
        } else {
            a->power_stats.allocations_saved++;
            a->power_stats.bytes_saved += size;
        }
    }
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0)
        return st;
    if (a->ops.set_power_state && a->ops.set_power_state(a->driver, state) < 0)
        return vidmm_fail(VIDMM_E_DRIVER_FAILURE, "the driver's set_power_state(%u) failed", state);
    a->power_state = state;
    return VIDMM_OK;
}

static vidmm_status resume(struct vidmm_adapter *a)
{
    if (a->ops.set_power_state && a->ops.set_power_state(a->driver, VIDMM_POWER_D0) < 0)
        return vidmm_fail(VIDMM_E_DRIVER_FAILURE, "the driver's set_power_state(D0) failed");
    a->power_state = VIDMM_POWER_D0;
    vidmm_status st = vidmm_tdr_rebuild_page_tables(a);
    vidmm_status f = vidmm_paging_flush(a);
    if (st < 0 || f < 0)
        vidmm_reset_schedule(a);   /* tables left unwritten: the reset at the entry boundary rebuilds them (D66) */
    return st < 0 ? st : f;
}

static vidmm_status set_power_state(struct vidmm_adapter *a, uint32_t state)
{
    if (state > VIDMM_POWER_HIBERNATE)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "power state %u: D0 (0) to HIBERNATE (%u)", state,
                          (unsigned)VIDMM_POWER_HIBERNATE);
    static const char *const names[] = { "D0", "standby", "hibernate" };
    vidmm_status st = VIDMM_OK;
    if (state == VIDMM_POWER_D0 && a->power_state == VIDMM_POWER_D0) {
        /* Already running: nothing to resume. */
    } else if (state != VIDMM_POWER_D0 && a->power_state != VIDMM_POWER_D0) {
        /* power.h: going down only from D0, the same low-power state
         * again included (a second standby would claim an eviction and a
         * driver notification that did not happen). */
        st = vidmm_fail(VIDMM_E_STATE, "%s requested in %s: going down is allowed only from D0 (resume first)",
                        names[state], names[a->power_state]);
    } else {
        st = state == VIDMM_POWER_D0 ? resume(a) : go_down(a, state);
        if (st >= 0)
            a->power_stats.transitions++;
    }
    return st;
}

vidmm_status vidmm_adapter_set_power_state(struct vidmm_adapter *a, uint32_t state)
{
    VIDMM_ENTRY(a, set_power_state(a, state));
}

static vidmm_status get_power_state(const struct vidmm_adapter *a, uint32_t *state)
{
    if (!state)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "state is NULL");
    *state = a->power_state;
    return VIDMM_OK;
}

vidmm_status vidmm_adapter_get_power_state(const struct vidmm_adapter *a, uint32_t *state)
{
    VIDMM_ENTRY(a, get_power_state(a, state));
}

static vidmm_status get_power_stats(const struct vidmm_adapter *a, struct vidmm_power_stats *out)
{
    if (!out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "out is NULL");
    *out = a->power_stats;
    return VIDMM_OK;
}

vidmm_status vidmm_adapter_get_power_stats(const struct vidmm_adapter *a, struct vidmm_power_stats *out)
{
    VIDMM_ENTRY(a, get_power_stats(a, out));
}
