/*
 * placement.c - where an allocation's bytes go: ranges, page sets,
 * system pages and aperture mappings.
 *
 * A placement is one of:
 *   - a memory segment: a page set from the segment's range allocator,
 *     contiguous (one extent) when the GPU or the CPU needs it linear;
 *   - system memory (segment 0): 4 KiB host pages, reached by the GPU
 *     only through page tables;
 *   - the aperture (or AGP) segment: system pages plus a contiguous range
 *     of the aperture mapped onto them with MAP_APERTURE_SEGMENT.
 *
 * The search order (docs/DECISIONS.md): the preferred segments in slot
 * order, then the rest of the supported set - memory segments by id, the
 * aperture and AGP segments last.  A segment that is full, or over its
 * commit limit, is skipped; there is no eviction at this level.
 * Content moves live in src/paging_process/.
 *
 * Freeing is the last step of "prepare, point, then free"
 * (docs/ARCHITECTURE.md): vidmm_unplace frees only what no entry is
 * meant to reach.  Memory a refused driver step may have left reachable
 * goes to the quarantine instead - held, in no allocator - until an
 * adapter reset has rewritten every page-table and aperture entry
 * (vidmm_quarantine_release, from tdr/).
 */
#include "model/objects.h"
#include "placement/placement.h"
#include "fence/fence.h"
#include "fence/hang.h"
#include "paging/paging.h"

#include <string.h>

int vidmm_needs_contiguous(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                           const struct vidmm_segment *s)
{
    (void)a;
    uint32_t f = al->info.flags;
    if (f & (VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_PRIMARY))
        return 1;
    /* A CPU mapping of a BAR is linear: keep lockable allocations in one
     * piece there (docs/DECISIONS.md). */
    if ((f & VIDMM_ALLOC_CPU_VISIBLE) && s->cpu_base)
        return 1;
    return 0;
}

static vidmm_status place_memory(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_segment *s,
                                 int top_down, struct vidmm_placement *pl)
{
    if (al->size > s->size)
        return VIDMM_E_TOO_LARGE;
    unsigned flags = top_down ? VIDMM_RA_TOPDOWN : 0;
    vidmm_status st;
    if (vidmm_needs_contiguous(a, al, s)) {
        uint64_t align = al->alignment > s->page_size ? al->alignment : s->page_size;
        uint64_t off;
        uint32_t node;
        st = vidmm_ra_alloc(&s->ra, al->size, align, flags, &off, &node);
        if (st < 0)
            return st;
        memset(&pl->pages, 0, sizeof(pl->pages));
        pl->pages.size = al->size;
        pl->pages.count = 1;
        pl->pages.cap = 2;
        pl->pages.ext = pl->pages.inline_ext;
        pl->pages.inline_ext[0].offset = off;
        pl->pages.inline_ext[0].size = al->size;
        pl->pages.inline_ext[0].node = node;
        al->layout = VIDMM_LAYOUT_CONTIGUOUS;
    } else {
        st = vidmm_pages_alloc(&s->ra, al->size, s->page_size, flags, &pl->pages);
        if (st < 0)
            return st;
        al->layout = pl->pages.count == 1 ? VIDMM_LAYOUT_CONTIGUOUS : VIDMM_LAYOUT_PAGES;
        if (!(al->info.flags & (VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_PRIMARY)))
            al->layout = VIDMM_LAYOUT_PAGES; /* GPU-virtual only, whatever the luck of the draw */
    }
    s->committed += al->size;
    s->allocations++;
    pl->segment_id = s->id;
    return VIDMM_OK;
}

vidmm_status vidmm_place_at(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id,
                            const uint64_t *off, const uint64_t *len, uint32_t n, struct vidmm_placement *pl)
{
    memset(pl, 0, sizeof(*pl));
    struct vidmm_segment *s = &a->seg[segment_id];
    if (s->kind != VIDMM_SEGMENT_KIND_MEMORY || n == 0 || n > 2)
        return VIDMM_E_INVALID_ARG;
    pl->pages.cap = 2;
    pl->pages.ext = pl->pages.inline_ext;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t node;
        vidmm_status st = vidmm_ra_alloc_at(&s->ra, off[i], len[i], &node);
        if (st < 0) {
            while (i--)
                vidmm_ra_free(&s->ra, pl->pages.inline_ext[i].node);
            memset(pl, 0, sizeof(*pl));
            return st;
        }
        pl->pages.inline_ext[i].offset = off[i];
        pl->pages.inline_ext[i].size = len[i];
        pl->pages.inline_ext[i].node = node;
        pl->pages.size += len[i];
    }
    pl->pages.count = n;
    s->committed += al->size;
    s->allocations++;
    pl->segment_id = segment_id;
    return VIDMM_OK;
}

