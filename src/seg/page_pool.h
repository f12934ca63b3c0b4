/*
 * page_pool.h - page-set allocations (internal, never installed).
 *
 * A page set backs an allocation whose pages need not be contiguous (WDDM
 * segments with 4 KiB or 64 KiB page granularity behind a GPU MMU): it is a
 * list of extents, each one a live range of the range allocator holding
 * whole aligned pages.  One contiguous extent is the fast path; when no
 * hole is large enough the set is gathered from the largest holes first,
 * so it succeeds exactly when enough whole free pages exist.
 */
#ifndef VIDMM_PAGE_POOL_H
#define VIDMM_PAGE_POOL_H

#include "seg/range_alloc.h"

#include <stdint.h>

struct vidmm_extent {
    uint64_t offset;
    uint64_t size;
    uint32_t node;      /* range-allocator node, for vidmm_ra_free */
};

struct vidmm_page_set {
    uint64_t size;                      /* bytes, a multiple of the page size */
    uint32_t count, cap;                /* extents used / available in ext */
    struct vidmm_extent *ext;           /* inline_ext while cap == 2, else host-allocated */
    struct vidmm_extent inline_ext[2];
};

/* Allocate size bytes (rounded up to page_size) as whole pages of
 * page_size (a power of two, a multiple of ra->chunk; 4 KiB or 64 KiB in
 * practice) from ra.  ra_flags are VIDMM_RA_* flags for the contiguous fast
 * path.  All or nothing: on failure every taken extent is returned and *set
 * is empty.  VIDMM_E_NO_SEGMENT_SPACE when fewer than size bytes of whole
 * free pages exist, VIDMM_E_NO_HOST_MEMORY when node or extent storage
 * cannot grow, VIDMM_E_INVALID_ARG / VIDMM_E_ALIGNMENT / VIDMM_E_OVERFLOW
 * for bad arguments.  The extent array comes from ra's host allocator. */
vidmm_status vidmm_pages_alloc(struct vidmm_range_alloc *ra, uint64_t size, uint64_t page_size,
                               unsigned ra_flags, struct vidmm_page_set *set);

/* Return every extent to ra and leave *set empty (safe on an empty set). */
void vidmm_pages_free(struct vidmm_range_alloc *ra, struct vidmm_page_set *set);

/* An empty set (what vidmm_pages_free leaves). */
void vidmm_pages_init(struct vidmm_page_set *set);

/* Verify the set against ra: extents live with matching offset and size,
 * sizes sum to set->size, ext/inline bookkeeping sound.  Returns the number
 * of violations. */
int vidmm_pages_check(const struct vidmm_range_alloc *ra, const struct vidmm_page_set *set);

#endif
