/*
 * vpaging_test.c - content moves in GpuMmu mode: the system paging
 * process, its scratch VA window and the TRANSFER_VIRTUAL / FILL_VIRTUAL
 * operations, end to end on softgpu.
 *
 * Oracles that know nothing of vidmm's bookkeeping: softgpu_read_physical
 * over an allocation's physical ranges, the CPU through lock, and
 * softgpu's MMU walker (a process mapping read at its VA; the paging
 * process's window probed between moves).  Every test runs the adapter
 * and device checkers after its steps.
 *
 * The families: dgpu and big advertise the virtual ops and must never
 * see a physical TRANSFER or FILL; wddm1 (and dgpu told to advertise
 * nothing) must never see a virtual one.  Restarts: softgpu's
 * inject_insufficient_dma, and a wrapper driver around softgpu that
 * refuses one chosen build call (swept over every call of a move) or
 * gives a virtual operation room for one command only, so the restart
 * falls in the middle of the operation.
 */
#include "alloc_common.h"
#include "softgpu_int.h"

#include <stdlib.h>
#include <string.h>

#define B(id) VIDMM_SEGMENT_BIT(id)
#define VCMD 56u   /* bytes of one softgpu virtual paging command */

/* ---- fixture: softgpu behind a wrapper driver -------------------------- */

struct vp_fx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_driver_ops ops;
    uint64_t builds;            /* build_paging_buffer calls */
    uint64_t fail_at;           /* refuse this call (INSUFFICIENT, nothing written); 0 = never */
    uint64_t refused;
    int short_virtual;          /* virtual ops: room for one command per call */
    uint64_t mid_op_restarts;   /* virtual ops answered INSUFFICIENT after writing */
    /* TRANSFER_VIRTUAL requests seen, by DXGK_TRANSFERVIRTUALFLAGS (0-3),
     * and the addresses of the last one. */
    uint64_t tv_flags[4];
    uint64_t tv_src, tv_dst;
    uint64_t pt_updates_64k;    /* UPDATE_PAGE_TABLE of 64 KB leaf entries */
    char err[256];
};

static const struct vidmm_driver_ops *sgo(void) { return softgpu_driver_ops(); }
static struct softgpu *sgof(void *d) { return ((struct vp_fx *)d)->sg; }

static vidmm_status w_query(void *d, const struct vidmm_query_adapter_info_args *a)
{
    return sgo()->query_adapter_info(sgof(d), a);
}
static vidmm_status w_describe(void *d, struct vidmm_describe_allocation_args *a)
{
    return sgo()->describe_allocation(sgof(d), a);
}
static vidmm_status w_submit(void *d, const struct vidmm_submit_command_args *a)
{
    return sgo()->submit_command(sgof(d), a);
}
static vidmm_status w_map_hap(void *d, const struct vidmm_map_cpu_host_aperture_args *a)
{
    return sgo()->map_cpu_host_aperture(sgof(d), a);
}
static vidmm_status w_unmap_hap(void *d, const struct vidmm_unmap_cpu_host_aperture_args *a)
{
    return sgo()->unmap_cpu_host_aperture(sgof(d), a);
}
static void w_set_root(void *d, const struct vidmm_set_root_page_table_args *a)
{
    sgo()->set_root_page_table(sgof(d), a);
}
/* Resets (a paging fault resets the adapter, D31). */
static vidmm_status w_reset_engine(void *d, struct vidmm_reset_engine_args *a)
{
    return sgo()->reset_engine(sgof(d), a);
}
static vidmm_status w_engine_status(void *d, uint32_t node, uint32_t *responsive)
{
    return sgo()->query_engine_status(sgof(d), node, responsive);
}
static vidmm_status w_reset(void *d) { return sgo()->reset_from_timeout(sgof(d)); }
static vidmm_status w_restart(void *d) { return sgo()->restart_from_timeout(sgof(d)); }
static vidmm_status w_power(void *d, uint32_t state) { return sgo()->set_power_state(sgof(d), state); }

static uint64_t w_root_size(void *d, uint32_t *n)
{
    return sgo()->get_root_page_table_size(sgof(d), n);
}

static vidmm_status w_build(void *d, struct vidmm_build_paging_buffer_args *a)
{
    struct vp_fx *f = d;
    f->builds++;
    if (a->operation == VIDMM_PAGING_TRANSFER_VIRTUAL && !a->multipass_offset) {
        f->tv_flags[a->u.transfer_virtual.flags & 3u]++;
        f->tv_src = a->u.transfer_virtual.source_virtual_address;
        f->tv_dst = a->u.transfer_virtual.destination_virtual_address;
    }
    if (a->operation == VIDMM_PAGING_UPDATE_PAGE_TABLE && (a->u.update_page_table.flags & VIDMM_UPDATE_PT_USE_64KB_PAGES))
        f->pt_updates_64k++;
    if (f->fail_at && f->builds == f->fail_at) {
        f->refused++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    int virt = a->operation == VIDMM_PAGING_TRANSFER_VIRTUAL || a->operation == VIDMM_PAGING_FILL_VIRTUAL;
    if (f->short_virtual && virt && a->dma_size > VCMD) {
        /* Room for one command: an operation of several commands is
         * answered INSUFFICIENT with its progress in multipass_offset. */
        uint32_t rest = a->dma_size - VCMD;
        a->dma_size = VCMD;
        vidmm_status st = sgo()->build_paging_buffer(f->sg, a);
        a->dma_size += rest;
        if (st == VIDMM_E_INSUFFICIENT_DMA_BUFFER && a->multipass_offset)
            f->mid_op_restarts++;
        return st;
    }
    return sgo()->build_paging_buffer(f->sg, a);
}

struct vp_cfg {
    const char *preset;
    uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1];
    uint32_t paging_ops;
    uint32_t mmu_levels;
    int synchronous;
};

static vidmm_status vp_open_st(struct vp_fx *f, const struct vp_cfg *c)
{
    struct fault_alloc keep = f->fa;
    memset(f, 0, sizeof *f);
    f->fa = keep;
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = c->preset;
    cfg.paging_ops = c->paging_ops;
    cfg.mmu_levels = c->mmu_levels;
    cfg.synchronous = c->synchronous;
    for (uint32_t i = 1; i <= SOFTGPU_MAX_SEGMENTS; i++)
        cfg.segment_size[i] = c->sizes[i];
    vidmm_status st = softgpu_create(&cfg, &f->sg);
    if (st < 0)
        return st;
    f->ops = *sgo();
    f->ops.query_adapter_info = w_query;
    f->ops.describe_allocation = w_describe;
    f->ops.build_paging_buffer = w_build;
    f->ops.submit_command = w_submit;
    f->ops.map_cpu_host_aperture = w_map_hap;
    f->ops.unmap_cpu_host_aperture = w_unmap_hap;
    f->ops.set_root_page_table = w_set_root;
    f->ops.get_root_page_table_size = w_root_size;
    f->ops.reset_engine = w_reset_engine;
    f->ops.query_engine_status = w_engine_status;
    f->ops.reset_from_timeout = w_reset;
    f->ops.restart_from_timeout = w_restart;
    f->ops.set_power_state = w_power;
    /* Contexts' work is not used through this wrapper. */
    f->ops.submit_command_virtual = NULL;
    f->ops.submit_command_physical = NULL;
    f->ops.patch = NULL;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(f->sg, &ci);
    ci.ops = &f->ops;
    ci.driver = f;
    ci.host_allocator = &f->fa.ha;
    ci.system_memory_limit = AC_MIB(256);
    ci.error_message = f->err;
    ci.error_message_size = sizeof f->err;
    return vidmm_adapter_open(&ci, &f->a);
}

static int vp_open(struct vp_fx *f, const struct vp_cfg *c)
{
    memset(&f->fa, 0, sizeof f->fa);
    fault_alloc_init(&f->fa);
    vidmm_status st = vp_open_st(f, c);
    T_ST(st, VIDMM_OK);
    if (st < 0) {
        fprintf(stderr, "  open %s: %s\n", c->preset, f->err);
        softgpu_destroy(f->sg);
        f->sg = NULL;
        return -1;
    }
    return 0;
}

