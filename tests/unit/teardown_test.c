/*
 * teardown_test.c - destroying processes, devices, contexts and the
 * adapter in the middle of GPU work, on softgpu's
 * asynchronous engines.
 *
 * Each case starts work that is still running when the object goes:
 * make-resident calls that returned VIDMM_PENDING (evictions and
 * restores of allocations larger than the paging process's scratch
 * window, so virtual paging runs in chunks), long COPY / FILL / CHECKSUM
 * command buffers on all three nodes in virtual and physical mode, and
 * allocations whose destruction was deferred because that work uses
 * them.  After each: vidmm_adapter_check() is clean, a bystander
 * process's content is intact, every segment is back to what it was
 * before the first process existed (free bytes and commitment), and at
 * adapter close the fault_alloc host allocator holds no block.  A
 * randomised variant interleaves all of it over a seed (printed;
 * VIDMM_TEST_SEED replays it, VIDMM_TEST_SCALE runs longer).
 *
 * No command waits on a fence that is never signalled (a stalled engine
 * would block context destruction until reset exists).
 */
#include "iso_common.h"
#include "softgpu_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (12 * MIB)          /* larger than the scratch window: chunked virtual paging */
#define NBIG 8u
#define SETMEM (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2))

static int open_dgpu(struct iso_fx *f)
{
    /* 32 + 64 MiB of memory: the paging process's window is 8 MiB (a
     * quarter of the largest segment, halved), so BIG moves in chunks;
     * eight BIG allocations and the bystander over-commit it. */
    uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0, 32 * MIB, 64 * MIB };
    return iso_open_sizes(f, "dgpu", sizes, 0);
}

/* ---- segments back to where they started --------------------------------- */

struct td_base {
    uint32_t n;
    uint64_t free_bytes[VIDMM_MAX_SEGMENTS + 1];
    uint64_t committed[VIDMM_MAX_SEGMENTS + 1];
};

static void base_take(struct iso_fx *f, struct td_base *b)
{
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    b->n = ai.segment_count;
    for (uint32_t i = 0; i < b->n; i++) {
        struct vidmm_segment_info si;
        T_ST(vidmm_segment_query(f->a, i, &si), VIDMM_OK);
        b->free_bytes[i] = si.free_bytes;
        b->committed[i] = si.committed;
    }
}

static void base_expect(struct iso_fx *f, const struct td_base *b)
{
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    T_EQ_U64(ai.live_allocations, 0);
    for (uint32_t i = 0; i < b->n; i++) {
        struct vidmm_segment_info si;
        T_ST(vidmm_segment_query(f->a, i, &si), VIDMM_OK);
        T_EQ_U64(si.free_bytes, b->free_bytes[i]);
        T_EQ_U64(si.committed, b->committed[i]);
        T_EQ_U64(si.allocations, 0);
    }
    struct vidmm_submit_stats ss;
    T_ST(vidmm_submit_get_stats(f->a, &ss), VIDMM_OK);
    T_EQ_U64(ss.in_flight, 0);
    T_EQ_U64(ss.deferred_destroys, ss.deferred_freed);
}

/* ---- a bystander with content ---------------------------------------------- */

#define NV 4u
struct td_bystander {
    struct iso_proc p;
    vidmm_handle h[NV];
    uint64_t sum[NV];
};

static void bystander_start(struct iso_fx *f, struct td_bystander *v, uint64_t seed)
{
    iso_new_proc(f, &v->p);
    for (uint32_t i = 0; i < NV; i++) {
        v->h[i] = iso_palloc(f, &v->p, SETMEM, 4 * MIB, 0, 1, 0, VIDMM_OK);
        iso_mr(f, &v->p, &v->h[i], 1, VIDMM_OK);
        void *c = NULL;
        T_ST(vidmm_device_lock(f->a, v->p.dev, v->h[i], &c), VIDMM_OK);
        uint64_t s = seed + i;
        for (uint64_t k = 0; c && k < 4 * MIB / 8; k++)
            ((uint64_t *)c)[k] = t_rand(&s);
        v->sum[i] = c ? softgpu_checksum(c, 4 * MIB) : 0;
        T_ST(vidmm_device_unlock(f->a, v->p.dev, v->h[i]), VIDMM_OK);
    }
}

