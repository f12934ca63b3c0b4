/*
 * placement_fields.h - the placement module's types inside the shared
 * objects: where an allocation's bytes are (struct vidmm_placement, the
 * allocation's `pl` and residency's backing copy), and the adapter's
 * quarantine (the `quarantine` member of struct vidmm_adapter, named by
 * src/placement/ only).  model/objects.h embeds them, so it includes this
 * header; types only, built from public and lower-layer types.
 */
#ifndef VIDMM_PLACEMENT_PLACEMENT_FIELDS_H
#define VIDMM_PLACEMENT_PLACEMENT_FIELDS_H

#include "vidmm/driver.h"
#include "seg/page_pool.h"

#include <stdint.h>

/* Where an allocation's bytes are. */
struct vidmm_placement {
    uint32_t segment_id;            /* memory segment, the aperture/AGP (mapped system pages), or 0 */
    struct vidmm_page_set pages;    /* memory segment: extents (1 when contiguous) */
    void *sys;                      /* system pages (segment 0, aperture, AGP) */
    struct vidmm_mdl mdl;
    int ap_mapped;                  /* sys pages mapped into aperture/AGP segment ap_segment */
    uint32_t ap_segment;
    uint32_t ap_node;
    uint64_t ap_offset;
};

/* Memory a refused driver step left reachable (docs/ARCHITECTURE.md
 * "Prepare, point, then free"): a placement, or only its aperture range,
 * that page-table or aperture entries may still name, held out of every
 * allocator until an adapter reset rewrote those entries
 * (src/placement/placement.c, vidmm_quarantine). */
struct vidmm_quarantine {
    struct vidmm_placement pl;
    uint64_t size;                  /* the allocation's size when it was put here */
    void *driver_allocation;        /* for the aperture unmap */
    int owns_sys;                   /* 0: only pl's aperture range is held (the pages are an allocation's) */
    struct vidmm_quarantine *next;
};
#define VIDMM_QUARANTINE_INLINE 8u

/* The adapter's quarantined memory: records from the host allocator, or
 * from the inline ones when it refuses. */
struct vidmm_quarantine_list {
    struct vidmm_quarantine *first;
    struct vidmm_quarantine inline_rec[VIDMM_QUARANTINE_INLINE];
    uint32_t inline_used;           /* bit i: inline_rec[i] is on the list */
    uint64_t count;                 /* records put in quarantine since open (statistics) */
};

#endif
