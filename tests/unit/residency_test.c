/*
 * residency_test.c - residency lists, eviction, restore, budgets, offer
 * and reclaim, end to end on softgpu.  The oracle for content and page
 * tables is softgpu's MMU walker: an evicted allocation's VA faults, a
 * resident one reads its seeded pattern at the same VA wherever vidmm put
 * its bytes.  vidmm_adapter_check() after every step.
 */
#include "gpuva_common.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)

/* dgpu with a 32 MiB visible and a 64 MiB invisible segment. */
static int fx_open(struct softgpu_fx *f)
{
    return softgpu_fx_open(f, 32 * MIB, 64 * MIB, 0);
}

static void fx_close(struct softgpu_fx *f)
{
    T_EQ(softgpu_checked(f->a, NULL), 0);
    /* dgpu takes the virtual paging ops: every eviction and restore went
     * through the system paging process, never a physical transfer. */
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    struct vidmm_gpummu_info g;
    if (vidmm_adapter_query_gpummu(f->a, &g) == VIDMM_OK && (g.caps.flags & VIDMM_GPUMMU_VIRTUAL_PAGING_OPS)) {
        T_EQ_U64(ai.paging_ops[VIDMM_PAGING_TRANSFER], 0);
        T_EQ_U64(ai.paging_ops[VIDMM_PAGING_FILL], 0);
    } else {   /* wddm1: physical operations only */
        T_EQ_U64(ai.paging_ops[VIDMM_PAGING_TRANSFER_VIRTUAL], 0);
        T_EQ_U64(ai.paging_ops[VIDMM_PAGING_FILL_VIRTUAL], 0);
    }
    softgpu_fx_close(f);
}

/* A CPU-visible allocation created evicted, filled with seed's pattern
 * while in system memory; pref is its preferred segment (0 = none). */
static vidmm_handle make_alloc_flags(struct softgpu_fx *f, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size,
                                     uint64_t seed)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.info.size = size;
    d.info.supported_write_segment_set = set;
    d.info.preferred_segment = pref ? VIDMM_PREF(0, pref, 0) : 0;
    d.info.flags = flags;
    vidmm_handle h = 0;
    T_ST(vidmm_allocation_create2(f->a, &d, sizeof(d), 0, &h), VIDMM_OK);
    if (h && seed)
        gv_pattern(f->a, h, seed);
    return h;
}

static vidmm_handle make_alloc_pref(struct softgpu_fx *f, uint32_t set, uint32_t pref, uint64_t size, uint64_t seed)
{
    return make_alloc_flags(f, set, pref, VIDMM_ALLOC_CPU_VISIBLE, size, seed);
}

static vidmm_handle make_alloc(struct softgpu_fx *f, uint32_t set, uint64_t size, uint64_t seed)
{
    return make_alloc_pref(f, set, 0, size, seed);
}

struct proc {
    vidmm_handle p, d, q;
};

static void proc_open(struct softgpu_fx *f, struct proc *pr)
{
    T_ST(vidmm_process_create(f->a, &pr->p), VIDMM_OK);
    T_ST(vidmm_device_create(f->a, pr->p, &pr->d), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(f->a, pr->d, VIDMM_PAGING_QUEUE_NORMAL, &pr->q), VIDMM_OK);
}

static vidmm_status mres(struct softgpu_fx *f, const struct proc *pr, const vidmm_handle *h, uint32_t n, uint32_t flags,
                         uint64_t *trim)
{
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof(m));
    m.paging_queue = pr->q;
    m.allocations = h;
    m.count = n;
    m.flags = flags;
    vidmm_status st = vidmm_make_resident(f->a, pr->d, &m);
    if (trim)
        *trim = m.bytes_to_trim;
    if (st == VIDMM_PENDING) {
        /* softgpu's copy engine runs on its own thread: wait for the
         * paging fence, as a user-mode driver would. */
        T_CHECK(m.paging_fence_value != 0);
        T_ST(vidmm_paging_queue_wait(f->a, pr->q, m.paging_fence_value, UINT64_MAX), VIDMM_OK);
        st = VIDMM_OK;
    }
    return st;
}

/* Use one allocation and keep it cached: make it resident, then drop
 * the reference with EVICT_ONLY_IF_NECESSARY, as an application that
 * is done with it for now.  A device's listed allocations are never
 * pushed out for its own later requests (within its budget); cached
 * ones are. */
static vidmm_status use1(struct softgpu_fx *f, const struct proc *pr, const vidmm_handle *h)
{
    vidmm_status st = mres(f, pr, h, 1, 0, NULL);
    if (st >= 0)
        T_ST(vidmm_evict(f->a, pr->d, &(struct vidmm_evict_args){ .allocations = h, .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    return st;
}

static uint32_t resident(struct softgpu_fx *f, vidmm_handle h)
{
    struct vidmm_residency_state r;
    T_ST(vidmm_allocation_residency(f->a, h, &r), VIDMM_OK);
    return r.resident;
}

static uint32_t segment_of(struct softgpu_fx *f, vidmm_handle h)
{
    return softgpu_alloc_state(f->a, h).segment_id;
}

/* No WDDM rule broken (vidmm/rules.h); the report goes to stderr. */
static int rules_clean(struct vidmm_adapter *a)
{
    char rep[1024];
    int e = vidmm_adapter_check_rules(a, rep, sizeof rep);
    if (e)
        fprintf(stderr, "rules: %s\n", rep);
    return e == 0;
}

#define MEM (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2))
#define INVIS VIDMM_SEGMENT_BIT(2)

/* make-resident, evict, restore: same VA, same bytes, faults in between. */
static void evict_restore_same_va(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h = make_alloc(&f, INVIS, 4 * MIB, 77);
    T_EQ(resident(&f, h), 0);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, h, 0, 4 * MIB, 0, 0, &va), VIDMM_OK);
    T_CHECK(gv_gpu_faults(f.a, f.sg, pr.p, va));   /* evicted: invalid entries */
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_EQ(resident(&f, h), 1);
    T_EQ(segment_of(&f, h), 2);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 4 * MIB, 77));
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_OK);
    T_EQ(resident(&f, h), 0);
    T_EQ(segment_of(&f, h), 0);
    T_CHECK(gv_gpu_faults(f.a, f.sg, pr.p, va));
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 4 * MIB, 77));
    /* References count: two make-resident need two evicts. */
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_OK);
    T_EQ(resident(&f, h), 1);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_OK);
    T_EQ(resident(&f, h), 0);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_E_STATE);   /* not on the list any more */
    struct vidmm_residency_stats s;
    T_ST(vidmm_residency_get_stats(f.a, &s), VIDMM_OK);
    T_EQ_U64(s.evictions, 2);
    T_EQ_U64(s.restores, 2);
    fx_close(&f);
}

/* How many of h[0..n) are resident, and whether the evicted ones form a
 * prefix (the oldest went first). */
static int resident_suffix(struct softgpu_fx *f, const vidmm_handle *h, int n, int *count)
{
    int c = 0, prefix = 1, seen_resident = 0;
    for (int i = 0; i < n; i++) {
        int r = (int)resident(f, h[i]);
        c += r;
        if (r)
            seen_resident = 1;
        else if (seen_resident)
            prefix = 0;
    }
    *count = c;
    return prefix;
}

