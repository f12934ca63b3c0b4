/*
 * physbuf_test.c - physical-mode command buffers known exactly, adapter
 * wide (src/submit/physbuf.c): VIDMM_E_BUSY while a buffer's submission
 * has not finished, whatever number of buffers followed it and whichever
 * context or process submits it again; VIDMM_SUBMIT_REUSED keeping a
 * patch only when the buffer was last patched for the same context,
 * allocation and address, so no context's work reaches another's
 * allocation; moves re-patched; out of host memory changing nothing.
 *
 * Ordering is held by the GPU, not by timing: a held buffer starts with a
 * WAIT on a gate word of an allocation the test writes through softgpu
 * when it lets the work go, so everything queued behind it on its node is
 * in flight until then (the TDR timeout is turned off).  Results are read
 * back from device memory with softgpu_read_physical, and both checkers
 * (vidmm_adapter_check, softgpu_check) run after the steps.
 */
#include "iso_common.h"
#include "softgpu_fixture.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <string.h>

#define WAIT_NS 30000000000ull   /* 30 s: generous for sanitizers, never reached when all is well */
#define ASIZE (64 * KIB)
#define VALUE 0x1111222233334444ull

/* Where the GPU reaches h now (a memory segment or the aperture). */
static void gpu_place(struct iso_fx *f, vidmm_handle h, uint32_t *seg, uint64_t *off)
{
    struct vidmm_physical_range r;
    uint32_t n = 0;
    memset(&r, 0, sizeof r);
    T_ST(vidmm_allocation_physical_ranges(f->a, h, &r, 1, &n), VIDMM_OK);
    T_EQ(n, 1);
    *seg = r.segment_id;
    *off = r.offset;
}

static uint64_t gpu_read64(struct iso_fx *f, vidmm_handle h, uint64_t at)
{
    uint32_t seg = 0;
    uint64_t off = 0, v = 0;
    gpu_place(f, h, &seg, &off);
    T_ST(softgpu_read_physical(f->sg, seg, off + at, &v, 8), VIDMM_OK);
    return v;
}

static void gpu_write64(struct iso_fx *f, vidmm_handle h, uint64_t at, uint64_t v)
{
    uint32_t seg = 0;
    uint64_t off = 0;
    gpu_place(f, h, &seg, &off);
    T_ST(softgpu_write_physical(f->sg, seg, off + at, &v, 8), VIDMM_OK);
}

/* An AccessedPhysically allocation of p, resident, its first words zero. */
static vidmm_handle pb_alloc(struct iso_fx *f, struct iso_proc *p)
{
    vidmm_handle h = iso_palloc(f, p, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(f->ap), ASIZE, 1, 1, 1, VIDMM_OK);
    for (uint64_t at = 0; h && at < 4096; at += 8)
        gpu_write64(f, h, at, 0);
    return h;
}

/* A buffer under construction: its commands and patch locations. */
struct pbuf {
    uint8_t *mem;
    struct softgpu_cmdbuf cb;
    struct vidmm_patch_location pl[8];
    uint32_t npl;
};

static void pbuf_init(struct pbuf *b, uint8_t *mem, uint32_t cap)
{
    memset(b, 0, sizeof *b);
    b->mem = mem;
    b->cb = (struct softgpu_cmdbuf){ mem, 0, cap };
}

