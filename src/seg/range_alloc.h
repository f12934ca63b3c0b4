/*
 * range_alloc.h - contiguous range allocator (internal, never installed).
 *
 * Manages the offsets [0, size) of one segment (or of the aperture, or of
 * a GPU VA window) in units of a power-of-two chunk (4 KiB or 64 KiB).
 * Placement is best-fit with O(1) bin lookup (two-level segregated fit,
 * as TLSF with VMA's MIN_MEMORY strategy): the smallest free range that
 * can hold the aligned request wins, which keeps large holes whole after
 * churn.  Free ranges are coalesced with their neighbours on free.
 * Metadata lives out of band in a node array grown through the host
 * allocator; no operation walks the live allocations.
 *
 * The caller keeps the returned node index and hands it back to free.
 */
#ifndef VIDMM_RANGE_ALLOC_H
#define VIDMM_RANGE_ALLOC_H

#include "core/error.h"
#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stdint.h>

/* Allocation flags. */
#define VIDMM_RA_TOPDOWN 0x1u  /* take the range from the high end of the hole (FromEndOfSegment, Direction=1) */

struct vidmm_ra_node;  /* private to range_alloc.c */

struct vidmm_range_alloc {
    const struct vidmm_host_allocator *ha;
    uint64_t size;         /* managed bytes, a multiple of chunk */
    uint64_t chunk;        /* power of two >= 1 */
    unsigned chunk_shift;
    uint64_t free_bytes;
    uint64_t live_count;   /* live allocations */
    /* Implementation state (bins, bitmaps, node array) follows; see range_alloc.c. */
    struct vidmm_ra_node *nodes;
    uint32_t node_cap, node_count, free_node_head;
    uint32_t first_node;   /* lowest-address node (free or used) */
    uint64_t topdown_below; /* requests smaller than this go top-down (vidmm_ra_set_topdown_below) */
    /* Front reserve (vidmm_ra_set_front_reserve): the free ranges among the
     * first front_keep live blocks on either side of the largest free range
     * are used only when nothing else fits.  Cached as address bounds. */
    uint32_t front_keep;
    int zone_stale;
    uint64_t zone_lo, zone_wlo, zone_whi, zone_hi;
    uint64_t fl_bitmap;
    uint64_t *sl_bitmap;   /* one word per first-level bin */
    uint32_t *bins;        /* heads of free lists, [fl][sl] */
    unsigned fl_count;
    /* Internal invariants found broken where the allocator changes
     * (core/error.h); vidmm_ra_check reports them. */
    struct vidmm_bug_log bugs;
};

/* size and chunk must be non-zero, chunk a power of two, size a multiple
 * of chunk.  VIDMM_E_INVALID_ARG otherwise, VIDMM_E_NO_HOST_MEMORY if the
 * host allocator refuses. */
vidmm_status vidmm_ra_init(struct vidmm_range_alloc *ra, const struct vidmm_host_allocator *ha,
                           uint64_t size, uint64_t chunk);
void vidmm_ra_fini(struct vidmm_range_alloc *ra);

/* Allocate size bytes (rounded up to chunk) aligned to align (a power of
 * two; values below chunk, including 0, mean chunk).  On success *offset is
 * the start and *node the handle for vidmm_ra_free.
 * VIDMM_E_NO_SEGMENT_SPACE when no free range can hold it (and then the
 * state is unchanged), VIDMM_E_NO_HOST_MEMORY when node storage cannot grow
 * (state unchanged too), VIDMM_E_INVALID_ARG for size 0, a
 * non-power-of-two align or an unknown flag, VIDMM_E_OVERFLOW when rounding
 * size up to chunk overflows. */
vidmm_status vidmm_ra_alloc(struct vidmm_range_alloc *ra, uint64_t size, uint64_t align,
                            unsigned flags, uint64_t *offset, uint32_t *node);

/* Place requests smaller than bytes (after rounding to the chunk) as if
 * VIDMM_RA_TOPDOWN were given: small allocations gather at the high end
 * and large ones at the low end, so the churn of small blocks does not
 * cut the holes large blocks need (workload B2, docs/PERFORMANCE.md: the
 * 32 MiB pass after churn 0.965 -> 0.973 of free space on seed 0 with
 * 256 KiB).  0 (the default) turns it off.  Best fit is kept within each
 * direction. */
void vidmm_ra_set_topdown_below(struct vidmm_range_alloc *ra, uint64_t bytes);

