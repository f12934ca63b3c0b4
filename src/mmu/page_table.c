/*
 * page_table.c - a process's GpuMmu page tables: created, filled and
 * freed by vidmm, written only through UPDATE_PAGE_TABLE paging
 * operations carrying neutral PTE records that the driver turns into its
 * hardware format.
 *
 * Tables are implicit allocations: contiguous ranges of the segment the
 * driver named for their level (or 4 KiB host blocks for segment 0),
 * counted in that segment's commit.  A new table is initialised by one
 * REPEAT update of an invalid entry (vidmm does not know what "invalid"
 * looks like in hardware).  Lower tables are created on demand when a
 * valid entry needs them and kept until the process goes (a table that
 * becomes empty is not freed: fewer page-table moves, and an unmap never
 * needs memory).
 *
 * 64 KB pages (docs/DECISIONS.md D13): a leaf table holds either 4 KB or 64 KB
 * entries, told apart by the level-1 entry that points at it.  A leaf is
 * made with 64 KB entries when the mapping that first needs it is 64 KB
 * aligned in VA, offset and size and its allocation lives in a 64 KB-page
 * segment.  When anything else must be written in its span (a 4 KB
 * mapping, a partial unmap, a move to system memory) the leaf is switched
 * to 4 KB entries once and for all: a new 4 KB leaf is filled from the VA
 * space's ranges, the level-1 entry is pointed at it, the old one freed.
 * The switch happens while preparing a change, so the commit never needs
 * memory.
 *
 * Entry addresses (the DXGK_PTE reference page; D14): a 4 KiB frame number - the segment
 * offset >> 12, or for system memory the host address >> 12.
 *
 * The system paging process (paging/paging_process.c) uses the same
 * tables: its own are placed in each level's
 * PagingProcessPageTableSegmentId, all created when the adapter opens,
 * and its scratch window is written with vidmm_pt_map_placement, which
 * maps bytes of a placement rather than a VA range's allocation.
 */
#include "model/objects.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "mmu/mmu.h"
#include "paging/paging.h"

#include <stdio.h>
#include <string.h>

static uint32_t level_shift(const struct vidmm_gpummu_info *g, uint32_t level)
{
    uint32_t s = 12;
    for (uint32_t l = 0; l < level; l++)
        s += g->level[l].page_table_index_bit_count;
    return s;
}

static uint32_t index_of(const struct vidmm_gpummu_info *g, uint32_t level, uint64_t va)
{
    uint32_t bits = g->level[level].page_table_index_bit_count;
    return (uint32_t)((va >> level_shift(g, level)) & ((1ull << bits) - 1));
}

static struct vidmm_physical_address table_address(const struct vidmm_page_table *pt)
{
    struct vidmm_physical_address pa;
    memset(&pa, 0, sizeof(pa));
    pa.segment_id = pt->segment_id;
    pa.segment_offset = pt->offset;
    return pa;
}

static uint64_t frame_of(uint32_t segment_id, uint64_t offset)
{
    (void)segment_id;
    return offset >> 12;
}

static vidmm_status emit_entries(struct vidmm_adapter *a, const struct vidmm_page_table *pt, uint32_t start,
                                 uint32_t count, const struct vidmm_pte *e, uint32_t flags, uint64_t first_va,
                                 void *driver_allocation, uint64_t alloc_offset)
{
    /* Powered down, the GPU takes no work and the tables' memory is
     * written again from the VA trees on resume (vidmm_pt_rebuild): a
     * change made now (a destroy, a teardown) lives in those trees only
     * (docs/DECISIONS.md D59). */
    if (vidmm_powered_down(a))
        return VIDMM_OK;
    struct vidmm_build_paging_buffer_args op;
    memset(&op, 0, sizeof(op));
    op.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    struct vidmm_paging_update_page_table *u = &op.u.update_page_table;
    u->page_table_level = pt->level;
    u->flags = flags | (pt->is64k ? VIDMM_UPDATE_PT_USE_64KB_PAGES : 0u);
    u->driver_allocation = driver_allocation;
    u->page_table_address = table_address(pt);
    u->page_table_entries = e;
    u->start_index = start;
    u->num_page_table_entries = count;
    u->allocation_offset_in_bytes = alloc_offset;
    u->first_pte_virtual_address = first_va;
    return vidmm_paging_emit(a, &op);
}

int vidmm_pt_leaf64_supported(const struct vidmm_adapter *a)
{
    return a->gpummu.caps.leaf_page_table_size_for_64k_pages_in_bytes != 0 &&
           a->gpummu.level[0].page_table_index_bit_count > 4;
}

/* A table of level for p; entries/size 0 = the level's own (a resizable
 * root passes what the driver sized).  The system paging process keeps
 * its tables where the driver named for it (they are pinned there). */
