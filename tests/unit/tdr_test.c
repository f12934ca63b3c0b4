/*
 * tdr_test.c - hangs, engine and adapter resets, power transitions
 * (vidmm/tdr.h, vidmm/power.h, docs/DECISIONS.md D30-D32,
 * docs/RESET_AND_POWER.md).
 *
 * Hangs are real: a WAIT on a word nobody writes stalls a softgpu node,
 * softgpu_inject_paging_hang stalls the copy engine on a paging buffer.
 * vidmm must find them from its own waits (timeout 50 ms here), reset
 * the engine or escalate to the adapter, and keep its promises: the
 * guilty device is lost, innocent ones go on with the reset status that
 * says what happened to their work, allocation content follows policy
 * D30 (restored from a current system copy, otherwise zero and counted
 * lost), page tables are rebuilt (later virtual work runs), every check
 * walker is clean and nothing leaks.  Power: standby and hibernate save
 * what the non-preserved segments hold; after resume every byte is back.
 */
#include "gpuva_common.h"
#include "softgpu_fixture.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"
#include "softgpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)
#define TDR_NS 50000000ull   /* 50 ms */
#define SET12 (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2))

struct tx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_driver_ops ops;
    int fail_power;          /* set_power_state wrapper answers DRIVER_FAILURE */
    int fail_reset;          /* reset_from_timeout wrapper answers DRIVER_FAILURE */
    int responsive;          /* query_engine_status wrapper: 1 = "slow, not stuck" */
    /* query_engine_status and reset_engine wrappers: softgpu's copy
     * engine is held until vidmm, having confirmed a node hang
     * (node_stuck), asks about the paging engine, or resets the node
     * (a held copy engine keeps the stalled node's thread from
     * finishing its run, which the engine reset waits for). */
    int release_after_node;
    int node_stuck;
    int paging_after_node;   /* the paging engine "responsive" until a node hang was confirmed */
};

static struct tx *g_tx;      /* the wrapper's fixture (one test at a time) */

static vidmm_status failing_power(void *drv, uint32_t state)
{
    if (g_tx && g_tx->fail_power)
        return VIDMM_E_DRIVER_FAILURE;
    return softgpu_driver_ops()->set_power_state(drv, state);
}

static vidmm_status failing_reset(void *drv)
{
    if (g_tx && g_tx->fail_reset)
        return VIDMM_E_DRIVER_FAILURE;
    return softgpu_driver_ops()->reset_from_timeout(drv);
}

static vidmm_status wrapped_query_engine(void *drv, uint32_t node, uint32_t *responsive)
{
    if (g_tx && g_tx->responsive) {
        *responsive = 1;
        return VIDMM_OK;
    }
    vidmm_status st = softgpu_driver_ops()->query_engine_status(drv, node, responsive);
    if (g_tx && st >= 0 && g_tx->paging_after_node) {
        if (node != VIDMM_PAGING_ENGINE && !*responsive)
            g_tx->node_stuck = 1;
        if (node == VIDMM_PAGING_ENGINE && !g_tx->node_stuck)
            *responsive = 1;
    }
    if (g_tx && g_tx->release_after_node && st >= 0) {
        if (node != VIDMM_PAGING_ENGINE && !*responsive)
            g_tx->node_stuck = 1;
        if (node == VIDMM_PAGING_ENGINE && g_tx->node_stuck) {   /* held, not hung: it runs from now on */
            g_tx->release_after_node = 0;
            softgpu_engine_hold(g_tx->sg, 0);
        }
    }
    return st;
}

static vidmm_status wrapped_reset_engine(void *drv, struct vidmm_reset_engine_args *args)
{
    if (g_tx && g_tx->release_after_node) {
        g_tx->release_after_node = 0;
        softgpu_engine_hold(g_tx->sg, 0);
    }
    return softgpu_driver_ops()->reset_engine(drv, args);
}

/* Until softgpu reports node's head buffer stalled on its WAIT. */
static void until_stalled(struct tx *f, uint32_t node)
{
    uint32_t responsive = 1;
    for (int i = 0; i < 5000 && responsive; i++) {
        T_ST(softgpu_driver_ops()->query_engine_status(f->sg, node, &responsive), VIDMM_OK);
        if (responsive)
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    T_EQ(responsive, 0);
}

/* engine_reset: 0 = a driver without DxgkDdiResetEngine (hangs escalate
 * to adapter resets).  query: 0 = without query_engine_status, 2 = the
 * wrapper above. */
static int tx_open_q(struct tx *f, int sync, int engine_reset, uint32_t standby_keep, uint32_t hib_keep, int query);

static int tx_open(struct tx *f, int sync, int engine_reset, uint32_t standby_keep, uint32_t hib_keep)
{
    return tx_open_q(f, sync, engine_reset, standby_keep, hib_keep, 1);
}

static int tx_open_q(struct tx *f, int sync, int engine_reset, uint32_t standby_keep, uint32_t hib_keep, int query)
{
    memset(f, 0, sizeof(*f));
    g_tx = f;
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 16 * MIB, 32 * MIB, sync);
    cfg.standby_preserved = standby_keep;
    cfg.hibernate_preserved = hib_keep;
    f->ops = *softgpu_driver_ops();
    if (!engine_reset)
        f->ops.reset_engine = NULL;
    if (query == 0)
        f->ops.query_engine_status = NULL;
    else if (query == 2)
        f->ops.query_engine_status = wrapped_query_engine;
    if (engine_reset && query == 2)
        f->ops.reset_engine = wrapped_reset_engine;
    f->ops.set_power_state = failing_power;
    f->ops.reset_from_timeout = failing_reset;
    if (softgpu_open(&f->fa, &cfg, &f->ops, 0, &f->sg, &f->a))
        return -1;
    T_ST(vidmm_adapter_set_tdr_timeout(f->a, TDR_NS), VIDMM_OK);
    return 0;
}

static void tx_close(struct tx *f)
{
    softgpu_close(&f->fa, f->sg, f->a);
    g_tx = NULL;
}

/* ---- helpers ----------------------------------------------------------- */

/* A CPU-visible allocation of set, created evicted, holding seed's
 * pattern (seed 0: zero). */
static vidmm_handle new_alloc(struct tx *f, uint32_t set, uint64_t size, uint64_t seed)
{
    return softgpu_new_alloc(f->a, SOFTGPU_ALLOC_EXPLICIT, set, size, seed, 0);
}

/* Does h hold seed's pattern (seed 0: all zero)?  Through a CPU lock. */
static int holds(struct tx *f, vidmm_handle h, uint64_t seed)
{
    struct vidmm_allocation_state st;
    if (vidmm_allocation_query(f->a, h, &st) < 0)
        return 0;
    void *p = NULL;
    if (vidmm_allocation_lock(f->a, h, &p) < 0 || !p)
        return 0;
    const uint64_t *w = p;
    uint64_t s = seed;
    int ok = 1;
    for (uint64_t i = 0; i < st.size / 8 && ok; i++)
        ok = w[i] == (seed ? t_rand(&s) : 0);
    T_ST(vidmm_allocation_unlock(f->a, h), VIDMM_OK);
    return ok;
}

/* Write a command buffer into cmd and submit it on p's context. */
static uint64_t submit(struct tx *f, const struct softgpu_proc *p, vidmm_handle cmd, uint64_t vcmd,
                       const struct softgpu_cmdbuf *cb)
{
    softgpu_cpu_write(f->a, cmd, 0, cb->data, cb->size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f->a, p->ctx, vcmd, cb->size, &fence), VIDMM_OK);
    return fence;
}

