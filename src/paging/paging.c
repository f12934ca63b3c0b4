/*
 * paging.c - building and submitting paging buffers.
 *
 * vidmm asks the driver to encode each paging operation (transfer, fill,
 * their virtual forms, discard, aperture map/unmap, page-table updates
 * and TLB flushes) into a paging buffer with
 * build_paging_buffer, and submits full buffers with submit_command.  The
 * restart protocol of DxgkDdiBuildPagingBuffer is implemented here: when
 * the driver answers VIDMM_E_INSUFFICIENT_DMA_BUFFER, what it wrote so far
 * is submitted, a fresh buffer is taken, and the same request is made
 * again with the multipass_offset the driver left, until it answers OK.
 *
 * Paging buffers come from a FIFO ring (ring.c) over an area of
 * VIDMM_PAGING_SLOTS x PagingBufferSize bytes: a buffer of the full size is
 * reserved before the driver writes, and trimmed at submission to what it
 * holds (4 KiB aligned), so small buffers do not waste the ring.  Space
 * comes back in fence order.  Fences are 64-bit and increase by one per
 * submission; the driver reports completion through
 * vidmm_cb_notify_fence().
 *
 * When the driver names the aperture as the paging-buffer segment, the
 * ring is mapped into the aperture at start-up (MAP_APERTURE_SEGMENT with
 * no allocation), so the GPU reaches it at a contiguous aperture range.
 */
#include "model/objects.h"
#include "core/report.h"
#include "fence/fence.h"
#include "fence/hang.h"
#include "paging/paging.h"
#include "paging/paging_state.h"

#include <string.h>

#define MAX_FRUITLESS_RESTARTS 64

/* Wait until the GPU finished fence.  No deadline: every caller frees or
 * reuses memory the GPU may still touch once this returns, so giving up
 * early would hand that memory out while the engine works on it.  A hung
 * engine is found between the wait's slices (tdr/tdr.c), and its reset
 * is left pending for the entry boundary.  The wait gives up only when
 * that reset found the paging engine itself stuck: nothing queued on it
 * runs before the reset drops it, so the caller may back out and free
 * what those buffers name.  A pending reset of a context's node stops
 * nothing here (the paging engine goes on writing), so the wait goes on
 * (docs/DECISIONS.md D61).  VIDMM_E_TIMEOUT whenever the pending reset
 * resets the paging engine (a hang, or a fault that makes its results
 * untrustworthy); the caller backs out and the reset runs as the entry
 * unwinds.  VIDMM_E_DEVICE_LOST on a removed adapter (its driver refused
 * an adapter reset: nothing queued will complete, D94). */
static vidmm_status wait_fence(struct vidmm_adapter *a, uint64_t fence)
{
    pthread_mutex_lock(&a->fence_lock);
    while (vidmm_fence_paging_completed_locked(a) < fence && !vidmm_fence_paging_stopped_locked(a) &&
           !vidmm_fence_adapter_removed_locked(a))
        (void)vidmm_fence_wait(a, NULL);   /* looks for hangs between slices */
    int fault = vidmm_fence_paging_fault_unhandled_locked(a);
    int removed = vidmm_fence_paging_completed_locked(a) < fence && vidmm_fence_adapter_removed_locked(a);
    pthread_mutex_unlock(&a->fence_lock);
    if (removed)
        return VIDMM_E_DEVICE_LOST;   /* its driver refused a reset: the engine is gone (D94) */
    if (fault)
        (void)vidmm_hang_poll(a);   /* a paging buffer faulted: reset before its results are used */
    return vidmm_fence_paging_reset_pending(a) ? VIDMM_E_TIMEOUT : VIDMM_OK;
}

/* Return to the ring every buffer whose fence has passed (and, with
 * wait_one, wait for the oldest first). */
static vidmm_status retire(struct vidmm_adapter *a, int wait_one)
{
    struct vidmm_paging *p = a->paging;
    uint32_t mask = VIDMM_RING_INLINE_RECS - 1;
    uint32_t submitted = p->ring.count - (p->have_buffer ? 1u : 0u);
    if (wait_one && submitted) {
        vidmm_status st = wait_fence(a, p->fence_fifo[p->fence_first]);
        if (st < 0)
            return st;
    }
    uint64_t done = vidmm_fence_paging_completed(a);
    while (submitted && p->fence_fifo[p->fence_first] <= done) {
        vidmm_ring_free_oldest(&p->ring);
        p->fence_first = (p->fence_first + 1) & mask;
        submitted--;
    }
    return VIDMM_OK;
}