static vidmm_status table_new_sized(struct vidmm_adapter *a, const struct vidmm_process *p, uint32_t level,
                                    int is64k, uint32_t entries, uint64_t size, struct vidmm_page_table **out)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    const struct vidmm_page_table_level_desc *d = &g->level[level];
    struct vidmm_page_table *pt = vidmm_hzalloc(a->ha, VIDMM_SITE_PT_OBJECT, sizeof(*pt), _Alignof(struct vidmm_page_table));
    if (!pt)
        return VIDMM_E_NO_HOST_MEMORY;
    pt->level = level;
    pt->segment_id = p->mmu.paging_process ? d->paging_process_page_table_segment_id : d->page_table_segment_id;
    pt->size = size ? size : d->page_table_size_in_bytes;
    pt->entries = entries ? entries : 1u << d->page_table_index_bit_count;
    if (level == 0 && is64k) {
        pt->is64k = 1;
        pt->size = g->caps.leaf_page_table_size_for_64k_pages_in_bytes;
        pt->entries >>= 4;
    }
    vidmm_status st;
    if (level > 0) {
        pt->child = vidmm_hzalloc(a->ha, VIDMM_SITE_PT_CHILDREN, (size_t)pt->entries * sizeof(*pt->child), _Alignof(struct vidmm_page_table *));
        if (!pt->child) {
            st = VIDMM_E_NO_HOST_MEMORY;
            goto fail;
        }
    }
    if (pt->segment_id == 0) {
        pt->host = vidmm_hzalloc(a->ha, VIDMM_SITE_PT_HOST_COPY, (size_t)pt->size, VIDMM_PAGE_4K);
        if (!pt->host) {
            st = VIDMM_E_NO_HOST_MEMORY;
            goto fail;
        }
        pt->offset = (uint64_t)(uintptr_t)pt->host;
    } else {
        struct vidmm_segment *s = &a->seg[pt->segment_id];
        uint64_t align = d->page_table_alignment_in_bytes ? d->page_table_alignment_in_bytes : s->page_size;
        st = vidmm_ra_alloc(&s->ra, pt->size, align, 0, &pt->offset, &pt->ra_node);
        /* Page tables displace data: offered and unreferenced allocations
         * are evicted to make room (never what a device lists). */
        while (st == VIDMM_E_NO_SEGMENT_SPACE && !p->mmu.paging_process &&
               a->up.make_room(a, pt->segment_id, pt->size, align) >= 0)
            st = vidmm_ra_alloc(&s->ra, pt->size, align, 0, &pt->offset, &pt->ra_node);
        if (st < 0)
            goto fail;
        s->committed += pt->size;
    }
    /* Every entry invalid, in whatever form the hardware wants. */
    struct vidmm_pte invalid;
    memset(&invalid, 0, sizeof(invalid));
    st = emit_entries(a, pt, 0, pt->entries, &invalid, VIDMM_UPDATE_PT_REPEAT | VIDMM_UPDATE_PT_INITIAL_UPDATE, 0,
                      NULL, 0);
    if (st < 0) {
        vidmm_pt_destroy(a, pt);
        return st;
    }
    *out = pt;
    return VIDMM_OK;
fail:
    vidmm_hfree(a->ha, pt->child, (size_t)pt->entries * sizeof(*pt->child), _Alignof(struct vidmm_page_table *));
    vidmm_hfree(a->ha, pt, sizeof(*pt), _Alignof(struct vidmm_page_table));
    return st;
}

static vidmm_status table_new(struct vidmm_adapter *a, const struct vidmm_process *p, uint32_t level, int is64k,
                              struct vidmm_page_table **out)
{
    return table_new_sized(a, p, level, is64k, 0, 0, out);
}

static vidmm_status link_child(struct vidmm_adapter *a, struct vidmm_page_table *parent, uint32_t idx,
                               struct vidmm_page_table *child, uint64_t va);

/* A resizable root holding at least `need` entries, as the driver sizes
 * it (never more than the VA width allows). */
static vidmm_status root_new(struct vidmm_adapter *a, const struct vidmm_process *p, uint32_t need,
                             struct vidmm_page_table **out)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    uint32_t max = 1u << g->level[g->level_count - 1].page_table_index_bit_count;
    uint32_t n = need;
    uint64_t size = a->ops.get_root_page_table_size(a->driver, &n);
    if (n > max)
        n = max;
    uint32_t seg = p->mmu.paging_process ? g->level[g->level_count - 1].paging_process_page_table_segment_id
                                     : g->level[g->level_count - 1].page_table_segment_id;
    /* The size must be whole pages of the root's segment (driver.h), or
     * the segment's accounting would be short (found by fuzz/driver_desc). */
    if (!size || n < need || (uint64_t)n * 8u > size * 64u || (seg && size % a->seg[seg].page_size))
        return VIDMM_E_DRIVER_FAILURE;
    return table_new_sized(a, p, g->level_count - 1, 0, n, size, out);
}

