/*
 * paging_process.c - the system paging process: how content moves in
 * GpuMmu mode (the DXGK_BUILDPAGINGBUFFER_OPERATION reference page; docs/DECISIONS.md D27).
 *
 * In WDDM 2 virtual mode the memory manager does not hand the driver
 * segment addresses or MDLs to copy between: it maps the source and the
 * destination into a scratch area of its own GPU VA space (the system
 * paging process) and asks for TRANSFER_VIRTUAL / FILL_VIRTUAL between
 * those virtual addresses.  vidmm does the same on an adapter whose
 * driver sets VIDMM_GPUMMU_VIRTUAL_PAGING_OPS (docs/DECISIONS.md D27);
 * every other adapter keeps physical TRANSFER / FILL, and the choice is
 * made in one place, vidmm_copy_content / vidmm_fill_content.
 *
 * The paging process is a struct vidmm_process that is never in the
 * process table: no handle names it, and it has no VA-space bookkeeping
 * because its layout is fixed.  Its page tables come from the page-table
 * code every process uses (mmu/page_table.c), placed in each level's
 * PagingProcessPageTableSegmentId, and are all made when the adapter
 * opens: the root and every table covering the scratch area.  They are
 * pinned - nothing evicts or moves them - so a content move, which may
 * run in the middle of an eviction, never allocates host memory or
 * segment space.
 *
 * Layout: VA [0, one leaf span) is never mapped (a null or small stray
 * address faults).  The scratch area starts there and holds two windows
 * of equal size, source then destination, with 4 KB leaves; when the
 * adapter's leaves can hold 64 KB entries, a second area from the next
 * leaf-span boundary holds the same two windows with 64 KB leaves
 * (docs/DECISIONS.md D58):
 *
 *      0        leaf span      +window          +2 window   (next leaf span)
 *      | invalid |  source     |  destination   | ...        | source 64K | destination 64K |
 *
 * Window size (D27): the area is a quarter of the largest memory segment
 * (the WDDM 3.2 default for the paging-process VA), at least 4 MiB, at
 * most 256 MiB, rounded down to 128 KiB; each window is half of it.  The
 * floor keeps per-chunk costs (two page-table updates and a TLB flush)
 * small against the bytes moved; the cap bounds the pinned page tables
 * (256 MiB of 4 KB entries is 512 KiB of tables, of 64 KB entries 32 KiB)
 * on very large segments.
 *
 * Which window a side uses, chunk by chunk: the 64 KB one when the bytes
 * of the chunk lie in a memory segment of 64 KB pages in whole, aligned
 * 64 KB pages (vidmm_pt_can_use_64k, the rule a process mapping follows
 * too), else the 4 KB one; system memory is always 4 KB pages.  A 64 KB
 * entry maps what sixteen 4 KB entries would, so a move between two
 * local segments writes a sixteenth of the entries and the engine walks
 * a sixteenth of them.
 *
 * A move, per chunk of at most one window: UPDATE_PAGE_TABLE of the
 * source bytes into a source window and of the destination bytes into
 * a destination window, one
 * FLUSH_TLB, then TRANSFER_VIRTUAL (or FILL_VIRTUAL through the
 * destination window).  The next chunk remaps the same windows: the
 * engine runs paging operations in order, so a remap never overtakes the
 * copy before it.  After the last chunk the used part of every window is
 * made invalid again and flushed, so no stale scratch translation can
 * reach system pages that are freed later.
 */
#include "model/objects.h"
#include "fence/fence.h"
#include "paging_process/paging_process.h"
#include "paging_process/state.h"
#include "mmu/mmu.h"
#include "paging/paging.h"

#include <stdio.h>
#include <string.h>

#define PP_AREA_MIN (4ull << 20)
#define PP_AREA_MAX (256ull << 20)
#define PP_AREA_UNIT (128ull << 10)   /* two windows of whole 64 KiB pages */

static uint64_t area_size(const struct vidmm_adapter *a)
{
    uint64_t largest = 0;
    for (uint32_t id = 1; id < a->segment_count; id++)
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY && a->seg[id].size > largest)
            largest = a->seg[id].size;
    if (!largest)
        return 0;
    uint64_t s = largest / 4;
    if (s < PP_AREA_MIN)
        s = PP_AREA_MIN;
    if (s > PP_AREA_MAX)
        s = PP_AREA_MAX;
    return s & ~(PP_AREA_UNIT - 1);
}

