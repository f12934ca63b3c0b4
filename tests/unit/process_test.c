/*
 * process_test.c - processes, GPU VA mapping and GpuMmu page tables, end
 * to end: vidmm writes the page tables through paging operations, and
 * softgpu's MMU - which knows nothing of vidmm - walks them.  The walker
 * is the oracle: every mapped VA must read the allocation's bytes, every
 * other VA must fault, before and after moves.
 */
#include "gpuva_common.h"
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "vidmm/process.h"
#include "vidmm/rules.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define alloc_in gv_alloc_in
#define pattern gv_pattern
#define gpu_sees(f, proc, va, off, size, seed) gv_gpu_sees((f)->a, (f)->sg, proc, va, off, size, seed)
#define gpu_faults(f, proc, va) gv_gpu_faults((f)->a, (f)->sg, proc, va)

static void fx_close(struct softgpu_fx *f)
{
    T_EQ(softgpu_check(f->sg), 0);
    softgpu_fx_close(f);
}

static void map_read_move_unmap(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle proc = 0;
    T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
    uint32_t all = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    vidmm_handle h = alloc_in(a, all, 3u << 20);
    pattern(a, h, 42);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(a, proc, 0x40000000ull, 0, 0, h, 0, 3u << 20, 0, 0, &va), VIDMM_OK);
    T_EQ_U64(va, 0x40000000ull);
    T_CHECK(gpu_sees(&f, proc, va, 0, 3u << 20, 42));
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    /* The VA stays; the pages move: memory -> other memory -> system -> back. */
    uint32_t tour[] = { 2, 1, 0, 3, 2, 1 };
    for (size_t i = 0; i < sizeof tour / sizeof tour[0]; i++) {
        T_ST(vidmm_allocation_move(a, h, tour[i]), VIDMM_OK);
        T_CHECK(gpu_sees(&f, proc, va, 0, 3u << 20, 42));
        T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    }
    /* A second, partial mapping of the same allocation, read-only. */
    uint64_t va2 = 0;
    T_ST(vidmm_gpuva_map(a, proc, 0, 0x80000000ull, 0, h, 1u << 20, 64u << 10, VIDMM_GPUVA_READ_ONLY, 0, &va2), VIDMM_OK);
    T_CHECK(va2 >= 0x80000000ull);
    T_CHECK(gpu_sees(&f, proc, va2, 1u << 20, 64u << 10, 42));
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(a, proc, &root), VIDMM_OK);
    struct softgpu_translation t;
    T_ST(softgpu_translate(f.sg, &root, va2, SOFTGPU_ACCESS_WRITE, &t), VIDMM_E_PAGE_FAULT);
    T_ST(softgpu_translate(f.sg, &root, va2, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    /* Unmap the middle of the first mapping: a hole that faults, ends intact. */
    T_ST(vidmm_gpuva_unmap(a, proc, va + (1u << 20), 1u << 20), VIDMM_OK);
    T_CHECK(gpu_faults(&f, proc, va + (1u << 20)));
    T_CHECK(gpu_faults(&f, proc, va + (2u << 20) - 4096));
    T_CHECK(gpu_sees(&f, proc, va, 0, 1u << 20, 42));
    T_CHECK(gpu_sees(&f, proc, va + (2u << 20), 2u << 20, 1u << 20, 42));
    struct vidmm_gpuva_range r[8];
    uint32_t n = 0;
    T_ST(vidmm_gpuva_query(a, proc, 0, r, 8, &n), VIDMM_OK);
    T_EQ(n, 3);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    /* Destroying the allocation removes every mapping of it. */
    T_ST(vidmm_allocation_destroy(a, h), VIDMM_OK);
    T_CHECK(gpu_faults(&f, proc, va));
    T_CHECK(gpu_faults(&f, proc, va2));
    T_ST(vidmm_gpuva_query(a, proc, 0, r, 8, &n), VIDMM_OK);
    T_EQ(n, 0);
    T_ST(vidmm_process_destroy(a, proc), VIDMM_OK);
    T_ST(vidmm_process_destroy(a, proc), VIDMM_E_INVALID_HANDLE);
    fx_close(&f);
}

static void reservations(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle proc = 0;
    T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
    uint64_t z = 0, na = 0;
    T_ST(vidmm_gpuva_reserve(a, proc, 0x10000000ull, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_ZERO, &z), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_NO_ACCESS, &na), VIDMM_OK);
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(a, proc, &root), VIDMM_OK);
    unsigned char buf[256];
    memset(buf, 0xAA, sizeof buf);
    T_ST(softgpu_read_virtual(f.sg, &root, z + 4096, buf, sizeof buf), VIDMM_OK);
    for (size_t i = 0; i < sizeof buf; i++)
        T_CHECK(buf[i] == 0);
    T_CHECK(gpu_faults(&f, proc, na));
    /* Map into the ZERO reservation, unmap: it reads zero again. */
    vidmm_handle h = alloc_in(a, VIDMM_SEGMENT_BIT(2), 64u << 10);
    pattern(a, h, 9);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(a, proc, z + (128u << 10), 0, 0, h, 0, 64u << 10, 0, 0, &va), VIDMM_OK);
    T_CHECK(gpu_sees(&f, proc, va, 0, 64u << 10, 9));
    T_ST(vidmm_gpuva_unmap(a, proc, va, 64u << 10), VIDMM_OK);
    T_ST(softgpu_read_virtual(f.sg, &root, va, buf, 16), VIDMM_OK);
    T_CHECK(buf[0] == 0 && buf[15] == 0);
    /* Overlaps and bad input change nothing. */
    uint64_t out = 0;
    T_ST(vidmm_gpuva_reserve(a, proc, z, 0, 0, 1u << 20, 0, &out), VIDMM_E_BUSY);
    T_ST(vidmm_gpuva_reserve(a, proc, 0x10001000ull, 0, 0, 1u << 20, 0, &out), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, 0, 0, &out), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, 1u << 20, 7, &out), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, 1u << 20, 0, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_map(a, proc, 0x1000, 0, 0, h, 0, 4096, 0, 0, &out), VIDMM_E_INVALID_ARG); /* VA page 0 region */
    T_ST(vidmm_gpuva_map(a, proc, 0x20000000ull, 0, 0, h, 0, 4095, 0, 0, &out), VIDMM_E_ALIGNMENT);
    T_ST(vidmm_gpuva_map(a, proc, 0x20000000ull, 0, 0, h, 64u << 10, 4096, 0, 0, &out), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_map(a, proc, 0x20000000ull, 0, 0, h, 0, 4096, 0x10, 0, &out), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_map(a, proc, 0x20000000ull, 0, 0, proc, 0, 4096, 0, 0, &out), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(a, h, 0x20000000ull, 0, 0, h, 0, 4096, 0, 0, &out), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_free(a, proc, 0x30000000ull, 1u << 20), VIDMM_E_INVALID_ARG); /* nothing there */
    T_ST(vidmm_gpuva_free(a, proc, z, 1u << 20), VIDMM_OK);
    T_CHECK(gpu_faults(&f, proc, z + 4096));
    T_ST(vidmm_gpuva_unmap(a, 0, 0, 4096), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_free(NULL, proc, 0, 4096), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_process_root_page_table(a, proc, NULL), VIDMM_E_INVALID_ARG);
    uint32_t n;
    T_ST(vidmm_gpuva_query(a, proc, 0, NULL, 4, &n), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_allocation_destroy(a, h), VIDMM_OK);
    fx_close(&f);
}