static void vp_close(struct vp_fx *f)
{
    if (f->a) {
        CHECK_ADAPTER(f->a);
        vidmm_adapter_close(f->a);
    }
    if (f->sg) {
        T_EQ(softgpu_check(f->sg), 0);
        T_EQ(f->sg->nroots, 0);   /* every root binding, the paging process's too, was undone */
        softgpu_destroy(f->sg);
    }
    f->a = NULL;
    f->sg = NULL;
    T_EQ(f->fa.live_blocks, 0);
    T_EQ(f->fa.live_bytes, 0);
}

static struct vidmm_paging_process_info pp_info(struct vidmm_adapter *a)
{
    struct vidmm_paging_process_info pp;
    memset(&pp, 0, sizeof pp);
    T_ST(vidmm_adapter_query_paging_process(a, &pp), VIDMM_OK);
    return pp;
}

/* Between moves no scratch VA translates (the windows, 4 KB and 64 KB,
 * are invalidated): the first and last page of each, and every 64 KiB of
 * the first 2 MiB of each (where a move of up to 2 MiB mapped). */
static void expect_windows_invalid(struct vp_fx *f)
{
    struct vidmm_paging_process_info pp = pp_info(f->a);
    struct softgpu_translation t;
    uint64_t base[4] = { pp.scratch_va, pp.scratch_va + pp.window_size, pp.scratch_va_64k,
                         pp.scratch_va_64k + pp.window_size };
    for (int w = 0; w < 4; w++) {
        if (w >= 2 && !pp.scratch_va_64k)
            break;
        T_ST(softgpu_translate(f->sg, &pp.root, base[w], SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
        T_ST(softgpu_translate(f->sg, &pp.root, base[w] + pp.window_size - 4096, SOFTGPU_ACCESS_READ, &t),
             VIDMM_E_PAGE_FAULT);
        for (uint64_t o = AC_KIB(64); o < pp.window_size && o < AC_MIB(2); o += AC_KIB(64))
            if (softgpu_translate(f->sg, &pp.root, base[w] + o, SOFTGPU_ACCESS_READ, &t) != VIDMM_E_PAGE_FAULT) {
                T_CHECK(!"a scratch window page still translates between moves");
                break;
            }
    }
}

/* Which operation family moved content so far (fills too unless
 * no_fill: every allocation was created evicted, zeroed by the CPU). */
static void expect_family_ex(struct vp_fx *f, int virt, int no_fill)
{
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f->a, &ai), VIDMM_OK);
    struct softgpu_stats ss;
    softgpu_get_stats(f->sg, &ss);
    uint32_t on[2], off[2];
    on[0] = virt ? VIDMM_PAGING_TRANSFER_VIRTUAL : VIDMM_PAGING_TRANSFER;
    on[1] = virt ? VIDMM_PAGING_FILL_VIRTUAL : VIDMM_PAGING_FILL;
    off[0] = virt ? VIDMM_PAGING_TRANSFER : VIDMM_PAGING_TRANSFER_VIRTUAL;
    off[1] = virt ? VIDMM_PAGING_FILL : VIDMM_PAGING_FILL_VIRTUAL;
    for (int i = 0; i < 2; i++) {
        T_CHECK(ai.paging_ops[on[i]] > 0 || (i == 1 && no_fill));
        T_EQ_U64(ai.paging_ops[off[i]], 0);
        T_EQ_U64(ss.ops[on[i]], ai.paging_ops[on[i]]);       /* every one executed */
        T_EQ_U64(ss.bytes[on[i]], ai.paging_bytes[on[i]]);
        T_EQ_U64(ss.ops[off[i]], 0);
    }
    T_EQ_U64(ss.paging_faults, 0);
}

static void expect_family(struct vp_fx *f, int virt)
{
    expect_family_ex(f, virt, 0);
}

/* The allocation's bytes hold seed's pattern: through the GPU's physical
 * view where it has one, and through the CPU. */
static void verify(struct vp_fx *f, vidmm_handle h, uint64_t size, uint64_t seed, const char *when)
{
    int g = ac_verify_gpu(f->sg, f->a, h, size, seed);
    vidmm_status st = ac_verify(f->a, h, size, seed);
    if (g < 0 || st != VIDMM_OK)
        fprintf(stderr, "  bytes wrong %s (gpu %d, cpu %s)\n", when, g, vidmm_status_str(st));
    T_CHECK(g >= 0);
    T_ST(st, VIDMM_OK);
}

/* Through proc's page tables, [va, va+size) reads seed's pattern. */
static int gpu_reads(struct vp_fx *f, vidmm_handle proc, uint64_t va, uint64_t size, uint64_t seed)
{
    struct vidmm_physical_address root;
    if (vidmm_process_root_page_table(f->a, proc, &root) < 0)
        return 0;
    void *buf = malloc((size_t)size);
    if (!buf)
        return 0;
    int ok = softgpu_read_virtual(f->sg, &root, va, buf, (size_t)size) == VIDMM_OK &&
             ac_pattern_find_mismatch(buf, size, seed) == UINT64_MAX;
    free(buf);
    return ok;
}

/* Move, then check the bytes; returns the state right after the move
 * (the CPU check may move it again: a lock needs a CPU-reachable place). */
static struct vidmm_allocation_state move_checked(struct vp_fx *f, vidmm_handle h, uint32_t to, uint64_t size,
                                                  uint64_t seed)
{
    uint32_t from = ac_state(f->a, h).segment_id;
    T_ST(vidmm_allocation_move(f->a, h, to), VIDMM_OK);
    struct vidmm_allocation_state st = ac_state(f->a, h);
    char when[48];
    snprintf(when, sizeof when, "after move %u -> %u", from, to);
    verify(f, h, size, seed, when);
    CHECK_ADAPTER(f->a);
    return st;
}

/* ---- the paging process exists where it should ------------------------- */

