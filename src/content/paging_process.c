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
 * of equal size, source then destination:
 *
 *      0        leaf span      +window          +2 window
 *      | invalid |  source window |  destination window |
 *
 * Window size (D27): the area is a quarter of the largest memory segment
 * (the WDDM 3.2 default for the paging-process VA), at least 4 MiB, at
 * most 256 MiB, rounded down to 128 KiB; each window is half of it.  The
 * floor keeps per-chunk costs (two page-table updates and a TLB flush)
 * small against the bytes moved; the cap bounds the pinned page tables
 * (256 MiB of 4 KB entries is 512 KiB of tables) on very large segments.
 *
 * A move, per chunk of at most one window: UPDATE_PAGE_TABLE of the
 * source bytes into the source window and of the destination bytes into
 * the destination window (4 KB entries: a system page is 4 KB), one
 * FLUSH_TLB, then TRANSFER_VIRTUAL (or FILL_VIRTUAL through the
 * destination window).  The next chunk remaps the same windows: the
 * engine runs paging operations in order, so a remap never overtakes the
 * copy before it.  After the last chunk the used part of both windows is
 * made invalid again and flushed, so no stale scratch translation can
 * reach system pages that are freed later.
 */
#include "model/objects.h"
#include "fence/fence.h"
#include "content/content.h"
#include "content/pp_state.h"
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

static struct vidmm_physical_address root_address(const struct vidmm_process *p)
{
    struct vidmm_physical_address r;
    memset(&r, 0, sizeof(r));
    r.segment_id = p->root->segment_id;
    r.segment_offset = p->root->offset;
    return r;
}

static void pp_free(struct vidmm_adapter *a, struct vidmm_paging_process *pp)
{
    struct vidmm_process *p = &pp->proc;
    if (p->root) {
        (void)vidmm_paging_flush(a);   /* the engine may still walk these tables */
        vidmm_process_bind_root(a, p, p->self, 0);
        vidmm_pt_destroy(a, p->root);
    }
    vidmm_hfree(a->ha, p->pte_buf, (size_t)p->pte_buf_len * sizeof(*p->pte_buf), _Alignof(struct vidmm_pte));
    vidmm_hfree(a->ha, pp, sizeof(*pp), _Alignof(struct vidmm_paging_process));
}

vidmm_status vidmm_pp_init(struct vidmm_adapter *a, char *msg, size_t n)
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
    p->paging_process = 1;
    p->flush_lo = UINT64_MAX;
    p->self = ((vidmm_handle)VIDMM_HANDLE_TYPE_PAGING_PROCESS << 56) | ((vidmm_handle)a->handle_salt << 40);
    pp->scratch_va = base;
    pp->window = area / 2;
    p->pte_buf_len = 1u << g->level[0].page_table_index_bit_count;
    p->pte_buf = vidmm_halloc(a->ha, VIDMM_SITE_PP_PTE_BUF, (size_t)p->pte_buf_len * sizeof(*p->pte_buf), _Alignof(struct vidmm_pte));
    vidmm_status st = p->pte_buf ? VIDMM_OK : VIDMM_E_NO_HOST_MEMORY;
    if (st >= 0)
        st = vidmm_pt_create_root(a, p);
    /* Every table of the scratch area now, 4 KB leaves (system pages are
     * 4 KB): moves never allocate. */
    if (st >= 0)
        st = vidmm_pt_ensure(a, p, base, area, 0);
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

void vidmm_pp_fini(struct vidmm_adapter *a)
{
    if (!a->pp)
        return;
    pp_free(a, a->pp);
    a->pp = NULL;
}

/* Make the used part of both windows invalid again (and flush), so the
 * scratch VA never keeps a translation past the move that made it. */
static vidmm_status unmap_windows(struct vidmm_adapter *a, struct vidmm_paging_process *pp)
{
    struct vidmm_process *p = &pp->proc;
    if (!pp->mapped)
        return VIDMM_OK;
    vidmm_status st = vidmm_pt_write(a, p, pp->scratch_va, pp->mapped, NULL);
    if (st >= 0)
        st = vidmm_pt_write(a, p, pp->scratch_va + pp->window, pp->mapped, NULL);
    if (st >= 0)
        st = vidmm_pt_flush(a, p);
    if (st >= 0)
        pp->mapped = 0;
    return st;
}