/* A full segment: make-resident evicts the least recently used. */
static void pressure_evicts_lru(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h[20];
    for (int i = 0; i < 20; i++) {
        h[i] = make_alloc(&f, INVIS, 4 * MIB, 100 + (uint64_t)i);
        T_ST(use1(&f, &pr, &h[i]), VIDMM_OK);
        T_EQ(softgpu_checked(f.a, NULL), 0);
    }
    /* 64 MiB (less the page tables) hold 15 or 16: the oldest went. */
    int n = 0;
    T_CHECK(resident_suffix(&f, h, 20, &n));
    T_CHECK(n == 15 || n == 16);
    int first = 20 - n;   /* the oldest resident one */
    /* Touch it: the next victim is the one after it. */
    T_ST(use1(&f, &pr, &h[first]), VIDMM_OK);
    T_ST(use1(&f, &pr, &h[0]), VIDMM_OK);
    T_EQ(resident(&f, h[first]), 1);
    T_EQ(resident(&f, h[first + 1]), 0);
    T_EQ(resident(&f, h[0]), 1);
    /* Everyone still holds its bytes at one VA. */
    for (int i = 0; i < 20; i++) {
        uint64_t va = 0;
        T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, h[i], 0, 4 * MIB, 0, 0, &va), VIDMM_OK);
        if (!resident(&f, h[i]))
            T_CHECK(gv_gpu_faults(f.a, f.sg, pr.p, va));
        T_ST(use1(&f, &pr, &h[i]), VIDMM_OK);
        T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 4 * MIB, 100 + (uint64_t)i));
    }
    fx_close(&f);
}

/* A request larger than what may be evicted fails and changes no
 * reference; pinned (listed in the same request) are never victims. */
static void all_or_nothing(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h[17];
    for (int i = 0; i < 17; i++)
        h[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
    /* 17 x 4 MiB in one request cannot fit a 64 MiB segment. */
    T_ST(mres(&f, &pr, h, 17, 0, NULL), VIDMM_E_NO_SEGMENT_SPACE);
    for (int i = 0; i < 17; i++) {
        struct vidmm_residency_state r;
        T_ST(vidmm_allocation_residency(f.a, h[i], &r), VIDMM_OK);
        T_EQ(r.references, 0);
    }
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(mres(&f, &pr, h, 15, 0, NULL), VIDMM_OK);
    for (int i = 0; i < 15; i++)
        T_EQ(resident(&f, h[i]), 1);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = h, .count = 15 }), VIDMM_OK);
    /* Bad input changes nothing. */
    vidmm_handle bad[2] = { h[0], 12345 };
    T_ST(mres(&f, &pr, bad, 2, 0, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(mres(&f, &pr, h, 1, 0x80, NULL), VIDMM_E_INVALID_ARG);
    T_ST(mres(&f, &pr, h, 1, VIDMM_MAKE_RESIDENT_MUST_SUCCEED, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_residency_state r;
    T_ST(vidmm_allocation_residency(f.a, h[0], &r), VIDMM_OK);
    T_EQ(r.references, 0);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = bad, .count = 2 }), VIDMM_E_STATE);   /* h[0] is not listed */
    T_ST(mres(&f, &pr, h, 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = bad, .count = 2 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = h, .count = 1, .flags = 0x10 }), VIDMM_E_INVALID_ARG);
    /* Evicting twice what is listed once: refused as a whole. */
    vidmm_handle twice[2] = { h[0], h[0] };
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = twice, .count = 2 }), VIDMM_E_STATE);
    T_ST(vidmm_allocation_residency(f.a, h[0], &r), VIDMM_OK);
    T_EQ(r.references, 1);
    /* A queue of another device is refused. */
    struct proc other;
    proc_open(&f, &other);
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = other.q;
    m.allocations = h;
    m.count = 1;
    T_ST(vidmm_make_resident(f.a, pr.d, &m), VIDMM_E_INVALID_HANDLE);
    fx_close(&f);
}

/* Higher priority is not evicted for a lower one: the request falls back
 * to its next segment instead. */
