/*
 * placement_test.c - where allocations go and how they are laid out.
 *
 * The placement matrix of Microsoft's 'GPU segments' page as a table (AccessedPhysically x
 * Primary x memory segment / aperture / system memory) on softgpu's dgpu
 * preset: segment id, aperture mapping, layout (set of pages against
 * contiguous, proved on a fragmented segment), the physical (segment id,
 * offset) ranges, and scan-out mapping of system-memory primaries across
 * flips.  Then the preference order, fallback to the rest of the
 * supported set, top-down placement, and the AGP aperture of wddm1.
 */
#include "alloc_common.h"

#include <string.h>

#define SEG_VIS 1u
#define SEG_INVIS 2u
#define SEG_AP 3u
#define SYS 0u

static const uint64_t dgpu_small[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(4), AC_MIB(8), AC_MIB(64) };

static int open_dgpu(struct ac_fixture *f)
{
    return ac_open(f, "dgpu", dgpu_small, AC_MIB(128));
}

/* Ranges well formed: in the segment, page aligned, disjoint, adding up. */
static void check_ranges(struct ac_fixture *f, vidmm_handle h, uint32_t want_seg, uint32_t want_count)
{
    struct vidmm_allocation_state st = ac_state(f->a, h);
    struct vidmm_physical_range r[64];
    uint32_t n = 0;
    T_ST(vidmm_allocation_physical_ranges(f->a, h, r, 64, &n), VIDMM_OK);
    if (want_count)
        T_EQ(n, want_count);
    T_CHECK(n >= 1 && n <= 64);
    if (n > 64)
        n = 64;
    struct vidmm_segment_info si = ac_seg(f->a, want_seg);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        T_EQ(r[i].segment_id, want_seg);
        T_CHECK(r[i].size > 0);
        if (want_seg != SYS) {
            T_CHECK(r[i].offset + r[i].size <= si.size);
            T_EQ(r[i].offset % si.page_size, 0);
            T_EQ(r[i].size % si.page_size, 0);
        }
        for (uint32_t j = 0; j < i; j++)
            T_CHECK(r[j].offset + r[j].size <= r[i].offset || r[i].offset + r[i].size <= r[j].offset);
        total += r[i].size;
    }
    T_EQ_U64(total, st.size);
    /* capacity 0 only counts */
    uint32_t n2 = 0;
    T_ST(vidmm_allocation_physical_ranges(f->a, h, NULL, 0, &n2), VIDMM_OK);
    T_EQ(n2, n);
}

struct matrix_row {
    const char *name;
    int ap, primary, cpu;
    uint32_t target;       /* 1, 2: memory; 3: aperture; 0: created in 2, moved to system */
    int contiguous;        /* memory targets: expected layout */
};

static const struct matrix_row matrix[] = {
    { "AP0 P0 vis",        0, 0, 0, SEG_VIS,   0 },
    { "AP0 P0 invis",      0, 0, 0, SEG_INVIS, 0 },
    { "AP0 P0 cpu vis",    0, 0, 1, SEG_VIS,   1 }, /* a BAR mapping is linear (DECISIONS) */
    { "AP0 P0 cpu invis",  0, 0, 1, SEG_INVIS, 0 },
    { "AP1 P0 vis",        1, 0, 0, SEG_VIS,   1 },
    { "AP1 P0 invis",      1, 0, 0, SEG_INVIS, 1 },
    { "AP0 P1 vis",        0, 1, 0, SEG_VIS,   1 },
    { "AP0 P1 invis",      0, 1, 0, SEG_INVIS, 1 },
    { "AP1 P1 vis",        1, 1, 0, SEG_VIS,   1 },
    { "AP1 P1 invis",      1, 1, 0, SEG_INVIS, 1 },
    { "AP0 P0 aperture",   0, 0, 0, SEG_AP,    0 },
    { "AP1 P0 aperture",   1, 0, 0, SEG_AP,    0 },
    { "AP0 P1 aperture",   0, 1, 0, SEG_AP,    0 },
    { "AP1 P1 aperture",   1, 1, 0, SEG_AP,    0 },
    { "AP0 P0 system",     0, 0, 0, SYS,       0 },
    { "AP1 P0 system",     1, 0, 0, SYS,       0 },
    { "AP0 P1 system",     0, 1, 0, SYS,       0 },
    { "AP1 P1 system",     1, 1, 0, SYS,       0 },
};

