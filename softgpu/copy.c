/*
 * copy.c - the copy engine's host copy: how softgpu moves the bytes of a
 * TRANSFER or TRANSFER_VIRTUAL, and how it chooses, per operation size,
 * between a cached copy (glibc's memcpy) and streaming (non-temporal)
 * stores.
 *
 * A copy engine writes VRAM without pulling it through the CPU's caches,
 * and a large move on the host should not pull it through them either: a
 * cached copy reads every destination line before overwriting it and
 * evicts everything else on the way.  But a move whose source and
 * destination fit in the last-level cache is faster through it, and where
 * that limit lies cannot be read from the host: the cache sizes a guest
 * reports are often not what it gets (a 480 MiB L3 reported where a 64
 * MiB cached copy already misses; a 32 MiB L3 shared with other tenants
 * where a 16 MiB one does), and glibc's own switch to streaming stores
 * follows the reported size.  Fixed thresholds derived from cache sizes
 * were each right on one host and wrong on the next (docs/PERFORMANCE.md
 * "Copy path measured per operation size").
 *
 * So the copy path is measured, per device, per size class of the whole
 * operation (the log2 of the TRANSFER's size, carried in the command
 * header: a 1 GiB transfer runs as 16 MiB commands but is a stream that
 * fits no cache, while a 16 MiB move may stay in it):
 *
 *  - learning: four cached copies, then four streaming ones; the last two
 *    of each four are timed (the first ones pay for the other path's
 *    cache state: after streaming stores the destination is no longer
 *    cached, and a cached copy takes a few rounds to get it back).  From
 *    128 MiB operations up a run is one copy (SOFTGPU_COPY_STREAMED);
 *  - then the path measured faster; one steady copy in four is timed;
 *  - the other path gets a run again eight copies after learning (a
 *    choice made on two timings, maybe of first touches, is confirmed or
 *    undone at once), then at a spacing set by what its last run cost, so
 *    that watching costs about 0.5% of the copying time (softgpu_copy_period):
 *    every 64 copies in a close race, up to every 8192 for a path that
 *    loses by far.  At 2 MiB moves streaming stores can run at a third of
 *    a cached copy and leave the caches cold behind them; watching them
 *    every 64 copies cost over 10%.
 *
 * Copies below 1 MiB (small operations, or the pieces of a scattered one)
 * stay memcpy, unmeasured: they live in the core's own caches.
 * SOFTGPU_NT_THRESHOLD (bytes; 0 = never) replaces the measurement with a
 * fixed threshold on the copy's own size, to emulate another host or to
 * force either path in tests.
 *
 * The estimates are relaxed atomics: the engine threads of one device may
 * copy at once, and a lost update only delays a decision.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

/* Pages copied side by side by the streaming path. */
#define SOFTGPU_COPY_PAGES 4u
/* Source lines are prefetched this far ahead of the streaming copy (two
 * groups of SOFTGPU_COPY_PAGES pages): the loads of a streaming copy are
 * ordinary cached loads, and the hardware prefetcher does not cross the
 * page boundaries the interleaved pages put in its way. */
#define SOFTGPU_COPY_PREFETCH (2u * SOFTGPU_COPY_PAGES * 4096u)
/* Copies a path is tried for at a time while learning or exploring (the
 * last two are timed)... */
#define SOFTGPU_COPY_RUN 4u
/* ...except from operations of 2^SOFTGPU_COPY_STREAMED bytes (128 MiB) up:
 * their source and destination are larger than any cache, so the first
 * copy on a path finds the caches as the next one will, and a run of
 * four would spend four whole operations (the first eight 1 GiB moves)
 * learning. */
#define SOFTGPU_COPY_STREAMED 27u
/* Copies between two runs on the slower path (softgpu_copy_period): bounds. */
#define SOFTGPU_COPY_EXPLORE 64u
#define SOFTGPU_COPY_EXPLORE_MAX 8192u
/* One steady copy in this many is timed. */
#define SOFTGPU_COPY_SAMPLE 4u
/* Copies after learning before the confirming run on the slower path. */
#define SOFTGPU_COPY_CONFIRM 8u

void softgpu_copy_tuner_init(struct softgpu_copy_tuner *t)
{
    memset(t, 0, sizeof *t);
    const char *e = getenv("SOFTGPU_NT_THRESHOLD");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 0);
        if (!*end) {
            t->fixed = 1;
            t->threshold = v ? (uint64_t)v : UINT64_MAX;
        }
    }
}

