/*
 * evict_bench.c - workload E of docs/PERFORMANCE.md: eviction under
 * over-commitment, over vidmm's range allocator.
 *
 * A 4 GiB range (4 KiB chunk) is filled with A-distribution requests until
 * the first one fails (untimed); then R requests follow: 80% from the A
 * distribution, 20% contiguous surfaces of 4, 8, 16 or 32 MiB (uniform,
 * 64 KiB aligned; a 64 KiB-granular 4..32 MiB variant is run once for
 * comparison).  Before each request, with p = 0.5, a random live
 * allocation is touched (moved to the MRU end of the LRU list).  Nothing
 * is freed except by eviction, so in steady state nearly every request
 * evicts.  When a request does not fit:
 *
 *   naive    free the LRU head and retry until vidmm_ra_alloc succeeds;
 *   scan     vidmm_evict_scan fed the whole LRU list from its head until a
 *            hole can be formed (drm_mm_scan's roster, i915 style), free
 *            the victims it names, then vidmm_ra_alloc, which must succeed
 *            at once (a second failure is counted as a fail);
 *   walk     the same scan fed the first COMPACT_PREFIX blocks of the LRU
 *            list, then only the blocks of the request's size class and
 *            above further down the list (a policy-order walk with a size
 *            filter), then the rest;
 *   compact  the same scan fed the first COMPACT_PREFIX blocks of the LRU
 *            list, then the oldest blocks of the request's size class and
 *            above in age order, taken from per-size-class LRU lists
 *            (class = floor(log2(size / 4 KiB))) without walking the
 *            global list, then (rarely) the rest of the LRU list.
 *
 * Reported per mode: ns per request (the whole timed loop - touch,
 * allocation attempts, scans, evictions, LRU and occupancy bookkeeping -
 * divided by R, wall clock, and the thread's CPU time, which excludes the
 * time the shared machine runs other jobs), mean occupancy (live bytes /
 * 4 GiB sampled after every request), evictions per request, scans per
 * request and the mean roster (blocks added per scan).  The request
 * stream (sizes and touch draws) is pre-generated per seed and identical
 * for every mode; a touch draw r picks live[r % live count].  One
 * discarded warm-up run, then SEEDS seeds (5; 3 with --quick), the modes
 * interleaved per seed; medians over the seeds, as for the peers.
 * Table 1 runs naive and compact over R = 200 K requests (50 K with
 * --quick); table 2 runs all four over the first R2 = 50 K (20 K), since
 * scan and walk cost tens of microseconds per request.  Table 4, when an
 * E peer is linked (peers.h), runs naive LRU and the LRU-order scan over
 * the peer hook for vidmm and every peer on table 2's requests, and
 * prints the verdicts against drm_mm's scan measured there.
 *
 * --check: vidmm_ra_check every 4096 requests and at the end, live-byte
 * accounting against the allocator after every request, and for every
 * scan: victims are live roster blocks overlapping [hole, hole+size), the
 * hole is aligned and inside the range, and the allocation fits right
 * after; it also reports the victims' mean LRU position (0 = the LRU
 * head, 1 = the MRU end; an O(n) walk per scan).
 */
#include "bench.h"
#include "evict_bench.h"
#include "peers.h"

#include "seg/evict_scan.h"
#include "seg/range_alloc.h"
#include "splitmix.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

#define E_RANGE (4 * GiB)
#define E_CHUNK (4 * KiB)
#define E_SEED UINT64_C(0x5eed2026)
#define E_NIL 0xFFFFFFFFu

/* A request: size in chunks, bit 31 = 64 KiB alignment; touch draw
 * (0 = no touch this time). */
#define RQ_A64K 0x80000000u
struct ereq {
    uint32_t arg;
    uint32_t touch;
};

static uint64_t rq_size(uint32_t arg) { return (uint64_t)(arg & ~RQ_A64K) * E_CHUNK; }
static uint64_t rq_align(uint32_t arg) { return (arg & RQ_A64K) ? 64 * KiB : E_CHUNK; }

/* The size distribution of workload A (as alloc_bench.c's pick_size). */
static uint32_t pick_a(uint64_t *s)
{
    unsigned k = 12 + (unsigned)(splitmix64_next(s) % 10);
    uint64_t size = UINT64_C(1) << k;
    if (k >= 13 && k <= 20 && (splitmix64_next(s) & 1))
        size += size / 2;
    uint32_t arg = (uint32_t)(size / E_CHUNK);
    if (size % (64 * KiB) == 0)
        arg |= RQ_A64K;
    return arg;
}

/* 4, 8, 16 or 32 MiB; or (granular) 4..32 MiB in 64 KiB steps; 64 KiB aligned. */
static uint32_t pick_surface(uint64_t *s, int granular)
{
    uint64_t steps = (28 * MiB) / (64 * KiB) + 1;
    uint64_t size = granular ? 4 * MiB + (splitmix64_next(s) % steps) * 64 * KiB : (4 * MiB) << (splitmix64_next(s) % 4);
    return (uint32_t)(size / E_CHUNK) | RQ_A64K;
}