static uint32_t row_flags(const struct matrix_row *r)
{
    return (r->ap ? VIDMM_ALLOC_ACCESSED_PHYSICALLY : 0) | (r->primary ? VIDMM_ALLOC_PRIMARY : 0) |
           (r->cpu ? VIDMM_ALLOC_CPU_VISIBLE : 0);
}

#define SZ AC_KIB(256)

static void matrix_memory(struct ac_fixture *f, const struct matrix_row *r)
{
    vidmm_handle keep[128];
    uint32_t nk = ac_fragment(f->a, r->target, AC_KIB(64), keep, 128);
    T_CHECK(nk >= 8);
    struct vidmm_segment_info before = ac_seg(f->a, r->target);
    T_CHECK(before.largest_free == AC_KIB(64)); /* only isolated 64 KiB holes */
    vidmm_handle h = 0;
    vidmm_status st = ac_create(f->a, VIDMM_SEGMENT_BIT(r->target), 0, row_flags(r), SZ, &h);
    if (r->contiguous) {
        /* Fragmented: a contiguous allocation cannot be placed although
         * enough pages are free, and nothing changes. */
        T_ST(st, VIDMM_E_NO_SEGMENT_SPACE);
        T_EQ(h, VIDMM_HANDLE_NULL);
        struct vidmm_segment_info after = ac_seg(f->a, r->target);
        T_CHECK(memcmp(&before, &after, sizeof before) == 0);
        CHECK_ADAPTER(f->a);
        ac_destroy_all(f->a, keep, nk);
        nk = 0;
        st = ac_create(f->a, VIDMM_SEGMENT_BIT(r->target), 0, row_flags(r), SZ, &h);
        T_ST(st, VIDMM_OK);
        struct vidmm_allocation_state s = ac_state(f->a, h);
        T_EQ(s.segment_id, r->target);
        T_EQ(s.layout, VIDMM_LAYOUT_CONTIGUOUS);
        T_EQ(s.extent_count, 1);
        T_EQ(s.aperture_mapped, 0);
        check_ranges(f, h, r->target, 1);
    } else {
        T_ST(st, VIDMM_OK);
        struct vidmm_allocation_state s = ac_state(f->a, h);
        T_EQ(s.segment_id, r->target);
        T_EQ(s.layout, VIDMM_LAYOUT_PAGES);
        T_EQ(s.extent_count, SZ / AC_KIB(64)); /* one per hole */
        T_EQ(s.aperture_mapped, 0);
        check_ranges(f, h, r->target, (uint32_t)(SZ / AC_KIB(64)));
        /* Unfragmented, a page set still reports the page layout. */
        vidmm_handle h2 = 0;
        ac_destroy_all(f->a, keep, nk);
        nk = 0;
        T_ST(ac_create(f->a, VIDMM_SEGMENT_BIT(r->target), 0, row_flags(r), SZ, &h2), VIDMM_OK);
        T_EQ(ac_state(f->a, h2).layout, VIDMM_LAYOUT_PAGES);
        T_ST(vidmm_allocation_destroy(f->a, h2), VIDMM_OK);
    }
    CHECK_ADAPTER(f->a);
    if (h) {
        if (r->primary) {
            T_ST(vidmm_adapter_flip(f->a, 0, h), VIDMM_OK);
            struct vidmm_allocation_state s = ac_state(f->a, h);
            T_EQ(s.displayed, 1);
            T_EQ(s.segment_id, r->target);   /* scanned out where it is */
            T_EQ(s.aperture_mapped, 0);
            CHECK_ADAPTER(f->a);
            T_ST(vidmm_adapter_flip(f->a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
            T_EQ(ac_state(f->a, h).displayed, 0);
        } else {
            T_ST(vidmm_adapter_flip(f->a, 0, h), VIDMM_E_NOT_SUPPORTED);
        }
        T_ST(vidmm_allocation_destroy(f->a, h), VIDMM_OK);
    }
    ac_destroy_all(f->a, keep, nk);
}

/* A system-memory primary: mapped into the aperture only while shown. */
static void primary_scanout(struct ac_fixture *f, const struct matrix_row *r, vidmm_handle h)
{
    uint32_t ap = f->ai.aperture_segment_id;
    struct vidmm_allocation_state s = ac_state(f->a, h);
    int resident_mapped = r->ap;   /* AccessedPhysically: in the aperture while resident */
    T_EQ(s.aperture_mapped, resident_mapped);
    T_ST(vidmm_adapter_flip(f->a, 0, h), VIDMM_OK);
    s = ac_state(f->a, h);
    T_EQ(s.displayed, 1);
    T_EQ(s.aperture_mapped, 1);
    check_ranges(f, h, ap, 1);
    unsigned char b[64];
    T_ST(softgpu_read_physical(f->sg, ap, s.aperture_offset, b, sizeof b), VIDMM_OK);
    CHECK_ADAPTER(f->a);
    T_EQ(softgpu_check(f->sg), 0);

    /* Another primary flipped on the same source replaces it. */
    vidmm_handle h2 = 0;
    T_ST(ac_create(f->a, VIDMM_SEGMENT_BIT(SEG_AP), 0, VIDMM_ALLOC_PRIMARY, SZ, &h2), VIDMM_OK);
    T_EQ(ac_state(f->a, h2).aperture_mapped, 0);
    T_ST(vidmm_adapter_flip(f->a, 0, h2), VIDMM_OK);
    s = ac_state(f->a, h);
    T_EQ(s.displayed, 0);
    T_EQ(s.aperture_mapped, resident_mapped);
    T_EQ(ac_state(f->a, h2).aperture_mapped, 1);
    T_EQ(ac_state(f->a, h2).displayed, 1);
    CHECK_ADAPTER(f->a);
    /* Blanking the source unmaps it. */
    T_ST(vidmm_adapter_flip(f->a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_EQ(ac_state(f->a, h2).aperture_mapped, 0);
    T_EQ(ac_state(f->a, h2).displayed, 0);
    T_ST(vidmm_adapter_flip(f->a, 0, VIDMM_HANDLE_NULL), VIDMM_OK); /* already blank */
    CHECK_ADAPTER(f->a);

    /* Shown on two sources: mapped until the last one lets go. */
    T_ST(vidmm_adapter_flip(f->a, 0, h), VIDMM_OK);
    T_ST(vidmm_adapter_flip(f->a, 1, h), VIDMM_OK);
    T_ST(vidmm_adapter_flip(f->a, 1, h), VIDMM_OK); /* same again: nothing */
    T_ST(vidmm_adapter_flip(f->a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_EQ(ac_state(f->a, h).aperture_mapped, 1);
    T_EQ(ac_state(f->a, h).displayed, 1);
    CHECK_ADAPTER(f->a);
    T_ST(vidmm_adapter_flip(f->a, 1, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_EQ(ac_state(f->a, h).aperture_mapped, resident_mapped);
    T_EQ(ac_state(f->a, h).displayed, 0);
    CHECK_ADAPTER(f->a);
    T_ST(vidmm_allocation_destroy(f->a, h2), VIDMM_OK);

    /* Destroying a displayed primary blanks its source. */
    T_ST(vidmm_adapter_flip(f->a, 3, h), VIDMM_OK);
    struct vidmm_segment_info aps = ac_seg(f->a, ap);
    T_CHECK(aps.allocations >= 1);
}

static void matrix_aperture(struct ac_fixture *f, const struct matrix_row *r)
{
    uint32_t ap = f->ai.aperture_segment_id;
    T_EQ(ap, SEG_AP);
    vidmm_handle h = 0;
    struct vidmm_segment_info ap_before = ac_seg(f->a, ap), sys_before = ac_seg(f->a, SYS);
    if (r->target == SEG_AP) {
        T_ST(ac_create(f->a, VIDMM_SEGMENT_BIT(SEG_AP), 0, row_flags(r), SZ, &h), VIDMM_OK);
    } else {
        T_ST(ac_create(f->a, VIDMM_SEGMENT_BIT(SEG_INVIS) | VIDMM_SEGMENT_BIT(SEG_AP), 0, row_flags(r), SZ, &h),
             VIDMM_OK);
        T_EQ(ac_state(f->a, h).segment_id, SEG_INVIS);
        T_ST(vidmm_allocation_move(f->a, h, SYS), VIDMM_OK);
        T_EQ(ac_state(f->a, h).moves, 1);
    }
    struct vidmm_allocation_state s = ac_state(f->a, h);
    int mapped = r->ap;   /* AccessedPhysically in system memory lives in the aperture */
    T_EQ(s.segment_id, mapped ? SEG_AP : SYS);
    T_EQ(s.aperture_mapped, mapped);
    T_EQ(s.displayed, 0);
    T_EQ_U64(ac_seg(f->a, SYS).committed, sys_before.committed + SZ);
    T_EQ_U64(ac_seg(f->a, ap).committed, ap_before.committed + (mapped ? SZ : 0));
    check_ranges(f, h, mapped ? SEG_AP : SYS, 1);
    struct vidmm_physical_range pr;
    uint32_t n = 0;
    T_ST(vidmm_allocation_physical_ranges(f->a, h, &pr, 1, &n), VIDMM_OK);
    if (mapped) {
        T_EQ_U64(pr.offset, s.aperture_offset);
        unsigned char b[4096];
        T_ST(softgpu_read_physical(f->sg, ap, pr.offset, b, sizeof b), VIDMM_OK);
        T_ST(softgpu_read_physical(f->sg, ap, pr.offset + SZ - sizeof b, b, sizeof b), VIDMM_OK);
    } else {
        T_EQ_U64(pr.offset, 0);
    }
    CHECK_ADAPTER(f->a);
    if (r->primary)
        primary_scanout(f, r, h);
    else
        T_ST(vidmm_adapter_flip(f->a, 0, h), VIDMM_E_NOT_SUPPORTED);
    T_ST(vidmm_allocation_destroy(f->a, h), VIDMM_OK);
    CHECK_ADAPTER(f->a);
    T_EQ_U64(ac_seg(f->a, ap).committed, ap_before.committed);
    T_EQ_U64(ac_seg(f->a, SYS).committed, sys_before.committed);
    struct softgpu_stats ss;
    softgpu_get_stats(f->sg, &ss);
    T_EQ_U64(ss.aperture_pages_mapped * 4096, ap_before.committed); /* only the paging ring */
}

static void matrix_table(void)
{
    for (size_t i = 0; i < sizeof matrix / sizeof matrix[0]; i++) {
        const struct matrix_row *r = &matrix[i];
        int before = t_current_failures();
        struct ac_fixture f;
        if (open_dgpu(&f))
            return;
        if (r->target == SEG_VIS || r->target == SEG_INVIS)
            matrix_memory(&f, r);
        else
            matrix_aperture(&f, r);
        T_EQ(softgpu_check(f.sg), 0);
        ac_close(&f);
        if (t_current_failures() != before)
            fprintf(stderr, "  ^ in matrix row \"%s\"\n", r->name);
    }
}

/* ---- preference order and fallback --------------------------------- */

static uint32_t fill_segment(struct ac_fixture *f, uint32_t seg, uint64_t unit, vidmm_handle *h, uint32_t cap)
{
    uint32_t n = 0;
    vidmm_status st = VIDMM_OK;
    while (n < cap && (st = ac_create(f->a, VIDMM_SEGMENT_BIT(seg), 0, 0, unit, &h[n])) == VIDMM_OK)
        n++;
    T_CHECK(n < cap);
    /* An aperture's space is its commit: full reads COMMIT_LIMIT there. */
    if (ac_seg(f->a, seg).kind == VIDMM_SEGMENT_KIND_MEMORY) {
        T_ST(st, VIDMM_E_NO_SEGMENT_SPACE);
        /* What pinned objects (the paging process's page tables) leave
         * over, in pages: the segment is then full. */
        uint64_t page = ac_seg(f->a, seg).page_size;
        while (n < cap && ac_seg(f->a, seg).free_bytes >= page &&
               ac_create(f->a, VIDMM_SEGMENT_BIT(seg), 0, 0, page, &h[n]) == VIDMM_OK)
            n++;
        T_CHECK(n < cap);
        T_EQ_U64(ac_seg(f->a, seg).free_bytes, 0);
    } else {
        T_CHECK(st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT);
    }
    T_CHECK(ac_seg(f->a, seg).free_bytes < unit);
    return n;
}

static void preference_order(void)
{
    struct ac_fixture f;
    if (open_dgpu(&f))
        return;
    uint32_t all = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    struct { uint32_t pref, flags, want; } rows[] = {
        { VIDMM_PREF(0, 2, 0) | VIDMM_PREF(1, 1, 0), 0, 2 },
        { VIDMM_PREF(0, 1, 0) | VIDMM_PREF(1, 2, 0), 0, 1 },
        { VIDMM_PREF(0, 3, 0), 0, SYS },                   /* "aperture" = system pages, not mapped */
        { VIDMM_PREF(0, 3, 0), VIDMM_ALLOC_ACCESSED_PHYSICALLY, 3 },
        { 0, 0, 1 },                                        /* no preference: memory by id */
        { VIDMM_PREF(0, 2, 0) | VIDMM_PREF(1, 2, 1), 0, 2 }, /* a repeated slot is harmless */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vidmm_handle h;
        T_ST(ac_create(f.a, all, rows[i].pref, rows[i].flags, SZ, &h), VIDMM_OK);
        struct vidmm_allocation_state s = ac_state(f.a, h);
        if (s.segment_id != rows[i].want)
            fprintf(stderr, "  preference row %zu: segment %u, want %u\n", i, s.segment_id, rows[i].want);
        T_EQ(s.segment_id, rows[i].want);
        T_EQ_U64(s.preferred_segment, rows[i].pref);
        T_EQ(s.supported_segment_set, all);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    }
    /* Set {2,3} without preference: the memory segment before the aperture. */
    vidmm_handle h;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, &h),
         VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 2);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    CHECK_ADAPTER(f.a);
    ac_close(&f);
}

static void fallback_when_full(void)
{
    struct ac_fixture f;
    if (open_dgpu(&f))
        return;
    static vidmm_handle fill1[256], fill2[256];
    uint32_t all = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2) | VIDMM_SEGMENT_BIT(3);
    uint32_t pref = VIDMM_PREF(0, 2, 0) | VIDMM_PREF(1, 1, 0);
    /* Preferred segment 2 full: the next preference. */
    uint32_t n2 = fill_segment(&f, 2, AC_MIB(1), fill2, 256);
    vidmm_handle h[6];
    T_ST(ac_create(f.a, all, pref, 0, SZ, &h[0]), VIDMM_OK);
    T_EQ(ac_state(f.a, h[0]).segment_id, 1);
    /* Only slot 0 named: the rest of the set, memory first. */
    T_ST(ac_create(f.a, all, VIDMM_PREF(0, 2, 0), 0, SZ, &h[1]), VIDMM_OK);
    T_EQ(ac_state(f.a, h[1]).segment_id, 1);
    /* Both memory segments full: the aperture, last. */
    uint32_t n1 = fill_segment(&f, 1, AC_KIB(64), fill1, 256);
    T_ST(ac_create(f.a, all, pref, 0, SZ, &h[2]), VIDMM_OK);
    T_EQ(ac_state(f.a, h[2]).segment_id, SYS);
    T_EQ(ac_state(f.a, h[2]).aperture_mapped, 0);
    T_ST(ac_create(f.a, all, pref, VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, &h[3]), VIDMM_OK);
    T_EQ(ac_state(f.a, h[3]).segment_id, 3);
    T_EQ(ac_state(f.a, h[3]).aperture_mapped, 1);
    /* Nothing but full memory segments allowed: no segment space. */
    struct ac_snapshot snap;
    ac_snap(&f, &snap, h, 4);
    vidmm_handle hx = 123;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2), VIDMM_PREF(0, 2, 0), 0, SZ, &hx),
         VIDMM_E_NO_SEGMENT_SPACE);
    T_EQ(hx, VIDMM_HANDLE_NULL);
    T_CHECK(ac_snap_unchanged_slack(&f, &snap, "no space", 1));
    CHECK_ADAPTER(f.a);
    /* Space freed in the preferred segment is used again. */
    T_ST(vidmm_allocation_destroy(f.a, fill2[0]), VIDMM_OK);
    fill2[0] = 0;
    T_ST(ac_create(f.a, all, pref, 0, SZ, &h[4]), VIDMM_OK);
    T_EQ(ac_state(f.a, h[4]).segment_id, 2);
    CHECK_ADAPTER(f.a);
    ac_destroy_all(f.a, h, 5);
    ac_destroy_all(f.a, fill1, n1);
    ac_destroy_all(f.a, fill2, n2);
    ac_close(&f);
}

static void top_down(void)
{
    struct ac_fixture f;
    if (open_dgpu(&f))
        return;
    struct { uint32_t seg, pref, flags; int top; } rows[] = {
        { 1, 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
        { 1, 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_FROM_END_OF_SEGMENT, 1 },
        { 1, VIDMM_PREF(0, 1, 1), VIDMM_ALLOC_ACCESSED_PHYSICALLY, 1 },
        { 1, VIDMM_PREF(0, 1, 0), VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0 },
        { 2, 0, VIDMM_ALLOC_FROM_END_OF_SEGMENT, 1 },           /* page set, one piece */
        { 2, VIDMM_PREF(0, 2, 1), 0, 1 },
        { 2, 0, VIDMM_ALLOC_PRIMARY | VIDMM_ALLOC_FROM_END_OF_SEGMENT, 1 },
        { 2, 0, VIDMM_ALLOC_PRIMARY, 0 },
    };
    /* The lowest free byte of each memory segment: 0, except where the
     * paging process's page tables are pinned (dgpu: segment 2). */
    uint64_t low[3] = { 0, 0, 0 };
    for (uint32_t seg = 1; seg <= 2; seg++) {
        vidmm_handle p;
        struct vidmm_physical_range r;
        uint32_t n = 0;
        T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(seg), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, AC_KIB(64), &p), VIDMM_OK);
        T_ST(vidmm_allocation_physical_ranges(f.a, p, &r, 1, &n), VIDMM_OK);
        low[seg] = r.offset;
        T_ST(vidmm_allocation_destroy(f.a, p), VIDMM_OK);
    }
    T_EQ_U64(low[1], 0);
    struct vidmm_paging_process_info pp;
    T_ST(vidmm_adapter_query_paging_process(f.a, &pp), VIDMM_OK);
    T_EQ_U64(low[2], pp.page_table_bytes);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vidmm_handle h;
        T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(rows[i].seg), rows[i].pref, rows[i].flags, SZ, &h), VIDMM_OK);
        struct vidmm_physical_range r;
        uint32_t n = 0;
        T_ST(vidmm_allocation_physical_ranges(f.a, h, &r, 1, &n), VIDMM_OK);
        T_EQ(n, 1);
        uint64_t segsize = ac_seg(f.a, rows[i].seg).size;
        if (rows[i].top)
            T_EQ_U64(r.offset + r.size, segsize);
        else
            T_EQ_U64(r.offset, low[rows[i].seg]);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    }
    /* The aperture: an AccessedPhysically allocation from the top. */
    vidmm_handle h;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(3), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_FROM_END_OF_SEGMENT,
                   SZ, &h), VIDMM_OK);
    struct vidmm_allocation_state s = ac_state(f.a, h);
    T_EQ(s.aperture_mapped, 1);
    T_EQ_U64(s.aperture_offset + SZ, ac_seg(f.a, 3).size);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    /* A move honours the direction too. */
    T_ST(ac_create(f.a, 3, 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_FROM_END_OF_SEGMENT, SZ, &h), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 1);
    T_ST(vidmm_allocation_move(f.a, h, 2), VIDMM_OK);
    struct vidmm_physical_range r;
    uint32_t n;
    T_ST(vidmm_allocation_physical_ranges(f.a, h, &r, 1, &n), VIDMM_OK);
    T_EQ(r.segment_id, 2);
    T_EQ_U64(r.offset + SZ, ac_seg(f.a, 2).size);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    CHECK_ADAPTER(f.a);
    ac_close(&f);
}