/* WAIT until the word at allocation-list entry k's offset 0 is >= 1. */
static void pbuf_wait(struct pbuf *b, uint32_t k)
{
    uint32_t at = b->cb.size;
    T_ST(softgpu_cmd_wait(&b->cb, 0, 1), VIDMM_OK);
    b->pl[b->npl++] = (struct vidmm_patch_location){ k, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
}

/* WRITE64 v at allocation-list entry k's offset off. */
static void pbuf_write(struct pbuf *b, uint32_t k, uint32_t off, uint64_t v)
{
    uint32_t at = b->cb.size;
    T_ST(softgpu_cmd_write64(&b->cb, 0, v), VIDMM_OK);
    b->pl[b->npl++] = (struct vidmm_patch_location){ k, 0, 0, off, at + SOFTGPU_CMD_OPERAND(0), 0 };
}

/* Submit b on ctx with the allocation list h[0..n) (all written). */
static vidmm_status pb_submit(struct iso_fx *f, vidmm_handle ctx, const struct pbuf *b, const vidmm_handle *h,
                              uint32_t n, uint32_t flags, uint64_t *fence, uint32_t *patched)
{
    struct vidmm_submit_allocation al[8];
    memset(al, 0, sizeof al);
    for (uint32_t i = 0; i < n && i < 8; i++) {
        al[i].allocation = h[i];
        al[i].flags = VIDMM_SUBMIT_WRITE;
    }
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof pa);
    pa.buffer = b->mem;
    pa.size = b->cb.size;
    pa.allocations = al;
    pa.allocation_count = n;
    pa.patches = b->pl;
    pa.patch_count = b->npl;
    pa.flags = flags;
    vidmm_status st = vidmm_submit_physical(f->a, ctx, &pa);
    if (fence)
        *fence = pa.fence;
    if (patched)
        *patched = pa.patched;
    return st;
}

static void pb_wait(struct iso_fx *f, vidmm_handle ctx, uint64_t fence)
{
    T_ST(vidmm_context_wait(f->a, ctx, fence, WAIT_NS), VIDMM_OK);
}

static uint64_t submitted(struct iso_fx *f, vidmm_handle ctx)
{
    uint64_t s = 0;
    T_ST(vidmm_context_fence(f->a, ctx, &s, NULL), VIDMM_OK);
    return s;
}

