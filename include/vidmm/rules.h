/*
 * vidmm/rules.h - the WDDM rules checker.
 *
 * vidmm_adapter_check (vidmm/adapter.h) checks that the adapter's
 * structures agree with each other; vidmm_adapter_check_rules checks
 * that the state is one the WDDM rules allow.  It returns the number of
 * violations (0 = none) and, when report is not NULL, one line per
 * violation naming the rule first:
 *
 *   budget.usage_le_budget: process 3 local usage 72 MiB > budget 64 MiB after its make-resident
 *
 * Rules, per process and segment group (local, non-local):
 *   budget.available_le_budget    AvailableForReservation <= Budget
 *   budget.reservation_le_budget  CurrentReservation <= Budget
 *   budget.usage_le_budget        after the process's last successful
 *                                 make-resident checked against the group:
 *                                 CurrentUsage <= Budget, unless it said
 *                                 CantTrimFurther (usage that grew since by
 *                                 other means, or a budget that dropped
 *                                 since, is owed a trim notification)
 * per mapping of a resident allocation (GpuMmu):
 *   pte.mapping_has_leaf          every leaf span has a leaf table
 *   pte.leaf_fits_placement       64 KB entries only over a placement in a
 *                                 64 KB-page memory segment, aligned
 * per process (GpuMmu):
 *   pte.tables_follow_mappings    every leaf table has held a valid entry
 *                                 (a mapping or the zero page) and every
 *                                 lower table has a child: page-table memory
 *                                 is bounded by what was mapped, not by the
 *                                 span a call covered
 * per make-resident refused with VIDMM_E_NO_SEGMENT_SPACE (checked at the
 * refusal, reported from then on):
 *   fair_share.refused_within_share
 *                                 never while its process stays within its
 *                                 fair share of a memory segment every
 *                                 refused member supports (its size over
 *                                 the processes holding bytes in it) and
 *                                 free bytes plus what processes over
 *                                 their share hold there, evictable, fit
 * per allocation:
 *   aperture.accessed_physically_mapped
 *                                 AccessedPhysically and resident in system
 *                                 memory => mapped into the aperture
 *   display.system_primary_mapped_iff_displayed
 *                                 a primary in system memory is mapped into
 *                                 the aperture exactly while displayed
 *   submit.busy_is_resident       nothing an in-flight submission
 *                                 references is evicted
 *
 * What the GPU sees (every mapped page of every resident allocation
 * translates to its placement) and what a call changed (a failed
 * make-resident changes nothing a query can see) need the device and the
 * call: the test harness checks them (docs/TESTING.md "Rules").
 *
 * Read-only; takes the adapter lock.  A NULL adapter is one violation.
 */
#ifndef VIDMM_RULES_H
#define VIDMM_RULES_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

VIDMM_API int vidmm_adapter_check_rules(const struct vidmm_adapter *adapter, char *report, size_t report_size);

#ifdef __cplusplus
}
#endif
#endif