/* A hanging buffer: (optionally) a write, then a WAIT on a word nobody
 * writes, then a write that must never happen. */
static uint64_t submit_hang(struct tx *f, const struct softgpu_proc *p, vidmm_handle cmd, uint64_t vcmd, uint64_t vword,
                            int work_first)
{
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    if (work_first)
        T_ST(softgpu_cmd_write64(&cb, vword + 8, 1), VIDMM_OK);
    T_ST(softgpu_cmd_wait(&cb, vword, 1), VIDMM_OK);
    T_ST(softgpu_cmd_write64(&cb, vword + 16, 2), VIDMM_OK);
    return submit(f, p, cmd, vcmd, &cb);
}

static struct vidmm_device_info dev_info(struct tx *f, vidmm_handle dev)
{
    struct vidmm_device_info di;
    memset(&di, 0, sizeof(di));
    T_ST(vidmm_device_query(f->a, dev, &di), VIDMM_OK);
    return di;
}

static struct vidmm_tdr_stats tdr_stats(struct tx *f)
{
    struct vidmm_tdr_stats s;
    memset(&s, 0, sizeof(s));
    T_ST(vidmm_adapter_get_tdr_stats(f->a, &s), VIDMM_OK);
    return s;
}

/* ---- engine reset -------------------------------------------------------- */

/* P hangs its node (before any work, or after some); Q's buffer queued
 * behind it on the same node runs once the engine is reset. */
static void engine_reset_case(int sync, int work_first)
{
    struct tx f;
    if (tx_open(&f, sync, 1, 0, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), wp = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle cq = new_alloc(&f, SET12, 64 * KIB, 0), rq = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle dq = new_alloc(&f, SET12, 1 * MIB, 7);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    uint64_t vcq = softgpu_map(f.a, q.proc, cq, 64 * KIB), vrq = softgpu_map(f.a, q.proc, rq, 64 * KIB);
    uint64_t vdq = softgpu_map(f.a, q.proc, dq, 1 * MIB);
    vidmm_handle lp[] = { cp, wp }, lq[] = { cq, rq, dq };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    softgpu_make_resident(f.a, q.dev, q.queue, lq, 3);

    uint64_t fp = submit_hang(&f, &p, cp, vcp, vwp, work_first);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_checksum(&cb, vdq, 1 * MIB, vrq), VIDMM_OK);
    T_ST(softgpu_cmd_write64(&cb, vrq + 8, 5), VIDMM_OK);
    uint64_t fq = submit(&f, &q, cq, vcq, &cb);
    /* Q waits forever in principle: the hang is found and reset meanwhile. */
    T_ST(vidmm_context_wait(f.a, q.ctx, fq, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fp, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, rq, 0), softgpu_pattern_sum(1 * MIB, 7));
    T_EQ_U64(softgpu_cpu_read64(f.a, rq, 8), 5);
    T_EQ_U64(softgpu_cpu_read64(f.a, wp, 8), work_first ? 1u : 0u);
    T_EQ_U64(softgpu_cpu_read64(f.a, wp, 16), 0);   /* after the WAIT: never ran */
    struct vidmm_device_info di = dev_info(&f, p.dev);
    T_EQ(di.lost, 1);
    T_EQ(di.reset_status, VIDMM_RESET_GUILTY);
    T_EQ_U64(di.resets, 1);
    di = dev_info(&f, q.dev);
    T_EQ(di.lost, 0);
    T_EQ(di.reset_status, VIDMM_RESET_NONE);
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.hangs, 1);
    T_EQ_U64(s.engine_resets, 1);
    T_EQ_U64(s.adapter_resets, 0);
    T_EQ_U64(s.timeout_ns, TDR_NS);
    struct softgpu_reset_stats rs;
    softgpu_get_reset_stats(f.sg, &rs);
    T_EQ_U64(rs.engine_resets, 1);
    T_EQ_U64(rs.adapter_resets, 0);
    T_CHECK(holds(&f, dq, 7));   /* memory untouched by an engine reset */
    T_EQ(softgpu_alloc_state(f.a, dq).content_lost, 0);
    uint64_t fence;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vcp, 8, &fence), VIDMM_E_DEVICE_LOST);
    /* Q goes on. */
    fq = submit(&f, &q, cq, vcq, &cb);
    T_ST(vidmm_context_wait(f.a, q.ctx, fq, UINT64_MAX), VIDMM_OK);
    tx_close(&f);
}

/* An unrecoverable fault as the very first command: the buffer stops,
 * the device is guilty and lost, the engine goes on with the next
 * buffer (another process's), nothing is reset beyond that buffer. */
static void fault_before_work(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), cq = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle rq = new_alloc(&f, SET12, 64 * KIB, 0), never = new_alloc(&f, SET12, 64 * KIB, 0);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vnever = softgpu_map(f.a, p.proc, never, 64 * KIB);
    uint64_t vcq = softgpu_map(f.a, q.proc, cq, 64 * KIB), vrq = softgpu_map(f.a, q.proc, rq, 64 * KIB);
    softgpu_make_resident(f.a, p.dev, p.queue, &cp, 1);   /* `never` is mapped, never resident: its PTEs are invalid */
    vidmm_handle lq[] = { cq, rq };
    softgpu_make_resident(f.a, q.dev, q.queue, lq, 2);
    uint8_t buf[128];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, vnever, 1), VIDMM_OK);   /* faults: nothing of the buffer runs */
    T_ST(softgpu_cmd_write64(&cb, vcp + 1024, 2), VIDMM_OK);
    uint64_t fp = submit(&f, &p, cp, vcp, &cb);
    cb.size = 0;
    T_ST(softgpu_cmd_write64(&cb, vrq, 3), VIDMM_OK);
    uint64_t fq = submit(&f, &q, cq, vcq, &cb);
    T_ST(vidmm_context_wait(f.a, p.ctx, fp, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, q.ctx, fq, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, cp, 1024), 0);
    T_EQ_U64(softgpu_cpu_read64(f.a, rq, 0), 3);
    struct vidmm_device_info di = dev_info(&f, p.dev);
    T_EQ(di.lost, 1);
    T_EQ(di.reset_status, VIDMM_RESET_GUILTY);
    T_EQ_U64(di.fault_va, vnever);
    T_EQ(dev_info(&f, q.dev).reset_status, VIDMM_RESET_NONE);
    T_EQ_U64(tdr_stats(&f).adapter_resets, 0);
    tx_close(&f);
}

static void engine_reset_async(void) { engine_reset_case(0, 1); }
static void engine_reset_sync(void) { engine_reset_case(1, 1); }
static void hang_before_work(void) { engine_reset_case(0, 0); }
static void hang_before_work_sync(void) { engine_reset_case(1, 0); }

/* ---- adapter reset -------------------------------------------------------- */

/* No engine reset in the driver: the hang escalates.  P guilty; Q's
 * queued work dropped (INNOCENT, goes on); R idle (NONE).  Content per
 * D30: R's clean copy restored, CPU-written ones lost, system-memory
 * ones kept; GPU-used ones of Q lost (no proof of cleanliness). */