void vidmm_pt_destroy(struct vidmm_adapter *a, struct vidmm_page_table *pt)
{
    if (!pt)
        return;
    if (pt->child) {
        for (uint32_t i = 0; i < pt->entries; i++)
            if (pt->child[i])
                vidmm_pt_destroy(a, pt->child[i]);
        vidmm_hfree(a->ha, pt->child, (size_t)pt->entries * sizeof(*pt->child), _Alignof(struct vidmm_page_table *));
    }
    if (pt->segment_id == 0) {
        if (pt->host) {
            (void)vidmm_paging_flush(a); /* the GPU may still read it */
            vidmm_hfree(a->ha, pt->host, (size_t)pt->size, VIDMM_PAGE_4K);
        }
    } else if (pt->size) {
        struct vidmm_segment *s = &a->seg[pt->segment_id];
        vidmm_ra_free(&s->ra, pt->ra_node);
        s->committed -= pt->size;
    }
    vidmm_hfree(a->ha, pt, sizeof(*pt), _Alignof(struct vidmm_page_table));
}

vidmm_status vidmm_pt_create_root(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (a->gpummu.root_resizable)
        return root_new(a, p, 1, &p->mmu.root);   /* grows with the VA in use */
    return table_new(a, p, a->gpummu.level_count - 1, 0, &p->mmu.root);
}

/* Grow a resizable root to hold index `need - 1`: a new root, the old
 * entries linked again, every binding moved (DxgkDdiSetRootPageTable for
 * the process and each of its contexts), the old root freed.  The root
 * never shrinks.  A growth made for a change that is then refused stays:
 * a larger root is harmless. */
static vidmm_status root_grow(struct vidmm_adapter *a, struct vidmm_process *p, uint32_t need)
{
    struct vidmm_page_table *old = p->mmu.root, *n;
    vidmm_status st = root_new(a, p, need, &n);
    if (st < 0)
        return st;
    const struct vidmm_gpummu_info *g = &a->gpummu;
    uint32_t shift = 12;
    for (uint32_t l = 0; l + 1 < g->level_count; l++)
        shift += g->level[l].page_table_index_bit_count;
    for (uint32_t i = 0; i < old->entries; i++) {
        if (!old->child[i])
            continue;
        st = link_child(a, n, i, old->child[i], (uint64_t)i << shift);
        if (st < 0) {
            vidmm_hfree(a->ha, n->child, (size_t)n->entries * sizeof(*n->child), _Alignof(struct vidmm_page_table *));
            n->child = NULL;   /* the children still belong to the old root */
            vidmm_pt_destroy(a, n);
            return st;
        }
        n->child[i] = old->child[i];
    }
    n->live_children = old->live_children;
    p->mmu.root = n;
    a->up.root_moved(a, p);
    /* The old root: children moved, storage freed (later paging
     * operations only, which run after the ones above). */
    vidmm_hfree(a->ha, old->child, (size_t)old->entries * sizeof(*old->child), _Alignof(struct vidmm_page_table *));
    old->child = NULL;
    vidmm_pt_destroy(a, old);
    p->mmu.root_grows++;
    return VIDMM_OK;
}

/* Point entry idx of parent at child. */
static vidmm_status link_child(struct vidmm_adapter *a, struct vidmm_page_table *parent, uint32_t idx,
                               struct vidmm_page_table *child, uint64_t va)
{
    struct vidmm_pte e;
    memset(&e, 0, sizeof(e));
    e.flags = VIDMM_PTE_VALID | ((uint64_t)child->segment_id << VIDMM_PTE_SEGMENT_SHIFT) |
              (child->is64k ? VIDMM_PTE_PAGE_TABLE_64KB : 0);
    e.page_address = frame_of(child->segment_id, child->offset);
    return emit_entries(a, parent, idx, 1, &e, 0, va, NULL, 0);
}

static vidmm_status write_leaf(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_page_table *leaf,
                               uint64_t cur, uint64_t stop, const struct vidmm_va_desc *d);

/* Replace the 64 KB leaf at parent->child[idx] (covering [span, span +
 * leaf span)) by a 4 KB leaf holding the same translations. */
static vidmm_status demote_leaf(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_page_table *parent,
                                uint32_t idx, uint64_t span)
{
    uint64_t end = span + a->gpummu.leaf_span[0];
    struct vidmm_page_table *n;
    vidmm_status st = table_new(a, p, 0, 0, &n);
    if (st < 0)
        return st;
    for (const struct vidmm_va_range *r = vidmm_va_first_from(&p->vs, span); r && r->d.va < end;
         r = vidmm_va_next(&p->vs, r)) {
        uint64_t lo = r->d.va > span ? r->d.va : span;
        uint64_t hi = r->d.va + r->d.size < end ? r->d.va + r->d.size : end;
        if (r->d.state == VIDMM_VA_RESERVED && r->d.mode != VIDMM_VA_ZERO)
            continue; /* invalid already */
        st = write_leaf(a, p, n, lo, hi, &r->d);
        if (st < 0) {
            vidmm_pt_destroy(a, n);
            return st;
        }
    }
    st = link_child(a, parent, idx, n, span);
    if (st < 0) {
        vidmm_pt_destroy(a, n);
        return st;
    }
    struct vidmm_page_table *old = parent->child[idx];
    n->held_valid |= old->held_valid;   /* the same translations: as needed as the leaf it replaces */
    n->stranded |= old->stranded;
    parent->child[idx] = n;
    vidmm_pt_destroy(a, old);
    if (span < p->mmu.flush_lo)
        p->mmu.flush_lo = span;
    if (end > p->mmu.flush_hi)
        p->mmu.flush_hi = end;
    return VIDMM_OK;
}

