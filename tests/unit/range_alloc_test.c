/*
 * range_alloc_test.c - the TLSF range allocator: placement, alignment,
 * exact capacity, bad inputs, a differential random test against a chunk
 * bitmap, and a host-allocation fault sweep.  vidmm_ra_check() runs after
 * every step.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "seg/range_alloc.h"
#include "seg/range_alloc_int.h"

#include <stdlib.h>
#include "ra_layout.h"

#include <stdio.h>
#include <string.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)


static void basic(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off;
    uint32_t a, b, c;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(vidmm_ra_largest_free(&ra), 1 * MiB);
    T_ST(vidmm_ra_alloc(&ra, 1, 0, 0, &off, &a), VIDMM_OK);
    T_EQ_U64(off, 0);
    T_EQ_U64(vidmm_ra_node_size(&ra, a), 4 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 64 * KiB, 0, &off, &b), VIDMM_OK);
    T_EQ_U64(off, 64 * KiB); /* [4K, 64K) stays free as padding */
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_alloc(&ra, 8 * KiB, 0, 0, &off, &c), VIDMM_OK);
    T_EQ_U64(off, 4 * KiB); /* best fit: the padding hole */
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(ra.free_bytes, 1 * MiB - 76 * KiB);
    T_EQ_U64(ra.live_count, 3);
    T_EQ_U64(vidmm_ra_largest_free(&ra), 1 * MiB - 128 * KiB);
    T_ST(vidmm_ra_free(&ra, b), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_free(&ra, a), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_free(&ra, c), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(ra.free_bytes, 1 * MiB);
    T_EQ_U64(vidmm_ra_largest_free(&ra), 1 * MiB);
    vidmm_ra_fini(&ra);
}

/* vidmm_ra_set_topdown_below: requests below the threshold (after
 * rounding to the chunk) come from the high end, the rest from the low
 * end; 0 turns it off again. */
