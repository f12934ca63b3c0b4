/*
 * cmdbuf.c - libFuzzer harness: softgpu command buffers and paging
 * buffers built from the input.
 *
 * Command buffers run on an adapter opened on softgpu (synchronous mode,
 * small segments, preset dgpu, wddm1 or igpu from byte 0) through vidmm:
 * in virtual mode from a read-only mapping of a command allocation,
 * through the process's page tables and softgpu's MMU, and in physical
 * mode from host memory with an allocation list and patch locations.
 * Address operands whose top nibble is 0xF are relocated into one of the
 * harness's regions (mapped data, a zero reservation, the read-only
 * command mapping, a no-access reservation, a hole; in physical mode the
 * allocations' physical ranges), so the fuzzer reaches valid addresses
 * often; the others are kept as they are.  Every submission must
 * complete or fault - the context fence reaches the submission's value
 * before submit returns - and softgpu and vidmm's checks stay clean.
 *
 * Paging buffers are built by softgpu's build_paging_buffer from fuzzed
 * requests on a second softgpu without vidmm, then submitted and run.
 *
 * What the harness keeps out on purpose (docs/FUZZING.md):
 *  - WAIT values are forced to 0 (always satisfied): an unsatisfied WAIT
 *    stalls its node for good in synchronous mode, and vidmm waits for a
 *    context's work before destroying it;
 *  - GPU writes never reach page-table memory (commands cannot address
 *    the tables in virtual mode; physical addresses into the page-table
 *    segment are moved into a data region; on the paging instance tables
 *    live in the lower half of that segment, which only UPDATE_PAGE_TABLE
 *    writes).  softgpu's walker follows any system-memory frame
 *    (segment 0) of a table entry as a host address, so a forged entry
 *    would let the GPU touch arbitrary host memory (a known limit);
 *  - host addresses (MDL pages, system-memory PTE frames, dummy pages)
 *    always point into the harness's own host arena.
 */
#include "fuzz.h"
#include "harness/softgpu_cmds.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#define MIB (1ull << 20)
#define KIB (1ull << 10)

#define MAX_SUBMITS 24u
#define MAX_CMD 512u
#define NREG 8u
#define ARENA_PAGES 64u

struct region {
    uint64_t base, size;
};

struct cf {
    struct fz_in in;
    struct fz_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    int gpummu;
    uint32_t pt_segment;
    vidmm_handle proc, dev, queue, vctx, pctx;
    vidmm_handle cmd, data0, data1, ring0, ring1;
    uint64_t va_cmd;
    struct region vreg[NREG];
    uint32_t nvreg;
    struct region preg[NREG];
    uint32_t npreg;
    /* Paging instance. */
    struct softgpu *pg;
    uint64_t pg_fence;
    uint8_t cmdbuf[MAX_CMD];
    char report[1024];
};

static uint8_t arena[ARENA_PAGES * 4096] __attribute__((aligned(4096)));
static uint8_t dma[64 * 1024] __attribute__((aligned(4096)));

static const char *const presets[] = { "dgpu", "wddm1", "igpu" };

static void checks(struct cf *f, vidmm_status st, const char *what)
{
    FZ_STEP(st, what, 24);
    int e = vidmm_adapter_check(f->a, f->report, sizeof f->report);
    FUZZ_REQUIRE(e == 0, "%s: adapter check: %d\n%s", what, e, f->report);
    FUZZ_REQUIRE(softgpu_check(f->sg) == 0, "%s: softgpu check", what);
}

/* ---- command buffers ------------------------------------------------------- */

/* Bit n set: operand n is an address (the shared command table). */
static uint32_t addr_operands(uint16_t op)
{
    const struct cmd_kind *k = cmd_kind_of(op);
    return k ? k->addr_mask : 0;
}

static uint64_t relocate(struct cf *f, uint64_t v, int physical)
{
    const struct region *r = physical ? f->preg : f->vreg;
    uint32_t n = physical ? f->npreg : f->nvreg;
    if ((v >> 60) == 0xF && n) {
        const struct region *g = &r[((v >> 56) & 0xF) % n];
        return g->base + (v & 0xFFFFFFFFu) % (g->size ? g->size : 1);
    }
    if (physical && f->gpummu && ((v >> 56) & 31) == f->pt_segment && n) {
        /* Keep physical writes off the page tables (see the overview). */
        const struct region *g = &r[v % n];
        return g->base + (v & 0xFFFFFFu) % (g->size ? g->size : 1);
    }
    return v;
}

