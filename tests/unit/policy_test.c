/*
 * policy_test.c - the eviction policies (src/policy): the registry, bad
 * arguments and host out-of-memory in create(), each policy's ordering
 * rules on hand-built cases, a seeded differential test of each against a
 * naive model (arrays sorted by the policy's rule, rebuilt from scratch
 * at every step) over random insert / touch / evict / destroy streams on
 * three segments, the adaptive policy's ghosts and mode switches, and
 * check() catching corrupted structures and contract breaches.  check()
 * runs after every step.
 *
 * The models know only the public rules and the public fields, never the
 * policies' private fields; the adaptive model re-derives the process
 * modes from the same reuse-interval samples.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/policy.h"

#include <stdlib.h>
#include <string.h>

typedef struct vidmm_policy_entry entry;

#define P_MIN VIDMM_PRIORITY_MINIMUM
#define P_LOW VIDMM_PRIORITY_LOW
#define P_NORMAL VIDMM_PRIORITY_NORMAL
#define P_HIGH VIDMM_PRIORITY_HIGH
#define P_MAX VIDMM_PRIORITY_MAXIMUM
#define NEVER VIDMM_NEXT_USE_NEVER

static const struct vidmm_eviction_policy *const *all(void) { return vidmm_policies(); }

static void *mk(const struct vidmm_eviction_policy *p, uint32_t segs)
{
    void *st = NULL;
    T_ST(p->create(vidmm_default_host_allocator(), segs, &st), VIDMM_OK);
    return st;
}

static void set(entry *e, uint32_t seg, uint32_t prio, uint64_t last, uint64_t next, uint64_t proc)
{
    e->segment_id = seg;
    e->priority = prio;
    e->last_use = last;
    e->next_use = next;
    e->process = proc;
    if (!e->size)
        e->size = 65536;
}

/* The walk of a segment, at most max entries; returns its length. */
static unsigned walk(const struct vidmm_eviction_policy *p, void *st, uint32_t seg, entry **out, unsigned max)
{
    unsigned n = 0;
    for (entry *e = p->first(st, seg); e && n < max; e = p->next(st, e))
        out[n++] = e;
    return n;
}

/* The walk must be exactly want[0..n). */
static void expect_order(const struct vidmm_eviction_policy *p, void *st, uint32_t seg, entry *const *want, unsigned n)
{
    entry *got[64];
    unsigned k = walk(p, st, seg, got, 64);
    T_EQ(k, n);
    for (unsigned i = 0; i < n && i < k; i++)
        if (got[i] != want[i]) {
            char m[96];
            snprintf(m, sizeof m, "%s: position %u of segment %u", p->name, i, seg);
            t_fail(__FILE__, __LINE__, m);
            return;
        }
}

/* ---- registry, create ------------------------------------------------ */

static void registry(void)
{
    const struct vidmm_eviction_policy *const *l = all();
    T_CHECK(l[0] == &vidmm_policy_lru);
    T_CHECK(l[1] == &vidmm_policy_adaptive);
    T_CHECK(l[2] == &vidmm_policy_belady);
    T_CHECK(l[3] == &vidmm_policy_reuse);
    T_CHECK(l[4] == NULL);
    T_CHECK(!strcmp(l[3]->name, "reuse"));
    T_CHECK(!strcmp(l[0]->name, "lru") && !strcmp(l[1]->name, "adaptive") && !strcmp(l[2]->name, "belady"));
    for (int i = 0; l[i]; i++)
        T_CHECK(l[i]->create && l[i]->destroy && l[i]->insert && l[i]->touch && l[i]->remove && l[i]->first &&
                l[i]->next && l[i]->check);
}

static void create_bad_args(void)
{
    struct vidmm_host_allocator half = *vidmm_default_host_allocator();
    half.free = NULL;
    for (const struct vidmm_eviction_policy *const *p = all(); *p; p++) {
        void *st = (void *)&st;
        T_ST((*p)->create(NULL, 2, &st), VIDMM_E_INVALID_ARG);
        T_CHECK(st == NULL);
        T_ST((*p)->create(vidmm_default_host_allocator(), 2, NULL), VIDMM_E_INVALID_ARG);
        T_ST((*p)->create(vidmm_default_host_allocator(), 0, &st), VIDMM_E_INVALID_ARG);
        T_ST((*p)->create(vidmm_default_host_allocator(), UINT32_MAX, &st), VIDMM_E_INVALID_ARG);
        T_ST((*p)->create(&half, 2, &st), VIDMM_E_INVALID_ARG);
        T_ST((*p)->create(vidmm_default_host_allocator(), 65536, &st), VIDMM_OK); /* the largest count */
        T_EQ((*p)->check(st), 0);
        T_CHECK((*p)->first(st, 65535) == NULL);
        T_CHECK((*p)->first(st, 65536) == NULL);
        (*p)->destroy(st);
        (*p)->destroy(NULL);
    }
}

/* Every allocation of create() refused in turn: NO_HOST_MEMORY, no state,
 * nothing leaked; then it succeeds and destroy() gives everything back. */
static void create_oom(void)
{
    for (const struct vidmm_eviction_policy *const *p = all(); *p; p++) {
        int done = 0;
        for (uint64_t fail_at = 1; !done && fail_at < 10; fail_at++) {
            struct fault_alloc fa;
            void *st = (void *)&fa;
            fault_alloc_init(&fa);
            fa.fail_at = fail_at;
            vidmm_status s = (*p)->create(&fa.ha, 5, &st);
            if (s == VIDMM_OK) {
                entry e[3];
                memset(e, 0, sizeof e);
                for (int i = 0; i < 3; i++) { /* the callbacks allocate nothing */
                    set(&e[i], (uint32_t)i, P_NORMAL, 1 + (uint64_t)i, 10, 1);
                    (*p)->insert(st, &e[i]);
                }
                (*p)->touch(st, &e[0]);
                (*p)->remove(st, &e[1], VIDMM_POLICY_EVICTED);
                (*p)->remove(st, &e[2], VIDMM_POLICY_DESTROYED);
                T_EQ((*p)->check(st), 0);
                T_EQ(fa.calls, 1); /* one block: the state */
                T_EQ(fa.failures, 0);
                (*p)->destroy(st);
                done = 1;
            } else {
                T_ST(s, VIDMM_E_NO_HOST_MEMORY);
                T_CHECK(st == NULL);
            }
            T_EQ(fa.live_blocks, 0);
            T_EQ(fa.live_bytes, 0);
        }
        T_CHECK(done);
    }
}