static int has_64k_segment(const struct vidmm_adapter *a)
{
    for (uint32_t id = 1; id < a->segment_count; id++)
        if (a->seg[id].kind == VIDMM_SEGMENT_KIND_MEMORY && a->seg[id].page_size == VIDMM_PAGE_64K)
            return 1;
    return 0;
}

static struct vidmm_physical_address root_address(const struct vidmm_process *p)
{
    struct vidmm_physical_address r;
    memset(&r, 0, sizeof(r));
    r.segment_id = vidmm_pt_root(p)->segment_id;
    r.segment_offset = vidmm_pt_root(p)->offset;
    return r;
}

static void pp_free(struct vidmm_adapter *a, struct vidmm_paging_process *pp)
{
    struct vidmm_process *p = &pp->proc;
    if (vidmm_pt_root(p)) {
        (void)vidmm_paging_flush(a);   /* the engine may still walk these tables */
        vidmm_process_bind_root(a, p, p->self, 0);
        vidmm_pt_destroy(a, vidmm_pt_root(p));
    }
    vidmm_pt_process_fini(a, p);
    vidmm_hfree(a->ha, pp, sizeof(*pp), _Alignof(struct vidmm_paging_process));
}

vidmm_status vidmm_paging_process_init(struct vidmm_adapter *a, char *msg, size_t n)
{
    a->pp = NULL;
    if (!a->has_gpummu || !(a->gpummu.caps.flags & VIDMM_GPUMMU_VIRTUAL_PAGING_OPS))
        return VIDMM_OK;
    uint64_t area = area_size(a);
    if (!area)
        return VIDMM_OK;   /* no memory segment: nothing is ever copied by the GPU */
    const struct vidmm_gpummu_info *g = &a->gpummu;
    uint64_t base = g->leaf_span[0];
    if (base > g->va_size || area > g->va_size - base) {
        if (msg && n)
            snprintf(msg, n, "GpuMmu: a %llu-bit VA cannot hold the paging process's %llu MiB scratch area",
                     (unsigned long long)g->caps.virtual_address_bit_count, (unsigned long long)(area >> 20));
        return VIDMM_E_BAD_DRIVER_DESC;
    }
    struct vidmm_paging_process *pp =
        vidmm_hzalloc(a->ha, VIDMM_SITE_PP_OBJECT, sizeof(*pp), _Alignof(struct vidmm_paging_process));
    if (!pp)
        return VIDMM_E_NO_HOST_MEMORY;
    struct vidmm_process *p = &pp->proc;
    p->adapter = a;
    p->self = VIDMM_HANDLE_MAKE(VIDMM_HANDLE_TYPE_PAGING_PROCESS, a->handle_salt, 0, 0);
    pp->scratch_va = base;
    pp->window = area / 2;
    /* The 64 KB windows where some memory segment has 64 KB pages and
     * the VA holds them: a speed-up, never needed (every side can go
     * through 4 KB entries). */
    uint64_t base64 = (base + area + base - 1) / base * base;
    if (has_64k_segment(a) && vidmm_pt_leaf64_supported(a) && base64 <= g->va_size && area <= g->va_size - base64)
        pp->scratch_va64 = base64;
    vidmm_status st = vidmm_pt_process_init(a, p, 1u << g->level[0].page_table_index_bit_count, VIDMM_SITE_PP_PTE_BUF, 1);
    if (st >= 0)
        st = vidmm_pt_create_root(a, p);
    /* Every table of the scratch areas now: moves never allocate. */
    if (st >= 0)
        st = vidmm_pt_ensure(a, p, base, area, 0);
    if (st >= 0 && pp->scratch_va64) {
        /* The 64 KB windows are a speed-up: when their tables do not fit
         * in the paging-process segment, the adapter opens with the 4 KB
         * windows alone (the tables made for them, this epoch's, are
         * unlinked and freed again). */
        vidmm_pt_begin(p);
        st = vidmm_pt_ensure(a, p, pp->scratch_va64, area, 1);
        if (st == VIDMM_E_NO_SEGMENT_SPACE) {
            st = vidmm_pt_rollback(a, p);
            pp->scratch_va64 = 0;
        }
    }
    if (st >= 0)
        st = vidmm_paging_flush(a);
    if (st < 0) {
        pp_free(a, pp);
        return st;
    }
    vidmm_process_bind_root(a, p, p->self, 1);
    a->pp = pp;
    return VIDMM_OK;
}

