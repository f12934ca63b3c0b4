/*
 * mmu.c - softgpu's GPU MMU (GpuMmu model): the page-table geometry it
 * reports, its hardware PTE format, the UPDATE_PAGE_TABLE and FLUSH_TLB
 * paging commands (build and execute), and the walker behind
 * softgpu_translate / softgpu_read_virtual / softgpu_write_virtual.
 *
 * Geometry.  Every table is one page of the page-table segment (the
 * invisible memory segment), because vidmm places page tables as
 * ordinary allocations and refuses a table smaller than that segment's
 * page: 4 KiB pages give 9 index bits per level, 64 KiB pages 13.  The
 * leaf always uses the full page; the upper levels share the rest of a
 * 48-bit VA, lower levels first (each at least 1 bit).  A 64 KB-entry
 * leaf covers the same VA span as a 4 KB-entry leaf with 16x fewer
 * entries.
 *
 * Hardware PTE: 8 bytes, flags low, 4 KiB frame in bits 12-55, segment in
 * 56-60 (SG_HWPTE_* in softgpu_int.h; docs/SOFTGPU.md has the table).
 * build_paging_buffer converts each neutral struct vidmm_pte into it and
 * copies the result INTO the paging buffer, so execution is a plain
 * memcpy into the table (that is what keeps a long run under 1 ns/PTE)
 * and the caller's array may die after the build.
 *
 * The walker reads the tables on every access: softgpu has no TLB, so
 * FLUSH_TLB is validated and counted but has nothing to invalidate (a
 * stale translation can never be served; docs/SOFTGPU.md says why).
 * Table contents are re-checked during the walk because anything may have
 * written table memory since (a transfer, softgpu_write_physical): a
 * malformed entry is a page fault, never a wild host access.
 */
#include "softgpu_int.h"

#include <string.h>

#define SG_VA_TARGET_BITS 48u

/* UPDATE_PAGE_TABLE command: header, then REPEAT ? 1 : count hardware
 * entries of 8 bytes. */
struct sg_cmd_upt {            /* 32 bytes + entries */
    struct sg_cmd_hdr hdr;
    uint32_t segment;          /* table's memory segment */
    uint16_t level;            /* 0 = leaf */
    uint16_t flags;            /* SG_UPT_* */
    uint64_t table;            /* segment offset of the table */
    uint32_t start;            /* first entry written */
    uint32_t count;            /* entries written */
};
#define SG_UPT_REPEAT 0x1u     /* one entry follows, stored count times */
#define SG_UPT_64K    0x2u     /* leaf of 64 KB entries */

struct sg_cmd_flush {          /* 40 bytes */
    struct sg_cmd_hdr hdr;
    uint32_t segment;          /* root table */
    uint32_t reserved;
    uint64_t root;
    uint64_t start_va;
    uint64_t end_va;
};

_Static_assert(sizeof(struct sg_cmd_upt) == 32, "update-page-table command layout");
_Static_assert(sizeof(struct sg_cmd_flush) == 40, "flush-tlb command layout");

/* ------------------------------------------------------------------ */
/* Geometry                                                            */
/* ------------------------------------------------------------------ */

static uint64_t sg_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

vidmm_status sg_mmu_init(struct softgpu *sg, uint32_t levels)
{
    struct sg_mmu *m = &sg->mmu;
    memset(m, 0, sizeof *m);
    if (levels == 0)
        levels = sg->seg[sg->invis_id].page_size == SG_PAGE_64K ? 3u : 4u;
    if (levels < VIDMM_MIN_PAGE_TABLE_LEVELS || levels > VIDMM_MAX_PAGE_TABLE_LEVELS || !sg->invis_id)
        return VIDMM_E_INVALID_ARG;
    uint32_t page = sg->seg[sg->invis_id].page_size;
    uint32_t full = page == SG_PAGE_64K ? 13u : 9u;   /* one page of 8-byte entries */
    m->levels = levels;
    m->pt_segment = sg->invis_id;
    m->bits[0] = full;
    /* Upper levels: fill the lower ones first (fewer, fuller tables), keep
     * at least one bit for each level above. */
    uint32_t left = SG_VA_TARGET_BITS - 12u - full;
    for (uint32_t l = 1; l < levels; l++) {
        uint32_t above = levels - 1 - l;
        uint32_t b = left > above ? left - above : 1u;
        if (b > full)
            b = full;
        m->bits[l] = b;
        left = left > b ? left - b : 0;
    }
    uint32_t shift = 12;
    for (uint32_t l = 0; l < levels; l++) {
        m->shift[l] = shift;
        shift += m->bits[l];
        m->table_size[l] = sg_round_up((8ull << m->bits[l]), page);
    }
    m->va_bits = shift;
    m->leaf64_bits = full - 4u;
    m->leaf64_size = sg_round_up(8ull << m->leaf64_bits, page);
    return VIDMM_OK;
}