/* ---- hand-built orders ---------------------------------------------- */

/* LRU and adaptive (a new process is in recency mode): the five classes,
 * then least recently used first; priority changes move classes. */
static void classes_and_recency(void)
{
    static const uint32_t prio[] = {P_HIGH, 1, P_LOW - 1, P_LOW, P_NORMAL - 1, P_NORMAL, P_MAX - 1, P_MAX, UINT32_MAX,
                                    P_MIN, P_NORMAL + 5, P_HIGH - 1};
    /* class of each entry above: 3 0 0 1 1 2 3 4 4 0 2 2 */
    const struct vidmm_eviction_policy *pols[2] = {&vidmm_policy_lru, &vidmm_policy_adaptive};
    for (int k = 0; k < 2; k++) {
        const struct vidmm_eviction_policy *p = pols[k];
        entry e[12];
        void *st = mk(p, 3);
        memset(e, 0, sizeof e);
        for (int i = 0; i < 12; i++) {
            set(&e[i], 1, prio[i], 100 + (uint64_t)i, NEVER, 7);
            p->insert(st, &e[i]);
            T_EQ(p->check(st), 0);
        }
        entry *w1[] = {&e[1], &e[2], &e[9], &e[3], &e[4], &e[5], &e[10], &e[11], &e[0], &e[6], &e[7], &e[8]};
        expect_order(p, st, 1, w1, 12);
        expect_order(p, st, 0, NULL, 0);
        expect_order(p, st, 2, NULL, 0);
        /* Touch: to the most recent end of its class. */
        e[1].last_use = 200;
        p->touch(st, &e[1]);
        e[5].last_use = 201;
        p->touch(st, &e[5]);
        entry *w2[] = {&e[2], &e[9], &e[1], &e[3], &e[4], &e[10], &e[11], &e[5], &e[0], &e[6], &e[7], &e[8]};
        expect_order(p, st, 1, w2, 12);
        /* A new priority is picked up at the touch. */
        e[8].priority = P_LOW;
        e[8].last_use = 202;
        p->touch(st, &e[8]);
        e[2].priority = P_MAX;
        e[2].last_use = 202; /* same clock as e[8] */
        p->touch(st, &e[2]);
        entry *w3[] = {&e[9], &e[1], &e[3], &e[4], &e[8], &e[10], &e[11], &e[5], &e[0], &e[6], &e[7], &e[2]};
        expect_order(p, st, 1, w3, 12);
        T_EQ(p->check(st), 0);
        /* Evict and destroy, then a never-inserted entry destroyed. */
        p->remove(st, &e[3], VIDMM_POLICY_EVICTED);
        p->remove(st, &e[0], VIDMM_POLICY_DESTROYED);
        entry lone;
        memset(&lone, 0, sizeof lone);
        p->remove(st, &lone, VIDMM_POLICY_DESTROYED);
        entry *w4[] = {&e[9], &e[1], &e[4], &e[8], &e[10], &e[11], &e[5], &e[6], &e[7], &e[2]};
        expect_order(p, st, 1, w4, 10);
        T_EQ(p->check(st), 0);
        /* next() from any entry, not only along the walk. */
        T_CHECK(p->next(st, &e[11]) == &e[5]);
        T_CHECK(p->next(st, &e[9]) == &e[1]);
        T_CHECK(p->next(st, &e[5]) == &e[6]);
        T_CHECK(p->next(st, &e[2]) == NULL);
        T_CHECK(p->next(st, &e[3]) == NULL); /* not resident */
        /* Segments are independent. */
        set(&e[3], 2, P_MIN, 300, NEVER, 7);
        p->insert(st, &e[3]);
        entry *w5[] = {&e[3]};
        expect_order(p, st, 2, w5, 1);
        expect_order(p, st, 1, w4, 10);
        T_EQ(p->check(st), 0);
        p->destroy(st);
    }
}

/* Belady: NEVER first, then next_use descending; ties by lower priority,
 * then older last_use, then lower address. */
static void belady_order(void)
{
    const struct vidmm_eviction_policy *p = &vidmm_policy_belady;
    entry e[9];
    void *st = mk(p, 2);
    memset(e, 0, sizeof e);
    set(&e[0], 1, P_NORMAL, 10, 50, 1);
    set(&e[1], 1, P_NORMAL, 11, NEVER, 1);
    set(&e[2], 1, P_HIGH, 12, 90, 1);
    set(&e[3], 1, P_LOW, 13, 90, 1);     /* tie on 90: lower priority first */
    set(&e[4], 1, P_LOW, 9, 90, 1);      /* ... then older last_use */
    set(&e[5], 1, P_MAX, 14, NEVER, 1);  /* NEVER beats priority */
    set(&e[6], 1, P_MIN, 15, 20, 1);
    set(&e[7], 1, P_LOW, 9, 90, 1);      /* full tie with e[4]: address order */
    set(&e[8], 1, P_NORMAL, 16, 50, 1);  /* tie with e[0] on 50, same priority: older e[0] first */
    for (int i = 8; i >= 0; i--) {
        p->insert(st, &e[i]);
        T_EQ(p->check(st), 0);
    }
    entry *w1[] = {&e[1], &e[5], &e[4], &e[7], &e[3], &e[2], &e[0], &e[8], &e[6]};
    expect_order(p, st, 1, w1, 9);
    /* A touch re-keys: e[6] now used never again, e[1] next at 30. */
    e[6].last_use = 20;
    e[6].next_use = NEVER;
    p->touch(st, &e[6]);
    e[1].last_use = 21;
    e[1].next_use = 30;
    p->touch(st, &e[1]);
    entry *w2[] = {&e[6], &e[5], &e[4], &e[7], &e[3], &e[2], &e[0], &e[8], &e[1]};
    expect_order(p, st, 1, w2, 9);
    T_CHECK(p->next(st, &e[3]) == &e[2]);
    T_CHECK(p->next(st, &e[1]) == NULL);
    /* An unchanged key is a no-op touch; a changed priority re-keys. */
    p->touch(st, &e[0]);
    e[7].priority = P_MIN;
    p->touch(st, &e[7]);
    entry *w3[] = {&e[6], &e[5], &e[7], &e[4], &e[3], &e[2], &e[0], &e[8], &e[1]};
    expect_order(p, st, 1, w3, 9);
    p->remove(st, &e[5], VIDMM_POLICY_EVICTED);
    p->remove(st, &e[2], VIDMM_POLICY_DESTROYED);
    entry *w4[] = {&e[6], &e[7], &e[4], &e[3], &e[0], &e[8], &e[1]};
    expect_order(p, st, 1, w4, 7);
    T_EQ(p->check(st), 0);
    p->destroy(st);
}