void vidmm_paging_process_fini(struct vidmm_adapter *a)
{
    if (!a->pp)
        return;
    pp_free(a, a->pp);
    a->pp = NULL;
}

static uint64_t window_va(const struct vidmm_paging_process *pp, enum pp_window w)
{
    return (w >= PP_SRC64 ? pp->scratch_va64 : pp->scratch_va) + (w == PP_DST || w == PP_DST64 ? pp->window : 0);
}

static int windows_mapped(const struct vidmm_paging_process *pp)
{
    return (pp->mapped[0] | pp->mapped[1] | pp->mapped[2] | pp->mapped[3]) != 0;
}

/* Make the used part of every window invalid again (and flush), so the
 * scratch VA never keeps a translation past the move that made it. */
static vidmm_status unmap_windows(struct vidmm_adapter *a, struct vidmm_paging_process *pp)
{
    struct vidmm_process *p = &pp->proc;
    if (!windows_mapped(pp))
        return VIDMM_OK;
    vidmm_status st = VIDMM_OK;
    for (int w = PP_SRC; w <= PP_DST64 && st >= 0; w++)
        if (pp->mapped[w])
            st = vidmm_pt_write(a, p, window_va(pp, (enum pp_window)w), pp->mapped[w], NULL);
    if (st >= 0)
        st = vidmm_pt_flush(a, p);
    /* Only a complete unmap and flush clears the record: after a driver
     * failure the next move writes all of it again. */
    if (st >= 0)
        memset(pp->mapped, 0, sizeof(pp->mapped));
    return st;
}

/* Which window maps bytes [off, off+n) of pl on one side: the 64 KB one
 * when they lie in whole, aligned 64 KB pages of a 64 KB-page memory
 * segment (every extent they touch included), else the 4 KB one.  *len
 * is what to map: n, or through the 64 KB window n rounded up to whole
 * pages (the last page of an allocation whose size is not a multiple of
 * 64 KB is still a whole page of the segment; the operation moves n). */
static enum pp_window pick_window(const struct vidmm_adapter *a, const struct vidmm_paging_process *pp,
                                  const struct vidmm_allocation *al, const struct vidmm_placement *pl,
                                  uint64_t off, uint64_t n, enum pp_window w4, uint64_t *len)
{
    const uint64_t m = VIDMM_PAGE_64K - 1;
    uint64_t n64 = (n + m) & ~m;
    *len = n;
    /* n64 <= window: the window is whole 64 KB pages (vidmm_paging_process_check). */
    if (!pp->scratch_va64 || !vidmm_pt_can_use_64k(a, al, pl, 0, off, n64))
        return w4;
    uint64_t base = 0;
    for (uint32_t i = 0; i < pl->pages.count && base < off + n64; i++) {
        const struct vidmm_extent *e = &pl->pages.ext[i];
        if (base + e->size > off && ((e->offset | e->size) & m))
            return w4;
        base += e->size;
    }
    if (base < off + n64)
        return w4;
    *len = n64;
    return (enum pp_window)(w4 + 2);
}

