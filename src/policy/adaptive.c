/*
 * adaptive.c - vidmm_policy_adaptive: priority classes, and per process
 * either recency (LRU) or reuse-interval prediction, chosen by watching
 * how regular the process's reuse intervals are.
 *
 * Why.  LRU is right for a process whose references are independent
 * draws (a hot set, Zipf popularity, a slowly drifting working set), and
 * as wrong as possible for one that cycles over more than it is given: a
 * cyclic scan evicts every allocation just before it is needed again, so
 * every reference misses (WDDM's VidMm statistics name a per-process
 * "UseMRU" policy bit for this).  The two cases differ in their reuse intervals: a cycle re-uses
 * each allocation after about the same time, independent draws after
 * exponentially spread times.  So each process is classified online:
 *
 *   sample     the time between two references of one allocation, taken
 *              at a touch, or at the insert of an allocation that was
 *              evicted (its last reference time and interval survive in
 *              the entry's private fields: a ghost that costs no list);
 *   consistent the sample is within +-50% of the allocation's previous
 *              interval (of the process's mean interval when the
 *              allocation has none yet, so a loop is recognised during its
 *              second pass).  Independent draws are consistent about 27-30%
 *              of the time, a loop interleaved with other processes'
 *              requests over 95%;
 *   mode       an EWMA (weight 1/16) of "consistent": the process turns
 *              periodic at >= 0.8 and back to recency below 0.5.  For
 *              independent draws the EWMA averages 0.3 with a standard
 *              deviation of 0.08, so 0.8 is six deviations away.
 *
 * Order.  Strict priority classes first, exactly as vidmm_policy_lru.
 * Inside a class, each entry has a predicted next reference:
 *
 *   periodic   last_use + its interval (the process's mean interval for a
 *              first reference): furthest first.  For one cyclic process
 *              this evicts the most recently used first (MRU, which keeps
 *              a fixed part of the cycle resident: the offline optimum for
 *              a loop); across loops of different periods it evicts
 *              whatever comes back last, as Belady would;
 *   recency    now + age, i.e. the least recently used first, merged with
 *              the periodic entries by the predicted time;
 *   expired    a periodic prediction overdue by more than twice its
 *              interval (the process stopped cycling over it) falls back
 *              to recency.
 *
 * Structures.  Per segment and class two intrusive AVL trees
 * (policy/avl.c): periodic entries keyed by the predicted time, recency
 * entries keyed by ~last_use.  A touch is a remove and an insert
 * (O(log n); a recency insert appends at the cached last node without a
 * descent); an eviction walk merges the two trees of a class with a
 * cursor kept in the state, so first()/next() are O(1) amortised
 * (first() also re-files the expired predictions, each O(log n), at most
 * one per earlier touch); a next() that does not continue the walk
 * rebuilds the cursor with one O(log n) search.  Per process: a fixed,
 * direct-mapped table of 64 tagged slots (interval mean, score, mode); a
 * process that collides with another takes the slot over and starts in
 * recency mode, the safe default.  Nothing is allocated after create();
 * the state's size depends on the segment count only.
 *
 * Private fields: link[0..2] tree links; key[0] tree key; key[1]
 * last_use at the last reference (kept while evicted); reserved the last
 * reuse interval, 32-bit floating (kept while evicted); flags =
 * RESIDENT | class | segment | PERIODIC (which tree) | GHOST (evicted
 * with history kept), plus the tree height.  DESTROYED clears them all.
 *
 * vidmm_policy_reuse (D40) is this policy with a detector that also
 * recognises cycles that are not clean loops (the state's `reuse` flag;
 * everything else is shared):
 *
 *   bursts     a frame or a pass names an allocation several times within
 *              a few requests, then not for a whole cycle.  A sample below
 *              1/8 of the process's mean sample (all samples) is a
 *              re-reference within a burst: it is neither scored nor
 *              averaged, and the allocation keeps its last cycle
 *              interval, so its prediction stays a cycle ahead instead of
 *              a burst gap ahead;
 *   stray hits allocations of a cycle that are also referenced at random
 *              times between passes drive the consistency score to
 *              0.5-0.7, below its 0.8.  A process is then also periodic
 *              when its cycle samples cluster round their mean: mean
 *              absolute deviation below 45% of the mean (EWMA 1/16, fixed
 *              point, decided after 32 samples).  Measured deviation /
 *              mean: a pure loop 0.03, RP multi's loops with stray hits
 *              0.29-0.47, the Zipf drift 2.4-4, uniform random about 0.7.
 *              The process returns to recency only when the score is below
 *              0.5 and the deviation above the mean, so the mode does not
 *              flap (leaving at 0.6 cost 30% more paging on RP multi).
 *
 * A "young" tree that kept entries referenced in the last few burst gaps
 * at the back of the walk was tried for reuse and removed: RP multi 843.8
 * MiB with it, 843.2 without; RP sweep 1978 with it, 1839 without (D40).
 */