static void adapter_reset_case(int sync)
{
    struct tx f;
    if (tx_open(&f, sync, 0, 0, 0))
        return;
    struct softgpu_proc p, q, r;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &r, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), wp = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle cq = new_alloc(&f, SET12, 64 * KIB, 0), rq = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle dq = new_alloc(&f, SET12, 1 * MIB, 7);
    vidmm_handle clean = new_alloc(&f, SET12, 1 * MIB, 11);       /* restored from its system copy */
    vidmm_handle dirty = new_alloc(&f, SET12, 1 * MIB, 0);
    vidmm_handle sys = new_alloc(&f, VIDMM_SEGMENT_BIT(3), 256 * KIB, 13);   /* the aperture: system pages */
    vidmm_handle cr = new_alloc(&f, SET12, 64 * KIB, 0), rr = new_alloc(&f, SET12, 64 * KIB, 0);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    uint64_t vcq = softgpu_map(f.a, q.proc, cq, 64 * KIB), vrq = softgpu_map(f.a, q.proc, rq, 64 * KIB);
    uint64_t vdq = softgpu_map(f.a, q.proc, dq, 1 * MIB);
    uint64_t vcr = softgpu_map(f.a, r.proc, cr, 64 * KIB), vrr = softgpu_map(f.a, r.proc, rr, 64 * KIB);
    uint64_t vclean = softgpu_map(f.a, r.proc, clean, 1 * MIB);
    uint64_t vsys = softgpu_map(f.a, r.proc, sys, 256 * KIB);
    vidmm_handle lp[] = { cp, wp }, lq[] = { cq, rq, dq };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    softgpu_make_resident(f.a, q.dev, q.queue, lq, 3);
    vidmm_handle lr[] = { clean, dirty, sys };
    softgpu_make_resident(f.a, r.dev, r.queue, lr, 3);
    gv_pattern(f.a, dirty, 17);   /* written by the CPU while resident: no system copy */
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(f.a, clean, &st), VIDMM_OK);
    T_CHECK(st.segment_id == 1 || st.segment_id == 2);
    T_ST(vidmm_allocation_query(f.a, dirty, &st), VIDMM_OK);
    T_CHECK(st.segment_id == 1 || st.segment_id == 2);

    uint64_t fp = submit_hang(&f, &p, cp, vcp, vwp, 1);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, vrq + 8, 5), VIDMM_OK);
    uint64_t fq = submit(&f, &q, cq, vcq, &cb);   /* queued behind P's: dropped by the reset */
    T_ST(vidmm_context_wait(f.a, q.ctx, fq, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fp, UINT64_MAX), VIDMM_OK);
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.hangs, 1);
    T_EQ_U64(s.engine_resets, 0);
    T_EQ_U64(s.adapter_resets, 1);
    T_CHECK(s.allocations_restored >= 1);
    T_CHECK(s.allocations_lost >= 2);
    struct softgpu_reset_stats rs;
    softgpu_get_reset_stats(f.sg, &rs);
    T_EQ_U64(rs.adapter_resets, 1);
    T_EQ_U64(rs.segments_lost, 2);
    T_CHECK(rs.buffers_dropped >= 2);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    struct vidmm_device_info di = dev_info(&f, p.dev);
    T_EQ(di.lost, 1);
    T_EQ(di.reset_status, VIDMM_RESET_GUILTY);
    di = dev_info(&f, q.dev);
    T_EQ(di.lost, 0);
    T_EQ(di.reset_status, VIDMM_RESET_INNOCENT);
    di = dev_info(&f, r.dev);
    T_EQ(di.lost, 0);
    T_EQ(di.reset_status, VIDMM_RESET_NONE);
    T_EQ_U64(softgpu_cpu_read64(f.a, rq, 8), 0);   /* Q's dropped buffer never ran */

    /* Content by policy D30. */
    T_EQ(softgpu_alloc_state(f.a, clean).content_lost, 0);
    T_CHECK(holds(&f, clean, 11));
    T_EQ(softgpu_alloc_state(f.a, dirty).content_lost, 1);
    T_CHECK(holds(&f, dirty, 0));
    T_EQ(softgpu_alloc_state(f.a, sys).content_lost, 0);
    T_CHECK(holds(&f, sys, 13));
    T_EQ(softgpu_alloc_state(f.a, dq).content_lost, 1);
    T_CHECK(holds(&f, dq, 0));

    /* Page tables were rebuilt: virtual work of the innocent runs, sees
     * the restored and kept bytes, and nothing faults. */
    cb.size = 0;
    T_ST(softgpu_cmd_checksum(&cb, vclean, 1 * MIB, vrr), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, vsys, 256 * KIB, vrr + 8), VIDMM_OK);
    vidmm_handle lr2[] = { cr, rr };
    softgpu_make_resident(f.a, r.dev, r.queue, lr2, 2);
    uint64_t fr = submit(&f, &r, cr, vcr, &cb);
    T_ST(vidmm_context_wait(f.a, r.ctx, fr, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, rr, 0), softgpu_pattern_sum(1 * MIB, 11));
    T_EQ_U64(softgpu_cpu_read64(f.a, rr, 8), softgpu_pattern_sum(256 * KIB, 13));
    cb.size = 0;
    T_ST(softgpu_cmd_checksum(&cb, vdq, 1 * MIB, vrq), VIDMM_OK);
    fq = submit(&f, &q, cq, vcq, &cb);
    T_ST(vidmm_context_wait(f.a, q.ctx, fq, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, rq, 0), softgpu_pattern_sum(1 * MIB, 0));
    T_EQ(dev_info(&f, q.dev).lost, 0);
    T_EQ(dev_info(&f, r.dev).lost, 0);
    struct softgpu_stats ss;
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.command_faults, 0);
    tx_close(&f);
}

static void adapter_reset_async(void) { adapter_reset_case(0); }
static void adapter_reset_sync(void) { adapter_reset_case(1); }

/* The driver refuses the adapter reset a paging hang asks for: the
 * adapter is removed (D94).  Every device is lost, and the CPU gets no
 * pointer into its segments any more - not even for an allocation it had
 * locked before (a driver that could not reset may have let its memory
 * go with the device); unlock and close still work. */
static void reset_refused_removes_adapter(void)
{
    struct tx f;
    if (tx_open(&f, 1, 0, 0, 0))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle x = new_alloc(&f, SET12, 1 * MIB, 31);
    vidmm_handle y = new_alloc(&f, SET12, 1 * MIB, 33);
    softgpu_make_resident(f.a, p.dev, p.queue, &x, 1);
    void *before = NULL;
    T_ST(vidmm_allocation_lock(f.a, x, &before), VIDMM_OK);
    T_CHECK(before != NULL);
    f.fail_reset = 1;
    softgpu_inject_paging_hang(f.sg, 0);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = p.queue;
    mr.allocations = &y;
    mr.count = 1;
    vidmm_status rst = vidmm_make_resident(f.a, p.dev, &mr);
    T_CHECK(rst == VIDMM_PENDING || rst == VIDMM_OK);
    /* The wait finds the hang; the reset is refused: it gives up. */
    T_ST(vidmm_paging_queue_wait(f.a, p.queue, mr.paging_fence_value, UINT64_MAX), VIDMM_E_DEVICE_LOST);
    T_EQ_U64(tdr_stats(&f).adapter_resets, 1);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    void *after = NULL;
    T_ST(vidmm_allocation_lock(f.a, x, &after), VIDMM_E_DEVICE_LOST);
    T_CHECK(after == NULL);   /* a refusal changes nothing */
    T_ST(vidmm_allocation_lock(f.a, y, &after), VIDMM_E_DEVICE_LOST);
    T_ST(vidmm_allocation_unlock(f.a, x), VIDMM_OK);
    tx_close(&f);
}