static vidmm_status emit_chunk(struct vidmm_adapter *a, struct vidmm_paging_process *pp,
                               const struct vidmm_allocation *al, const struct vidmm_placement *src,
                               const struct vidmm_placement *dst, uint64_t off, uint64_t n, uint32_t pattern)
{
    struct vidmm_process *p = &pp->proc;
    uint64_t ns = 0, nd;
    enum pp_window ws = src ? pick_window(a, pp, al, src, off, n, PP_SRC, &ns) : PP_SRC;
    enum pp_window wd = pick_window(a, pp, al, dst, off, n, PP_DST, &nd);
    uint64_t sva = window_va(pp, ws), dva = window_va(pp, wd);
    void *drv = al->info.driver_allocation;
    vidmm_status st = VIDMM_OK;
    /* Recorded before the writes: after a failure some entries may be
     * valid, and the unmap must cover them. */
    if (src && ns > pp->mapped[ws])
        pp->mapped[ws] = ns;
    if (nd > pp->mapped[wd])
        pp->mapped[wd] = nd;
    if (src)
        st = vidmm_pt_map_placement(a, p, sva, src, off, ns, drv);
    if (st >= 0)
        st = vidmm_pt_map_placement(a, p, dva, dst, off, nd, drv);
    if (st >= 0)
        st = vidmm_pt_flush(a, p);
    if (st < 0)
        return st;
    struct vidmm_build_paging_buffer_args op;
    memset(&op, 0, sizeof(op));
    if (src) {
        op.operation = VIDMM_PAGING_TRANSFER_VIRTUAL;
        struct vidmm_paging_transfer_virtual *t = &op.u.transfer_virtual;
        t->driver_allocation = drv;
        t->allocation_offset_in_bytes = off;
        t->transfer_size_in_bytes = n;
        t->source_virtual_address = sva;
        t->destination_virtual_address = dva;
        t->transfer_direction = src->sys ? VIDMM_TRANSFER_SYSTEM_TO_LOCAL
                                : dst->sys ? VIDMM_TRANSFER_LOCAL_TO_SYSTEM
                                           : VIDMM_TRANSFER_LOCAL_TO_LOCAL;
        t->flags = (ws == PP_SRC64 ? VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES : 0u) |
                   (wd == PP_DST64 ? VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES : 0u);
        t->root_page_table_address = root_address(p);
    } else {
        op.operation = VIDMM_PAGING_FILL_VIRTUAL;
        struct vidmm_paging_fill_virtual *f = &op.u.fill_virtual;
        f->driver_allocation = drv;
        f->allocation_offset_in_bytes = off;
        f->fill_size_in_bytes = n;
        f->fill_pattern = pattern;
        f->destination_virtual_address = dva;
        f->root_page_table_address = root_address(p);
    }
    st = vidmm_paging_emit(a, &op);
    if (st >= 0) {
        pp->chunks++;
        pp->chunks64 += ws == PP_SRC64 || wd == PP_DST64;
    }
    return st;
}

/* One move through the windows: src NULL = a fill of dst. */
static vidmm_status move(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                         const struct vidmm_placement *dst, uint32_t pattern)
{
    struct vidmm_paging_process *pp = a->pp;
    /* A driver failure may have stopped the last move before its unmap:
     * clear the windows first, as that move should have. */
    vidmm_status st = unmap_windows(a, pp);
    for (uint64_t off = 0; off < al->size && st >= 0;) {
        uint64_t n = al->size - off < pp->window ? al->size - off : pp->window;
        st = emit_chunk(a, pp, al, src, dst, off, n, pattern);
        off += n;
    }
    vidmm_status u = unmap_windows(a, pp);
    pp->unmap_owed = windows_mapped(pp);   /* the driver failed the unmap too */
    pp->moves++;
    return st < 0 ? st : u;
}

vidmm_status vidmm_paging_process_copy(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                           const struct vidmm_placement *dst)
{
    return move(a, al, src, dst, 0);
}

vidmm_status vidmm_paging_process_fill(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *pl,
                           uint32_t pattern)
{
    return move(a, al, NULL, pl, pattern);
}

int vidmm_paging_process_fault_locked(struct vidmm_adapter *a, uint64_t t, uint64_t va)
{
    struct vidmm_paging_process *pp = a->pp;
    if (!pp || t != pp->proc.self)
        return 0;
    /* A paging operation faulted: vidmm mapped less than it asked the
     * driver to move, or the driver walked wrongly.  Either way a bug and
     * the content it moved is undefined: counted (and queryable), and
     * treated as an unrecoverable paging fault - the next wait or poll
     * resets the adapter (D31); what paging had not completed before
     * this buffer counts as aborted. */
    pp->faults++;
    pp->fault_va = va;
    vidmm_fence_paging_fault_locked(a);
    return 1;
}

vidmm_status vidmm_paging_process_rebuild(struct vidmm_adapter *a)
{
    struct vidmm_paging_process *pp = a->pp;
    if (!pp)
        return VIDMM_OK;
    vidmm_status st = vidmm_pt_rebuild(a, &pp->proc);
    memset(pp->mapped, 0, sizeof(pp->mapped));   /* its windows are invalid now */
    pp->unmap_owed = 0;
    vidmm_status r = vidmm_pt_flush(a, &pp->proc);
    return st < 0 ? st : r;
}