#include "policy/avl.h"
#include "policy/policy_int.h"

#include <stddef.h>
#include <string.h>

#define ADP_PROCS 64u                  /* process slots (a power of two) */
#define ADP_PROC_BITS 6
#define ADP_TOL_DIV 2                  /* consistent: within 1/2 of the reference interval */
#define ADP_SCORE_ONE 65536
#define ADP_SCORE_SHIFT 4              /* EWMA weight 1/16 */
#define ADP_ENTER (ADP_SCORE_ONE * 8 / 10)
#define ADP_LEAVE (ADP_SCORE_ONE * 5 / 10)
#define ADP_MEAN_SHIFT 3               /* process mean interval: EWMA weight 1/8 */
#define ADP_EXPIRE_FACTOR 2            /* overdue by more than 2x the interval: expired */
/* The reuse variant's detector. */
#define ADP_SHORT_DIV 8                /* a sample below 1/8 of the mean sample: within a burst */
#define ADP_DEV_SHIFT 4                /* deviation: EWMA weight 1/16 (steadier than the mean's 1/8) */
#define ADP_ENTER_PCT 45               /* periodic below this deviation, % of the mean */
#define ADP_LEAVE_PCT 100              /* recency above this (and a low score) */
#define ADP_DEV_CAP (1ull << 48)       /* deviation and mean clamped here: dev << 8 cannot overflow */
#define ADP_DEV_MIN_SAMPLES 32         /* cycle samples before the deviation may decide */

#define ADP_F_PERIODIC 0x1000u         /* filed in the periodic tree */
#define ADP_F_HISTORY VIDMM_POLICY_F_GHOST /* evicted; key[1] and reserved hold its history */

typedef struct vidmm_policy_entry entry;

struct adp_proc {
    uint64_t process;   /* tag: the process owning the slot */
    uint64_t irr_mean;  /* mean reuse interval, 0 = none yet */
    int64_t score;      /* EWMA of "consistent", 0..ADP_SCORE_ONE */
    uint64_t all_mean;  /* reuse: mean of every sample, what "short" is measured against */
    uint64_t dev;       /* reuse: mean absolute deviation of the cycle samples from irr_mean, x256 */
    uint32_t periodic;  /* mode */
    uint32_t samples;   /* reuse: cycle samples seen, up to ADP_DEV_MIN_SAMPLES */
};

struct adp_class {
    struct vidmm_avl per;  /* key[0] = predicted next reference: furthest first */
    struct vidmm_avl lru;  /* key[0] = ~last_use: least recent first */
};

struct adp_seg {
    struct adp_class cls[VIDMM_POLICY_CLASSES];
    uint64_t count;
};

/* Where an eviction walk stands: the next candidate of each tree. */
struct adp_cursor {
    const entry *last;     /* what first/next returned last; NULL: no walk */
    entry *p, *l;
    uint32_t seg;
    unsigned cls;
};

