/*
 * mmu.c - softgpu's GPU MMU (GpuMmu model): the page-table geometry it
 * reports, its hardware PTE format, the UPDATE_PAGE_TABLE and FLUSH_TLB
 * paging commands (build and execute).  The walker that reads the
 * tables (softgpu_translate, read/write_virtual) is in mmu_walk.c.
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
 * 56-60 (SOFTGPU_HWPTE_* in softgpu_int.h; docs/SOFTGPU.md has the table).
 * build_paging_buffer converts each neutral struct vidmm_pte into it and
 * copies the result INTO the paging buffer, so execution is a plain
 * memcpy into the table (that is what keeps a long run under 1 ns/PTE)
 * and the caller's array may die after the build.
 *
 * Threads.  UPDATE_PAGE_TABLE runs on the copy engine (engine.c); the
 * walker (mmu_walk.c) waits for it to be idle and walks under softgpu's
 * lock, so a walk never sees a half-written update.
 */
#include "softgpu_int.h"

#include <stddef.h>
#include <string.h>

/* Vector paths for the run conversion: SSE2 (the x86-64 baseline) and
 * AVX2 chosen at run time.  -DSG_NO_SIMD / -DSG_NO_AVX2 build without
 * them (to test the portable loop). */
#if defined(__SSE2__) && defined(__x86_64__) && !defined(SOFTGPU_NO_SIMD)
#include <emmintrin.h>
#define SOFTGPU_HAVE_SSE2_PATH 1
#endif
#if defined(SOFTGPU_HAVE_SSE2_PATH) && (defined(__GNUC__) || defined(__clang__)) && !defined(SOFTGPU_NO_AVX2)
#include <immintrin.h>
#define SOFTGPU_HAVE_AVX2_PATH 1
#endif

#define SOFTGPU_VA_TARGET_BITS 48u

/* UPDATE_PAGE_TABLE command: header, then REPEAT ? 1 : count hardware
 * entries of 8 bytes. */
struct softgpu_cmd_upt {            /* 32 bytes + entries */
    struct softgpu_cmd_hdr hdr;
    uint32_t segment;          /* table's memory segment */
    uint16_t level;            /* 0 = leaf */
    uint16_t flags;            /* SOFTGPU_UPT_* */
    uint64_t table;            /* segment offset of the table */
    uint32_t start;            /* first entry written */
    uint32_t count;            /* entries written */
};
#define SOFTGPU_UPT_REPEAT 0x1u     /* one entry follows, stored count times */
#define SOFTGPU_UPT_64K    0x2u     /* leaf of 64 KB entries */

struct softgpu_cmd_flush {          /* 40 bytes */
    struct softgpu_cmd_hdr hdr;
    uint32_t segment;          /* root table */
    uint32_t reserved;
    uint64_t root;
    uint64_t start_va;
    uint64_t end_va;
};

_Static_assert(sizeof(struct softgpu_cmd_upt) == 32, "update-page-table command layout");
_Static_assert(sizeof(struct softgpu_cmd_flush) == 40, "flush-tlb command layout");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "softgpu's command words assume a little-endian host"
#endif
_Static_assert(offsetof(struct softgpu_cmd_upt, segment) == 8 && offsetof(struct softgpu_cmd_upt, level) == 12 &&
                   offsetof(struct softgpu_cmd_upt, flags) == 14 && offsetof(struct softgpu_cmd_upt, table) == 16 &&
                   offsetof(struct softgpu_cmd_upt, start) == 24 && offsetof(struct softgpu_cmd_upt, count) == 28,
               "update-page-table command words");

/* ------------------------------------------------------------------ */
/* Geometry                                                            */
/* ------------------------------------------------------------------ */

