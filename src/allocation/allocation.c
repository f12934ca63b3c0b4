/*
 * allocation.c - the public allocation entries: create, destroy, query,
 * physical references, CPU lock/unlock and flip (display); moves are in
 * move.c.
 *
 * Every entry validates its input before it changes anything, so a
 * rejected call leaves the adapter exactly as it was.  Each call that
 * queues paging operations ends with a flush: in this foundation layer
 * every public call is synchronous with the GPU.
 */
#include "handle/lookup.h"
#include "fence/fence.h"
#include "fence/inflight.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "allocation/allocation.h"
#include "paging_process/paging_process.h"
#include "paging/paging.h"
#include "process/process.h"
#include "residency/residency.h"

#include <string.h>

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }
static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Largest bytes the segment could ever give this allocation. */
static uint64_t segment_capacity(const struct vidmm_adapter *a, const struct vidmm_segment *s, uint32_t flags)
{
    uint64_t sys = a->seg[0].commit_limit;
    switch (s->kind) {
    case VIDMM_SEGMENT_KIND_MEMORY:
        return s->size;
    case VIDMM_SEGMENT_KIND_APERTURE:
        if (flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY) {
            uint64_t c = s->commit_limit < sys ? s->commit_limit : sys;
            if (a->caps.aperture_segment_commit_limit && a->caps.aperture_segment_commit_limit < c)
                c = a->caps.aperture_segment_commit_limit;
            return c;
        }
        return sys;
    case VIDMM_SEGMENT_KIND_AGP:
        return s->size < sys ? s->size : sys;
    case VIDMM_SEGMENT_KIND_SYSTEM:
        return sys;
    }
    return 0;
}

/* Check the driver's description; fills al->size/alignment on success. */
static vidmm_status validate_info(const struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    const struct vidmm_allocation_info *in = &al->info;
    if (in->size == 0)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "the driver described a size of 0 bytes");
    if (in->flags & ~VIDMM_ALLOC_KNOWN_FLAGS)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "allocation flags 0x%x: unknown bits 0x%x", in->flags,
                          in->flags & ~VIDMM_ALLOC_KNOWN_FLAGS);
    if ((in->flags & VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION) && !(in->flags & VIDMM_ALLOC_ACCESSED_PHYSICALLY))
        return vidmm_fail(VIDMM_E_INVALID_ARG, "ExplicitResidencyNotification needs AccessedPhysically");
    if ((in->flags & (VIDMM_ALLOC_PERMANENT_SYS_MEM | VIDMM_ALLOC_CACHED)) && !(in->flags & VIDMM_ALLOC_CPU_VISIBLE))
        return vidmm_fail(VIDMM_E_INVALID_ARG, "PermanentSysMem and Cached need CpuVisible");
    if ((in->flags & VIDMM_ALLOC_PRIMARY) && (in->flags & (VIDMM_ALLOC_PERMANENT_SYS_MEM | VIDMM_ALLOC_CACHED)))
        return vidmm_fail(VIDMM_E_INVALID_ARG, "a Primary allocation cannot be PermanentSysMem or Cached");
    if (in->alignment && !is_pow2(in->alignment))
        return vidmm_fail(VIDMM_E_ALIGNMENT, "alignment 0x%llx is not a power of two",
                          (unsigned long long)in->alignment);
    uint32_t set = in->supported_write_segment_set;
    uint32_t valid = (uint32_t)((1ull << (a->segment_count - 1)) - 1);
    if (set == 0 || (set & ~valid))
        return vidmm_fail(VIDMM_E_BAD_SEGMENT_SET, "supported segment set 0x%x: %s (segments 1-%u exist)", set,
                          set ? "names a segment the driver did not describe" : "empty", a->segment_count - 1);
    if (in->preferred_segment & 0xC0000000u)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "preferred segment 0x%x: reserved bits 30-31 set", in->preferred_segment);
    for (uint32_t slot = 0; slot < VIDMM_PREF_SLOTS; slot++) {
        uint32_t id = VIDMM_PREF_ID(in->preferred_segment, slot);
        if (id == 0)
            break;
        if (id >= a->segment_count || !(set & VIDMM_SEGMENT_BIT(id)))
            return vidmm_fail(VIDMM_E_BAD_SEGMENT_SET, "preference %u names segment %u, outside the supported set 0x%x",
                              slot, id, set);
    }
    uint64_t page = VIDMM_PAGE_4K, cap = 0, max_seg = 0;
    for (uint32_t id = 1; id < a->segment_count; id++) {
        if (!(set & VIDMM_SEGMENT_BIT(id)))
            continue;
        const struct vidmm_segment *s = &a->seg[id];
        if (s->page_size > page)
            page = s->page_size;
        uint64_t c = segment_capacity(a, s, in->flags);
        if (c > cap)
            cap = c;
        if (s->size > max_seg)
            max_seg = s->size;
    }
    uint64_t align = in->alignment ? in->alignment : VIDMM_PAGE_4K;
    /* A 64 KiB-page segment needs 64 KiB-aligned allocations (DXGK_ALLOCATIONINFO). */
    if (page == VIDMM_PAGE_64K && in->alignment && (in->alignment % VIDMM_PAGE_64K))
        return vidmm_fail(VIDMM_E_ALIGNMENT, "alignment 0x%llx: a 64 KiB-page segment needs 64 KiB multiples",
                          (unsigned long long)in->alignment);
    if (align < page)
        align = page;
    if (align > max_seg)
        return vidmm_fail(VIDMM_E_ALIGNMENT, "alignment 0x%llx is larger than every allowed segment",
                          (unsigned long long)align);
    if (in->size > UINT64_MAX - page)
        return vidmm_fail(VIDMM_E_OVERFLOW, "size 0x%llx overflows when rounded to pages", (unsigned long long)in->size);
    uint64_t size = round_up(in->size, page);
    if (size > cap)
        return vidmm_fail(VIDMM_E_TOO_LARGE, "size %llu bytes: larger than any allowed segment can ever hold (%llu)",
                          (unsigned long long)size, (unsigned long long)cap);
    al->size = size;
    al->alignment = align;
    return VIDMM_OK;
}