unsigned softgpu_copy_size_class(uint64_t size)
{
    unsigned c = 0;
    while (c < SOFTGPU_COPY_CLASSES - 1 && (size >> (c + 1)) != 0)
        c++;
    return c;
}

/* The faster path of a class whose two estimates are known. */
static int softgpu_copy_winner(uint32_t cached, uint32_t stream)
{
    return stream > cached ? SOFTGPU_PATH_STREAM : SOFTGPU_PATH_CACHED;
}

/* Copies between two runs on the slower path, from what the last one
 * cost: run_ns for its copies, against copy_ns for a copy on
 * the chosen path.  The copies right after a run pay for the cache state
 * it left too (about half its excess again, measured at 2 and 16 MiB), so
 * the excess counts one and a half times; spacing the runs 300 times the
 * excess in copies apart keeps watching at 0.5% of the copying time,
 * whatever the two paths' speeds, and SOFTGPU_COPY_EXPLORE keeps a close race
 * (or a run that found its path faster) watched often. */
uint32_t softgpu_copy_period(uint64_t run_ns, uint64_t copy_ns, unsigned copies)
{
    uint64_t base = copies * copy_ns;
    if (!copy_ns || run_ns <= base)
        return SOFTGPU_COPY_EXPLORE;
    uint64_t excess = run_ns - base;
    if (excess > UINT64_MAX / 300u)
        return SOFTGPU_COPY_EXPLORE_MAX;
    uint64_t p = 300u * excess / copy_ns;
    return p < SOFTGPU_COPY_EXPLORE ? SOFTGPU_COPY_EXPLORE : p > SOFTGPU_COPY_EXPLORE_MAX ? SOFTGPU_COPY_EXPLORE_MAX : (uint32_t)p;
}

unsigned softgpu_copy_run(unsigned cls)
{
    return cls >= SOFTGPU_COPY_STREAMED ? 1u : SOFTGPU_COPY_RUN;
}

struct softgpu_copy_ticket softgpu_copy_choose(struct softgpu_copy_tuner *t, unsigned cls, uint64_t n)
{
    struct softgpu_copy_ticket k;
    memset(&k, 0, sizeof k);
    k.path = SOFTGPU_PATH_CACHED;
    /* Only copies of 1 MiB or more of an operation of 1 MiB or more are
     * measured and counted: the 4 KiB runs of a scattered virtual
     * transfer stay plain memcpy, with no atomics or clock reads, and do
     * not blur the class's estimates. */
    int tuned = cls >= SOFTGPU_COPY_TUNE_MIN && cls < SOFTGPU_COPY_CLASSES && n >= ((uint64_t)1 << SOFTGPU_COPY_TUNE_MIN);
    if (t->fixed) {
        if (tuned)
            atomic_fetch_add_explicit(&t->cls[cls].copies, 1u, memory_order_relaxed);
        k.path = n >= t->threshold && n >= 256 ? SOFTGPU_PATH_STREAM : SOFTGPU_PATH_CACHED;
        return k;
    }
    if (!tuned)
        return k;
    struct softgpu_copy_class *c = &t->cls[cls];
    uint32_t i = atomic_fetch_add_explicit(&c->copies, 1u, memory_order_relaxed);
    const uint32_t run = softgpu_copy_run(cls), timed = run > 2u ? run - 2u : 0u; /* from copy "timed" of a run */
    uint32_t m0 = atomic_load_explicit(&c->mbps[SOFTGPU_PATH_CACHED], memory_order_relaxed);
    uint32_t m1 = atomic_load_explicit(&c->mbps[SOFTGPU_PATH_STREAM], memory_order_relaxed);
    k.index = i;
    if (!m0 || !m1 || i < 2u * run) {
        /* Learning: a run of cached copies, then one of streaming ones
         * (again while a path is unmeasured); the last two of a run are
         * timed, the first ones settle the caches. */
        k.path = (i / run) & 1u ? SOFTGPU_PATH_STREAM : SOFTGPU_PATH_CACHED;
        k.time = k.sample = i % run >= timed;
        return k;
    }
    int win = softgpu_copy_winner(m0, m1);
    if (!atomic_load_explicit(&c->period, memory_order_relaxed)) {
        /* Learning just ended: another run on the slower path soon, to
         * confirm a choice made on two timings each. */
        atomic_store_explicit(&c->period, SOFTGPU_COPY_EXPLORE, memory_order_relaxed);
        atomic_store_explicit(&c->next_explore, i + SOFTGPU_COPY_CONFIRM, memory_order_relaxed);
    }
    uint32_t d = i - atomic_load_explicit(&c->next_explore, memory_order_relaxed);
    k.path = win;
    /* One steady copy in SOFTGPU_COPY_SAMPLE is timed: reading the clock costs
     * about a microsecond on a guest whose clock is not in the vDSO,
     * 0.7% of a 2 MiB copy. */
    k.time = k.sample = i % SOFTGPU_COPY_SAMPLE == 0;
    if (d < run) {
        /* A run on the other path: every copy timed for its cost, the
         * last two for the path's estimate.  It keeps the path it started
         * on, even if its first timing makes that path the faster one. */
        if (d == 0) {
            atomic_store_explicit(&c->explore_path, (uint32_t)!win, memory_order_relaxed);
            atomic_store_explicit(&c->run_ns, 0, memory_order_relaxed);
        }
        k.path = (int)atomic_load_explicit(&c->explore_path, memory_order_relaxed);
        k.time = 1;
        k.sample = d >= timed;
        k.explore = 1;
        k.last = d == run - 1u;
        /* The next run; softgpu_copy_record spaces it from this one's cost. */
        if (k.last)
            atomic_store_explicit(&c->next_explore,
                                  i + 1u + atomic_load_explicit(&c->period, memory_order_relaxed),
                                  memory_order_relaxed);
    }
    return k;
}