/* ---- paging hangs ---------------------------------------------------------- */

/* The copy engine hangs inside the paging buffer that restores P's
 * allocation: adapter reset; P's allocation is lost and P's device in
 * error (it owned what the hung paging touched); Q's clean copy is
 * restored and Q goes on. */
static void paging_hang_case(int sync)
{
    struct tx f;
    if (tx_open(&f, sync, 1, 0, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle x = new_alloc(&f, SET12, 2 * MIB, 21);
    vidmm_handle y = new_alloc(&f, SET12, 2 * MIB, 23);
    softgpu_make_resident(f.a, q.dev, q.queue, &y, 1);
    softgpu_inject_paging_hang(f.sg, 0);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = p.queue;
    mr.allocations = &x;
    mr.count = 1;
    vidmm_status rst = vidmm_make_resident(f.a, p.dev, &mr);
    T_CHECK(rst == VIDMM_PENDING || rst == VIDMM_OK);
    T_ST(vidmm_paging_queue_wait(f.a, p.queue, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    if (rst == VIDMM_OK)
        T_ST(vidmm_adapter_detect_hangs(f.a, NULL), VIDMM_OK);
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.paging_hangs, 1);
    T_EQ_U64(s.adapter_resets, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_EQ(softgpu_alloc_state(f.a, x).content_lost, 1);
    T_CHECK(holds(&f, x, 0));
    T_EQ(softgpu_alloc_state(f.a, y).content_lost, 0);
    T_CHECK(holds(&f, y, 23));
    T_EQ(dev_info(&f, p.dev).lost, 1);
    T_EQ(dev_info(&f, p.dev).reset_status, VIDMM_RESET_GUILTY);
    T_EQ(dev_info(&f, q.dev).lost, 0);
    /* The adapter works again: paging runs. */
    vidmm_handle z = new_alloc(&f, SET12, 1 * MIB, 25);
    softgpu_make_resident(f.a, q.dev, q.queue, &z, 1);
    T_CHECK(holds(&f, z, 25));
    tx_close(&f);
}

static void paging_hang_async(void) { paging_hang_case(0); }
static void paging_hang_sync(void) { paging_hang_case(1); }

/* A context hang holds the allocation another process's make-resident
 * must evict: the eviction waits, the hang is reset, the eviction goes
 * on and the content survives (an engine reset does not touch memory). */
static void hang_during_eviction(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t s2 = VIDMM_SEGMENT_BIT(2);
    vidmm_handle cp = new_alloc(&f, s2, 64 * KIB, 0), wp = new_alloc(&f, s2, 64 * KIB, 0);
    vidmm_handle big = new_alloc(&f, s2, 24 * MIB, 31);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    vidmm_handle lp[] = { cp, wp, big };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 3);
    (void)submit_hang(&f, &p, cp, vcp, vwp, 1);
    /* p is done with big (cached, no longer listed): the hung buffer
     * still holds it, so the eviction must wait for the reset. */
    T_ST(vidmm_evict(f.a, p.dev, &(struct vidmm_evict_args){ .allocations = &big, .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    vidmm_handle c = new_alloc(&f, s2, 16 * MIB, 33);
    softgpu_make_resident(f.a, q.dev, q.queue, &c, 1);   /* needs big's room: waits for the hang's reset */
    T_EQ(softgpu_alloc_state(f.a, big).segment_id, 0);
    T_EQ_U64(tdr_stats(&f).engine_resets, 1);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    T_CHECK(holds(&f, big, 31));
    T_CHECK(holds(&f, c, 33));
    tx_close(&f);
}

/* The copy engine hangs on the paging buffer that evicts P's written
 * allocation for Q: adapter reset; what that buffer moved is lost, both
 * owners are put in error (WDDM's rule for a hung paging buffer); the
 * adapter and an unrelated process R go on. */
static void paging_hang_during_eviction(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p, q, r;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &r, SOFTGPU_NODE_COPY, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t s1 = VIDMM_SEGMENT_BIT(1);   /* CPU-visible: written through a lock */
    vidmm_handle big = new_alloc(&f, s1, 12 * MIB, 0);
    vidmm_handle keep = new_alloc(&f, VIDMM_SEGMENT_BIT(3), 128 * KIB, 41);
    softgpu_make_resident(f.a, p.dev, p.queue, &big, 1);
    softgpu_make_resident(f.a, r.dev, r.queue, &keep, 1);
    gv_pattern(f.a, big, 43);   /* CPU-written while resident: the eviction must transfer it */
    /* Cached, not listed: Q's request may take its room. */
    T_ST(vidmm_evict(f.a, p.dev, &(struct vidmm_evict_args){ .allocations = &big, .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    softgpu_inject_paging_hang(f.sg, 0);
    vidmm_handle c = new_alloc(&f, s1, 8 * MIB, 45);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = q.queue;
    mr.allocations = &c;
    mr.count = 1;
    vidmm_status rst = vidmm_make_resident(f.a, q.dev, &mr);
    T_CHECK(rst == VIDMM_PENDING);
    T_ST(vidmm_paging_queue_wait(f.a, q.queue, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(tdr_stats(&f).adapter_resets, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_EQ(softgpu_alloc_state(f.a, big).content_lost, 1);
    T_CHECK(holds(&f, big, 0));
    T_EQ(softgpu_alloc_state(f.a, c).content_lost, 1);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    T_EQ(dev_info(&f, q.dev).lost, 1);
    T_EQ(dev_info(&f, r.dev).lost, 0);
    T_CHECK(holds(&f, keep, 41));
    tx_close(&f);
}

/* Nobody waits: the OS timer's poll finds the hang.  Then the adapter
 * is closed with a node stuck: the close's own wait resets it. */
static void poll_and_close_with_hang(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), wp = new_alloc(&f, SET12, 64 * KIB, 0);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    vidmm_handle lp[] = { cp, wp };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    (void)submit_hang(&f, &p, cp, vcp, vwp, 1);
    int rec = -1;
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 0);   /* not yet: the timeout has not passed */
    struct timespec ts = { 0, 80000000 };
    nanosleep(&ts, NULL);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 1);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    /* Another process hangs; the close (and the context destroy inside
     * it) must not wait forever. */
    struct softgpu_proc q;
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    uint64_t vcq = softgpu_map(f.a, q.proc, cp, 64 * KIB), vwq = softgpu_map(f.a, q.proc, wp, 64 * KIB);
    softgpu_make_resident(f.a, q.dev, q.queue, lp, 2);
    (void)submit_hang(&f, &q, cp, vcq, vwq, 0);
    T_ST(vidmm_context_destroy(f.a, q.ctx), VIDMM_OK);
    T_EQ(dev_info(&f, q.dev).lost, 1);
    tx_close(&f);
}

/* ---- resets below a public entry -------------------------------------------- */

#define TDR_SHORT_NS 2000000ull   /* 2 ms: the hang is found within the entry's own wait */

static vidmm_status evict1(struct tx *f, vidmm_handle dev, vidmm_handle h)
{
    return vidmm_evict(f->a, dev, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 });
}

/* An offered allocation is evicted (or the adapter goes to standby)
 * while the paging engine hangs on the eviction's own buffer.  The hang
 * is found by the eviction's wait; the adapter reset, which frees the
 * allocation's system copies, must not run under the eviction that still
 * holds them: the eviction backs out with VIDMM_E_TIMEOUT, the reset
 * runs as the entry returns, the discarded content reads zero, a
 * bystander's clean copy comes back, and the eviction then succeeds. */
static void offered_evict_across_reset_case(int standby)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, TDR_SHORT_NS), VIDMM_OK);
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    const uint32_t s1 = VIDMM_SEGMENT_BIT(1);   /* CPU-visible */
    vidmm_handle x = new_alloc(&f, s1, 1 * MIB, 71), y = new_alloc(&f, s1, 1 * MIB, 73);
    vidmm_handle l[] = { x, y };
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    T_EQ(softgpu_alloc_state(f.a, x).segment_id, 1);
    T_ST(vidmm_offer(f.a, p.dev, &x, 1, VIDMM_OFFER_LOW), VIDMM_OK);
    softgpu_inject_paging_hang(f.sg, 0);
    if (standby) {
        T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_E_TIMEOUT);
        uint32_t ps = 9;
        T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
        T_EQ(ps, VIDMM_POWER_D0);
    } else {
        T_ST(evict1(&f, p.dev, x), VIDMM_E_TIMEOUT);
    }
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.paging_hangs, 1);
    T_EQ_U64(s.adapter_resets, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_EQ(softgpu_alloc_state(f.a, y).content_lost, 0);
    T_CHECK(holds(&f, y, 73));
    /* The adapter works again: the eviction (or the transition) goes through. */
    if (standby) {
        T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_OK);
        T_EQ(softgpu_checked(f.a, NULL), 0);
        T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);
    } else {
        T_ST(evict1(&f, p.dev, x), VIDMM_OK);
        T_EQ(softgpu_alloc_state(f.a, x).segment_id, 0);
    }
    T_EQ(softgpu_checked(f.a, NULL), 0);
    uint32_t result = 9;
    uint64_t pf = 0;
    vidmm_status rc = vidmm_reclaim(f.a, p.queue, &x, 1, &result, &pf);
    T_CHECK(rc == VIDMM_OK || rc == VIDMM_PENDING);
    T_EQ(result, VIDMM_RECLAIM_DISCARDED);
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    T_CHECK(holds(&f, x, 0));
    T_CHECK(holds(&f, y, 73));
    T_EQ(softgpu_checked(f.a, NULL), 0);
    tx_close(&f);
}

static void offered_evict_across_reset(void) { offered_evict_across_reset_case(0); }
static void offered_standby_across_reset(void) { offered_evict_across_reset_case(1); }

/* A command buffer in video memory (restored from system memory, whose
 * pages stay its backing copy), mapped in a process and used by a
 * submission that has completed, is destroyed while the paging engine
 * hangs.  The reset runs after the destruction, not inside it (where it
 * dropped the backing copy the destruction was releasing): system
 * memory is released once (segment 0's commitment back to its value,
 * the checker clean), and the adapter goes on. */
static void destroy_across_reset(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, TDR_SHORT_NS), VIDMM_OK);
    struct vidmm_segment_info s0;
    T_ST(vidmm_segment_query(f.a, 0, &s0), VIDMM_OK);
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cmd = new_alloc(&f, SET12, 128 * KIB, 0), res = new_alloc(&f, SET12, 64 * KIB, 0);
    uint64_t vc = softgpu_map(f.a, p.proc, cmd, 128 * KIB), vr = softgpu_map(f.a, p.proc, res, 64 * KIB);
    vidmm_handle l[] = { cmd, res };
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, vr, 81), VIDMM_OK);
    uint64_t fence = submit(&f, &p, cmd, vc, &cb);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);
    softgpu_inject_paging_hang(f.sg, 0);
    T_ST(vidmm_allocation_destroy(f.a, cmd), VIDMM_OK);
    T_EQ_U64(tdr_stats(&f).adapter_resets, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(f.a, cmd, &st), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_destroy(f.a, res), VIDMM_OK);
    T_ST(vidmm_process_destroy(f.a, p.proc), VIDMM_OK);
    struct vidmm_segment_info s0b;
    T_ST(vidmm_segment_query(f.a, 0, &s0b), VIDMM_OK);
    T_EQ_U64(s0b.committed, s0.committed);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* The adapter works again. */
    vidmm_handle z = new_alloc(&f, SET12, 1 * MIB, 83);
    T_CHECK(holds(&f, z, 83));
    tx_close(&f);
}