static vidmm_status allocation_create(struct vidmm_adapter *a, const void *priv, size_t priv_size, vidmm_handle *out)
{
    return vidmm_allocation_create2(a, priv, priv_size, VIDMM_CREATE_RESIDENT, out);
}

static vidmm_status allocation_create2(struct vidmm_adapter *a, const void *priv, size_t priv_size, uint32_t flags,
                                      vidmm_handle *out)
{
    if (!a || !out || (flags & ~VIDMM_CREATE_RESIDENT))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !out ? "out is NULL" : "create flags 0x%x: only VIDMM_CREATE_RESIDENT is defined",
                          flags);
    *out = VIDMM_HANDLE_NULL;
    if ((flags & VIDMM_CREATE_RESIDENT) && a->power_state != VIDMM_POWER_D0)
        return vidmm_fail(VIDMM_E_STATE, "the adapter is powered down: create it evicted or resume first");
    struct vidmm_allocation_info info;
    memset(&info, 0, sizeof(info));
    info.private_driver_data = priv;
    info.private_driver_data_size = priv_size;
    struct vidmm_describe_allocation_args d = { &info };
    vidmm_status st = a->ops.describe_allocation(a->driver, &d);
    if (st == VIDMM_E_NO_HOST_MEMORY)
        return st;
    if (st < 0)   /* the driver's own checks: short or malformed private data */
        return vidmm_fail(VIDMM_E_INVALID_ARG,
                          "private driver data (%zu bytes%s): the driver's describe_allocation refused it with %s",
                          priv_size, priv ? "" : ", NULL", vidmm_status_str(st));
    info.private_driver_data = NULL;
    info.private_driver_data_size = 0;

    struct vidmm_allocation probe;
    memset(&probe, 0, sizeof(probe));
    probe.info = info;
    st = validate_info(a, &probe);
    if (st < 0)
        goto undo_driver;

    struct vidmm_allocation *al;
    vidmm_handle h;
    st = vidmm_handle_new(a, &al, &h);
    if (st < 0)
        goto undo_driver;
    al->info = info;
    al->self = h;
    al->size = probe.size;
    al->alignment = probe.alignment;
    al->resident = (flags & VIDMM_CREATE_RESIDENT) != 0;
    vidmm_residency_init_allocation(a, al, h, info.priority ? info.priority : VIDMM_PRIORITY_NORMAL);
    /* Creation takes free space only: it never evicts (make-resident
     * does), so a full adapter refuses new allocations it cannot place
     * in any supported segment (docs/DECISIONS.md D20). */
    /* Evicted from the start: system pages only (zeroed below). */
    st = al->resident ? vidmm_place_first_fit(a, al, &al->pl) : vidmm_place(a, al, 0, 0, &al->pl);
    if (st < 0)
        goto undo_handle;
    /* First page-in of a content-less allocation: Fill with zero. */
    st = vidmm_fill_content(a, al, &al->pl, 0);
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0) {
        vidmm_unplace(a, al, &al->pl);
        goto undo_handle;
    }
    vidmm_residency_enter(a, al);
    *out = h;
    return VIDMM_OK;

