/*
 * evict_scan.h - eviction planning for contiguous requests (internal,
 * never installed).
 *
 * When a contiguous request does not fit in a range allocator, the caller
 * feeds the live nodes it may evict, in eviction (LRU) order, to a scan;
 * after each one the scan says whether a hole of the request's size and
 * alignment (within an optional [start, end)) can now be formed from free
 * space plus the blocks added so far.  Once it can, the scan names the
 * added blocks that overlap the hole it chose: only those are evicted; the
 * rest of the roster is simply forgotten.  This is Linux drm_mm_scan
 * (init_with_range / add_block / remove_block) without touching the
 * allocator: the scan only reads it (vidmm_ra_node_neighbours), so nothing
 * has to be undone, and blocks need not be removed in reverse order.
 * There is no colouring (drm_mm_scan_color_evict): vidmm ranges have no
 * guard requirement between neighbours.
 *
 * Cost: O(1) per added block; O(r) once when the hole is found, r being
 * the blocks of the one run of adjacent roster blocks that holds it.  No
 * host allocation after vidmm_evict_scan_begin (which grows the scan's
 * storage only when the allocator or the roster bound grew).  See the top
 * of evict_scan.c and docs/EVICTION.md.
 *
 * Usage (the residency manager's place_evicting):
 *
 *     vidmm_evict_scan_begin(&scan, ra, size, align, 0, 0, ra->live_count);
 *     for (v = LRU head; v; v = next)         // skip what may not be evicted
 *         if ((r = vidmm_evict_scan_add(&scan, v->node, (uintptr_t)v)) != 0)
 *             break;
 *     if (r > 0)
 *         for (i = 0; i < scan.victim_count; i++)  evict(scan.victims[i].tag);
 *     vidmm_ra_alloc(ra, size, align, ...);    // fits now
 */
#ifndef VIDMM_EVICT_SCAN_H
#define VIDMM_EVICT_SCAN_H

#include "seg/range_alloc.h"

#include <stdint.h>

struct vidmm_evict_victim {
    uint32_t node;   /* range-allocator node to free */
    uint64_t tag;    /* the caller's tag given to vidmm_evict_scan_add */
};

struct vidmm_es_entry; /* private to evict_scan.c */

struct vidmm_evict_scan {
    const struct vidmm_host_allocator *ha;
    /* The request of the current scan (set by begin). */
    const struct vidmm_range_alloc *ra;
    uint64_t size, align;       /* rounded to the chunk / clamped to >= chunk */
    uint64_t start, end;        /* the hole must lie inside [start, end) */
    /* Result, valid once vidmm_evict_scan_add returned 1. */
    int found;
    uint64_t hole;              /* offset of the hole chosen: [hole, hole+size) */
    uint64_t evict_bytes;       /* bytes of the victims */
    uint32_t victim_count;
    struct vidmm_evict_victim *victims;
    /* Roster and storage (see evict_scan.c). */
    uint32_t count, cap;        /* blocks added / roster bound */
    struct vidmm_es_entry *ent; /* cap entries */
    uint32_t ent_cap;           /* entries (and victims) allocated */
    uint64_t *map;              /* by allocator node: stamp << 32 | roster index */
    uint32_t map_cap;
    uint32_t stamp;             /* this scan's stamp (non-zero while a scan is in progress) */
    int lowest;                 /* hole choice: 0 = fewest bytes evicted, 1 = lowest position */
};

/* How the hole is placed in the run that first holds the request:
 * VIDMM_EVICT_FEWEST_BYTES (the default) evicts the fewest bytes;
 * VIDMM_EVICT_LOWEST takes the lowest aligned position of the run, as
 * drm_mm_scan does (DRM_MM_INSERT_BEST/LOW).  LOWEST usually evicts more,
 * and the space it frees beyond the request serves the next requests
 * without a scan: about half as many scans on workload E, at a slightly
 * lower occupancy (docs/PERFORMANCE.md).  Kept across scans. */
#define VIDMM_EVICT_FEWEST_BYTES 0
#define VIDMM_EVICT_LOWEST 1
void vidmm_evict_scan_set_choice(struct vidmm_evict_scan *s, int choice);

/* An empty scan object using ha for its storage. */
void vidmm_evict_scan_init(struct vidmm_evict_scan *s, const struct vidmm_host_allocator *ha);
void vidmm_evict_scan_fini(struct vidmm_evict_scan *s);

/* Start a scan of ra for a hole of size bytes (rounded up to ra's chunk)
 * aligned to align (a power of two; below the chunk means the chunk)
 * inside [start, end) (end 0 means ra->size; start and end are rounded
 * inward to the chunk).  At most max_blocks blocks may be added
 * (ra->live_count always suffices).  Any previous scan is forgotten.
 * Grows the scan's storage when needed - the only host allocation of a
 * scan.  VIDMM_E_INVALID_ARG for NULLs, size 0, a bad alignment or
 * start >= end; VIDMM_E_OVERFLOW if rounding overflows;
 * VIDMM_E_NO_SEGMENT_SPACE when no aligned hole of size fits in
 * [start, end) even with everything evicted; VIDMM_E_NO_HOST_MEMORY (the
 * scan object then stays usable, with no scan in progress).
 *
 * The caller asks for a scan because the request does not fit in free
 * space alone: holes made of free space only are not looked for. */
vidmm_status vidmm_evict_scan_begin(struct vidmm_evict_scan *s, const struct vidmm_range_alloc *ra,
                                    uint64_t size, uint64_t align, uint64_t start, uint64_t end,
                                    uint32_t max_blocks);

/* Add live node `node` (with the caller's tag) to the roster.  Returns 1
 * when a hole can now be formed - s->hole, s->victims[0..victim_count)
 * and s->evict_bytes are then set - or 0 when not yet.  Failures (the
 * scan is unchanged): VIDMM_E_INVALID_HANDLE when node is not live in the
 * allocator or is already in the roster, VIDMM_E_OVERFLOW when max_blocks
 * blocks were already added, VIDMM_E_STATE when no scan is in progress or
 * a hole was already found.  Never allocates, never writes the allocator.
 *
 * The victims are exactly the added blocks overlapping [hole, hole+size),
 * chosen among the positions in the run of adjacent roster blocks that
 * formed the hole so that the fewest bytes are evicted (the lowest such
 * position on ties); they are listed in address order.  Freeing them
 * makes [hole, hole+size) free, so vidmm_ra_alloc(size, align) succeeds,
 * and so does vidmm_ra_alloc_at(hole, size) when [start, end) matters.
 * A tag may be listed once per node: an allocation made of several
 * extents added under one tag is evicted once. */
int vidmm_evict_scan_add(struct vidmm_evict_scan *s, uint32_t node, uint64_t tag);

/* Does the found hole require evicting node?  (drm_mm_scan_remove_block's
 * answer, in any order.)  0 when no hole was found or node is not a
 * victim.  O(1). */
int vidmm_evict_scan_must_evict(const struct vidmm_evict_scan *s, uint32_t node);

/* End the scan (the roster is forgotten; nothing in the allocator changes). */
void vidmm_evict_scan_end(struct vidmm_evict_scan *s);

#endif