static void layout(void)
{
    /* dgpu: the scratch area is a quarter of the largest memory segment
     * (4 GiB -> capped at 256 MiB), two windows of half of it. */
    struct vp_fx f;
    struct vp_cfg c = { "dgpu", { 0 }, 0, 0, 0 };
    if (vp_open(&f, &c))
        return;
    struct vidmm_paging_process_info pp = pp_info(f.a);
    T_EQ_U64(pp.window_size, AC_MIB(128));
    struct vidmm_gpummu_info g;
    T_ST(vidmm_adapter_query_gpummu(f.a, &g), VIDMM_OK);
    T_EQ_U64(pp.scratch_va, g.leaf_span[0]);   /* [0, one leaf span) never mapped */
    /* Bad arguments: a clear status, nothing written. */
    struct vidmm_paging_process_info keep;
    memset(&keep, 0xA5, sizeof keep);
    T_ST(vidmm_adapter_query_paging_process(NULL, &keep), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_adapter_query_paging_process(f.a, NULL), VIDMM_E_INVALID_ARG);
    T_EQ_U64(keep.scratch_va, 0xA5A5A5A5A5A5A5A5ull);
    T_EQ(pp.root.segment_id, g.level[g.level_count - 1].paging_process_page_table_segment_id);
    /* The 64 KB windows right after (288 MiB is a leaf-span boundary). */
    T_EQ_U64(pp.scratch_va_64k, pp.scratch_va + 2 * pp.window_size);
    T_EQ(pp.scratch_va_64k % g.leaf_span[0], 0);
    /* Root + one level-1 table + 8 leaves of 32 MiB of 4 KB entries and
     * 8 of 64 KB entries: all made at open. */
    T_EQ(pp.page_tables, 18);
    T_EQ_U64(pp.page_table_bytes, 18 * AC_KIB(64));
    T_EQ_U64(ac_seg(f.a, 2).committed, pp.page_table_bytes);   /* accounted in the segment */
    T_EQ_U64(pp.moves, 0);
    T_EQ_U64(pp.faults, 0);
    /* Bound for fault reports: softgpu knows the root. */
    T_EQ(f.sg->nroots, 1);
    T_EQ_U64(f.sg->roots[0].offset, pp.root.segment_offset);
    expect_windows_invalid(&f);
    CHECK_ADAPTER(f.a);
    vp_close(&f);

    /* Small segments: the 4 MiB floor. */
    struct vp_cfg small = { "dgpu", { 0, AC_MIB(4), AC_MIB(8), AC_MIB(64) }, 0, 0, 0 };
    if (vp_open(&f, &small))
        return;
    T_EQ_U64(pp_info(f.a).window_size, AC_MIB(2));
    vp_close(&f);

    /* 2-level geometry: a resizable root for the paging process too. */
    struct vp_cfg two = { "dgpu", { 0, AC_MIB(16), AC_MIB(64), AC_MIB(64) }, 0, 2, 0 };
    if (vp_open(&f, &two))
        return;
    pp = pp_info(f.a);
    T_CHECK(pp.root_entries >= 2);
    T_EQ_U64(pp.window_size, AC_MIB(8));
    vp_close(&f);

    /* No paging process: wddm1 (physical ops), igpu (IoMmu), dgpu told
     * not to advertise the virtual ops. */
    const struct vp_cfg none[] = {
        { "wddm1", { 0 }, 0, 0, 0 },
        { "igpu", { 0 }, 0, 0, 0 },
        { "dgpu", { 0, AC_MIB(16), AC_MIB(64), AC_MIB(64) }, SOFTGPU_PAGING_PHYSICAL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        if (vp_open(&f, &none[i]))
            return;
        struct vidmm_paging_process_info x;
        memset(&x, 0xA5, sizeof x);
        T_ST(vidmm_adapter_query_paging_process(f.a, &x), VIDMM_E_NOT_SUPPORTED);
        T_EQ_U64(x.window_size, 0xA5A5A5A5A5A5A5A5ull);   /* nothing written */
        T_EQ(f.sg->nroots, 0);
        vp_close(&f);
    }
    /* wddm1 told to advertise them: 4 KiB page tables. */
    struct vp_cfg w = { "wddm1", { 0 }, SOFTGPU_PAGING_VIRTUAL, 0, 0 };
    if (vp_open(&f, &w))
        return;
    T_EQ_U64(pp_info(f.a).window_size, AC_MIB(24));   /* 192 MiB / 4 / 2 */
    T_EQ_U64(pp_info(f.a).scratch_va_64k, 0);          /* no 64 KB-page segment: no 64 KB windows */
    vp_close(&f);
    /* igpu cannot: it has no GPU virtual addresses. */
    struct softgpu_config bad;
    memset(&bad, 0, sizeof bad);
    bad.preset = "igpu";
    bad.paging_ops = SOFTGPU_PAGING_VIRTUAL;
    struct softgpu *sg = NULL;
    T_ST(softgpu_create(&bad, &sg), VIDMM_E_INVALID_ARG);
    bad.preset = "dgpu";
    bad.paging_ops = 3;
    T_ST(softgpu_create(&bad, &sg), VIDMM_E_INVALID_ARG);
    T_CHECK(sg == NULL);
}

/* ---- moves of every kind ------------------------------------------------- */

/* A tour on a GpuMmu adapter: memory <-> memory, memory <-> system,
 * contiguous and page sets, with the bytes checked physically, by the
 * CPU, and through a process's page tables (the MMU walker). */
static void tour(const struct vp_cfg *c, uint32_t ap, uint64_t page)
{
    struct vp_fx f;
    if (vp_open(&f, c))
        return;
    int virt = c->paging_ops != SOFTGPU_PAGING_PHYSICAL && strcmp(c->preset, "wddm1") != 0;
    if (c->paging_ops == SOFTGPU_PAGING_VIRTUAL)
        virt = 1;
    /* Fragment segment 2: holes of one page, so page sets take several
     * extents and one chunk maps many runs. */
    static vidmm_handle frag[1024];
    uint32_t nf = ac_fragment(f.a, 2, page, frag, 1024);
    uint64_t seed = t_seed() ^ 0x5eed;
    vidmm_handle proc;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    struct {
        uint32_t set, pref, flags;
        uint64_t size;
        uint32_t path[8];
    } tours[] = {
        /* a page set that starts in fragmented segment 2 */
        { B(1) | B(2) | B(ap), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, 24 * page + 8192,
          { 1, 0, 2, 0, 1, 2, 1, 0 } },
        /* contiguous (AccessedPhysically), the aperture in the path */
        { B(1) | B(2) | B(ap), VIDMM_PREF(0, 1, 0), VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_ACCESSED_PHYSICALLY,
          16 * page, { 2, ap, 1, 0, 2, 1, ap, 2 } },
    };
    uint64_t moves = 0;
    for (size_t t = 0; t < sizeof tours / sizeof tours[0]; t++) {
        vidmm_handle h;
        T_ST(ac_create(f.a, tours[t].set, tours[t].pref, tours[t].flags, tours[t].size, &h), VIDMM_OK);
        uint64_t size = ac_state(f.a, h).size;
        uint64_t s = seed + t;
        T_ST(ac_write(f.a, h, size, s), VIDMM_OK);
        uint64_t va = 0;
        T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, h, 0, size, 0, 0, &va), VIDMM_OK);
        T_CHECK(gpu_reads(&f, proc, va, size, s));
        uint32_t max_extents = ac_state(f.a, h).extent_count;
        for (int i = 0; i < 8; i++) {
            struct vidmm_allocation_state st = move_checked(&f, h, tours[t].path[i], size, s);
            if (st.extent_count > max_extents)
                max_extents = st.extent_count;
            T_CHECK(gpu_reads(&f, proc, va, size, s));   /* same VA, new pages */
            if (virt)
                expect_windows_invalid(&f);
            moves++;
            if (t_current_failures())
                break;
        }
        if (t == 0)
            T_CHECK(max_extents > 1);
        T_ST(vidmm_gpuva_unmap(f.a, proc, va, size), VIDMM_OK);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
        /* The contiguous tour needs room in one piece in segment 2. */
        ac_destroy_all(f.a, frag, nf);
        nf = 0;
    }
    if (virt) {
        struct vidmm_paging_process_info pp = pp_info(f.a);
        T_CHECK(pp.moves >= moves);
        T_EQ_U64(pp.faults, 0);
    }
    expect_family(&f, virt);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    ac_destroy_all(f.a, frag, nf);
    vp_close(&f);
}

static const struct vp_cfg dgpu_small = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 };
static const struct vp_cfg dgpu_small_sync = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, 1 };
static const struct vp_cfg dgpu_physical = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) },
                                             SOFTGPU_PAGING_PHYSICAL, 0, 0 };
static const struct vp_cfg wddm1_virtual = { "wddm1", { 0, AC_MIB(4), AC_MIB(8), AC_MIB(8), AC_MIB(32) },
                                             SOFTGPU_PAGING_VIRTUAL, 0, 0 };
static const struct vp_cfg wddm1_physical = { "wddm1", { 0, AC_MIB(4), AC_MIB(8), AC_MIB(8), AC_MIB(32) }, 0, 0, 0 };
static const struct vp_cfg dgpu_two_level = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 2, 0 };

static void tour_dgpu_64k(void) { tour(&dgpu_small, 3, AC_KIB(64)); }
static void tour_dgpu_sync(void) { tour(&dgpu_small_sync, 3, AC_KIB(64)); }
static void tour_dgpu_two_level(void) { tour(&dgpu_two_level, 3, AC_KIB(64)); }
static void tour_wddm1_4k(void) { tour(&wddm1_virtual, 4, AC_KIB(4)); }
static void tour_dgpu_physical(void) { tour(&dgpu_physical, 3, AC_KIB(64)); }
static void tour_wddm1_physical(void) { tour(&wddm1_physical, 4, AC_KIB(4)); }

/* ---- chunking: allocations several times the window ---------------------- */

