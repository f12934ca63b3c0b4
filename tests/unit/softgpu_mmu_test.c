/*
 * softgpu_mmu_test.c - softgpu's GPU MMU driven through its ops table
 * alone (no vidmm core): the geometry queries per preset and level count,
 * page-table trees built by hand with UPDATE_PAGE_TABLE, translation and
 * virtual reads/writes checked against softgpu_read_physical and host
 * memory, 64 KB leaves, REPEAT, ZERO, protection faults, invalid entries
 * at every level, split updates, FLUSH_TLB, the exact status of bad input,
 * and a seeded random map/unmap stream checked against a model.
 */
#include "harness/test.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"

#include <stdlib.h>
#include <string.h>

static const struct vidmm_driver_ops *ops;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static struct softgpu *mkl(const char *preset, uint32_t levels)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = preset;
    cfg.mmu_levels = levels;
    struct softgpu *sg = NULL;
    if (t_no_big() && !strcmp(preset, "big"))
        return NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    ops = softgpu_driver_ops();
    return sg;
}

static vidmm_status q_caps(struct softgpu *sg, struct vidmm_gpummu_caps *c)
{
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_GPUMMUCAPS, NULL, 0, c, sizeof *c };
    return ops->query_adapter_info(sg, &q);
}

static vidmm_status q_level(struct softgpu *sg, uint32_t level, struct vidmm_page_table_level_desc *d)
{
    struct vidmm_query_page_table_level_in in;
    memset(&in, 0, sizeof in);
    in.level_index = (uint16_t)level;
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_PAGETABLELEVELDESC, &in, sizeof in, d, sizeof *d };
    return ops->query_adapter_info(sg, &q);
}

/* Builds one request into buffers of buf_size bytes, submitting each
 * one, as vidmm does (the restart protocol). */
static vidmm_status run_op(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a, uint32_t buf_size)
{
    static uint64_t buf[1 << 13]; /* 64 KiB */
    if (buf_size > sizeof buf)
        buf_size = sizeof buf;
    a->multipass_offset = 0;
    for (int guard = 0; guard < 100000; guard++) {
        a->dma_buffer = buf;
        a->dma_size = buf_size;
        vidmm_status st = ops->build_paging_buffer(sg, a);
        uint32_t used = buf_size - a->dma_size;
        if (st != VIDMM_OK && st != VIDMM_E_INSUFFICIENT_DMA_BUFFER)
            return st;
        if (used) {
            struct vidmm_submit_command_args s = { NULL, buf, used, VIDMM_SUBMIT_PAGING, (uint64_t)guard + 1 };
            T_ST(ops->submit_command(sg, &s), VIDMM_OK);
            /* buf is reused for the next piece: as vidmm does, wait for
             * the copy engine to be done with it (its fence). */
            T_ST(softgpu_wait_idle(sg), VIDMM_OK);
        }
        if (st == VIDMM_OK)
            return VIDMM_OK;
    }
    T_CHECK(!"restart loop did not end");
    return VIDMM_E_DRIVER_FAILURE;
}

static struct vidmm_pte pte(uint32_t seg, uint64_t byte_address, uint64_t flags)
{
    struct vidmm_pte p;
    p.flags = VIDMM_PTE_VALID | ((uint64_t)seg << VIDMM_PTE_SEGMENT_SHIFT) | flags;
    p.page_address = byte_address >> 12;
    return p;
}

static void upt_args(struct vidmm_build_paging_buffer_args *a, uint32_t level, uint32_t flags, uint32_t seg,
                     uint64_t table, uint32_t start, const struct vidmm_pte *e, uint32_t n)
{
    memset(a, 0, sizeof *a);
    a->operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    a->u.update_page_table.page_table_level = level;
    a->u.update_page_table.flags = flags;
    a->u.update_page_table.page_table_address.segment_id = seg;
    a->u.update_page_table.page_table_address.segment_offset = table;
    a->u.update_page_table.page_table_entries = e;
    a->u.update_page_table.start_index = start;
    a->u.update_page_table.num_page_table_entries = n;
}

static vidmm_status upt(struct softgpu *sg, uint32_t level, uint32_t flags, uint32_t seg, uint64_t table,
                        uint32_t start, const struct vidmm_pte *e, uint32_t n, uint32_t buf)
{
    struct vidmm_build_paging_buffer_args a;
    upt_args(&a, level, flags, seg, table, start, e, n);
    return run_op(sg, &a, buf);
}

/* A hand-built page-table tree: tables bump-allocated in the page-table
 * segment, one node record per table so paths are created on demand. */
struct node {
    uint32_t level;
    int leaf64;
    uint64_t key;              /* va >> (span of a table of that level) */
    uint64_t off;
};

struct mm {
    struct softgpu *sg;
    uint32_t levels, va_bits, ptseg, leaf64_bits;
    uint32_t bits[6], shift[6];
    uint64_t tsize[6], leaf64_size;
    uint64_t next;             /* bump pointer for tables */
    struct vidmm_physical_address root;
    struct node nodes[512];
    int nn;
};

static void mm_geometry(struct mm *m)
{
    struct vidmm_gpummu_caps c;
    T_ST(q_caps(m->sg, &c), VIDMM_OK);
    m->levels = c.page_table_level_count;
    m->va_bits = c.virtual_address_bit_count;
    m->leaf64_size = c.leaf_page_table_size_for_64k_pages_in_bytes;
    uint32_t shift = 12;
    for (uint32_t l = 0; l < m->levels; l++) {
        struct vidmm_page_table_level_desc d;
        T_ST(q_level(m->sg, l, &d), VIDMM_OK);
        m->bits[l] = d.page_table_index_bit_count;
        m->shift[l] = shift;
        shift += d.page_table_index_bit_count;
        m->tsize[l] = d.page_table_size_in_bytes;
        m->ptseg = d.page_table_segment_id;
    }
    m->leaf64_bits = m->bits[0] - 4;
}

static struct mm *mm_new(const char *preset, uint32_t levels)
{
    struct mm *m = calloc(1, sizeof *m);
    T_CHECK(m != NULL);
    m->sg = mkl(preset, levels);
    mm_geometry(m);
    m->root.segment_id = m->ptseg;
    m->root.segment_offset = 0;
    m->next = m->tsize[m->levels - 1];
    return m;
}

static void mm_free(struct mm *m)
{
    T_EQ(softgpu_check(m->sg), 0);
    softgpu_destroy(m->sg);
    free(m);
}

static uint64_t mm_index(const struct mm *m, uint32_t level, int leaf64, uint64_t va)
{
    if (level == 0 && leaf64)
        return (va >> 16) & ((1ull << m->leaf64_bits) - 1);
    return (va >> m->shift[level]) & ((1ull << m->bits[level]) - 1);
}

