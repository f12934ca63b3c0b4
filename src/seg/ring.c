/*
 * ring.c - FIFO ring allocator (see ring.h).
 *
 * State is two offsets: head, where the next allocation goes, and tail, the
 * start of the oldest live one.  When tail < head the live space is
 * [tail, head); otherwise it wraps: [tail, size) and [0, head), and the free
 * space is the single gap [head, tail).  An empty ring resets to 0 so a
 * fresh burst gets the whole ring contiguously.  The records form a
 * power-of-two circular FIFO so push and pop are a mask, not a division.
 */
#include "seg/ring.h"

#include "core/alloc_sites.h"

#include <stddef.h>
#include <string.h>

static inline int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

vidmm_status vidmm_ring_init(struct vidmm_ring *ring, const struct vidmm_host_allocator *ha,
                             uint64_t size, uint64_t align)
{
    if (!ring)
        return VIDMM_E_INVALID_ARG;
    memset(ring, 0, sizeof *ring);
    ring->recs = ring->inline_recs;
    ring->rec_cap = VIDMM_RING_INLINE_RECS;
    if (!size || !is_pow2(align) || (size & (align - 1)) || (ha && (!ha->alloc || !ha->free)))
        return VIDMM_E_INVALID_ARG;
    ring->ha = ha;
    ring->size = size;
    ring->align = align;
    return VIDMM_OK;
}

void vidmm_ring_fini(struct vidmm_ring *ring)
{
    if (!ring)
        return;
    if (ring->ha && ring->recs && ring->recs != ring->inline_recs)
        ring->ha->free(ring->ha->user_data, ring->recs, (size_t)ring->rec_cap * sizeof *ring->recs,
                       _Alignof(struct vidmm_ring_rec));
    memset(ring, 0, sizeof *ring);
    ring->recs = ring->inline_recs;
    ring->rec_cap = VIDMM_RING_INLINE_RECS;
}

/* Double the record FIFO, unrolling it so the oldest record is at 0. */
static vidmm_status grow_recs(struct vidmm_ring *ring)
{
    if (!ring->ha || ring->rec_cap > UINT32_MAX / 2)
        return ring->ha ? VIDMM_E_NO_HOST_MEMORY : VIDMM_E_NO_SEGMENT_SPACE;
    uint32_t cap = ring->rec_cap * 2;
    if ((uint64_t)cap * sizeof(struct vidmm_ring_rec) > (uint64_t)(SIZE_MAX >> 1))
        return VIDMM_E_NO_HOST_MEMORY;
    struct vidmm_ring_rec *r = vidmm_host_alloc_at(ring->ha, VIDMM_SITE_RING_RECORDS, (size_t)cap * sizeof *r,
                                                   _Alignof(struct vidmm_ring_rec));
    if (!r)
        return VIDMM_E_NO_HOST_MEMORY;
    uint32_t mask = ring->rec_cap - 1;
    for (uint32_t i = 0; i < ring->count; i++)
        r[i] = ring->recs[(ring->rec_first + i) & mask];
    if (ring->recs != ring->inline_recs)
        ring->ha->free(ring->ha->user_data, ring->recs, (size_t)ring->rec_cap * sizeof *r,
                       _Alignof(struct vidmm_ring_rec));
    ring->recs = r;
    ring->rec_cap = cap;
    ring->rec_first = 0;
    return VIDMM_OK;
}