static struct ereq *gen_requests(size_t n, uint64_t seed, int granular)
{
    struct ereq *r = bench_xmalloc(n * sizeof *r);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        r[i].arg = splitmix64_next(&s) % 5 == 0 ? pick_surface(&s, granular) : pick_a(&s);
        uint64_t t = splitmix64_next(&s);
        r[i].touch = (t & 1) ? (uint32_t)(t >> 33) | 1u : 0;
    }
    return r;
}

/* ------------------------------------------------------------------ */
/* Live set: random pick (live[]), LRU list (prev/next), ids recycled.  */
/* ------------------------------------------------------------------ */

#define E_CLASSES 128  /* size classes: 4 per power of two (see size_class) */

struct eid {
    uint32_t node;          /* range-allocator node */
    uint32_t pos;           /* index in live[] */
    uint32_t prev, next;    /* LRU: head = least recently used */
    uint32_t cprev, cnext;  /* LRU of its size class (compact mode) */
    uint32_t cls;           /* size class (size_class) */
    uint32_t chunks;        /* size in chunks */
    uint64_t ts;            /* last use (allocation or touch) */
};

struct estate {
    struct vidmm_range_alloc ra;
    struct vidmm_evict_scan scan;
    struct eid *id;
    uint32_t *live, nlive;
    uint32_t *free_ids, nfree, next_id, cap;
    uint32_t head, tail;
    uint32_t chead[E_CLASSES], ctail[E_CLASSES];
    uint64_t cmap[E_CLASSES / 64];  /* non-empty class lists */
    uint64_t clock;
    uint64_t *bytes;        /* by id, --check only */
    uint64_t live_bytes;    /* --check only (vidmm modes); always (hook) */
    const struct bench_evict_peer *peer; /* hook runs: the adapter placing ids */
    void *pctx;
};

static void es_init(struct estate *st)
{
    memset(st, 0, sizeof *st);
    if (vidmm_ra_init(&st->ra, vidmm_default_host_allocator(), E_RANGE, E_CHUNK) != VIDMM_OK) {
        fprintf(stderr, "bench: E: range allocator init failed\n");
        exit(1);
    }
    vidmm_evict_scan_init(&st->scan, vidmm_default_host_allocator());
    st->cap = (uint32_t)(E_RANGE / E_CHUNK) + 1;
    st->id = bench_xmalloc(st->cap * sizeof *st->id);
    st->live = bench_xmalloc(st->cap * sizeof *st->live);
    st->free_ids = bench_xmalloc(st->cap * sizeof *st->free_ids);
    st->bytes = bench_opts.check ? bench_xmalloc(st->cap * sizeof *st->bytes) : NULL;
    st->head = st->tail = E_NIL;
    for (int c = 0; c < E_CLASSES; c++)
        st->chead[c] = st->ctail[c] = E_NIL;
}

static void es_fini(struct estate *st)
{
    vidmm_evict_scan_fini(&st->scan);
    vidmm_ra_fini(&st->ra);
    free(st->id);
    free(st->live);
    free(st->free_ids);
    free(st->bytes);
}

/* Size class of a block or request: exact below 4 chunks, then 4 classes
 * per power of two (as the range allocator's bins, coarser), so a class
 * holds sizes within 25% of each other. */
static inline unsigned size_class(uint64_t size)
{
    uint64_t n = size / E_CHUNK;
    if (n < 4)
        return (unsigned)n;
    unsigned m = 63u - (unsigned)__builtin_clzll(n);
    return 4 * (m - 1) + (unsigned)((n >> (m - 2)) & 3);
}

/* The global LRU list and the list of the block's size class, which the
 * compact mode uses to find the oldest blocks of at least a given size. */
static inline void lru_unlink(struct estate *st, uint32_t i)
{
    struct eid *e = &st->id[i];
    if (e->prev != E_NIL) st->id[e->prev].next = e->next; else st->head = e->next;
    if (e->next != E_NIL) st->id[e->next].prev = e->prev; else st->tail = e->prev;
    if (e->cprev != E_NIL) st->id[e->cprev].cnext = e->cnext; else st->chead[e->cls] = e->cnext;
    if (e->cnext != E_NIL) st->id[e->cnext].cprev = e->cprev; else st->ctail[e->cls] = e->cprev;
    if (st->chead[e->cls] == E_NIL)
        st->cmap[e->cls / 64] &= ~(UINT64_C(1) << (e->cls % 64));
}

static inline void lru_append(struct estate *st, uint32_t i)
{
    struct eid *e = &st->id[i];
    e->prev = st->tail;
    e->next = E_NIL;
    if (st->tail != E_NIL) st->id[st->tail].next = i; else st->head = i;
    st->tail = i;
    e->cprev = st->ctail[e->cls];
    e->cnext = E_NIL;
    if (e->cprev != E_NIL) st->id[e->cprev].cnext = i; else st->chead[e->cls] = i;
    st->ctail[e->cls] = i;
    st->cmap[e->cls / 64] |= UINT64_C(1) << (e->cls % 64);
    e->ts = ++st->clock;
}

