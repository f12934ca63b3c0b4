/*
 * content.c - content moves: the one place that picks the paging
 * operation family for every caller (creation, moves, eviction, restore,
 * reset repair).
 *
 * On a GpuMmu adapter whose driver takes the virtual ops they go through
 * the system paging process (paging_process.c: TRANSFER_VIRTUAL /
 * FILL_VIRTUAL through its scratch window, docs/DECISIONS.md D27);
 * otherwise they are physical: one TRANSFER per run where both
 * placements are contiguous, one FILL per extent.  New allocations in
 * memory segments are initialised with a fill (zero), system pages by
 * the CPU in both models.  DISCARD_CONTENT tells the driver that source
 * extents leave without a copy-back.
 */
#include "model/objects.h"
#include "fence/fence.h"
#include "paging_process/paging_process.h"
#include "fence/hang.h"
#include "paging/paging.h"

#include <string.h>

/* Tell the driver the source extents leave without a copy-back. */
vidmm_status vidmm_discard_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                    const struct vidmm_placement *pl)
{
    for (uint32_t i = 0; i < pl->pages.count && !pl->sys; i++) {
        struct vidmm_build_paging_buffer_args op;
        memset(&op, 0, sizeof(op));
        op.operation = VIDMM_PAGING_DISCARD_CONTENT;
        op.u.discard_content.driver_allocation = al->info.driver_allocation;
        op.u.discard_content.flags = VIDMM_DISCARD_ALLOCATION_IS_IDLE;
        op.u.discard_content.segment_id = pl->segment_id;
        op.u.discard_content.segment_address = a->seg[pl->segment_id].base_address + pl->pages.ext[i].offset;
        op.u.discard_content.size = pl->pages.ext[i].size;
        vidmm_status st = vidmm_paging_emit(a, &op);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

/* A contiguous piece of a placement, for transfers. */
struct piece {
    uint32_t segment_id;      /* 0 = system pages */
    uint64_t address;         /* segment address, or byte position in the MDL */
    uint64_t size;
};

static struct piece piece_at(const struct vidmm_adapter *a, const struct vidmm_placement *pl, uint32_t i,
                             uint64_t pos)
{
    struct piece p;
    if (pl->sys) {
        p.segment_id = 0;
        p.address = pos;
        p.size = pl->mdl.page_count * VIDMM_PAGE_4K - pos;
    } else {
        const struct vidmm_extent *e = &pl->pages.ext[i];
        p.segment_id = pl->segment_id;
        p.address = a->seg[pl->segment_id].base_address + e->offset;
        p.size = e->size;
    }
    return p;
}

static void set_side(struct vidmm_transfer_side *side, const struct vidmm_placement *pl, const struct piece *p,
                     uint64_t into, uint64_t *mdl_offset)
{
    side->segment_id = p->segment_id;
    if (p->segment_id) {
        side->segment_address = p->address + into;
    } else {
        side->mdl = &pl->mdl;
        *mdl_offset = (p->address + into) / VIDMM_PAGE_4K;
    }
}

static vidmm_status copy_ops(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                             const struct vidmm_placement *dst)
{
    if (src->sys && dst->sys)
        return VIDMM_E_INVALID_ARG; /* same kind of memory: nothing to transfer */
    if (a->pp)
        return vidmm_paging_process_copy(a, al, src, dst);
    uint32_t si = 0, di = 0;
    uint64_t spos = 0, dpos = 0; /* offset inside the current piece */
    uint64_t done = 0;
    struct piece sp = piece_at(a, src, 0, 0), dp = piece_at(a, dst, 0, 0);
    while (done < al->size) {
        uint64_t n = sp.size - spos;
        if (dp.size - dpos < n)
            n = dp.size - dpos;
        if (al->size - done < n)
            n = al->size - done;
        struct vidmm_build_paging_buffer_args op;
        memset(&op, 0, sizeof(op));
        op.operation = VIDMM_PAGING_TRANSFER;
        struct vidmm_paging_transfer *t = &op.u.transfer;
        t->driver_allocation = al->info.driver_allocation;
        t->transfer_offset = done;
        t->transfer_size = n;
        uint64_t mdl_off = 0;
        set_side(&t->source, src, &sp, spos, &mdl_off);
        set_side(&t->destination, dst, &dp, dpos, &mdl_off);
        t->mdl_offset = mdl_off;
        t->flags = VIDMM_TRANSFER_ALLOCATION_IS_IDLE;
        if (done == 0)
            t->flags |= VIDMM_TRANSFER_START;
        if (done + n == al->size)
            t->flags |= VIDMM_TRANSFER_END;
        vidmm_status st = vidmm_paging_emit(a, &op);
        if (st < 0)
            return st;
        done += n;
        spos += n;
        dpos += n;
        if (spos == sp.size && done < al->size) {
            sp = piece_at(a, src, ++si, done);
            spos = 0;
        }
        if (dpos == dp.size && done < al->size) {
            dp = piece_at(a, dst, ++di, done);
            dpos = 0;
        }
    }
    return VIDMM_OK;
}

static vidmm_status fill_ops(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *pl,
                             uint32_t pattern)
{
    if (pl->sys) {
        if (pattern == 0) {
            memset(pl->sys, 0, (size_t)al->size);
        } else {
            uint32_t *w = pl->sys;
            for (uint64_t i = 0; i < al->size / 4; i++)
                w[i] = pattern;
        }
        return VIDMM_OK;
    }
    if (a->pp)
        return vidmm_paging_process_fill(a, al, pl, pattern);
    for (uint32_t i = 0; i < pl->pages.count; i++) {
        const struct vidmm_extent *e = &pl->pages.ext[i];
        struct vidmm_build_paging_buffer_args op;
        memset(&op, 0, sizeof(op));
        op.operation = VIDMM_PAGING_FILL;
        op.u.fill.driver_allocation = al->info.driver_allocation;
        op.u.fill.fill_size = e->size;
        op.u.fill.fill_pattern = pattern;
        op.u.fill.destination_segment_id = pl->segment_id;
        op.u.fill.destination_segment_address = a->seg[pl->segment_id].base_address + e->offset;
        vidmm_status st = vidmm_paging_emit(a, &op);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

/* The content-move entries note the paging buffer that writes the
 * allocation (an adapter reset that drops it loses the content) and,
 * when a reset happened while the operations were being issued (recovery
 * runs inside vidmm's waits), treat the destination as lost: its bytes
 * are whatever the interrupted operations left. */
vidmm_status vidmm_copy_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *src, const struct vidmm_placement *dst)
{
    VIDMM_ASSERT_LOCKED(a);
    uint64_t gen = vidmm_fence_generation(a);
    vidmm_status st = copy_ops(a, al, src, dst);
    vidmm_fence_note_paging(a, al);
    if (st >= 0 && gen != vidmm_fence_generation(a)) {
        st = fill_ops(a, al, dst, 0);
        al->reset_lost++;
        vidmm_fence_stats(a)->allocations_lost++;
    }
    return st;
}

vidmm_status vidmm_fill_content(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                const struct vidmm_placement *pl, uint32_t pattern)
{
    uint64_t gen = vidmm_fence_generation(a);
    vidmm_status st = fill_ops(a, al, pl, pattern);
    if (!pl->sys)
        vidmm_fence_note_paging(a, al);
    if (st >= 0 && gen != vidmm_fence_generation(a))
        st = fill_ops(a, al, pl, pattern);   /* the same operation again, after the reset */
    return st;
}
