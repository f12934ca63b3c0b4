/*
 * va_int.h - what the files of the VA space (src/va/) share; private to
 * the folder.  The rest of the library uses va_space.h only.
 *
 * The files, by concept (docs/VA_SPACE.md, "Files"):
 *
 *   va_pool.c    range records and tree-node storage, reserved in prepare
 *   va_objidx.c  the object index (allocation -> its mappings)
 *   va_tree.c    the B+-tree keyed by start address, hole summaries, search
 *   va_split.c   split/merge: make [a, e) one new range, emitting the steps
 *   va_space.c   the entries: prepare / commit of every change, queries
 *   va_update.c  which targets of an UPDATE batch need page tables
 *   va_check.c   vidmm_va_space_check
 *
 * Functions one file defines for another are named vidmm_vai_* ("VA
 * internal"): every symbol the library exports starts with vidmm_, and a
 * short va_ name could collide with an application's when linked
 * statically.  Small hot helpers are static inline here instead.
 */
#ifndef VIDMM_VA_INT_H
#define VIDMM_VA_INT_H

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
    uint32_t stale;        /* 1: smax, smax64 may be out of date (see va_dirty) */
    uint32_t pad;
};

struct vidmm_va_inner {
    uint64_t key[VA_IB];   /* key[j], j >= 1: least start under child j; key[0] = 0; UINT64_MAX past count */
    uint32_t child[VA_IB]; /* 0 past count */
    uint64_t max[VA_IB];   /* largest hole under child j; 0 past count */
    uint64_t max64[VA_IB]; /* largest 64 KiB-aligned hole piece under child j */
    uint32_t parent;       /* 0 for the root (free-list link when free) */
    uint32_t count;
    uint32_t leafkids;     /* 1: the children are leaves */
    uint32_t stale;        /* 1: smax, smax64 and the slots of stale children may be out of date */
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

/* Where a range sits in the tree: its leaf and slot.  The descent hands
 * it on, so a change does not go through the range's record (one more
 * miss) to find its leaf. */
struct va_pos {
    uint32_t lf;
    unsigned slot;
};

/* ---- functions one file defines for the others (see the top) ---------- */

/* va_update.c: vs->upd_spans[0, upd_span_n) := the targets of the
 * (validated) batch that will hold valid entries; NO_HOST_MEMORY. */
vidmm_status vidmm_vai_update_spans(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n);
void vidmm_vai_update_fini(struct vidmm_va_space *vs);

/* va_pool.c */
void vidmm_vai_free_blocks(const struct vidmm_va_space *vs, struct vidmm_va_chunk *dir, uint64_t from, uint64_t to);
uint32_t vidmm_vai_inner_get(struct vidmm_va_space *vs);
void vidmm_vai_inner_put(struct vidmm_va_space *vs, uint32_t i);
uint32_t vidmm_vai_leaf_get(struct vidmm_va_space *vs);
void vidmm_vai_leaf_put(struct vidmm_va_space *vs, uint32_t i);
vidmm_status vidmm_vai_leaves_reserve(struct vidmm_va_space *vs, uint64_t want);
vidmm_status vidmm_vai_nodes_reserve(struct vidmm_va_space *vs, uint64_t want);
vidmm_status vidmm_vai_reserve_slow(struct vidmm_va_space *vs, uint64_t recs, uint64_t ins);
/* Inline: every change calls it, and nearly always everything is there
 * already (the growth is the out-of-line part). */
static inline vidmm_status vidmm_vai_reserve(struct vidmm_va_space *vs, uint64_t recs, uint64_t ins)
{
    uint64_t leaf_total = (vs->range_count + 1 + recs) / VA_LMIN + 2;
    uint64_t leaves = leaf_total > vs->leaf_used ? va_min(ins, leaf_total - vs->leaf_used) : 0;
    uint64_t inner_total = ((uint64_t)vs->leaf_used + leaves) / 3 + VA_INNER_SLACK;
    if (vs->free_node_count >= recs && vs->free_leaf_count >= leaves &&
        (inner_total <= vs->inner_used || vs->free_inner_count >= inner_total - vs->inner_used))
        return VIDMM_OK;
    return vidmm_vai_reserve_slow(vs, recs, ins);
}

/* va_objidx.c */
struct vidmm_va_objrec *vidmm_vai_obj_find(const struct vidmm_va_space *vs, uint64_t object);
void vidmm_vai_obj_link(struct vidmm_va_space *vs, uint32_t n);
void vidmm_vai_obj_link_after(struct vidmm_va_space *vs, uint32_t n, uint32_t p);
vidmm_status vidmm_vai_obj_reserve(struct vidmm_va_space *vs, uint64_t more);
void vidmm_vai_obj_unlink(struct vidmm_va_space *vs, uint32_t n);

/* va_tree.c */
void vidmm_vai_erase(struct vidmm_va_space *vs, uint32_t n);
int vidmm_vai_find_hole_root(struct vidmm_va_space *vs, uint64_t size, uint64_t align, uint64_t min,
                             uint64_t max, uint64_t *out);
uint32_t vidmm_vai_first_from_span(const struct vidmm_va_space *vs, uint64_t va, uint64_t e, struct va_pos *p);
void vidmm_vai_insert_before(struct vidmm_va_space *vs, uint32_t n, uint32_t succ);
void vidmm_vai_key_up(struct vidmm_va_space *vs, uint32_t lf, uint64_t key);
/* A leaf's largest hole, and its largest 64 KiB-aligned piece (inline:
 * the refresh sums every stale leaf). */
static inline void vidmm_vai_leaf_sum(const va_leaf *l, uint64_t *m, uint64_t *m64)
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
uint32_t vidmm_vai_next_node(const struct vidmm_va_space *vs, uint32_t n);
uint32_t vidmm_vai_prev_node(const struct vidmm_va_space *vs, uint32_t n);
void vidmm_vai_set_end(struct vidmm_va_space *vs, uint32_t n, uint64_t new_end);
void vidmm_vai_set_start(struct vidmm_va_space *vs, uint32_t n, uint64_t new_va);

/* va_split.c */
void vidmm_vai_replace(struct vidmm_va_space *vs, uint32_t r, uint64_t a, uint64_t e, const struct vidmm_va_desc *nd);
void vidmm_vai_replace_at(struct vidmm_va_space *vs, uint32_t r, const struct va_pos *rp, uint64_t a, uint64_t e,
                          const struct vidmm_va_desc *nd);
void vidmm_vai_unmap_in_place(struct vidmm_va_space *vs, uint32_t r);
void vidmm_vai_unmap_span(struct vidmm_va_space *vs, uint64_t a, uint64_t e);

/* ---- small hot helpers, inline in every file ------------------------------ */

/* The object index's hash (a 64-bit finaliser) and the tag kept in leaves
 * and hash slots (va_objidx.c). */
static inline uint64_t va_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static inline uint32_t va_tag(uint64_t object) { return (uint32_t)va_hash(object); }

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

/* Leaf lf's holes changed.  Right after a hole search (vs->eager: the
 * next VA_EAGER changes) the summaries are refreshed at once, up the
 * path (vidmm_vai_fix), as a space that is searched often needs them.
 * Otherwise the leaf is marked stale, and its ancestors up to the first
 * one already stale (every ancestor of a stale node is stale); the next
 * hole search refreshes them top-down through the stale nodes
 * (vidmm_vai_find_hole_root, va_tree.c).  A space changed at fixed
 * addresses then pays one flag in the leaf - usually already set - per
 * change instead of a refresh that reads the parent's summary lines.
 * Either way a node not marked stale has exact summaries, which splits
 * and merges keep (they compute the slots they move from the children's
 * data and carry the flags); the checker verifies every one. */
#define VA_EAGER 16u
void vidmm_vai_fix(struct vidmm_va_space *vs, uint32_t lf);
static inline void va_dirty(struct vidmm_va_space *vs, uint32_t lf)
{
    va_leaf *l = &LF(lf);
    if (vs->eager) {
        vs->eager--;
        vidmm_vai_fix(vs, lf);
        return;
    }
    if (l->stale)
        return;
    l->stale = 1;
    for (uint32_t p = l->parent; p && !IN(p).stale; p = IN(p).parent)
        IN(p).stale = 1;
}

/* Records from the free list (va_pool.c): only after
 * vidmm_vai_nodes_reserve(), so it never fails.  The caller fills D(i). */
static inline uint32_t va_node_get(struct vidmm_va_space *vs)
{
    uint32_t i = vs->free_nodes;
    (void)VIDMM_BUG_ON_LOG(&vs->bugs, vs->free_node_count == 0,
                           "record get: no free record (the prepare step reserves every one a change takes)");
    struct vidmm_va_range *c = va_rec(vs, i);
    vs->free_nodes = c->obj_next;
    vs->free_node_count--;
    c->obj_prev = c->obj_next = 0;
    c->leaf = 0;
    return i;
}

static inline void va_node_put(struct vidmm_va_space *vs, uint32_t i)
{
    struct vidmm_va_range *c = va_rec(vs, i);
    c->obj_prev = 0;
    c->leaf = 0;
    c->obj_next = vs->free_nodes;
    vs->free_nodes = i;
    vs->free_node_count++;
}

/* The first range (possibly the sentinel) ending after va: a lookup. */
static inline uint32_t va_first_from_node(const struct vidmm_va_space *vs, uint64_t va)
{
    return vidmm_vai_first_from_span(vs, va, 0, NULL);
}

#endif