undo_handle:
    vidmm_handle_release(a, h);
undo_driver:
    {
        struct vidmm_destroy_allocation_args da = { info.driver_allocation };
        a->ops.destroy_allocation(a->driver, &da);
    }
    return st;
}

/* The aperture mapping made only for scan-out goes: the allocation is
 * back in plain system memory (segment 0). */
static void display_unmap(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    if (!al->display_mapped)
        return;
    vidmm_residency_leave(a, al);
    (void)vidmm_aperture_unmap_or_quarantine(a, al, &al->pl);
    al->pl.segment_id = 0;
    al->display_mapped = 0;
    vidmm_residency_enter(a, al);
}

/* Undisplay on every source showing it; unmap the aperture if only the
 * display needed the mapping. */
static void undisplay_all(struct vidmm_adapter *a, vidmm_handle h, struct vidmm_allocation *al)
{
    for (uint32_t s = 0; s < VIDMM_MAX_VIDPN_SOURCES; s++)
        if (a->displayed[s] == h)
            a->displayed[s] = VIDMM_HANDLE_NULL;
    al->displayed = 0;
    display_unmap(a, al);
}

static void host_ap_release(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* A pooled allocation object outlives its allocation (handle.c reuses
 * it), so a walk that destroys one twice is invisible to ASan: refuse
 * an object the table no longer names (counted; a debug build stops). */
static int stale(struct vidmm_adapter *a, const struct vidmm_allocation *al)
{
    return VIDMM_BUG_ON_MSG(a, !al->live || vidmm_handle_get_any(a, al->self) != al,
                            "destroy: allocation object of handle 0x%llx is no longer the one its handle names "
                            "(destroyed twice)", (unsigned long long)al->self);
}

/* Destroy while in use: hide the handle, keep the memory until the work
 * finished.  1 if deferred (the caller is done), 0 if al is idle. */
int vidmm_allocation_defer_destroy(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    struct vidmm_submit_state *s = a->sub;
    if (!s)
        return 0;
    if (stale(a, al))
        return 1;   /* destroyed already: nothing left for the caller to do */
    vidmm_adapter_lock(a);
    vidmm_inflight_retire(a);
    vidmm_inflight_reap(a);
    int deferred = al->busy != 0;
    if (deferred) {
        /* Gone from the API now: no handle, on no residency list (so no
         * later submission references it); memory and mappings stay for
         * the work in flight. */
        al->zombie = 1;
        while (vidmm_residency_refs_of(al))
            vidmm_residency_unlink_ref(a, vidmm_residency_refs_of(al));
        al->zombie_next = s->zombies;
        s->zombies = al;
        s->zombie_count++;
        s->stats.deferred_destroys++;
    }
    vidmm_adapter_unlock(a);
    return deferred;
}

static vidmm_status allocation_destroy(struct vidmm_adapter *a, vidmm_handle h)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    /* A holder's handle of a shared allocation: that holder lets go;
     * the last one destroys it (vidmm/share.h). */
    struct vidmm_share_holder *sh = vidmm_share_holder_of(a, h);
    if (sh)
        return vidmm_share_close(a, sh);
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    if (al->lock_count)
        return vidmm_fail(VIDMM_E_BUSY, "allocation 0x%llx is locked by the CPU: unlock it first", (unsigned long long)h);
    vidmm_allocation_destroy_unlocked(a, al);
    return VIDMM_OK;
}

void vidmm_allocation_destroy_unlocked(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    if (al->displayed)
        undisplay_all(a, al->self, al);
    /* GPU work still uses it: the handle goes now, the memory later. */
    if (vidmm_allocation_defer_destroy(a, al))
        return;
    vidmm_allocation_destroy_now(a, al);
}

void vidmm_allocation_drop_locks(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t n)
{
    if (VIDMM_BUG_ON_MSG(a, n > al->lock_count, "unlock: dropping %u locks of allocation 0x%llx, which holds %u", n,
                         (unsigned long long)al->self, al->lock_count))
        n = al->lock_count;
    al->lock_count -= n;
    if (!al->lock_count && al->cpu_map.lock_ptr) {
        host_ap_release(a, al);
        al->cpu_map.lock_ptr = NULL;
    }
}

/* Off its creator's list, if it is on it: a dead creator's list was let
 * go, and a dying creator's teardown takes each allocation off before
 * destroying it (vidmm_allocation_destroy_private). */