/* Walk the leaf spans of [va, va+size): create what is missing (when
 * create), demote 64 KB leaves (when !want64k).  Without create, VA with
 * no table at some level is skipped whole, so the walk costs the tables
 * there are, not the span (an UPDATE over a 2 TiB reservation). */
static vidmm_status walk_spans(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                               int create, int want64k)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    if (!size || !p->mmu.root)
        return VIDMM_OK; /* IoMmu processes have no GPU page tables */
    uint64_t end = va + size;
    uint64_t leaf_span = g->leaf_span[0];
    uint32_t top = g->level_count - 1;
    if (create && index_of(g, top, end - 1) >= p->mmu.root->entries) {
        vidmm_status st = root_grow(a, p, index_of(g, top, end - 1) + 1);
        if (st < 0)
            return st;
    }
    for (uint64_t cur = va & ~(leaf_span - 1), next; cur < end; cur = next) {
        next = cur + leaf_span;
        struct vidmm_page_table *t = p->mmu.root;
        for (uint32_t l = top; l > 0 && t; l--) {
            uint32_t idx = index_of(g, l, cur);
            if (idx >= t->entries)   /* past a resizable root: no tables there, nor further up */
                return VIDMM_OK;
            struct vidmm_page_table *c = t->child[idx];
            if (!c) {
                if (!create) {
                    uint64_t span = g->leaf_span[l - 1];   /* what the missing child would cover */
                    next = (cur & ~(span - 1)) + span;
                    break;
                }
                vidmm_status st = table_new(a, p, l - 1, l == 1 && want64k && vidmm_pt_leaf64_supported(a), &c);
                if (st < 0)
                    return st;
                c->epoch = p->mmu.epoch;
                st = link_child(a, t, idx, c, cur);
                if (st < 0) {
                    vidmm_pt_destroy(a, c);
                    return st;
                }
                t->child[idx] = c;
                t->live_children++;
            } else if (l == 1 && c->is64k && !want64k) {
                vidmm_status st = demote_leaf(a, p, t, idx, cur);
                if (st < 0)
                    return st;
                c = t->child[idx];
            }
            t = c;
        }
        if (next <= cur)
            break;   /* the top of the 64-bit space */
    }
    return VIDMM_OK;
}

vidmm_status vidmm_pt_ensure(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                             int want64k)
{
    return walk_spans(a, p, va, size, 1, want64k);
}

void vidmm_pt_begin(struct vidmm_process *p)
{
    p->mmu.epoch++;
}

static vidmm_status rollback_table(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_page_table *t)
{
    if (!t->child)
        return VIDMM_OK;
    for (uint32_t i = 0; i < t->entries; i++) {
        struct vidmm_page_table *c = t->child[i];
        if (!c)
            continue;
        if (c->epoch == p->mmu.epoch) {
            struct vidmm_pte invalid;
            memset(&invalid, 0, sizeof(invalid));
            vidmm_status st = emit_entries(a, t, i, 1, &invalid, 0, 0, NULL, 0);
            if (st < 0)
                return st;
            t->child[i] = NULL;
            t->live_children--;
            vidmm_pt_destroy(a, c);
        } else {
            vidmm_status st = rollback_table(a, p, c);
            if (st < 0)
                return st;
        }
    }
    return VIDMM_OK;
}

/* The tables of this epoch a refused rollback left linked: empty, sound
 * (invalid entries are what no table says), and kept like any other. */
static void strand_epoch(struct vidmm_page_table *t, uint64_t epoch, int mark)
{
    mark |= t->epoch == epoch;
    t->stranded |= (uint8_t)mark;
    for (uint32_t i = 0; t->child && i < t->entries; i++)
        if (t->child[i])
            strand_epoch(t->child[i], epoch, mark);
}

vidmm_status vidmm_pt_rollback(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (!p->mmu.root || !p->mmu.epoch)
        return VIDMM_OK;
    vidmm_status st = rollback_table(a, p, p->mmu.root);
    if (st < 0)
        strand_epoch(p->mmu.root, p->mmu.epoch, 0);
    return st;
}

