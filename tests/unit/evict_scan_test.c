/*
 * evict_scan_test.c - the eviction scan (seg/evict_scan.h): hand-built
 * layouts (a hole from one block and free space, from two adjacent
 * blocks, alignment that makes the span larger, [start, end) limits, no
 * hole possible, the cheapest window), bad calls, the stamp wrap, a host
 * fault sweep, and a randomised differential test against a brute-force
 * model: the scan's first success in the add order is the first prefix
 * whose union with free space holds an aligned hole, its victims are
 * exactly the prefix blocks overlapping the hole it names, no aligned
 * window costs fewer bytes, and evicting them makes the allocation fit.
 * vidmm_ra_check() after every step.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "seg/evict_scan.h"

#include "ra_layout.h"

#include <stdlib.h>
#include <string.h>

#define KiB (UINT64_C(1) << 10)
#define CH (4 * KiB) /* the chunk of every layout here */

/* ---- layouts written as strings: one character per chunk ------------- */

/* '.' is free; a letter is a block (a run of one letter is one block;
 * write two adjacent blocks with different letters).  nodes[] is indexed
 * by letter - 'A'. */
struct lay {
    struct vidmm_range_alloc ra;
    uint32_t node[26];
    int live[26];
};

static void lay_build(struct lay *l, const char *s)
{
    size_t n = strlen(s);
    memset(l, 0, sizeof *l);
    T_ST(vidmm_ra_init(&l->ra, vidmm_default_host_allocator(), n * CH, CH), VIDMM_OK);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] == s[i])
            j++;
        if (s[i] != '.') {
            int b = s[i] - 'A';
            T_CHECK(b >= 0 && b < 26 && !l->live[b]);
            T_ST(vidmm_ra_alloc_at(&l->ra, i * CH, (j - i) * CH, &l->node[b]), VIDMM_OK);
            l->live[b] = 1;
        }
        i = j;
    }
    T_EQ(vidmm_ra_check(&l->ra), 0);
}

/* One hand-built case: feed `order` (letters) to a scan for size/align
 * chunks in [start, end) chunks (end 0 = all); expect success after the
 * found-th letter (1-based; 0 = never), those victims (letters in address
 * order) and that hole (chunk). */
struct row {
    const char *name, *layout, *order;
    unsigned size, align, start, end;
    unsigned found;
    const char *victims;
    unsigned hole;
};

static const struct row ROWS[] = {
    /* one block plus the free space next to it */
    { "one block + free", "AA..BBCC", "A", 4, 1, 0, 0, 1, "A", 0 },
    { "free on both sides", "AA.B.CC", "B", 3, 1, 0, 0, 1, "B", 2 },
    /* two adjacent blocks, no free space at all */
    { "two adjacent blocks", "AABBCC", "BA", 4, 1, 0, 0, 2, "AB", 0 },
    { "adjacent, other side", "AABBCC", "BC", 4, 1, 0, 0, 2, "BC", 2 },
    /* three blocks chained through free ranges (A and C do not touch);
     * [1,6) evicts B and C only */
    { "chain through free", "A.B.C.D", "ACB", 5, 1, 0, 0, 3, "BC", 1 },
    /* alignment: [2,4) of B is not aligned to 4 chunks; B+C is, and only C
     * overlaps the aligned window [4,6): B is released */
    { "alignment, release", "AABBCCDD", "BC", 2, 4, 0, 0, 2, "C", 4 },
    /* B..E are one run from the second add on, but the first aligned
     * window inside a run is [4,6), which needs F too; B, C, D go free */
    { "alignment, wider span", "ABCDEFGH", "BCDEF", 2, 4, 0, 0, 5, "EF", 4 },
    /* the cheapest window: X joins A (3 chunks) and B (2); [3,7) evicts
     * X and B (3 chunks), [0,4) would evict A and X (4) */
    { "cheapest window", "AAAX.BB", "ABX", 4, 1, 0, 0, 3, "XB", 3 },
    /* [start, end) limits */
    { "range end", "AABB....CC", "CB", 2, 1, 0, 4, 2, "B", 2 },
    { "range start", "AABB....CC", "AC", 3, 1, 6, 10, 2, "C", 6 },
    { "range and alignment", "ABCD....EFGH", "EFGH", 2, 2, 9, 12, 4, "GH", 10 },
    /* no hole: a block never added (P) walls the two sides off */
    { "pinned wall", "AAPPBB", "AB", 4, 1, 0, 0, 0, "", 0 },
    { "too small everywhere", "AP.BQ.C", "ABC", 3, 1, 0, 0, 0, "", 0 },
};