static void topdown_below(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off;
    uint32_t a, b, c, d;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    vidmm_ra_set_topdown_below(&ra, 64 * KiB);
    T_ST(vidmm_ra_alloc(&ra, 60 * KiB + 1, 0, 0, &off, &a), VIDMM_OK); /* 64 KiB after rounding: bottom-up */
    T_EQ_U64(off, 0);
    T_ST(vidmm_ra_alloc(&ra, 60 * KiB, 0, 0, &off, &b), VIDMM_OK);
    T_EQ_U64(off, 1 * MiB - 60 * KiB);
    T_ST(vidmm_ra_alloc(&ra, 8 * KiB, 8 * KiB, 0, &off, &c), VIDMM_OK);
    T_EQ_U64(off, 1 * MiB - 72 * KiB); /* aligned down below b */
    vidmm_ra_set_topdown_below(&ra, 0);
    T_ST(vidmm_ra_alloc(&ra, 8 * KiB, 0, 0, &off, &d), VIDMM_OK);
    T_EQ_U64(off, 64 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    vidmm_ra_fini(&ra);
}

static void topdown_and_at(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off, got;
    uint32_t a, b, c, d;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 12 * KiB, 0, VIDMM_RA_TOPDOWN, &off, &a), VIDMM_OK);
    T_EQ_U64(off, 1 * MiB - 12 * KiB);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 64 * KiB, VIDMM_RA_TOPDOWN, &off, &b), VIDMM_OK);
    T_EQ_U64(off, 1 * MiB - 128 * KiB); /* aligned down below a */
    T_EQ(vidmm_ra_check(&ra), 0);
    /* alloc_at: free, partly used, misaligned, out of range. */
    T_ST(vidmm_ra_alloc_at(&ra, 1 * MiB - 64 * KiB, 8 * KiB, &c), VIDMM_OK);
    T_EQ_U64(vidmm_ra_node_offset(&ra, c), 1 * MiB - 64 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    uint64_t before = ra_layout(&ra);
    T_ST(vidmm_ra_alloc_at(&ra, 1 * MiB - 132 * KiB, 8 * KiB, &d), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_ra_alloc_at(&ra, 4 * KiB + 1, 4 * KiB, &d), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_ra_alloc_at(&ra, 1 * MiB, 4 * KiB, &d), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_ra_alloc_at(&ra, 0, 2 * MiB, &d), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ_U64(ra_layout(&ra), before);
    T_EQ(vidmm_ra_check(&ra), 0);
    /* alloc_largest: the low hole [0, 896K) is the largest. */
    T_ST(vidmm_ra_alloc_largest(&ra, 4 * KiB, 4 * GiB, 0, &off, &got, &d), VIDMM_OK);
    T_EQ_U64(off, 0);
    T_EQ_U64(got, 1 * MiB - 128 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    before = ra_layout(&ra);
    T_ST(vidmm_ra_alloc_largest(&ra, 64 * KiB, 4 * GiB, 0, &off, &got, &c), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ_U64(ra_layout(&ra), before);
    vidmm_ra_fini(&ra);
}

static void bad_inputs(void)
{
    struct vidmm_range_alloc ra;
    const struct vidmm_host_allocator *ha = vidmm_default_host_allocator();
    uint64_t off, got;
    uint32_t n, keep;
    T_ST(vidmm_ra_init(&ra, ha, 0, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(&ra, ha, 1 * MiB, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(&ra, ha, 1 * MiB, 3 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(&ra, ha, 1 * MiB + 1, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(&ra, NULL, 1 * MiB, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(&ra, ha, UINT64_MAX - 4095, 4 * KiB), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_init(NULL, ha, 1 * MiB, 4 * KiB), VIDMM_E_INVALID_ARG);
    vidmm_ra_fini(&ra); /* safe after a failed init */
    T_ST(vidmm_ra_init(&ra, ha, 1 * MiB, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 0, 0, &off, &keep), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 0, 0, &off, &n), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, n), VIDMM_OK);
    uint64_t before = ra_layout(&ra);
    T_ST(vidmm_ra_alloc(&ra, 0, 0, 0, &off, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 3 * KiB, 0, &off, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 0, 0x80, &off, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc(&ra, UINT64_MAX, 0, 0, &off, &n), VIDMM_E_OVERFLOW);
    T_ST(vidmm_ra_alloc(&ra, UINT64_MAX - 4094, 0, 0, &off, &n), VIDMM_E_OVERFLOW);
    T_ST(vidmm_ra_alloc(&ra, 2 * MiB, 0, 0, &off, &n), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 2 * MiB, 0, &off, &n), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, UINT64_C(1) << 63, 0, &off, &n), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_ra_alloc(NULL, 4 * KiB, 0, 0, &off, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 0, 0, NULL, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc_largest(&ra, 8 * KiB, 4 * KiB, 0, &off, &got, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc_largest(&ra, 0, 0, 0, &off, &got, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc_largest(&ra, 4 * KiB, 8 * KiB, 5, &off, &got, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc_largest(&ra, 4 * KiB, UINT64_MAX, 0, &off, &got, &n), VIDMM_E_OVERFLOW);
    T_ST(vidmm_ra_alloc_at(&ra, 0, 0, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_alloc_at(&ra, 0, UINT64_MAX, &n), VIDMM_E_OVERFLOW);
    /* Stale, never allocated, free-range and out-of-range nodes. */
    T_ST(vidmm_ra_free(&ra, n), VIDMM_E_INVALID_HANDLE);        /* freed above: now a slot/free range */
    T_ST(vidmm_ra_free(&ra, 40), VIDMM_E_INVALID_HANDLE);       /* never used slot */
    T_ST(vidmm_ra_free(&ra, 2), VIDMM_E_INVALID_HANDLE);        /* slot released by coalescing */
    T_ST(vidmm_ra_free(&ra, 1u << 30), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_ra_free(&ra, UINT32_MAX), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_ra_free(NULL, keep), VIDMM_E_INVALID_HANDLE);
    T_EQ_U64(ra_layout(&ra), before);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(vidmm_ra_node_size(&ra, 40), 0);
    T_ST(vidmm_ra_free(&ra, keep), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, keep), VIDMM_E_INVALID_HANDLE);     /* double free */
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(ra.free_bytes, 1 * MiB);
    vidmm_ra_fini(&ra);
}

/* Fill to exactly full with chunk-sized, then mixed, allocations. */
static void exact_capacity(void)
{
    struct vidmm_range_alloc ra;
    enum { N = 512 };
    static uint32_t nodes[N];
    uint64_t off, s = t_seed() ^ 0xCA9;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), N * 4 * KiB, 4 * KiB), VIDMM_OK);
    for (int round = 0; round < 2; round++) {
        uint32_t n = 0;
        if (round == 1) /* mixed sizes until the first failure */
            while (n < N && vidmm_ra_alloc(&ra, (1 + t_rand_range(&s, 16)) * 4 * KiB,
                                           (uint64_t)4 * KiB << t_rand_range(&s, 4),
                                           (unsigned)t_rand_range(&s, 2), &off, &nodes[n]) == VIDMM_OK) {
                n++;
                T_EQ(vidmm_ra_check(&ra), 0);
            }
        while (n < N && vidmm_ra_alloc(&ra, 4 * KiB, 0, 0, &off, &nodes[n]) == VIDMM_OK) {
            n++;
            T_EQ(vidmm_ra_check(&ra), 0);
        }
        T_EQ_U64(ra.free_bytes, 0);
        T_EQ_U64(vidmm_ra_largest_free(&ra), 0);
        uint32_t x;
        T_ST(vidmm_ra_alloc(&ra, 4 * KiB, 0, 0, &off, &x), VIDMM_E_NO_SEGMENT_SPACE);
        T_EQ(vidmm_ra_check(&ra), 0);
        for (uint32_t i = n; i > 1; i--) { /* free in random order */
            uint32_t j = (uint32_t)t_rand_range(&s, i), t = nodes[j];
            nodes[j] = nodes[i - 1];
            nodes[i - 1] = t;
        }
        for (uint32_t i = 0; i < n; i++) {
            T_ST(vidmm_ra_free(&ra, nodes[i]), VIDMM_OK);
            T_EQ(vidmm_ra_check(&ra), 0);
        }
        T_EQ_U64(ra.live_count, 0);
        T_ST(vidmm_ra_alloc(&ra, N * 4 * KiB, 0, 0, &off, &x), VIDMM_OK);
        T_EQ_U64(off, 0);
        T_ST(vidmm_ra_free(&ra, x), VIDMM_OK);
        T_EQ(vidmm_ra_check(&ra), 0);
    }
    vidmm_ra_fini(&ra);
}

/* 16 TiB with 4 KiB chunks: offsets far beyond 32 bits. */
static void huge_offsets(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off, got;
    uint32_t a, b, c;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), UINT64_C(1) << 44, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 80 * GiB, 0, VIDMM_RA_TOPDOWN, &off, &a), VIDMM_OK);
    T_EQ_U64(off, (UINT64_C(1) << 44) - 80 * GiB);
    T_ST(vidmm_ra_alloc_at(&ra, UINT64_C(1) << 43, 4 * KiB, &b), VIDMM_OK);
    /* Best fit: the smaller hole above b still holds an aligned 1 GiB. */
    T_ST(vidmm_ra_alloc(&ra, 1 * GiB, UINT64_C(1) << 42, 0, &off, &c), VIDMM_OK);
    T_EQ_U64(off, UINT64_C(3) << 42);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_free(&ra, c), VIDMM_OK);
    T_ST(vidmm_ra_alloc_largest(&ra, 4 * KiB, UINT64_C(1) << 50, 0, &off, &got, &c), VIDMM_OK);
    T_EQ_U64(off, 0);
    T_EQ_U64(got, UINT64_C(1) << 43);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_ra_free(&ra, a), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, b), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, c), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(vidmm_ra_largest_free(&ra), UINT64_C(1) << 44);
    vidmm_ra_fini(&ra);
}