static void priority_honoured(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle hi[17];
    for (int i = 0; i < 17; i++) {
        hi[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
        T_ST(vidmm_allocation_set_priority(f.a, hi[i], VIDMM_PRIORITY_HIGH), VIDMM_OK);
        T_ST(use1(&f, &pr, &hi[i]), VIDMM_OK);
    }
    int n = 0;
    T_CHECK(resident_suffix(&f, hi, 17, &n));   /* segment 2 is full of HIGH allocations */
    T_CHECK(n < 17);
    vidmm_handle lo = make_alloc(&f, VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(1), 4 * MIB, 9);
    T_ST(vidmm_allocation_set_priority(f.a, lo, VIDMM_PRIORITY_LOW), VIDMM_OK);
    T_ST(use1(&f, &pr, &lo), VIDMM_OK);
    T_EQ(segment_of(&f, lo), 1);
    int n2 = 0;
    (void)resident_suffix(&f, hi, 17, &n2);
    T_EQ(n2, n);
    /* A LOW allocation allowed only in segment 2 has no other choice:
     * priority is a hint, not a wall, so rather than fail it takes the
     * place of the least recently used HIGH one. */
    vidmm_handle lo2 = make_alloc(&f, INVIS, 4 * MIB, 0);
    T_ST(vidmm_allocation_set_priority(f.a, lo2, VIDMM_PRIORITY_LOW), VIDMM_OK);
    T_ST(vidmm_allocation_set_priority(f.a, lo2, 0), VIDMM_E_INVALID_ARG);
    T_ST(mres(&f, &pr, &lo2, 1, 0, NULL), VIDMM_OK);
    T_EQ(resident(&f, hi[17 - n]), 0);
    T_EQ(segment_of(&f, lo2), 2);
    fx_close(&f);
}

/* A device's list is kept while its process is within its budget, except
 * from a process within its fair share of the segment (D62): p1 holds
 * nearly all of the 64 MiB segment 2.  p2's request that would take it
 * past its share (32 MiB) fails and changes nothing; 24 MiB, within its
 * share, comes in by evicting p1's.  Once p1 is over its budget (the OS
 * lowered it), its listed allocations are trimmed for p2 beyond the fair
 * share too; p1, asking for them back, may evict only its own (it is the
 * one over budget, and over its share). */
static void fair_share(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc p1, p2;
    proc_open(&f, &p1);
    proc_open(&f, &p2);
    vidmm_handle a1[16], a2[10];
    for (int i = 0; i < 16; i++)
        a1[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
    for (int i = 0; i < 10; i++)
        a2[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
    /* The page tables take part of the segment: the 16th may not fit,
     * and p1 (within its budget) never pushes out its own list for it. */
    for (int i = 0; i < 16; i++) {
        vidmm_status st = mres(&f, &p1, &a1[i], 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL);
        T_CHECK(st == VIDMM_OK || (i == 15 && st == VIDMM_E_NO_SEGMENT_SPACE));
    }
    int held = 0;
    for (int i = 0; i < 16; i++)
        held += (int)resident(&f, a1[i]);
    struct vidmm_residency_stats s0, s1;
    T_ST(vidmm_residency_get_stats(f.a, &s0), VIDMM_OK);
    /* p1 within its budget, p2 asking for 40 MiB, past its share: p1's
     * list stays, p2 gets no room, nothing changed. */
    T_ST(mres(&f, &p2, a2, 10, 0, NULL), VIDMM_E_NO_SEGMENT_SPACE);
    T_CHECK(rules_clean(f.a));   /* a refusal past the share breaks no rule */
    T_ST(vidmm_residency_get_stats(f.a, &s1), VIDMM_OK);
    T_EQ_U64(s1.evictions, s0.evictions);
    int still = 0;
    for (int i = 0; i < 16; i++)
        still += (int)resident(&f, a1[i]);
    T_EQ(still, held);
    for (int i = 0; i < 10; i++) {
        struct vidmm_residency_state r;
        T_ST(vidmm_allocation_residency(f.a, a2[i], &r), VIDMM_OK);
        T_EQ(r.references, 0);
        T_EQ(r.resident, 0);
    }
    /* 24 MiB, within p2's share: taken from p1, over its share. */
    T_ST(mres(&f, &p2, a2, 6, 0, NULL), VIDMM_OK);
    for (int i = 0; i < 6; i++)
        T_EQ(resident(&f, a2[i]), 1);
    still = 0;
    for (int i = 0; i < 16; i++)
        still += (int)resident(&f, a1[i]);
    T_CHECK(still < held && still >= 8);   /* p1 keeps at least its share */
    /* The OS lowers p1's budget to 24 MiB: p2 gets 12 MiB more, past
     * its share, by evicting p1's (over its budget). */
    T_ST(vidmm_process_set_budget(f.a, p1.p, VIDMM_SEGMENT_GROUP_LOCAL, 24 * MIB), VIDMM_OK);
    for (int i = 6; i < 9; i++)
        T_ST(mres(&f, &p2, &a2[i], 1, 0, NULL), VIDMM_OK);
    for (int i = 0; i < 9; i++)
        T_EQ(resident(&f, a2[i]), 1);
    /* p1, at its budget, asks for its evicted ones back: it takes from
     * p2 (over its share) while within its own share, and otherwise
     * only from itself; p2 keeps its share. */
    int p1_before = 0, p1_after = 0, p2_after = 0;
    for (int i = 0; i < 16; i++)
        p1_before += (int)resident(&f, a1[i]);
    for (int i = 0; i < 15; i++)
        if (!resident(&f, a1[i])) {
            vidmm_status st = mres(&f, &p1, &a1[i], 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL);
            T_CHECK(st == VIDMM_OK || st == VIDMM_E_NO_SEGMENT_SPACE);
        }
    for (int i = 0; i < 16; i++)
        p1_after += (int)resident(&f, a1[i]);
    for (int i = 0; i < 9; i++)
        p2_after += (int)resident(&f, a2[i]);
    T_CHECK(p1_after > p1_before && p1_after <= 8);
    T_EQ(p2_after, 8);
    T_CHECK(rules_clean(f.a));
    fx_close(&f);
}

/* Fair share within one segment (docs/DECISIONS.md D62): A holds 12 MiB
 * of the 32 MiB segment 1 and B 20 MiB, both well within their budgets
 * for the local group (96 MiB).  A asks for 2 MiB more of segment 1: it
 * stays within its share of segment 1 (32 / 2 processes = 16 MiB) while B
 * is over it, so A takes the room from B - whose budget for the whole
 * group protected it before - and B's bytes come back intact on its next
 * make-resident (into segment 2, segment 1 being full).  A's allocations
 * are CPU-visible (contiguous in the BAR segment) or not (page sets); for
 * the latter the refusal was also what the rule
 * fair_share.refused_within_share reports. */
static void fair_share_per_segment_run(uint32_t a_flags)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pa, pb;
    proc_open(&f, &pa);
    proc_open(&f, &pb);
    const uint32_t seg1 = VIDMM_SEGMENT_BIT(1);
    vidmm_handle b[5], a[3], more;
    for (int i = 0; i < 5; i++)
        b[i] = make_alloc_pref(&f, MEM, 1, 4 * MIB, 100 + (uint64_t)i);
    for (int i = 0; i < 3; i++)
        a[i] = make_alloc_flags(&f, seg1, 0, a_flags, 4 * MIB, 0);
    more = make_alloc_flags(&f, seg1, 0, a_flags, 2 * MIB, 0);
    T_ST(mres(&f, &pb, b, 5, 0, NULL), VIDMM_OK);
    T_ST(mres(&f, &pa, a, 3, 0, NULL), VIDMM_OK);
    for (int i = 0; i < 5; i++)
        T_EQ(segment_of(&f, b[i]), 1);
    struct vidmm_video_memory_info va, vb;
    T_ST(vidmm_query_video_memory_info(f.a, pa.p, VIDMM_SEGMENT_GROUP_LOCAL, &va), VIDMM_OK);
    T_ST(vidmm_query_video_memory_info(f.a, pb.p, VIDMM_SEGMENT_GROUP_LOCAL, &vb), VIDMM_OK);
    T_CHECK(va.current_usage <= va.budget && vb.current_usage <= vb.budget);   /* both within budget */
    T_ST(mres(&f, &pa, &more, 1, 0, NULL), VIDMM_OK);
    T_CHECK(rules_clean(f.a));
    T_EQ(resident(&f, more), 1);
    T_EQ(segment_of(&f, more), 1);
    for (int i = 0; i < 3; i++)
        T_EQ(resident(&f, a[i]), 1);   /* A's own list stays */
    int gone = 0, victim = -1;
    for (int i = 0; i < 5; i++)
        if (!resident(&f, b[i])) {
            gone++;
            victim = i;
        }
    T_EQ(gone, 1);                     /* one of B's, and only one: B is at its share again */
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* B's next make-resident of its list brings it back, bytes intact. */
    T_ST(mres(&f, &pb, b, 5, 0, NULL), VIDMM_OK);
    for (int i = 0; i < 5; i++)
        T_EQ(resident(&f, b[i]), 1);
    if (victim >= 0)
        T_EQ(segment_of(&f, b[victim]), 2);
    for (int i = 0; i < 5; i++) {
        vidmm_handle c = make_alloc(&f, MEM, 4 * MIB, 100 + (uint64_t)i);   /* the same pattern, never moved */
        for (uint64_t off = 0; off < 4 * MIB; off += 256 * 1024)
            T_EQ_U64(softgpu_cpu_read64(f.a, b[i], off), softgpu_cpu_read64(f.a, c, off));
        vidmm_allocation_destroy(f.a, c);
    }
    T_EQ(resident(&f, more), 1);
    T_CHECK(rules_clean(f.a));
    fx_close(&f);
}

static void fair_share_per_segment(void)
{
    fair_share_per_segment_run(VIDMM_ALLOC_CPU_VISIBLE);
    fair_share_per_segment_run(0);
}

/* One process's demand lowers every budget: the process pushed over its
 * budget by another's make-resident is told, with the bytes to trim, and
 * the caller itself is within the budget its request left it. */
struct trim_log {
    vidmm_handle dev;
    uint32_t calls, flags;
    uint64_t bytes;
};
static void log_trim(void *ctx, vidmm_handle device, uint32_t flags, uint64_t bytes)
{
    struct trim_log *l = ctx;
    l->dev = device;
    l->calls++;
    l->flags = flags;
    l->bytes = bytes;
}

static void demand_notifies_others(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc p1, p2;
    proc_open(&f, &p1);
    proc_open(&f, &p2);
    struct trim_log l1 = { 0, 0, 0, 0 }, l2 = { 0, 0, 0, 0 };
    T_ST(vidmm_register_trim_notification(f.a, p1.d, log_trim, &l1), VIDMM_OK);
    T_ST(vidmm_register_trim_notification(f.a, p2.d, log_trim, &l2), VIDMM_OK);
    const uint32_t mem_then_ap = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    /* p1: 80 of the 96 MiB of memory segments, alone: no pressure. */
    vidmm_handle a1[20];
    for (int i = 0; i < 20; i++)
        a1[i] = make_alloc_pref(&f, mem_then_ap, VIDMM_PREF(2, 1, 0), 4 * MIB, 0);
    T_ST(mres(&f, &p1, a1, 20, 0, NULL), VIDMM_OK);
    T_EQ(l1.calls, 0);
    /* p2 lists 24 MiB meant for memory: the demand (104 MiB) passes the
     * capacity, every budget drops to the fair share (48 MiB), and p1 at
     * 80 MiB is told to trim 32 MiB. */
    vidmm_handle a2[6];
    for (int i = 0; i < 6; i++)
        a2[i] = make_alloc_pref(&f, mem_then_ap, VIDMM_PREF(2, 1, 0), 4 * MIB, 0);
    T_ST(mres(&f, &p2, a2, 6, 0, NULL), VIDMM_OK);
    struct vidmm_video_memory_info v1, v2;
    T_ST(vidmm_query_video_memory_info(f.a, p1.p, VIDMM_SEGMENT_GROUP_LOCAL, &v1), VIDMM_OK);
    T_ST(vidmm_query_video_memory_info(f.a, p2.p, VIDMM_SEGMENT_GROUP_LOCAL, &v2), VIDMM_OK);
    T_EQ_U64(v1.budget, 48 * MIB);
    T_CHECK(v2.current_usage <= v2.budget);   /* the caller: within the budget it left itself */
    T_CHECK(l1.calls >= 1);
    T_EQ(l1.dev, p1.d);
    T_EQ(l1.flags, VIDMM_TRIM_TO_BUDGET);
    T_EQ_U64(l1.bytes, v1.current_usage - v1.budget);
    T_EQ(l2.calls, 0);
    /* A pinned non-local budget is enforced too, and its notification
     * carries the group. */
    struct vidmm_video_memory_info n2;
    T_ST(vidmm_query_video_memory_info(f.a, p2.p, VIDMM_SEGMENT_GROUP_NON_LOCAL, &n2), VIDMM_OK);
    if (n2.current_usage > 4 * MIB) {
        T_ST(vidmm_process_set_budget(f.a, p2.p, VIDMM_SEGMENT_GROUP_NON_LOCAL, 4 * MIB), VIDMM_OK);
        T_CHECK(l2.calls >= 1);
        T_EQ(l2.flags, VIDMM_TRIM_TO_BUDGET | VIDMM_TRIM_NON_LOCAL);
    }
    vidmm_handle ap = make_alloc(&f, VIDMM_SEGMENT_BIT(3), 8 * MIB, 0);
    uint64_t trim = 0;
    T_ST(vidmm_process_set_budget(f.a, p1.p, VIDMM_SEGMENT_GROUP_NON_LOCAL, 4 * MIB), VIDMM_OK);
    T_ST(mres(&f, &p1, &ap, 1, 0, &trim), VIDMM_E_OVER_BUDGET);
    T_EQ_U64(trim, 4 * MIB);
    T_ST(mres(&f, &p1, &ap, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    fx_close(&f);
}

static uint64_t trim_calls, trim_bytes;
static void on_trim(void *ctx, vidmm_handle device, uint32_t flags, uint64_t bytes)
{
    (void)ctx;
    (void)device;
    T_EQ(flags, VIDMM_TRIM_TO_BUDGET);
    trim_calls++;
    trim_bytes = bytes;
}

/* Budgets: query, reservation, over-budget refusal with bytes to trim,
 * trim notifications; usage <= budget once the process trimmed. */
static void budgets(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    struct vidmm_video_memory_info vi;
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_EQ_U64(vi.budget, 96 * MIB);
    T_EQ_U64(vi.current_usage, 0);
    T_CHECK(vi.available_for_reservation <= vi.budget);
    T_ST(vidmm_change_video_memory_reservation(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 16 * MIB), VIDMM_OK);
    T_ST(vidmm_change_video_memory_reservation(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, vi.budget + 1),
         VIDMM_E_INVALID_ARG);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_EQ_U64(vi.current_reservation, 16 * MIB);
    T_ST(vidmm_register_trim_notification(f.a, pr.d, on_trim, NULL), VIDMM_OK);
    vidmm_handle h[6];
    for (int i = 0; i < 6; i++)
        h[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
    T_ST(mres(&f, &pr, h, 4, 0, NULL), VIDMM_OK);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_EQ_U64(vi.current_usage, 16 * MIB);
    /* The OS lowers the budget to 12 MiB: a trim notification says 4. */
    trim_calls = 0;
    T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 12 * MIB), VIDMM_OK);
    T_EQ_U64(trim_calls, 1);
    T_EQ_U64(trim_bytes, 4 * MIB);
    /* Over budget: refused with the bytes to trim, nothing changed. */
    uint64_t trim = 0;
    T_ST(mres(&f, &pr, &h[4], 2, 0, &trim), VIDMM_E_OVER_BUDGET);
    T_EQ_U64(trim, 12 * MIB);
    T_EQ(resident(&f, h[4]), 0);
    /* Trim, retry: fits. */
    struct vidmm_evict_args ev = { .allocations = h, .count = 2, .bytes_to_trim = 1 };
    T_ST(vidmm_evict(f.a, pr.d, &ev), VIDMM_OK);
    T_EQ_U64(ev.bytes_to_trim, 0);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_CHECK(vi.current_usage <= vi.budget);
    T_ST(mres(&f, &pr, &h[4], 1, 0, &trim), VIDMM_OK);
    /* CantTrimFurther: succeeds over budget, and the process is told. */
    trim_calls = 0;
    T_ST(mres(&f, &pr, &h[5], 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    T_EQ_U64(trim_calls, 1);
    T_ST(vidmm_query_video_memory_info(NULL, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_query_video_memory_info(f.a, pr.d, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, (enum vidmm_segment_group)2, &vi), VIDMM_E_INVALID_ARG);
    fx_close(&f);
}

/* Trim callbacks that destroy the other device (or the whole process):
 * the notification walk keeps nothing across a call, so lowering the
 * budget below usage notifies what is left and changes nothing else. */
struct killer {
    struct vidmm_adapter *a;
    vidmm_handle victim;      /* device to destroy; 0 = the process below */
    vidmm_handle process;
    int calls;
};

static void on_trim_kill(void *ctx, vidmm_handle device, uint32_t flags, uint64_t bytes)
{
    struct killer *k = ctx;
    (void)device;
    (void)flags;
    (void)bytes;
    k->calls++;
    if (k->victim)
        (void)vidmm_device_destroy(k->a, k->victim);
    else
        (void)vidmm_process_destroy(k->a, k->process);
}

static void trim_callbacks_destroy(void)
{
    for (int mode = 0; mode < 2; mode++) {
        struct softgpu_fx f;
        if (fx_open(&f) < 0)
            return;
        struct proc pr;
        proc_open(&f, &pr);
        vidmm_handle d1;
        T_ST(vidmm_device_create(f.a, pr.p, &d1), VIDMM_OK);
        struct killer k0 = { f.a, mode ? 0 : d1, pr.p, 0 }, k1 = { f.a, mode ? 0 : pr.d, pr.p, 0 };
        T_ST(vidmm_register_trim_notification(f.a, pr.d, on_trim_kill, &k0), VIDMM_OK);
        T_ST(vidmm_register_trim_notification(f.a, d1, on_trim_kill, &k1), VIDMM_OK);
        vidmm_handle h[2] = { make_alloc(&f, INVIS, 4 * MIB, 0), make_alloc(&f, INVIS, 4 * MIB, 0) };
        T_ST(mres(&f, &pr, h, 2, 0, NULL), VIDMM_OK);
        T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 4 * MIB), VIDMM_OK);
        /* The first device notified destroyed the other (or the process):
         * one call in all, nobody left to notify. */
        T_EQ(k0.calls + k1.calls, 1);
        T_EQ(softgpu_checked(f.a, NULL), 0);
        struct vidmm_device_info di;
        if (mode) {
            T_ST(vidmm_device_query(f.a, pr.d, &di), VIDMM_E_INVALID_HANDLE);
            T_ST(vidmm_device_query(f.a, d1, &di), VIDMM_E_INVALID_HANDLE);
        } else {
            /* Exactly one of the two survives, and it still works. */
            int alive = (vidmm_device_query(f.a, pr.d, &di) == VIDMM_OK) + (vidmm_device_query(f.a, d1, &di) == VIDMM_OK);
            T_EQ(alive, 1);
            T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 2 * MIB), VIDMM_OK);
            T_EQ(softgpu_checked(f.a, NULL), 0);
        }
        T_ST(vidmm_allocation_destroy(f.a, h[0]), VIDMM_OK);
        T_ST(vidmm_allocation_destroy(f.a, h[1]), VIDMM_OK);
        fx_close(&f);
    }
}

/* Offered allocations are discarded under pressure; reclaim says so and
 * the content reads as zero.  Not-offered ones keep their bytes. */
static void offer_reclaim(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle keep = make_alloc(&f, INVIS, 24 * MIB, 5);
    vidmm_handle off = make_alloc(&f, INVIS, 24 * MIB, 6);
    vidmm_handle big = make_alloc(&f, INVIS, 24 * MIB, 7);
    vidmm_handle both[2] = { keep, off };
    T_ST(mres(&f, &pr, both, 2, 0, NULL), VIDMM_OK);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = both, .count = 2, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    T_EQ(resident(&f, off), 1);
    T_ST(vidmm_offer(f.a, pr.d, &off, 1, VIDMM_OFFER_LOW), VIDMM_OK);
    T_ST(vidmm_offer(f.a, pr.d, &off, 1, 9), VIDMM_E_INVALID_ARG);
    T_ST(mres(&f, &pr, &big, 1, 0, NULL), VIDMM_OK);
    T_EQ(resident(&f, off), 0);   /* the offered one went, not the LRU one */
    T_EQ(resident(&f, keep), 1);
    struct vidmm_residency_stats s;
    T_ST(vidmm_residency_get_stats(f.a, &s), VIDMM_OK);
    T_EQ_U64(s.discards, 1);
    uint32_t res[2] = { 9, 9 };
    T_ST(vidmm_reclaim(f.a, pr.q, both, 2, res, NULL), VIDMM_OK);
    T_EQ(res[0], VIDMM_RECLAIM_OK);
    T_EQ(res[1], VIDMM_RECLAIM_DISCARDED);
    T_ST(use1(&f, &pr, &off), VIDMM_OK);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, off, 0, 24 * MIB, 0, 0, &va), VIDMM_OK);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 24 * MIB, 0));
    T_ST(mres(&f, &pr, &keep, 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, keep, 0, 24 * MIB, 0, 0, &va), VIDMM_OK);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 24 * MIB, 5));
    fx_close(&f);
}