vidmm_status softgpu_mmu_init(struct softgpu *sg, uint32_t levels)
{
    struct softgpu_mmu *m = &sg->mmu;
    memset(m, 0, sizeof *m);
    if (levels == 0)
        levels = sg->seg[sg->invis_id].page_size == SOFTGPU_PAGE_64K ? 3u : 4u;
    if (levels < VIDMM_MIN_PAGE_TABLE_LEVELS || levels > VIDMM_MAX_PAGE_TABLE_LEVELS || !sg->invis_id)
        return VIDMM_E_INVALID_ARG;
    uint32_t page = sg->seg[sg->invis_id].page_size;
    uint32_t full = page == SOFTGPU_PAGE_64K ? 13u : 9u;   /* one page of 8-byte entries */
    m->levels = levels;
    m->pt_segment = sg->invis_id;
    m->bits[0] = full;
    /* Upper levels: fill the lower ones first (fewer, fuller tables), keep
     * at least one bit for each level above. */
    uint32_t left = SOFTGPU_VA_TARGET_BITS - 12u - full;
    for (uint32_t l = 1; l < levels; l++) {
        uint32_t above = levels - 1 - l;
        uint32_t b = left > above ? left - above : 1u;
        if (b > full)
            b = full;
        m->bits[l] = b;
        left = left > b ? left - b : 0;
    }
    if (levels == 2) {
        /* Two levels: a large root, resizable (DxgkDdiGetRootPageTableSize),
         * of up to 2^SOFTGPU_ROOT_MAX_BITS entries. */
        m->bits[1] = SOFTGPU_ROOT_MAX_BITS;
        m->root_resizable = 1;
    }
    uint32_t shift = 12;
    for (uint32_t l = 0; l < levels; l++) {
        m->shift[l] = shift;
        shift += m->bits[l];
        m->table_size[l] = softgpu_round_up((8ull << m->bits[l]), page);
    }
    if (m->root_resizable)
        m->table_size[1] = page;   /* the smallest root: what commands are checked against */
    m->va_bits = shift;
    m->leaf64_bits = full - 4u;
    m->leaf64_size = softgpu_round_up(8ull << m->leaf64_bits, page);
    return VIDMM_OK;
}

vidmm_status softgpu_query_gpummu_caps(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args)
{
    const struct softgpu_mmu *m = &sg->mmu;
    if (!m->levels)
        return VIDMM_E_NOT_SUPPORTED;
    if (!args->output || args->output_size < sizeof(struct vidmm_gpummu_caps))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_gpummu_caps c;
    memset(&c, 0, sizeof c);
    c.flags = VIDMM_GPUMMU_READ_ONLY_MEMORY_SUPPORTED | VIDMM_GPUMMU_NO_EXECUTE_MEMORY_SUPPORTED |
              VIDMM_GPUMMU_ZERO_IN_PTE_SUPPORTED | VIDMM_GPUMMU_CACHE_COHERENT_MEMORY_SUPPORTED |
              (sg->virtual_paging ? VIDMM_GPUMMU_VIRTUAL_PAGING_OPS : 0u);
    c.page_table_update_mode = VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL;
    c.virtual_address_bit_count = m->va_bits;
    c.page_table_level_count = m->levels;
    c.leaf_page_table_size_for_64k_pages_in_bytes = (uint32_t)m->leaf64_size;
    memcpy(args->output, &c, sizeof c);
    return VIDMM_OK;
}

vidmm_status softgpu_query_page_table_level(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args)
{
    const struct softgpu_mmu *m = &sg->mmu;
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
    d.page_table_size_in_bytes = m->root_resizable && in.level_index == 1 ? 0 : m->table_size[in.level_index];
    d.page_table_alignment_in_bytes = 0;   /* the segment's page: a table is exactly one page */
    memcpy(args->output, &d, sizeof d);
    return VIDMM_OK;
}

/* Entries of a table of level (64 KB-entry leaf when leaf64). */
static uint64_t softgpu_entries(const struct softgpu_mmu *m, uint32_t level, int leaf64)
{
    return 1ull << (leaf64 ? m->leaf64_bits : m->bits[level]);
}

/* ------------------------------------------------------------------ */
/* Neutral PTE -> hardware PTE                                         */
/* ------------------------------------------------------------------ */

