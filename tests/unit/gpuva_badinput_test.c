/*
 * gpuva_badinput_test.c - the public process and GPU VA entries
 * (vidmm/process.h) under bad input.
 *
 *  - table: rows {name, call, expected status} over process_create/
 *    destroy/query, gpuva_reserve/map/unmap/free/update/query and
 *    process_root_page_table, on dgpu (GpuMmu, 64 KiB pages), wddm1
 *    (GpuMmu, 4 KiB pages) and igpu (IoMmu).  Every call must return
 *    exactly the status and change nothing: the snapshot is, for every
 *    tracked process of every adapter, its vidmm_gpuva_query ranges, its
 *    vidmm_process_query (ranges, page tables, page-table bytes, fault
 *    state) and the page size softgpu's MMU walker finds at both ends of
 *    each range; every segment's committed and free bytes; then
 *    vidmm_adapter_check() == 0 and softgpu_check() == 0, and every
 *    existing mapping still reads its allocation's bytes through the MMU
 *    (a ZERO reservation still reads zeros).
 *  - a process whose device faulted: every VA change answers
 *    VIDMM_E_DEVICE_LOST (rows), destroy still works (after the table);
 *  - 256 processes, the 257th is VIDMM_E_BUSY; an adapter with neither
 *    GpuMmu nor IoMmu is VIDMM_E_NOT_SUPPORTED.
 *
 * Rows marked "BUG-n" are the regressions for four bugs this suite found
 * (described at the end of the file); all four are fixed.
 */
#include "gpuva_common.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "vidmm/gpummu.h"
#include "vidmm/process.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdlib.h>
#include <string.h>

#define KIB(x) ((uint64_t)(x) << 10)
#define MIB(x) ((uint64_t)(x) << 20)
#define B(id) VIDMM_SEGMENT_BIT(id)
#define SLOT_GEN_MASK 0xFFFFFFFFFFull

/* ---- fixture ------------------------------------------------------- */

#define alloc_in gv_alloc_in
#define pattern gv_pattern
#define gpu_sees(f, proc, va, off, size, seed) gv_gpu_sees((f)->a, (f)->sg, proc, va, off, size, seed)

struct gfx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    uint64_t limit;             /* 2^va bits (GpuMmu), 0 for IoMmu */
};

static int gfx_open(struct gfx *f, const char *preset)
{
    memset(f, 0, sizeof(*f));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, preset, strcmp(preset, "igpu") ? MIB(64) : 0, strcmp(preset, "igpu") ? MIB(128) : 0, 0);
    if (softgpu_open(&f->fa, &cfg, NULL, 0, &f->sg, &f->a))
        return -1;
    struct vidmm_gpummu_info gi;
    if (vidmm_adapter_query_gpummu(f->a, &gi) == VIDMM_OK)
        f->limit = gi.va_size;
    return 0;
}

static void gfx_close(struct gfx *f)
{
    if (!f->a)
        return;
    T_EQ(softgpu_check(f->sg), 0);
    softgpu_close(&f->fa, f->sg, f->a);
    f->a = NULL;
}

/* ---- the state snapshot -------------------------------------------- */

#define SNAP_ADAPTERS 4
#define SNAP_PROCS 8
#define SNAP_RANGES 32

struct proc_snap {
    vidmm_status st;
    uint32_t n;
    struct vidmm_gpuva_range r[SNAP_RANGES];
    uint32_t page_lo[SNAP_RANGES], page_hi[SNAP_RANGES];
    struct vidmm_process_info info;
};

struct snap {
    uint64_t committed[SNAP_ADAPTERS][SOFTGPU_MAX_SEGMENTS + 1];
    uint64_t free_bytes[SNAP_ADAPTERS][SOFTGPU_MAX_SEGMENTS + 1];
    uint64_t live_blocks[SNAP_ADAPTERS];
    struct proc_snap p[SNAP_PROCS];
};

/* A mapping that must keep reading its bytes (seed 0: a ZERO span). */
struct seen {
    int ad;
    vidmm_handle proc;
    uint64_t va, off, size, seed;
};

struct gb {
    struct gfx ad[SNAP_ADAPTERS];       /* [0] dgpu, [1] dgpu (foreign), [2] wddm1, [3] igpu */
    struct { int ad; vidmm_handle h; } tracked[SNAP_PROCS];
    int ntracked;
    struct seen seen[16];
    int nseen;
    /* dgpu (ad[0]) */
    vidmm_handle p, pf, p2, stale, stale_reused, alloc_as_proc;
    vidmm_handle h, hs, h_stale;        /* 1 MiB and 64 KiB in segment 2; a destroyed one */
    uint64_t M, R, P, R2, Z;            /* layout of p, see gb_setup */
    /* the second dgpu: same slot and generation as p and h */
    vidmm_handle pg, hg;
    /* wddm1 */
    vidmm_handle pw, pwf, hw;
    uint64_t Rw, Mw;
    /* igpu */
    vidmm_handle pi, hi;
    uint64_t cpu_i;
    /* outputs of the rows */
    uint64_t out;
    vidmm_handle hout;
    struct vidmm_physical_address root;
    struct vidmm_process_info info;
    struct vidmm_gpuva_range rr[4];
    uint32_t n;
};

static void snap_take(struct gb *c, struct snap *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < SNAP_ADAPTERS; i++) {
        struct gfx *f = &c->ad[i];
        struct vidmm_adapter_info ai;
        T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
        for (uint32_t id = 0; id < ai.segment_count && id <= SOFTGPU_MAX_SEGMENTS; id++) {
            struct vidmm_segment_info si;
            T_ST(vidmm_segment_query(f->a, id, &si), VIDMM_OK);
            s->committed[i][id] = si.committed;
            s->free_bytes[i][id] = si.free_bytes;
        }
        s->live_blocks[i] = (uint64_t)f->fa.live_blocks;
    }
    for (int k = 0; k < c->ntracked; k++) {
        struct gfx *f = &c->ad[c->tracked[k].ad];
        vidmm_handle h = c->tracked[k].h;
        struct proc_snap *ps = &s->p[k];
        ps->st = vidmm_gpuva_query(f->a, h, 0, ps->r, SNAP_RANGES, &ps->n);
        T_ST(ps->st, VIDMM_OK);
        T_ST(vidmm_process_query(f->a, h, &ps->info), VIDMM_OK);
        if (f->limit)
            for (uint32_t j = 0; j < ps->n; j++) {
                ps->page_lo[j] = gv_leaf_page_size(f->a, f->sg, h, ps->r[j].va);
                ps->page_hi[j] = gv_leaf_page_size(f->a, f->sg, h, ps->r[j].va + ps->r[j].size - 4096);
            }
    }
}

/* t_fail prints the first 10 failures of a case; a row's own failures
 * are always printed. */
static void row_fail(int line, const char *m)
{
    if (t_current_failures() >= 10)
        fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, line, m);
    t_fail(__FILE__, line, m);
}

static int snap_same(struct gb *c, const struct snap *a, const char *row)
{
    struct snap b;
    snap_take(c, &b);
    int ok = 1;
    char m[256];
    for (int i = 0; i < SNAP_ADAPTERS; i++) {
        for (uint32_t id = 0; id <= SOFTGPU_MAX_SEGMENTS; id++)
            if (a->committed[i][id] != b.committed[i][id] || a->free_bytes[i][id] != b.free_bytes[i][id]) {
                snprintf(m, sizeof m, "row %s: adapter %d segment %u committed %llu -> %llu, free %llu -> %llu", row,
                         i, id, (unsigned long long)a->committed[i][id], (unsigned long long)b.committed[i][id],
                         (unsigned long long)a->free_bytes[i][id], (unsigned long long)b.free_bytes[i][id]);
                row_fail(__LINE__, m);
                ok = 0;
            }
        if (a->live_blocks[i] != b.live_blocks[i]) {
            snprintf(m, sizeof m, "row %s: adapter %d live host blocks %llu -> %llu", row, i,
                     (unsigned long long)a->live_blocks[i], (unsigned long long)b.live_blocks[i]);
            row_fail(__LINE__, m);
            ok = 0;
        }
    }
    for (int k = 0; k < c->ntracked; k++) {
        const struct proc_snap *x = &a->p[k], *y = &b.p[k];
        if (x->n != y->n || memcmp(x->r, y->r, sizeof(x->r[0]) * x->n)) {
            snprintf(m, sizeof m, "row %s: process %d: VA ranges changed (%u -> %u ranges)", row, k, x->n, y->n);
            row_fail(__LINE__, m);
            ok = 0;
        } else if (memcmp(x->page_lo, y->page_lo, sizeof(x->page_lo[0]) * x->n) ||
                   memcmp(x->page_hi, y->page_hi, sizeof(x->page_hi[0]) * x->n)) {
            for (uint32_t j = 0; j < x->n; j++)
                if (x->page_lo[j] != y->page_lo[j] || x->page_hi[j] != y->page_hi[j]) {
                    snprintf(m, sizeof m, "row %s: process %d range 0x%llx: walker page size %u/%u -> %u/%u", row, k,
                             (unsigned long long)x->r[j].va, x->page_lo[j], x->page_hi[j], y->page_lo[j],
                             y->page_hi[j]);
                    row_fail(__LINE__, m);
                }
            ok = 0;
        }
        if (x->info.ranges != y->info.ranges || x->info.page_tables != y->info.page_tables ||
            x->info.page_table_bytes != y->info.page_table_bytes || x->info.faulted != y->info.faulted ||
            x->info.faults != y->info.faults) {
            snprintf(m, sizeof m, "row %s: process %d: ranges %llu -> %llu, page tables %llu -> %llu, bytes %llu -> %llu",
                     row, k, (unsigned long long)x->info.ranges, (unsigned long long)y->info.ranges,
                     (unsigned long long)x->info.page_tables, (unsigned long long)y->info.page_tables,
                     (unsigned long long)x->info.page_table_bytes, (unsigned long long)y->info.page_table_bytes);
            row_fail(__LINE__, m);
            ok = 0;
        }
    }
    for (int i = 0; i < SNAP_ADAPTERS; i++) {
        char rep[1024];
        int e = vidmm_adapter_check(c->ad[i].a, rep, sizeof rep);
        if (e) {
            fprintf(stderr, "row %s, adapter %d:\n%s", row, i, rep);
            ok = 0;
        }
        T_EQ(e, 0);
        T_EQ(softgpu_check(c->ad[i].sg), 0);
    }
    for (int i = 0; i < c->nseen; i++) {
        const struct seen *s = &c->seen[i];
        if (!gpu_sees(&c->ad[s->ad], s->proc, s->va, s->off, s->size, s->seed)) {
            snprintf(m, sizeof m, "row %s: mapping at 0x%llx no longer reads its bytes", row,
                     (unsigned long long)s->va);
            row_fail(__LINE__, m);
            ok = 0;
        }
    }
    return ok;
}

static void track(struct gb *c, int ad, vidmm_handle h)
{
    c->tracked[c->ntracked].ad = ad;
    c->tracked[c->ntracked].h = h;
    c->ntracked++;
}