/* ---- differential test against a chunk bitmap ---- */

enum { MCH = 1024 };           /* model chunks */
struct model {
    unsigned char used[MCH];
};

static int m_free_run(const struct model *m, uint64_t c0, uint64_t n)
{
    if (c0 + n > MCH)
        return 0;
    for (uint64_t i = c0; i < c0 + n; i++)
        if (m->used[i])
            return 0;
    return 1;
}

/* Is there an aligned free run of n chunks? */
static int m_can_fit(const struct model *m, uint64_t n, uint64_t achunks)
{
    for (uint64_t c = 0; c + n <= MCH; c += achunks)
        if (m_free_run(m, c, n))
            return 1;
    return 0;
}

/* Largest usable length (whole chunks) after aligning the run's start. */
static uint64_t m_largest(const struct model *m, uint64_t achunks)
{
    uint64_t best = 0;
    for (uint64_t c = 0; c < MCH;) {
        if (m->used[c]) { c++; continue; }
        uint64_t e = c;
        while (e < MCH && !m->used[e])
            e++;
        uint64_t s = (c + achunks - 1) / achunks * achunks;
        if (s < e && e - s > best)
            best = e - s;
        c = e;
    }
    return best;
}

static void m_set(struct model *m, uint64_t c0, uint64_t n, int v)
{
    for (uint64_t i = c0; i < c0 + n; i++) {
        if (m->used[i] == v)
            t_fail(__FILE__, __LINE__, "model: overlap or double free");
        m->used[i] = (unsigned char)v;
    }
}