/* NOT_WRITTEN_TO with a current backing copy: discarded, not copied, and
 * the bytes are still right on the way back. */
static void clean_discard(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h = make_alloc(&f, INVIS, 8 * MIB, 31);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, h, 0, 8 * MIB, 0, 0, &va), VIDMM_OK);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1, .flags = VIDMM_EVICT_NOT_WRITTEN_TO }), VIDMM_OK);
    struct vidmm_residency_stats s;
    T_ST(vidmm_residency_get_stats(f.a, &s), VIDMM_OK);
    T_EQ_U64(s.discards, 1);
    T_EQ_U64(s.bytes_evicted, 0);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 8 * MIB, 31));
    /* Without the flag the copy is stale: transferred. */
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_OK);
    T_ST(vidmm_residency_get_stats(f.a, &s), VIDMM_OK);
    T_EQ_U64(s.bytes_evicted, 8 * MIB);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 8 * MIB, 31));
    fx_close(&f);
}

/* Paging queues: fences, waits with timeouts, typed handles. */
static void queues(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    uint64_t v = 99;
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &v), VIDMM_OK);
    T_EQ_U64(v, 0);
    T_ST(vidmm_paging_queue_wait(f.a, pr.q, 0, 0), VIDMM_OK);
    T_ST(vidmm_paging_queue_wait(f.a, pr.q, 5, 1000000), VIDMM_E_TIMEOUT);   /* 1 ms */
    vidmm_handle h = make_alloc(&f, INVIS, 1 * MIB, 0);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &v), VIDMM_OK);
    T_EQ_U64(v, 1);
    vidmm_handle q2 = 0;
    T_ST(vidmm_paging_queue_create(f.a, pr.d, 2, &q2), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_paging_queue_create(f.a, pr.p, 0, &q2), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_paging_queue_create(f.a, pr.d, VIDMM_PAGING_QUEUE_ABOVE_NORMAL, &q2), VIDMM_OK);
    T_ST(vidmm_paging_queue_destroy(f.a, q2), VIDMM_OK);
    T_ST(vidmm_paging_queue_destroy(f.a, q2), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_paging_queue_fence(f.a, pr.d, &v), VIDMM_E_INVALID_HANDLE);
    /* The device takes its queues and references with it. */
    T_ST(vidmm_device_destroy(f.a, pr.d), VIDMM_OK);
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &v), VIDMM_E_INVALID_HANDLE);
    struct vidmm_residency_state r;
    T_ST(vidmm_allocation_residency(f.a, h, &r), VIDMM_OK);
    T_EQ(r.references, 0);
    fx_close(&f);
}