void softgpu_copy_record(struct softgpu_copy_tuner *t, unsigned cls, struct softgpu_copy_ticket k, uint64_t n, uint64_t ns)
{
    if (cls >= SOFTGPU_COPY_CLASSES || (k.path != SOFTGPU_PATH_CACHED && k.path != SOFTGPU_PATH_STREAM))
        return;
    if (ns == 0)
        ns = 1;
    struct softgpu_copy_class *c = &t->cls[cls];
    if (k.sample) {
        uint64_t mbps = n * 1000u / ns; /* bytes per microsecond = MB/s */
        if (mbps == 0)
            mbps = 1;
        if (mbps > UINT32_MAX)
            mbps = UINT32_MAX;
        _Atomic uint32_t *e = &c->mbps[k.path];
        uint32_t old = atomic_load_explicit(e, memory_order_relaxed);
        /* What slows a copy down (a preemption, a page touched for the
         * first time, lines another path left dirty) only ever slows it,
         * so the estimate rises to a faster figure at once and sinks
         * towards a slower one by a quarter: one bad copy does not condemn
         * a path, a lasting slowdown does within a few copies. */
        uint64_t v = mbps >= old ? mbps : ((uint64_t)old * 3u + mbps) / 4u;
        atomic_store_explicit(e, (uint32_t)(v ? v : 1u), memory_order_relaxed);
    }
    if (!k.explore)
        return;
    uint64_t run = atomic_fetch_add_explicit(&c->run_ns, ns, memory_order_relaxed) + ns;
    if (!k.last)
        return;
    uint32_t m0 = atomic_load_explicit(&c->mbps[SOFTGPU_PATH_CACHED], memory_order_relaxed);
    uint32_t m1 = atomic_load_explicit(&c->mbps[SOFTGPU_PATH_STREAM], memory_order_relaxed);
    uint32_t best = m0 > m1 ? m0 : m1;
    uint32_t period = softgpu_copy_period(run, best ? n * 1000u / best : 0, softgpu_copy_run(cls));
    atomic_store_explicit(&c->period, period, memory_order_relaxed);
    atomic_store_explicit(&c->next_explore, k.index + 1u + period, memory_order_relaxed);
}

int softgpu_copy_class_info(const struct softgpu_copy_tuner *t, unsigned cls, uint32_t *copies, uint32_t *cached_mbps,
                       uint32_t *stream_mbps)
{
    /* C11's atomic loads take a pointer to non-const. */
    struct softgpu_copy_class *k = (struct softgpu_copy_class *)(uintptr_t)&t->cls[cls];
    *copies = atomic_load_explicit(&k->copies, memory_order_relaxed);
    *cached_mbps = atomic_load_explicit(&k->mbps[SOFTGPU_PATH_CACHED], memory_order_relaxed);
    *stream_mbps = atomic_load_explicit(&k->mbps[SOFTGPU_PATH_STREAM], memory_order_relaxed);
    if (t->fixed)
        return -1;
    if (!*cached_mbps || !*stream_mbps)
        return SOFTGPU_PATH_CACHED;
    return softgpu_copy_winner(*cached_mbps, *stream_mbps);
}

