/*
 * range_alloc.c - two-level segregated fit range allocator (see range_alloc.h).
 *
 * Every range of [0, size), free or used, is a node in one array; nodes are
 * named by uint32 index so the array can grow (geometrically, through the
 * host allocator) without invalidating handles, and unused slots are chained
 * in a LIFO free list so the working set stays compact.  Nodes carry their
 * physical neighbours (prev/next by address) so free() coalesces in O(1).
 *
 * Free ranges sit in TLSF bins: the first level is the highest set bit of
 * the size in chunks, the second level splits each power of two into 64
 * bins (bins below 128 chunks are exact), with one uint64 bitmap per first
 * level.  Placement follows VMA's MIN_MEMORY strategy: first scan the bin
 * of the request's own size class (it may hold ranges a little too small,
 * or ones that only fit after alignment padding; among up to
 * OWN_BIN_CANDIDATES that fit, one where the request starts at the range's
 * start or ends at its end is preferred, so padding does not split off a
 * fragment needlessly), then
 * take the first fitting range of the non-empty larger bins found through
 * the two bitmaps.  Taking the smallest class that fits, rather than TLSF's
 * usual "next class up, guaranteed fit", is what keeps big holes whole
 * after churn (workload B2, docs/PERFORMANCE.md: 0.97 vs 0.19 of the free space usable).
 *
 * Two placement options, both off by default: requests below a size go
 * top-down (vidmm_ra_set_topdown_below), and the front reserve
 * (vidmm_ra_set_front_reserve) keeps the holes among the few live blocks
 * on either side of the largest free range for last.  After churn the
 * space a large-block pass can use is the largest range less what new
 * requests keep carving from its edges; holes next to it that stay empty
 * join it when their neighbours are freed, where refilling them would
 * have pushed its edge back.  The reserve's bounds are cached as four
 * addresses and recomputed only after a change inside them, so the
 * common request pays one comparison.
 *
 * The used/free state hides in prev_free (RA_USED / RA_SLOT markers) so a
 * node is 32 bytes, two per cache line.  The hot paths have no division and
 * no host allocation once the node array is large enough; an exact fit (no
 * split) is handled inline in vidmm_ra_alloc, and the class index found by
 * the search is reused to unlink the node instead of being recomputed.
 * Both calls have a short fast path for workload A's common case, taken
 * only where the full path would decide the same: alloc takes the head of
 * its own bin when that has exactly the size and an aligned start, and
 * free of a block with two live neighbours pushes it onto the bin kept in
 * its next_free (a live node's class index), with no mapping; the rest is
 * out of line (alloc_search, free_merge).  The reserve's bound tests are
 * branch-free: whether a random block falls inside them is unpredictable.
 */
#include "seg/range_alloc.h"
#include "seg/range_alloc_int.h"

#include "core/alloc_sites.h"

#include <stddef.h>
#include <string.h>

/* Candidates that fit looked at in the request's own bin before taking the
 * first one (an exact or padding-free fit ends the scan at once). */
#define OWN_BIN_CANDIDATES 8u

/* Offsets stay below 2^62 so "offset + alignment padding" can never wrap. */
#define RA_MAX_SIZE (UINT64_C(1) << 62)
#define RA_INITIAL_NODES 64u

#if defined(__GNUC__)
#define RA_HOT inline __attribute__((always_inline))
#define RA_COLD __attribute__((noinline))
#else
#define RA_HOT inline
#define RA_COLD
#endif

/* ---- free lists ---- */

/* Push node i onto bin cls (the class of its size); the bitmap bits are
 * set when the bin was empty (they are set exactly for non-empty bins). */
static RA_HOT void bin_insert_cls(struct vidmm_range_alloc *ra, uint32_t i, unsigned cls)
{
    struct vidmm_ra_node *nodes = ra->nodes;
    uint32_t head = ra->bins[cls];
    nodes[i].prev_free = RA_NIL;
    nodes[i].next_free = head;
    ra->bins[cls] = i;
    if (head != RA_NIL) {
        nodes[head].prev_free = i;
    } else {
        unsigned fl = cls >> SL_LOG2;
        ra->sl_bitmap[fl] |= SLBIT(cls & (SL_COUNT - 1));
        ra->fl_bitmap |= UINT64_C(1) << fl;
    }
}

static inline void bin_insert(struct vidmm_range_alloc *ra, uint32_t i)
{
    bin_insert_cls(ra, i, class_index(ra->nodes[i].size >> ra->chunk_shift));
}