#define SOFTGPU_NEUTRAL_KNOWN (VIDMM_PTE_VALID | VIDMM_PTE_ZERO | VIDMM_PTE_CACHE_COHERENT | VIDMM_PTE_READ_ONLY | \
                          VIDMM_PTE_NO_EXECUTE | VIDMM_PTE_SEGMENT_MASK | VIDMM_PTE_PAGE_TABLE_64KB)
#define SOFTGPU_FRAME_LIMIT (1ull << 44)

/* struct softgpu_pte_class (softgpu_int.h) is what every entry with neutral
 * flags f becomes in a level-`level` table (leaf64: a 64 KB leaf): an
 * entry that carries an address (addr) is tmpl | frame << 12 with
 * frame - lo <= span and (frame & align) == 0 (lo is a multiple of
 * align + 1); any other entry is tmpl whatever its page_address.
 * Deciding this once per flags value instead of once per entry is what
 * makes a long run cheap. */

/* 0 when no entry with flags f can be an entry of that table.  Bits
 * outside SOFTGPU_NEUTRAL_KNOWN (LargePage, a physical adapter index) are
 * refused: softgpu does not report those capabilities. */
static int softgpu_pte_class(const struct softgpu *sg, uint32_t level, int leaf64, uint64_t f, struct softgpu_pte_class *k)
{
    k->flags = f;
    k->lo = 0;
    k->span = SOFTGPU_FRAME_LIMIT - 1;
    k->align = 0;
    k->addr = 0;
    if (f & ~SOFTGPU_NEUTRAL_KNOWN)
        return 0;
    uint64_t prot = (f & VIDMM_PTE_READ_ONLY ? SOFTGPU_HWPTE_RO : 0) | (f & VIDMM_PTE_NO_EXECUTE ? SOFTGPU_HWPTE_NX : 0) |
                    (f & VIDMM_PTE_CACHE_COHERENT ? SOFTGPU_HWPTE_CC : 0);
    if (f & VIDMM_PTE_ZERO) {
        /* A Zero entry needs no address: reads return 0 on any level. */
        k->tmpl = SOFTGPU_HWPTE_VALID | SOFTGPU_HWPTE_ZERO | prot;
        return 1;
    }
    if (!(f & VIDMM_PTE_VALID)) {
        k->tmpl = 0;   /* invalid: the rest of the record is meaningless */
        return 1;
    }
    uint32_t seg = (uint32_t)((f & VIDMM_PTE_SEGMENT_MASK) >> VIDMM_PTE_SEGMENT_SHIFT);
    int pt64 = (f & VIDMM_PTE_PAGE_TABLE_64KB) != 0;
    if (seg > sg->nb_segment || (pt64 && level != 1))
        return 0;
    uint64_t hi = SOFTGPU_FRAME_LIMIT - 1;   /* last frame allowed */
    if (level == 0) {
        uint64_t bytes = leaf64 ? SOFTGPU_PAGE_64K : SOFTGPU_PAGE_4K;
        k->align = leaf64 ? 15u : 0u;   /* a 64 KB entry maps a 64 KB-aligned page */
        if (seg == 0) {
            k->lo = k->align + 1;       /* no system page at host address 0 */
        } else {
            uint64_t size = sg->seg[seg].size;
            if (size < bytes)
                return 0;
            hi = (size - bytes) >> 12;  /* the whole page inside the segment */
        }
    } else {
        /* Tables live in memory segments, whole. */
        uint64_t ts = softgpu_tsize(&sg->mmu, level - 1, pt64);
        if (seg < 1 || !sg->seg[seg].is_memory || sg->seg[seg].size < ts)
            return 0;
        hi = (sg->seg[seg].size - ts) >> 12;
    }
    if (hi >= SOFTGPU_FRAME_LIMIT)
        hi = SOFTGPU_FRAME_LIMIT - 1;
    if (hi < k->lo)
        return 0;
    k->span = hi - k->lo;
    k->addr = 1;
    k->tmpl = SOFTGPU_HWPTE_VALID | prot | (pt64 ? SOFTGPU_HWPTE_PT64K : 0) | ((uint64_t)seg << SOFTGPU_HWPTE_SEG_SHIFT);
    return 1;
}

