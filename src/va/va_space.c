/*
 * va_space.c - per-process GPU VA bookkeeping (see va_space.h and
 * docs/VA_SPACE.md).
 *
 * Layout.  Every live range (RESERVED or MAPPED) is an entry of one
 * B+-tree keyed by start address.  A leaf holds up to 16 entries in
 * address order: their starts, ends and record indices, each in its own
 * contiguous array, so finding a slot reads two or three cache lines.
 * Inner nodes hold up to 16 children with, per child, the least start
 * under it (the search key) and the largest hole and largest 64 KiB-
 * aligned piece of a hole under it.  At 64 K ranges the tree has four
 * inner levels (~430 KiB, mostly cache resident) over ~7 K leaves, and a
 * search costs about one miss in a leaf where an AVL descent took 17
 * dependent steps.
 *
 * Holes are not entries: the hole in front of an entry runs from the end
 * of the entry before it (in the same leaf, or the leaf's prev_end, which
 * mirrors the previous leaf's last end) to its start.  A sentinel record
 * [limit, limit) is always the last entry and carries the final hole, so
 * "the holes" are exactly the entries' gaps.  find_hole() skips every
 * child whose cached maximum cannot hold the request; only children cut
 * by min or max can fail after passing that test, so the lowest fitting
 * hole is found in O(log n).
 *
 * Changes.  Everything that edits ranges goes through va_replace(): make
 * [a, e) be exactly one new range (or a hole), cutting the ranges it
 * overlaps and emitting drm_gpuvm-style UNMAP / REMAP / MAP steps.  The
 * public entries differ only in validation and in what they ask
 * va_replace() to put where.  A replace needs at most two records beyond
 * those it frees itself (one for the tail of a range split in two, one for
 * the new range) and inserts at most two entries (each may split one leaf
 * and, up the path, inner nodes); every entry obtains its worst case of
 * records, leaves and inner nodes from the host allocator before its first
 * change: the commit half cannot fail, and a refused allocation leaves
 * the space untouched.
 *
 * The common replace, where everything [a, e) touches sits in one leaf
 * that neither fills up nor underflows and nothing merges, is done on
 * that leaf's arrays in one pass (va_replace_leaf()); the leaf's kinds
 * and tags say what each range is and where its hash slot lies, so the
 * tree is edited before any record is read, and the records (which the
 * descent started fetching) are read, cut, unlinked and freed last.  A
 * reservation put into a hole, merged with equal neighbours in its leaf,
 * is one pass too (va_reserve_leaf()).  Everything else takes the general
 * walk of va_replace_do().
 *
 * Adjacent RESERVED ranges of one mode are merged (a map + unmap inside a
 * reservation gives back one range, so tiled-resource churn does not
 * fragment the tree); MAPPED ranges are never merged, as in drm_gpuvm:
 * each is what one map created, cut by later calls.
 */
#include "va/va_space.h"

#include "core/alloc_sites.h"

#include <string.h>

/*
 * Memory.  Three pools, all indexed by 32-bit numbers (0 = none):
 *
 *   records  the public struct vidmm_va_range (descriptor, object-list
 *            links, its leaf), in chunks of 256 that never move, so the
 *            pointers handed out stay valid while the range lives.  A
 *            range is named by its record's index ("node") everywhere
 *            above the tree.
 *   leaves[] 448 bytes each: start[16], end[16], idx[16] (record),
 *            tag[16] (a mapping's object hash, so its hash slot can be
 *            fetched without its record), kind[16] (state and
 *            in-reservation, so walks classify without the records), the
 *            previous leaf's last end, parent, chain links, count and
 *            the cached hole summary.
 *   inners[] 512 bytes each: key[16] (least start of each child; key[0]
 *            unused), child[16], max[16] and max64[16] (the children's
 *            largest hole and 64 KiB-aligned hole piece), parent, count.
 *
 * Unused slots hold start/key UINT64_MAX, end/max/tag/kind 0 and index
 * 0, so the searches run over all 16 slots without branches.  leaves[]
 * and inners[] grow by doubling (copied: only indices refer to them);
 * every growth happens in the prepare half of an entry.  A record knows
 * its leaf; a leaf finds a record's slot by scanning idx[] (one line), so
 * moving entries between leaves (split, merge) rewrites the moved
 * records' leaf.  The object hash has 8-byte slots (head record, tag);
 * the object itself is read from the head record when tags agree.
 *
 * Fill: a split leaves 8 + 8; below 4 entries a node merges with a
 * sibling (or takes entries from it), so every non-root node holds 4..16
 * and the inner nodes are at most leaves / 3 + 1 (used to size the
 * reserve).
 */
#define VA_CHUNK_SHIFT 8u
#define VA_CHUNK       (1u << VA_CHUNK_SHIFT) /* records per chunk */
#define VA_CAP_FIRST   256u                   /* first record capacity (a multiple of VA_CHUNK) */
#define VA_CAP_MAX     (UINT64_C(1) << 32)    /* indices are 32-bit */
#define VA_OBJ_MIN     16u
#define VA_NODES_PER_CALL 4u /* records: a single call's worst case (two per replace, see below) */
#define VA_INS_PER_CALL   2u /* tree insertions of a single replace */
#define VA_LB          16u   /* leaf capacity */
#define VA_IB          16u   /* inner capacity */
#define VA_LMIN        4u    /* least fill of a non-root leaf */
#define VA_IMIN        4u    /* least fill of a non-root inner node */
#define VA_TREE_FIRST  16u   /* first leaves[] / inners[] capacity */
#define VA_INNER_SLACK 40u   /* inner nodes beyond leaves / 3 + 1: the root chain of a split, with room */

struct vidmm_va_leaf {
    uint64_t start[VA_LB]; /* UINT64_MAX past count */
    uint64_t end[VA_LB];   /* 0 past count */
    uint32_t idx[VA_LB];   /* record; 0 past count */
    uint32_t tag[VA_LB];   /* MAPPED: va_tag(object), where its hash slot is; else 0 */
    uint64_t prev_end;     /* end of the range before start[0] (base for the first leaf) */
    uint32_t parent;       /* inner node; 0 for the root */
    uint32_t next, prev;   /* leaf chain in address order (next: free-list link when free) */
    uint32_t count;
    uint64_t smax, smax64; /* this leaf's largest hole and 64 KiB-aligned hole piece (cached) */
    uint8_t kind[VA_LB];   /* va_kind() of each range: the walks classify without the records; 0 past count */
    uint64_t pad;
};

struct vidmm_va_inner {
    uint64_t key[VA_IB];   /* key[j], j >= 1: least start under child j; key[0] = 0; UINT64_MAX past count */
    uint32_t child[VA_IB]; /* 0 past count */
    uint64_t max[VA_IB];   /* largest hole under child j; 0 past count */
    uint64_t max64[VA_IB]; /* largest 64 KiB-aligned hole piece under child j */
    uint32_t parent;       /* 0 for the root (free-list link when free) */
    uint32_t count;
    uint32_t leafkids;     /* 1: the children are leaves */
    uint32_t pad0;
    uint64_t smax, smax64; /* the maxima of max[] and max64[] (cached) */
    uint64_t pad[4];
};

struct vidmm_va_chunk {
    struct vidmm_va_range *recs;
    uint64_t block_chunks; /* first chunk of a host block: its chunk count, else 0 */
};

_Static_assert(sizeof(struct vidmm_va_leaf) == 448, "leaf must be seven cache lines");
_Static_assert(sizeof(struct vidmm_va_inner) == 512, "inner node must be eight cache lines");
_Static_assert(sizeof(struct vidmm_va_range) == 64, "record must be 64 bytes");

/* One allocation's mappings: the head of its list and the low 32 bits of
 * the object's hash (the home slot is tag & mask).  The object itself is
 * in the head record, read only when the tags agree.  head 0 marks an
 * empty slot.  Eight bytes, so the table stays small. */
struct vidmm_va_objrec {
    uint32_t head;   /* first mapping (node index) */
    uint32_t tag;    /* (uint32_t)va_hash(object) */
};

typedef struct vidmm_va_leaf va_leaf;

/* The 16-slot scans are short, fixed loops: unrolled, their compares run
 * side by side instead of in a loop-carried chain. */
#if defined(__GNUC__)
#define VA_PRAGMA(x) _Pragma(#x)
#define VA_UNROLL VA_PRAGMA(GCC unroll 16)
#else
#define VA_UNROLL
#endif
typedef struct vidmm_va_inner va_inner;

#define D(i)  (va_rec(vs, (i))->d)
#define LF(i) (vs->leaves[i])
#define IN(i) (vs->inners[i])
#define VS(i) (D(i).va)
#define VE(i) (D(i).va + D(i).size)

static inline struct vidmm_va_range *va_rec(const struct vidmm_va_space *vs, uint32_t i)
{
    return &vs->cold[i >> VA_CHUNK_SHIFT].recs[i & (VA_CHUNK - 1)];
}

static inline uint64_t va_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t va_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline int va_aligned(uint64_t x, uint64_t a) { return (x & (a - 1)) == 0; }
static inline uint64_t va_align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Reserved VA, or a mapping made in reserved VA: the WDDM "reserved range"
 * that update ops must stay in and that free cuts only at 64 KiB. */
static inline int va_backed(const struct vidmm_va_desc *d)
{
    return d->state == VIDMM_VA_RESERVED || (d->state == VIDMM_VA_MAPPED && d->in_reservation);
}

/* A range's class as its leaf keeps it (kind[]): the state, plus
 * VA_K_INRES for a mapping made in a reservation and VA_K_ZERO for a
 * ZERO reservation (so equal kinds of RESERVED ranges merge). */
#define VA_K_INRES 4u
#define VA_K_ZERO  8u
static inline uint8_t va_kind(const struct vidmm_va_desc *d)
{
    return (uint8_t)(d->state | (d->state == VIDMM_VA_MAPPED && d->in_reservation ? VA_K_INRES : 0) |
                     (d->state == VIDMM_VA_RESERVED && d->mode == VIDMM_VA_ZERO ? VA_K_ZERO : 0));
}

static inline int va_kind_backed(unsigned k)
{
    return (k & 3u) == VIDMM_VA_RESERVED || k == (VIDMM_VA_MAPPED | VA_K_INRES);
}

/* ---- record storage ------------------------------------------------------ */

static void va_free_blocks(const struct vidmm_va_space *vs, struct vidmm_va_chunk *dir, uint64_t from, uint64_t to)
{
    for (uint64_t c = from; c < to;) {
        uint64_t n = dir[c].block_chunks;
        vs->ha->free(vs->ha->user_data, dir[c].recs, (size_t)n * VA_CHUNK * sizeof(struct vidmm_va_range), 64);
        c += n;
    }
}