static void see(struct gb *c, int ad, vidmm_handle proc, uint64_t va, uint64_t off, uint64_t size, uint64_t seed)
{
    struct seen s = { ad, proc, va, off, size, seed };
    T_CHECK(gpu_sees(&c->ad[ad], proc, va, off, size, seed));
    c->seen[c->nseen++] = s;
}

/* Make the process's device fault: a GPU write to an unmapped VA. */
static void fault(struct gfx *f, vidmm_handle proc, uint64_t va)
{
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(f->a, proc, &root), VIDMM_OK);
    unsigned char junk[16];
    memset(junk, 0x5A, sizeof junk);
    T_ST(softgpu_write_virtual(f->sg, &root, va, junk, sizeof junk), VIDMM_E_PAGE_FAULT);
    struct vidmm_process_info i;
    T_ST(vidmm_process_query(f->a, proc, &i), VIDMM_OK);
    T_EQ(i.faulted, 1);
}

/*
 * Layout of p (dgpu), 64 KiB-page segment 2, so 64 KB leaves where allowed:
 *   M  = 0x100000000  plain mapping of h [0, 256K)               (64 KB leaf)
 *   R  = 0x200000000  NO_ACCESS reservation, 1 MiB, with h [256K, 320K)
 *                     mapped at R + 256K                          (64 KB leaf)
 *   P  = R + 1 MiB    plain mapping of h [512K, 576K), right after R
 *   .. hole [P + 64K, R2)
 *   R2 = R + 2 MiB    NO_ACCESS reservation, 1 MiB (next leaf span: no tables)
 *   Z  = 0x300000000  ZERO reservation, 1 MiB                    (64 KB leaf)
 * Nothing below M: [64K, 0x100000000) is one hole.
 */
