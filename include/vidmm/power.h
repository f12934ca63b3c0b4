/*
 * vidmm/power.h - adapter power transitions (standby, hibernate, resume).
 *
 * Going to VIDMM_POWER_STANDBY or VIDMM_POWER_HIBERNATE, vidmm waits for
 * every engine to go idle, then evicts to system memory every allocation
 * that lives in a memory segment not preserved for that state (the
 * table in the remarks of the DXGK_SEGMENTFLAGS reference page:
 * PRESERVED_DURING_STANDBY keeps a segment through standby,
 * PRESERVED_DURING_HIBERNATE through
 * hibernate; PARTIALLY_PRESERVED_DURING_HIBERNATE is treated as not
 * preserved), discarding what has a current system copy or was offered,
 * and tells the driver (set_power_state).  Page tables are not saved:
 * they are rebuilt on resume.  While the adapter is down, entries that
 * need the GPU (make-resident, submissions, CPU locks, creating resident
 * allocations, moves, flips, GPU VA reserve/map/unmap/update/free,
 * process and context creation, evict, reclaim) answer VIDMM_E_STATE and
 * change nothing; creating, destroying and querying work, and hand the
 * driver no work: the page-table changes of a destroy wait for the
 * rebuild on resume (docs/DECISIONS.md D59).  Back in VIDMM_POWER_D0 the page tables are rebuilt and evicted
 * allocations come back on their next make-resident or submission, with
 * their content.
 */
#ifndef VIDMM_POWER_H
#define VIDMM_POWER_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"
#include "vidmm/driver.h"
#include "vidmm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* state: VIDMM_POWER_D0 / STANDBY / HIBERNATE (driver.h).  Going down is
 * allowed only from D0 and resuming only to D0 (VIDMM_E_STATE otherwise,
 * the state the adapter is already in included: standby while in standby
 * changes nothing and tells the driver nothing; D0 while in D0 is OK and
 * does nothing); VIDMM_E_INVALID_ARG for an unknown state.  VIDMM_E_BUSY, changing
 * nothing, while an allocation is CPU-locked or displayed in a segment
 * that loses its content (blank the source first: docs/DECISIONS.md D41);
 * VIDMM_E_TIMEOUT when an engine hung on the way (it is reset before the
 * call returns; the adapter stays in D0).  A failure going down
 * (host memory for the system copies, a driver failure) leaves the
 * adapter in D0 with what was already evicted evicted. */
VIDMM_API vidmm_status vidmm_adapter_set_power_state(struct vidmm_adapter *adapter, uint32_t state);
VIDMM_API vidmm_status vidmm_adapter_get_power_state(const struct vidmm_adapter *adapter, uint32_t *state);

struct vidmm_power_stats {
    uint64_t transitions;             /* calls that changed the state */
    uint64_t allocations_saved;       /* evicted with a copy going down */
    uint64_t allocations_discarded;   /* evicted without a copy (clean or offered) */
    uint64_t bytes_saved;
};
VIDMM_API vidmm_status vidmm_adapter_get_power_stats(const struct vidmm_adapter *adapter, struct vidmm_power_stats *out);

#ifdef __cplusplus
}
#endif
#endif
