/*
 * stress_test.c - many threads on one adapter (docs/THREADING.md).
 *
 * VIDMM_STRESS_THREADS workers (default 8) share one softgpu 'dgpu'
 * adapter in asynchronous engine mode whose memory segments are small
 * (8 + 16 MiB), so that what the workers keep alive is about twice what
 * the segments hold.  Each worker has its own device, paging queue and
 * context(s); workers 0/1 and 2/3 share a process, the others have one
 * each.  Every worker runs a seeded random mix of VIDMM_STRESS_OPS
 * operations (default 400): create (create / create2, resident or not),
 * lock + fill with a pattern, lock + verify, reserve + map or plain map,
 * unmap / free, make-resident (PENDING waited on the queue fence,
 * OVER_BUDGET answered by evicting its own list, then CANT_TRIM_FURTHER),
 * virtual submissions whose CHECKSUM / COMPARE / COPY commands check the
 * patterns on the GPU (results compared with the CPU's), evict, explicit
 * moves, offer / reclaim, destroy.  A checker thread calls
 * vidmm_adapter_check() all along; it must find nothing.
 *
 * The workers know what every allocation of theirs holds (a pattern
 * seed, 0 = zeros), so every byte the CPU or the GPU reads is checked:
 * patterns survive eviction, restore, moves and offers (content lost
 * only where reclaim says DISCARDED, and then it reads zero).  At the
 * end everything is destroyed; the segments are back to what they held
 * after open and the host allocator has no live block.  No buffer waits
 * on a fence (a WAIT nobody signals would stall an engine for good).
 *
 * Failures in workers are recorded per worker (the harness's checks are
 * not thread-safe) and reported by the main thread after the join.
 *
 * Two deterministic cases go with it: a CPU wait leaves the adapter to
 * other threads while it sleeps, and a one-thread replay of the bug the
 * mix found (a CPU write after a discarded offer lost at the restore).
 *
 * The power variant (on by default; VIDMM_STRESS_POWER=0 skips it) runs the same mix (VIDMM_STRESS_POWER_THREADS
 * workers, default 4, VIDMM_STRESS_POWER_OPS each, default 300) while one
 * more thread cycles the adapter through standby and hibernate back to
 * D0 every few milliseconds.  While the adapter is down, what needs the
 * GPU answers VIDMM_E_STATE (power.h): a worker takes that as a refusal
 * that changed nothing, and the few steps that must happen (unmapping,
 * reading results) wait for D0 and retry.  Content survives the
 * transitions; an allocation whose content a reset lost
 * (vidmm_allocation_query: content_lost) must read zero, every other one
 * its pattern.  The power thread stops and leaves the adapter in D0
 * before the workers tear down.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KIB (1ull << 10)
#define MIB (1ull << 20)

#define ST_MAX_THREADS 64u
#define ST_OBJS 8u               /* allocation slots per worker */
#define ST_CMD_SIZE (64 * KIB)
#define ST_RES_SIZE (64 * KIB)
#define ST_MAX_CHECKS 8u         /* CHECKSUM + COMPARE results per buffer */

/* ---- patterns ------------------------------------------------------------ */

/* Word i of the pattern of seed (seed 0: zeros).  Position-dependent, so
 * two allocations filled with one seed agree on their common prefix. */
static inline uint64_t pat_word(uint64_t seed, uint64_t i)
{
    if (!seed)
        return 0;
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 29)) * 0x94D049BB133111EBull;
    return z ^ (z >> 32);
}

/* softgpu_checksum of the pattern, without building it. */
static uint64_t pat_checksum(uint64_t seed, uint64_t size)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < size / 8; i++)
        h = (h ^ pat_word(seed, i)) * 0x100000001b3ull;
    return h;
}

/* What COMPARE answers for two patterns over n bytes: 0 when equal, else
 * 1 + the first differing byte offset (little-endian words). */
static uint64_t pat_compare(uint64_t sa, uint64_t sb, uint64_t n)
{
    for (uint64_t i = 0; i < n / 8; i++) {
        uint64_t x = pat_word(sa, i) ^ pat_word(sb, i);
        if (x) {
            uint64_t b = 0;
            while (!(x & 0xFF)) {
                x >>= 8;
                b++;
            }
            return 1 + i * 8 + b;
        }
    }
    return 0;
}

/* ---- shared state ------------------------------------------------------- */

struct st_run;

/* One allocation of a worker and what it holds. */
struct st_obj {
    vidmm_handle h;              /* 0 = free slot */
    uint64_t size;
    uint64_t seed;               /* its content: pattern of seed (0 = zeros) */
    uint64_t sum;                /* pat_checksum(seed, size) */
    uint64_t va;                 /* mapped at (0 = not mapped) */
    int reserved;                /* va is inside a reservation of its own (free after unmap) */
    int listed;                  /* on the worker's residency list (one reference) */
    int offered;
    int gpu_written;             /* written by a submission since the CPU last filled it */
    uint32_t content_lost;       /* vidmm_allocation_query's count last seen (power variant) */
};

struct st_worker {
    struct st_run *run;
    uint32_t index;
    uint64_t seed;
    vidmm_handle proc, dev, queue, ctx[2];
    uint32_t nctx;
    vidmm_handle cmd, res;       /* command buffer and results, always listed */
    uint64_t cmd_va, res_va;
    struct st_obj obj[ST_OBJS];
    uint64_t next_seed;
    /* outcome */
    uint64_t ops, submits, checks, copies, evictions, moves, offers, discarded, pending, over_budget, no_space;
    uint64_t down_refusals;      /* VIDMM_E_STATE answers while the adapter was down (power variant) */
    uint64_t lost;               /* allocations found content_lost (power variant) */
    const char *op;              /* the operation running (for failure messages) */
    int failures;
    char first_failure[512];
};

struct st_run {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    uint32_t threads;
    uint32_t ops_per_thread;
    vidmm_handle procs[ST_MAX_THREADS];
    atomic_int workers_left;
    atomic_uint_fast64_t trim_calls;
    atomic_uint_fast64_t adapter_checks;
    atomic_uint_fast64_t live_bytes, peak_bytes;   /* of the workers' allocations */
    atomic_int check_failures;
    char check_report[1024];     /* first failing report (checker thread only) */
    atomic_int rule_failures;    /* vidmm_adapter_check_rules (vidmm/rules.h) */
    char rule_report[1024];
    /* Power variant: a thread cycles the power state. */
    int power;
    atomic_int setups_left;      /* workers still setting up (in D0: the power thread waits) */
    atomic_int ops_left;         /* workers still in their operation loop */
    atomic_int power_done;       /* the power thread stopped, the adapter is in D0 */
    uint64_t transitions, refused_busy;
    char power_failure[256];
};

#define W_FAIL(w, ...) w_fail((w), __LINE__, __VA_ARGS__)

