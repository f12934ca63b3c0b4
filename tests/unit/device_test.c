/*
 * device_test.c - devices and contexts inside processes: typed handles
 * (stale, other type, other adapter, 65,536 reuses of a slot), root
 * binding of virtual contexts, the error state after a page fault (the
 * faulting device only; a process-level report hits all its devices;
 * other processes go on), teardown with the process, bad input, and a
 * host out-of-memory sweep.  vidmm_adapter_check() after every step.
 */
#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "softgpu_fixture.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdlib.h>
#include <string.h>

static const struct vidmm_context_desc VIRT = { 0, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
static const struct vidmm_context_desc PHYS = { 0, VIDMM_CONTEXT_PHYSICAL, 0, 0 };

static void lifecycle(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0, d = 0, c1 = 0, c2 = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d), VIDMM_OK);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_ST(vidmm_context_create(a, d, &VIRT, &c1), VIDMM_OK);
    T_ST(vidmm_context_create(a, d, &PHYS, &c2), VIDMM_OK);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    struct vidmm_device_info di;
    T_ST(vidmm_device_query(a, d, &di), VIDMM_OK);
    T_EQ_U64(di.process, p);
    T_EQ(di.contexts, 2);
    T_EQ(di.lost, 0);
    struct vidmm_context_info ci;
    T_ST(vidmm_context_query(a, c1, &ci), VIDMM_OK);
    T_EQ_U64(ci.device, d);
    T_EQ_U64(ci.process, p);
    T_EQ(ci.mode, VIDMM_CONTEXT_VIRTUAL);
    T_EQ(ci.root_bound, 1);
    T_ST(vidmm_context_query(a, c2, &ci), VIDMM_OK);
    T_EQ(ci.mode, VIDMM_CONTEXT_PHYSICAL);
    T_EQ(ci.root_bound, 0);
    /* Handles are typed: each is refused where another type is expected. */
    T_ST(vidmm_device_query(a, c1, &di), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_query(a, p, &di), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_query(a, d, &ci), VIDMM_E_INVALID_HANDLE);
    vidmm_handle scratch = 0;
    T_ST(vidmm_device_create(a, d, &scratch), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_create(a, p, &VIRT, &scratch), VIDMM_E_INVALID_HANDLE);
    T_EQ_U64(scratch, 0);
    T_ST(vidmm_process_destroy(a, d), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_destroy(a, c1), VIDMM_OK);
    T_ST(vidmm_context_query(a, c1, &ci), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_destroy(a, c1), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_query(a, d, &di), VIDMM_OK);
    T_EQ(di.contexts, 1);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    /* Destroying the process destroys its devices and their contexts. */
    vidmm_handle d2 = 0, c3 = 0;
    T_ST(vidmm_device_create(a, p, &d2), VIDMM_OK);
    T_ST(vidmm_context_create(a, d2, &VIRT, &c3), VIDMM_OK);
    T_ST(vidmm_process_destroy(a, p), VIDMM_OK);
    T_ST(vidmm_device_query(a, d, &di), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_query(a, d2, &di), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_query(a, c2, &ci), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_query(a, c3, &ci), VIDMM_E_INVALID_HANDLE);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    softgpu_fx_close(&f);
}

