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
vidmm_status vidmm_pages_alloc_any(struct vidmm_range_alloc *ra, uint64_t size, uint64_t page_size,
                                   unsigned ra_flags, struct vidmm_page_set *set);
static inline vidmm_status vidmm_pages_alloc(struct vidmm_range_alloc *ra, uint64_t size, uint64_t page_size,
                                             unsigned ra_flags, struct vidmm_page_set *set);

/* Return every extent to ra and leave *set empty (safe on an empty set). */
static inline void vidmm_pages_free(struct vidmm_range_alloc *ra, struct vidmm_page_set *set);
void vidmm_pages_free_any(struct vidmm_range_alloc *ra, struct vidmm_page_set *set);

/* An empty set (what vidmm_pages_free leaves). */
static inline void vidmm_pages_init(struct vidmm_page_set *set);

/* Verify the set against ra: extents live with matching offset and size,
 * sizes sum to set->size, ext/inline bookkeeping sound.  Returns the number
 * of violations. */
int vidmm_pages_check(const struct vidmm_range_alloc *ra, const struct vidmm_page_set *set);

/* ---- inline fast paths ----
 * A set is one extent in the common case (the request fits in one hole).
 * Both ends of that case are inline so that a caller's alloc and free
 * reach the range allocator in one call, as a contiguous allocation does:
 * the page pool's cost over vidmm_ra_alloc / vidmm_ra_free is then a few
 * stores, not two more calls between cache misses (workload C,
 * docs/PERFORMANCE.md).  Everything else goes to the *_any functions. */

static inline void vidmm_pages_init(struct vidmm_page_set *set)
{
    if (!set)
        return;
    set->size = 0;
    set->count = 0;
    set->cap = 2;
    set->ext = set->inline_ext;
}

static inline void vidmm_pages_free(struct vidmm_range_alloc *ra, struct vidmm_page_set *set)
{
    if (ra && set && set->count == 1 && set->ext == set->inline_ext) {
        (void)vidmm_ra_free(ra, set->inline_ext[0].node);
        set->count = 0;
        set->size = 0;
        return;
    }
    vidmm_pages_free_any(ra, set);
}

static inline vidmm_status vidmm_pages_alloc(struct vidmm_range_alloc *ra, uint64_t size, uint64_t page_size,
                                             unsigned ra_flags, struct vidmm_page_set *set)
{
    /* Arguments vidmm_ra_alloc checks alike (size 0, flags, a page size
     * that is not a power of two) fail there the same way; the page size
     * below the chunk, rounding overflow and a failed contiguous attempt
     * take the general path, which reports them. */
    if (set && ra && ra->nodes && page_size >= ra->chunk && !(page_size & (page_size - 1)) && size &&
        size <= UINT64_MAX - (page_size - 1)) {
        uint64_t bytes = (size + page_size - 1) & ~(page_size - 1);
        vidmm_pages_init(set);
        if (vidmm_ra_alloc(ra, bytes, page_size, ra_flags, &set->inline_ext[0].offset, &set->inline_ext[0].node) ==
            VIDMM_OK) {
            set->inline_ext[0].size = bytes;
            set->count = 1;
            set->size = bytes;
            return VIDMM_OK;
        }
    }
    /* (After a failed contiguous attempt the general path tries it once
     * more before splitting: a second bin lookup on a path that is about
     * to take several holes anyway.) */
    return vidmm_pages_alloc_any(ra, size, page_size, ra_flags, set);
}

#endif