/* Unlink free node i, whose class index is cls. */
static RA_HOT void bin_remove_cls(struct vidmm_range_alloc *ra, uint32_t i, unsigned cls)
{
    struct vidmm_ra_node *nodes = ra->nodes;
    uint32_t nx = nodes[i].next_free, pv = nodes[i].prev_free;
    if (nx != RA_NIL)
        nodes[nx].prev_free = pv;
    if (pv != RA_NIL) {
        nodes[pv].next_free = nx;
    } else {
        ra->bins[cls] = nx;
        if (nx == RA_NIL) {
            unsigned fl = cls >> SL_LOG2;
            ra->sl_bitmap[fl] &= ~SLBIT(cls & (SL_COUNT - 1));
            if (!ra->sl_bitmap[fl])
                ra->fl_bitmap &= ~(UINT64_C(1) << fl);
        }
    }
}

static inline void bin_remove(struct vidmm_range_alloc *ra, uint32_t i)
{
    bin_remove_cls(ra, i, class_index(ra->nodes[i].size >> ra->chunk_shift));
}

/* ---- node slots ---- */

static vidmm_status grow_nodes(struct vidmm_range_alloc *ra)
{
    uint32_t old_cap = ra->node_cap;
    uint32_t new_cap = old_cap ? old_cap * 2 : RA_INITIAL_NODES;
    if (old_cap > RA_MAX_NODES / 2 || (uint64_t)new_cap * sizeof(struct vidmm_ra_node) > (uint64_t)(SIZE_MAX >> 1))
        return VIDMM_E_NO_HOST_MEMORY;
    struct vidmm_ra_node *nn = vidmm_host_alloc_at(ra->ha, VIDMM_SITE_RA_NODES, (size_t)new_cap * sizeof *nn, 64);
    if (!nn)
        return VIDMM_E_NO_HOST_MEMORY;
    if (old_cap)
        memcpy(nn, ra->nodes, (size_t)old_cap * sizeof *nn);
    /* New slots go in front of the chain in ascending order. */
    for (uint32_t i = old_cap; i < new_cap; i++) {
        nn[i].prev_free = RA_SLOT;
        nn[i].next_free = i + 1 < new_cap ? i + 1 : ra->free_node_head;
        nn[i].offset = nn[i].size = 0;
        nn[i].prev_phys = nn[i].next_phys = RA_NIL;
    }
    ra->free_node_head = old_cap;
    if (ra->nodes)
        ra->ha->free(ra->ha->user_data, ra->nodes, (size_t)old_cap * sizeof *nn, 64);
    ra->nodes = nn;
    ra->node_cap = new_cap;
    return VIDMM_OK;
}

static inline uint32_t slot_get(struct vidmm_range_alloc *ra)
{
    uint32_t i = ra->free_node_head;
    (void)VIDMM_BUG_ON_LOG(&ra->bugs, i == RA_NIL || ra->nodes[i].prev_free != RA_SLOT,
                           "slot_get: the slot chain head %u is not an unused slot (node storage not grown first)", i);
    ra->free_node_head = ra->nodes[i].next_free;
    ra->node_count++;
    return i;
}

static inline void slot_put(struct vidmm_range_alloc *ra, uint32_t i)
{
    ra->nodes[i].prev_free = RA_SLOT;
    ra->nodes[i].next_free = ra->free_node_head;
    ra->free_node_head = i;
    ra->node_count--;
}

/* ---- init / fini ---- */

/* Bytes of the table holding, per first-level bin, its second-level bitmap
 * (first, so the uint64 words are aligned) and then its SL_COUNT list heads. */
static size_t tab_bytes(unsigned fl_count)
{
    return (size_t)fl_count * (sizeof(uint64_t) + SL_COUNT * sizeof(uint32_t));
}

