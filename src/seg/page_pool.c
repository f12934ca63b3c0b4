/*
 * page_pool.c - page-set allocations on top of the range allocator.
 *
 * Fast path: one contiguous, page-aligned range (one bin lookup, no extra
 * host allocation: the first two extents live inside the set).  When no
 * hole holds the whole request, extents are taken largest hole first with
 * vidmm_ra_alloc_largest_aligned until the request is covered.  Taking a
 * page-aligned, whole-page piece of a hole never destroys another whole
 * page of it, so the loop fails only when the free space holds fewer whole
 * pages than asked: a set succeeds iff enough free pages exist, however
 * fragmented.  Largest-first keeps the extent count, and so the page-table
 * work of the caller, as small as the free space allows.
 *
 * All or nothing: every failure hands back what was taken, so the range
 * allocator is exactly as before.
 */
#include "seg/page_pool.h"

#include "core/alloc_sites.h"

#include <stddef.h>
#include <string.h>

#define PP_FIRST_HEAP_CAP 8u

static void release_ext(const struct vidmm_range_alloc *ra, struct vidmm_page_set *set)
{
    if (set->ext && set->ext != set->inline_ext)
        ra->ha->free(ra->ha->user_data, set->ext, (size_t)set->cap * sizeof *set->ext,
                     _Alignof(struct vidmm_extent));
    set->ext = set->inline_ext;
    set->cap = 2;
}

void vidmm_pages_free_any(struct vidmm_range_alloc *ra, struct vidmm_page_set *set)
{
    if (!ra || !set || !ra->ha)
        return;
    for (uint32_t i = 0; i < set->count && set->ext; i++)
        (void)vidmm_ra_free(ra, set->ext[i].node);
    release_ext(ra, set);
    set->count = 0;
    set->size = 0;
}

static vidmm_status grow_ext(const struct vidmm_range_alloc *ra, struct vidmm_page_set *set)
{
    uint32_t cap = set->cap <= 2 ? PP_FIRST_HEAP_CAP : set->cap * 2;
    if (set->cap > UINT32_MAX / 2 || (uint64_t)cap * sizeof(struct vidmm_extent) > (uint64_t)(SIZE_MAX >> 1))
        return VIDMM_E_NO_HOST_MEMORY;
    struct vidmm_extent *e = vidmm_host_alloc_at(ra->ha, VIDMM_SITE_PAGES_EXTENTS, (size_t)cap * sizeof *e,
                                                 _Alignof(struct vidmm_extent));
    if (!e)
        return VIDMM_E_NO_HOST_MEMORY;
    memcpy(e, set->ext, (size_t)set->count * sizeof *e);
    release_ext(ra, set);
    set->ext = e;
    set->cap = cap;
    return VIDMM_OK;
}

vidmm_status vidmm_pages_alloc_any(struct vidmm_range_alloc *ra, uint64_t size, uint64_t page_size,
                                   unsigned ra_flags, struct vidmm_page_set *set)
{
    if (!set)
        return VIDMM_E_INVALID_ARG;
    vidmm_pages_init(set);
    if (!ra || !ra->nodes || !size || (ra_flags & ~VIDMM_RA_TOPDOWN) || !page_size ||
        (page_size & (page_size - 1)))
        return VIDMM_E_INVALID_ARG;
    if (page_size < ra->chunk)
        return VIDMM_E_ALIGNMENT;
    uint64_t pmask = page_size - 1;
    if (size > UINT64_MAX - pmask)
        return VIDMM_E_OVERFLOW;
    size = (size + pmask) & ~pmask;
    if (size > ra->free_bytes)
        return VIDMM_E_NO_SEGMENT_SPACE;

    uint64_t off, len;
    uint32_t node;
    vidmm_status st = vidmm_ra_alloc(ra, size, page_size, ra_flags, &off, &node);
    if (st == VIDMM_OK) {
        set->ext[0].offset = off;
        set->ext[0].size = size;
        set->ext[0].node = node;
        set->count = 1;
        set->size = size;
        return VIDMM_OK;
    }
    if (st != VIDMM_E_NO_SEGMENT_SPACE)
        return st;

    uint64_t remaining = size;
    while (remaining) {
        if (set->count == set->cap && (st = grow_ext(ra, set)) < 0)
            break;
        st = vidmm_ra_alloc_largest_aligned(ra, page_size, remaining, page_size, &off, &len, &node);
        if (st < 0)
            break;
        struct vidmm_extent *e = &set->ext[set->count++];
        e->offset = off;
        e->size = len;
        e->node = node;
        remaining -= len;
    }
    if (remaining) {
        vidmm_pages_free(ra, set);
        return st;
    }
    set->size = size;
    return VIDMM_OK;
}

int vidmm_pages_check(const struct vidmm_range_alloc *ra, const struct vidmm_page_set *set)
{
    if (!ra || !set)
        return 1;
    int err = 0;
    if (set->count > set->cap || !set->ext)
        return 1;
    if ((set->cap == 2) != (set->ext == set->inline_ext))
        err++;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < set->count; i++) {
        const struct vidmm_extent *e = &set->ext[i];
        if (!e->size || vidmm_ra_node_size(ra, e->node) != e->size ||
            vidmm_ra_node_offset(ra, e->node) != e->offset || (e->offset & (ra->chunk - 1)))
            err++;
        /* Each node once (sets are short; quadratic is fine for a check). */
        for (uint32_t j = 0; j < i && j < 64; j++)
            if (set->ext[j].node == e->node)
                err++;
        sum += e->size;
    }
    if (sum != set->size)
        err++;
    if (set->count == 0 && set->size != 0)
        err++;
    return err;
}