vidmm_status vidmm_pt_demote(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size)
{
    return walk_spans(a, p, va, size, 0, 0);
}

int vidmm_pt_can_use_64k(const struct vidmm_adapter *a, const struct vidmm_allocation *al,
                         const struct vidmm_placement *pl, uint64_t va, uint64_t off, uint64_t size)
{
    const uint64_t m = VIDMM_PAGE_64K - 1;
    if (!vidmm_pt_leaf64_supported(a) || (va & m) || (off & m) || (size & m) || pl->sys || !pl->pages.count)
        return 0;
    if (al->info.flags & VIDMM_ALLOC_DISABLE_LARGE_PAGE_MAPPING)
        return 0;
    return a->seg[pl->segment_id].page_size == VIDMM_PAGE_64K;
}

static struct vidmm_page_table *leaf_of(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    struct vidmm_page_table *t = p->mmu.root;
    for (uint32_t l = g->level_count - 1; l > 0 && t; l--) {
        uint32_t idx = index_of(g, l, va);
        t = idx < t->entries ? t->child[idx] : NULL;
    }
    return t;
}

/* The leaf covering va for the rules checker (src/adapter/rules.c):
 * 0 = none, 4 = 4 KB entries, 64 = 64 KB entries.  Read-only. */
int vidmm_pt_leaf_kind(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va)
{
    if (!p->mmu.root)
        return 0;
    const struct vidmm_page_table *t = leaf_of(a, p, va);
    return !t ? 0 : t->is64k ? 64 : 4;
}

/* Where byte `off` of the allocation is, and how many bytes from there
 * are contiguous. */
static void locate(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint64_t off,
                   uint32_t *segment_id, uint64_t *addr, uint64_t *contiguous)
{
    const struct vidmm_placement *pl = &al->pl;
    if (pl->sys) {
        *segment_id = 0;
        *addr = (uint64_t)(uintptr_t)pl->sys + off;
        *contiguous = al->size - off;
        return;
    }
    uint64_t base = 0;
    for (uint32_t i = 0; i < pl->pages.count; i++) {
        const struct vidmm_extent *e = &pl->pages.ext[i];
        if (off < base + e->size) {
            *segment_id = pl->segment_id;
            *addr = e->offset + (off - base);
            *contiguous = e->size - (off - base);
            return;
        }
        base += e->size;
    }
    (void)a;
    *segment_id = 0;
    *addr = 0;
    *contiguous = 0;
}

/* Write the entries of leaf for [cur, stop) (inside its span) as d says. */
static vidmm_status write_leaf(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_page_table *leaf,
                               uint64_t cur, uint64_t stop, const struct vidmm_va_desc *d)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    struct vidmm_allocation *al = NULL;
    uint64_t flags = 0;
    if (d && (d->state == VIDMM_VA_MAPPED || (d->state == VIDMM_VA_RESERVED && d->mode == VIDMM_VA_ZERO)))
        leaf->held_valid = 1;
    if (d && d->state == VIDMM_VA_MAPPED) {
        al = vidmm_handle_get_any(a, d->object);
        if (!al)
            return vidmm_fail(VIDMM_E_INVALID_HANDLE, "allocation handle 0x%llx: not a live allocation of this adapter",
                              (unsigned long long)(d->object));
        /* An evicted allocation keeps its VA, with invalid entries: a
         * GPU access faults until it is made resident again. */
        flags = VIDMM_PTE_VALID;
        if (d->prot & VIDMM_VA_PROT_READ_ONLY)
            flags |= VIDMM_PTE_READ_ONLY;
        if (d->prot & VIDMM_VA_PROT_NO_EXECUTE)
            flags |= VIDMM_PTE_NO_EXECUTE;
        if (!al->resident) {
            flags = 0;
            al = NULL;
        }
    } else if (d && d->state == VIDMM_VA_RESERVED && d->mode == VIDMM_VA_ZERO) {
        flags = VIDMM_PTE_VALID | VIDMM_PTE_ZERO;
    }
    /* A 64 KB leaf takes whole 64 KB pages only (prepare made sure). */
    unsigned shift = leaf->is64k ? 16 : 12;
    if (leaf->is64k && ((cur | stop) & (VIDMM_PAGE_64K - 1)))
        return VIDMM_E_STATE;
    uint32_t n = (uint32_t)((stop - cur) >> shift);
    uint32_t start = index_of(g, 0, cur) >> (leaf->is64k ? 4 : 0);
    vidmm_status st;
    if (!(flags & VIDMM_PTE_VALID) || (flags & VIDMM_PTE_ZERO)) {
        struct vidmm_pte e;
        memset(&e, 0, sizeof(e));
        e.flags = flags;
        st = emit_entries(a, leaf, start, n, &e, VIDMM_UPDATE_PT_REPEAT, cur, NULL, 0);
    } else {
        uint64_t off = d->object_offset + (cur - d->va);
        uint32_t k = 0;
        while (k < n) {
            uint32_t seg;
            uint64_t addr, contiguous;
            locate(a, al, off + ((uint64_t)k << shift), &seg, &addr, &contiguous);
            if (contiguous < (1ull << shift) || (leaf->is64k && (addr & (VIDMM_PAGE_64K - 1))))
                return VIDMM_E_STATE;
            uint64_t run = contiguous >> shift;
            for (uint64_t j = 0; j < run && k < n; j++, k++) {
                p->mmu.pte_buf[k].flags = flags | ((uint64_t)seg << VIDMM_PTE_SEGMENT_SHIFT);
                p->mmu.pte_buf[k].page_address = frame_of(seg, addr) + (j << (shift - 12));
            }
        }
        st = emit_entries(a, leaf, start, n, p->mmu.pte_buf, 0, cur, al->info.driver_allocation, off);
    }
    if (st < 0)
        return st;
    if (cur < p->mmu.flush_lo)
        p->mmu.flush_lo = cur;
    if (stop > p->mmu.flush_hi)
        p->mmu.flush_hi = stop;
    return VIDMM_OK;
}