/* The class of flags f, from the one-entry cache when it matches; NULL
 * when f is refused. */
static inline const struct softgpu_pte_class *softgpu_class_of(struct softgpu *sg, uint32_t level, int leaf64, uint64_t f)
{
    struct softgpu_mmu *m = &sg->mmu;
    uint32_t key = 1u + level * 2u + (leaf64 ? 1u : 0u);
    if (m->last_key == key && m->last.flags == f)
        return &m->last;
    if (!softgpu_pte_class(sg, level, leaf64, f, &m->last)) {
        m->last_key = 0;
        return NULL;
    }
    m->last_key = key;
    return &m->last;
}

/* One entry, exactly: 0 when p cannot be an entry of that table. */
static inline int softgpu_pte_encode(struct softgpu *sg, uint32_t level, int leaf64, const struct vidmm_pte *p, uint64_t *hw)
{
    const struct softgpu_pte_class *k = softgpu_class_of(sg, level, leaf64, p->flags);
    if (!k)
        return 0;
    if (!k->addr) {
        *hw = k->tmpl;
        return 1;
    }
    uint64_t d = p->page_address - k->lo;
    if (d > k->span || (p->page_address & k->align))
        return 0;
    *hw = k->tmpl | (p->page_address << 12);
    return 1;
}

/* Scans n entries assuming all have the flags of class k: writes
 * k.tmpl | frame << 12 (or k.tmpl alone) for each into out when out is
 * not NULL, and returns in *diff the OR of (flags - k.flags), nonzero
 * when some entry has other flags, and in *acc the OR of (frame - k.lo),
 * an upper bound of every frame - lo (and holding any misaligned bit).
 * No branch depends on the entries: two loads, a subtract and an OR per
 * entry plus, for out, a shift, an OR and an 8-byte store. */
static inline void softgpu_scan(const struct softgpu_pte_class *k, const struct vidmm_pte *e, uint64_t n, uint8_t *out,
                           uint64_t *diff, uint64_t *acc)
{
    uint64_t i = 0;
    uint64_t fm = k->addr ? ~0ull : 0;   /* an entry without address ignores its frame */
#ifdef SOFTGPU_HAVE_SSE2_PATH
    const __m128i sub = _mm_set_epi64x((long long)k->lo, (long long)k->flags);   /* {flags, lo} */
    const __m128i tmpl = _mm_set1_epi64x((long long)k->tmpl);
    const __m128i mask = _mm_set1_epi64x((long long)fm);
    __m128i a0 = _mm_setzero_si128(), a1 = _mm_setzero_si128();
    for (; i + 2 <= n; i += 2) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(e + i));       /* {flags, frame} */
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(e + i + 1));
        a0 = _mm_or_si128(a0, _mm_sub_epi64(x, sub));
        a1 = _mm_or_si128(a1, _mm_sub_epi64(y, sub));
        if (out) {
            __m128i fr = _mm_slli_epi64(_mm_unpackhi_epi64(x, y), 12);
            _mm_storeu_si128((__m128i *)(void *)(out + i * 8u), _mm_or_si128(tmpl, _mm_and_si128(fr, mask)));
        }
    }
    uint64_t r[2];
    _mm_storeu_si128((__m128i *)(void *)r, _mm_or_si128(a0, a1));
    uint64_t d = r[0], a = r[1];
#else
    uint64_t d = 0, a = 0;
#endif
    for (; i < n; i++) {
        uint64_t f = e[i].flags, fr = e[i].page_address;
        d |= f - k->flags;
        a |= fr - k->lo;
        if (out) {
            uint64_t hw = k->tmpl | ((fr << 12) & fm);
            memcpy(out + i * 8u, &hw, 8);
        }
    }
    *diff = d;
    *acc = a;
}