/* A tree of thousands of entries stays balanced through sequential and
 * random keys (the walk is verified by check()). */
static void belady_large(void)
{
    enum { N = 3000 };
    const struct vidmm_eviction_policy *p = &vidmm_policy_belady;
    entry *e = calloc(N, sizeof *e);
    void *st = mk(p, 1);
    uint64_t s = t_seed() ^ 0xbe1a;
    T_CHECK(e != NULL);
    if (!e)
        return;
    for (int i = 0; i < N; i++) {
        set(&e[i], 0, P_NORMAL, (uint64_t)i, i < N / 2 ? (uint64_t)i : 1 + t_rand_range(&s, 1000), 1);
        p->insert(st, &e[i]);
    }
    T_EQ(p->check(st), 0);
    for (int i = 0; i < 2 * N; i++) {
        entry *x = &e[t_rand_range(&s, N)];
        x->next_use = t_rand_range(&s, 5) ? 1 + t_rand_range(&s, 1 << 20) : NEVER;
        x->last_use = (uint64_t)(N + i);
        p->touch(st, x);
    }
    T_EQ(p->check(st), 0);
    for (int i = 0; i < N; i += 2)
        p->remove(st, &e[i], VIDMM_POLICY_EVICTED);
    T_EQ(p->check(st), 0);
    unsigned n = 0;
    for (entry *x = p->first(st, 0), *prev = NULL; x; prev = x, x = p->next(st, x), n++)
        T_CHECK(!prev || prev->next_use >= x->next_use);
    T_EQ(n, N / 2);
    p->destroy(st);
    free(e);
}

/* ---- adaptive: ghosts and modes -------------------------------------- */

/* A segment of cap entries driven by references of one process: a
 * resident entry is touched, a missing one evicts first() when full. */
struct drive {
    const struct vidmm_eviction_policy *p;
    void *st;
    entry *e;
    unsigned cap, resident;
    unsigned misses;
    uint64_t clock;
    unsigned char res[64];
};

static int is_resident(const struct drive *d, const entry *x)
{
    return d->res[x - d->e];
}

static void ref(struct drive *d, entry *x)
{
    x->last_use = ++d->clock;
    if (is_resident(d, x)) {
        d->p->touch(d->st, x);
        return;
    }
    if (d->resident == d->cap) {
        entry *v = d->p->first(d->st, 0);
        d->p->remove(d->st, v, VIDMM_POLICY_EVICTED);
        d->res[v - d->e] = 0;
        d->resident--;
    }
    d->res[x - d->e] = 1;
    set(x, 0, x->priority ? x->priority : P_NORMAL, d->clock, NEVER, x->process ? x->process : 1);
    d->p->insert(d->st, x);
    d->resident++;
    d->misses++;
}

/* A process cycling over 12 allocations in room for 8: every reference
 * misses under LRU; the adaptive policy sees the regular reuse intervals
 * of its ghosts (every sample comes from a re-inserted evicted entry) and
 * turns to evicting the most recently used, which misses about 12 - 8 + 1
 * per cycle from the second cycle on. */
static void adaptive_loop_detect(void)
{
    enum { N = 12, CAP = 8, CYCLES = 10 };
    const struct vidmm_eviction_policy *pols[2] = {&vidmm_policy_lru, &vidmm_policy_adaptive};
    unsigned late[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        entry e[N];
        struct drive d = {pols[k], mk(pols[k], 1), e, CAP, 0, 0, 0, {0}};
        memset(e, 0, sizeof e);
        for (int c = 0; c < CYCLES; c++) {
            unsigned before = d.misses;
            for (int i = 0; i < N; i++) {
                ref(&d, &e[i]);
                T_EQ(d.p->check(d.st), 0);
            }
            if (c >= 3)
                late[k] += d.misses - before;
        }
        if (k == 1) {
            /* Periodic order: the most recently referenced first. */
            entry *first = d.p->first(d.st, 0);
            T_CHECK(first && first->last_use == d.clock);
        }
        d.p->destroy(d.st);
    }
    T_EQ(late[0], (CYCLES - 3) * N);              /* LRU: every reference */
    T_CHECK(late[1] <= (CYCLES - 3) * (N - CAP + 1)); /* adaptive: MRU-like */
}

/* Independent references: the process stays in recency mode and the
 * adaptive order is the LRU order, step for step. */