static void differential_with(uint64_t topdown_below, uint32_t front_reserve)
{
    const uint64_t CH = 4 * KiB;
    struct vidmm_range_alloc ra;
    static struct model m;
    static uint32_t live[MCH];
    uint32_t nlive = 0;
    uint64_t s = t_seed() ^ 0xD1FF;
    memset(&m, 0, sizeof m);
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), MCH * CH, CH), VIDMM_OK);
    vidmm_ra_set_topdown_below(&ra, topdown_below);
    vidmm_ra_set_front_reserve(&ra, front_reserve);
    unsigned ops = 50000 * t_scale();
    unsigned nospace = 0;
    for (unsigned i = 0; i < ops && !t_current_failures(); i++) {
        uint64_t r = t_rand_range(&s, 100);
        int want_free = nlive && (r < 45 || (ra.free_bytes < MCH * CH / 8 && r < 70));
        if (want_free) {
            uint32_t j = (uint32_t)t_rand_range(&s, nlive), n = live[j];
            m_set(&m, vidmm_ra_node_offset(&ra, n) / CH, vidmm_ra_node_size(&ra, n) / CH, 0);
            T_ST(vidmm_ra_free(&ra, n), VIDMM_OK);
            live[j] = live[--nlive];
        } else {
            uint64_t size = t_rand_range(&s, 8) ? 1 + t_rand_range(&s, 16 * CH)
                                                : 1 + t_rand_range(&s, 256 * CH);
            uint64_t chunks = (size + CH - 1) / CH;
            uint64_t align = t_rand_range(&s, 3) ? 0 : CH << t_rand_range(&s, 7);
            uint64_t ach = align > CH ? align / CH : 1;
            uint64_t off, got = 0;
            uint32_t n;
            vidmm_status st;
            unsigned kind = (unsigned)t_rand_range(&s, 10);
            if (kind == 0) {
                uint64_t at = t_rand_range(&s, MCH) * CH;
                ach = 1;
                st = vidmm_ra_alloc_at(&ra, at, size, &n);
                off = at;
                if (st == VIDMM_E_NO_SEGMENT_SPACE)
                    T_CHECK(!m_free_run(&m, at / CH, chunks));
            } else if (kind == 1) {
                uint64_t maxs = chunks * CH * (1 + t_rand_range(&s, 4));
                uint64_t largest = m_largest(&m, ach);
                st = vidmm_ra_alloc_largest(&ra, size, maxs, align, &off, &got, &n);
                if (st == VIDMM_E_NO_SEGMENT_SPACE)
                    T_CHECK(largest < chunks);
                if (st == VIDMM_OK) {
                    T_CHECK(got >= chunks * CH && got <= maxs);
                    if (ach == 1)
                        T_EQ_U64(got, (largest * CH < maxs ? largest * CH : maxs));
                    chunks = got / CH;
                }
            } else {
                unsigned fl = t_rand_range(&s, 3) ? 0 : VIDMM_RA_TOPDOWN;
                st = vidmm_ra_alloc(&ra, size, align, fl, &off, &n);
                if (st == VIDMM_E_NO_SEGMENT_SPACE)
                    T_CHECK(!m_can_fit(&m, chunks, ach)); /* truly impossible */
            }
            if (st == VIDMM_E_NO_SEGMENT_SPACE) {
                nospace++;
            } else {
                T_ST(st, VIDMM_OK);
                if (st == VIDMM_OK) {
                    T_EQ_U64(off % CH, 0);
                    T_EQ_U64(off % (ach * CH), 0);
                    T_CHECK(off / CH + chunks <= MCH);
                    T_EQ_U64(vidmm_ra_node_offset(&ra, n), off);
                    T_EQ_U64(vidmm_ra_node_size(&ra, n), chunks * CH);
                    m_set(&m, off / CH, chunks, 1);
                    live[nlive++] = n;
                }
            }
        }
        T_EQ(vidmm_ra_check(&ra), 0);
        T_EQ_U64(vidmm_ra_largest_free(&ra), m_largest(&m, 1) * CH);
        uint64_t used = 0;
        for (unsigned c = 0; c < MCH; c++)
            used += m.used[c];
        T_EQ_U64(ra.free_bytes, (MCH - used) * CH);
        T_EQ_U64(ra.live_count, nlive);
    }
    T_CHECK(nospace > 0); /* the walk really reached full */
    while (nlive) {
        T_ST(vidmm_ra_free(&ra, live[--nlive]), VIDMM_OK);
    }
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(vidmm_ra_largest_free(&ra), MCH * CH);
    vidmm_ra_fini(&ra);
}