#ifdef SOFTGPU_HAVE_AVX2_PATH
/* softgpu_scan four entries (two 32-byte loads) at a time, eight per turn:
 * about a third of the SSE2 loop's instructions per entry, which is what
 * gets a run under the 2.3 cycles per PTE that 1 ns allows here.  Chosen
 * at run time (softgpu_scan_fast), so the build needs no -mavx2. */
__attribute__((target("avx2"))) static void softgpu_scan_avx2(const struct softgpu_pte_class *k, const struct vidmm_pte *e,
                                                         uint64_t n, uint8_t *out, uint64_t *diff, uint64_t *acc)
{
    uint64_t i = 0;
    uint64_t fm = k->addr ? ~0ull : 0;
    const __m256i sub = _mm256_set_epi64x((long long)k->lo, (long long)k->flags, (long long)k->lo,
                                          (long long)k->flags);
    const __m256i tmpl = _mm256_set1_epi64x((long long)k->tmpl);
    const __m256i mask = _mm256_set1_epi64x((long long)fm);
    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (; i + 8 <= n; i += 8) {
        const __m256i *q = (const __m256i *)(const void *)(e + i);
        __m256i x0 = _mm256_loadu_si256(q), y0 = _mm256_loadu_si256(q + 1);   /* entries 0-1, 2-3 */
        __m256i x1 = _mm256_loadu_si256(q + 2), y1 = _mm256_loadu_si256(q + 3); /* 4-5, 6-7 */
        a0 = _mm256_or_si256(a0, _mm256_or_si256(_mm256_sub_epi64(x0, sub), _mm256_sub_epi64(y0, sub)));
        a1 = _mm256_or_si256(a1, _mm256_or_si256(_mm256_sub_epi64(x1, sub), _mm256_sub_epi64(y1, sub)));
        if (out) {
            /* unpackhi: {fr0, fr2, fr1, fr3}; permute back to 0, 1, 2, 3. */
            __m256i f0 = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(x0, y0), 0xD8);
            __m256i f1 = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(x1, y1), 0xD8);
            f0 = _mm256_or_si256(tmpl, _mm256_and_si256(_mm256_slli_epi64(f0, 12), mask));
            f1 = _mm256_or_si256(tmpl, _mm256_and_si256(_mm256_slli_epi64(f1, 12), mask));
            _mm256_storeu_si256((__m256i *)(void *)(out + i * 8u), f0);
            _mm256_storeu_si256((__m256i *)(void *)(out + i * 8u + 32u), f1);
        }
    }
    uint64_t r[4];
    _mm256_storeu_si256((__m256i *)(void *)r, _mm256_or_si256(a0, a1));
    uint64_t d = r[0] | r[2], a = r[1] | r[3];
    for (; i < n; i++) {
        uint64_t fr = e[i].page_address;
        d |= e[i].flags - k->flags;
        a |= fr - k->lo;
        if (out) {
            uint64_t hw = k->tmpl | ((fr << 12) & fm);
            memcpy(out + i * 8u, &hw, 8);
        }
    }
    *diff = d;
    *acc = a;
}
#endif

static void softgpu_scan_fast(const struct softgpu_pte_class *k, const struct vidmm_pte *e, uint64_t n, uint8_t *out,
                         uint64_t *diff, uint64_t *acc)
{
#ifdef SOFTGPU_HAVE_AVX2_PATH
    if (__builtin_cpu_supports("avx2")) {
        softgpu_scan_avx2(k, e, n, out, diff, acc);
        return;
    }
#endif
    softgpu_scan(k, e, n, out, diff, acc);
}

#define SOFTGPU_SCAN_BLOCK 512u     /* entries a failed fast check re-does one by one */

/* Converts n entries into out (8 bytes each), or only checks them when
 * out is NULL.  0 when any entry cannot be converted; out may then hold
 * garbage, which is fine: nothing counts as written until the caller
 * advances dma_buffer.  Blocks of entries sharing the flags of the one
 * before (the normal case: vidmm maps an allocation with one protection)
 * are checked once per block; a block that mixes flags, or whose frame
 * bound is not conclusive, is re-done one entry at a time. */