/* Two processes map different allocations at the same VA: each sees its
 * own, and what one unmaps faults only there. */
static void isolation(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p1 = 0, p2 = 0;
    T_ST(vidmm_process_create(a, &p1), VIDMM_OK);
    T_ST(vidmm_process_create(a, &p2), VIDMM_OK);
    vidmm_handle h1 = alloc_in(a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 256u << 10);
    vidmm_handle h2 = alloc_in(a, VIDMM_SEGMENT_BIT(2), 256u << 10);
    pattern(a, h1, 1);
    pattern(a, h2, 2);
    uint64_t va = 0x7000000000ull, out;
    T_ST(vidmm_gpuva_map(a, p1, va, 0, 0, h1, 0, 256u << 10, 0, 0, &out), VIDMM_OK);
    T_ST(vidmm_gpuva_map(a, p2, va, 0, 0, h2, 0, 256u << 10, 0, 0, &out), VIDMM_OK);
    T_CHECK(gpu_sees(&f, p1, va, 0, 256u << 10, 1));
    T_CHECK(gpu_sees(&f, p2, va, 0, 256u << 10, 2));
    struct vidmm_physical_address r1, r2;
    vidmm_process_root_page_table(a, p1, &r1);
    vidmm_process_root_page_table(a, p2, &r2);
    T_CHECK(r1.segment_offset != r2.segment_offset || r1.segment_id != r2.segment_id);
    T_ST(vidmm_gpuva_unmap(a, p2, va, 256u << 10), VIDMM_OK);
    T_CHECK(gpu_faults(&f, p2, va));
    T_CHECK(gpu_sees(&f, p1, va, 0, 256u << 10, 1));
    /* A process's stray write faults in its own space, puts its own
     * device in error, and touches nothing of the other process. */
    unsigned char junk[64];
    memset(junk, 0x5A, sizeof junk);
    T_ST(softgpu_write_virtual(f.sg, &r2, va, junk, sizeof junk), VIDMM_E_PAGE_FAULT);
    T_CHECK(gpu_sees(&f, p1, va, 0, 256u << 10, 1));
    struct vidmm_process_info i1, i2;
    T_ST(vidmm_process_query(a, p1, &i1), VIDMM_OK);
    T_ST(vidmm_process_query(a, p2, &i2), VIDMM_OK);
    T_EQ(i1.faulted, 0);
    T_EQ(i2.faulted, 1);
    /* Reports naming no live process (0, an allocation, a stale handle,
     * no adapter) are ignored: nobody else's device goes into error. */
    vidmm_cb_notify_page_fault(a, 0, va, 0);
    vidmm_cb_notify_page_fault(a, h1, va, 0);
    vidmm_cb_notify_page_fault(NULL, p1, va, 0);
    vidmm_cb_notify_page_fault(a, p1 ^ (1ull << 24), va, 0);
    T_ST(vidmm_process_query(a, p1, &i1), VIDMM_OK);
    T_EQ(i1.faulted, 0);
    T_EQ(i1.faults, 0);
    T_EQ_U64(i2.fault_va, va);
    T_EQ(i2.fault_flags, VIDMM_FAULT_WRITE | VIDMM_FAULT_NOT_PRESENT);
    T_ST(vidmm_gpuva_map(a, p2, va, 0, 0, h2, 0, 64u << 10, 0, 0, &out), VIDMM_E_DEVICE_LOST);
    T_ST(vidmm_gpuva_map(a, p1, va + (1u << 20), 0, 0, h2, 0, 64u << 10, 0, 0, &out), VIDMM_OK);
    T_CHECK(i1.page_tables >= 2 && i1.page_table_bytes > 0);
    /* Destroying a process leaves the allocations and the other process. */
    T_ST(vidmm_process_destroy(a, p2), VIDMM_OK);
    T_CHECK(gpu_sees(&f, p1, va, 0, 256u << 10, 1));
    T_ST(vidmm_allocation_move(a, h1, 1), VIDMM_OK);
    T_CHECK(gpu_sees(&f, p1, va, 0, 256u << 10, 1));
    vidmm_allocation_destroy(a, h1);
    vidmm_allocation_destroy(a, h2);
    fx_close(&f);
}