/* A context's engine hangs while a move's copy is queued on the copy
 * engine, which is held (softgpu_engine_hold) until vidmm has confirmed
 * the node hang and then asks about the paging engine.  The pending
 * engine reset stops nothing on the copy engine, so the move's paging
 * wait must not give up on it: it waits for the copy, the move succeeds,
 * and the engine reset runs as the entry returns.  A wait that gave up
 * let the move back out and free its destination's system pages while
 * the copy was still queued to write them (ASan: heap-use-after-free in
 * the copy; the checker: system pages freed under outstanding paging). */
static void context_hang_during_move(void)
{
    struct tx f;
    if (tx_open_q(&f, 0, 1, 0, 0, 2))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), wp = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle big = new_alloc(&f, VIDMM_SEGMENT_BIT(2), 16 * MIB, 91);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    vidmm_handle lp[] = { cp, wp };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    softgpu_make_resident(f.a, q.dev, q.queue, &big, 1);   /* not P's: the hung buffer does not hold it */
    T_EQ(softgpu_alloc_state(f.a, big).segment_id, 2);
    (void)submit_hang(&f, &p, cp, vcp, vwp, 0);
    until_stalled(&f, SOFTGPU_NODE_GRAPHICS);   /* a node runs only while the copy engine is idle */
    softgpu_engine_hold(f.sg, 1);
    f.release_after_node = 1;
    T_ST(vidmm_allocation_move(f.a, big, 0), VIDMM_OK);
    T_EQ(f.node_stuck, 1);   /* the node hang was found during the move's wait */
    T_EQ(f.release_after_node, 0);
    if (f.release_after_node)
        softgpu_engine_hold(f.sg, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_EQ(softgpu_alloc_state(f.a, big).segment_id, 0);
    T_CHECK(holds(&f, big, 91));
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.engine_resets, 1);
    T_EQ_U64(s.adapter_resets, 0);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    T_EQ(dev_info(&f, q.dev).lost, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    tx_close(&f);
}

/* As above, but the copy engine hangs for good on the move's copy
 * (confirmed only after the node, so the order is fixed): the paging
 * engine joins the pending engine reset, which becomes an adapter reset
 * with the node's buffer still guilty; the move's wait gives up only
 * then, the move fails with VIDMM_E_TIMEOUT, and what it freed was
 * never touched (the reset dropped the hung copy). */
static void context_and_paging_hang_during_move(void)
{
    struct tx f;
    if (tx_open_q(&f, 0, 1, 0, 0, 2))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), wp = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle big = new_alloc(&f, VIDMM_SEGMENT_BIT(2), 16 * MIB, 93);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vwp = softgpu_map(f.a, p.proc, wp, 64 * KIB);
    vidmm_handle lp[] = { cp, wp };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    softgpu_make_resident(f.a, q.dev, q.queue, &big, 1);
    (void)submit_hang(&f, &p, cp, vcp, vwp, 0);
    until_stalled(&f, SOFTGPU_NODE_GRAPHICS);
    f.paging_after_node = 1;
    softgpu_inject_paging_hang(f.sg, 0);
    T_ST(vidmm_allocation_move(f.a, big, 0), VIDMM_E_TIMEOUT);
    f.paging_after_node = 0;
    T_EQ(f.node_stuck, 1);
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.hangs, 2);
    T_EQ_U64(s.paging_hangs, 1);
    T_EQ_U64(s.engine_resets, 0);
    T_EQ_U64(s.adapter_resets, 1);
    struct vidmm_device_info di = dev_info(&f, p.dev);
    T_EQ(di.lost, 1);
    T_EQ(di.reset_status, VIDMM_RESET_GUILTY);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_EQ(softgpu_alloc_state(f.a, big).segment_id, 2);   /* backed out: still where it was */
    /* The adapter goes on: the move again, and a fresh allocation's bytes. */
    T_ST(vidmm_allocation_move(f.a, big, 0), VIDMM_OK);
    vidmm_handle z = new_alloc(&f, SET12, 1 * MIB, 95);
    T_CHECK(holds(&f, z, 95));
    T_EQ(softgpu_checked(f.a, NULL), 0);
    tx_close(&f);
}

