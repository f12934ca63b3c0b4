/*
 * allocation_test.c - the public allocation entries under bad input,
 * host-memory exhaustion and full segments.
 *
 *  - bad_input: a table of {name, call, expected status} over every
 *    public entry (create, destroy, query, physical_ranges, lock, unlock,
 *    move, flip, segment_query, query_info, adapter_open); every rejected
 *    call must return exactly the status, leave the state snapshot as it
 *    was and keep vidmm_adapter_check() at 0.
 *  - foreign handles, stale handles after slot reuse;
 *  - host_oom_*: fault_alloc.fail_at swept over create, move, lock,
 *    unlock, flip and adapter_open: every refused host allocation must
 *    surface as VIDMM_E_NO_HOST_MEMORY (never NO_SEGMENT_SPACE) and
 *    change nothing; nothing leaks after close;
 *  - exact capacity: a segment filled to the last page with page sets of
 *    mixed sizes, then one contiguous allocation of the whole segment.
 */
#include "alloc_common.h"

#include <stdlib.h>
#include <string.h>

#define SZ AC_KIB(256)
#define B(id) VIDMM_SEGMENT_BIT(id)
/* allocation.h: bits 0-23 slot, 24-39 generation, 40-55 adapter salt, 56-63 type. */
#define SLOT_MASK 0xFFFFFFull
#define SLOT_GEN_MASK 0xFFFFFFFFFFull
#define SLOT(h) ((uint32_t)((h) & SLOT_MASK))

static const uint64_t sizes_small[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(4), AC_MIB(32), AC_MIB(64) };

/* ---- the bad-input table ------------------------------------------- */

struct bi {
    struct ac_fixture f, g;        /* g: a second adapter (foreign handles) */
    vidmm_handle vis, invis, locked, prim, sysal, reused;
    vidmm_handle stale, stale_reused, wrong_type, far_slot, foreign, forged_salt;
    vidmm_handle out;
    void *ptr;
    struct vidmm_adapter *b_out;
    struct vidmm_physical_range r[4];
    uint32_t count;
    struct vidmm_allocation_state st;
    struct vidmm_segment_info si;
    struct vidmm_adapter_info ai;
    struct vidmm_driver_ops no_paging_ops;
    struct vidmm_host_allocator bad_ha;
};

static vidmm_status xcreate(struct bi *c, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size, uint64_t align)
{
    struct softgpu_alloc_desc d;
    ac_explicit_desc(&d, set, pref, flags, size, align);
    c->out = 0xDEADull;
    vidmm_status st = vidmm_allocation_create(c->f.a, &d, sizeof d, &c->out);
    if (st < 0)
        T_EQ(c->out, VIDMM_HANDLE_NULL);   /* a failed create hands out nothing */
    return st;
}

static vidmm_status open_with(struct bi *c, const struct vidmm_adapter_create_info *ci)
{
    c->b_out = (struct vidmm_adapter *)&c->bad_ha;
    vidmm_status st = vidmm_adapter_open(ci, &c->b_out);
    if (st < 0 && ci)
        T_CHECK(c->b_out == NULL);
    if (st >= 0)
        vidmm_adapter_close(c->b_out);
    return st;
}

static void base_ci(struct bi *c, struct vidmm_adapter_create_info *ci)
{
    memset(ci, 0, sizeof *ci);
    softgpu_fill_adapter_create_info(c->g.sg, ci);
    ci->host_allocator = &c->f.fa.ha;  /* leaks would show in the snapshot */
    ci->system_memory_limit = AC_MIB(64);
}

#define ROW(fn, expr) static vidmm_status fn(struct bi *c) { (void)c; return (expr); }
#define OPEN_ROW(fn, ...) static vidmm_status fn(struct bi *c) { struct vidmm_adapter_create_info ci; \
    base_ci(c, &ci); __VA_ARGS__; return open_with(c, &ci); }

static struct softgpu_alloc_desc g_desc_kind99 = { .kind = (enum softgpu_alloc_kind)99, .size = 4096 };