/* Letters of the victims in address order. */
static void victims_str(const struct lay *l, const struct vidmm_evict_scan *s, char *out)
{
    size_t k = 0;
    for (uint32_t v = 0; v < s->victim_count; v++) {
        int b = (int)s->victims[v].tag;
        T_EQ(s->victims[v].node, l->node[b]);
        out[k++] = (char)('A' + b);
    }
    out[k] = 0;
}

static void run_row_choice(const struct row *r, int choice)
{
    struct lay l;
    struct vidmm_evict_scan s;
    lay_build(&l, r->layout);
    uint64_t before = ra_layout(&l.ra);
    vidmm_evict_scan_init(&s, vidmm_default_host_allocator());
    vidmm_evict_scan_set_choice(&s, choice);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, (uint64_t)r->size * CH, (uint64_t)r->align * CH,
                                (uint64_t)r->start * CH, (uint64_t)r->end * CH, 26),
         VIDMM_OK);
    unsigned found = 0;
    for (unsigned i = 0; r->order[i]; i++) {
        int b = r->order[i] - 'A';
        int got = vidmm_evict_scan_add(&s, l.node[b], (uint64_t)b);
        T_EQ_U64(ra_layout(&l.ra), before); /* the scan never writes the allocator */
        if (got == 1) {
            found = i + 1;
            break;
        }
        T_EQ(got, 0);
    }
    if (found != r->found)
        fprintf(stderr, "  row '%s': found after %u, want %u\n", r->name, found, r->found);
    T_EQ(found, r->found);
    if (found && r->found) {
        char v[27];
        victims_str(&l, &s, v);
        if (strcmp(v, r->victims) || s.hole != (uint64_t)r->hole * CH)
            fprintf(stderr, "  row '%s': victims %s hole %u, want %s hole %u\n", r->name, v,
                    (unsigned)(s.hole / CH), r->victims, r->hole);
        T_CHECK(!strcmp(v, r->victims));
        T_EQ_U64(s.hole, (uint64_t)r->hole * CH);
        /* drm_mm_scan_remove_block's answer for every block */
        for (int b = 0; b < 26; b++)
            if (l.live[b])
                T_EQ(vidmm_evict_scan_must_evict(&s, l.node[b]), strchr(r->victims, 'A' + b) != NULL);
        /* Evict; the hole is now free: both placements succeed. */
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < s.victim_count; i++) {
            bytes += vidmm_ra_node_size(&l.ra, s.victims[i].node);
            T_ST(vidmm_ra_free(&l.ra, s.victims[i].node), VIDMM_OK);
            T_EQ(vidmm_ra_check(&l.ra), 0);
        }
        T_EQ_U64(bytes, s.evict_bytes);
        uint32_t x;
        uint64_t off;
        T_ST(vidmm_ra_alloc_at(&l.ra, s.hole, (uint64_t)r->size * CH, &x), VIDMM_OK);
        T_ST(vidmm_ra_free(&l.ra, x), VIDMM_OK);
        if (!r->start && !r->end) {
            T_ST(vidmm_ra_alloc(&l.ra, (uint64_t)r->size * CH, (uint64_t)r->align * CH, 0, &off, &x), VIDMM_OK);
            T_EQ_U64(off % ((uint64_t)r->align * CH), 0);
        }
        T_EQ(vidmm_ra_check(&l.ra), 0);
    } else {
        T_EQ(s.victim_count, 0);
        T_EQ(s.found, 0);
    }
    vidmm_evict_scan_end(&s);
    vidmm_evict_scan_fini(&s);
    vidmm_ra_fini(&l.ra);
}

static void run_row(const struct row *r)
{
    run_row_choice(r, VIDMM_EVICT_FEWEST_BYTES);
}

static void layouts(void)
{
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        run_row(&ROWS[i]);
}

/* VIDMM_EVICT_LOWEST (drm_mm_scan's placement): the lowest aligned
 * position of the run that holds the request, whatever it costs.  On the
 * "cheapest window" layout that is [0,4): A and X, not X and B; with
 * alignment the run's aligned start. */
