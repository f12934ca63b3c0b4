/*
 * va_prepare_test.c - a GPU VA change that fails in its prepare half
 * changes nothing (docs/VA_SPACE.md, "Prepare and commit").
 *
 * Every change is swept in the countdown manner of oom_test.c: for k = 1,
 * 2, ... the k-th host allocation inside the call and every later one is
 * refused, until the call runs through without reaching it.  After each
 * refusal the call returned VIDMM_E_NO_HOST_MEMORY and a dump taken
 * before it still matches:
 *
 *   - va_space.*: the VA space alone - every range in address order,
 *     the counts, and every object's mappings through the object index;
 *     vidmm_va_space_check is clean, and a prepare that succeeds passes
 *     vidmm_va_prep_check before its commit.
 *   - gpuva.*: through a process on softgpu - every range the public
 *     query gives, the page tables (count, bytes, root entries) and every
 *     4 KiB page's translation by softgpu's own MMU walk (the GPU's view,
 *     independent of vidmm); vidmm_adapter_check (every VA space and
 *     page-table tree), softgpu_check and the rules checker
 *     (vidmm_adapter_check_rules plus the gpu.* rules) are clean.
 *
 * Each change is tried on a range of starting states (more and more
 * ranges), so its reservations cross the pools' growth points and every
 * host-allocation site of its prepare half is reached at least once.
 * Unmapping an object (allocation destroy) needs no memory at all: it is
 * checked to make no host allocation.
 */
#include "gpuva_common.h"
#include "harness/fault_alloc.h"
#include "harness/rules_check.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "va/va_space.h"
#include "vidmm/host_alloc.h"
#include "vidmm/tdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

/* ---- dumps ---------------------------------------------------------------- */

struct dump {
    uint64_t n, cap;
    uint64_t *v;
};

static void dump_init(struct dump *d)
{
    d->n = 0;
    d->cap = 1u << 16;
    d->v = malloc(d->cap * sizeof *d->v);
    T_CHECK(d->v != NULL);
}

static void dump_free(struct dump *d) { free(d->v); }

static void put(struct dump *d, uint64_t x)
{
    if (d->v && d->n < d->cap)
        d->v[d->n] = x;
    d->n++;
}

static int dump_eq(const struct dump *a, const struct dump *b)
{
    if (a->n != b->n || a->n > a->cap)
        return 0;
    return memcmp(a->v, b->v, a->n * sizeof *a->v) == 0;
}

/* ---- the VA space alone ---------------------------------------------------- */

#define NOBJ 4

static void vs_dump(const struct vidmm_va_space *vs, struct dump *d)
{
    d->n = 0;
    put(d, vs->range_count);
    put(d, vs->mapped_count);
    for (const struct vidmm_va_range *r = vidmm_va_first(vs); r; r = vidmm_va_next(vs, r)) {
        put(d, r->d.va);
        put(d, r->d.size);
        put(d, r->d.state | (uint64_t)r->d.mode << 8 | (uint64_t)r->d.prot << 16 | (uint64_t)r->d.in_reservation << 24);
        put(d, r->d.object);
        put(d, r->d.object_offset);
        put(d, r->d.driver_protection);
    }
    /* The object index: each object's mappings, sorted (the list order
     * is unspecified). */
    for (uint64_t o = 1; o <= NOBJ; o++) {
        uint64_t first = d->n;
        put(d, vidmm_va_object_mapping_count(vs, o));
        uint64_t lo = d->n;
        for (const struct vidmm_va_range *r = vidmm_va_object_first(vs, o); r; r = vidmm_va_object_next(vs, r))
            put(d, r->d.va);
        for (uint64_t i = lo + 1; i < d->n && d->n <= d->cap; i++)
            for (uint64_t j = i; j > lo && d->v[j - 1] > d->v[j]; j--) {
                uint64_t t = d->v[j];
                d->v[j] = d->v[j - 1];
                d->v[j - 1] = t;
            }
        (void)first;
    }
}

/* A starting state with about n ranges: plain mappings of 64 KiB at a
 * 1 MiB stride from 1 GiB, and at 64 GiB a 4 MiB reservation with
 * mappings of objects 3 and 4 inside. */