/* Fail host call 1, 2, 3, ... of a scenario that grows node storage. */
static void fault_sweep(void)
{
    int done = 0;
    for (uint64_t fail_at = 1; !done && fail_at < 200; fail_at++) {
        struct fault_alloc fa;
        struct vidmm_range_alloc ra;
        static uint32_t nodes[1200];
        uint32_t n = 0;
        fault_alloc_init(&fa);
        fa.fail_at = fail_at;
        vidmm_status st = vidmm_ra_init(&ra, &fa.ha, 64 * MiB, 4 * KiB);
        if (st != VIDMM_OK) {
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(fa.live_blocks, 0);
            continue;
        }
        T_EQ(vidmm_ra_check(&ra), 0);
        /* Every other chunk: 600 allocations and ~600 free ranges. */
        for (int i = 0; i < 600; i++) {
            uint64_t off, before = ra_layout(&ra);
            uint32_t x;
            st = vidmm_ra_alloc_at(&ra, (uint64_t)i * 8 * KiB, 4 * KiB, &x);
            if (st == VIDMM_OK) {
                nodes[n++] = x;
            } else {
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                T_EQ_U64(ra_layout(&ra), before);
            }
            T_EQ(vidmm_ra_check(&ra), 0);
            before = ra_layout(&ra);
            st = vidmm_ra_alloc(&ra, 4 * KiB, 64 * KiB, VIDMM_RA_TOPDOWN, &off, &x);
            if (st == VIDMM_OK) {
                nodes[n++] = x;
            } else {
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                T_EQ_U64(ra_layout(&ra), before);
            }
            T_EQ(vidmm_ra_check(&ra), 0);
            if (n >= 600)
                break;
        }
        for (uint32_t i = 0; i < n; i++)
            T_ST(vidmm_ra_free(&ra, nodes[i]), VIDMM_OK);
        T_EQ(vidmm_ra_check(&ra), 0);
        T_EQ_U64(ra.free_bytes, 64 * MiB);
        vidmm_ra_fini(&ra);
        T_EQ(fa.live_blocks, 0);
        T_EQ(fa.live_bytes, 0);
        done = fa.failures == 0;
    }
    T_CHECK(done);
}

