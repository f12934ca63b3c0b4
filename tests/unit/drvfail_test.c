/*
 * drvfail_test.c - every driver op refused at every call of an
 * ordinary scenario, once and from that call on ("the class, not the
 * cases": fault_alloc does the same for host memory in oom_test.c).
 *
 * The scenario (run_scenario) mixes two processes, allocations in every
 * kind of place (CPU-visible and invisible memory, system memory, the
 * aperture for an AccessedPhysically ring), GPU VA maps (one allocation
 * in both processes), make-resident under over-commitment (evictions
 * and restores), explicit evictions, moves, a destruction whose pages
 * another process's new allocation then takes, the destruction of a
 * mapped allocation created resident, and CPU writes of a seeded
 * pattern.  The driver is tests/harness/fault_driver.h over a
 * synchronous softgpu.
 *
 * For each op the scenario calls (counted first with nothing armed), for
 * k = 1..calls, in mode ONCE and STICKY: a fresh adapter runs the
 * scenario with op armed at its k-th call, whatever the calls return;
 * then the driver is disarmed and a clean phase makes everything
 * resident again.  Then:
 *   - vidmm_adapter_check is clean;
 *   - the rules checker (library rules and the GPU's view,
 *     tests/harness/rules_check.h) is clean: every mapped GPU VA reaches
 *     its own allocation's place or faults, no page-table entry reaches
 *     memory that is free or another allocation's, a VA nothing maps
 *     faults, and the aperture maps only allocations' ranges, each onto
 *     its own pages;
 *   - every byte of every allocation is what the scenario wrote, or the
 *     allocation says an adapter reset lost its content (content_lost,
 *     vidmm/tdr.h; it then reads as zero);
 *   - closing leaves no host memory behind.
 *
 * `make test` runs build_paging_buffer and submit_command over every k
 * in both modes, and the other ops at every k once (drvfail.sweep);
 * VIDMM_DRVFAIL_ALL=1 (tests/long.sh) adds every op sticky and a second
 * scenario size.  The regression tests of the four ordering defects
 * (drvfail.move_*, drvfail.restore_*, drvfail.evict_*, drvfail.aperture_*)
 * pin the call that reproduced each one; drvfail.destroy_* a fifth (a
 * destruction freed pages its refused unmap still left reachable).
 */
#include "harness/fault_alloc.h"
#include "harness/fault_driver.h"
#include "harness/rules_check.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)

enum { NPROC = 2, NALLOC = 9 };

struct dx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct fault_driver fd;
    struct vidmm_adapter *a;
    vidmm_handle proc[NPROC], dev[NPROC], queue[NPROC], ctx[NPROC];
    vidmm_handle al[NALLOC];
    int owner[NALLOC];               /* the process that makes it resident */
    uint64_t seed[NALLOC];           /* the pattern its bytes hold (0: zero) */
    uint64_t size[NALLOC];
    uint64_t scale;                  /* 1 or 2: allocation sizes x this */
};

/* ---- the fixture, assert-free (it runs under injection) ----------------- */

static int dx_open(struct dx *x, uint64_t scale)
{
    memset(x, 0, sizeof(*x));
    x->scale = scale;
    fault_alloc_init(&x->fa);
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 2 * MIB * scale, 2 * MIB * scale, 1);
    if (softgpu_create(&cfg, &x->sg) != VIDMM_OK)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(x->sg, &ci);
    ci.host_allocator = &x->fa.ha;
    fault_driver_wrap(&x->fd, &ci);
    if (vidmm_adapter_open(&ci, &x->a) != VIDMM_OK) {
        softgpu_destroy(x->sg);
        return -1;
    }
    return 0;
}

static void dx_close(struct dx *x)
{
    vidmm_adapter_close(x->a);
    T_EQ(x->fa.live_blocks, 0);
    softgpu_destroy(x->sg);
}