/* Grow the records until `want` are free.  All or nothing. */
static vidmm_status va_nodes_reserve(struct vidmm_va_space *vs, uint64_t want)
{
    if (vs->free_node_count >= want)
        return VIDMM_OK;
    const struct vidmm_host_allocator *ha = vs->ha;
    uint64_t old = vs->node_cap, need = old + (want - vs->free_node_count);
    if (need > VA_CAP_MAX || need < old)
        return VIDMM_E_NO_HOST_MEMORY;
    uint64_t cap = old ? old : VA_CAP_FIRST;
    while (cap < need || cap == old)
        cap *= 2;
    if (cap > VA_CAP_MAX || cap > SIZE_MAX / sizeof(struct vidmm_va_range))
        return VIDMM_E_NO_HOST_MEMORY;
    uint64_t chunks = cap / VA_CHUNK, new_chunks = chunks - vs->cold_chunks;
    struct vidmm_va_chunk *dir = vs->cold;
    uint64_t dir_cap = vs->cold_dir_cap;
    if (chunks > dir_cap) {
        dir_cap = chunks;
        dir = vidmm_host_alloc_at(ha, VIDMM_SITE_VA_RANGE_DIR, (size_t)dir_cap * sizeof *dir, 16);
    }
    struct vidmm_va_range *blk = dir ? vidmm_host_alloc_at(ha, VIDMM_SITE_VA_RANGES, (size_t)new_chunks * VA_CHUNK * sizeof *blk, 64)
                                     : NULL;
    if (!blk) {
        if (dir && dir != vs->cold)
            ha->free(ha->user_data, dir, (size_t)dir_cap * sizeof *dir, 16);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    /* Commit: nothing below fails. */
    if (dir != vs->cold) {
        if (vs->cold_chunks)
            memcpy(dir, vs->cold, (size_t)vs->cold_chunks * sizeof *dir);
        if (vs->cold)
            ha->free(ha->user_data, vs->cold, (size_t)vs->cold_dir_cap * sizeof *dir, 16);
    }
    memset(blk, 0, (size_t)new_chunks * VA_CHUNK * sizeof *blk);
    for (uint64_t c = 0; c < new_chunks; c++) {
        dir[vs->cold_chunks + c].recs = blk + c * VA_CHUNK;
        dir[vs->cold_chunks + c].block_chunks = c ? 0 : new_chunks;
    }
    vs->cold = dir;
    vs->cold_dir_cap = dir_cap;
    vs->cold_chunks = chunks;
    vs->node_cap = cap;
    /* Index 0 is "none"; hand the rest out lowest first. */
    for (uint64_t i = cap; i-- > (old ? old : 1);) {
        struct vidmm_va_range *c = va_rec(vs, (uint32_t)i);
        c->node = (uint32_t)i;
        c->obj_next = vs->free_nodes;
        vs->free_nodes = (uint32_t)i;
        vs->free_node_count++;
    }
    return VIDMM_OK;
}

/* Only after va_nodes_reserve(): never fails.  The caller fills D(i). */
static uint32_t va_node_get(struct vidmm_va_space *vs)
{
    uint32_t i = vs->free_nodes;
    struct vidmm_va_range *c = va_rec(vs, i);
    vs->free_nodes = c->obj_next;
    vs->free_node_count--;
    c->obj_prev = c->obj_next = 0;
    c->leaf = 0;
    return i;
}

static void va_node_put(struct vidmm_va_space *vs, uint32_t i)
{
    struct vidmm_va_range *c = va_rec(vs, i);
    c->obj_prev = 0;
    c->leaf = 0;
    c->obj_next = vs->free_nodes;
    vs->free_nodes = i;
    vs->free_node_count++;
}

/* ---- tree node storage ------------------------------------------------------ */

/* Grow an array of tree nodes (copied) to at least `need` entries; the new
 * ones go on the free list through *link(i).  All or nothing. */
static void *va_grow_array(struct vidmm_va_space *vs, enum vidmm_alloc_site site, void *old_arr, uint32_t *cap_io,
                           uint64_t need, size_t elem)
{
    uint64_t old = *cap_io, cap = old ? old : VA_TREE_FIRST;
    while (cap < need)
        cap *= 2;
    if (cap > VA_CAP_MAX - 1 || cap > SIZE_MAX / elem)
        return NULL;
    char *arr = vidmm_host_alloc_at(vs->ha, site, (size_t)cap * elem, 64);
    if (!arr)
        return NULL;
    if (old) {
        memcpy(arr, old_arr, (size_t)old * elem);
        vs->ha->free(vs->ha->user_data, old_arr, (size_t)old * elem, 64);
    }
    memset(arr + (size_t)old * elem, 0, (size_t)(cap - old) * elem);
    *cap_io = (uint32_t)cap;
    return arr;
}

static vidmm_status va_leaves_reserve(struct vidmm_va_space *vs, uint64_t want)
{
    if (vs->free_leaf_count >= want)
        return VIDMM_OK;
    uint32_t old = vs->leaf_cap;
    uint64_t need = (uint64_t)vs->leaf_used + want + 1;
    va_leaf *a = va_grow_array(vs, VIDMM_SITE_VA_LEAVES, vs->leaves, &vs->leaf_cap, need, sizeof(va_leaf));
    if (!a)
        return VIDMM_E_NO_HOST_MEMORY;
    vs->leaves = a;
    for (uint32_t i = vs->leaf_cap; i-- > (old ? old : 1);) {
        a[i].next = vs->free_leaves;
        vs->free_leaves = i;
        vs->free_leaf_count++;
    }
    return VIDMM_OK;
}

static vidmm_status va_inners_reserve(struct vidmm_va_space *vs, uint64_t want)
{
    if (vs->free_inner_count >= want)
        return VIDMM_OK;
    uint32_t old = vs->inner_cap;
    uint64_t need = (uint64_t)vs->inner_used + want + 1;
    va_inner *a = va_grow_array(vs, VIDMM_SITE_VA_INNERS, vs->inners, &vs->inner_cap, need, sizeof(va_inner));
    if (!a)
        return VIDMM_E_NO_HOST_MEMORY;
    vs->inners = a;
    for (uint32_t i = vs->inner_cap; i-- > (old ? old : 1);) {
        a[i].parent = vs->free_inners;
        vs->free_inners = i;
        vs->free_inner_count++;
    }
    return VIDMM_OK;
}

/* Room for `recs` new records and at most `ins` tree insertions.  Each
 * insertion splits at most one leaf; and as every non-root leaf holds at
 * least VA_LMIN entries, the leaves never exceed (entries + recs) / VA_LMIN
 * + 2 either, whichever bound is lower.  Inner nodes never exceed leaves /
 * 3 + 1 (every non-root one has >= VA_IMIN = 4 children), plus the chain
 * a split creates on its way up. */
static vidmm_status va_reserve(struct vidmm_va_space *vs, uint64_t recs, uint64_t ins)
{
    vidmm_status st;
    uint64_t leaf_total = (vs->range_count + 1 + recs) / VA_LMIN + 2;
    uint64_t leaves = leaf_total > vs->leaf_used ? va_min(ins, leaf_total - vs->leaf_used) : 0;
    if ((st = va_nodes_reserve(vs, recs)) != VIDMM_OK || (st = va_leaves_reserve(vs, leaves)) != VIDMM_OK)
        return st;
    uint64_t inner_total = ((uint64_t)vs->leaf_used + leaves) / 3 + VA_INNER_SLACK;
    return inner_total > vs->inner_used ? va_inners_reserve(vs, inner_total - vs->inner_used) : VIDMM_OK;
}

static uint32_t va_leaf_get(struct vidmm_va_space *vs)
{
    uint32_t i = vs->free_leaves;
    va_leaf *l = &LF(i);
    vs->free_leaves = l->next;
    vs->free_leaf_count--;
    vs->leaf_used++;
    memset(l, 0, sizeof *l);
    for (unsigned k = 0; k < VA_LB; k++)
        l->start[k] = UINT64_MAX;
    return i;
}

static void va_leaf_put(struct vidmm_va_space *vs, uint32_t i)
{
    memset(&LF(i), 0, sizeof LF(i));
    LF(i).next = vs->free_leaves;
    vs->free_leaves = i;
    vs->free_leaf_count++;
    vs->leaf_used--;
}

static uint32_t va_inner_get(struct vidmm_va_space *vs)
{
    uint32_t i = vs->free_inners;
    va_inner *n = &IN(i);
    vs->free_inners = n->parent;
    vs->free_inner_count--;
    vs->inner_used++;
    memset(n, 0, sizeof *n);
    for (unsigned k = 1; k < VA_IB; k++)
        n->key[k] = UINT64_MAX;
    return i;
}

static void va_inner_put(struct vidmm_va_space *vs, uint32_t i)
{
    memset(&IN(i), 0, sizeof IN(i));
    IN(i).parent = vs->free_inners;
    vs->free_inners = i;
    vs->free_inner_count++;
    vs->inner_used--;
}

/* ---- object hash: object -> list of its mappings -------------------------- */

static inline uint64_t va_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static inline uint32_t va_tag(uint64_t object) { return (uint32_t)va_hash(object); }

static struct vidmm_va_objrec *va_obj_find(const struct vidmm_va_space *vs, uint64_t object)
{
    uint64_t mask = vs->obj_cap - 1;
    uint32_t t = va_tag(object);
    for (uint64_t i = t & mask;; i = (i + 1) & mask) {
        struct vidmm_va_objrec *o = &vs->objs[i];
        if (o->head == 0)
            return NULL;
        if (o->tag == t && va_rec(vs, o->head)->d.object == object)
            return o;
    }
}

/* The slot whose list starts at n (n is linked and heads its list). */
static struct vidmm_va_objrec *va_obj_slot_of(const struct vidmm_va_space *vs, uint32_t n)
{
    uint64_t mask = vs->obj_cap - 1;
    for (uint64_t i = va_tag(va_rec(vs, n)->d.object) & mask;; i = (i + 1) & mask)
        if (vs->objs[i].head == n)
            return &vs->objs[i];
}

/* Prefetches are macros, not functions: GCC's IPA pure-const pass finds
 * a function whose only effect is __builtin_prefetch "const" and deletes
 * every call to it (GCC 12 dropped all of these when they were static
 * inline functions). */
#define VA_OBJ_PREFETCH(vs, object) __builtin_prefetch(&(vs)->objs[va_tag(object) & ((vs)->obj_cap - 1)])

/* A mapping is about to be unlinked: start the misses of its hash slot
 * (needed only when it heads its list) and its list neighbours. */
#define VA_UNLINK_PREFETCH(vs, n)                                   \
    do {                                                            \
        const struct vidmm_va_range *c_ = va_rec((vs), (n));        \
        if (!c_->obj_prev)                                          \
            VA_OBJ_PREFETCH((vs), c_->d.object);                    \
        else                                                        \
            __builtin_prefetch(va_rec((vs), c_->obj_prev));         \
        if (c_->obj_next)                                           \
            __builtin_prefetch(va_rec((vs), c_->obj_next));         \
    } while (0)

/* Make room for `more` new objects at load <= 1/2. */
static vidmm_status va_obj_reserve(struct vidmm_va_space *vs, uint64_t more)
{
    if ((vs->obj_count + more) * 2 <= vs->obj_cap)
        return VIDMM_OK;
    uint64_t cap = vs->obj_cap;
    while ((vs->obj_count + more) * 2 > cap) {
        if (cap > SIZE_MAX / 2 / sizeof(struct vidmm_va_objrec))
            return VIDMM_E_NO_HOST_MEMORY;
        cap *= 2;
    }
    struct vidmm_va_objrec *t = vidmm_host_alloc_at(vs->ha, VIDMM_SITE_VA_OBJRECS, (size_t)cap * sizeof *t, 16);
    if (!t)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(t, 0, (size_t)cap * sizeof *t);
    for (uint64_t j = 0; j < vs->obj_cap; j++) {
        if (!vs->objs[j].head)
            continue;
        uint64_t i = vs->objs[j].tag & (cap - 1);
        while (t[i].head)
            i = (i + 1) & (cap - 1);
        t[i] = vs->objs[j];
    }
    vs->ha->free(vs->ha->user_data, vs->objs, (size_t)vs->obj_cap * sizeof *t, 16);
    vs->objs = t;
    vs->obj_cap = cap;
    return VIDMM_OK;
}

/* Remove a slot by backward shift (linear probing keeps no tombstones). */
static void va_obj_delete(struct vidmm_va_space *vs, struct vidmm_va_objrec *rec)
{
    uint64_t mask = vs->obj_cap - 1;
    uint64_t i = (uint64_t)(rec - vs->objs);
    for (uint64_t j = (i + 1) & mask; vs->objs[j].head; j = (j + 1) & mask) {
        uint64_t home = vs->objs[j].tag & mask;
        /* j's entry may move to i if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            vs->objs[i] = vs->objs[j];
            i = j;
        }
    }
    vs->objs[i].head = 0;
    vs->objs[i].tag = 0;
    vs->obj_count--;
}

/* Link n into its object's list right after p, a linked mapping of the
 * same object: no hash access (the head stays). */
static void va_obj_link_after(struct vidmm_va_space *vs, uint32_t n, uint32_t p)
{
    struct vidmm_va_range *c = va_rec(vs, n), *pc = va_rec(vs, p);
    c->obj_prev = p;
    c->obj_next = pc->obj_next;
    if (pc->obj_next)
        va_rec(vs, pc->obj_next)->obj_prev = n;
    pc->obj_next = n;
}

/* Capacity was reserved by the caller when the object may be new. */
static void va_obj_link(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    uint64_t object = c->d.object, mask = vs->obj_cap - 1;
    uint32_t t = va_tag(object);
    /* One probe sequence: the object's slot, or the empty one ending it. */
    for (uint64_t i = t & mask;; i = (i + 1) & mask) {
        struct vidmm_va_objrec *rec = &vs->objs[i];
        if (rec->head == 0) {
            rec->head = n;
            rec->tag = t;
            c->obj_prev = c->obj_next = 0;
            vs->obj_count++;
            return;
        }
        if (rec->tag == t && va_rec(vs, rec->head)->d.object == object) {
            va_obj_link_after(vs, n, rec->head);
            return;
        }
    }
}

/* Only a list head touches the hash. */
static void va_obj_unlink(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    if (c->obj_prev) {
        va_rec(vs, c->obj_prev)->obj_next = c->obj_next;
        if (c->obj_next)
            va_rec(vs, c->obj_next)->obj_prev = c->obj_prev;
    } else {
        struct vidmm_va_objrec *rec = va_obj_slot_of(vs, n);
        if (c->obj_next) {
            rec->head = c->obj_next;
            va_rec(vs, c->obj_next)->obj_prev = 0;
        } else {
            va_obj_delete(vs, rec);
        }
    }
    c->obj_prev = c->obj_next = 0;
}

/* ---- B+-tree --------------------------------------------------------------- */

/* The 64 KiB-aligned part of the hole [va - gap, va). */
static inline uint64_t va_gap64(uint64_t va, uint64_t gap)
{
    uint64_t lo = va_align_up(va - gap, VIDMM_VA_GRANULE);
    uint64_t hi = va & ~(VIDMM_VA_GRANULE - 1);
    return hi > lo ? hi - lo : 0;
}

/* Slot of record n in leaf l (n must be there): branch-free over idx[]. */
static inline unsigned va_leaf_slot(const va_leaf *l, uint32_t n)
{
    unsigned s = 0;
    for (unsigned i = 0; i < VA_LB; i++)
        s |= l->idx[i] == n ? i : 0;
    return s;
}

static inline unsigned va_child_slot(const va_inner *in, uint32_t c)
{
    unsigned s = 0;
    for (unsigned i = 0; i < VA_IB; i++)
        s |= in->child[i] == c ? i : 0;
    return s;
}

/* Largest hole and 64 KiB-aligned hole piece of a leaf / an inner node. */
static void va_leaf_sum(const va_leaf *l, uint64_t *m, uint64_t *m64)
{
    /* Addresses stay below 2^63, so the aligned piece hi - lo fits an
     * int64_t; a negative one (no aligned piece) never beats the 0 that
     * mx64 starts from, which saves the clamp of va_gap64(). */
    const uint64_t g = VIDMM_VA_GRANULE - 1;
    uint64_t pe = l->prev_end, mx = 0;
    int64_t mx64 = 0;
    for (unsigned i = 0; i < l->count; i++) {
        uint64_t s = l->start[i];
        int64_t p64 = (int64_t)((s & ~g) - ((pe + g) & ~g));
        mx = va_max(mx, s - pe);
        mx64 = p64 > mx64 ? p64 : mx64;
        pe = l->end[i];
    }
    *m = mx;
    *m64 = (uint64_t)mx64;
}

static void va_inner_sum(const va_inner *in, uint64_t *m, uint64_t *m64)
{
    uint64_t mx = 0, mx64 = 0;
    for (unsigned i = 0; i < VA_IB; i++) {
        mx = va_max(mx, in->max[i]);
        mx64 = va_max(mx64, in->max64[i]);
    }
    *m = mx;
    *m64 = mx64;
}

/* Recompute node n's summary into its cache, and return it. */
static inline void va_sum(struct vidmm_va_space *vs, uint32_t n, int leaf, uint64_t *m, uint64_t *m64)
{
    if (leaf) {
        va_leaf *l = &LF(n);
        va_leaf_sum(l, m, m64);
        l->smax = *m;
        l->smax64 = *m64;
    } else {
        va_inner *in = &IN(n);
        va_inner_sum(in, m, m64);
        in->smax = *m;
        in->smax64 = *m64;
    }
}

static inline void va_set_parent(struct vidmm_va_space *vs, uint32_t n, int leaf, uint32_t p)
{
    if (leaf)
        LF(n).parent = p;
    else
        IN(n).parent = p;
}

/* Store child j's summary in its parent's slot. */
static inline void va_slot_sum(struct vidmm_va_space *vs, va_inner *in, unsigned j)
{
    va_sum(vs, in->child[j], (int)in->leafkids, &in->max[j], &in->max64[j]);
}

/* Leaf lf's holes changed: refresh its cached summary and the slots
 * above it, stopping at the first node whose summary comes out
 * unchanged (without reading its parent). */
static void va_fix(struct vidmm_va_space *vs, uint32_t lf)
{
    uint64_t m, m64;
    va_leaf *l = &LF(lf);
    va_leaf_sum(l, &m, &m64);
    if (l->smax == m && l->smax64 == m64)
        return;
    l->smax = m;
    l->smax64 = m64;
    uint32_t n = lf, p = l->parent;
    while (p) {
        va_inner *in = &IN(p);
        unsigned j = va_child_slot(in, n);
        uint64_t om = in->max[j], om64 = in->max64[j], nm = in->smax, nm64 = in->smax64;
        in->max[j] = m;
        in->max64[j] = m64;
        /* The node's maximum moves only if the slot rises above it, or
         * was it and falls (then rescan the slots). */
        if (m >= nm || om == nm || m64 >= nm64 || om64 == nm64) {
            uint64_t r, r64;
            va_inner_sum(in, &r, &r64);
            if (r == nm && r64 == nm64)
                return;
            in->smax = m = r;
            in->smax64 = m64 = r64;
        } else {
            return;
        }
        n = p;
        p = in->parent;
    }
}

/* Leaf lf's holes changed: note it; va_flush() refreshes the summaries
 * once per change (a cut and the insertion that fills the hole again
 * mostly cancel out), and before any split or merge, which assume the
 * summaries above the leaves they move entries between are current. */
static void va_flush(struct vidmm_va_space *vs)
{
    for (uint32_t i = 0; i < vs->dirty_count; i++)
        va_fix(vs, vs->dirty[i]);
    vs->dirty_count = 0;
}

static inline void va_dirty(struct vidmm_va_space *vs, uint32_t lf)
{
    uint32_t n = vs->dirty_count;
    for (uint32_t i = 0; i < n; i++)
        if (vs->dirty[i] == lf)
            return;
    if (n == sizeof vs->dirty / sizeof vs->dirty[0]) {
        va_flush(vs);
        n = 0;
    }
    vs->dirty[n] = lf;
    vs->dirty_count = n + 1;
}

/* Leaf lf's least start is now key: update the one ancestor key naming it. */
static void va_key_up(struct vidmm_va_space *vs, uint32_t lf, uint64_t key)
{
    uint32_t n = lf, p = LF(lf).parent;
    while (p) {
        va_inner *in = &IN(p);
        unsigned j = va_child_slot(in, n);
        if (j) {
            in->key[j] = key;
            return;
        }
        n = p;
        p = in->parent;
    }
}

static uint32_t va_inner_split(struct vidmm_va_space *vs, uint32_t p);

/* right (least start rkey) was split off left (both leaves if leaf):
 * insert it after left in left's parent, splitting upward as needed.
 * A split only moves holes between siblings, so the summaries above the
 * parent stay right; the two slots are set here. */
static void va_parent_insert(struct vidmm_va_space *vs, uint32_t left, uint32_t right, uint64_t rkey, int leaf)
{
    uint32_t p = leaf ? LF(left).parent : IN(left).parent;
    if (!p) {
        p = va_inner_get(vs);
        va_inner *in = &IN(p);
        in->count = 2;
        in->leafkids = (uint32_t)leaf;
        in->child[0] = left;
        in->child[1] = right;
        in->key[1] = rkey;
        va_set_parent(vs, left, leaf, p);
        va_set_parent(vs, right, leaf, p);
        va_slot_sum(vs, in, 0);
        va_slot_sum(vs, in, 1);
        va_inner_sum(in, &in->smax, &in->smax64);
        vs->root = p;
        vs->height++;
        return;
    }
    if (IN(p).count == VA_IB) {
        va_inner_split(vs, p);
        p = leaf ? LF(left).parent : IN(left).parent;
    }
    va_inner *in = &IN(p);
    unsigned j = va_child_slot(in, left) + 1, c = in->count;
    memmove(&in->key[j + 1], &in->key[j], (c - j) * sizeof in->key[0]);
    memmove(&in->child[j + 1], &in->child[j], (c - j) * sizeof in->child[0]);
    memmove(&in->max[j + 1], &in->max[j], (c - j) * sizeof in->max[0]);
    memmove(&in->max64[j + 1], &in->max64[j], (c - j) * sizeof in->max64[0]);
    in->key[j] = rkey;
    in->child[j] = right;
    in->count = c + 1;
    va_set_parent(vs, right, leaf, p);
    va_slot_sum(vs, in, j - 1);
    va_slot_sum(vs, in, j);
}

/* Move the upper half of full inner p to a new node; returns it. */
static uint32_t va_inner_split(struct vidmm_va_space *vs, uint32_t p)
{
    uint32_t q = va_inner_get(vs);
    va_inner *a = &IN(p), *b = &IN(q);
    const unsigned h = VA_IB / 2;
    int lk = (int)a->leafkids;
    uint64_t qkey = a->key[h];
    b->leafkids = a->leafkids;
    for (unsigned i = 0; i < h; i++) {
        b->key[i] = i ? a->key[h + i] : 0;
        b->child[i] = a->child[h + i];
        b->max[i] = a->max[h + i];
        b->max64[i] = a->max64[h + i];
        va_set_parent(vs, b->child[i], lk, q);
        a->key[h + i] = UINT64_MAX;
        a->child[h + i] = 0;
        a->max[h + i] = a->max64[h + i] = 0;
    }
    a->count = b->count = h;
    va_parent_insert(vs, p, q, qkey, 0);
    return q;
}

/* Move the upper half of full leaf lf to a new leaf; returns it. */
static uint32_t va_leaf_split(struct vidmm_va_space *vs, uint32_t lf)
{
    va_flush(vs);
    uint32_t r = va_leaf_get(vs);
    va_leaf *a = &LF(lf), *b = &LF(r);
    const unsigned h = VA_LB / 2;
    for (unsigned i = 0; i < h; i++) {
        b->start[i] = a->start[h + i];
        b->end[i] = a->end[h + i];
        b->idx[i] = a->idx[h + i];
        b->tag[i] = a->tag[h + i];
        b->kind[i] = a->kind[h + i];
        va_rec(vs, b->idx[i])->leaf = r;
        a->start[h + i] = UINT64_MAX;
        a->end[h + i] = 0;
        a->idx[h + i] = 0;
        a->tag[h + i] = 0;
        a->kind[h + i] = 0;
    }
    a->count = b->count = h;
    b->prev_end = a->end[h - 1];
    b->next = a->next;
    b->prev = lf;
    if (a->next)
        LF(a->next).prev = r;
    a->next = r;
    va_parent_insert(vs, lf, r, b->start[0], 1);
    return r;
}

/* Put record n (D(n) filled in) at slot s of leaf lf. */
static void va_leaf_insert(struct vidmm_va_space *vs, uint32_t lf, unsigned s, uint32_t n)
{
    if (LF(lf).count == VA_LB) {
        uint32_t r = va_leaf_split(vs, lf);
        if (s > VA_LB / 2) {
            lf = r;
            s -= VA_LB / 2;
        }
    }
    va_leaf *l = &LF(lf);
    unsigned c = l->count;
    memmove(&l->start[s + 1], &l->start[s], (c - s) * sizeof l->start[0]);
    memmove(&l->end[s + 1], &l->end[s], (c - s) * sizeof l->end[0]);
    memmove(&l->idx[s + 1], &l->idx[s], (c - s) * sizeof l->idx[0]);
    memmove(&l->tag[s + 1], &l->tag[s], (c - s) * sizeof l->tag[0]);
    memmove(&l->kind[s + 1], &l->kind[s], (c - s) * sizeof l->kind[0]);
    l->start[s] = VS(n);
    l->end[s] = VE(n);
    l->idx[s] = n;
    l->tag[s] = D(n).state == VIDMM_VA_MAPPED ? va_tag(D(n).object) : 0;
    l->kind[s] = va_kind(&D(n));
    l->count = c + 1;
    va_rec(vs, n)->leaf = lf;
    if (s == 0)
        va_key_up(vs, lf, l->start[0]);
    if (s == c && l->next) {
        LF(l->next).prev_end = l->end[s];
        va_dirty(vs, l->next);
    }
    va_dirty(vs, lf);
}

static void va_inner_underflow(struct vidmm_va_space *vs, uint32_t p);

/* Drop child k (>= 1) of p, whose entries moved to child k - 1 (the
 * caller has refreshed that slot); collapse or rebalance p. */
static void va_inner_remove(struct vidmm_va_space *vs, uint32_t p, unsigned k)
{
    va_inner *in = &IN(p);
    unsigned c = in->count - 1;
    memmove(&in->key[k], &in->key[k + 1], (c - k) * sizeof in->key[0]);
    memmove(&in->child[k], &in->child[k + 1], (c - k) * sizeof in->child[0]);
    memmove(&in->max[k], &in->max[k + 1], (c - k) * sizeof in->max[0]);
    memmove(&in->max64[k], &in->max64[k + 1], (c - k) * sizeof in->max64[0]);
    in->key[c] = UINT64_MAX;
    in->child[c] = 0;
    in->max[c] = in->max64[c] = 0;
    in->count = c;
    if (p == vs->root) {
        if (c == 1) {
            uint32_t ch = in->child[0];
            va_set_parent(vs, ch, (int)in->leafkids, 0);
            vs->root = ch;
            vs->height--;
            va_inner_put(vs, p);
        }
    } else if (c < VA_IMIN) {
        va_inner_underflow(vs, p);
    }
}

/* Non-root leaf lf has fewer than VA_LMIN entries: merge it with a
 * sibling, or even the two out.  Entries only move, so no hole changes
 * and only the two slots in the parent are refreshed. */
static void va_leaf_underflow(struct vidmm_va_space *vs, uint32_t lf)
{
    uint32_t p = LF(lf).parent;
    va_inner *in = &IN(p);
    unsigned j = va_child_slot(in, lf), jl = j ? j - 1 : 0;
    uint32_t L = in->child[jl], R = in->child[jl + 1];
    va_leaf *a = &LF(L), *b = &LF(R);
    unsigned t = a->count + b->count;
    if (t <= VA_LB) {
        unsigned c = a->count;
        for (unsigned i = 0; i < b->count; i++) {
            a->start[c + i] = b->start[i];
            a->end[c + i] = b->end[i];
            a->idx[c + i] = b->idx[i];
            a->tag[c + i] = b->tag[i];
            a->kind[c + i] = b->kind[i];
            va_rec(vs, b->idx[i])->leaf = L;
        }
        a->count = t;
        a->next = b->next;
        if (b->next)
            LF(b->next).prev = L;
        va_leaf_put(vs, R);
        va_slot_sum(vs, in, jl);
        va_inner_remove(vs, p, jl + 1);
        return;
    }
    unsigned nl = t / 2;
    if (a->count < nl) {
        unsigned k = nl - a->count, c = a->count;
        for (unsigned i = 0; i < k; i++) {
            a->start[c + i] = b->start[i];
            a->end[c + i] = b->end[i];
            a->idx[c + i] = b->idx[i];
            a->tag[c + i] = b->tag[i];
            a->kind[c + i] = b->kind[i];
            va_rec(vs, b->idx[i])->leaf = L;
        }
        unsigned rest = b->count - k;
        memmove(&b->start[0], &b->start[k], rest * sizeof b->start[0]);
        memmove(&b->end[0], &b->end[k], rest * sizeof b->end[0]);
        memmove(&b->idx[0], &b->idx[k], rest * sizeof b->idx[0]);
        memmove(&b->tag[0], &b->tag[k], rest * sizeof b->tag[0]);
        memmove(&b->kind[0], &b->kind[k], rest * sizeof b->kind[0]);
        for (unsigned i = rest; i < b->count; i++) {
            b->start[i] = UINT64_MAX;
            b->end[i] = 0;
            b->idx[i] = 0;
            b->tag[i] = 0;
            b->kind[i] = 0;
        }
    } else {
        unsigned k = a->count - nl, c = b->count;
        memmove(&b->start[k], &b->start[0], c * sizeof b->start[0]);
        memmove(&b->end[k], &b->end[0], c * sizeof b->end[0]);
        memmove(&b->idx[k], &b->idx[0], c * sizeof b->idx[0]);
        memmove(&b->tag[k], &b->tag[0], c * sizeof b->tag[0]);
        memmove(&b->kind[k], &b->kind[0], c * sizeof b->kind[0]);
        for (unsigned i = 0; i < k; i++) {
            b->start[i] = a->start[nl + i];
            b->end[i] = a->end[nl + i];
            b->idx[i] = a->idx[nl + i];
            b->tag[i] = a->tag[nl + i];
            b->kind[i] = a->kind[nl + i];
            va_rec(vs, b->idx[i])->leaf = R;
            a->start[nl + i] = UINT64_MAX;
            a->end[nl + i] = 0;
            a->idx[nl + i] = 0;
            a->tag[nl + i] = 0;
            a->kind[nl + i] = 0;
        }
    }
    b->count = t - nl;
    a->count = nl;
    b->prev_end = a->end[nl - 1];
    in->key[jl + 1] = b->start[0];
    va_slot_sum(vs, in, jl);
    va_slot_sum(vs, in, jl + 1);
}

/* The same for a non-root inner node. */
static void va_inner_underflow(struct vidmm_va_space *vs, uint32_t p)
{
    uint32_t g = IN(p).parent;
    va_inner *gi = &IN(g);
    unsigned j = va_child_slot(gi, p), jl = j ? j - 1 : 0;
    uint32_t L = gi->child[jl], R = gi->child[jl + 1];
    va_inner *a = &IN(L), *b = &IN(R);
    int lk = (int)a->leafkids;
    uint64_t sep = gi->key[jl + 1]; /* least start under R */
    unsigned t = a->count + b->count;
    if (t <= VA_IB) {
        unsigned c = a->count;
        for (unsigned i = 0; i < b->count; i++) {
            a->key[c + i] = i ? b->key[i] : sep;
            a->child[c + i] = b->child[i];
            a->max[c + i] = b->max[i];
            a->max64[c + i] = b->max64[i];
            va_set_parent(vs, b->child[i], lk, L);
        }
        a->count = t;
        va_inner_put(vs, R);
        va_slot_sum(vs, gi, jl);
        va_inner_remove(vs, g, jl + 1);
        return;
    }
    unsigned nl = t / 2;
    if (a->count < nl) {
        unsigned k = nl - a->count, c = a->count;
        for (unsigned i = 0; i < k; i++) {
            a->key[c + i] = i ? b->key[i] : sep;
            a->child[c + i] = b->child[i];
            a->max[c + i] = b->max[i];
            a->max64[c + i] = b->max64[i];
            va_set_parent(vs, b->child[i], lk, L);
        }
        sep = b->key[k];
        unsigned rest = b->count - k;
        memmove(&b->key[0], &b->key[k], rest * sizeof b->key[0]);
        memmove(&b->child[0], &b->child[k], rest * sizeof b->child[0]);
        memmove(&b->max[0], &b->max[k], rest * sizeof b->max[0]);
        memmove(&b->max64[0], &b->max64[k], rest * sizeof b->max64[0]);
        for (unsigned i = rest; i < b->count; i++) {
            b->key[i] = UINT64_MAX;
            b->child[i] = 0;
            b->max[i] = b->max64[i] = 0;
        }
    } else {
        unsigned k = a->count - nl, c = b->count;
        memmove(&b->key[k], &b->key[0], c * sizeof b->key[0]);
        memmove(&b->child[k], &b->child[0], c * sizeof b->child[0]);
        memmove(&b->max[k], &b->max[0], c * sizeof b->max[0]);
        memmove(&b->max64[k], &b->max64[0], c * sizeof b->max64[0]);
        b->key[k] = sep;
        for (unsigned i = 0; i < k; i++) {
            b->key[i] = a->key[nl + i];
            b->child[i] = a->child[nl + i];
            b->max[i] = a->max[nl + i];
            b->max64[i] = a->max64[nl + i];
            va_set_parent(vs, b->child[i], lk, R);
            a->key[nl + i] = UINT64_MAX;
            a->child[nl + i] = 0;
            a->max[nl + i] = a->max64[nl + i] = 0;
        }
        sep = b->key[0];
    }
    b->key[0] = 0;
    b->count = t - nl;
    a->count = nl;
    gi->key[jl + 1] = sep;
    va_slot_sum(vs, gi, jl);
    va_slot_sum(vs, gi, jl + 1);
}

/* Take slot s out of leaf lf. */
static void va_leaf_remove(struct vidmm_va_space *vs, uint32_t lf, unsigned s)
{
    va_leaf *l = &LF(lf);
    unsigned c = l->count - 1;
    memmove(&l->start[s], &l->start[s + 1], (c - s) * sizeof l->start[0]);
    memmove(&l->end[s], &l->end[s + 1], (c - s) * sizeof l->end[0]);
    memmove(&l->idx[s], &l->idx[s + 1], (c - s) * sizeof l->idx[0]);
    memmove(&l->tag[s], &l->tag[s + 1], (c - s) * sizeof l->tag[0]);
    memmove(&l->kind[s], &l->kind[s + 1], (c - s) * sizeof l->kind[0]);
    l->start[c] = UINT64_MAX;
    l->end[c] = 0;
    l->idx[c] = 0;
    l->tag[c] = 0;
    l->kind[c] = 0;
    l->count = c;
    if (s == c && l->next) {
        LF(l->next).prev_end = c ? l->end[c - 1] : l->prev_end;
        va_dirty(vs, l->next);
    }
    if (s == 0 && c)
        va_key_up(vs, lf, l->start[0]);
    va_dirty(vs, lf);
    if (c < VA_LMIN && vs->height) {
        va_flush(vs);
        va_leaf_underflow(vs, lf);
    }
}

static uint32_t va_next_node(const struct vidmm_va_space *vs, uint32_t n)
{
    const va_leaf *l = &LF(va_rec(vs, n)->leaf);
    unsigned s = va_leaf_slot(l, n);
    if (s + 1 < l->count)
        return l->idx[s + 1];
    return l->next ? LF(l->next).idx[0] : 0;
}

static uint32_t va_prev_node(const struct vidmm_va_space *vs, uint32_t n)
{
    const va_leaf *l = &LF(va_rec(vs, n)->leaf);
    unsigned s = va_leaf_slot(l, n);
    if (s)
        return l->idx[s - 1];
    return l->prev ? LF(l->prev).idx[LF(l->prev).count - 1] : 0;
}

/* First node (possibly the sentinel) ending after va, for a change of
 * [va, e) (e = 0: a lookup).  The inner levels mostly stay in cache; the
 * leaf's lines are fetched together.  Then the misses the change will
 * take are started at once: the records of the ranges it covers (their
 * steps read them) and, for the mappings it covers whole (it unlinks
 * them), their hash slots, found from the leaf's tags, so they do not
 * wait for the records. */
/* Where a range sits in the tree: its leaf and slot.  The descent hands
 * it on, so a change does not go through the range's record (one more
 * miss) to find its leaf. */
struct va_pos {
    uint32_t lf;
    unsigned slot;
};

static uint32_t va_first_from_span(const struct vidmm_va_space *vs, uint64_t va, uint64_t e, struct va_pos *p)
{
    if (va >= vs->limit) {
        if (p) {
            p->lf = va_rec(vs, vs->end)->leaf;
            p->slot = LF(p->lf).count - 1;
        }
        return vs->end;
    }
    uint32_t n = vs->root;
    for (uint32_t h = vs->height; h; h--) {
        const va_inner *in = &IN(n);
        unsigned j = 0;
        VA_UNROLL
        for (unsigned i = 1; i < VA_IB; i++)
            j += in->key[i] <= va;
        n = in->child[j];
    }
    const va_leaf *l = &LF(n);
    __builtin_prefetch(&l->end[0]);
    __builtin_prefetch(&l->end[8]);
    __builtin_prefetch(&l->idx[0]);
    __builtin_prefetch(&l->tag[0]);
    __builtin_prefetch(&l->prev_end);
    unsigned pos = 0;
    VA_UNROLL
    for (unsigned i = 0; i < VA_LB; i++)
        pos += l->start[i] <= va;
    uint32_t r;
    unsigned s = pos;
    if (pos && l->end[pos - 1] > va) {
        r = l->idx[--s];
    } else if (pos < l->count) {
        r = l->idx[pos];
    } else {
        /* The sentinel starts past va, so there is a next leaf. */
        if (p) {
            p->lf = l->next;
            p->slot = 0;
        }
        return LF(l->next).idx[0];
    }
    if (p) {
        p->lf = n;
        p->slot = s;
    }
    __builtin_prefetch(va_rec(vs, r));
    if (!e) {
        /* A lookup: the next few records, which an iteration may walk. */
        for (unsigned k = s + 1; k < s + 4 && k < l->count; k++)
            __builtin_prefetch(va_rec(vs, l->idx[k]));
        return r;
    }
    uint64_t mask = vs->obj_cap - 1;
    for (unsigned k = s; k < l->count && l->start[k] < e; k++) {
        __builtin_prefetch(va_rec(vs, l->idx[k]));
        if (l->tag[k] && l->start[k] >= va && l->end[k] <= e)
            __builtin_prefetch(&vs->objs[l->tag[k] & mask]);
    }
    return r;
}

static inline uint32_t va_first_from_node(const struct vidmm_va_space *vs, uint64_t va)
{
    return va_first_from_span(vs, va, 0, NULL);
}

/* Link n (D(n) filled in) into the tree just before succ, its successor
 * in address order (the callers always know succ, which saves a descent). */
static void va_insert_before(struct vidmm_va_space *vs, uint32_t n, uint32_t succ)
{
    uint32_t lf = va_rec(vs, succ)->leaf;
    va_leaf_insert(vs, lf, va_leaf_slot(&LF(lf), succ), n);
    vs->range_count++;
    if (D(n).state == VIDMM_VA_MAPPED) {
        vs->mapped_count++;
        vs->inres_count += D(n).in_reservation;
    }
}

/* Unlink n from the tree (the caller frees it). */
static void va_erase(struct vidmm_va_space *vs, uint32_t n)
{
    uint32_t lf = va_rec(vs, n)->leaf;
    va_leaf_remove(vs, lf, va_leaf_slot(&LF(lf), n));
    vs->range_count--;
    if (D(n).state == VIDMM_VA_MAPPED) {
        vs->mapped_count--;
        vs->inres_count -= D(n).in_reservation;
    }
}

/* Move n's end to new_end (never over the next range). */
static void va_set_end(struct vidmm_va_space *vs, uint32_t n, uint64_t new_end)
{
    uint32_t lf = va_rec(vs, n)->leaf;
    va_leaf *l = &LF(lf);
    unsigned s = va_leaf_slot(l, n);
    l->end[s] = new_end;
    D(n).size = new_end - D(n).va;
    if (s + 1 == l->count && l->next) {
        LF(l->next).prev_end = new_end;
        va_dirty(vs, l->next);
    }
    va_dirty(vs, lf);
}

/* Move n's start up to new_va; a mapping's object_offset follows. */
static void va_set_start(struct vidmm_va_space *vs, uint32_t n, uint64_t new_va)
{
    uint32_t lf = va_rec(vs, n)->leaf;
    va_leaf *l = &LF(lf);
    unsigned s = va_leaf_slot(l, n);
    struct vidmm_va_desc *d = &D(n);
    uint64_t delta = new_va - d->va;
    l->start[s] = new_va;
    d->va = new_va;
    d->size -= delta;
    if (d->state == VIDMM_VA_MAPPED)
        d->object_offset += delta;
    if (s == 0)
        va_key_up(vs, lf, new_va);
    va_dirty(vs, lf);
}

/* Lowest [x, x + size) inside a hole under node n (height h) and inside
 * [min, max], x aligned to align (4 KiB or 64 KiB); the caller has checked
 * that n's maximum admits size.  All holes under n lie in [lo, hi]; a
 * child whose holes lie wholly inside [min, max] and whose maximum passes
 * is sure to hold a fit, so only the children cut by min or max are ever
 * searched in vain: O(log n).  Children whose cached maximum fails are
 * skipped without being read. */
static int va_find_hole(const struct vidmm_va_space *vs, uint32_t n, uint32_t h, uint64_t lo, uint64_t hi,
                        uint64_t size, uint64_t align, uint64_t min, uint64_t max, uint64_t *out)
{
    if (hi <= min || lo >= max)
        return 0;
    if (!h) {
        const va_leaf *l = &LF(n);
        uint64_t pe = l->prev_end;
        for (unsigned i = 0; i < l->count && pe < max; i++) {
            uint64_t s = va_align_up(va_max(pe, min), align), e = va_min(l->start[i], max);
            if (s < e && e - s >= size) {
                *out = s;
                return 1;
            }
            pe = l->end[i];
        }
        return 0;
    }
    const va_inner *in = &IN(n);
    const uint64_t *m = align > VIDMM_VA_PAGE ? in->max64 : in->max;
    for (unsigned j = 0; j < in->count; j++) {
        if (m[j] < size)
            continue;
        /* Child j's holes begin at or after the end of child j - 1's
         * last range (>= key[j - 1]) and end at its last start. */
        uint64_t clo = j >= 2 ? in->key[j - 1] : lo, chi = j + 1 < in->count ? in->key[j + 1] : hi;
        if (clo >= max)
            return 0;
        if (va_find_hole(vs, in->child[j], h - 1, clo, chi, size, align, min, max, out))
            return 1;
    }
    return 0;
}

static int va_find_hole_root(const struct vidmm_va_space *vs, uint64_t size, uint64_t align, uint64_t min,
                             uint64_t max, uint64_t *out)
{
    uint64_t m = vs->height ? IN(vs->root).smax : LF(vs->root).smax;
    uint64_t m64 = vs->height ? IN(vs->root).smax64 : LF(vs->root).smax64;
    return (align > VIDMM_VA_PAGE ? m64 : m) >= size &&
           va_find_hole(vs, vs->root, vs->height, vs->base, vs->limit, size, align, min, max, out);
}

/* ---- the one primitive: make [a, e) one new range (or a hole) --------------- */

static void va_emit(struct vidmm_va_space *vs, enum vidmm_va_step_op op, const struct vidmm_va_desc *old,
                    const struct vidmm_va_desc *nw, uint64_t prev_size, uint64_t next_size)
{
    static const struct vidmm_va_desc none;
    struct vidmm_va_step s;
    s.op = op;
    s.old = old ? *old : none;
    s.new = nw ? *nw : none;
    s.prev_size = prev_size;
    s.next_size = next_size;
    vs->step_fn(vs->step_ctx, &s);
}

/* The NULL test inline, the step built out of line. */
#define VA_EMIT(vs, op, old, nw, ps, ns)                  \
    do {                                                  \
        if ((vs)->step_fn)                                \
            va_emit((vs), (op), (old), (nw), (ps), (ns)); \
    } while (0)

static void va_remove(struct vidmm_va_space *vs, uint32_t n)
{
    if (D(n).state == VIDMM_VA_MAPPED)
        va_obj_unlink(vs, n);
    va_erase(vs, n);
    va_node_put(vs, n);
}

/* Merge a RESERVED range with RESERVED neighbours of its mode (no steps:
 * the PTEs are the same either way). */
static void va_merge_reserved(struct vidmm_va_space *vs, uint32_t n)
{
    uint32_t p = va_prev_node(vs, n);
    if (p && D(p).state == VIDMM_VA_RESERVED && D(p).mode == D(n).mode && VE(p) == VS(n)) {
        uint64_t e = VE(n);
        va_remove(vs, n);
        va_set_end(vs, p, e);
        n = p;
    }
    uint32_t s = va_next_node(vs, n);
    if (s != vs->end && D(s).state == VIDMM_VA_RESERVED && D(s).mode == D(n).mode && VE(n) == VS(s)) {
        uint64_t e = VE(s);
        va_remove(vs, s);
        va_set_end(vs, n, e);
    }
}

/* The common case of va_replace_do, done on one leaf's arrays in one
 * pass: every range that [a, e) touches lies in leaf lf from slot s on
 * (if they reach the leaf's end, the next leaf starts at or past e), the
 * new range is not RESERVED (nothing merges) and the leaf stays within
 * its fill.  Same steps, in the same order, as the general walk.  plain:
 * apply only if every range covered is a mapping made outside
 * reservations (an unmap, where such a span is simply cut to holes).
 * Returns 0, having changed nothing, when it does not apply.
 *
 * The tree is edited first, from the leaf alone (its kinds say what each
 * range is), and its summaries refreshed; only then are the covered
 * ranges' records read (the descent started their misses, which this
 * work overlaps), updated, unlinked and freed.  The steps go out last,
 * from copies of the old descriptors, so every step callback of the
 * change sees the space in its final state. */
static int va_replace_leaf(struct vidmm_va_space *vs, uint32_t lf, unsigned s, uint64_t a, uint64_t e,
                           const struct vidmm_va_desc *nd, int plain)
{
    va_leaf *l = &LF(lf);
    unsigned c = l->count, k = s;
    while (k < c && l->start[k] < e)
        k++;
    /* Up to the leaf's end: the next leaf must start at or past e (there
     * is one, as the sentinel starts at limit >= e); its prev_end follows
     * the new last end. */
    if (k == c && LF(l->next).start[0] < e)
        return 0;
    if (plain)
        for (unsigned i = s; i < k; i++)
            if (l->kind[i] != VIDMM_VA_MAPPED)
                return 0;
    unsigned head = s < k && l->start[s] < a;
    unsigned split = head && l->end[s] > e;
    unsigned tail = split || (k > s && l->end[k - 1] > e);
    unsigned neu = nd->state != VIDMM_VA_FREE;
    unsigned m = head + neu + tail, nc = c - (k - s) + m, nk = k - s;
    if (nc > VA_LB || (nc < VA_LMIN && vs->height))
        return 0;
    /* The covered entries, for the record half. */
    uint32_t ci[VA_LB];
    uint64_t cs[VA_LB], ce[VA_LB];
    for (unsigned i = 0; i < nk; i++) {
        ci[i] = l->idx[s + i];
        cs[i] = l->start[s + i];
        ce[i] = l->end[s + i];
        unsigned kd = l->kind[s + i];
        if (cs[i] >= a && ce[i] <= e) {
            vs->range_count--;
            if (kd & VIDMM_VA_MAPPED) {
                vs->mapped_count--;
                vs->inres_count -= (kd & VA_K_INRES) != 0;
            }
        }
    }
    /* The new entries at s: the kept head, the new range, the kept tail
     * (a new record when the one range is split in two). */
    uint64_t ns[3], ne[3], first = l->start[0];
    uint32_t ni[3], nt[3], t = 0, n = 0;
    uint8_t nkd[3];
    unsigned j = 0;
    if (head) {
        ns[j] = l->start[s];
        ne[j] = a;
        ni[j] = l->idx[s];
        nkd[j] = l->kind[s];
        nt[j++] = l->tag[s];
    }
    if (neu) {
        n = va_node_get(vs);
        va_rec(vs, n)->leaf = lf;
        ns[j] = a;
        ne[j] = e;
        ni[j] = n;
        nkd[j] = va_kind(nd);
        nt[j++] = nd->state == VIDMM_VA_MAPPED ? va_tag(nd->object) : 0;
        vs->range_count++;
        if (nd->state == VIDMM_VA_MAPPED) {
            vs->mapped_count++;
            vs->inres_count += nd->in_reservation;
        }
    }
    if (tail) {
        unsigned from = split ? s : k - 1;
        ns[j] = e;
        ne[j] = l->end[from];
        ni[j] = l->idx[from];
        nkd[j] = l->kind[from];
        nt[j] = l->tag[from];
        if (split) {
            t = ni[j] = va_node_get(vs);
            va_rec(vs, t)->leaf = lf;
            vs->range_count++;
            if (nkd[j] & VIDMM_VA_MAPPED) {
                vs->mapped_count++;
                vs->inres_count += (nkd[j] & VA_K_INRES) != 0;
            }
        }
    }
    /* The leaf: entries k.. move to s + m, the new ones go in front. */
    if (k != s + m) {
        unsigned rest = c - k;
        memmove(&l->start[s + m], &l->start[k], rest * sizeof l->start[0]);
        memmove(&l->end[s + m], &l->end[k], rest * sizeof l->end[0]);
        memmove(&l->idx[s + m], &l->idx[k], rest * sizeof l->idx[0]);
        memmove(&l->tag[s + m], &l->tag[k], rest * sizeof l->tag[0]);
        memmove(&l->kind[s + m], &l->kind[k], rest * sizeof l->kind[0]);
        for (unsigned i = nc; i < c; i++) {
            l->start[i] = UINT64_MAX;
            l->end[i] = 0;
            l->idx[i] = 0;
            l->tag[i] = 0;
            l->kind[i] = 0;
        }
    }
    for (unsigned i = 0; i < m; i++) {
        l->start[s + i] = ns[i];
        l->end[s + i] = ne[i];
        l->idx[s + i] = ni[i];
        l->tag[s + i] = nt[i];
        l->kind[s + i] = nkd[i];
    }
    l->count = nc;
    if (s == 0 && l->start[0] != first)
        va_key_up(vs, lf, l->start[0]);
    if (k == c && LF(l->next).prev_end != l->end[nc - 1]) {
        LF(l->next).prev_end = l->end[nc - 1];
        va_dirty(vs, l->next);
    }
    va_dirty(vs, lf);
    va_flush(vs);
    /* The records: copy the old descriptors for the steps, then cut,
     * unlink and free. */
    struct vidmm_va_desc old[VA_LB];
    for (unsigned i = 0; i < nk; i++) {
        uint32_t r = ci[i];
        struct vidmm_va_desc *rd = &D(r);
        uint64_t rs = cs[i], re = ce[i];
        old[i] = *rd;
        if (rs >= a && re <= e) {
            if (rd->state == VIDMM_VA_MAPPED)
                va_obj_unlink(vs, r);
            va_node_put(vs, r); /* d stays intact: nothing is allocated below */
        } else if (rs < a && re > e) {
            struct vidmm_va_desc *td = &D(t);
            *td = *rd;
            td->va = e;
            td->size = re - e;
            rd->size = a - rs;
            if (td->state == VIDMM_VA_MAPPED) {
                td->object_offset += e - rs;
                va_obj_link_after(vs, t, r); /* r's object: no hash access */
            }
        } else if (rs < a) {
            rd->size = a - rs;
        } else {
            rd->va = e;
            rd->size = re - e;
            if (rd->state == VIDMM_VA_MAPPED)
                rd->object_offset += e - rs;
        }
    }
    if (neu) {
        struct vidmm_va_desc *d = &D(n);
        *d = *nd;
        d->va = a;
        d->size = e - a;
        if (d->state == VIDMM_VA_MAPPED)
            va_obj_link(vs, n);
    }
    if (vs->step_fn) {
        for (unsigned i = 0; i < nk; i++) {
            uint64_t rs = cs[i], re = ce[i];
            if (rs >= a && re <= e)
                va_emit(vs, VIDMM_VA_STEP_UNMAP, &old[i], NULL, 0, 0);
            else
                va_emit(vs, VIDMM_VA_STEP_REMAP, &old[i], NULL, rs < a ? a - rs : 0, re > e ? re - e : 0);
        }
        if (neu)
            va_emit(vs, VIDMM_VA_STEP_MAP, NULL, &D(n), 0, 0);
    }
    return 1;
}

/* A RESERVED range [a, e) put into a hole of leaf lf, in front of slot s
 * (the first range ending after a), merged with equal neighbours in the
 * leaf, in one pass: the MAP step goes out after the merge, so its
 * callback sees the final state.  Returns 0, having changed nothing, when
 * the span is not a hole, a neighbour to merge with sits in another
 * leaf, or the leaf would leave its fill; va_replace_do then walks. */
static int va_reserve_leaf(struct vidmm_va_space *vs, uint32_t lf, unsigned s, uint64_t a, uint64_t e,
                           const struct vidmm_va_desc *nd)
{
    va_leaf *l = &LF(lf);
    unsigned c = l->count, kn = va_kind(nd);
    if (l->start[s] < e)
        return 0; /* not a hole */
    int adj_l = s ? l->end[s - 1] == a : l->prev_end == a;
    if (adj_l && !s)
        return 0;
    int ml = adj_l && l->kind[s - 1] == kn, mr = l->start[s] == e && l->kind[s] == kn;
    if ((!ml && !mr && c == VA_LB) || (ml && mr && c - 1 < VA_LMIN && vs->height))
        return 0;
    if (ml && mr) {
        /* The three become the left one; s's record goes. */
        uint32_t gone = l->idx[s];
        l->end[s - 1] = l->end[s];
        D(l->idx[s - 1]).size = l->end[s] - l->start[s - 1];
        unsigned rest = c - s - 1;
        memmove(&l->start[s], &l->start[s + 1], rest * sizeof l->start[0]);
        memmove(&l->end[s], &l->end[s + 1], rest * sizeof l->end[0]);
        memmove(&l->idx[s], &l->idx[s + 1], rest * sizeof l->idx[0]);
        memmove(&l->tag[s], &l->tag[s + 1], rest * sizeof l->tag[0]);
        memmove(&l->kind[s], &l->kind[s + 1], rest * sizeof l->kind[0]);
        l->start[c - 1] = UINT64_MAX;
        l->end[c - 1] = 0;
        l->idx[c - 1] = 0;
        l->tag[c - 1] = 0;
        l->kind[c - 1] = 0;
        l->count = c - 1;
        va_node_put(vs, gone);
        vs->range_count--;
    } else if (ml) {
        l->end[s - 1] = e;
        D(l->idx[s - 1]).size = e - l->start[s - 1];
    } else if (mr) {
        struct vidmm_va_desc *d = &D(l->idx[s]);
        d->size += l->start[s] - a;
        d->va = a;
        l->start[s] = a;
        if (s == 0)
            va_key_up(vs, lf, a);
    } else {
        uint32_t n = va_node_get(vs);
        struct vidmm_va_desc *d = &D(n);
        *d = *nd;
        d->va = a;
        d->size = e - a;
        va_rec(vs, n)->leaf = lf;
        unsigned rest = c - s;
        memmove(&l->start[s + 1], &l->start[s], rest * sizeof l->start[0]);
        memmove(&l->end[s + 1], &l->end[s], rest * sizeof l->end[0]);
        memmove(&l->idx[s + 1], &l->idx[s], rest * sizeof l->idx[0]);
        memmove(&l->tag[s + 1], &l->tag[s], rest * sizeof l->tag[0]);
        memmove(&l->kind[s + 1], &l->kind[s], rest * sizeof l->kind[0]);
        l->start[s] = a;
        l->end[s] = e;
        l->idx[s] = n;
        l->tag[s] = 0;
        l->kind[s] = (uint8_t)kn;
        l->count = c + 1;
        if (s == 0)
            va_key_up(vs, lf, a);
        vs->range_count++;
    }
    /* The leaf's last range keeps its end, so the next leaf's prev_end
     * stands. */
    va_dirty(vs, lf);
    va_flush(vs);
    if (vs->step_fn) {
        struct vidmm_va_desc d = *nd;
        d.va = a;
        d.size = e - a;
        va_emit(vs, VIDMM_VA_STEP_MAP, NULL, &d, 0, 0);
    }
    return 1;
}

/* Cut everything in [a, e) out of the ranges there (UNMAP for whole ones,
 * REMAP for ones cut at an edge), then, if nd is not FREE, put the new
 * range nd ([a, e)) there and emit its MAP.  r: the first node ending
 * after a, if the caller has it (else 0).  Needs at most two nodes beyond
 * those it frees; the caller reserved them. */
static void va_replace_do(struct vidmm_va_space *vs, uint32_t r, const struct va_pos *rp, uint64_t a,
                          uint64_t e, const struct vidmm_va_desc *nd)
{
    struct va_pos pos;
    if (!r) {
        r = va_first_from_span(vs, a, e, &pos);
        rp = &pos;
    } else if (!rp) {
        pos.lf = va_rec(vs, r)->leaf;
        pos.slot = va_leaf_slot(&LF(pos.lf), r);
        rp = &pos;
    }
    const va_leaf *rl = &LF(rp->lf);
    if (nd->state == VIDMM_VA_RESERVED) {
        /* Reserved already, in that mode (an UNMAP or COPY onto reserved
         * VA): nothing changes, not even the PTEs, so no steps either. */
        if (rl->kind[rp->slot] == va_kind(nd) && rl->start[rp->slot] <= a && rl->end[rp->slot] >= e)
            return;
        if (va_reserve_leaf(vs, rp->lf, rp->slot, a, e, nd))
            return;
    } else if (va_replace_leaf(vs, rp->lf, rp->slot, a, e, nd, 0)) {
        return;
    }
    while (r != vs->end && VS(r) < e) {
        uint32_t next = va_next_node(vs, r);
        uint64_t rs = VS(r), re = VE(r);
        struct vidmm_va_desc *rd = &D(r);
        /* On exit r is the successor of [a, e): the cut-off tail, the
         * trimmed last range, or the first range past e. */
        if (rs >= a && re <= e) {
            VA_EMIT(vs, VIDMM_VA_STEP_UNMAP, rd, NULL, 0, 0);
            va_remove(vs, r);
        } else if (rs < a && re > e) {
            /* Split: r keeps the head, a new node takes the tail. */
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, a - rs, re - e);
            uint32_t t = va_node_get(vs);
            struct vidmm_va_desc *td = &D(t);
            *td = *rd;
            td->va = e;
            td->size = re - e;
            if (td->state == VIDMM_VA_MAPPED)
                td->object_offset += e - rs;
            va_set_end(vs, r, a);
            va_insert_before(vs, t, next);
            if (td->state == VIDMM_VA_MAPPED)
                va_obj_link_after(vs, t, r); /* r's object: no hash access */
            r = t;
            break;
        } else if (rs < a) {
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, a - rs, 0);
            va_set_end(vs, r, a);
        } else {
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, 0, re - e);
            va_set_start(vs, r, e);
            break;
        }
        r = next;
    }
    if (nd->state == VIDMM_VA_FREE)
        return;
    uint32_t n = va_node_get(vs);
    struct vidmm_va_desc *d = &D(n);
    *d = *nd;
    d->va = a;
    d->size = e - a;
    va_insert_before(vs, n, r); /* r: the first range at or after e */
    if (d->state == VIDMM_VA_MAPPED)
        va_obj_link(vs, n);
    VA_EMIT(vs, VIDMM_VA_STEP_MAP, NULL, d, 0, 0);
    if (d->state == VIDMM_VA_RESERVED)
        va_merge_reserved(vs, n);
}