struct adp_state {
    struct vidmm_host_allocator ha; /* a copy: destroy() must not depend on the caller's table */
    size_t alloc_size;
    uint32_t segment_count;
    uint64_t misuse;                /* contract breaches absorbed by callbacks */
    int reuse;                      /* vidmm_policy_reuse's detector */
    uint64_t now;                   /* latest reference clock seen */
    struct adp_cursor cur;
    struct adp_proc proc[ADP_PROCS];
    struct adp_seg seg[];
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* Reuse intervals in the 32-bit reserved field: exact below 2^26, then
 * 26 significant bits and a shift (monotone; relative error < 2^-25),
 * so any clock unit fits. */
static uint32_t irr_enc(uint64_t x)
{
    uint32_t e = 0;
    while (x >> 26) {
        x >>= 1;
        e++;
    }
    return e << 26 | (uint32_t)x;
}

static uint64_t irr_dec(uint32_t c)
{
    return (uint64_t)(c & ((1u << 26) - 1)) << (c >> 26);
}

static struct adp_proc *proc_slot(struct adp_state *s, uint64_t process)
{
    struct adp_proc *p = &s->proc[(process * 0x9E3779B97F4A7C15ull) >> (64 - ADP_PROC_BITS)];
    if (p->process != process) {
        memset(p, 0, sizeof *p);
        p->process = process;
    }
    return p;
}

static vidmm_status adp_create_variant(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **out,
                                       int reuse)
{
    size_t size = 0;
    vidmm_status st = vidmm_policy_state_alloc(ha, segment_count, sizeof(struct adp_state), sizeof(struct adp_seg),
                                               _Alignof(struct adp_state), out, &size);
    if (st < 0)
        return st;
    struct adp_state *s = *out;
    s->ha = *ha;
    s->alloc_size = size;
    s->segment_count = segment_count;
    s->reuse = reuse;
    return VIDMM_OK;
}

static vidmm_status adp_create(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **out)
{
    return adp_create_variant(ha, segment_count, out, 0);
}

static vidmm_status rus_create(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **out)
{
    return adp_create_variant(ha, segment_count, out, 1);
}

static void adp_destroy(void *state)
{
    struct adp_state *s = state;
    if (!s)
        return;
    struct vidmm_host_allocator ha = s->ha;
    ha.free(ha.user_data, s, s->alloc_size, _Alignof(struct adp_state));
}

/* One reuse-interval sample of process p; prev is the allocation's
 * previous cycle interval (0 = none: the process's mean stands in).
 * Returns 0 for a sample within a burst (reuse variant only), which is
 * not a cycle interval: the allocation keeps its previous one. */
static int adp_observe(const struct adp_state *s, struct adp_proc *p, uint64_t sample, uint64_t prev)
{
    if (s->reuse) {
        p->all_mean = p->all_mean ? p->all_mean - (p->all_mean >> ADP_MEAN_SHIFT) + (sample >> ADP_MEAN_SHIFT) : sample;
        if (sample < p->all_mean / ADP_SHORT_DIV)
            return 0;
    }
    uint64_t ref = prev ? prev : p->irr_mean;
    if (ref) {
        uint64_t d = sample > ref ? sample - ref : ref - sample;
        int64_t target = d <= ref / ADP_TOL_DIV ? ADP_SCORE_ONE : 0;
        p->score += (target - p->score) / (1 << ADP_SCORE_SHIFT);
        int tight = 0, loose = 1;
        if (s->reuse) {
            uint64_t dm = sample > p->irr_mean ? sample - p->irr_mean : p->irr_mean - sample;
            if (dm > ADP_DEV_CAP)
                dm = ADP_DEV_CAP;
            /* Fixed point (8 fraction bits): small clocks keep their resolution. */
            p->dev = p->dev - (p->dev >> ADP_DEV_SHIFT) + ((dm << 8) >> ADP_DEV_SHIFT);
            if (p->samples < ADP_DEV_MIN_SAMPLES)
                p->samples++;
            /* Periodic when either the allocations keep their own
             * intervals (the score) or the process's cycle samples cluster
             * round their mean; back to recency only when both fail
             * clearly, so the mode does not flap. */
            uint64_t m = p->irr_mean > ADP_DEV_CAP ? ADP_DEV_CAP : p->irr_mean;
            tight = p->samples >= ADP_DEV_MIN_SAMPLES && p->dev / ADP_ENTER_PCT * 100 < (m << 8);
            loose = p->dev / ADP_LEAVE_PCT * 100 > (m << 8);
        }
        if (!p->periodic && (p->score >= ADP_ENTER || tight))
            p->periodic = 1;
        else if (p->periodic && p->score < ADP_LEAVE && loose)
            p->periodic = 0;
    }
    if (s->reuse && !p->irr_mean) /* the first cycle sample: tightness is earned, not assumed */
        p->dev = (sample > ADP_DEV_CAP ? ADP_DEV_CAP : sample) << 8;
    p->irr_mean = p->irr_mean ? p->irr_mean - (p->irr_mean >> ADP_MEAN_SHIFT) + (sample >> ADP_MEAN_SHIFT) : sample;
    return 1;
}

static struct adp_class *adp_class_of(struct adp_state *s, const entry *e)
{
    return &s->seg[vidmm_policy_flags_seg(e->flags)].cls[vidmm_policy_flags_class(e->flags)];
}

static void adp_unfile(struct adp_state *s, entry *e)
{
    struct adp_class *c = adp_class_of(s, e);
    vidmm_avl_remove(e->flags & ADP_F_PERIODIC ? &c->per : &c->lru, e);
    s->seg[vidmm_policy_flags_seg(e->flags)].count--;
}

/* File e (last referenced at e->last_use, last interval irr, 0 = none)
 * by its process's mode. */
static void adp_file(struct adp_state *s, entry *e, uint32_t seg, uint64_t irr, const struct adp_proc *p)
{
    unsigned c = vidmm_policy_class(e->priority);
    struct adp_class *k = &s->seg[seg].cls[c];
    uint64_t est = irr ? irr : p->irr_mean;
    e->key[1] = e->last_use;
    e->reserved = irr_enc(irr);
    e->flags = VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(c) | vidmm_policy_flags_make_seg(seg);
    if (p->periodic && est) {
        e->flags |= ADP_F_PERIODIC;
        e->key[0] = sat_add(e->last_use, est);
        vidmm_avl_insert(&k->per, e);
    } else {
        e->key[0] = ~e->last_use;
        vidmm_avl_insert_last(&k->lru, e); /* the most recent, as a rule */
    }
    s->seg[seg].count++;
}

static void adp_insert(void *state, entry *e)
{
    struct adp_state *s = state;
    s->cur.last = NULL;
    if (e->flags & VIDMM_POLICY_F_RESIDENT) { /* inserted twice: keep one filing */
        s->misuse++;
        adp_unfile(s, e);
        e->flags = 0;
    }
    if (e->segment_id >= s->segment_count) {
        s->misuse++;
        e->flags = 0;
        return;
    }
    if (e->last_use > s->now)
        s->now = e->last_use;
    struct adp_proc *p = proc_slot(s, e->process);
    uint64_t irr = 0;
    if ((e->flags & ADP_F_HISTORY) && e->last_use > e->key[1]) {
        /* A ghost comes back: the time since its last reference is a sample. */
        irr = e->last_use - e->key[1];
        if (!adp_observe(s, p, irr, irr_dec(e->reserved)))
            irr = irr_dec(e->reserved);
    }
    adp_file(s, e, e->segment_id, irr, p);
}

static void adp_touch(void *state, entry *e)
{
    struct adp_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT)) {
        s->misuse++;
        return;
    }
    s->cur.last = NULL;
    if (e->last_use > s->now)
        s->now = e->last_use;
    struct adp_proc *p = proc_slot(s, e->process);
    uint64_t irr = irr_dec(e->reserved);
    if (e->last_use > e->key[1]) {
        uint64_t sample = e->last_use - e->key[1];
        if (adp_observe(s, p, sample, irr))
            irr = sample;
    } else if (vidmm_policy_class(e->priority) == vidmm_policy_flags_class(e->flags)) {
        return; /* same clock, same class: nothing to learn or move */
    }
    uint32_t seg = vidmm_policy_flags_seg(e->flags);
    adp_unfile(s, e);
    adp_file(s, e, seg, irr, p);
}