static void proc_create(struct dx *x, int p)
{
    if (vidmm_process_create(x->a, &x->proc[p]) != VIDMM_OK ||
        vidmm_device_create(x->a, x->proc[p], &x->dev[p]) != VIDMM_OK ||
        vidmm_paging_queue_create(x->a, x->dev[p], VIDMM_PAGING_QUEUE_NORMAL, &x->queue[p]) != VIDMM_OK)
        return;
    struct vidmm_context_desc cd = { SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    (void)vidmm_context_create(x->a, x->dev[p], &cd, &x->ctx[p]);
}

static void fill(uint64_t *w, uint64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (uint64_t i = 0; i < n; i++)
        w[i] = seed ? t_rand(&s) : 0;
}

/* Write seed's pattern through a CPU lock; the expected content changes
 * only if the lock (and so the write) happened. */
static void write_pattern(struct dx *x, int i, uint64_t seed)
{
    void *p = NULL;
    if (!x->al[i] || vidmm_allocation_lock(x->a, x->al[i], &p) != VIDMM_OK || !p)
        return;
    fill(p, x->size[i] / 8, seed);
    x->seed[i] = seed;
    (void)vidmm_allocation_unlock(x->a, x->al[i]);
}

static void new_alloc_flags(struct dx *x, int i, enum softgpu_alloc_kind kind, uint64_t size, int owner,
                            uint32_t flags);
static void new_alloc(struct dx *x, int i, enum softgpu_alloc_kind kind, uint64_t size, int owner)
{
    new_alloc_flags(x, i, kind, size, owner, 0);
}

/* flags: VIDMM_CREATE_* (RESIDENT: placed now, no system copy). */
static void new_alloc_flags(struct dx *x, int i, enum softgpu_alloc_kind kind, uint64_t size, int owner,
                            uint32_t flags)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = kind;
    d.size = size * x->scale;
    d.cpu_visible = 1;
    if (kind == SOFTGPU_ALLOC_EXPLICIT) {
        /* AccessedPhysically in the aperture only (dgpu: segment 3): its
         * restores map it there. */
        softgpu_cpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(3), size * x->scale);
        d.info.flags |= VIDMM_ALLOC_ACCESSED_PHYSICALLY;
        d.info.preferred_segment = VIDMM_PREF(0, 3, 0);
    }
    x->al[i] = 0;
    x->owner[i] = owner;
    x->seed[i] = 0;
    x->size[i] = d.size;
    if (vidmm_allocation_create2(x->a, &d, sizeof(d), flags, &x->al[i]) != VIDMM_OK)
        x->al[i] = 0;
    write_pattern(x, i, 0x5eed0000u + (uint64_t)i * 7919u + 1);
}

static void map(struct dx *x, int p, int i)
{
    uint64_t va = 0;
    if (x->al[i])
        (void)vidmm_gpuva_map(x->a, x->proc[p], 0, 0, 0, x->al[i], 0, x->size[i], 0, 0, &va);
}

static vidmm_status resident(struct dx *x, int p, const int *idx, uint32_t n)
{
    vidmm_handle l[NALLOC];
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++)
        if (x->al[idx[k]])
            l[m++] = x->al[idx[k]];
    return m ? softgpu_try_make_resident(x->a, x->dev[p], x->queue[p], l, m) : VIDMM_OK;
}

static void evict(struct dx *x, int p, int i)
{
    if (x->al[i])
        (void)vidmm_evict(x->a, x->dev[p], &(struct vidmm_evict_args){ .allocations = &x->al[i], .count = 1 });
}

static void move(struct dx *x, int i, uint32_t seg)
{
    if (x->al[i])
        (void)vidmm_allocation_move(x->a, x->al[i], seg);
}

/* ---- the scenario ---------------------------------------------------------- */

/* Indices: 0 CONSTANT (visible memory), 1 TEXTURE (invisible), 2 STAGING
 * (system memory), 3 RING (AccessedPhysically: the aperture), 4 TEXTURE
 * large, 5 CONSTANT of process 1, 6 TEXTURE of process 1 made after 5 is
 * destroyed (on its pages). */