/* The bytes of a resident allocation where vidmm says they are (its
 * physical ranges, read by softgpu; system pages through a lock, which
 * does not move them), against the pattern of seed. */
static int physical_sees(struct softgpu_fx *f, vidmm_handle h, uint64_t size, uint64_t seed)
{
    struct vidmm_physical_range r[64];
    uint32_t n = 0;
    if (vidmm_allocation_physical_ranges(f->a, h, r, 64, &n) != VIDMM_OK || n > 64)
        return 0;
    uint64_t *buf = malloc(size);
    if (!buf)
        return 0;
    int ok = 1;
    uint64_t done = 0;
    for (uint32_t i = 0; i < n && ok; i++) {
        if (r[i].segment_id == 0) {
            void *cpu = NULL;
            ok = vidmm_allocation_lock(f->a, h, &cpu) == VIDMM_OK;
            if (ok) {
                memcpy((char *)buf + done, (char *)cpu + r[i].offset, r[i].size);
                ok = vidmm_allocation_unlock(f->a, h) == VIDMM_OK;
            }
        } else {
            ok = softgpu_read_physical(f->sg, r[i].segment_id, r[i].offset, (char *)buf + done, r[i].size) == VIDMM_OK;
        }
        done += r[i].size;
    }
    uint64_t s = seed;
    for (uint64_t i = 0; ok && i < size / 8; i++)
        ok = buf[i] == t_rand(&s);
    free(buf);
    return ok && done == size;
}

/* Over-commitment with integrity: three processes of different
 * priorities whose allocations add up to 1.5x or 2x the memory segments,
 * random make-resident sets, every listed allocation checked, evicted ones
 * faulting at their VA; check() after every step.  On dgpu (64 KiB pages,
 * CPU-visible and invisible memory, the aperture) the oracle is the GPU
 * MMU walker at the allocation's fixed VA; on wddm1 (4 KiB pages, no GPU
 * VA, an AGP aperture) it is the physical ranges.  Counts page moves. */
