/*
 * paging_test.c - paging buffers end to end: the ring of buffers wraps and
 * retires in fence order, the restart protocol survives a driver that
 * keeps asking for a fresh buffer, and bytes survive either way.
 */
#include "gpuva_common.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <string.h>

struct pfx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
};

static void pfx_open(struct pfx *f, uint32_t paging_buffer_size)
{
    memset(f, 0, sizeof(*f));
    fault_alloc_init(&f->fa);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.preset = "wddm1"; /* 4 KiB pages: many small extents */
    cfg.paging_buffer_size = paging_buffer_size;
    T_ST(softgpu_create(&cfg, &f->sg), VIDMM_OK);
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(f->sg, &ci);
    ci.host_allocator = &f->fa.ha;
    T_ST(vidmm_adapter_open(&ci, &f->a), VIDMM_OK);
}

static void pfx_close(struct pfx *f)
{
    T_EQ(vidmm_adapter_check(f->a, NULL, 0), 0);
    vidmm_adapter_close(f->a);
    T_EQ(f->fa.live_blocks, 0);
    softgpu_destroy(f->sg);
}

static void fill(struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed, int check)
{
    void *p = NULL;
    T_ST(vidmm_allocation_lock(a, h, &p), VIDMM_OK);
    if (!p)
        return;
    uint64_t *w = p, s = seed, bad = 0;
    for (uint64_t i = 0; i < size / 8; i++) {
        uint64_t v = t_rand(&s);
        if (check)
            bad += w[i] != v;
        else
            w[i] = v;
    }
    T_EQ(bad, 0);
    T_ST(vidmm_allocation_unlock(a, h), VIDMM_OK);
}

/* A checkerboard of 4 KiB holes in segment 2 makes a 1 MiB allocation a
 * page set of 256 extents: its moves need 256 transfers, i.e. many 4 KiB
 * paging buffers, so the ring wraps many times. */
static void ring_wraps_and_bytes_survive(void)
{
    struct pfx f;
    pfx_open(&f, 4096);
    struct vidmm_adapter *a = f.a;
    enum { N = 512 };
    static vidmm_handle pins[N];
    for (int i = 0; i < N; i++)
        pins[i] = gv_alloc_flags(a, VIDMM_SEGMENT_BIT(2), 0, 4096);
    for (int i = 0; i < N; i += 2)
        T_ST(vidmm_allocation_destroy(a, pins[i]), VIDMM_OK);
    struct vidmm_segment_info si;
    vidmm_segment_query(a, 2, &si);
    vidmm_handle filler = gv_alloc_flags(a, VIDMM_SEGMENT_BIT(2), 0, si.largest_free);
    uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(4);
    vidmm_handle h = gv_alloc_flags(a, set, VIDMM_ALLOC_CPU_VISIBLE, 1u << 20);
    /* Placed in segment 1 (CPU-visible, contiguous); write, then send it to
     * segment 2 where only the 4 KiB holes are left. */
    fill(a, h, 1u << 20, 7, 0);
    struct vidmm_adapter_info before, after;
    vidmm_adapter_query_info(a, &before);
    T_ST(vidmm_allocation_move(a, h, 2), VIDMM_OK);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(a, h, &st), VIDMM_OK);
    T_EQ(st.segment_id, 2);
    T_EQ(st.extent_count, 256);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    for (int round = 0; round < 4; round++) {
        T_ST(vidmm_allocation_move(a, h, 0), VIDMM_OK);  /* 256 transfers to system */
        T_ST(vidmm_allocation_move(a, h, 2), VIDMM_OK);  /* and back */
        T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    }
    vidmm_adapter_query_info(a, &after);
    /* About 100 transfer commands fit a 4 KiB buffer: 2304 transfers take
     * over 20 buffers, so the 8-buffer ring wraps several times. */
    T_CHECK(after.paging_buffers_submitted - before.paging_buffers_submitted > 2 * 8);
    T_EQ(after.paging_ops[VIDMM_PAGING_TRANSFER] - before.paging_ops[VIDMM_PAGING_TRANSFER], 9 * 256);
    T_EQ(after.last_fence_completed, after.last_fence_submitted);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_ST(vidmm_allocation_move(a, h, 1), VIDMM_OK);
    fill(a, h, 1u << 20, 7, 1);
    vidmm_allocation_destroy(a, filler);
    pfx_close(&f);
}

/* The driver refuses a fresh buffer many times in a row: vidmm keeps
 * submitting and retrying, up to its limit, then reports the driver. */
static void restart_protocol(void)
{
    struct pfx f;
    pfx_open(&f, 65536);
    struct vidmm_adapter *a = f.a;
    vidmm_handle h = gv_alloc_flags(a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(4),
                          VIDMM_ALLOC_CPU_VISIBLE, 3u << 20);
    fill(a, h, 3u << 20, 99, 0);
    struct vidmm_adapter_info before, after;
    vidmm_adapter_query_info(a, &before);
    softgpu_inject_insufficient_dma(f.sg, 20);
    T_ST(vidmm_allocation_move(a, h, 0), VIDMM_OK);
    vidmm_adapter_query_info(a, &after);
    T_CHECK(after.paging_restarts - before.paging_restarts >= 20);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_ST(vidmm_allocation_move(a, h, 1), VIDMM_OK);
    fill(a, h, 3u << 20, 99, 1);
    /* A driver that never makes progress is a driver failure, and the
     * allocation stays where it was with its bytes. */
    softgpu_inject_insufficient_dma(f.sg, 1000);
    T_ST(vidmm_allocation_move(a, h, 2), VIDMM_E_DRIVER_FAILURE);
    softgpu_inject_insufficient_dma(f.sg, 0);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(a, h, &st), VIDMM_OK);
    T_EQ(st.segment_id, 1);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    fill(a, h, 3u << 20, 99, 1);
    pfx_close(&f);
}

void suite_paging(void);
void suite_paging(void)
{
    t_run("paging.ring_wraps_and_bytes_survive", ring_wraps_and_bytes_survive);
    t_run("paging.restart_protocol", restart_protocol);
}