static void chunking(void)
{
    /* 16 MiB segments: a 4 MiB scratch area, windows of 2 MiB. */
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(16), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    const uint64_t win = AC_MIB(2);
    T_EQ_U64(pp_info(f.a).window_size, win);
    uint64_t rng = t_seed() ^ 0xc4c4;
    /* 5 windows and a partial one: 6 chunks per move. */
    const uint64_t size = 5 * win + AC_KIB(192);
    const uint64_t chunks = 6;
    struct vidmm_paging_process_info p0 = pp_info(f.a);
    vidmm_handle x;
    T_ST(ac_create(f.a, B(1) | B(2) | B(3), VIDMM_PREF(0, 1, 0), VIDMM_ALLOC_CPU_VISIBLE, size, &x), VIDMM_OK);
    T_EQ(ac_state(f.a, x).segment_id, 1);
    T_EQ_U64(pp_info(f.a).chunks - p0.chunks, chunks);   /* the zero fill at creation */
    uint64_t seed = t_rand(&rng);
    T_ST(ac_write(f.a, x, size, seed), VIDMM_OK);
    vidmm_handle proc;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, x, 0, size, 0, 0, &va), VIDMM_OK);
    /* LOCAL_TO_SYSTEM, SYSTEM_TO_LOCAL, LOCAL_TO_LOCAL both ways. */
    const uint32_t path[] = { 0, 2, 1, 2, 0, 1 };
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
        struct vidmm_paging_process_info a0 = pp_info(f.a);
        /* A restart somewhere early in the move's paging operations. */
        softgpu_inject_insufficient_dma(f.sg, 1 + (uint32_t)t_rand_range(&rng, 4));
        move_checked(&f, x, path[i], size, seed);
        struct vidmm_paging_process_info a1 = pp_info(f.a);
        T_EQ_U64(a1.chunks - a0.chunks, chunks);
        T_EQ_U64(a1.moves - a0.moves, 1);
        T_CHECK(gpu_reads(&f, proc, va, size, seed));
        expect_windows_invalid(&f);
    }
    /* A page set bigger than the window in a fragmented segment: every
     * chunk maps many runs. */
    T_ST(vidmm_allocation_move(f.a, x, 0), VIDMM_OK);
    static vidmm_handle frag[512];
    uint32_t nf = ac_fragment(f.a, 2, AC_KIB(64), frag, 512);
    vidmm_handle y;
    const uint64_t ysize = 2 * win + AC_KIB(640);
    T_ST(ac_create(f.a, B(1) | B(2) | B(3), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, ysize, &y), VIDMM_OK);
    T_EQ(ac_state(f.a, y).segment_id, 2);
    T_CHECK(ac_state(f.a, y).extent_count > 8);
    uint64_t yseed = t_rand(&rng);
    T_ST(ac_write(f.a, y, ysize, yseed), VIDMM_OK);
    const uint32_t ypath[] = { 1, 2, 0, 2, 1 };
    for (size_t i = 0; i < sizeof ypath / sizeof ypath[0]; i++) {
        softgpu_inject_insufficient_dma(f.sg, 1 + (uint32_t)t_rand_range(&rng, 3));
        move_checked(&f, y, ypath[i], ysize, yseed);
        if (ypath[i] == 2)
            T_CHECK(ac_state(f.a, y).extent_count > 8);
    }
    verify(&f, x, size, seed, "x at the end");
    T_CHECK(gpu_reads(&f, proc, va, size, seed));
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    T_CHECK(ai.paging_restarts > 0);
    expect_family(&f, 1);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, y), VIDMM_OK);
    ac_destroy_all(f.a, frag, nf);
    printf("vpaging.chunking: %llu chunks through a %llu MiB window\n", (unsigned long long)pp_info(f.a).chunks,
           (unsigned long long)(win >> 20));
    vp_close(&f);
}

/* ---- the 64 KB windows --------------------------------------------------- */

/* The TRANSFER_VIRTUAL just built used the windows its flags name. */
static void expect_tv_windows(struct vp_fx *f, uint32_t flags)
{
    struct vidmm_paging_process_info pp = pp_info(f->a);
    uint64_t s = flags & VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES ? pp.scratch_va_64k : pp.scratch_va;
    uint64_t d = (flags & VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES ? pp.scratch_va_64k : pp.scratch_va) + pp.window_size;
    T_CHECK(f->tv_src >= s && f->tv_src < s + pp.window_size);
    T_CHECK(f->tv_dst >= d && f->tv_dst < d + pp.window_size);
}

/* One move: the bytes (physically, by the CPU, through a process's
 * mapping), the windows invalid after it, the chunks and which ones
 * went through a 64 KB window, and the flags of every TRANSFER_VIRTUAL. */
static void move_64k(struct vp_fx *f, vidmm_handle h, uint32_t to, uint64_t size, uint64_t seed, vidmm_handle proc,
                     uint64_t va, uint64_t chunks, uint32_t flags)
{
    struct vidmm_paging_process_info p0 = pp_info(f->a);
    uint64_t seen0 = f->tv_flags[flags], pt0 = f->pt_updates_64k;
    uint64_t all0 = f->tv_flags[0] + f->tv_flags[1] + f->tv_flags[2] + f->tv_flags[3];
    T_ST(vidmm_allocation_move(f->a, h, to), VIDMM_OK);
    struct vidmm_paging_process_info p1 = pp_info(f->a);
    uint64_t all1 = f->tv_flags[0] + f->tv_flags[1] + f->tv_flags[2] + f->tv_flags[3];
    T_EQ_U64(p1.chunks - p0.chunks, chunks);
    T_EQ_U64(all1 - all0, chunks);
    T_EQ_U64(f->tv_flags[flags] - seen0, chunks);   /* every chunk with these flags */
    T_EQ_U64(p1.chunks_64k - p0.chunks_64k, flags ? chunks : 0);
    if (flags)
        T_CHECK(f->pt_updates_64k > pt0);
    else
        T_EQ_U64(f->pt_updates_64k, pt0);
    expect_tv_windows(f, flags);
    expect_windows_invalid(f);
    char when[48];
    snprintf(when, sizeof when, "after a move to %u", to);
    verify(f, h, size, seed, when);
    if (proc)
        T_CHECK(gpu_reads(f, proc, va, size, seed));
    CHECK_ADAPTER(f->a);
}