/* Walk the commands softgpu will see, relocate their addresses, zero WAIT
 * values; collect the offsets of address operands (patch targets).
 * Returns the bytes walked (softgpu stops at the first malformed command
 * in virtual mode and refuses the whole buffer in physical mode). */
static uint32_t sanitise(struct cf *f, uint8_t *b, uint32_t size, int physical, uint32_t *slots, uint32_t *nslots)
{
    uint32_t pos = 0;
    *nslots = 0;
    while (pos + 8 <= size) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, b + pos, sizeof h);
        uint32_t n = cmd_kind_size(h.opcode);
        if (n == 0 || h.size != n || h.flags != 0 || n > size - pos)
            break;
        uint32_t am = addr_operands(h.opcode);
        for (uint32_t k = 0; k < 4; k++) {
            if (!(am & (1u << k)))
                continue;
            uint64_t v;
            memcpy(&v, b + pos + SOFTGPU_CMD_OPERAND(k), 8);
            v = relocate(f, v, physical);
            memcpy(b + pos + SOFTGPU_CMD_OPERAND(k), &v, 8);
            if (h.opcode != SOFTGPU_CMD_WAIT && *nslots < 32)
                slots[(*nslots)++] = pos + SOFTGPU_CMD_OPERAND(k);
        }
        if (h.opcode == SOFTGPU_CMD_WAIT)
            memset(b + pos + SOFTGPU_CMD_OPERAND(1), 0, 8);
        pos += n;
    }
    return pos;
}

static void physical_regions(struct cf *f)
{
    f->npreg = 0;
    vidmm_handle hs[] = { f->ring0, f->ring1, f->data0, f->data1 };
    for (uint32_t i = 0; i < 4; i++) {
        struct vidmm_physical_range r[4];
        uint32_t cnt = 0;
        if (!hs[i] || vidmm_allocation_physical_ranges(f->a, hs[i], r, 4, &cnt) != VIDMM_OK)
            continue;
        for (uint32_t k = 0; k < cnt && k < 4 && f->npreg < NREG; k++)
            if (r[k].segment_id != 0)   /* segment 0 offsets are backing-store offsets, not GPU addresses */
                f->preg[f->npreg++] = (struct region){ SOFTGPU_PADDR(r[k].segment_id, r[k].offset), r[k].size };
    }
}

static void require_done(struct cf *f, vidmm_handle ctx, uint64_t fence, const char *what)
{
    uint64_t sub = 0, done = 0;
    checks(f, vidmm_context_fence(f->a, ctx, &sub, &done), what);
    FUZZ_REQUIRE(done >= fence, "%s: fence %llu not reached (completed %llu): the engine hung", what,
                 (unsigned long long)fence, (unsigned long long)done);
    checks(f, vidmm_context_wait(f->a, ctx, fence, 0), what);
}

static void submit_virtual(struct cf *f, uint32_t len)
{
    uint32_t slots[32], nslots;
    uint8_t b = fz_u8(&f->in);
    uint64_t va = f->va_cmd, size = len;
    uint32_t start = 0;
    if (b == 0xff) {           /* start inside a command, or run off the mapping */
        start = (fz_u8(&f->in) & 0x3f) * 8u % len;
        va += start;
        size = len - start;
    } else if (b == 0xfe) {
        size = 64 * KIB + fz_u16(&f->in);
    }
    /* Sanitise the view the engine decodes: from where it starts. */
    sanitise(f, f->cmdbuf + start, len - start, 0, slots, &nslots);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(f->a, f->cmd, &p);
    checks(f, st, "lock cmd");
    if (st != VIDMM_OK)
        return;
    /* Zeros after the commands (opcode 0 is malformed: the engine stops
     * there), never bytes a physical-mode write left behind. */
    memset(p, 0, 64 * KIB);
    memcpy(p, f->cmdbuf, len);
    checks(f, vidmm_allocation_unlock(f->a, f->cmd), "unlock cmd");
    uint64_t fence = 0;
    st = vidmm_submit_virtual(f->a, f->vctx, va, (uint32_t)size, &fence);
    checks(f, st, "submit_virtual");
    if (st == VIDMM_OK)
        require_done(f, f->vctx, fence, "virtual");
}