static inline void live_add(struct estate *st, uint32_t node, uint64_t size)
{
    uint32_t i = st->nfree ? st->free_ids[--st->nfree] : st->next_id++;
    st->id[i].node = node;
    st->id[i].cls = size_class(size);
    st->id[i].chunks = (uint32_t)(size / E_CHUNK);
    st->id[i].pos = st->nlive;
    st->live[st->nlive++] = i;
    lru_append(st, i);
    if (st->bytes) {
        st->bytes[i] = size;
        st->live_bytes += size;
    }
}

/* Evict id i: free its range, drop it from the live set and the LRU. */
static inline void evict(struct estate *st, uint32_t i)
{
    if (st->peer) {
        st->peer->free(st->pctx, i);
        st->live_bytes -= (uint64_t)st->id[i].chunks * E_CHUNK;
    } else {
        (void)vidmm_ra_free(&st->ra, st->id[i].node);
    }
    uint32_t p = st->id[i].pos, last = st->live[--st->nlive];
    st->live[p] = last;
    st->id[last].pos = p;
    lru_unlink(st, i);
    st->free_ids[st->nfree++] = i;
    if (st->bytes)
        st->live_bytes -= st->bytes[i];
}

/* Fill with A requests until the first failure (untimed, identical for
 * both modes). */
static void fill(struct estate *st, uint64_t seed)
{
    uint64_t s = seed ^ 0xF111;
    for (;;) {
        uint32_t arg = pick_a(&s);
        uint64_t off;
        uint32_t node;
        if (vidmm_ra_alloc(&st->ra, rq_size(arg), rq_align(arg), 0, &off, &node) != VIDMM_OK)
            return;
        live_add(st, node, rq_size(arg));
    }
}

/* ------------------------------------------------------------------ */
/* One run                                                             */
/* ------------------------------------------------------------------ */

enum { MODE_NAIVE, MODE_SCAN, MODE_COMPACT, MODE_WALK, MODES };
static const char *const mode_name[MODES] = { "naive LRU", "scan", "compact", "walk" };

/* walk / compact: blocks of the LRU head fed to the scan unconditionally. */
#define COMPACT_PREFIX 16u

struct eresult {
    double ns;              /* per request, wall clock */
    double cpu_ns;          /* per request, thread CPU time */
    double occupancy;       /* mean live bytes / range */
    double evictions;       /* per request */
    double roster;          /* blocks added per scan */
    double scans;           /* scans per request */
    double age;             /* mean LRU position of the victims, 0 = head, 1 = tail */
    uint32_t max_roster;
    uint64_t fails;         /* allocation failed after evicting the victims */
    uint64_t errors;        /* --check violations */
    uint32_t fill_live;     /* allocations after the fill */
};

static void check_scan(struct estate *st, uint64_t size, uint64_t align, struct eresult *r)
{
    const struct vidmm_evict_scan *sc = &st->scan;
    if (sc->hole % align || sc->hole + size > E_RANGE)
        r->errors++;
    uint64_t bytes = 0;
    for (uint32_t v = 0; v < sc->victim_count; v++) {
        uint32_t n = sc->victims[v].node;
        uint64_t tag = sc->victims[v].tag;
        if (tag >= st->cap || st->id[tag].node != n || st->id[tag].pos >= st->nlive ||
            st->live[st->id[tag].pos] != tag || !vidmm_evict_scan_must_evict(sc, n))
            r->errors++;
        uint64_t o = vidmm_ra_node_offset(&st->ra, n), z = vidmm_ra_node_size(&st->ra, n);
        if (o >= sc->hole + size || o + z <= sc->hole)
            r->errors++; /* a victim must overlap the hole */
        bytes += z;
    }
    if (bytes != sc->evict_bytes)
        r->errors++;
}

/* Feed the scan the blocks of lo <= size in chunks < hi in age order: a
 * merge of the heads of the non-empty class lists that can hold such
 * sizes.  Returns the last vidmm_evict_scan_add result that was not a
 * duplicate (1: found). */
static int tier(struct estate *st, uint32_t lo, uint32_t hi, uint32_t *added)
{
    uint32_t cur[E_CLASSES];
    unsigned c_lo = size_class((uint64_t)lo * E_CHUNK);
    unsigned c_hi = hi == UINT32_MAX ? E_CLASSES - 1 : size_class((uint64_t)(hi - 1) * E_CHUNK);
    uint64_t live[E_CLASSES / 64];
    for (unsigned w = 0; w < E_CLASSES / 64; w++) {
        uint64_t m = st->cmap[w];
        for (unsigned bit = 0; bit < 64; bit++) {
            unsigned c = w * 64 + bit;
            if (c < c_lo || c > c_hi)
                m &= ~(UINT64_C(1) << bit);
        }
        live[w] = m;
        for (uint64_t b = m; b; b &= b - 1) {
            unsigned c = w * 64 + (unsigned)__builtin_ctzll(b);
            cur[c] = st->chead[c];
        }
    }
    for (;;) {
        unsigned best = E_CLASSES;
        uint64_t best_ts = UINT64_MAX;
        for (unsigned w = 0; w < E_CLASSES / 64; w++)
            for (uint64_t b = live[w]; b; b &= b - 1) {
                unsigned c = w * 64 + (unsigned)__builtin_ctzll(b);
                if (st->id[cur[c]].ts < best_ts) {
                    best_ts = st->id[cur[c]].ts;
                    best = c;
                }
            }
        if (best == E_CLASSES)
            return 0;
        uint32_t i = cur[best];
        cur[best] = st->id[i].cnext;
        if (cur[best] == E_NIL)
            live[best / 64] &= ~(UINT64_C(1) << (best % 64));
        if (st->id[i].chunks < lo || st->id[i].chunks >= hi)
            continue; /* the edge classes hold other sizes too */
        int r = vidmm_evict_scan_add(&st->scan, st->id[i].node, i);
        if (r == VIDMM_E_INVALID_HANDLE) /* already added from the LRU prefix */
            continue;
        (*added)++;
        if (r != 0)
            return r;
    }
}