static void va_replace(struct vidmm_va_space *vs, uint32_t r, uint64_t a, uint64_t e, const struct vidmm_va_desc *nd)
{
    va_replace_do(vs, r, NULL, a, e, nd);
    va_flush(vs);
}

/* The same, with r's place in the tree known. */
static void va_replace_at(struct vidmm_va_space *vs, uint32_t r, const struct va_pos *rp, uint64_t a, uint64_t e,
                          const struct vidmm_va_desc *nd)
{
    va_replace_do(vs, r, rp, a, e, nd);
    va_flush(vs);
}

/* What unmap leaves where mapping r was. */
static void va_unmapped_desc(const struct vidmm_va_space *vs, uint32_t r, struct vidmm_va_desc *d)
{
    memset(d, 0, sizeof *d);
    if (D(r).in_reservation) {
        d->state = VIDMM_VA_RESERVED;
        d->mode = D(r).mode;
    }
}

/* Unmap every MAPPED byte of [a, e). */
static void va_unmap_span(struct vidmm_va_space *vs, uint64_t a, uint64_t e)
{
    struct va_pos pos;
    uint32_t r = va_first_from_span(vs, a, e, &pos);
    /* Only plain mappings (and holes) in one leaf: one cut to holes. */
    struct vidmm_va_desc hole;
    memset(&hole, 0, sizeof hole);
    if (va_replace_leaf(vs, pos.lf, pos.slot, a, e, &hole, 1)) {
        va_flush(vs);
        return;
    }
    while (r != vs->end && VS(r) < e) {
        if (D(r).state != VIDMM_VA_MAPPED) {
            r = va_next_node(vs, r);
            continue;
        }
        /* The next mapping in the span survives the replace (which frees
         * only r's span and merges RESERVED neighbours): walk on from it
         * instead of descending from the root again. */
        VA_UNLINK_PREFETCH(vs, r);
        uint32_t nm = va_next_node(vs, r);
        while (nm != vs->end && VS(nm) < e && D(nm).state != VIDMM_VA_MAPPED)
            nm = va_next_node(vs, nm);
        if (nm == vs->end || VS(nm) >= e)
            nm = 0;
        uint64_t ps = va_max(a, VS(r)), pe = va_min(e, VE(r));
        struct vidmm_va_desc d;
        va_unmapped_desc(vs, r, &d);
        va_replace(vs, r, ps, pe, &d);
        if (!nm)
            break;
        r = nm;
    }
}