/* Keep the free ranges between the largest free range and the blocks-th
 * live allocation on either side of it for last: a request takes one of
 * them only when no other range short of the largest fits.  Those gaps then
 * tend to join the largest range as its neighbours are freed instead of
 * being refilled (workload B2, docs/PERFORMANCE.md).  0 (the default) turns
 * it off. */
void vidmm_ra_set_front_reserve(struct vidmm_range_alloc *ra, uint32_t blocks);

/* Allocate exactly [offset, offset+size) if it is free (for ranges the
 * driver reports bad, or fixed placements).  VIDMM_E_NO_SEGMENT_SPACE if
 * any part is in use or outside the range, VIDMM_E_ALIGNMENT if offset is
 * not a multiple of chunk.  Searches the free ranges only. */
vidmm_status vidmm_ra_alloc_at(struct vidmm_range_alloc *ra, uint64_t offset, uint64_t size,
                               uint32_t *node);

/* Allocate min(max_size, largest free range after alignment) bytes, at
 * least min_size: the building block of page-set allocations, which take
 * holes largest-first until the request is covered.  *size receives the
 * length obtained.  VIDMM_E_NO_SEGMENT_SPACE if no free range of at least
 * min_size exists (after alignment), VIDMM_E_INVALID_ARG if max_size is 0
 * or below min_size.  The range comes from the highest non-empty bin; the
 * bins below are only searched when alignment leaves too little there. */
vidmm_status vidmm_ra_alloc_largest(struct vidmm_range_alloc *ra, uint64_t min_size, uint64_t max_size,
                                    uint64_t align, uint64_t *offset, uint64_t *size, uint32_t *node);

/* As vidmm_ra_alloc_largest, but the length obtained is also a multiple of
 * align (so a page-set extent holds whole aligned pages), and min_size and
 * max_size are rounded up to align.  A hole's whole aligned pages are never
 * split off unusably: what is left of the hole keeps every aligned page it
 * had, which is what lets page-set allocation succeed exactly when enough
 * whole free pages exist. */
vidmm_status vidmm_ra_alloc_largest_aligned(struct vidmm_range_alloc *ra, uint64_t min_size,
                                            uint64_t max_size, uint64_t align, uint64_t *offset,
                                            uint64_t *size, uint32_t *node);

/* Free a node returned by one of the alloc calls.  Returns
 * VIDMM_E_INVALID_HANDLE for a node that is not a live allocation. */
vidmm_status vidmm_ra_free(struct vidmm_range_alloc *ra, uint32_t node);

/* Offset and size of a live node. */
uint64_t vidmm_ra_node_offset(const struct vidmm_range_alloc *ra, uint32_t node);
uint64_t vidmm_ra_node_size(const struct vidmm_range_alloc *ra, uint32_t node);

/* No node: a VIDMM_RA_NONE neighbour is the edge of the space. */
#define VIDMM_RA_NONE 0xFFFFFFFFu

/* Address-order surroundings of a live node, for eviction planning
 * (seg/evict_scan.h): its range, the free bytes directly below and above
 * it (0 when a live node or the edge of the space is adjacent; never two
 * free ranges in a row), and the live nodes just beyond those free bytes
 * (VIDMM_RA_NONE at the edge of the space). */
struct vidmm_ra_neighbours {
    uint64_t offset, size;
    uint64_t free_below, free_above;
    uint32_t live_below, live_above;
};

/* Fill *nb for live node.  O(1), read-only.  VIDMM_E_INVALID_HANDLE for a
 * node that is not a live allocation, VIDMM_E_INVALID_ARG for NULLs. */
vidmm_status vidmm_ra_node_neighbours(const struct vidmm_range_alloc *ra, uint32_t node,
                                      struct vidmm_ra_neighbours *nb);

/* Size of the largest free range (0 if full). O(1). */
uint64_t vidmm_ra_largest_free(const struct vidmm_range_alloc *ra);

/* Walk every range in address order; used by dumps. */
void vidmm_ra_for_each(const struct vidmm_range_alloc *ra,
                       void (*fn)(void *ctx, uint64_t offset, uint64_t size, int used), void *ctx);

/* Verify every invariant (ranges tile [0,size) in order, no two adjacent
 * free ranges, bins and bitmaps agree with the free ranges, free_bytes and
 * live_count match).  Returns the number of violations, 0 when sound;
 * prints nothing (range_alloc_check.c). */
int vidmm_ra_check(const struct vidmm_range_alloc *ra);

/* The same, and the first violation in words - the invariant and the
 * node, bin or counter where it broke - into msg (n bytes; "" when
 * sound; msg may be NULL). */
int vidmm_ra_check_msg(const struct vidmm_range_alloc *ra, char *msg, size_t n);

#endif
