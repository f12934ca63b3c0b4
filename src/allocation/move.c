/*
 * move.c - moving an allocation between segments (vidmm_allocation_move,
 * vidmm_allocation_move_discard, and the CPU lock's move to where the
 * CPU reaches it): the effective target, the new placement made before
 * the old is let go, the GPU mappings pointed at the new place.
 *
 * A refused move changes nothing: the new placement is made first and
 * dropped on any failure (docs/ARCHITECTURE.md "Prepare, point, then
 * free").
 */
#include "handle/lookup.h"
#include "fence/inflight.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "allocation/allocation.h"
#include "paging_process/paging_process.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"


#include <string.h>

/* The aperture (or else an AGP segment) through which an
 * AccessedPhysically allocation can live in system memory; 0: none. */
static uint32_t system_window(const struct vidmm_adapter *a, const struct vidmm_allocation *al)
{
    uint32_t set = al->info.supported_write_segment_set;
    if (a->aperture_id && (set & VIDMM_SEGMENT_BIT(a->aperture_id)))
        return a->aperture_id;
    for (uint32_t id = 1; id < a->segment_count; id++)
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_AGP && (set & VIDMM_SEGMENT_BIT(id)))
            return id;
    return 0;
}

/* Where a move to id really goes.  Plain system pages and the aperture
 * are one place for an allocation the GPU reaches through its page
 * tables (0); an AccessedPhysically one is resident in system memory
 * only through the aperture, so "system memory" means the aperture
 * (D43: an aperture-mapped allocation reports the aperture's id). */
static uint32_t effective_target(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t id)
{
    int ap = (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) != 0;
    if (a->seg[id].kind == VIDMM_SEGMENT_KIND_APERTURE && !ap)
        return 0;
    if (id == 0 && ap)
        return al->pl.sys && al->pl.ap_mapped ? al->pl.segment_id : system_window(a, al);
    return id;
}

/* System pages stay where they are; only the aperture mapping changes
 * (0 <-> aperture, or aperture <-> AGP).  The new mapping is made and
 * written before the old one goes, so a refusal before that changes
 * nothing; a refused unmap of the old range leaves it in quarantine. */
static vidmm_status move_mapping(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t eff)
{
    vidmm_status st;
    if (eff != 0) {
        struct vidmm_placement old = al->pl;
        al->pl.ap_mapped = 0;
        st = vidmm_aperture_map(a, al, &al->pl, eff);
        if (st >= 0)
            st = vidmm_paging_flush(a);
        if (st < 0) {
            if (al->pl.ap_mapped)
                (void)vidmm_aperture_unmap_or_quarantine(a, al, &al->pl);
            al->pl = old;
            return st;
        }
        if (old.ap_mapped)
            (void)vidmm_aperture_unmap_or_quarantine(a, al, &old);
    } else if (al->pl.ap_mapped) {
        st = vidmm_aperture_unmap(a, al, &al->pl);
        if (st < 0)
            return st;   /* still mapped, nothing changed */
    }
    al->pl.segment_id = eff;
    al->moves++;
    /* The entries keep reaching the same pages whatever the driver does
     * with this rewrite (of their cache flags). */
    st = vidmm_process_remap_allocation(a, al);
    vidmm_status f = vidmm_paging_flush(a);
    return st < 0 ? st : f;
}

/* "Prepare, point, then free" (docs/ARCHITECTURE.md): the new place is
 * taken and filled, every entry is rewritten to it and that is waited
 * for, and only then is the old place freed. */