static void windows_64k(void)
{
    /* Windows of 2 MiB; segments 1 and 2 have 64 KB pages, the aperture
     * (3) and system memory 4 KB ones. */
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    struct vidmm_paging_process_info pp = pp_info(f.a);
    T_EQ_U64(pp.window_size, AC_MIB(2));
    T_CHECK(pp.scratch_va_64k >= pp.scratch_va + 2 * pp.window_size);
    T_EQ_U64(pp.chunks_64k, 0);
    const uint32_t L = VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES, R = VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES;
    uint64_t rng = t_seed() ^ 0x64c;
    vidmm_handle proc;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);

    /* Two chunks (2 MiB and 1 MiB + 64 KiB): the zero fill at creation
     * goes through the 64 KB destination window. */
    const uint64_t size = AC_MIB(3) + AC_KIB(64);
    vidmm_handle x;
    T_ST(ac_create(f.a, B(1) | B(2) | B(3), VIDMM_PREF(0, 1, 0), VIDMM_ALLOC_CPU_VISIBLE, size, &x), VIDMM_OK);
    T_EQ(ac_state(f.a, x).segment_id, 1);
    T_EQ_U64(pp_info(f.a).chunks_64k, 2);
    uint64_t seed = t_rand(&rng);
    T_ST(ac_write(f.a, x, size, seed), VIDMM_OK);
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, x, 0, size, 0, 0, &va), VIDMM_OK);
    move_64k(&f, x, 2, size, seed, proc, va, 2, L | R);   /* LOCAL_TO_LOCAL: both sides 64 KB */
    move_64k(&f, x, 0, size, seed, proc, va, 2, L);       /* to system pages: 4 KB destination */
    move_64k(&f, x, 1, size, seed, proc, va, 2, R);       /* back: 4 KB source */
    move_64k(&f, x, 3, size, seed, proc, va, 2, L);       /* the aperture has 4 KB pages */
    move_64k(&f, x, 2, size, seed, proc, va, 2, R);
    move_64k(&f, x, 1, size, seed, proc, va, 2, L | R);

    /* A size that is not whole 64 KB pages: the last page is still a
     * whole page of the segment, mapped whole; the move copies size. */
    const uint64_t odd = 24 * AC_KIB(64) + AC_KIB(8);
    vidmm_handle y;
    T_ST(ac_create(f.a, B(1) | B(2), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, odd, &y), VIDMM_OK);
    uint64_t ysize = ac_state(f.a, y).size;
    uint64_t yseed = t_rand(&rng);
    T_ST(ac_write(f.a, y, ysize, yseed), VIDMM_OK);
    move_64k(&f, y, 1, ysize, yseed, 0, 0, 1, L | R);
    move_64k(&f, y, 2, ysize, yseed, 0, 0, 1, L | R);

    /* DisableLargePageMapping: never through a 64 KB window. */
    vidmm_handle z;
    T_ST(ac_create(f.a, B(1) | B(2), VIDMM_PREF(0, 1, 0),
                   VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_DISABLE_LARGE_PAGE_MAPPING, AC_KIB(512), &z), VIDMM_OK);
    uint64_t zseed = t_rand(&rng);
    T_ST(ac_write(f.a, z, AC_KIB(512), zseed), VIDMM_OK);
    move_64k(&f, z, 2, AC_KIB(512), zseed, 0, 0, 1, 0);
    move_64k(&f, z, 1, AC_KIB(512), zseed, 0, 0, 1, 0);
    T_ST(vidmm_allocation_destroy(f.a, z), VIDMM_OK);

    /* A page set in a fragmented segment: every extent is whole 64 KB
     * pages, so the 64 KB windows map it run by run. */
    T_ST(vidmm_allocation_move(f.a, x, 0), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, y, 0), VIDMM_OK);
    static vidmm_handle frag[256];
    uint32_t nf = ac_fragment(f.a, 2, AC_KIB(64), frag, 256);
    vidmm_handle w;
    const uint64_t wsize = AC_KIB(1536);
    T_ST(ac_create(f.a, B(1) | B(2), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, wsize, &w), VIDMM_OK);
    T_EQ(ac_state(f.a, w).segment_id, 2);
    T_CHECK(ac_state(f.a, w).extent_count > 4);
    uint64_t wseed = t_rand(&rng);
    T_ST(ac_write(f.a, w, wsize, wseed), VIDMM_OK);
    move_64k(&f, w, 1, wsize, wseed, 0, 0, 1, L | R);
    move_64k(&f, w, 2, wsize, wseed, 0, 0, 1, L | R);
    T_CHECK(ac_state(f.a, w).extent_count > 4);
    /* A driver refusal somewhere in a move: the windows are still left
     * invalid and the bytes intact. */
    for (uint64_t k = 1; k <= 6 && !t_current_failures(); k++) {
        f.fail_at = f.builds + k;
        T_ST(vidmm_allocation_move(f.a, w, ac_state(f.a, w).segment_id == 1 ? 2 : 1), VIDMM_OK);
        f.fail_at = 0;
        verify(&f, w, wsize, wseed, "after a refused build");
        expect_windows_invalid(&f);
        CHECK_ADAPTER(f.a);
    }
    verify(&f, x, size, seed, "x at the end");
    T_CHECK(gpu_reads(&f, proc, va, size, seed));
    T_EQ_U64(pp_info(f.a).faults, 0);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, y), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, w), VIDMM_OK);
    ac_destroy_all(f.a, frag, nf);
    vp_close(&f);

    /* No room for the 64 KB windows' leaf in the paging-process segment
     * (segment 2 holds the root, the level-1 table and the 4 KB leaf, 64 KiB
     * each, and nothing more): the adapter opens with the 4 KB windows
     * alone, and moves use them. */
    struct vp_cfg tight = { "dgpu", { 0, AC_MIB(64), AC_KIB(192), AC_MIB(64) }, 0, 0, 0 };
    if (vp_open(&f, &tight) == 0) {
        pp = pp_info(f.a);
        T_EQ_U64(pp.scratch_va_64k, 0);
        T_EQ_U64(pp.window_size, AC_MIB(8));
        T_EQ(pp.page_tables, 3);
        T_EQ_U64(ac_seg(f.a, 2).committed, pp.page_table_bytes);
        vidmm_handle t;
        T_ST(ac_create(f.a, B(1), VIDMM_PREF(0, 1, 0), VIDMM_ALLOC_CPU_VISIBLE, AC_MIB(2), &t), VIDMM_OK);
        uint64_t tseed = t_rand(&rng);
        T_ST(ac_write(f.a, t, AC_MIB(2), tseed), VIDMM_OK);
        move_64k(&f, t, 0, AC_MIB(2), tseed, 0, 0, 1, 0);
        move_64k(&f, t, 1, AC_MIB(2), tseed, 0, 0, 1, 0);
        T_EQ_U64(pp_info(f.a).chunks_64k, 0);
        T_ST(vidmm_allocation_destroy(f.a, t), VIDMM_OK);
        vp_close(&f);
    }

    /* A caller of ABI generation 2 does not have the 64 KB members: the
     * query leaves the bytes past its structure alone. */
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = AC_MIB(8);
    cfg.segment_size[2] = AC_MIB(16);
    cfg.segment_size[3] = AC_MIB(64);
    struct softgpu *sg = NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    if (!sg)
        return;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    ci.abi_version = 2;
    struct vidmm_adapter *a = NULL;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    if (a) {
        struct vidmm_paging_process_info old;
        memset(&old, 0xA5, sizeof old);
        T_ST(vidmm_adapter_query_paging_process(a, &old), VIDMM_OK);
        T_EQ_U64(old.window_size, AC_MIB(2));
        T_EQ_U64(old.scratch_va_64k, 0xA5A5A5A5A5A5A5A5ull);
        T_EQ_U64(old.chunks_64k, 0xA5A5A5A5A5A5A5A5ull);
        CHECK_ADAPTER(a);
        vidmm_adapter_close(a);
    }
    softgpu_destroy(sg);
}

/* ---- restarts inside the virtual operations ------------------------------ */

/* Windows of 20 MiB: one TRANSFER_VIRTUAL is two softgpu commands, and
 * the wrapper gives it room for one, so the restart falls in the middle
 * of the operation. */
static void mid_op_restarts(void)
{
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(16), AC_MIB(160), AC_MIB(64) }, 0, 0, 0 };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    T_EQ_U64(pp_info(f.a).window_size, AC_MIB(20));
    f.short_virtual = 1;
    const uint64_t size = AC_MIB(24);   /* chunks of 20 (two commands) and 4 MiB */
    vidmm_handle x;
    T_ST(ac_create(f.a, B(2) | B(3), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, size, &x), VIDMM_OK);
    T_EQ_U64(f.mid_op_restarts, 1);   /* the FILL_VIRTUAL of the first chunk */
    uint64_t seed = t_seed() ^ 0x31d;
    T_ST(ac_write(f.a, x, size, seed), VIDMM_OK);
    move_checked(&f, x, 0, size, seed);
    move_checked(&f, x, 2, size, seed);
    /* One per 20 MiB chunk of each move (a lock of this allocation,
     * larger than the 16 MiB host aperture, may move it once more). */
    T_CHECK(f.mid_op_restarts >= 3);
    expect_windows_invalid(&f);
    expect_family(&f, 1);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    vp_close(&f);
}

/* Every build call of a chunked move refused once in turn (with nothing
 * written): the move still lands every byte, in both engine modes. */