static int vs_build(struct vidmm_va_space *vs, unsigned n)
{
    uint64_t va;
    for (unsigned i = 0; i < n; i++)
        if (vidmm_va_map(vs, 1024 * MIB + i * MIB, 0, 0, 64 * KIB, 1 + (i & 1), i * 64 * KIB, 0, 0, &va) != VIDMM_OK)
            return -1;
    if (vidmm_va_reserve(vs, 64 * 1024 * MIB, 0, 0, 4 * MIB, VIDMM_VA_NO_ACCESS, &va) != VIDMM_OK)
        return -1;
    for (unsigned i = 0; i < 8; i++)
        if (vidmm_va_map(vs, 64 * 1024 * MIB + i * 256 * KIB, 0, 0, 128 * KIB, 3 + (i & 1), 0, 0, 0, &va) != VIDMM_OK)
            return -1;
    return 0;
}

enum vop { V_MAP_ANY, V_MAP_SPLIT, V_MAP_IN_RES, V_RESERVE, V_UNMAP, V_FREE, V_UPDATE, V_COUNT };
static const char *const vop_names[V_COUNT] = { "map anywhere", "map splitting a mapping", "map in a reservation",
                                                "reserve", "unmap", "free", "update" };

/* Prepare op o on a state of n plain ranges (the batch of an update is
 * in ops, which must outlive the commit). */