/* Offset of the level-`level` table covering va, created (with its
 * parent entry) if needed. */
static uint64_t mm_table(struct mm *m, uint32_t level, uint64_t va, int leaf64)
{
    if (level == m->levels - 1)
        return m->root.segment_offset;
    uint64_t key = va >> (m->shift[level] + m->bits[level]);
    for (int i = 0; i < m->nn; i++)
        if (m->nodes[i].level == level && m->nodes[i].key == key && m->nodes[i].leaf64 == (level == 0 && leaf64))
            return m->nodes[i].off;
    uint64_t parent = mm_table(m, level + 1, va, leaf64);
    uint64_t size = level == 0 && leaf64 ? m->leaf64_size : m->tsize[level];
    uint64_t off = m->next;
    m->next += size;
    T_CHECK(m->nn < 512);
    m->nodes[m->nn++] = (struct node){ level, level == 0 && leaf64, key, off };
    struct vidmm_pte e = pte(m->ptseg, off, level == 0 && leaf64 ? VIDMM_PTE_PAGE_TABLE_64KB : 0);
    T_ST(upt(m->sg, level + 1, 0, m->ptseg, parent, (uint32_t)mm_index(m, level + 1, 0, va), &e, 1, 65536),
         VIDMM_OK);
    return off;
}

static vidmm_status mm_map(struct mm *m, uint64_t va, struct vidmm_pte e, int leaf64)
{
    uint64_t leaf = mm_table(m, 0, va, leaf64);
    return upt(m->sg, 0, leaf64 ? VIDMM_UPDATE_PT_USE_64KB_PAGES : 0, m->ptseg, leaf,
               (uint32_t)mm_index(m, 0, leaf64, va), &e, 1, 65536);
}

static vidmm_status tr(struct mm *m, uint64_t va, uint32_t access, struct softgpu_translation *t)
{
    return softgpu_translate(m->sg, &m->root, va, access, t);
}

static void *host_pages(size_t bytes)
{
    bytes = (bytes + 65535) & ~(size_t)65535;   /* C11: a multiple of the alignment */
    void *p = aligned_alloc(65536, bytes);
    T_CHECK(p != NULL);
    memset(p, 0, bytes);
    return p;
}

static void rand_fill(uint64_t *st, void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)t_rand(st);
}

/* ------------------------------------------------------------------ */
/* Geometry                                                            */
/* ------------------------------------------------------------------ */

static void check_geometry(struct softgpu *sg, uint32_t want_levels, uint32_t seg, uint32_t seg_page)
{
    struct vidmm_gpummu_caps c;
    T_ST(q_caps(sg, &c), VIDMM_OK);
    T_EQ(c.page_table_level_count, want_levels);
    T_EQ(c.page_table_update_mode, VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL);
    /* dgpu and big (64 KiB page tables) take the virtual paging ops;
     * wddm1 (4 KiB) is a WDDM 1-style driver that does not. */
    uint32_t virt = seg_page == 65536 ? VIDMM_GPUMMU_VIRTUAL_PAGING_OPS : 0u;
    T_EQ(c.flags, VIDMM_GPUMMU_READ_ONLY_MEMORY_SUPPORTED | VIDMM_GPUMMU_NO_EXECUTE_MEMORY_SUPPORTED |
                      VIDMM_GPUMMU_ZERO_IN_PTE_SUPPORTED | VIDMM_GPUMMU_CACHE_COHERENT_MEMORY_SUPPORTED | virt);
    T_EQ(c.leaf_page_table_size_for_64k_pages_in_bytes % seg_page, 0);
    uint32_t bits = 12;
    for (uint32_t l = 0; l < want_levels; l++) {
        struct vidmm_page_table_level_desc d;
        T_ST(q_level(sg, l, &d), VIDMM_OK);
        T_EQ(d.page_table_segment_id, seg);
        T_EQ(d.paging_process_page_table_segment_id, seg);
        T_CHECK(d.page_table_index_bit_count >= 1);
        if (want_levels == 2 && l == 1)   /* a resizable root reports size 0 */
            T_EQ_U64(d.page_table_size_in_bytes, 0);
        else
            T_CHECK(d.page_table_size_in_bytes >= (8ull << d.page_table_index_bit_count));
        T_EQ(d.page_table_size_in_bytes % seg_page, 0);
        if (l == 0)   /* the leaf is one full segment page of 8-byte entries */
            T_EQ_U64(8ull << d.page_table_index_bit_count, seg_page);
        bits += d.page_table_index_bit_count;
    }
    T_EQ(c.virtual_address_bit_count, bits);
    T_CHECK(bits <= 48);
    struct vidmm_page_table_level_desc d;
    T_ST(q_level(sg, want_levels, &d), VIDMM_E_INVALID_ARG);
    T_ST(q_level(sg, 0xFFFF, &d), VIDMM_E_INVALID_ARG);
}

static void geometry(void)
{
    struct softgpu *sg = mkl("dgpu", 0);
    check_geometry(sg, 3, 2, 65536);
    struct vidmm_page_table_level_desc d;
    uint32_t want[3] = { 13, 13, 10 };
    for (uint32_t l = 0; l < 3; l++) {
        T_ST(q_level(sg, l, &d), VIDMM_OK);
        T_EQ(d.page_table_index_bit_count, want[l]);
        T_EQ_U64(d.page_table_size_in_bytes, 65536);
    }
    /* Bad inputs. */
    struct vidmm_query_page_table_level_in in;
    memset(&in, 0, sizeof in);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_PAGETABLELEVELDESC, NULL, 0, &d, sizeof d };
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    q.input = &in;
    q.input_size = sizeof in - 1;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    q.input_size = sizeof in;
    q.output_size = sizeof d - 1;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    q.output_size = sizeof d;
    in.physical_adapter_index = 1;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    in.physical_adapter_index = 0;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
    struct vidmm_gpummu_caps c;
    struct vidmm_query_adapter_info_args qc = { VIDMM_QAI_GPUMMUCAPS, NULL, 0, &c, sizeof c - 1 };
    T_ST(ops->query_adapter_info(sg, &qc), VIDMM_E_INVALID_ARG);
    qc.output = NULL;
    qc.output_size = sizeof c;
    T_ST(ops->query_adapter_info(sg, &qc), VIDMM_E_INVALID_ARG);
    softgpu_destroy(sg);

    sg = mkl("wddm1", 0);
    check_geometry(sg, 4, 2, 4096);
    for (uint32_t l = 0; l < 4; l++) {
        T_ST(q_level(sg, l, &d), VIDMM_OK);
        T_EQ(d.page_table_index_bit_count, 9);
    }
    softgpu_destroy(sg);

    sg = mkl("big", 0);
    if (sg) {
        check_geometry(sg, 3, 2, 65536);
        softgpu_destroy(sg);
    }

    /* IoMmu only. */
    sg = mkl("igpu", 0);
    T_ST(q_caps(sg, &c), VIDMM_E_NOT_SUPPORTED);
    T_ST(q_level(sg, 0, &d), VIDMM_E_NOT_SUPPORTED);
    softgpu_destroy(sg);

    /* Level counts 2..6 on both page sizes; others refused. */
    for (uint32_t n = 2; n <= 6; n++) {
        sg = mkl("dgpu", n);
        check_geometry(sg, n, 2, 65536);
        softgpu_destroy(sg);
        sg = mkl("wddm1", n);
        check_geometry(sg, n, 2, 4096);
        softgpu_destroy(sg);
    }
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.mmu_levels = 1;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.mmu_levels = 7;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.preset = "igpu";
    cfg.mmu_levels = 4;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
}