/* create */
ROW(create_null_adapter, vidmm_allocation_create(NULL, &g_desc_kind99, sizeof g_desc_kind99, &c->out))
ROW(create_null_out, vidmm_allocation_create(c->f.a, &g_desc_kind99, sizeof g_desc_kind99, NULL))
ROW(create_null_private, vidmm_allocation_create(c->f.a, NULL, 0, &c->out))
ROW(create_short_private, vidmm_allocation_create(c->f.a, &g_desc_kind99, 8, &c->out))
ROW(create_unknown_kind, vidmm_allocation_create(c->f.a, &g_desc_kind99, sizeof g_desc_kind99, &c->out))
ROW(create_size_zero, xcreate(c, B(1), 0, 0, 0, 0))
ROW(create_size_max, xcreate(c, B(1), 0, 0, UINT64_MAX, 0))
ROW(create_size_max_4k_pages, xcreate(c, B(3), 0, 0, (UINT64_MAX & ~4095ull) - 4096, 0))
ROW(create_size_round_overflow, xcreate(c, B(1), 0, 0, UINT64_MAX - 4095, 0))
ROW(create_align_3, xcreate(c, B(1), 0, 0, SZ, 3))
ROW(create_align_not_pow2, xcreate(c, B(3), 0, 0, SZ, 3 * 4096))
ROW(create_align_4k_on_64k_seg, xcreate(c, B(1), 0, 0, SZ, 4096))
ROW(create_align_4k_mixed_set, xcreate(c, B(1) | B(3), 0, 0, SZ, 4096))
ROW(create_align_huge, xcreate(c, B(1), 0, 0, SZ, 1ull << 40))
ROW(create_set_empty, xcreate(c, 0, 0, 0, SZ, 0))
ROW(create_set_no_such_segment, xcreate(c, B(4), 0, 0, SZ, 0))
ROW(create_set_bit31, xcreate(c, B(1) | 0x80000000u, 0, 0, SZ, 0))
ROW(create_pref_outside_set, xcreate(c, B(1), VIDMM_PREF(0, 2, 0), 0, SZ, 0))
ROW(create_pref_slot1_outside, xcreate(c, B(1) | B(2), VIDMM_PREF(0, 1, 0) | VIDMM_PREF(1, 3, 0), 0, SZ, 0))
ROW(create_pref_no_such_segment, xcreate(c, B(1), VIDMM_PREF(0, 9, 0), 0, SZ, 0))
ROW(create_pref_high_bits, xcreate(c, B(1), VIDMM_PREF(0, 1, 0) | 0x40000000u, 0, SZ, 0))
ROW(create_unknown_flag, xcreate(c, B(1), 0, 0x20000u, SZ, 0))
ROW(create_unknown_high_flag, xcreate(c, B(1), 0, 0x40000000u, SZ, 0))
ROW(create_ern_without_ap, xcreate(c, B(1), 0, VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION, SZ, 0))
ROW(create_permanent_sys_without_cpu, xcreate(c, B(3), 0, VIDMM_ALLOC_PERMANENT_SYS_MEM, SZ, 0))
ROW(create_cached_primary, xcreate(c, B(3), 0, VIDMM_ALLOC_PRIMARY | VIDMM_ALLOC_CACHED | VIDMM_ALLOC_CPU_VISIBLE, SZ, 0))
ROW(create_too_large_one_seg, xcreate(c, B(1), 0, 0, AC_MIB(4) + AC_KIB(64), 0))
ROW(create_too_large_two_segs, xcreate(c, B(1) | B(2), 0, 0, AC_MIB(33), 0))
ROW(create_too_large_aperture_ap, xcreate(c, B(3), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, AC_MIB(65), 0))
ROW(create_too_large_system, xcreate(c, B(3), 0, 0, AC_MIB(129), 0))
/* destroy */
ROW(destroy_null_adapter, vidmm_allocation_destroy(NULL, c->vis))
ROW(destroy_handle_0, vidmm_allocation_destroy(c->f.a, VIDMM_HANDLE_NULL))
ROW(destroy_stale, vidmm_allocation_destroy(c->f.a, c->stale))
ROW(destroy_stale_slot_reused, vidmm_allocation_destroy(c->f.a, c->stale_reused))
ROW(destroy_wrong_type, vidmm_allocation_destroy(c->f.a, c->wrong_type))
ROW(destroy_slot_out_of_range, vidmm_allocation_destroy(c->f.a, c->far_slot))
ROW(destroy_locked, vidmm_allocation_destroy(c->f.a, c->locked))
/* query */
ROW(query_null_adapter, vidmm_allocation_query(NULL, c->vis, &c->st))
ROW(query_null_out, vidmm_allocation_query(c->f.a, c->vis, NULL))
ROW(query_handle_0, vidmm_allocation_query(c->f.a, 0, &c->st))
ROW(query_stale, vidmm_allocation_query(c->f.a, c->stale, &c->st))
ROW(query_stale_slot_reused, vidmm_allocation_query(c->f.a, c->stale_reused, &c->st))
ROW(query_wrong_type, vidmm_allocation_query(c->f.a, c->wrong_type, &c->st))
ROW(query_all_ones, vidmm_allocation_query(c->f.a, UINT64_MAX, &c->st))
/* physical ranges */
ROW(ranges_null_adapter, vidmm_allocation_physical_ranges(NULL, c->vis, c->r, 4, &c->count))
ROW(ranges_null_count, vidmm_allocation_physical_ranges(c->f.a, c->vis, c->r, 4, NULL))
ROW(ranges_null_array, vidmm_allocation_physical_ranges(c->f.a, c->vis, NULL, 4, &c->count))
ROW(ranges_handle_0, vidmm_allocation_physical_ranges(c->f.a, 0, c->r, 4, &c->count))
ROW(ranges_stale, vidmm_allocation_physical_ranges(c->f.a, c->stale, c->r, 4, &c->count))
ROW(ranges_wrong_type, vidmm_allocation_physical_ranges(c->f.a, c->wrong_type, c->r, 4, &c->count))
/* lock / unlock */
ROW(lock_null_adapter, vidmm_allocation_lock(NULL, c->vis, &c->ptr))
ROW(lock_null_ptr, vidmm_allocation_lock(c->f.a, c->vis, NULL))
ROW(lock_handle_0, vidmm_allocation_lock(c->f.a, 0, &c->ptr))
ROW(lock_stale, vidmm_allocation_lock(c->f.a, c->stale, &c->ptr))
ROW(lock_stale_slot_reused, vidmm_allocation_lock(c->f.a, c->stale_reused, &c->ptr))
ROW(lock_wrong_type, vidmm_allocation_lock(c->f.a, c->wrong_type, &c->ptr))
ROW(lock_not_cpu_visible, vidmm_allocation_lock(c->f.a, c->invis, &c->ptr))
ROW(lock_not_cpu_visible_system, vidmm_allocation_lock(c->f.a, c->sysal, &c->ptr))
ROW(unlock_null_adapter, vidmm_allocation_unlock(NULL, c->locked))
ROW(unlock_handle_0, vidmm_allocation_unlock(c->f.a, 0))
ROW(unlock_stale, vidmm_allocation_unlock(c->f.a, c->stale))
ROW(unlock_wrong_type, vidmm_allocation_unlock(c->f.a, c->wrong_type))
ROW(unlock_not_locked, vidmm_allocation_unlock(c->f.a, c->vis))
ROW(unlock_not_lockable, vidmm_allocation_unlock(c->f.a, c->invis))
/* move */
ROW(move_null_adapter, vidmm_allocation_move(NULL, c->vis, 0))
ROW(move_handle_0, vidmm_allocation_move(c->f.a, 0, 0))
ROW(move_stale, vidmm_allocation_move(c->f.a, c->stale, 0))
ROW(move_stale_slot_reused, vidmm_allocation_move(c->f.a, c->stale_reused, 0))
ROW(move_wrong_type, vidmm_allocation_move(c->f.a, c->wrong_type, 0))
ROW(move_locked, vidmm_allocation_move(c->f.a, c->locked, 0))
ROW(move_displayed, vidmm_allocation_move(c->f.a, c->prim, 0))
ROW(move_displayed_to_other_memory, vidmm_allocation_move(c->f.a, c->prim, 2))
ROW(move_outside_set, vidmm_allocation_move(c->f.a, c->vis, 2))
ROW(move_outside_set_aperture, vidmm_allocation_move(c->f.a, c->vis, 3))
ROW(move_id_segment_count, vidmm_allocation_move(c->f.a, c->vis, 4))
ROW(move_id_31, vidmm_allocation_move(c->f.a, c->vis, 31))
ROW(move_id_max, vidmm_allocation_move(c->f.a, c->vis, UINT32_MAX))
/* move_discard: the same checks as move */
ROW(discard_null_adapter, vidmm_allocation_move_discard(NULL, c->vis, 0))
ROW(discard_handle_0, vidmm_allocation_move_discard(c->f.a, 0, 0))
ROW(discard_stale, vidmm_allocation_move_discard(c->f.a, c->stale, 0))
ROW(discard_wrong_type, vidmm_allocation_move_discard(c->f.a, c->wrong_type, 0))
ROW(discard_locked, vidmm_allocation_move_discard(c->f.a, c->locked, 0))
ROW(discard_displayed, vidmm_allocation_move_discard(c->f.a, c->prim, 0))
ROW(discard_outside_set, vidmm_allocation_move_discard(c->f.a, c->vis, 2))
ROW(discard_id_segment_count, vidmm_allocation_move_discard(c->f.a, c->vis, 4))
/* flip */
ROW(flip_null_adapter, vidmm_adapter_flip(NULL, 0, c->prim))
ROW(flip_source_8, vidmm_adapter_flip(c->f.a, 8, c->prim))
ROW(flip_source_max, vidmm_adapter_flip(c->f.a, UINT32_MAX, VIDMM_HANDLE_NULL))
ROW(flip_not_primary, vidmm_adapter_flip(c->f.a, 1, c->vis))
ROW(flip_not_primary_same_source, vidmm_adapter_flip(c->f.a, 0, c->vis))
ROW(flip_stale, vidmm_adapter_flip(c->f.a, 1, c->stale))
ROW(flip_wrong_type, vidmm_adapter_flip(c->f.a, 1, c->wrong_type))
/* segment_query / query_info */
ROW(segq_null_adapter, vidmm_segment_query(NULL, 0, &c->si))
ROW(segq_null_out, vidmm_segment_query(c->f.a, 0, NULL))
ROW(segq_id_count, vidmm_segment_query(c->f.a, 4, &c->si))
ROW(segq_id_max, vidmm_segment_query(c->f.a, UINT32_MAX, &c->si))
ROW(info_null_adapter, vidmm_adapter_query_info(NULL, &c->ai))
ROW(info_null_out, vidmm_adapter_query_info(c->f.a, NULL))
/* adapter_open */
ROW(open_null_info, vidmm_adapter_open(NULL, &c->b_out))
OPEN_ROW(open_null_out, return vidmm_adapter_open(&ci, NULL))
OPEN_ROW(open_null_ops, ci.ops = NULL)
OPEN_ROW(open_missing_paging_op, c->no_paging_ops = *ci.ops; c->no_paging_ops.build_paging_buffer = NULL;
         ci.ops = &c->no_paging_ops)
