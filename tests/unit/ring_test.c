/*
 * ring_test.c - the FIFO ring: wrap rules, exact fullness, bad inputs, the
 * inline-record limit without a host allocator, a differential random test
 * against a chunk bitmap and a host fault sweep.  vidmm_ring_check() after
 * every step.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "seg/ring.h"

#include <string.h>

#define KiB (UINT64_C(1) << 10)

static void basic_wrap(void)
{
    struct vidmm_ring r;
    uint64_t off, o2, sz;
    T_ST(vidmm_ring_init(&r, vidmm_default_host_allocator(), 64 * KiB, 4 * KiB), VIDMM_OK);
    T_EQ(vidmm_ring_check(&r), 0);
    T_ST(vidmm_ring_free_oldest(&r), VIDMM_E_STATE);
    T_ST(vidmm_ring_oldest(&r, &off, &sz), VIDMM_E_STATE);
    T_ST(vidmm_ring_alloc(&r, 20 * KiB, &off), VIDMM_OK);
    T_EQ_U64(off, 0);
    T_ST(vidmm_ring_alloc(&r, 1, &off), VIDMM_OK);   /* rounded to 4 KiB */
    T_EQ_U64(off, 20 * KiB);
    T_ST(vidmm_ring_alloc(&r, 32 * KiB, &off), VIDMM_OK);
    T_EQ_U64(off, 24 * KiB);
    T_EQ(vidmm_ring_check(&r), 0);
    /* 8 KiB left at the end; 12 KiB must wrap but the oldest blocks it. */
    T_ST(vidmm_ring_alloc(&r, 12 * KiB, &off), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ(vidmm_ring_check(&r), 0);
    T_ST(vidmm_ring_oldest(&r, &off, &sz), VIDMM_OK);
    T_EQ_U64(sz, 20 * KiB);
    T_ST(vidmm_ring_free_oldest(&r), VIDMM_OK);
    T_ST(vidmm_ring_alloc(&r, 12 * KiB, &o2), VIDMM_OK);
    T_EQ_U64(o2, 0);                                  /* wrapped, never split */
    T_EQ_U64(vidmm_ring_used(&r), 64 * KiB - 20 * KiB + 12 * KiB);
    T_ST(vidmm_ring_alloc(&r, 8 * KiB, &o2), VIDMM_OK);
    T_EQ_U64(o2, 12 * KiB);
    T_ST(vidmm_ring_alloc(&r, 4 * KiB, &o2), VIDMM_E_NO_SEGMENT_SPACE); /* gap [20K,20K) */
    T_EQ(vidmm_ring_check(&r), 0);
    T_ST(vidmm_ring_alloc(&r, 68 * KiB, &o2), VIDMM_E_TOO_LARGE);
    T_ST(vidmm_ring_alloc(&r, 0, &o2), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_alloc(&r, UINT64_MAX, &o2), VIDMM_E_TOO_LARGE);
    while (r.count) {
        T_ST(vidmm_ring_free_oldest(&r), VIDMM_OK);
        T_EQ(vidmm_ring_check(&r), 0);
    }
    /* Empty again: the whole ring is one contiguous range from 0. */
    T_ST(vidmm_ring_alloc(&r, 64 * KiB, &off), VIDMM_OK);
    T_EQ_U64(off, 0);
    T_ST(vidmm_ring_alloc(&r, 4 * KiB, &off), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ(vidmm_ring_check(&r), 0);
    vidmm_ring_fini(&r);
}

static void bad_inputs_and_inline(void)
{
    struct vidmm_ring r;
    uint64_t off;
    T_ST(vidmm_ring_init(&r, NULL, 0, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_init(&r, NULL, 64 * KiB, 3), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_init(&r, NULL, 64 * KiB, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_init(&r, NULL, 66 * KiB, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_init(NULL, NULL, 64 * KiB, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ring_alloc(&r, 4 * KiB, &off), VIDMM_E_INVALID_ARG); /* after failed init */
    vidmm_ring_fini(&r);
    /* No host allocator: at most VIDMM_RING_INLINE_RECS live. */
    T_ST(vidmm_ring_init(&r, NULL, 1024 * KiB, 4 * KiB), VIDMM_OK);
    for (unsigned i = 0; i < VIDMM_RING_INLINE_RECS; i++)
        T_ST(vidmm_ring_alloc(&r, 4 * KiB, &off), VIDMM_OK);
    T_ST(vidmm_ring_alloc(&r, 4 * KiB, &off), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ(vidmm_ring_check(&r), 0);
    T_ST(vidmm_ring_free_oldest(&r), VIDMM_OK);
    T_ST(vidmm_ring_alloc(&r, 4 * KiB, &off), VIDMM_OK);
    T_EQ(vidmm_ring_check(&r), 0);
    vidmm_ring_fini(&r);
}

/* Random sizes, random retire pace; every answer checked against a
 * bitmap and the FIFO placement rule. */
static void differential(void)
{
    enum { CH = 4096, NCH = 256 };
    static unsigned char used[NCH];
    static uint64_t qoff[NCH + 1], qsz[NCH + 1];
    unsigned qh = 0, qn = 0, nospace = 0, wraps = 0;
    struct vidmm_ring r;
    uint64_t s = t_seed() ^ 0x219;
    memset(used, 0, sizeof used);
    T_ST(vidmm_ring_init(&r, vidmm_default_host_allocator(), NCH * CH, CH), VIDMM_OK);
    unsigned ops = 50000 * t_scale();
    for (unsigned i = 0; i < ops && !t_current_failures(); i++) {
        if (qn && t_rand_range(&s, 100) < 45) {
            uint64_t o, z;
            T_ST(vidmm_ring_oldest(&r, &o, &z), VIDMM_OK);
            T_EQ_U64(o, qoff[qh]);
            T_EQ_U64(z, qsz[qh]);
            for (uint64_t c = qoff[qh] / CH; c < (qoff[qh] + qsz[qh]) / CH; c++)
                used[c] = 0;
            T_ST(vidmm_ring_free_oldest(&r), VIDMM_OK);
            qh = (qh + 1) % (NCH + 1);
            qn--;
        } else {
            uint64_t size = 1 + t_rand_range(&s, t_rand_range(&s, 8) ? 16 * CH : 200 * CH);
            uint64_t ch = (size + CH - 1) / CH;
            /* Where the FIFO rule allows it: right after the newest, or at 0. */
            uint64_t head = qn ? (qoff[(qh + qn - 1) % (NCH + 1)] + qsz[(qh + qn - 1) % (NCH + 1)]) / CH : 0;
            int fits_head = head + ch <= NCH, fits_zero = 1;
            for (uint64_t c = head; fits_head && c < head + ch; c++)
                fits_head = !used[c];
            for (uint64_t c = 0; c < ch && c < NCH; c++)
                fits_zero &= !used[c];
            fits_zero &= ch <= NCH;
            uint64_t off;
            vidmm_status st = vidmm_ring_alloc(&r, size, &off);
            if (st == VIDMM_E_NO_SEGMENT_SPACE) {
                T_CHECK(!fits_head && !fits_zero);
                nospace++;
            } else {
                T_ST(st, VIDMM_OK);
                if (st == VIDMM_OK) {
                    T_CHECK(off / CH == head ? fits_head : (off == 0 && fits_zero && !fits_head));
                    wraps += off == 0 && head != 0;
                    T_EQ_U64(off % CH, 0);
                    for (uint64_t c = off / CH; c < off / CH + ch; c++) {
                        T_CHECK(c < NCH && !used[c]);
                        used[c] = 1;
                    }
                    unsigned t = (qh + qn) % (NCH + 1);
                    qoff[t] = off;
                    qsz[t] = ch * CH;
                    qn++;
                }
            }
        }
        T_EQ(vidmm_ring_check(&r), 0);
        T_EQ(r.count, qn);
    }
    T_CHECK(nospace > 0);
    T_CHECK(wraps > 0);
    vidmm_ring_fini(&r);
}

static void fault_sweep(void)
{
    int done = 0;
    for (uint64_t fail_at = 1; !done && fail_at < 20; fail_at++) {
        struct fault_alloc fa;
        struct vidmm_ring r;
        uint64_t off;
        fault_alloc_init(&fa);
        fa.fail_at = fail_at;
        T_ST(vidmm_ring_init(&r, &fa.ha, 1024 * 4 * KiB, 4 * KiB), VIDMM_OK);
        for (int i = 0; i < 200; i++) {
            uint32_t count = r.count;
            uint64_t used = vidmm_ring_used(&r), head = r.head;
            vidmm_status st = vidmm_ring_alloc(&r, 4 * KiB, &off);
            if (st != VIDMM_OK) {
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                T_EQ(r.count, count);
                T_EQ_U64(vidmm_ring_used(&r), used);
                T_EQ_U64(r.head, head);
            }
            T_EQ(vidmm_ring_check(&r), 0);
        }
        vidmm_ring_fini(&r);
        T_EQ(fa.live_blocks, 0);
        T_EQ(fa.live_bytes, 0);
        done = fa.failures == 0;
    }
    T_CHECK(done);
}

void suite_ring(void);
void suite_ring(void)
{
    t_run("ring.basic_wrap", basic_wrap);
    t_run("ring.bad_inputs_and_inline", bad_inputs_and_inline);
    t_run("ring.differential", differential);
    t_run("ring.fault_sweep", fault_sweep);
}