static vidmm_status place_system(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl)
{
    struct vidmm_segment *s0 = &a->seg[0];
    if (al->size > s0->commit_limit)
        return VIDMM_E_TOO_LARGE;
    if (s0->committed + al->size > s0->commit_limit)
        return VIDMM_E_COMMIT_LIMIT;
    if (al->size > SIZE_MAX)
        return VIDMM_E_TOO_LARGE;
    pl->sys = vidmm_halloc(a->ha, VIDMM_SITE_PLACEMENT_SYSTEM, (size_t)al->size, VIDMM_PAGE_4K);
    if (!pl->sys)
        return VIDMM_E_NO_HOST_MEMORY;
    pl->mdl.base = pl->sys;
    pl->mdl.page_count = al->size / VIDMM_PAGE_4K;
    s0->committed += al->size;
    s0->allocations++;
    pl->segment_id = 0;
    return VIDMM_OK;
}

/* A placement of size bytes leaves segment s: its commitment and count
 * go down (never below what the placements hold). */
static void segment_uncommit(struct vidmm_adapter *a, struct vidmm_segment *s, uint64_t size)
{
    (void)VIDMM_BUG_ON_MSG(a, s->committed < size || !s->allocations,
                           "release: segment %u gives back 0x%llx bytes of one allocation, holding 0x%llx in %llu",
                           s->id, (unsigned long long)size, (unsigned long long)s->committed,
                           (unsigned long long)s->allocations);
    s->committed -= size;
    s->allocations--;
}

/* The same for an aperture range, which also leaves the adapter's count
 * of bytes mapped through apertures. */
static void aperture_uncommit(struct vidmm_adapter *a, struct vidmm_segment *s, uint64_t size)
{
    segment_uncommit(a, s, size);
    (void)VIDMM_BUG_ON_MSG(a, a->aperture_mapped_bytes < size,
                           "release: 0x%llx aperture bytes unmapped with 0x%llx mapped", (unsigned long long)size,
                           (unsigned long long)a->aperture_mapped_bytes);
    a->aperture_mapped_bytes -= size;
}

static vidmm_status aperture_unmap_sized(struct vidmm_adapter *a, void *driver_allocation,
                                        struct vidmm_placement *pl)
{
    if (!pl->ap_mapped)
        return VIDMM_OK;
    struct vidmm_segment *s = &a->seg[pl->ap_segment];
    uint64_t size = pl->mdl.page_count * VIDMM_PAGE_4K;
    struct vidmm_build_paging_buffer_args op;
    memset(&op, 0, sizeof(op));
    op.operation = VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
    op.u.unmap_aperture_segment.driver_allocation = driver_allocation;
    op.u.unmap_aperture_segment.segment_id = pl->ap_segment;
    op.u.unmap_aperture_segment.offset_in_pages = pl->ap_offset / VIDMM_PAGE_4K;
    op.u.unmap_aperture_segment.number_of_pages = pl->mdl.page_count;
    op.u.unmap_aperture_segment.dummy_page = a->dummy_page;
    vidmm_status st = vidmm_paging_emit(a, &op);
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0)
        return st;
    vidmm_ra_free(&s->ra, pl->ap_node);
    aperture_uncommit(a, s, size);
    pl->ap_mapped = 0;
    return VIDMM_OK;
}

/* MAP_APERTURE_SEGMENT of pl's pages at offset off of aperture segment
 * ap_segment. */
static vidmm_status emit_map(struct vidmm_adapter *a, const struct vidmm_allocation *al,
                             const struct vidmm_placement *pl, uint32_t ap_segment, uint64_t off)
{
    const struct vidmm_segment *s = &a->seg[ap_segment];
    struct vidmm_build_paging_buffer_args op;
    memset(&op, 0, sizeof(op));
    op.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
    op.u.map_aperture_segment.driver_allocation = al ? al->info.driver_allocation : NULL;
    op.u.map_aperture_segment.segment_id = ap_segment;
    op.u.map_aperture_segment.flags =
        (s->flags & VIDMM_SEGMENT_CACHE_COHERENT) && al && (al->info.flags & VIDMM_ALLOC_CACHED)
            ? VIDMM_MAP_APERTURE_CACHE_COHERENT : 0;
    op.u.map_aperture_segment.offset_in_pages = off / VIDMM_PAGE_4K;
    op.u.map_aperture_segment.number_of_pages = pl->mdl.page_count;
    op.u.map_aperture_segment.mdl = &pl->mdl;
    op.u.map_aperture_segment.mdl_offset = 0;
    return vidmm_paging_emit(a, &op);
}