/* Seeded random operations on two processes; after every step the MMU
 * walker must agree with vidmm about every mapping (bytes read through
 * the page tables equal the allocation's pattern) and the checkers pass. */
static void walker_agrees(void)
{
    const char *presets[] = { "dgpu", "wddm1" };
    for (int pi = 0; pi < 2; pi++) {
        struct softgpu_fx f;
        if (softgpu_fx_open_preset(&f, presets[pi]) < 0)
            continue;
        struct vidmm_adapter *a = f.a;
        uint64_t rs = t_seed() ^ (0x9A7E0000ull + (uint64_t)pi);
        enum { NA = 12, NP = 2, NM = 24 };
        vidmm_handle al[NA];
        uint64_t seed[NA], size[NA];
        memset(al, 0, sizeof al);
        vidmm_handle proc[NP];
        for (int i = 0; i < NP; i++)
            T_ST(vidmm_process_create(a, &proc[i]), VIDMM_OK);
        struct vidmm_adapter_info ai;
        vidmm_adapter_query_info(a, &ai);
        uint32_t set = 0;
        for (uint32_t id = 1; id < ai.segment_count; id++) {
            struct vidmm_segment_info si;
            vidmm_segment_query(a, id, &si);
            if (si.kind == VIDMM_SEGMENT_KIND_MEMORY || si.kind == VIDMM_SEGMENT_KIND_APERTURE)
                set |= VIDMM_SEGMENT_BIT(id);
        }
        struct { int live; int p; int a; uint64_t va, off, size; } m[NM];
        memset(m, 0, sizeof m);
        unsigned steps = 300 * t_scale();
        uint64_t moves = 0, checked = 0;
        for (unsigned step = 0; step < steps && !t_current_failures(); step++) {
            int k = (int)t_rand_range(&rs, NA);
            uint64_t op = t_rand_range(&rs, 10);
            if (!al[k]) {
                size[k] = (1 + t_rand_range(&rs, 16)) * 65536;
                seed[k] = t_rand(&rs);
                struct softgpu_alloc_desc d;
                memset(&d, 0, sizeof d);
                d.kind = SOFTGPU_ALLOC_EXPLICIT;
                d.info.size = size[k];
                d.info.supported_write_segment_set = set;
                d.info.preferred_segment = VIDMM_PREF(0, 1 + t_rand_range(&rs, ai.segment_count - 1), 0);
                if (!(set & VIDMM_SEGMENT_BIT(VIDMM_PREF_ID(d.info.preferred_segment, 0))))
                    d.info.preferred_segment = 0;
                d.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
                if (vidmm_allocation_create(a, &d, sizeof d, &al[k]) == VIDMM_OK)
                    pattern(a, al[k], seed[k]);
                else
                    al[k] = 0;
            } else if (op < 3) {
                uint32_t to = (uint32_t)t_rand_range(&rs, ai.segment_count);
                if (to && !(set & VIDMM_SEGMENT_BIT(to)))
                    to = 0;
                if (vidmm_allocation_move(a, al[k], to) == VIDMM_OK)
                    moves++;
            } else if (op < 7) {
                int s = (int)t_rand_range(&rs, NM);
                if (!m[s].live) {
                    uint64_t pages = size[k] / 4096;
                    uint64_t off = t_rand_range(&rs, pages) * 4096;
                    uint64_t len = (1 + t_rand_range(&rs, pages - off / 4096)) * 4096;
                    int p = (int)t_rand_range(&rs, NP);
                    uint64_t va = 0;
                    if (vidmm_gpuva_map(a, proc[p], 0, 0, 0, al[k], off, len, 0, 0, &va) == VIDMM_OK) {
                        m[s].live = 1;
                        m[s].p = p;
                        m[s].a = k;
                        m[s].va = va;
                        m[s].off = off;
                        m[s].size = len;
                    }
                } else {
                    T_ST(vidmm_gpuva_unmap(a, proc[m[s].p], m[s].va, m[s].size), VIDMM_OK);
                    T_CHECK(gpu_faults(&f, proc[m[s].p], m[s].va));
                    m[s].live = 0;
                }
            } else if (op == 7) {
                T_ST(vidmm_allocation_destroy(a, al[k]), VIDMM_OK);
                for (int s = 0; s < NM; s++)
                    if (m[s].live && m[s].a == k) {
                        T_CHECK(gpu_faults(&f, proc[m[s].p], m[s].va));
                        m[s].live = 0;
                    }
                al[k] = 0;
            }
            for (int s = 0; s < NM; s++) {
                if (!m[s].live)
                    continue;
                int ok = gpu_sees(&f, proc[m[s].p], m[s].va, m[s].off, m[s].size, seed[m[s].a]);
                if (!ok) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "step %u: mapping %d (va 0x%llx) does not read its allocation", step, s,
                             (unsigned long long)m[s].va);
                    t_fail(__FILE__, __LINE__, msg);
                }
                checked++;
            }
            char rep[1024];
            int e = vidmm_adapter_check(a, rep, sizeof rep);
            if (e) {
                fprintf(stderr, "step %u:\n%s", step, rep);
                T_EQ(e, 0);
            }
            T_EQ(softgpu_check(f.sg), 0);
        }
        printf("process.walker_agrees[%s]: %u steps, %llu moves, %llu mapping checks\n", presets[pi], steps,
               (unsigned long long)moves, (unsigned long long)checked);
        fx_close(&f); /* destroys processes and allocations still alive */
    }
}