/* vidmm_ra_node_neighbours: free bytes and live nodes on both sides. */
static void neighbours(void)
{
    struct vidmm_range_alloc ra;
    struct vidmm_ra_neighbours nb;
    uint32_t a, b, c, d;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    /* [0,8K) a | [8K,12K) b | free [12K,32K) | [32K,64K) c | free | [1M-4K,1M) d */
    T_ST(vidmm_ra_alloc_at(&ra, 0, 8 * KiB, &a), VIDMM_OK);
    T_ST(vidmm_ra_alloc_at(&ra, 8 * KiB, 4 * KiB, &b), VIDMM_OK);
    T_ST(vidmm_ra_alloc_at(&ra, 32 * KiB, 32 * KiB, &c), VIDMM_OK);
    T_ST(vidmm_ra_alloc_at(&ra, 1 * MiB - 4 * KiB, 4 * KiB, &d), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    uint64_t before = ra_layout(&ra);

    T_ST(vidmm_ra_node_neighbours(&ra, a, &nb), VIDMM_OK);
    T_EQ_U64(nb.offset, 0);
    T_EQ_U64(nb.size, 8 * KiB);
    T_EQ_U64(nb.free_below, 0);
    T_EQ_U64(nb.free_above, 0);
    T_EQ(nb.live_below, VIDMM_RA_NONE);
    T_EQ(nb.live_above, b);

    T_ST(vidmm_ra_node_neighbours(&ra, b, &nb), VIDMM_OK);
    T_EQ_U64(nb.offset, 8 * KiB);
    T_EQ_U64(nb.free_below, 0);
    T_EQ_U64(nb.free_above, 20 * KiB);
    T_EQ(nb.live_below, a);
    T_EQ(nb.live_above, c);

    T_ST(vidmm_ra_node_neighbours(&ra, c, &nb), VIDMM_OK);
    T_EQ_U64(nb.free_below, 20 * KiB);
    T_EQ_U64(nb.free_above, 1 * MiB - 4 * KiB - 64 * KiB);
    T_EQ(nb.live_below, b);
    T_EQ(nb.live_above, d);

    T_ST(vidmm_ra_node_neighbours(&ra, d, &nb), VIDMM_OK);
    T_EQ_U64(nb.offset, 1 * MiB - 4 * KiB);
    T_EQ_U64(nb.free_above, 0);
    T_EQ(nb.live_above, VIDMM_RA_NONE);
    T_EQ(nb.live_below, c);

    /* Free b: a's free above and c's free below now include it. */
    T_ST(vidmm_ra_free(&ra, b), VIDMM_OK);
    T_ST(vidmm_ra_node_neighbours(&ra, a, &nb), VIDMM_OK);
    T_EQ_U64(nb.free_above, 24 * KiB);
    T_EQ(nb.live_above, c);
    T_ST(vidmm_ra_node_neighbours(&ra, c, &nb), VIDMM_OK);
    T_EQ(nb.live_below, a);
    before = ra_layout(&ra);

    /* Not live: the freed node, an unused slot, out of range; NULLs. */
    T_ST(vidmm_ra_node_neighbours(&ra, b, &nb), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_ra_node_neighbours(&ra, ra.node_cap - 1, &nb), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_ra_node_neighbours(&ra, VIDMM_RA_NONE, &nb), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_ra_node_neighbours(NULL, a, &nb), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_ra_node_neighbours(&ra, a, NULL), VIDMM_E_INVALID_ARG);
    T_EQ_U64(ra_layout(&ra), before); /* read-only */
    T_EQ(vidmm_ra_check(&ra), 0);
    vidmm_ra_fini(&ra);
}

static void differential(void) { differential_with(0, 0); }

/* With the placement options the bench's vidmm_range_split uses (and a
 * reserve of 1 and of many blocks): still never "no space" while a fit
 * exists, the model and the checker agree after every step. */
static void differential_options(void)
{
    differential_with(256 * KiB, 13);
    differential_with(0, 1);
    differential_with(64 * KiB, 1000);
}

/* vidmm_ra_set_front_reserve: the holes among the K live blocks next to
 * the largest free range are taken last. */
static void front_reserve(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off;
    uint32_t n[8], x, y;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 64 * MiB, 4 * KiB), VIDMM_OK);
    /* Live blocks at 0, 1, 2, 3 MiB (1 MiB each) with 64 KiB holes left
     * by freeing their last 64 KiB pieces: lay out 1 MiB - 64 KiB blocks
     * and 64 KiB spacers, then free the spacers. */
    uint32_t spacer[4];
    for (int i = 0; i < 4; i++) {
        T_ST(vidmm_ra_alloc(&ra, MiB - 64 * KiB, 0, 0, &off, &n[i]), VIDMM_OK);
        T_EQ_U64(off, (uint64_t)i * MiB);
        T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &spacer[i]), VIDMM_OK);
    }
    /* The largest free range is [4 MiB, 64 MiB); spacer 3's hole touches
     * it, so free spacers 0 and 2 only: holes at 1 MiB - 64 KiB and
     * 3 MiB - 64 KiB, the second next to the last live block before the
     * largest range. */
    T_ST(vidmm_ra_free(&ra, spacer[0]), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, spacer[2]), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    uint64_t before = ra_layout(&ra);
    /* Off: best fit, the two holes are equal - either one. */
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &x), VIDMM_OK);
    T_CHECK(off == MiB - 64 * KiB || off == 3 * MiB - 64 * KiB);
    T_ST(vidmm_ra_free(&ra, x), VIDMM_OK);
    T_EQ_U64(ra_layout(&ra), before);
    /* A reserve of 3 blocks: the hole at 3 MiB - 64 KiB lies among the
     * three live blocks next to the largest range (spacer 3, block 3,
     * block 2 going down); the one at 1 MiB - 64 KiB does not.  Every
     * time, in whatever order the bins hold them. */
    vidmm_ra_set_front_reserve(&ra, 3);
    for (int k = 0; k < 4; k++) {
        T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &x), VIDMM_OK);
        T_EQ_U64(off, MiB - 64 * KiB);
        T_EQ(vidmm_ra_check(&ra), 0);
        /* With that hole taken, the reserve's hole is the only fit short
         * of the largest range: used rather than the largest range. */
        T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &y), VIDMM_OK);
        T_EQ_U64(off, 3 * MiB - 64 * KiB);
        T_ST(vidmm_ra_free(&ra, y), VIDMM_OK);
        T_ST(vidmm_ra_free(&ra, x), VIDMM_OK);
        T_EQ_U64(ra_layout(&ra), before);
    }
    /* Nothing fits outside the reserve and the largest range: a request
     * larger than the holes takes the largest range, as without it. */
    T_ST(vidmm_ra_alloc(&ra, 2 * MiB, 0, 0, &off, &x), VIDMM_OK);
    T_EQ_U64(off, 4 * MiB);
    T_ST(vidmm_ra_free(&ra, x), VIDMM_OK);
    /* The reserve follows the largest range: freeing block 3 and spacer 3
     * makes it [3 MiB - 64 KiB, 64 MiB); with a reserve of 2 (block 2,
     * block 1 going down) the new hole at 2 MiB - 64 KiB is in it and the
     * equal hole at 1 MiB - 64 KiB is not. */
    T_ST(vidmm_ra_free(&ra, n[3]), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, spacer[3]), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, spacer[1]), VIDMM_OK);   /* hole at 2 MiB - 64 KiB */
    T_EQ_U64(vidmm_ra_largest_free(&ra), 61 * MiB + 64 * KiB);
    vidmm_ra_set_front_reserve(&ra, 2);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &x), VIDMM_OK);
    T_EQ_U64(off, MiB - 64 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    /* Turned off: best fit again, bad input ignored. */
    vidmm_ra_set_front_reserve(&ra, 0);
    vidmm_ra_set_front_reserve(NULL, 3);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &y), VIDMM_OK);
    T_EQ_U64(off, 2 * MiB - 64 * KiB);
    T_EQ(vidmm_ra_check(&ra), 0);
    vidmm_ra_fini(&ra);
}