vidmm_status vidmm_aperture_rewrite(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    return al->pl.ap_mapped ? emit_map(a, al, &al->pl, al->pl.ap_segment, al->pl.ap_offset) : VIDMM_OK;
}

vidmm_status vidmm_aperture_map(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl,
                                uint32_t ap_segment)
{
    struct vidmm_segment *s = &a->seg[ap_segment];
    uint64_t size = pl->mdl.page_count * VIDMM_PAGE_4K;
    if (size > s->size || size > s->commit_limit)
        return VIDMM_E_TOO_LARGE;
    if (s->committed + size > s->commit_limit)
        return VIDMM_E_COMMIT_LIMIT;
    if (a->caps.aperture_segment_commit_limit &&
        a->aperture_mapped_bytes + size > a->caps.aperture_segment_commit_limit)
        return VIDMM_E_COMMIT_LIMIT;
    uint64_t align = al && al->alignment > VIDMM_PAGE_4K ? al->alignment : VIDMM_PAGE_4K;
    unsigned flags = al && (al->info.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT) ? VIDMM_RA_TOPDOWN : 0;
    uint64_t off;
    uint32_t node;
    vidmm_status st = vidmm_ra_alloc(&s->ra, size, align, flags, &off, &node);
    if (st < 0)
        return st;
    st = emit_map(a, al, pl, ap_segment, off);
    if (st < 0) {
        vidmm_ra_free(&s->ra, node);
        return st;
    }
    pl->ap_mapped = 1;
    pl->ap_segment = ap_segment;
    pl->ap_node = node;
    pl->ap_offset = off;
    s->committed += size;
    s->allocations++;
    a->aperture_mapped_bytes += size;
    return VIDMM_OK;
}

/* The aperture range of pl, its entries pointed back at the dummy page
 * and that written (flushed): only then is the range free for another
 * mapping.  A refusal (the unmap not encoded, or its buffer not run)
 * changes nothing: pl keeps the range, whose entries still reach pl's
 * own pages. */
vidmm_status vidmm_aperture_unmap(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl)
{
    return aperture_unmap_sized(a, al ? al->info.driver_allocation : NULL, pl);
}

vidmm_status vidmm_place(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t segment_id, int top_down,
                         struct vidmm_placement *pl)
{
    VIDMM_ASSERT_LOCKED(a);
    memset(pl, 0, sizeof(*pl));
    struct vidmm_segment *s = &a->seg[segment_id];
    vidmm_status st;
    switch (s->kind) {
    case VIDMM_SEGMENT_KIND_MEMORY:
        return place_memory(a, al, s, top_down, pl);
    case VIDMM_SEGMENT_KIND_SYSTEM:
        return place_system(a, al, pl);
    case VIDMM_SEGMENT_KIND_APERTURE:
    case VIDMM_SEGMENT_KIND_AGP:
        st = place_system(a, al, pl);
        if (st < 0)
            return st;
        /* The "GPU segments" page: AccessedPhysically allocations are mapped into the
         * aperture while resident; others are reached through GPU page
         * tables only.  AGP has no page-table path: always mapped. */
        if ((al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) || s->kind == VIDMM_SEGMENT_KIND_AGP) {
            st = vidmm_aperture_map(a, al, pl, segment_id);
            if (st < 0) {
                a->seg[0].committed -= al->size;
                a->seg[0].allocations--;
                vidmm_hfree(a->ha, pl->sys, (size_t)al->size, VIDMM_PAGE_4K);
                pl->sys = NULL;
                return st;
            }
            pl->segment_id = segment_id;
        }
        return VIDMM_OK;
    }
    return VIDMM_E_INVALID_ARG;
}

vidmm_status vidmm_aperture_unmap_or_quarantine(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                                struct vidmm_placement *pl)
{
    vidmm_status st = vidmm_aperture_unmap(a, al, pl);
    if (st < 0) {
        struct vidmm_placement range = *pl;   /* the range only: the pages stay pl's */
        memset(&range.pages, 0, sizeof(range.pages));
        vidmm_quarantine(a, al, &range, 0);
        pl->ap_mapped = 0;
    }
    return st;
}

/* Give pl's memory back to its allocators (the sizes are the
 * allocation's, size bytes). */