static int gb_setup(struct gb *c)
{
    memset(c, 0, sizeof(*c));
    int failures_before = t_current_failures();
    const char *presets[SNAP_ADAPTERS] = { "dgpu", "dgpu", "wddm1", "igpu" };
    for (int i = 0; i < SNAP_ADAPTERS; i++)
        if (gfx_open(&c->ad[i], presets[i]) < 0)
            return -1;
    struct vidmm_adapter *a = c->ad[0].a;
    uint64_t out = 0;
    /* Allocations: h is the first of adapter 0 (slot 0, generation 1). */
    c->h = alloc_in(a, B(2), MIB(1));
    c->hs = alloc_in(a, B(2), KIB(64));
    c->h_stale = alloc_in(a, B(2), KIB(64));
    T_ST(vidmm_allocation_destroy(a, c->h_stale), VIDMM_OK);
    pattern(a, c->h, 11);
    pattern(a, c->hs, 12);
    /* Processes: p slot 0, pf slot 1, x slot 2, y slot 3; x's slot is
     * reused by p2, y's is not (the handle table hands out the slot
     * freed last first, so y goes first). */
    vidmm_handle x = 0, y = 0;
    T_ST(vidmm_process_create(a, &c->p), VIDMM_OK);
    T_ST(vidmm_process_create(a, &c->pf), VIDMM_OK);
    T_ST(vidmm_process_create(a, &x), VIDMM_OK);
    T_ST(vidmm_process_create(a, &y), VIDMM_OK);
    T_ST(vidmm_process_destroy(a, y), VIDMM_OK);
    T_ST(vidmm_process_destroy(a, x), VIDMM_OK);
    T_ST(vidmm_process_create(a, &c->p2), VIDMM_OK);
    T_EQ(c->p2 & 0xFFFFFFu, x & 0xFFFFFFu);
    T_CHECK(c->p2 != x);
    c->stale_reused = x;
    c->stale = y;
    c->alloc_as_proc = c->h;
    /* The foreign ones: same slot and generation, another adapter. */
    T_ST(vidmm_process_create(c->ad[1].a, &c->pg), VIDMM_OK);
    c->hg = alloc_in(c->ad[1].a, B(2), MIB(1));
    T_EQ_U64(c->pg & SLOT_GEN_MASK, c->p & SLOT_GEN_MASK);
    T_EQ_U64(c->hg & SLOT_GEN_MASK, c->h & SLOT_GEN_MASK);
    T_CHECK(c->pg != c->p && c->hg != c->h);

    c->M = 0x100000000ull;
    c->R = 0x200000000ull;
    c->P = c->R + MIB(1);
    c->R2 = c->R + MIB(2);
    c->Z = 0x300000000ull;
    T_ST(vidmm_gpuva_map(a, c->p, c->M, 0, 0, c->h, 0, KIB(256), 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, c->p, c->R, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_NO_ACCESS, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_map(a, c->p, c->R + KIB(256), 0, 0, c->h, KIB(256), KIB(64), 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_map(a, c->p, c->P, 0, 0, c->h, KIB(512), KIB(64), 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, c->p, c->R2, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_NO_ACCESS, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, c->p, c->Z, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_ZERO, &out), VIDMM_OK);
    /* The preconditions the rows rely on. */
    T_EQ(gv_leaf_page_size(c->ad[0].a, c->ad[0].sg, c->p, c->M), 65536);
    T_EQ(gv_leaf_page_size(c->ad[0].a, c->ad[0].sg, c->p, c->R + KIB(256)), 65536);
    T_EQ(gv_leaf_page_size(c->ad[0].a, c->ad[0].sg, c->p, c->Z), 65536);
    struct vidmm_gpuva_range r[8];
    uint32_t n = 0;
    T_ST(vidmm_gpuva_query(a, c->p, 0, r, 8, &n), VIDMM_OK);
    T_EQ(n, 7);   /* M, R head, b(R), R tail, P, R2, Z */
    see(c, 0, c->p, c->M, 0, KIB(256), 11);
    see(c, 0, c->p, c->R + KIB(256), KIB(256), KIB(64), 11);
    see(c, 0, c->p, c->P, KIB(512), KIB(64), 11);
    see(c, 0, c->p, c->Z, 0, KIB(64), 0);
    /* pf: a mapping and a reservation, then a fault. */
    T_ST(vidmm_gpuva_map(a, c->pf, c->M, 0, 0, c->hs, 0, KIB(64), 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, c->pf, c->R, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_NO_ACCESS, &out), VIDMM_OK);
    see(c, 0, c->pf, c->M, 0, KIB(64), 12);
    fault(&c->ad[0], c->pf, 0x400000000ull);
    /* p2 maps hs too (an allocation mapped in two processes). */
    T_ST(vidmm_gpuva_map(a, c->p2, c->M, 0, 0, c->hs, 0, KIB(64), 0, 0, &out), VIDMM_OK);
    see(c, 0, c->p2, c->M, 0, KIB(64), 12);

    /* wddm1: 4 KiB pages; pw has a reservation and a mapping; pwf faulted. */
    struct vidmm_adapter *w = c->ad[2].a;
    c->hw = alloc_in(w, B(1) | B(2), KIB(256));
    pattern(w, c->hw, 21);
    c->Rw = 0x10000000ull;
    c->Mw = 0x20000000ull;
    T_ST(vidmm_process_create(w, &c->pw), VIDMM_OK);
    T_ST(vidmm_process_create(w, &c->pwf), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(w, c->pw, c->Rw, 0, 0, KIB(256), VIDMM_GPUVA_RESERVE_NO_ACCESS, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_map(w, c->pw, c->Mw, 0, 0, c->hw, 0, KIB(256), 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_map(w, c->pwf, c->Mw, 0, 0, c->hw, 0, KIB(64), 0, 0, &out), VIDMM_OK);
    see(c, 2, c->pw, c->Mw, 0, KIB(256), 21);
    see(c, 2, c->pwf, c->Mw, 0, KIB(64), 21);
    fault(&c->ad[2], c->pwf, c->Rw);

    /* igpu: the mapping's GPU VA is the CPU address of the system pages. */
    struct vidmm_adapter *ig = c->ad[3].a;
    c->hi = alloc_in(ig, B(1), KIB(256));
    void *cpu = NULL;
    T_ST(vidmm_allocation_lock(ig, c->hi, &cpu), VIDMM_OK);
    T_ST(vidmm_allocation_unlock(ig, c->hi), VIDMM_OK);
    c->cpu_i = (uint64_t)(uintptr_t)cpu;
    T_ST(vidmm_process_create(ig, &c->pi), VIDMM_OK);
    T_ST(vidmm_gpuva_map(ig, c->pi, 0, 0, 0, c->hi, 0, KIB(64), 0, 0, &out), VIDMM_OK);
    T_EQ_U64(out, c->cpu_i);

    track(c, 0, c->p);
    track(c, 0, c->pf);
    track(c, 0, c->p2);
    track(c, 1, c->pg);
    track(c, 2, c->pw);
    track(c, 2, c->pwf);
    track(c, 3, c->pi);
    return t_current_failures() != failures_before ? -1 : 0;
}

static void gb_close(struct gb *c)
{
    for (int i = 0; i < SNAP_ADAPTERS; i++)
        gfx_close(&c->ad[i]);
}

/* ---- update op builders --------------------------------------------- */

static struct vidmm_gpuva_update_op op_map(uint64_t va, uint64_t size, vidmm_handle al, uint64_t off, uint32_t prot)
{
    struct vidmm_gpuva_update_op o;
    memset(&o, 0, sizeof o);
    o.type = VIDMM_GPUVA_UPDATE_MAP;
    o.va = va;
    o.size = size;
    o.allocation = al;
    o.offset = off;
    o.protection = prot;
    return o;
}

static struct vidmm_gpuva_update_op op_unmap(uint64_t va, uint64_t size, uint32_t mode)
{
    struct vidmm_gpuva_update_op o;
    memset(&o, 0, sizeof o);
    o.type = VIDMM_GPUVA_UPDATE_UNMAP;
    o.va = va;
    o.size = size;
    o.unmap_mode = mode;
    return o;
}

static struct vidmm_gpuva_update_op op_copy(uint64_t dst, uint64_t src, uint64_t size)
{
    struct vidmm_gpuva_update_op o;
    memset(&o, 0, sizeof o);
    o.type = VIDMM_GPUVA_UPDATE_COPY;
    o.va = dst;
    o.source = src;
    o.size = size;
    return o;
}

static struct vidmm_gpuva_update_op op_type(uint32_t type, uint64_t va, uint64_t size)
{
    struct vidmm_gpuva_update_op o = op_unmap(va, size, 0);
    o.type = type;
    return o;
}

#define UPD(A, P, ...) \
    vidmm_gpuva_update((A), (P), (const struct vidmm_gpuva_update_op[]){ __VA_ARGS__ }, \
                       (uint32_t)(sizeof((const struct vidmm_gpuva_update_op[]){ __VA_ARGS__ }) / \
                                  sizeof(struct vidmm_gpuva_update_op)))

/* A batch that is valid on p (applied for real after the table). */
#define GOOD_OPS(c) op_map((c)->R, KIB(64), (c)->h, 0, 0), op_copy((c)->R + KIB(512), (c)->R + KIB(256), KIB(64)), \
                    op_unmap((c)->R + KIB(128), KIB(64), VIDMM_GPUVA_RESERVE_ZERO)

/* ---- rows ------------------------------------------------------------ */

#define A0 c->ad[0].a
#define A2 c->ad[2].a
#define A3 c->ad[3].a
#define LIM c->ad[0].limit
#define TOP 0xFFFFFFFFFFFF0000ull /* + 64 KiB wraps to 0 */

#define ROW(fn, expr) static vidmm_status fn(struct gb *c) { (void)c; return (expr); }

/* process_create (state-changing successes are tested elsewhere) */
static vidmm_status create_checked(struct gb *c, struct vidmm_adapter *a, vidmm_handle *out)
{
    if (out)
        *out = 0xDEADull;
    vidmm_status st = vidmm_process_create(a, out);
    if (st < 0 && a && out)
        T_EQ_U64(*out, VIDMM_HANDLE_NULL); /* a failed create hands out nothing */
    if (st >= 0 && out)
        (void)vidmm_process_destroy(a, *out);
    (void)c;
    return st;
}
ROW(create_null_adapter, create_checked(c, NULL, &c->hout))
ROW(create_null_out, vidmm_process_create(A0, NULL))
/* process_destroy */
ROW(destroy_null_adapter, vidmm_process_destroy(NULL, c->p))
ROW(destroy_handle_0, vidmm_process_destroy(A0, VIDMM_HANDLE_NULL))
ROW(destroy_stale, vidmm_process_destroy(A0, c->stale))
ROW(destroy_stale_slot_reused, vidmm_process_destroy(A0, c->stale_reused))
ROW(destroy_allocation_handle, vidmm_process_destroy(A0, c->alloc_as_proc))
ROW(destroy_all_ones, vidmm_process_destroy(A0, UINT64_MAX))
ROW(destroy_foreign, vidmm_process_destroy(A0, c->pg))
ROW(destroy_forged_salt, vidmm_process_destroy(A0, c->p ^ (1ull << 40)))
ROW(destroy_slot_256, vidmm_process_destroy(A0, (c->p & ~0xFFFFFFull) | 256u))   /* a slot never handed out */
/* process_query */
ROW(pquery_null_adapter, vidmm_process_query(NULL, c->p, &c->info))
ROW(pquery_null_out, vidmm_process_query(A0, c->p, NULL))
ROW(pquery_handle_0, vidmm_process_query(A0, 0, &c->info))
ROW(pquery_stale, vidmm_process_query(A0, c->stale, &c->info))
ROW(pquery_stale_slot_reused, vidmm_process_query(A0, c->stale_reused, &c->info))
ROW(pquery_allocation_handle, vidmm_process_query(A0, c->alloc_as_proc, &c->info))
ROW(pquery_foreign, vidmm_process_query(A0, c->pg, &c->info))
/* process_root_page_table */
ROW(root_null_adapter, vidmm_process_root_page_table(NULL, c->p, &c->root))
ROW(root_null_out, vidmm_process_root_page_table(A0, c->p, NULL))
ROW(root_handle_0, vidmm_process_root_page_table(A0, 0, &c->root))
ROW(root_stale, vidmm_process_root_page_table(A0, c->stale, &c->root))
ROW(root_stale_slot_reused, vidmm_process_root_page_table(A0, c->stale_reused, &c->root))
ROW(root_allocation_handle, vidmm_process_root_page_table(A0, c->alloc_as_proc, &c->root))
ROW(root_foreign, vidmm_process_root_page_table(A0, c->pg, &c->root))
ROW(root_iommu, vidmm_process_root_page_table(A3, c->pi, &c->root))
/* gpuva_query */
ROW(vquery_null_adapter, vidmm_gpuva_query(NULL, c->p, 0, c->rr, 4, &c->n))
ROW(vquery_null_count, vidmm_gpuva_query(A0, c->p, 0, c->rr, 4, NULL))
ROW(vquery_null_ranges, vidmm_gpuva_query(A0, c->p, 0, NULL, 4, &c->n))
ROW(vquery_handle_0, vidmm_gpuva_query(A0, 0, 0, c->rr, 4, &c->n))
ROW(vquery_stale, vidmm_gpuva_query(A0, c->stale, 0, c->rr, 4, &c->n))
ROW(vquery_stale_slot_reused, vidmm_gpuva_query(A0, c->stale_reused, 0, c->rr, 4, &c->n))
ROW(vquery_allocation_handle, vidmm_gpuva_query(A0, c->alloc_as_proc, 0, c->rr, 4, &c->n))
ROW(vquery_foreign, vidmm_gpuva_query(A0, c->pg, 0, c->rr, 4, &c->n))
static vidmm_status vquery_cap0_null_ranges(struct gb *c)
{
    c->n = 77;
    vidmm_status st = vidmm_gpuva_query(A0, c->p, 0, NULL, 0, &c->n);
    T_EQ(c->n, 0);
    return st;
}
static vidmm_status vquery_past_limit(struct gb *c)
{
    c->n = 77;
    vidmm_status st = vidmm_gpuva_query(A0, c->p, UINT64_MAX, c->rr, 4, &c->n);
    T_EQ(c->n, 0);
    return st;
}

/* gpuva_reserve */
#define RSV(P, base, min, max, size, mode) vidmm_gpuva_reserve(A0, (P), (base), (min), (max), (size), (mode), &c->out)
ROW(reserve_null_adapter, vidmm_gpuva_reserve(NULL, c->p, 0, 0, 0, MIB(1), 0, &c->out))
ROW(reserve_null_va, vidmm_gpuva_reserve(A0, c->p, 0, 0, 0, MIB(1), 0, NULL))
ROW(reserve_handle_0, RSV(0, 0, 0, 0, MIB(1), 0))
ROW(reserve_stale, RSV(c->stale, 0, 0, 0, MIB(1), 0))
ROW(reserve_stale_slot_reused, RSV(c->stale_reused, 0, 0, 0, MIB(1), 0))
ROW(reserve_allocation_handle, RSV(c->alloc_as_proc, 0, 0, 0, MIB(1), 0))
ROW(reserve_foreign, RSV(c->pg, 0, 0, 0, MIB(1), 0))
ROW(reserve_size_0_anywhere, RSV(c->p, 0, 0, 0, 0, 0))
ROW(reserve_size_0_fixed, RSV(c->p, 0x500000000ull, 0, 0, 0, 0))
ROW(reserve_size_0_zero_mode, RSV(c->p, 0x500000000ull, 0, 0, 0, VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_mode_2, RSV(c->p, 0, 0, 0, MIB(1), 2))
ROW(reserve_mode_max, RSV(c->p, 0x500000000ull, 0, 0, MIB(1), UINT32_MAX))
ROW(reserve_base_4k, RSV(c->p, 0x500001000ull, 0, 0, MIB(1), 0))
ROW(reserve_base_4k_zero_mode, RSV(c->p, 0x500001000ull, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_base_odd, RSV(c->p, 0x500000001ull, 0, 0, MIB(1), 0))
ROW(reserve_size_4k_fixed, RSV(c->p, 0x500000000ull, 0, 0, KIB(4), 0))
ROW(reserve_size_4k_anywhere, RSV(c->p, 0, 0, 0, KIB(68), 0))
ROW(reserve_size_4k_zero_mode, RSV(c->p, 0x500000000ull, 0, 0, KIB(68), VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_min_4k, RSV(c->p, 0, 0x500001000ull, 0, MIB(1), 0))
ROW(reserve_max_4k, RSV(c->p, 0, 0, 0x600001000ull, MIB(1), 0))
ROW(reserve_overflow, RSV(c->p, TOP, 0, 0, KIB(64), 0))
ROW(reserve_overflow_zero_mode, RSV(c->p, TOP, 0, 0, KIB(64), VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_overflow_big, RSV(c->p, 0x500000000ull, 0, 0, TOP, 0))
ROW(reserve_past_limit, RSV(c->p, LIM - KIB(64), 0, 0, KIB(128), 0))
ROW(reserve_past_limit_zero_mode, RSV(c->p, LIM - KIB(64), 0, 0, KIB(128), VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_at_limit, RSV(c->p, LIM, 0, 0, KIB(64), 0))
ROW(reserve_bit63, RSV(c->p, 1ull << 63, 0, 0, KIB(64), 0))
ROW(reserve_min_gt_max, RSV(c->p, 0, 0x600000000ull, 0x500000000ull, KIB(64), 0))
ROW(reserve_min_eq_max, RSV(c->p, 0, 0x500000000ull, 0x500000000ull, KIB(64), 0))
ROW(reserve_min_at_limit, RSV(c->p, 0, LIM, 0, KIB(64), 0))
ROW(reserve_max_in_guard, RSV(c->p, 0, 0, KIB(64), KIB(64), 0))
ROW(reserve_window_too_small, RSV(c->p, 0, 0x500000000ull, 0x500000000ull + KIB(64), KIB(128), 0))
ROW(reserve_window_full, RSV(c->p, 0, c->R, c->R + MIB(1), KIB(64), 0))
ROW(reserve_larger_than_space, RSV(c->p, 0, 0, 0, LIM, 0))
ROW(reserve_busy_exact, RSV(c->p, c->R, 0, 0, MIB(1), 0))
ROW(reserve_busy_head, RSV(c->p, c->R - KIB(64), 0, 0, KIB(128), 0))
ROW(reserve_busy_mapping_inside_reservation, RSV(c->p, c->R + KIB(256), 0, 0, KIB(64), 0))
ROW(reserve_busy_plain_mapping, RSV(c->p, c->M, 0, 0, KIB(64), 0))
ROW(reserve_busy_covering, RSV(c->p, c->M - MIB(1), 0, 0, MIB(4), 0))
ROW(reserve_busy_zero_mode, RSV(c->p, c->R - KIB(64), 0, 0, KIB(128), VIDMM_GPUVA_RESERVE_ZERO))
ROW(reserve_busy_zero_over_zero, RSV(c->p, c->Z, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_ZERO))

/* gpuva_map (h: 1 MiB in segment 2) */
#define MAP(P, base, min, max, al, off, size, prot) \
    vidmm_gpuva_map(A0, (P), (base), (min), (max), (al), (off), (size), (prot), 0, &c->out)
#define FREE_VA 0x500000000ull
ROW(map_null_adapter, vidmm_gpuva_map(NULL, c->p, FREE_VA, 0, 0, c->h, 0, KIB(64), 0, 0, &c->out))
ROW(map_null_va, vidmm_gpuva_map(A0, c->p, FREE_VA, 0, 0, c->h, 0, KIB(64), 0, 0, NULL))
ROW(map_handle_0, MAP(0, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_stale, MAP(c->stale, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_stale_slot_reused, MAP(c->stale_reused, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_allocation_as_process, MAP(c->alloc_as_proc, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_foreign_process, MAP(c->pg, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_allocation_0, MAP(c->p, FREE_VA, 0, 0, 0, 0, KIB(64), 0))
ROW(map_allocation_stale, MAP(c->p, FREE_VA, 0, 0, c->h_stale, 0, KIB(64), 0))
ROW(map_process_as_allocation, MAP(c->p, FREE_VA, 0, 0, c->p, 0, KIB(64), 0))
ROW(map_foreign_allocation, MAP(c->p, FREE_VA, 0, 0, c->hg, 0, KIB(64), 0))
ROW(map_size_0, MAP(c->p, FREE_VA, 0, 0, c->h, 0, 0, 0))
ROW(map_size_0_anywhere, MAP(c->p, 0, 0, 0, c->h, 0, 0, 0))
ROW(map_size_4095, MAP(c->p, FREE_VA, 0, 0, c->h, 0, 4095, 0))
ROW(map_size_4097, MAP(c->p, 0, 0, 0, c->h, 0, 4097, 0))
ROW(map_base_unaligned, MAP(c->p, FREE_VA + 512, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_offset_unaligned, MAP(c->p, FREE_VA, 0, 0, c->h, 100, KIB(64), 0))
ROW(map_min_unaligned, MAP(c->p, 0, FREE_VA + 1, 0, c->h, 0, KIB(64), 0))
ROW(map_max_unaligned, MAP(c->p, 0, 0, FREE_VA + 0x800, c->h, 0, KIB(64), 0))
ROW(map_guard_page_0, MAP(c->p, 0x1000, 0, 0, c->h, 0, KIB(4), 0))
ROW(map_guard_last_page, MAP(c->p, 0xF000, 0, 0, c->h, 0, KIB(4), 0))
ROW(map_guard_straddle, MAP(c->p, 0xF000, 0, 0, c->h, 0, KIB(8), 0))
ROW(map_overflow, MAP(c->p, TOP, 0, 0, c->h, 0, KIB(64), 0))
ROW(map_past_limit, MAP(c->p, LIM - KIB(4), 0, 0, c->h, 0, KIB(8), 0))
ROW(map_at_limit, MAP(c->p, LIM, 0, 0, c->h, 0, KIB(4), 0))
ROW(map_bit63, MAP(c->p, 1ull << 63, 0, 0, c->h, 0, KIB(4), 0))
ROW(map_min_gt_max, MAP(c->p, 0, 0x600000000ull, 0x500000000ull, c->h, 0, KIB(64), 0))
ROW(map_min_eq_max, MAP(c->p, 0, 0x500000000ull, 0x500000000ull, c->h, 0, KIB(64), 0))
ROW(map_min_at_limit, MAP(c->p, 0, LIM, 0, c->h, 0, KIB(64), 0))
ROW(map_max_in_guard, MAP(c->p, 0, 0, KIB(64), c->h, 0, KIB(4), 0))
ROW(map_window_too_small, MAP(c->p, 0, FREE_VA, FREE_VA + KIB(4), c->h, 0, KIB(64), 0))
ROW(map_window_all_reserved, MAP(c->p, 0, c->R2, c->R2 + MIB(1), c->h, 0, KIB(64), 0))
ROW(map_offset_at_end, MAP(c->p, FREE_VA, 0, 0, c->h, MIB(1), KIB(4), 0))
ROW(map_offset_past_end, MAP(c->p, FREE_VA, 0, 0, c->h, MIB(2), KIB(4), 0))
ROW(map_offset_plus_size_past_end, MAP(c->p, FREE_VA, 0, 0, c->h, MIB(1) - KIB(4), KIB(8), 0))
ROW(map_size_past_end, MAP(c->p, FREE_VA, 0, 0, c->h, 0, MIB(1) + KIB(4), 0))
ROW(map_offset_huge, MAP(c->p, FREE_VA, 0, 0, c->h, 0x7FFFFFFFFFFFF000ull, KIB(4), 0)) /* beyond the allocation, no wrap */
/* BUG-4 (fixed; see the end of the file): offset + size wraps.
 * status.h: OVERFLOW is "size/offset arithmetic overflows"; VA_SPACE.md
 * lists "object_offset + size" under OVERFLOW for map and orders overflow
 * before range checks.  process.c answered INVALID_ARG. */
ROW(map_offset_plus_size_wraps, MAP(c->p, FREE_VA, 0, 0, c->h, KIB(4), 0xFFFFFFFFFFFFF000ull, 0))
ROW(map_prot_unknown_bit, MAP(c->p, FREE_VA, 0, 0, c->h, 0, KIB(64), 0x4))
ROW(map_prot_high_bit, MAP(c->p, FREE_VA, 0, 0, c->h, 0, KIB(64), 0x80000000u))
ROW(map_busy_reserved_then_hole, MAP(c->p, c->R2 + MIB(1) - KIB(64), 0, 0, c->h, 0, KIB(128), 0))
ROW(map_busy_hole_then_reserved, MAP(c->p, c->R - KIB(64), 0, 0, c->h, 0, KIB(128), 0))
ROW(map_busy_reserved_then_plain, MAP(c->p, c->R + MIB(1) - KIB(64), 0, 0, c->h, 0, KIB(128), 0))
ROW(map_busy_reserved_plain_hole, MAP(c->p, c->R + MIB(1) - KIB(64), 0, 0, c->h, 0, KIB(192), 0))
ROW(map_busy_hole_then_reserved_same_leaf, MAP(c->p, c->R2 - KIB(64), 0, 0, c->h, 0, KIB(128), 0))
ROW(map_busy_zero_then_hole, MAP(c->p, c->Z + MIB(1) - KIB(4), 0, 0, c->h, 0, KIB(8), 0))
ROW(map_busy_4k_hole_then_reserved, MAP(c->p, c->R - KIB(4), 0, 0, c->h, 0, KIB(8), 0))

/* gpuva_unmap */
#define UNMAP(P, va, size) vidmm_gpuva_unmap(A0, (P), (va), (size))
ROW(unmap_null_adapter, vidmm_gpuva_unmap(NULL, c->p, c->M, KIB(64)))
ROW(unmap_handle_0, UNMAP(0, c->M, KIB(64)))
ROW(unmap_stale, UNMAP(c->stale, c->M, KIB(64)))
ROW(unmap_stale_slot_reused, UNMAP(c->stale_reused, c->M, KIB(64)))
ROW(unmap_allocation_handle, UNMAP(c->alloc_as_proc, c->M, KIB(64)))
ROW(unmap_foreign, UNMAP(c->pg, c->M, KIB(64)))
ROW(unmap_size_0, UNMAP(c->p, c->M, 0))
ROW(unmap_va_unaligned, UNMAP(c->p, c->M + 512, KIB(64)))
ROW(unmap_size_unaligned, UNMAP(c->p, c->M, KIB(64) + 1))
ROW(unmap_guard, UNMAP(c->p, 0, KIB(4)))
ROW(unmap_guard_straddle, UNMAP(c->p, 0xF000, KIB(8)))
ROW(unmap_overflow, UNMAP(c->p, 0xFFFFFFFFFFFFF000ull, KIB(8)))
ROW(unmap_overflow_size, UNMAP(c->p, c->M, 0xFFFFFFFFFFFFF000ull))
ROW(unmap_past_limit, UNMAP(c->p, LIM - KIB(4), KIB(8)))
ROW(unmap_at_limit, UNMAP(c->p, LIM, KIB(4)))
/* Not errors, and they change nothing (VA_SPACE.md, "Unmap" case 9). */
ROW(unmap_hole_is_noop, UNMAP(c->p, FREE_VA, MIB(1)))
ROW(unmap_reserved_only_is_noop, UNMAP(c->p, c->R2, MIB(1)))
ROW(unmap_zero_reserved_only_is_noop, UNMAP(c->p, c->Z, MIB(1)))
ROW(unmap_4k_zero_reserved_only_is_noop, UNMAP(c->p, c->Z + KIB(4), KIB(4)))
ROW(unmap_4k_hole_is_noop, UNMAP(c->p, c->M + KIB(256), KIB(4)))

/* gpuva_free */
#define FREE(P, va, size) vidmm_gpuva_free(A0, (P), (va), (size))
ROW(free_null_adapter, vidmm_gpuva_free(NULL, c->p, c->R2, MIB(1)))
ROW(free_handle_0, FREE(0, c->R2, MIB(1)))
ROW(free_stale, FREE(c->stale, c->R2, MIB(1)))
ROW(free_stale_slot_reused, FREE(c->stale_reused, c->R2, MIB(1)))
ROW(free_allocation_handle, FREE(c->alloc_as_proc, c->R2, MIB(1)))
ROW(free_foreign, FREE(c->pg, c->R2, MIB(1)))
ROW(free_size_0, FREE(c->p, c->R2, 0))
ROW(free_va_unaligned, FREE(c->p, c->R2 + 8, MIB(1)))
ROW(free_size_unaligned, FREE(c->p, c->R2, MIB(1) - 1))
ROW(free_guard, FREE(c->p, 0, KIB(4)))
ROW(free_guard_straddle, FREE(c->p, 0xF000, KIB(8)))
ROW(free_overflow, FREE(c->p, 0xFFFFFFFFFFFFF000ull, KIB(8)))
ROW(free_past_limit, FREE(c->p, LIM - KIB(4), KIB(8)))
ROW(free_all_hole, FREE(c->p, FREE_VA, MIB(1)))
ROW(free_hole_after_plain, FREE(c->p, c->R, MIB(1) + KIB(128)))
ROW(free_hole_between_reservations, FREE(c->p, c->R, MIB(3)))
ROW(free_hole_before, FREE(c->p, c->R - KIB(64), KIB(128)))
ROW(free_hole_after_zero, FREE(c->p, c->Z, MIB(1) + KIB(64)))
/* Cuts inside 64 KB leaves: rejected before anything may change. */
ROW(free_hole_after_plain_4k, FREE(c->p, c->M + KIB(4), KIB(256)))
ROW(free_reservation_4k_granular, FREE(c->p, c->R + KIB(4), KIB(64)))
ROW(free_zero_reservation_4k_granular, FREE(c->p, c->Z + KIB(4), KIB(64)))
ROW(free_zero_reservation_4k_size, FREE(c->p, c->Z, KIB(4)))

/* gpuva_update (R: NO_ACCESS with h mapped at R + 256K; R2: NO_ACCESS) */
ROW(update_null_adapter, vidmm_gpuva_update(NULL, c->p, (const struct vidmm_gpuva_update_op[]){ GOOD_OPS(c) }, 3))
ROW(update_handle_0, UPD(A0, 0, GOOD_OPS(c)))
ROW(update_stale, UPD(A0, c->stale, GOOD_OPS(c)))
ROW(update_stale_slot_reused, UPD(A0, c->stale_reused, GOOD_OPS(c)))
ROW(update_allocation_handle, UPD(A0, c->alloc_as_proc, GOOD_OPS(c)))
ROW(update_foreign, UPD(A0, c->pg, GOOD_OPS(c)))
ROW(update_count_0, vidmm_gpuva_update(A0, c->p, (const struct vidmm_gpuva_update_op[]){ GOOD_OPS(c) }, 0))
ROW(update_count_0_null_ops, vidmm_gpuva_update(A0, c->p, NULL, 0))
ROW(update_null_ops, vidmm_gpuva_update(A0, c->p, NULL, 3))
ROW(update_type_3, UPD(A0, c->p, op_type(3, c->R, KIB(64))))
ROW(update_type_max, UPD(A0, c->p, op_type(UINT32_MAX, c->R, KIB(64))))
ROW(update_size_0_unmap, UPD(A0, c->p, op_unmap(c->R, 0, 0)))
ROW(update_size_0_map, UPD(A0, c->p, op_map(c->R, 0, c->h, 0, 0)))
ROW(update_size_0_copy, UPD(A0, c->p, op_copy(c->R, c->R + KIB(256), 0)))
ROW(update_map_allocation_0, UPD(A0, c->p, op_map(c->R, KIB(64), 0, 0, 0)))
ROW(update_map_allocation_stale, UPD(A0, c->p, op_map(c->R, KIB(64), c->h_stale, 0, 0)))
ROW(update_map_process_as_allocation, UPD(A0, c->p, op_map(c->R, KIB(64), c->p, 0, 0)))
ROW(update_map_foreign_allocation, UPD(A0, c->p, op_map(c->R, KIB(64), c->hg, 0, 0)))
ROW(update_map_prot, UPD(A0, c->p, op_map(c->R, KIB(64), c->h, 0, 0x4)))
ROW(update_map_offset_unaligned, UPD(A0, c->p, op_map(c->R, KIB(64), c->h, 8, 0)))
ROW(update_map_offset_past_end, UPD(A0, c->p, op_map(c->R, KIB(64), c->h, MIB(1), 0)))
ROW(update_map_size_past_end, UPD(A0, c->p, op_map(c->R, MIB(1), c->h, KIB(64), 0)))
ROW(update_unmap_mode_2, UPD(A0, c->p, op_unmap(c->R, KIB(64), 2)))
ROW(update_va_unaligned, UPD(A0, c->p, op_unmap(c->R + 8, KIB(64), 0)))
ROW(update_size_unaligned, UPD(A0, c->p, op_unmap(c->R, KIB(64) + 8, 0)))
ROW(update_overflow, UPD(A0, c->p, op_unmap(0xFFFFFFFFFFFFF000ull, KIB(8), 0)))
ROW(update_guard, UPD(A0, c->p, op_unmap(0x1000, KIB(4), 0)))
ROW(update_past_limit, UPD(A0, c->p, op_unmap(LIM - KIB(4), KIB(8), 0)))
ROW(update_target_in_hole, UPD(A0, c->p, op_unmap(FREE_VA, KIB(64), 0)))
ROW(update_target_plain_mapping, UPD(A0, c->p, op_unmap(c->M, KIB(64), 0)))
ROW(update_target_zero_reservation_and_hole, UPD(A0, c->p, op_unmap(c->Z + MIB(1) - KIB(4), KIB(8), 0)))
ROW(update_target_reservation_and_plain, UPD(A0, c->p, op_unmap(c->R + MIB(1) - KIB(64), KIB(128), 0)))
ROW(update_target_hole_then_reservation, UPD(A0, c->p, op_map(c->R - KIB(64), KIB(128), c->h, 0, 0)))
ROW(update_targets_two_reservations, UPD(A0, c->p, op_unmap(c->R, KIB(64), 0), op_unmap(c->R2, KIB(64), 0)))
ROW(update_map_targets_two_reservations, UPD(A0, c->p, op_map(c->R, KIB(64), c->h, 0, 0),
                                              op_map(c->R2, KIB(64), c->h, 0, 0)))
ROW(update_copy_source_in_hole, UPD(A0, c->p, op_copy(c->R, FREE_VA, KIB(64))))
ROW(update_copy_source_plain, UPD(A0, c->p, op_copy(c->R, c->M, KIB(64))))
ROW(update_copy_source_unaligned, UPD(A0, c->p, op_copy(c->R, c->R + KIB(256) + 8, KIB(64))))
ROW(update_copy_source_overflow, UPD(A0, c->p, op_copy(c->R, 0xFFFFFFFFFFFFF000ull, KIB(8))))
ROW(update_copy_source_guard, UPD(A0, c->p, op_copy(c->R, 0x1000, KIB(4))))
ROW(update_copy_source_past_limit, UPD(A0, c->p, op_copy(c->R, LIM - KIB(4), KIB(8))))
ROW(update_copy_sources_two_reservations, UPD(A0, c->p, op_copy(c->R, c->R + KIB(256), KIB(64)),
                                               op_copy(c->R + KIB(64), c->R2, KIB(64))))
ROW(update_copy_source_reservation_and_plain, UPD(A0, c->p, op_copy(c->R, c->R + MIB(1) - KIB(64), KIB(128))))
ROW(update_copy_dest_outside, UPD(A0, c->p, op_copy(FREE_VA, c->R + KIB(256), KIB(64))))
/* One bad op among good ones: nothing of the good ones is applied. */
ROW(update_good_then_bad_type, UPD(A0, c->p, GOOD_OPS(c), op_type(7, c->R, KIB(64))))
ROW(update_good_then_bad_prot, UPD(A0, c->p, GOOD_OPS(c), op_map(c->R, KIB(64), c->h, 0, 0x10)))
ROW(update_good_then_bad_alloc, UPD(A0, c->p, GOOD_OPS(c), op_map(c->R, KIB(64), c->h_stale, 0, 0)))
ROW(update_good_then_unaligned, UPD(A0, c->p, GOOD_OPS(c), op_unmap(c->R + KIB(4) + 1, KIB(4), 0)))
ROW(update_good_then_outside, UPD(A0, c->p, GOOD_OPS(c), op_unmap(c->R2, KIB(64), 0)))
ROW(update_bad_then_good, UPD(A0, c->p, op_unmap(c->R, KIB(64), 9), GOOD_OPS(c)))
ROW(update_good_then_copy_from_hole, UPD(A0, c->p, GOOD_OPS(c), op_copy(c->R, FREE_VA, KIB(64))))

/* Faulted process (pf on dgpu, pwf on wddm1): every VA change is
 * DEVICE_LOST, even when it would be valid. */
ROW(lost_reserve, RSV(c->pf, FREE_VA, 0, 0, MIB(1), 0))
ROW(lost_reserve_zero, RSV(c->pf, FREE_VA, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_ZERO))
ROW(lost_reserve_anywhere, RSV(c->pf, 0, 0, 0, MIB(1), 0))
ROW(lost_map, MAP(c->pf, FREE_VA, 0, 0, c->h, 0, KIB(64), 0))
ROW(lost_map_anywhere, MAP(c->pf, 0, 0, 0, c->h, 0, KIB(64), 0))
ROW(lost_map_in_reservation, MAP(c->pf, c->R, 0, 0, c->h, 0, KIB(64), 0))
ROW(lost_unmap, UNMAP(c->pf, c->M, KIB(64)))
ROW(lost_unmap_4k, UNMAP(c->pf, c->M + KIB(4), KIB(4)))
ROW(lost_free_reservation, FREE(c->pf, c->R, MIB(1)))
ROW(lost_free_mapping, FREE(c->pf, c->M, KIB(64)))
ROW(lost_update, UPD(A0, c->pf, op_map(c->R, KIB(64), c->h, 0, 0)))
ROW(lost_w_reserve, vidmm_gpuva_reserve(A2, c->pwf, 0, 0, 0, KIB(64), 0, &c->out))
ROW(lost_w_map, vidmm_gpuva_map(A2, c->pwf, 0, 0, 0, c->hw, 0, KIB(4), 0, 0, &c->out))
ROW(lost_w_unmap, vidmm_gpuva_unmap(A2, c->pwf, c->Mw, KIB(4)))
ROW(lost_w_free, vidmm_gpuva_free(A2, c->pwf, c->Mw, KIB(64)))
ROW(lost_w_update, vidmm_gpuva_update(A2, c->pwf, (const struct vidmm_gpuva_update_op[]){ op_unmap(c->Rw, KIB(4), 0) }, 1))
/* The observers still answer on a faulted process. */
ROW(lost_process_query, vidmm_process_query(A0, c->pf, &c->info))
ROW(lost_gpuva_query, vidmm_gpuva_query(A0, c->pf, 0, c->rr, 4, &c->n))
ROW(lost_root, vidmm_process_root_page_table(A0, c->pf, &c->root))

/* wddm1 (GpuMmu, 4 KiB pages): reservations stay 64 KiB granular. */
ROW(w_reserve_base_4k, vidmm_gpuva_reserve(A2, c->pw, 0x30001000ull, 0, 0, KIB(64), 0, &c->out))
ROW(w_reserve_size_4k, vidmm_gpuva_reserve(A2, c->pw, 0, 0, 0, KIB(4), 0, &c->out))
ROW(w_reserve_busy, vidmm_gpuva_reserve(A2, c->pw, c->Rw, 0, 0, KIB(64), 0, &c->out))
ROW(w_reserve_past_limit, vidmm_gpuva_reserve(A2, c->pw, c->ad[2].limit - KIB(64), 0, 0, KIB(128), 0, &c->out))
ROW(w_map_guard, vidmm_gpuva_map(A2, c->pw, 0x8000, 0, 0, c->hw, 0, KIB(4), 0, 0, &c->out))
ROW(w_map_unaligned, vidmm_gpuva_map(A2, c->pw, 0x30000800ull, 0, 0, c->hw, 0, KIB(4), 0, 0, &c->out))
ROW(w_map_busy, vidmm_gpuva_map(A2, c->pw, c->Rw - KIB(4), 0, 0, c->hw, 0, KIB(8), 0, 0, &c->out))
ROW(w_map_offset_past_end, vidmm_gpuva_map(A2, c->pw, 0x30000000ull, 0, 0, c->hw, KIB(256), KIB(4), 0, 0, &c->out))
ROW(w_free_hole, vidmm_gpuva_free(A2, c->pw, c->Rw, KIB(320)))
ROW(w_free_reservation_4k, vidmm_gpuva_free(A2, c->pw, c->Rw + KIB(4), KIB(64)))
ROW(w_unmap_past_limit, vidmm_gpuva_unmap(A2, c->pw, c->ad[2].limit - KIB(4), KIB(8)))
ROW(w_update_outside, vidmm_gpuva_update(A2, c->pw, (const struct vidmm_gpuva_update_op[]){ op_unmap(c->Rw + KIB(192), KIB(128), 0) }, 1))
ROW(w_update_plain, vidmm_gpuva_update(A2, c->pw, (const struct vidmm_gpuva_update_op[]){ op_unmap(c->Mw, KIB(4), 0) }, 1))

/* igpu (IoMmu) */
ROW(i_reserve, vidmm_gpuva_reserve(A3, c->pi, 0, 0, 0, MIB(1), 0, &c->out))
ROW(i_reserve_fixed, vidmm_gpuva_reserve(A3, c->pi, 0x10000000ull, 0, 0, MIB(1), VIDMM_GPUVA_RESERVE_ZERO, &c->out))
ROW(i_update, vidmm_gpuva_update(A3, c->pi, (const struct vidmm_gpuva_update_op[]){ op_unmap(c->cpu_i, KIB(4), 0) }, 1))
ROW(i_update_count_0, vidmm_gpuva_update(A3, c->pi, NULL, 0))
ROW(i_map_not_cpu_address, vidmm_gpuva_map(A3, c->pi, 0x10000, 0, 0, c->hi, 0, KIB(4), 0, 0, &c->out))
ROW(i_map_cpu_address_of_other_offset, vidmm_gpuva_map(A3, c->pi, c->cpu_i, 0, 0, c->hi, KIB(64), KIB(4), 0, 0, &c->out))
ROW(i_map_cpu_address_plus_4k, vidmm_gpuva_map(A3, c->pi, c->cpu_i + KIB(4), 0, 0, c->hi, 0, KIB(4), 0, 0, &c->out))
ROW(i_map_null_va, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->hi, 0, KIB(4), 0, 0, NULL))
ROW(i_map_size_0, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->hi, 0, 0, 0, 0, &c->out))
ROW(i_map_offset_unaligned, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->hi, 8, KIB(4), 0, 0, &c->out))
ROW(i_map_offset_past_end, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->hi, KIB(256), KIB(4), 0, 0, &c->out))
ROW(i_map_prot, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->hi, 0, KIB(4), 0x8, 0, &c->out))
ROW(i_map_foreign_allocation, vidmm_gpuva_map(A3, c->pi, 0, 0, 0, c->h, 0, KIB(4), 0, 0, &c->out))
ROW(i_map_dgpu_process, vidmm_gpuva_map(A3, c->p, 0, 0, 0, c->hi, 0, KIB(4), 0, 0, &c->out))
ROW(i_unmap_size_0, vidmm_gpuva_unmap(A3, c->pi, c->cpu_i, 0))
ROW(i_unmap_unaligned, vidmm_gpuva_unmap(A3, c->pi, c->cpu_i + 8, KIB(4)))
ROW(i_free_hole, vidmm_gpuva_free(A3, c->pi, c->cpu_i, KIB(128)))
ROW(i_root, vidmm_process_root_page_table(A3, c->pi, &c->root))

struct gb_row {
    const char *name;
    vidmm_status (*call)(struct gb *);
    vidmm_status want;
};
#define R(fn, want) { #fn, fn, want }

static const struct gb_row gb_rows[] = {
    R(create_null_adapter, VIDMM_E_INVALID_ARG),
    R(create_null_out, VIDMM_E_INVALID_ARG),
    R(destroy_null_adapter, VIDMM_E_INVALID_ARG),
    R(destroy_handle_0, VIDMM_E_INVALID_HANDLE),
    R(destroy_stale, VIDMM_E_INVALID_HANDLE),
    R(destroy_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(destroy_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(destroy_all_ones, VIDMM_E_INVALID_HANDLE),
    R(destroy_foreign, VIDMM_E_INVALID_HANDLE),
    R(destroy_forged_salt, VIDMM_E_INVALID_HANDLE),
    R(destroy_slot_256, VIDMM_E_INVALID_HANDLE),
    R(pquery_null_adapter, VIDMM_E_INVALID_ARG),
    R(pquery_null_out, VIDMM_E_INVALID_ARG),
    R(pquery_handle_0, VIDMM_E_INVALID_HANDLE),
    R(pquery_stale, VIDMM_E_INVALID_HANDLE),
    R(pquery_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(pquery_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(pquery_foreign, VIDMM_E_INVALID_HANDLE),
    R(root_null_adapter, VIDMM_E_INVALID_ARG),
    R(root_null_out, VIDMM_E_INVALID_ARG),
    R(root_handle_0, VIDMM_E_INVALID_HANDLE),
    R(root_stale, VIDMM_E_INVALID_HANDLE),
    R(root_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(root_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(root_foreign, VIDMM_E_INVALID_HANDLE),
    R(root_iommu, VIDMM_E_NOT_SUPPORTED),
    R(vquery_null_adapter, VIDMM_E_INVALID_ARG),
    R(vquery_null_count, VIDMM_E_INVALID_ARG),
    R(vquery_null_ranges, VIDMM_E_INVALID_ARG),
    R(vquery_handle_0, VIDMM_E_INVALID_HANDLE),
    R(vquery_stale, VIDMM_E_INVALID_HANDLE),
    R(vquery_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(vquery_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(vquery_foreign, VIDMM_E_INVALID_HANDLE),
    R(vquery_cap0_null_ranges, VIDMM_OK),
    R(vquery_past_limit, VIDMM_OK),
    R(reserve_null_adapter, VIDMM_E_INVALID_ARG),
    R(reserve_null_va, VIDMM_E_INVALID_ARG),
    R(reserve_handle_0, VIDMM_E_INVALID_HANDLE),
    R(reserve_stale, VIDMM_E_INVALID_HANDLE),
    R(reserve_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(reserve_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(reserve_foreign, VIDMM_E_INVALID_HANDLE),
    R(reserve_size_0_anywhere, VIDMM_E_INVALID_ARG),
    R(reserve_size_0_fixed, VIDMM_E_INVALID_ARG),
    R(reserve_size_0_zero_mode, VIDMM_E_INVALID_ARG),
    R(reserve_mode_2, VIDMM_E_INVALID_ARG),
    R(reserve_mode_max, VIDMM_E_INVALID_ARG),
    R(reserve_base_4k, VIDMM_E_ALIGNMENT),
    R(reserve_base_4k_zero_mode, VIDMM_E_ALIGNMENT),
    R(reserve_base_odd, VIDMM_E_ALIGNMENT),
    R(reserve_size_4k_fixed, VIDMM_E_ALIGNMENT),
    R(reserve_size_4k_anywhere, VIDMM_E_ALIGNMENT),
    R(reserve_size_4k_zero_mode, VIDMM_E_ALIGNMENT),
    R(reserve_min_4k, VIDMM_E_ALIGNMENT),
    R(reserve_max_4k, VIDMM_E_ALIGNMENT),
    R(reserve_overflow, VIDMM_E_OVERFLOW),
    R(reserve_overflow_zero_mode, VIDMM_E_OVERFLOW),
    R(reserve_overflow_big, VIDMM_E_OVERFLOW),
    R(reserve_past_limit, VIDMM_E_INVALID_ARG),
    R(reserve_past_limit_zero_mode, VIDMM_E_INVALID_ARG),
    R(reserve_at_limit, VIDMM_E_INVALID_ARG),
    R(reserve_bit63, VIDMM_E_INVALID_ARG),
    R(reserve_min_gt_max, VIDMM_E_INVALID_ARG),
    R(reserve_min_eq_max, VIDMM_E_INVALID_ARG),
    R(reserve_min_at_limit, VIDMM_E_INVALID_ARG),
    R(reserve_max_in_guard, VIDMM_E_INVALID_ARG),
    R(reserve_window_too_small, VIDMM_E_NO_SEGMENT_SPACE),
    R(reserve_window_full, VIDMM_E_NO_SEGMENT_SPACE),
    R(reserve_larger_than_space, VIDMM_E_NO_SEGMENT_SPACE),
    R(reserve_busy_exact, VIDMM_E_BUSY),
    R(reserve_busy_head, VIDMM_E_BUSY),
    R(reserve_busy_mapping_inside_reservation, VIDMM_E_BUSY),
    R(reserve_busy_plain_mapping, VIDMM_E_BUSY),
    R(reserve_busy_covering, VIDMM_E_BUSY),
    R(reserve_busy_zero_mode, VIDMM_E_BUSY),
    R(reserve_busy_zero_over_zero, VIDMM_E_BUSY),
    R(map_null_adapter, VIDMM_E_INVALID_ARG),
    R(map_null_va, VIDMM_E_INVALID_ARG),
    R(map_handle_0, VIDMM_E_INVALID_HANDLE),
    R(map_stale, VIDMM_E_INVALID_HANDLE),
    R(map_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(map_allocation_as_process, VIDMM_E_INVALID_HANDLE),
    R(map_foreign_process, VIDMM_E_INVALID_HANDLE),
    R(map_allocation_0, VIDMM_E_INVALID_HANDLE),
    R(map_allocation_stale, VIDMM_E_INVALID_HANDLE),
    R(map_process_as_allocation, VIDMM_E_INVALID_HANDLE),
    R(map_foreign_allocation, VIDMM_E_INVALID_HANDLE),
    R(map_size_0, VIDMM_E_INVALID_ARG),
    R(map_size_0_anywhere, VIDMM_E_INVALID_ARG),
    R(map_size_4095, VIDMM_E_ALIGNMENT),
    R(map_size_4097, VIDMM_E_ALIGNMENT),
    R(map_base_unaligned, VIDMM_E_ALIGNMENT),
    R(map_offset_unaligned, VIDMM_E_ALIGNMENT),
    R(map_min_unaligned, VIDMM_E_ALIGNMENT),
    R(map_max_unaligned, VIDMM_E_ALIGNMENT),
    R(map_guard_page_0, VIDMM_E_INVALID_ARG),
    R(map_guard_last_page, VIDMM_E_INVALID_ARG),
    R(map_guard_straddle, VIDMM_E_INVALID_ARG),
    R(map_overflow, VIDMM_E_OVERFLOW),
    R(map_past_limit, VIDMM_E_INVALID_ARG),
    R(map_at_limit, VIDMM_E_INVALID_ARG),
    R(map_bit63, VIDMM_E_INVALID_ARG),
    R(map_min_gt_max, VIDMM_E_INVALID_ARG),
    R(map_min_eq_max, VIDMM_E_INVALID_ARG),
    R(map_min_at_limit, VIDMM_E_INVALID_ARG),
    R(map_max_in_guard, VIDMM_E_INVALID_ARG),
    R(map_window_too_small, VIDMM_E_NO_SEGMENT_SPACE),
    R(map_window_all_reserved, VIDMM_E_NO_SEGMENT_SPACE),
    R(map_offset_at_end, VIDMM_E_INVALID_ARG),
    R(map_offset_past_end, VIDMM_E_INVALID_ARG),
    R(map_offset_plus_size_past_end, VIDMM_E_INVALID_ARG),
    R(map_size_past_end, VIDMM_E_INVALID_ARG),
    R(map_offset_huge, VIDMM_E_INVALID_ARG),
    R(map_offset_plus_size_wraps, VIDMM_E_OVERFLOW), /* BUG-4 */
    R(map_prot_unknown_bit, VIDMM_E_INVALID_ARG),
    R(map_prot_high_bit, VIDMM_E_INVALID_ARG),
    R(map_busy_reserved_then_hole, VIDMM_E_BUSY),
    R(map_busy_hole_then_reserved, VIDMM_E_BUSY), /* BUG-1 */
    R(map_busy_reserved_then_plain, VIDMM_E_BUSY),
    R(map_busy_reserved_plain_hole, VIDMM_E_BUSY),
    R(map_busy_hole_then_reserved_same_leaf, VIDMM_E_BUSY),
    R(map_busy_zero_then_hole, VIDMM_E_BUSY), /* BUG-1 */
    R(map_busy_4k_hole_then_reserved, VIDMM_E_BUSY), /* BUG-1 */
    R(unmap_null_adapter, VIDMM_E_INVALID_ARG),
    R(unmap_handle_0, VIDMM_E_INVALID_HANDLE),
    R(unmap_stale, VIDMM_E_INVALID_HANDLE),
    R(unmap_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(unmap_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(unmap_foreign, VIDMM_E_INVALID_HANDLE),
    R(unmap_size_0, VIDMM_E_INVALID_ARG),
    R(unmap_va_unaligned, VIDMM_E_ALIGNMENT),
    R(unmap_size_unaligned, VIDMM_E_ALIGNMENT),
    R(unmap_guard, VIDMM_E_INVALID_ARG),
    R(unmap_guard_straddle, VIDMM_E_INVALID_ARG),
    R(unmap_overflow, VIDMM_E_OVERFLOW),
    R(unmap_overflow_size, VIDMM_E_OVERFLOW),
    R(unmap_past_limit, VIDMM_E_INVALID_ARG),
    R(unmap_at_limit, VIDMM_E_INVALID_ARG),
    R(unmap_hole_is_noop, VIDMM_OK),
    R(unmap_reserved_only_is_noop, VIDMM_OK),
    R(unmap_zero_reserved_only_is_noop, VIDMM_OK),
    R(unmap_4k_zero_reserved_only_is_noop, VIDMM_OK), /* BUG-2 (no-op unmap) */
    R(unmap_4k_hole_is_noop, VIDMM_OK), /* BUG-2 (no-op unmap) */
    R(free_null_adapter, VIDMM_E_INVALID_ARG),
    R(free_handle_0, VIDMM_E_INVALID_HANDLE),
    R(free_stale, VIDMM_E_INVALID_HANDLE),
    R(free_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(free_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(free_foreign, VIDMM_E_INVALID_HANDLE),
    R(free_size_0, VIDMM_E_INVALID_ARG),
    R(free_va_unaligned, VIDMM_E_ALIGNMENT),
    R(free_size_unaligned, VIDMM_E_ALIGNMENT),
    R(free_guard, VIDMM_E_INVALID_ARG),
    R(free_guard_straddle, VIDMM_E_INVALID_ARG),
    R(free_overflow, VIDMM_E_OVERFLOW),
    R(free_past_limit, VIDMM_E_INVALID_ARG),
    R(free_all_hole, VIDMM_E_INVALID_ARG),
    R(free_hole_after_plain, VIDMM_E_INVALID_ARG),
    R(free_hole_between_reservations, VIDMM_E_INVALID_ARG),
    R(free_hole_before, VIDMM_E_INVALID_ARG),
    R(free_hole_after_zero, VIDMM_E_INVALID_ARG),
    R(free_hole_after_plain_4k, VIDMM_E_INVALID_ARG), /* BUG-2 */
    R(free_reservation_4k_granular, VIDMM_E_ALIGNMENT), /* BUG-2 */
    R(free_zero_reservation_4k_granular, VIDMM_E_ALIGNMENT), /* BUG-2 */
    R(free_zero_reservation_4k_size, VIDMM_E_ALIGNMENT), /* BUG-2 */
    R(update_null_adapter, VIDMM_E_INVALID_ARG),
    R(update_handle_0, VIDMM_E_INVALID_HANDLE),
    R(update_stale, VIDMM_E_INVALID_HANDLE),
    R(update_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(update_allocation_handle, VIDMM_E_INVALID_HANDLE),
    R(update_foreign, VIDMM_E_INVALID_HANDLE),
    R(update_count_0, VIDMM_OK),
    R(update_count_0_null_ops, VIDMM_OK),
    R(update_null_ops, VIDMM_E_INVALID_ARG),
    R(update_type_3, VIDMM_E_INVALID_ARG),
    R(update_type_max, VIDMM_E_INVALID_ARG),
    R(update_size_0_unmap, VIDMM_E_INVALID_ARG),
    R(update_size_0_map, VIDMM_E_INVALID_ARG),
    R(update_size_0_copy, VIDMM_E_INVALID_ARG),
    R(update_map_allocation_0, VIDMM_E_INVALID_HANDLE),
    R(update_map_allocation_stale, VIDMM_E_INVALID_HANDLE),
    R(update_map_process_as_allocation, VIDMM_E_INVALID_HANDLE),
    R(update_map_foreign_allocation, VIDMM_E_INVALID_HANDLE),
    R(update_map_prot, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_map_offset_unaligned, VIDMM_E_ALIGNMENT), /* BUG-3 */
    R(update_map_offset_past_end, VIDMM_E_INVALID_ARG),
    R(update_map_size_past_end, VIDMM_E_INVALID_ARG),
    R(update_unmap_mode_2, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_va_unaligned, VIDMM_E_ALIGNMENT), /* BUG-3 */
    R(update_size_unaligned, VIDMM_E_ALIGNMENT), /* BUG-3 */
    R(update_overflow, VIDMM_E_OVERFLOW),
    R(update_guard, VIDMM_E_INVALID_ARG),
    R(update_past_limit, VIDMM_E_INVALID_ARG),
    R(update_target_in_hole, VIDMM_E_INVALID_ARG),
    R(update_target_plain_mapping, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_target_zero_reservation_and_hole, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_target_reservation_and_plain, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_target_hole_then_reservation, VIDMM_E_INVALID_ARG),
    R(update_targets_two_reservations, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_map_targets_two_reservations, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_source_in_hole, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_source_plain, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_source_unaligned, VIDMM_E_ALIGNMENT), /* BUG-3 */
    R(update_copy_source_overflow, VIDMM_E_OVERFLOW), /* BUG-3 */
    R(update_copy_source_guard, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_source_past_limit, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_sources_two_reservations, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_source_reservation_and_plain, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_copy_dest_outside, VIDMM_E_INVALID_ARG),
    R(update_good_then_bad_type, VIDMM_E_INVALID_ARG),
    R(update_good_then_bad_prot, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_good_then_bad_alloc, VIDMM_E_INVALID_HANDLE),
    R(update_good_then_unaligned, VIDMM_E_ALIGNMENT), /* BUG-3 */
    R(update_good_then_outside, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_bad_then_good, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(update_good_then_copy_from_hole, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(lost_reserve, VIDMM_E_DEVICE_LOST),
    R(lost_reserve_zero, VIDMM_E_DEVICE_LOST),
    R(lost_reserve_anywhere, VIDMM_E_DEVICE_LOST),
    R(lost_map, VIDMM_E_DEVICE_LOST),
    R(lost_map_anywhere, VIDMM_E_DEVICE_LOST),
    R(lost_map_in_reservation, VIDMM_E_DEVICE_LOST),
    R(lost_unmap, VIDMM_E_DEVICE_LOST),
    R(lost_unmap_4k, VIDMM_E_DEVICE_LOST),
    R(lost_free_reservation, VIDMM_E_DEVICE_LOST),
    R(lost_free_mapping, VIDMM_E_DEVICE_LOST),
    R(lost_update, VIDMM_E_DEVICE_LOST),
    R(lost_w_reserve, VIDMM_E_DEVICE_LOST),
    R(lost_w_map, VIDMM_E_DEVICE_LOST),
    R(lost_w_unmap, VIDMM_E_DEVICE_LOST),
    R(lost_w_free, VIDMM_E_DEVICE_LOST),
    R(lost_w_update, VIDMM_E_DEVICE_LOST),
    R(lost_process_query, VIDMM_OK),
    R(lost_gpuva_query, VIDMM_OK),
    R(lost_root, VIDMM_OK),
    R(w_reserve_base_4k, VIDMM_E_ALIGNMENT),
    R(w_reserve_size_4k, VIDMM_E_ALIGNMENT),
    R(w_reserve_busy, VIDMM_E_BUSY),
    R(w_reserve_past_limit, VIDMM_E_INVALID_ARG),
    R(w_map_guard, VIDMM_E_INVALID_ARG),
    R(w_map_unaligned, VIDMM_E_ALIGNMENT),
    R(w_map_busy, VIDMM_E_BUSY), /* BUG-1 */
    R(w_map_offset_past_end, VIDMM_E_INVALID_ARG),
    R(w_free_hole, VIDMM_E_INVALID_ARG),
    R(w_free_reservation_4k, VIDMM_E_ALIGNMENT),
    R(w_unmap_past_limit, VIDMM_E_INVALID_ARG),
    R(w_update_outside, VIDMM_E_INVALID_ARG), /* BUG-3 */
    R(w_update_plain, VIDMM_E_INVALID_ARG),
    R(i_reserve, VIDMM_E_NOT_SUPPORTED),
    R(i_reserve_fixed, VIDMM_E_NOT_SUPPORTED),
    R(i_update, VIDMM_E_NOT_SUPPORTED),
    R(i_update_count_0, VIDMM_E_NOT_SUPPORTED),
    R(i_map_not_cpu_address, VIDMM_E_INVALID_ARG),
    R(i_map_cpu_address_of_other_offset, VIDMM_E_INVALID_ARG),
    R(i_map_cpu_address_plus_4k, VIDMM_E_INVALID_ARG),
    R(i_map_null_va, VIDMM_E_INVALID_ARG),
    R(i_map_size_0, VIDMM_E_INVALID_ARG),
    R(i_map_offset_unaligned, VIDMM_E_ALIGNMENT),
    R(i_map_offset_past_end, VIDMM_E_INVALID_ARG),
    R(i_map_prot, VIDMM_E_INVALID_ARG),
    R(i_map_foreign_allocation, VIDMM_E_INVALID_HANDLE),
    R(i_map_dgpu_process, VIDMM_E_INVALID_HANDLE),
    R(i_unmap_size_0, VIDMM_E_INVALID_ARG),
    R(i_unmap_unaligned, VIDMM_E_ALIGNMENT),
    R(i_free_hole, VIDMM_E_INVALID_ARG),
    R(i_root, VIDMM_E_NOT_SUPPORTED),
};

static void table(void)
{
    struct gb *c = calloc(1, sizeof *c);
    if (!c)
        return;
    if (gb_setup(c)) {
        gb_close(c);
        free(c);
        return;
    }
    size_t nrows = sizeof gb_rows / sizeof gb_rows[0];
    int rows_failed = 0;
    struct snap *s = malloc(sizeof *s);
    for (size_t i = 0; s && i < nrows; i++) {
        const struct gb_row *r = &gb_rows[i];
        int before = t_current_failures();
        snap_take(c, s);
        vidmm_status st = r->call(c);
        if (st != r->want) {
            char m[200];
            snprintf(m, sizeof m, "row %s: got %s, want %s", r->name, vidmm_status_str(st), vidmm_status_str(r->want));
            row_fail(__LINE__, m);
        }
        (void)snap_same(c, s, r->name);
        if (t_current_failures() != before) {
            rows_failed++;
            fprintf(stderr, "  ^ gpuva bad-input row %s\n", r->name);
            /* The row may have changed something: later rows start from
             * a fresh fixture, so each failure is its own. */
            gb_close(c);
            if (gb_setup(c)) {
                t_fail(__FILE__, __LINE__, "fixture rebuild failed");
                break;
            }
        }
    }
    free(s);
    if (rows_failed)
        fprintf(stderr, "  %d of %zu gpuva bad-input rows failed\n", rows_failed, nrows);
    printf("gpuva_badinput.table: %zu rows\n", nrows);

    /* The fixture still works: the good batch the bad ones were built on
     * applies, and reads right through the MMU. */
    struct vidmm_adapter *a = c->ad[0].a;
    T_ST(UPD(a, c->p, GOOD_OPS(c)), VIDMM_OK);
    T_CHECK(gpu_sees(&c->ad[0], c->p, c->R, 0, KIB(64), 11));
    T_CHECK(gpu_sees(&c->ad[0], c->p, c->R + KIB(512), KIB(256), KIB(64), 11));
    T_CHECK(gpu_sees(&c->ad[0], c->p, c->R + KIB(128), 0, KIB(64), 0));
    /* A faulted process can still be destroyed; its handle is then stale,
     * and the allocation it mapped is still mapped elsewhere. */
    T_ST(vidmm_process_destroy(a, c->pf), VIDMM_OK);
    T_ST(vidmm_process_destroy(a, c->pf), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_process_query(a, c->pf, &c->info), VIDMM_E_INVALID_HANDLE);
    T_CHECK(gpu_sees(&c->ad[0], c->p2, c->M, 0, KIB(64), 12));
    T_ST(vidmm_process_destroy(c->ad[2].a, c->pwf), VIDMM_OK);
    T_CHECK(gpu_sees(&c->ad[2], c->pw, c->Mw, 0, KIB(256), 21));
    /* Valid entries on the healthy processes still work. */
    uint64_t out = 0;
    T_ST(vidmm_gpuva_free(a, c->p, c->R2, MIB(1)), VIDMM_OK);
    T_ST(vidmm_gpuva_unmap(a, c->p, c->M, KIB(256)), VIDMM_OK);
    T_ST(vidmm_gpuva_map(a, c->p, c->M, 0, 0, c->h, 0, KIB(64), 0, 0, &out), VIDMM_OK);
    T_CHECK(gpu_sees(&c->ad[0], c->p, c->M, 0, KIB(64), 11));
    gb_close(c);
    free(c);
}

/* ---- process table limits ------------------------------------------ */

/* The bound of live processes, set explicitly (vidmm_adapter_create_info.
 * max_processes): the table grows up to it, then answers VIDMM_E_BUSY. */
#define PROCESS_BOUND 256u

static void too_many_processes(void)
{
    struct gfx f;
    memset(&f, 0, sizeof(f));
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", MIB(64), MIB(128), 0);
    if (softgpu_open_bounded(&f.fa, &cfg, NULL, 0, PROCESS_BOUND, &f.sg, &f.a))
        return;
    vidmm_handle *p = calloc(PROCESS_BOUND, sizeof *p);
    if (!p) {
        gfx_close(&f);
        return;
    }
    for (uint32_t i = 0; i < PROCESS_BOUND; i++)
        T_ST(vidmm_process_create(f.a, &p[i]), VIDMM_OK);
    struct vidmm_segment_info before[SOFTGPU_MAX_SEGMENTS + 1], after;
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    for (uint32_t id = 0; id < ai.segment_count; id++)
        T_ST(vidmm_segment_query(f.a, id, &before[id]), VIDMM_OK);
    int64_t blocks = f.fa.live_blocks;
    vidmm_handle extra = 0xDEADull;
    T_ST(vidmm_process_create(f.a, &extra), VIDMM_E_BUSY);
    T_EQ_U64(extra, VIDMM_HANDLE_NULL);
    T_ST(vidmm_process_create(f.a, &extra), VIDMM_E_BUSY);
    T_EQ(f.fa.live_blocks, blocks);
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        T_ST(vidmm_segment_query(f.a, id, &after), VIDMM_OK);
        T_EQ_U64(after.committed, before[id].committed);
        T_EQ_U64(after.free_bytes, before[id].free_bytes);
    }
    T_EQ(vidmm_adapter_check(f.a, NULL, 0), 0);
    /* All 256 are alive and distinct. */
    for (uint32_t i = 0; i < PROCESS_BOUND; i++) {
        struct vidmm_process_info pi;
        T_ST(vidmm_process_query(f.a, p[i], &pi), VIDMM_OK);
        if (i)
            T_CHECK(p[i] != p[i - 1]);
    }
    /* Free one slot: the next create takes it, with a new generation. */
    T_ST(vidmm_process_destroy(f.a, p[100]), VIDMM_OK);
    vidmm_handle again = 0;
    T_ST(vidmm_process_create(f.a, &again), VIDMM_OK);
    T_EQ(again & 0xFFFFFFu, p[100] & 0xFFFFFFu);
    T_CHECK(again != p[100]);
    T_ST(vidmm_process_query(f.a, p[100], &(struct vidmm_process_info){ 0 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_process_create(f.a, &extra), VIDMM_E_BUSY);
    free(p);
    gfx_close(&f); /* close destroys the 256 processes */
}

/* An adapter with neither GpuMmu nor IoMmu: softgpu's dgpu with those
 * caps hidden from DRIVERCAPS. */
static const struct vidmm_driver_ops *g_real_ops;
static vidmm_status caps_hiding_query(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    vidmm_status st = g_real_ops->query_adapter_info(driver, args);
    if (st >= 0 && args->type == VIDMM_QAI_DRIVERCAPS && args->output &&
        args->output_size >= sizeof(struct vidmm_driver_caps)) {
        struct vidmm_driver_caps *caps = args->output;
        caps->memory_management_caps &= ~(VIDMM_CAPS_GPUMMU | VIDMM_CAPS_IOMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING);
    }
    return st;
}

static void no_virtual_addressing(void)
{
    struct fault_alloc fa;
    fault_alloc_init(&fa);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.preset = "dgpu";
    cfg.segment_size[1] = MIB(64);
    cfg.segment_size[2] = MIB(128);
    struct softgpu *sg = NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    if (!sg)
        return;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(sg, &ci);
    ci.host_allocator = &fa.ha;
    g_real_ops = ci.ops;
    struct vidmm_driver_ops ops = *ci.ops;
    ops.query_adapter_info = caps_hiding_query;
    ci.ops = &ops;
    struct vidmm_adapter *a = NULL;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    if (a) {
        struct vidmm_gpummu_info gi;
        T_ST(vidmm_adapter_query_gpummu(a, &gi), VIDMM_E_NOT_SUPPORTED);
        /* A process without GPU VA: devices yes, VA entries no. */
        vidmm_handle p = 0xDEADull, d = 0;
        T_ST(vidmm_process_create(a, &p), VIDMM_OK);
        T_ST(vidmm_device_create(a, p, &d), VIDMM_OK);
        uint64_t va = 0;
        struct vidmm_physical_address root;
        struct vidmm_gpuva_update_op op;
        memset(&op, 0, sizeof op);
        T_ST(vidmm_gpuva_reserve(a, p, 0, 0, 0, 1u << 20, 0, &va), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_gpuva_map(a, p, 0, 0, 0, 1, 0, 4096, 0, 0, &va), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_gpuva_unmap(a, p, 0x10000, 0x10000), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_gpuva_free(a, p, 0x10000, 0x10000), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_gpuva_update(a, p, &op, 1), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_process_root_page_table(a, p, &root), VIDMM_E_NOT_SUPPORTED);
        struct vidmm_context_desc vd = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 }, pd = { 0, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
        vidmm_handle c = 0;
        T_ST(vidmm_context_create(a, d, &vd, &c), VIDMM_E_NOT_SUPPORTED);
        T_ST(vidmm_context_create(a, d, &pd, &c), VIDMM_OK);
        T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
        T_ST(vidmm_process_destroy(a, p), VIDMM_OK);
        vidmm_adapter_close(a);
    }
    T_EQ(fa.live_blocks, 0);
    softgpu_destroy(sg);
}

/*
 * Bugs this suite found in src/, all fixed (prepare now acts only for a
 * change the VA space will accept, tables it made are rolled back when
 * the change is refused, and map checks offset + size for overflow).
 * A failing row names itself on stderr ("^ gpuva bad-input row ...") and
 * the fixture is rebuilt after it, so every failure is the row's own:
 *
 * BUG-1  src/process/process.c, vidmm_gpuva_map (fixed base): the prepare
 *        half calls vidmm_pt_ensure(base, size, ...) before vidmm_va_map
 *        has checked the target's state.  A map that ends VIDMM_E_BUSY
 *        (a target mixing reservation-backed and plain VA) leaves new
 *        page tables behind (segment commit, page_tables and host blocks
 *        grow; kept until the process is destroyed) and, for a 4 KiB-
 *        granular target, has already switched a 64 KB leaf to 4 KB
 *        entries (one-way).  "The first failure is returned, and nothing
 *        changes" (VA_SPACE.md).  Fix: validate the fixed target (span,
 *        coverage/BUSY) before vidmm_pt_ensure, e.g. a validation-only
 *        vidmm_va_map_check() split out of vidmm_va_map.
 * BUG-2  process.c, cut() (vidmm_gpuva_free / vidmm_gpuva_unmap): for a
 *        span that is not 64 KiB granular vidmm_pt_demote runs before
 *        vidmm_va_free validates it, so a free rejected with INVALID_ARG
 *        (a free byte inside) or ALIGNMENT (4 KiB-granular cut of a
 *        reservation) has already demoted the 64 KB leaf.  Same for a
 *        4 KiB unmap over a hole or a reserved-only span, which is a
 *        documented no-op.  Fix: run vidmm_va_free's checks first, and
 *        demote only when the span cuts a MAPPED range (or a ZERO
 *        reservation for free) inside a 64 KB page.
 * BUG-3  process.c, vidmm_gpuva_update: the prepare half calls
 *        vidmm_pt_ensure(lo, hi - lo, 0) over the targets' hull as soon
 *        as the first target is not free - before vidmm_va_update has
 *        validated the batch.  Any rejected batch (bad type/prot/mode,
 *        misaligned op, target or COPY source outside one reservation,
 *        one bad op among good ones) demotes every 64 KB leaf of the hull
 *        (dgpu) and creates leaf tables for holes inside it (wddm1).
 *        "One bad operation and nothing changes" (process.h).  Fix: run
 *        vidmm_va_update's phase 1 (op checks + hull coverage) as a
 *        separate validation call before vidmm_pt_ensure.
 * BUG-4  process.c, vidmm_gpuva_map: offset + size that wraps 2^64 is
 *        answered VIDMM_E_INVALID_ARG (it is caught by the allocation
 *        bounds check, written without the sum).  status.h defines
 *        VIDMM_E_OVERFLOW as "size/offset arithmetic overflows" and
 *        VA_SPACE.md lists object_offset + size under OVERFLOW for map,
 *        with overflow checked before range.  Fix: test
 *        offset + size < offset (OVERFLOW) before the bounds check (same
 *        for update MAP ops).
 */

void suite_gpuva_badinput(void);
void suite_gpuva_badinput(void)
{
    t_run("gpuva_badinput.table", table);
    t_run("gpuva_badinput.too_many_processes", too_many_processes);
    t_run("gpuva_badinput.no_virtual_addressing", no_virtual_addressing);
}