#if defined(__SSE2__)
/* One 64-byte line: unaligned loads, streaming stores (d 16-byte aligned). */
static inline void softgpu_stream_line(uint8_t *d, const uint8_t *s)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
    _mm_stream_si128((__m128i *)(void *)d, a);
    _mm_stream_si128((__m128i *)(void *)(d + 16), b);
    _mm_stream_si128((__m128i *)(void *)(d + 32), c);
    _mm_stream_si128((__m128i *)(void *)(d + 48), e);
}

/* n >= 256 bytes with streaming stores. */
static void softgpu_copy_stream(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    softgpu_asan_check(dst, src, n);
    uint64_t i = 0;
    /* Head: until the destination is 16-byte aligned (streaming stores
     * need it; loads may be unaligned). */
    while ((uintptr_t)(dst + i) & 15u)
        i++;
    memcpy(dst, src, (size_t)i);
    uint64_t m = (n - i) & ~(uint64_t)63;
    const uint8_t *s = src + i;
    uint8_t *d = dst + i;
    /* Four pages at a time, a line of each in turn: four streams the
     * memory controller serves in parallel, as glibc's large copy does
     * (docs/PERFORMANCE.md "Four pages side by side").  The source is
     * prefetched two groups ahead, except in the last two groups (a
     * prefetch past the end of the source could touch an unmapped page
     * of a sparse segment; prefetches never fault, but they are wasted). */
    uint64_t group = SOFTGPU_COPY_PAGES * 4096u;
    uint64_t grouped = m / group * group;
    uint64_t fetched = grouped > SOFTGPU_COPY_PREFETCH ? grouped - SOFTGPU_COPY_PREFETCH : 0;
    for (uint64_t g = 0; g < grouped; g += group) {
        int pf = g < fetched;
        for (uint64_t l = 0; l < 4096u; l += 64)
            for (uint64_t pg = 0; pg < group; pg += 4096u) {
                if (pf)
                    _mm_prefetch((const char *)(s + g + pg + l + SOFTGPU_COPY_PREFETCH), _MM_HINT_T0);
                softgpu_stream_line(d + g + pg + l, s + g + pg + l);
            }
    }
    s += grouped;
    d += grouped;
    m -= grouped;
    i += grouped;
    for (uint64_t o = 0; o < m; o += 64)
        softgpu_stream_line(d + o, s + o);
    _mm_sfence(); /* streaming stores are weakly ordered: done before the fence signals */
    i += m;
    memcpy(dst + i, src + i, (size_t)(n - i));
}
#endif

static uint64_t softgpu_copy_now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void softgpu_copy(struct softgpu *sg, uint8_t *dst, const uint8_t *src, uint64_t n, unsigned op_class)
{
#if defined(__SSE2__)
    struct softgpu_copy_ticket k = softgpu_copy_choose(&sg->copy_tuner, op_class, n);
    uint64_t t0 = k.time ? softgpu_copy_now_ns() : 0;
    if (k.path == SOFTGPU_PATH_STREAM)
        softgpu_copy_stream(dst, src, n);
    else
        memcpy(dst, src, (size_t)n);
    if (t0) {
        uint64_t t1 = softgpu_copy_now_ns();
        if (t1 > t0)
            softgpu_copy_record(&sg->copy_tuner, op_class, k, n, t1 - t0);
    }
#else
    (void)sg;
    (void)op_class;
    memcpy(dst, src, (size_t)n);
#endif
}

uint32_t softgpu_get_copy_paths(const struct softgpu *sg, struct softgpu_copy_path *out, uint32_t max)
{
    if (!sg)
        return 0;
    uint32_t n = 0;
    for (unsigned c = SOFTGPU_COPY_TUNE_MIN; c < SOFTGPU_COPY_CLASSES; c++) {
        uint32_t copies, m0, m1;
        int path = softgpu_copy_class_info(&sg->copy_tuner, c, &copies, &m0, &m1);
        if (!copies)
            continue;
        if (out && n < max) {
            out[n].min_size = (uint64_t)1 << c;
            out[n].copies = copies;
            out[n].path = path < 0 ? SOFTGPU_COPY_FIXED : path == SOFTGPU_PATH_STREAM ? SOFTGPU_COPY_STREAMING
                                                                                  : SOFTGPU_COPY_CACHED;
            out[n].cached_mbps = m0;
            out[n].streaming_mbps = m1;
        }
        n++;
    }
    return n;
}