/* Its bytes, wherever the others' work pushed them: through its CPU lock
 * and, resident again, through its GPU. */
static void bystander_verify(struct iso_fx *f, struct td_bystander *v)
{
    iso_mr(f, &v->p, v->h, NV, VIDMM_OK);
    for (uint32_t i = 0; i < NV; i++) {
        void *c = NULL;
        T_ST(vidmm_device_lock(f->a, v->p.dev, v->h[i], &c), VIDMM_OK);
        if (c)
            T_EQ_U64(softgpu_checksum(c, 4 * MIB), v->sum[i]);
        T_ST(vidmm_device_unlock(f->a, v->p.dev, v->h[i]), VIDMM_OK);
    }
    T_ST(vidmm_evict(f->a, v->p.dev, &(struct vidmm_evict_args){ .allocations = v->h, .count = NV }), VIDMM_OK);
}

/* ---- the doomed process ------------------------------------------------------ */

struct td_load {
    struct iso_proc p;
    vidmm_handle cctx;          /* a second virtual context, on the compute node */
    vidmm_handle big[NBIG];
    uint64_t va[NBIG];
    vidmm_handle ring[2];       /* AccessedPhysically, for the physical context */
};

static void load_start(struct iso_fx *f, struct td_load *l)
{
    memset(l, 0, sizeof(*l));
    iso_new_proc(f, &l->p);
    struct vidmm_context_desc cd = { SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    T_ST(vidmm_context_create(f->a, l->p.dev, &cd, &l->cctx), VIDMM_OK);
    for (uint32_t i = 0; i < NBIG; i++) {
        l->big[i] = iso_palloc(f, &l->p, SETMEM, BIG, 0, 1, 0, VIDMM_OK);
        l->va[i] = iso_map(f, &l->p, l->big[i], BIG);
    }
    for (uint32_t i = 0; i < 2; i++)
        l->ring[i] = iso_palloc(f, &l->p, SETMEM, 4 * MIB, 1, 1, 0, VIDMM_OK);
}

/* make-resident without waiting: the paging it queued is still running
 * when this returns VIDMM_PENDING. */
static vidmm_status mr_nowait(struct iso_fx *f, vidmm_handle dev, vidmm_handle queue, const vidmm_handle *l,
                              uint32_t n)
{
    return softgpu_make_resident_nowait(f->a, dev, queue, l, n, NULL);
}

/* Long virtual work on the graphics and compute nodes over big[0..3]
 * (copies, fills and checksums, a few hundred MiB), and long physical
 * copies between the rings on the copy node; nothing waited for.
 * Returns the submissions still in flight right after. */
static uint64_t load_submit(struct iso_fx *f, struct td_load *l, int physical)
{
    /* Two virtual buffers in the aux allocation, [0, 16K) and [16K, 32K),
     * both written before either is submitted: a lock of the aux
     * allocation waits for the work that uses it, and both nodes are
     * to run at once. */
    uint8_t buf[4096], buf2[4096];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf }, cb2 = { buf2, 0, sizeof buf2 };
    for (int k = 0; k < 8; k++) {
        T_ST(softgpu_cmd_copy(&cb, l->va[1], l->va[0], BIG), VIDMM_OK);
        T_ST(softgpu_cmd_checksum(&cb, l->va[1], BIG, l->p.aux_va + AUX_RES + 8 * (uint64_t)k), VIDMM_OK);
        T_ST(softgpu_cmd_fill(&cb2, l->va[2], BIG, 0x11110000u | (uint32_t)k), VIDMM_OK);
        T_ST(softgpu_cmd_copy(&cb2, l->va[3], l->va[2], BIG), VIDMM_OK);
    }
    iso_aux_write(f, &l->p, 0, cb.data, cb.size);
    iso_aux_write(f, &l->p, 16 * KIB, cb2.data, cb2.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f->a, l->p.vctx, l->p.aux_va, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_submit_virtual(f->a, l->cctx, l->p.aux_va + 16 * KIB, cb2.size, &fence), VIDMM_OK);
    if (physical) {
        /* The host buffer must outlive the work: a static one, reused
         * only after its previous submission finished (vidmm refuses a
         * busy reused buffer; a fresh patch makes it a new one). */
        static uint8_t pbuf[1024];
        struct softgpu_cmdbuf pc = { pbuf, 0, sizeof pbuf };
        struct vidmm_patch_location pl[32];
        uint32_t np = 0;
        for (int k = 0; k < 12; k++) {
            uint32_t at = pc.size;
            T_ST(softgpu_cmd_copy(&pc, 0, 0, 4 * MIB), VIDMM_OK);
            pl[np++] = (struct vidmm_patch_location){ (uint32_t)(k & 1), 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
            pl[np++] = (struct vidmm_patch_location){ (uint32_t)(~k & 1), 0, 0, 0, at + SOFTGPU_CMD_OPERAND(1), 0 };
        }
        struct vidmm_submit_allocation al[2] = { { l->ring[0], VIDMM_SUBMIT_WRITE, 0 },
                                                 { l->ring[1], VIDMM_SUBMIT_WRITE, 0 } };
        struct vidmm_submit_physical_args pa;
        memset(&pa, 0, sizeof(pa));
        pa.buffer = pbuf;
        pa.size = pc.size;
        pa.allocations = al;
        pa.allocation_count = 2;
        pa.patches = pl;
        pa.patch_count = np;
        T_ST(vidmm_submit_physical(f->a, l->p.pctx, &pa), VIDMM_OK);
    }
    struct vidmm_submit_stats ss;
    T_ST(vidmm_submit_get_stats(f->a, &ss), VIDMM_OK);
    return ss.in_flight;
}

/* Wait for the physical buffer of an earlier load_submit before another
 * one reuses it. */
static void load_quiesce(struct iso_fx *f, struct td_load *l)
{
    uint64_t s = 0, c = 0;
    T_ST(vidmm_context_fence(f->a, l->p.pctx, &s, &c), VIDMM_OK);
    if (s)
        T_ST(vidmm_context_wait(f->a, l->p.pctx, s, UINT64_MAX), VIDMM_OK);
}

static int checked_ok(struct iso_fx *f)
{
    return iso_checked(f) == 0;
}

/* Every case but adapter_with_work: open, note the segments, start the
 * bystander (seeded) ... */
static int case_begin(struct iso_fx *f, struct td_base *base, struct td_bystander *v, uint64_t seed)
{
    if (open_dgpu(f))
        return -1;
    base_take(f, base);
    bystander_start(f, v, seed);
    return 0;
}

/* ... and, the case's processes gone, the bystander intact, the segments
 * back to the base, the adapter clean and nothing leaked. */
static void case_end(struct iso_fx *f, const struct td_base *base, struct td_bystander *v)
{
    bystander_verify(f, v);
    T_ST(vidmm_process_destroy(f->a, v->p.proc), VIDMM_OK);
    base_expect(f, base);
    iso_close(f);
}

/* ---- cases ------------------------------------------------------------------ */

/* Destroy right after make-resident returned PENDING: evictions of the
 * bystander and of the process's own allocations, restores of BIG ones
 * in window-sized chunks, all queued on the copy engine. */
static void pending_paging(void)
{
    struct iso_fx f;
    struct td_base base;
    struct td_bystander v;
    if (case_begin(&f, &base, &v, t_seed()))
        return;
    uint32_t pending = 0;
    for (int round = 0; round < 3; round++) {
        struct td_load l;
        load_start(&f, &l);
        /* Half resident and written, then the other half pushes them out. */
        if (mr_nowait(&f, l.p.dev, l.p.queue, l.big, NBIG / 2) == VIDMM_PENDING)
            pending++;
        /* Cached, not listed: its own later request may push them out
         * (a device never loses its listed allocations to itself). */
        T_ST(vidmm_evict(f.a, l.p.dev, &(struct vidmm_evict_args){ .allocations = l.big, .count = NBIG / 2, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
        if (round > 0 && mr_nowait(&f, l.p.dev, l.p.queue, l.big + NBIG / 2, NBIG / 2) == VIDMM_PENDING)
            pending++;
        if (round == 2) {
            /* ... and the bystander comes back, evicting them. */
            (void)mr_nowait(&f, v.p.dev, v.p.queue, v.h, NV);
            T_ST(vidmm_evict(f.a, v.p.dev, &(struct vidmm_evict_args){ .allocations = v.h, .count = NV, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
        }
        T_ST(vidmm_process_destroy(f.a, l.p.proc), VIDMM_OK);
        T_CHECK(checked_ok(&f));
        for (uint32_t i = 0; i < NBIG; i++)
            T_ST(vidmm_allocation_residency(f.a, l.big[i], &(struct vidmm_residency_state){ 0 }),
                 VIDMM_E_INVALID_HANDLE);
    }
    T_CHECK(pending > 0);   /* the paging really was in flight */
    struct vidmm_residency_stats rs;
    T_ST(vidmm_residency_get_stats(f.a, &rs), VIDMM_OK);
    T_CHECK(rs.evictions > 0);
    struct vidmm_paging_process_info pp;
    T_ST(vidmm_adapter_query_paging_process(f.a, &pp), VIDMM_OK);
    T_CHECK(pp.window_size < BIG);
    T_CHECK(pp.chunks > pp.moves);   /* BIG ones moved in several windows */
    case_end(&f, &base, &v);
}

/* Destroy with long command buffers still running on all three nodes,
 * and with destructions deferred behind them. */
static void running_submissions(void)
{
    struct iso_fx f;
    struct td_base base;
    struct td_bystander v;
    if (case_begin(&f, &base, &v, t_seed() + 1))
        return;
    uint64_t in_flight = 0, deferred = 0;
    for (int round = 0; round < 3; round++) {
        struct td_load l;
        load_start(&f, &l);
        iso_mr(&f, &l.p, l.big, 4, VIDMM_OK);
        in_flight += load_submit(&f, &l, 1);
        if (round == 1) {
            /* Deferred destruction: the work still reads and writes them. */
            T_ST(vidmm_allocation_destroy(f.a, l.big[0]), VIDMM_OK);
            T_ST(vidmm_allocation_destroy(f.a, l.ring[1]), VIDMM_OK);
            struct vidmm_submit_stats ss;
            T_ST(vidmm_submit_get_stats(f.a, &ss), VIDMM_OK);
            deferred += ss.deferred_destroys - ss.deferred_freed;
        }
        if (round == 2) {
            /* A make-resident of the rest queued behind the work, too. */
            (void)mr_nowait(&f, l.p.dev, l.p.queue, l.big + 4, 2);
        }
        T_ST(vidmm_process_destroy(f.a, l.p.proc), VIDMM_OK);
        T_CHECK(checked_ok(&f));
    }
    printf("teardown: %llu submissions in flight at process destroy, %llu destructions deferred\n",
           (unsigned long long)in_flight, (unsigned long long)deferred);
    T_CHECK(in_flight > 0);
    case_end(&f, &base, &v);
}

/* Devices and contexts go in the middle; the process goes on. */
static void devices_and_contexts(void)
{
    struct iso_fx f;
    struct td_base base;
    struct td_bystander v;
    if (case_begin(&f, &base, &v, t_seed() + 2))
        return;
    struct td_load l;
    load_start(&f, &l);
    iso_mr(&f, &l.p, l.big, 4, VIDMM_OK);
    (void)load_submit(&f, &l, 1);
    /* The compute context, mid-buffer. */
    T_ST(vidmm_context_destroy(f.a, l.cctx), VIDMM_OK);
    T_CHECK(checked_ok(&f));
    struct vidmm_context_desc ccd = { SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    T_ST(vidmm_context_create(f.a, l.p.dev, &ccd, &l.cctx), VIDMM_OK);
    /* A second device with its own queue: destroyed with paging pending. */
    vidmm_handle d2 = 0, q2 = 0, c2 = 0;
    T_ST(vidmm_device_create(f.a, l.p.proc, &d2), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(f.a, d2, VIDMM_PAGING_QUEUE_NORMAL, &q2), VIDMM_OK);
    struct vidmm_context_desc cd = { SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    T_ST(vidmm_context_create(f.a, d2, &cd, &c2), VIDMM_OK);
    (void)mr_nowait(&f, d2, q2, l.big + 4, 2);
    T_ST(vidmm_device_destroy(f.a, d2), VIDMM_OK);
    T_ST(vidmm_context_query(f.a, c2, &(struct vidmm_context_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_paging_queue_fence(f.a, q2, &(uint64_t){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_CHECK(checked_ok(&f));
    /* The first device still works: its list, its graphics context. */
    load_quiesce(&f, &l);
    iso_mr(&f, &l.p, l.big, 4, VIDMM_OK);
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_fill(&cb, l.va[0], BIG, 0x5EED5EEDu), VIDMM_OK);
    iso_run_virtual(&f, &l.p, &cb);
    iso_gpu_sums(&f, &l.p, &l.big[0], &l.va[0], 1, BIG, 0, iso_fill_sum(BIG, 0x5EED5EEDu));
    /* Its own device now, mid-work. */
    (void)load_submit(&f, &l, 1);
    T_ST(vidmm_device_destroy(f.a, l.p.dev), VIDMM_OK);
    T_CHECK(checked_ok(&f));
    T_ST(vidmm_process_destroy(f.a, l.p.proc), VIDMM_OK);
    case_end(&f, &base, &v);
}

/* The adapter closes with submissions running and paging pending. */
static void adapter_with_work(void)
{
    struct iso_fx f;
    if (open_dgpu(&f))
        return;
    struct td_bystander v;
    bystander_start(&f, &v, t_seed() + 3);
    struct td_load l;
    load_start(&f, &l);
    iso_mr(&f, &l.p, l.big, 4, VIDMM_OK);
    (void)load_submit(&f, &l, 1);
    (void)mr_nowait(&f, l.p.dev, l.p.queue, l.big + 4, 2);
    T_ST(vidmm_allocation_destroy(f.a, l.big[1]), VIDMM_OK);   /* deferred */
    (void)mr_nowait(&f, v.p.dev, v.p.queue, v.h, NV);
    vidmm_adapter_close(f.a);
    T_EQ(f.fa.live_blocks, 0);
    T_EQ(f.fa.live_bytes, 0);
    softgpu_destroy(f.sg);
}

/* A process that exits holding a CPU lock and showing a primary: its
 * allocations go anyway, the display is blanked, the host aperture
 * window is released. */
static void locked_and_displayed(void)
{
    struct iso_fx f;
    if (open_dgpu(&f))
        return;
    struct td_base base;
    base_take(&f, &base);
    struct iso_proc A;
    iso_new_proc(&f, &A);
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_PRIMARY;
    d.size = 4 * MIB;
    d.cpu_visible = 1;
    vidmm_handle prim = 0;
    T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, VIDMM_CREATE_RESIDENT, &prim), VIDMM_OK);
    T_ST(vidmm_adapter_flip(f.a, 0, prim), VIDMM_OK);
    /* Invisible memory, locked through the CPU host aperture. */
    vidmm_handle tex = iso_palloc(&f, &A, VIDMM_SEGMENT_BIT(2), 1 * MIB, 0, 1, 1, VIDMM_OK);
    void *c = NULL;
    T_ST(vidmm_device_lock(f.a, A.dev, tex, &c), VIDMM_OK);
    T_ST(vidmm_device_lock(f.a, A.dev, tex, &c), VIDMM_OK);   /* nested */
    struct vidmm_segment_info s2;
    T_ST(vidmm_segment_query(f.a, 2, &s2), VIDMM_OK);
    T_CHECK(s2.host_aperture_free < s2.host_aperture_pages);
    T_ST(vidmm_allocation_destroy(f.a, tex), VIDMM_E_BUSY);   /* a live process's lock pins it */
    T_ST(vidmm_process_destroy(f.a, A.proc), VIDMM_OK);
    T_ST(vidmm_allocation_query(f.a, tex, &(struct vidmm_allocation_state){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_query(f.a, prim, &(struct vidmm_allocation_state){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_segment_query(f.a, 2, &s2), VIDMM_OK);
    T_EQ(s2.host_aperture_free, s2.host_aperture_pages);
    T_ST(vidmm_adapter_flip(f.a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);   /* the source was blanked already */
    T_CHECK(checked_ok(&f));
    base_expect(&f, &base);
    iso_close(&f);
}

/* A word at the start of h written through softgpu's memory port: a CPU
 * lock would wait for the GPU work that waits on the word. */
static void word_write(struct iso_fx *f, vidmm_handle h, uint64_t v)
{
    struct vidmm_physical_range r;
    uint32_t n = 0;
    memset(&r, 0, sizeof(r));
    T_ST(vidmm_allocation_physical_ranges(f->a, h, &r, 1, &n), VIDMM_OK);
    T_ST(softgpu_write_physical(f->sg, r.segment_id, r.offset, &v, sizeof v), VIDMM_OK);
}

/* A zombie released in the middle of its creator's teardown.  Private
 * allocations cmd (the aux one), W, Z, X; a buffer on the graphics node
 * waits on a word of W, then fills Z 24 times; Z is destroyed while the
 * buffer holds it (deferred for certain: the buffer cannot pass the WAIT
 * before the word is written); the word is written; the process goes.
 * Its contexts finish the buffer first, so Z is idle when the walk over
 * the private allocations starts (newest first: X, then Z), and the
 * destruction of X releases Z.  The walk must not visit Z again: a
 * double destroy leaked an allocation, underflowed the group usage and
 * destroyed the driver's allocation twice. */
static void zombie_released_by_teardown(void)
{
    struct iso_fx f;
    if (open_dgpu(&f))
        return;
    struct td_base base;
    base_take(&f, &base);
    struct iso_proc p;
    iso_new_proc(&f, &p);
    vidmm_handle w = iso_palloc(&f, &p, SETMEM, 64 * KIB, 1, 1, 0, VIDMM_OK);
    vidmm_handle z = iso_palloc(&f, &p, SETMEM, 4 * MIB, 0, 1, 0, VIDMM_OK);
    vidmm_handle x = iso_palloc(&f, &p, SETMEM, 1 * MIB, 0, 1, 0, VIDMM_OK);
    uint64_t vw = iso_map(&f, &p, w, 64 * KIB), vz = iso_map(&f, &p, z, 4 * MIB);
    vidmm_handle l[] = { w, z, x };
    iso_mr(&f, &p, l, 3, VIDMM_OK);
    uint8_t buf[1024];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_wait(&cb, vw, 1), VIDMM_OK);
    for (uint32_t i = 0; i < 24; i++)
        T_ST(softgpu_cmd_fill(&cb, vz, 4 * MIB, 0x2B000000u | i), VIDMM_OK);
    iso_aux_write(&f, &p, 0, cb.data, cb.size);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(f.a, p.vctx, p.aux_va, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, z), VIDMM_OK);
    struct vidmm_submit_stats ss;
    T_ST(vidmm_submit_get_stats(f.a, &ss), VIDMM_OK);
    T_EQ_U64(ss.deferred_destroys - ss.deferred_freed, 1);   /* Z is a zombie */
    word_write(&f, w, 1);   /* the fills run */
    T_ST(vidmm_process_destroy(f.a, p.proc), VIDMM_OK);
    T_CHECK(checked_ok(&f));
    T_ST(vidmm_allocation_query(f.a, x, &(struct vidmm_allocation_state){ 0 }), VIDMM_E_INVALID_HANDLE);
    base_expect(&f, &base);
    iso_close(&f);
}

/* ---- randomised ------------------------------------------------------------ */

#define RP 3u        /* process slots */
#define RA 8u        /* allocations per process */

struct rnd_proc {
    int live;
    struct iso_proc p;
    vidmm_handle h[RA];
    uint64_t va[RA], size[RA];
    int listed[RA];      /* on the device's residency list: its GPU work may touch it */
};

static void rnd_proc_new(struct iso_fx *f, struct rnd_proc *r)
{
    memset(r, 0, sizeof(*r));
    iso_new_proc(f, &r->p);
    r->live = 1;
}

static void random_once(uint64_t seed)
{
    struct iso_fx f;
    struct td_base base;
    struct td_bystander v;
    if (case_begin(&f, &base, &v, seed))
        return;
    struct rnd_proc rp[RP];
    memset(rp, 0, sizeof(rp));
    uint64_t s = seed;
    for (int step = 0; step < 80; step++) {
        struct rnd_proc *r = &rp[t_rand_range(&s, RP)];
        if (!r->live) {
            rnd_proc_new(&f, r);
            continue;
        }
        uint32_t k = (uint32_t)t_rand_range(&s, RA);
        switch (t_rand_range(&s, 9)) {
        case 0:
        case 1:   /* create (evicted) and map */
            if (!r->h[k]) {
                r->size[k] = (1 + t_rand_range(&s, 4)) * MIB;
                r->h[k] = iso_palloc(&f, &r->p, SETMEM, r->size[k], 0, 1, 0, VIDMM_OK);
                r->listed[k] = 0;
                r->va[k] = r->h[k] ? iso_map(&f, &r->p, r->h[k], r->size[k]) : 0;
            }
            break;
        case 2:
        case 3: { /* make-resident of what it has, not waited for */
            vidmm_handle l[RA];
            uint32_t n = 0;
            for (uint32_t i = 0; i < RA; i++)
                if (r->h[i])
                    l[n++] = r->h[i];
            if (n && mr_nowait(&f, r->p.dev, r->p.queue, l, n) >= 0)
                for (uint32_t i = 0; i < RA; i++)
                    r->listed[i] = r->h[i] != 0;
            break;
        }
        case 4: { /* a long buffer over one allocation, not waited for */
            if (!r->h[k] || !r->listed[k])
                break;   /* an allocation off the list would fault: the device would be lost */
            uint8_t buf[512];
            struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
            for (int j = 0; j < 6; j++) {
                T_ST(softgpu_cmd_fill(&cb, r->va[k], r->size[k], (uint32_t)t_rand(&s)), VIDMM_OK);
                T_ST(softgpu_cmd_checksum(&cb, r->va[k], r->size[k], r->p.aux_va + AUX_RES + 8u * (uint32_t)j),
                     VIDMM_OK);
            }
            /* A buffer of its own in the aux allocation per step: the
             * previous one may still be running. */
            uint64_t off = 8 * KIB * (uint64_t)(step % 16);
            iso_aux_write(&f, &r->p, off, cb.data, cb.size);
            uint64_t fence = 0;
            vidmm_status st = vidmm_submit_virtual(f.a, r->p.vctx, r->p.aux_va + off, cb.size, &fence);
            T_CHECK(st == VIDMM_OK || st == VIDMM_E_NO_SEGMENT_SPACE);
            break;
        }
        case 5:   /* destroy an allocation (deferred while in use) */
            if (r->h[k]) {
                T_ST(vidmm_allocation_destroy(f.a, r->h[k]), VIDMM_OK);
                r->h[k] = 0;
            }
            break;
        case 6: { /* the virtual context goes and comes back */
            T_ST(vidmm_context_destroy(f.a, r->p.vctx), VIDMM_OK);
            struct vidmm_context_desc cd = { (uint32_t)t_rand_range(&s, SOFTGPU_NODES), VIDMM_CONTEXT_VIRTUAL, 0,
                                             0 };
            T_ST(vidmm_context_create(f.a, r->p.dev, &cd, &r->p.vctx), VIDMM_OK);
            break;
        }
        case 7: { /* the device goes, whatever it was doing; a new one takes over */
            T_ST(vidmm_device_destroy(f.a, r->p.dev), VIDMM_OK);
            T_ST(vidmm_device_create(f.a, r->p.proc, &r->p.dev), VIDMM_OK);
            T_ST(vidmm_paging_queue_create(f.a, r->p.dev, VIDMM_PAGING_QUEUE_NORMAL, &r->p.queue), VIDMM_OK);
            struct vidmm_context_desc pd = { SOFTGPU_NODE_COPY, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
            T_ST(vidmm_context_create(f.a, r->p.dev, &pd, &r->p.pctx), VIDMM_OK);
            struct vidmm_context_desc vd = { SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
            T_ST(vidmm_context_create(f.a, r->p.dev, &vd, &r->p.vctx), VIDMM_OK);
            (void)mr_nowait(&f, r->p.dev, r->p.queue, &r->p.aux, 1);
            memset(r->listed, 0, sizeof(r->listed));   /* the old list went with the device */
            break;
        }
        default:  /* the process goes, whatever it was doing */
            T_ST(vidmm_process_destroy(f.a, r->p.proc), VIDMM_OK);
            r->live = 0;
            break;
        }
        for (uint32_t i = 0; i < RP; i++) {   /* no work strayed off its list */
            struct vidmm_device_info di;
            if (rp[i].live && vidmm_device_query(f.a, rp[i].p.dev, &di) == VIDMM_OK)
                T_EQ(di.lost, 0);
        }
        if (!checked_ok(&f)) {
            fprintf(stderr, "teardown random: seed %llu step %d\n", (unsigned long long)seed, step);
            break;
        }
    }
    for (uint32_t i = 0; i < RP; i++)
        if (rp[i].live)
            T_ST(vidmm_process_destroy(f.a, rp[i].p.proc), VIDMM_OK);
    T_CHECK(checked_ok(&f));
    case_end(&f, &base, &v);
}

static void randomised(void)
{
    uint64_t s = t_seed() ^ 0x7EA2D0ull;
    unsigned runs = 2 * t_scale();
    for (unsigned i = 0; i < runs; i++) {
        uint64_t seed = t_rand(&s);
        int before = t_current_failures();
        random_once(seed);
        if (t_current_failures() != before)
            fprintf(stderr, "  teardown random run %u failed (run seed %llu, from VIDMM_TEST_SEED=%llu)\n", i,
                    (unsigned long long)seed, (unsigned long long)t_seed());
    }
}

void suite_teardown(void);
void suite_teardown(void)
{
    t_run("teardown_pending_paging", pending_paging);
    t_run("teardown_running_submissions", running_submissions);
    t_run("teardown_devices_and_contexts", devices_and_contexts);
    t_run("teardown_adapter_with_work", adapter_with_work);
    t_run("teardown_locked_and_displayed", locked_and_displayed);
    t_run("teardown_zombie_released_by_teardown", zombie_released_by_teardown);
    t_run("teardown_randomised", randomised);
}