/* A handle of one adapter means nothing to another. */
static void other_adapter(void)
{
    struct softgpu_fx f, g;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    if (softgpu_fx_open_preset(&g, "dgpu") < 0) {
        softgpu_fx_close(&f);
        return;
    }
    vidmm_handle p = 0, d = 0, c = 0, q = 0, e = 0;
    T_ST(vidmm_process_create(f.a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(f.a, p, &d), VIDMM_OK);
    T_ST(vidmm_context_create(f.a, d, &VIRT, &c), VIDMM_OK);
    T_ST(vidmm_process_create(g.a, &q), VIDMM_OK);
    T_ST(vidmm_device_create(g.a, q, &e), VIDMM_OK);
    struct vidmm_device_info di;
    struct vidmm_context_info ci;
    if ((d >> 40 & 0xFFFF) != (e >> 40 & 0xFFFF)) {   /* salts differ (65535 in 65536) */
        T_ST(vidmm_device_query(g.a, d, &di), VIDMM_E_INVALID_HANDLE);
        T_ST(vidmm_context_query(g.a, c, &ci), VIDMM_E_INVALID_HANDLE);
        T_ST(vidmm_device_create(g.a, p, &e), VIDMM_E_INVALID_HANDLE);
    }
    softgpu_fx_close(&g);
    softgpu_fx_close(&f);
}

/* A stale handle stays invalid however often its slot is reused:
 * 70,000 create/destroy cycles on one slot, the first handle checked at
 * every step (the slot is retired when its generation would wrap). */
static void stale_after_reuse(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0, first = 0, d = 0, firstc = 0, c = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &first), VIDMM_OK);
    T_ST(vidmm_context_create(a, first, &PHYS, &firstc), VIDMM_OK);
    T_ST(vidmm_context_destroy(a, firstc), VIDMM_OK);
    T_ST(vidmm_device_destroy(a, first), VIDMM_OK);
    struct vidmm_device_info di;
    struct vidmm_context_info ci;
    int bad = 0, reused = 0;
    for (int i = 0; i < 70000 && bad < 3; i++) {
        if (vidmm_device_create(a, p, &d) != VIDMM_OK || vidmm_context_create(a, d, &PHYS, &c) != VIDMM_OK) {
            bad++;
            break;
        }
        reused += (uint32_t)d == (uint32_t)first ? 0 : 0;
        if (vidmm_device_query(a, first, &di) != VIDMM_E_INVALID_HANDLE || d == first)
            bad++;
        if (vidmm_context_query(a, firstc, &ci) != VIDMM_E_INVALID_HANDLE || c == firstc)
            bad++;
        if ((d & 0xFFFFFF) == (first & 0xFFFFFF))
            reused++;
        if (vidmm_context_destroy(a, c) != VIDMM_OK || vidmm_device_destroy(a, d) != VIDMM_OK)
            bad++;
    }
    T_EQ(bad, 0);
    T_CHECK(reused >= 65534);   /* the first slot served until it was retired */
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    softgpu_fx_close(&f);
}

/* Allocation and process handles too: slot reuse never revives a stale
 * handle (the process part is long under valgrind: VIDMM_TEST_NO_BIG). */
static void stale_alloc_and_process(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    struct softgpu_alloc_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.kind = SOFTGPU_ALLOC_STAGING;
    sd.size = 4096;
    vidmm_handle first = 0, h = 0;
    T_ST(vidmm_allocation_create(a, &sd, sizeof sd, &first), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(a, first), VIDMM_OK);
    int bad = 0, same_slot = 0;
    for (int i = 0; i < 70000 && !bad; i++) {
        if (vidmm_allocation_create(a, &sd, sizeof sd, &h) != VIDMM_OK)
            bad++;
        if (h == first || vidmm_allocation_destroy(a, first) != VIDMM_E_INVALID_HANDLE)
            bad++;
        same_slot += (h & 0xFFFFFF) == (first & 0xFFFFFF);
        if (vidmm_allocation_destroy(a, h) != VIDMM_OK)
            bad++;
    }
    T_EQ(bad, 0);
    T_EQ(same_slot, 65534);   /* generations 2..0xFFFF, then the slot is retired */
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    const char *nobig = getenv("VIDMM_TEST_NO_BIG");
    if (!nobig || !*nobig) {
        vidmm_handle p0 = 0, p = 0;
        T_ST(vidmm_process_create(a, &p0), VIDMM_OK);
        T_ST(vidmm_process_destroy(a, p0), VIDMM_OK);
        struct vidmm_process_info pi;
        bad = 0;
        same_slot = 0;
        for (int i = 0; i < 66000 && !bad; i++) {
            if (vidmm_process_create(a, &p) != VIDMM_OK)
                bad++;
            if (p == p0 || vidmm_process_query(a, p0, &pi) != VIDMM_E_INVALID_HANDLE)
                bad++;
            same_slot += (p & 0xFFFFFF) == (p0 & 0xFFFFFF);
            if (vidmm_process_destroy(a, p) != VIDMM_OK)
                bad++;
        }
        T_EQ(bad, 0);
        T_EQ(same_slot, 65534);
    }
    softgpu_fx_close(&f);
}