static void private_unlink(struct vidmm_process *creator, struct vidmm_allocation *al)
{
    if (!al->private_prev && creator->private_first != al)
        return;
    if (al->private_prev)
        al->private_prev->private_next = al->private_next;
    else
        creator->private_first = al->private_next;
    if (al->private_next)
        al->private_next->private_prev = al->private_prev;
    al->private_prev = al->private_next = NULL;
    (void)VIDMM_BUG_ON_MSG(creator->adapter, creator->private_allocations == 0,
                           "private list: allocation 0x%llx leaves a process that counts no private allocations",
                           (unsigned long long)al->self);
    creator->private_allocations--;
}

void vidmm_allocation_unlist_private(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    struct vidmm_process *creator = al->private_process ? vidmm_process_get(a, al->private_process) : NULL;
    if (creator)
        private_unlink(creator, al);
    al->private_process = 0;
}

void vidmm_allocation_destroy_now(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    if (stale(a, al))
        return;
    vidmm_handle h = al->self;
    vidmm_allocation_unlist_private(a, al);
    vidmm_process_forget_allocation(a, al); /* its GPU VAs go with it */
    vidmm_residency_forget_allocation(a, al);     /* residency lists, policy, backing copy */
    /* Point, then free: the invalid entries must have run before the
     * pages go.  Refused, they may still reach the pages: quarantine
     * them until the reset that rewrites every entry. */
    if (vidmm_paging_flush(a) < 0)
        vidmm_quarantine(a, al, &al->pl, 1);
    else
        vidmm_unplace(a, al, &al->pl);
    (void)vidmm_paging_flush(a);
    struct vidmm_destroy_allocation_args da = { al->info.driver_allocation };
    a->ops.destroy_allocation(a->driver, &da);
    al->zombie = 0;
    vidmm_handle_release(a, h);
}

static vidmm_status allocation_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_allocation_state *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "out is NULL");
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    memset(out, 0, sizeof(*out));
    out->size = al->size;
    out->requested_size = al->info.size;
    out->alignment = al->alignment;
    out->flags = al->info.flags;
    out->segment_id = al->pl.segment_id;
    out->supported_segment_set = al->info.supported_write_segment_set;
    out->preferred_segment = al->info.preferred_segment;
    if (al->pl.sys) {
        out->layout = VIDMM_LAYOUT_PAGES;
        out->extent_count = 1;
    } else {
        out->layout = al->layout;
        out->extent_count = al->pl.pages.count;
    }
    out->aperture_mapped = al->pl.ap_mapped;
    out->aperture_offset = al->pl.ap_mapped ? al->pl.ap_offset : 0;
    out->displayed = al->displayed != 0;
    out->lock_count = al->lock_count;
    out->moves = al->moves;
    out->content_lost = al->reset_lost;
    return VIDMM_OK;
}

static vidmm_status allocation_physical_ranges(const struct vidmm_adapter *a, vidmm_handle h,
                                              struct vidmm_physical_range *r, uint32_t cap, uint32_t *count)
{
    if (!a || !count || (cap && !r))
        return vidmm_fail(VIDMM_E_INVALID_ARG, !count ? "count is NULL" : "ranges is NULL with capacity %u", cap);
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    const struct vidmm_placement *pl = &al->pl;
    if (pl->sys) {
        *count = 1;
        if (cap) {
            memset(r, 0, sizeof(*r));
            r->segment_id = pl->ap_mapped ? pl->ap_segment : 0;
            r->offset = pl->ap_mapped ? pl->ap_offset : 0;
            r->size = al->size;
        }
        return VIDMM_OK;
    }
    *count = pl->pages.count;
    for (uint32_t i = 0; i < pl->pages.count && i < cap; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].segment_id = pl->segment_id;
        r[i].offset = pl->pages.ext[i].offset;
        r[i].size = pl->pages.ext[i].size;
    }
    return VIDMM_OK;
}

/* ---- CPU access ----------------------------------------------------- */

static void host_ap_release(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    if (!al->cpu_map.host_ap_mapped)
        return;
    struct vidmm_segment *s = &a->seg[al->pl.segment_id];
    /* The page list was built at lock time so that unlock needs no host
     * memory and cannot fail half-way. */
    struct vidmm_unmap_cpu_host_aperture_args u;
    memset(&u, 0, sizeof(u));
    u.segment_id = s->id;
    u.number_of_pages = al->cpu_map.host_ap_count;
    u.cpu_host_aperture_pages = al->cpu_map.host_ap_list;
    (void)a->ops.unmap_cpu_host_aperture(a->driver, &u);
    vidmm_hfree(a->ha, al->cpu_map.host_ap_list, al->cpu_map.host_ap_count * sizeof(uint32_t), 4);
    al->cpu_map.host_ap_list = NULL;
    vidmm_ra_free(&s->host_ap_ra, al->cpu_map.host_ap_node);
    al->cpu_map.host_ap_mapped = 0;
}