static void adp_remove(void *state, entry *e, enum vidmm_policy_remove_reason why)
{
    struct adp_state *s = state;
    s->cur.last = NULL;
    if (e->flags & VIDMM_POLICY_F_RESIDENT) {
        adp_unfile(s, e);
        if (why == VIDMM_POLICY_EVICTED) {
            /* Keep last_use (key[1]) and the interval (reserved): a ghost. */
            e->flags = ADP_F_HISTORY;
            e->key[0] = 0;
            return;
        }
    } else if (why != VIDMM_POLICY_DESTROYED) {
        s->misuse++; /* evicting what is not resident */
        return;
    }
    e->flags = 0;
    e->key[0] = e->key[1] = 0;
    e->reserved = 0;
}

/* Periodic predictions overdue by more than ADP_EXPIRE_FACTOR intervals
 * fall back to recency, re-filed at their last reference.  Scanned from
 * the earliest prediction; stops at the first one still in time, so a
 * call costs O(log n) per entry re-filed plus O(1) per class. */
static void adp_expire(struct adp_state *s, struct adp_seg *g)
{
    for (unsigned c = 0; c < VIDMM_POLICY_CLASSES; c++) {
        struct adp_class *k = &g->cls[c];
        entry *e;
        while ((e = k->per.last) != NULL && e->key[0] < s->now &&
               (s->now - e->key[1]) / ADP_EXPIRE_FACTOR > e->key[0] - e->key[1]) {
            vidmm_avl_remove(&k->per, e);
            e->flags &= ~ADP_F_PERIODIC;
            e->key[0] = ~e->key[1];
            vidmm_avl_insert(&k->lru, e);
        }
    }
}

/* A recency entry's predicted next reference: as far ahead as it is old. */
static uint64_t lru_pred(const struct adp_state *s, const entry *e)
{
    return sat_add(s->now, s->now - e->key[1]);
}

/* The next entry of the walk: the later prediction of the two trees'
 * candidates (periodic on a tie), then the next class up. */