/* Reserve a full-size buffer for the driver to write into. */
static vidmm_status take_buffer(struct vidmm_adapter *a)
{
    struct vidmm_paging *p = a->paging;
    for (;;) {
        uint64_t off;
        vidmm_status st = vidmm_ring_alloc(&p->ring, p->buffer_size, &off);
        if (st == VIDMM_OK) {
            p->have_buffer = 1;
            p->start = p->cursor = p->area + off;
            p->left = p->buffer_size;
            p->sequence++;
            return VIDMM_OK;
        }
        if (st != VIDMM_E_NO_SEGMENT_SPACE || p->ring.count == 0)
            return VIDMM_E_DRIVER_FAILURE; /* cannot happen with a well-sized ring */
        st = retire(a, 1);
        if (st < 0)
            return st;
    }
}

/* Submit the buffer being written, if it holds anything. */
static vidmm_status submit_current(struct vidmm_adapter *a)
{
    struct vidmm_paging *p = a->paging;
    if (!p->have_buffer)
        return VIDMM_OK;
    uint32_t used = (uint32_t)(p->cursor - p->start);
    if (used == 0)
        return VIDMM_OK;
    struct vidmm_submit_command_args sub;
    memset(&sub, 0, sizeof(sub));
    sub.adapter = a;
    sub.dma_buffer = p->start;
    sub.dma_buffer_size = used;
    sub.flags = VIDMM_SUBMIT_PAGING;
    /* Published before the driver runs it (a synchronous driver signals
     * from inside the call); hang detection compares it with the
     * completed fence. */
    sub.fence = vidmm_fence_paging_begin(a);
    vidmm_status st = a->ops.submit_command(a->driver, &sub);
    vidmm_fence_paging_end(a, st >= 0);
    if (st < 0) {
        /* The buffer never ran: forget what it holds, keep it for reuse. */
        p->cursor = p->start;
        p->left = p->buffer_size;
        return VIDMM_E_DRIVER_FAILURE;
    }
    vidmm_ring_shrink_newest(&p->ring, used);
    uint32_t mask = VIDMM_RING_INLINE_RECS - 1;
    p->fence_fifo[(p->fence_first + p->ring.count - 1) & mask] = sub.fence;
    p->have_buffer = 0;
    p->buffers++;
    return retire(a, 0);
}

static uint64_t op_bytes(const struct vidmm_build_paging_buffer_args *op)
{
    switch (op->operation) {
    case VIDMM_PAGING_TRANSFER: return op->u.transfer.transfer_size;
    case VIDMM_PAGING_FILL: return op->u.fill.fill_size;
    case VIDMM_PAGING_TRANSFER_VIRTUAL: return op->u.transfer_virtual.transfer_size_in_bytes;
    case VIDMM_PAGING_FILL_VIRTUAL: return op->u.fill_virtual.fill_size_in_bytes;
    case VIDMM_PAGING_DISCARD_CONTENT: return op->u.discard_content.size;
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT: return op->u.map_aperture_segment.number_of_pages * VIDMM_PAGE_4K;
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT: return op->u.unmap_aperture_segment.number_of_pages * VIDMM_PAGE_4K;
    default: return 0;
    }
}

vidmm_status vidmm_paging_emit(struct vidmm_adapter *a, struct vidmm_build_paging_buffer_args *op)
{
    VIDMM_ASSERT_LOCKED(a);
    struct vidmm_paging *p = a->paging;
    unsigned fruitless = 0;
    op->multipass_offset = 0;
    for (;;) {
        if (!p->have_buffer) {
            vidmm_status tb = take_buffer(a);
            if (tb < 0)
                return tb;
        }
        unsigned char *start = p->cursor;
        uint32_t left = p->left;
        op->dma_buffer = start;
        op->dma_size = left;
        op->dma_buffer_private_data = p->private_data_size
            ? (unsigned char *)p->private_data +
                  (size_t)(p->sequence % VIDMM_RING_INLINE_RECS) * p->private_data_size
            : NULL;
        op->dma_buffer_private_data_size = p->private_data_size;
        vidmm_status st = a->ops.build_paging_buffer(a->driver, op);
        unsigned char *end = op->dma_buffer;
        if (end < start || end > start + left || op->dma_size != left - (uint32_t)(end - start))
            return VIDMM_E_DRIVER_FAILURE; /* the driver lost track of the buffer */
        p->cursor = end;
        p->left = op->dma_size;
        if (st == VIDMM_OK) {
            unsigned k = (unsigned)op->operation;
            if (k < 17) {
                p->ops[k]++;
                p->bytes[k] += op_bytes(op);
            }
            return VIDMM_OK;
        }
        if (st != VIDMM_E_INSUFFICIENT_DMA_BUFFER)
            return VIDMM_E_DRIVER_FAILURE;
        p->restarts++;
        if (end == start && p->cursor == p->start) {
            /* A fresh buffer and still no progress. */
            if (++fruitless > MAX_FRUITLESS_RESTARTS)
                return VIDMM_E_DRIVER_FAILURE;
        } else {
            fruitless = 0;
        }
        st = submit_current(a);
        if (st < 0)
            return st;
    }
}