/* Feed the scan for (size, align) in mode's order; returns the blocks
 * added, and 1 in *found when a hole was found. */
static uint32_t plan(struct estate *st, int mode, uint64_t size, int *found)
{
    struct vidmm_evict_scan *sc = &st->scan;
    uint32_t added = 0, id = st->head;
    int r = 0;
    uint32_t limit = mode == MODE_COMPACT || mode == MODE_WALK ? COMPACT_PREFIX : UINT32_MAX;
    for (; id != E_NIL && added < limit; id = st->id[id].next) {
        added++;
        if ((r = vidmm_evict_scan_add(sc, st->id[id].node, id)) != 0)
            break;
    }
    if (r == 0 && mode == MODE_WALK) {
        /* The rest of the LRU list, blocks at least as large as the
         * request only; then everything. */
        uint32_t want = (uint32_t)(size / E_CHUNK), from = id;
        for (; id != E_NIL; id = st->id[id].next) {
            if (st->id[id].chunks < want)
                continue;
            added++;
            if ((r = vidmm_evict_scan_add(sc, st->id[id].node, id)) != 0)
                break;
        }
        for (id = from; r == 0 && id != E_NIL; id = st->id[id].next) {
            if (st->id[id].chunks >= want)
                continue;
            added++;
            r = vidmm_evict_scan_add(sc, st->id[id].node, id);
        }
    }
    if (r == 0 && mode == MODE_COMPACT) {
        /* The oldest blocks at least as large as the request, in age
         * order; then (rare: a request larger than any block with its
         * free neighbours, or blocks not aligned for it) the rest of the
         * LRU list. */
        r = tier(st, (uint32_t)(size / E_CHUNK), UINT32_MAX, &added);
        for (; r == 0 && id != E_NIL; id = st->id[id].next) {
            r = vidmm_evict_scan_add(sc, st->id[id].node, id);
            if (r == VIDMM_E_INVALID_HANDLE)
                r = 0; /* added by the tier */
            else
                added++;
        }
    }
    *found = r == 1;
    return added;
}

static void run_once(int mode, const struct ereq *rq, size_t n, uint64_t seed, struct eresult *r)
{
    struct estate st;
    es_init(&st);
    fill(&st, seed);
    memset(r, 0, sizeof *r);
    r->fill_live = st.nlive;
    const int check = bench_opts.check;
    double occ = 0, age = 0;
    uint64_t evictions = 0, scans = 0, roster = 0;
    uint32_t max_roster = 0;
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        uint32_t arg = rq[i].arg;
        if (rq[i].touch && st.nlive) {
            uint32_t id = st.live[rq[i].touch % st.nlive];
            lru_unlink(&st, id);
            lru_append(&st, id);
        }
        uint64_t size = rq_size(arg), align = rq_align(arg), off;
        uint32_t node;
        vidmm_status s;
        while ((s = vidmm_ra_alloc(&st.ra, size, align, 0, &off, &node)) != VIDMM_OK) {
            if (st.head == E_NIL)
                break;
            if (mode == MODE_NAIVE) {
                evict(&st, st.head);
                evictions++;
                continue;
            }
            if (vidmm_evict_scan_begin(&st.scan, &st.ra, size, align, 0, 0, st.nlive) != VIDMM_OK) {
                r->errors++;
                break;
            }
            int found;
            uint32_t added = plan(&st, mode, size, &found);
            scans++;
            roster += added;
            if (added > max_roster)
                max_roster = added;
            if (!found) {
                r->errors++;
                vidmm_evict_scan_end(&st.scan);
                break;
            }
            if (check) {
                check_scan(&st, size, align, r);
                /* Victim age: LRU position / live count (a walk: check only). */
                uint32_t pos = 0;
                for (uint32_t id = st.head; id != E_NIL; id = st.id[id].next, pos++)
                    if (vidmm_evict_scan_must_evict(&st.scan, st.id[id].node))
                        age += (double)pos / (double)st.nlive;
            }
            const struct vidmm_evict_victim *v = st.scan.victims;
            for (uint32_t k = 0; k < st.scan.victim_count; k++)
                evict(&st, (uint32_t)v[k].tag);
            evictions += st.scan.victim_count;
            vidmm_evict_scan_end(&st.scan);
            if ((s = vidmm_ra_alloc(&st.ra, size, align, 0, &off, &node)) != VIDMM_OK)
                r->fails++; /* must not happen: scan again */
            else
                break;
        }
        if (s == VIDMM_OK)
            live_add(&st, node, size);
        else
            r->errors++;
        occ += (double)(E_RANGE - st.ra.free_bytes);
        if (check) {
            if (st.live_bytes != E_RANGE - st.ra.free_bytes)
                r->errors++;
            if ((i & 4095) == 0 && vidmm_ra_check(&st.ra))
                r->errors++;
        }
    }
    uint64_t t1 = bench_now_ns();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    if (check && vidmm_ra_check(&st.ra))
        r->errors++;
    r->ns = (double)(t1 - t0) / (double)n;
    r->cpu_ns = ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) / (double)n;
    r->occupancy = occ / (double)n / (double)E_RANGE;
    r->evictions = (double)evictions / (double)n;
    r->scans = (double)scans / (double)n;
    r->roster = scans ? (double)roster / (double)scans : 0;
    r->age = evictions && mode != MODE_NAIVE ? age / (double)evictions : 0;
    r->max_roster = max_roster;
    es_fini(&st);
}