static uint64_t total_page_moves, aperture_landings;

static void overcommit_integrity_run(const char *preset, uint64_t factor_pct, int steps)
{
    int virt = !strcmp(preset, "dgpu");
    struct softgpu_fx f;
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, preset, virt ? 32 * MIB : 16 * MIB, virt ? 64 * MIB : 32 * MIB, 0);
    uint64_t memory = cfg.segment_size[1] + cfg.segment_size[2];
    uint32_t ap = virt ? 3 : 4;
    if (softgpu_open(&f.fa, &cfg, NULL, 0, &f.sg, &f.a))
        return;
    uint64_t seed = t_seed();
    struct proc pr[3];
    for (int i = 0; i < 3; i++)
        proc_open(&f, &pr[i]);
    enum { NA = 256 };
    vidmm_handle h[NA];
    uint64_t size[NA], va[NA];
    int owner[NA];
    uint64_t total = 0, target = memory * factor_pct / 100;
    int n = 0;
    while (n < NA && total < target) {
        size[n] = (64 * KIB) << (t_rand(&seed) % 7);   /* 64 KiB .. 4 MiB */
        /* A quarter may also live in the aperture; one in eight prefers it
         * (a staging-like buffer the GPU reads from system memory). */
        uint32_t kind = (uint32_t)(t_rand(&seed) % 8);
        uint32_t set = kind < 6 ? MEM : (MEM | VIDMM_SEGMENT_BIT(ap));
        h[n] = make_alloc_pref(&f, set, kind == 7 ? ap : 0, size[n], 1000 + (uint64_t)n);
        owner[n] = (int)(t_rand(&seed) % 3);
        va[n] = 0;
        if (virt)
            T_ST(vidmm_gpuva_map(f.a, pr[owner[n]].p, 0, 0, 0, h[n], 0, size[n], 0, 0, &va[n]), VIDMM_OK);
        static const uint32_t prio[3] = { VIDMM_PRIORITY_LOW, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_HIGH };
        T_ST(vidmm_allocation_set_priority(f.a, h[n], prio[owner[n]]), VIDMM_OK);
        total += size[n];
        n++;
    }
    T_CHECK(total >= target);
    int bad = 0;
    for (int step = 0; step < steps && !bad; step++) {
        int p = (int)(t_rand(&seed) % 3);
        vidmm_handle list[NA];
        int idx[NA];
        uint32_t m = 0;
        uint64_t bytes = 0;
        for (int i = 0; i < n; i++)
            if (owner[i] == p && t_rand(&seed) % 2 && bytes + size[i] <= memory / 4) {
                list[m] = h[i];
                idx[m++] = i;
                bytes += size[i];
            }
        if (!m)
            continue;
        uint64_t trim = 0;
        vidmm_status st = mres(&f, &pr[p], list, m, 0, &trim);
        if (st == VIDMM_E_OVER_BUDGET)
            st = mres(&f, &pr[p], list, m, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL);
        if (st != VIDMM_OK) {
            T_ST(st, VIDMM_OK);
            bad++;
            break;
        }
        for (uint32_t k = 0; k < m && !bad; k++) {
            int i = idx[k];
            uint32_t where = segment_of(&f, h[i]);
            aperture_landings += where == ap || where == 0;   /* system pages (mapped into the aperture if AccessedPhysically) */
            int ok = virt ? gv_gpu_sees(f.a, f.sg, pr[p].p, va[i], 0, size[i], 1000 + (uint64_t)i)
                          : physical_sees(&f, h[i], size[i], 1000 + (uint64_t)i);
            if (!ok) {
                fprintf(stderr, "%s step %d: allocation %d (%llu bytes) mismatch\n", preset, step, i,
                        (unsigned long long)size[i]);
                bad++;
            }
        }
        /* Evicted ones fault at their VA. */
        for (int i = 0; virt && i < n && !bad; i++)
            if (!resident(&f, h[i]) && !gv_gpu_faults(f.a, f.sg, pr[owner[i]].p, va[i]))
                bad++;
        if (softgpu_checked(f.a, NULL))
            bad++;
        T_ST(vidmm_evict(f.a, pr[p].d, &(struct vidmm_evict_args){ .allocations = list, .count = m, .flags = (t_rand(&seed) % 2) ? VIDMM_EVICT_ONLY_IF_NECESSARY : 0 }),
             VIDMM_OK);
    }
    T_EQ(bad, 0);
    struct vidmm_residency_stats s;
    T_ST(vidmm_residency_get_stats(f.a, &s), VIDMM_OK);
    uint64_t moves = (s.bytes_evicted + s.bytes_restored) / 4096;
    total_page_moves += moves;
    T_CHECK(s.evictions > 0 && s.restores > 0);
    fx_close(&f);
}

static void overcommit_integrity(void)
{
    total_page_moves = aperture_landings = 0;
    overcommit_integrity_run("dgpu", 150, 40);
    overcommit_integrity_run("dgpu", 200, 40);
    overcommit_integrity_run("wddm1", 150, 40);
    overcommit_integrity_run("wddm1", 200, 40);
    printf("    residency.overcommit_integrity: %llu page moves verified, %llu resident in aperture/system pages\n",
           (unsigned long long)total_page_moves, (unsigned long long)aperture_landings);
    T_CHECK(total_page_moves >= 100000);
    T_CHECK(aperture_landings > 0);
}

/* With the copy engine stalled, make-resident returns PENDING at once
 * with a fence value; the fence is not reached (a wait times out) until
 * the engine runs, and then it is, with the bytes in place. */
static void pending_fence(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h = make_alloc(&f, INVIS, 8 * MIB, 55);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, pr.p, 0, 0, 0, h, 0, 8 * MIB, 0, 0, &va), VIDMM_OK);
    softgpu_engine_hold(f.sg, 1);
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = pr.q;
    m.allocations = &h;
    m.count = 1;
    T_ST(vidmm_make_resident(f.a, pr.d, &m), VIDMM_PENDING);
    T_CHECK(m.paging_fence_value > 0);
    uint64_t done = 99;
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &done), VIDMM_OK);
    T_CHECK(done < m.paging_fence_value);
    T_ST(vidmm_paging_queue_wait(f.a, pr.q, m.paging_fence_value, 2000000), VIDMM_E_TIMEOUT);   /* 2 ms */
    softgpu_engine_hold(f.sg, 0);
    T_ST(vidmm_paging_queue_wait(f.a, pr.q, m.paging_fence_value, UINT64_MAX), VIDMM_OK);
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &done), VIDMM_OK);
    T_EQ_U64(done, m.paging_fence_value);
    T_CHECK(gv_gpu_sees(f.a, f.sg, pr.p, va, 0, 8 * MIB, 55));
    /* Already resident: nothing to page, no fence to wait for. */
    T_ST(vidmm_make_resident(f.a, pr.d, &m), VIDMM_OK);
    T_EQ_U64(m.paging_fence_value, 0);
    fx_close(&f);
}

/* A contiguous request in a fragmented segment: the eviction scan evicts
 * only the blocks next to a hole, not the whole LRU order. */