vidmm_status vidmm_allocation_move_to(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t target, int discard)
{
    uint32_t eff = effective_target(a, al, target);
    if (eff == al->pl.segment_id)
        return VIDMM_OK;
    vidmm_inflight_wait_idle(a, al);   /* submitted work may still read or write it there */
    if (al->busy)
        return VIDMM_E_TIMEOUT;      /* an engine hung: reset as the entry returns */
    vidmm_status st;
    int top = (al->info.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT) != 0;
    if (al->pl.sys && a->seg[eff].kind != VIDMM_SEGMENT_KIND_MEMORY)
        return move_mapping(a, al, eff);
    struct vidmm_placement dst;
    st = vidmm_place(a, al, eff, top, &dst);
    if (st < 0)
        return st;
    /* Page tables first: where the new place cannot keep 64 KB entries,
     * switch them to 4 KB now, while failing still changes nothing. */
    st = vidmm_process_prepare_move(a, al, &dst);
    if (st < 0) {
        vidmm_unplace(a, al, &dst);
        (void)vidmm_paging_flush(a);
        return st;
    }
    /* Prepare: the copy, finished before any entry points at it. */
    if (discard) {
        /* Content is not needed: discard the source, start the
         * destination content-less (zero). */
        st = vidmm_discard_content(a, al, &al->pl);
        if (st >= 0)
            st = vidmm_fill_content(a, al, &dst, 0);
    } else {
        st = vidmm_copy_content(a, al, &al->pl, &dst);
    }
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0) {
        vidmm_unplace(a, al, &dst);   /* no entry ever reached it */
        return st;
    }
    /* Point: same GPU virtual addresses, new pages. */
    struct vidmm_placement old;
    vidmm_placement_take(&old, &al->pl);
    vidmm_placement_take(&al->pl, &dst);
    st = vidmm_process_remap_allocation(a, al);
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0) {
        /* Refused: point back at the old place, which is still held.
         * If even that is refused, entries may reach either place: both
         * stay held (the old one in quarantine) and a reset rewrites
         * them all. */
        vidmm_placement_take(&dst, &al->pl);
        vidmm_placement_take(&al->pl, &old);
        vidmm_status r = vidmm_process_remap_allocation(a, al);
        if (r >= 0)
            r = vidmm_paging_flush(a);
        if (r >= 0) {
            vidmm_unplace(a, al, &dst);
        } else {
            vidmm_placement_take(&old, &al->pl);
            vidmm_placement_take(&al->pl, &dst);
            vidmm_quarantine(a, al, &old, 1);
            al->moves++;
        }
        return st;
    }
    /* Free: nothing reaches the old place any more. */
    vidmm_unplace(a, al, &old);
    al->moves++;
    return VIDMM_OK;
}

static vidmm_status move_entry(struct vidmm_adapter *a, vidmm_handle h, uint32_t segment_id, int discard)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    if (segment_id >= a->segment_count)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "segment %u: the adapter has segments 1 to %u (0: system memory)",
                          segment_id, a->segment_count - 1);
    if (segment_id != 0 && !(al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(segment_id)))
        return vidmm_fail(VIDMM_E_BAD_SEGMENT_SET, "segment %u is not in the allocation's write segment set 0x%x",
                          segment_id, al->info.supported_write_segment_set);
    if (!al->resident)   /* evicted: its bytes are in system memory already */
        return segment_id == 0 ? VIDMM_OK
                               : vidmm_fail(VIDMM_E_STATE, "allocation 0x%llx is evicted: make it resident first",
                                            (unsigned long long)h);
    if (segment_id == 0 && (al->info.flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) && !system_window(a, al))
        return vidmm_fail(VIDMM_E_BAD_SEGMENT_SET, "segment 0: the GPU accesses the allocation physically and "
                          "no aperture can reach it in system memory");
    if (al->lock_count || al->displayed)
        return vidmm_fail(VIDMM_E_BUSY, "allocation 0x%llx is %s", (unsigned long long)h,
                          al->lock_count ? "locked by the CPU" : "being scanned out");
    vidmm_residency_leave(a, al);
    vidmm_residency_drop_backing(a, al);
    st = vidmm_allocation_move_to(a, al, segment_id, discard);
    vidmm_residency_enter(a, al);
    return st;
}

static vidmm_status allocation_move(struct vidmm_adapter *a, vidmm_handle h, uint32_t segment_id)
{
    return move_entry(a, h, segment_id, 0);
}

static vidmm_status allocation_move_discard(struct vidmm_adapter *a, vidmm_handle h, uint32_t segment_id)
{
    return move_entry(a, h, segment_id, 1);
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_allocation_move(struct vidmm_adapter *a, vidmm_handle h, uint32_t segment_id)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : allocation_move(a, h, segment_id));
}

vidmm_status vidmm_allocation_move_discard(struct vidmm_adapter *a, vidmm_handle h, uint32_t segment_id)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : allocation_move_discard(a, h, segment_id));
}