static void no_gpummu_and_oom(void)
{
    struct softgpu_fx f;
    /* Every host-allocation failure of process creation and of a map. */
    int done = 0;
    for (uint64_t k = 1; k < 400 && !done; k++) {
        if (softgpu_fx_open_preset(&f, "dgpu") < 0)
            return;
        vidmm_handle h = alloc_in(f.a, VIDMM_SEGMENT_BIT(2), 128u << 10);
        uint64_t base = f.fa.calls;
        f.fa.fail_at = base + k;
        vidmm_handle p = 0;
        uint64_t va = 0;
        vidmm_status st = vidmm_process_create(f.a, &p);
        if (st == VIDMM_OK) {
            st = vidmm_gpuva_map(f.a, p, 0x100000000ull, 0, 0, h, 0, 128u << 10, 0, 0, &va);
            if (st == VIDMM_OK) {
                done = 1;
            } else {
                T_ST(st, VIDMM_E_NO_HOST_MEMORY);
                uint32_t n = 1;
                struct vidmm_gpuva_range r;
                T_ST(vidmm_gpuva_query(f.a, p, 0, &r, 1, &n), VIDMM_OK);
                T_EQ(n, 0);
            }
        } else {
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(p, 0);
        }
        f.fa.fail_at = 0;
        T_EQ(vidmm_adapter_check(f.a, NULL, 0), 0);
        fx_close(&f);
    }
    T_CHECK(done);
}