static void lowest(void)
{
    const struct row rows[] = {
        { .name = "lowest: cheapest window", .layout = "AAAX.BB", .order = "ABX", .size = 4, .align = 1,
          .found = 3, .victims = "AX", .hole = 0 },
        { .name = "lowest: aligned start", .layout = ".AABBCCDD", .order = "BCD", .size = 4, .align = 2,
          .found = 3, .victims = "BCD", .hole = 4 },
        { .name = "lowest: free run start", .layout = "AA.B.CC", .order = "B", .size = 3, .align = 1,
          .found = 1, .victims = "B", .hole = 2 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        run_row_choice(&rows[i], VIDMM_EVICT_LOWEST);
}

/* Bad calls: each refused with its status, nothing changes. */
static void bad_calls(void)
{
    struct lay l;
    struct vidmm_evict_scan s;
    lay_build(&l, "AABB..CC");
    uint64_t before = ra_layout(&l.ra);
    vidmm_evict_scan_init(&s, vidmm_default_host_allocator());
    /* add before begin */
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), VIDMM_E_STATE);
    T_EQ(vidmm_evict_scan_add(NULL, l.node[0], 0), VIDMM_E_STATE);
    T_EQ(vidmm_evict_scan_must_evict(&s, l.node[0]), 0);
    /* begin arguments */
    T_ST(vidmm_evict_scan_begin(NULL, &l.ra, CH, CH, 0, 0, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, NULL, CH, CH, 0, 0, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 0, CH, 0, 0, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, CH, 3 * CH, 0, 0, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, CH, CH, 4 * CH, 4 * CH, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, CH, CH, 5 * CH, 2 * CH, 8), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, UINT64_MAX, CH, 0, 0, 8), VIDMM_E_OVERFLOW);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, CH, CH, UINT64_MAX, 0, 8), VIDMM_E_OVERFLOW);
    /* never possible: larger than the range, or than [start, end), or
     * an alignment that leaves no room */
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 9 * CH, CH, 0, 0, 8), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 3 * CH, CH, 6 * CH, 0, 8), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 2 * CH, 8 * CH, 1 * CH, 0, 8), VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), VIDMM_E_STATE); /* a refused begin leaves no scan */
    /* bad adds */
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 7 * CH, 0, 0, 0, 2), VIDMM_OK);
    T_EQ_U64(s.size, 7 * CH);
    T_EQ_U64(s.align, CH);
    T_EQ(vidmm_evict_scan_add(&s, l.ra.node_cap - 1, 0), VIDMM_E_INVALID_HANDLE); /* not live */
    T_EQ(vidmm_evict_scan_add(&s, VIDMM_RA_NONE, 0), VIDMM_E_INVALID_HANDLE);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), VIDMM_E_INVALID_HANDLE);    /* already added */
    T_EQ(vidmm_evict_scan_add(&s, l.node[1], 1), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[2], 2), VIDMM_E_OVERFLOW);          /* max_blocks 2 */
    T_EQ(s.count, 2);
    vidmm_evict_scan_end(&s);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), VIDMM_E_STATE);             /* ended */
    /* max_blocks above the live count is clamped to it */
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 5 * CH, CH, 0, 0, 1000), VIDMM_OK);
    T_EQ(s.cap, 3);
    T_EQ(vidmm_evict_scan_add(&s, l.node[1], 1), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), 1);                         /* AABB.. holds 5 */
    T_EQ(vidmm_evict_scan_add(&s, l.node[2], 2), VIDMM_E_STATE);             /* already found */
    T_EQ(s.victim_count, 2);
    T_EQ_U64(s.evict_bytes, 4 * CH);
    /* a new begin forgets the old roster */
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 3 * CH, CH, 0, 0, 8), VIDMM_OK);
    T_EQ(s.found, 0);
    T_EQ(vidmm_evict_scan_must_evict(&s, l.node[0]), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[2], 2), 1);                         /* ..CC holds 3 */
    T_EQ(s.victim_count, 1);
    T_EQ(s.victims[0].tag, 2);
    T_EQ_U64(s.hole, 4 * CH);
    T_EQ(vidmm_evict_scan_must_evict(&s, l.node[0]), 0);
    T_EQ(vidmm_evict_scan_must_evict(&s, l.node[2]), 1);
    T_EQ_U64(ra_layout(&l.ra), before);
    T_EQ(vidmm_ra_check(&l.ra), 0);
    vidmm_evict_scan_fini(&s);
    vidmm_evict_scan_fini(&s); /* twice: harmless */
    vidmm_evict_scan_fini(NULL);
    vidmm_evict_scan_end(NULL);
    vidmm_ra_fini(&l.ra);
}

