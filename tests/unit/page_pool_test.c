/*
 * page_pool_test.c - page sets: the contiguous fast path, gathering from
 * fragmented space, all-or-nothing failure, the "succeeds iff enough whole
 * free pages" property against a chunk bitmap, bad inputs and a host
 * fault sweep.  vidmm_ra_check()/vidmm_pages_check() after every step.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "seg/page_pool.h"

#include "ra_layout.h"

#include <string.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)


static void contiguous_and_gather(void)
{
    struct vidmm_range_alloc ra;
    struct vidmm_page_set a, b;
    static uint32_t holes[64];
    uint64_t off;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 8 * MiB, 4 * KiB), VIDMM_OK);
    T_ST(vidmm_pages_alloc(&ra, 100 * KiB, 64 * KiB, 0, &a), VIDMM_OK);
    T_EQ(a.count, 1);
    T_EQ_U64(a.size, 128 * KiB);
    T_CHECK(a.ext == a.inline_ext);
    T_EQ(vidmm_pages_check(&ra, &a), 0);
    vidmm_pages_free(&ra, &a);
    T_EQ(vidmm_pages_check(&ra, &a), 0);
    T_EQ_U64(ra.free_bytes, 8 * MiB);
    /* Checkerboard of 64 KiB holes and 64 KiB used blocks. */
    for (int i = 0; i < 64; i++)
        T_ST(vidmm_ra_alloc_at(&ra, (uint64_t)(2 * i + 1) * 64 * KiB, 64 * KiB, &holes[i]), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_ST(vidmm_pages_alloc(&ra, 1 * MiB, 64 * KiB, 0, &b), VIDMM_OK);
    T_EQ(b.count, 16);
    T_CHECK(b.ext != b.inline_ext);
    T_EQ(vidmm_pages_check(&ra, &b), 0);
    for (uint32_t i = 0; i < b.count; i++)
        T_EQ_U64(b.ext[i].offset % (64 * KiB), 0);
    T_EQ(vidmm_ra_check(&ra), 0);
    /* More than remains: all or nothing. */
    uint64_t before = ra_layout(&ra);
    T_ST(vidmm_pages_alloc(&ra, 4 * MiB, 64 * KiB, 0, &a), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ_U64(ra_layout(&ra), before);
    T_EQ(a.count, 0);
    T_ST(vidmm_pages_alloc(&ra, 3 * MiB, 64 * KiB, 0, &a), VIDMM_OK); /* exactly the rest */
    T_EQ_U64(ra.free_bytes, 0);
    T_EQ(vidmm_pages_check(&ra, &a), 0);
    vidmm_pages_free(&ra, &a);
    vidmm_pages_free(&ra, &b);
    for (int i = 0; i < 64; i++)
        T_ST(vidmm_ra_free(&ra, holes[i]), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(vidmm_ra_largest_free(&ra), 8 * MiB);
    /* Misaligned holes: 64 KiB free but no whole 64 KiB page inside. */
    uint32_t x, y;
    T_ST(vidmm_ra_alloc_at(&ra, 0, 4 * KiB, &x), VIDMM_OK);
    T_ST(vidmm_ra_alloc_at(&ra, 68 * KiB, 8 * MiB - 68 * KiB, &y), VIDMM_OK);
    before = ra_layout(&ra);
    T_ST(vidmm_pages_alloc(&ra, 64 * KiB, 64 * KiB, 0, &a), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ_U64(ra_layout(&ra), before);
    T_ST(vidmm_pages_alloc(&ra, 64 * KiB, 4 * KiB, 0, &a), VIDMM_OK);
    T_EQ_U64(a.ext[0].offset, 4 * KiB);
    vidmm_pages_free(&ra, &a);
    (void)off;
    T_ST(vidmm_ra_free(&ra, x), VIDMM_OK);
    T_ST(vidmm_ra_free(&ra, y), VIDMM_OK);
    vidmm_ra_fini(&ra);
}

static void bad_inputs(void)
{
    struct vidmm_range_alloc ra;
    struct vidmm_page_set a;
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), 1 * MiB, 64 * KiB), VIDMM_OK);
    uint64_t before = ra_layout(&ra);
    T_ST(vidmm_pages_alloc(&ra, 0, 64 * KiB, 0, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_pages_alloc(&ra, 4 * KiB, 0, 0, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_pages_alloc(&ra, 4 * KiB, 96 * KiB, 0, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_pages_alloc(&ra, 4 * KiB, 64 * KiB, 0x10, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_pages_alloc(&ra, 4 * KiB, 4 * KiB, 0, &a), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_pages_alloc(&ra, UINT64_MAX, 64 * KiB, 0, &a), VIDMM_E_OVERFLOW);
    T_ST(vidmm_pages_alloc(&ra, 2 * MiB, 64 * KiB, 0, &a), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_pages_alloc(NULL, 4 * KiB, 64 * KiB, 0, &a), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_pages_alloc(&ra, 4 * KiB, 64 * KiB, 0, NULL), VIDMM_E_INVALID_ARG);
    T_EQ(a.count, 0);
    T_EQ(vidmm_pages_check(&ra, &a), 0);
    T_EQ_U64(ra_layout(&ra), before);
    T_EQ(vidmm_ra_check(&ra), 0);
    vidmm_pages_free(&ra, &a); /* empty set: harmless */
    T_EQ_U64(ra_layout(&ra), before);
    vidmm_ra_fini(&ra);
}

/* ---- differential: page sets and raw ranges against a chunk bitmap ---- */

enum { MCH = 1024, MAXLIVE = 512 };

static uint64_t whole_free_pages(const unsigned char *used, uint64_t pch)
{
    uint64_t n = 0;
    for (uint64_t p = 0; p + pch <= MCH; p += pch) {
        int ok = 1;
        for (uint64_t c = p; c < p + pch && ok; c++)
            ok = !used[c];
        n += (uint64_t)ok;
    }
    return n;
}

static void set_model(unsigned char *used, uint64_t off, uint64_t size, int v)
{
    for (uint64_t c = off / (4 * KiB); c < (off + size) / (4 * KiB); c++) {
        if (used[c] == v)
            t_fail(__FILE__, __LINE__, "model: overlap or double free");
        used[c] = (unsigned char)v;
    }
}

static void differential(void)
{
    const uint64_t CH = 4 * KiB;
    struct vidmm_range_alloc ra;
    static unsigned char used[MCH];
    static struct vidmm_page_set sets[MAXLIVE];
    static uint32_t raw[MAXLIVE];
    uint32_t nsets = 0, nraw = 0;
    uint64_t s = t_seed() ^ 0x9A6E;
    unsigned nospace = 0, gathered = 0;
    memset(used, 0, sizeof used);
    T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), MCH * CH, CH), VIDMM_OK);
    unsigned ops = 20000 * t_scale();
    for (unsigned i = 0; i < ops && !t_current_failures(); i++) {
        uint64_t r = t_rand_range(&s, 100);
        if (r < 40 && nsets) {
            uint32_t j = (uint32_t)t_rand_range(&s, nsets);
            for (uint32_t e = 0; e < sets[j].count; e++)
                set_model(used, sets[j].ext[e].offset, sets[j].ext[e].size, 0);
            vidmm_pages_free(&ra, &sets[j]);
            T_EQ(vidmm_pages_check(&ra, &sets[j]), 0);
            if (j != --nsets) { /* move the last set into j (re-point inline storage) */
                struct vidmm_page_set *d = &sets[j], *src = &sets[nsets];
                *d = *src;
                if (src->ext == src->inline_ext)
                    d->ext = d->inline_ext;
            }
        } else if (r < 50 && nraw) {
            uint32_t j = (uint32_t)t_rand_range(&s, nraw);
            set_model(used, vidmm_ra_node_offset(&ra, raw[j]), vidmm_ra_node_size(&ra, raw[j]), 0);
            T_ST(vidmm_ra_free(&ra, raw[j]), VIDMM_OK);
            raw[j] = raw[--nraw];
        } else if (r < 62 && nraw < MAXLIVE) {
            /* Raw 4 KiB-granular ranges break 64 KiB pages apart. */
            uint64_t off;
            uint32_t n;
            if (vidmm_ra_alloc(&ra, (1 + t_rand_range(&s, 6)) * CH, 0,
                               t_rand_range(&s, 2) ? VIDMM_RA_TOPDOWN : 0, &off, &n) == VIDMM_OK) {
                set_model(used, off, vidmm_ra_node_size(&ra, n), 1);
                raw[nraw++] = n;
            }
        } else if (nsets < MAXLIVE) {
            uint64_t page = t_rand_range(&s, 2) ? 64 * KiB : 4 * KiB;
            uint64_t size = 1 + t_rand_range(&s, t_rand_range(&s, 4) ? 256 * KiB : 2 * MiB);
            uint64_t rounded = (size + page - 1) / page * page;
            uint64_t avail = whole_free_pages(used, page / CH) * page;
            struct vidmm_page_set *set = &sets[nsets];
            vidmm_status st = vidmm_pages_alloc(&ra, size, page, 0, set);
            if (st == VIDMM_E_NO_SEGMENT_SPACE) {
                T_CHECK(avail < rounded); /* truly not enough whole pages */
                T_EQ(set->count, 0);
                nospace++;
            } else {
                T_ST(st, VIDMM_OK);
                T_CHECK(avail >= rounded);
                if (st == VIDMM_OK) {
                    T_EQ_U64(set->size, rounded);
                    for (uint32_t e = 0; e < set->count; e++) {
                        T_EQ_U64(set->ext[e].offset % page, 0);
                        T_EQ_U64(set->ext[e].size % page, 0);
                        T_CHECK(set->ext[e].offset + set->ext[e].size <= MCH * CH);
                        set_model(used, set->ext[e].offset, set->ext[e].size, 1);
                    }
                    gathered += set->count > 1;
                    nsets++;
                }
            }
            T_EQ(vidmm_pages_check(&ra, set), 0);
        }
        T_EQ(vidmm_ra_check(&ra), 0);
        uint64_t u = 0;
        for (unsigned c = 0; c < MCH; c++)
            u += used[c];
        T_EQ_U64(ra.free_bytes, (MCH - u) * CH);
    }
    T_CHECK(nospace > 0);
    T_CHECK(gathered > 0);
    for (uint32_t j = 0; j < nsets; j++) {
        T_EQ(vidmm_pages_check(&ra, &sets[j]), 0);
        vidmm_pages_free(&ra, &sets[j]);
    }
    while (nraw)
        T_ST(vidmm_ra_free(&ra, raw[--nraw]), VIDMM_OK);
    T_EQ(vidmm_ra_check(&ra), 0);
    T_EQ_U64(ra.free_bytes, MCH * CH);
    vidmm_ra_fini(&ra);
}

/* Fail host call 1, 2, ...: a gathered set needs node growth and an
 * extent array; every failure must leave ra exactly as it was. */
static void fault_sweep(void)
{
    int done = 0;
    for (uint64_t fail_at = 1; !done && fail_at < 100; fail_at++) {
        struct fault_alloc fa;
        struct vidmm_range_alloc ra;
        static uint32_t holes[40];
        struct vidmm_page_set set;
        fault_alloc_init(&fa);
        vidmm_status st = vidmm_ra_init(&ra, &fa.ha, 8 * MiB, 4 * KiB);
        T_ST(st, VIDMM_OK);
        for (int i = 0; i < 40; i++)
            T_ST(vidmm_ra_alloc_at(&ra, (uint64_t)(2 * i + 1) * 64 * KiB, 4 * KiB, &holes[i]), VIDMM_OK);
        fa.fail_at = fa.calls + fail_at;
        uint64_t before = ra_layout(&ra);
        /* 39 holes of 124 KiB (1 whole 64 KiB page each) and the tail. */
        st = vidmm_pages_alloc(&ra, 8 * MiB - 40 * 128 * KiB + 30 * 64 * KiB, 64 * KiB, 0, &set);
        if (st == VIDMM_OK) {
            T_CHECK(set.count > 2);
            T_EQ(vidmm_pages_check(&ra, &set), 0);
            vidmm_pages_free(&ra, &set);
        } else {
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(set.count, 0);
        }
        T_EQ(vidmm_ra_check(&ra), 0);
        T_EQ_U64(ra.free_bytes, 8 * MiB - 40 * 4 * KiB);
        if (st != VIDMM_OK)
            T_EQ_U64(ra_layout(&ra), before);
        for (int i = 0; i < 40; i++)
            T_ST(vidmm_ra_free(&ra, holes[i]), VIDMM_OK);
        vidmm_ra_fini(&ra);
        T_EQ(fa.live_blocks, 0);
        T_EQ(fa.live_bytes, 0);
        done = fa.failures == 0;
    }
    T_CHECK(done);
}

void suite_page_pool(void);
void suite_page_pool(void)
{
    t_run("page_pool.contiguous_and_gather", contiguous_and_gather);
    t_run("page_pool.bad_inputs", bad_inputs);
    t_run("page_pool.differential", differential);
    t_run("page_pool.fault_sweep", fault_sweep);
}