static void w_fail(struct st_worker *w, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void w_fail(struct st_worker *w, int line, const char *fmt, ...)
{
    if (!w->failures++) {
        int n = snprintf(w->first_failure, sizeof w->first_failure, "worker %u, op %llu (%s), line %d: ", w->index,
                         (unsigned long long)w->ops, w->op ? w->op : "setup", line);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->first_failure + n, sizeof w->first_failure - (size_t)n, fmt, ap);
        va_end(ap);
    }
}

/* A status check inside a worker: 1 if st is what was wanted. */
#define W_ST(w, expr, want)                                                                                    \
    w_st((w), __LINE__, #expr, (expr), (want))

static int w_st(struct st_worker *w, int line, const char *what, vidmm_status st, vidmm_status want)
{
    if (st == want)
        return 1;
    if (st == VIDMM_E_STATE && w->run->power) {
        /* Powered down: a refusal that changed nothing (power.h). */
        w->down_refusals++;
        return 0;
    }
    w_fail(w, line, "%s -> %s, want %s", what, vidmm_status_str(st), vidmm_status_str(want));
    return 0;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    return strtoull(v, NULL, 0);
}

/* ---- per-worker helpers -------------------------------------------------- */

static void nap_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

/* Power variant: an entry answering VIDMM_E_STATE while the adapter is
 * down is retried (at most about 10 s) where the worker's model needs the
 * call to happen. */
#define DOWN_RETRY(w, st, expr)                                                                      \
    do {                                                                                             \
        for (int try_ = 0; ((st) = (expr)) == VIDMM_E_STATE && (w)->run->power && try_ < 20000; try_++) \
            nap_us(500);                                                                             \
    } while (0)

/* Power variant: has o's content been lost by a reset since last seen?
 * Then the worker expects zeros from now on. */
static int content_lost(struct st_worker *w, struct st_obj *o)
{
    struct vidmm_allocation_state as;
    if (!w->run->power || vidmm_allocation_query(w->run->a, o->h, &as) != VIDMM_OK ||
        as.content_lost == o->content_lost)
        return 0;
    o->content_lost = as.content_lost;
    o->seed = 0;
    o->sum = pat_checksum(0, o->size);
    o->gpu_written = 0;
    w->lost++;
    return 1;
}

static vidmm_handle new_allocation(struct st_worker *w, uint64_t size, int resident, int use_create2)
{
    struct softgpu_alloc_desc d;
    softgpu_cpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), size);
    vidmm_handle h = 0;
    vidmm_status st;
    uint64_t live = atomic_fetch_add(&w->run->live_bytes, size) + size;
    uint64_t peak = atomic_load(&w->run->peak_bytes);
    while (live > peak && !atomic_compare_exchange_weak(&w->run->peak_bytes, &peak, live))
        ;
    if (use_create2 || !resident)
        st = vidmm_allocation_create2(w->run->a, &d, sizeof(d), resident ? VIDMM_CREATE_RESIDENT : 0, &h);
    else
        st = vidmm_allocation_create(w->run->a, &d, sizeof(d), &h);
    if (st == VIDMM_E_NO_SEGMENT_SPACE && resident) {
        /* Creation never evicts (D20): full memory is an answer, and an
         * evicted creation always fits. */
        w->no_space++;
        st = vidmm_allocation_create2(w->run->a, &d, sizeof(d), 0, &h);
    }
    if (!W_ST(w, st, VIDMM_OK)) {
        atomic_fetch_sub(&w->run->live_bytes, size);
        return 0;
    }
    return h;
}

/* CPU: write the pattern of seed into o (whole allocation). */
static int cpu_fill(struct st_worker *w, struct st_obj *o, uint64_t seed)
{
    void *p = NULL;
    if (!W_ST(w, vidmm_allocation_lock(w->run->a, o->h, &p), VIDMM_OK))
        return -1;
    uint64_t *q = p;
    for (uint64_t i = 0; i < o->size / 8; i++)
        q[i] = pat_word(seed, i);
    W_ST(w, vidmm_allocation_unlock(w->run->a, o->h), VIDMM_OK);
    o->seed = seed;
    o->sum = pat_checksum(seed, o->size);
    o->gpu_written = 0;
    return 0;
}

/* CPU: every byte of o is what the worker thinks it is. */
static void cpu_verify(struct st_worker *w, struct st_obj *o)
{
    void *p = NULL;
    if (!W_ST(w, vidmm_allocation_lock(w->run->a, o->h, &p), VIDMM_OK))
        return;
    const uint64_t *q = p;
    for (uint64_t i = 0; i < o->size / 8; i++)
        if (q[i] != pat_word(o->seed, i) && !(content_lost(w, o) && q[i] == 0)) {
            /* (A lost allocation must read zero: from the word that
             * differed on, which the loop goes on checking against 0.) */
            W_FAIL(w, "allocation 0x%llx word %llu: 0x%llx, want 0x%llx (seed %llu)", (unsigned long long)o->h,
                   (unsigned long long)i, (unsigned long long)q[i], (unsigned long long)pat_word(o->seed, i),
                   (unsigned long long)o->seed);
            break;
        }
    W_ST(w, vidmm_allocation_unlock(w->run->a, o->h), VIDMM_OK);
    w->checks++;
}

static int cpu_write(struct st_worker *w, vidmm_handle h, const void *src, size_t n)
{
    void *p = NULL;
    if (!W_ST(w, vidmm_allocation_lock(w->run->a, h, &p), VIDMM_OK))
        return -1;
    memcpy(p, src, n);
    W_ST(w, vidmm_allocation_unlock(w->run->a, h), VIDMM_OK);
    return 0;
}

static void cpu_read(struct st_worker *w, vidmm_handle h, void *dst, size_t n)
{
    void *p = NULL;
    memset(dst, 0, n);
    vidmm_status st;
    DOWN_RETRY(w, st, vidmm_allocation_lock(w->run->a, h, &p));
    if (!W_ST(w, st, VIDMM_OK))
        return;
    memcpy(dst, p, n);
    W_ST(w, vidmm_allocation_unlock(w->run->a, h), VIDMM_OK);
}

/* Drop the reference of one listed object (not cmd/res). */
static void evict_obj(struct st_worker *w, struct st_obj *o, uint32_t mode)
{
    uint32_t flags = 0;
    if (mode == 1)
        flags = VIDMM_EVICT_ONLY_IF_NECESSARY;
    else if (mode == 2 && !o->gpu_written)
        flags = VIDMM_EVICT_NOT_WRITTEN_TO;   /* only when true: else the content would be lost */
    if (W_ST(w, vidmm_evict(w->run->a, w->dev, &(struct vidmm_evict_args){ .allocations = &o->h, .count = 1, .flags = flags }), VIDMM_OK))
        o->listed = 0;
    w->evictions++;
}

/* Make handles resident on the worker's device.  1: listed now, 0: a
 * legitimate refusal (no room even after eviction), -1: failure. */