vidmm_status sg_query_gpummu_caps(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args)
{
    const struct sg_mmu *m = &sg->mmu;
    if (!m->levels)
        return VIDMM_E_NOT_SUPPORTED;
    if (!args->output || args->output_size < sizeof(struct vidmm_gpummu_caps))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_gpummu_caps c;
    memset(&c, 0, sizeof c);
    c.flags = VIDMM_GPUMMU_READ_ONLY_MEMORY_SUPPORTED | VIDMM_GPUMMU_NO_EXECUTE_MEMORY_SUPPORTED |
              VIDMM_GPUMMU_ZERO_IN_PTE_SUPPORTED | VIDMM_GPUMMU_CACHE_COHERENT_MEMORY_SUPPORTED;
    c.page_table_update_mode = VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL;
    c.virtual_address_bit_count = m->va_bits;
    c.page_table_level_count = m->levels;
    c.leaf_page_table_size_for_64k_pages_in_bytes = (uint32_t)m->leaf64_size;
    memcpy(args->output, &c, sizeof c);
    return VIDMM_OK;
}

vidmm_status sg_query_page_table_level(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args)
{
    const struct sg_mmu *m = &sg->mmu;
    if (!m->levels)
        return VIDMM_E_NOT_SUPPORTED;
    if (!args->input || args->input_size < sizeof(struct vidmm_query_page_table_level_in))
        return VIDMM_E_INVALID_ARG;
    if (!args->output || args->output_size < sizeof(struct vidmm_page_table_level_desc))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_query_page_table_level_in in;
    memcpy(&in, args->input, sizeof in);
    if (in.level_index >= m->levels || in.physical_adapter_index != 0)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_page_table_level_desc d;
    memset(&d, 0, sizeof d);
    d.page_table_index_bit_count = m->bits[in.level_index];
    d.page_table_segment_id = m->pt_segment;
    d.paging_process_page_table_segment_id = m->pt_segment;
    d.page_table_size_in_bytes = m->table_size[in.level_index];
    d.page_table_alignment_in_bytes = 0;   /* the segment's page: a table is exactly one page */
    memcpy(args->output, &d, sizeof d);
    return VIDMM_OK;
}

/* Entries of a table of level (64 KB-entry leaf when leaf64). */
static uint64_t sg_entries(const struct sg_mmu *m, uint32_t level, int leaf64)
{
    return 1ull << (leaf64 ? m->leaf64_bits : m->bits[level]);
}

static uint64_t sg_tsize(const struct sg_mmu *m, uint32_t level, int leaf64)
{
    return leaf64 ? m->leaf64_size : m->table_size[level];
}

/* A memory segment holding a whole table of bytes at a 4 KiB-aligned
 * offset. */
static struct sg_segment *sg_table_seg(struct softgpu *sg, uint32_t id, uint64_t offset, uint64_t bytes)
{
    if (id < 1 || id > sg->nb_segment)
        return NULL;
    struct sg_segment *s = &sg->seg[id];
    if (!s->is_memory || (offset & (SG_PAGE_4K - 1)) || offset > s->size || bytes > s->size - offset)
        return NULL;
    return s;
}

/* ------------------------------------------------------------------ */
/* Neutral PTE -> hardware PTE                                         */
/* ------------------------------------------------------------------ */

#define SG_NEUTRAL_KNOWN (VIDMM_PTE_VALID | VIDMM_PTE_ZERO | VIDMM_PTE_CACHE_COHERENT | VIDMM_PTE_READ_ONLY | \
                          VIDMM_PTE_NO_EXECUTE | VIDMM_PTE_SEGMENT_MASK | VIDMM_PTE_PAGE_TABLE_64KB)
#define SG_FRAME_LIMIT (1ull << 44)

