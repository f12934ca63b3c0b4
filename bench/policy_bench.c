/*
 * policy_bench.c - the eviction policies (src/policy) on a simulated
 * segment, and the cost of their callbacks.
 *
 * Simulator.  One segment of PB_CAP bytes with no fragmentation: resident
 * bytes <= capacity is the only constraint.  A reference string is a list
 * of requests; a request is a set of allocations that must all be
 * resident at once (a frame's MakeResident list).  Serving request r at
 * clock r + 1: every resident member is touched (last_use, next_use
 * refreshed); if the missing members do not fit, the policy's first/next
 * order is walked, skipping members of the request, and the entries met
 * are evicted until they fit (collected first, then removed: vidmm does
 * not change the set while it iterates); then the missing members are
 * paged in (inserted).  Paging bytes = bytes paged in + bytes paged out;
 * simulated paging time = bytes / 10 GB/s + 20 us per operation (one
 * operation per allocation paged in or out).  Belady gets next_use hints
 * from the reference string (the clock of the next request naming the
 * allocation); the online policies get the same fields and ignore them.
 *
 * Workloads (seeded; sizes 64 KiB..16 MiB, log-uniform in 64 KiB units):
 *   loop    one process cycling over 1.25..1.5x capacity, requests of 1..8
 *           consecutive allocations;
 *   drift   one process; a window of ~0.8x capacity of a 4x population
 *           slides 1.5x capacity per 6000 requests; requests draw 4..12
 *           allocations from the window with Zipf-ish popularity (a fixed
 *           rank per allocation, picked with probability ~ 1/rank);
 *   multi   four processes, interleaved by weight: HIGH game (0.5x,
 *           Zipf-ish, 40% of requests), NORMAL app (0.3x, loop, 25%),
 *           NORMAL compute (0.6x, loop, 20%), LOW background (0.6x,
 *           Zipf-ish, 15%): 2.0x capacity in all;
 *   random  control: uniform over 2x capacity, 1..8 per request;
 *   noise   drift, and one request in five also names an allocation of
 *           the whole population (a one-off load): where recency and
 *           every online rule tried lose to Belady (docs/POLICIES.md).
 * Every policy of vidmm_policies() runs each string, and Belady a second
 * time with class-major hints ("belady/cls"): the offline optimum among
 * policies that honour the priority classes.  Build with
 * -DPB_POLICIES=expr to run another NULL-terminated list.
 *
 * Callback cost.  N resident entries (N = 10^3 .. 10^6) in one segment
 * plus N/4 evicted ones: ns per touch of a random resident entry, and ns
 * per miss (first(), remove(EVICTED) of it, insert of a random evicted
 * entry).  Median of 3 timed segments after the structures are built.
 */
#include "bench.h"
#include "policy_bench.h"

#include "vidmm/policy.h"
#include "splitmix.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PB_KiB (UINT64_C(1) << 10)
#define PB_MiB (UINT64_C(1) << 20)
#define PB_GiB (UINT64_C(1) << 30)
#define PB_SEED UINT64_C(0x5eed2026)
#define PB_CAP (2 * PB_GiB)
#define PB_SEG 1u          /* simulate segment 1 of 2, so segment ids are exercised */
#define PB_NSEG 2u
#define PB_BW 10e9         /* bytes per second */
#define PB_OP_S 20e-6      /* fixed cost per paging operation */
#define PB_RUNS 3
#define PB_TARGET 1.15     /* adaptive <= 1.15x Belady on loop, drift, multi */
#ifndef PB_POLICIES        /* an experiment may compile this file with its own list */
#define PB_POLICIES vidmm_policies()
#endif