/* ---- validation helpers ---------------------------------------------------- */

/* Common checks of a span: alignment, overflow, inside [base, limit). */
static vidmm_status va_check_span(const struct vidmm_va_space *vs, uint64_t va, uint64_t size, uint64_t align)
{
    if (size == 0)
        return VIDMM_E_INVALID_ARG;
    if (!va_aligned(va, align) || !va_aligned(size, align))
        return VIDMM_E_ALIGNMENT;
    if (va + size < va)
        return VIDMM_E_OVERFLOW;
    if (va < vs->base || va + size > vs->limit)
        return VIDMM_E_INVALID_ARG;
    return VIDMM_OK;
}

/* Classes of what a span covers. */
#define VA_COV_HOLE   0x1u  /* some free byte */
#define VA_COV_BACKED 0x2u  /* some reservation-backed range */
#define VA_COV_PLAIN  0x4u  /* some mapping made outside reservations */

static unsigned va_coverage(const struct vidmm_va_space *vs, uint64_t a, uint64_t e, uint64_t *nranges,
                            uint32_t *first, struct va_pos *first_pos)
{
    unsigned cov = 0;
    uint64_t cur = a, cnt = 0;
    struct va_pos pos;
    uint32_t r0 = va_first_from_span(vs, a, e, &pos);
    if (first)
        *first = r0;
    if (first_pos)
        *first_pos = pos;
    /* Walk the leaves' arrays (the sentinel ends every walk). */
    const va_leaf *l = &LF(pos.lf);
    for (unsigned i = pos.slot;; i++) {
        if (i == l->count) {
            l = &LF(l->next);
            i = 0;
        }
        if (l->start[i] >= e)
            break;
        unsigned k = l->kind[i];
        if (l->start[i] > cur)
            cov |= VA_COV_HOLE;
        cov |= va_kind_backed(k) ? VA_COV_BACKED : VA_COV_PLAIN;
        cur = l->end[i];
        cnt++;
    }
    if (cur < e)
        cov |= VA_COV_HOLE;
    if (nranges)
        *nranges = cnt;
    return cov;
}

