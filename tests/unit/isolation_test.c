/*
 * isolation_test.c - process isolation (docs/DECISIONS.md D38): what one process leaves in GPU memory never reaches another, and
 * no process reaches another's memory through its VA space, an
 * allocation list, a lock or a handle.
 *
 * Stale pages.  Process A fills private allocations of one segment with a
 * GPU (or CPU) pattern; then A leaves the pages - forced out by B's
 * make-resident (over-commitment), destroyed with its process, offered
 * and discarded, or relocated - and B's new allocations are placed on
 * them.  The pages are proved to be A's (B's physical ranges overlap
 * those A held, which read A's pattern), and B reads zero through a CPU
 * lock and through CHECKSUM commands of its own contexts, virtual and
 * physical.  Segments: dgpu CPU-visible and invisible (host aperture)
 * 64 KiB-page memory, wddm1 visible and invisible 4 KiB-page memory, the
 * aperture of dgpu, wddm1 and igpu (IoMmu).
 *
 * Access.  B cannot map, list, lock, offer, reclaim or submit A's
 * private allocations (VIDMM_E_INVALID_HANDLE, nothing changes); B's GPU
 * reads and writes at A's VAs fault on B's device and leave A's bytes
 * alone; B's page tables map none of A's pages (softgpu's MMU walk); A's
 * device, context and queue handles are refused where B's are expected.
 */
#include "iso_common.h"
#include "softgpu_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Physical ranges of h (memory segments; aperture when mapped). */
static uint32_t ranges_of(struct iso_fx *f, vidmm_handle h, struct vidmm_physical_range *r, uint32_t cap)
{
    uint32_t n = 0;
    T_ST(vidmm_allocation_physical_ranges(f->a, h, r, cap, &n), VIDMM_OK);
    return n < cap ? n : cap;
}

/* Bytes of the ranges x that lie in the ranges y (same segment; system
 * memory, segment 0, never counts). */
static uint64_t overlap(const struct vidmm_physical_range *x, uint32_t nx, const struct vidmm_physical_range *y,
                        uint32_t ny)
{
    uint64_t o = 0;
    for (uint32_t i = 0; i < nx; i++)
        for (uint32_t j = 0; j < ny; j++) {
            if (x[i].segment_id != y[j].segment_id || !x[i].segment_id)
                continue;
            uint64_t lo = x[i].offset > y[j].offset ? x[i].offset : y[j].offset;
            uint64_t hx = x[i].offset + x[i].size, hy = y[j].offset + y[j].size;
            uint64_t hi = hx < hy ? hx : hy;
            if (hi > lo)
                o += hi - lo;
        }
    return o;
}

/* Every 4-byte word of [off, off+size) of segment seg as the GPU sees it
 * equals pattern. */
static int phys_holds(struct iso_fx *f, uint32_t seg, uint64_t off, uint64_t size, uint32_t pattern)
{
    uint32_t *w = malloc(size);
    int ok = w && softgpu_read_physical(f->sg, seg, off, w, size) == VIDMM_OK;
    for (uint64_t i = 0; ok && i < size / 4; i++)
        ok = w[i] == pattern;
    free(w);
    return ok;
}

/* ---- stale pages ----------------------------------------------------------- */

enum iso_how { ISO_OVERCOMMIT, ISO_DESTROY, ISO_OFFER, ISO_RELOCATE };
static const char *const how_name[] = { "over-commitment", "process destroyed", "offer+discard", "relocation" };

struct iso_cfg {
    const char *preset;
    uint32_t seg;          /* the segment whose pages change hands */
    uint64_t seg_size;     /* override (0 = preset) */
    int cpu;               /* the CPU reaches it (direct or host aperture) */
    int aperture;          /* seg is the aperture: AccessedPhysically, mapped while resident */
};

#define ASIZE (1 * MIB)

/* A fills its allocations of cfg->seg with patterns (GPU FILL in its
 * virtual context, or CPU writes without one), then leaves the pages as
 * `how` says; B's new allocations land on them and read zero. */