OPEN_ROW(open_agp_size_misaligned, ci.agp_aperture_base = 0xE0000000ull; ci.agp_aperture_size = 4097)
OPEN_ROW(open_agp_base_misaligned, ci.agp_aperture_base = 0xE0000001ull; ci.agp_aperture_size = 4096)
OPEN_ROW(open_host_allocator_without_alloc, c->bad_ha = c->f.fa.ha; c->bad_ha.alloc = NULL;
         ci.host_allocator = &c->bad_ha)
OPEN_ROW(open_host_allocator_without_free, c->bad_ha = c->f.fa.ha; c->bad_ha.free = NULL;
         ci.host_allocator = &c->bad_ha)
/* a handle of adapter B used on adapter A (same slot and generation as a live allocation of A) */
ROW(foreign_query, vidmm_allocation_query(c->f.a, c->foreign, &c->st))
ROW(foreign_ranges, vidmm_allocation_physical_ranges(c->f.a, c->foreign, c->r, 4, &c->count))
ROW(foreign_move, vidmm_allocation_move(c->f.a, c->foreign, 0))
ROW(foreign_destroy, vidmm_allocation_destroy(c->f.a, c->foreign))
ROW(forged_salt_query, vidmm_allocation_query(c->f.a, c->forged_salt, &c->st))
ROW(forged_salt_destroy, vidmm_allocation_destroy(c->f.a, c->forged_salt))

struct bi_row {
    const char *name;
    vidmm_status (*call)(struct bi *);
    vidmm_status want;
};
#define R(fn, want) { #fn, fn, want }