int vidmm_paging_process_check(const struct vidmm_adapter *a, uint64_t *bytes, char *msg, size_t n)
{
    const struct vidmm_paging_process *pp = a->pp;
    if (!pp)
        return 0;
    const struct vidmm_process *p = &pp->proc;
    int e = 0;
    uint64_t tables = 0;
    vidmm_pt_account(vidmm_pt_root(p), bytes, &tables);
    if (!vidmm_pt_root(p) || !vidmm_pt_is_paging_process(p) || p->adapter != a) {
        snprintf(msg, n, "paging process: no root or not marked as the paging process");
        return 1;
    }
    if (p->live_prev || p->live_next || a->process_first == p) {
        e++;
        snprintf(msg, n, "paging process: listed with the processes (handle 0x%llx)", (unsigned long long)p->self);
    }
    const struct vidmm_gpummu_info *g = &a->gpummu;
    uint64_t span = 2 * pp->window;
    if (!pp->window || pp->window % VIDMM_PAGE_64K || pp->scratch_va < g->leaf_span[0] || pp->scratch_va > g->va_size ||
        span > g->va_size - pp->scratch_va) {
        e++;
        snprintf(msg, n, "paging process: scratch area [0x%llx, +0x%llx) outside its VA space",
                 (unsigned long long)pp->scratch_va, (unsigned long long)span);
        return e;
    }
    int te = vidmm_pt_check_tree(a, p, msg, n);
    e += te;
    if (!vidmm_pt_covered(a, p, pp->scratch_va, span, 0)) {
        e++;
        snprintf(msg, n, "paging process: a 4 KB leaf of the scratch area is missing");
    }
    if (pp->scratch_va64) {
        if (pp->scratch_va64 % g->leaf_span[0] || pp->scratch_va64 < pp->scratch_va + span ||
            pp->scratch_va64 > g->va_size || span > g->va_size - pp->scratch_va64) {
            e++;
            snprintf(msg, n, "paging process: 64 KB scratch area [0x%llx, +0x%llx) misplaced",
                     (unsigned long long)pp->scratch_va64, (unsigned long long)span);
        } else if (!vidmm_pt_covered(a, p, pp->scratch_va64, span, 1)) {
            e++;
            snprintf(msg, n, "paging process: a 64 KB leaf of the 64 KB scratch area is missing");
        }
    }
    for (int w = PP_SRC; w <= PP_DST64; w++) {
        if (pp->mapped[w] > pp->window || (w >= PP_SRC64 && pp->mapped[w] && !pp->scratch_va64)) {
            e++;
            snprintf(msg, n, "paging process: window %d mapped over 0x%llx bytes, beyond the window", w,
                     (unsigned long long)pp->mapped[w]);
        } else if (pp->mapped[w] && !pp->unmap_owed) {
            e++;
            snprintf(msg, n, "paging process: 0x%llx bytes of window %d still mapped between moves",
                     (unsigned long long)pp->mapped[w], w);
        }
    }
    return e;
}

static vidmm_status adapter_query_paging_process(const struct vidmm_adapter *a, struct vidmm_paging_process_info *out)
{
    if (!a || !out)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !a ? "adapter is NULL" : "out is NULL");
    if (!a->pp)
        return VIDMM_E_NOT_SUPPORTED;
    const struct vidmm_paging_process *pp = a->pp;
    /* A caller of an older generation has no 64 KB members: not written. */
    int gen3 = a->caller_abi >= 3;
    memset(out, 0, gen3 ? sizeof(*out) : offsetof(struct vidmm_paging_process_info, scratch_va_64k));
    out->root = root_address(&pp->proc);
    out->root_entries = vidmm_pt_root(&pp->proc)->entries;
    uint64_t bytes[VIDMM_MAX_SEGMENTS + 1];
    uint64_t tables = 0;
    memset(bytes, 0, sizeof(bytes));
    vidmm_pt_account(vidmm_pt_root(&pp->proc), bytes, &tables);
    out->page_tables = (uint32_t)tables;
    for (uint32_t i = 0; i <= VIDMM_MAX_SEGMENTS; i++)
        out->page_table_bytes += bytes[i];
    out->scratch_va = pp->scratch_va;
    out->window_size = pp->window;
    out->moves = pp->moves;
    out->chunks = pp->chunks;
    if (gen3) {
        out->scratch_va_64k = pp->scratch_va64;
        out->chunks_64k = pp->chunks64;
    }
    pthread_mutex_lock((pthread_mutex_t *)&a->fence_lock);
    out->faults = pp->faults;
    out->last_fault_va = pp->fault_va;
    pthread_mutex_unlock((pthread_mutex_t *)&a->fence_lock);
    return VIDMM_OK;
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_adapter_query_paging_process(const struct vidmm_adapter *a, struct vidmm_paging_process_info *out)
{
    VIDMM_ENTRY(a, adapter_query_paging_process(a, out));
}