/* D3DKMTUpdateGpuVirtualAddress-style batches (tiled resources). */
static void update_batches(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle proc = 0;
    T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
    vidmm_handle pool = alloc_in(a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 256u << 10);
    pattern(a, pool, 77);
    uint64_t r = 0;
    T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_NO_ACCESS, &r), VIDMM_OK);
    struct vidmm_gpuva_update_op ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].type = VIDMM_GPUVA_UPDATE_MAP;
    ops[0].va = r;
    ops[0].size = 64u << 10;
    ops[0].allocation = pool;
    ops[0].offset = 64u << 10;
    ops[1].type = VIDMM_GPUVA_UPDATE_COPY;
    ops[1].source = r;
    ops[1].va = r + (128u << 10);
    ops[1].size = 64u << 10;
    ops[2].type = VIDMM_GPUVA_UPDATE_UNMAP;
    ops[2].va = r;
    ops[2].size = 64u << 10;
    ops[2].unmap_mode = VIDMM_GPUVA_RESERVE_ZERO;
    /* One bad op (outside the reservation): nothing happens. */
    struct vidmm_gpuva_update_op bad[2];
    memcpy(bad, ops, sizeof bad);
    bad[1].va = r + (2u << 20);
    T_ST(vidmm_gpuva_update(a, proc, bad, 2), VIDMM_E_INVALID_ARG);
    T_CHECK(gpu_faults(&f, proc, r));
    T_ST(vidmm_gpuva_update(a, proc, ops, 3), VIDMM_OK);
    T_CHECK(gpu_sees(&f, proc, r + (128u << 10), 64u << 10, 64u << 10, 77));
    struct vidmm_physical_address root;
    vidmm_process_root_page_table(a, proc, &root);
    unsigned char b = 0xFF;
    T_ST(softgpu_read_virtual(f.sg, &root, r + 100, &b, 1), VIDMM_OK);
    T_EQ(b, 0);
    T_CHECK(gpu_faults(&f, proc, r + (512u << 10)));
    /* The tile pool moves; the copied mapping follows it. */
    T_ST(vidmm_allocation_move(a, pool, 1), VIDMM_OK);
    T_ST(vidmm_allocation_move(a, pool, 2), VIDMM_OK);
    T_CHECK(gpu_sees(&f, proc, r + (128u << 10), 64u << 10, 64u << 10, 77));
    T_ST(vidmm_gpuva_update(a, proc, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_gpuva_update(a, proc, ops, 0), VIDMM_OK);
    vidmm_allocation_destroy(a, pool);
    fx_close(&f);
}

/* Page-table bytes and tables of a process now. */
static void pt_usage(struct vidmm_adapter *a, vidmm_handle proc, uint64_t *bytes, uint64_t *tables)
{
    struct vidmm_process_info pi;
    memset(&pi, 0, sizeof pi);
    T_ST(vidmm_process_query(a, proc, &pi), VIDMM_OK);
    *bytes = pi.page_table_bytes;
    *tables = pi.page_tables;
}

static int rules_clean(struct vidmm_adapter *a)
{
    char rep[1024];
    int e = vidmm_adapter_check_rules(a, rep, sizeof rep);
    if (e)
        fprintf(stderr, "rules: %s\n", rep);
    return e == 0 && vidmm_adapter_check(a, NULL, 0) == 0;
}

/* Two 4 KiB maps at the two ends of a reservation, in one batch: the
 * page tables made are those of the two pages - what two calls make -
 * whatever the span (the hull of 2 TiB used to cost 14 s under the
 * adapter lock and then VIDMM_E_NO_SEGMENT_SPACE). */
static void update_tables_follow_pages(void)
{
    static const uint64_t spans[] = { 8ull << 30, 2ull << 40 };
    for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
        struct softgpu_fx f;
        if (softgpu_fx_open_preset(&f, "dgpu") < 0)
            return;
        struct vidmm_adapter *a = f.a;
        vidmm_handle pool = alloc_in(a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 64u << 10);
        pattern(a, pool, 5);
        uint64_t made[2][2];   /* [one batch, two calls][bytes, tables] */
        for (int two = 0; two < 2; two++) {
            vidmm_handle proc = 0;
            T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
            uint64_t r = 0, b0, t0, b1, t1;
            T_ST(vidmm_gpuva_reserve(a, proc, 0, 0, 0, spans[k], VIDMM_GPUVA_RESERVE_NO_ACCESS, &r), VIDMM_OK);
            pt_usage(a, proc, &b0, &t0);
            struct vidmm_gpuva_update_op ops[2];
            memset(ops, 0, sizeof ops);
            ops[0].type = VIDMM_GPUVA_UPDATE_MAP;
            ops[0].va = r;
            ops[0].size = 4096;
            ops[0].allocation = pool;
            ops[1] = ops[0];
            ops[1].va = r + spans[k] - 4096;
            ops[1].offset = 4096;
            if (two) {
                T_ST(vidmm_gpuva_update(a, proc, &ops[0], 1), VIDMM_OK);
                T_ST(vidmm_gpuva_update(a, proc, &ops[1], 1), VIDMM_OK);
            } else {
                T_ST(vidmm_gpuva_update(a, proc, ops, 2), VIDMM_OK);
            }
            pt_usage(a, proc, &b1, &t1);
            made[two][0] = b1 - b0;
            made[two][1] = t1 - t0;
            T_CHECK(gpu_sees(&f, proc, r, 0, 4096, 5));
            T_CHECK(gpu_sees(&f, proc, r + spans[k] - 4096, 4096, 4096, 5));
            T_CHECK(gpu_faults(&f, proc, r + spans[k] / 2));
            T_CHECK(rules_clean(a));
            T_ST(vidmm_process_destroy(a, proc), VIDMM_OK);
        }
        T_EQ_U64(made[0][0], made[1][0]);
        T_EQ_U64(made[0][1], made[1][1]);
        T_CHECK(made[0][1] <= 6);   /* two leaves and their parents, at most */
        vidmm_allocation_destroy(a, pool);
        fx_close(&f);
    }
}