static void restart_sweep_mode(int synchronous)
{
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, synchronous };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    const uint64_t size = 2 * AC_MIB(2) + AC_KIB(320);   /* three chunks */
    vidmm_handle x;
    T_ST(ac_create(f.a, B(1) | B(2) | B(3), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, size, &x), VIDMM_OK);
    uint64_t seed = t_seed() ^ 0x5ee9;
    T_ST(ac_write(f.a, x, size, seed), VIDMM_OK);
    /* Calls of one move 2 -> 1 -> 2, unrefused. */
    uint64_t b0 = f.builds;
    move_checked(&f, x, 1, size, seed);
    move_checked(&f, x, 2, size, seed);
    uint64_t per_round = f.builds - b0;
    T_CHECK(per_round > 12);
    for (uint64_t k = 1; k <= per_round + 2 && !t_current_failures(); k++) {
        f.fail_at = f.builds + k;
        move_checked(&f, x, 1, size, seed);
        move_checked(&f, x, 2, size, seed);
        expect_windows_invalid(&f);
    }
    f.fail_at = 0;
    T_CHECK(f.refused >= per_round);
    expect_family(&f, 1);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    vp_close(&f);
}

static void restart_sweep(void)
{
    restart_sweep_mode(0);
    restart_sweep_mode(1);
}

/* ---- families ------------------------------------------------------------- */

/* Creation, moves, evictions and restores use one family per adapter. */
static void families_one(const struct vp_cfg *c, int virt, uint32_t ap)
{
    struct vp_fx f;
    if (vp_open(&f, c))
        return;
    vidmm_handle proc, dev, q;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    T_ST(vidmm_device_create(f.a, proc, &dev), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(f.a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q), VIDMM_OK);
    vidmm_handle h[3];
    uint64_t seed = t_seed() ^ 0xfa;
    for (int i = 0; i < 3; i++) {
        struct softgpu_alloc_desc d;
        ac_explicit_desc(&d, B(1) | B(2) | B(ap), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(512), 0);
        T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, i == 0 ? VIDMM_CREATE_RESIDENT : 0, &h[i]), VIDMM_OK);
        T_ST(ac_write(f.a, h[i], AC_KIB(512), seed + (uint64_t)i), VIDMM_OK);
    }
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = h;
    mr.count = 3;
    vidmm_status st = vidmm_make_resident(f.a, dev, &mr);
    T_CHECK(st == VIDMM_OK || st == VIDMM_PENDING);
    if (st == VIDMM_PENDING)
        T_ST(vidmm_paging_queue_wait(f.a, q, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    for (int i = 0; i < 3; i++) {
        uint32_t seg = ac_state(f.a, h[i]).segment_id;
        T_CHECK(seg == 1 || seg == 2);   /* in memory: restored by a transfer */
    }
    T_ST(vidmm_evict(f.a, dev, &(struct vidmm_evict_args){ .allocations = h, .count = 3 }), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, h[0], 0), VIDMM_OK);      /* evicted: in system memory already */
    T_ST(vidmm_allocation_move(f.a, h[0], 1), VIDMM_E_STATE); /* evicted: make it resident first */
    st = vidmm_make_resident(f.a, dev, &mr);
    T_CHECK(st == VIDMM_OK || st == VIDMM_PENDING);
    if (st == VIDMM_PENDING)
        T_ST(vidmm_paging_queue_wait(f.a, q, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    for (int i = 0; i < 3; i++)
        verify(&f, h[i], AC_KIB(512), seed + (uint64_t)i, "after evict and restore");
    move_checked(&f, h[1], 1, AC_KIB(512), seed + 1);
    expect_family(&f, virt);
    CHECK_ADAPTER(f.a);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    for (int i = 0; i < 3; i++)
        T_ST(vidmm_allocation_destroy(f.a, h[i]), VIDMM_OK);
    vp_close(&f);
}

static void families(void)
{
    families_one(&dgpu_small, 1, 3);
    families_one(&dgpu_physical, 0, 3);
    families_one(&wddm1_physical, 0, 4);
    families_one(&wddm1_virtual, 1, 4);
}

/* ---- residency: evict and restore allocations larger than the window ---- */

static void residency_chunked(void)
{
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(16), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    vidmm_handle proc, dev, q;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    T_ST(vidmm_device_create(f.a, proc, &dev), VIDMM_OK);
    T_ST(vidmm_paging_queue_create(f.a, dev, VIDMM_PAGING_QUEUE_NORMAL, &q), VIDMM_OK);
    /* Three 7 MiB allocations (3.5 windows each) against two 16 MiB
     * segments' worth of room for two: every make-resident evicts. */
    const uint64_t size = AC_MIB(7);
    vidmm_handle h[4];
    uint64_t va[4], seed = t_seed() ^ 0x7e5;
    for (int i = 0; i < 4; i++) {
        struct softgpu_alloc_desc d;
        ac_explicit_desc(&d, B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, size, 0);
        T_ST(vidmm_allocation_create2(f.a, &d, sizeof d, 0, &h[i]), VIDMM_OK);
        T_ST(ac_write(f.a, h[i], size, seed + (uint64_t)i), VIDMM_OK);
        T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, h[i], 0, size, 0, 0, &va[i]), VIDMM_OK);
    }
    uint64_t c0 = pp_info(f.a).chunks;
    for (int round = 0; round < 6 && !t_current_failures(); round++) {
        int i = round % 4;
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = q;
        mr.allocations = &h[i];
        mr.count = 1;
        vidmm_status st = vidmm_make_resident(f.a, dev, &mr);
        T_CHECK(st == VIDMM_OK || st == VIDMM_PENDING);
        if (st == VIDMM_PENDING)
            T_ST(vidmm_paging_queue_wait(f.a, q, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
        T_CHECK(gpu_reads(&f, proc, va[i], size, seed + (uint64_t)i));
        T_ST(vidmm_evict(f.a, dev, &(struct vidmm_evict_args){ .allocations = &h[i], .count = 1, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }), VIDMM_OK);
        CHECK_ADAPTER(f.a);
    }
    struct vidmm_residency_stats rs;
    T_ST(vidmm_residency_get_stats(f.a, &rs), VIDMM_OK);
    T_CHECK(rs.evictions > 0 && rs.restores >= 6);
    /* Each restore is 4 chunks (3.5 windows), each eviction too. */
    T_CHECK(pp_info(f.a).chunks - c0 >= 4 * (rs.restores + rs.evictions - rs.discards));
    for (int i = 0; i < 4; i++)
        verify(&f, h[i], size, seed + (uint64_t)i, "at the end");
    expect_family_ex(&f, 1, 1);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    for (int i = 0; i < 4; i++)
        T_ST(vidmm_allocation_destroy(f.a, h[i]), VIDMM_OK);
    vp_close(&f);
}

/* ---- host out of memory while opening ----------------------------------- */

static void host_oom_open(void)
{
    const struct vp_cfg cfgs[] = {
        { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 },
        { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 2, 1 },
        { "wddm1", { 0 }, SOFTGPU_PAGING_VIRTUAL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        uint64_t k;
        int opened = 0;
        for (k = 1; k < 400 && !opened; k++) {
            struct vp_fx f;
            memset(&f, 0, sizeof f);
            fault_alloc_init(&f.fa);
            f.fa.fail_at = k;
            vidmm_status st = vp_open_st(&f, &cfgs[i]);
            T_CHECK(f.sg != NULL);
            if (!f.sg)
                return;
            if (st == VIDMM_OK) {
                opened = 1;
                T_CHECK(f.fa.failures == 0);
                (void)pp_info(f.a);
                vp_close(&f);
                continue;
            }
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_CHECK(f.a == NULL);
            T_EQ(f.fa.live_blocks, 0);      /* nothing leaked */
            T_EQ(f.sg->nroots, 0);          /* no root left bound */
            T_EQ(softgpu_check(f.sg), 0);
            softgpu_destroy(f.sg);
        }
        T_CHECK(opened);
        T_CHECK(k > 5);   /* the paging process's host blocks were among the call sites */
    }
}

/* ---- faults in paging operations ------------------------------------------ */

static void submit_raw(struct vp_fx *f, struct vidmm_build_paging_buffer_args *a, vidmm_status want_build)
{
    static uint64_t buf[8192];
    a->dma_buffer = buf;
    a->dma_size = sizeof buf;
    a->multipass_offset = 0;
    T_ST(sgo()->build_paging_buffer(f->sg, a), want_build);
    uint32_t used = (uint32_t)(sizeof buf - a->dma_size);
    if (want_build != VIDMM_OK || !used)
        return;
    /* Fence 0: vidmm's own fences are unaffected by this side buffer. */
    struct vidmm_submit_command_args s = { f->a, buf, used, VIDMM_SUBMIT_PAGING, 0 };
    T_ST(sgo()->submit_command(f->sg, &s), VIDMM_OK);
    T_ST(softgpu_wait_idle(f->sg), VIDMM_OK);
}

static void paging_faults_mode(int synchronous)
{
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(8), AC_MIB(16), AC_MIB(64) }, 0, 0, synchronous };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    struct vidmm_paging_process_info pp = pp_info(f.a);
    /* Through the paging process's root, its (invalid) windows: a
     * vidmm-side bug.  Counted for the paging process, nothing moved. */
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = AC_KIB(64);
    a.u.transfer_virtual.source_virtual_address = pp.scratch_va;
    a.u.transfer_virtual.destination_virtual_address = pp.scratch_va + pp.window_size;
    a.u.transfer_virtual.root_page_table_address = pp.root;
    submit_raw(&f, &a, VIDMM_OK);
    struct softgpu_stats ss;
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.paging_faults, 1);
    pp = pp_info(f.a);
    T_EQ_U64(pp.faults, 1);
    T_EQ_U64(pp.last_fault_va, pp.scratch_va);
    /* An unrecoverable paging fault: the next poll (or wait) resets the
     * adapter at once, no timeout (D31). */
    int rec = 0;
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 1);
    struct vidmm_tdr_stats ts;
    T_ST(vidmm_adapter_get_tdr_stats(f.a, &ts), VIDMM_OK);
    T_EQ_U64(ts.adapter_resets, 1);
    T_EQ_U64(ts.paging_hangs, 1);
    T_ST(vidmm_adapter_detect_hangs(f.a, &rec), VIDMM_OK);
    T_EQ(rec, 0);

    /* Through a process's root: the destination's last page is not
     * mapped.  The whole command is skipped - the mapped pages of the
     * destination keep their bytes - and the process hears of it. */
    vidmm_handle proc, dev, src, dst;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    T_ST(vidmm_device_create(f.a, proc, &dev), VIDMM_OK);
    T_ST(ac_create(f.a, B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(128), &src), VIDMM_OK);
    T_ST(ac_create(f.a, B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(128), &dst), VIDMM_OK);
    uint64_t seed = t_seed() ^ 0xf1;
    T_ST(ac_write(f.a, src, AC_KIB(128), seed), VIDMM_OK);
    T_ST(ac_write(f.a, dst, AC_KIB(128), seed + 1), VIDMM_OK);
    uint64_t vs = 0, vd = 0;
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, src, 0, AC_KIB(128), 0, 0, &vs), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, dst, 0, AC_KIB(64), 0, 0, &vd), VIDMM_OK);
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(f.a, proc, &root), VIDMM_OK);
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = AC_KIB(128);
    a.u.transfer_virtual.source_virtual_address = vs;
    a.u.transfer_virtual.destination_virtual_address = vd;
    a.u.transfer_virtual.root_page_table_address = root;
    submit_raw(&f, &a, VIDMM_OK);
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    a.u.fill_virtual.fill_size_in_bytes = AC_KIB(128);
    a.u.fill_virtual.fill_pattern = 0xDEADBEEFu;
    a.u.fill_virtual.destination_virtual_address = vd;
    a.u.fill_virtual.root_page_table_address = root;
    submit_raw(&f, &a, VIDMM_OK);
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.paging_faults, 3);
    verify(&f, dst, AC_KIB(128), seed + 1, "after faulting virtual commands");
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(f.a, proc, &pi), VIDMM_OK);
    T_EQ(pi.faulted, 1);
    T_EQ_U64(pi.fault_va, vd + AC_KIB(64));
    T_EQ_U64(pp_info(f.a).faults, 1);   /* not the paging process's */

    /* The same commands where everything is mapped do move the bytes. */
    vidmm_handle dst2;
    uint64_t vd2 = 0;
    T_ST(ac_create(f.a, B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(128), &dst2), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, dst2, 0, AC_KIB(128), 0, 0, &vd2), VIDMM_E_DEVICE_LOST);
    T_ST(vidmm_allocation_destroy(f.a, dst2), VIDMM_OK);

    /* Malformed requests are refused at build time. */
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = AC_KIB(4);
    a.u.transfer_virtual.source_virtual_address = 1ull << 48;   /* past the 48-bit VA */
    a.u.transfer_virtual.root_page_table_address = root;
    submit_raw(&f, &a, VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.source_virtual_address = vs;
    a.u.transfer_virtual.transfer_direction = 3;
    submit_raw(&f, &a, VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.transfer_direction = VIDMM_TRANSFER_LOCAL_TO_LOCAL;
    a.u.transfer_virtual.flags = 0x4;
    submit_raw(&f, &a, VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.flags = 0;
    a.u.transfer_virtual.root_page_table_address.segment_id = 3;   /* the aperture: no tables there */
    submit_raw(&f, &a, VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.root_page_table_address = root;
    a.u.transfer_virtual.root_page_table_address.segment_offset += 8;
    submit_raw(&f, &a, VIDMM_E_INVALID_ARG);
    a.u.transfer_virtual.root_page_table_address = root;
    a.u.transfer_virtual.transfer_size_in_bytes = 0;   /* nothing to move: nothing written */
    submit_raw(&f, &a, VIDMM_OK);
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.paging_faults, 3);
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    /* vidmm's own, and the two faulting side ones (counted, not run). */
    T_EQ_U64(ss.ops[VIDMM_PAGING_TRANSFER_VIRTUAL], ai.paging_ops[VIDMM_PAGING_TRANSFER_VIRTUAL] + 2);
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, src), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, dst), VIDMM_OK);
    vp_close(&f);
}