/* The error state follows the token of the fault report. */
static void fault_state(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0, q = 0, d1 = 0, d2 = 0, d3 = 0, c1 = 0, c2 = 0, c3 = 0, cx = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_process_create(a, &q), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d1), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d2), VIDMM_OK);
    T_ST(vidmm_device_create(a, q, &d3), VIDMM_OK);
    T_ST(vidmm_context_create(a, d1, &VIRT, &c1), VIDMM_OK);
    T_ST(vidmm_context_create(a, d2, &VIRT, &c2), VIDMM_OK);
    T_ST(vidmm_context_create(a, d3, &VIRT, &c3), VIDMM_OK);
    /* The driver reports a fault of c1 (as DxgkCbNotifyInterrupt would). */
    vidmm_cb_notify_page_fault(a, c1, 0x12345000ull, VIDMM_FAULT_WRITE | VIDMM_FAULT_NOT_PRESENT);
    struct vidmm_device_info di;
    T_ST(vidmm_device_query(a, d1, &di), VIDMM_OK);
    T_EQ(di.lost, 1);
    T_EQ_U64(di.fault_va, 0x12345000ull);
    T_EQ(di.fault_flags, VIDMM_FAULT_WRITE | VIDMM_FAULT_NOT_PRESENT);
    T_EQ_U64(di.faults, 1);
    T_ST(vidmm_device_query(a, d2, &di), VIDMM_OK);
    T_EQ(di.lost, 0);
    T_ST(vidmm_device_query(a, d3, &di), VIDMM_OK);
    T_EQ(di.lost, 0);
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(a, p, &pi), VIDMM_OK);
    T_EQ(pi.faulted, 1);
    T_ST(vidmm_process_query(a, q, &pi), VIDMM_OK);
    T_EQ(pi.faulted, 0);
    /* A lost device takes no new context; the others do. */
    T_ST(vidmm_context_create(a, d1, &VIRT, &cx), VIDMM_E_DEVICE_LOST);
    T_EQ_U64(cx, 0);
    T_ST(vidmm_context_create(a, d2, &PHYS, &cx), VIDMM_OK);
    /* The other process's VA space still changes. */
    uint64_t va = 0;
    T_ST(vidmm_gpuva_reserve(a, q, 0, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(a, p, 0, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va), VIDMM_E_DEVICE_LOST);
    /* A process-level report puts all the process's devices in error. */
    vidmm_cb_notify_page_fault(a, q, 0x777000ull, VIDMM_FAULT_EXECUTE);
    T_ST(vidmm_device_query(a, d3, &di), VIDMM_OK);
    T_EQ(di.lost, 1);
    T_EQ(di.fault_flags, VIDMM_FAULT_EXECUTE);
    /* Reports naming a dead context are ignored. */
    T_ST(vidmm_context_destroy(a, c2), VIDMM_OK);
    vidmm_cb_notify_page_fault(a, c2, 0x1000ull, 0);
    T_ST(vidmm_device_query(a, d2, &di), VIDMM_OK);
    T_EQ(di.lost, 0);
    T_EQ_U64(di.faults, 0);
    /* A lost device is still destroyed cleanly. */
    T_ST(vidmm_device_destroy(a, d1), VIDMM_OK);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    (void)c3;
    softgpu_fx_close(&f);
}

/* A GPU access through the softgpu MMU that faults reaches the process's
 * devices through the root binding. */
static void softgpu_fault_reaches_device(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0, d = 0, c = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d), VIDMM_OK);
    T_ST(vidmm_context_create(a, d, &VIRT, &c), VIDMM_OK);
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(a, p, &root), VIDMM_OK);
    uint32_t word = 0;
    T_ST(softgpu_read_virtual(f.sg, &root, 0x40000000ull, &word, sizeof word), VIDMM_E_PAGE_FAULT);
    struct vidmm_device_info di;
    T_ST(vidmm_device_query(a, d, &di), VIDMM_OK);
    T_EQ(di.lost, 1);
    T_EQ_U64(di.fault_va, 0x40000000ull);
    T_EQ(di.fault_flags, VIDMM_FAULT_NOT_PRESENT);
    softgpu_fx_close(&f);
}

/* IoMmu adapters have virtual contexts too, with no root to bind. */
static void iommu_contexts(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "igpu") < 0)
        return;
    vidmm_handle p = 0, d = 0, c = 0;
    T_ST(vidmm_process_create(f.a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(f.a, p, &d), VIDMM_OK);
    T_ST(vidmm_context_create(f.a, d, &VIRT, &c), VIDMM_OK);
    struct vidmm_context_info ci;
    T_ST(vidmm_context_query(f.a, c, &ci), VIDMM_OK);
    T_EQ(ci.root_bound, 0);
    softgpu_fx_close(&f);
}