/* One random op over a 64 GiB reservation at r: MAP, UNMAP (to zero or
 * no access) or COPY, each a few pages somewhere in 2048 leaf-sized
 * slots, so most ops land in leaves of their own. */
static void scattered_op(uint64_t *rng, uint64_t r, vidmm_handle pool, struct vidmm_gpuva_update_op *o)
{
    const uint64_t slot = 32ull << 20;
    memset(o, 0, sizeof *o);
    uint64_t pages = 1 + t_rand_range(rng, 8);
    o->type = (uint32_t)t_rand_range(rng, 3);
    o->va = r + t_rand_range(rng, 2048) * slot + t_rand_range(rng, slot / 4096 - 8) * 4096;
    o->size = pages * 4096;
    if (o->type == VIDMM_GPUVA_UPDATE_MAP) {
        o->allocation = pool;
        o->offset = t_rand_range(rng, 64 - pages) * 4096;
    } else if (o->type == VIDMM_GPUVA_UPDATE_UNMAP) {
        o->unmap_mode = t_rand_range(rng, 2) ? VIDMM_GPUVA_RESERVE_ZERO : VIDMM_GPUVA_RESERVE_NO_ACCESS;
    } else {
        /* Often from an earlier target, so the batch's own order decides. */
        o->source = r + t_rand_range(rng, 2048) * slot + t_rand_range(rng, slot / 4096 - 8) * 4096;
    }
}

/* Many scattered ops in one batch make exactly the tables the same ops
 * make one call at a time (and the same ranges), for MAP, UNMAP to zero
 * or to no access, and COPY whose source an earlier op of the batch
 * wrote, unmapped or copied. */
static void update_scattered_tables(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle pool = alloc_in(a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), 256u << 10);
    pattern(a, pool, 9);
    enum { N = 300 };
    struct vidmm_gpuva_update_op *ops = calloc(N, sizeof *ops);
    struct vidmm_gpuva_range *q[2] = { calloc(4 * N + 8, sizeof **q), calloc(4 * N + 8, sizeof **q) };
    T_CHECK(ops && q[0] && q[1]);
    uint64_t seed = t_seed(), rng = seed;
    const uint64_t at = 0x100000000000ull, span = 64ull << 30;
    for (int round = 0; ops && q[0] && q[1] && round < 4; round++) {
        for (int i = 0; i < N; i++)
            scattered_op(&rng, at, pool, &ops[i]);
        /* COPY sources drawn from the earlier targets half of the time. */
        for (int i = 1; i < N; i++)
            if (ops[i].type == VIDMM_GPUVA_UPDATE_COPY && t_rand_range(&rng, 2))
                ops[i].source = ops[t_rand_range(&rng, (uint64_t)i)].va;
        uint64_t bytes[2], tables[2];
        uint32_t nq[2] = { 0, 0 };
        vidmm_handle proc[2] = { 0, 0 };
        for (int one_by_one = 0; one_by_one < 2; one_by_one++) {
            uint64_t r = 0;
            T_ST(vidmm_process_create(a, &proc[one_by_one]), VIDMM_OK);
            T_ST(vidmm_gpuva_reserve(a, proc[one_by_one], at, 0, 0, span, VIDMM_GPUVA_RESERVE_NO_ACCESS, &r), VIDMM_OK);
            if (one_by_one)
                for (int i = 0; i < N; i++)
                    T_ST(vidmm_gpuva_update(a, proc[1], &ops[i], 1), VIDMM_OK);
            else
                T_ST(vidmm_gpuva_update(a, proc[0], ops, N), VIDMM_OK);
            pt_usage(a, proc[one_by_one], &bytes[one_by_one], &tables[one_by_one]);
            T_ST(vidmm_gpuva_query(a, proc[one_by_one], 0, q[one_by_one], 4 * N + 8, &nq[one_by_one]), VIDMM_OK);
            T_CHECK(rules_clean(a));
        }
        /* The GPU sees the same at every target's ends in both. */
        for (int i = 0; i < N; i++) {
            uint64_t last = ops[i].va + ops[i].size - 4096;
            T_EQ(gpu_faults(&f, proc[0], ops[i].va), gpu_faults(&f, proc[1], ops[i].va));
            T_EQ(gpu_faults(&f, proc[0], last), gpu_faults(&f, proc[1], last));
        }
        for (int k = 0; k < 2; k++)
            T_ST(vidmm_process_destroy(a, proc[k]), VIDMM_OK);
        if (bytes[0] != bytes[1] || tables[0] != tables[1] || nq[0] != nq[1])
            fprintf(stderr, "update_scattered_tables: seed %llu round %d: batch %llu B in %llu tables, %u ranges; "
                            "one by one %llu B in %llu tables, %u ranges\n", (unsigned long long)seed, round,
                    (unsigned long long)bytes[0], (unsigned long long)tables[0], nq[0],
                    (unsigned long long)bytes[1], (unsigned long long)tables[1], nq[1]);
        T_EQ_U64(bytes[0], bytes[1]);
        T_EQ_U64(tables[0], tables[1]);
        T_EQ(nq[0], nq[1]);
        T_CHECK(nq[0] == nq[1] && memcmp(q[0], q[1], nq[0] * sizeof **q) == 0);
    }
    free(ops);
    free(q[0]);
    free(q[1]);
    vidmm_allocation_destroy(a, pool);
    fx_close(&f);
}