vidmm_status vidmm_paging_submit(struct vidmm_adapter *a, uint64_t *last_fence)
{
    vidmm_status st = submit_current(a);
    if (last_fence)
        *last_fence = vidmm_fence_paging_last(a);
    return st;
}

vidmm_status vidmm_paging_flush(struct vidmm_adapter *a)
{
    vidmm_status st = submit_current(a);
    if (st < 0)
        return st;
    st = wait_fence(a, vidmm_fence_paging_last(a));
    if (st < 0)
        return st;
    return retire(a, 0);
}

vidmm_status vidmm_paging_init(struct vidmm_adapter *a, uint32_t buffer_size, uint32_t private_size)
{
    struct vidmm_paging *p = vidmm_hzalloc(a->ha, VIDMM_SITE_PAGING_STATE, sizeof(*p), _Alignof(struct vidmm_paging));
    if (!p)
        return VIDMM_E_NO_HOST_MEMORY;
    a->paging = p;
    p->buffer_size = buffer_size;
    p->area_size = (size_t)buffer_size * VIDMM_PAGING_SLOTS;
    p->area = vidmm_hzalloc(a->ha, VIDMM_SITE_PAGING_BUFFERS, p->area_size, VIDMM_PAGE_4K);
    if (!p->area)
        goto nomem;
    /* No host allocator: the inline records (16) cover the ring's 8 buffers. */
    if (vidmm_ring_init(&p->ring, NULL, p->area_size, VIDMM_PAGE_4K) < 0)
        goto nomem;
    if (private_size) {
        p->private_data = vidmm_hzalloc(a->ha, VIDMM_SITE_PAGING_PRIVATE, (size_t)private_size * VIDMM_RING_INLINE_RECS, 16);
        if (!p->private_data)
            goto nomem;
        p->private_data_size = private_size;
    }
    if (a->paging_segment_id) {
        /* Map the ring into the paging-buffer aperture. */
        struct vidmm_segment *s = &a->seg[a->paging_segment_id];
        uint64_t off;
        /* The buffers count against the aperture's commit limits like any
         * mapping (placement.c): a driver whose limits cannot hold them
         * described its paging-buffer segment wrongly (fuzz/driver_desc). */
        if (s->committed + p->area_size > s->commit_limit ||
            (a->caps.aperture_segment_commit_limit &&
             a->aperture_mapped_bytes + p->area_size > a->caps.aperture_segment_commit_limit)) {
            vidmm_paging_fini(a);
            return VIDMM_E_BAD_DRIVER_DESC;
        }
        vidmm_status st = vidmm_ra_alloc(&s->ra, p->area_size, VIDMM_PAGE_4K, 0, &off, &p->ap_node);
        if (st < 0) {
            vidmm_paging_fini(a);
            return st == VIDMM_E_NO_SEGMENT_SPACE ? VIDMM_E_BAD_DRIVER_DESC : st;
        }
        p->ap_mapped = 1;
        s->committed += p->area_size;
        a->aperture_mapped_bytes += p->area_size;
        struct vidmm_mdl mdl = { p->area, p->area_size / VIDMM_PAGE_4K };
        struct vidmm_build_paging_buffer_args op;
        memset(&op, 0, sizeof(op));
        op.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
        op.u.map_aperture_segment.segment_id = a->paging_segment_id;
        op.u.map_aperture_segment.offset_in_pages = off / VIDMM_PAGE_4K;
        op.u.map_aperture_segment.number_of_pages = mdl.page_count;
        op.u.map_aperture_segment.mdl = &mdl;
        st = vidmm_paging_emit(a, &op);
        if (st >= 0)
            st = vidmm_paging_flush(a);
        if (st < 0) {
            vidmm_paging_fini(a);
            return st;
        }
    }
    return VIDMM_OK;
nomem:
    vidmm_paging_fini(a);
    return VIDMM_E_NO_HOST_MEMORY;
}