/* The checker names the invariant a corrupted allocator breaks, and
 * where: each corruption below is made, named and undone. */
static void expect_named(const struct vidmm_range_alloc *ra, const char *words)
{
    char msg[256];
    T_CHECK(vidmm_ra_check_msg(ra, msg, sizeof msg) > 0);
    if (!strstr(msg, words))
        printf("  checker said \"%s\", wanted \"%s\"\n", msg, words);
    T_CHECK(strstr(msg, words) != NULL);
    T_EQ(vidmm_ra_check(ra), vidmm_ra_check_msg(ra, NULL, 0));
}

static void expect_sound(const struct vidmm_range_alloc *ra)
{
    char msg[256];
    T_EQ(vidmm_ra_check_msg(ra, msg, sizeof msg), 0);
    T_EQ(msg[0], '\0');
}

static void check_names_invariant(void)
{
    struct vidmm_range_alloc ra;
    uint64_t off;
    uint32_t a, b, c;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &a), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &b), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &c), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, b), VIDMM_OK);   /* live, free, live, free */
    expect_sound(&ra);

    ra.free_bytes += 4 * KiB;
    expect_named(&ra, "free_bytes");
    ra.free_bytes -= 4 * KiB;
    expect_sound(&ra);

    ra.live_count++;
    expect_named(&ra, "live_count");
    ra.live_count--;

    uint64_t fl = ra.fl_bitmap;
    ra.fl_bitmap |= UINT64_C(1) << 63;   /* fl_count is far below 63 for 256 chunks */
    expect_named(&ra, "first-level bitmap");
    ra.fl_bitmap = fl;

    /* A bin that holds a range but whose bit is clear. */
    unsigned f, sl;
    mapping((64 * KiB) >> ra.chunk_shift, &f, &sl);
    ra.sl_bitmap[f] ^= SLBIT(sl);
    expect_named(&ra, "bin (");
    ra.sl_bitmap[f] ^= SLBIT(sl);
    expect_sound(&ra);

    struct vidmm_ra_node *nodes = ra.nodes;
    uint32_t keep = nodes[a].next_free;   /* a live node's cached class index */
    nodes[a].next_free = keep + 1;
    expect_named(&ra, "cached class index");
    nodes[a].next_free = keep;

    keep = nodes[c].prev_phys;
    nodes[c].prev_phys = a;
    expect_named(&ra, "prev_phys");
    nodes[c].prev_phys = keep;

    /* A cycle in the address chain: the walk ends, and names where the
     * chain turned back. */
    keep = nodes[c].next_phys;
    nodes[c].next_phys = ra.first_node;
    expect_named(&ra, "but the address walk came from node");
    nodes[c].next_phys = keep;

    /* Two free neighbours: freeing b's neighbour behind the allocator's back. */
    nodes[c].prev_free = RA_NIL;
    expect_named(&ra, "adjacent free ranges");
    nodes[c].prev_free = RA_USED;
    expect_sound(&ra);

    expect_named(NULL, "not initialised");
    vidmm_ra_fini(&ra);
}