/* 64 KB leaf entries where allocation and segment allow; the one-way
 * switch to 4 KB entries when a 4 KB need appears in the leaf's span. */
static void pages_64k(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle proc = 0;
    T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
    uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    vidmm_handle h = alloc_in(a, set, 1u << 20);
    pattern(a, h, 64);
    uint64_t va = 0x500000000ull, out;
    T_ST(vidmm_gpuva_map(a, proc, va, 0, 0, h, 0, 1u << 20, 0, 0, &out), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va), 65536);
    T_CHECK(gpu_sees(&f, proc, va, 0, 1u << 20, 64));
    /* Another 64 KB segment: still 64 KB entries. */
    T_ST(vidmm_allocation_move(a, h, 1), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va + (512u << 10)), 65536);
    T_CHECK(gpu_sees(&f, proc, va, 0, 1u << 20, 64));
    /* System memory has 4 KB pages: the leaf switches, and stays switched. */
    T_ST(vidmm_allocation_move(a, h, 0), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va), 4096);
    T_CHECK(gpu_sees(&f, proc, va, 0, 1u << 20, 64));
    T_ST(vidmm_allocation_move(a, h, 2), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va), 4096);
    T_CHECK(gpu_sees(&f, proc, va, 0, 1u << 20, 64));
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    /* A fresh 64 KB leaf elsewhere; a 4 KB-granular unmap inside it
     * switches it, and the rest of the mapping still reads right. */
    uint64_t vb = 0x600000000ull;
    T_ST(vidmm_gpuva_map(a, proc, vb, 0, 0, h, 0, 1u << 20, 0, 0, &out), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, vb), 65536);
    T_ST(vidmm_gpuva_unmap(a, proc, vb + 4096, 4096), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, vb), 4096);
    T_CHECK(gpu_faults(&f, proc, vb + 4096));
    T_CHECK(gpu_sees(&f, proc, vb, 0, 4096, 64));
    T_CHECK(gpu_sees(&f, proc, vb + 8192, 8192, (1u << 20) - 8192, 64));
    /* A 4 KB-aligned mapping next to 64 KB ones switches only its own leaf. */
    uint64_t vc = 0x700000000ull;
    T_ST(vidmm_gpuva_map(a, proc, vc, 0, 0, h, 0, 256u << 10, 0, 0, &out), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, vc), 65536);
    T_ST(vidmm_gpuva_map(a, proc, vc + (256u << 10), 0, 0, h, 4096, 64u << 10, 0, 0, &out), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, vc), 4096);
    T_CHECK(gpu_sees(&f, proc, vc, 0, 256u << 10, 64));
    T_CHECK(gpu_sees(&f, proc, vc + (256u << 10), 4096, 64u << 10, 64));
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(a, proc, &pi), VIDMM_OK);
    T_CHECK(pi.page_tables >= 3);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    vidmm_allocation_destroy(a, h);
    T_CHECK(gpu_faults(&f, proc, va));
    fx_close(&f);
}