static void adaptive_random_is_lru(void)
{
    enum { N = 20, CAP = 12 };
    entry a[N], b[N];
    struct drive da = {&vidmm_policy_lru, mk(&vidmm_policy_lru, 1), a, CAP, 0, 0, 0, {0}};
    struct drive db = {&vidmm_policy_adaptive, mk(&vidmm_policy_adaptive, 1), b, CAP, 0, 0, 0, {0}};
    uint64_t s = t_seed() ^ 0xada9;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3000 && !t_current_failures(); i++) {
        unsigned x = (unsigned)t_rand_range(&s, N);
        ref(&da, &a[x]);
        ref(&db, &b[x]);
        entry *wa[N], *wb[N];
        unsigned na = walk(da.p, da.st, 0, wa, N), nb = walk(db.p, db.st, 0, wb, N);
        T_EQ(na, nb);
        for (unsigned j = 0; j < na && j < nb; j++)
            T_EQ(wa[j] - a, wb[j] - b);
        T_EQ(db.p->check(db.st), 0);
    }
    T_EQ(da.misses, db.misses);
    da.p->destroy(da.st);
    db.p->destroy(db.st);
}

/* The private fields of an evicted entry keep its history (a ghost, no
 * list); DESTROYED clears every private field of a resident entry, of a
 * ghost and of a never-inserted one. */
static void adaptive_ghost_fields(void)
{
    const struct vidmm_eviction_policy *p = &vidmm_policy_adaptive;
    void *st = mk(p, 2);
    entry e[3], zero;
    memset(e, 0, sizeof e);
    memset(&zero, 0, sizeof zero);
    set(&e[0], 1, P_NORMAL, 10, NEVER, 3);
    p->insert(st, &e[0]);
    e[0].last_use = 25;
    p->touch(st, &e[0]);
    p->remove(st, &e[0], VIDMM_POLICY_EVICTED);
    T_CHECK(e[0].link[0] == NULL && e[0].link[1] == NULL && e[0].link[2] == NULL && e[0].link[3] == NULL);
    T_EQ_U64(e[0].key[1], 25); /* last reference kept */
    T_EQ(e[0].reserved, 15);   /* last interval kept */
    T_CHECK(e[0].flags != 0);
    T_CHECK(p->first(st, 1) == NULL);
    T_EQ(p->check(st), 0);
    /* Destroying the ghost clears it. */
    p->remove(st, &e[0], VIDMM_POLICY_DESTROYED);
    T_CHECK(!memcmp(e[0].link, zero.link, sizeof zero.link) && !e[0].key[0] && !e[0].key[1] && !e[0].flags &&
            !e[0].reserved);
    /* Resident and never-inserted entries too. */
    set(&e[1], 1, P_NORMAL, 30, NEVER, 3);
    p->insert(st, &e[1]);
    p->remove(st, &e[1], VIDMM_POLICY_DESTROYED);
    T_CHECK(!memcmp(e[1].link, zero.link, sizeof zero.link) && !e[1].key[0] && !e[1].key[1] && !e[1].flags &&
            !e[1].reserved);
    p->remove(st, &e[2], VIDMM_POLICY_DESTROYED);
    T_CHECK(!memcmp(&e[2].link, zero.link, sizeof zero.link) && !e[2].flags);
    T_EQ(p->check(st), 0);
    /* A ghost re-inserted after destroy is a new allocation: no sample. */
    T_CHECK(p->first(st, 1) == NULL);
    p->destroy(st);
}

/* The loop process turns periodic, then stops: with the clock driven on
 * by another process, its predictions expire (overdue by more than twice
 * the interval) and its entries fall back to recency order, oldest first. */
static void adaptive_expiry_and_return(void)
{
    enum { N = 12, CAP = 8 };
    entry e[N], other[2];
    struct drive d = {&vidmm_policy_adaptive, mk(&vidmm_policy_adaptive, 2), e, CAP, 0, 0, 0, {0}};
    memset(e, 0, sizeof e);
    memset(other, 0, sizeof other);
    for (int c = 0; c < 6; c++)
        for (int i = 0; i < N; i++)
            ref(&d, &e[i]);
    entry *w[CAP];
    T_EQ(walk(d.p, d.st, 0, w, CAP), CAP);
    T_CHECK(w[0]->last_use > w[CAP - 1]->last_use); /* MRU-like */
    /* Another process in segment 1 advances the clock 5 loop periods. */
    set(&other[0], 1, P_NORMAL, d.clock, NEVER, 99);
    d.p->insert(d.st, &other[0]);
    for (int i = 0; i < 5 * N * 4; i++) {
        other[0].last_use = ++d.clock;
        d.p->touch(d.st, &other[0]);
    }
    T_EQ(walk(d.p, d.st, 0, w, CAP), CAP);
    for (int i = 1; i < CAP; i++)
        T_CHECK(w[i - 1]->last_use < w[i]->last_use); /* LRU order now */
    T_EQ(d.p->check(d.st), 0);
    /* Irregular reuse from now on (intervals alternating 1 and 7, never
     * within half of each other): the process returns to recency mode and
     * a fresh entry goes to the back of the walk. */
    for (int i = 0; i < 400; i++)
        ref(&d, &e[(i / 2) % 4]);
    entry *x = NULL;
    for (int i = 0; i < N && !x; i++)
        if (!is_resident(&d, &e[i]))
            x = &e[i];
    T_CHECK(x != NULL);
    if (x) {
        ref(&d, x);
        T_EQ(walk(d.p, d.st, 0, w, CAP), CAP);
        T_CHECK(w[CAP - 1] == x);
    }
    T_EQ(d.p->check(d.st), 0);
    d.p->destroy(d.st);
}

/* ---- reuse: bursts and stray hits -------------------------------------- */

/* A plain loop: reuse turns periodic like adaptive (no short samples, so
 * no young entries) and misses about N - CAP + 1 per cycle. */
static void reuse_loop_detect(void)
{
    enum { N = 12, CAP = 8, CYCLES = 10 };
    entry e[N];
    struct drive d = {&vidmm_policy_reuse, mk(&vidmm_policy_reuse, 1), e, CAP, 0, 0, 0, {0}};
    memset(e, 0, sizeof e);
    unsigned late = 0;
    for (int c = 0; c < CYCLES; c++) {
        unsigned before = d.misses;
        for (int i = 0; i < N; i++) {
            ref(&d, &e[i]);
            T_EQ(d.p->check(d.st), 0);
        }
        if (c >= 3)
            late += d.misses - before;
    }
    entry *first = d.p->first(d.st, 0);
    T_CHECK(first && first->last_use == d.clock);
    T_CHECK(late <= (CYCLES - 3) * (N - CAP + 1));
    d.p->destroy(d.st);
}