/* Bad input gets its status and changes nothing. */
static void bad_input(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    struct vidmm_adapter *a = f.a;
    vidmm_handle p = 0, d = 0, c = 7;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d), VIDMM_OK);
    int64_t blocks = f.fa.live_blocks;
    struct vidmm_device_info di;
    struct vidmm_context_info ci;
    T_ST(vidmm_device_create(NULL, p, &c), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_create(a, p, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_create(a, 0, &c), VIDMM_E_INVALID_HANDLE);
    T_EQ_U64(c, 0);
    T_ST(vidmm_device_destroy(NULL, d), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_destroy(a, 0), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_destroy(a, d ^ (1ull << 24)), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_query(NULL, d, &di), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_query(a, d, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_context_desc bad[] = {
        { 3, VIDMM_CONTEXT_VIRTUAL, 0, 0 },   /* softgpu declares three nodes (0-2) */
        { 0, 2, 0, 0 },
        { 0, VIDMM_CONTEXT_PHYSICAL, 1, 0 },
        { 0, VIDMM_CONTEXT_PHYSICAL, 0, 1 },
        { UINT32_MAX, VIDMM_CONTEXT_PHYSICAL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = 7;
        T_ST(vidmm_context_create(a, d, &bad[i], &c), VIDMM_E_INVALID_ARG);
        T_EQ_U64(c, 0);
    }
    T_ST(vidmm_context_create(NULL, d, &VIRT, &c), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_context_create(a, d, NULL, &c), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_context_create(a, d, &VIRT, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_context_destroy(NULL, c), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_context_destroy(a, 0), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_query(a, 0, &ci), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_query(NULL, 0, &ci), VIDMM_E_INVALID_ARG);
    T_EQ(f.fa.live_blocks, blocks);
    T_ST(vidmm_device_query(a, d, &di), VIDMM_OK);
    T_EQ(di.contexts, 0);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    softgpu_fx_close(&f);
}

/* Every host allocation of device and context creation refused in turn:
 * the call says so, every check is clean, nothing leaks, and once the
 * injection stops the same calls succeed.  Each k runs on a fresh adapter
 * so that the handle tables' first growth is refused too; a second pass
 * with the tables in place checks the host blocks exactly. */
static int create_pair(struct softgpu_fx *f, vidmm_handle p, uint64_t k, int64_t *leak)
{
    vidmm_handle d = 0, c = 0;
    int64_t blocks = f->fa.live_blocks;
    f->fa.fail_at = k ? f->fa.calls + k : 0;
    vidmm_status st = vidmm_device_create(f->a, p, &d);
    if (st == VIDMM_OK)
        st = vidmm_context_create(f->a, d, &VIRT, &c);
    int failed = f->fa.failures > 0;
    f->fa.fail_at = 0;
    f->fa.failures = 0;
    T_EQ(vidmm_adapter_check(f->a, NULL, 0), 0);
    T_ST(st, failed ? VIDMM_E_NO_HOST_MEMORY : VIDMM_OK);
    if (d)
        T_ST(vidmm_device_destroy(f->a, d), VIDMM_OK);
    *leak = f->fa.live_blocks - blocks;
    return failed;
}

static void oom_sweep(void)
{
    int sites = 0;
    for (uint64_t k = 1; k < 32; k++) {
        struct softgpu_fx f;
        if (softgpu_fx_open_preset(&f, "dgpu") < 0)
            return;
        vidmm_handle p = 0;
        int64_t leak = 0;
        T_ST(vidmm_process_create(f.a, &p), VIDMM_OK);
        int failed = create_pair(&f, p, k, &leak);
        if (failed) {
            sites++;
            T_EQ(create_pair(&f, p, 0, &leak), 0);   /* succeeds once injection stops */
        }
        softgpu_fx_close(&f);   /* checks that every host block came back */
        if (!failed)
            break;
    }
    T_EQ(sites, 8);   /* device, 3 device-table arrays, context, 3 context-table arrays */
    struct softgpu_fx f;
    if (softgpu_fx_open_preset(&f, "dgpu") < 0)
        return;
    vidmm_handle p = 0;
    int64_t leak = 0;
    T_ST(vidmm_process_create(f.a, &p), VIDMM_OK);
    T_EQ(create_pair(&f, p, 0, &leak), 0);
    for (uint64_t k = 1; k <= 2; k++) {
        T_EQ(create_pair(&f, p, k, &leak), 1);
        T_EQ(leak, 0);
    }
    T_EQ(create_pair(&f, p, 3, &leak), 0);
    T_EQ(leak, 0);
    softgpu_fx_close(&f);
}

/* A 2-level geometry: the root is resizable.  It starts small, grows
 * when a VA past its entries is reserved (the old entries stay, every
 * binding moves to the new root), and the GPU faults past NumEntries. */
static void resizable_root(void)
{
    struct softgpu_fx f;
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 64ull << 20, 128ull << 20, 0);
    cfg.mmu_levels = 2;
    if (softgpu_open(&f.fa, &cfg, NULL, 0, &f.sg, &f.a))
        return;
    struct vidmm_adapter *a = f.a;
    struct vidmm_gpummu_info g;
    T_ST(vidmm_adapter_query_gpummu(a, &g), VIDMM_OK);
    T_EQ(g.level_count, 2);
    T_EQ(g.root_resizable, 1);
    uint64_t root_span = g.leaf_span[0];   /* VA one root entry covers */
    vidmm_handle p = 0, d = 0, c = 0;
    T_ST(vidmm_process_create(a, &p), VIDMM_OK);
    T_ST(vidmm_device_create(a, p, &d), VIDMM_OK);
    T_ST(vidmm_context_create(a, d, &VIRT, &c), VIDMM_OK);
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(a, p, &pi), VIDMM_OK);
    uint32_t first_entries = pi.root_entries;
    T_CHECK(first_entries >= 1 && first_entries < (1u << 20));
    T_EQ_U64(pi.root_grows, 0);
    /* A mapping below the root's reach, read through the walker. */
    struct softgpu_alloc_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.kind = SOFTGPU_ALLOC_EXPLICIT;
    sd.info.size = 1u << 20;
    sd.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(2);
    sd.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    vidmm_handle h = 0;
    T_ST(vidmm_allocation_create(a, &sd, sizeof sd, &h), VIDMM_OK);
    uint64_t low = 0, high = 0;
    T_ST(vidmm_gpuva_map(a, p, root_span, 0, 0, h, 0, 1u << 20, 0, 0, &low), VIDMM_OK);
    struct vidmm_physical_address root0, root1;
    T_ST(vidmm_process_root_page_table(a, p, &root0), VIDMM_OK);
    struct softgpu_translation t;
    T_ST(softgpu_translate(f.sg, &root0, low, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    /* Past the root's entries: the GPU faults (NumEntries), then the root
     * grows for a mapping there. */
    uint64_t far = (uint64_t)(first_entries + 5) * root_span;
    T_ST(softgpu_translate(f.sg, &root0, far, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    T_ST(vidmm_gpuva_map(a, p, far, 0, 0, h, 0, 1u << 20, 0, 0, &high), VIDMM_OK);
    T_EQ_U64(high, far);
    T_ST(vidmm_process_query(a, p, &pi), VIDMM_OK);
    T_CHECK(pi.root_entries > first_entries + 5);
    T_EQ_U64(pi.root_grows, 1);
    T_ST(vidmm_process_root_page_table(a, p, &root1), VIDMM_OK);
    T_CHECK(root1.segment_offset != root0.segment_offset || root1.segment_id != root0.segment_id);
    /* Both mappings translate to the same bytes through the new root. */
    struct softgpu_translation t1, t2;
    T_ST(softgpu_translate(f.sg, &root1, low, SOFTGPU_ACCESS_READ, &t1), VIDMM_OK);
    T_ST(softgpu_translate(f.sg, &root1, high, SOFTGPU_ACCESS_READ, &t2), VIDMM_OK);
    T_EQ_U64(t1.offset, t2.offset);
    struct vidmm_context_info cinfo;
    T_ST(vidmm_context_query(a, c, &cinfo), VIDMM_OK);
    T_EQ(cinfo.root_bound, 1);
    /* A fault through the new root still reaches this process. */
    uint32_t w = 0;
    T_ST(softgpu_read_virtual(f.sg, &root1, far + (4u << 20), &w, sizeof w), VIDMM_E_PAGE_FAULT);
    T_ST(vidmm_process_query(a, p, &pi), VIDMM_OK);
    T_EQ(pi.faulted, 1);
    T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
    T_ST(vidmm_process_destroy(a, p), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(a, h), VIDMM_OK);
    softgpu_fx_close(&f);
}

void suite_device(void);
void suite_device(void)
{
    t_run("device.lifecycle", lifecycle);
    t_run("device.other_adapter", other_adapter);
    t_run("device.stale_after_reuse", stale_after_reuse);
    t_run("device.stale_alloc_and_process", stale_alloc_and_process);
    t_run("device.fault_state", fault_state);
    t_run("device.softgpu_fault_reaches_device", softgpu_fault_reaches_device);
    t_run("device.iommu_contexts", iommu_contexts);
    t_run("device.bad_input", bad_input);
    t_run("device.oom_sweep", oom_sweep);
    t_run("device.resizable_root", resizable_root);
}