/* 0 when p cannot be an entry of a level-`level` table (leaf64: a 64 KB
 * leaf).  Bits outside SG_NEUTRAL_KNOWN (LargePage, a physical adapter
 * index) are refused: softgpu does not report those capabilities. */
static int sg_pte_encode(struct softgpu *sg, uint32_t level, int leaf64, const struct vidmm_pte *p, uint64_t *hw)
{
    uint64_t f = p->flags;
    if (f & ~SG_NEUTRAL_KNOWN)
        return 0;
    uint64_t prot = (f & VIDMM_PTE_READ_ONLY ? SG_HWPTE_RO : 0) | (f & VIDMM_PTE_NO_EXECUTE ? SG_HWPTE_NX : 0) |
                    (f & VIDMM_PTE_CACHE_COHERENT ? SG_HWPTE_CC : 0);
    if (f & VIDMM_PTE_ZERO) {
        /* A Zero entry needs no address: reads return 0 on any level. */
        *hw = SG_HWPTE_VALID | SG_HWPTE_ZERO | prot;
        return 1;
    }
    if (!(f & VIDMM_PTE_VALID)) {
        *hw = 0;   /* invalid: the rest of the record is meaningless */
        return 1;
    }
    uint32_t seg = VIDMM_PTE_SEGMENT(p);
    uint64_t frame = p->page_address;
    int pt64 = (f & VIDMM_PTE_PAGE_TABLE_64KB) != 0;
    if (frame >= SG_FRAME_LIMIT || seg > sg->nb_segment || (pt64 && level != 1))
        return 0;
    uint64_t off = frame << 12;
    if (level == 0) {
        uint64_t bytes = leaf64 ? SG_PAGE_64K : SG_PAGE_4K;
        if (leaf64 && (frame & 15u))
            return 0;   /* a 64 KB entry maps a 64 KB-aligned page */
        if (seg == 0) {
            if (frame == 0)
                return 0;   /* system page at host address 0 */
        } else if (off > sg->seg[seg].size || bytes > sg->seg[seg].size - off) {
            return 0;
        }
    } else if (!sg_table_seg(sg, seg, off, sg_tsize(&sg->mmu, level - 1, pt64))) {
        return 0;   /* tables live in memory segments, whole */
    }
    *hw = SG_HWPTE_VALID | prot | (pt64 ? SG_HWPTE_PT64K : 0) | off | ((uint64_t)seg << SG_HWPTE_SEG_SHIFT);
    return 1;
}

/* ------------------------------------------------------------------ */
/* Build                                                               */
/* ------------------------------------------------------------------ */

#define SG_UPT_KNOWN_FLAGS (VIDMM_UPDATE_PT_REPEAT | VIDMM_UPDATE_PT_INITIAL_UPDATE | \
                            VIDMM_UPDATE_PT_NOTIFY_EVICTION | VIDMM_UPDATE_PT_USE_64KB_PAGES)