static vidmm_status host_ap_map(struct vidmm_adapter *a, struct vidmm_allocation *al, void **ptr)
{
    struct vidmm_segment *s = &a->seg[al->pl.segment_id];
    uint64_t count = al->size / s->page_size;
    if (count > s->host_ap_pages)
        return vidmm_fail(VIDMM_E_TOO_LARGE, "%llu pages: larger than segment %u's CPU host aperture (%llu pages)",
                          (unsigned long long)count, s->id, (unsigned long long)s->host_ap_pages);
    uint64_t off;
    uint32_t node;
    vidmm_status st = vidmm_ra_alloc(&s->host_ap_ra, al->size, s->page_size, 0, &off, &node);
    if (st < 0)
        return st;
    uint32_t *ap = vidmm_halloc(a->ha, VIDMM_SITE_ALLOC_HOST_AP_PAGES, count * sizeof(uint32_t), 4);
    uint64_t *sp = vidmm_halloc(a->ha, VIDMM_SITE_ALLOC_HOST_AP_SEG, count * sizeof(uint64_t), 8);
    if (!ap || !sp) {
        vidmm_hfree(a->ha, ap, count * sizeof(uint32_t), 4);
        vidmm_hfree(a->ha, sp, count * sizeof(uint64_t), 8);
        vidmm_ra_free(&s->host_ap_ra, node);
        return vidmm_fail(VIDMM_E_NO_HOST_MEMORY, "CPU host aperture page lists of %llu pages", (unsigned long long)count);
    }
    uint64_t first = off / s->page_size, k = 0;
    for (uint32_t e = 0; e < al->pl.pages.count; e++) {
        const struct vidmm_extent *x = &al->pl.pages.ext[e];
        for (uint64_t p = 0; p < x->size / s->page_size; p++, k++) {
            ap[k] = (uint32_t)(first + k);
            sp[k] = x->offset / s->page_size + p;
        }
    }
    struct vidmm_map_cpu_host_aperture_args m;
    memset(&m, 0, sizeof(m));
    m.driver_allocation = al->info.driver_allocation;
    m.segment_id = s->id;
    m.number_of_pages = count;
    m.cpu_host_aperture_pages = ap;
    m.memory_segment_pages = sp;
    st = a->ops.map_cpu_host_aperture(a->driver, &m);
    vidmm_hfree(a->ha, sp, count * sizeof(uint64_t), 8);
    if (st < 0) {
        vidmm_hfree(a->ha, ap, count * sizeof(uint32_t), 4);
        vidmm_ra_free(&s->host_ap_ra, node);
        return vidmm_fail(VIDMM_E_DRIVER_FAILURE, "the driver's map_cpu_host_aperture failed with %s",
                          vidmm_status_str(st));
    }
    al->cpu_map.host_ap_list = ap;
    al->cpu_map.host_ap_mapped = 1;
    al->cpu_map.host_ap_node = node;
    al->cpu_map.host_ap_first = first;
    al->cpu_map.host_ap_count = count;
    *ptr = s->host_ap_base + off;
    return VIDMM_OK;
}

/* Move to the first supported segment the CPU reaches directly. */
static vidmm_status move_cpu_reachable(struct vidmm_adapter *a, struct vidmm_allocation *al)
{
    vidmm_status st = VIDMM_E_NO_SEGMENT_SPACE;
    uint32_t pref = al->info.preferred_segment;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < (pass ? a->segment_count - 1 : VIDMM_PREF_SLOTS); i++) {
            uint32_t id = pass ? i + 1 : VIDMM_PREF_ID(pref, i);
            if (id == 0 || id >= a->segment_count || !(al->info.supported_write_segment_set & VIDMM_SEGMENT_BIT(id)))
                continue;
            const struct vidmm_segment *s = &a->seg[id];
            if (s->kind == VIDMM_SEGMENT_KIND_MEMORY && !s->cpu_base)
                continue;
            st = vidmm_allocation_move_to(a, al, id, 0);
            if (st >= 0 || (st != VIDMM_E_NO_SEGMENT_SPACE && st != VIDMM_E_COMMIT_LIMIT && st != VIDMM_E_TOO_LARGE))
                return st;
        }
    }
    return st;
}