static void submit_physical(struct cf *f, uint32_t len)
{
    physical_regions(f);
    uint32_t slots[32], nslots;
    sanitise(f, f->cmdbuf, len, 1, slots, &nslots);
    struct vidmm_submit_allocation al[2] = { { f->ring0, VIDMM_SUBMIT_WRITE, 0 }, { f->ring1, 0, 0 } };
    struct vidmm_patch_location pl[6];
    memset(pl, 0, sizeof pl);
    uint32_t npl = fz_u8(&f->in) % 7;
    for (uint32_t i = 0; i < npl; i++) {
        uint8_t b = fz_u8(&f->in);
        pl[i].allocation_index = b & 0x80 ? 2u + (b & 1) : (uint32_t)(b & 1);
        pl[i].allocation_offset = (uint32_t)fz_u16(&f->in) * 8u;
        /* An address operand found by the walk (a WAIT value is never a
         * target: it would make the WAIT unsatisfiable), else past the end. */
        if (nslots && !(b & 0x40))
            pl[i].patch_offset = slots[fz_u8(&f->in) % nslots];
        else
            pl[i].patch_offset = len - 7 + (b & 0x3f);
    }
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof pa);
    pa.buffer = f->cmdbuf;
    pa.size = len;
    pa.allocations = al;
    pa.allocation_count = 2;
    pa.patches = pl;
    pa.patch_count = npl;
    vidmm_status st = vidmm_submit_physical(f->a, f->pctx, &pa);
    checks(f, st, "submit_physical");
    if (st == VIDMM_OK)
        require_done(f, f->pctx, pa.fence, "physical");
}

/* ---- paging buffers (second softgpu, no vidmm) ------------------------------- */

struct pg_geo {
    uint32_t pt_seg;
    uint64_t half;        /* tables live in [0, half) of pt_seg */
    uint64_t slot;        /* bytes per table slot */
};

static void pg_geometry(const struct softgpu *pg, struct pg_geo *g)
{
    g->pt_seg = pg->mmu.levels ? pg->mmu.pt_segment : 0;
    g->half = g->pt_seg ? pg->seg[g->pt_seg].size / 2 : 0;
    uint64_t s = pg->mmu.leaf64_size;
    for (uint32_t l = 0; l < pg->mmu.levels; l++)
        if (pg->mmu.table_size[l] > s)
            s = pg->mmu.table_size[l];
    if (pg->mmu.levels && pg->mmu.root_resizable && s < 64 * KIB)
        s = 64 * KIB;
    g->slot = (s + 0xffffu) & ~0xffffull;
}

/* The slots of the tables of one level: slot k holds only tables of level
 * k % levels, so an entry written for one level is never read as an
 * entry of another (a leaf entry read as an upper-level one would name a
 * "table" in data memory that transfers may write). */
static uint64_t pg_slot(const struct softgpu *pg, const struct pg_geo *g, uint32_t level, uint64_t x)
{
    uint32_t levels = pg->mmu.levels ? pg->mmu.levels : 1;
    uint64_t per = g->slot ? g->half / g->slot / levels : 0;
    return per ? ((x % per) * levels + level % levels) * g->slot : 0;
}

static uint64_t pg_table(struct cf *f, const struct pg_geo *g, uint32_t level)
{
    return pg_slot(f->pg, g, level, fz_u8(&f->in));
}

/* A GPU segment address; in the page-table segment only its upper half
 * (data), so no transfer or fill writes a table. */
static uint64_t pg_addr(struct cf *f, const struct pg_geo *g, uint32_t seg, int write)
{
    const struct softgpu *pg = f->pg;
    uint64_t off = fz_u8(&f->in) & 0x80 ? fz_u64(&f->in) : (uint64_t)fz_u16(&f->in) * 4096u;
    if (seg == 0 || seg > pg->nb_segment)
        return off;
    uint64_t size = pg->seg[seg].size;
    if (write && seg == g->pt_seg)
        off = g->half + off % (size - g->half);
    return pg->seg[seg].base_address + off;
}

static uint64_t pg_size(struct cf *f)
{
    uint8_t b = fz_u8(&f->in);
    return b & 0x80 ? fz_u64(&f->in) : (uint64_t)b * 4096u + (b & 1 ? 0 : (fz_u8(&f->in) & 0xf));
}