static void run_scenario(struct dx *x)
{
    proc_create(x, 1);
    new_alloc(x, 0, SOFTGPU_ALLOC_CONSTANT, 256 * KIB, 0);
    new_alloc(x, 1, SOFTGPU_ALLOC_TEXTURE, 512 * KIB, 1);
    new_alloc(x, 2, SOFTGPU_ALLOC_STAGING, 256 * KIB, 0);
    new_alloc(x, 3, SOFTGPU_ALLOC_RING, 64 * KIB, 0);
    new_alloc(x, 4, SOFTGPU_ALLOC_TEXTURE, 1 * MIB, 0);
    new_alloc(x, 5, SOFTGPU_ALLOC_CONSTANT, 512 * KIB, 1);
    for (int i = 0; i < 6; i++)
        map(x, x->owner[i], i);
    map(x, 1, 4);   /* one allocation in both processes */
    static const int l0[] = { 0, 2, 3, 4 }, l1[] = { 1, 5, 4 };
    (void)resident(x, 0, l0, 4);
    (void)resident(x, 1, l1, 3);
    evict(x, 0, 0);
    evict(x, 0, 4);
    move(x, 1, 1);       /* invisible -> visible memory */
    move(x, 2, 1);       /* system -> memory */
    move(x, 0, 2);
    move(x, 3, 0);       /* the ring: stays in the aperture */
    if (x->al[5] && vidmm_allocation_destroy(x->a, x->al[5]) == VIDMM_OK)
        x->al[5] = 0;
    new_alloc(x, 6, SOFTGPU_ALLOC_TEXTURE, 512 * KIB, 1);
    map(x, 1, 6);
    static const int l1b[] = { 6, 1 }, l0b[] = { 0, 4 };
    (void)resident(x, 1, l1b, 2);
    (void)resident(x, 0, l0b, 2);   /* restores, evicting */
    move(x, 2, 0);       /* memory -> system */
    move(x, 4, 0);
    evict(x, 0, 3);      /* the ring leaves the aperture */
    evict(x, 0, 2);
    static const int l0c[] = { 3, 2 };
    (void)resident(x, 0, l0c, 2);
    /* An AccessedPhysically allocation of the aperture only: made
     * resident (mapped into the aperture), evicted (unmapped), made
     * resident again (mapped again). */
    new_alloc(x, 8, SOFTGPU_ALLOC_EXPLICIT, 64 * KIB, 0);
    map(x, 0, 8);
    static const int l0d[] = { 8 };
    (void)resident(x, 0, l0d, 1);
    evict(x, 0, 8);
    (void)resident(x, 0, l0d, 1);
    write_pattern(x, 1, 0xabcdef);
    /* Created resident (no system copy), mapped, destroyed: its entries
     * must be gone before its pages are. */
    new_alloc_flags(x, 7, SOFTGPU_ALLOC_CONSTANT, 128 * KIB, 0, VIDMM_CREATE_RESIDENT);
    map(x, 0, 7);
    if (x->al[7] && vidmm_allocation_destroy(x->a, x->al[7]) == VIDMM_OK)
        x->al[7] = 0;
}

/* Disarmed: the OS's hang timer polls once (a reset a refused step
 * scheduled runs there if no wait ran it), then each process's
 * allocations are made resident again. */
static void clean_phase(struct dx *x)
{
    (void)vidmm_adapter_detect_hangs(x->a, NULL);
    int mine[NPROC][NALLOC], n[NPROC] = { 0, 0 };
    for (int i = 0; i < NALLOC; i++)
        if (x->al[i])
            mine[x->owner[i]][n[x->owner[i]]++] = i;
    for (int p = 0; p < NPROC; p++)
        for (int tries = 0; tries < 3 && x->dev[p] && resident(x, p, mine[p], (uint32_t)n[p]) < 0; tries++)
            ;
}