vidmm_status vidmm_pt_write(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va, uint64_t size,
                            const struct vidmm_va_desc *d)
{
    VIDMM_ASSERT_LOCKED(a);
    const struct vidmm_gpummu_info *g = &a->gpummu;
    int valid = d && (d->state == VIDMM_VA_MAPPED || d->mode == VIDMM_VA_ZERO);
    uint64_t end = va + size;
    uint64_t leaf_span = g->leaf_span[0];
    uint64_t cur = va;
    while (cur < end) {
        uint64_t table_end = (cur & ~(leaf_span - 1)) + leaf_span;
        uint64_t stop = table_end < end && table_end > cur ? table_end : end;
        struct vidmm_page_table *leaf = leaf_of(a, p, cur);
        if (!leaf) {
            if (valid)
                return VIDMM_E_STATE; /* vidmm_pt_ensure was not called: a bug */
        } else {
            vidmm_status st = write_leaf(a, p, leaf, cur, stop, d);
            if (st < 0)
                return st;
        }
        cur = stop;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_pt_map_placement(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t va,
                                    const struct vidmm_placement *pl, uint64_t off, uint64_t size,
                                    void *driver_allocation)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    if ((va | off | size) & (VIDMM_PAGE_4K - 1))
        return VIDMM_E_STATE;
    /* A cursor over the placement: the current contiguous run (segment,
     * address of the next page, bytes left in it).  Found once, then
     * advanced extent by extent, so a page set costs O(extents + pages). */
    uint32_t seg, ext = 0;
    uint64_t addr, left;
    if (pl->sys) {
        if (off + size > pl->mdl.page_count * VIDMM_PAGE_4K)
            return VIDMM_E_STATE;
        seg = 0;
        addr = (uint64_t)(uintptr_t)pl->sys + off;
        left = size;
    } else {
        uint64_t base = 0;
        while (ext < pl->pages.count && off >= base + pl->pages.ext[ext].size)
            base += pl->pages.ext[ext++].size;
        if (ext == pl->pages.count)
            return VIDMM_E_STATE;
        seg = pl->segment_id;
        addr = pl->pages.ext[ext].offset + (off - base);
        left = pl->pages.ext[ext].size - (off - base);
    }
    uint64_t leaf_span = g->leaf_span[0];
    uint64_t cur = va, end = va + size;
    while (cur < end) {
        uint64_t table_end = (cur & ~(leaf_span - 1)) + leaf_span;
        uint64_t stop = table_end < end && table_end > cur ? table_end : end;
        struct vidmm_page_table *leaf = leaf_of(a, p, cur);
        if (!leaf)
            return VIDMM_E_STATE;   /* the windows' leaves are made at open: a bug */
        /* A 64 KB leaf (the 64 KB windows) takes whole 64 KB pages of
         * 64 KB-aligned, contiguous memory: the caller chose such a
         * placement range; anything else is a bug, refused before any
         * entry is written for this leaf. */
        unsigned shift = leaf->is64k ? 16 : 12;
        uint64_t page = 1ull << shift;
        if ((cur | stop) & (page - 1))
            return VIDMM_E_STATE;
        uint32_t n = (uint32_t)((stop - cur) >> shift);
        for (uint32_t k = 0; k < n; k++) {
            if (!left) {
                if (pl->sys || ++ext >= pl->pages.count)
                    return VIDMM_E_STATE;
                addr = pl->pages.ext[ext].offset;
                left = pl->pages.ext[ext].size;
            }
            if (left < page || (addr & (page - 1)))
                return VIDMM_E_STATE;
            p->mmu.pte_buf[k].flags = VIDMM_PTE_VALID | ((uint64_t)seg << VIDMM_PTE_SEGMENT_SHIFT);
            p->mmu.pte_buf[k].page_address = frame_of(seg, addr);
            addr += page;
            left -= page;
        }
        leaf->held_valid = 1;
        vidmm_status st = emit_entries(a, leaf, index_of(g, 0, cur) >> (shift - 12), n, p->mmu.pte_buf, 0, cur,
                                       driver_allocation, off + (cur - va));
        if (st < 0)
            return st;
        cur = stop;
    }
    if (va < p->mmu.flush_lo)
        p->mmu.flush_lo = va;
    if (end > p->mmu.flush_hi)
        p->mmu.flush_hi = end;
    return VIDMM_OK;
}

vidmm_status vidmm_pt_flush(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (p->mmu.flush_hi <= p->mmu.flush_lo)
        return VIDMM_OK;
    if (vidmm_powered_down(a)) {
        /* No TLB to flush while down; resume flushes every range (D59). */
        p->mmu.flush_lo = UINT64_MAX;
        p->mmu.flush_hi = 0;
        return VIDMM_OK;
    }
    struct vidmm_build_paging_buffer_args op;
    memset(&op, 0, sizeof(op));
    op.operation = VIDMM_PAGING_FLUSH_TLB;
    op.u.flush_tlb.root_page_table_address = table_address(p->mmu.root);
    op.u.flush_tlb.start_virtual_address = p->mmu.flush_lo;
    op.u.flush_tlb.end_virtual_address = p->mmu.flush_hi;
    p->mmu.flush_lo = UINT64_MAX;
    p->mmu.flush_hi = 0;
    return vidmm_paging_emit(a, &op);
}

int vidmm_pt_covered(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t va, uint64_t size,
                     int is64k)
{
    uint64_t leaf_span = a->gpummu.leaf_span[0];
    for (uint64_t cur = va & ~(leaf_span - 1); cur < va + size; cur += leaf_span) {
        const struct vidmm_page_table *leaf = leaf_of(a, p, cur);
        if (!leaf || leaf->is64k != (is64k != 0))
            return 0;
    }
    return 1;
}

/* One table and its subtree; returns the violations, the last one named
 * in msg. */
static int check_table(const struct vidmm_adapter *a, const struct vidmm_process *p, const struct vidmm_page_table *t,
                       uint32_t level, int is_root, char *msg, size_t n)
{
    const struct vidmm_gpummu_info *g = &a->gpummu;
    const struct vidmm_page_table_level_desc *d = &g->level[level];
    int e = 0;
    uint32_t seg = p->mmu.paging_process ? d->paging_process_page_table_segment_id : d->page_table_segment_id;
    uint32_t want = 1u << d->page_table_index_bit_count;
    if (t->is64k)
        want >>= 4;
    if (is_root && g->root_resizable)
        want = t->entries;   /* sized by the driver; checked against the VA width below */
    if (t->level != level || t->segment_id != seg || t->entries != want || (t->is64k && level) ||
        (is_root && g->root_resizable && t->entries > 1u << d->page_table_index_bit_count)) {
        e++;
        snprintf(msg, n, "page table at level %u: level %u, segment %u (want %u), %u entries (want %u)", level,
                 t->level, t->segment_id, seg, t->entries, want);
    }
    if (seg) {
        const struct vidmm_segment *s = &a->seg[seg];
        if (!t->size || t->offset > s->size || t->size > s->size - t->offset ||
            vidmm_ra_node_offset(&s->ra, t->ra_node) != t->offset) {
            e++;
            snprintf(msg, n, "page table at level %u: [0x%llx, +0x%llx) disagrees with segment %u's allocator",
                     level, (unsigned long long)t->offset, (unsigned long long)t->size, seg);
        }
    } else if (!t->host || t->offset != (uint64_t)(uintptr_t)t->host) {
        e++;
        snprintf(msg, n, "page table at level %u: system-memory table without its host block", level);
    }
    if ((level > 0) != (t->child != NULL)) {
        e++;
        snprintf(msg, n, "page table at level %u: child array %s", level, t->child ? "on a leaf" : "missing");
        return e;
    }
    uint32_t live = 0;
    for (uint32_t i = 0; level > 0 && i < t->entries; i++) {
        if (!t->child[i])
            continue;
        live++;
        e += check_table(a, p, t->child[i], level - 1, 0, msg, n);
    }
    if (level > 0 && live != t->live_children) {
        e++;
        snprintf(msg, n, "page table at level %u: %u children, counter says %u", level, live, t->live_children);
    }
    return e;
}

int vidmm_pt_check_tree(const struct vidmm_adapter *a, const struct vidmm_process *p, char *msg, size_t n)
{
    if (!p->mmu.root)
        return 0;
    return check_table(a, p, p->mmu.root, a->gpummu.level_count - 1, 1, msg, n);
}

/* Tables below t (at level, covering VA from va) that nothing needs: a
 * leaf that never held a valid entry, a lower table with no child;
 * *first = the VA of the first one. */
static uint64_t unneeded(const struct vidmm_gpummu_info *g, const struct vidmm_page_table *t, uint32_t level,
                         uint64_t va, uint64_t *first)
{
    uint64_t n = 0;
    uint32_t shift = level_shift(g, level);
    for (uint32_t i = 0; i < t->entries; i++) {
        const struct vidmm_page_table *c = t->child[i];
        if (!c)
            continue;
        uint64_t cva = va + ((uint64_t)i << shift);
        int idle = c->child ? c->live_children == 0 : !c->held_valid;
        if (idle && !c->stranded && n++ == 0)
            *first = cva;
        if (c->child) {
            uint64_t f = 0, m = unneeded(g, c, level - 1, cva, &f);
            if (m && !n)
                *first = f;
            n += m;
        }
    }
    return n;
}

uint64_t vidmm_pt_unneeded(const struct vidmm_adapter *a, const struct vidmm_process *p, uint64_t *first_va)
{
    *first_va = 0;
    if (!p->mmu.root || p->mmu.paging_process || !p->mmu.root->child)
        return 0;
    return unneeded(&a->gpummu, p->mmu.root, p->mmu.root->level, 0, first_va);
}

void vidmm_pt_account(const struct vidmm_page_table *pt, uint64_t *bytes, uint64_t *tables)
{
    if (!pt)
        return;
    bytes[pt->segment_id] += pt->segment_id ? pt->size : 0;
    (*tables)++;
    if (pt->child)
        for (uint32_t i = 0; i < pt->entries; i++)
            vidmm_pt_account(pt->child[i], bytes, tables);
}

/* ---- rebuild after the tables' memory lost its content ------------------ */

/* Every entry of t invalid again, then its children linked and rebuilt.
 * va is the first address t covers. */
static vidmm_status rebuild_table(struct vidmm_adapter *a, struct vidmm_page_table *t, uint64_t va)
{
    struct vidmm_pte invalid;
    memset(&invalid, 0, sizeof(invalid));
    vidmm_status st = emit_entries(a, t, 0, t->entries, &invalid,
                                   VIDMM_UPDATE_PT_REPEAT | VIDMM_UPDATE_PT_INITIAL_UPDATE, va, NULL, 0);
    if (st < 0 || !t->child)
        return st;
    uint32_t shift = level_shift(&a->gpummu, t->level);
    for (uint32_t i = 0; i < t->entries; i++) {
        struct vidmm_page_table *c = t->child[i];
        if (!c)
            continue;
        uint64_t cva = va + ((uint64_t)i << shift);
        st = link_child(a, t, i, c, cva);
        if (st >= 0)
            st = rebuild_table(a, c, cva);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

vidmm_status vidmm_pt_rebuild(struct vidmm_adapter *a, struct vidmm_process *p)
{
    if (!p->mmu.root)
        return VIDMM_OK;
    vidmm_status st = rebuild_table(a, p->mmu.root, 0);
    /* Leaf entries are written again by the caller from the allocations'
     * placements (vidmm_process_remap_allocation); the whole VA range is
     * flushed. */
    p->mmu.flush_lo = 0;
    p->mmu.flush_hi = (uint64_t)p->mmu.root->entries << level_shift(&a->gpummu, p->mmu.root->level);
    return st;
}

/* ---- root binding ---------------------------------------------------- */

/* Bind (or unbind) p's root page table for a context or process token. */
void vidmm_process_bind_root(struct vidmm_adapter *a, struct vidmm_process *p, uint64_t token, int bind)
{
    if (!a->ops.set_root_page_table || !p->mmu.root)
        return;
    struct vidmm_set_root_page_table_args r;
    memset(&r, 0, sizeof(r));
    r.context = token;
    if (bind) {
        r.address.segment_id = p->mmu.root->segment_id;
        r.address.segment_offset = p->mmu.root->offset;
        r.num_entries = p->mmu.root->entries;
    }
    a->ops.set_root_page_table(a->driver, &r);
}

vidmm_status vidmm_pt_process_init(struct vidmm_adapter *a, struct vidmm_process *p, uint32_t entries,
                                   enum vidmm_alloc_site site, int paging_process)
{
    p->mmu.paging_process = paging_process;
    p->mmu.flush_lo = UINT64_MAX;
    p->mmu.pte_buf_len = entries;
    p->mmu.pte_buf = vidmm_halloc(a->ha, site, (size_t)entries * sizeof(*p->mmu.pte_buf), _Alignof(struct vidmm_pte));
    return p->mmu.pte_buf ? VIDMM_OK : VIDMM_E_NO_HOST_MEMORY;
}

void vidmm_pt_process_fini(struct vidmm_adapter *a, struct vidmm_process *p)
{
    vidmm_hfree(a->ha, p->mmu.pte_buf, (size_t)p->mmu.pte_buf_len * sizeof(*p->mmu.pte_buf), _Alignof(struct vidmm_pte));
}