static entry *adp_pick(struct adp_state *s)
{
    struct adp_cursor *k = &s->cur;
    for (;;) {
        if (k->p || k->l) {
            entry *x;
            if (k->p && (!k->l || k->p->key[0] >= lru_pred(s, k->l))) {
                x = k->p;
                k->p = vidmm_avl_next(x);
            } else {
                x = k->l;
                k->l = vidmm_avl_next(x);
            }
            k->last = x;
            return x;
        }
        if (++k->cls >= VIDMM_POLICY_CLASSES) {
            k->last = NULL;
            return NULL;
        }
        k->p = s->seg[k->seg].cls[k->cls].per.first;
        k->l = s->seg[k->seg].cls[k->cls].lru.first;
    }
}

static entry *adp_first(void *state, uint32_t segment_id)
{
    struct adp_state *s = state;
    s->cur.last = NULL;
    if (segment_id >= s->segment_count)
        return NULL;
    adp_expire(s, &s->seg[segment_id]);
    s->cur.seg = segment_id;
    s->cur.cls = 0;
    s->cur.p = s->seg[segment_id].cls[0].per.first;
    s->cur.l = s->seg[segment_id].cls[0].lru.first;
    return adp_pick(s);
}

struct adp_bound {
    const struct adp_state *s;
    uint64_t pred;
};

/* Recency entries not yet walked when a periodic entry predicted at
 * b->pred is: those predicted no later (ties go to the periodic one). */
static int lru_after(const entry *x, const void *ctx)
{
    const struct adp_bound *b = ctx;
    return lru_pred(b->s, x) <= b->pred;
}

/* Periodic entries not yet walked when a recency entry predicted at
 * b->pred is: those predicted strictly earlier. */
static int per_after(const entry *x, const void *ctx)
{
    const struct adp_bound *b = ctx;
    return x->key[0] < b->pred;
}

static entry *adp_next(void *state, const entry *e)
{
    struct adp_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT))
        return NULL;
    if (e != s->cur.last) {
        /* Not the step the cursor expects: rebuild it around e. */
        struct adp_class *c = adp_class_of(s, e);
        struct adp_bound b = {s, 0};
        s->cur.seg = vidmm_policy_flags_seg(e->flags);
        s->cur.cls = vidmm_policy_flags_class(e->flags);
        if (e->flags & ADP_F_PERIODIC) {
            b.pred = e->key[0];
            s->cur.p = vidmm_avl_next(e);
            s->cur.l = vidmm_avl_search(&c->lru, lru_after, &b);
        } else {
            b.pred = lru_pred(s, e);
            s->cur.l = vidmm_avl_next(e);
            s->cur.p = vidmm_avl_search(&c->per, per_after, &b);
        }
    }
    return adp_pick(s);
}

struct adp_visit_ctx {
    uint32_t seg;
    unsigned cls;
    int periodic;
};

/* Every node: resident, filed under this segment and class, in the tree
 * its PERIODIC flag names, with a key of that tree's kind. */
static uint64_t adp_visit(const void *ctx, const entry *e)
{
    const struct adp_visit_ctx *v = ctx;
    uint32_t want = VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(v->cls) |
                    vidmm_policy_flags_make_seg(v->seg) | (v->periodic ? ADP_F_PERIODIC : 0);
    uint64_t bad = (e->flags & ~VIDMM_AVL_H_MASK) != want;
    bad += v->periodic ? e->key[0] < e->key[1] : e->key[0] != ~e->key[1];
    return bad;
}

static int adp_check(const void *state)
{
    const struct adp_state *s = state;
    uint64_t bad = s->misuse;
    for (uint32_t i = 0; i < s->segment_count; i++) {
        uint64_t n = 0;
        for (unsigned c = 0; c < VIDMM_POLICY_CLASSES; c++) {
            const struct adp_class *k = &s->seg[i].cls[c];
            struct adp_visit_ctx per = {i, c, 1}, lru = {i, c, 0};
            bad += vidmm_avl_check(&k->per, adp_visit, &per);
            bad += vidmm_avl_check(&k->lru, adp_visit, &lru);
            n += k->per.count + k->lru.count;
        }
        bad += n != s->seg[i].count;
    }
    for (unsigned i = 0; i < ADP_PROCS; i++)
        bad += s->proc[i].score < 0 || s->proc[i].score > ADP_SCORE_ONE || s->proc[i].periodic > 1;
    return bad > INT32_MAX ? INT32_MAX : (int)bad;
}

const struct vidmm_eviction_policy vidmm_policy_adaptive = {
    "adaptive", adp_create, adp_destroy, adp_insert, adp_touch, adp_remove, adp_first, adp_next, adp_check
};

const struct vidmm_eviction_policy vidmm_policy_reuse = {
    "reuse", rus_create, adp_destroy, adp_insert, adp_touch, adp_remove, adp_first, adp_next, adp_check
};