/* ------------------------------------------------------------------ */
/* Walks                                                               */
/* ------------------------------------------------------------------ */

/* Maps pages to segment 1, segment 2 and system memory on a tree of the
 * given depth, then checks translation and bytes both ways. */
static void walk_4k_one(const char *preset, uint32_t levels, uint64_t *rs)
{
    struct mm *m = mm_new(preset, levels);
    uint8_t *sys = host_pages(4 * 4096);
    uint64_t data2 = SOFTGPU_MIB(64);   /* segment 2 data above the tables */
    /* A VA near the top of the space exercises every index bit. */
    uint64_t top = (1ull << m->va_bits) - SOFTGPU_MIB(4);
    uint64_t vas[3] = { 0x10000, top, (1ull << (m->va_bits - 1)) + 0x123000 };
    for (int v = 0; v < 3; v++) {
        uint64_t va = vas[v];
        T_ST(mm_map(m, va, pte(1, 0x5000 + (uint64_t)v * 0x1000, 0), 0), VIDMM_OK);
        T_ST(mm_map(m, va + 0x1000, pte(2, data2 + (uint64_t)v * 0x3000, 0), 0), VIDMM_OK);
        T_ST(mm_map(m, va + 0x2000, pte(0, (uint64_t)(uintptr_t)(sys + v * 4096), VIDMM_PTE_CACHE_COHERENT), 0),
             VIDMM_OK);
        struct softgpu_translation t;
        T_ST(tr(m, va + 0x12, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
        T_EQ(t.segment_id, 1);
        T_EQ_U64(t.offset, 0x5012 + (uint64_t)v * 0x1000);
        T_EQ(t.page_size, 4096);
        T_CHECK(!t.read_only && !t.no_execute && !t.zero);
        T_ST(tr(m, va + 0x1FFF, SOFTGPU_ACCESS_WRITE | SOFTGPU_ACCESS_EXEC, &t), VIDMM_OK);
        T_EQ(t.segment_id, 2);
        T_EQ_U64(t.offset, data2 + (uint64_t)v * 0x3000 + 0xFFF);
        T_ST(tr(m, va + 0x2008, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
        T_EQ(t.segment_id, 0);
        T_EQ_U64(t.offset, (uint64_t)(uintptr_t)(sys + v * 4096 + 8));
        T_ST(tr(m, va + 0x3000, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);

        /* Bytes across the three pages, both directions. */
        uint8_t w[3 * 4096 - 100], r[sizeof w], p[4096];
        rand_fill(rs, w, sizeof w);
        T_ST(softgpu_write_virtual(m->sg, &m->root, va + 50, w, sizeof w), VIDMM_OK);
        T_ST(softgpu_read_physical(m->sg, 1, 0x5000 + (uint64_t)v * 0x1000, p, 4096), VIDMM_OK);
        T_CHECK(!memcmp(p + 50, w, 4096 - 50));
        T_ST(softgpu_read_physical(m->sg, 2, data2 + (uint64_t)v * 0x3000, p, 4096), VIDMM_OK);
        T_CHECK(!memcmp(p, w + 4096 - 50, 4096));
        T_CHECK(!memcmp(sys + v * 4096, w + 8192 - 50, 4096 - 50));
        memset(r, 0, sizeof r);
        T_ST(softgpu_read_virtual(m->sg, &m->root, va + 50, r, sizeof r), VIDMM_OK);
        T_CHECK(!memcmp(r, w, sizeof w));
    }
    free(sys);
    mm_free(m);
}

static void walk_4k(void)
{
    uint64_t rs = t_seed() ^ 0x4B;
    for (uint32_t n = 2; n <= 6; n++) {
        walk_4k_one("dgpu", n, &rs);
        walk_4k_one("wddm1", n, &rs);
    }
}

static void leaf_64k(void)
{
    uint64_t rs = t_seed() ^ 0x64;
    struct mm *m = mm_new("dgpu", 0);
    uint64_t va = SOFTGPU_MIB(64);   /* start of a leaf span */
    T_ST(mm_map(m, va, pte(2, SOFTGPU_MIB(512), 0), 1), VIDMM_OK);
    T_ST(mm_map(m, va + 0x10000, pte(1, SOFTGPU_MIB(1), VIDMM_PTE_READ_ONLY), 1), VIDMM_OK);
    struct softgpu_translation t;
    T_ST(tr(m, va + 0xABCD, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_EQ(t.page_size, 65536);
    T_EQ(t.segment_id, 2);
    T_EQ_U64(t.offset, SOFTGPU_MIB(512) + 0xABCD);
    T_ST(tr(m, va + 0x1FFFF, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_EQ_U64(t.offset, SOFTGPU_MIB(1) + 0xFFFF);
    T_CHECK(t.read_only);
    T_ST(tr(m, va + 0x10000, SOFTGPU_ACCESS_WRITE, &t), VIDMM_E_PAGE_FAULT);
    T_ST(tr(m, va + 0x20000, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    /* Bytes across the 64 KB page boundary. */
    static uint8_t w[70000], r[70000];
    rand_fill(&rs, w, sizeof w);
    T_ST(softgpu_write_virtual(m->sg, &m->root, va + 1000, w, 65536 - 1000), VIDMM_OK);
    T_ST(softgpu_write_physical(m->sg, 1, SOFTGPU_MIB(1), w + 65536 - 1000, 4464), VIDMM_OK);
    T_ST(softgpu_read_virtual(m->sg, &m->root, va + 1000, r, 65536 + 3464), VIDMM_OK);
    T_CHECK(!memcmp(r, w, 65536 + 3464));
    /* A 64 KB entry must map a 64 KB-aligned page. */
    T_ST(mm_map(m, va + 0x30000, pte(2, SOFTGPU_MIB(512) + 0x1000, 0), 1), VIDMM_E_INVALID_ARG);
    /* The one-way switch to 4 KB entries: a 4 KB leaf, then the level-1
     * entry without PAGE_TABLE_64KB. */
    uint64_t leaf4 = m->next;
    m->next += m->tsize[0];
    struct vidmm_pte e4[16];
    for (int i = 0; i < 16; i++)
        e4[i] = pte(2, SOFTGPU_MIB(512) + (uint64_t)i * 4096, 0);
    T_ST(upt(m->sg, 0, 0, 2, leaf4, 0, e4, 16, 65536), VIDMM_OK);
    uint64_t l1 = mm_table(m, 1, va, 1);
    struct vidmm_pte p1 = pte(2, leaf4, 0);
    T_ST(upt(m->sg, 1, 0, 2, l1, (uint32_t)mm_index(m, 1, 0, va), &p1, 1, 65536), VIDMM_OK);
    T_ST(tr(m, va + 0x5123, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_EQ(t.page_size, 4096);
    T_EQ_U64(t.offset, SOFTGPU_MIB(512) + 0x5123);
    T_ST(tr(m, va + 0x10000, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    T_ST(softgpu_read_virtual(m->sg, &m->root, va + 1000, r, 65536 - 1000), VIDMM_OK);
    T_CHECK(!memcmp(r, w, 65536 - 1000));
    mm_free(m);

    /* 64 KB leaves of wddm1 (4 KiB tables: 32 entries of 64 KB). */
    m = mm_new("wddm1", 0);
    T_EQ(m->leaf64_bits, 5);
    T_ST(mm_map(m, SOFTGPU_MIB(2) + 31 * 65536, pte(1, 0x30000, 0), 1), VIDMM_OK);
    T_ST(tr(m, SOFTGPU_MIB(2) + 31 * 65536 + 0x4321, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_EQ_U64(t.offset, 0x34321);
    mm_free(m);
}

static void repeat_and_zero(void)
{
    struct mm *m = mm_new("dgpu", 0);
    uint64_t va = SOFTGPU_MIB(32);
    uint64_t leaf = mm_table(m, 0, va, 0);
    /* REPEAT: entry 0 stored 1000 times. */
    struct vidmm_pte e = pte(1, 0x7000, VIDMM_PTE_NO_EXECUTE);
    T_ST(upt(m->sg, 0, VIDMM_UPDATE_PT_REPEAT, 2, leaf, 100, &e, 1000, 65536), VIDMM_OK);
    struct softgpu_stats st;
    softgpu_get_stats(m->sg, &st);
    T_EQ(st.ptes_written, (uint64_t)m->nn + 1000);
    for (uint64_t i = 100; i < 1100; i += 111) {
        struct softgpu_translation t;
        T_ST(tr(m, va + i * 4096 + 5, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
        T_EQ_U64(t.offset, 0x7005);
        T_CHECK(t.no_execute);
    }
    struct softgpu_translation t;
    T_ST(tr(m, va + 99 * 4096, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    T_ST(tr(m, va + 1100 * 4096, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    /* The table holds the same 8 bytes 1000 times. */
    uint64_t hw[1000];
    T_ST(softgpu_read_physical(m->sg, 2, leaf + 800, hw, sizeof hw), VIDMM_OK);
    for (int i = 0; i < 1000; i++)
        T_EQ_U64(hw[i], SOFTGPU_HWPTE_VALID | SOFTGPU_HWPTE_NX | 0x7000 | (1ull << SOFTGPU_HWPTE_SEG_SHIFT));

    /* ZERO leaf entries: read 0, writes dropped, protection still holds. */
    uint8_t buf[8192];
    memset(buf, 0xEE, sizeof buf);
    T_ST(softgpu_write_physical(m->sg, 1, 0x7000, buf, 4096), VIDMM_OK);
    struct vidmm_pte z = { VIDMM_PTE_ZERO, 0 };
    T_ST(upt(m->sg, 0, 0, 2, leaf, 2000, &z, 1, 65536), VIDMM_OK);
    struct vidmm_pte zr = { VIDMM_PTE_ZERO | VIDMM_PTE_VALID | VIDMM_PTE_READ_ONLY, 0 };
    T_ST(upt(m->sg, 0, 0, 2, leaf, 2001, &zr, 1, 65536), VIDMM_OK);
    T_ST(tr(m, va + 2000 * 4096, SOFTGPU_ACCESS_WRITE, &t), VIDMM_OK);
    T_CHECK(t.zero);
    T_ST(softgpu_write_virtual(m->sg, &m->root, va + 2000 * 4096, buf, 4096), VIDMM_OK);
    memset(buf, 0x11, sizeof buf);
    T_ST(softgpu_read_virtual(m->sg, &m->root, va + 2000 * 4096, buf, 8192), VIDMM_OK);
    for (int i = 0; i < 8192; i++)
        T_EQ(buf[i], 0);
    T_ST(softgpu_write_virtual(m->sg, &m->root, va + 2001 * 4096, buf, 1), VIDMM_E_PAGE_FAULT);

    /* ZERO on an upper level: the whole span below reads 0. */
    uint64_t zva = SOFTGPU_GIB(8);
    uint64_t l1 = mm_table(m, 1, zva, 0);
    T_ST(upt(m->sg, 1, 0, 2, l1, (uint32_t)mm_index(m, 1, 0, zva), &z, 1, 65536), VIDMM_OK);
    T_ST(tr(m, zva + SOFTGPU_MIB(31), SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_CHECK(t.zero);
    T_ST(softgpu_read_virtual(m->sg, &m->root, zva + 12345, buf, 100), VIDMM_OK);
    T_EQ(buf[0], 0);
    mm_free(m);
}

static void protection_faults(void)
{
    struct mm *m = mm_new("wddm1", 0);
    uint64_t va = SOFTGPU_MIB(16);
    T_ST(mm_map(m, va, pte(1, 0x1000, 0), 0), VIDMM_OK);
    T_ST(mm_map(m, va + 0x1000, pte(1, 0x2000, VIDMM_PTE_READ_ONLY), 0), VIDMM_OK);
    T_ST(mm_map(m, va + 0x2000, pte(1, 0x3000, VIDMM_PTE_NO_EXECUTE), 0), VIDMM_OK);
    struct softgpu_translation t;
    struct softgpu_stats s0, s1;
    softgpu_get_stats(m->sg, &s0);
    T_ST(tr(m, va + 0x1000, SOFTGPU_ACCESS_READ | SOFTGPU_ACCESS_EXEC, &t), VIDMM_OK);
    T_CHECK(t.read_only);
    T_ST(tr(m, va + 0x1000, SOFTGPU_ACCESS_WRITE, &t), VIDMM_E_PAGE_FAULT);
    T_ST(tr(m, va + 0x2000, SOFTGPU_ACCESS_READ | SOFTGPU_ACCESS_WRITE, &t), VIDMM_OK);
    T_CHECK(t.no_execute && !t.read_only);
    T_ST(tr(m, va + 0x2000, SOFTGPU_ACCESS_EXEC, &t), VIDMM_E_PAGE_FAULT);
    /* A write running into the read-only page stops before touching it. */
    uint8_t w[6000], before[4096], after[4096], p0[4096];
    memset(w, 0x5A, sizeof w);
    T_ST(softgpu_read_physical(m->sg, 1, 0x2000, before, 4096), VIDMM_OK);
    T_ST(softgpu_write_virtual(m->sg, &m->root, va + 100, w, sizeof w), VIDMM_E_PAGE_FAULT);
    T_ST(softgpu_read_physical(m->sg, 1, 0x2000, after, 4096), VIDMM_OK);
    T_CHECK(!memcmp(before, after, 4096));
    T_ST(softgpu_read_physical(m->sg, 1, 0x1000, p0, 4096), VIDMM_OK);
    T_EQ(p0[100], 0x5A);   /* the page before was written */
    T_EQ(p0[4095], 0x5A);
    T_ST(softgpu_read_virtual(m->sg, &m->root, va + 100, w, sizeof w), VIDMM_OK);
    /* Protection on an upper level applies to everything below. */
    uint64_t l1 = mm_table(m, 1, va, 0);
    uint64_t leaf = mm_table(m, 0, va, 0);
    struct vidmm_pte ro = pte(2, leaf, VIDMM_PTE_READ_ONLY);
    T_ST(upt(m->sg, 1, 0, 2, l1, (uint32_t)mm_index(m, 1, 0, va), &ro, 1, 65536), VIDMM_OK);
    T_ST(tr(m, va, SOFTGPU_ACCESS_WRITE, &t), VIDMM_E_PAGE_FAULT);
    T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_CHECK(t.read_only);
    softgpu_get_stats(m->sg, &s1);
    T_EQ(s1.page_faults - s0.page_faults, 4);
    mm_free(m);
}

static void invalid_every_level_one(const char *preset, uint32_t levels)
{
    struct mm *m = mm_new(preset, levels);
    uint64_t va = (1ull << (m->va_bits - 1)) + SOFTGPU_MIB(6) + 0x3000;
    T_ST(mm_map(m, va, pte(1, 0x9000, 0), 0), VIDMM_OK);
    struct softgpu_translation t;
    T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    for (uint32_t l = 0; l < m->levels; l++) {
        uint64_t table = mm_table(m, l, va, 0);
        uint32_t idx = (uint32_t)mm_index(m, l, 0, va);
        uint64_t saved;
        T_ST(softgpu_read_physical(m->sg, m->ptseg, table + idx * 8u, &saved, 8), VIDMM_OK);
        struct vidmm_pte inv = { 0, 0 };
        T_ST(upt(m->sg, l, 0, m->ptseg, table, idx, &inv, 1, 65536), VIDMM_OK);
        T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
        uint8_t b;
        T_ST(softgpu_read_virtual(m->sg, &m->root, va, &b, 1), VIDMM_E_PAGE_FAULT);
        /* Garbage in table memory (reserved bits, a table past the end of
         * the segment, an unknown segment) faults; it is never followed. */
        uint64_t junk[3] = { SOFTGPU_HWPTE_VALID | 0x100, SOFTGPU_HWPTE_VALID | (5ull << SOFTGPU_HWPTE_SEG_SHIFT),
                             SOFTGPU_HWPTE_VALID | 0x00FFFFFFFFFFF000ull | (2ull << SOFTGPU_HWPTE_SEG_SHIFT) };
        for (int j = 0; j < 3; j++) {
            T_ST(softgpu_write_physical(m->sg, m->ptseg, table + idx * 8u, &junk[j], 8), VIDMM_OK);
            T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
        }
        T_ST(softgpu_write_physical(m->sg, m->ptseg, table + idx * 8u, &saved, 8), VIDMM_OK);
        T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
        T_EQ_U64(t.offset, 0x9000);
    }
    /* Beyond the VA space. */
    if (m->va_bits < 64)
        T_ST(tr(m, 1ull << m->va_bits, SOFTGPU_ACCESS_READ, &t), VIDMM_E_PAGE_FAULT);
    mm_free(m);
}

static void invalid_every_level(void)
{
    for (uint32_t n = 2; n <= 6; n++) {
        invalid_every_level_one("dgpu", n);
        invalid_every_level_one("wddm1", n);
    }
}

/* ------------------------------------------------------------------ */
/* Split updates, FLUSH_TLB, bad input                                 */
/* ------------------------------------------------------------------ */

static void split_update(void)
{
    struct softgpu *a = mkl("dgpu", 0), *b = mkl("dgpu", 0);
    enum { N = 8192 };   /* a whole dgpu leaf */
    static struct vidmm_pte e[N];
    for (int i = 0; i < N; i++)
        e[i] = pte(1 + (i & 1), (uint64_t)i * 4096, (i % 3 == 0) ? VIDMM_PTE_READ_ONLY : 0);
    T_ST(upt(a, 0, 0, 2, 0x10000, 0, e, N, 65536), VIDMM_OK);
    /* b: 1 entry per buffer for the first 64, then 4 KiB buffers. */
    struct vidmm_build_paging_buffer_args args;
    T_ST(upt(b, 0, 0, 2, 0x10000, 0, e, 64, 40), VIDMM_OK);
    struct softgpu_stats st;
    softgpu_get_stats(b, &st);
    T_EQ(st.paging_buffers, 64);
    T_EQ(st.ops[VIDMM_PAGING_UPDATE_PAGE_TABLE], 1);   /* one operation, many commands */
    T_EQ(st.multipass_restarts, 63);
    softgpu_inject_insufficient_dma(b, 3);
    T_ST(upt(b, 0, 0, 2, 0x10000, 64, e + 64, N - 64, 4096), VIDMM_OK);
    static uint64_t ta[N], tb[N];
    T_ST(softgpu_read_physical(a, 2, 0x10000, ta, sizeof ta), VIDMM_OK);
    T_ST(softgpu_read_physical(b, 2, 0x10000, tb, sizeof tb), VIDMM_OK);
    T_CHECK(!memcmp(ta, tb, sizeof ta));
    softgpu_get_stats(b, &st);
    T_EQ(st.ptes_written, N);

    /* Not even one entry fits: nothing written, offset unchanged. */
    uint64_t buf[8];
    upt_args(&args, 0, 0, 2, 0x10000, 0, e, 10);
    args.dma_buffer = buf;
    args.dma_size = 39;
    args.multipass_offset = 0;
    T_ST(ops->build_paging_buffer(b, &args), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_EQ(args.dma_size, 39);
    T_CHECK(args.dma_buffer == buf);
    T_EQ(args.multipass_offset, 0);
    /* A bad entry late in a split request fails the first call. */
    static struct vidmm_pte bad[600];
    memcpy(bad, e, sizeof bad);
    bad[599].flags |= VIDMM_PTE_LARGE_PAGE;
    static uint64_t big[64];
    upt_args(&args, 0, 0, 2, 0x10000, 0, bad, 600);
    args.dma_buffer = big;
    args.dma_size = sizeof big;
    T_ST(ops->build_paging_buffer(b, &args), VIDMM_E_INVALID_ARG);
    T_EQ(args.dma_size, sizeof big);
    /* A restart past the end. */
    upt_args(&args, 0, 0, 2, 0x10000, 0, e, 10);
    args.dma_buffer = big;
    args.dma_size = sizeof big;
    args.multipass_offset = 10;
    T_ST(ops->build_paging_buffer(b, &args), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_check(a), 0);
    T_EQ(softgpu_check(b), 0);
    softgpu_destroy(a);
    softgpu_destroy(b);
}

static void flush_tlb(void)
{
    struct mm *m = mm_new("dgpu", 0);
    uint64_t va = SOFTGPU_MIB(2);
    T_ST(mm_map(m, va, pte(1, 0x4000, 0), 0), VIDMM_OK);
    struct softgpu_translation t;
    T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    /* No TLB: an update is visible at once, before any flush. */
    T_ST(mm_map(m, va, pte(1, 0x8000, 0), 0), VIDMM_OK);
    T_ST(tr(m, va, SOFTGPU_ACCESS_READ, &t), VIDMM_OK);
    T_EQ_U64(t.offset, 0x8000);
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FLUSH_TLB;
    a.u.flush_tlb.root_page_table_address = m->root;
    T_ST(run_op(m->sg, &a, 65536), VIDMM_OK);
    a.u.flush_tlb.start_virtual_address = va;
    a.u.flush_tlb.end_virtual_address = va + 4096;
    T_ST(run_op(m->sg, &a, 65536), VIDMM_OK);
    struct softgpu_stats st;
    softgpu_get_stats(m->sg, &st);
    T_EQ(st.ops[VIDMM_PAGING_FLUSH_TLB], 2);
    T_EQ_U64(t.offset, 0x8000);
    /* Bad flushes. */
    a.u.flush_tlb.start_virtual_address = va + 8192;
    T_ST(run_op(m->sg, &a, 65536), VIDMM_E_INVALID_ARG);
    a.u.flush_tlb.start_virtual_address = 0;
    a.u.flush_tlb.root_page_table_address.segment_id = 3;
    T_ST(run_op(m->sg, &a, 65536), VIDMM_E_INVALID_ARG);
    a.u.flush_tlb.root_page_table_address.segment_id = 2;
    a.u.flush_tlb.root_page_table_address.segment_offset = SOFTGPU_GIB(4) - 4096;
    T_ST(run_op(m->sg, &a, 65536), VIDMM_E_INVALID_ARG);
    a.u.flush_tlb.root_page_table_address.segment_offset = 0;
    a.dma_buffer = &st;
    a.dma_size = 39;
    a.multipass_offset = 0;
    T_ST(ops->build_paging_buffer(m->sg, &a), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_EQ(a.dma_size, 39);
    mm_free(m);
}

static vidmm_status build1(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a)
{
    static uint64_t buf[8192];
    a->dma_buffer = buf;
    a->dma_size = sizeof buf;
    a->multipass_offset = 0;
    vidmm_status st = ops->build_paging_buffer(sg, a);
    if (st == VIDMM_E_INVALID_ARG)
        T_EQ(a->dma_size, sizeof buf);   /* a refused request writes nothing */
    return st;
}

static void bad_args(void)
{
    struct softgpu *sg = mkl("dgpu", 0);
    struct vidmm_build_paging_buffer_args a;
    struct vidmm_pte e = pte(1, 0x1000, 0);
    struct vidmm_pte e2[2] = { e, e };
#define UPT(level, flags, seg, table, start, ents, n) \
    (upt_args(&a, level, flags, seg, table, start, ents, n), build1(sg, &a))
    T_ST(UPT(0, 0, 2, 0, 0, &e, 1), VIDMM_OK);
    T_ST(UPT(0, 0, 2, SOFTGPU_GIB(4) - 65536, 8191, &e, 1), VIDMM_OK);
    /* Table address. */
    T_ST(UPT(0, 0, 2, SOFTGPU_GIB(4) - 4096, 0, &e, 1), VIDMM_E_INVALID_ARG);  /* table past the end */
    T_ST(UPT(0, 0, 2, SOFTGPU_GIB(4), 0, &e, 1), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, 0, 2, UINT64_MAX - 4095, 0, &e, 1), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, 0, 2, 0x800, 0, &e, 1), VIDMM_E_INVALID_ARG);             /* misaligned */
    T_ST(UPT(0, 0, 3, 0, 0, &e, 1), VIDMM_E_INVALID_ARG);                 /* aperture */
    T_ST(UPT(0, 0, 0, 0x10000, 0, &e, 1), VIDMM_E_INVALID_ARG);           /* system memory */
    T_ST(UPT(0, 0, 4, 0, 0, &e, 1), VIDMM_E_INVALID_ARG);                 /* no such segment */
    /* Range and level. */
    T_ST(UPT(0, 0, 2, 0, 8192, &e, 1), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, 0, 2, 0, 8191, e2, 2), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, VIDMM_UPDATE_PT_REPEAT, 2, 0, 1, &e, 8192), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, VIDMM_UPDATE_PT_USE_64KB_PAGES, 2, 0, 512, &e, 1), VIDMM_E_INVALID_ARG); /* 512 64 KB entries */
    T_ST(UPT(2, 0, 2, 0, 1024, &e, 1), VIDMM_E_INVALID_ARG);              /* root has 1024 */
    T_ST(UPT(0, 0, 2, 0, 0, &e, 0), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, 0, 2, 0, 0, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(UPT(3, 0, 2, 0, 0, &e, 1), VIDMM_E_INVALID_ARG);                 /* 3 levels: 0..2 */
    T_ST(UPT(1, VIDMM_UPDATE_PT_USE_64KB_PAGES, 2, 0, 0, &e, 1), VIDMM_E_INVALID_ARG);
    T_ST(UPT(0, 0x100, 2, 0, 0, &e, 1), VIDMM_E_INVALID_ARG);             /* unknown flag */
    T_ST(UPT(0, VIDMM_UPDATE_PT_INITIAL_UPDATE | VIDMM_UPDATE_PT_NOTIFY_EVICTION, 2, 0, 0, &e, 1), VIDMM_OK);
    /* Entries. */
    struct vidmm_pte b = pte(4, 0, 0);                                     /* no segment 4 */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(31, 0, 0);
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(1, SOFTGPU_MIB(256), 0);                                           /* page past segment 1 */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(3, SOFTGPU_GIB(2) - 4096, 0);                                      /* last aperture page: fine */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_OK);
    b = pte(0, 0, 0);                                                     /* system page at NULL */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(1, 0x1000, VIDMM_PTE_LARGE_PAGE);
    T_ST(UPT(1, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(1, 0x1000, 1ull << 11);                                       /* physical adapter 1 */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(2, 0x10000, VIDMM_PTE_PAGE_TABLE_64KB);
    T_ST(UPT(1, 0, 2, 0, 0, &b, 1), VIDMM_OK);
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);                 /* 64 KB marker on a leaf */
    T_ST(UPT(2, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);                 /* ... or on level 2 */
    b = pte(3, 0, 0);                                                     /* a table in the aperture */
    T_ST(UPT(1, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(2, SOFTGPU_GIB(4) - 4096, 0);                                      /* a table past the end */
    T_ST(UPT(1, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    b = pte(0, 1ull << 56, 0);                                            /* frame beyond 44 bits */
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_E_INVALID_ARG);
    /* Invalid entries carry nothing else; a Zero entry no address. */
    b.flags = VIDMM_PTE_SEGMENT_MASK;
    b.page_address = 12345;
    T_ST(UPT(0, 0, 2, 0, 0, &b, 1), VIDMM_OK);
    b.flags = VIDMM_PTE_ZERO | VIDMM_PTE_SEGMENT_MASK;
    T_ST(UPT(2, 0, 2, 0, 0, &b, 1), VIDMM_OK);
    /* REPEAT checks its one entry. */
    b = pte(9, 0, 0);
    T_ST(UPT(0, VIDMM_UPDATE_PT_REPEAT, 2, 0, 0, &b, 100), VIDMM_E_INVALID_ARG);
#undef UPT

    /* Submitting forged commands executes nothing. */
    struct softgpu_stats s0, s1;
    softgpu_get_stats(sg, &s0);
    uint64_t cmd[6];
    struct softgpu_cmd_hdr h = { VIDMM_PAGING_UPDATE_PAGE_TABLE, SOFTGPU_CMDF_FIRST, 40 };
    memcpy(&cmd[0], &h, 8);
    cmd[1] = 2 | (0ull << 32);       /* segment 2, level 0, flags 0 */
    cmd[2] = SOFTGPU_GIB(4) - 4096;       /* table past the end */
    cmd[3] = 1ull << 32;             /* start 0, count 1 */
    cmd[4] = SOFTGPU_HWPTE_VALID;
    struct vidmm_submit_command_args s = { NULL, cmd, 40, VIDMM_SUBMIT_PAGING, 1 };
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    cmd[2] = 0;
    cmd[3] = 2ull << 32;             /* count 2 but one entry */
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    cmd[3] = 0;                      /* count 0 */
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    cmd[3] = 8192ull | (1ull << 32); /* start past the leaf */
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    cmd[1] = 2 | (7ull << 32);       /* level 7 */
    cmd[3] = 1ull << 32;
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    softgpu_get_stats(sg, &s1);
    T_EQ(s1.ptes_written, s0.ptes_written);
    T_EQ(s1.paging_buffers, s0.paging_buffers);
    cmd[1] = 2;                      /* well formed */
    T_ST(ops->submit_command(sg, &s), VIDMM_OK);
    T_ST(softgpu_wait_idle(sg), VIDMM_OK);   /* cmd must outlive its execution */

    /* The walker's own arguments. */
    struct vidmm_physical_address root = { 2, 0, 0 };
    struct softgpu_translation t;
    T_ST(softgpu_translate(sg, NULL, 0, SOFTGPU_ACCESS_READ, &t), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_translate(sg, &root, 0, SOFTGPU_ACCESS_READ, NULL), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_translate(sg, &root, 0, 0, &t), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_translate(sg, &root, 0, 8, &t), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_translate(NULL, &root, 0, SOFTGPU_ACCESS_READ, &t), VIDMM_E_INVALID_ARG);
    struct vidmm_physical_address bad_root = { 3, 0, 0 };
    T_ST(softgpu_translate(sg, &bad_root, 0, SOFTGPU_ACCESS_READ, &t), VIDMM_E_INVALID_ARG);
    bad_root.segment_id = 2;
    bad_root.segment_offset = SOFTGPU_GIB(4) - 4096;
    T_ST(softgpu_translate(sg, &bad_root, 0, SOFTGPU_ACCESS_READ, &t), VIDMM_E_INVALID_ARG);
    uint8_t byte;
    T_ST(softgpu_read_virtual(sg, &root, 0, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_write_virtual(sg, &root, 0, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_virtual(sg, &root, UINT64_MAX, &byte, 2), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_virtual(sg, &root, 0, &byte, 0), VIDMM_OK);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);

    /* IoMmu preset: no GpuMmu paging operations, no walker. */
    sg = mkl("igpu", 0);
    upt_args(&a, 0, 0, 1, 0, 0, &e, 1);
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FLUSH_TLB;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    root.segment_id = 1;
    T_ST(softgpu_translate(sg, &root, 0, SOFTGPU_ACCESS_READ, &t), VIDMM_E_INVALID_ARG);
    softgpu_destroy(sg);
}

/* ------------------------------------------------------------------ */
/* Random stream against a model                                       */
/* ------------------------------------------------------------------ */

/* The model covers `leaves` consecutive leaf spans from va0; a leaf is
 * either 4 KB or 64 KB (fixed per leaf).  ent[] holds the neutral PTE of
 * every leaf entry. */
static void random_model_one(const char *preset, uint64_t seed, int nops)
{
    struct mm *m = mm_new(preset, 0);
    const int leaves = 3;
    uint64_t span = 1ull << (m->shift[0] + m->bits[0]);
    uint64_t va0 = span * 5;
    uint32_t n4 = 1u << m->bits[0], n64 = 1u << m->leaf64_bits;
    struct vidmm_pte *ent = calloc((size_t)leaves * n4, sizeof *ent);
    uint64_t leaf_off[3];
    int is64[3] = { 0, 1, 0 };
    T_CHECK(ent != NULL);
    for (int i = 0; i < leaves; i++)
        leaf_off[i] = mm_table(m, 0, va0 + (uint64_t)i * span, is64[i]);
    uint8_t *sys = host_pages(SOFTGPU_MIB(1));
    uint64_t rs = seed;
    rand_fill(&rs, sys, SOFTGPU_MIB(1));
    uint64_t data2 = (m->next | (SOFTGPU_MIB(1) - 1)) + 1;   /* segment 2 data above the tables, 64 KiB aligned */
    struct vidmm_pte *run = calloc(n4, sizeof *run);
    uint32_t bufs[4] = { 65536, 4096, 200, 40 };
    for (int op = 0; op < nops; op++) {
        int L = (int)t_rand_range(&rs, (uint64_t)leaves);
        uint32_t n = is64[L] ? n64 : n4;
        uint64_t unit = is64[L] ? 65536 : 4096;
        uint32_t start = (uint32_t)t_rand_range(&rs, n);
        uint32_t cnt = 1 + (uint32_t)t_rand_range(&rs, t_rand_range(&rs, 4) == 0 ? n - start : (n - start < 16 ? n - start : 16));
        uint32_t kind = (uint32_t)t_rand_range(&rs, 6);
        uint32_t flags = is64[L] ? VIDMM_UPDATE_PT_USE_64KB_PAGES : 0;
        uint64_t prot = (t_rand_range(&rs, 4) == 0 ? VIDMM_PTE_READ_ONLY : 0) |
                        (t_rand_range(&rs, 4) == 0 ? VIDMM_PTE_NO_EXECUTE : 0);
        if (kind == 0 || kind == 1) {        /* unmap (REPEAT of an invalid entry) or zero */
            struct vidmm_pte e = { kind == 0 ? 0 : VIDMM_PTE_ZERO | prot, 0 };
            flags |= VIDMM_UPDATE_PT_REPEAT;
            for (uint32_t i = 0; i < cnt; i++)
                run[i] = e;
        } else {                             /* map consecutive pages of one segment */
            uint32_t seg = kind == 2 ? 1 : kind == 3 ? 2 : kind == 4 ? 0 : 3;
            uint64_t room = seg == 1 ? SOFTGPU_MIB(64) : seg == 2 ? SOFTGPU_MIB(64) : seg == 0 ? SOFTGPU_MIB(1) : SOFTGPU_MIB(32);
            if ((uint64_t)cnt * unit > room)
                cnt = (uint32_t)(room / unit);
            uint64_t first = t_rand_range(&rs, room / unit - cnt + 1) * unit;
            uint64_t base = seg == 2 ? data2 : seg == 0 ? (uint64_t)(uintptr_t)sys : 0;
            for (uint32_t i = 0; i < cnt; i++)
                run[i] = pte(seg, base + first + (uint64_t)i * unit, prot);
        }
        T_ST(upt(m->sg, 0, flags, m->ptseg, leaf_off[L], start, run, cnt, bufs[t_rand_range(&rs, 4)]), VIDMM_OK);
        memcpy(&ent[(size_t)L * n4 + start], run, cnt * sizeof *run);

        if (op % 100 != 99 && op != nops - 1)
            continue;
        /* Check every 4 KiB page of the model against the walker. */
        for (int l = 0; l < leaves; l++)
            for (uint64_t p = 0; p < span / 4096; p++) {
                uint64_t va = va0 + (uint64_t)l * span + p * 4096 + (p & 0xFF);
                uint64_t u = is64[l] ? 65536 : 4096;
                const struct vidmm_pte *x = &ent[(size_t)l * n4 + (p * 4096) / u];
                struct softgpu_translation t;
                vidmm_status st = tr(m, va, SOFTGPU_ACCESS_READ, &t);
                if (!(x->flags & (VIDMM_PTE_VALID | VIDMM_PTE_ZERO))) {
                    T_ST(st, VIDMM_E_PAGE_FAULT);
                    continue;
                }
                T_ST(st, VIDMM_OK);
                T_EQ(t.read_only, (x->flags & VIDMM_PTE_READ_ONLY) != 0);
                T_EQ(t.no_execute, (x->flags & VIDMM_PTE_NO_EXECUTE) != 0);
                T_EQ(t.zero, (x->flags & VIDMM_PTE_ZERO) != 0);
                if (x->flags & VIDMM_PTE_ZERO)
                    continue;
                T_EQ(t.page_size, u);
                T_EQ(t.segment_id, VIDMM_PTE_SEGMENT(x));
                T_EQ_U64(t.offset, (x->page_address << 12) + (va & (u - 1)));
                if (t.segment_id == 3) {
                    /* Nothing is mapped in the GART: the access faults. */
                    uint8_t a1;
                    T_ST(softgpu_read_virtual(m->sg, &m->root, va, &a1, 1), VIDMM_E_PAGE_FAULT);
                    continue;
                }
                if (t_rand_range(&rs, 64) == 0) {
                    uint8_t a[64], b[64];
                    T_ST(softgpu_read_virtual(m->sg, &m->root, va, a, sizeof a), VIDMM_OK);
                    if (t.segment_id == 0)
                        memcpy(b, (const void *)(uintptr_t)t.offset, sizeof b);
                    else
                        T_ST(softgpu_read_physical(m->sg, t.segment_id, t.offset, b, sizeof b), VIDMM_OK);
                    T_CHECK(!memcmp(a, b, sizeof a));
                }
            }
        T_EQ(softgpu_check(m->sg), 0);
        if (t_current_failures())
            break;
    }
    free(run);
    free(ent);
    free(sys);
    mm_free(m);
}

static void random_model(void)
{
    uint64_t seed = t_seed();
    int nops = 2000 * (int)t_scale();
    random_model_one("wddm1", seed, nops);
    random_model_one("dgpu", seed ^ 0xD6, nops / 4);
}

void suite_softgpu_mmu(void);
void suite_softgpu_mmu(void)
{
    t_run("softgpu_mmu.geometry", geometry);
    t_run("softgpu_mmu.walk_4k", walk_4k);
    t_run("softgpu_mmu.leaf_64k", leaf_64k);
    t_run("softgpu_mmu.repeat_and_zero", repeat_and_zero);
    t_run("softgpu_mmu.protection_faults", protection_faults);
    t_run("softgpu_mmu.invalid_every_level", invalid_every_level);
    t_run("softgpu_mmu.split_update", split_update);
    t_run("softgpu_mmu.flush_tlb", flush_tlb);
    t_run("softgpu_mmu.bad_args", bad_args);
    t_run("softgpu_mmu.random_model", random_model);
}