/* Clamp [min, max] of an "anywhere" request to the space. */
static vidmm_status va_window(const struct vidmm_va_space *vs, uint64_t *min, uint64_t *max, uint64_t align)
{
    if (!va_aligned(*min, align) || !va_aligned(*max, align))
        return VIDMM_E_ALIGNMENT;
    uint64_t lo = va_max(*min, vs->base), hi = *max ? va_min(*max, vs->limit) : vs->limit;
    if (lo >= hi)
        return VIDMM_E_INVALID_ARG;
    *min = lo;
    *max = hi;
    return VIDMM_OK;
}

/* ---- public entries --------------------------------------------------------- */

vidmm_status vidmm_va_space_init(struct vidmm_va_space *vs, const struct vidmm_host_allocator *ha,
                                 unsigned va_bits)
{
    if (!vs || !ha || va_bits < 20 || va_bits > 63)
        return VIDMM_E_INVALID_ARG;
    memset(vs, 0, sizeof *vs);
    vs->ha = ha;
    vs->base = VIDMM_VA_GRANULE;
    vs->limit = UINT64_C(1) << va_bits;
    vs->objs = vidmm_host_alloc_at(ha, VIDMM_SITE_VA_OBJECTS, VA_OBJ_MIN * sizeof *vs->objs, 16);
    if (!vs->objs)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(vs->objs, 0, VA_OBJ_MIN * sizeof *vs->objs);
    vs->obj_cap = VA_OBJ_MIN;
    if (va_nodes_reserve(vs, 1) != VIDMM_OK || va_leaves_reserve(vs, 1) != VIDMM_OK) {
        vidmm_va_space_fini(vs);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    uint32_t end = va_node_get(vs), lf = va_leaf_get(vs);
    memset(&D(end), 0, sizeof D(end));
    D(end).va = vs->limit;
    va_leaf *l = &LF(lf);
    l->start[0] = l->end[0] = vs->limit;
    l->idx[0] = end;
    l->count = 1;
    l->prev_end = vs->base;
    l->smax = vs->limit - vs->base;
    l->smax64 = va_gap64(vs->limit, l->smax);
    va_rec(vs, end)->leaf = lf;
    vs->end = end;
    vs->root = lf;
    return VIDMM_OK;
}

void vidmm_va_space_fini(struct vidmm_va_space *vs)
{
    if (!vs || !vs->ha)
        return;
    if (vs->node_cap) {
        va_free_blocks(vs, vs->cold, 0, vs->cold_chunks);
        vs->ha->free(vs->ha->user_data, vs->cold, (size_t)vs->cold_dir_cap * sizeof *vs->cold, 16);
    }
    if (vs->leaves)
        vs->ha->free(vs->ha->user_data, vs->leaves, (size_t)vs->leaf_cap * sizeof *vs->leaves, 64);
    if (vs->inners)
        vs->ha->free(vs->ha->user_data, vs->inners, (size_t)vs->inner_cap * sizeof *vs->inners, 64);
    if (vs->objs)
        vs->ha->free(vs->ha->user_data, vs->objs, (size_t)vs->obj_cap * sizeof *vs->objs, 16);
    if (vs->scratch)
        vs->ha->free(vs->ha->user_data, vs->scratch, (size_t)vs->scratch_cap * sizeof *vs->scratch, 16);
    memset(vs, 0, sizeof *vs);
}

void vidmm_va_space_set_step_fn(struct vidmm_va_space *vs, vidmm_va_step_fn fn, void *ctx)
{
    vs->step_fn = fn;
    vs->step_ctx = ctx;
}

/* Prepare halves: validate, resolve the address, and obtain every record,
 * tree node, hash slot and scratch entry the change can need; the space is
 * not changed.  vidmm_va_commit() then applies the prepared change and
 * cannot fail (docs/VA_SPACE.md, "Prepare and commit"). */

static void va_prep_init(struct vidmm_va_prep *op, uint32_t kind)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
}