static vidmm_status vs_prepare(struct vidmm_va_space *vs, enum vop o, unsigned n, struct vidmm_va_update_op *ops,
                               struct vidmm_va_prep *op)
{
    const uint64_t res = 64 * 1024 * MIB;
    switch (o) {
    case V_MAP_ANY:
        return vidmm_va_map_prepare(vs, 0, 0, 0, 192 * KIB, 2, 0, 0, 7, op);
    case V_MAP_SPLIT: /* the middle of plain mapping n / 2: three pieces */
        return vidmm_va_map_prepare(vs, 1024 * MIB + (n / 2) * MIB + 16 * KIB, 0, 0, 16 * KIB, 1, 0,
                                    VIDMM_VA_PROT_READ_ONLY, 0, op);
    case V_MAP_IN_RES: /* across two mappings and the reserved gap between */
        return vidmm_va_map_prepare(vs, res + 64 * KIB, 0, 0, 256 * KIB, 2, 0, 0, 0, op);
    case V_RESERVE:
        return vidmm_va_reserve_prepare(vs, 0, 0, 0, 256 * KIB, VIDMM_VA_ZERO, op);
    case V_UNMAP: /* cuts plain mappings at both ends of a span of them */
        return vidmm_va_unmap_prepare(vs, 1024 * MIB + 32 * KIB, (n / 2) * MIB, op);
    case V_FREE: /* a whole plain mapping and the start of a reservation-backed run */
        if (n % 2)
            return vidmm_va_free_prepare(vs, 1024 * MIB + (n / 3) * MIB, 64 * KIB, op);
        return vidmm_va_free_prepare(vs, res, 1 * MIB, op);
    case V_UPDATE:
        memset(ops, 0, 3 * sizeof *ops);
        ops[0].type = VIDMM_VA_UPDATE_MAP;
        ops[0].va = res + 3 * MIB + 4 * KIB;
        ops[0].size = 40 * KIB;
        ops[0].object = 1;
        ops[1].type = VIDMM_VA_UPDATE_COPY;
        ops[1].va = res + 2 * MIB + 8 * KIB;
        ops[1].src = res;
        ops[1].size = 600 * KIB;
        ops[2].type = VIDMM_VA_UPDATE_UNMAP;
        ops[2].va = res + 256 * KIB + 4 * KIB;
        ops[2].size = 8 * KIB;
        ops[2].mode = VIDMM_VA_ZERO;
        return vidmm_va_update_prepare(vs, ops, 3, op);
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

static void prepare_fails_cleanly(void)
{
    struct dump before, after;
    dump_init(&before);
    dump_init(&after);
    for (int o = 0; o < V_COUNT; o++) {
        uint64_t refused = 0;
        for (unsigned n = 200; n <= 280; n += 5) {
            for (uint64_t k = 1;; k++) {
                struct fault_alloc fa;
                fault_alloc_init(&fa);
                struct vidmm_va_space vs;
                T_ST(vidmm_va_space_init(&vs, &fa.ha, 40), VIDMM_OK);
                T_EQ(vs_build(&vs, n), 0);
                vs_dump(&vs, &before);
                struct vidmm_va_update_op ops[3];
                struct vidmm_va_prep op;
                fault_alloc_arm(&fa, k, 1);
                uint64_t failures = fa.failures;
                vidmm_status st = vs_prepare(&vs, (enum vop)o, n, ops, &op);
                fault_alloc_disarm(&fa);
                int done = fa.failures == failures;
                if (!done) {
                    refused++;
                    if (st != VIDMM_E_NO_HOST_MEMORY)
                        fprintf(stderr, "va_prepare: %s, %u ranges, allocation %llu refused -> %s\n", vop_names[o], n,
                                (unsigned long long)k, vidmm_status_str(st));
                    T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                    vs_dump(&vs, &after);
                    T_CHECK(dump_eq(&before, &after));
                    T_EQ(vidmm_va_space_check(&vs), 0);
                    /* Not committed: the same change prepares again. */
                    st = vs_prepare(&vs, (enum vop)o, n, ops, &op);
                }
                T_ST(st, VIDMM_OK);
                if (st == VIDMM_OK) {
                    T_EQ(vidmm_va_prep_check(&vs, &op), 0);
                    vs_dump(&vs, &after);
                    T_CHECK(dump_eq(&before, &after)); /* prepare changes no range */
                    vidmm_va_commit(&vs, &op);
                    T_EQ(vidmm_va_space_check(&vs), 0);
                }
                vidmm_va_space_fini(&vs);
                T_EQ(fa.live_blocks, 0);
                if (done || st != VIDMM_OK)
                    break;
            }
        }
        printf("va_prepare: %s: %llu refused host allocations, each left no trace\n", vop_names[o],
               (unsigned long long)refused);
        /* The sweep reached the change's allocations. */
        if (!refused)
            fprintf(stderr, "va_prepare: %s: no host allocation was ever refused\n", vop_names[o]);
        T_CHECK(refused > 0);
    }
    dump_free(&before);
    dump_free(&after);
}

/* Unmapping every mapping of an object needs no memory: with every host
 * allocation refused it still succeeds, and allocates nothing. */
static void unmap_object_needs_nothing(void)
{
    for (unsigned n = 200; n <= 280; n += 10) {
        struct fault_alloc fa;
        fault_alloc_init(&fa);
        struct vidmm_va_space vs;
        T_ST(vidmm_va_space_init(&vs, &fa.ha, 40), VIDMM_OK);
        T_EQ(vs_build(&vs, n), 0);
        for (uint64_t o = 1; o <= NOBJ; o++) {
            uint64_t calls = fa.calls;
            fault_alloc_arm(&fa, 1, 1);
            T_ST(vidmm_va_unmap_object(&vs, o), VIDMM_OK);
            fault_alloc_disarm(&fa);
            T_EQ(fa.calls, calls);
            T_EQ(vidmm_va_object_mapping_count(&vs, o), 0);
            T_EQ(vidmm_va_space_check(&vs), 0);
        }
        /* Objects 3 and 4 lived in the reservation: one RESERVED range again. */
        const struct vidmm_va_range *r = vidmm_va_lookup(&vs, 64 * 1024 * MIB);
        T_CHECK(r && r->d.state == VIDMM_VA_RESERVED && r->d.size == 4 * MIB);
        T_EQ(vs.mapped_count, 0);
        vidmm_va_space_fini(&vs);
        T_EQ(fa.live_blocks, 0);
    }
}

/* ---- through a process: the page tables too ---------------------------------- */

#define WIN_LO (64 * KIB)
#define WIN_HI (64 * MIB)
#define FAR    (UINT64_C(1) << 38) /* a part of the space no table covers yet */

struct px {
    struct softgpu_fx f;
    vidmm_handle proc;
    vidmm_handle al[2];
    uint64_t big_va;   /* al[0] mapped with 64 KB entries */
    uint64_t res_va;   /* a 2 MiB reservation at FAR + 512 MiB */
};

static void pt_dump_span(struct px *x, const struct vidmm_physical_address *root, uint64_t lo, uint64_t hi,
                         struct dump *d)
{
    for (uint64_t va = lo; va < hi; va += 4 * KIB) {
        struct softgpu_translation t;
        memset(&t, 0, sizeof t);
        vidmm_status st = softgpu_translate(x->f.sg, root, va, SOFTGPU_ACCESS_READ, &t);
        if (st != VIDMM_OK) {
            put(d, (uint64_t)(int64_t)st);
            continue;
        }
        put(d, t.segment_id | (uint64_t)t.page_size << 8 | (uint64_t)t.read_only << 40 | (uint64_t)t.no_execute << 41 |
                   (uint64_t)t.zero << 42);
        put(d, t.offset);
    }
}

static void px_dump(struct px *x, struct dump *d)
{
    d->n = 0;
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(x->f.a, x->proc, &pi), VIDMM_OK);
    put(d, pi.ranges);
    put(d, pi.page_table_bytes);
    put(d, pi.page_tables);
    put(d, pi.root_entries);
    struct vidmm_gpuva_range r[64];
    uint32_t cnt = 0;
    T_ST(vidmm_gpuva_query(x->f.a, x->proc, 0, r, 64, &cnt), VIDMM_OK);
    for (uint32_t i = 0; i < cnt; i++) {
        put(d, r[i].va);
        put(d, r[i].size);
        put(d, r[i].state | (uint64_t)r[i].mode << 8 | (uint64_t)r[i].protection << 16);
        put(d, r[i].allocation);
        put(d, r[i].offset);
    }
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(x->f.a, x->proc, &root), VIDMM_OK);
    pt_dump_span(x, &root, WIN_LO, WIN_HI, d);
    pt_dump_span(x, &root, FAR, FAR + 4 * MIB, d);
    pt_dump_span(x, &root, FAR + 512 * MIB, FAR + 512 * MIB + 4 * MIB, d);
}