vidmm_status sg_build_update_page_table(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct sg_mmu *m = &sg->mmu;
    const struct vidmm_paging_update_page_table *u = &args->u.update_page_table;
    if (!m->levels || u->page_table_level >= m->levels || (u->flags & ~SG_UPT_KNOWN_FLAGS))
        return VIDMM_E_INVALID_ARG;
    int leaf64 = (u->flags & VIDMM_UPDATE_PT_USE_64KB_PAGES) != 0;
    int repeat = (u->flags & VIDMM_UPDATE_PT_REPEAT) != 0;
    uint32_t level = u->page_table_level;
    if (leaf64 && level != 0)
        return VIDMM_E_INVALID_ARG;
    uint32_t seg = u->page_table_address.segment_id;
    uint64_t table = u->page_table_address.segment_offset;
    if (!sg_table_seg(sg, seg, table, sg_tsize(m, level, leaf64)))
        return VIDMM_E_INVALID_ARG;
    uint64_t n = u->num_page_table_entries;
    if (!u->page_table_entries || n == 0 || (uint64_t)u->start_index + n > sg_entries(m, level, leaf64))
        return VIDMM_E_INVALID_ARG;
    uint32_t done = args->multipass_offset;
    if (done >= n)
        return VIDMM_E_INVALID_ARG;   /* a restart past the end of the request */

    /* How many entries this call encodes: all that fit in one command. */
    const uint32_t hdr = sizeof(struct sg_cmd_upt);
    uint64_t fit = args->dma_size >= hdr + 8u ? (args->dma_size - hdr) / 8u : 0;
    uint64_t k = repeat ? (fit ? n - done : 0) : (n - done < fit ? n - done : fit);

    uint8_t *out = args->dma_buffer;
    if (repeat) {
        uint64_t hw;
        if (!sg_pte_encode(sg, level, leaf64, &u->page_table_entries[0], &hw))
            return VIDMM_E_INVALID_ARG;
        if (k)
            memcpy(out + hdr, &hw, 8);
    } else {
        /* Convert straight into the buffer; nothing counts as written
         * until dma_buffer advances, so a bad entry leaves no trace.  On
         * the first call of a split request the entries of later calls are
         * checked too: no part of a bad request ever executes. */
        const struct vidmm_pte *e = u->page_table_entries + done;
        uint8_t *w = out + hdr;
        for (uint64_t i = 0; i < k; i++, w += 8) {
            uint64_t hw;
            if (!sg_pte_encode(sg, level, leaf64, &e[i], &hw))
                return VIDMM_E_INVALID_ARG;
            memcpy(w, &hw, 8);
        }
        if (done == 0)
            for (uint64_t i = k; i < n; i++) {
                uint64_t hw;
                if (!sg_pte_encode(sg, level, leaf64, &e[i], &hw))
                    return VIDMM_E_INVALID_ARG;
            }
    }
    if (k == 0) {
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;   /* not even one entry fits: nothing written */
    }
    struct sg_cmd_upt c;
    memset(&c, 0, sizeof c);
    c.hdr.opcode = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    c.hdr.flags = done == 0 ? SG_CMDF_FIRST : 0;
    c.hdr.size = (uint32_t)(hdr + (repeat ? 8u : k * 8u));
    c.segment = seg;
    c.level = (uint16_t)level;
    c.flags = (uint16_t)((repeat ? SG_UPT_REPEAT : 0) | (leaf64 ? SG_UPT_64K : 0));
    c.table = table;
    c.start = u->start_index + done;
    c.count = (uint32_t)k;
    memcpy(out, &c, hdr);
    args->dma_buffer = out + c.hdr.size;
    args->dma_size -= c.hdr.size;
    if (done + k < n) {
        args->multipass_offset = (uint32_t)(done + k);
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    return VIDMM_OK;
}

vidmm_status sg_build_flush_tlb(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct sg_mmu *m = &sg->mmu;
    const struct vidmm_paging_flush_tlb *f = &args->u.flush_tlb;
    if (!m->levels)
        return VIDMM_E_INVALID_ARG;
    const struct vidmm_physical_address *r = &f->root_page_table_address;
    if (!sg_table_seg(sg, r->segment_id, r->segment_offset, m->table_size[m->levels - 1]))
        return VIDMM_E_INVALID_ARG;
    if (f->start_virtual_address > f->end_virtual_address)
        return VIDMM_E_INVALID_ARG;
    struct sg_cmd_flush c;
    memset(&c, 0, sizeof c);
    c.hdr.opcode = VIDMM_PAGING_FLUSH_TLB;
    c.hdr.flags = SG_CMDF_FIRST;
    c.hdr.size = sizeof c;
    c.segment = r->segment_id;
    c.root = r->segment_offset;
    c.start_va = f->start_virtual_address;
    c.end_va = f->end_virtual_address;
    if (args->dma_size < sizeof c) {
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    memcpy(args->dma_buffer, &c, sizeof c);
    args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof c;
    args->dma_size -= (uint32_t)sizeof c;
    return VIDMM_OK;
}

/* ------------------------------------------------------------------ */
/* Execute                                                             */
/* ------------------------------------------------------------------ */

uint32_t sg_mmu_validate_cmd(struct softgpu *sg, const uint8_t *p, const struct sg_cmd_hdr *h)
{
    const struct sg_mmu *m = &sg->mmu;
    if (!m->levels)
        return 0;
    if (h->opcode == VIDMM_PAGING_FLUSH_TLB) {
        struct sg_cmd_flush c;
        if (h->size != sizeof c)
            return 0;
        memcpy(&c, p, sizeof c);
        if (!sg_table_seg(sg, c.segment, c.root, m->table_size[m->levels - 1]) || c.start_va > c.end_va)
            return 0;
        return h->size;
    }
    struct sg_cmd_upt c;
    if (h->size < sizeof c + 8u)
        return 0;
    memcpy(&c, p, sizeof c);
    int leaf64 = (c.flags & SG_UPT_64K) != 0;
    if (c.level >= m->levels || (c.flags & ~(SG_UPT_REPEAT | SG_UPT_64K)) || (leaf64 && c.level != 0) ||
        c.count == 0)
        return 0;
    if (h->size != sizeof c + ((c.flags & SG_UPT_REPEAT) ? 8u : (uint64_t)c.count * 8u))
        return 0;
    if (!sg_table_seg(sg, c.segment, c.table, sg_tsize(m, c.level, leaf64)) ||
        (uint64_t)c.start + c.count > sg_entries(m, c.level, leaf64))
        return 0;
    return h->size;
}

void sg_mmu_exec_cmd(struct softgpu *sg, const uint8_t *p, const struct sg_cmd_hdr *h)
{
    if (h->flags & SG_CMDF_FIRST)
        sg->stats.ops[h->opcode]++;
    if (h->opcode == VIDMM_PAGING_FLUSH_TLB)
        return;   /* no TLB: the walker always reads the tables */
    struct sg_cmd_upt c;
    memcpy(&c, p, sizeof c);
    uint8_t *dst = sg->seg[c.segment].mem + c.table + (uint64_t)c.start * 8u;
    const uint8_t *src = p + sizeof c;
    if (c.flags & SG_UPT_REPEAT) {
        uint64_t e;
        memcpy(&e, src, 8);
        for (uint32_t i = 0; i < c.count; i++)
            memcpy(dst + (uint64_t)i * 8u, &e, 8);
    } else {
        memcpy(dst, src, (size_t)c.count * 8u);
    }
    sg->stats.ptes_written += c.count;
    sg->stats.bytes[h->opcode] += (uint64_t)c.count * 8u;
}

/* ------------------------------------------------------------------ */
/* The walker                                                          */
/* ------------------------------------------------------------------ */

struct sg_walk {
    struct softgpu_translation t;
    uint8_t *host;             /* host byte of va; NULL for a zero page */
    uint64_t run;              /* contiguous host bytes from va inside the page */
    int gart_unmapped;         /* aperture page the GART does not map */
};

/* VIDMM_OK, VIDMM_E_PAGE_FAULT; the root is already checked. */
static vidmm_status sg_walk(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                            uint32_t access, struct sg_walk *w)
{
    const struct sg_mmu *m = &sg->mmu;
    memset(w, 0, sizeof *w);
    if (m->va_bits < 64 && (va >> m->va_bits))
        return VIDMM_E_PAGE_FAULT;   /* beyond the address space */
    uint32_t seg = root->segment_id;
    uint64_t table = root->segment_offset;
    int ro = 0, nx = 0, leaf64 = 0;
    uint64_t e = 0;
    for (uint32_t l = m->levels; l-- > 0;) {
        int l64 = l == 0 && leaf64;
        uint32_t bits = l64 ? m->leaf64_bits : m->bits[l];
        uint32_t shift = l64 ? 16u : m->shift[l];
        uint64_t idx = (va >> shift) & ((1ull << bits) - 1);
        memcpy(&e, sg->seg[seg].mem + table + idx * 8u, 8);
        if ((e & SG_HWPTE_RESERVED) || !(e & SG_HWPTE_VALID))
            return VIDMM_E_PAGE_FAULT;
        ro |= (e & SG_HWPTE_RO) != 0;
        nx |= (e & SG_HWPTE_NX) != 0;
        if ((access & SOFTGPU_ACCESS_WRITE) && ro)
            return VIDMM_E_PAGE_FAULT;
        if ((access & SOFTGPU_ACCESS_EXEC) && nx)
            return VIDMM_E_PAGE_FAULT;
        uint32_t eseg = (uint32_t)((e & SG_HWPTE_SEG_MASK) >> SG_HWPTE_SEG_SHIFT);
        uint64_t off = e & SG_HWPTE_FRAME_MASK;
        if (e & SG_HWPTE_ZERO) {
            /* Zero on any level: the whole span below reads as zeros. */
            w->t.zero = 1;
            w->t.page_size = l64 ? SG_PAGE_64K : SG_PAGE_4K;
            break;
        }
        if (l > 0) {
            int pt64 = (e & SG_HWPTE_PT64K) != 0;
            if (pt64 && l != 1)
                return VIDMM_E_PAGE_FAULT;
            if (!sg_table_seg(sg, eseg, off, sg_tsize(m, l - 1, pt64)))
                return VIDMM_E_PAGE_FAULT;
            leaf64 = pt64;
            seg = eseg;
            table = off;
            continue;
        }
        /* Leaf: the page. */
        uint64_t psize = l64 ? SG_PAGE_64K : SG_PAGE_4K;
        uint64_t in = va & (psize - 1);
        if (e & SG_HWPTE_PT64K || eseg > sg->nb_segment || (l64 && (off & (SG_PAGE_64K - 1))))
            return VIDMM_E_PAGE_FAULT;
        w->t.segment_id = eseg;
        w->t.page_size = (uint32_t)psize;
        w->t.offset = off + in;
        w->run = psize - in;
        if (eseg == 0) {
            if (!off)
                return VIDMM_E_PAGE_FAULT;
            w->host = (uint8_t *)(uintptr_t)(off + in);
        } else {
            struct sg_segment *s = &sg->seg[eseg];
            if (off > s->size || psize > s->size - off)
                return VIDMM_E_PAGE_FAULT;
            uint64_t run;
            int mapped;
            w->host = sg_resolve(sg, s, off + in, w->run, &run, &mapped);
            w->gart_unmapped = !mapped;
            w->run = run;
        }
        break;
    }
    w->t.read_only = ro;
    w->t.no_execute = nx;
    if (w->t.zero)
        w->run = w->t.page_size - (va & (w->t.page_size - 1));
    return VIDMM_OK;
}

static int sg_root_ok(struct softgpu *sg, const struct vidmm_physical_address *root)
{
    return sg && root && sg->mmu.levels &&
           sg_table_seg(sg, root->segment_id, root->segment_offset, sg->mmu.table_size[sg->mmu.levels - 1]);
}

vidmm_status softgpu_translate(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                               uint32_t access, struct softgpu_translation *out)
{
    const uint32_t all = SOFTGPU_ACCESS_READ | SOFTGPU_ACCESS_WRITE | SOFTGPU_ACCESS_EXEC;
    if (!sg_root_ok(sg, root) || !out || access == 0 || (access & ~all))
        return VIDMM_E_INVALID_ARG;
    struct sg_walk w;
    vidmm_status st = sg_walk(sg, root, va, access, &w);
    if (st != VIDMM_OK) {
        sg->stats.page_faults++;
        memset(out, 0, sizeof *out);
        return st;
    }
    *out = w.t;
    return VIDMM_OK;
}

static vidmm_status sg_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                               uint8_t *dst, const uint8_t *src, size_t size)
{
    if (!sg_root_ok(sg, root) || (size && !dst && !src) || size > UINT64_MAX - va)
        return VIDMM_E_INVALID_ARG;
    uint32_t access = dst ? SOFTGPU_ACCESS_READ : SOFTGPU_ACCESS_WRITE;
    uint64_t done = 0;
    while (done < size) {
        struct sg_walk w;
        /* The MMU translated, but an aperture page the GART does not map
         * would reach softgpu's dummy page: fault instead, so a stray
         * access is reported rather than absorbed. */
        if (sg_walk(sg, root, va + done, access, &w) != VIDMM_OK || w.gart_unmapped) {
            sg->stats.page_faults++;
            return VIDMM_E_PAGE_FAULT;
        }
        uint64_t n = w.run < size - done ? w.run : size - done;
        if (w.t.zero) {
            if (dst)
                memset(dst + done, 0, (size_t)n);   /* writes to a zero page are dropped */
        } else if (dst) {
            memcpy(dst + done, w.host, (size_t)n);
        } else {
            memcpy(w.host, src + done, (size_t)n);
        }
        done += n;
    }
    return VIDMM_OK;
}

vidmm_status softgpu_read_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                  void *dst, size_t size)
{
    if (size && !dst)
        return VIDMM_E_INVALID_ARG;
    return sg_virtual(sg, root, va, dst, NULL, size);
}

vidmm_status softgpu_write_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                   const void *src, size_t size)
{
    if (size && !src)
        return VIDMM_E_INVALID_ARG;
    return sg_virtual(sg, root, va, NULL, src, size);
}