static vidmm_status allocation_lock(struct vidmm_adapter *a, vidmm_handle h, void **cpu)
{
    if (!a || !cpu)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "cpu_address is NULL");
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    if (a->power_state != VIDMM_POWER_D0)   /* powered down (power.h) */
        return vidmm_fail(VIDMM_E_STATE, "the adapter is powered down (power state %u)", a->power_state);
    /* Before the lock count: a pointer taken before the removal named
     * memory the driver may have let go with its device. */
    if (vidmm_fence_is_adapter_removed(a))
        return vidmm_fail(VIDMM_E_DEVICE_LOST, "the adapter is removed: its driver refused an adapter reset "
                                               "(docs/RESET_AND_POWER.md)");
    if (!(al->info.flags & VIDMM_ALLOC_CPU_VISIBLE))
        return vidmm_fail(VIDMM_E_NOT_SUPPORTED,
                          "allocation 0x%llx was not described with VIDMM_ALLOC_CPU_VISIBLE: the CPU cannot lock it",
                          (unsigned long long)h);
    if (al->lock_count == UINT32_MAX)
        return vidmm_fail(VIDMM_E_BUSY, "allocation 0x%llx: lock count at its maximum", (unsigned long long)h);
    /* A shared allocation's locks are counted per holder too: a holder
     * that goes takes its own locks with it (vidmm/share.h). */
    struct vidmm_share_holder *sh = vidmm_share_holder_of(a, h);
    if (al->lock_count) {
        al->lock_count++;
        if (sh)
            sh->locks++;
        *cpu = al->cpu_map.lock_ptr;
        return VIDMM_OK;
    }
    /* The CPU may write: a backing copy goes stale.  Discarded while
     * offered: its system pages were zeroed and are the content from now
     * on - a restore must copy what the CPU writes into them, not
     * zero-fill again (the stress suite found this). */
    vidmm_residency_cpu_written(al);
    vidmm_inflight_wait_idle(a, al);   /* GPU work that uses it finishes first (D3DKMTLock waits) */
    if (al->busy)
        return VIDMM_E_TIMEOUT;      /* an engine hung: reset as the entry returns */
    /* Paging may still be moving its bytes (make-resident and evict do
     * not wait): the CPU sees them only once that work is done. */
    st = vidmm_paging_flush(a);
    if (st < 0)
        return st;
    void *p = NULL;
    if (al->pl.sys) {
        p = al->pl.sys;
    } else {
        struct vidmm_segment *s = &a->seg[al->pl.segment_id];
        if (s->cpu_base && al->pl.pages.count == 1) {
            p = (unsigned char *)s->cpu_base + al->pl.pages.ext[0].offset;
        } else if (s->host_ap_pages) {
            st = host_ap_map(a, al, &p);
            if (st < 0 && st != VIDMM_E_NO_SEGMENT_SPACE && st != VIDMM_E_TOO_LARGE)
                return st;
        }
        if (!p) {
            if (al->displayed)   /* scan-out pins it where it is */
                return vidmm_fail(VIDMM_E_BUSY, "allocation 0x%llx is being scanned out and the CPU cannot reach "
                                  "it where it is", (unsigned long long)h);
            vidmm_residency_leave(a, al);
            vidmm_residency_drop_backing(a, al);
            st = move_cpu_reachable(a, al);
            vidmm_residency_enter(a, al);
            if (st < 0)
                return st;
            if (al->pl.sys)
                p = al->pl.sys;
            else
                p = (unsigned char *)a->seg[al->pl.segment_id].cpu_base + al->pl.pages.ext[0].offset;
        }
    }
    al->lock_count = 1;
    al->cpu_map.lock_ptr = p;
    if (sh)
        sh->locks++;
    *cpu = p;
    return VIDMM_OK;
}

static vidmm_status allocation_unlock(struct vidmm_adapter *a, vidmm_handle h)
{
    if (!a)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "adapter is NULL");
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    if (al->lock_count == 0)
        return vidmm_fail(VIDMM_E_STATE, "allocation 0x%llx is not locked", (unsigned long long)h);
    struct vidmm_share_holder *sh = vidmm_share_holder_of(a, h);
    if (sh && !sh->locks)
        return vidmm_fail(VIDMM_E_STATE, "shared allocation 0x%llx: not locked through this handle",
                          (unsigned long long)h);
    if (sh)
        sh->locks--;
    if (--al->lock_count == 0) {
        host_ap_release(a, al);
        al->cpu_map.lock_ptr = NULL;
    }
    return VIDMM_OK;
}

/* ---- display -------------------------------------------------------- */