static void pg_entries(struct cf *f, const struct pg_geo *g, uint32_t level, struct vidmm_pte *e, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        /* One read per statement: the order of operands is unspecified
         * in C, and gcc and clang differ (docs/FUZZING.md). */
        uint64_t fl = fz_u16(&f->in);
        fl |= (uint64_t)(fz_u8(&f->in) & 2) << 16;   /* PAGE_TABLE_64KB sometimes */
        uint64_t x = fz_u32(&f->in);
        uint32_t seg = (uint32_t)((fl & VIDMM_PTE_SEGMENT_MASK) >> VIDMM_PTE_SEGMENT_SHIFT);
        if (level > 0) {
            /* Upper levels point only at table slots. */
            fl = (fl & ~VIDMM_PTE_SEGMENT_MASK) | ((uint64_t)g->pt_seg << VIDMM_PTE_SEGMENT_SHIFT);
            x = pg_slot(f->pg, g, level - 1, x) / 4096u;
        } else if (seg == 0) {
            x = ((uintptr_t)arena >> 12) + x % ARENA_PAGES;
        } else if (seg == g->pt_seg) {
            uint64_t data = f->pg->seg[seg].size - g->half;
            x = (g->half + (x * 4096u) % data) / 4096u;
        }
        e[i].flags = fl;
        e[i].page_address = x;
    }
}