static void stale_pages(const struct iso_cfg *cfg, enum iso_how how, int sync)
{
    struct iso_fx f;
    if (iso_open(&f, cfg->preset, cfg->aperture ? 0 : cfg->seg, cfg->seg_size, sync))
        return;
    struct iso_proc A, B;
    iso_new_proc(&f, &A);
    iso_new_proc(&f, &B);
    uint32_t set = VIDMM_SEGMENT_BIT(cfg->seg);
    struct vidmm_segment_info si;
    T_ST(vidmm_segment_query(f.a, cfg->seg, &si), VIDMM_OK);
    /* A takes the segment's free space (apertures: a few allocations). */
    uint32_t na = cfg->aperture ? 6 : (uint32_t)(si.free_bytes / ASIZE);
    if (na > MAX_ALLOCS / 2)
        na = MAX_ALLOCS / 2;
    vidmm_handle ah[MAX_ALLOCS];
    uint64_t ava[MAX_ALLOCS];
    for (uint32_t i = 0; i < na; i++) {
        ah[i] = iso_palloc(&f, &A, set, ASIZE, cfg->aperture, cfg->cpu, 0, VIDMM_OK);
        ava[i] = f.gpummu ? iso_map(&f, &A, ah[i], ASIZE) : 0;
    }
    iso_mr(&f, &A, ah, na, VIDMM_OK);
    /* A's content. */
    if (f.gpummu) {
        uint8_t buf[MAX_ALLOCS * 32];
        struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
        for (uint32_t i = 0; i < na; i++)
            T_ST(softgpu_cmd_fill(&cb, ava[i], ASIZE, 0xA5A50000u | i), VIDMM_OK);
        iso_run_virtual(&f, &A, &cb);
    } else {
        for (uint32_t i = 0; i < na; i++) {
            void *c = NULL;
            T_ST(vidmm_device_lock(f.a, A.dev, ah[i], &c), VIDMM_OK);
            for (uint64_t k = 0; c && k < ASIZE / 4; k++)
                ((uint32_t *)c)[k] = 0xA5A50000u | i;
            T_ST(vidmm_device_unlock(f.a, A.dev, ah[i]), VIDMM_OK);
        }
    }
    /* Where A's bytes are, and that the GPU sees them there. */
    struct vidmm_physical_range ar[MAX_ALLOCS * 4];
    uint32_t nar = 0;
    for (uint32_t i = 0; i < na; i++) {
        uint32_t k = ranges_of(&f, ah[i], ar + nar, 4);
        T_CHECK(k >= 1);
        if (k >= 1)
            T_CHECK(phys_holds(&f, ar[nar].segment_id, ar[nar].offset, ar[nar].size, 0xA5A50000u | i));
        nar += k;
    }
    T_EQ(iso_checked(&f), 0);

    /* B takes half of the segment. */
    uint32_t nb = how == ISO_OVERCOMMIT || how == ISO_OFFER ? na / 2 : na;
    switch (how) {
    case ISO_OVERCOMMIT:
        /* The OS lowers A's budget: A's listed allocations may then be
         * trimmed (D42), and B's make-resident below evicts them. */
        T_ST(vidmm_process_set_budget(f.a, A.proc, VIDMM_SEGMENT_GROUP_LOCAL, ASIZE), VIDMM_OK);
        break;
    case ISO_DESTROY:
        T_ST(vidmm_process_destroy(f.a, A.proc), VIDMM_OK);
        for (uint32_t i = 0; i < na; i++)
            T_ST(vidmm_allocation_query(f.a, ah[i], &(struct vidmm_allocation_state){ 0 }), VIDMM_E_INVALID_HANDLE);
        break;
    case ISO_OFFER:
        T_ST(vidmm_offer(f.a, A.dev, ah, na, VIDMM_OFFER_LOW), VIDMM_OK);
        break;
    case ISO_RELOCATE:
        /* An AccessedPhysically allocation in system memory stays in the
         * aperture (D43): there, A's leave the aperture by eviction. */
        if (cfg->aperture)
            T_ST(vidmm_evict(f.a, A.dev, &(struct vidmm_evict_args){ .allocations = ah, .count = na }), VIDMM_OK);
        else
            for (uint32_t i = 0; i < na; i++)
                T_ST(vidmm_allocation_move(f.a, ah[i], 0), VIDMM_OK);
        break;
    }
    /* B's allocations on those pages: created evicted and made resident
     * (over-commitment, offer), or created resident (destroy,
     * relocation: free space). */
    int created_resident = how == ISO_DESTROY || how == ISO_RELOCATE;
    vidmm_handle bh[MAX_ALLOCS];
    uint64_t bva[MAX_ALLOCS];
    for (uint32_t i = 0; i < nb; i++)
        bh[i] = iso_palloc(&f, &B, set, ASIZE, 1, cfg->cpu, created_resident, VIDMM_OK);
    iso_mr(&f, &B, bh, nb, VIDMM_OK);
    for (uint32_t i = 0; i < nb; i++)
        bva[i] = f.gpummu ? iso_map(&f, &B, bh[i], ASIZE) : 0;
    struct vidmm_physical_range br[MAX_ALLOCS * 4];
    uint32_t nbr = 0;
    for (uint32_t i = 0; i < nb; i++)
        nbr += ranges_of(&f, bh[i], br + nbr, 4);
    uint64_t ov = overlap(br, nbr, ar, nar);
    if (ov < ASIZE * (nb - 1) / 2)
        fprintf(stderr, "isolation %s/%u %s: B (%u) got only %llu KiB of A's pages\n", cfg->preset, cfg->seg,
                how_name[how], nb, (unsigned long long)(ov >> 10));
    T_CHECK(ov >= ASIZE * (nb - 1) / 2);   /* not vacuous: B sits where A's bytes were */
    int a_gone[MAX_ALLOCS] = { 0 };
    if (how == ISO_OVERCOMMIT || how == ISO_OFFER) {
        uint32_t gone = 0;
        for (uint32_t i = 0; i < na; i++) {
            struct vidmm_residency_state rs;
            T_ST(vidmm_allocation_residency(f.a, ah[i], &rs), VIDMM_OK);
            a_gone[i] = !rs.resident;
            gone += !rs.resident;
        }
        if (gone + 1 < nb)
            fprintf(stderr, "isolation %s/%u %s: B (%u) pushed out %u of A's\n", cfg->preset, cfg->seg,
                    how_name[how], nb, gone);
        T_CHECK(gone + 1 >= nb);   /* B's make-resident pushed A out */
    }
    for (uint32_t i = 0; i < nb; i++)
        T_EQ(softgpu_alloc_state(f.a, bh[i]).segment_id, cfg->seg);
    /* B sees zeros: CPU, GPU virtual, GPU physical. */
    uint64_t z = iso_zero_sum(ASIZE);
    iso_gpu_sums(&f, &B, bh, f.gpummu ? bva : NULL, nb, ASIZE, 1, z);
    if (cfg->cpu)
        for (uint32_t i = 0; i < nb; i++)
            iso_cpu_zero(&f, &B, bh[i], ASIZE);
    T_EQ(iso_checked(&f), 0);

    /* A's content where it still exists. */
    if (how == ISO_OVERCOMMIT || how == ISO_OFFER || how == ISO_RELOCATE) {
        T_ST(vidmm_evict(f.a, B.dev, &(struct vidmm_evict_args){ .allocations = bh, .count = nb }), VIDMM_OK);
        if (how == ISO_OFFER) {
            uint32_t res[MAX_ALLOCS];
            T_ST(vidmm_reclaim(f.a, A.queue, ah, na, res, NULL), VIDMM_OK);
            for (uint32_t i = 0; i < na; i++)   /* the offered ones B's pressure took are lost */
                T_EQ(res[i], a_gone[i] ? VIDMM_RECLAIM_DISCARDED : VIDMM_RECLAIM_OK);
        }
        iso_mr(&f, &A, ah, na, VIDMM_OK);
        for (uint32_t i = 0; i < na; i++) {
            uint64_t want = how == ISO_OFFER && a_gone[i] ? z : iso_fill_sum(ASIZE, 0xA5A50000u | i);
            if (f.gpummu)
                iso_gpu_sums(&f, &A, &ah[i], &ava[i], 1, ASIZE, 0, want);
            if (cfg->aperture)
                iso_gpu_sums(&f, &A, &ah[i], NULL, 1, ASIZE, 1, want);
        }
    }
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

static const struct iso_cfg cfgs[] = {
    { "dgpu", 1, 16 * MIB, 1, 0 },    /* CPU-visible memory, 64 KiB pages */
    { "dgpu", 2, 16 * MIB, 1, 0 },    /* invisible memory, CPU host aperture */
    { "wddm1", 1, 16 * MIB, 1, 0 },   /* CPU-visible memory, 4 KiB pages */
    { "wddm1", 2, 16 * MIB, 0, 0 },   /* invisible memory, 4 KiB pages */
    { "dgpu", 3, 0, 1, 1 },           /* aperture */
    { "wddm1", 4, 0, 1, 1 },
    { "igpu", 1, 0, 1, 1 },           /* IoMmu: the aperture only */
};

static const struct iso_cfg *g_cfg;
static enum iso_how g_how;
static int g_sync;
static void stale_one(void) { stale_pages(g_cfg, g_how, g_sync); }

static void stale_pages_all(void)
{
    for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++)
        for (int how = ISO_OVERCOMMIT; how <= ISO_RELOCATE; how++) {
            /* Apertures are not over-committed by eviction: what is
             * mapped there leaves by destruction or a move. */
            if (cfgs[c].aperture && (how == ISO_OVERCOMMIT || how == ISO_OFFER))
                continue;
            char name[128];
            snprintf(name, sizeof name, "isolation_stale_pages %s seg %u %s", cfgs[c].preset, cfgs[c].seg,
                     how_name[how]);
            g_cfg = &cfgs[c];
            g_how = (enum iso_how)how;
            g_sync = (int)((c + (size_t)how) & 1);   /* both engine modes over the matrix */
            t_run(name, stale_one);
        }
}