/* ------------------------------------------------------------------ */
/* The peer hook (peers.h): naive LRU and the LRU-order scan over any    */
/* struct bench_evict_peer, vidmm's own included, in one loop.          */
/* ------------------------------------------------------------------ */

/* vidmm's range allocator and eviction scan behind the hook. */
struct vh {
    struct vidmm_range_alloc ra;
    struct vidmm_evict_scan scan;
    uint32_t *node; /* by id */
};

static void *vh_create_any(uint64_t range, uint64_t chunk, uint32_t max_ids, int choice)
{
    struct vh *v = bench_xcalloc(sizeof *v);
    if (vidmm_ra_init(&v->ra, vidmm_default_host_allocator(), range, chunk) != VIDMM_OK) {
        free(v);
        return NULL;
    }
    vidmm_evict_scan_init(&v->scan, vidmm_default_host_allocator());
    vidmm_evict_scan_set_choice(&v->scan, choice);
    v->node = bench_xmalloc((size_t)max_ids * sizeof *v->node);
    return v;
}

/* drm_mm's policy: the LRU roster (the bench's) and the lowest position
 * of the run that holds the request (drm_mm_scan's hit_start). */
static void *vh_create(uint64_t range, uint64_t chunk, uint32_t max_ids)
{
    return vh_create_any(range, chunk, max_ids, VIDMM_EVICT_LOWEST);
}

/* vidmm's default choice: the position that evicts the fewest bytes. */
static void *vh_create_fewest(uint64_t range, uint64_t chunk, uint32_t max_ids)
{
    return vh_create_any(range, chunk, max_ids, VIDMM_EVICT_FEWEST_BYTES);
}

static void vh_destroy(void *p)
{
    struct vh *v = p;
    vidmm_evict_scan_fini(&v->scan);
    vidmm_ra_fini(&v->ra);
    free(v->node);
    free(v);
}

static int vh_alloc(void *p, uint32_t id, uint64_t size, uint64_t align, int after_scan)
{
    struct vh *v = p;
    uint64_t off;
    (void)after_scan;
    return vidmm_ra_alloc(&v->ra, size, align, 0, &off, &v->node[id]) != VIDMM_OK;
}

static void vh_free(void *p, uint32_t id)
{
    struct vh *v = p;
    (void)vidmm_ra_free(&v->ra, v->node[id]);
}

static void vh_scan_begin(void *p, uint64_t size, uint64_t align)
{
    struct vh *v = p;
    /* A failure leaves no scan in progress: every add then fails and the
     * bench counts the request as an error. */
    (void)vidmm_evict_scan_begin(&v->scan, &v->ra, size, align, 0, 0, (uint32_t)v->ra.live_count);
}

static int vh_scan_add(void *p, uint32_t id)
{
    struct vh *v = p;
    return vidmm_evict_scan_add(&v->scan, v->node[id], id) == 1;
}

static void vh_scan_end(void *p, void (*victim)(void *ctx, uint32_t id), void *ctx)
{
    struct vh *v = p;
    if (v->scan.found)
        for (uint32_t k = 0; k < v->scan.victim_count; k++)
            victim(ctx, (uint32_t)v->scan.victims[k].tag);
    vidmm_evict_scan_end(&v->scan);
}

static const struct bench_evict_peer VH = { "vidmm_range", vh_create, vh_destroy, vh_alloc, vh_free,
                                            vh_scan_begin, vh_scan_add, vh_scan_end };
static const struct bench_evict_peer VH_FEWEST = { "vidmm_range_fewest", vh_create_fewest, vh_destroy, vh_alloc,
                                                   vh_free, vh_scan_begin, vh_scan_add, vh_scan_end };