/* The paging engine hangs while the adapter closes (on the first paging
 * buffer of the teardown): the close resets it and returns, leaking
 * nothing (tx_close checks the allocator). */
static void close_with_paging_hang(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, TDR_SHORT_NS), VIDMM_OK);
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle x = new_alloc(&f, SET12, 1 * MIB, 85);
    (void)softgpu_map(f.a, p.proc, x, 1 * MIB);
    softgpu_make_resident(f.a, p.dev, p.queue, &x, 1);
    softgpu_inject_paging_hang(f.sg, 0);
    tx_close(&f);
}

/* Fresh work after an idle gap longer than the timeout is not hung:
 * the detector saw the engine idle, so the buffer's timeout starts at
 * the first sample that sees it busy.  The buffer waits on a word the
 * CPU writes later; without query_engine_status (nothing to ask) it must
 * not be aborted.  And a hang the driver calls slow is not reported as
 * recovered. */
static void idle_gap_no_false_hang(void)
{
    struct tx f;
    if (tx_open_q(&f, 0, 1, 0, 0, 0))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cp = new_alloc(&f, SET12, 64 * KIB, 0), w = new_alloc(&f, VIDMM_SEGMENT_BIT(1), 64 * KIB, 0);
    uint64_t vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB), vw = softgpu_map(f.a, p.proc, w, 64 * KIB);
    softgpu_make_resident(f.a, p.dev, p.queue, &cp, 1);
    softgpu_make_resident(f.a, q.dev, q.queue, &w, 1);   /* resident through Q: mapped at vw in P */
    /* 200 ms: the released buffer must end well within it even on a
     * loaded machine, as nothing asks the driver before a reset. */
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, 4 * TDR_NS), VIDMM_OK);
    int rec = -1;
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);   /* sees every engine idle */
    T_EQ(rec, 0);
    struct timespec idle = { 0, 250000000 };   /* > the timeout */
    nanosleep(&idle, NULL);
    uint64_t fp = submit_hang(&f, &p, cp, vcp, vw, 1);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 0);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 0);
    /* Release the WAIT as the GPU sees memory (softgpu's lock orders it
     * with the engine's reads). */
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(f.a, p.proc, &root), VIDMM_OK);
    uint64_t one = 1;
    T_ST(softgpu_write_virtual(f.sg, &root, vw, &one, sizeof one), VIDMM_OK);
    T_ST(vidmm_context_wait(f.a, p.ctx, fp, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, w, 16), 2);   /* the write after the WAIT ran */
    T_EQ(dev_info(&f, p.dev).lost, 0);
    struct vidmm_tdr_stats s = tdr_stats(&f);
    T_EQ_U64(s.hangs, 0);
    T_EQ_U64(s.engine_resets + s.adapter_resets, 0);
    tx_close(&f);

    /* The driver says "slow, not stuck": no reset, and none reported. */
    struct timespec gap = { 0, 80000000 };   /* > the 50 ms timeout */
    if (tx_open_q(&f, 0, 1, 0, 0, 2))
        return;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    cp = new_alloc(&f, SET12, 64 * KIB, 0);
    w = new_alloc(&f, SET12, 64 * KIB, 0);
    vcp = softgpu_map(f.a, p.proc, cp, 64 * KIB);
    vw = softgpu_map(f.a, p.proc, w, 64 * KIB);
    vidmm_handle lp[] = { cp, w };
    softgpu_make_resident(f.a, p.dev, p.queue, lp, 2);
    fp = submit_hang(&f, &p, cp, vcp, vw, 0);
    f.responsive = 1;
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    nanosleep(&gap, NULL);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 0);
    T_EQ_U64(tdr_stats(&f).engine_resets, 0);
    T_EQ(dev_info(&f, p.dev).lost, 0);
    f.responsive = 0;
    nanosleep(&gap, NULL);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 1);
    T_EQ_U64(tdr_stats(&f).engine_resets, 1);
    T_EQ(dev_info(&f, p.dev).lost, 1);
    T_ST(vidmm_context_wait(f.a, p.ctx, fp, UINT64_MAX), VIDMM_OK);
    tx_close(&f);
}

