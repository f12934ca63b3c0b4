/*
 * rules_check.h - the harness side of the WDDM rules checker, shared by
 * the vidmm tool (run, replay, gen/fuzz-scenarios/shrink), the test
 * suites (oom, stress), the fuzzers and the explorer: part of the support
 * library (support/, libvidmm-support.a, not installed), linked into
 * each, never copied.  Like the rest of support/ it uses the public
 * headers, plus softgpu's internal header (softgpu_int.h) for the
 * white-box reads of the GPU's view (the aperture's entries, the dummy
 * page) that softgpu's public interface does not offer.
 *
 * The library's vidmm_adapter_check_rules (vidmm/rules.h) checks the
 * state rules vidmm can see by itself.  Two kinds need more:
 *
 *   - the GPU's view (gpu.*): softgpu's MMU walks the device's own page
 *     tables, independently of vidmm.  Every mapped page of every
 *     resident allocation must translate (no fault, not a Zero entry) to
 *     the byte of its current placement; a mapped page of an evicted
 *     allocation must fault.
 *       gpu.resident_translates   a resident page faults or is Zero
 *       gpu.translates_to_placement  it reaches another place
 *       gpu.evicted_faults        an evicted allocation's page translates
 *       gpu.zero_translates_zero  a page of a zero reservation (reserved
 *                                 with VIDMM_GPUVA_RESERVE_ZERO or unmapped
 *                                 back to it) faults or reaches memory,
 *                                 after any page-table rebuild too
 *       gpu.entry_reaches_owned   a valid entry under a reserved range
 *                                 reaches memory-segment bytes that are
 *                                 free or an allocation's (under a mapped
 *                                 range translates_to_placement and
 *                                 evicted_faults already say that no entry
 *                                 reaches free or another's memory)
 *   - what a call changed (call.*): a fingerprint of every public query
 *     about every object the harness knows, taken before a call and
 *     after it.
 *       call.failed_make_resident_no_trace  a failed make-resident
 *                                 changed something a query can see
 *
 * Everything here only queries (read-only) and is cheap enough to run
 * after every call of a scenario.  Violations are reported one per line,
 * the rule's name first, as the library's are.
 */
#ifndef VIDMM_TEST_RULES_CHECK_H
#define VIDMM_TEST_RULES_CHECK_H

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stddef.h>
#include <stdint.h>

/* The objects a harness knows; null handles are skipped. */
struct rc_objects {
    const vidmm_handle *proc, *dev, *ctx, *queue, *alloc;
    uint32_t nproc, ndev, nctx, nqueue, nalloc;
};

/* ---- the state fingerprint ------------------------------------------- */

/* Everything the public API says about the objects, as labelled numbers
 * (labels are static strings: compared by address).  Left out on
 * purpose: paging statistics (a call may do paging work and undo it),
 * the paging process's move counters, patch counters and
 * make_resident_calls (counts calls, failed ones included). */
struct rc_fp {
    uint32_t n, cap;
    int overflow;                /* more entries than cap: comparisons say so */
    uint64_t *v;
    const char **lab;
    uint32_t *idx;
};
/* 0, or -1 when the host is out of memory. */
int rc_fp_init(struct rc_fp *f, uint32_t cap);
void rc_fp_free(struct rc_fp *f);
void rc_fp_put(struct rc_fp *f, const char *lab, uint32_t idx, uint64_t v);
/* Reset f and take the fingerprint of o on a. */
void rc_fp_take(struct rc_fp *f, const struct vidmm_adapter *a, const struct rc_objects *o);
/* Labels a failed make-resident or submission may change under
 * docs/DECISIONS.md D35 (where allocations are, and what follows). */
int rc_fp_residency_label(const char *lab);
/* 0 when p and q agree, except labels in ignore (NULL-terminated, may be
 * NULL) and, with weak, residency labels; else 1 and the first
 * difference in msg ("alloc.segment_id[3] = 0, was 1"). */
int rc_fp_diff(const struct rc_fp *p, const struct rc_fp *q, int weak, const char *const *ignore, char *msg,
               size_t n);

/* ---- the rules -------------------------------------------------------- */

/* The gpu.* rules over the processes of o (nothing on IoMmu or adapters
 * without GPU VA).  Returns the violations; report as in vidmm/rules.h. */
int rc_check_gpu(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, char *report, size_t n);
/* gpu.unmapped_faults: a VA no range of its process's VA space covers
 * faults (no entry left behind by an unmap, a free or a destroyed
 * allocation).  Walks the holes page by page from VA 0, at most max_pages
 * pages per process, so not part of rc_check_rules. */
int rc_check_unmapped(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, uint64_t max_pages,
                      char *report, size_t n);
/* gpu.aperture_entry_owned: every aperture and AGP segment's GART (read
 * through softgpu's white-box accessor) maps each allocation's range onto
 * one block of host pages, and nothing else but the paging ring: no
 * entry outlives its range.  A scan of every aperture page, so not part
 * of rc_check_rules (run after every call); the drvfail suite runs it. */
int rc_check_aperture(struct vidmm_adapter *a, struct softgpu *sg, char *report, size_t n);
/* ---- which rules run on which driver ----------------------------------- */

/* The library's rules (vidmm_adapter_check_rules) and the failed-call
 * rule read only public queries: they run on any driver.  The rules that
 * read softgpu itself - its MMU walker (rc_check_gpu, rc_check_unmapped)
 * and its GART (rc_check_aperture) - run only when the driver is softgpu
 * (sg not NULL).  On any other driver a harness says they are "not
 * applicable on driver NAME", with their names, and counts the checks
 * that left them out: never a silent pass.  NULL-terminated. */
extern const char *const rc_softgpu_only_rules[];
/* Their names joined by ", " into buf (cut to n). */
void rc_softgpu_only_names(char *buf, size_t n);

/* vidmm_adapter_check_rules plus rc_check_gpu (sg may be NULL: library
 * rules only). */
int rc_check_rules(struct vidmm_adapter *a, struct softgpu *sg, const struct rc_objects *o, char *report, size_t n);
/* call.failed_make_resident_no_trace: before and after a make-resident
 * that failed with status st (< 0).  Counters of the call itself (the
 * over-budget refusals, the reference clock) may change, and out of host
 * memory what D35 allows (docs/DECISIONS.md).  Returns the violations. */
int rc_check_failed_make_resident(const struct rc_fp *before, const struct rc_fp *after, vidmm_status st,
                                  char *report, size_t n);

#endif