vidmm_status vidmm_va_reserve_prepare(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                                      uint64_t size, unsigned mode, struct vidmm_va_prep *op)
{
    if (!vs || !op || size == 0 || mode > VIDMM_VA_ZERO)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st;
    if (at) {
        if ((st = va_check_span(vs, at, size, VIDMM_VA_GRANULE)) != VIDMM_OK)
            return st;
        if (VS(va_first_from_node(vs, at)) < at + size)
            return VIDMM_E_BUSY;
    } else {
        if (!va_aligned(size, VIDMM_VA_GRANULE))
            return VIDMM_E_ALIGNMENT;
        if ((st = va_window(vs, &min, &max, VIDMM_VA_GRANULE)) != VIDMM_OK)
            return st;
        if (!va_find_hole_root(vs, size, VIDMM_VA_GRANULE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = va_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK)
        return st;
    va_prep_init(op, VIDMM_VA_PREP_RESERVE);
    op->va = at;
    op->size = size;
    op->d.state = VIDMM_VA_RESERVED;
    op->d.mode = (uint8_t)mode;
    return VIDMM_OK;
}

vidmm_status vidmm_va_map_prepare(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                                  uint64_t size, uint64_t object, uint64_t object_offset, unsigned prot,
                                  uint64_t driver_protection, struct vidmm_va_prep *op)
{
    if (!vs || !op || size == 0 || object == 0 || (prot & ~VIDMM_VA_PROT_MASK))
        return VIDMM_E_INVALID_ARG;
    if (!va_aligned(object_offset, VIDMM_VA_PAGE))
        return VIDMM_E_ALIGNMENT;
    VA_OBJ_PREFETCH(vs, object); /* linked at the end; start the miss now */
    vidmm_status st;
    uint32_t first = 0;
    struct va_pos fpos = { 0, 0 };
    uint8_t inres = 0, mode = 0;
    if (at) {
        if ((st = va_check_span(vs, at, size, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
    } else if (!va_aligned(size, VIDMM_VA_PAGE)) {
        return VIDMM_E_ALIGNMENT;
    }
    if (object_offset + size < object_offset)
        return VIDMM_E_OVERFLOW;
    if (at) {
        unsigned cov = va_coverage(vs, at, at + size, NULL, &first, &fpos);
        if ((cov & VA_COV_BACKED) && (cov & (VA_COV_HOLE | VA_COV_PLAIN)))
            return VIDMM_E_BUSY;
        if (cov & VA_COV_BACKED) {
            /* The mapping remembers the mode of the reservation under its
             * first page: unmap gives the whole mapping back in it. */
            inres = 1;
            mode = D(first).mode;
        }
    } else {
        if ((st = va_window(vs, &min, &max, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
        if (!va_find_hole_root(vs, size, VIDMM_VA_PAGE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = va_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK ||
        (st = va_obj_reserve(vs, 1)) != VIDMM_OK)
        return st;
    va_prep_init(op, VIDMM_VA_PREP_MAP);
    op->va = at;
    op->size = size;
    op->first = first;
    op->first_leaf = fpos.lf;
    op->first_slot = fpos.slot;
    op->d.in_reservation = inres;
    op->d.mode = mode;
    op->d.state = VIDMM_VA_MAPPED;
    op->d.object = object;
    op->d.object_offset = object_offset;
    op->d.prot = (uint8_t)prot;
    op->d.driver_protection = driver_protection;
    return VIDMM_OK;
}

vidmm_status vidmm_va_unmap_prepare(struct vidmm_va_space *vs, uint64_t va, uint64_t size, struct vidmm_va_prep *op)
{
    if (!vs || !op)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = va_check_span(vs, va, size, VIDMM_VA_PAGE);
    if (st != VIDMM_OK)
        return st;
    /* Tree insertions: the RESERVED piece put back for each mapping made
     * in a reservation, plus a split tail; count them only when the
     * global bound is large. */
    uint64_t ins = va_min(vs->inres_count, size / VIDMM_VA_PAGE);
    if (ins > 64) {
        ins = 0;
        for (uint32_t r = va_first_from_node(vs, va); r != vs->end && VS(r) < va + size; r = va_next_node(vs, r))
            ins += D(r).state == VIDMM_VA_MAPPED && D(r).in_reservation;
    }
    if ((st = va_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL + ins)) != VIDMM_OK)
        return st;
    va_prep_init(op, VIDMM_VA_PREP_UNMAP);
    op->va = va;
    op->size = size;
    return VIDMM_OK;
}

vidmm_status vidmm_va_free_prepare(struct vidmm_va_space *vs, uint64_t va, uint64_t size, struct vidmm_va_prep *op)
{
    if (!vs || !op)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = va_check_span(vs, va, size, VIDMM_VA_PAGE);
    if (st != VIDMM_OK)
        return st;
    uint32_t first;
    struct va_pos fpos;
    unsigned cov = va_coverage(vs, va, va + size, NULL, &first, &fpos);
    if (cov & VA_COV_HOLE)
        return VIDMM_E_INVALID_ARG;
    if ((cov & VA_COV_BACKED) && (!va_aligned(va, VIDMM_VA_GRANULE) || !va_aligned(size, VIDMM_VA_GRANULE)))
        return VIDMM_E_ALIGNMENT;
    if ((st = va_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK)
        return st;
    va_prep_init(op, VIDMM_VA_PREP_FREE);
    op->va = va;
    op->size = size;
    op->first = first;
    op->first_leaf = fpos.lf;
    op->first_slot = fpos.slot;
    return VIDMM_OK;
}

/* Needs nothing: the commit unmaps each mapping in place (see
 * va_unmap_in_place), so destroying an allocation cannot fail for want of
 * host memory. */
vidmm_status vidmm_va_unmap_object_prepare(struct vidmm_va_space *vs, uint64_t object, struct vidmm_va_prep *op)
{
    if (!vs || !op || object == 0)
        return VIDMM_E_INVALID_ARG;
    va_prep_init(op, va_obj_find(vs, object) ? VIDMM_VA_PREP_UNMAP_OBJECT : VIDMM_VA_PREP_NONE);
    op->d.object = object;
    return VIDMM_OK;
}

/* Unmap the whole mapping r without taking a record or a tree slot: a
 * mapping made outside reservations is cut out (a removal), one made in a
 * reservation becomes RESERVED in the same record and slot, then merges
 * with equal neighbours (removals again).  Removals only free, so this
 * needs nothing reserved.  Steps: UNMAP of the mapping, MAP of the
 * reservation, as the general replace emits them. */
static void va_unmap_in_place(struct vidmm_va_space *vs, uint32_t r)
{
    struct vidmm_va_desc old = D(r), nd;
    va_unmapped_desc(vs, r, &nd);
    if (nd.state == VIDMM_VA_FREE) {
        va_replace(vs, r, VS(r), VE(r), &nd);
        return;
    }
    va_obj_unlink(vs, r);
    vs->mapped_count--;
    vs->inres_count--;
    nd.va = old.va;
    nd.size = old.size;
    D(r) = nd;
    uint32_t lf = va_rec(vs, r)->leaf;
    va_leaf *l = &LF(lf);
    unsigned s = va_leaf_slot(l, r);
    l->tag[s] = 0;
    l->kind[s] = va_kind(&nd);
    VA_EMIT(vs, VIDMM_VA_STEP_UNMAP, &old, NULL, 0, 0);
    VA_EMIT(vs, VIDMM_VA_STEP_MAP, NULL, &D(r), 0, 0);
    va_merge_reserved(vs, r);
    va_flush(vs);
}

/* Saturating add for node bounds. */
static inline uint64_t va_sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

vidmm_status vidmm_va_update_prepare(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n,
                                     struct vidmm_va_prep *op)
{
    if (!vs || !op || (!ops && n))
        return VIDMM_E_INVALID_ARG;
    va_prep_init(op, VIDMM_VA_PREP_NONE);
    if (n == 0)
        return VIDMM_OK;
    /* Validate every op on its own, and the target / source hulls. */
    uint64_t tlo = UINT64_MAX, thi = 0, slo = UINT64_MAX, shi = 0, maps = 0;
    vidmm_status st;
    for (size_t i = 0; i < n; i++) {
        const struct vidmm_va_update_op *o = &ops[i];
        if (o->type > VIDMM_VA_UPDATE_COPY || o->size == 0)
            return VIDMM_E_INVALID_ARG;
        if (o->type == VIDMM_VA_UPDATE_MAP && (o->object == 0 || (o->prot & ~VIDMM_VA_PROT_MASK)))
            return VIDMM_E_INVALID_ARG;
        if (o->type == VIDMM_VA_UPDATE_UNMAP && o->mode > VIDMM_VA_ZERO)
            return VIDMM_E_INVALID_ARG;
        if (o->type == VIDMM_VA_UPDATE_MAP) {
            if (!va_aligned(o->object_offset, VIDMM_VA_PAGE))
                return VIDMM_E_ALIGNMENT;
            if (o->object_offset + o->size < o->object_offset)
                return VIDMM_E_OVERFLOW;
            maps++;
        }
        if (o->type == VIDMM_VA_UPDATE_COPY) {
            if ((st = va_check_span(vs, o->src, o->size, VIDMM_VA_PAGE)) != VIDMM_OK)
                return st;
            slo = va_min(slo, o->src);
            shi = va_max(shi, o->src + o->size);
        }
        if ((st = va_check_span(vs, o->va, o->size, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
        tlo = va_min(tlo, o->va);
        thi = va_max(thi, o->va + o->size);
    }
    /* "Every target inside one reserved range": the targets' hull must be
     * one unbroken run of reservation-backed ranges.  No op of the batch
     * can break that run, so checking the starting state is enough. */
    uint64_t tranges, sranges = 0;
    if (va_coverage(vs, tlo, thi, &tranges, NULL, NULL) != VA_COV_BACKED)
        return VIDMM_E_INVALID_ARG;
    if (shi && va_coverage(vs, slo, shi, &sranges, NULL, NULL) != VA_COV_BACKED)
        return VIDMM_E_INVALID_ARG;
    /* Worst-case nodes: two per MAP/UNMAP; a COPY of p source pieces two
     * per piece, p bounded by the source's ranges now plus all that the
     * earlier ops could have added (and by its pages).  Never more than
     * the targets' pages in all. */
    uint64_t need = 0, scratch = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t add = 2;
        if (ops[i].type == VIDMM_VA_UPDATE_COPY) {
            uint64_t p = va_min(ops[i].size / VIDMM_VA_PAGE + 1, va_sat_add(sranges, need));
            scratch = va_max(scratch, p);
            add = va_sat_add(va_sat_add(p, p), 2);
        }
        need = va_sat_add(need, add);
    }
    need = va_min(need, (thi - tlo) / VIDMM_VA_PAGE + 2) + VA_NODES_PER_CALL;
    /* Insertions are not bounded by need (a MAP and an UNMAP of one page
     * insert twice and free once), so the leaves get the fill bound. */
    if ((st = va_reserve(vs, need, UINT64_MAX)) != VIDMM_OK || (st = va_obj_reserve(vs, maps)) != VIDMM_OK)
        return st;
    if (scratch > vs->scratch_cap) {
        if (scratch > SIZE_MAX / sizeof *vs->scratch)
            return VIDMM_E_NO_HOST_MEMORY;
        struct vidmm_va_desc *s = vidmm_host_alloc_at(vs->ha, VIDMM_SITE_VA_UPDATE_SCRATCH, (size_t)scratch * sizeof *s, 16);
        if (!s)
            return VIDMM_E_NO_HOST_MEMORY;
        if (vs->scratch)
            vs->ha->free(vs->ha->user_data, vs->scratch, (size_t)vs->scratch_cap * sizeof *s, 16);
        vs->scratch = s;
        vs->scratch_cap = scratch;
    }
    op->kind = VIDMM_VA_PREP_UPDATE;
    op->va = tlo;
    op->size = thi - tlo;
    op->ops = ops;
    op->n = n;
    return VIDMM_OK;
}

/* The commit half of vidmm_va_update: apply in order; nothing can fail. */
static void va_update_commit(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct vidmm_va_update_op *op = &ops[i];
        struct vidmm_va_desc d;
        memset(&d, 0, sizeof d);
        if (op->type == VIDMM_VA_UPDATE_MAP) {
            d.state = VIDMM_VA_MAPPED;
            d.in_reservation = 1;
            d.mode = D(va_first_from_node(vs, op->va)).mode;
            d.object = op->object;
            d.object_offset = op->object_offset;
            d.prot = (uint8_t)op->prot;
            d.driver_protection = op->driver_protection;
            va_replace(vs, 0, op->va, op->va + op->size, &d);
        } else if (op->type == VIDMM_VA_UPDATE_UNMAP) {
            d.state = VIDMM_VA_RESERVED;
            d.mode = (uint8_t)op->mode;
            va_replace(vs, 0, op->va, op->va + op->size, &d);
        } else {
            /* Snapshot the source first: it may overlap the destination. */
            uint64_t np = 0, se = op->src + op->size;
            for (uint32_t r = va_first_from_node(vs, op->src); r != vs->end && VS(r) < se;
                 r = va_next_node(vs, r)) {
                uint64_t ps = va_max(op->src, VS(r)), pe = va_min(se, VE(r));
                struct vidmm_va_desc *p = &vs->scratch[np++];
                *p = D(r);
                p->va = op->va + (ps - op->src);
                p->size = pe - ps;
                if (p->state == VIDMM_VA_MAPPED)
                    p->object_offset += ps - VS(r);
            }
            /* The source is reservation-backed, so copied mappings are
             * in_reservation already and keep the source's unmap mode. */
            for (uint64_t k = 0; k < np; k++)
                va_replace(vs, 0, vs->scratch[k].va, vs->scratch[k].va + vs->scratch[k].size, &vs->scratch[k]);
        }
    }
}

void vidmm_va_commit(struct vidmm_va_space *vs, const struct vidmm_va_prep *op)
{
    if (!vs || !op)
        return;
    struct va_pos fpos = { op->first_leaf, op->first_slot };
    switch (op->kind) {
    case VIDMM_VA_PREP_RESERVE:
        va_replace(vs, 0, op->va, op->va + op->size, &op->d);
        break;
    case VIDMM_VA_PREP_MAP:
    case VIDMM_VA_PREP_FREE:
        va_replace_at(vs, op->first, op->first ? &fpos : NULL, op->va, op->va + op->size, &op->d);
        break;
    case VIDMM_VA_PREP_UNMAP:
        va_unmap_span(vs, op->va, op->va + op->size);
        break;
    case VIDMM_VA_PREP_UNMAP_OBJECT: {
        /* Each unmap takes the head off; the hash record goes with the last one. */
        struct vidmm_va_objrec *rec;
        while ((rec = va_obj_find(vs, op->d.object)) != NULL)
            va_unmap_in_place(vs, rec->head);
        break;
    }
    case VIDMM_VA_PREP_UPDATE:
        va_update_commit(vs, op->ops, op->n);
        break;
    default:
        break;
    }
}

/* The one-call entries: prepare, then commit. */

vidmm_status vidmm_va_reserve(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                              uint64_t size, unsigned mode, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_reserve_prepare(vs, at, min, max, size, mode, &op);
    if (st != VIDMM_OK)
        return st;
    vidmm_va_commit(vs, &op);
    *va = op.va;
    return VIDMM_OK;
}

vidmm_status vidmm_va_map(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                          uint64_t size, uint64_t object, uint64_t object_offset, unsigned prot,
                          uint64_t driver_protection, uint64_t *va)
{
    if (!va)
        return VIDMM_E_INVALID_ARG;
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_map_prepare(vs, at, min, max, size, object, object_offset, prot, driver_protection, &op);
    if (st != VIDMM_OK)
        return st;
    vidmm_va_commit(vs, &op);
    *va = op.va;
    return VIDMM_OK;
}

vidmm_status vidmm_va_unmap(struct vidmm_va_space *vs, uint64_t va, uint64_t size)
{
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_unmap_prepare(vs, va, size, &op);
    if (st == VIDMM_OK)
        vidmm_va_commit(vs, &op);
    return st;
}

vidmm_status vidmm_va_free(struct vidmm_va_space *vs, uint64_t va, uint64_t size)
{
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_free_prepare(vs, va, size, &op);
    if (st == VIDMM_OK)
        vidmm_va_commit(vs, &op);
    return st;
}

vidmm_status vidmm_va_unmap_object(struct vidmm_va_space *vs, uint64_t object)
{
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_unmap_object_prepare(vs, object, &op);
    if (st == VIDMM_OK)
        vidmm_va_commit(vs, &op);
    return st;
}

vidmm_status vidmm_va_update(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n)
{
    struct vidmm_va_prep op;
    vidmm_status st = vidmm_va_update_prepare(vs, ops, n, &op);
    if (st == VIDMM_OK)
        vidmm_va_commit(vs, &op);
    return st;
}

/* ---- queries ------------------------------------------------------------------ */

const struct vidmm_va_range *vidmm_va_lookup(const struct vidmm_va_space *vs, uint64_t va)
{
    uint32_t n = va_first_from_node(vs, va);
    return n != vs->end && VS(n) <= va ? va_rec(vs, n) : NULL;
}

const struct vidmm_va_range *vidmm_va_first_from(const struct vidmm_va_space *vs, uint64_t va)
{
    uint32_t n = va_first_from_node(vs, va);
    return n == vs->end ? NULL : va_rec(vs, n);
}

const struct vidmm_va_range *vidmm_va_first(const struct vidmm_va_space *vs)
{
    return vidmm_va_first_from(vs, 0);
}

const struct vidmm_va_range *vidmm_va_next(const struct vidmm_va_space *vs, const struct vidmm_va_range *r)
{
    uint32_t n = va_next_node(vs, r->node);
    return !n || n == vs->end ? NULL : va_rec(vs, n);
}

uint64_t vidmm_va_object_mapping_count(const struct vidmm_va_space *vs, uint64_t object)
{
    const struct vidmm_va_objrec *rec = object ? va_obj_find(vs, object) : NULL;
    uint64_t k = 0;
    for (uint32_t m = rec ? rec->head : 0; m; m = va_rec(vs, m)->obj_next)
        k++;
    return k;
}

const struct vidmm_va_range *vidmm_va_object_first(const struct vidmm_va_space *vs, uint64_t object)
{
    const struct vidmm_va_objrec *rec = object ? va_obj_find(vs, object) : NULL;
    return rec ? va_rec(vs, rec->head) : NULL;
}

const struct vidmm_va_range *vidmm_va_object_next(const struct vidmm_va_space *vs, const struct vidmm_va_range *r)
{
    return r->obj_next ? va_rec(vs, r->obj_next) : NULL;
}

/* ---- check -------------------------------------------------------------------- */

struct va_chk {
    int errs;
    uint64_t leaves, inners, entries;
    uint32_t prev_leaf; /* the leaf chain, rebuilt in order */
};

/* Shape of the subtree at n (height h, parent p): fill, unused slots,
 * order, keys, back-pointers, the leaf chain and prev_end, and the cached
 * summaries.  *m, *m64: its largest hole and aligned piece; *lo: its
 * least start. */
static void va_check_node(const struct vidmm_va_space *vs, uint32_t n, uint32_t h, uint32_t p, struct va_chk *c,
                          uint64_t *m, uint64_t *m64, uint64_t *lo)
{
    *m = *m64 = 0;
    *lo = UINT64_MAX;
    int root = p == 0;
    if (!h) {
        if (!n || n >= vs->leaf_cap || ++c->leaves > vs->leaf_used) {
            c->errs++;
            return;
        }
        const va_leaf *l = &LF(n);
        if (l->parent != p || l->count > VA_LB || l->count < (root ? 1u : VA_LMIN)) {
            c->errs++;
            return;
        }
        /* The chain: n follows the previous leaf, and prev_end mirrors its last end. */
        uint64_t pe = c->prev_leaf ? LF(c->prev_leaf).end[LF(c->prev_leaf).count - 1] : vs->base;
        if (l->prev != c->prev_leaf || (c->prev_leaf && LF(c->prev_leaf).next != n) || l->prev_end != pe)
            c->errs++;
        c->prev_leaf = n;
        for (unsigned i = 0; i < VA_LB; i++) {
            if (i >= l->count) {
                if (l->start[i] != UINT64_MAX || l->end[i] != 0 || l->idx[i] != 0 || l->tag[i] != 0 ||
                    l->kind[i] != 0)
                    c->errs++;
                continue;
            }
            uint32_t r = l->idx[i];
            if (!r || r >= vs->node_cap) {
                c->errs++;
                continue;
            }
            const struct vidmm_va_range *rec = va_rec(vs, r);
            if (rec->leaf != n || rec->node != r || rec->d.va != l->start[i] || rec->d.va + rec->d.size != l->end[i] ||
                l->tag[i] != (rec->d.state == VIDMM_VA_MAPPED ? va_tag(rec->d.object) : 0) ||
                l->kind[i] != va_kind(&rec->d) ||
                l->end[i] < l->start[i] || (i && l->start[i] <= l->start[i - 1]))
                c->errs++;
            c->entries++;
        }
        va_leaf_sum(l, m, m64);
        if (l->smax != *m || l->smax64 != *m64)
            c->errs++;
        *lo = l->start[0];
        return;
    }
    if (!n || n >= vs->inner_cap || ++c->inners > vs->inner_used) {
        c->errs++;
        return;
    }
    const va_inner *in = &IN(n);
    if (in->parent != p || in->count > VA_IB || in->count < (root ? 2u : VA_IMIN) || in->leafkids != (h == 1) ||
        in->key[0] != 0) {
        c->errs++;
        return;
    }
    for (unsigned j = 0; j < VA_IB; j++) {
        if (j >= in->count) {
            if (in->key[j] != UINT64_MAX || in->child[j] != 0 || in->max[j] != 0 || in->max64[j] != 0)
                c->errs++;
            continue;
        }
        uint64_t cm, cm64, clo;
        va_check_node(vs, in->child[j], h - 1, n, c, &cm, &cm64, &clo);
        if (c->errs)
            return; /* the walk trusts the shape */
        if (in->max[j] != cm || in->max64[j] != cm64 || (j && in->key[j] != clo) ||
            (j >= 2 && in->key[j] <= in->key[j - 1]))
            c->errs++;
        if (!j)
            *lo = clo;
        *m = va_max(*m, cm);
        *m64 = va_max(*m64, cm64);
    }
    if (in->smax != *m || in->smax64 != *m64)
        c->errs++;
}

int vidmm_va_space_check(const struct vidmm_va_space *vs)
{
    struct va_chk c;
    memset(&c, 0, sizeof c);
    uint64_t m, m64, lo;
    va_check_node(vs, vs->root, vs->height, 0, &c, &m, &m64, &lo);
    if (vs->dirty_count)
        c.errs++;
    if (!c.errs && (c.leaves != vs->leaf_used || c.inners != vs->inner_used || c.entries != vs->range_count + 1 ||
                    LF(c.prev_leaf).next != 0))
        c.errs++;
    if (c.errs)
        return c.errs; /* the walks below trust the shape */
    for (uint64_t i = 0; i < vs->obj_cap; i++)
        if (vs->objs[i].head >= vs->node_cap)
            return 1; /* the walks below follow the heads */
    int errs = 0;
    uint64_t prev_end = vs->base, count = 0, mapped = 0, inres = 0;
    uint32_t prev = 0;
    uint32_t n = va_first_from_node(vs, 0);
    /* The sentinel must be the last entry, [limit, limit). */
    if (va_next_node(vs, vs->end) != 0 || D(vs->end).va != vs->limit || D(vs->end).size != 0)
        errs++;
    for (; n; n = va_next_node(vs, n)) {
        const struct vidmm_va_desc *d = &D(n);
        if (d->va < prev_end)
            errs++;
        if (n == vs->end)
            break;
        count++;
        if (d->size == 0 || !va_aligned(d->va, VIDMM_VA_PAGE) || !va_aligned(d->size, VIDMM_VA_PAGE) ||
            VE(n) > vs->limit || VE(n) < d->va)
            errs++;
        if (d->state == VIDMM_VA_MAPPED) {
            mapped++;
            inres += d->in_reservation;
            if (d->object == 0 || (d->prot & ~VIDMM_VA_PROT_MASK) || d->in_reservation > 1 ||
                d->mode > VIDMM_VA_ZERO || !va_aligned(d->object_offset, VIDMM_VA_PAGE))
                errs++;
            const struct vidmm_va_objrec *rec = va_obj_find(vs, d->object);
            if (!rec)
                errs++;
        } else if (d->state == VIDMM_VA_RESERVED) {
            if (d->object || d->mode > VIDMM_VA_ZERO)
                errs++;
            if (prev && D(prev).state == VIDMM_VA_RESERVED && VE(prev) == d->va && D(prev).mode == d->mode)
                errs++; /* should have been merged */
        } else {
            errs++;
        }
        /* Reservation-backed runs begin and end on 64 KiB. */
        int backed = va_backed(d);
        int prev_backed = prev && VE(prev) == d->va && va_backed(&D(prev));
        if (backed && !prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (!backed && prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (prev && va_backed(&D(prev)) && VE(prev) != d->va && !va_aligned(VE(prev), VIDMM_VA_GRANULE))
            errs++;
        prev_end = VE(n);
        prev = n;
    }
    if (prev && va_backed(&D(prev)) && !va_aligned(VE(prev), VIDMM_VA_GRANULE))
        errs++;
    if (count != vs->range_count || mapped != vs->mapped_count || inres != vs->inres_count)
        errs++;
    /* Object hash and lists. */
    uint64_t objs = 0, listed = 0;
    for (uint64_t i = 0; i < vs->obj_cap; i++) {
        const struct vidmm_va_objrec *rec = &vs->objs[i];
        if (!rec->head) {
            if (rec->tag)
                errs++;
            continue;
        }
        objs++;
        if (rec->head >= vs->node_cap) {
            errs++;
            continue;
        }
        /* The tag is the head's object's, and the object has no other slot
         * (find returns the first one on its probe sequence). */
        uint64_t object = va_rec(vs, rec->head)->d.object;
        if (rec->tag != va_tag(object) || va_obj_find(vs, object) != rec)
            errs++;
        uint64_t k = 0;
        uint32_t p = 0;
        for (uint32_t mi = rec->head; mi && mi < vs->node_cap && k <= vs->mapped_count;
             mi = va_rec(vs, mi)->obj_next, k++) {
            const struct vidmm_va_range *mr = va_rec(vs, mi);
            if (mr->obj_prev != p || mr->d.state != VIDMM_VA_MAPPED || mr->d.object != object ||
                vidmm_va_lookup(vs, mr->d.va) != mr)
                errs++;
            p = mi;
        }
        if (k == 0 || k > vs->mapped_count)
            errs++;
        listed += k;
    }
    if (objs != vs->obj_count || listed != vs->mapped_count || vs->obj_count * 2 > vs->obj_cap)
        errs++;
    /* The free pools are intact, and with the live nodes fill the arrays. */
    uint64_t fc = 0;
    for (uint32_t f = vs->free_nodes; f && f < vs->node_cap && fc <= vs->free_node_count; f = va_rec(vs, f)->obj_next)
        fc++;
    if (fc != vs->free_node_count || fc + vs->range_count + 2 != vs->node_cap)
        errs++;
    fc = 0;
    for (uint32_t f = vs->free_leaves; f && f < vs->leaf_cap && fc <= vs->free_leaf_count; f = LF(f).next)
        fc++;
    if (fc != vs->free_leaf_count || fc + vs->leaf_used + 1 != vs->leaf_cap)
        errs++;
    fc = 0;
    for (uint32_t f = vs->free_inners; f && f < vs->inner_cap && fc <= vs->free_inner_count; f = IN(f).parent)
        fc++;
    if (fc != vs->free_inner_count || (vs->inner_cap && fc + vs->inner_used + 1 != vs->inner_cap))
        errs++;
    return errs;
}