static vidmm_status adapter_flip(struct vidmm_adapter *a, uint32_t source, vidmm_handle h)
{
    if (!a || source >= VIDMM_MAX_VIDPN_SOURCES)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "vidpn_source %u: at most %u sources", source, VIDMM_MAX_VIDPN_SOURCES);
    struct vidmm_allocation *al = NULL;
    if (h != VIDMM_HANDLE_NULL) {
        vidmm_status st = vidmm_allocation_lookup(a, h, &al);
        if (st < 0)
            return st;
        if (!(al->info.flags & VIDMM_ALLOC_PRIMARY))
            return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "allocation 0x%llx was not described with VIDMM_ALLOC_PRIMARY",
                              (unsigned long long)h);
        h = al->self;   /* the sources name it by its own handle (a holder's resolves to it) */
    }
    vidmm_handle old = a->displayed[source];
    if (old == h)
        return VIDMM_OK;
    if (al && !al->resident) {
        /* Scan-out needs it resident. */
        vidmm_status st = vidmm_residency_restore(a, al);
        if (st < 0)
            return st;
    }
    if (al) {
        /* A primary in system memory is scanned out through the aperture:
         * map it for as long as some source shows it. */
        if (al->pl.sys && !al->pl.ap_mapped) {
            if (!a->aperture_id)
                return vidmm_fail(VIDMM_E_NOT_SUPPORTED, "allocation 0x%llx is in system memory and the adapter has "
                                  "no aperture segment to scan it out through", (unsigned long long)h);
            vidmm_residency_leave(a, al);
            vidmm_status st = vidmm_aperture_map(a, al, &al->pl, a->aperture_id);
            if (st >= 0) {
                al->pl.segment_id = a->aperture_id;   /* D43: mapped = in the aperture */
                al->display_mapped = 1;
            }
            vidmm_residency_enter(a, al);
            if (st < 0)
                return st;
        }
        al->displayed++;
    }
    a->displayed[source] = h;
    if (old != VIDMM_HANDLE_NULL) {
        struct vidmm_allocation *o = vidmm_handle_get_any(a, old);   /* its creator may have let go */
        if (o && !o->zombie && o->displayed && --o->displayed == 0)
            display_unmap(a, o);
    }
    return vidmm_paging_flush(a);
}

/* ---- process-private allocations (D38) ------------------------------- */

/* The device's process, or 0 for a bad or lost device (*st says which). */
static vidmm_handle device_process(struct vidmm_adapter *a, vidmm_handle device, vidmm_status *st)
{
    struct vidmm_device *d;
    *st = vidmm_device_lookup(a, device, &d);
    if (*st < 0)
        return 0;
    pthread_mutex_lock(&a->fence_lock);   /* the error state comes from driver threads */
    int lost = d->lost;
    pthread_mutex_unlock(&a->fence_lock);
    if (lost) {
        *st = vidmm_fail(VIDMM_E_DEVICE_LOST, "device 0x%llx is lost (an engine reset blamed it)",
                         (unsigned long long)device);
        return 0;
    }
    *st = VIDMM_OK;
    return d->process->self;
}

static vidmm_status device_allocation_create(struct vidmm_adapter *a, vidmm_handle device, const void *priv,
                                            size_t priv_size, uint32_t flags, vidmm_handle *out)
{
    if (!out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "out is NULL");
    vidmm_status st;
    vidmm_handle proc = device_process(a, device, &st);
    if (!proc)
        return st;
    st = vidmm_allocation_create2(a, priv, priv_size, flags & ~VIDMM_CREATE_SHARED, out);
    if (st < 0)
        return st;
    struct vidmm_allocation *al = vidmm_handle_get(a, *out);
    struct vidmm_process *p = vidmm_process_get(a, proc);
    al->private_process = proc;
    al->private_prev = NULL;
    al->private_next = p->private_first;
    if (p->private_first)
        p->private_first->private_prev = al;
    p->private_first = al;
    p->private_allocations++;
    if (flags & VIDMM_CREATE_SHARED) {
        st = vidmm_share_attach(a, al, proc);
        if (st < 0) {
            vidmm_allocation_destroy_now(a, al);   /* just made: idle, unlocked, not displayed; off p's list */
            *out = VIDMM_HANDLE_NULL;
        }
    }
    return st;
}

static vidmm_status device_lock(struct vidmm_adapter *a, vidmm_handle device, vidmm_handle h, void **cpu)
{
    if (!cpu)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "cpu_address is NULL");
    vidmm_status st;
    vidmm_handle proc = device_process(a, device, &st);
    if (!proc)
        return st;
    struct vidmm_allocation *al;
    st = vidmm_allocation_lookup_for(a, h, proc, &al);   /* never another process's pointer */
    return st < 0 ? st : vidmm_allocation_lock(a, h, cpu);
}