/* A broken invariant met where the allocator changes (VIDMM_BUG_ON_LOG)
 * is kept with its words and reported by the checker.  Release builds
 * only: a debug build stops at it. */
static void bug_log_reported(void)
{
#ifndef VIDMM_DEBUG
    struct vidmm_range_alloc ra;
    uint64_t off;
    uint32_t a;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_ra_alloc(&ra, 64 * KiB, 0, 0, &off, &a), VIDMM_OK);
    ra.live_count = 0;   /* the count lost the live block */
    T_ST(vidmm_ra_free(&ra, a), VIDMM_OK);
    T_EQ_U64(ra.bugs.count, 1);
    T_CHECK(strstr(ra.bugs.first, "range_alloc.c:") != NULL);
    expect_named(&ra, "free: live node");
    vidmm_ra_fini(&ra);
#endif
}

void suite_range_alloc(void);
void suite_range_alloc(void)
{
    t_run("range_alloc.basic", basic);
    t_run("range_alloc.topdown_and_at", topdown_and_at);
    t_run("range_alloc.topdown_below", topdown_below);
    t_run("range_alloc.bad_inputs", bad_inputs);
    t_run("range_alloc.exact_capacity", exact_capacity);
    t_run("range_alloc.huge_offsets", huge_offsets);
    t_run("range_alloc.differential", differential);
    t_run("range_alloc.differential_options", differential_options);
    t_run("range_alloc.front_reserve", front_reserve);
    t_run("range_alloc.neighbours", neighbours);
    t_run("range_alloc.fault_sweep", fault_sweep);
    t_run("range_alloc.check_names_invariant", check_names_invariant);
    t_run("range_alloc.bug_log_reported", bug_log_reported);
}