/* The id the next allocation gets (live_add's order), without taking it. */
static inline uint32_t id_peek(const struct estate *st)
{
    return st->nfree ? st->free_ids[st->nfree - 1] : st->next_id;
}

static inline void hk_live_add(struct estate *st, uint32_t i, uint64_t size)
{
    if (st->nfree && st->free_ids[st->nfree - 1] == i)
        st->nfree--;
    else
        st->next_id++;
    st->id[i].cls = size_class(size);
    st->id[i].chunks = (uint32_t)(size / E_CHUNK);
    st->id[i].pos = st->nlive;
    st->live[st->nlive++] = i;
    lru_append(st, i);
    st->live_bytes += size;
}

struct hk_victims {
    uint32_t *v;
    uint32_t n;
};

static void hk_victim(void *ctx, uint32_t id)
{
    struct hk_victims *hv = ctx;
    hv->v[hv->n++] = id;
}

/* As run_once, over the hook: MODE_NAIVE or MODE_SCAN (the whole LRU list
 * from its head, drm_mm_scan's i915 roster).  The bookkeeping (LRU, size
 * class lists, occupancy) is run_once's, so the hook rows of vidmm and of
 * a peer differ only in the adapter. */
static void run_hook_once(const struct bench_evict_peer *p, int mode, const struct ereq *rq, size_t n, uint64_t seed,
                          struct eresult *r)
{
    struct estate st;
    es_init(&st);
    st.peer = p;
    st.pctx = p->create(E_RANGE, E_CHUNK, st.cap);
    if (!st.pctx) {
        fprintf(stderr, "bench: E: %s: create failed\n", p->name);
        exit(1);
    }
    struct hk_victims hv = { bench_xmalloc(st.cap * sizeof *hv.v), 0 };
    uint64_t s = seed ^ 0xF111;
    for (;;) { /* fill, as fill() */
        uint32_t arg = pick_a(&s), i = id_peek(&st);
        if (p->alloc(st.pctx, i, rq_size(arg), rq_align(arg), 0))
            break;
        hk_live_add(&st, i, rq_size(arg));
    }
    memset(r, 0, sizeof *r);
    r->fill_live = st.nlive;
    double occ = 0;
    uint64_t evictions = 0, scans = 0, roster = 0;
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    uint64_t t0 = bench_now_ns();
    for (size_t k = 0; k < n; k++) {
        uint32_t arg = rq[k].arg;
        if (rq[k].touch && st.nlive) {
            uint32_t id = st.live[rq[k].touch % st.nlive];
            lru_unlink(&st, id);
            lru_append(&st, id);
        }
        uint64_t size = rq_size(arg), align = rq_align(arg);
        uint32_t i = id_peek(&st);
        int err = p->alloc(st.pctx, i, size, align, 0);
        while (err && st.head != E_NIL) {
            if (mode == MODE_NAIVE) {
                evict(&st, st.head);
                evictions++;
                i = id_peek(&st);
                err = p->alloc(st.pctx, i, size, align, 0);
                continue;
            }
            uint32_t added = 0;
            int found = 0;
            p->scan_begin(st.pctx, size, align);
            for (uint32_t id = st.head; id != E_NIL; id = st.id[id].next) {
                added++;
                if (p->scan_add(st.pctx, id)) {
                    found = 1;
                    break;
                }
            }
            hv.n = 0;
            p->scan_end(st.pctx, hk_victim, &hv);
            scans++;
            roster += added;
            if (added > r->max_roster)
                r->max_roster = added;
            if (!found) {
                r->errors++;
                break;
            }
            for (uint32_t v = 0; v < hv.n; v++)
                evict(&st, hv.v[v]);
            evictions += hv.n;
            i = id_peek(&st);
            err = p->alloc(st.pctx, i, size, align, 1);
            if (err)
                r->fails++; /* must not happen: scan again */
        }
        if (!err)
            hk_live_add(&st, i, size);
        else
            r->errors++;
        occ += (double)st.live_bytes;
    }
    uint64_t t1 = bench_now_ns();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    r->ns = (double)(t1 - t0) / (double)n;
    r->cpu_ns = ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) / (double)n;
    r->occupancy = occ / (double)n / (double)E_RANGE;
    r->evictions = (double)evictions / (double)n;
    r->scans = (double)scans / (double)n;
    r->roster = scans ? (double)roster / (double)scans : 0;
    p->destroy(st.pctx);
    st.peer = NULL;
    free(hv.v);
    es_fini(&st);
}

enum { MAXSEEDS = 5, NF = 6 };

static void print_head(void)
{
    printf("  %-9s %4s %10s %9s %9s %9s %9s %8s %6s %5s%s\n", "mode", "seed", "ns/req", "cpu ns", "occupancy",
           "evict/req", "scans/req", "roster", "max", "fails", bench_opts.check ? "  victim age" : "");
}