static void paging_op(struct cf *f)
{
    if (!f->pg) {
        struct softgpu_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = f->sg->preset;
        cfg.synchronous = 1;
        for (uint32_t i = 1; i <= f->sg->nb_segment; i++)
            cfg.segment_size[i] = f->sg->seg[i].size;
        if (softgpu_create(&cfg, &f->pg) != VIDMM_OK) {
            f->pg = NULL;
            return;
        }
    }
    struct softgpu *pg = f->pg;
    struct pg_geo g;
    pg_geometry(pg, &g);
    const struct vidmm_driver_ops *ops = softgpu_driver_ops();
    struct vidmm_mdl mdl = { arena, 1 + fz_u8(&f->in) % ARENA_PAGES };
    struct vidmm_pte ptes[16];
    struct vidmm_build_paging_buffer_args ba;
    memset(&ba, 0, sizeof ba);
    uint32_t nseg = pg->nb_segment + 1;
    uint8_t kind = fz_u8(&f->in) % 9;
    switch (kind) {
    case 0: {
        struct vidmm_paging_transfer *t = &ba.u.transfer;
        ba.operation = VIDMM_PAGING_TRANSFER;
        t->transfer_size = pg_size(f);
        t->source.segment_id = fz_u8(&f->in) % nseg;
        t->source.segment_address = pg_addr(f, &g, t->source.segment_id, 0);
        t->source.mdl = &mdl;
        t->destination.segment_id = fz_u8(&f->in) % nseg;
        t->destination.segment_address = pg_addr(f, &g, t->destination.segment_id, 1);
        t->destination.mdl = &mdl;
        t->mdl_offset = fz_u8(&f->in) % ARENA_PAGES;
        t->flags = fz_u8(&f->in) & 0x1c;
        break;
    }
    case 1:
        ba.operation = VIDMM_PAGING_FILL;
        ba.u.fill.fill_size = pg_size(f);
        ba.u.fill.fill_pattern = fz_u32(&f->in);
        ba.u.fill.destination_segment_id = fz_u8(&f->in) % nseg;
        ba.u.fill.destination_segment_address = pg_addr(f, &g, ba.u.fill.destination_segment_id, 1);
        break;
    case 2:
        ba.operation = VIDMM_PAGING_DISCARD_CONTENT;
        ba.u.discard_content.segment_id = fz_u8(&f->in) % nseg;
        ba.u.discard_content.segment_address = pg_addr(f, &g, ba.u.discard_content.segment_id, 0);
        ba.u.discard_content.size = pg_size(f);
        ba.u.discard_content.flags = fz_u8(&f->in) & 1;
        break;
    case 3:
        ba.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
        ba.u.map_aperture_segment.segment_id = fz_u8(&f->in) % nseg;
        ba.u.map_aperture_segment.offset_in_pages = fz_u16(&f->in);
        ba.u.map_aperture_segment.number_of_pages = fz_u8(&f->in);
        ba.u.map_aperture_segment.mdl = &mdl;
        ba.u.map_aperture_segment.mdl_offset = fz_u8(&f->in);
        ba.u.map_aperture_segment.flags = fz_u8(&f->in) & 1;
        break;
    case 4:
        ba.operation = VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
        ba.u.unmap_aperture_segment.segment_id = fz_u8(&f->in) % nseg;
        ba.u.unmap_aperture_segment.offset_in_pages = fz_u16(&f->in);
        ba.u.unmap_aperture_segment.number_of_pages = fz_u8(&f->in);
        ba.u.unmap_aperture_segment.dummy_page = fz_u8(&f->in) & 1 ? arena : NULL;
        break;
    case 5: {
        struct vidmm_paging_update_page_table *u = &ba.u.update_page_table;
        ba.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
        u->page_table_level = fz_u8(&f->in) % (pg->mmu.levels + 1);
        u->flags = fz_u8(&f->in) & 0x1f;
        u->page_table_address.segment_id = fz_u8(&f->in) & 0x80 ? fz_u8(&f->in) % nseg : g.pt_seg;
        u->page_table_address.segment_offset = pg_table(f, &g, u->page_table_level);
        if (u->page_table_address.segment_id != g.pt_seg)
            u->page_table_address.segment_id = g.pt_seg;   /* tables only in their slots */
        u->num_page_table_entries = 1 + fz_u8(&f->in) % 16;
        pg_entries(f, &g, u->page_table_level, ptes,
                   u->flags & VIDMM_UPDATE_PT_REPEAT ? 1 : u->num_page_table_entries);
        u->page_table_entries = ptes;
        u->start_index = fz_u16(&f->in);
        break;
    }
    case 6:
        ba.operation = VIDMM_PAGING_FLUSH_TLB;
        ba.u.flush_tlb.root_page_table_address.segment_id = g.pt_seg;
        ba.u.flush_tlb.root_page_table_address.segment_offset = pg_table(f, &g, pg->mmu.levels - 1);
        ba.u.flush_tlb.start_virtual_address = fz_u64(&f->in) & 0xffffffffff000ull;
        ba.u.flush_tlb.end_virtual_address = fz_u64(&f->in) & 0xffffffffff000ull;
        break;
    case 7:
    case 8: {
        struct vidmm_physical_address root = { g.pt_seg, 0, pg_table(f, &g, pg->mmu.levels - 1) };
        uint64_t va = (uint64_t)fz_u32(&f->in) * 4096u, size = pg_size(f);
        if (kind == 7) {
            ba.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
            ba.u.transfer_virtual.transfer_size_in_bytes = size;
            ba.u.transfer_virtual.source_virtual_address = va;
            ba.u.transfer_virtual.destination_virtual_address = (uint64_t)fz_u32(&f->in) * 4096u;
            ba.u.transfer_virtual.destination_virtual_address += fz_u8(&f->in) & 7;
            ba.u.transfer_virtual.transfer_direction = fz_u8(&f->in) % 4;
            ba.u.transfer_virtual.flags = fz_u8(&f->in) & 3;
            ba.u.transfer_virtual.root_page_table_address = root;
        } else {
            ba.operation = VIDMM_PAGING_FILL_VIRTUAL;
            ba.u.fill_virtual.fill_size_in_bytes = size;
            ba.u.fill_virtual.fill_pattern = fz_u32(&f->in);
            ba.u.fill_virtual.destination_virtual_address = va;
            ba.u.fill_virtual.root_page_table_address = root;
        }
        break;
    }
    }
    if (fz_u8(&f->in) == 0xff)   /* an operation softgpu does not know (never a known one: its union
                                    would hold another operation's fields, pointers vidmm always sets) */
        ba.operation = (enum vidmm_paging_operation)(17u + fz_u8(&f->in));
    uint32_t cap = 64 + (uint32_t)(fz_u8(&f->in) & 0x3f) * 1024u;   /* small buffers: the restart protocol */
    for (int pass = 0; pass < 64; pass++) {
        ba.dma_buffer = dma;
        ba.dma_size = cap;
        vidmm_status st = ops->build_paging_buffer(pg, &ba);
        if (fz_tracing())
            fprintf(stderr, "  paging op %d build: %s\n", (int)ba.operation, vidmm_status_str(st));
        FUZZ_REQUIRE(st == VIDMM_OK || st == VIDMM_E_INSUFFICIENT_DMA_BUFFER || st == VIDMM_E_INVALID_ARG,
                     "build_paging_buffer: %s", vidmm_status_str(st));
        uint32_t used = cap - ba.dma_size;
        FUZZ_REQUIRE(ba.dma_size <= cap && (uint8_t *)ba.dma_buffer == dma + used, "build: buffer pointers");
        if (used) {
            struct vidmm_submit_command_args sa;
            memset(&sa, 0, sizeof sa);
            sa.dma_buffer = dma;
            sa.dma_buffer_size = used;
            sa.flags = VIDMM_SUBMIT_PAGING;
            sa.fence = ++f->pg_fence;
            vidmm_status s2 = ops->submit_command(pg, &sa);
            /* softgpu built it: it must accept it. */
            FUZZ_REQUIRE(s2 == VIDMM_OK, "submit of a buffer softgpu built: %s", vidmm_status_str(s2));
        }
        FUZZ_REQUIRE(softgpu_check(pg) == 0, "paging softgpu check");
        if (st != VIDMM_E_INSUFFICIENT_DMA_BUFFER || used == 0)
            break;
    }
}

