/*
 * ring.h - FIFO ring allocator for paging and DMA buffers (internal).
 *
 * Paging buffers are filled in submission order and retire in fence order,
 * so the space [0, size) is handed out as a ring: allocations are
 * contiguous and laid down one after the other; one that does not fit
 * before the end wraps to 0 (never split across the end, the tail is left
 * unused until the wrap is retired); space comes back only by freeing the
 * oldest live allocation.  Live allocations are remembered as a FIFO of
 * (offset, size) records so the caller need not keep them.
 */
#ifndef VIDMM_RING_H
#define VIDMM_RING_H

#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stdint.h>

#define VIDMM_RING_INLINE_RECS 16u

struct vidmm_ring_rec {
    uint64_t offset;
    uint64_t size;
};

struct vidmm_ring {
    const struct vidmm_host_allocator *ha; /* NULL: only the inline records */
    uint64_t size;        /* managed bytes */
    uint64_t align;       /* every offset and size is a multiple */
    uint64_t head;        /* where the next allocation is tried */
    uint64_t tail;        /* offset of the oldest live allocation (0 when empty) */
    uint64_t live_bytes;  /* sum of live sizes (wrap waste excluded) */
    uint32_t count;       /* live allocations */
    uint32_t rec_cap;     /* power of two */
    uint32_t rec_first;   /* index of the oldest record */
    struct vidmm_ring_rec *recs;  /* inline_recs or host-allocated */
    struct vidmm_ring_rec inline_recs[VIDMM_RING_INLINE_RECS];
};

/* size > 0 a multiple of align, align a power of two (else
 * VIDMM_E_INVALID_ARG).  ha may be NULL: the ring then never allocates and
 * holds at most VIDMM_RING_INLINE_RECS live allocations.  Never fails
 * otherwise (record storage grows on demand).  A ring must not be copied
 * while in use (recs may point into the struct). */
vidmm_status vidmm_ring_init(struct vidmm_ring *ring, const struct vidmm_host_allocator *ha,
                             uint64_t size, uint64_t align);
void vidmm_ring_fini(struct vidmm_ring *ring);

/* Allocate size bytes (rounded up to align), contiguous, after the newest
 * live allocation, wrapping to 0 when it does not fit before the end.
 * VIDMM_E_NO_SEGMENT_SPACE when the oldest live allocations are in the way
 * (retire and free the oldest, then retry; also when a ring without host
 * allocator has no record left), VIDMM_E_TOO_LARGE when size exceeds the
 * ring, VIDMM_E_NO_HOST_MEMORY when the record FIFO cannot grow,
 * VIDMM_E_INVALID_ARG for size 0.  State is unchanged on failure. */
vidmm_status vidmm_ring_alloc(struct vidmm_ring *ring, uint64_t size, uint64_t *offset);

/* Give back the unused end of the newest allocation: its size becomes
 * new_size (rounded up to align, > 0, not above its current size), so the
 * next allocation starts right after what was used.  VIDMM_E_STATE if the
 * ring is empty, VIDMM_E_INVALID_ARG for a bad size. */
vidmm_status vidmm_ring_shrink_newest(struct vidmm_ring *ring, uint64_t new_size);

/* Free the oldest live allocation; VIDMM_E_STATE if the ring is empty. */
vidmm_status vidmm_ring_free_oldest(struct vidmm_ring *ring);

/* Offset and size of the oldest live allocation; VIDMM_E_STATE if empty. */
vidmm_status vidmm_ring_oldest(const struct vidmm_ring *ring, uint64_t *offset, uint64_t *size);

/* Bytes not available to the next allocations: live bytes plus any space
 * skipped at the end by a wrap that is still live. */
uint64_t vidmm_ring_used(const struct vidmm_ring *ring);

/* Verify the invariants (records in FIFO order, contiguous but for at most
 * one wrap, inside [0,size), aligned, matching head/tail/live_bytes).
 * Returns the number of violations. */
int vidmm_ring_check(const struct vidmm_ring *ring);

#endif