static int make_resident(struct st_worker *w, const vidmm_handle *h, uint32_t n, int allow_trim)
{
    struct vidmm_adapter *a = w->run->a;
    uint32_t flags = allow_trim ? 0 : VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    for (uint32_t round = 0; round < ST_OBJS + 2; round++) {
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof(mr));
        mr.paging_queue = w->queue;
        mr.allocations = h;
        mr.count = n;
        mr.flags = flags;
        vidmm_status st = vidmm_make_resident(a, w->dev, &mr);
        if (st == VIDMM_PENDING) {
            w->pending++;
            if (!mr.paging_fence_value)
                W_FAIL(w, "PENDING without a fence value");
            return W_ST(w, vidmm_paging_queue_wait(a, w->queue, mr.paging_fence_value, UINT64_MAX), VIDMM_OK) ? 1
                                                                                                               : -1;
        }
        if (st == VIDMM_OK)
            return 1;
        if (st == VIDMM_E_NO_SEGMENT_SPACE) {
            w->no_space++;
            return 0;
        }
        if (st != VIDMM_E_OVER_BUDGET) {
            W_ST(w, st, VIDMM_OK);
            return -1;
        }
        /* Over budget: trim our own list (what the trim notification
         * asks), and at last say we cannot trim further. */
        w->over_budget++;
        if (!mr.bytes_to_trim)
            W_FAIL(w, "OVER_BUDGET with nothing to trim");
        struct st_obj *victim = NULL;
        for (uint32_t i = 0; i < ST_OBJS && !victim; i++) {
            struct st_obj *o = &w->obj[i];
            int wanted = 0;
            for (uint32_t k = 0; k < n; k++)
                wanted |= h[k] == o->h;
            if (o->h && o->listed && !wanted)
                victim = o;
        }
        if (victim)
            evict_obj(w, victim, 0);
        else
            flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    }
    W_FAIL(w, "make-resident kept answering OVER_BUDGET");
    return -1;
}

static struct st_obj *pick(struct st_worker *w, uint64_t *rng, int (*want)(const struct st_obj *))
{
    uint32_t start = (uint32_t)t_rand_range(rng, ST_OBJS);
    for (uint32_t k = 0; k < ST_OBJS; k++) {
        struct st_obj *o = &w->obj[(start + k) % ST_OBJS];
        if (want(o))
            return o;
    }
    return NULL;
}

static int is_free(const struct st_obj *o) { return !o->h; }
static int is_live(const struct st_obj *o) { return o->h != 0; }
static int is_usable(const struct st_obj *o) { return o->h && !o->offered; }
static int is_unmapped(const struct st_obj *o) { return o->h && !o->va; }
static int is_mapped(const struct st_obj *o) { return o->h && o->va; }
static int is_listable(const struct st_obj *o) { return o->h && o->va && !o->listed && !o->offered; }
static int is_listed(const struct st_obj *o) { return o->h && o->listed; }
static int is_offerable(const struct st_obj *o) { return o->h && !o->listed && !o->offered; }
static int is_offered(const struct st_obj *o) { return o->h && o->offered; }

/* ---- operations ----------------------------------------------------------- */

static void op_create(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_free);
    if (!o)
        return;
    static const uint64_t sizes[] = { 128 * KIB, 256 * KIB, 512 * KIB, 1 * MIB, 1536 * KIB, 2 * MIB };
    memset(o, 0, sizeof(*o));
    o->size = sizes[t_rand_range(rng, 6)];
    o->h = new_allocation(w, o->size, (int)t_rand_range(rng, 2), (int)t_rand_range(rng, 2));
    if (!o->h)
        return;
    o->sum = pat_checksum(0, o->size);
    /* New allocations read zero. */
    if (t_rand_range(rng, 4) == 0)
        cpu_verify(w, o);
    cpu_fill(w, o, ++w->next_seed);
}

static void op_fill(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_usable);
    if (!o)
        return;
    /* Sometimes another object's seed: then COMPARE finds them equal. */
    uint64_t seed = ++w->next_seed;
    struct st_obj *other = pick(w, rng, is_usable);
    if (other && other != o && t_rand_range(rng, 2))
        seed = other->seed;
    cpu_fill(w, o, seed);
}

static void op_verify(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_usable);
    if (o)
        cpu_verify(w, o);
}

static void op_map(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_unmapped);
    if (!o)
        return;
    struct vidmm_adapter *a = w->run->a;
    uint64_t va = 0;
    if (t_rand_range(rng, 2)) {
        if (!W_ST(w, vidmm_gpuva_reserve(a, w->proc, 0, 0, 0, o->size, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va),
                  VIDMM_OK))
            return;
        uint64_t got = 0;
        if (!W_ST(w, vidmm_gpuva_map(a, w->proc, va, 0, 0, o->h, 0, o->size, 0, 0, &got), VIDMM_OK)) {
            /* Refused while down: give the reservation back (after D0,
             * if freeing is refused too). */
            vidmm_status st;
            DOWN_RETRY(w, st, vidmm_gpuva_free(a, w->proc, va, o->size));
            W_ST(w, st, VIDMM_OK);
            return;
        }
        if (got != va)
            W_FAIL(w, "map at 0x%llx landed at 0x%llx", (unsigned long long)va, (unsigned long long)got);
        o->reserved = 1;
    } else {
        if (!W_ST(w, vidmm_gpuva_map(a, w->proc, 0, 0, 0, o->h, 0, o->size, 0, 0, &va), VIDMM_OK))
            return;
        o->reserved = 0;
    }
    o->va = va;
}

/* 0, or -1 when (power variant) the unlisting eviction was refused while
 * the adapter was down: o stays mapped and listed. */
static int unmap_obj(struct st_worker *w, struct st_obj *o)
{
    struct vidmm_adapter *a = w->run->a;
    vidmm_status st;
    if (o->listed)
        evict_obj(w, o, 1);   /* a listed allocation is what buffers may touch: keep it mapped */
    if (o->listed)
        return -1;
    DOWN_RETRY(w, st, vidmm_gpuva_unmap(a, w->proc, o->va, o->size));
    W_ST(w, st, VIDMM_OK);
    if (o->reserved) {
        DOWN_RETRY(w, st, vidmm_gpuva_free(a, w->proc, o->va, o->size));
        W_ST(w, st, VIDMM_OK);
    }
    o->va = 0;
    o->reserved = 0;
    return 0;
}

static void op_unmap(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_mapped);
    if (o)
        (void)unmap_obj(w, o);
}

static void op_make_resident(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_listable);
    if (!o)
        return;
    int r = make_resident(w, &o->h, 1, (int)t_rand_range(rng, 4) != 0);
    if (r == 1)
        o->listed = 1;
}

static void op_evict(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_listed);
    if (o)
        evict_obj(w, o, (uint32_t)t_rand_range(rng, 3));
}