static void paging_faults(void)
{
    paging_faults_mode(0);
    paging_faults_mode(1);
}

/* An operation of two softgpu commands (they run merged) whose last page
 * does not translate: neither command writes anything.  Once the page is
 * mapped, the same operation moves every byte. */
static void merged_fault(void)
{
    /* CPU-visible memory big enough for both (the CPU checks lock them). */
    struct vp_cfg c = { "dgpu", { 0, AC_MIB(48), AC_MIB(16), AC_MIB(64) }, 0, 0, 0 };
    struct vp_fx f;
    if (vp_open(&f, &c))
        return;
    const uint64_t size = SOFTGPU_CHUNK + AC_KIB(64);
    vidmm_handle proc, src, dst;
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    T_ST(ac_create(f.a, B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, size, &src), VIDMM_OK);
    T_ST(ac_create(f.a, B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, size, &dst), VIDMM_OK);
    uint64_t seed = t_seed() ^ 0x3e6;
    T_ST(ac_write(f.a, src, size, seed), VIDMM_OK);
    T_ST(ac_write(f.a, dst, size, seed + 1), VIDMM_OK);
    uint64_t vs = 0, vd = 0;
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, src, 0, size, 0, 0, &vs), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(f.a, proc, 0, 0, 0, 2 * size, VIDMM_GPUVA_RESERVE_NO_ACCESS, &vd), VIDMM_OK);
    vd = (vd + AC_MIB(2) - 1) & ~(AC_MIB(2) - 1);
    T_ST(vidmm_gpuva_map(f.a, proc, vd, 0, 0, dst, 0, SOFTGPU_CHUNK, 0, 0, &vd), VIDMM_OK);
    struct vidmm_physical_address root;
    T_ST(vidmm_process_root_page_table(f.a, proc, &root), VIDMM_OK);
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    a.u.transfer_virtual.transfer_size_in_bytes = size;
    a.u.transfer_virtual.source_virtual_address = vs;
    a.u.transfer_virtual.destination_virtual_address = vd;
    a.u.transfer_virtual.root_page_table_address = root;
    submit_raw(&f, &a, VIDMM_OK);
    struct softgpu_stats ss;
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.paging_faults, 1);
    verify(&f, dst, size, seed + 1, "after the faulting operation");
    /* The process heard of it; a fresh process does the good run. */
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    T_ST(vidmm_process_create(f.a, &proc), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, src, 0, size, 0, 0, &vs), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, proc, 0, 0, 0, dst, 0, size, 0, 0, &vd), VIDMM_OK);
    T_ST(vidmm_process_root_page_table(f.a, proc, &root), VIDMM_OK);
    a.u.transfer_virtual.source_virtual_address = vs;
    a.u.transfer_virtual.destination_virtual_address = vd;
    a.u.transfer_virtual.root_page_table_address = root;
    submit_raw(&f, &a, VIDMM_OK);
    softgpu_get_stats(f.sg, &ss);
    T_EQ_U64(ss.paging_faults, 1);
    verify(&f, dst, size, seed, "after the good operation");
    T_ST(vidmm_process_destroy(f.a, proc), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, src), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, dst), VIDMM_OK);
    vp_close(&f);
}