/* Violations of the content rule: each allocation holds its pattern, or
 * an adapter reset reported its content lost. */
static int check_content(struct dx *x, char *msg, size_t len)
{
    int e = 0;
    for (int i = 0; i < NALLOC; i++) {
        struct vidmm_allocation_state s;
        void *p = NULL;
        if (!x->al[i] || vidmm_allocation_query(x->a, x->al[i], &s) != VIDMM_OK)
            continue;
        if (vidmm_allocation_lock(x->a, x->al[i], &p) != VIDMM_OK || !p) {
            e++;
            snprintf(msg, len, "allocation %d: cannot be locked after the clean phase", i);
            continue;
        }
        const uint64_t *w = p;
        uint64_t st = x->seed[i], want = 0, bad = UINT64_MAX;
        for (uint64_t k = 0; k < x->size[i] / 8; k++) {
            want = x->seed[i] ? t_rand(&st) : 0;
            if (w[k] != want) {
                bad = k * 8;
                break;
            }
        }
        (void)vidmm_allocation_unlock(x->a, x->al[i]);
        if (bad != UINT64_MAX && !s.content_lost) {
            e++;
            snprintf(msg, len, "allocation %d: byte 0x%" PRIx64 " differs and no reset reported it lost", i, bad);
        }
    }
    return e;
}

static int check_all(struct dx *x, char *rep, size_t n)
{
    int e = vidmm_adapter_check(x->a, rep, n);
    if (e)
        return e;
    struct rc_objects o;
    memset(&o, 0, sizeof(o));
    o.proc = x->proc;
    o.nproc = NPROC;
    o.dev = x->dev;
    o.ndev = NPROC;
    o.alloc = x->al;
    o.nalloc = NALLOC;
    e = rc_check_rules(x->a, x->sg, &o, rep, n);
    if (e)
        return e;
    e = rc_check_aperture(x->a, x->sg, rep, n);
    if (e)
        return e;
    e = rc_check_unmapped(x->a, x->sg, &o, 1u << 12, rep, n);
    if (e)
        return e;
    return check_content(x, rep, n);
}

/* One run: op armed at k in mode; 0 when every check holds. */
static int run_one(uint64_t scale, enum fault_op op, uint64_t k, enum fault_mode mode, int verbose)
{
    struct dx x;
    if (dx_open(&x, scale))
        return 1;
    proc_create(&x, 0);
    fault_driver_arm(&x.fd, op, k, mode, VIDMM_E_DRIVER_FAILURE);
    run_scenario(&x);
    fault_driver_disarm(&x.fd);
    clean_phase(&x);
    char rep[2048] = "";
    int e = check_all(&x, rep, sizeof rep);
    if (e || verbose)
        fprintf(stderr, "drvfail: %s k=%" PRIu64 " %s (scale %" PRIu64 "): %s%s\n", fault_driver_op_name(op), k,
                mode == FAULT_DRIVER_STICKY ? "sticky" : "once", scale, e ? "FAILED: " : "ok", rep);
    dx_close(&x);
    return e;
}

/* Calls of each op the scenario makes with nothing armed. */
static void count_calls(uint64_t scale, uint64_t calls[FAULT_OP_COUNT])
{
    struct dx x;
    memset(calls, 0, FAULT_OP_COUNT * sizeof(calls[0]));
    if (dx_open(&x, scale))
        return;
    proc_create(&x, 0);
    fault_driver_reset_counts(&x.fd);
    run_scenario(&x);
    for (int o = 0; o < FAULT_OP_COUNT; o++)
        calls[o] = fault_driver_calls(&x.fd, (enum fault_op)o);
    clean_phase(&x);
    char rep[2048] = "";
    T_EQ(check_all(&x, rep, sizeof rep), 0);
    if (rep[0])
        fprintf(stderr, "drvfail: scenario without failures: %s\n", rep);
    dx_close(&x);
}

static int all_mode(void)
{
    const char *v = getenv("VIDMM_DRVFAIL_ALL");
    return v && *v && *v != '0';
}