static void contiguous_scan(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    enum { MAXN = 80 };
    vidmm_handle h[MAXN];
    int N = 0;
    struct vidmm_residency_stats s0, s1;
    /* Fill the segment with 1 MiB blocks until one more would not fit. */
    for (; N < MAXN; N++) {
        struct vidmm_segment_info si;
        T_ST(vidmm_segment_query(f.a, 2, &si), VIDMM_OK);
        if (si.free_bytes < 1 * MIB)
            break;
        h[N] = make_alloc(&f, INVIS, 1 * MIB, 300 + (uint64_t)N);
        T_ST(mres(&f, &pr, &h[N], 1, 0, NULL), VIDMM_OK);
    }
    T_ST(vidmm_residency_get_stats(f.a, &s0), VIDMM_OK);
    T_EQ_U64(s0.evictions, 0);
    T_CHECK(N > 40);
    /* Every other one leaves memory: 1 MiB holes between 1 MiB blocks. */
    for (int i = 0; i < N; i += 2)
        T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h[i], .count = 1 }), VIDMM_OK);
    for (int i = 1; i < N; i += 2)
        T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = &h[i], .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
    T_ST(vidmm_residency_get_stats(f.a, &s0), VIDMM_OK);
    /* A contiguous 4 MiB (AccessedPhysically) request. */
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.info.size = 4 * MIB;
    d.info.supported_write_segment_set = INVIS;
    d.info.flags = VIDMM_ALLOC_ACCESSED_PHYSICALLY;
    vidmm_handle big = 0;
    T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0, &big), VIDMM_OK);
    struct vidmm_segment_info si;
    T_ST(vidmm_segment_query(f.a, 2, &si), VIDMM_OK);
    T_CHECK(si.largest_free < 4 * MIB);   /* free space alone cannot hold it */
    T_ST(mres(&f, &pr, &big, 1, 0, NULL), VIDMM_OK);
    struct vidmm_allocation_state st;
    T_ST(vidmm_allocation_query(f.a, big, &st), VIDMM_OK);
    T_EQ(st.segment_id, 2);
    T_EQ(st.extent_count, 1);
    T_ST(vidmm_residency_get_stats(f.a, &s1), VIDMM_OK);
    /* Two 1 MiB blocks between three holes make the 4 MiB... at most
     * three evictions (alignment), where LRU order would evict until a
     * hole happens to form. */
    T_CHECK(s1.evictions - s0.evictions >= 1 && s1.evictions - s0.evictions <= 3);
    /* Everyone's bytes survived. */
    for (int i = 0; i < N; i++) {
        T_ST(use1(&f, &pr, &h[i]), VIDMM_OK);
        T_CHECK(physical_sees(&f, h[i], 1 * MIB, 300 + (uint64_t)i));
    }
    fx_close(&f);
}

/* Bad input to every residency entry gets its status and changes
 * nothing (no reference, no residency change, no host block). */