static const struct bi_row bi_rows[] = {
    R(create_null_adapter, VIDMM_E_INVALID_ARG),
    R(create_null_out, VIDMM_E_INVALID_ARG),
    R(create_null_private, VIDMM_E_INVALID_ARG),
    R(create_short_private, VIDMM_E_INVALID_ARG),
    R(create_unknown_kind, VIDMM_E_INVALID_ARG),
    R(create_size_zero, VIDMM_E_INVALID_ARG),
    R(create_size_max, VIDMM_E_OVERFLOW),
    R(create_size_max_4k_pages, VIDMM_E_TOO_LARGE),
    R(create_size_round_overflow, VIDMM_E_OVERFLOW),
    R(create_align_3, VIDMM_E_ALIGNMENT),
    R(create_align_not_pow2, VIDMM_E_ALIGNMENT),
    R(create_align_4k_on_64k_seg, VIDMM_E_ALIGNMENT),
    R(create_align_4k_mixed_set, VIDMM_E_ALIGNMENT),
    R(create_align_huge, VIDMM_E_ALIGNMENT),
    R(create_set_empty, VIDMM_E_BAD_SEGMENT_SET),
    R(create_set_no_such_segment, VIDMM_E_BAD_SEGMENT_SET),
    R(create_set_bit31, VIDMM_E_BAD_SEGMENT_SET),
    R(create_pref_outside_set, VIDMM_E_BAD_SEGMENT_SET),
    R(create_pref_slot1_outside, VIDMM_E_BAD_SEGMENT_SET),
    R(create_pref_no_such_segment, VIDMM_E_BAD_SEGMENT_SET),
    R(create_pref_high_bits, VIDMM_E_INVALID_ARG),
    R(create_unknown_flag, VIDMM_E_INVALID_ARG),
    R(create_unknown_high_flag, VIDMM_E_INVALID_ARG),
    R(create_ern_without_ap, VIDMM_E_INVALID_ARG),
    R(create_permanent_sys_without_cpu, VIDMM_E_INVALID_ARG),
    R(create_cached_primary, VIDMM_E_INVALID_ARG),
    R(create_too_large_one_seg, VIDMM_E_TOO_LARGE),
    R(create_too_large_two_segs, VIDMM_E_TOO_LARGE),
    R(create_too_large_aperture_ap, VIDMM_E_TOO_LARGE),
    R(create_too_large_system, VIDMM_E_TOO_LARGE),
    R(destroy_null_adapter, VIDMM_E_INVALID_ARG),
    R(destroy_handle_0, VIDMM_E_INVALID_HANDLE),
    R(destroy_stale, VIDMM_E_INVALID_HANDLE),
    R(destroy_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(destroy_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(destroy_slot_out_of_range, VIDMM_E_INVALID_HANDLE),
    R(destroy_locked, VIDMM_E_BUSY),
    R(query_null_adapter, VIDMM_E_INVALID_ARG),
    R(query_null_out, VIDMM_E_INVALID_ARG),
    R(query_handle_0, VIDMM_E_INVALID_HANDLE),
    R(query_stale, VIDMM_E_INVALID_HANDLE),
    R(query_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(query_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(query_all_ones, VIDMM_E_INVALID_HANDLE),
    R(ranges_null_adapter, VIDMM_E_INVALID_ARG),
    R(ranges_null_count, VIDMM_E_INVALID_ARG),
    R(ranges_null_array, VIDMM_E_INVALID_ARG),
    R(ranges_handle_0, VIDMM_E_INVALID_HANDLE),
    R(ranges_stale, VIDMM_E_INVALID_HANDLE),
    R(ranges_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(lock_null_adapter, VIDMM_E_INVALID_ARG),
    R(lock_null_ptr, VIDMM_E_INVALID_ARG),
    R(lock_handle_0, VIDMM_E_INVALID_HANDLE),
    R(lock_stale, VIDMM_E_INVALID_HANDLE),
    R(lock_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(lock_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(lock_not_cpu_visible, VIDMM_E_NOT_SUPPORTED),
    R(lock_not_cpu_visible_system, VIDMM_E_NOT_SUPPORTED),
    R(unlock_null_adapter, VIDMM_E_INVALID_ARG),
    R(unlock_handle_0, VIDMM_E_INVALID_HANDLE),
    R(unlock_stale, VIDMM_E_INVALID_HANDLE),
    R(unlock_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(unlock_not_locked, VIDMM_E_STATE),
    R(unlock_not_lockable, VIDMM_E_STATE),
    R(move_null_adapter, VIDMM_E_INVALID_ARG),
    R(move_handle_0, VIDMM_E_INVALID_HANDLE),
    R(move_stale, VIDMM_E_INVALID_HANDLE),
    R(move_stale_slot_reused, VIDMM_E_INVALID_HANDLE),
    R(move_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(move_locked, VIDMM_E_BUSY),
    R(move_displayed, VIDMM_E_BUSY),
    R(move_displayed_to_other_memory, VIDMM_E_BUSY),
    R(move_outside_set, VIDMM_E_BAD_SEGMENT_SET),
    R(move_outside_set_aperture, VIDMM_E_BAD_SEGMENT_SET),
    R(move_id_segment_count, VIDMM_E_INVALID_ARG),
    R(move_id_31, VIDMM_E_INVALID_ARG),
    R(move_id_max, VIDMM_E_INVALID_ARG),
    R(discard_null_adapter, VIDMM_E_INVALID_ARG),
    R(discard_handle_0, VIDMM_E_INVALID_HANDLE),
    R(discard_stale, VIDMM_E_INVALID_HANDLE),
    R(discard_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(discard_locked, VIDMM_E_BUSY),
    R(discard_displayed, VIDMM_E_BUSY),
    R(discard_outside_set, VIDMM_E_BAD_SEGMENT_SET),
    R(discard_id_segment_count, VIDMM_E_INVALID_ARG),
    R(flip_null_adapter, VIDMM_E_INVALID_ARG),
    R(flip_source_8, VIDMM_E_INVALID_ARG),
    R(flip_source_max, VIDMM_E_INVALID_ARG),
    R(flip_not_primary, VIDMM_E_NOT_SUPPORTED),
    R(flip_not_primary_same_source, VIDMM_E_NOT_SUPPORTED),
    R(flip_stale, VIDMM_E_INVALID_HANDLE),
    R(flip_wrong_type, VIDMM_E_INVALID_HANDLE),
    R(segq_null_adapter, VIDMM_E_INVALID_ARG),
    R(segq_null_out, VIDMM_E_INVALID_ARG),
    R(segq_id_count, VIDMM_E_INVALID_ARG),
    R(segq_id_max, VIDMM_E_INVALID_ARG),
    R(info_null_adapter, VIDMM_E_INVALID_ARG),
    R(info_null_out, VIDMM_E_INVALID_ARG),
    R(open_null_info, VIDMM_E_INVALID_ARG),
    R(open_null_out, VIDMM_E_INVALID_ARG),
    R(open_null_ops, VIDMM_E_INVALID_ARG),
    R(open_missing_paging_op, VIDMM_E_INVALID_ARG),
    R(open_agp_size_misaligned, VIDMM_E_INVALID_ARG),
    R(open_agp_base_misaligned, VIDMM_E_INVALID_ARG),
    R(open_host_allocator_without_alloc, VIDMM_E_INVALID_ARG),
    R(open_host_allocator_without_free, VIDMM_E_INVALID_ARG),
    /* Last: if the foreign handle is (wrongly) accepted these act on a
     * live allocation of adapter A. */
    R(foreign_query, VIDMM_E_INVALID_HANDLE),
    R(foreign_ranges, VIDMM_E_INVALID_HANDLE),
    R(foreign_move, VIDMM_E_INVALID_HANDLE),
    R(foreign_destroy, VIDMM_E_INVALID_HANDLE),
    R(forged_salt_query, VIDMM_E_INVALID_HANDLE),
    R(forged_salt_destroy, VIDMM_E_INVALID_HANDLE),
};

static int bi_setup(struct bi *c)
{
    memset(c, 0, sizeof *c);
    if (ac_open(&c->f, "dgpu", sizes_small, AC_MIB(128)))
        return -1;
    if (ac_open(&c->g, "dgpu", sizes_small, AC_MIB(128))) {
        ac_close(&c->f);
        return -1;
    }
    struct vidmm_adapter *a = c->f.a;
    /* vis is the first allocation of A: slot 0, generation 1. */
    T_ST(ac_create(a, B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, SZ, &c->vis), VIDMM_OK);
    T_ST(ac_create(a, B(2), 0, 0, SZ, &c->invis), VIDMM_OK);
    T_ST(ac_create(a, B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, SZ, &c->locked), VIDMM_OK);
    T_ST(vidmm_allocation_lock(a, c->locked, &c->ptr), VIDMM_OK);
    T_ST(ac_create(a, B(1) | B(2), 0, VIDMM_ALLOC_PRIMARY, SZ, &c->prim), VIDMM_OK);
    T_ST(vidmm_adapter_flip(a, 0, c->prim), VIDMM_OK);
    T_ST(ac_create(a, B(3), 0, 0, SZ, &c->sysal), VIDMM_OK);
    vidmm_handle x, y;
    T_ST(ac_create(a, B(1), 0, 0, SZ, &x), VIDMM_OK);
    T_ST(ac_create(a, B(1), 0, 0, SZ, &y), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(a, x), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(a, y), VIDMM_OK);
    T_ST(ac_create(a, B(3), 0, 0, SZ, &c->reused), VIDMM_OK);
    /* One of x, y got its slot reused; the other did not. */
    if (SLOT(c->reused) == SLOT(x)) {
        c->stale_reused = x;
        c->stale = y;
    } else {
        T_EQ(SLOT(c->reused), SLOT(y));
        c->stale_reused = y;
        c->stale = x;
    }
    T_CHECK(c->reused != c->stale_reused);
    c->wrong_type = (c->vis & ~(0xFFull << 56)) | (2ull << 56);
    c->far_slot = (c->vis & ~(uint64_t)SLOT_MASK) | 0x00FFFFFEu;
    c->forged_salt = c->vis ^ (1ull << 40);
    T_ST(ac_create(c->g.a, B(1), 0, 0, SZ, &c->foreign), VIDMM_OK);
    /* Same slot and generation as vis, other adapter. */
    T_EQ_U64(c->foreign & SLOT_GEN_MASK, c->vis & SLOT_GEN_MASK);
    CHECK_ADAPTER(a);
    return 0;
}

static void bad_input(void)
{
    struct bi *c = calloc(1, sizeof *c);
    if (!c || bi_setup(c)) {
        free(c);
        return;
    }
    vidmm_handle tracked[] = { c->vis, c->invis, c->locked, c->prim, c->sysal, c->reused };
    int rows_failed = 0;
    for (size_t i = 0; i < sizeof bi_rows / sizeof bi_rows[0]; i++) {
        const struct bi_row *r = &bi_rows[i];
        int before = t_current_failures();
        struct ac_snapshot snap;
        ac_snap(&c->f, &snap, tracked, sizeof tracked / sizeof tracked[0]);
        vidmm_status st = r->call(c);
        if (st != r->want) {
            char m[200];
            snprintf(m, sizeof m, "row %s: got %s, want %s", r->name, vidmm_status_str(st), vidmm_status_str(r->want));
            t_fail(__FILE__, __LINE__, m);
        }
        T_CHECK(ac_snap_unchanged(&c->f, &snap, r->name));
        CHECK_ADAPTER(c->f.a);
        T_EQ(softgpu_check(c->f.sg), 0);
        if (t_current_failures() != before) {
            rows_failed++;
            fprintf(stderr, "  ^ bad-input row %s\n", r->name);
        }
    }
    if (rows_failed)
        fprintf(stderr, "  %d of %zu bad-input rows failed\n", rows_failed, sizeof bi_rows / sizeof bi_rows[0]);
    /* The fixture is intact: the locked one unlocks, the displayed one blanks. */
    T_ST(vidmm_allocation_unlock(c->f.a, c->locked), VIDMM_OK);
    T_ST(vidmm_allocation_unlock(c->f.a, c->locked), VIDMM_E_STATE);
    T_ST(vidmm_adapter_flip(c->f.a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_ST(vidmm_allocation_move(c->f.a, c->prim, 0), VIDMM_OK);
    ac_close(&c->f);
    ac_close(&c->g);
    free(c);
}

/* Handles: generation in bits 32-55, reuse never revives an old handle. */
static void stale_handles(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    vidmm_handle first, h, prev;
    T_ST(ac_create(f.a, B(3), 0, 0, 4096, &first), VIDMM_OK);
    T_EQ(first >> 56, 1);
    T_CHECK(first != VIDMM_HANDLE_NULL);
    prev = first;
    T_ST(vidmm_allocation_destroy(f.a, first), VIDMM_OK);
    for (int i = 0; i < 200; i++) {
        T_ST(ac_create(f.a, B(3), 0, 0, 4096, &h), VIDMM_OK);
        T_EQ(SLOT(h), SLOT(first));                  /* the same slot again */
        T_EQ_U64(h >> 40, first >> 40);              /* same type and adapter salt */
        T_CHECK(h != prev && h != first);
        struct vidmm_allocation_state s;
        T_ST(vidmm_allocation_query(f.a, prev, &s), VIDMM_E_INVALID_HANDLE);
        T_ST(vidmm_allocation_query(f.a, first, &s), VIDMM_E_INVALID_HANDLE);
        T_ST(vidmm_allocation_destroy(f.a, prev), VIDMM_E_INVALID_HANDLE);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_E_INVALID_HANDLE);
        prev = h;
    }
    struct vidmm_adapter_info ai;
    T_ST(vidmm_adapter_query_info(f.a, &ai), VIDMM_OK);
    T_EQ(ai.live_allocations, 0);
    CHECK_ADAPTER(f.a);
    ac_close(&f);
}

/* A handle names an allocation of one adapter only (status.h: "stale,
 * foreign or wrong-type handle" -> VIDMM_E_INVALID_HANDLE). */
static void foreign_handle(void)
{
    struct ac_fixture fa, fb;
    if (ac_open(&fa, "dgpu", sizes_small, AC_MIB(128)))
        return;
    if (ac_open(&fb, "dgpu", sizes_small, AC_MIB(128))) {
        ac_close(&fa);
        return;
    }
    vidmm_handle ha, hb, hb2;
    T_ST(ac_create(fb.a, B(1), 0, 0, SZ, &hb), VIDMM_OK);
    T_ST(ac_create(fb.a, B(1), 0, 0, SZ, &hb2), VIDMM_OK);
    struct vidmm_allocation_state s;
    /* No allocation of A in that slot: rejected. */
    T_ST(vidmm_allocation_query(fa.a, hb, &s), VIDMM_E_INVALID_HANDLE);
    T_ST(ac_create(fa.a, B(2), 0, 0, SZ, &ha), VIDMM_OK);
    /* Now A has a live allocation in B's slot 0 with the same generation. */
    vidmm_status st = vidmm_allocation_query(fa.a, hb, &s);
    if (st == VIDMM_OK)
        fprintf(stderr, "  foreign handle 0x%llx of adapter B resolves on adapter A to A's allocation in segment %u\n",
                (unsigned long long)hb, s.segment_id);
    T_ST(st, VIDMM_E_INVALID_HANDLE);
    T_ST(vidmm_allocation_query(fa.a, hb2, &s), VIDMM_E_INVALID_HANDLE); /* slot 1 unused on A */
    CHECK_ADAPTER(fa.a);
    CHECK_ADAPTER(fb.a);
    ac_close(&fa);
    ac_close(&fb);
}

/* Lock of a displayed primary must not move it off the scan-out address
 * (a displayed primary is not moved: VIDMM_E_BUSY). */
static void lock_displayed_primary_not_moved(void)
{
    static const uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(32), AC_MIB(32), AC_MIB(64) };
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes, AC_MIB(128)))
        return;
    struct vidmm_segment_info s2 = ac_seg(f.a, 2);
    T_EQ(s2.host_aperture_pages, 256); /* 16 MiB window */
    vidmm_handle h;
    /* 20 MiB: larger than the CPU host aperture of segment 2. */
    T_ST(ac_create(f.a, B(1) | B(2), VIDMM_PREF(0, 2, 0), VIDMM_ALLOC_PRIMARY | VIDMM_ALLOC_CPU_VISIBLE, AC_MIB(20), &h),
         VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 2);
    T_ST(vidmm_adapter_flip(f.a, 0, h), VIDMM_OK);
    T_ST(vidmm_allocation_move(f.a, h, 1), VIDMM_E_BUSY);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(f.a, h, &p);
    struct vidmm_allocation_state s = ac_state(f.a, h);
    if (s.segment_id != 2)
        fprintf(stderr, "  lock (%s) moved the displayed primary from segment 2 to %u (moves %llu)\n",
                vidmm_status_str(st), s.segment_id, (unsigned long long)s.moves);
    T_CHECK(st == VIDMM_E_BUSY || st == VIDMM_OK);
    T_EQ(s.segment_id, 2);
    T_EQ(s.moves, 0);
    T_EQ(s.displayed, 1);
    if (st == VIDMM_OK)
        T_ST(vidmm_allocation_unlock(f.a, h), VIDMM_OK);
    CHECK_ADAPTER(f.a);
    /* Not displayed any more: now lock may move it to reach it. */
    T_ST(vidmm_adapter_flip(f.a, 0, VIDMM_HANDLE_NULL), VIDMM_OK);
    T_ST(vidmm_allocation_lock(f.a, h, &p), VIDMM_OK);
    T_EQ(ac_state(f.a, h).segment_id, 1);
    T_ST(vidmm_allocation_unlock(f.a, h), VIDMM_OK);
    ac_close(&f);
}

/* ---- host memory exhaustion ----------------------------------------- */

typedef vidmm_status (*sweep_op)(struct ac_fixture *f, void *ctx);

/* Fails host allocation 1, 2, 3, ... of op until it succeeds.  Returns
 * the number of failing runs. */
static int sweep(struct ac_fixture *f, const char *name, sweep_op op, void *ctx, const vidmm_handle *track,
                 uint32_t nt, int64_t slack)
{
    int failing = 0;
    for (uint64_t k = 1; k < 10000; k++) {
        struct ac_snapshot snap;
        ac_snap(f, &snap, track, nt);
        uint64_t failures = f->fa.failures;
        f->fa.fail_at = f->fa.calls + k;
        vidmm_status st = op(f, ctx);
        f->fa.fail_at = 0;
        int injected = f->fa.failures != failures;
        if (st >= 0) {
            if (injected)
                fprintf(stderr, "  note: %s succeeded despite refused host allocation %llu\n", name,
                        (unsigned long long)k);
            break;
        }
        failing++;
        if (st != VIDMM_E_NO_HOST_MEMORY || !injected) {
            char m[200];
            snprintf(m, sizeof m, "%s with host allocation %llu refused: %s (injected %d), want VIDMM_E_NO_HOST_MEMORY",
                     name, (unsigned long long)k, vidmm_status_str(st), injected);
            t_fail(__FILE__, __LINE__, m);
        }
        char what[96];
        snprintf(what, sizeof what, "%s fail_at %llu", name, (unsigned long long)k);
        T_CHECK(ac_snap_unchanged_slack(f, &snap, what, slack));
        CHECK_ADAPTER(f->a);
        T_EQ(softgpu_check(f->sg), 0);
        if (t_current_failures() > 20)
            break;
    }
    CHECK_ADAPTER(f->a);
    return failing;
}

struct cr { uint32_t set, pref, flags; uint64_t size; vidmm_handle h; };

static vidmm_status op_create(struct ac_fixture *f, void *ctx)
{
    struct cr *c = ctx;
    return ac_create(f->a, c->set, c->pref, c->flags, c->size, &c->h);
}

struct mv { vidmm_handle h; uint32_t to; };

static vidmm_status op_move(struct ac_fixture *f, void *ctx)
{
    struct mv *m = ctx;
    return vidmm_allocation_move(f->a, m->h, m->to);
}

static vidmm_status op_lock(struct ac_fixture *f, void *ctx)
{
    void *p;
    return vidmm_allocation_lock(f->a, *(vidmm_handle *)ctx, &p);
}

static vidmm_status op_flip(struct ac_fixture *f, void *ctx)
{
    return vidmm_adapter_flip(f->a, 0, *(vidmm_handle *)ctx);
}

static void oom_create(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    static vidmm_handle keep[512];
    uint32_t nk = ac_fragment(f.a, 2, AC_KIB(64), keep, 512);
    struct cr rows[] = {
        { B(2), 0, 0, AC_KIB(640), 0 },                                  /* page set, 10 extents */
        { B(1), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, 0 },             /* contiguous */
        { B(1), 0, VIDMM_ALLOC_CPU_VISIBLE, SZ, 0 },
        { B(3), 0, 0, SZ, 0 },                                           /* system pages */
        { B(3), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, SZ, 0 },             /* aperture-mapped */
        { B(3), 0, VIDMM_ALLOC_PRIMARY, SZ, 0 },
    };
    int total = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "create row %zu", i);
        int n = sweep(&f, name, op_create, &rows[i], keep, 8, 1);
        T_CHECK(n >= 1 || i == 1 || i == 2); /* system pages and extent arrays come from the host */
        total += n;
        struct vidmm_allocation_state s = ac_state(f.a, rows[i].h);
        if (i == 0)
            T_EQ(s.extent_count, 10);
        T_ST(vidmm_allocation_destroy(f.a, rows[i].h), VIDMM_OK);
    }
    /* The 65th allocation grows the handle table. */
    static vidmm_handle many[80];
    for (int i = 0; i < 80; i++)
        many[i] = 0;
    struct cr small = { B(3), 0, 0, 4096, 0 };
    for (int i = 0; i < 80; i++) {
        char name[64];
        snprintf(name, sizeof name, "create #%d", i);
        total += sweep(&f, name, op_create, &small, NULL, 0, 1);
        many[i] = small.h;
    }
    ac_destroy_all(f.a, many, 80);
    ac_destroy_all(f.a, keep, nk);
    T_CHECK(total > 0);
    ac_close(&f);
}

static void oom_vs_no_space(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    static vidmm_handle h[128];
    uint32_t n = 0;
    vidmm_status st = VIDMM_OK;
    uint64_t unit = AC_KIB(192);
    while (n < 128 && (st = ac_create(f.a, B(1), 0, 0, unit, &h[n])) == VIDMM_OK)
        n++;
    T_ST(st, VIDMM_E_NO_SEGMENT_SPACE);
    struct vidmm_segment_info s = ac_seg(f.a, 1);
    T_CHECK(s.free_bytes < unit);
    T_EQ_U64(s.committed, (uint64_t)n * unit);
    /* Full segment with host allocations refused: either status may come
     * (whichever is hit first), never a changed state. */
    for (uint64_t k = 1; k < 50; k++) {
        struct ac_snapshot snap;
        ac_snap(&f, &snap, h, 8);
        f.fa.fail_at = f.fa.calls + k;
        vidmm_handle x;
        st = ac_create(f.a, B(1), 0, 0, unit, &x);
        int injected = f.fa.fail_at <= f.fa.calls;
        f.fa.fail_at = 0;
        T_CHECK(st == VIDMM_E_NO_SEGMENT_SPACE || (st == VIDMM_E_NO_HOST_MEMORY && injected));
        T_CHECK(ac_snap_unchanged_slack(&f, &snap, "full", 1));
        if (!injected)
            break;
    }
    CHECK_ADAPTER(f.a);
    ac_destroy_all(f.a, h, n);
    ac_close(&f);
}

static void oom_move(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    static vidmm_handle keep[512];
    uint32_t nk = ac_fragment(f.a, 2, AC_KIB(64), keep, 512);
    uint32_t all = B(1) | B(2) | B(3);
    struct { const char *name; uint32_t flags, from, to; } rows[] = {
        { "memory -> memory (page set)", 0, 1, 2 },
        { "memory -> system", 0, 1, 0 },
        { "system -> memory", 0, 0, 2 },
        { "system -> memory (contiguous)", VIDMM_ALLOC_ACCESSED_PHYSICALLY, 0, 1 },
        { "memory -> aperture", VIDMM_ALLOC_ACCESSED_PHYSICALLY, 1, 3 },
        { "aperture -> memory", VIDMM_ALLOC_ACCESSED_PHYSICALLY, 3, 1 },
        /* AccessedPhysically in system memory is the aperture mapping. */
        { "memory -> system (the aperture)", VIDMM_ALLOC_ACCESSED_PHYSICALLY, 1, 0 },
        { "system -> aperture (plain pages)", 0, 0, 3 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vidmm_handle h;
        T_ST(ac_create(f.a, all, VIDMM_PREF(0, 1, 0), rows[i].flags | VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(640), &h),
             VIDMM_OK);
        T_ST(ac_write(f.a, h, AC_KIB(640), 77 + i), VIDMM_OK);
        T_ST(vidmm_allocation_move(f.a, h, rows[i].from), VIDMM_OK);
        vidmm_handle track[9];
        memcpy(track, keep, 8 * sizeof *track);
        track[8] = h;
        struct mv m = { h, rows[i].to };
        sweep(&f, rows[i].name, op_move, &m, track, 9, 0);
        struct vidmm_allocation_state s = ac_state(f.a, h);
        int ap = (rows[i].flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) != 0;
        T_EQ(s.segment_id, rows[i].to == 0 && ap ? 3u : rows[i].to == 3 && !ap ? 0u : rows[i].to);
        T_ST(ac_verify(f.a, h, AC_KIB(640), 77 + i), VIDMM_OK);
        T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    }
    ac_destroy_all(f.a, keep, nk);
    ac_close(&f);
}

static void oom_lock_flip(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    static vidmm_handle keep[512];
    uint32_t nk = ac_fragment(f.a, 2, AC_KIB(64), keep, 512);
    /* Host-aperture lock of a 5-extent page set in invisible memory. */
    vidmm_handle h;
    T_ST(ac_create(f.a, B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(320), &h), VIDMM_OK);
    T_EQ(ac_state(f.a, h).extent_count, 5);
    int n = sweep(&f, "lock (host aperture)", op_lock, &h, &h, 1, 0);
    T_CHECK(n >= 2);
    T_EQ(ac_state(f.a, h).lock_count, 1);
    T_EQ(ac_seg(f.a, 2).host_aperture_free, ac_seg(f.a, 2).host_aperture_pages - 5);
    void *p;
    T_ST(vidmm_allocation_lock(f.a, h, &p), VIDMM_OK); /* nested: no host memory needed */
    T_ST(vidmm_allocation_unlock(f.a, h), VIDMM_OK);
    T_ST(vidmm_allocation_unlock(f.a, h), VIDMM_OK);
    CHECK_ADAPTER(f.a);
    /* System-memory primary: the flip maps it into the aperture. */
    vidmm_handle pr;
    T_ST(ac_create(f.a, B(3), 0, VIDMM_ALLOC_PRIMARY, SZ, &pr), VIDMM_OK);
    sweep(&f, "flip (system primary)", op_flip, &pr, &pr, 1, 0);
    T_EQ(ac_state(f.a, pr).aperture_mapped, 1);
    T_EQ(ac_state(f.a, pr).displayed, 1);
    vidmm_handle blank = VIDMM_HANDLE_NULL;
    sweep(&f, "flip (blank)", op_flip, &blank, &pr, 1, 0);
    T_EQ(ac_state(f.a, pr).aperture_mapped, 0);
    T_ST(vidmm_allocation_destroy(f.a, pr), VIDMM_OK);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    ac_destroy_all(f.a, keep, nk);
    ac_close(&f);
}

/* Unlock cannot fail; a refused host allocation inside it must still
 * take the CPU host aperture window down in the driver. */
static void oom_unlock_host_aperture(void)
{
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes_small, AC_MIB(128)))
        return;
    vidmm_handle h;
    T_ST(ac_create(f.a, B(2), 0, VIDMM_ALLOC_CPU_VISIBLE, AC_KIB(320), &h), VIDMM_OK);
    for (uint64_t k = 1; k < 20; k++) {
        void *p;
        T_ST(vidmm_allocation_lock(f.a, h, &p), VIDMM_OK);
        struct softgpu_stats ss;
        softgpu_get_stats(f.sg, &ss);
        T_EQ(ss.host_aperture_pages_mapped, 5);
        uint64_t failures = f.fa.failures;
        f.fa.fail_at = f.fa.calls + k;
        T_ST(vidmm_allocation_unlock(f.a, h), VIDMM_OK);
        f.fa.fail_at = 0;
        softgpu_get_stats(f.sg, &ss);
        if (ss.host_aperture_pages_mapped != 0)
            fprintf(stderr, "  unlock with host allocation %llu refused left %llu CPU host aperture pages mapped in the driver\n",
                    (unsigned long long)k, (unsigned long long)ss.host_aperture_pages_mapped);
        T_EQ(ss.host_aperture_pages_mapped, 0);
        T_EQ(ac_seg(f.a, 2).host_aperture_free, ac_seg(f.a, 2).host_aperture_pages);
        CHECK_ADAPTER(f.a);
        T_EQ(softgpu_check(f.sg), 0);
        if (f.fa.failures == failures)
            break;
    }
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    ac_close(&f);
}

static void oom_open(void)
{
    static const char *presets[] = { "dgpu", "wddm1", "igpu" };
    for (size_t pi = 0; pi < 3; pi++) {
        struct softgpu_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = presets[pi];
        struct softgpu *sg;
        T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
        int failing = 0;
        for (uint64_t k = 1; k < 1000; k++) {
            struct fault_alloc fa;
            fault_alloc_init(&fa);
            fa.fail_at = k;
            struct vidmm_adapter_create_info ci;
            memset(&ci, 0, sizeof ci);
            softgpu_fill_adapter_create_info(sg, &ci);
            ci.host_allocator = &fa.ha;
            ci.system_memory_limit = AC_MIB(64);
            struct vidmm_adapter *a = (struct vidmm_adapter *)&fa;
            vidmm_status st = vidmm_adapter_open(&ci, &a);
            if (st == VIDMM_OK) {
                T_EQ(fa.failures, 0);
                CHECK_ADAPTER(a);
                vidmm_adapter_close(a);
                T_EQ(fa.live_blocks, 0);
                break;
            }
            failing++;
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_CHECK(a == NULL);
            T_EQ(fa.live_blocks, 0);
            T_EQ(fa.live_bytes, 0);
            T_EQ(softgpu_check(sg), 0);
        }
        T_CHECK(failing >= 3);
        struct softgpu_stats ss;
        softgpu_get_stats(sg, &ss);
        T_EQ(ss.aperture_pages_mapped, 0); /* failed opens unmapped their paging ring */
        softgpu_destroy(sg);
    }
}

/* ---- exact capacity -------------------------------------------------- */

static void exact_capacity(void)
{
    static const uint64_t sizes[SOFTGPU_MAX_SEGMENTS + 1] = { 0, AC_MIB(4), AC_MIB(64), AC_MIB(64) };
    struct ac_fixture f;
    if (ac_open(&f, "dgpu", sizes, AC_MIB(128)))
        return;
    uint64_t seed = t_seed() ^ 0xCAFEull;
    static vidmm_handle h[2048];
    uint32_t n = 0, max_extents = 0;
    const uint64_t page = AC_KIB(64);
    struct vidmm_segment_info s = ac_seg(f.a, 2);
    T_EQ(s.page_size, page);
    /* What the adapter keeps there from the start: the system paging
     * process's pinned page tables. */
    const uint64_t pinned = s.committed;
    T_EQ_U64(s.free_bytes, s.size - pinned);
    /* Phase 1: churn to fragment; phase 2: fill to the last page. */
    for (int round = 0; round < 4000 && n < 2048; round++) {
        s = ac_seg(f.a, 2);
        if (s.free_bytes == 0)
            break;
        uint64_t size = (1 + t_rand_range(&seed, 24)) * page - t_rand_range(&seed, 2) * 4096 * 3;
        int churn = round < 600;
        if (!churn && size > s.free_bytes)
            size = s.free_bytes;
        if (churn && n > 0 && t_rand_range(&seed, 3) == 0) {
            uint32_t i = (uint32_t)t_rand_range(&seed, n);
            T_ST(vidmm_allocation_destroy(f.a, h[i]), VIDMM_OK);
            h[i] = h[--n];
            continue;
        }
        uint64_t rounded = (size + page - 1) / page * page;
        vidmm_status st = ac_create(f.a, B(2), 0, 0, size, &h[n]);
        if (rounded <= s.free_bytes) {
            T_ST(st, VIDMM_OK); /* enough whole pages: a page set always fits */
        } else {
            T_ST(st, VIDMM_E_NO_SEGMENT_SPACE);
            continue;
        }
        if (st < 0)
            break;
        struct vidmm_allocation_state as = ac_state(f.a, h[n]);
        T_EQ_U64(as.size, rounded);
        if (as.extent_count > max_extents)
            max_extents = as.extent_count;
        n++;
    }
    s = ac_seg(f.a, 2);
    T_EQ_U64(s.committed, s.size);
    T_EQ_U64(s.free_bytes, 0);
    T_EQ_U64(s.largest_free, 0);
    T_CHECK(max_extents > 1);
    CHECK_ADAPTER(f.a);
    struct ac_snapshot snap;
    ac_snap(&f, &snap, h, 8);
    vidmm_handle x;
    T_ST(ac_create(f.a, B(2), 0, 0, page, &x), VIDMM_E_NO_SEGMENT_SPACE);
    T_ST(ac_create(f.a, B(2), 0, 0, 1, &x), VIDMM_E_NO_SEGMENT_SPACE);
    T_CHECK(ac_snap_unchanged_slack(&f, &snap, "full segment", 1));
    ac_destroy_all(f.a, h, n);
    s = ac_seg(f.a, 2);
    T_EQ_U64(s.committed, pinned);
    T_EQ_U64(s.free_bytes, s.size - pinned);
    T_EQ_U64(s.largest_free, s.size - pinned);
    T_ST(ac_create(f.a, B(2), 0, VIDMM_ALLOC_ACCESSED_PHYSICALLY, s.size - pinned, &x), VIDMM_OK);
    struct vidmm_allocation_state as = ac_state(f.a, x);
    T_EQ(as.layout, VIDMM_LAYOUT_CONTIGUOUS);
    T_EQ(as.extent_count, 1);
    T_EQ_U64(as.size, s.size - pinned);
    T_EQ_U64(ac_seg(f.a, 2).free_bytes, 0);
    CHECK_ADAPTER(f.a);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    printf("allocation.exact_capacity: %u allocations filled 64 MiB exactly, up to %u extents\n", n, max_extents);
    ac_close(&f);
}

void suite_allocation(void);
void suite_allocation(void)
{
    t_run("allocation.bad_input", bad_input);
    t_run("allocation.stale_handles", stale_handles);
    t_run("allocation.foreign_handle", foreign_handle);
    t_run("allocation.lock_displayed_primary_not_moved", lock_displayed_primary_not_moved);
    t_run("allocation.oom_create", oom_create);
    t_run("allocation.oom_vs_no_space", oom_vs_no_space);
    t_run("allocation.oom_move", oom_move);
    t_run("allocation.oom_lock_flip", oom_lock_flip);
    t_run("allocation.oom_unlock_host_aperture", oom_unlock_host_aperture);
    t_run("allocation.oom_open", oom_open);
    t_run("allocation.exact_capacity", exact_capacity);
}