static void print_res(const char *label, int seed, const struct eresult *r)
{
    char sd[16];
    if (seed < 0)
        snprintf(sd, sizeof sd, "med");
    else
        snprintf(sd, sizeof sd, "%d", seed);
    printf("  %-9s %4s %10.1f %9.1f %9.5f %9.3f %9.3f %8.1f %6" PRIu32 " %5" PRIu64, label, sd, r->ns, r->cpu_ns,
           r->occupancy, r->evictions, r->scans, r->roster, r->max_roster, r->fails + r->errors);
    if (bench_opts.check && seed >= 0)
        printf("  %.3f%s", r->age, r->errors ? "  CHECK FAILED" : "  check ok");
    printf("\n");
}

/* Run the modes in mask on seeds [0, seeds), interleaved; print one row
 * per run and the medians; res[m] receives the medians. */
static void run_table(unsigned mask, size_t n, int seeds, int granular, struct eresult med[],
                      double ratio_cn[], uint64_t *errors)
{
    static struct eresult res[MAXSEEDS][MODES];
    print_head();
    for (int k = 0; k < seeds; k++) {
        uint64_t seed = (E_SEED ^ 0xE) + (uint64_t)k;
        struct ereq *rq = gen_requests(n, seed, granular);
        for (int m = 0; m < MODES; m++) {
            if (!(mask & (1u << m)))
                continue;
            run_once(m, rq, n, seed, &res[k][m]);
            *errors += res[k][m].errors + res[k][m].fails;
            print_res(mode_name[m], k, &res[k][m]);
        }
        if ((mask & (1u << MODE_COMPACT)) && (mask & (1u << MODE_NAIVE)))
            ratio_cn[k] = res[k][MODE_COMPACT].ns / res[k][MODE_NAIVE].ns;
        free(rq);
    }
    for (int m = 0; m < MODES; m++) {
        if (!(mask & (1u << m)))
            continue;
        double v[NF][MAXSEEDS];
        for (int k = 0; k < seeds; k++) {
            v[0][k] = res[k][m].ns;
            v[1][k] = res[k][m].cpu_ns;
            v[2][k] = res[k][m].occupancy;
            v[3][k] = res[k][m].evictions;
            v[4][k] = res[k][m].scans;
            v[5][k] = res[k][m].roster;
        }
        memset(&med[m], 0, sizeof med[m]);
        med[m].ns = bench_median(v[0], seeds);
        med[m].cpu_ns = bench_median(v[1], seeds);
        med[m].occupancy = bench_median(v[2], seeds);
        med[m].evictions = bench_median(v[3], seeds);
        med[m].scans = bench_median(v[4], seeds);
        med[m].roster = bench_median(v[5], seeds);
        for (int k = 0; k < seeds; k++)
            if (res[k][m].max_roster > med[m].max_roster)
                med[m].max_roster = res[k][m].max_roster;
        print_res(mode_name[m], -1, &med[m]);
    }
}

/* Table 4: naive LRU and the LRU-order scan over the hook, vidmm's range
 * allocator and every linked E peer interleaved per seed, on table 2's
 * requests; then the same-run verdicts against the peer named
 * "drm_mm" (if linked): vidmm's scan with drm_mm's policy (the LRU list
 * from its head) no slower than drm_mm's own, compact at most half of it,
 * naive LRU at most twice the peer's naive LRU. */