/* A loop over 60 allocations in room for 40 where each allocation is
 * referenced in a burst (about four times within four references) and,
 * every seventh reference, a stray one hits a random allocation.  LRU and
 * adaptive (whose score stays low) miss most references; reuse turns
 * periodic and keeps part of the cycle. */
static unsigned burst_loop_misses(const struct vidmm_eviction_policy *p, uint64_t seed)
{
    enum { N = 60, CAP = 40 };
    entry e[N];
    struct drive d = {p, mk(p, 1), e, CAP, 0, 0, 0, {0}};
    memset(e, 0, sizeof e);
    uint64_t s = seed;
    unsigned warm = 0;
    for (int step = 0; step < 4000 && !t_current_failures(); step++) {
        int pos = step / 2;   /* each allocation: about four references within four steps */
        unsigned x = (unsigned)((pos + (int)t_rand_range(&s, 2)) % N);
        if (t_rand_range(&s, 7) == 0)
            x = (unsigned)t_rand_range(&s, N);
        ref(&d, &e[x]);
        if (step == 1000)
            warm = d.misses;
        if ((step & 63) == 0)
            T_EQ(p->check(d.st), 0);
    }
    unsigned m = d.misses - warm;
    T_EQ(p->check(d.st), 0);
    d.p->destroy(d.st);
    return m;
}

static void reuse_burst_loop(void)
{
    uint64_t seed = t_seed() ^ 0xb0257;
    unsigned lru = burst_loop_misses(&vidmm_policy_lru, seed);
    unsigned adp = burst_loop_misses(&vidmm_policy_adaptive, seed);
    unsigned rus = burst_loop_misses(&vidmm_policy_reuse, seed);
    if (getenv("VIDMM_TEST_VERBOSE"))
        printf("    burst loop misses (3000 references): lru %u adaptive %u reuse %u\n", lru, adp, rus);
    T_CHECK(rus * 10 < lru * 8);   /* at least 20% fewer misses than LRU */
    T_CHECK(rus < adp);
}

/* Independent references: no online order beats LRU, and reuse must not
 * lose to it by much.  (Its walk is not LRU's step for step: excluding
 * the short samples leaves intervals consistent often enough that the
 * score sometimes turns a random process periodic for a while.) */
static void reuse_random_near_lru(void)
{
    enum { N = 20, CAP = 12 };
    entry a[N], b[N];
    struct drive da = {&vidmm_policy_lru, mk(&vidmm_policy_lru, 1), a, CAP, 0, 0, 0, {0}};
    struct drive db = {&vidmm_policy_reuse, mk(&vidmm_policy_reuse, 1), b, CAP, 0, 0, 0, {0}};
    uint64_t s = t_seed() ^ 0x2e05e;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    for (int i = 0; i < 3000 && !t_current_failures(); i++) {
        unsigned x = (unsigned)t_rand_range(&s, N);
        ref(&da, &a[x]);
        ref(&db, &b[x]);
        if ((i & 31) == 0)
            T_EQ(db.p->check(db.st), 0);
    }
    if (getenv("VIDMM_TEST_VERBOSE"))
        printf("    random misses: lru %u reuse %u\n", da.misses, db.misses);
    T_CHECK(db.misses * 100 <= da.misses * 110);
    da.p->destroy(da.st);
    db.p->destroy(db.st);
}

/* Random streams over three segments, five priority classes and three
 * processes, two of them cyclic with bursts and stray hits (so periodic
 * and recency entries mix in every class), one random; clock
 * jumps so predictions expire.  After every step check() is clean; every
 * 16 steps each segment's walk is exactly its resident set, each entry
 * once, in non-decreasing class order; next() from a walk position
 * other than the last returned continues with the same order.  At the
 * end every entry is destroyed and the state is empty. */
static void reuse_structure_random(void)
{
    enum { N = 96, SEGS = 3 };
    static const uint32_t prio[5] = {P_MIN - 1, P_LOW, P_NORMAL, P_HIGH, P_MAX};
    const struct vidmm_eviction_policy *p = &vidmm_policy_reuse;
    void *st = mk(p, SEGS);
    entry e[N];
    unsigned char res[N];
    memset(e, 0, sizeof e);
    memset(res, 0, sizeof res);
    uint64_t s = t_seed() ^ 0x5e05e, clock = 0, periodic = 0;
    for (int step = 0; step < 6000 && !t_current_failures(); step++) {
        unsigned proc = (unsigned)t_rand_range(&s, 3);
        unsigned x;
        if (proc < 2 && t_rand_range(&s, 5)) /* a cycle of 32 with bursts of about 3 */
            x = proc * 32 + (unsigned)((step / 3 + t_rand_range(&s, 2)) % 32);
        else
            x = proc * 32 + (unsigned)t_rand_range(&s, 32);
        clock += t_rand_range(&s, 50) ? 1 : 1 + t_rand_range(&s, 500);
        unsigned op = (unsigned)t_rand_range(&s, 100);
        if (op < 4) { /* destroy (resident, ghost or never inserted) */
            p->remove(st, &e[x], VIDMM_POLICY_DESTROYED);
            memset(&e[x], 0, sizeof e[x]);
            res[x] = 0;
        } else if (op < 20 && res[x]) { /* evict */
            p->remove(st, &e[x], VIDMM_POLICY_EVICTED);
            res[x] = 0;
        } else if (op < 24 && res[x]) { /* a new priority, picked up at the touch */
            e[x].priority = prio[t_rand_range(&s, 5)];
            p->touch(st, &e[x]);
        } else if (res[x]) {
            e[x].last_use = clock;
            p->touch(st, &e[x]);
        } else {
            set(&e[x], (uint32_t)t_rand_range(&s, SEGS), e[x].priority ? e[x].priority : prio[t_rand_range(&s, 5)],
                clock, NEVER, 10 + proc);
            e[x].last_use = clock;
            p->insert(st, &e[x]);
            res[x] = 1;
        }
        T_EQ(p->check(st), 0);
        if (step % 16)
            continue;
        for (uint32_t g = 0; g < SEGS; g++) {
            unsigned char seen[N];
            memset(seen, 0, sizeof seen);
            unsigned n = 0, want = 0, cls = 0;
            for (entry *w = p->first(st, g); w && n <= N; w = p->next(st, w), n++) {
                long i = w - e;
                T_CHECK(i >= 0 && i < N && res[i] && !seen[i] && w->segment_id == g);
                if (i >= 0 && i < N)
                    seen[i] = 1;
                unsigned c = (w->priority >= P_LOW) + (w->priority >= P_NORMAL) + (w->priority >= P_HIGH) +
                             (w->priority >= P_MAX);
                T_CHECK(c >= cls);
                cls = c;
                periodic += (w->flags & 0x1000u) != 0; /* PERIODIC */
            }
            for (unsigned i = 0; i < N; i++)
                want += res[i] && e[i].segment_id == g;
            T_EQ(n, want);
            /* A walk restarted from its third entry: the same tail. */
            entry *a[N], *b[N];
            unsigned na = walk(p, st, g, a, N), nb = 0;
            if (na > 3) {
                (void)p->first(st, g);
                for (entry *w = p->next(st, a[2]); w && nb < N; w = p->next(st, w))
                    b[nb++] = w;
                T_EQ(nb, na - 3);
                for (unsigned i = 0; i < nb && i + 3 < na; i++)
                    T_CHECK(b[i] == a[i + 3]);
            }
        }
    }
    /* Coverage (flag layout of src/policy/policy_int.h): periodic entries were walked. */
    T_CHECK(periodic > 0);
    for (unsigned i = 0; i < N; i++)
        p->remove(st, &e[i], VIDMM_POLICY_DESTROYED);
    for (uint32_t g = 0; g < SEGS; g++)
        T_CHECK(p->first(st, g) == NULL);
    T_EQ(p->check(st), 0);
    p->destroy(st);
}