vidmm_status vidmm_ra_init(struct vidmm_range_alloc *ra, const struct vidmm_host_allocator *ha,
                           uint64_t size, uint64_t chunk)
{
    if (!ra)
        return VIDMM_E_INVALID_ARG;
    memset(ra, 0, sizeof *ra);
    ra->free_node_head = RA_NIL;
    ra->first_node = RA_NIL;
    if (!ha || !ha->alloc || !ha->free || !size || !is_pow2(chunk) || (size & (chunk - 1)) ||
        size > RA_MAX_SIZE)
        return VIDMM_E_INVALID_ARG;
    ra->ha = ha;
    ra->size = size;
    ra->chunk = chunk;
    ra->chunk_shift = msb64(chunk);

    unsigned fl, sl;
    mapping(size >> ra->chunk_shift, &fl, &sl);
    ra->fl_count = fl + 1;
    void *tab = vidmm_host_alloc_at(ha, VIDMM_SITE_RA_BINS, tab_bytes(ra->fl_count), 64);
    if (!tab)
        return VIDMM_E_NO_HOST_MEMORY;
    ra->sl_bitmap = tab;
    ra->bins = (uint32_t *)(void *)(ra->sl_bitmap + ra->fl_count);
    for (size_t i = 0; i < (size_t)ra->fl_count * SL_COUNT; i++)
        ra->bins[i] = RA_NIL;
    memset(ra->sl_bitmap, 0, ra->fl_count * sizeof *ra->sl_bitmap);

    if (grow_nodes(ra) != VIDMM_OK) {
        ha->free(ha->user_data, tab, tab_bytes(ra->fl_count), 64);
        ra->bins = NULL;
        ra->sl_bitmap = NULL;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    uint32_t i = slot_get(ra);
    struct vidmm_ra_node *n = &ra->nodes[i];
    n->offset = 0;
    n->size = size;
    n->prev_phys = n->next_phys = RA_NIL;
    ra->first_node = i;
    bin_insert(ra, i);
    ra->free_bytes = size;
    ra->live_count = 0;
    return VIDMM_OK;
}

void vidmm_ra_fini(struct vidmm_range_alloc *ra)
{
    if (!ra || !ra->ha)
        return;
    if (ra->nodes)
        ra->ha->free(ra->ha->user_data, ra->nodes, (size_t)ra->node_cap * sizeof *ra->nodes, 64);
    if (ra->sl_bitmap)
        ra->ha->free(ra->ha->user_data, ra->sl_bitmap, tab_bytes(ra->fl_count), 64);
    memset(ra, 0, sizeof *ra);
    ra->free_node_head = ra->first_node = RA_NIL;
}

/* ---- placement ---- */

/* Where a request of size bytes aligned by amask+1 would start inside free
 * node n, or return 0 if it does not fit. */
static inline int fit(const struct vidmm_ra_node *n, uint64_t size, uint64_t amask, unsigned flags,
                      uint64_t *start)
{
    if (n->size < size)
        return 0;
    if (flags & VIDMM_RA_TOPDOWN) {
        uint64_t s = (n->offset + n->size - size) & ~amask;
        if (s < n->offset)
            return 0;
        *start = s;
    } else {
        uint64_t s = (n->offset + amask) & ~amask;
        if (s - n->offset > n->size - size)
            return 0;
        *start = s;
    }
    return 1;
}

/* A walk over the non-empty bins in size order, from a starting bin
 * (slmap: the start's first level, masked from the start's second level
 * on).  bin_next gives the next bin's class index, 0 when none is left. */
struct bin_cursor {
    unsigned fl;
    uint64_t slmap;
};

static RA_HOT int bin_next(const struct vidmm_range_alloc *ra, struct bin_cursor *c, unsigned *cls)
{
    if (!c->slmap) {
        uint64_t flmap = ra->fl_bitmap & ((~UINT64_C(0) << c->fl) << 1);
        if (!flmap)
            return 0;
        c->fl = ctz64(flmap);
        c->slmap = ra->sl_bitmap[c->fl];
    }
    *cls = c->fl * SL_COUNT + ctz64(c->slmap);
    c->slmap &= c->slmap - 1;
    return 1;
}

/* Best-fit-first search (see the overview).  Returns the node or RA_NIL,
 * with the start in *start and the node's class index in *cls. */
static RA_HOT uint32_t find(const struct vidmm_range_alloc *ra, uint64_t size, uint64_t amask,
                            unsigned flags, uint64_t *start, unsigned *cls)
{
    const struct vidmm_ra_node *nodes = ra->nodes;
    unsigned fl, sl;
    mapping(size >> ra->chunk_shift, &fl, &sl);
    {
        /* Own bin: a candidate that needs no padding on one side (for the
         * common exact fit, on both) is taken at once; otherwise the first
         * of up to OWN_BIN_CANDIDATES that fit, so padding splits off a new
         * small free range only when no flush candidate is at hand. */
        uint32_t first = RA_NIL;
        uint64_t first_start = 0;
        unsigned seen = 0;
        for (uint32_t b = ra->bins[fl * SL_COUNT + sl]; b != RA_NIL; b = nodes[b].next_free) {
            uint64_t s;
            if (!fit(&nodes[b], size, amask, flags, &s))
                continue;
            if (s == nodes[b].offset || s + size == nodes[b].offset + nodes[b].size) {
                *start = s;
                *cls = fl * SL_COUNT + sl;
                return b;
            }
            if (first == RA_NIL) {
                first = b;
                first_start = s;
            }
            if (++seen >= OWN_BIN_CANDIDATES)
                break;
        }
        if (first != RA_NIL) {
            *start = first_start;
            *cls = fl * SL_COUNT + sl;
            return first;
        }
    }
    struct bin_cursor cur = { fl, ra->sl_bitmap[fl] & ((~(uint64_t)0 << sl) << 1) };
    unsigned c;
    while (bin_next(ra, &cur, &c))
        for (uint32_t b = ra->bins[c]; b != RA_NIL; b = nodes[b].next_free)
            if (fit(&nodes[b], size, amask, flags, start)) {
                *cls = c;
                return b;
            }
    return RA_NIL;
}

/* ---- front reserve ---- */

/* The largest free range (RA_NIL if none). */
static uint32_t largest_node(const struct vidmm_range_alloc *ra)
{
    if (!ra->fl_bitmap)
        return RA_NIL;
    unsigned fl = msb64(ra->fl_bitmap);
    unsigned sl = msb64(ra->sl_bitmap[fl]);
    uint32_t best = RA_NIL;
    for (uint32_t b = ra->bins[fl * SL_COUNT + sl]; b != RA_NIL; b = ra->nodes[b].next_free)
        if (best == RA_NIL || ra->nodes[b].size > ra->nodes[best].size)
            best = b;
    return best;
}

/* Recompute the reserve's bounds: [zone_lo, zone_wlo) below the largest
 * range [zone_wlo, zone_whi), [zone_whi, zone_hi) above it, each reaching
 * to the end of the front_keep-th live block. */
static RA_COLD void zone_update(struct vidmm_range_alloc *ra)
{
    const struct vidmm_ra_node *nodes = ra->nodes;
    uint32_t w = largest_node(ra);
    ra->zone_stale = 0;
    if (w == RA_NIL) {
        ra->zone_lo = ra->zone_wlo = ra->zone_whi = ra->zone_hi = 0;
        return;
    }
    ra->zone_wlo = ra->zone_lo = nodes[w].offset;
    ra->zone_whi = ra->zone_hi = nodes[w].offset + nodes[w].size;
    unsigned live = 0;
    for (uint32_t q = nodes[w].prev_phys; q != RA_NIL; q = nodes[q].prev_phys) {
        ra->zone_lo = nodes[q].offset;
        if (nodes[q].prev_free == RA_USED && ++live >= ra->front_keep)
            break;
    }
    live = 0;
    for (uint32_t q = nodes[w].next_phys; q != RA_NIL; q = nodes[q].next_phys) {
        ra->zone_hi = nodes[q].offset + nodes[q].size;
        if (nodes[q].prev_free == RA_USED && ++live >= ra->front_keep)
            break;
    }
}

/* A change at [off, off+size) may move the reserve. */
static inline void zone_touch(struct vidmm_range_alloc *ra, uint64_t off, uint64_t size)
{
    /* Without branches: where a random free or alloc falls against the
     * reserve is a coin toss for the branch predictor. */
    ra->zone_stale |= (off < ra->zone_hi) & (off + size > ra->zone_lo);
}

/* Free node n lies in the reserve (the largest range itself excluded). */
static inline int in_zone(const struct vidmm_range_alloc *ra, const struct vidmm_ra_node *n)
{
    /* zone_lo <= zone_wlo and zone_whi <= zone_hi: one unsigned compare
     * per side, no branches. */
    return (n->offset - ra->zone_lo < ra->zone_wlo - ra->zone_lo) |
           (n->offset - ra->zone_whi < ra->zone_hi - ra->zone_whi);
}

/* find, with the reserve: when the best fit b lies in it, the first range
 * in size order that fits outside it and short of the largest range. */
static uint32_t find_outside_zone(struct vidmm_range_alloc *ra, uint64_t size, uint64_t amask,
                                  unsigned flags, uint64_t *start, unsigned *cls)
{
    uint32_t b = find(ra, size, amask, flags, start, cls);
    if (b == RA_NIL)
        return b;
    if (ra->zone_stale)
        zone_update(ra);
    const struct vidmm_ra_node *nodes = ra->nodes;
    if (!in_zone(ra, &nodes[b]))
        return b;
    unsigned fl, sl, k;
    mapping(size >> ra->chunk_shift, &fl, &sl);
    struct bin_cursor cur = { fl, ra->sl_bitmap[fl] & (~(uint64_t)0 << sl) };
    while (bin_next(ra, &cur, &k))
        for (uint32_t c = ra->bins[k]; c != RA_NIL; c = nodes[c].next_free) {
            uint64_t s;
            if (nodes[c].offset == ra->zone_wlo || in_zone(ra, &nodes[c]) ||
                !fit(&nodes[c], size, amask, flags, &s))
                continue;
            *start = s;
            *cls = k;
            return c;
        }
    return b;
}

/* The fast path of vidmm_ra_alloc with the reserve on: may it take free
 * node n whole?  (find_outside_zone keeps find's choice outside the
 * reserve.)  Marks the reserve stale when n borders it. */
static inline int zone_allows(struct vidmm_range_alloc *ra, const struct vidmm_ra_node *n)
{
    if (ra->zone_stale)
        zone_update(ra);
    if (in_zone(ra, n))
        return 0;
    zone_touch(ra, n->offset, n->size);
    return 1;
}

/* Free node b, of class cls, becomes a live allocation as it is (an
 * exact fit: no split, no new node). */
static RA_HOT void take_whole(struct vidmm_range_alloc *ra, uint32_t b, unsigned cls, uint64_t *offset,
                              uint32_t *node)
{
    struct vidmm_ra_node *n = &ra->nodes[b];
    bin_remove_cls(ra, b, cls);
    n->prev_free = RA_USED;
    n->next_free = cls;
    (void)VIDMM_BUG_ON_LOG(&ra->bugs, ra->free_bytes < n->size,
                           "alloc: node %u of 0x%llx bytes taken with free_bytes 0x%llx", b,
                           (unsigned long long)n->size, (unsigned long long)ra->free_bytes);
    ra->free_bytes -= n->size;
    ra->live_count++;
    *node = b;
    *offset = n->offset;
}

/* Turn [start, start+size) of free node b into a live allocation; the
 * padding on either side stays free as new nodes.  Node storage is grown
 * first, so a host-allocation failure leaves everything as it was. */
static vidmm_status carve_cls(struct vidmm_range_alloc *ra, uint32_t b, unsigned cls, uint64_t start,
                              uint64_t size, uint32_t *node)
{
    struct vidmm_ra_node *n = &ra->nodes[b];
    if (VIDMM_BUG_ON_LOG(&ra->bugs, start < n->offset || start + size > n->offset + n->size || n->prev_free == RA_USED,
                         "carve: [0x%llx, +0x%llx) is not inside free node %u [0x%llx, +0x%llx)",
                         (unsigned long long)start, (unsigned long long)size, b, (unsigned long long)n->offset,
                         (unsigned long long)n->size))
        return VIDMM_E_INTERNAL;
    uint64_t left = start - n->offset;
    uint64_t right = n->offset + n->size - (start + size);
    uint32_t need = (uint32_t)(left != 0) + (uint32_t)(right != 0);
    if (ra->node_cap - ra->node_count < need) {
        vidmm_status st = grow_nodes(ra);
        if (st < 0)
            return st;
        n = &ra->nodes[b];
    }
    bin_remove_cls(ra, b, cls);
    if (left) {
        uint32_t l = slot_get(ra);
        struct vidmm_ra_node *ln = &ra->nodes[l];
        ln->offset = n->offset;
        ln->size = left;
        ln->prev_phys = n->prev_phys;
        ln->next_phys = b;
        if (n->prev_phys != RA_NIL)
            ra->nodes[n->prev_phys].next_phys = l;
        else
            ra->first_node = l;
        n->prev_phys = l;
        bin_insert(ra, l);
    }
    if (right) {
        uint32_t r = slot_get(ra);
        struct vidmm_ra_node *rn = &ra->nodes[r];
        rn->offset = start + size;
        rn->size = right;
        rn->prev_phys = b;
        rn->next_phys = n->next_phys;
        if (n->next_phys != RA_NIL)
            ra->nodes[n->next_phys].prev_phys = r;
        n->next_phys = r;
        bin_insert(ra, r);
    }
    n->offset = start;
    n->size = size;
    n->prev_free = RA_USED;
    n->next_free = class_index(size >> ra->chunk_shift);
    (void)VIDMM_BUG_ON_LOG(&ra->bugs, ra->free_bytes < size, "alloc: 0x%llx bytes carved with free_bytes 0x%llx",
                           (unsigned long long)size, (unsigned long long)ra->free_bytes);
    ra->free_bytes -= size;
    ra->live_count++;
    *node = b;
    return VIDMM_OK;
}

static vidmm_status carve(struct vidmm_range_alloc *ra, uint32_t b, uint64_t start, uint64_t size,
                          uint32_t *node)
{
    ra->zone_stale = 1; /* alloc_at, alloc_largest: rare */
    return carve_cls(ra, b, class_index(ra->nodes[b].size >> ra->chunk_shift), start, size, node);
}

/* Round size up to a chunk multiple; VIDMM_OK or the status to return. */
static inline vidmm_status round_size(const struct vidmm_range_alloc *ra, uint64_t *size)
{
    uint64_t cmask = ra->chunk - 1;
    if (*size > UINT64_MAX - cmask)
        return VIDMM_E_OVERFLOW;
    *size = (*size + cmask) & ~cmask;
    return VIDMM_OK;
}

static inline uint64_t clamp_align(const struct vidmm_range_alloc *ra, uint64_t align)
{
    if (align < ra->chunk)
        return ra->chunk;
    /* Every offset is below 2^62, so a larger alignment means offset 0 only,
     * exactly as 2^62 does. */
    return align > RA_MAX_SIZE ? RA_MAX_SIZE : align;
}

static RA_COLD vidmm_status alloc_search(struct vidmm_range_alloc *ra, uint64_t size, uint64_t align,
                                         unsigned flags, uint64_t *offset, uint32_t *node);

vidmm_status vidmm_ra_alloc(struct vidmm_range_alloc *ra, uint64_t size, uint64_t align,
                            unsigned flags, uint64_t *offset, uint32_t *node)
{
    if (!ra || !ra->nodes || !offset || !node || !size || (align & (align - 1)) ||
        (flags & ~VIDMM_RA_TOPDOWN))
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = round_size(ra, &size);
    if (st < 0)
        return st;
    if (size > ra->free_bytes)
        return VIDMM_E_NO_SEGMENT_SPACE; /* and size's class has a bin */
    align = clamp_align(ra, align);
    /* Fast path, the common case after churn: the head of the request's
     * own bin has exactly its size and an aligned start.  find() would take
     * it (the first candidate that fits flush), whatever the direction, and
     * so would find_outside_zone() when it lies outside the reserve. */
    unsigned cls = class_index(size >> ra->chunk_shift);
    uint32_t b = ra->bins[cls];
    if (b != RA_NIL) {
        const struct vidmm_ra_node *n = &ra->nodes[b];
        if (n->size == size && !(n->offset & (align - 1)) && (!ra->front_keep || zone_allows(ra, n))) {
            take_whole(ra, b, cls, offset, node);
            return VIDMM_OK;
        }
    }
    return alloc_search(ra, size, align, flags, offset, node);
}

/* vidmm_ra_alloc past the fast path: size rounded (and within free_bytes),
 * align clamped. */
static RA_COLD vidmm_status alloc_search(struct vidmm_range_alloc *ra, uint64_t size, uint64_t align,
                                         unsigned flags, uint64_t *offset, uint32_t *node)
{
    vidmm_status st;
    if (size < ra->topdown_below)
        flags = VIDMM_RA_TOPDOWN;
    uint64_t start = 0;
    unsigned cls = 0;
    uint32_t b;
    if (ra->front_keep) {
        b = find_outside_zone(ra, size, align - 1, flags ? VIDMM_RA_TOPDOWN : 0, &start, &cls);
        if (b == RA_NIL)
            return VIDMM_E_NO_SEGMENT_SPACE;
        zone_touch(ra, start, size);
    } else {
        b = flags ? find(ra, size, align - 1, VIDMM_RA_TOPDOWN, &start, &cls)
                  : find(ra, size, align - 1, 0, &start, &cls);
        if (b == RA_NIL)
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    struct vidmm_ra_node *n = &ra->nodes[b];
    if (start == n->offset && size == n->size) {
        take_whole(ra, b, cls, offset, node);
        return VIDMM_OK;
    }
    st = carve_cls(ra, b, cls, start, size, node);
    if (st == VIDMM_OK)
        *offset = start;
    return st;
}

void vidmm_ra_set_topdown_below(struct vidmm_range_alloc *ra, uint64_t bytes)
{
    if (ra)
        ra->topdown_below = bytes;
}

void vidmm_ra_set_front_reserve(struct vidmm_range_alloc *ra, uint32_t blocks)
{
    if (ra) {
        ra->front_keep = blocks;
        ra->zone_stale = 1;
    }
}

vidmm_status vidmm_ra_alloc_at(struct vidmm_range_alloc *ra, uint64_t offset, uint64_t size,
                               uint32_t *node)
{
    if (!ra || !ra->nodes || !node || !size)
        return VIDMM_E_INVALID_ARG;
    if (offset & (ra->chunk - 1))
        return VIDMM_E_ALIGNMENT;
    vidmm_status st = round_size(ra, &size);
    if (st < 0)
        return st;
    if (offset >= ra->size || size > ra->size - offset)
        return VIDMM_E_NO_SEGMENT_SPACE;
    /* Search the free ranges only (bins from the request's class up): the
     * live allocations are never walked.  Fixed placements are rare. */
    unsigned fl, sl, k;
    mapping(size >> ra->chunk_shift, &fl, &sl);
    struct bin_cursor cur = { fl, ra->sl_bitmap[fl] & (~(uint64_t)0 << sl) };
    while (bin_next(ra, &cur, &k)) {
        for (uint32_t b = ra->bins[k]; b != RA_NIL; b = ra->nodes[b].next_free) {
            const struct vidmm_ra_node *n = &ra->nodes[b];
            if (n->offset <= offset && offset - n->offset + size <= n->size)
                return carve(ra, b, offset, size, node);
        }
    }
    return VIDMM_E_NO_SEGMENT_SPACE;
}

/* Whole-granule length usable in free node n after aligning its start. */
static inline uint64_t usable(const struct vidmm_ra_node *n, uint64_t amask, uint64_t gmask,
                              uint64_t *start)
{
    uint64_t s = (n->offset + amask) & ~amask;
    uint64_t end = n->offset + n->size;
    *start = s;
    return s < end ? (end - s) & ~gmask : 0;
}

static vidmm_status alloc_largest(struct vidmm_range_alloc *ra, uint64_t min_size, uint64_t max_size,
                                  uint64_t align, uint64_t gran, uint64_t *offset, uint64_t *size,
                                  uint32_t *node)
{
    uint64_t amask = align - 1, gmask = gran - 1;
    if (!ra->fl_bitmap)
        return VIDMM_E_NO_SEGMENT_SPACE;
    /* Bins from the top down; the first bin holding a range with min_size
     * usable bytes gives its best range.  Normally that is the top bin; the
     * walk down only happens when alignment eats the top bin's ranges. */
    unsigned fl = msb64(ra->fl_bitmap);
    uint64_t slmap = ra->sl_bitmap[fl];
    for (;;) {
        unsigned sl = msb64(slmap);
        /* Ranges in this bin and below are shorter than the next bin's low
         * bound: once that is below min_size nothing can fit. */
        uint64_t top = (sl + 1 < SL_COUNT) ? bin_low(fl, sl + 1)
                                           : (fl == 0 ? SL_COUNT : bin_low(fl + 1, 0));
        if ((top << ra->chunk_shift) <= min_size)
            return VIDMM_E_NO_SEGMENT_SPACE;
        uint32_t best = RA_NIL;
        uint64_t best_len = 0, best_start = 0;
        for (uint32_t b = ra->bins[fl * SL_COUNT + sl]; b != RA_NIL; b = ra->nodes[b].next_free) {
            uint64_t s;
            uint64_t len = usable(&ra->nodes[b], amask, gmask, &s);
            if (len > best_len) {
                best = b;
                best_len = len;
                best_start = s;
            }
        }
        if (best != RA_NIL && best_len >= min_size) {
            uint64_t len = best_len < max_size ? best_len : max_size;
            vidmm_status st = carve(ra, best, best_start, len, node);
            if (st == VIDMM_OK) {
                *offset = best_start;
                *size = len;
            }
            return st;
        }
        slmap &= ~SLBIT(sl);
        while (!slmap) {
            if (fl == 0)
                return VIDMM_E_NO_SEGMENT_SPACE;
            fl--;
            slmap = ra->sl_bitmap[fl];
        }
    }
}

vidmm_status vidmm_ra_alloc_largest(struct vidmm_range_alloc *ra, uint64_t min_size, uint64_t max_size,
                                    uint64_t align, uint64_t *offset, uint64_t *size, uint32_t *node)
{
    if (!ra || !ra->nodes || !offset || !size || !node || !max_size || (align & (align - 1)))
        return VIDMM_E_INVALID_ARG;
    if (!min_size)
        min_size = 1;
    if (min_size > max_size)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = round_size(ra, &min_size);
    if (st == VIDMM_OK)
        st = round_size(ra, &max_size);
    if (st < 0)
        return st;
    return alloc_largest(ra, min_size, max_size, clamp_align(ra, align), ra->chunk, offset, size, node);
}

vidmm_status vidmm_ra_alloc_largest_aligned(struct vidmm_range_alloc *ra, uint64_t min_size,
                                            uint64_t max_size, uint64_t align, uint64_t *offset,
                                            uint64_t *size, uint32_t *node)
{
    if (!ra || !ra->nodes || !offset || !size || !node || !max_size || (align & (align - 1)))
        return VIDMM_E_INVALID_ARG;
    if (!min_size)
        min_size = 1;
    if (min_size > max_size)
        return VIDMM_E_INVALID_ARG;
    align = clamp_align(ra, align);
    uint64_t amask = align - 1;
    if (min_size > UINT64_MAX - amask || max_size > UINT64_MAX - amask)
        return VIDMM_E_OVERFLOW;
    min_size = (min_size + amask) & ~amask;
    max_size = (max_size + amask) & ~amask;
    return alloc_largest(ra, min_size, max_size, align, align, offset, size, node);
}

/* ---- free ---- */

/* free of live node i when a physical neighbour is free: coalesce. */
static RA_COLD vidmm_status free_merge(struct vidmm_range_alloc *ra, uint32_t i)
{
    struct vidmm_ra_node *nodes = ra->nodes;
    struct vidmm_ra_node *n = &nodes[i];
    /* A physical neighbour is either live or a free range, never a slot. */
    uint32_t p = n->prev_phys;
    if (VIDMM_BUG_ON_LOG(&ra->bugs, (p != RA_NIL && nodes[p].prev_free == RA_SLOT) ||
                                        (n->next_phys != RA_NIL && nodes[n->next_phys].prev_free == RA_SLOT),
                         "free: a physical neighbour of node %u is an unused slot", i))
        return VIDMM_E_INTERNAL;
    if (ra->front_keep)
        zone_touch(ra, n->offset, n->size);
    (void)VIDMM_BUG_ON_LOG(&ra->bugs, ra->live_count == 0, "free: live node %u but live_count is 0", i);
    ra->free_bytes += n->size;
    ra->live_count--;
    if (p != RA_NIL && nodes[p].prev_free != RA_USED) {
        struct vidmm_ra_node *pn = &nodes[p];
        bin_remove(ra, p);
        n->offset = pn->offset;
        n->size += pn->size;
        n->prev_phys = pn->prev_phys;
        if (pn->prev_phys != RA_NIL)
            nodes[pn->prev_phys].next_phys = i;
        else
            ra->first_node = i;
        slot_put(ra, p);
    }
    uint32_t q = n->next_phys;
    if (q != RA_NIL && nodes[q].prev_free != RA_USED) {
        struct vidmm_ra_node *qn = &nodes[q];
        bin_remove(ra, q);
        n->size += qn->size;
        n->next_phys = qn->next_phys;
        if (qn->next_phys != RA_NIL)
            nodes[qn->next_phys].prev_phys = i;
        slot_put(ra, q);
    }
    bin_insert(ra, i);
    return VIDMM_OK;
}

vidmm_status vidmm_ra_free(struct vidmm_range_alloc *ra, uint32_t i)
{
    if (!ra || !ra->nodes || i >= ra->node_cap)
        return VIDMM_E_INVALID_HANDLE;
    struct vidmm_ra_node *nodes = ra->nodes;
    struct vidmm_ra_node *n = &nodes[i];
    if (n->prev_free != RA_USED)
        return VIDMM_E_INVALID_HANDLE;
    uint32_t p = n->prev_phys, q = n->next_phys;
    if ((p != RA_NIL && nodes[p].prev_free != RA_USED) || (q != RA_NIL && nodes[q].prev_free != RA_USED))
        return free_merge(ra, i);
    /* Both neighbours live (the common case): i becomes a free range as
     * it is, into the class kept in its next_free. */
    if (ra->front_keep)
        zone_touch(ra, n->offset, n->size);
    (void)VIDMM_BUG_ON_LOG(&ra->bugs, ra->live_count == 0, "free: live node %u but live_count is 0", i);
    ra->free_bytes += n->size;
    ra->live_count--;
    bin_insert_cls(ra, i, n->next_free);
    return VIDMM_OK;
}

/* ---- queries ---- */

static inline int is_live(const struct vidmm_range_alloc *ra, uint32_t node)
{
    return ra && ra->nodes && node < ra->node_cap && ra->nodes[node].prev_free == RA_USED;
}

uint64_t vidmm_ra_node_offset(const struct vidmm_range_alloc *ra, uint32_t node)
{
    return is_live(ra, node) ? ra->nodes[node].offset : 0;
}

uint64_t vidmm_ra_node_size(const struct vidmm_range_alloc *ra, uint32_t node)
{
    return is_live(ra, node) ? ra->nodes[node].size : 0;
}

vidmm_status vidmm_ra_node_neighbours(const struct vidmm_range_alloc *ra, uint32_t node,
                                      struct vidmm_ra_neighbours *nb)
{
    if (!ra || !nb)
        return VIDMM_E_INVALID_ARG;
    if (!is_live(ra, node))
        return VIDMM_E_INVALID_HANDLE;
    const struct vidmm_ra_node *nodes = ra->nodes, *n = &nodes[node];
    nb->offset = n->offset;
    nb->size = n->size;
    nb->free_below = nb->free_above = 0;
    uint32_t p = n->prev_phys, q = n->next_phys;
    if (p != RA_NIL && nodes[p].prev_free != RA_USED) {
        nb->free_below = nodes[p].size;
        p = nodes[p].prev_phys; /* live or the edge: free ranges never touch */
    }
    if (q != RA_NIL && nodes[q].prev_free != RA_USED) {
        nb->free_above = nodes[q].size;
        q = nodes[q].next_phys;
    }
    nb->live_below = p;   /* RA_NIL == VIDMM_RA_NONE */
    nb->live_above = q;
    return VIDMM_OK;
}

uint64_t vidmm_ra_largest_free(const struct vidmm_range_alloc *ra)
{
    if (!ra || !ra->nodes || !ra->fl_bitmap)
        return 0;
    unsigned fl = msb64(ra->fl_bitmap);
    unsigned sl = msb64(ra->sl_bitmap[fl]);
    uint64_t best = 0;
    for (uint32_t b = ra->bins[fl * SL_COUNT + sl]; b != RA_NIL; b = ra->nodes[b].next_free)
        if (ra->nodes[b].size > best)
            best = ra->nodes[b].size;
    return best;
}