static void bad_input(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr;
    proc_open(&f, &pr);
    vidmm_handle h = make_alloc(&f, INVIS, 1 * MIB, 0);
    T_ST(mres(&f, &pr, &h, 1, 0, NULL), VIDMM_OK);
    int64_t blocks = f.fa.live_blocks;
    struct vidmm_residency_stats s0, s1;
    T_ST(vidmm_residency_get_stats(f.a, &s0), VIDMM_OK);
    /* create2: unknown flags. */
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_TEXTURE;
    d.size = 4096;
    vidmm_handle x = 7;
    T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0x2, &x), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_create2(NULL, &d, sizeof d, 0, &x), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0, NULL), VIDMM_E_INVALID_ARG);
    /* Policies: NULL adapter, a table missing callbacks. */
    struct vidmm_eviction_policy broken = vidmm_policy_lru;
    broken.first = NULL;
    T_ST(vidmm_adapter_set_eviction_policy(NULL, &vidmm_policy_lru), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_set_eviction_policy(f.a, &broken), VIDMM_E_INVALID_ARG);
    /* Hints, priorities, state. */
    T_ST(vidmm_allocation_set_next_use(f.a, pr.p, 5), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_set_next_use(NULL, h, 5), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_set_priority(f.a, pr.d, VIDMM_PRIORITY_LOW), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_set_priority(NULL, h, VIDMM_PRIORITY_LOW), VIDMM_E_INVALID_ARG);
    struct vidmm_residency_state rs;
    T_ST(vidmm_allocation_residency(f.a, h, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_residency(f.a, pr.q, &rs), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_residency_get_stats(f.a, NULL), VIDMM_E_INVALID_ARG);
    T_EQ_U64(vidmm_residency_clock(NULL), 0);
    /* Offer and reclaim. */
    T_ST(vidmm_offer(NULL, pr.d, &h, 1, VIDMM_OFFER_LOW), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_offer(f.a, pr.d, NULL, 1, VIDMM_OFFER_LOW), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_offer(f.a, pr.d, &h, 1, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_offer(f.a, pr.p, &h, 1, VIDMM_OFFER_LOW), VIDMM_E_INVALID_HANDLE);
    vidmm_handle two[2] = { h, pr.d };
    T_ST(vidmm_offer(f.a, pr.d, two, 2, VIDMM_OFFER_LOW), VIDMM_E_INVALID_HANDLE);
    uint32_t res[2];
    T_ST(vidmm_reclaim(f.a, pr.q, two, 2, res, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_reclaim(f.a, pr.d, &h, 1, res, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_reclaim(f.a, pr.q, &h, 1, NULL, NULL), VIDMM_E_INVALID_ARG);
    /* Budgets and trim notifications. */
    struct vidmm_video_memory_info vi;
    T_ST(vidmm_change_video_memory_reservation(f.a, pr.p, (enum vidmm_segment_group)5, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_change_video_memory_reservation(f.a, pr.d, VIDMM_SEGMENT_GROUP_LOCAL, 0), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_process_set_budget(NULL, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 1), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_process_set_budget(f.a, pr.q, VIDMM_SEGMENT_GROUP_LOCAL, 1), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_process_set_budget(f.a, pr.p, (enum vidmm_segment_group)2, 1), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_register_trim_notification(NULL, pr.d, NULL, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_register_trim_notification(f.a, pr.p, NULL, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, NULL), VIDMM_E_INVALID_ARG);
    /* Paging queues. */
    uint64_t v = 0;
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_paging_queue_wait(NULL, pr.q, 0, 0), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_paging_queue_wait(f.a, pr.d, 0, 0), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_paging_queue_create(f.a, pr.d, VIDMM_PAGING_QUEUE_NORMAL, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_paging_queue_destroy(NULL, pr.q), VIDMM_E_INVALID_ARG);
    /* make-resident / evict. */
    T_ST(vidmm_make_resident(f.a, pr.d, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = pr.q;
    m.count = 1;   /* and no list */
    T_ST(vidmm_make_resident(f.a, pr.d, &m), VIDMM_E_INVALID_ARG);
    m.allocations = &h;
    T_ST(vidmm_make_resident(f.a, pr.p, &m), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_evict(f.a, pr.d, &(struct vidmm_evict_args){ .allocations = NULL, .count = 1 }), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_evict(f.a, pr.q, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 }), VIDMM_E_INVALID_HANDLE);
    /* Nothing changed. */
    T_EQ(f.fa.live_blocks, blocks);
    T_ST(vidmm_allocation_residency(f.a, h, &rs), VIDMM_OK);
    T_EQ(rs.references, 1);
    T_EQ(rs.resident, 1);
    T_EQ(rs.offered, 0);
    T_ST(vidmm_residency_get_stats(f.a, &s1), VIDMM_OK);
    T_EQ_U64(s1.evictions, s0.evictions);
    T_EQ_U64(s1.restores, s0.restores);
    T_ST(vidmm_query_video_memory_info(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_EQ_U64(vi.current_reservation, 0);
    T_ST(vidmm_paging_queue_fence(f.a, pr.q, &v), VIDMM_OK);
    fx_close(&f);
}

static uint32_t refs_of(struct softgpu_fx *f, vidmm_handle h)
{
    struct vidmm_residency_state r;
    T_ST(vidmm_allocation_residency(f->a, h, &r), VIDMM_OK);
    return r.references;
}

static vidmm_status evict_n(struct softgpu_fx *f, const struct proc *pr, const vidmm_handle *h, uint32_t n, uint32_t flags)
{
    return vidmm_evict(f->a, pr->d, &(struct vidmm_evict_args){ .allocations = h, .count = n, .flags = flags });
}

/* Make-resident of a list already resident and on the device's list
 * takes its references on the device's fast table (res_state.h): the
 * counts, evict, offer, budgets, eviction under pressure, a second
 * device and stale handles see the same results as through the full
 * path; the checker (which verifies every fast entry) after each step. */
static void fast_references(void)
{
    struct softgpu_fx f;
    if (fx_open(&f) < 0)
        return;
    struct proc pr, pr2;
    proc_open(&f, &pr);
    proc_open(&f, &pr2);
    vidmm_handle h[4];
    for (int i = 0; i < 4; i++)
        h[i] = make_alloc(&f, INVIS, 4 * MIB, 300 + (uint64_t)i);
    /* First listing (full path), duplicates included. */
    vidmm_handle l3[3] = { h[0], h[1], h[0] };
    T_ST(mres(&f, &pr, l3, 3, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 2);
    T_EQ(refs_of(&f, h[1]), 1);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Again, and again with a duplicate: fast. */
    for (int k = 0; k < 3; k++)
        T_ST(mres(&f, &pr, l3, 3, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 8);
    T_EQ(refs_of(&f, h[1]), 4);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Evict counts them exactly: h[1] stays until its fourth evict. */
    T_ST(evict_n(&f, &pr, &h[1], 1, 0), VIDMM_OK);
    T_EQ(refs_of(&f, h[1]), 3);
    T_EQ(resident(&f, h[1]), 1);
    vidmm_handle l5[5] = { h[1], h[1], h[1], h[1], h[1] };
    T_ST(evict_n(&f, &pr, l5, 4, 0), VIDMM_E_STATE);   /* named more often than listed */
    T_EQ(refs_of(&f, h[1]), 3);
    T_ST(evict_n(&f, &pr, l5, 3, 0), VIDMM_OK);
    T_EQ(refs_of(&f, h[1]), 0);
    T_EQ(resident(&f, h[1]), 0);   /* the last reference went: evicted */
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Back: full path (restore), then fast again. */
    T_ST(mres(&f, &pr, l3, 3, 0, NULL), VIDMM_OK);
    T_ST(mres(&f, &pr, &h[1], 1, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[1]), 2);
    T_EQ(refs_of(&f, h[0]), 10);
    /* A second device lists h[0]: both counts add up; evict by one
     * device leaves the other's. */
    T_ST(mres(&f, &pr2, &h[0], 1, 0, NULL), VIDMM_OK);
    T_ST(mres(&f, &pr2, &h[0], 1, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 12);
    T_ST(evict_n(&f, &pr2, l3, 1, 0), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 11);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Offered: the next make-resident takes the full path and clears the
     * offer; the reference count carries on. */
    T_ST(mres(&f, &pr, &h[2], 1, 0, NULL), VIDMM_OK);
    T_ST(vidmm_offer(f.a, pr.d, &h[2], 1, VIDMM_OFFER_LOW), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(mres(&f, &pr, &h[2], 1, 0, NULL), VIDMM_OK);
    struct vidmm_residency_state rs;
    T_ST(vidmm_allocation_residency(f.a, h[2], &rs), VIDMM_OK);
    T_EQ(rs.offered, 0);
    T_EQ(rs.references, 2);
    T_ST(mres(&f, &pr, &h[2], 1, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[2]), 3);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* Over budget: refused on the fast path too, nothing changed. */
    T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 4 * MIB), VIDMM_OK);
    uint64_t trim = 0;
    T_ST(mres(&f, &pr, l3, 3, 0, &trim), VIDMM_E_OVER_BUDGET);
    T_CHECK(trim > 0);
    T_EQ(refs_of(&f, h[0]), 11);
    T_ST(mres(&f, &pr, l3, 3, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 13);
    T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 96 * MIB), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* A destroyed allocation's handle is refused, listed or not, even
     * when its slot serves a new allocation. */
    T_ST(vidmm_allocation_destroy(f.a, h[2]), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    vidmm_handle again = make_alloc(&f, INVIS, 4 * MIB, 0);
    T_EQ((uint32_t)again & 0xFFFFFFu, (uint32_t)h[2] & 0xFFFFFFu);
    T_ST(mres(&f, &pr, &h[2], 1, 0, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(mres(&f, &pr, &again, 1, 0, NULL), VIDMM_OK);
    T_ST(mres(&f, &pr, &again, 1, 0, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, again), 2);
    T_ST(mres(&f, &pr, &h[2], 1, 0, NULL), VIDMM_E_INVALID_HANDLE);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* The other process's device never had it: refused until listed. */
    T_ST(evict_n(&f, &pr2, &again, 1, 0), VIDMM_E_STATE);
    /* Under pressure a process over its budget loses listed allocations;
     * a fast make-resident afterwards is the full path again, restoring
     * them. */
    vidmm_handle big[12];
    for (int i = 0; i < 12; i++)
        big[i] = make_alloc(&f, INVIS, 4 * MIB, 0);
    T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 4 * MIB), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 13);
    T_ST(mres(&f, &pr2, big, 12, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 13);
    T_ST(mres(&f, &pr2, big, 12, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    T_EQ(refs_of(&f, h[0]), 13);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    T_ST(vidmm_process_set_budget(f.a, pr.p, VIDMM_SEGMENT_GROUP_LOCAL, 96 * MIB), VIDMM_OK);
    T_ST(mres(&f, &pr, l3, 3, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL), VIDMM_OK);
    T_EQ(resident(&f, h[0]), 1);
    T_EQ(resident(&f, h[1]), 1);
    T_EQ(refs_of(&f, h[0]), 15);
    for (int i = 0; i < 12; i++)
        T_EQ(refs_of(&f, big[i]), 2);
    T_EQ(softgpu_checked(f.a, NULL), 0);
    /* The device goes with references on its fast table. */
    T_ST(vidmm_device_destroy(f.a, pr2.d), VIDMM_OK);
    for (int i = 0; i < 12; i++)
        T_EQ(refs_of(&f, big[i]), 0);
    T_EQ(refs_of(&f, h[0]), 14);   /* its one reference from that device went too */
    fx_close(&f);
}

void suite_residency(void);
void suite_residency(void)
{
    t_run("residency.evict_restore_same_va", evict_restore_same_va);
    t_run("residency.pressure_evicts_lru", pressure_evicts_lru);
    t_run("residency.all_or_nothing", all_or_nothing);
    t_run("residency.priority_honoured", priority_honoured);
    t_run("residency.fair_share", fair_share);
    t_run("residency.fair_share_per_segment", fair_share_per_segment);
    t_run("residency.demand_notifies_others", demand_notifies_others);
    t_run("residency.budgets", budgets);
    t_run("residency.trim_callbacks_destroy", trim_callbacks_destroy);
    t_run("residency.offer_reclaim", offer_reclaim);
    t_run("residency.clean_discard", clean_discard);
    t_run("residency.queues", queues);
    t_run("residency.pending_fence", pending_fence);
    t_run("residency.contiguous_scan", contiguous_scan);
    t_run("residency.bad_input", bad_input);
    t_run("residency.overcommit_integrity", overcommit_integrity);
    t_run("residency.fast_references", fast_references);
}