static void op_move(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_usable);
    if (!o)
        return;
    uint32_t seg = (uint32_t)t_rand_range(rng, 3);   /* 0 = system memory (evicted), 1, 2 */
    vidmm_status st = vidmm_allocation_move(w->run->a, o->h, seg);
    if (st == VIDMM_E_NO_SEGMENT_SPACE) {
        w->no_space++;
    } else if (st == VIDMM_E_STATE && w->run->power) {
        w->down_refusals++;   /* down, or evicted by the transition */
    } else if (st == VIDMM_E_STATE) {
        /* Evicted (by anyone's pressure): only this worker brings its
         * allocations back, so it must still be out. */
        struct vidmm_residency_state rs;
        if (W_ST(w, vidmm_allocation_residency(w->run->a, o->h, &rs), VIDMM_OK) && rs.resident)
            W_FAIL(w, "move said evicted, the allocation is resident");
    } else {
        W_ST(w, st, VIDMM_OK);
        w->moves++;
    }
}

static void op_offer(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_offerable);
    if (!o)
        return;
    uint32_t prio = VIDMM_OFFER_LOW + (uint32_t)t_rand_range(rng, 4);
    if (W_ST(w, vidmm_offer(w->run->a, w->dev, &o->h, 1, prio), VIDMM_OK))
        o->offered = 1;
    w->offers++;
}

static void op_reclaim(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_offered);
    if (!o)
        return;
    uint32_t result = 99;
    uint64_t fence = 0;
    if (!W_ST(w, vidmm_reclaim(w->run->a, w->queue, &o->h, 1, &result, &fence), VIDMM_OK))
        return;
    if (fence)
        W_ST(w, vidmm_paging_queue_wait(w->run->a, w->queue, fence, UINT64_MAX), VIDMM_OK);
    o->offered = 0;
    if (result == VIDMM_RECLAIM_DISCARDED) {
        w->discarded++;
        o->seed = 0;   /* content lost: reads as zero */
        o->sum = pat_checksum(0, o->size);
        o->gpu_written = 0;
    } else if (result != VIDMM_RECLAIM_OK) {
        W_FAIL(w, "reclaim result %u", result);
    }
    cpu_verify(w, o);
}

static void destroy_obj(struct st_worker *w, struct st_obj *o, int keep_mapping)
{
    if (o->offered && !keep_mapping) {
        uint32_t r;
        W_ST(w, vidmm_reclaim(w->run->a, w->queue, &o->h, 1, &r, NULL), VIDMM_OK);
        o->offered = 0;
    }
    if (o->va && (!keep_mapping || o->reserved) && unmap_obj(w, o))
        return;   /* power variant: refused while down; the allocation goes later */
    /* Destroying a listed (or mapped) allocation drops its references
     * (and mappings) itself. */
    W_ST(w, vidmm_allocation_destroy(w->run->a, o->h), VIDMM_OK);
    atomic_fetch_sub(&w->run->live_bytes, o->size);
    memset(o, 0, sizeof(*o));
}

static void op_destroy(struct st_worker *w, uint64_t *rng)
{
    struct st_obj *o = pick(w, rng, is_live);
    if (o)
        destroy_obj(w, o, (int)t_rand_range(rng, 2));
}

/* A buffer checking what is listed: CHECKSUM of each listed object,
 * COMPARE of pairs, sometimes a COPY between two of equal size. */