static vidmm_handle new_context(struct iso_fx *f, struct iso_proc *p, uint32_t node)
{
    struct vidmm_context_desc cd = { node, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    vidmm_handle c = 0;
    T_ST(vidmm_context_create(f->a, p->dev, &cd, &c), VIDMM_OK);
    return c;
}

/* Asynchronous engines (sync = 0) for the holds, no hang detection. */
static int pb_open(struct iso_fx *f, int sync)
{
    if (iso_open(f, "dgpu", 0, 0, sync))
        return -1;
    T_ST(vidmm_adapter_set_tdr_timeout(f->a, 0), VIDMM_OK);
    return 0;
}

/* ---- BUSY --------------------------------------------------------------- */

/* A held buffer, then `others` buffers on the same context (a softgpu
 * node queues 64; the old per-context cache of 4 forgot the held one
 * after 4): the held buffer and every other one are BUSY until the gate
 * opens, then each wrote its own word. */
static void busy_after_others(uint32_t others)
{
    struct iso_fx f;
    if (pb_open(&f, 0))
        return;
    struct iso_proc p;
    iso_new_proc(&f, &p);
    vidmm_handle gate = pb_alloc(&f, &p), out = pb_alloc(&f, &p);
    vidmm_handle hl[2] = { gate, out };
    static uint8_t hmem[64], omem[62][32];
    struct pbuf held, other[62];
    pbuf_init(&held, hmem, sizeof hmem);
    pbuf_wait(&held, 0);
    pbuf_write(&held, 1, 0, VALUE);
    uint64_t fence = 0, last = 0;
    T_ST(pb_submit(&f, p.pctx, &held, hl, 2, 0, &fence, NULL), VIDMM_OK);
    for (uint32_t i = 0; i < others && i < 62; i++) {
        pbuf_init(&other[i], omem[i], sizeof omem[i]);
        pbuf_write(&other[i], 0, 8 * (i + 1), i + 1);
        T_ST(pb_submit(&f, p.pctx, &other[i], &out, 1, 0, &last, NULL), VIDMM_OK);
    }
    /* Stop at the first that gets through: on a full queue the next
     * would wait for room behind the held buffer. */
    vidmm_status st = pb_submit(&f, p.pctx, &held, hl, 2, 0, NULL, NULL);
    T_ST(st, VIDMM_E_BUSY);
    if (st == VIDMM_E_BUSY) {
        st = pb_submit(&f, p.pctx, &held, hl, 2, VIDMM_SUBMIT_REUSED, NULL, NULL);
        T_ST(st, VIDMM_E_BUSY);
    }
    for (uint32_t i = 0; st == VIDMM_E_BUSY && i < others && i < 62; i++) {
        st = pb_submit(&f, p.pctx, &other[i], &out, 1, VIDMM_SUBMIT_REUSED, NULL, NULL);
        T_ST(st, VIDMM_E_BUSY);
    }
    T_EQ_U64(submitted(&f, p.pctx), 1 + others);   /* nothing more reached the driver */
    T_EQ_U64(gpu_read64(&f, out, 0), 0);           /* nothing ran */
    T_EQ(iso_checked(&f), 0);
    gpu_write64(&f, gate, 0, 1);
    pb_wait(&f, p.pctx, others ? last : fence);
    T_EQ_U64(gpu_read64(&f, out, 0), VALUE);
    for (uint32_t i = 0; i < others && i < 62; i++)
        T_EQ_U64(gpu_read64(&f, out, 8 * (i + 1)), i + 1);
    /* Finished: it goes again, unchanged, nothing to patch. */
    gpu_write64(&f, out, 0, 0);
    uint32_t patched = 99;
    T_ST(pb_submit(&f, p.pctx, &held, hl, 2, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    T_EQ(patched, 0);
    pb_wait(&f, p.pctx, fence);
    T_EQ_U64(gpu_read64(&f, out, 0), VALUE);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

static void busy_after_4(void)
{
    busy_after_others(4);
}
static void busy_after_5(void)
{
    busy_after_others(5);
}
/* 62: a full node queue with the held buffer and the resubmission that
 * the old cache let through (which would otherwise block on the queue). */
static void busy_after_62(void)
{
    busy_after_others(62);
}

/* The held buffer of process 1 is BUSY for its second context and for
 * process 2, and so is any buffer overlapping it; adjacent buffers are
 * not.  Process 1's work then writes its own allocation, and process 2's
 * allocation is untouched.  (Before, process 2's submission re-patched
 * the buffer the engine had not run: process 1's work wrote process 2's
 * allocation, and TSan saw the patch race with the engine's reads.) */
static void busy_across_contexts_and_processes(void)
{
    struct iso_fx f;
    if (pb_open(&f, 0))
        return;
    struct iso_proc p1, p2;
    iso_new_proc(&f, &p1);
    iso_new_proc(&f, &p2);
    vidmm_handle c1b = new_context(&f, &p1, SOFTGPU_NODE_COPY);
    vidmm_handle gate1 = pb_alloc(&f, &p1), x1 = pb_alloc(&f, &p1);
    vidmm_handle gate2 = pb_alloc(&f, &p2), y2 = pb_alloc(&f, &p2);
    vidmm_handle l1[2] = { gate1, x1 }, l2[2] = { gate2, y2 };
    /* [0, 32) before | [32, 80) held: WAIT, WRITE64 | [80, 104) after */
    static uint8_t mem[128];
    struct pbuf before, held, tail, after;
    pbuf_init(&before, mem + 8, 24);
    pbuf_write(&before, 0, 8, 2);
    pbuf_init(&held, mem + 32, 48);
    pbuf_wait(&held, 0);
    pbuf_write(&held, 1, 0, VALUE);
    pbuf_init(&tail, mem + 56, 24);   /* the held buffer's WRITE64 alone, as it is */
    tail.cb.size = 24;
    tail.pl[tail.npl++] = (struct vidmm_patch_location){ 0, 0, 0, 0, SOFTGPU_CMD_OPERAND(0), 0 };
    pbuf_init(&after, mem + 80, 24);
    pbuf_write(&after, 0, 16, 4);
    uint64_t f1 = 0, fb = 0, fa = 0;
    T_ST(pb_submit(&f, p1.pctx, &held, l1, 2, 0, &f1, NULL), VIDMM_OK);
    T_ST(pb_submit(&f, c1b, &held, l1, 2, 0, NULL, NULL), VIDMM_E_BUSY);
    T_ST(pb_submit(&f, c1b, &held, l1, 2, VIDMM_SUBMIT_REUSED, NULL, NULL), VIDMM_E_BUSY);
    T_ST(pb_submit(&f, p2.pctx, &held, l2, 2, 0, NULL, NULL), VIDMM_E_BUSY);
    T_ST(pb_submit(&f, p2.pctx, &held, l2, 2, VIDMM_SUBMIT_REUSED, NULL, NULL), VIDMM_E_BUSY);
    T_ST(pb_submit(&f, p2.pctx, &tail, &y2, 1, 0, NULL, NULL), VIDMM_E_BUSY);
    T_ST(pb_submit(&f, p2.pctx, &before, &y2, 1, 0, &fb, NULL), VIDMM_OK);
    T_ST(pb_submit(&f, p2.pctx, &after, &y2, 1, 0, &fa, NULL), VIDMM_OK);
    T_EQ_U64(submitted(&f, c1b), 0);
    T_EQ_U64(submitted(&f, p2.pctx), 2);
    T_EQ(iso_checked(&f), 0);
    gpu_write64(&f, gate1, 0, 1);
    gpu_write64(&f, gate2, 0, 1);   /* had the buffer been re-pointed, its WAIT would wait here */
    pb_wait(&f, p1.pctx, f1);
    pb_wait(&f, p2.pctx, fa);
    T_EQ_U64(gpu_read64(&f, x1, 0), VALUE);
    T_EQ_U64(gpu_read64(&f, y2, 0), 0);
    T_EQ_U64(gpu_read64(&f, y2, 8), 2);
    T_EQ_U64(gpu_read64(&f, y2, 16), 4);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

/* ---- REUSED --------------------------------------------------------------- */

/* A REUSED submission keeps a patch only when the buffer was last patched
 * for the same context and allocation: never another context's address.
 * (Before, a context's own record said the buffer held its address after
 * another process had re-patched it, and its work wrote the other
 * process's allocation.) */
static void reused_never_reaches_another_context(void)
{
    struct iso_fx f;
    if (pb_open(&f, 1))
        return;
    struct iso_proc p1, p2;
    iso_new_proc(&f, &p1);
    iso_new_proc(&f, &p2);
    vidmm_handle c1b = new_context(&f, &p1, SOFTGPU_NODE_COPY);
    vidmm_handle x1 = pb_alloc(&f, &p1), x1b = pb_alloc(&f, &p1), y2 = pb_alloc(&f, &p2);
    static uint8_t mem[32];
    struct pbuf b;
    pbuf_init(&b, mem, sizeof mem);
    pbuf_write(&b, 0, 0, VALUE);
    uint64_t fence = 0;
    uint32_t patched = 99;
    const uint32_t R = VIDMM_SUBMIT_REUSED;
    /* name, context, allocation, flags, locations patched */
    struct step {
        const char *what;
        vidmm_handle ctx, al;
        uint32_t flags, patched;
    } steps[] = {
        { "process 1, first", p1.pctx, x1, 0, 1 },
        { "process 2 reuses it", p2.pctx, y2, R, 1 },
        { "process 1 again: the buffer holds process 2's address", p1.pctx, x1, R, 1 },
        { "process 1 again: unchanged since its own patch", p1.pctx, x1, R, 0 },
        { "process 1's second context", c1b, x1, R, 1 },
        { "process 1's first context after its second", p1.pctx, x1, R, 1 },
        { "another allocation at the same index", p1.pctx, x1b, R, 1 },
        { "process 2 after process 1", p2.pctx, y2, R, 1 },
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const struct step *s = &steps[i];
        gpu_write64(&f, x1, 0, 0);
        gpu_write64(&f, x1b, 0, 0);
        gpu_write64(&f, y2, 0, 0);
        T_ST(pb_submit(&f, s->ctx, &b, &s->al, 1, s->flags, &fence, &patched), VIDMM_OK);
        pb_wait(&f, s->ctx, fence);
        if (patched != s->patched)
            fprintf(stderr, "  step %zu (%s): %u patched, want %u\n", i, s->what, patched, s->patched);
        T_EQ(patched, s->patched);
        T_EQ_U64(gpu_read64(&f, x1, 0), s->al == x1 ? VALUE : 0);
        T_EQ_U64(gpu_read64(&f, x1b, 0), s->al == x1b ? VALUE : 0);
        T_EQ_U64(gpu_read64(&f, y2, 0), s->al == y2 ? VALUE : 0);
        T_EQ(iso_checked(&f), 0);
    }
    /* The context goes: what it patched is forgotten, the rest stays. */
    T_ST(vidmm_context_destroy(f.a, p2.pctx), VIDMM_OK);
    T_EQ(iso_checked(&f), 0);
    T_ST(pb_submit(&f, p1.pctx, &b, &x1, 1, R, &fence, &patched), VIDMM_OK);
    pb_wait(&f, p1.pctx, fence);
    T_EQ(patched, 1);
    T_EQ_U64(gpu_read64(&f, x1, 0), VALUE);
    iso_close(&f);
}

/* A REUSED buffer after its allocations moved: exactly the moved one's
 * locations are patched again, and the writes land at the new places. */
static void reused_after_moves(void)
{
    struct iso_fx f;
    if (pb_open(&f, 1))
        return;
    struct iso_proc p1, p2;
    iso_new_proc(&f, &p1);
    iso_new_proc(&f, &p2);
    vidmm_handle x = pb_alloc(&f, &p1), z = pb_alloc(&f, &p1);
    vidmm_handle y = pb_alloc(&f, &p2), w = pb_alloc(&f, &p2);
    vidmm_handle l1[2] = { x, z }, l2[2] = { y, w };
    static uint8_t mem[64];
    struct pbuf b;
    pbuf_init(&b, mem, sizeof mem);
    pbuf_write(&b, 0, 16, 0x77);
    pbuf_write(&b, 1, 24, 0x88);
    uint64_t fence = 0;
    uint32_t patched = 99;
    T_ST(pb_submit(&f, p1.pctx, &b, l1, 2, 0, &fence, &patched), VIDMM_OK);
    pb_wait(&f, p1.pctx, fence);
    T_EQ(patched, 2);
    uint32_t seg0 = 0, seg1 = 0;
    uint64_t off0 = 0, off1 = 0;
    gpu_place(&f, x, &seg0, &off0);
    uint32_t to[2] = { f.ap, 1 };   /* to the aperture, then back to memory */
    for (int m = 0; m < 2; m++) {
        gpu_write64(&f, x, 16, 0);
        gpu_write64(&f, z, 24, 0);
        T_ST(vidmm_allocation_move(f.a, x, to[m]), VIDMM_OK);
        gpu_place(&f, x, &seg1, &off1);
        T_CHECK(seg1 != seg0 || off1 != off0);
        T_ST(pb_submit(&f, p1.pctx, &b, l1, 2, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
        pb_wait(&f, p1.pctx, fence);
        T_EQ(patched, 1);
        T_EQ_U64(gpu_read64(&f, x, 16), 0x77);
        T_EQ_U64(gpu_read64(&f, z, 24), 0x88);
        seg0 = seg1;
        off0 = off1;
        T_EQ(iso_checked(&f), 0);
    }
    /* Another process in between: everything is patched, both ways. */
    T_ST(pb_submit(&f, p2.pctx, &b, l2, 2, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    pb_wait(&f, p2.pctx, fence);
    T_EQ(patched, 2);
    T_EQ_U64(gpu_read64(&f, y, 16), 0x77);
    T_EQ_U64(gpu_read64(&f, w, 24), 0x88);
    gpu_write64(&f, x, 16, 0);
    gpu_write64(&f, z, 24, 0);
    gpu_write64(&f, y, 16, 0);
    gpu_write64(&f, w, 24, 0);
    T_ST(vidmm_allocation_move(f.a, z, f.ap), VIDMM_OK);
    T_ST(pb_submit(&f, p1.pctx, &b, l1, 2, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    pb_wait(&f, p1.pctx, fence);
    T_EQ(patched, 2);
    T_EQ_U64(gpu_read64(&f, x, 16), 0x77);
    T_EQ_U64(gpu_read64(&f, z, 24), 0x88);
    T_EQ_U64(gpu_read64(&f, y, 16), 0);
    T_EQ_U64(gpu_read64(&f, w, 24), 0);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

/* ---- many buffers, many contexts ------------------------------------------ */

#define MANY_PROCS 3u
#define MANY_PER_CTX 50u   /* a held buffer and 49 behind it, per node */
#define IDLE_RUN 300u      /* more than the idle buffers kept (256) */

static unsigned site_of(const char *name)
{
    for (unsigned i = 0; i < vidmm_host_alloc_site_count(); i++)
        if (!strcmp(vidmm_host_alloc_site_name(i), name))
            return i;
    T_CHECK(0);
    return 0;
}

/* 150 buffers in flight on three contexts of three processes on three
 * engines: each is BUSY for the next process; then 300 idle ones, of
 * which the table keeps a bounded number. */
static void many_buffers_many_contexts(void)
{
    struct iso_fx f;
    if (pb_open(&f, 0))
        return;
    struct iso_proc p[MANY_PROCS];
    vidmm_handle ctx[MANY_PROCS], gate[MANY_PROCS], out[MANY_PROCS];
    static uint8_t mem[MANY_PROCS][MANY_PER_CTX][64];
    static struct pbuf b[MANY_PROCS][MANY_PER_CTX];
    uint64_t last[MANY_PROCS] = { 0 };
    for (uint32_t i = 0; i < MANY_PROCS; i++) {
        iso_new_proc(&f, &p[i]);
        ctx[i] = new_context(&f, &p[i], i);   /* node i */
        gate[i] = pb_alloc(&f, &p[i]);
        out[i] = pb_alloc(&f, &p[i]);
        for (uint32_t j = 0; j < MANY_PER_CTX; j++) {
            pbuf_init(&b[i][j], mem[i][j], sizeof mem[i][j]);
            if (!j)
                pbuf_wait(&b[i][j], 1);
            pbuf_write(&b[i][j], 0, 8 * j, j + 1);
            vidmm_handle l[2] = { out[i], gate[i] };
            T_ST(pb_submit(&f, ctx[i], &b[i][j], l, 2, 0, &last[i], NULL), VIDMM_OK);
        }
    }
    vidmm_status st = VIDMM_E_BUSY;   /* stop at the first that gets through (it may fill a queue) */
    for (uint32_t i = 0; i < MANY_PROCS && st == VIDMM_E_BUSY; i++) {
        uint32_t o = (i + 1) % MANY_PROCS;
        vidmm_handle l[2] = { out[o], gate[o] };
        for (uint32_t j = 0; j < MANY_PER_CTX && st == VIDMM_E_BUSY; j++) {
            st = pb_submit(&f, ctx[o], &b[i][j], l, 2, VIDMM_SUBMIT_REUSED, NULL, NULL);
            T_ST(st, VIDMM_E_BUSY);
        }
        T_EQ_U64(submitted(&f, ctx[o]), MANY_PER_CTX);
    }
    T_EQ(iso_checked(&f), 0);
    for (uint32_t i = 0; i < MANY_PROCS; i++)
        gpu_write64(&f, gate[i], 0, 1);
    for (uint32_t i = 0; i < MANY_PROCS; i++) {
        pb_wait(&f, ctx[i], last[i]);
        for (uint32_t j = 0; j < MANY_PER_CTX; j++)
            T_EQ_U64(gpu_read64(&f, out[i], 8 * j), j + 1);
    }
    /* Idle buffers beyond the ones kept are forgotten, oldest first: the
     * entries stay bounded, and a forgotten buffer is patched in full. */
    static uint8_t idle_mem[IDLE_RUN][32];
    static struct pbuf idle[IDLE_RUN];
    unsigned entry_site = site_of("submit.physbuf.entry");
    uint64_t fence = 0;
    uint32_t patched = 0;
    for (uint32_t j = 0; j < IDLE_RUN; j++) {
        pbuf_init(&idle[j], idle_mem[j], sizeof idle_mem[j]);
        pbuf_write(&idle[j], 0, 8 * (j % 512), j);
        T_ST(pb_submit(&f, ctx[0], &idle[j], &out[0], 1, 0, &fence, NULL), VIDMM_OK);
        pb_wait(&f, ctx[0], fence);
    }
    T_CHECK(f.fa.site_live[entry_site] <= 257);
    T_ST(pb_submit(&f, ctx[0], &idle[0], &out[0], 1, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    pb_wait(&f, ctx[0], fence);
    T_EQ(patched, 1);
    T_ST(pb_submit(&f, ctx[0], &idle[IDLE_RUN - 1], &out[0], 1, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    pb_wait(&f, ctx[0], fence);
    T_EQ(patched, 0);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

/* ---- out of host memory ------------------------------------------------------ */

/* Refusing the k-th host allocation of a submission, once or from then
 * on, answers VIDMM_E_NO_HOST_MEMORY and changes nothing: no fence, no
 * block left, what the table knew still known. */
static void no_host_memory_changes_nothing(void)
{
    struct iso_fx f;
    if (pb_open(&f, 1))
        return;
    struct iso_proc p;
    iso_new_proc(&f, &p);
    vidmm_handle x = pb_alloc(&f, &p), y = pb_alloc(&f, &p), z = pb_alloc(&f, &p);
    static uint8_t m1[32], m2[96];
    struct pbuf b1, b2;
    pbuf_init(&b1, m1, sizeof m1);
    pbuf_write(&b1, 0, 0, 1);
    pbuf_init(&b2, m2, sizeof m2);
    pbuf_write(&b2, 0, 8, 2);
    pbuf_write(&b2, 1, 16, 3);
    pbuf_write(&b2, 2, 24, 4);
    vidmm_handle l3[3] = { x, y, z };
    uint64_t fence = 0;
    uint32_t patched = 0;
    /* b1 known with a list of one; b2 not known at all. */
    T_ST(pb_submit(&f, p.pctx, &b1, &x, 1, 0, &fence, NULL), VIDMM_OK);
    pb_wait(&f, p.pctx, fence);
    struct {
        struct pbuf *b;
        uint32_t n;
    } cases[] = { { &b2, 3 }, { &b1, 3 } };   /* a new buffer; a known one whose lists must grow */
    for (int c = 0; c < 2; c++)
        for (int forever = 0; forever < 2; forever++) {
            vidmm_status st = VIDMM_E_NO_HOST_MEMORY;
            uint32_t refused = 0;
            for (uint64_t k = 1; st == VIDMM_E_NO_HOST_MEMORY && k < 200; k++) {
                uint64_t sub0 = submitted(&f, p.pctx);
                struct vidmm_submit_stats ss;
                T_ST(vidmm_submit_get_stats(f.a, &ss), VIDMM_OK);   /* retires finished records first */
                int64_t blocks = f.fa.live_blocks;
                fault_alloc_arm(&f.fa, k, forever);
                st = pb_submit(&f, p.pctx, cases[c].b, l3, cases[c].n, 0, &fence, NULL);
                fault_alloc_disarm(&f.fa);
                if (st == VIDMM_E_NO_HOST_MEMORY) {
                    refused++;
                    T_EQ_U64(submitted(&f, p.pctx), sub0);
                    T_EQ(f.fa.live_blocks, blocks);
                    T_EQ(iso_checked(&f), 0);
                }
            }
            T_ST(st, VIDMM_OK);
            T_CHECK(refused > 0);
            pb_wait(&f, p.pctx, fence);
        }
    /* b1's last patch (list of three) is still what the table knows. */
    T_ST(pb_submit(&f, p.pctx, &b1, l3, 3, VIDMM_SUBMIT_REUSED, &fence, &patched), VIDMM_OK);
    pb_wait(&f, p.pctx, fence);
    T_EQ(patched, 0);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

void suite_physbuf(void);
void suite_physbuf(void)
{
    t_run("physbuf.busy_after_4", busy_after_4);
    t_run("physbuf.busy_after_5", busy_after_5);
    t_run("physbuf.busy_after_62", busy_after_62);
    t_run("physbuf.busy_across_contexts_and_processes", busy_across_contexts_and_processes);
    t_run("physbuf.reused_never_reaches_another_context", reused_never_reaches_another_context);
    t_run("physbuf.reused_after_moves", reused_after_moves);
    t_run("physbuf.many_buffers_many_contexts", many_buffers_many_contexts);
    t_run("physbuf.no_host_memory_changes_nothing", no_host_memory_changes_nothing);
}