static void t_sweep(void)
{
    int all = all_mode();
    unsigned long runs = 0, failed = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t scale = 1; scale <= (all ? 2u : 1u); scale++) {
        uint64_t calls[FAULT_OP_COUNT];
        count_calls(scale, calls);
        T_CHECK(calls[FAULT_OP_BUILD_PAGING_BUFFER] > 0 && calls[FAULT_OP_SUBMIT_COMMAND] > 0);
        for (int o = 0; o < FAULT_OP_COUNT; o++) {
            int paging = o == FAULT_OP_BUILD_PAGING_BUFFER || o == FAULT_OP_SUBMIT_COMMAND;
            for (int m = 0; m < 2; m++) {
                if (m == FAULT_DRIVER_STICKY && !paging && !all)
                    continue;
                for (uint64_t k = 1; k <= calls[o]; k++) {
                    runs++;
                    if (run_one(scale, (enum fault_op)o, k, (enum fault_mode)m, 0))
                        failed++;
                }
            }
        }
        if (scale == 1)
            printf("drvfail: scenario calls build_paging_buffer %" PRIu64 ", submit_command %" PRIu64 "\n",
                   calls[FAULT_OP_BUILD_PAGING_BUFFER], calls[FAULT_OP_SUBMIT_COMMAND]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("drvfail: %lu runs (op x k x mode%s), %lu failed, %.1f s\n", runs, all ? " x scale" : "", failed, secs);
    T_EQ(failed, 0);
}

/* ---- regressions: one public call, its op refused at each of its calls ---- */

/* A setup (nothing armed), the call under test, and what follows it
 * with the driver working again (the retry, and a second process taking
 * memory, so that a stale entry would reach another allocation). */
struct regress {
    const char *name;
    enum fault_op op;
    void (*setup)(struct dx *x);
    void (*act)(struct dx *x);
    void (*after)(struct dx *x);
};

static void two_procs(struct dx *x)
{
    proc_create(x, 0);
    proc_create(x, 1);
}

/* Process 1 creates an allocation the size of 0 and makes it resident:
 * it takes whatever memory a refused step freed. */
static void other_takes_memory(struct dx *x)
{
    new_alloc(x, 7, SOFTGPU_ALLOC_CONSTANT, 256 * KIB, 1);
    map(x, 1, 7);
    static const int l[] = { 7 };
    (void)resident(x, 1, l, 1);
}

/* A move refused at its page-table rewrite freed the old pages first. */
static void su_move(struct dx *x)
{
    two_procs(x);
    new_alloc(x, 0, SOFTGPU_ALLOC_CONSTANT, 256 * KIB, 0);
    map(x, 0, 0);
    static const int l[] = { 0 };
    (void)resident(x, 0, l, 1);
}
static void act_move(struct dx *x) { move(x, 0, 2); }
static void after_move(struct dx *x)
{
    other_takes_memory(x);
    move(x, 0, 2);
}

/* A restore refused at its page-table write was left resident. */
static void su_restore(struct dx *x)
{
    two_procs(x);
    new_alloc(x, 0, SOFTGPU_ALLOC_TEXTURE, 256 * KIB, 0);   /* created evicted */
    map(x, 0, 0);
}
static void act_restore(struct dx *x)
{
    static const int l[] = { 0 };
    (void)resident(x, 0, l, 1);
}
static void after_restore(struct dx *x)
{
    act_restore(x);
    other_takes_memory(x);
}

/* An eviction from system memory refused after its entries were written
 * invalid was left resident (mapped in both processes: the second
 * process's writes are refused after the first's ran). */
static void su_evict_sys(struct dx *x)
{
    two_procs(x);
    new_alloc(x, 0, SOFTGPU_ALLOC_STAGING, 256 * KIB, 0);
    map(x, 0, 0);
    map(x, 1, 0);
    static const int l[] = { 0 };
    (void)resident(x, 0, l, 1);
}
static void act_evict(struct dx *x) { evict(x, 0, 0); }
static void after_evict(struct dx *x)
{
    static const int l[] = { 0 };
    (void)resident(x, 0, l, 1);
    other_takes_memory(x);
}

/* A refused aperture unmap kept the range while the pages it maps were
 * freed (the ring, AccessedPhysically, destroyed). */
static void su_aperture(struct dx *x)
{
    two_procs(x);
    new_alloc(x, 3, SOFTGPU_ALLOC_RING, 64 * KIB, 0);
    map(x, 0, 3);
    static const int l[] = { 3 };
    (void)resident(x, 0, l, 1);
    move(x, 3, 0);   /* system memory, for AccessedPhysically: mapped into the aperture */
    struct vidmm_allocation_state st;
    T_CHECK(x->al[3] && vidmm_allocation_query(x->a, x->al[3], &st) == VIDMM_OK && st.aperture_mapped);
}
static void act_destroy_ring(struct dx *x)
{
    if (vidmm_allocation_destroy(x->a, x->al[3]) == VIDMM_OK)
        x->al[3] = 0;
}
static void after_aperture(struct dx *x)
{
    act_destroy_ring(x);
    other_takes_memory(x);
}

/* A destruction whose page-table invalidation was refused freed the
 * pages its VA still reached. */
static void act_destroy0(struct dx *x)
{
    if (vidmm_allocation_destroy(x->a, x->al[0]) == VIDMM_OK)
        x->al[0] = 0;
}
static void after_destroy(struct dx *x)
{
    act_destroy0(x);
    other_takes_memory(x);
}

/* Created resident: no system copy, so nothing but the destruction's own
 * paging stands between its entries and its freed pages. */
static void su_destroy(struct dx *x)
{
    two_procs(x);
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_CONSTANT;
    d.size = 256 * KIB;
    d.cpu_visible = 1;
    x->owner[0] = 0;
    x->size[0] = d.size;
    if (vidmm_allocation_create2(x->a, &d, sizeof(d), VIDMM_CREATE_RESIDENT, &x->al[0]) != VIDMM_OK)
        x->al[0] = 0;
    write_pattern(x, 0, 77);
    map(x, 0, 0);
}

static const struct regress regressions[] = {
    { "destroy_frees_after_unmap/submit_command", FAULT_OP_SUBMIT_COMMAND, su_destroy, act_destroy0, after_destroy },
    { "destroy_frees_after_unmap/build_paging_buffer", FAULT_OP_BUILD_PAGING_BUFFER, su_destroy, act_destroy0,
      after_destroy },
    { "move_frees_after_rewrite/submit_command", FAULT_OP_SUBMIT_COMMAND, su_move, act_move, after_move },
    { "move_frees_after_rewrite/build_paging_buffer", FAULT_OP_BUILD_PAGING_BUFFER, su_move, act_move, after_move },
    { "restore_resident_after_remap/submit_command", FAULT_OP_SUBMIT_COMMAND, su_restore, act_restore, after_restore },
    { "restore_resident_after_remap/build_paging_buffer", FAULT_OP_BUILD_PAGING_BUFFER, su_restore, act_restore,
      after_restore },
    { "evict_system_rollback/build_paging_buffer", FAULT_OP_BUILD_PAGING_BUFFER, su_evict_sys, act_evict,
      after_evict },
    { "evict_system_rollback/submit_command", FAULT_OP_SUBMIT_COMMAND, su_evict_sys, act_evict, after_evict },
    { "aperture_unmap_refused/build_paging_buffer", FAULT_OP_BUILD_PAGING_BUFFER, su_aperture, act_destroy_ring,
      after_aperture },
    { "aperture_unmap_refused/submit_command", FAULT_OP_SUBMIT_COMMAND, su_aperture, act_destroy_ring,
      after_aperture },
};
#define NREGRESS (sizeof regressions / sizeof regressions[0])

/* The call's k-th call of op refused (once, then sticky), for every k it
 * makes; after it, with the driver working, both checkers and the
 * content rule hold (no hang poll: whatever the refusal scheduled must
 * have run by itself). */
static int regress_one(const struct regress *r, uint64_t k, enum fault_mode mode)
{
    struct dx x;
    if (dx_open(&x, 1))
        return 1;
    r->setup(&x);
    fault_driver_arm(&x.fd, r->op, k, mode, VIDMM_E_DRIVER_FAILURE);
    r->act(&x);
    fault_driver_disarm(&x.fd);
    r->after(&x);
    char rep[2048] = "";
    int e = check_all(&x, rep, sizeof rep);
    if (e)
        fprintf(stderr, "drvfail: %s k=%" PRIu64 " %s: %s\n", r->name, k,
                mode == FAULT_DRIVER_STICKY ? "sticky" : "once", rep);
    dx_close(&x);
    return e;
}

static size_t cur_regress;

static void t_regress(void)
{
    const struct regress *r = &regressions[cur_regress];
    struct dx x;
    if (dx_open(&x, 1))
        return;
    r->setup(&x);
    fault_driver_reset_counts(&x.fd);
    r->act(&x);
    uint64_t calls = fault_driver_calls(&x.fd, r->op);
    dx_close(&x);
    T_CHECK(calls > 0);
    int failed = 0;
    for (uint64_t k = 1; k <= calls; k++)
        for (int m = 0; m < 2; m++)
            failed += regress_one(r, k, (enum fault_mode)m) != 0;
    T_EQ(failed, 0);
}

/* The quarantine's record when the host allocator refuses too: one of
 * the adapter's inline records holds it, and the reset frees it. */
static void t_quarantine_without_host_memory(void)
{
    struct dx x;
    if (dx_open(&x, 1))
        return;
    su_destroy(&x);
    T_CHECK(x.al[0] != 0);
    fault_driver_arm(&x.fd, FAULT_OP_SUBMIT_COMMAND, 1, FAULT_DRIVER_ONCE, VIDMM_E_DRIVER_FAILURE);
    fault_alloc_arm(&x.fa, 1, 1);
    act_destroy0(&x);
    fault_alloc_disarm(&x.fa);
    fault_driver_disarm(&x.fd);
    T_CHECK(fault_driver_refused(&x.fd, FAULT_OP_SUBMIT_COMMAND) == 1);
    T_CHECK(x.fa.failures > 0);
    after_destroy(&x);
    char rep[2048] = "";
    T_EQ(check_all(&x, rep, sizeof rep), 0);
    if (rep[0])
        fprintf(stderr, "drvfail: %s\n", rep);
    struct vidmm_tdr_stats ts;
    T_ST(vidmm_adapter_get_tdr_stats(x.a, &ts), VIDMM_OK);
    T_CHECK(ts.adapter_resets >= 1);   /* the reset that freed the quarantine */
    dx_close(&x);
}

void suite_drvfail(void);
void suite_drvfail(void)
{
    const char *one = getenv("VIDMM_DRVFAIL_ONE");   /* "op:k:once|sticky": one run, verbose */
    if (one) {
        char name[64];
        unsigned long long k = 0;
        char mode[16] = "";
        if (sscanf(one, "%63[^:]:%llu:%15s", name, &k, mode) == 3)
            run_one(1, fault_driver_op_from_name(name), k,
                    strcmp(mode, "sticky") == 0 ? FAULT_DRIVER_STICKY : FAULT_DRIVER_ONCE, 1);
        return;
    }
    static char names[NREGRESS][96];
    for (cur_regress = 0; cur_regress < NREGRESS; cur_regress++) {
        snprintf(names[cur_regress], sizeof names[cur_regress], "drvfail.%s", regressions[cur_regress].name);
        t_run(names[cur_regress], t_regress);
    }
    t_run("drvfail.quarantine_without_host_memory", t_quarantine_without_host_memory);
    t_run("drvfail.sweep", t_sweep);
}