/* ---- access ---------------------------------------------------------------- */

#define A_VA 0x40000000ull   /* A's mapping: a VA B never maps */

/* B names A's private allocation, handles and VAs everywhere it could;
 * every attempt is refused or faults, and A's bytes stay. */
static void access_preset(const char *preset, int sync)
{
    struct iso_fx f;
    if (iso_open(&f, preset, 0, 0, sync))
        return;
    struct iso_proc A, B;
    iso_new_proc(&f, &A);
    iso_new_proc(&f, &B);
    const uint32_t set = VIDMM_SEGMENT_BIT(f.ap);   /* system pages: the CPU and every mode reach them */
    vidmm_handle x = iso_palloc(&f, &A, set, 256 * KIB, 1, 1, 1, VIDMM_OK);
    vidmm_handle y = iso_palloc(&f, &B, set, 256 * KIB, 1, 1, 1, VIDMM_OK);
    iso_mr(&f, &A, &x, 1, VIDMM_OK);
    iso_mr(&f, &B, &y, 1, VIDMM_OK);
    void *pa = NULL;
    T_ST(vidmm_device_lock(f.a, A.dev, x, &pa), VIDMM_OK);
    for (uint64_t k = 0; pa && k < 256 * KIB / 4; k++)
        ((uint32_t *)pa)[k] = 0x5A5A0000u | (uint32_t)k;
    uint64_t xsum = pa ? softgpu_checksum(pa, 256 * KIB) : 0;
    T_ST(vidmm_device_unlock(f.a, A.dev, x), VIDMM_OK);
    uint64_t xva = 0;
    if (f.gpummu)
        T_ST(vidmm_gpuva_map(f.a, A.proc, A_VA, 0, 0, x, 0, 256 * KIB, 0, 0, &xva), VIDMM_OK);
    else
        xva = iso_map(&f, &A, x, 256 * KIB);   /* IoMmu: its CPU address */

    struct vidmm_process_info bi0, bi1;
    T_ST(vidmm_process_query(f.a, B.proc, &bi0), VIDMM_OK);
    struct vidmm_residency_state rx0, rx1;
    T_ST(vidmm_allocation_residency(f.a, x, &rx0), VIDMM_OK);
    T_EQ_U64(rx0.owner, A.proc);
    struct vidmm_submit_stats ss0, ss1;
    T_ST(vidmm_submit_get_stats(f.a, &ss0), VIDMM_OK);

    /* VA space: B cannot map A's allocation, alone or in a batch. */
    uint64_t va = 0;
    T_ST(vidmm_gpuva_map(f.a, B.proc, 0, 0, 0, x, 0, 256 * KIB, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(f.a, B.proc, 0, 0, 0, A.dev, 0, 4096, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(f.a, B.proc, 0, 0, 0, A.queue, 0, 4096, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(f.a, B.proc, 0, 0, 0, A.pctx, 0, 4096, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_gpuva_map(f.a, B.proc, 0, 0, 0, A.proc, 0, 4096, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    if (f.gpummu) {
        uint64_t rva = 0;
        T_ST(vidmm_gpuva_reserve(f.a, B.proc, 0, 0, 0, 256 * KIB, VIDMM_GPUVA_RESERVE_NO_ACCESS, &rva), VIDMM_OK);
        T_ST(vidmm_process_query(f.a, B.proc, &bi0), VIDMM_OK);
        struct vidmm_gpuva_update_op op;
        memset(&op, 0, sizeof(op));
        op.type = VIDMM_GPUVA_UPDATE_MAP;
        op.va = rva;
        op.size = 256 * KIB;
        op.allocation = x;
        T_ST(vidmm_gpuva_update(f.a, B.proc, &op, 1), VIDMM_E_INVALID_HANDLE);
    }
    /* Residency lists: B's device cannot list, evict, offer or reclaim it;
     * A's queue does not serve B's device, nor B's queue A's. */
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof(m));
    m.paging_queue = B.queue;
    m.allocations = &x;
    m.count = 1;
    T_ST(vidmm_make_resident(f.a, B.dev, &m), VIDMM_E_INVALID_HANDLE);
    vidmm_handle both[2] = { y, x };
    m.allocations = both;
    m.count = 2;
    T_ST(vidmm_make_resident(f.a, B.dev, &m), VIDMM_E_INVALID_HANDLE);
    m.allocations = &y;
    m.count = 1;
    m.paging_queue = A.queue;
    T_ST(vidmm_make_resident(f.a, B.dev, &m), VIDMM_E_INVALID_HANDLE);
    m.paging_queue = B.queue;
    T_ST(vidmm_make_resident(f.a, A.dev, &m), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_evict(f.a, B.dev, &(struct vidmm_evict_args){ .allocations = &x, .count = 1 }), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_offer(f.a, B.dev, &x, 1, VIDMM_OFFER_LOW), VIDMM_E_INVALID_HANDLE);
    uint32_t rr = 7;
    T_ST(vidmm_reclaim(f.a, B.queue, &x, 1, &rr, NULL), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_reclaim(f.a, A.queue, &y, 1, &rr, NULL), VIDMM_E_INVALID_HANDLE);
    T_EQ(rr, 7);
    /* Allocation list: B's physical submission naming x is refused and
     * nothing runs. */
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    T_ST(softgpu_cmd_write64(&cb, 0, 0xBADBADull), VIDMM_OK);
    struct vidmm_submit_allocation sl[2] = { { y, 0, 0 }, { x, VIDMM_SUBMIT_WRITE, 0 } };
    struct vidmm_patch_location pl = { 1, 0, 0, 0, SOFTGPU_CMD_OPERAND(0), 0 };
    struct vidmm_submit_physical_args sp;
    memset(&sp, 0, sizeof(sp));
    sp.buffer = buf;
    sp.size = cb.size;
    sp.allocations = sl;
    sp.allocation_count = 2;
    sp.patches = &pl;
    sp.patch_count = 1;
    uint64_t fs0 = 0, fc0 = 0, fs1 = 0, fc1 = 0;
    T_ST(vidmm_context_fence(f.a, B.pctx, &fs0, &fc0), VIDMM_OK);
    T_ST(vidmm_submit_physical(f.a, B.pctx, &sp), VIDMM_E_INVALID_HANDLE);
    sl[1].allocation = A.dev;
    T_ST(vidmm_submit_physical(f.a, B.pctx, &sp), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_fence(f.a, B.pctx, &fs1, &fc1), VIDMM_OK);
    T_EQ_U64(fs1, fs0);
    T_EQ_U64(sp.fence, 0);
    T_EQ(sp.patched, 0);
    /* Lock: refused, and A's pointer (A holds a lock now) is not handed out. */
    void *pa2 = NULL;
    T_ST(vidmm_device_lock(f.a, A.dev, x, &pa2), VIDMM_OK);
    void *sentinel = (void *)&sentinel, *pb = sentinel;
    T_ST(vidmm_device_lock(f.a, B.dev, x, &pb), VIDMM_E_INVALID_HANDLE);
    T_CHECK(pb == sentinel);
    T_ST(vidmm_device_lock(f.a, B.dev, A.queue, &pb), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_lock(f.a, A.queue, x, &pb), VIDMM_E_INVALID_HANDLE);
    T_CHECK(pb == sentinel);
    T_ST(vidmm_device_unlock(f.a, B.dev, x), VIDMM_E_INVALID_HANDLE);
    struct vidmm_allocation_state xs;
    T_ST(vidmm_allocation_query(f.a, x, &xs), VIDMM_OK);
    T_EQ(xs.lock_count, 1);   /* B's unlock did not release A's lock */
    T_ST(vidmm_device_unlock(f.a, A.dev, x), VIDMM_OK);
    /* Nothing changed. */
    T_ST(vidmm_process_query(f.a, B.proc, &bi1), VIDMM_OK);
    T_EQ_U64(bi1.ranges, bi0.ranges);
    T_EQ_U64(bi1.page_tables, bi0.page_tables);
    T_ST(vidmm_allocation_residency(f.a, x, &rx1), VIDMM_OK);
    T_EQ(rx1.references, rx0.references);
    T_EQ(rx1.offered, 0);
    T_EQ(rx1.resident, 1);
    T_ST(vidmm_submit_get_stats(f.a, &ss1), VIDMM_OK);
    T_EQ_U64(ss1.physical_submissions, ss0.physical_submissions);
    T_EQ(iso_checked(&f), 0);

    /* Adapter-wide allocations stay shared: both may map and list one. */
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.size = d.info.size = 64 * KIB;
    d.info.supported_write_segment_set = set;
    d.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    vidmm_handle sh = 0;
    T_ST(vidmm_allocation_create(f.a, &d, sizeof d, &sh), VIDMM_OK);
    void *pc = NULL;
    if (f.gpummu) {
        (void)iso_map(&f, &A, sh, 64 * KIB);
        (void)iso_map(&f, &B, sh, 64 * KIB);
    }
    iso_mr(&f, &A, &sh, 1, VIDMM_OK);
    T_ST(vidmm_device_lock(f.a, B.dev, sh, &pc), VIDMM_OK);
    T_ST(vidmm_device_unlock(f.a, B.dev, sh), VIDMM_OK);
    T_EQ(iso_checked(&f), 0);
    if (f.gpummu) {
        /* Page tables: B's root maps nothing at A's VA; A's does. */
        struct vidmm_physical_address ra, rb;
        T_ST(vidmm_process_root_page_table(f.a, A.proc, &ra), VIDMM_OK);
        T_ST(vidmm_process_root_page_table(f.a, B.proc, &rb), VIDMM_OK);
        T_CHECK(memcmp(&ra, &rb, sizeof ra) != 0);
        struct softgpu_translation t;
        T_ST(softgpu_translate(f.sg, &ra, xva, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
        uint64_t xpage = t.offset;
        T_ST(softgpu_translate(f.sg, &rb, xva, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
        /* No page of B's VA space translates to one of x's pages. */
        struct vidmm_gpuva_range gr[32];
        uint32_t ng = 0;
        T_ST(vidmm_gpuva_query(f.a, B.proc, 0, gr, 32, &ng), VIDMM_OK);
        uint64_t walked = 0, hits = 0;
        for (uint32_t i = 0; i < ng; i++)
            for (uint64_t v = gr[i].va; gr[i].state == 2 && v < gr[i].va + gr[i].size; v += 4096) {
                if (softgpu_translate(f.sg, &rb, v, SOFTGPU_ACCESS_READ, &t) != VIDMM_OK)
                    continue;
                walked++;
                hits += t.segment_id == 0 && t.offset >= xpage && t.offset < xpage + 256 * KIB;
            }
        T_CHECK(walked > 0);
        T_EQ_U64(hits, 0);

        /* B's GPU work at A's VA faults on B's device only; A's bytes stay. */
        cb.size = 0;
        T_ST(softgpu_cmd_write64(&cb, xva + 64, 0xBADBADull), VIDMM_OK);
        T_ST(softgpu_cmd_fill(&cb, xva, 4096, 0xBADBADu), VIDMM_OK);
        iso_aux_write(&f, &B, 0, cb.data, cb.size);
        uint64_t fence = 0;
        T_ST(vidmm_submit_virtual(f.a, B.vctx, B.aux_va, cb.size, &fence), VIDMM_OK);
        T_ST(vidmm_context_wait(f.a, B.vctx, fence, UINT64_MAX), VIDMM_OK);
        struct vidmm_device_info di;
        T_ST(vidmm_device_query(f.a, B.dev, &di), VIDMM_OK);
        T_EQ(di.lost, 1);
        T_EQ_U64(di.fault_va, xva + 64);
        T_ST(vidmm_device_query(f.a, A.dev, &di), VIDMM_OK);
        T_EQ(di.lost, 0);
        /* A reader process C: its CHECKSUM of A's VA faults too. */
        struct iso_proc C;
        iso_new_proc(&f, &C);
        cb.size = 0;
        T_ST(softgpu_cmd_checksum(&cb, xva, 256 * KIB, C.aux_va + AUX_RES), VIDMM_OK);
        iso_aux_write(&f, &C, AUX_RES, (uint64_t[1]){ 0 }, 8);
        iso_aux_write(&f, &C, 0, cb.data, cb.size);
        T_ST(vidmm_submit_virtual(f.a, C.vctx, C.aux_va, cb.size, &fence), VIDMM_OK);
        T_ST(vidmm_context_wait(f.a, C.vctx, fence, UINT64_MAX), VIDMM_OK);
        T_ST(vidmm_device_query(f.a, C.dev, &di), VIDMM_OK);
        T_EQ(di.lost, 1);
        T_ST(vidmm_device_lock(f.a, C.dev, C.aux, &pc), VIDMM_E_DEVICE_LOST);   /* a lost device locks nothing */
        vidmm_handle none = 0;
        T_ST(vidmm_device_allocation_create(f.a, C.dev, &d, sizeof d, 0, &none), VIDMM_E_DEVICE_LOST);
        T_EQ_U64(none, 0);
        pc = NULL;
        T_ST(vidmm_allocation_lock(f.a, C.aux, &pc), VIDMM_OK);   /* the kernel-side view */
        uint64_t csum = 1;
        if (pc)
            memcpy(&csum, (char *)pc + AUX_RES, 8);
        T_EQ_U64(csum, 0);   /* the CHECKSUM stopped at the fault: nothing of A's was summed */
        T_ST(vidmm_allocation_unlock(f.a, C.aux), VIDMM_OK);
        /* The same VA number in C's own space is C's memory: its writes
         * land there, not in A's allocation. */
        T_ST(vidmm_process_destroy(f.a, C.proc), VIDMM_OK);
        iso_new_proc(&f, &C);
        vidmm_handle z = iso_palloc(&f, &C, set, 256 * KIB, 1, 1, 1, VIDMM_OK);
        iso_mr(&f, &C, &z, 1, VIDMM_OK);
        uint64_t zva = 0;
        T_ST(vidmm_gpuva_map(f.a, C.proc, A_VA, 0, 0, z, 0, 256 * KIB, 0, 0, &zva), VIDMM_OK);
        T_EQ_U64(zva, xva);
        cb.size = 0;
        T_ST(softgpu_cmd_fill(&cb, zva, 256 * KIB, 0xC0C0C0C0u), VIDMM_OK);
        iso_run_virtual(&f, &C, &cb);
        iso_gpu_sums(&f, &C, &z, &zva, 1, 256 * KIB, 0, iso_fill_sum(256 * KIB, 0xC0C0C0C0u));
        T_ST(vidmm_process_destroy(f.a, C.proc), VIDMM_OK);
        T_ST(vidmm_allocation_query(f.a, z, &xs), VIDMM_E_INVALID_HANDLE);   /* went with C */
    }
    /* A's bytes, through A's CPU lock and A's GPU. */
    T_ST(vidmm_device_lock(f.a, A.dev, x, &pc), VIDMM_OK);
    if (pc)
        T_EQ_U64(softgpu_checksum(pc, 256 * KIB), xsum);
    T_ST(vidmm_device_unlock(f.a, A.dev, x), VIDMM_OK);
    iso_gpu_sums(&f, &A, &x, f.gpummu ? &xva : NULL, 1, 256 * KIB, 1, xsum);
    /* A's handles after A: all invalid, B unaffected. */
    T_ST(vidmm_process_destroy(f.a, A.proc), VIDMM_OK);
    T_ST(vidmm_allocation_query(f.a, x, &xs), VIDMM_E_INVALID_HANDLE);
    struct vidmm_device_info dq;
    T_ST(vidmm_device_query(f.a, A.dev, &dq), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_paging_queue_fence(f.a, A.queue, &fs1), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_context_fence(f.a, A.pctx, &fs1, &fc1), VIDMM_E_INVALID_HANDLE);
    T_EQ(iso_checked(&f), 0);
    T_ST(vidmm_allocation_destroy(f.a, sh), VIDMM_OK);
    iso_close(&f);
}

static void access_dgpu(void) { access_preset("dgpu", 0); }
static void access_wddm1(void) { access_preset("wddm1", 1); }
static void access_igpu(void) { access_preset("igpu", 0); }

/* The private-allocation entries refuse bad input and change nothing. */
static void private_bad_input(void)
{
    struct iso_fx f;
    if (iso_open(&f, "dgpu", 0, 0, 1))
        return;
    struct iso_proc A;
    iso_new_proc(&f, &A);
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.size = d.info.size = 64 * KIB;
    d.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(1);
    d.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    struct vidmm_adapter_info a0, a1;
    T_ST(vidmm_adapter_query_info(f.a, &a0), VIDMM_OK);
    vidmm_handle h = 77;
    T_ST(vidmm_device_allocation_create(NULL, A.dev, &d, sizeof d, 0, &h), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, 0, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, 0x80, &h), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_allocation_create(f.a, A.proc, &d, sizeof d, 0, &h), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_allocation_create(f.a, A.queue, &d, sizeof d, 0, &h), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_allocation_create(f.a, 0, &d, sizeof d, 0, &h), VIDMM_E_INVALID_HANDLE);
    T_EQ_U64(h, 77);
    void *c = (void *)&c;
    T_ST(vidmm_device_lock(NULL, A.dev, A.aux, &c), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_lock(f.a, A.dev, A.aux, NULL), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_lock(f.a, A.dev, 0, &c), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_lock(f.a, A.pctx, A.aux, &c), VIDMM_E_INVALID_HANDLE);
    T_CHECK(c == (void *)&c);
    T_ST(vidmm_device_unlock(NULL, A.dev, A.aux), VIDMM_E_INVALID_ARG);
    T_ST(vidmm_device_unlock(f.a, A.dev, A.aux), VIDMM_E_STATE);   /* not locked */
    T_ST(vidmm_device_unlock(f.a, A.queue, A.aux), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_adapter_query_info(f.a, &a1), VIDMM_OK);
    T_EQ_U64(a1.live_allocations, a0.live_allocations);
    /* A destroyed private allocation's handle, and a destroyed device. */
    vidmm_handle p = iso_palloc(&f, &A, VIDMM_SEGMENT_BIT(1), 64 * KIB, 0, 1, 1, VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, p), VIDMM_OK);
    T_ST(vidmm_device_lock(f.a, A.dev, p, &c), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_destroy(f.a, A.dev), VIDMM_OK);
    T_ST(vidmm_device_allocation_create(f.a, A.dev, &d, sizeof d, 0, &h), VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_device_lock(f.a, A.dev, A.aux, &c), VIDMM_E_INVALID_HANDLE);
    T_EQ(iso_checked(&f), 0);
    iso_close(&f);
}

void suite_isolation(void);
void suite_isolation(void)
{
    stale_pages_all();
    t_run("isolation_access_dgpu", access_dgpu);
    t_run("isolation_private_bad_input", private_bad_input);
    t_run("isolation_access_wddm1", access_wddm1);
    t_run("isolation_access_igpu", access_igpu);
}