/* ---- wddm1: AGP aperture, 4 KiB pages ------------------------------ */

static const uint64_t wddm1_small[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(4), AC_MIB(8), AC_MIB(8), AC_MIB(16) };

static void wddm1_agp(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "wddm1", wddm1_small, AC_MIB(128)))
        return;
    T_EQ(f.ai.agp_segment_id, 3);
    T_EQ(f.ai.aperture_segment_id, 4);
    T_EQ(ac_seg(f.a, 3).kind, VIDMM_SEGMENT_KIND_AGP);
    /* AGP: always mapped, AccessedPhysically or not. */
    uint32_t flag_rows[] = { 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, VIDMM_ALLOC_CPU_VISIBLE };
    for (size_t i = 0; i < 3; i++) {
        vidmm_handle h;
        uint64_t free0 = ac_seg(f.a, 3).free_bytes;
        T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(3), 0, flag_rows[i], SZ, &h), VIDMM_OK);
        struct vidmm_allocation_state s = ac_state(f.a, h);
        T_EQ(s.segment_id, 3);
        T_EQ(s.aperture_mapped, 1);
        T_EQ_U64(ac_seg(f.a, 3).free_bytes, free0 - SZ);
        check_ranges(&f, h, 3, 1);
        unsigned char b[4096];
        T_ST(softgpu_read_physical(f.sg, 3, s.aperture_offset, b, sizeof b), VIDMM_OK);
        /* To system memory: unmapped; back: mapped again.  System
         * memory is the AGP mapping for an AccessedPhysically
         * allocation: a move to 0 leaves it where it is. */
        int ap = (flag_rows[i] & VIDMM_ALLOC_ACCESSED_PHYSICALLY) != 0;
        T_ST(vidmm_allocation_move(f.a, h, SYS), VIDMM_OK);
        s = ac_state(f.a, h);
        T_EQ(s.segment_id, ap ? 3u : SYS);
        T_EQ(s.aperture_mapped, ap);
        T_EQ_U64(ac_seg(f.a, 3).free_bytes, ap ? free0 - SZ : free0);
        CHECK_ADAPTER(f.a);
        T_ST(vidmm_allocation_move(f.a, h, 3), VIDMM_OK);
        T_EQ(ac_state(f.a, h).aperture_mapped, 1);
        T_EQ(ac_state(f.a, h).segment_id, 3);
        CHECK_ADAPTER(f.a);
        T_EQ(softgpu_check(f.sg), 0);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    }
    /* AGP <-> aperture for an AccessedPhysically allocation. */
    vidmm_handle h;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(3) | VIDMM_SEGMENT_BIT(4), VIDMM_PREF(0, 4, 0),
                   VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, &h), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 4);
    T_ST(vidmm_allocation_move(f.a, h, 3), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 3);
    T_EQ(ac_state(f.a, h).aperture_mapped, 1);
    T_ST(vidmm_allocation_move(f.a, h, 4), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 4);
    CHECK_ADAPTER(f.a);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    /* 4 KiB pages: 4 KiB alignment and size are fine here. */
    struct softgpu_alloc_desc d;
    ac_explicit_desc(&d, VIDMM_SEGMENT_BIT(1), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, 4096, 4096);
    T_ST(vidmm_allocation_create(f.a, &d, sizeof d, &h), VIDMM_OK);
    T_EQ_U64(ac_state(f.a, h).size, 4096);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    ac_explicit_desc(&d, VIDMM_SEGMENT_BIT(2), 0, 0, 5000, 0);
    T_ST(vidmm_allocation_create(f.a, &d, sizeof d, &h), VIDMM_OK);
    T_EQ_U64(ac_state(f.a, h).size, 8192);
    T_EQ_U64(ac_state(f.a, h).requested_size, 5000);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    /* Page sets of 4 KiB pages on a fragmented segment. */
    vidmm_handle keep[1024];
    uint32_t nk = ac_fragment(f.a, 2, 4096, keep, 1024);
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(2), 0, 0, AC_KIB(64), &h), VIDMM_OK);
    T_EQ(ac_state(f.a, h).extent_count, 16);
    check_ranges(&f, h, 2, 16);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    ac_destroy_all(f.a, keep, nk);
    CHECK_ADAPTER(f.a);
    ac_close(&f);
}