/* The membership stamp wraps after 2^32 scans: the map is wiped then, so
 * a block added with an old stamp is not taken for a member. */
static void stamp_wrap(void)
{
    struct lay l;
    struct vidmm_evict_scan s;
    lay_build(&l, "AABBCC");
    vidmm_evict_scan_init(&s, vidmm_default_host_allocator());
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 4 * CH, CH, 0, 0, 8), VIDMM_OK);
    T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), 0);
    s.stamp = UINT32_MAX; /* white box: the next begin wraps */
    s.map[l.node[1]] = (uint64_t)1 << 32 | 0; /* a stale entry naming stamp 1 */
    T_ST(vidmm_evict_scan_begin(&s, &l.ra, 4 * CH, CH, 0, 0, 8), VIDMM_OK);
    T_EQ(s.stamp, 1);
    T_EQ(vidmm_evict_scan_add(&s, l.node[2], 2), 0);
    T_EQ(vidmm_evict_scan_add(&s, l.node[1], 1), 1); /* B joins C: not mistaken for an old member */
    T_EQ(s.victim_count, 2);
    T_EQ_U64(s.hole, 2 * CH);
    vidmm_evict_scan_fini(&s);
    vidmm_ra_fini(&l.ra);
}

/* Every host allocation of begin refused in turn: NO_HOST_MEMORY, the
 * scan object stays usable, nothing leaks. */
static void fault_sweep(void)
{
    int done = 0;
    struct lay l;
    lay_build(&l, "AB.CD.EF");
    for (uint64_t fail_at = 1; !done && fail_at < 20; fail_at++) {
        struct fault_alloc fa;
        struct vidmm_evict_scan s;
        fault_alloc_init(&fa);
        fa.fail_at = fail_at;
        vidmm_evict_scan_init(&s, &fa.ha);
        vidmm_status st = vidmm_evict_scan_begin(&s, &l.ra, 4 * CH, CH, 0, 0, 6);
        if (st == VIDMM_OK) {
            T_EQ(vidmm_evict_scan_add(&s, l.node['C' - 'A'], 2), 0);
            T_EQ(vidmm_evict_scan_add(&s, l.node['D' - 'A'], 3), 1);
            T_EQ_U64(s.hole, 2 * CH);
            done = fa.failures == 0;
        } else {
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(vidmm_evict_scan_add(&s, l.node[0], 0), VIDMM_E_STATE);
            fa.fail_at = 0; /* the same object works once memory is back */
            T_ST(vidmm_evict_scan_begin(&s, &l.ra, 4 * CH, CH, 0, 0, 6), VIDMM_OK);
            T_EQ(vidmm_evict_scan_add(&s, l.node['C' - 'A'], 2), 0);
            T_EQ(vidmm_evict_scan_add(&s, l.node['D' - 'A'], 3), 1);
        }
        vidmm_evict_scan_fini(&s);
        T_EQ(fa.live_blocks, 0);
        T_EQ(fa.live_bytes, 0);
    }
    T_CHECK(done);
    T_EQ(vidmm_ra_check(&l.ra), 0);
    vidmm_ra_fini(&l.ra);
}

/* ---- differential against a brute-force model ------------------------ */

enum { MAXCH = 192, MAXB = 96 };

struct model {
    uint32_t nchunks;
    int owner[MAXCH];           /* block index per chunk, -1 = free */
    uint32_t nb;
    uint32_t node[MAXB];
    uint64_t off[MAXB], size[MAXB];  /* in chunks */
};

/* Is some aligned window of size chunks in [lo, hi) made only of free
 * chunks and blocks with ok[b]?  If cost is not NULL, also the least
 * sum of sizes (chunks) of the ok blocks such a window overlaps. */
static int any_window(const struct model *m, const int *ok, uint32_t size, uint32_t align, uint32_t lo,
                      uint32_t hi, uint64_t *cost)
{
    int found = 0;
    uint64_t best = UINT64_MAX;
    for (uint32_t s = (lo + align - 1) / align * align; s + size <= hi; s += align) {
        int fits = 1;
        uint64_t c = 0;
        int last = -1;
        for (uint32_t x = s; x < s + size && fits; x++) {
            int b = m->owner[x];
            if (b < 0)
                continue;
            if (!ok[b])
                fits = 0;
            else if (b != last)
                c += m->size[b];
            last = b;
        }
        if (fits) {
            found = 1;
            if (c < best)
                best = c;
            if (!cost)
                break;
        }
    }
    if (cost)
        *cost = best;
    return found;
}