static void hook_table(size_t n, int seeds, const struct eresult med2[], uint64_t *errors)
{
    enum { MAXP = 4, OURS = 2 };
    const struct bench_evict_peer *ads[OURS + MAXP] = { &VH, &VH_FEWEST };
    size_t na = OURS;
    for (size_t i = 0; bench_evict_peers[i] && na < OURS + MAXP; i++)
        ads[na++] = bench_evict_peers[i];
    int dm = -1;
    for (size_t a = OURS; a < na; a++)
        if (!strcmp(ads[a]->name, "drm_mm"))
            dm = (int)a;
    if (na == OURS) {
        printf("  verdicts against drm_mm's scan: none (no E peer linked through bench_evict_peers; the peer kit's\n"
               "  compare.sh runs its e_drm_mm harness right after this run: compare the median 'scan' rows,\n"
               "  scan (LRU order) target <= 1.0x drm_mm_scan, compact <= 0.5x)\n");
        return;
    }
    static struct eresult res[MAXSEEDS][OURS + MAXP][2];
    printf(" table 4: the first %zu requests through the peer hook (peers.h), naive LRU and the LRU-order scan\n", n);
    printf("  %-20s", "adapter");
    print_head();
    for (int k = 0; k < seeds; k++) {
        uint64_t seed = (E_SEED ^ 0xE) + (uint64_t)k;
        struct ereq *rq = gen_requests(n, seed, 0);
        for (size_t a = 0; a < na; a++)
            for (int m = 0; m < 2; m++) {
                run_hook_once(ads[a], m ? MODE_SCAN : MODE_NAIVE, rq, n, seed, &res[k][a][m]);
                *errors += res[k][a][m].errors + res[k][a][m].fails;
                printf("  %-20s", ads[a]->name);
                print_res(mode_name[m ? MODE_SCAN : MODE_NAIVE], k, &res[k][a][m]);
            }
        free(rq);
    }
    double med[OURS + MAXP][2];
    for (size_t a = 0; a < na; a++)
        for (int m = 0; m < 2; m++) {
            double v[MAXSEEDS], o[MAXSEEDS];
            for (int k = 0; k < seeds; k++) {
                v[k] = res[k][a][m].ns;
                o[k] = res[k][a][m].occupancy;
            }
            med[a][m] = bench_median(v, seeds);
            printf("  %-20s %-9s  med %10.1f ns/req, occupancy %.5f\n", ads[a]->name,
                   mode_name[m ? MODE_SCAN : MODE_NAIVE], med[a][m], bench_median(o, seeds));
        }
    if (dm < 0) {
        printf("  verdicts against drm_mm's scan: none (no E peer named drm_mm linked)\n");
        return;
    }
    double ps = med[dm][1], pn = med[dm][0];
    printf("  verdict vidmm scan, drm_mm's policy (LRU roster, lowest position), through the hook / drm_mm scan = "
           "%.1f / %.1f = %.2fx, same run (target <= 1.00x: %s)\n", med[0][1], ps, med[0][1] / ps,
           med[0][1] <= ps ? "met" : "MISSED");
    printf("  vidmm scan, LRU roster, fewest bytes, through the hook / drm_mm scan = %.2fx, same run\n", med[1][1] / ps);
    printf("  vidmm scan, LRU roster, fewest bytes, direct (table 2) / drm_mm scan = %.2fx, same run\n", med2[MODE_SCAN].ns / ps);
    printf("  verdict compact (table 2) / drm_mm scan = %.1f / %.1f = %.2fx, same run (target <= 0.50x: %s)\n",
           med2[MODE_COMPACT].ns, ps, med2[MODE_COMPACT].ns / ps, med2[MODE_COMPACT].ns <= 0.5 * ps ? "met" : "MISSED");
    printf("  verdict naive LRU through the hook / drm_mm naive LRU = %.2fx, same run (target <= 2.00x: %s)\n",
           med[0][0] / pn, med[0][0] <= 2 * pn ? "met" : "MISSED");
}

void bench_evict(void)
{
    if (!bench_only("E"))
        return;
    int seeds = bench_opts.quick ? 3 : MAXSEEDS;
    size_t n = bench_opts.quick ? 50000 : 200000;
    size_t n2 = bench_opts.quick ? 20000 : 50000;
    uint64_t t0 = bench_now_ns(), errors = 0;
    struct eresult med1[MODES], med2[MODES], medg[MODES];
    double ratio1[MAXSEEDS], ratio2[MAXSEEDS], ratiog[MAXSEEDS];

    printf("\nE: over-commitment, 4 GiB range, 4 KiB chunk: A-distribution fill to the first failure, then "
           "requests of 80%% A, 20%% 4/8/16/32 MiB surfaces, touch p=0.5; medians of %d seeds after 1 "
           "warm-up run%s\n", seeds, bench_opts.check ? "; --check" : "");
    {
        struct ereq *rq = gen_requests(n2 / 2, E_SEED ^ 0xE0, 0);
        struct eresult w;
        for (int m = 0; m < MODES; m++)
            run_once(m, rq, n2 / 2, E_SEED ^ 0xE0, &w); /* warm-up, discarded */
        free(rq);
    }
    printf(" table 1: %zu requests, naive LRU and compact\n", n);
    run_table(1u << MODE_NAIVE | 1u << MODE_COMPACT, n, seeds, 0, med1, ratio1, &errors);
    printf(" table 2: the first %zu requests, all four orders\n", n2);
    run_table((1u << MODES) - 1, n2, seeds, 0, med2, ratio2, &errors);
    printf(" table 3: %zu requests, surfaces 4..32 MiB in 64 KiB steps instead (seed 0 only)\n", n);
    run_table(1u << MODE_NAIVE | 1u << MODE_COMPACT, n, 1, 1, medg, ratiog, &errors);

    double r1 = bench_median(ratio1, seeds);
    printf("  compact / naive, ns per request, same run (table 1): median %.1fx (%.1f..%.1fx)\n", r1, ratio1[0],
           ratio1[seeds - 1]);
    printf("  table 2, same run: scan / compact %.1fx, walk / compact %.1fx, scan / naive %.0fx\n",
           med2[MODE_SCAN].ns / med2[MODE_COMPACT].ns, med2[MODE_WALK].ns / med2[MODE_COMPACT].ns,
           med2[MODE_SCAN].ns / med2[MODE_NAIVE].ns);
    const struct eresult *nv = &med1[MODE_NAIVE], *cp = &med1[MODE_COMPACT];
    printf("  verdict naive LRU occupancy %.4f (target >= 0.92: %s); compact occupancy %.5f (target >= 0.99: %s)\n",
           nv->occupancy, nv->occupancy >= 0.92 ? "met" : "MISSED", cp->occupancy,
           cp->occupancy >= 0.99 ? "met" : "MISSED");
    hook_table(n2, seeds, med2, &errors);
    if (errors) {
        printf("  E: %" PRIu64 " errors or failed allocations after a scan\n", errors);
        bench_fail();
    }
    printf("E took %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
}