/* A failed move between the AGP aperture and the aperture must leave the
 * allocation mapped where it was. */
static void wddm1_failed_move_keeps_mapping(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "wddm1", wddm1_small, AC_MIB(128)))
        return;
    vidmm_handle h;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(3) | VIDMM_SEGMENT_BIT(4), VIDMM_PREF(0, 4, 0),
                   VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, &h), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 4);
    static vidmm_handle fill[64];
    uint32_t n = fill_segment(&f, 3, AC_MIB(1), fill, 64); /* AGP full */
    struct ac_snapshot snap;
    ac_snap(&f, &snap, &h, 1);
    vidmm_status st = vidmm_allocation_move(f.a, h, 3);
    T_CHECK(st == VIDMM_E_NO_SEGMENT_SPACE || st == VIDMM_E_COMMIT_LIMIT);
    T_CHECK(ac_snap_unchanged(&f, &snap, "failed move 4 -> 3"));
    T_EQ(ac_state(f.a, h).aperture_mapped, 1);
    CHECK_ADAPTER(f.a);
    T_EQ(softgpu_check(f.sg), 0);
    ac_destroy_all(f.a, fill, n);
    ac_close(&f);
}

/* An AccessedPhysically allocation that supports neither the aperture
 * nor an AGP segment cannot live in system memory: a move to 0 answers
 * VIDMM_E_BAD_SEGMENT_SET and changes nothing.  One that supports the
 * aperture goes there, mapped (D43). */