static void op_submit(struct st_worker *w, uint64_t *rng)
{
    struct vidmm_adapter *a = w->run->a;
    struct st_obj *l[ST_OBJS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < ST_OBJS; i++)
        if (w->obj[i].h && w->obj[i].listed && !w->obj[i].offered)
            l[n++] = &w->obj[i];
    uint8_t buf[ST_MAX_CHECKS * 40 + 64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    uint64_t want[ST_MAX_CHECKS];
    uint32_t nres = 0;
    for (uint32_t i = 0; i < n && nres < ST_MAX_CHECKS - 2; i++) {
        softgpu_cmd_checksum(&cb, l[i]->va, l[i]->size, w->res_va + nres * 8);
        want[nres++] = l[i]->sum;
    }
    for (uint32_t k = 0; k < 2 && n >= 2 && nres < ST_MAX_CHECKS; k++) {
        struct st_obj *x = l[t_rand_range(rng, n)], *y = l[t_rand_range(rng, n)];
        uint64_t m = x->size < y->size ? x->size : y->size;
        softgpu_cmd_compare(&cb, x->va, y->va, m, w->res_va + nres * 8);
        want[nres++] = pat_compare(x->seed, y->seed, m);
    }
    /* A GPU write: y becomes x's copy (equal sizes only). */
    struct st_obj *cx = NULL, *cy = NULL;
    if (n >= 2 && t_rand_range(rng, 3) == 0) {
        cx = l[t_rand_range(rng, n)];
        for (uint32_t i = 0; i < n && !cy; i++)
            if (l[i] != cx && l[i]->size == cx->size)
                cy = l[i];
        if (cy)
            softgpu_cmd_copy(&cb, cy->va, cx->va, cx->size);
    }
    softgpu_cmd_write64(&cb, w->res_va + ST_MAX_CHECKS * 8, w->ops);   /* a token: the buffer ran to the end */
    if (cpu_write(w, w->cmd, buf, cb.size))
        return;
    vidmm_handle ctx = w->ctx[t_rand_range(rng, w->nctx)];
    uint64_t fence = 0;
    vidmm_status st = vidmm_submit_virtual(a, ctx, w->cmd_va, cb.size, &fence);
    if (st == VIDMM_E_NO_SEGMENT_SPACE) {
        /* The list does not fit right now: make it shorter. */
        w->no_space++;
        if (n)
            evict_obj(w, l[t_rand_range(rng, n)], 0);
        return;
    }
    if (!W_ST(w, st, VIDMM_OK))
        return;
    w->submits++;
    uint64_t sub = 0, done = 0;
    W_ST(w, vidmm_context_fence(a, ctx, &sub, &done), VIDMM_OK);
    if (sub < fence)
        W_FAIL(w, "context fence submitted %llu < %llu", (unsigned long long)sub, (unsigned long long)fence);
    if (!W_ST(w, vidmm_context_wait(a, ctx, fence, UINT64_MAX), VIDMM_OK))
        return;
    uint64_t got[ST_MAX_CHECKS + 1];
    cpu_read(w, w->res, got, sizeof got);
    /* Power variant: a reset that lost a listed allocation's content
     * (reported lost, now zeros) makes this buffer's results moot. */
    int moot = 0;
    for (uint32_t i = 0; i < n; i++)
        moot |= content_lost(w, l[i]);
    if (moot)
        return;
    for (uint32_t i = 0; i < nres; i++)
        if (got[i] != want[i])
            W_FAIL(w, "buffer result %u: 0x%llx, want 0x%llx", i, (unsigned long long)got[i],
                   (unsigned long long)want[i]);
    if (got[ST_MAX_CHECKS] != w->ops)
        W_FAIL(w, "buffer did not run to its end (device lost?)");
    if (cy) {
        cy->seed = cx->seed;
        cy->sum = cx->sum;
        cy->gpu_written = 1;
        w->copies++;
    }
}

/* Runs on whatever thread pushed the process over its budget, with the
 * adapter lock held: it calls back in (recursive) with a read-only entry
 * and touches no worker's state. */
static void on_trim(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct st_worker *w = context;
    (void)device;
    (void)flags;
    (void)bytes_to_trim;
    struct vidmm_video_memory_info vi;
    if (vidmm_query_video_memory_info(w->run->a, w->proc, VIDMM_SEGMENT_GROUP_LOCAL, &vi) == VIDMM_OK)
        atomic_fetch_add(&w->run->trim_calls, 1);
}

/* ---- threads ----------------------------------------------------------------- */

static void worker_setup(struct st_worker *w)
{
    struct vidmm_adapter *a = w->run->a;
    W_ST(w, vidmm_device_create(a, w->proc, &w->dev), VIDMM_OK);
    W_ST(w, vidmm_paging_queue_create(a, w->dev, (int)(w->index % 3) - 1, &w->queue), VIDMM_OK);
    w->nctx = w->index % 4 == 3 ? 2 : 1;
    for (uint32_t i = 0; i < w->nctx; i++) {
        struct vidmm_context_desc cd = { (w->index + i) % SOFTGPU_NODES, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
        W_ST(w, vidmm_context_create(a, w->dev, &cd, &w->ctx[i]), VIDMM_OK);
    }
    W_ST(w, vidmm_register_trim_notification(a, w->dev, on_trim, w), VIDMM_OK);
    w->cmd = new_allocation(w, ST_CMD_SIZE, 1, 1);
    w->res = new_allocation(w, ST_RES_SIZE, 1, 0);
    W_ST(w, vidmm_gpuva_map(a, w->proc, 0, 0, 0, w->cmd, 0, ST_CMD_SIZE, 0, 0, &w->cmd_va), VIDMM_OK);
    W_ST(w, vidmm_gpuva_map(a, w->proc, 0, 0, 0, w->res, 0, ST_RES_SIZE, 0, 0, &w->res_va), VIDMM_OK);
    vidmm_handle l[2] = { w->cmd, w->res };
    if (make_resident(w, l, 2, 0) != 1)
        W_FAIL(w, "command buffer and results not resident");
    w->next_seed = (uint64_t)(w->index + 1) << 40;
}

static void worker_teardown(struct st_worker *w)
{
    struct vidmm_adapter *a = w->run->a;
    for (uint32_t i = 0; i < ST_OBJS; i++)
        if (w->obj[i].h) {
            if (!w->obj[i].offered)
                cpu_verify(w, &w->obj[i]);
            destroy_obj(w, &w->obj[i], 0);
        }
    vidmm_handle l[2] = { w->cmd, w->res };
    W_ST(w, vidmm_evict(a, w->dev, &(struct vidmm_evict_args){ .allocations = l, .count = 2 }), VIDMM_OK);
    W_ST(w, vidmm_gpuva_unmap(a, w->proc, w->cmd_va, ST_CMD_SIZE), VIDMM_OK);
    W_ST(w, vidmm_gpuva_unmap(a, w->proc, w->res_va, ST_RES_SIZE), VIDMM_OK);
    W_ST(w, vidmm_allocation_destroy(a, w->cmd), VIDMM_OK);
    W_ST(w, vidmm_allocation_destroy(a, w->res), VIDMM_OK);
    struct vidmm_device_info di;
    if (W_ST(w, vidmm_device_query(a, w->dev, &di), VIDMM_OK) && di.lost)
        W_FAIL(w, "device lost: fault at 0x%llx flags %u", (unsigned long long)di.fault_va, di.fault_flags);
    for (uint32_t i = 0; i < w->nctx; i++)
        W_ST(w, vidmm_context_destroy(a, w->ctx[i]), VIDMM_OK);
    W_ST(w, vidmm_paging_queue_destroy(a, w->queue), VIDMM_OK);
    W_ST(w, vidmm_device_destroy(a, w->dev), VIDMM_OK);
}

static void *worker_main(void *arg)
{
    struct st_worker *w = arg;
    uint64_t rng = w->seed;
    worker_setup(w);
    atomic_fetch_sub(&w->run->setups_left, 1);
    /* The mix: an entry per unit of weight. */
    static const struct {
        const char *name;
        void (*fn)(struct st_worker *, uint64_t *);
    } ops[] = {
        { "create", op_create }, { "create", op_create }, { "fill", op_fill }, { "verify", op_verify },
        { "map", op_map }, { "map", op_map }, { "unmap", op_unmap },
        { "make-resident", op_make_resident }, { "make-resident", op_make_resident },
        { "make-resident", op_make_resident }, { "submit", op_submit }, { "submit", op_submit },
        { "submit", op_submit }, { "evict", op_evict }, { "move", op_move }, { "offer", op_offer },
        { "reclaim", op_reclaim }, { "destroy", op_destroy },
    };
    const uint32_t nops = (uint32_t)(sizeof ops / sizeof ops[0]);
    for (uint32_t i = 0; i < w->run->ops_per_thread && !w->failures; i++) {
        w->ops++;
        uint32_t k = (uint32_t)t_rand_range(&rng, nops);
        w->op = ops[k].name;
        ops[k].fn(w, &rng);
    }
    /* Power variant: tear down in D0, once the power thread stopped. */
    atomic_fetch_sub(&w->run->ops_left, 1);
    while (w->run->power && !atomic_load(&w->run->power_done))
        nap_us(1000);
    w->op = "teardown";
    worker_teardown(w);
    atomic_fetch_sub(&w->run->workers_left, 1);
    return NULL;
}

/* Cycles standby / hibernate / D0 until the workers are done with their
 * operations, then leaves the adapter in D0. */
static void *power_main(void *arg)
{
    struct st_run *r = arg;
    uint64_t rng = 0x5eed;
    while (atomic_load(&r->setups_left) > 0)
        nap_us(200);
    while (atomic_load(&r->ops_left) > 0 && !r->power_failure[0]) {
        nap_us(500 + (long)t_rand_range(&rng, 2500));
        uint32_t state = t_rand_range(&rng, 3) ? VIDMM_POWER_STANDBY : VIDMM_POWER_HIBERNATE;
        vidmm_status st = vidmm_adapter_set_power_state(r->a, state);
        if (st == VIDMM_E_BUSY) {
            r->refused_busy++;   /* a CPU lock on content the state would lose */
            continue;
        }
        if (st != VIDMM_OK) {
            snprintf(r->power_failure, sizeof r->power_failure, "set_power_state(%u): %s", state,
                     vidmm_status_str(st));
            break;
        }
        r->transitions++;
        nap_us(200 + (long)t_rand_range(&rng, 1500));
        st = vidmm_adapter_set_power_state(r->a, VIDMM_POWER_D0);
        if (st != VIDMM_OK) {
            snprintf(r->power_failure, sizeof r->power_failure, "resume to D0: %s", vidmm_status_str(st));
            break;
        }
    }
    atomic_store(&r->power_done, 1);
    return NULL;
}

static void *checker_main(void *arg)
{
    struct st_run *r = arg;
    char rep[1024];
    while (atomic_load(&r->workers_left) > 0) {
        int e = vidmm_adapter_check(r->a, rep, sizeof rep);
        if (e && atomic_fetch_add(&r->check_failures, 1) == 0)
            memcpy(r->check_report, rep, sizeof rep);
        /* The WDDM rules on the same state.  Only the library's: the GPU
         * walk and the failed-call rule need a state no other thread
         * changes between their queries. */
        e = vidmm_adapter_check_rules(r->a, rep, sizeof rep);
        if (e && atomic_fetch_add(&r->rule_failures, 1) == 0)
            memcpy(r->rule_report, rep, sizeof rep);
        atomic_fetch_add(&r->adapter_checks, 1);
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* ---- the test ----------------------------------------------------------------- */

/* A dgpu adapter for the single-thread replays (no threads, no checker). */
static int run_open(struct st_run *run, uint64_t seg1, uint64_t seg2)
{
    memset(run, 0, sizeof(*run));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", seg1, seg2, 0);
    return softgpu_open(&run->fa, &cfg, NULL, 0, &run->sg, &run->a);
}

static void run_mix(int power)
{
    static struct st_run run;
    static struct st_worker wk[ST_MAX_THREADS];
    memset(&run, 0, sizeof(run));
    memset(wk, 0, sizeof(wk));
    const char *tn = power ? "VIDMM_STRESS_POWER_THREADS" : "VIDMM_STRESS_THREADS";
    const char *on = power ? "VIDMM_STRESS_POWER_OPS" : "VIDMM_STRESS_OPS";
    uint64_t threads = env_u64(tn, power ? 4 : 8);
    if (threads < 2)
        threads = 2;
    if (threads > ST_MAX_THREADS)
        threads = ST_MAX_THREADS;
    run.threads = (uint32_t)threads;
    run.ops_per_thread = (uint32_t)env_u64(on, power ? 300 : 400);
    run.power = power;
    uint64_t seed = t_seed();
    printf("  stress%s: seed %llu, %u threads, %u ops each (%s, %s)\n", power ? " (power)" : "",
           (unsigned long long)seed, run.threads, run.ops_per_thread, tn, on);

    /* Check the CPU's checksum against softgpu's once. */
    {
        uint64_t words[64];
        for (uint64_t i = 0; i < 64; i++)
            words[i] = pat_word(7, i);
        T_EQ_U64(pat_checksum(7, sizeof words), softgpu_checksum(words, sizeof words));
    }

    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 8 * MIB, 16 * MIB, 0);
    if (softgpu_open(&run.fa, &cfg, NULL, 0, &run.sg, &run.a))
        return;
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(run.a, &ai), VIDMM_OK);
    struct vidmm_segment_info base[8];
    for (uint32_t s = 0; s < ai.segment_count && s < 8; s++)
        T_ST(vidmm_segment_query(run.a, s, &base[s]), VIDMM_OK);

    /* Workers 0/1 and 2/3 share a process; the others have their own. */
    for (uint32_t i = 0; i < run.threads; i++) {
        struct st_worker *w = &wk[i];
        w->run = &run;
        w->index = i;
        w->seed = seed * 0x9E3779B97F4A7C15ull + i + 1;
        if (i < 4 && (i & 1)) {
            w->proc = wk[i - 1].proc;
        } else {
            T_ST(vidmm_process_create(run.a, &run.procs[i]), VIDMM_OK);
            w->proc = run.procs[i];
        }
    }
    atomic_store(&run.workers_left, (int)run.threads);
    atomic_store(&run.ops_left, (int)run.threads);
    atomic_store(&run.setups_left, (int)run.threads);
    atomic_store(&run.power_done, !power);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t tid[ST_MAX_THREADS], checker, pw;
    int checker_started = pthread_create(&checker, NULL, checker_main, &run) == 0;
    T_CHECK(checker_started);
    int ok[ST_MAX_THREADS];
    for (uint32_t i = 0; i < run.threads; i++) {
        ok[i] = pthread_create(&tid[i], NULL, worker_main, &wk[i]) == 0;
        T_CHECK(ok[i]);
        if (!ok[i]) {
            atomic_fetch_sub(&run.workers_left, 1);
            atomic_fetch_sub(&run.ops_left, 1);
            atomic_fetch_sub(&run.setups_left, 1);
        }
    }
    int pw_started = power && pthread_create(&pw, NULL, power_main, &run) == 0;
    if (power && !pw_started) {
        T_CHECK(pw_started);
        atomic_store(&run.power_done, 1);
    }
    for (uint32_t i = 0; i < run.threads; i++)
        if (ok[i])
            pthread_join(tid[i], NULL);
    if (pw_started)
        pthread_join(pw, NULL);
    if (checker_started)
        pthread_join(checker, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (run.power_failure[0])
        fprintf(stderr, "  power thread: %s\n", run.power_failure);
    T_CHECK(run.power_failure[0] == 0);

    uint64_t total = 0, submits = 0, checks = 0, copies = 0, evictions = 0, moves = 0, offers = 0, discarded = 0;
    uint64_t pending = 0, over_budget = 0, no_space = 0, refusals = 0, lost = 0;
    for (uint32_t i = 0; i < run.threads; i++) {
        struct st_worker *w = &wk[i];
        if (w->failures)
            fprintf(stderr, "  %s (%d failures)\n", w->first_failure, w->failures);
        T_EQ(w->failures, 0);
        total += w->ops;
        submits += w->submits;
        checks += w->checks;
        copies += w->copies;
        evictions += w->evictions;
        moves += w->moves;
        offers += w->offers;
        discarded += w->discarded;
        pending += w->pending;
        over_budget += w->over_budget;
        no_space += w->no_space;
        refusals += w->down_refusals;
        lost += w->lost;
    }
    if (atomic_load(&run.check_failures))
        fprintf(stderr, "  vidmm_adapter_check: %s\n", run.check_report);
    T_EQ(atomic_load(&run.check_failures), 0);
    if (atomic_load(&run.rule_failures)) {
        int known = t_known_defect("stress.rules");
        fprintf(stderr, "  vidmm_adapter_check_rules%s: %s\n",
                known ? " (known defect: stress.rules in tests/known_defects)" : "", run.rule_report);
        if (!known)
            T_EQ(atomic_load(&run.rule_failures), 0);
    }
    T_CHECK(atomic_load(&run.adapter_checks) > 0);

    /* It was over-committed, and the GPU really ran the checks. */
    struct vidmm_residency_stats rs;
    T_ST(vidmm_residency_get_stats(run.a, &rs), VIDMM_OK);
    struct vidmm_submit_stats ss;
    T_ST(vidmm_submit_get_stats(run.a, &ss), VIDMM_OK);
    T_EQ_U64(ss.virtual_submissions, submits);
    T_EQ_U64(ss.in_flight, 0);
    struct softgpu_stats gs;
    softgpu_get_stats(run.sg, &gs);
    T_EQ_U64(gs.command_faults, 0);
    if (run.ops_per_thread >= 100)
        T_CHECK(rs.evictions > 0 && rs.restores > 0 && submits > 0);

    for (uint32_t i = 0; i < run.threads; i++)
        if (run.procs[i]) {
            struct vidmm_process_info pi;
            T_ST(vidmm_process_query(run.a, run.procs[i], &pi), VIDMM_OK);
            T_EQ_U64(pi.ranges, 0);   /* every mapping and reservation went */
            T_EQ(pi.faulted, 0);
            T_ST(vidmm_process_destroy(run.a, run.procs[i]), VIDMM_OK);
        }
    char rep[1024];
    int e = vidmm_adapter_check(run.a, rep, sizeof rep);
    if (e)
        fprintf(stderr, "  %s\n", rep);
    T_EQ(e, 0);
    /* The segments hold what they held after open (the paging process's
     * tables), nothing else. */
    T_ST(vidmm_adapter_query_info(run.a, &ai), VIDMM_OK);
    T_EQ_U64(ai.live_allocations, 0);
    for (uint32_t s = 0; s < ai.segment_count && s < 8; s++) {
        struct vidmm_segment_info si;
        T_ST(vidmm_segment_query(run.a, s, &si), VIDMM_OK);
        T_EQ_U64(si.committed, base[s].committed);
        T_EQ_U64(si.free_bytes, base[s].free_bytes);
        T_EQ_U64(si.allocations, base[s].allocations);
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint64_t memory = 0;
    for (uint32_t s = 1; s < ai.segment_count && s < 8; s++)
        if (base[s].kind == VIDMM_SEGMENT_KIND_MEMORY)
            memory += base[s].size;
    printf("  stress: peak %.1f MiB allocated = %.2fx the %.0f MiB of memory segments\n",
           (double)atomic_load(&run.peak_bytes) / (double)MIB, (double)atomic_load(&run.peak_bytes) / (double)memory,
           (double)memory / (double)MIB);
    printf("  stress: %llu ops in %.2f s (%llu submissions, %llu CPU checks, %llu GPU copies, %llu evict calls,"
           " %llu moves, %llu offers, %llu discarded, %llu PENDING, %llu OVER_BUDGET, %llu NO_SEGMENT_SPACE);"
           " residency: %llu evictions, %llu restores; %llu trim notifications; %llu adapter checks\n",
           (unsigned long long)total, secs, (unsigned long long)submits, (unsigned long long)checks,
           (unsigned long long)copies, (unsigned long long)evictions, (unsigned long long)moves,
           (unsigned long long)offers, (unsigned long long)discarded, (unsigned long long)pending,
           (unsigned long long)over_budget, (unsigned long long)no_space, (unsigned long long)rs.evictions,
           (unsigned long long)rs.restores, (unsigned long long)atomic_load(&run.trim_calls),
           (unsigned long long)atomic_load(&run.adapter_checks));
    if (power) {
        struct vidmm_power_stats ps;
        T_ST(vidmm_adapter_get_power_stats(run.a, &ps), VIDMM_OK);
        uint32_t state = 99;
        T_ST(vidmm_adapter_get_power_state(run.a, &state), VIDMM_OK);
        T_EQ(state, VIDMM_POWER_D0);
        T_EQ_U64(ps.transitions, 2 * run.transitions);
        if (run.ops_per_thread >= 100)
            T_CHECK(run.transitions > 0);
        printf("  stress (power): %llu transitions down and back (%llu refused: locked), %llu allocations saved,"
               " %llu discarded; %llu calls refused while down; %llu allocations found content-lost\n",
               (unsigned long long)run.transitions, (unsigned long long)run.refused_busy,
               (unsigned long long)ps.allocations_saved, (unsigned long long)ps.allocations_discarded,
               (unsigned long long)refusals, (unsigned long long)lost);
    }
    softgpu_close(&run.fa, run.sg, run.a);
}

static void mixed_operations(void)
{
    run_mix(0);
}

/* The mix with a thread cycling the power state: every entry that needs
 * the GPU answers VIDMM_E_STATE while down (power.h), so nothing may
 * lose bytes or devices.  VIDMM_STRESS_POWER=0 skips it. */
static void power_transitions(void)
{
    if (getenv("VIDMM_STRESS_POWER") && env_u64("VIDMM_STRESS_POWER", 1) == 0) {
        printf("  stress (power): skipped (VIDMM_STRESS_POWER=0)\n");
        return;
    }
    run_mix(1);
}

/* The first bug the mix found, replayed on one thread: an offered
 * allocation discarded under pressure, reclaimed (DISCARDED), written by
 * the CPU while still evicted, then made resident: the restore zero-filled
 * it (content_lost outlived the write).  The write must survive. */
static void reclaimed_write_survives_restore(void)
{
    struct st_run run;
    if (run_open(&run, 4 * MIB, 4 * MIB))
        return;
    struct vidmm_adapter *a = run.a;
    struct st_worker w;
    memset(&w, 0, sizeof(w));
    w.run = &run;
    T_ST(vidmm_process_create(a, &w.proc), VIDMM_OK);
    T_ST(vidmm_device_create(a, w.proc, &w.dev), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(a, w.dev, VIDMM_PAGING_QUEUE_NORMAL, &w.queue), VIDMM_OK);
    struct st_obj *x = &w.obj[0];
    x->size = 2 * MIB;
    x->h = new_allocation(&w, x->size, 1, 1);                /* resident, no backing copy */
    vidmm_handle big[2];
    for (uint32_t i = 0; i < 2; i++)
        big[i] = new_allocation(&w, 3 * MIB, 0, 1);
    cpu_fill(&w, x, 11);
    T_ST(vidmm_offer(a, w.dev, &x->h, 1, VIDMM_OFFER_LOW), VIDMM_OK);
    T_EQ(make_resident(&w, big, 2, 1), 1);                   /* 6 of 8 MiB (and page tables): x is discarded */
    uint32_t result = 0;
    T_ST(vidmm_reclaim(a, w.queue, &x->h, 1, &result, NULL), VIDMM_OK);
    T_EQ(result, VIDMM_RECLAIM_DISCARDED);
    x->seed = 0;
    cpu_verify(&w, x);                                       /* reads zero */
    cpu_fill(&w, x, 12);                                     /* written while evicted */
    T_ST(vidmm_evict(a, w.dev, &(struct vidmm_evict_args){ .allocations = big, .count = 2 }), VIDMM_OK);
    T_EQ(make_resident(&w, &x->h, 1, 1), 1);                 /* restored: copied, not zero-filled */
    struct vidmm_residency_state rs;
    T_ST(vidmm_allocation_residency(a, x->h, &rs), VIDMM_OK);
    T_EQ(rs.resident, 1);
    cpu_verify(&w, x);
    if (w.failures)
        fprintf(stderr, "  %s\n", w.first_failure);
    T_EQ(w.failures, 0);
    softgpu_close(&run.fa, run.sg, run.a);
}

struct waiter {
    struct vidmm_adapter *a;
    vidmm_handle ctx;
    uint64_t fence;
    vidmm_status st;
    atomic_int done;
};

/* What the power variant found, on one thread: an allocation restored
 * from system memory keeps that copy as its backing; a virtual submission
 * then writes it on the GPU (no allocation list: vidmm cannot know which
 * bytes, only that the buffer could).  Going to standby must save it, not
 * discard it in favour of the stale copy. */
static void gpu_write_survives_standby(void)
{
    struct st_run run;
    if (run_open(&run, 4 * MIB, 4 * MIB))
        return;
    struct vidmm_adapter *a = run.a;
    struct st_worker w;
    memset(&w, 0, sizeof(w));
    w.run = &run;
    T_ST(vidmm_process_create(a, &w.proc), VIDMM_OK);
    worker_setup(&w);
    struct st_obj *x = &w.obj[0];
    x->size = 256 * KIB;
    x->h = new_allocation(&w, x->size, 0, 1);                /* created evicted: in system memory */
    cpu_fill(&w, x, 21);
    T_ST(vidmm_gpuva_map(a, w.proc, 0, 0, 0, x->h, 0, x->size, 0, 0, &x->va), VIDMM_OK);
    T_EQ(make_resident(&w, &x->h, 1, 0), 1);                 /* restored; the system pages stay its backing */
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_fill(&cb, x->va, x->size, 0x5a5a5a5au), VIDMM_OK);
    T_EQ(cpu_write(&w, w.cmd, buf, cb.size), 0);
    uint64_t fence = 0;
    T_ST(vidmm_submit_virtual(a, w.ctx[0], w.cmd_va, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(a, w.ctx[0], fence, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(a, VIDMM_POWER_STANDBY), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(a, VIDMM_POWER_D0), VIDMM_OK);
    uint8_t got[16] = { 0 };
    cpu_read(&w, x->h, got, sizeof got);
    T_EQ(got[0], 0x5a);                                      /* the GPU's bytes, not the CPU's older ones */
    T_EQ(got[15], 0x5a);
    /* Standby evicted it (and the command buffer): the next submission
     * restores both, keeping the system pages as backing again, and its
     * buffer writes x.  That write must survive the next standby too. */
    struct vidmm_residency_state rs;
    T_ST(vidmm_allocation_residency(a, x->h, &rs), VIDMM_OK);
    T_EQ(rs.resident, 0);
    cb.size = 0;
    T_ST(softgpu_cmd_fill(&cb, x->va, x->size, 0x6b6b6b6bu), VIDMM_OK);
    T_EQ(cpu_write(&w, w.cmd, buf, cb.size), 0);
    T_ST(vidmm_submit_virtual(a, w.ctx[0], w.cmd_va, cb.size, &fence), VIDMM_OK);
    T_ST(vidmm_context_wait(a, w.ctx[0], fence, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_allocation_residency(a, x->h, &rs), VIDMM_OK);
    T_EQ(rs.resident, 1);
    T_ST(vidmm_adapter_set_power_state(a, VIDMM_POWER_HIBERNATE), VIDMM_OK);
    T_ST(vidmm_adapter_set_power_state(a, VIDMM_POWER_D0), VIDMM_OK);
    cpu_read(&w, x->h, got, sizeof got);
    T_EQ(got[0], 0x6b);
    T_EQ(got[15], 0x6b);
    T_ST(vidmm_gpuva_unmap(a, w.proc, x->va, x->size), VIDMM_OK);
    x->va = 0;
    x->listed = 1;
    destroy_obj(&w, x, 0);
    worker_teardown(&w);
    if (w.failures)
        fprintf(stderr, "  %s\n", w.first_failure);
    T_EQ(w.failures, 0);
    T_ST(vidmm_process_destroy(a, w.proc), VIDMM_OK);
    softgpu_close(&run.fa, run.sg, run.a);
}

static void *wait_main(void *arg)
{
    struct waiter *wt = arg;
    /* Bounded: were the lock held while asleep, the other thread would
     * stall until this times out, and the test fails instead of hanging. */
    wt->st = vidmm_context_wait(wt->a, wt->ctx, wt->fence, 5000000000ull);
    atomic_store(&wt->done, 1);
    return NULL;
}

/* A CPU wait sleeps without the adapter lock: while one thread waits for
 * a buffer stalled on a WAIT, another creates, destroys and checks; only
 * then does the CPU release the WAIT. */
static void cpu_wait_leaves_the_adapter_free(void)
{
    struct st_run run;
    if (run_open(&run, 8 * MIB, 8 * MIB))
        return;
    struct vidmm_adapter *a = run.a;
    struct st_worker w;
    memset(&w, 0, sizeof(w));
    w.run = &run;
    w.proc = 0;
    T_ST(vidmm_process_create(a, &w.proc), VIDMM_OK);
    worker_setup(&w);
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_wait(&cb, w.res_va + 1024, 1), VIDMM_OK);
    T_ST(softgpu_cmd_write64(&cb, w.res_va + 8, 42), VIDMM_OK);
    cpu_write(&w, w.cmd, buf, cb.size);
    struct waiter wt = { a, w.ctx[0], 0, VIDMM_E_STATE, 0 };
    T_ST(vidmm_submit_virtual(a, w.ctx[0], w.cmd_va, cb.size, &wt.fence), VIDMM_OK);
    pthread_t tid;
    T_EQ(pthread_create(&tid, NULL, wait_main, &wt), 0);
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
    /* The waiter is asleep; the adapter answers this thread. */
    for (int i = 0; i < 4; i++) {
        vidmm_handle h = new_allocation(&w, 256 * KIB, 1, 1);
        T_ST(vidmm_allocation_destroy(a, h), VIDMM_OK);
        atomic_fetch_sub(&run.live_bytes, 256 * KIB);
    }
    char rep[512];
    T_EQ(vidmm_adapter_check(a, rep, sizeof rep), 0);
    uint64_t done = 0;
    T_ST(vidmm_context_fence(a, w.ctx[0], NULL, &done), VIDMM_OK);
    T_CHECK(done < wt.fence);
    T_EQ(atomic_load(&wt.done), 0);
    /* Release the WAIT through the GPU's view of the results. */
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(a, w.proc, &root), VIDMM_OK);
    uint64_t one = 1;
    T_ST(softgpu_write_virtual(run.sg, &root, w.res_va + 1024, &one, 8), VIDMM_OK);
    pthread_join(tid, NULL);
    T_ST(wt.st, VIDMM_OK);
    uint64_t got[2];
    cpu_read(&w, w.res, got, sizeof got);
    T_EQ_U64(got[1], 42);
    worker_teardown(&w);
    T_ST(vidmm_process_destroy(a, w.proc), VIDMM_OK);
    if (w.failures)
        fprintf(stderr, "  %s\n", w.first_failure);
    T_EQ(w.failures, 0);
    softgpu_close(&run.fa, run.sg, run.a);
}

void suite_stress(void);
void suite_stress(void)
{
    t_run("stress.cpu_wait_leaves_the_adapter_free", cpu_wait_leaves_the_adapter_free);
    t_run("stress.reclaimed_write_survives_restore", reclaimed_write_survives_restore);
    t_run("stress.gpu_write_survives_standby", gpu_write_survives_standby);
    t_run("stress.mixed_operations", mixed_operations);
    t_run("stress.power_transitions", power_transitions);
}