static void bad_input(void)
{
    struct tx f;
    if (tx_open(&f, 1, 1, 0, 0))
        return;
    struct vidmm_tdr_stats s;
    T_ST(vidmm_adapter_set_tdr_timeout(NULL, TDR_NS), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, 999999), VIDMM_E_INVALID_ARG);
    T_EQ_U64(tdr_stats(&f).timeout_ns, TDR_NS);
    T_ST(vidmm_adapter_get_tdr_stats(NULL, &s), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_get_tdr_stats(f.a, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_detect_hangs(NULL, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_tdr_timeout(f.a, 0), VIDMM_OK);   /* detection off */
    T_EQ_U64(tdr_stats(&f).timeout_ns, 0);
    T_ST(vidmm_adapter_set_power_state(NULL, VIDMM_POWER_STANDBY), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_power_state(f.a, 3), VIDMM_E_INVALID_ARG);
    uint32_t ps = 9;
    T_ST(vidmm_adapter_get_power_state(NULL, &ps), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_get_power_state(f.a, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
    T_EQ(ps, VIDMM_POWER_D0);
    struct vidmm_power_stats pst;
    T_ST(vidmm_adapter_get_power_stats(NULL, &pst), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_get_power_stats(f.a, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);   /* already there */
    tx_close(&f);
}

/* ---- power ------------------------------------------------------------------ */

static void power_cycle_case(uint32_t state, uint32_t standby_keep, uint32_t hib_keep)
{
    struct tx f;
    if (tx_open(&f, 0, 1, standby_keep, hib_keep))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle a1 = new_alloc(&f, VIDMM_SEGMENT_BIT(1), 2 * MIB, 51);
    vidmm_handle a2 = new_alloc(&f, VIDMM_SEGMENT_BIT(2), 4 * MIB, 53);
    vidmm_handle ap = new_alloc(&f, VIDMM_SEGMENT_BIT(3), 256 * KIB, 55);
    vidmm_handle cmd = new_alloc(&f, SET12, 64 * KIB, 0), res = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle off = new_alloc(&f, VIDMM_SEGMENT_BIT(1), 1 * MIB, 57);
    uint64_t v1 = softgpu_map(f.a, p.proc, a1, 2 * MIB), v2 = softgpu_map(f.a, p.proc, a2, 4 * MIB);
    uint64_t vap = softgpu_map(f.a, p.proc, ap, 256 * KIB);
    uint64_t vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB), vr = softgpu_map(f.a, p.proc, res, 64 * KIB);
    vidmm_handle l[] = { a1, a2, ap, cmd, res, off };
    softgpu_make_resident(f.a, p.dev, p.queue, l, 6);
    gv_pattern(f.a, a2, 59);   /* written while resident: must be transferred, not dropped */
    gv_pattern(f.a, off, 61);  /* no current system copy: offered and dropped, its content goes */
    T_ST(vidmm_offer(f.a, p.dev, &off, 1, VIDMM_OFFER_LOW), VIDMM_OK);
    uint32_t keep = state == VIDMM_POWER_STANDBY ? (standby_keep | hib_keep) : hib_keep;

    /* A locked allocation where content will be lost refuses the
     * transition and changes nothing. */
    void *cpu = NULL;
    vidmm_handle locked = (keep & 4u) ? a1 : a2;
    T_ST(vidmm_allocation_lock(f.a, locked, &cpu), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(f.a, state), VIDMM_E_BUSY);
    T_ST(vidmm_allocation_unlock(f.a, locked), VIDMM_OK);
    struct vidmm_power_stats pst;
    T_ST(vidmm_adapter_get_power_stats(f.a, &pst), VIDMM_OK);
    T_EQ_U64(pst.allocations_saved + pst.allocations_discarded, 0);   /* nothing moved */
    /* A driver refusal leaves the adapter in D0. */
    f.fail_power = 1;
    T_ST(vidmm_adapter_set_power_state(f.a, state), VIDMM_E_DRIVER_FAILURE);
    f.fail_power = 0;
    uint32_t ps = 9;
    T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
    T_EQ(ps, VIDMM_POWER_D0);
    softgpu_make_resident(f.a, p.dev, p.queue, l, 5);   /* what the refused transition evicted comes back */

    T_ST(vidmm_adapter_set_power_state(f.a, state), VIDMM_OK);
    T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
    T_EQ(ps, state);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(f.a, a1, &st), VIDMM_OK);
    T_EQ(st.segment_id, (keep & 2u) ? 1u : 0u);
    T_ST(vidmm_allocation_query(f.a, a2, &st), VIDMM_OK);
    T_EQ(st.segment_id, (keep & 4u) ? 2u : 0u);
    T_ST(vidmm_adapter_get_power_stats(f.a, &pst), VIDMM_OK);
    T_CHECK(pst.allocations_saved >= ((keep & 4u) ? 0u : 1u));
    T_EQ_U64(pst.transitions, 1);
    /* Down: GPU entries refuse, the rest works. */
    uint64_t fence;
    T_ST(vidmm_submit_virtual(f.a, p.ctx, vc, 8, &fence), VIDMM_E_STATE);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = p.queue;
    mr.allocations = l;
    mr.count = 1;
    T_ST(vidmm_make_resident(f.a, p.dev, &mr), VIDMM_E_STATE);
    T_ST(vidmm_allocation_lock(f.a, a1, &cpu), VIDMM_E_STATE);
    T_ST(vidmm_adapter_set_power_state(f.a, state == VIDMM_POWER_STANDBY ? VIDMM_POWER_HIBERNATE
                                                                        : VIDMM_POWER_STANDBY),
         VIDMM_E_STATE);
    vidmm_handle extra = new_alloc(&f, SET12, 64 * KIB, 0);   /* created evicted: allowed */
    T_ST(vidmm_allocation_destroy(f.a, extra), VIDMM_OK);
    struct softgpu_reset_stats rs;
    softgpu_get_reset_stats(f.sg, &rs);
    T_EQ_U64(rs.power_transitions, 1);

    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    softgpu_make_resident(f.a, p.dev, p.queue, l, 5);
    T_CHECK(holds(&f, a1, 51));
    T_CHECK(holds(&f, a2, 59));
    T_CHECK(holds(&f, ap, 55));
    /* Through the GPU too: page tables were rebuilt after resume. */
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_checksum(&cb, v1, 2 * MIB, vr), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, v2, 4 * MIB, vr + 8), VIDMM_OK);
    T_ST(softgpu_cmd_checksum(&cb, vap, 256 * KIB, vr + 16), VIDMM_OK);
    uint64_t fr = submit(&f, &p, cmd, vc, &cb);
    T_ST(vidmm_context_wait(f.a, p.ctx, fr, UINT64_MAX), VIDMM_OK);
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 0), softgpu_pattern_sum(2 * MIB, 51));
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 8), softgpu_pattern_sum(4 * MIB, 59));
    T_EQ_U64(softgpu_cpu_read64(f.a, res, 16), softgpu_pattern_sum(256 * KIB, 55));
    T_EQ(dev_info(&f, p.dev).lost, 0);
    uint32_t result = 9;
    uint64_t pf = 0;
    vidmm_status rc = vidmm_reclaim(f.a, p.queue, &off, 1, &result, &pf);
    T_CHECK(rc == VIDMM_OK || rc == VIDMM_PENDING);
    /* Offered, without a current system copy, and evicted going down: dropped. */
    T_EQ(result, (keep & 2u) ? VIDMM_RECLAIM_OK : VIDMM_RECLAIM_DISCARDED);
    tx_close(&f);
}

static void power_standby(void) { power_cycle_case(VIDMM_POWER_STANDBY, 0, 0); }
static void power_hibernate(void) { power_cycle_case(VIDMM_POWER_HIBERNATE, 0, 0); }
static void power_standby_preserved(void) { power_cycle_case(VIDMM_POWER_STANDBY, 1u << 1, 0); }
static void power_hibernate_preserved(void) { power_cycle_case(VIDMM_POWER_HIBERNATE, 1u << 1, 1u << 2); }

/* While down, every entry that would hand work to the GPU answers
 * VIDMM_E_STATE and changes nothing: no paging buffer reaches the
 * driver, every allocation stays where it was.  After resume the same
 * calls work and the bytes are intact. */