static void release(struct vidmm_adapter *a, uint64_t size, struct vidmm_placement *pl, int owns_sys)
{
    if (pl->ap_mapped) {   /* only after a successful unmap, or at close */
        struct vidmm_segment *s = &a->seg[pl->ap_segment];
        vidmm_ra_free(&s->ra, pl->ap_node);
        aperture_uncommit(a, s, size);
        pl->ap_mapped = 0;
    }
    if (pl->sys) {
        /* A quarantined aperture range may still map these pages: they
         * join it (the range's record owns them from now), not the heap. */
        struct vidmm_quarantine *q = owns_sys ? a->quarantine.first : NULL;
        while (q && (&q->pl == pl || q->pl.sys != pl->sys || q->owns_sys))
            q = q->next;
        if (q)
            q->owns_sys = 1;
        else if (owns_sys) {
            vidmm_hfree(a->ha, pl->sys, (size_t)size, VIDMM_PAGE_4K);
            segment_uncommit(a, &a->seg[0], size);
        }
    } else if (pl->pages.count) {
        struct vidmm_segment *s = &a->seg[pl->segment_id];
        vidmm_pages_free(&s->ra, &pl->pages);
        segment_uncommit(a, s, size);
    }
    memset(pl, 0, sizeof(*pl));
}

/* Free pl: the last step of "prepare, point, then free" (callers have
 * pointed every page-table entry away from it and submitted that).  The
 * one place memory of an allocation goes back to the allocators.  Its
 * aperture range is unmapped first and system pages wait for the GPU;
 * when the driver refuses either, no entry may be trusted not to reach
 * pl any more: pl goes to the quarantine, and an adapter reset rewrites
 * every entry before it is freed. */
void vidmm_unplace(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl)
{
    vidmm_status st = vidmm_aperture_unmap(a, al, pl);
    if (st >= 0 && pl->sys)
        st = vidmm_paging_flush(a);   /* the GPU may still read these pages */
    /* Nothing is freed while a queue that may still touch it runs: the
     * drain gives up only when the paging engine is stopped (a reset of
     * it is pending, which drops its queue), so a paging buffer still
     * outstanding on a running engine here is a bug (docs/DECISIONS.md
     * D61), reported by vidmm_adapter_check; the pages wait in the
     * quarantine for the reset rather than go back while the GPU writes. */
    if (st >= 0 && pl->sys && VIDMM_BUG_ON_MSG(a, vidmm_fence_paging_outstanding(a, al->paging_fence),
                                                 "release: allocation 0x%llx's system pages go back while its "
                                                 "paging buffer is outstanding on a running engine",
                                                 (unsigned long long)al->self))
        st = VIDMM_E_DRIVER_FAILURE;
    if (st < 0) {
        vidmm_quarantine(a, al, pl, 1);
        return;
    }
    release(a, al->size, pl, 1);
}

/* ---- quarantine ------------------------------------------------------- */

static struct vidmm_quarantine *quarantine_record(struct vidmm_adapter *a)
{
    struct vidmm_quarantine *q = vidmm_halloc(a->ha, VIDMM_SITE_QUARANTINE_RECORD, sizeof(*q),
                                              _Alignof(struct vidmm_quarantine));
    if (q)
        return q;
    for (uint32_t i = 0; i < VIDMM_QUARANTINE_INLINE; i++)
        if (!(a->quarantine.inline_used & (1u << i))) {
            a->quarantine.inline_used |= 1u << i;
            return &a->quarantine.inline_rec[i];
        }
    return NULL;
}

static void quarantine_free_record(struct vidmm_adapter *a, struct vidmm_quarantine *q)
{
    if (q >= a->quarantine.inline_rec && q < a->quarantine.inline_rec + VIDMM_QUARANTINE_INLINE)
        a->quarantine.inline_used &= ~(1u << (q - a->quarantine.inline_rec));
    else
        vidmm_hfree(a->ha, q, sizeof(*q), _Alignof(struct vidmm_quarantine));
}

void vidmm_quarantine(struct vidmm_adapter *a, const struct vidmm_allocation *al, struct vidmm_placement *pl,
                      int owns_sys)
{
    struct vidmm_quarantine *q = quarantine_record(a);
    if (q) {
        vidmm_placement_take(&q->pl, pl);
        q->size = al->size;
        q->driver_allocation = al->info.driver_allocation;
        q->owns_sys = owns_sys;
        q->next = a->quarantine.first;
        a->quarantine.first = q;
        a->quarantine.count++;
    } else {
        /* No record at all (host memory and the inline records spent):
         * the memory stays taken, unnamed, until close, and the
         * structure checker reports it. */
        (void)VIDMM_BUG_ON_MSG(a, q == NULL, "quarantine: no record for the memory of allocation 0x%llx",
                               (unsigned long long)al->self);
    }
    memset(pl, 0, sizeof(*pl));
    vidmm_reset_schedule(a);
}