/* ---- softgpu's encoding of the virtual ops -------------------------------- */

struct vcmd {
    struct softgpu_cmd_hdr hdr;
    uint32_t root_segment, root_entries;
    uint64_t root, context, src, dst_va, size;
};

static void encoding(void)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.synchronous = 1;
    struct softgpu *sg;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    if (!sg)
        return;
    _Static_assert(sizeof(struct vcmd) == VCMD, "command size");
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
    const uint64_t size = 2 * SOFTGPU_CHUNK + AC_KIB(8);   /* three commands */
    a.u.transfer_virtual.transfer_size_in_bytes = size;
    a.u.transfer_virtual.source_virtual_address = AC_MIB(32);
    a.u.transfer_virtual.destination_virtual_address = AC_MIB(512);
    a.u.transfer_virtual.root_page_table_address.segment_id = 2;
    a.u.transfer_virtual.root_page_table_address.segment_offset = AC_KIB(64);
    struct vcmd buf[4];
    /* Room for one command per call: INSUFFICIENT with the progress kept. */
    uint64_t expect_src = AC_MIB(32), expect_dst = AC_MIB(512), total = 0;
    for (uint32_t call = 0; call < 3; call++) {
        a.dma_buffer = buf;
        a.dma_size = VCMD + 8;
        vidmm_status st = sgo()->build_paging_buffer(sg, &a);
        T_ST(st, call < 2 ? VIDMM_E_INSUFFICIENT_DMA_BUFFER : VIDMM_OK);
        T_EQ(a.dma_size, 8);
        T_EQ((uint8_t *)a.dma_buffer - (uint8_t *)buf, VCMD);
        if (call < 2)
            T_EQ(a.multipass_offset, call + 1);
        T_EQ(buf[0].hdr.opcode, VIDMM_PAGING_TRANSFER_VIRTUAL);
        /* FIRST on the first command; every one carries the class of the
         * whole operation (40 MiB: 2^25) for the copy path's choice. */
        T_EQ((buf[0].hdr.flags & SOFTGPU_CMDF_FIRST), (call == 0 ? SOFTGPU_CMDF_FIRST : 0u));
        T_EQ(SOFTGPU_CMDF_CLASS_OF(buf[0].hdr.flags), 25u);
        T_EQ((buf[0].hdr.flags & ~(SOFTGPU_CMDF_FIRST | SOFTGPU_CMDF_CLASS_MASK)), 0u);
        T_EQ(buf[0].hdr.size, VCMD);
        T_EQ(buf[0].root_segment, 2);
        T_EQ_U64(buf[0].root, AC_KIB(64));
        T_EQ(buf[0].root_entries, 1u << 10);   /* unbound root: the full root */
        T_EQ_U64(buf[0].context, 0);
        T_EQ_U64(buf[0].src, expect_src);
        T_EQ_U64(buf[0].dst_va, expect_dst);
        expect_src += buf[0].size;
        expect_dst += buf[0].size;
        total += buf[0].size;
    }
    T_EQ_U64(total, size);
    /* A restart past the end, and a buffer too small for one command. */
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.multipass_offset = 3;
    T_ST(sgo()->build_paging_buffer(sg, &a), VIDMM_E_INVALID_ARG);
    a.multipass_offset = 0;
    a.dma_size = VCMD - 8;
    T_ST(sgo()->build_paging_buffer(sg, &a), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_EQ(a.dma_size, VCMD - 8);
    T_EQ(a.multipass_offset, 0);
    /* FILL_VIRTUAL: the pattern in the command, its phase kept. */
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    a.u.fill_virtual.fill_size_in_bytes = SOFTGPU_CHUNK + 4096;
    a.u.fill_virtual.fill_pattern = 0x01020304u;
    a.u.fill_virtual.destination_virtual_address = AC_MIB(64);
    a.u.fill_virtual.root_page_table_address.segment_id = 2;
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    T_ST(sgo()->build_paging_buffer(sg, &a), VIDMM_OK);
    T_EQ((uint8_t *)a.dma_buffer - (uint8_t *)buf, 2 * VCMD);
    T_EQ(buf[0].hdr.opcode, VIDMM_PAGING_FILL_VIRTUAL);
    T_EQ_U64(buf[0].src, 0x01020304u);
    T_EQ_U64(buf[1].src, 0x01020304u);
    T_EQ_U64(buf[1].dst_va, AC_MIB(64) + SOFTGPU_CHUNK);
    T_EQ_U64(buf[1].size, 4096);
    /* Submission checks every command: a corrupted one is refused and
     * nothing runs. */
    buf[1].size = SOFTGPU_CHUNK + 1;
    struct vidmm_submit_command_args s = { NULL, buf, 2 * VCMD, VIDMM_SUBMIT_PAGING, 1 };
    T_ST(sgo()->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    buf[1].size = 4096;
    buf[1].root_entries = 0;
    T_ST(sgo()->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    buf[1].root_entries = 1;
    buf[1].src = 1ull << 32;   /* not a 32-bit pattern */
    T_ST(sgo()->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    struct softgpu_stats ss;
    softgpu_get_stats(sg, &ss);
    T_EQ_U64(ss.paging_buffers, 0);
    softgpu_destroy(sg);

    /* igpu has no MMU: no virtual addresses to move between. */
    cfg.preset = "igpu";
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    if (!sg)
        return;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL_VIRTUAL;
    a.u.fill_virtual.fill_size_in_bytes = 4096;
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    T_ST(sgo()->build_paging_buffer(sg, &a), VIDMM_E_INVALID_ARG);
    softgpu_destroy(sg);
}

void suite_vpaging(void);
void suite_vpaging(void)
{
    t_run("vpaging.layout", layout);
    t_run("vpaging.encoding", encoding);
    t_run("vpaging.tour_dgpu_64k", tour_dgpu_64k);
    t_run("vpaging.tour_dgpu_sync", tour_dgpu_sync);
    t_run("vpaging.tour_dgpu_two_level", tour_dgpu_two_level);
    t_run("vpaging.tour_wddm1_4k", tour_wddm1_4k);
    t_run("vpaging.tour_dgpu_physical", tour_dgpu_physical);
    t_run("vpaging.tour_wddm1_physical", tour_wddm1_physical);
    t_run("vpaging.chunking", chunking);
    t_run("vpaging.windows_64k", windows_64k);
    t_run("vpaging.mid_op_restarts", mid_op_restarts);
    t_run("vpaging.restart_sweep", restart_sweep);
    t_run("vpaging.families", families);
    t_run("vpaging.residency_chunked", residency_chunked);
    t_run("vpaging.host_oom_open", host_oom_open);
    t_run("vpaging.paging_faults", paging_faults);
    t_run("vpaging.merged_fault", merged_fault);
}