/* ---- setup ------------------------------------------------------------------ */

static vidmm_handle new_alloc(struct cf *f, enum softgpu_alloc_kind kind, uint64_t size)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.size = size;
    d.cpu_visible = 1;
    vidmm_handle h = 0;
    vidmm_status st = vidmm_allocation_create(f->a, &d, sizeof d, &h);
    FUZZ_REQUIRE(st == VIDMM_OK, "setup allocation kind %d: %s", (int)kind, vidmm_status_str(st));
    return h;
}

static uint64_t map(struct cf *f, vidmm_handle h, uint64_t size, unsigned prot)
{
    uint64_t va = 0;
    vidmm_status st = vidmm_gpuva_map(f->a, f->proc, 0, 0, 0, h, 0, size, prot, 0, &va);
    FUZZ_REQUIRE(st == VIDMM_OK, "setup map: %s", vidmm_status_str(st));
    f->vreg[f->nvreg++] = (struct region){ va, size };
    return va;
}

static int setup(struct cf *f, uint8_t preset, uint8_t opt)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = presets[preset];
    cfg.synchronous = 1;
    if (preset == 0) {
        cfg.segment_size[1] = 4 * MIB;
        cfg.segment_size[2] = 8 * MIB;
        cfg.segment_size[3] = 16 * MIB;
    } else if (preset == 1) {
        cfg.segment_size[1] = 2 * MIB;
        cfg.segment_size[2] = 4 * MIB;
        cfg.segment_size[3] = 4 * MIB;
        cfg.segment_size[4] = 8 * MIB;
    } else {
        cfg.segment_size[1] = 16 * MIB;
    }
    if (preset != 2)
        cfg.mmu_levels = (opt & 7) < 2 || (opt & 7) > 6 ? 0 : opt & 7;
    if (softgpu_create(&cfg, &f->sg) != VIDMM_OK)
        return -1;
    vidmm_status st = fz_open_on_softgpu(f->sg, &f->fa, &f->a);
    FUZZ_REQUIRE(st == VIDMM_OK, "adapter_open: %s", vidmm_status_str(st));
    struct vidmm_gpummu_info gi;
    f->gpummu = vidmm_adapter_query_gpummu(f->a, &gi) == VIDMM_OK;
    f->pt_segment = f->gpummu ? gi.level[0].page_table_segment_id : 0;

    FUZZ_REQUIRE(vidmm_process_create(f->a, &f->proc) == VIDMM_OK, "process");
    FUZZ_REQUIRE(vidmm_device_create(f->a, f->proc, &f->dev) == VIDMM_OK, "device");
    FUZZ_REQUIRE(vidmm_paging_queue_create(f->a, f->dev, 0, &f->queue) == VIDMM_OK, "queue");
    struct vidmm_context_desc pd = { (opt >> 3) % SOFTGPU_NODES, VIDMM_CONTEXT_PHYSICAL, 0, 0 };
    FUZZ_REQUIRE(vidmm_context_create(f->a, f->dev, &pd, &f->pctx) == VIDMM_OK, "physical context");
    f->cmd = new_alloc(f, SOFTGPU_ALLOC_CONSTANT, 64 * KIB);
    f->data0 = new_alloc(f, SOFTGPU_ALLOC_TEXTURE, 256 * KIB);
    f->data1 = new_alloc(f, SOFTGPU_ALLOC_STAGING, 64 * KIB);
    f->ring0 = new_alloc(f, SOFTGPU_ALLOC_RING, 64 * KIB);
    f->ring1 = new_alloc(f, SOFTGPU_ALLOC_RING, 64 * KIB);
    if (f->gpummu) {
        struct vidmm_context_desc vd = { (opt >> 5) % SOFTGPU_NODES, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
        FUZZ_REQUIRE(vidmm_context_create(f->a, f->dev, &vd, &f->vctx) == VIDMM_OK, "virtual context");
        map(f, f->data0, 256 * KIB, 0);
        map(f, f->data1, 64 * KIB, VIDMM_GPUVA_NO_EXECUTE);
        map(f, f->ring0, 64 * KIB, 0);
        f->va_cmd = map(f, f->cmd, 64 * KIB, VIDMM_GPUVA_READ_ONLY);
        uint64_t va = 0;
        FUZZ_REQUIRE(vidmm_gpuva_reserve(f->a, f->proc, 0, 0, 0, 64 * KIB, VIDMM_GPUVA_RESERVE_ZERO, &va) == VIDMM_OK,
                     "zero reservation");
        f->vreg[f->nvreg++] = (struct region){ va, 64 * KIB };
        FUZZ_REQUIRE(vidmm_gpuva_reserve(f->a, f->proc, 0, 0, 0, 64 * KIB, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va) ==
                         VIDMM_OK,
                     "no-access reservation");
        f->vreg[f->nvreg++] = (struct region){ va, 64 * KIB };
        f->vreg[f->nvreg++] = (struct region){ va + 16 * MIB, 64 * KIB };   /* nothing there */
    }
    vidmm_handle list[] = { f->cmd, f->data0, f->data1, f->ring0, f->ring1 };
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = f->queue;
    mr.allocations = list;
    mr.count = 5;
    st = vidmm_make_resident(f->a, f->dev, &mr);
    FUZZ_REQUIRE(st == VIDMM_OK || st == VIDMM_PENDING, "make_resident: %s", vidmm_status_str(st));
    checks(f, VIDMM_OK, "setup");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cf fs;
    struct cf *f = &fs;
    memset(f, 0, sizeof *f);
    f->in.p = data;
    f->in.n = size;
    uint8_t preset = fz_u8(&f->in) % 3, opt = fz_u8(&f->in);
    if (setup(f, preset, opt) < 0)
        return 0;
    for (uint32_t i = 0; i < MAX_SUBMITS && !fz_done(&f->in); i++) {
        uint8_t b = fz_u8(&f->in);
        uint32_t mode = b % 3;
        if (mode == 2) {
            paging_op(f);
            continue;
        }
        uint32_t len = 8u * (1u + fz_u8(&f->in) % (MAX_CMD / 8));
        for (uint32_t k = 0; k < len; k++)
            f->cmdbuf[k] = fz_u8(&f->in);
        if (mode == 0 && f->gpummu)
            submit_virtual(f, len);
        else
            submit_physical(f, len);
    }
    if (fz_tracing()) {
        struct softgpu_stats ss;
        softgpu_get_stats(f->sg, &ss);
        fprintf(stderr, "  softgpu: %llu command buffers, %llu commands, %llu faulted\n",
                (unsigned long long)ss.command_buffers, (unsigned long long)ss.commands,
                (unsigned long long)ss.command_faults);
        if (f->pg) {
            softgpu_get_stats(f->pg, &ss);
            fprintf(stderr, "  paging softgpu: %llu buffers, %llu PTEs, %llu paging faults\n",
                    (unsigned long long)ss.paging_buffers, (unsigned long long)ss.ptes_written,
                    (unsigned long long)ss.paging_faults);
        }
    }
    FUZZ_REQUIRE(vidmm_context_destroy(f->a, f->pctx) == VIDMM_OK, "context destroy");
    FUZZ_REQUIRE(vidmm_process_destroy(f->a, f->proc) == VIDMM_OK, "process destroy");
    checks(f, VIDMM_OK, "end");
    vidmm_adapter_close(f->a);
    FUZZ_REQUIRE(f->fa.live_bytes == 0, "leak: %lld bytes", (long long)f->fa.live_bytes);
    FUZZ_REQUIRE(softgpu_check(f->sg) == 0, "softgpu check after close");
    softgpu_destroy(f->sg);
    if (f->pg)
        softgpu_destroy(f->pg);
    return 0;
}