static vidmm_status device_unlock(struct vidmm_adapter *a, vidmm_handle device, vidmm_handle h)
{
    struct vidmm_device *d = vidmm_objtab_get(&a->devices, device);
    /* Unlock works on a lost device: it only gives the pointer back. */
    if (!d || !vidmm_handle_get_for(a, h, d->process->self))
        return vidmm_fail(VIDMM_E_INVALID_HANDLE, "allocation handle 0x%llx: not an allocation this process may name",
                          (unsigned long long)(h));
    return vidmm_allocation_unlock(a, h);
}

void vidmm_allocation_destroy_private(struct vidmm_adapter *a, vidmm_handle process)
{
    /* Its list of private allocations: O(what it created).  A destroy
     * that must wait for GPU work leaves a zombie, off the list, still
     * naming its creator (statistics); it is destroyed later.
     *
     * No cursor survives a step: a destruction releases the zombies
     * whose work has finished (vidmm_allocation_defer_destroy reaps),
     * this process's included, so a `next` read before it may name an
     * allocation destroyed meanwhile (docs/DECISIONS.md D61).  Each
     * step takes the list's head off first and reads the head again
     * after. */
    struct vidmm_process *p = vidmm_process_get(a, process);
    if (!p)
        return;
    /* Its holds of shared allocations first (O(its holds)): one it
     * created that others still hold leaves its list there, one whose
     * last holder it was is destroyed (or deferred) with it. */
    vidmm_share_process_gone(a, p);
    for (struct vidmm_allocation *al; (al = p->private_first) != NULL;) {
        private_unlink(p, al);
        if (al->zombie)
            continue;
        if (al->lock_count) {   /* its CPU mappings die with the process */
            al->lock_count = 0;
            host_ap_release(a, al);
            al->cpu_map.lock_ptr = NULL;
        }
        if (al->displayed)
            undisplay_all(a, al->self, al);
        if (!vidmm_allocation_defer_destroy(a, al))
            vidmm_allocation_destroy_now(a, al);
    }
    (void)VIDMM_BUG_ON_MSG(a, p->private_allocations != 0,
                           "process teardown: %llu private allocations left after destroying every one on its list",
                           (unsigned long long)p->private_allocations);
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_adapter_flip(struct vidmm_adapter *a, uint32_t source, vidmm_handle h)
{
    VIDMM_ENTRY(a, vidmm_powered_down(a) ? VIDMM_E_STATE : adapter_flip(a, source, h));
}

vidmm_status vidmm_allocation_create(struct vidmm_adapter *a, const void *priv, size_t priv_size, vidmm_handle *out)
{
    VIDMM_ENTRY(a, allocation_create(a, priv, priv_size, out));
}

vidmm_status vidmm_allocation_create2(struct vidmm_adapter *a, const void *priv, size_t priv_size, uint32_t flags,
                                      vidmm_handle *out)
{
    VIDMM_ENTRY(a, allocation_create2(a, priv, priv_size, flags, out));
}

vidmm_status vidmm_allocation_destroy(struct vidmm_adapter *a, vidmm_handle h)
{
    VIDMM_ENTRY(a, allocation_destroy(a, h));
}

vidmm_status vidmm_allocation_lock(struct vidmm_adapter *a, vidmm_handle h, void **cpu)
{
    VIDMM_ENTRY(a, allocation_lock(a, h, cpu));
}

vidmm_status vidmm_allocation_physical_ranges(const struct vidmm_adapter *a, vidmm_handle h,
                                              struct vidmm_physical_range *r, uint32_t cap, uint32_t *count)
{
    VIDMM_ENTRY(a, allocation_physical_ranges(a, h, r, cap, count));
}

vidmm_status vidmm_allocation_query(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_allocation_state *out)
{
    VIDMM_ENTRY(a, allocation_query(a, h, out));
}

vidmm_status vidmm_allocation_unlock(struct vidmm_adapter *a, vidmm_handle h)
{
    VIDMM_ENTRY(a, allocation_unlock(a, h));
}

vidmm_status vidmm_device_allocation_create(struct vidmm_adapter *a, vidmm_handle device, const void *priv,
                                            size_t priv_size, uint32_t flags, vidmm_handle *out)
{
    VIDMM_ENTRY(a, device_allocation_create(a, device, priv, priv_size, flags, out));
}

vidmm_status vidmm_device_lock(struct vidmm_adapter *a, vidmm_handle device, vidmm_handle h, void **cpu)
{
    VIDMM_ENTRY(a, device_lock(a, device, h, cpu));
}

vidmm_status vidmm_device_unlock(struct vidmm_adapter *a, vidmm_handle device, vidmm_handle h)
{
    VIDMM_ENTRY(a, device_unlock(a, device, h));
}