static int px_checked(struct px *x)
{
    int e = softgpu_checked(x->f.a, x->f.sg);
    char rep[2048];
    struct rc_objects o;
    memset(&o, 0, sizeof o);
    o.proc = &x->proc;
    o.nproc = 1;
    o.alloc = x->al;
    o.nalloc = 2;
    rep[0] = '\0';
    int r = rc_check_rules(x->f.a, x->f.sg, &o, rep, sizeof rep);
    if (r)
        fprintf(stderr, "va_prepare: rules: %s\n", rep);
    return e + r;
}

/* A process with al[0] (1 MiB, resident in the 64 KB-page segment,
 * mapped anywhere: 64 KB entries), al[1] (256 KiB, resident) mapped
 * twice, and a 2 MiB reservation far up with al[1] mapped in it. */
static int px_open(struct px *x)
{
    memset(x, 0, sizeof *x);
    if (softgpu_fx_open(&x->f, 32 * MIB, 32 * MIB, 1))
        return -1;
    T_ST(vidmm_process_create(x->f.a, &x->proc), VIDMM_OK);
    x->al[0] = softgpu_new_alloc(x->f.a, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 1 * MIB, 11, 1);
    x->al[1] = softgpu_new_alloc(x->f.a, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 256 * KIB, 12, 1);
    if (!x->proc || !x->al[0] || !x->al[1])
        return -1;
    uint64_t va;
    T_ST(vidmm_gpuva_map(x->f.a, x->proc, 0, 0, 0, x->al[0], 0, 1 * MIB, 0, 0, &x->big_va), VIDMM_OK);
    T_ST(vidmm_gpuva_map(x->f.a, x->proc, 0, 0, 0, x->al[1], 0, 256 * KIB, 0, 0, &va), VIDMM_OK);
    T_ST(vidmm_gpuva_map(x->f.a, x->proc, 16 * MIB, 0, 0, x->al[1], 64 * KIB, 128 * KIB, VIDMM_GPUVA_READ_ONLY, 0, &va),
         VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(x->f.a, x->proc, FAR + 512 * MIB, 0, 0, 2 * MIB, VIDMM_GPUVA_RESERVE_NO_ACCESS,
                             &x->res_va),
         VIDMM_OK);
    T_ST(vidmm_gpuva_map(x->f.a, x->proc, x->res_va + 256 * KIB, 0, 0, x->al[1], 0, 256 * KIB, 0, 0, &va), VIDMM_OK);
    return px_checked(x) ? -1 : 0;
}

enum pop { P_MAP_ANY, P_MAP_FAR, P_RESERVE_ZERO, P_UNMAP_CUT, P_FREE, P_UPDATE, P_COUNT };
static const char *const pop_names[P_COUNT] = { "gpuva_map anywhere", "gpuva_map at a new table span",
                                                "gpuva_reserve ZERO", "gpuva_unmap through 64 KB entries",
                                                "gpuva_free", "gpuva_update" };