/* A fixed-address map over a range that is partly free and partly a
 * plain mapping held by a 64 KB leaf, starting inside a 64 KB page: the
 * VA space accepts it, so the prepare must switch the leaf to 4 KB
 * entries first (the old mapping's cut and the new pages are 4 KB
 * granular).  Both mappings then read right and the rules hold. */
static void map_over_mixed_64k(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle proc = 0;
    T_ST(vidmm_process_create(a, &proc), VIDMM_OK);
    uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    vidmm_handle old = alloc_in(a, set, 128u << 10), nw = alloc_in(a, set, 1u << 20);
    pattern(a, old, 71);
    pattern(a, nw, 72);
    uint64_t va = 0x10000, out;
    T_ST(vidmm_gpuva_map(a, proc, va, 0, 0, old, 0, 128u << 10, 0, 0, &out), VIDMM_OK);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va), 65536);
    /* From 0x12000 (8 KiB into the old mapping) through free space. */
    T_ST(vidmm_gpuva_map(a, proc, va + 8192, 0, 0, nw, 0, 640u << 10, 0, 0, &out), VIDMM_OK);
    T_EQ_U64(out, va + 8192);
    T_EQ(gv_leaf_page_size(f.a, f.sg, proc, va), 4096);
    T_CHECK(gpu_sees(&f, proc, va, 0, 8192, 71));
    T_CHECK(gpu_sees(&f, proc, va + 8192, 0, 640u << 10, 72));
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_EQ(vidmm_adapter_check_rules(a, NULL, 0), 0);
    vidmm_allocation_destroy(a, old);
    vidmm_allocation_destroy(a, nw);
    fx_close(&f);
}

/* IoMmu (igpu): the GPU uses the CPU's address of the system pages; no
 * GPU page tables; only system memory is reachable. */
static void iommu_mode(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "igpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    vidmm_handle h = alloc_in(a, VIDMM_SEGMENT_BIT(1), 256u << 10);
    void *cpu = NULL;
    T_ST(vidmm_allocation_lock(a, h, &cpu), VIDMM_OK);
    T_ST(vidmm_allocation_unlock(a, h), VIDMM_OK);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(a, p, 0, 0, 0, h, 64u << 10, 128u << 10, 0, 0, &va), VIDMM_OK);
    T_EQ_U64(va, (uint64_t)(uintptr_t)cpu + (64u << 10));
    /* Same address when it moves between system memory and the aperture. */
    T_ST(vidmm_allocation_move(a, h, 0), VIDMM_OK);
    uint64_t va2 = 0;
    T_ST(vidmm_gpuva_map(a, p, 0, 0, 0, h, 0, 64u << 10, 0, 0, &va2), VIDMM_OK);
    T_EQ_U64(va2, (uint64_t)(uintptr_t)cpu);
    struct vidmm_gpuva_range r[4];
    uint32_t n = 0;
    T_ST(vidmm_gpuva_query(a, p, 0, r, 4, &n), VIDMM_OK);
    T_EQ(n, 2);
    uint64_t out = 0;
    T_ST(vidmm_gpuva_map(a, p, 0x10000, 0, 0, h, 0, 4096, 0, 0, &out), VIDMM_E_INVALID_ARG); /* not its address */
    T_ST(vidmm_gpuva_reserve(a, p, 0, 0, 0, 1u << 20, 0, &out), VIDMM_E_NOT_SUPPORTED);
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(a, p, &root), VIDMM_E_NOT_SUPPORTED);
    T_ST(vidmm_gpuva_unmap(a, p, va, 128u << 10), VIDMM_OK);
    T_ST(vidmm_gpuva_query(a, p, 0, r, 4, &n), VIDMM_OK);
    T_EQ(n, 1);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_ST(vidmm_allocation_destroy(a, h), VIDMM_OK);
    T_ST(vidmm_gpuva_query(a, p, 0, r, 4, &n), VIDMM_OK);
    T_EQ(n, 0);
    fx_close(&f);
}

void suite_process(void);
void suite_process(void)
{
    t_run("process.map_read_move_unmap", map_read_move_unmap);
    t_run("process.reservations", reservations);
    t_run("process.isolation", isolation);
    t_run("process.walker_agrees", walker_agrees);
    t_run("process.update_batches", update_batches);
    t_run("process.update_tables_follow_pages", update_tables_follow_pages);
    t_run("process.update_scattered_tables", update_scattered_tables);
    t_run("process.pages_64k", pages_64k);
    t_run("process.map_over_mixed_64k", map_over_mixed_64k);
    t_run("process.iommu_mode", iommu_mode);
    t_run("process.no_gpummu_and_oom", no_gpummu_and_oom);
}