vidmm_status vidmm_ring_alloc(struct vidmm_ring *ring, uint64_t size, uint64_t *offset)
{
    if (!ring || !offset || !size || !ring->size)
        return VIDMM_E_INVALID_ARG;
    if (size > ring->size)
        return VIDMM_E_TOO_LARGE;
    size = (size + ring->align - 1) & ~(ring->align - 1); /* ring->size is aligned: no wrap */
    uint64_t off;
    if (!ring->count) {
        off = 0;
    } else if (ring->tail < ring->head) {
        if (size <= ring->size - ring->head)
            off = ring->head;
        else if (size <= ring->tail)
            off = 0;                     /* wrap; [head, size) waits for the wrap to retire */
        else
            return VIDMM_E_NO_SEGMENT_SPACE;
    } else {
        if (size <= ring->tail - ring->head)
            off = ring->head;
        else
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if (ring->count == ring->rec_cap) {
        vidmm_status st = grow_recs(ring);
        if (st < 0)
            return st;
    }
    struct vidmm_ring_rec *r = &ring->recs[(ring->rec_first + ring->count) & (ring->rec_cap - 1)];
    r->offset = off;
    r->size = size;
    if (!ring->count)
        ring->tail = off;
    ring->count++;
    ring->head = off + size;
    ring->live_bytes += size;
    *offset = off;
    return VIDMM_OK;
}

vidmm_status vidmm_ring_shrink_newest(struct vidmm_ring *ring, uint64_t new_size)
{
    if (!ring || !ring->count)
        return VIDMM_E_STATE;
    struct vidmm_ring_rec *r = &ring->recs[(ring->rec_first + ring->count - 1) & (ring->rec_cap - 1)];
    if (new_size == 0 || new_size > r->size)
        return VIDMM_E_INVALID_ARG;
    new_size = (new_size + ring->align - 1) & ~(ring->align - 1);
    ring->live_bytes -= r->size - new_size;
    r->size = new_size;
    ring->head = r->offset + new_size;
    return VIDMM_OK;
}

vidmm_status vidmm_ring_free_oldest(struct vidmm_ring *ring)
{
    if (!ring || !ring->count)
        return VIDMM_E_STATE;
    uint32_t mask = ring->rec_cap - 1;
    ring->live_bytes -= ring->recs[ring->rec_first].size;
    ring->rec_first = (ring->rec_first + 1) & mask;
    if (--ring->count) {
        ring->tail = ring->recs[ring->rec_first].offset;
    } else {
        ring->head = ring->tail = 0;
        ring->rec_first = 0;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_ring_oldest(const struct vidmm_ring *ring, uint64_t *offset, uint64_t *size)
{
    if (!ring || !ring->count)
        return VIDMM_E_STATE;
    if (offset)
        *offset = ring->recs[ring->rec_first].offset;
    if (size)
        *size = ring->recs[ring->rec_first].size;
    return VIDMM_OK;
}

uint64_t vidmm_ring_used(const struct vidmm_ring *ring)
{
    if (!ring || !ring->count)
        return 0;
    if (ring->tail < ring->head)
        return ring->head - ring->tail;
    return ring->size - ring->tail + ring->head;
}

int vidmm_ring_check(const struct vidmm_ring *ring)
{
    if (!ring || !ring->recs || !is_pow2(ring->rec_cap) || ring->count > ring->rec_cap)
        return 1;
    int err = 0;
    if ((ring->recs == ring->inline_recs) != (ring->rec_cap == VIDMM_RING_INLINE_RECS))
        err++;
    if (!ring->size || !is_pow2(ring->align) || (ring->size & (ring->align - 1)))
        err++;
    if (!ring->count)
        return err + (ring->head != 0) + (ring->tail != 0) + (ring->live_bytes != 0) +
               (ring->rec_first != 0);
    uint32_t mask = ring->rec_cap - 1;
    uint64_t sum = 0, expect = ring->tail;
    unsigned wraps = 0;
    for (uint32_t i = 0; i < ring->count; i++) {
        const struct vidmm_ring_rec *r = &ring->recs[(ring->rec_first + i) & mask];
        if (!r->size || ((r->offset | r->size) & (ring->align - 1)) || r->offset > ring->size ||
            r->size > ring->size - r->offset)
            err++;
        if (r->offset != expect) {
            if (r->offset == 0 && i > 0)
                wraps++;
            else
                err++;
        }
        sum += r->size;
        expect = r->offset + r->size;
    }
    if (wraps > 1)
        err++;
    if (expect != ring->head || sum != ring->live_bytes)
        err++;
    /* After a wrap the new allocations must stay below the oldest one. */
    if (wraps && ring->head > ring->tail)
        err++;
    if (!wraps && ring->head <= ring->tail)
        err++;
    return err;
}