static vidmm_status emit_chunk(struct vidmm_adapter *a, struct vidmm_paging_process *pp,
                               const struct vidmm_allocation *al, const struct vidmm_placement *src,
                               const struct vidmm_placement *dst, uint64_t off, uint64_t n, uint32_t pattern)
{
    struct vidmm_process *p = &pp->proc;
    uint64_t sva = pp->scratch_va, dva = pp->scratch_va + pp->window;
    void *drv = al->info.driver_allocation;
    vidmm_status st = VIDMM_OK;
    if (src)
        st = vidmm_pt_map_placement(a, p, sva, src, off, n, drv);
    if (st >= 0)
        st = vidmm_pt_map_placement(a, p, dva, dst, off, n, drv);
    if (n > pp->mapped)
        pp->mapped = n;   /* even after a failure: some entries may be valid */
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
    if (st >= 0)
        pp->chunks++;
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
    pp->unmap_owed = pp->mapped != 0;   /* the driver failed the unmap too */
    pp->moves++;
    return st < 0 ? st : u;
}

vidmm_status vidmm_pp_copy(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *src,
                           const struct vidmm_placement *dst)
{
    return move(a, al, src, dst, 0);
}

vidmm_status vidmm_pp_fill(struct vidmm_adapter *a, struct vidmm_allocation *al, const struct vidmm_placement *pl,
                           uint32_t pattern)
{
    return move(a, al, NULL, pl, pattern);
}

int vidmm_pp_fault_locked(struct vidmm_adapter *a, uint64_t t, uint64_t va)
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

vidmm_status vidmm_pp_rebuild(struct vidmm_adapter *a)
{
    struct vidmm_paging_process *pp = a->pp;
    if (!pp)
        return VIDMM_OK;
    vidmm_status st = vidmm_pt_rebuild(a, &pp->proc);
    pp->mapped = 0;      /* its windows are invalid now */
    pp->unmap_owed = 0;
    vidmm_status r = vidmm_pt_flush(a, &pp->proc);
    return st < 0 ? st : r;
}

int vidmm_pp_check(const struct vidmm_adapter *a, uint64_t *bytes, char *msg, size_t n)
{
    const struct vidmm_paging_process *pp = a->pp;
    if (!pp)
        return 0;
    const struct vidmm_process *p = &pp->proc;
    int e = 0;
    uint64_t tables = 0;
    vidmm_pt_account(p->root, bytes, &tables);
    if (!p->root || !p->paging_process || p->adapter != a) {
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
    if (!vidmm_pt_covered(a, p, pp->scratch_va, span)) {
        e++;
        snprintf(msg, n, "paging process: a 4 KB leaf of the scratch area is missing");
    }
    if (pp->mapped && !pp->unmap_owed) {
        e++;
        snprintf(msg, n, "paging process: 0x%llx bytes of the windows still mapped between moves",
                 (unsigned long long)pp->mapped);
    }
    return e;
}

static vidmm_status adapter_query_paging_process(const struct vidmm_adapter *a, struct vidmm_paging_process_info *out)
{
    if (!a || !out)
        return VIDMM_E_INVALID_ARG;
    if (!a->pp)
        return VIDMM_E_NOT_SUPPORTED;
    const struct vidmm_paging_process *pp = a->pp;
    memset(out, 0, sizeof(*out));
    out->root = root_address(&pp->proc);
    out->root_entries = pp->proc.root->entries;
    uint64_t bytes[VIDMM_MAX_SEGMENTS + 1];
    uint64_t tables = 0;
    memset(bytes, 0, sizeof(bytes));
    vidmm_pt_account(pp->proc.root, bytes, &tables);
    out->page_tables = (uint32_t)tables;
    for (uint32_t i = 0; i <= VIDMM_MAX_SEGMENTS; i++)
        out->page_table_bytes += bytes[i];
    out->scratch_va = pp->scratch_va;
    out->window_size = pp->window;
    out->moves = pp->moves;
    out->chunks = pp->chunks;
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