static vidmm_status px_call(struct px *x, enum pop o)
{
    uint64_t va = 0;
    switch (o) {
    case P_MAP_ANY:
        /* anywhere above FAR: the span vidmm picks has no tables yet */
        return vidmm_gpuva_map(x->f.a, x->proc, 0, FAR, 0, x->al[1], 0, 192 * KIB, 0, 0, &va);
    case P_MAP_FAR:
        return vidmm_gpuva_map(x->f.a, x->proc, FAR + 1 * MIB, 0, 0, x->al[0], 0, 1 * MIB, 0, 0, &va);
    case P_RESERVE_ZERO:
        return vidmm_gpuva_reserve(x->f.a, x->proc, 0, FAR, 0, 1 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &va);
    case P_UNMAP_CUT: /* 4 KiB out of the middle of a 64 KB page */
        return vidmm_gpuva_unmap(x->f.a, x->proc, x->big_va + 68 * KIB, 4 * KIB);
    case P_FREE:
        return vidmm_gpuva_free(x->f.a, x->proc, x->res_va, 2 * MIB);
    case P_UPDATE: {
        struct vidmm_gpuva_update_op ops[3];
        memset(ops, 0, sizeof ops);
        ops[0].type = VIDMM_GPUVA_UPDATE_MAP;
        ops[0].va = x->res_va + 1 * MIB;
        ops[0].size = 64 * KIB;
        ops[0].allocation = x->al[0];
        ops[0].offset = 128 * KIB;
        ops[1].type = VIDMM_GPUVA_UPDATE_COPY;
        ops[1].va = x->res_va + 1536 * KIB;
        ops[1].source = x->res_va + 256 * KIB;
        ops[1].size = 128 * KIB;
        ops[2].type = VIDMM_GPUVA_UPDATE_UNMAP;
        ops[2].va = x->res_va + 260 * KIB;
        ops[2].size = 8 * KIB;
        ops[2].unmap_mode = VIDMM_GPUVA_RESERVE_ZERO;
        return vidmm_gpuva_update(x->f.a, x->proc, ops, 3);
    }
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

static void gpuva_fails_cleanly(void)
{
#ifdef VIDMM_DEBUG
    /* A debug build runs the checkers at every entry boundary, and their
     * host allocations take the numbers this sweep counts: the sweep runs
     * in the release build (`make test`). */
    printf("va_prepare: gpuva sweep skipped in the debug build\n");
    return;
#endif
    struct dump before, after;
    dump_init(&before);
    dump_init(&after);
    for (int o = 0; o < P_COUNT; o++) {
        uint64_t refused = 0;
        for (uint64_t k = 1;; k++) {
            struct px x;
            if (px_open(&x)) {
                T_CHECK(0);
                softgpu_fx_close(&x.f);
                break;
            }
            px_dump(&x, &before);
            uint64_t failures = x.f.fa.failures;
            fault_alloc_arm(&x.f.fa, k, 1);
            vidmm_status st = px_call(&x, (enum pop)o);
            fault_alloc_disarm(&x.f.fa);
            int done = x.f.fa.failures == failures;
            if (!done) {
                refused++;
                if (st != VIDMM_E_NO_HOST_MEMORY)
                    fprintf(stderr, "va_prepare: %s, allocation %llu refused -> %s\n", pop_names[o],
                            (unsigned long long)k, vidmm_status_str(st));
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                px_dump(&x, &after);
                if (!dump_eq(&before, &after))
                    fprintf(stderr, "va_prepare: %s, allocation %llu refused: state changed\n", pop_names[o],
                            (unsigned long long)k);
                T_CHECK(dump_eq(&before, &after));
                T_EQ(px_checked(&x), 0);
                /* The same call goes through now. */
                st = px_call(&x, (enum pop)o);
            }
            T_ST(st, VIDMM_OK);
            T_EQ(px_checked(&x), 0);
            softgpu_fx_close(&x.f);
            if (done || st != VIDMM_OK)
                break;
        }
        printf("va_prepare: %s: %llu refused host allocations, each left no trace\n", pop_names[o],
               (unsigned long long)refused);
        /* A free needs no memory here (records are pooled, tables are
         * kept when they empty): it is swept for its checks only. */
        if (!refused && o != P_FREE)
            fprintf(stderr, "va_prepare: %s: no host allocation was ever refused\n", pop_names[o]);
        T_CHECK(refused > 0 || o == P_FREE);
    }
    dump_free(&before);
    dump_free(&after);
}

/* ---- a PTE write refused in the commit ---------------------------------------- */

/* softgpu's ops, with build_paging_buffer refusing the next
 * UPDATE_PAGE_TABLE when armed (test state, one adapter at a time). */
static unsigned refuse_pt_updates;
static vidmm_status refusing_build(void *driver, struct vidmm_build_paging_buffer_args *args)
{
    if (refuse_pt_updates && args->operation == VIDMM_PAGING_UPDATE_PAGE_TABLE) {
        refuse_pt_updates--;
        return VIDMM_E_DRIVER_FAILURE;
    }
    return softgpu_driver_ops()->build_paging_buffer(driver, args);
}

/* The one cause prepare cannot take (docs/DECISIONS.md D45): the driver
 * refuses a PTE write of a committed change.  The change stands (the VA
 * tree is the truth), the call reports the reset it ran into, and the
 * adapter reset rebuilds the page tables from the tree, so the GPU's view
 * agrees with it again: the gpu.* rules are clean and the new mapping
 * reads the allocation's bytes. */
static void commit_write_refused(void)
{
    static struct vidmm_driver_ops ops;
    ops = *softgpu_driver_ops();
    ops.build_paging_buffer = refusing_build;
    refuse_pt_updates = 0;
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 32 * MIB, 32 * MIB, 1);
    struct px x;
    memset(&x, 0, sizeof x);
    if (softgpu_open(&x.f.fa, &cfg, &ops, 0, &x.f.sg, &x.f.a)) {
        T_CHECK(0);
        return;
    }
    T_ST(vidmm_process_create(x.f.a, &x.proc), VIDMM_OK);
    x.al[0] = softgpu_new_alloc(x.f.a, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 1 * MIB, 11, 1);
    x.al[1] = softgpu_new_alloc(x.f.a, SOFTGPU_ALLOC_EXPLICIT, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 256 * KIB, 12, 1);
    uint64_t va = 0, va2 = 0;
    T_ST(vidmm_gpuva_map(x.f.a, x.proc, 16 * MIB, 0, 0, x.al[0], 0, 1 * MIB, 0, 0, &va), VIDMM_OK);
    T_EQ(px_checked(&x), 0);
    struct vidmm_tdr_stats t0, t1;
    T_ST(vidmm_adapter_get_tdr_stats(x.f.a, &t0), VIDMM_OK);
    /* Next to the first mapping, in its tables: prepare emits nothing,
     * so the refused write is the commit's. */
    refuse_pt_updates = 1;
    vidmm_status st = vidmm_gpuva_map(x.f.a, x.proc, 16 * MIB + 1 * MIB, 0, 0, x.al[1], 0, 256 * KIB, 0, 0, &va2);
    T_EQ(refuse_pt_updates, 0);
    refuse_pt_updates = 0;
    /* The end of the call waited for the paging queue, found the fault
     * and left the reset pending; it ran as the call returned. */
    T_ST(st, VIDMM_E_TIMEOUT);
    T_ST(vidmm_adapter_get_tdr_stats(x.f.a, &t1), VIDMM_OK);
    T_EQ(t1.adapter_resets, t0.adapter_resets + 1);
    struct vidmm_gpuva_range r[4];
    uint32_t cnt = 0;
    T_ST(vidmm_gpuva_query(x.f.a, x.proc, 16 * MIB + 1 * MIB, r, 4, &cnt), VIDMM_OK);
    T_CHECK(cnt >= 1 && r[0].va == 16 * MIB + 1 * MIB && r[0].size == 256 * KIB && r[0].allocation == x.al[1]);
    T_EQ(px_checked(&x), 0);
    /* Both mappings translate to their allocations' current placement
     * (the gpu.* rules above); and further changes work as usual. */
    T_ST(vidmm_gpuva_unmap(x.f.a, x.proc, 16 * MIB + 1 * MIB, 256 * KIB), VIDMM_OK);
    T_ST(vidmm_gpuva_map(x.f.a, x.proc, 0, 0, 0, x.al[1], 0, 256 * KIB, 0, 0, &va2), VIDMM_OK);
    T_EQ(px_checked(&x), 0);
    softgpu_fx_close(&x.f);
}

void suite_va_prepare(void);
void suite_va_prepare(void)
{
    t_run("va_prepare.prepare_fails_cleanly", prepare_fails_cleanly);
    t_run("va_prepare.unmap_object_needs_nothing", unmap_object_needs_nothing);
    t_run("va_prepare.gpuva_fails_cleanly", gpuva_fails_cleanly);
    t_run("va_prepare.commit_write_refused", commit_write_refused);
}