static void power_down_refuses_gpu_work(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle sys = new_alloc(&f, VIDMM_SEGMENT_BIT(3) | SET12, 256 * KIB, 93);   /* stays in system memory while down */
    vidmm_handle mem = new_alloc(&f, SET12, 1 * MIB, 95);
    vidmm_handle other = new_alloc(&f, SET12, 64 * KIB, 0);
    vidmm_handle prim = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_PRIMARY, SET12, 1 * MIB, 97, 0);
    uint64_t vmem = softgpu_map(f.a, p.proc, mem, 1 * MIB);
    T_ST(vidmm_allocation_move(f.a, sys, 3), VIDMM_E_STATE);   /* evicted: not yet */
    vidmm_handle l[] = { sys, mem };
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    T_ST(vidmm_allocation_move(f.a, sys, 3), VIDMM_OK);
    T_EQ(softgpu_alloc_state(f.a, sys).segment_id, 0);   /* the aperture without AccessedPhysically: system pages */
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_OK);
    T_EQ(softgpu_alloc_state(f.a, mem).segment_id, 0);
    T_EQ(softgpu_alloc_state(f.a, sys).segment_id, 0);   /* the aperture without AccessedPhysically: system pages */

    struct vidmm_adapter_info before, after;
    T_ST(vidmm_adapter_query_info(f.a, &before), VIDMM_OK);
    struct softgpu_stats sb, sa;
    softgpu_get_stats(f.sg, &sb);
    T_ST(vidmm_allocation_move(f.a, sys, 1), VIDMM_E_STATE);
    T_ST(vidmm_allocation_move(f.a, sys, 0), VIDMM_E_STATE);
    T_ST(vidmm_allocation_move_discard(f.a, sys, 2), VIDMM_E_STATE);
    T_ST(vidmm_adapter_flip(f.a, 0, prim), VIDMM_E_STATE);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, p.proc, 0, 0, 0, other, 0, 64 * KIB, 0, 0,
                         &va),
         VIDMM_E_STATE);
    T_ST(vidmm_gpuva_unmap(f.a, p.proc, vmem, 1 * MIB), VIDMM_E_STATE);
    T_ST(vidmm_gpuva_free(f.a, p.proc, vmem, 1 * MIB), VIDMM_E_STATE);
    vidmm_handle proc2 = 0, ctx2 = 0;
    T_ST(vidmm_process_create(f.a, &proc2), VIDMM_E_STATE);
    struct vidmm_context_desc cd;
    memset(&cd, 0, sizeof(cd));
    cd.node = SOFTGPU_NODE_COMPUTE;
    cd.mode = VIDMM_CONTEXT_VIRTUAL;
    T_ST(vidmm_context_create(f.a, p.dev, &cd, &ctx2), VIDMM_E_STATE);
    T_ST(evict1(&f, p.dev, sys), VIDMM_E_STATE);
    uint32_t result = 9;
    uint64_t pf = 0;
    T_ST(vidmm_reclaim(f.a, p.queue, &sys, 1, &result, &pf), VIDMM_E_STATE);
    T_ST(vidmm_adapter_query_info(f.a, &after), VIDMM_OK);
    softgpu_get_stats(f.sg, &sa);
    T_EQ_U64(after.paging_buffers_submitted, before.paging_buffers_submitted);
    T_EQ_U64(sa.paging_buffers, sb.paging_buffers);
    T_EQ(softgpu_alloc_state(f.a, sys).segment_id, 0);   /* the aperture without AccessedPhysically: system pages */
    T_EQ(softgpu_alloc_state(f.a, mem).segment_id, 0);
    T_EQ(softgpu_alloc_state(f.a, prim).displayed, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, sys, 1), VIDMM_OK);
    T_CHECK(holds(&f, sys, 93));
    T_EQ(softgpu_alloc_state(f.a, sys).content_lost, 0);
    softgpu_make_resident(f.a, p.dev, p.queue, &mem, 1);
    T_CHECK(holds(&f, mem, 95));
    T_ST(vidmm_gpuva_unmap(f.a, p.proc, vmem, 1 * MIB), VIDMM_OK);
    T_ST(vidmm_process_create(f.a, &proc2), VIDMM_OK);
    T_ST(vidmm_process_destroy(f.a, proc2), VIDMM_OK);
    T_EQ_U64(tdr_stats(&f).adapter_resets, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    tx_close(&f);
}

/* A primary shown from a memory segment that loses its content refuses
 * the transition (as a lock there does) and nothing changes; blanked,
 * the adapter goes down and back, and the primary is shown again with
 * its bytes. */
static void power_displayed_primary(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    vidmm_handle prim = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_PRIMARY, SET12, 1 * MIB, 97, 0);
    T_ST(vidmm_adapter_flip(f.a, 0, prim), VIDMM_OK);
    uint32_t seg = softgpu_alloc_state(f.a, prim).segment_id;
    T_CHECK(seg == 1 || seg == 2);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_E_BUSY);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_HIBERNATE), VIDMM_E_BUSY);
    uint32_t ps = 9;
    T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
    T_EQ(ps, VIDMM_POWER_D0);
    struct vidmm_power_stats pst;
    T_ST(vidmm_adapter_get_power_stats(f.a, &pst), VIDMM_OK);
    T_EQ_U64(pst.transitions + pst.allocations_saved + pst.allocations_discarded, 0);
    T_EQ(softgpu_alloc_state(f.a, prim).segment_id, seg);
    T_EQ(softgpu_alloc_state(f.a, prim).displayed, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Blank, go down, come back, show it again. */
    T_ST(vidmm_adapter_flip(f.a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);
    T_ST(vidmm_adapter_flip(f.a, 0, prim), VIDMM_OK);
    T_EQ(softgpu_alloc_state(f.a, prim).displayed, 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_CHECK(holds(&f, prim, 97));
    tx_close(&f);
}

/* An allocation restored from system memory keeps that copy; the GPU
 * then writes it.  Going down must transfer it, not fall back on the
 * stale copy: after resume the GPU's bytes are there. */
static void power_keeps_gpu_writes(void)
{
    struct tx f;
    if (tx_open(&f, 0, 1, 0, 0))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle cmd = new_alloc(&f, SET12, 64 * KIB, 0), x = new_alloc(&f, SET12, 64 * KIB, 99);
    uint64_t vc = softgpu_map(f.a, p.proc, cmd, 64 * KIB), vx = softgpu_map(f.a, p.proc, x, 64 * KIB);
    vidmm_handle l[] = { cmd, x };
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, vx + 8, 0x1234), VIDMM_OK);
    uint64_t fence = submit(&f, &p, cmd, vc, &cb);
    T_ST(vidmm_context_wait(f.a, p.ctx, fence, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_STANDBY), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);
    softgpu_make_resident(f.a, p.dev, p.queue, l, 2);
    T_EQ_U64(softgpu_cpu_read64(f.a, x, 8), 0x1234);
    uint64_t s = 99;
    T_EQ_U64(softgpu_cpu_read64(f.a, x, 0), t_rand(&s));   /* the rest is the CPU's pattern */
    T_EQ(softgpu_checked(f.a, NULL), 0);
    tx_close(&f);
}

void suite_tdr(void);
void suite_tdr(void)
{
    t_run("tdr.engine_reset_async", engine_reset_async);
    t_run("tdr.engine_reset_sync", engine_reset_sync);
    t_run("tdr.hang_before_work", hang_before_work);
    t_run("tdr.hang_before_work_sync", hang_before_work_sync);
    t_run("tdr.fault_before_work", fault_before_work);
    t_run("tdr.adapter_reset_async", adapter_reset_async);
    t_run("tdr.adapter_reset_sync", adapter_reset_sync);
    t_run("tdr.paging_hang_async", paging_hang_async);
    t_run("tdr.paging_hang_sync", paging_hang_sync);
    t_run("tdr.hang_during_eviction", hang_during_eviction);
    t_run("tdr.paging_hang_during_eviction", paging_hang_during_eviction);
    t_run("tdr.poll_and_close_with_hang", poll_and_close_with_hang);
    t_run("tdr.offered_evict_across_reset", offered_evict_across_reset);
    t_run("tdr.offered_standby_across_reset", offered_standby_across_reset);
    t_run("tdr.destroy_across_reset", destroy_across_reset);
    t_run("tdr.context_hang_during_move", context_hang_during_move);
    t_run("tdr.context_and_paging_hang_during_move", context_and_paging_hang_during_move);
    t_run("tdr.close_with_paging_hang", close_with_paging_hang);
    t_run("tdr.idle_gap_no_false_hang", idle_gap_no_false_hang);
    t_run("tdr.bad_input", bad_input);
    t_run("power.standby", power_standby);
    t_run("power.hibernate", power_hibernate);
    t_run("power.standby_preserved", power_standby_preserved);
    t_run("power.hibernate_preserved", power_hibernate_preserved);
    t_run("power.down_refuses_gpu_work", power_down_refuses_gpu_work);
    t_run("power.displayed_primary", power_displayed_primary);
    t_run("power.keeps_gpu_writes", power_keeps_gpu_writes);
    t_run("tdr.reset_refused_removes_adapter", reset_refused_removes_adapter);
}