static void differential(void)
{
    uint64_t seed = t_seed() ^ 0xE51C7;
    uint64_t rs = seed;
    unsigned trials = 2000 * t_scale();
    struct vidmm_evict_scan s;
    vidmm_evict_scan_init(&s, vidmm_default_host_allocator());
    static struct model m;
    unsigned successes = 0, never = 0;
    for (unsigned trial = 0; trial < trials; trial++) {
        int fails_before = t_current_failures();
        memset(&m, 0, sizeof m);
        m.nchunks = 16 + (uint32_t)t_rand_range(&rs, MAXCH - 15);
        struct vidmm_range_alloc ra;
        T_ST(vidmm_ra_init(&ra, vidmm_default_host_allocator(), (uint64_t)m.nchunks * CH, CH), VIDMM_OK);
        for (uint32_t c = 0; c < m.nchunks; c++)
            m.owner[c] = -1;
        /* Random layout: blocks of 1..8 chunks (some 1..3 for density), gaps
         * mostly 0, sometimes 1..4 chunks. */
        unsigned gap_pct = (unsigned)t_rand_range(&rs, 60);
        for (uint32_t c = 0; c < m.nchunks && m.nb < MAXB;) {
            if (t_rand_range(&rs, 100) < gap_pct) {
                c += 1 + (uint32_t)t_rand_range(&rs, 4);
                continue;
            }
            uint32_t len = 1 + (uint32_t)t_rand_range(&rs, t_rand_range(&rs, 2) ? 3 : 8);
            if (c + len > m.nchunks)
                len = m.nchunks - c;
            uint32_t b = m.nb++;
            T_ST(vidmm_ra_alloc_at(&ra, (uint64_t)c * CH, (uint64_t)len * CH, &m.node[b]), VIDMM_OK);
            m.off[b] = c;
            m.size[b] = len;
            for (uint32_t x = c; x < c + len; x++)
                m.owner[x] = (int)b;
            c += len;
        }
        T_EQ(vidmm_ra_check(&ra), 0);
        /* The request: any size and alignment, sometimes a range; it must
         * not fit in free space alone (the caller only scans then). */
        uint32_t size = 0, align = 1, lo = 0, hi = m.nchunks;
        int ok[MAXB] = { 0 };
        int tries;
        for (tries = 0; tries < 20; tries++) {
            size = 1 + (uint32_t)t_rand_range(&rs, t_rand_range(&rs, 2) ? 6 : 24);
            align = 1u << t_rand_range(&rs, 4);
            lo = 0;
            hi = m.nchunks;
            if (t_rand_range(&rs, 3) == 0) {
                lo = (uint32_t)t_rand_range(&rs, m.nchunks / 2);
                hi = lo + 1 + (uint32_t)t_rand_range(&rs, m.nchunks - lo);
            }
            uint32_t first = (lo + align - 1) / align * align;
            if (first + size <= hi && !any_window(&m, ok, size, align, lo, hi, NULL))
                break;
        }
        if (tries == 20) {
            vidmm_ra_fini(&ra);
            continue;
        }
        /* A random eviction order over a random subset (the rest are
         * pinned: never added). */
        uint32_t order[MAXB], n = 0;
        unsigned pin_pct = (unsigned)t_rand_range(&rs, 3) == 0 ? (unsigned)t_rand_range(&rs, 40) : 0;
        for (uint32_t b = 0; b < m.nb; b++)
            if (t_rand_range(&rs, 100) >= pin_pct)
                order[n++] = b;
        for (uint32_t i = n; i > 1; i--) {
            uint32_t j = (uint32_t)t_rand_range(&rs, i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        /* Model: the first prefix length at which a window exists. */
        uint32_t want = 0;
        uint64_t want_cost = 0;
        for (uint32_t k = 1; k <= n && !want; k++) {
            ok[order[k - 1]] = 1;
            if (any_window(&m, ok, size, align, lo, hi, NULL))
                want = k;
        }
        if (want)
            any_window(&m, ok, size, align, lo, hi, &want_cost);
        memset(ok, 0, sizeof ok);
        /* The scan, fed the same order. */
        uint64_t before = ra_layout(&ra);
        T_ST(vidmm_evict_scan_begin(&s, &ra, (uint64_t)size * CH, (uint64_t)align * CH, (uint64_t)lo * CH,
                                    hi == m.nchunks && t_rand_range(&rs, 2) ? 0 : (uint64_t)hi * CH, n),
             VIDMM_OK);
        uint32_t got = 0;
        for (uint32_t k = 1; k <= n; k++) {
            int r = vidmm_evict_scan_add(&s, m.node[order[k - 1]], order[k - 1]);
            T_CHECK(r == 0 || r == 1);
            if (r == 1) {
                got = k;
                break;
            }
        }
        T_EQ_U64(ra_layout(&ra), before);
        T_EQ(got, want);
        if (got && got == want) {
            successes++;
            for (uint32_t k = 0; k < got; k++)
                ok[order[k]] = 1;
            /* The hole: aligned, inside [lo, hi), free or prefix only. */
            T_EQ_U64(s.hole % ((uint64_t)align * CH), 0);
            uint32_t h = (uint32_t)(s.hole / CH);
            T_CHECK(h >= lo && h + size <= hi);
            /* Victims: exactly the prefix blocks overlapping the hole. */
            int is_victim[MAXB] = { 0 };
            uint64_t cost = 0;
            for (uint32_t v = 0; v < s.victim_count; v++) {
                uint32_t b = (uint32_t)s.victims[v].tag;
                T_CHECK(b < m.nb && ok[b] && !is_victim[b]);
                T_EQ(s.victims[v].node, m.node[b]);
                if (v)
                    T_CHECK(m.off[b] > m.off[s.victims[v - 1].tag]); /* address order */
                is_victim[b] = 1;
                cost += m.size[b];
            }
            for (uint32_t x = h; x < h + size && x < m.nchunks; x++) {
                int b = m.owner[x];
                T_CHECK(b < 0 || (ok[b] && is_victim[b]));
            }
            for (uint32_t b = 0; b < m.nb; b++) {
                int overlaps = m.off[b] < h + size && m.off[b] + m.size[b] > h;
                T_EQ(is_victim[b], overlaps && ok[b]);
                T_EQ(vidmm_evict_scan_must_evict(&s, m.node[b]), is_victim[b]);
            }
            T_EQ_U64(s.evict_bytes, cost * CH);
            T_EQ_U64(cost, want_cost); /* no aligned window in the prefix costs less */
            /* Evict them; the request now fits. */
            for (uint32_t v = 0; v < s.victim_count; v++) {
                T_ST(vidmm_ra_free(&ra, s.victims[v].node), VIDMM_OK);
                T_EQ(vidmm_ra_check(&ra), 0);
            }
            uint32_t x;
            uint64_t off;
            if (lo == 0 && hi == m.nchunks && t_rand_range(&rs, 2)) {
                T_ST(vidmm_ra_alloc(&ra, (uint64_t)size * CH, (uint64_t)align * CH, 0, &off, &x), VIDMM_OK);
                T_EQ_U64(off % ((uint64_t)align * CH), 0);
            } else {
                T_ST(vidmm_ra_alloc_at(&ra, s.hole, (uint64_t)size * CH, &x), VIDMM_OK);
            }
            T_EQ(vidmm_ra_check(&ra), 0);
        } else if (!want) {
            never++;
            T_EQ(s.found, 0);
        }
        vidmm_evict_scan_end(&s);
        memset(ok, 0, sizeof ok);
        vidmm_ra_fini(&ra);
        if (t_current_failures() != fails_before) {
            fprintf(stderr, "  evict_scan.differential: trial %u failed (VIDMM_TEST_SEED=%" PRIu64 ")\n", trial,
                    t_seed());
            break;
        }
    }
    if (getenv("VIDMM_TEST_VERBOSE"))
        printf("evict_scan.differential: %u trials, %u holes found, %u never\n", trials, successes, never);
    /* The generator must exercise both outcomes. */
    T_CHECK(successes > trials / 4);
    T_CHECK(never > 0);
    vidmm_evict_scan_fini(&s);
}

void suite_evict_scan(void);
void suite_evict_scan(void)
{
    t_run("evict_scan.layouts", layouts);
    t_run("evict_scan.lowest", lowest);
    t_run("evict_scan.bad_calls", bad_calls);
    t_run("evict_scan.stamp_wrap", stamp_wrap);
    t_run("evict_scan.fault_sweep", fault_sweep);
    t_run("evict_scan.differential", differential);
}