static void accessed_physically_to_system(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", NULL, AC_MIB(128)))
        return;
    vidmm_handle h, g;
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(SEG_VIS), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, &h), VIDMM_OK);
    T_ST(ac_create(f.a, VIDMM_SEGMENT_BIT(SEG_VIS) | VIDMM_SEGMENT_BIT(SEG_AP), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY,
                   SZ, &g), VIDMM_OK);
    struct ac_snapshot snap;
    ac_snap(&f, &snap, &h, 1);
    T_ST(vidmm_allocation_move(f.a, h, SYS), VIDMM_E_BAD_SEGMENT_SET);
    T_CHECK(ac_snap_unchanged(&f, &snap, "refused move to system memory"));
    T_EQ(ac_state(f.a, h).segment_id, SEG_VIS);
    T_ST(vidmm_allocation_move(f.a, g, SYS), VIDMM_OK);
    T_EQ(ac_state(f.a, g).segment_id, SEG_AP);
    T_EQ(ac_state(f.a, g).aperture_mapped, 1);
    T_ST(vidmm_allocation_move(f.a, g, SYS), VIDMM_OK);   /* already there */
    T_EQ(ac_state(f.a, g).moves, 1);
    CHECK_ADAPTER(f.a);
    T_EQ(softgpu_check(f.sg), 0);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, g), VIDMM_OK);
    ac_close(&f);
}

void suite_placement(void);
void suite_placement(void)
{
    t_run("placement.matrix", matrix_table);
    t_run("placement.preference_order", preference_order);
    t_run("placement.fallback_when_full", fallback_when_full);
    t_run("placement.top_down", top_down);
    t_run("placement.wddm1_agp", wddm1_agp);
    t_run("placement.wddm1_failed_move_keeps_mapping", wddm1_failed_move_keeps_mapping);
    t_run("placement.accessed_physically_to_system", accessed_physically_to_system);
}