/* The ring goes: nothing may stay queued on it.  A hang found here is
 * reset at once (only the close and a failed open get here, and they
 * hold nothing a reset frees); the reset makes every fence pass. */
static void drain(struct vidmm_adapter *a)
{
    if (vidmm_paging_flush(a) < 0 && vidmm_fence_paging_reset_pending(a)) {
        a->up.run_pending(a);
        (void)vidmm_paging_flush(a);
    }
}

void vidmm_paging_fini(struct vidmm_adapter *a)
{
    struct vidmm_paging *p = a->paging;
    if (!p)
        return;
    if (p->ap_mapped) {
        struct vidmm_segment *s = &a->seg[a->paging_segment_id];
        uint64_t off = vidmm_ra_node_offset(&s->ra, p->ap_node);
        struct vidmm_build_paging_buffer_args op;
        memset(&op, 0, sizeof(op));
        op.operation = VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
        op.u.unmap_aperture_segment.segment_id = a->paging_segment_id;
        op.u.unmap_aperture_segment.offset_in_pages = off / VIDMM_PAGE_4K;
        op.u.unmap_aperture_segment.number_of_pages = p->area_size / VIDMM_PAGE_4K;
        op.u.unmap_aperture_segment.dummy_page = a->dummy_page;
        if (vidmm_paging_emit(a, &op) >= 0)
            drain(a);
        vidmm_ra_free(&s->ra, p->ap_node);
        s->committed -= p->area_size;
        a->aperture_mapped_bytes -= p->area_size;
        p->ap_mapped = 0;
    } else if (p->area) {
        drain(a);
    }
    vidmm_hfree(a->ha, p->private_data, (size_t)p->private_data_size * VIDMM_RING_INLINE_RECS, 16);
    if (p->ring.size)
        vidmm_ring_fini(&p->ring);
    vidmm_hfree(a->ha, p->area, p->area_size, VIDMM_PAGE_4K);
    vidmm_hfree(a->ha, p, sizeof(*p), _Alignof(struct vidmm_paging));
    a->paging = NULL;
}

uint32_t vidmm_paging_buffer_size(const struct vidmm_adapter *a)
{
    return a->paging->buffer_size;
}

uint64_t vidmm_paging_work_mark(const struct vidmm_adapter *a)
{
    return a->paging->buffers + (a->paging->have_buffer ? 1u : 0u);
}

void vidmm_paging_stats(const struct vidmm_adapter *a, struct vidmm_adapter_info *out)
{
    const struct vidmm_paging *p = a->paging;
    out->paging_buffer_size = p->buffer_size;
    out->paging_buffers_submitted = p->buffers;
    out->paging_restarts = p->restarts;
    memcpy(out->paging_ops, p->ops, sizeof(out->paging_ops));
    memcpy(out->paging_bytes, p->bytes, sizeof(out->paging_bytes));
}

int vidmm_paging_aperture_use(const struct vidmm_adapter *a, uint64_t *used, uint64_t *committed)
{
    const struct vidmm_paging *p = a->paging;
    if (!p->ap_mapped)
        return 0;
    *used = vidmm_ra_node_size(&a->seg[a->paging_segment_id].ra, p->ap_node);
    *committed = p->area_size;
    return 1;
}

void vidmm_paging_check(const struct vidmm_adapter *a, struct vidmm_report *r)
{
    const struct vidmm_paging *p = a->paging;
    uint32_t mask = VIDMM_RING_INLINE_RECS - 1;
    int e = vidmm_ring_check(&p->ring);
    if (e)
        vidmm_report_add(r, "paging ring has %d violations", e);
    uint32_t inflight = p->ring.count - (p->have_buffer ? 1u : 0u);
    uint64_t next = vidmm_fence_paging_next(a);
    for (uint32_t i = 0; i < inflight; i++) {
        uint64_t f = p->fence_fifo[(p->fence_first + i) & mask];
        uint64_t prev = i ? p->fence_fifo[(p->fence_first + i - 1) & mask] : 0;
        if (f <= prev || f >= next)
            vidmm_report_add(r, "paging fence FIFO out of order at %u", i);
    }
    if (p->ring.count > VIDMM_RING_INLINE_RECS)
        vidmm_report_add(r, "paging ring holds %u buffers", p->ring.count);
}