static uint64_t pb_range(uint64_t *s, uint64_t n) { return n ? splitmix64_next(s) % n : 0; }
static double pb_unit(uint64_t *s) { return (double)(splitmix64_next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* 64 KiB .. 16 MiB, log-uniform, a multiple of 64 KiB. */
static uint64_t pb_size(uint64_t *s)
{
    double f = pow(2.0, 8.0 * pb_unit(s));
    uint64_t units = (uint64_t)(f + 0.5);
    return (units ? units : 1) * 64 * PB_KiB;
}

/* ---- reference strings --------------------------------------------- */

struct pb_workload {
    const char *name;
    char what[160];
    uint32_t nalloc;
    uint64_t *size;
    uint32_t *proc;
    uint32_t *prio;
    uint32_t *hot;       /* Zipf-ish rank (1 = hottest), generators only */
    uint32_t nreq;
    uint32_t *req_off;   /* nreq + 1 offsets into ref */
    uint32_t *ref;       /* allocation indices */
    uint64_t *next;      /* per ref: clock of the next request naming it, or NEVER */
    uint32_t nref, ref_cap, req_cap;
    uint64_t bytes;      /* sum of sizes */
    uint32_t *mark;      /* generator scratch: dedup inside a request */
};

static uint32_t pb_add_alloc(struct pb_workload *w, uint64_t size, uint32_t proc, uint32_t prio, uint32_t hot)
{
    uint32_t i = w->nalloc++;
    w->size = bench_xrealloc(w->size, (size_t)w->nalloc * sizeof *w->size);
    w->proc = bench_xrealloc(w->proc, (size_t)w->nalloc * sizeof *w->proc);
    w->prio = bench_xrealloc(w->prio, (size_t)w->nalloc * sizeof *w->prio);
    w->hot = bench_xrealloc(w->hot, (size_t)w->nalloc * sizeof *w->hot);
    w->size[i] = size;
    w->proc[i] = proc;
    w->prio[i] = prio;
    w->hot[i] = hot;
    w->bytes += size;
    return i;
}

static void pb_begin_req(struct pb_workload *w)
{
    if (!w->req_off) {
        w->req_cap = 1024;
        w->req_off = bench_xcalloc(w->req_cap * sizeof *w->req_off);
        w->req_off[0] = 0;
        w->mark = bench_xcalloc((size_t)w->nalloc * sizeof *w->mark);
    }
    if (w->nreq + 2 > w->req_cap) {
        w->req_cap *= 2;
        w->req_off = bench_xrealloc(w->req_off, w->req_cap * sizeof *w->req_off);
    }
}

/* Adds a to the open request unless it is already in it. */
static void pb_ref(struct pb_workload *w, uint32_t a)
{
    if (w->mark[a] == w->nreq + 1)
        return;
    w->mark[a] = w->nreq + 1;
    if (w->nref == w->ref_cap) {
        w->ref_cap = w->ref_cap ? w->ref_cap * 2 : 4096;
        w->ref = bench_xrealloc(w->ref, w->ref_cap * sizeof *w->ref);
    }
    w->ref[w->nref++] = a;
}

static void pb_end_req(struct pb_workload *w)
{
    if (w->nref > w->req_off[w->nreq])
        w->req_off[++w->nreq] = w->nref;
}

/* next-use clocks: one backward pass. */
static void pb_finish(struct pb_workload *w)
{
    uint64_t *seen = bench_xcalloc((size_t)w->nalloc * sizeof *seen);
    for (uint32_t a = 0; a < w->nalloc; a++)
        seen[a] = VIDMM_NEXT_USE_NEVER;
    w->next = bench_xcalloc((size_t)w->nref * sizeof *w->next);
    for (uint32_t r = w->nreq; r-- > 0;)
        for (uint32_t i = w->req_off[r]; i < w->req_off[r + 1]; i++) {
            w->next[i] = seen[w->ref[i]];
            seen[w->ref[i]] = (uint64_t)r + 1;
        }
    free(seen);
    free(w->mark);
    w->mark = NULL;
}

static void pb_free_workload(struct pb_workload *w)
{
    free(w->size);
    free(w->proc);
    free(w->prio);
    free(w->hot);
    free(w->req_off);
    free(w->ref);
    free(w->next);
    free(w->mark);
    memset(w, 0, sizeof *w);
}

/* Allocations of one process totalling at least bytes; returns the first index. */
static uint32_t pb_population(struct pb_workload *w, uint64_t *s, uint64_t bytes, uint32_t proc, uint32_t prio)
{
    uint32_t first = w->nalloc;
    uint64_t total = 0;
    while (total < bytes) {
        uint64_t z = pb_size(s);
        /* Zipf-ish popularity: rank 1..128, picked with probability 1/rank. */
        pb_add_alloc(w, z, proc, prio, 1 + (uint32_t)pb_range(s, 128));
        total += z;
    }
    return first;
}

/* A Zipf-ish pick among the len allocations from lo (modulo total, so a
 * window may wrap around the population) by rejection: uniform, kept
 * with probability 1/rank. */
static uint32_t pb_zipf_pick(const struct pb_workload *w, uint64_t *s, uint32_t lo, uint32_t len, uint32_t total)
{
    for (;;) {
        uint32_t a = (uint32_t)(((uint64_t)lo + pb_range(s, len)) % total);
        if (pb_range(s, w->hot[a]) == 0)
            return a;
    }
}

static void pb_gen_loop(struct pb_workload *w, uint64_t seed, int quick)
{
    uint64_t s = seed ^ 0x100f;
    double ratio = 1.25 + 0.25 * pb_unit(&s);
    uint32_t base = pb_population(w, &s, (uint64_t)(ratio * (double)PB_CAP), 1, VIDMM_PRIORITY_NORMAL);
    uint32_t n = w->nalloc - base, cycles = quick ? 6 : 16;
    w->name = "loop";
    snprintf(w->what, sizeof w->what, "one process cycles %" PRIu32 " times over all its allocations, 1..8 "
             "consecutive ones per request", cycles);
    for (uint32_t c = 0; c < cycles; c++)
        for (uint32_t pos = 0; pos < n;) {
            uint32_t k = 1 + (uint32_t)pb_range(&s, 8);
            pb_begin_req(w);
            for (uint32_t j = 0; j < k && pos < n; j++, pos++)
                pb_ref(w, base + pos);
            pb_end_req(w);
        }
    pb_finish(w);
}

/* A window of ~0.8x capacity sliding over a 4x population; one request
 * in oneoff (0 = none) also names an allocation of the whole population. */
static void pb_gen_window(struct pb_workload *w, uint64_t seed, int quick, uint32_t oneoff)
{
    uint64_t s = seed ^ 0xd21f7;
    uint32_t nreq = quick ? 6000 : 24000;
    pb_population(w, &s, 4 * PB_CAP, 1, VIDMM_PRIORITY_NORMAL);
    uint32_t n = w->nalloc;
    /* Window [lo, lo + len) of the ring of allocations. */
    uint32_t lo = 0, len = 0;
    uint64_t wbytes = 0, target = PB_CAP * 8 / 10;
    while (wbytes < target)
        wbytes += w->size[len++];
    /* Slide 1.5x capacity per 6000 requests (the --quick length), so a
     * full run slides 6x and comes round the population again. */
    uint32_t steps = 0;
    for (uint64_t b = 0; b < PB_CAP * 3 / 2; steps++)
        b += w->size[(len + steps) % n];
    uint32_t every = 6000 / steps ? 6000 / steps : 1;
    for (uint32_t r = 0; r < nreq; r++) {
        if (r && r % every == 0) {
            wbytes -= w->size[lo];
            lo = (lo + 1) % n;
            len--;
            while (wbytes < target) {
                wbytes += w->size[(lo + len) % n];
                len++;
            }
        }
        uint32_t k = 4 + (uint32_t)pb_range(&s, 9);
        pb_begin_req(w);
        for (uint32_t j = 0; j < k; j++)
            pb_ref(w, pb_zipf_pick(w, &s, lo, len, n));
        if (oneoff && pb_range(&s, oneoff) == 0)
            pb_ref(w, (uint32_t)pb_range(&s, n));
        pb_end_req(w);
    }
    pb_finish(w);
}

static void pb_gen_drift(struct pb_workload *w, uint64_t seed, int quick)
{
    pb_gen_window(w, seed, quick, 0);
    w->name = "drift";
    snprintf(w->what, sizeof w->what, "a window of 0.8x capacity slides over a 4x population (1.5x capacity per "
             "6000 requests), 4..12 Zipf-ish picks per request");
}

static void pb_gen_noise(struct pb_workload *w, uint64_t seed, int quick)
{
    pb_gen_window(w, seed, quick, 5);
    w->name = "noise";
    snprintf(w->what, sizeof w->what, "drift, and 1 request in 5 also names a random allocation of the population "
             "(one-off loads)");
}

struct pb_proc {
    uint32_t prio;
    double share;     /* of capacity */
    int loop;         /* cyclic scan, else Zipf-ish picks */
    uint32_t weight;  /* share of requests, percent */
    uint32_t base, n, pos;
};

static void pb_gen_multi(struct pb_workload *w, uint64_t seed, int quick)
{
    uint64_t s = seed ^ 0x3317;
    uint32_t nreq = quick ? 6000 : 24000;
    struct pb_proc p[4] = {
        {VIDMM_PRIORITY_HIGH, 0.5, 0, 40, 0, 0, 0},
        {VIDMM_PRIORITY_NORMAL, 0.3, 1, 25, 0, 0, 0},
        {VIDMM_PRIORITY_NORMAL, 0.6, 1, 20, 0, 0, 0},
        {VIDMM_PRIORITY_LOW, 0.6, 0, 15, 0, 0, 0},
    };
    for (uint32_t i = 0; i < 4; i++) {
        p[i].base = pb_population(w, &s, (uint64_t)(p[i].share * (double)PB_CAP), i + 1, p[i].prio);
        p[i].n = w->nalloc - p[i].base;
    }
    w->name = "multi";
    snprintf(w->what, sizeof w->what, "4 processes: HIGH 0.5x Zipf 40%%, NORMAL 0.3x loop 25%%, NORMAL 0.6x loop 20%%, "
             "LOW 0.6x Zipf 15%%");
    for (uint32_t r = 0; r < nreq; r++) {
        uint32_t x = (uint32_t)pb_range(&s, 100), i = 0;
        while (x >= p[i].weight) {
            x -= p[i].weight;
            i++;
        }
        uint32_t k = (p[i].loop ? 1 : 4) + (uint32_t)pb_range(&s, 8);
        pb_begin_req(w);
        for (uint32_t j = 0; j < k; j++) {
            if (p[i].loop) {
                pb_ref(w, p[i].base + p[i].pos);
                p[i].pos = (p[i].pos + 1) % p[i].n;
            } else {
                pb_ref(w, pb_zipf_pick(w, &s, p[i].base, p[i].n, w->nalloc));
            }
        }
        pb_end_req(w);
    }
    pb_finish(w);
}

static void pb_gen_random(struct pb_workload *w, uint64_t seed, int quick)
{
    uint64_t s = seed ^ 0x4a4d;
    uint32_t nreq = quick ? 6000 : 24000;
    pb_population(w, &s, 2 * PB_CAP, 1, VIDMM_PRIORITY_NORMAL);
    w->name = "random";
    snprintf(w->what, sizeof w->what, "control: 1..8 allocations per request, uniform over the population");
    for (uint32_t r = 0; r < nreq; r++) {
        uint32_t k = 1 + (uint32_t)pb_range(&s, 8);
        pb_begin_req(w);
        for (uint32_t j = 0; j < k; j++)
            pb_ref(w, (uint32_t)pb_range(&s, w->nalloc));
        pb_end_req(w);
    }
    pb_finish(w);
}

/* ---- the simulator -------------------------------------------------- */

struct pb_alloc {
    struct vidmm_policy_entry e; /* first member: entry pointer == alloc pointer */
    uint64_t stamp;              /* request + 1 that last named it */
    int resident;
};

struct pb_result {
    uint64_t in, out, ops, misses, hits, evictions;
    int errors;
};

static double pb_time_s(const struct pb_result *r)
{
    return (double)(r->in + r->out) / PB_BW + (double)r->ops * PB_OP_S;
}

/* Belady within priority classes: next_use hints rewritten so the class
 * is the most significant part (a lower class looks further away), which
 * makes vidmm_policy_belady the offline optimum among policies that honour
 * the classes, the yardstick for the multi workload. */
static uint64_t pb_class_hint(uint32_t priority, uint64_t next_use)
{
    const uint64_t span = (UINT64_C(1) << 58) - 1;
    uint32_t c = (priority >= VIDMM_PRIORITY_LOW) + (priority >= VIDMM_PRIORITY_NORMAL) +
                 (priority >= VIDMM_PRIORITY_HIGH) + (priority >= VIDMM_PRIORITY_MAXIMUM);
    return (uint64_t)(4 - c) << 58 | (next_use < span ? next_use : span);
}

static void pb_simulate(const struct pb_workload *w, const struct vidmm_eviction_policy *p, int class_hints,
                        struct pb_result *res)
{
    struct pb_alloc *al = bench_xcalloc((size_t)w->nalloc * sizeof *al);
    struct pb_alloc **victim = bench_xcalloc((size_t)w->nalloc * sizeof *victim);
    void *st;
    uint64_t resident = 0, nres = 0;
    memset(res, 0, sizeof *res);
    if (p->create(vidmm_default_host_allocator(), PB_NSEG, &st) != VIDMM_OK) {
        fprintf(stderr, "bench: %s: create failed\n", p->name);
        res->errors++;
        free(al);
        free(victim);
        return;
    }
    for (uint32_t a = 0; a < w->nalloc; a++) {
        al[a].e.allocation = a + 1;
        al[a].e.process = w->proc[a];
        al[a].e.size = w->size[a];
        al[a].e.segment_id = PB_SEG;
        al[a].e.priority = w->prio[a];
        al[a].e.next_use = VIDMM_NEXT_USE_NEVER;
    }
    for (uint32_t r = 0; r < w->nreq; r++) {
        uint64_t clock = (uint64_t)r + 1, missing = 0;
        uint32_t b = w->req_off[r], e = w->req_off[r + 1];
        for (uint32_t i = b; i < e; i++) {
            struct pb_alloc *a = &al[w->ref[i]];
            a->stamp = clock;
            a->e.last_use = clock;
            a->e.next_use = class_hints ? pb_class_hint(a->e.priority, w->next[i]) : w->next[i];
            if (a->resident) {
                p->touch(st, &a->e);
                res->hits++;
            } else {
                missing += a->e.size;
            }
        }
        if (resident + missing > PB_CAP) {
            uint64_t need = resident + missing - PB_CAP;
            uint32_t nv = 0;
            for (struct vidmm_policy_entry *x = p->first(st, PB_SEG); x && need; x = p->next(st, x)) {
                struct pb_alloc *a = (struct pb_alloc *)x;
                if (a->stamp == clock)
                    continue; /* in the request being served */
                victim[nv++] = a;
                need -= need < x->size ? need : x->size;
            }
            if (need) {
                fprintf(stderr, "bench: %s/%s: request %" PRIu32 " cannot fit\n", w->name, p->name, r);
                res->errors++;
                break;
            }
            for (uint32_t v = 0; v < nv; v++) {
                p->remove(st, &victim[v]->e, VIDMM_POLICY_EVICTED);
                victim[v]->resident = 0;
                resident -= victim[v]->e.size;
                nres--;
                res->out += victim[v]->e.size;
                res->ops++;
                res->evictions++;
            }
        }
        for (uint32_t i = b; i < e; i++) {
            struct pb_alloc *a = &al[w->ref[i]];
            if (a->resident)
                continue;
            p->insert(st, &a->e);
            a->resident = 1;
            resident += a->e.size;
            nres++;
            res->in += a->e.size;
            res->ops++;
            res->misses++;
        }
        if (bench_opts.check) {
            if (p->check && p->check(st) != 0) {
                fprintf(stderr, "bench: %s/%s: check failed after request %" PRIu32 "\n", w->name, p->name, r);
                res->errors++;
                break;
            }
            /* The order is a walk over exactly the resident set. */
            if ((r & 63) == 0) {
                uint64_t n = 0, bytes = 0;
                for (struct vidmm_policy_entry *x = p->first(st, PB_SEG); x && n <= nres; x = p->next(st, x)) {
                    n++;
                    bytes += x->size;
                    res->errors += !((struct pb_alloc *)x)->resident;
                }
                res->errors += n != nres || bytes != resident || p->first(st, 0) != NULL;
            }
        }
    }
    if (bench_opts.check) {
        for (uint32_t a = 0; a < w->nalloc; a++)
            p->remove(st, &al[a].e, VIDMM_POLICY_DESTROYED);
        res->errors += p->first(st, PB_SEG) != NULL || (p->check && p->check(st) != 0);
    }
    p->destroy(st);
    free(al);
    free(victim);
}

/* ---- callback cost -------------------------------------------------- */

/* ns per touch and per miss at n resident entries. */
static void pb_cost(const struct vidmm_eviction_policy *p, uint32_t n, uint32_t ops, double *touch_ns,
                    double *miss_ns, double *null_ns, int *errors)
{
    uint32_t extra = n / 4 ? n / 4 : 1, total = n + extra;
    struct vidmm_policy_entry *ent = bench_xcalloc((size_t)total * sizeof *ent);
    uint32_t *pool = bench_xcalloc((size_t)extra * sizeof *pool); /* evicted entries */
    uint32_t *idx = bench_xcalloc((size_t)ops * sizeof *idx);
    uint64_t *nu = bench_xcalloc((size_t)ops * sizeof *nu);
    uint64_t s = PB_SEED ^ n, clock = 0;
    double t[PB_RUNS], m[PB_RUNS], z[PB_RUNS];
    void *st;
    if (p->create(vidmm_default_host_allocator(), PB_NSEG, &st) != VIDMM_OK) {
        (*errors)++;
        goto out;
    }
    for (uint32_t i = 0; i < total; i++) {
        ent[i].allocation = i + 1;
        ent[i].process = 1 + i % 4;
        ent[i].size = 64 * PB_KiB;
        ent[i].segment_id = PB_SEG;
        ent[i].priority = VIDMM_PRIORITY_NORMAL;
        ent[i].next_use = VIDMM_NEXT_USE_NEVER;
    }
    for (uint32_t i = 0; i < n; i++) {
        ent[i].last_use = ++clock;
        ent[i].next_use = clock + 1 + pb_range(&s, 4 * (uint64_t)n);
        p->insert(st, &ent[i]);
    }
    for (uint32_t i = 0; i < extra; i++)
        pool[i] = n + i;
    for (int run = 0; run < PB_RUNS; run++) {
        /* Touches of random resident entries: the first n are resident
         * until the miss phase, which runs after all touch segments. */
        for (uint32_t k = 0; k < ops; k++) {
            idx[k] = (uint32_t)pb_range(&s, n);
            nu[k] = pb_range(&s, 4 * (uint64_t)n);
        }
        /* The harness alone: the same stores into the same entries. */
        uint64_t t0 = bench_now_ns();
        for (uint32_t k = 0; k < ops; k++) {
            struct vidmm_policy_entry *e = &ent[idx[k]];
            e->last_use = clock + k;
            e->next_use = clock + 1 + nu[k];
        }
        z[run] = (double)(bench_now_ns() - t0) / ops;
        t0 = bench_now_ns();
        for (uint32_t k = 0; k < ops; k++) {
            struct vidmm_policy_entry *e = &ent[idx[k]];
            e->last_use = ++clock;
            e->next_use = clock + 1 + nu[k];
            p->touch(st, e);
        }
        t[run] = (double)(bench_now_ns() - t0) / ops;
    }
    for (int run = 0; run < PB_RUNS; run++) {
        for (uint32_t k = 0; k < ops; k++) {
            idx[k] = (uint32_t)pb_range(&s, extra);
            nu[k] = pb_range(&s, 4 * (uint64_t)n);
        }
        uint64_t t0 = bench_now_ns();
        for (uint32_t k = 0; k < ops; k++) {
            struct vidmm_policy_entry *v = p->first(st, PB_SEG);
            struct vidmm_policy_entry *e = &ent[pool[idx[k]]];
            p->remove(st, v, VIDMM_POLICY_EVICTED);
            pool[idx[k]] = (uint32_t)(v - ent);
            e->last_use = ++clock;
            e->next_use = clock + 1 + nu[k];
            p->insert(st, e);
        }
        m[run] = (double)(bench_now_ns() - t0) / ops;
    }
    if (bench_opts.check && p->check && p->check(st) != 0)
        (*errors)++;
    p->destroy(st);
    *touch_ns = bench_median(t, PB_RUNS);
    *miss_ns = bench_median(m, PB_RUNS);
    *null_ns = bench_median(z, PB_RUNS);
out:
    free(ent);
    free(pool);
    free(idx);
    free(nu);
}

/* ---- the report ----------------------------------------------------- */

/* A row of the simulation table: a policy, or Belady fed class-major hints. */
struct pb_row {
    const char *label;
    const struct vidmm_eviction_policy *p;
    int class_hints;
};

void bench_policy(void)
{
    if (!bench_only("policy"))
        return;
    const struct vidmm_eviction_policy *const *pol = PB_POLICIES;
    struct pb_row rows[16];
    uint32_t nrows = 0, bel = 16, cls = 16, lru = 16, adp = 16;
    for (uint32_t i = 0; pol[i] && nrows < 15; i++) {
        rows[nrows] = (struct pb_row){pol[i]->name, pol[i], 0};
        if (!strcmp(pol[i]->name, "belady")) {
            bel = nrows;
            rows[++nrows] = (struct pb_row){"belady/cls", pol[i], 1};
            cls = nrows;
        }
        lru = strcmp(pol[i]->name, "lru") ? lru : nrows;
        adp = strcmp(pol[i]->name, "adaptive") ? adp : nrows;
        nrows++;
    }
    void (*gen[])(struct pb_workload *, uint64_t, int) = {pb_gen_loop, pb_gen_drift, pb_gen_multi, pb_gen_random,
                                                           pb_gen_noise};
    uint64_t t0 = bench_now_ns();
    int errors = 0;
    printf("\nP: eviction policies on a simulated %" PRIu64 " MiB segment (seed 0x%" PRIx64 "%s%s)\n"
           "   paging = bytes paged in + bytes paged out; time = paging bytes / 10 GB/s + 20 us per allocation paged;\n"
           "   /belady = paging bytes / Belady's; /cls = / Belady's within priority classes (belady/cls)\n",
           PB_CAP / PB_MiB, PB_SEED, bench_opts.quick ? "; --quick" : "", bench_opts.check ? "; --check" : "");
    for (size_t g = 0; g < sizeof gen / sizeof gen[0]; g++) {
        struct pb_workload w;
        struct pb_result res[16];
        memset(&w, 0, sizeof w);
        gen[g](&w, PB_SEED, bench_opts.quick);
        printf("\n  %s: %s\n  %" PRIu32 " requests, %" PRIu32 " references, %" PRIu32 " allocations (%.2fx capacity)\n",
               w.name, w.what, w.nreq, w.nref, w.nalloc, (double)w.bytes / (double)PB_CAP);
        printf("    %-11s %9s %9s %9s %10s %9s %8s %8s\n", "policy", "misses", "evictions", "hit rate", "paged GiB",
               "sim s", "/belady", "/cls");
        for (uint32_t i = 0; i < nrows; i++) {
            pb_simulate(&w, rows[i].p, rows[i].class_hints, &res[i]);
            errors += res[i].errors;
        }
        for (uint32_t i = 0; i < nrows; i++) {
            double bytes = (double)(res[i].in + res[i].out);
            printf("    %-11s %9" PRIu64 " %9" PRIu64 " %8.1f%% %10.2f %9.2f", rows[i].label, res[i].misses,
                   res[i].evictions, 100.0 * (double)res[i].hits / (double)(res[i].hits + res[i].misses),
                   bytes / (double)PB_GiB, pb_time_s(&res[i]));
            if (bel < nrows)
                printf(" %8.3f", bytes / (double)(res[bel].in + res[bel].out));
            if (cls < nrows)
                printf(" %8.3f", bytes / (double)(res[cls].in + res[cls].out));
            printf("\n");
        }
        if (adp < nrows && lru < nrows && bel < nrows && strcmp(w.name, "random") && strcmp(w.name, "noise")) {
            double a = (double)(res[adp].in + res[adp].out), l = (double)(res[lru].in + res[lru].out);
            double b = (double)(res[bel].in + res[bel].out);
            printf("    adaptive: %.3fx Belady (target <= %.2fx: %s), %.3fx LRU (target < 1: %s)\n", a / b, PB_TARGET,
                   a / b <= PB_TARGET ? "met" : "MISSED", a / l, a < l ? "met" : "MISSED");
        }
        pb_free_workload(&w);
    }
    const uint32_t sizes[4] = {1000, 10000, 100000, 1000000};
    uint32_t nsizes = bench_opts.quick ? 3 : 4, ops = bench_opts.quick ? 100000 : 400000;
    printf("\n  callback cost, ns per operation (median of %d x %" PRIu32 " after the build; touch = a random resident\n"
           "  entry; miss = first() + remove(EVICTED) of it + insert of a random evicted entry; harness = the\n"
           "  touch loop's own stores into the same entries, without the callback)\n", PB_RUNS, ops);
    printf("    %-10s %10s %10s %10s %10s\n", "policy", "resident", "touch", "miss", "harness");
    for (uint32_t i = 0; pol[i]; i++)
        for (uint32_t k = 0; k < nsizes; k++) {
            double tn = 0, mn = 0, zn = 0;
            pb_cost(pol[i], sizes[k], ops, &tn, &mn, &zn, &errors);
            printf("    %-10s %10" PRIu32 " %10.1f %10.1f %10.1f\n", pol[i]->name, sizes[k], tn, mn, zn);
        }
    if (bench_opts.check)
        printf("  --check: %s\n", errors ? "FAILED" : "check() after every request and the order walks passed");
    printf("\npolicy benchmarks took %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
}