/* ---- check() sees damage and misuse ----------------------------------- */

static void check_detects(void)
{
    for (const struct vidmm_eviction_policy *const *pp = all(); *pp; pp++) {
        const struct vidmm_eviction_policy *p = *pp;
        entry e[6];
        void *st = mk(p, 2);
        memset(e, 0, sizeof e);
        for (int i = 0; i < 6; i++) {
            set(&e[i], 1, P_NORMAL, 10 + (uint64_t)i, 100 - (uint64_t)i, 1);
            p->insert(st, &e[i]);
        }
        T_EQ(p->check(st), 0);
        /* A bent link. */
        void *saved = e[2].link[0];
        e[2].link[0] = &e[5];
        T_CHECK(p->check(st) > 0);
        e[2].link[0] = saved;
        T_EQ(p->check(st), 0);
        /* A key out of order (trees) or a flag out of place (lists). */
        uint64_t k0 = e[3].key[0];
        uint32_t fl = e[3].flags;
        e[3].key[0] ^= 0x5555;
        e[3].flags ^= 0x1u << 17; /* another segment */
        T_CHECK(p->check(st) > 0);
        e[3].key[0] = k0;
        e[3].flags = fl;
        T_EQ(p->check(st), 0);
        p->destroy(st);
        /* Contract breaches are absorbed and reported. */
        st = mk(p, 2);
        memset(e, 0, sizeof e);
        set(&e[0], 1, P_NORMAL, 1, 5, 1);
        p->touch(st, &e[0]);                          /* not resident */
        T_EQ(p->check(st), 1);
        p->remove(st, &e[0], VIDMM_POLICY_EVICTED);   /* not resident */
        T_EQ(p->check(st), 2);
        set(&e[1], 7, P_NORMAL, 1, 5, 1);
        p->insert(st, &e[1]);                         /* no segment 7 */
        T_EQ(p->check(st), 3);
        T_CHECK(p->first(st, 1) == NULL);
        p->insert(st, &e[0]);
        p->insert(st, &e[0]);                         /* twice */
        T_EQ(p->check(st), 4);
        entry *w[] = {&e[0]};
        expect_order(p, st, 1, w, 1);
        p->destroy(st);
    }
}

/* ---- differential test against naive models --------------------------- */

#define DN 48           /* entries */
#define DSEG 3          /* segments */
#define DCAP 9          /* entries per segment before an eviction */

/* What a model knows of an entry: public inputs and its own derived state. */
struct ment {
    int state;          /* 0 none, 1 resident, 2 evicted with history */
    uint32_t seg, cls, prio;
    uint64_t seq;       /* lru: call order */
    uint64_t next, last;/* belady / adaptive */
    uint64_t irr;       /* adaptive: last interval, 0 none */
    int periodic;       /* adaptive: which kind of prediction */
    uint64_t key;       /* adaptive: predicted next reference (periodic) */
};

struct mproc {
    uint64_t process, irr_mean;
    int64_t score;
    int periodic;
};

struct model {
    int kind;           /* 0 lru, 1 adaptive, 2 belady */
    entry *base;
    struct ment m[DN];
    struct mproc proc[64];
    uint64_t seq, now;
    unsigned periodic_filings;
};

static unsigned cls_of(uint32_t p)
{
    return (p >= P_LOW) + (p >= P_NORMAL) + (p >= P_HIGH) + (p >= P_MAX);
}

static uint64_t sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static struct mproc *mproc_of(struct model *md, uint64_t process)
{
    struct mproc *p = &md->proc[(process * 0x9E3779B97F4A7C15ull) >> 58];
    if (p->process != process) {
        memset(p, 0, sizeof *p);
        p->process = process;
    }
    return p;
}

/* The adaptive rules in words: a sample within half of the reference
 * interval is consistent; score += (consistent - score) / 16; periodic at
 * >= 0.8, recency below 0.5; the process mean moves 1/8 to the sample. */
