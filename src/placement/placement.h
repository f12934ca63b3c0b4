/*
 * placement.h - where an allocation's bytes go: segment ranges, page
 * sets, system pages, aperture mappings and the quarantine (internal,
 * never installed).
 */
#ifndef VIDMM_PLACEMENT_PLACEMENT_H
#define VIDMM_PLACEMENT_PLACEMENT_H

#include "model/objects.h"

vidmm_status vidmm_place(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id,
                         int top_down, struct vidmm_placement *pl);

/* Free pl (docs/ARCHITECTURE.md "Prepare, point, then free": call it
 * only once no page-table entry is meant to reach pl).  A refused
 * aperture unmap or paging wait puts pl in the quarantine instead. */
void vidmm_unplace(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);

/* *dst = *src, keeping an inline extent array inline. */
static inline void vidmm_placement_take(struct vidmm_placement *dst, const struct vidmm_placement *src)
{
    *dst = *src;
    if (src->pages.ext == src->pages.inline_ext)
        dst->pages.ext = dst->pages.inline_ext;
}

/* Hold pl (al's memory; owns_sys 0: only its aperture range) out of
 * every allocator until an adapter reset has rewritten every page-table
 * and aperture entry, and schedule that reset.  pl is left empty. */
void vidmm_quarantine(struct vidmm_adapter *a, const struct vidmm_allocation *al, struct vidmm_placement *pl,
                      int owns_sys);

/* After a reset rewrote every entry: unmap and free what the quarantine
 * holds.  What the driver still refuses stays (its status returned). */
vidmm_status vidmm_quarantine_release(struct vidmm_adapter *a);

/* The close: release, then free what is left whatever the driver says. */
void vidmm_quarantine_fini(struct vidmm_adapter *a);

/* Add what the quarantine holds to the checker's per-segment sums. */
void vidmm_quarantine_account(const struct vidmm_adapter *a, uint64_t *used, uint64_t *committed,
                              uint64_t *allocations);

vidmm_status vidmm_place_first_fit(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);

/* Place al in memory segment segment_id on exactly the n (1 or 2)
 * extents [off[i], off[i]+len[i]) - where an undone eviction puts it
 * back.  VIDMM_E_NO_SEGMENT_SPACE (nothing taken) if any is in use. */
vidmm_status vidmm_place_at(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id,
                            const uint64_t *off, const uint64_t *len, uint32_t n, struct vidmm_placement *pl);

vidmm_status vidmm_aperture_map(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl,
                                uint32_t ap_segment);

/* Unmap pl's aperture range and wait for it; only then is the range
 * freed.  A refusal changes nothing (the range still maps pl's pages). */
vidmm_status vidmm_aperture_unmap(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl);

/* Write al's aperture mapping again (an adapter reset: the entries of a
 * refused map or unmap may not say what vidmm recorded).  Emitted only. */
vidmm_status vidmm_aperture_rewrite(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* The same, but a refused unmap puts the aperture range (not the pages)
 * in the quarantine and takes it off pl: pl is unmapped either way. */
vidmm_status vidmm_aperture_unmap_or_quarantine(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                                struct vidmm_placement *pl);

int vidmm_needs_contiguous(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                           const struct vidmm_segment *s);

#endif