vidmm_status vidmm_quarantine_release(struct vidmm_adapter *a)
{
    vidmm_status last = VIDMM_OK;
    for (struct vidmm_quarantine **pp = &a->quarantine.first; *pp;) {
        struct vidmm_quarantine *q = *pp;
        vidmm_status st = aperture_unmap_sized(a, q->driver_allocation, &q->pl);
        if (st >= 0 && q->pl.sys)
            st = vidmm_paging_flush(a);
        if (st < 0) {
            last = st;
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        release(a, q->size, &q->pl, q->owns_sys);
        quarantine_free_record(a, q);
    }
    return last;
}

void vidmm_quarantine_fini(struct vidmm_adapter *a)
{
    (void)vidmm_quarantine_release(a);
    while (a->quarantine.first) {   /* the driver still refuses: the adapter goes anyway */
        struct vidmm_quarantine *q = a->quarantine.first;
        a->quarantine.first = q->next;
        release(a, q->size, &q->pl, q->owns_sys);
        quarantine_free_record(a, q);
    }
}

void vidmm_quarantine_account(const struct vidmm_adapter *a, uint64_t *used, uint64_t *committed,
                              uint64_t *allocations)
{
    for (const struct vidmm_quarantine *q = a->quarantine.first; q; q = q->next) {
        const struct vidmm_placement *pl = &q->pl;
        if (pl->ap_mapped) {
            used[pl->ap_segment] += vidmm_ra_node_size(&a->seg[pl->ap_segment].ra, pl->ap_node);
            committed[pl->ap_segment] += q->size;
            allocations[pl->ap_segment]++;
        }
        if (pl->sys && q->owns_sys) {
            committed[0] += q->size;
            allocations[0]++;
        } else if (!pl->sys && pl->pages.count) {
            for (uint32_t i = 0; i < pl->pages.count; i++)
                used[pl->segment_id] += pl->pages.ext[i].size;
            committed[pl->segment_id] += q->size;
            allocations[pl->segment_id]++;
        }
    }
}

/* Supported segments in placement order; returns the count. */
static uint32_t placement_order(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                                uint32_t order[VIDMM_MAX_SEGMENTS], int top[VIDMM_MAX_SEGMENTS])
{
    uint32_t n = 0, taken = 0;
    uint32_t set = al->info.supported_write_segment_set;
    uint32_t pref = al->info.preferred_segment;
    int from_end = (al->info.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT) != 0;
    for (uint32_t slot = 0; slot < VIDMM_PREF_SLOTS; slot++) {
        uint32_t id = VIDMM_PREF_ID(pref, slot);
        if (id == 0)
            break;
        if (taken & VIDMM_SEGMENT_BIT(id))
            continue;
        taken |= VIDMM_SEGMENT_BIT(id);
        order[n] = id;
        top[n] = VIDMM_PREF_TOP(pref, slot) ? 1 : from_end;
        n++;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t id = 1; id < a->segment_count; id++) {
            if (!(set & VIDMM_SEGMENT_BIT(id)) || (taken & VIDMM_SEGMENT_BIT(id)))
                continue;
            int is_mem = a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY;
            if ((pass == 0) != is_mem)
                continue;
            taken |= VIDMM_SEGMENT_BIT(id);
            order[n] = id;
            top[n] = from_end;
            n++;
        }
    }
    return n;
}

vidmm_status vidmm_place_first_fit(struct vidmm_adapter *a, struct vidmm_allocation *al, struct vidmm_placement *pl)
{
    uint32_t order[VIDMM_MAX_SEGMENTS];
    int top[VIDMM_MAX_SEGMENTS];
    uint32_t n = placement_order(a, al, order, top);
    vidmm_status worst = VIDMM_E_NO_SEGMENT_SPACE;
    int any_space = 0, any_commit = 0;
    for (uint32_t i = 0; i < n; i++) {
        vidmm_status st = vidmm_place(a, al, order[i], top[i], pl);
        if (st >= 0)
            return st;
        if (st == VIDMM_E_NO_SEGMENT_SPACE)
            any_space = 1;
        else if (st == VIDMM_E_COMMIT_LIMIT)
            any_commit = 1;
        else if (st != VIDMM_E_TOO_LARGE)
            return st; /* host memory, driver failure: stop */
    }
    if (any_space)
        worst = VIDMM_E_NO_SEGMENT_SPACE;
    else if (any_commit)
        worst = VIDMM_E_COMMIT_LIMIT;
    else
        worst = VIDMM_E_TOO_LARGE;
    return worst;
}