static void mobserve(struct mproc *p, uint64_t sample, uint64_t prev)
{
    uint64_t ref = prev ? prev : p->irr_mean;
    if (ref) {
        uint64_t d = sample > ref ? sample - ref : ref - sample;
        int64_t target = d <= ref / 2 ? 65536 : 0;
        p->score += (target - p->score) / 16;
        if (!p->periodic && p->score >= 65536 * 8 / 10)
            p->periodic = 1;
        else if (p->periodic && p->score < 65536 * 5 / 10)
            p->periodic = 0;
    }
    p->irr_mean = p->irr_mean ? p->irr_mean - (p->irr_mean >> 3) + (sample >> 3) : sample;
}

static void mfile(struct model *md, struct ment *m, const entry *e, uint64_t irr, const struct mproc *p)
{
    uint64_t est = irr ? irr : p->irr_mean;
    m->state = 1;
    m->cls = cls_of(e->priority);
    m->last = e->last_use;
    m->irr = irr;
    m->periodic = p->periodic && est;
    m->key = m->periodic ? sat(e->last_use, est) : 0;
    md->periodic_filings += (unsigned)m->periodic;
}

static void m_insert(struct model *md, entry *e)
{
    struct ment *m = &md->m[e - md->base];
    m->seg = e->segment_id;
    m->prio = e->priority;
    m->next = e->next_use;
    m->seq = ++md->seq;
    if (md->kind != 1) {
        m->state = 1;
        m->cls = cls_of(e->priority);
        m->last = e->last_use;
        return;
    }
    if (e->last_use > md->now)
        md->now = e->last_use;
    struct mproc *p = mproc_of(md, e->process);
    uint64_t irr = 0;
    if (m->state == 2 && e->last_use > m->last) {
        irr = e->last_use - m->last;
        mobserve(p, irr, m->irr);
    }
    mfile(md, m, e, irr, p);
}

static void m_touch(struct model *md, entry *e)
{
    struct ment *m = &md->m[e - md->base];
    if (md->kind != 1) {
        m->seq = ++md->seq;
        m->cls = cls_of(e->priority);
        m->prio = e->priority;
        m->next = e->next_use;
        m->last = e->last_use;
        return;
    }
    if (e->last_use > md->now)
        md->now = e->last_use;
    struct mproc *p = mproc_of(md, e->process);
    uint64_t irr = m->irr;
    if (e->last_use > m->last) {
        mobserve(p, e->last_use - m->last, irr);
        irr = e->last_use - m->last;
    } else if (cls_of(e->priority) == m->cls) {
        return;
    }
    mfile(md, m, e, irr, p);
}

static void m_remove(struct model *md, entry *e, enum vidmm_policy_remove_reason why)
{
    struct ment *m = &md->m[e - md->base];
    if (m->state == 1 && why == VIDMM_POLICY_EVICTED && md->kind == 1) {
        m->state = 2;
        return;
    }
    m->state = 0;
    m->irr = 0;
    m->last = 0;
}

static const struct model *g_md; /* qsort context (tests are single-threaded) */

static uint64_t mpred(const struct model *md, const struct ment *m)
{
    return m->periodic ? m->key : sat(md->now, md->now - m->last);
}

/* -1 if a is evicted before b. */
static int mcmp(const void *pa, const void *pb)
{
    const entry *ea = *(entry *const *)pa, *eb = *(entry *const *)pb;
    const struct model *md = g_md;
    const struct ment *a = &md->m[ea - md->base], *b = &md->m[eb - md->base];
    int r;
    if (md->kind == 2) {
        if (a->next != b->next)
            return a->next > b->next ? -1 : 1;
        if (a->prio != b->prio)
            return a->prio < b->prio ? -1 : 1;
        if (a->last != b->last)
            return a->last < b->last ? -1 : 1;
        return ea < eb ? -1 : 1;
    }
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (md->kind == 0)
        return a->seq < b->seq ? -1 : a->seq > b->seq;
    uint64_t x = mpred(md, a), y = mpred(md, b);
    if (x != y)
        return x > y ? -1 : 1;
    if (a->periodic != b->periodic)
        return a->periodic ? -1 : 1;
    /* Same prediction and kind: by interval, last reference, address. */
    if (a->irr != b->irr)
        return a->irr < b->irr ? -1 : 1;
    r = a->last < b->last ? -1 : a->last > b->last;
    return r ? r : (ea < eb ? -1 : 1);
}

/* The adaptive first(): predictions overdue by more than twice their
 * interval turn to recency, taken from the earliest prediction of each
 * class while they qualify. */
static void m_expire(struct model *md, uint32_t seg)
{
    for (unsigned c = 0; c < 5; c++) {
        for (;;) {
            struct ment *best = NULL;
            for (int i = 0; i < DN; i++) {
                struct ment *m = &md->m[i];
                if (m->state != 1 || m->seg != seg || m->cls != c || !m->periodic)
                    continue;
                if (!best || m->key < best->key ||
                    (m->key == best->key &&
                     (m->irr > best->irr || (m->irr == best->irr && (m->last > best->last ||
                                                                      (m->last == best->last && m > best))))))
                    best = m;
            }
            if (!best || !(best->key < md->now && (md->now - best->last) / 2 > best->key - best->last))
                break;
            best->periodic = 0;
        }
    }
}

static unsigned m_order(struct model *md, uint32_t seg, entry **out)
{
    unsigned n = 0;
    if (md->kind == 1)
        m_expire(md, seg);
    for (int i = 0; i < DN; i++)
        if (md->m[i].state == 1 && md->m[i].seg == seg)
            out[n++] = &md->base[i];
    g_md = md;
    qsort(out, n, sizeof *out, mcmp);
    return n;
}

static void compare_all(const struct vidmm_eviction_policy *p, void *st, struct model *md, uint64_t seed, int step)
{
    for (uint32_t seg = 0; seg < DSEG; seg++) {
        entry *want[DN], *got[DN + 1];
        unsigned nw = m_order(md, seg, want), ng = walk(p, st, seg, got, DN + 1);
        int same = nw == ng;
        for (unsigned i = 0; same && i < nw; i++)
            same = want[i] == got[i];
        if (!same) {
            char m[160];
            snprintf(m, sizeof m, "%s: order of segment %u differs from the model at step %d (seed %" PRIu64 ")",
                     p->name, seg, step, seed);
            t_fail(__FILE__, __LINE__, m);
            return;
        }
    }
}