static int softgpu_encode_entries(struct softgpu *sg, uint32_t level, int leaf64, const struct vidmm_pte *e,
                             uint64_t n, uint8_t *out)
{
    if (n <= 4) {
        /* A few single updates: no block machinery. */
        for (uint64_t j = 0; j < n; j++) {
            uint64_t hw;
            if (!softgpu_pte_encode(sg, level, leaf64, &e[j], &hw))
                return 0;
            if (out)
                memcpy(out + j * 8u, &hw, 8);
        }
        return 1;
    }
    for (uint64_t i = 0; i < n;) {
        uint64_t b = n - i < SOFTGPU_SCAN_BLOCK ? n - i : SOFTGPU_SCAN_BLOCK;
        const struct softgpu_pte_class *c = softgpu_class_of(sg, level, leaf64, e[i].flags);
        if (!c)
            return 0;
        struct softgpu_pte_class k = *c;   /* the per-entry fallback may replace the cached one */
        uint64_t diff, acc;
        softgpu_scan_fast(&k, e + i, b, out ? out + i * 8u : NULL, &diff, &acc);
        if (diff || (k.addr && (acc > k.span || (acc & k.align)))) {
            for (uint64_t j = i; j < i + b; j++) {
                uint64_t hw;
                if (!softgpu_pte_encode(sg, level, leaf64, &e[j], &hw))
                    return 0;
                if (out)
                    memcpy(out + j * 8u, &hw, 8);
            }
        }
        i += b;
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Build                                                               */
/* ------------------------------------------------------------------ */

#define SOFTGPU_UPT_KNOWN_FLAGS (VIDMM_UPDATE_PT_REPEAT | VIDMM_UPDATE_PT_INITIAL_UPDATE | \
                            VIDMM_UPDATE_PT_NOTIFY_EVICTION | VIDMM_UPDATE_PT_USE_64KB_PAGES)

vidmm_status softgpu_build_update_page_table(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct softgpu_mmu *m = &sg->mmu;
    const struct vidmm_paging_update_page_table *u = &args->u.update_page_table;
    if (!m->levels || u->page_table_level >= m->levels || (u->flags & ~SOFTGPU_UPT_KNOWN_FLAGS))
        return VIDMM_E_INVALID_ARG;
    int leaf64 = (u->flags & VIDMM_UPDATE_PT_USE_64KB_PAGES) != 0;
    int repeat = (u->flags & VIDMM_UPDATE_PT_REPEAT) != 0;
    uint32_t level = u->page_table_level;
    if (leaf64 && level != 0)
        return VIDMM_E_INVALID_ARG;
    uint32_t seg = u->page_table_address.segment_id;
    uint64_t table = u->page_table_address.segment_offset;
    if (!softgpu_table_seg(sg, seg, table, softgpu_tsize(m, level, leaf64)))
        return VIDMM_E_INVALID_ARG;
    uint64_t n = u->num_page_table_entries;
    if (!u->page_table_entries || n == 0 || (uint64_t)u->start_index + n > softgpu_entries(m, level, leaf64))
        return VIDMM_E_INVALID_ARG;
    /* A resizable root is as large as its entries: keep them in the segment. */
    if (table + ((uint64_t)u->start_index + n) * 8u > sg->seg[seg].size)
        return VIDMM_E_INVALID_ARG;
    uint32_t done = args->multipass_offset;
    if (done >= n)
        return VIDMM_E_INVALID_ARG;   /* a restart past the end of the request */

    /* How many entries this call encodes: all that fit in one command. */
    const uint32_t hdr = sizeof(struct softgpu_cmd_upt);
    uint64_t fit = args->dma_size >= hdr + 8u ? (args->dma_size - hdr) / 8u : 0;
    uint64_t k = repeat ? (fit ? n - done : 0) : (n - done < fit ? n - done : fit);

    uint8_t *out = args->dma_buffer;
    if (repeat) {
        uint64_t hw;
        if (!softgpu_pte_encode(sg, level, leaf64, &u->page_table_entries[0], &hw))
            return VIDMM_E_INVALID_ARG;
        if (k)
            memcpy(out + hdr, &hw, 8);
    } else {
        /* Convert straight into the buffer; nothing counts as written
         * until dma_buffer advances, so a bad entry leaves no trace.  On
         * the first call of a split request the entries of later calls are
         * checked too: no part of a bad request ever executes. */
        const struct vidmm_pte *e = u->page_table_entries + done;
        if (k == 1 && n - done == 1) {
            uint64_t hw;   /* a single update: the common random case */
            if (!softgpu_pte_encode(sg, level, leaf64, e, &hw))
                return VIDMM_E_INVALID_ARG;
            memcpy(out + hdr, &hw, 8);
        } else {
            if (k && !softgpu_encode_entries(sg, level, leaf64, e, k, out + hdr))
                return VIDMM_E_INVALID_ARG;
            if (done == 0 && k < n && !softgpu_encode_entries(sg, level, leaf64, e + k, n - k, NULL))
                return VIDMM_E_INVALID_ARG;
        }
    }
    if (k == 0) {
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;   /* not even one entry fits: nothing written */
    }
    /* The header as four 8-byte words (the layout of struct softgpu_cmd_upt):
     * assembling the struct field by field on the stack and copying it
     * out costs a store-forwarding stall per command, which a buffer of
     * single-entry updates pays 1600 times. */
    uint32_t size = (uint32_t)(hdr + (repeat ? 8u : k * 8u));
    uint64_t w0 = (uint64_t)VIDMM_PAGING_UPDATE_PAGE_TABLE | (uint64_t)(done == 0 ? SOFTGPU_CMDF_FIRST : 0) << 16 |
                  (uint64_t)size << 32;
    uint64_t w1 = (uint64_t)seg | (uint64_t)level << 32 |
                  (uint64_t)((repeat ? SOFTGPU_UPT_REPEAT : 0) | (leaf64 ? SOFTGPU_UPT_64K : 0)) << 48;
    uint64_t w3 = (uint64_t)(u->start_index + done) | k << 32;
    memcpy(out, &w0, 8);
    memcpy(out + 8, &w1, 8);
    memcpy(out + 16, &table, 8);
    memcpy(out + 24, &w3, 8);
    args->dma_buffer = out + size;
    args->dma_size -= size;
    if (done + k < n) {
        args->multipass_offset = (uint32_t)(done + k);
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    return VIDMM_OK;
}

vidmm_status softgpu_build_flush_tlb(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct softgpu_mmu *m = &sg->mmu;
    const struct vidmm_paging_flush_tlb *f = &args->u.flush_tlb;
    if (!m->levels)
        return VIDMM_E_INVALID_ARG;
    const struct vidmm_physical_address *r = &f->root_page_table_address;
    if (!softgpu_table_seg(sg, r->segment_id, r->segment_offset, m->table_size[m->levels - 1]))
        return VIDMM_E_INVALID_ARG;
    if (f->start_virtual_address > f->end_virtual_address)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_cmd_flush c;
    memset(&c, 0, sizeof c);
    c.hdr.opcode = VIDMM_PAGING_FLUSH_TLB;
    c.hdr.flags = SOFTGPU_CMDF_FIRST;
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

static int softgpu_is_mmu_cmd(uint16_t opcode)
{
    return opcode == VIDMM_PAGING_UPDATE_PAGE_TABLE || opcode == VIDMM_PAGING_FLUSH_TLB;
}

/* One command: its size, or 0 when malformed.  The header's size is
 * already known to fit and to be a multiple of 8.  The entries are not
 * checked: they are hardware entries, and the walker re-checks whatever
 * it reads. */
static uint32_t softgpu_mmu_validate_cmd(struct softgpu *sg, const uint8_t *p, const struct softgpu_cmd_hdr *h)
{
    const struct softgpu_mmu *m = &sg->mmu;
    if (h->opcode == VIDMM_PAGING_FLUSH_TLB) {
        struct softgpu_cmd_flush c;
        if (h->size != sizeof c)
            return 0;
        memcpy(&c, p, sizeof c);
        if (!softgpu_table_seg(sg, c.segment, c.root, m->table_size[m->levels - 1]) || c.start_va > c.end_va)
            return 0;
        return h->size;
    }
    struct softgpu_cmd_upt c;
    if (h->size < sizeof c + 8u)
        return 0;
    memcpy(&c, p, sizeof c);
    int leaf64 = (c.flags & SOFTGPU_UPT_64K) != 0;
    if (c.level >= m->levels || (c.flags & ~(SOFTGPU_UPT_REPEAT | SOFTGPU_UPT_64K)) || (leaf64 && c.level != 0) ||
        c.count == 0)
        return 0;
    if (h->size != sizeof c + ((c.flags & SOFTGPU_UPT_REPEAT) ? 8u : (uint64_t)c.count * 8u))
        return 0;
    if (!softgpu_table_seg(sg, c.segment, c.table, softgpu_tsize(m, c.level, leaf64)) ||
        (uint64_t)c.start + c.count > softgpu_entries(m, c.level, leaf64) ||
        c.table + ((uint64_t)c.start + c.count) * 8u > sg->seg[c.segment].size)
        return 0;
    return h->size;
}

uint32_t softgpu_mmu_validate_run(struct softgpu *sg, const uint8_t *p, uint32_t left)
{
    if (!sg->mmu.levels)
        return 0;
    uint32_t o = 0;
    while (left - o >= sizeof(struct softgpu_cmd_hdr)) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, p + o, sizeof h);
        if (!softgpu_is_mmu_cmd(h.opcode))
            break;
        if (h.size > left - o || (h.size & 7u))
            return 0;
        uint32_t n = softgpu_mmu_validate_cmd(sg, p + o, &h);
        if (!n)
            return 0;
        o += n;
    }
    return o;
}

uint32_t softgpu_mmu_exec_run(struct softgpu *sg, const uint8_t *p, uint32_t left)
{
    uint64_t ops[2] = { 0, 0 }, ptes = 0;   /* [0] update page table, [1] flush */
    uint32_t o = 0;
    while (left - o >= sizeof(struct softgpu_cmd_hdr)) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, p + o, sizeof h);
        if (!softgpu_is_mmu_cmd(h.opcode))
            break;
        int upt = h.opcode == VIDMM_PAGING_UPDATE_PAGE_TABLE;
        ops[!upt] += (h.flags & SOFTGPU_CMDF_FIRST) != 0;
        if (upt) {
            struct softgpu_cmd_upt c;
            memcpy(&c, p + o, sizeof c);
            uint8_t *dst = sg->seg[c.segment].mem + c.table + (uint64_t)c.start * 8u;
            const uint8_t *src = p + o + sizeof c;
            if (c.flags & SOFTGPU_UPT_REPEAT) {
                uint64_t e;
                memcpy(&e, src, 8);
                for (uint32_t i = 0; i < c.count; i++)
                    memcpy(dst + (uint64_t)i * 8u, &e, 8);
            } else if (c.count == 1) {
                memcpy(dst, src, 8);
            } else {
                memcpy(dst, src, (size_t)c.count * 8u);
            }
            ptes += c.count;
        }
        /* FLUSH_TLB: no TLB, the walker always reads the tables. */
        o += h.size;
    }
    sg->stats.ops[VIDMM_PAGING_UPDATE_PAGE_TABLE] += ops[0];
    sg->stats.ops[VIDMM_PAGING_FLUSH_TLB] += ops[1];
    sg->stats.ptes_written += ptes;
    sg->stats.bytes[VIDMM_PAGING_UPDATE_PAGE_TABLE] += ptes * 8u;
    return o;
}