static void differential_one(const struct vidmm_eviction_policy *p, int kind, uint64_t seed)
{
    static entry e[DN];
    static struct model md;
    unsigned cycle_pos[2] = {0, 0};
    uint64_t s = seed, clock = 1 + t_rand_range(&s, 1000);
    void *st = mk(p, DSEG);
    memset(e, 0, sizeof e);
    memset(&md, 0, sizeof md);
    md.kind = kind;
    md.base = e;
    /* Process 1 cycles over entries 0..15, process 2 over 16..23 (it
     * fits), process 3 draws 24..47 at random. */
    for (int i = 0; i < DN; i++)
        e[i].process = i < 16 ? 1 : i < 24 ? 2 : 3;
    unsigned steps = 3000 * t_scale();
    for (unsigned step = 0; step < steps && !t_current_failures(); step++) {
        uint64_t r = t_rand_range(&s, 100);
        clock += t_rand_range(&s, 8) ? 1 : t_rand_range(&s, 3) ? 0 : 1 + t_rand_range(&s, 50);
        if (r < 75) {
            /* A reference. */
            unsigned pr = (unsigned)t_rand_range(&s, 3), i;
            if (pr == 0)
                i = cycle_pos[0]++ % 16;
            else if (pr == 1)
                i = 16 + cycle_pos[1]++ % 8;
            else
                i = 24 + (unsigned)t_rand_range(&s, 24);
            entry *x = &e[i];
            x->last_use = clock;
            x->next_use = t_rand_range(&s, 5) ? clock + 1 + t_rand_range(&s, 300) : NEVER;
            if (t_rand_range(&s, 20) == 0 || !x->priority) {
                static const uint32_t pri[] = {P_MIN, P_LOW, P_LOW + 7, P_NORMAL, P_NORMAL, P_NORMAL, P_HIGH, P_MAX};
                x->priority = pri[t_rand_range(&s, 8)];
            }
            if (md.m[i].state == 1) {
                p->touch(st, x);
                m_touch(&md, x);
            } else {
                uint32_t seg = (uint32_t)(i % DSEG);
                unsigned n = 0;
                for (int j = 0; j < DN; j++)
                    n += md.m[j].state == 1 && md.m[j].seg == seg;
                if (n >= DCAP) {
                    /* Evict the first of the walk that is not x. */
                    entry *want[DN];
                    unsigned nw = m_order(&md, seg, want);
                    entry *v = p->first(st, seg);
                    T_CHECK(nw > 0 && v == want[0]);
                    if (v) {
                        p->remove(st, v, VIDMM_POLICY_EVICTED);
                        m_remove(&md, v, VIDMM_POLICY_EVICTED);
                    }
                }
                x->segment_id = seg;
                x->size = 65536 * (1 + i % 4);
                p->insert(st, x);
                m_insert(&md, x);
            }
        } else if (r < 85) {
            entry *x = &e[t_rand_range(&s, DN)];
            if (md.m[x - e].state == 1) {
                p->remove(st, x, VIDMM_POLICY_EVICTED);
                m_remove(&md, x, VIDMM_POLICY_EVICTED);
            }
        } else if (r < 90) {
            /* Destroy anything (resident, ghost or never inserted); the
             * slot is then a new allocation with zeroed private fields. */
            entry *x = &e[t_rand_range(&s, DN)];
            p->remove(st, x, VIDMM_POLICY_DESTROYED);
            m_remove(&md, x, VIDMM_POLICY_DESTROYED);
            T_CHECK(!x->flags && !x->key[0] && !x->key[1] && !x->reserved && !x->link[0] && !x->link[1] &&
                    !x->link[2] && !x->link[3]);
        } else {
            /* next() from a random resident entry, out of walk order
             * (after a first(), whose expiry the model repeats). */
            uint32_t seg = (uint32_t)t_rand_range(&s, DSEG);
            entry *want[DN];
            (void)p->first(st, seg);
            unsigned nw = m_order(&md, seg, want);
            if (nw) {
                unsigned k = (unsigned)t_rand_range(&s, nw);
                T_CHECK(p->next(st, want[k]) == (k + 1 < nw ? want[k + 1] : NULL));
            }
        }
        T_EQ(p->check(st), 0);
        compare_all(p, st, &md, seed, (int)step);
    }
    if (kind == 1)
        T_CHECK(md.periodic_filings > 0); /* the stream did exercise both modes */
    p->destroy(st);
}

static void differential(void)
{
    uint64_t seed = t_seed();
    differential_one(&vidmm_policy_lru, 0, seed ^ 0x11);
    differential_one(&vidmm_policy_adaptive, 1, seed ^ 0x22);
    differential_one(&vidmm_policy_belady, 2, seed ^ 0x33);
}

void suite_policy(void);
void suite_policy(void)
{
    t_run("policy.registry", registry);
    t_run("policy.create_bad_args", create_bad_args);
    t_run("policy.create_oom", create_oom);
    t_run("policy.classes_and_recency", classes_and_recency);
    t_run("policy.belady_order", belady_order);
    t_run("policy.belady_large", belady_large);
    t_run("policy.adaptive_loop_detect", adaptive_loop_detect);
    t_run("policy.adaptive_random_is_lru", adaptive_random_is_lru);
    t_run("policy.adaptive_ghost_fields", adaptive_ghost_fields);
    t_run("policy.adaptive_expiry_and_return", adaptive_expiry_and_return);
    t_run("policy.reuse_loop_detect", reuse_loop_detect);
    t_run("policy.reuse_burst_loop", reuse_burst_loop);
    t_run("policy.reuse_random_near_lru", reuse_random_near_lru);
    t_run("policy.reuse_structure_random", reuse_structure_random);
    t_run("policy.check_detects", check_detects);
    t_run("policy.differential", differential);
}
