/*
 * va_space.c - per-process GPU VA bookkeeping (see va_space.h and
 * docs/VA_SPACE.md).
 *
 * Layout.  Every live range (RESERVED or MAPPED) is a node of one AVL
 * tree keyed by start address.  Holes are not nodes: each node records
 * the hole in front of it (gap), and a sentinel node [limit, limit) that
 * is always the last one carries the final hole, so "the holes" are
 * exactly the nodes' gaps.  Each node also caches, for each child, the
 * maximum over the child's subtree of the gaps (lmax/rmax), of their
 * 64 KiB-aligned usable parts (lmax64/rmax64) and its height, which lets
 * find_hole() skip every subtree that cannot hold the request.  Only
 * subtrees cut by min or max can fail after passing that test, so the
 * lowest fitting hole is found in O(log n).
 *
 * Changes.  Everything that edits ranges goes through va_replace(): make
 * [a, e) be exactly one new range (or a hole), cutting the ranges it
 * overlaps and emitting drm_gpuvm-style UNMAP / REMAP / MAP steps.  The
 * public entries differ only in validation and in what they ask
 * va_replace() to put where.  A replace never needs more than two nodes
 * beyond those it frees itself (one for the tail of a range split in two,
 * one for the new range), and every entry obtains its worst case from the
 * host allocator before its first change: the commit half cannot fail,
 * and a refused allocation leaves the space untouched.
 *
 * Adjacent RESERVED ranges of one mode are merged (a map + unmap inside a
 * reservation gives back one range, so tiled-resource churn does not
 * fragment the tree); MAPPED ranges are never merged, as in drm_gpuvm:
 * each is what one map created, cut by later calls.
 */
#include "va/va_space.h"

#include <string.h>

/*
 * Node memory, structure of arrays.  A node is a 32-bit index (0 = none)
 * into three places:
 *
 *   keys[i]  16 bytes: start address and the two child indices.  This is
 *            all a descent reads (branch-free), so a descent through 64 K
 *            ranges walks a 1 MiB array that mostly stays in L2, where a
 *            pointer tree of 120-byte nodes walked 8 MiB of cache lines.
 *            The descent prefetches the aug[] line of every node it
 *            passes: the change that follows walks back up that path.
 *   aug[i]   64 bytes (one cache line): end, the hole in front, the parent,
 *            and the summaries (largest hole, largest 64 KiB-aligned hole,
 *            height) of both children, cached here so that refreshing a
 *            node after a change reads only the node itself, never its
 *            siblings, and the hole search prunes a child without
 *            touching it.
 *   the public record (struct vidmm_va_range: descriptor, object-list
 *            links), in chunks of 256 that never move, so the pointers
 *            handed out stay valid while the range lives.
 *
 * keys[] and aug[] grow by doubling (copied: only indices refer to them);
 * every growth happens in the prepare half of an entry.
 */
#define VA_CHUNK_SHIFT 8u
#define VA_CHUNK       (1u << VA_CHUNK_SHIFT) /* records per chunk */
#define VA_CAP_FIRST   256u                   /* first node capacity (a multiple of VA_CHUNK) */
#define VA_CAP_MAX     (UINT64_C(1) << 32)    /* indices are 32-bit */
#define VA_OBJ_MIN     16u
#define VA_NODES_PER_CALL 4u /* a single call's worst case (two per replace, see below) */

struct vidmm_va_key {
    uint64_t va;       /* start */
    union {
        struct {
            uint32_t l, r; /* children */
        };
        uint32_t c[2];     /* the same, indexed by "go right" */
    };
};

struct vidmm_va_aug {
    uint64_t end;              /* range end (va + size) */
    uint64_t gap;              /* bytes of hole between the previous range (or base) and va */
    uint64_t lmax, rmax;       /* largest gap in the left / right subtree (0: none) */
    uint64_t lmax64, rmax64;   /* largest 64 KiB-aligned piece of a gap there */
    uint32_t parent;
    uint8_t lh, rh;            /* heights of the left / right subtree (0: none) */
    uint8_t pad[2];
    uint64_t pad2;
};

_Static_assert(sizeof(struct vidmm_va_key) == 16, "key must be 16 bytes");
_Static_assert(sizeof(struct vidmm_va_aug) == 64, "aug must be one cache line");
_Static_assert(sizeof(struct vidmm_va_range) == 64, "record must be 64 bytes");

/* One allocation's mappings.  object 0 marks an empty slot. */
struct vidmm_va_objrec {
    uint64_t object;
    uint32_t head;   /* first mapping (node index) */
    uint32_t count;
};

typedef struct vidmm_va_aug va_aug;

#define K(i) (vs->keys[i])
#define A(i) (vs->aug[i])
#define D(i) (va_rec(vs, (i))->d)

static inline struct vidmm_va_range *va_rec(const struct vidmm_va_space *vs, uint32_t i)
{
    return &vs->cold[i >> VA_CHUNK_SHIFT][i & (VA_CHUNK - 1)];
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

/* ---- node storage ------------------------------------------------------- */

static void va_free_blocks(const struct vidmm_va_space *vs, struct vidmm_va_range **dir, uint64_t from, uint64_t to)
{
    for (uint64_t c = from; c < to;) {
        uint64_t n = dir[c][0].block_chunks;
        vs->ha->free(vs->ha->user_data, dir[c], (size_t)n * VA_CHUNK * sizeof(struct vidmm_va_range), 64);
        c += n;
    }
}

/* Grow the node arrays until `want` nodes are free.  All or nothing. */
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
    if (cap > VA_CAP_MAX || cap > SIZE_MAX / sizeof(struct vidmm_va_aug))
        return VIDMM_E_NO_HOST_MEMORY;
    uint64_t chunks = cap / VA_CHUNK, new_chunks = chunks - vs->cold_chunks;
    struct vidmm_va_key *keys = ha->alloc(ha->user_data, (size_t)cap * sizeof *keys, 64);
    struct vidmm_va_aug *aug = keys ? ha->alloc(ha->user_data, (size_t)cap * sizeof *aug, 64) : NULL;
    struct vidmm_va_range **dir = vs->cold;
    uint64_t dir_cap = vs->cold_dir_cap;
    if (aug && chunks > dir_cap) {
        dir_cap = chunks;
        dir = ha->alloc(ha->user_data, (size_t)dir_cap * sizeof *dir, 16);
    }
    struct vidmm_va_range *blk = aug && dir ? ha->alloc(ha->user_data, (size_t)new_chunks * VA_CHUNK * sizeof *blk, 64)
                                            : NULL;
    if (!blk) {
        if (dir && dir != vs->cold)
            ha->free(ha->user_data, dir, (size_t)dir_cap * sizeof *dir, 16);
        if (aug)
            ha->free(ha->user_data, aug, (size_t)cap * sizeof *aug, 64);
        if (keys)
            ha->free(ha->user_data, keys, (size_t)cap * sizeof *keys, 64);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    /* Commit: nothing below fails. */
    if (old) {
        memcpy(keys, vs->keys, (size_t)old * sizeof *keys);
        memcpy(aug, vs->aug, (size_t)old * sizeof *aug);
        ha->free(ha->user_data, vs->keys, (size_t)old * sizeof *keys, 64);
        ha->free(ha->user_data, vs->aug, (size_t)old * sizeof *aug, 64);
    }
    memset(keys + old, 0, (size_t)(cap - old) * sizeof *keys);
    memset(aug + old, 0, (size_t)(cap - old) * sizeof *aug);
    if (dir != vs->cold) {
        if (vs->cold_chunks)
            memcpy(dir, vs->cold, (size_t)vs->cold_chunks * sizeof *dir);
        if (vs->cold)
            ha->free(ha->user_data, vs->cold, (size_t)vs->cold_dir_cap * sizeof *dir, 16);
    }
    memset(blk, 0, (size_t)new_chunks * VA_CHUNK * sizeof *blk);
    for (uint64_t c = 0; c < new_chunks; c++)
        dir[vs->cold_chunks + c] = blk + c * VA_CHUNK;
    blk[0].block_chunks = (uint32_t)new_chunks;
    vs->keys = keys;
    vs->aug = aug;
    vs->cold = dir;
    vs->cold_dir_cap = dir_cap;
    vs->cold_chunks = chunks;
    vs->node_cap = cap;
    /* Index 0 is "none"; hand the rest out lowest first. */
    for (uint64_t i = cap; i-- > (old ? old : 1);) {
        va_rec(vs, (uint32_t)i)->node = (uint32_t)i;
        keys[i].r = vs->free_nodes;
        vs->free_nodes = (uint32_t)i;
        vs->free_node_count++;
    }
    return VIDMM_OK;
}

/* Only after va_nodes_reserve(): never fails.  The caller fills the key,
 * end and D(i). */
static uint32_t va_node_get(struct vidmm_va_space *vs)
{
    uint32_t i = vs->free_nodes;
    vs->free_nodes = K(i).r;
    vs->free_node_count--;
    memset(&K(i), 0, sizeof K(i));
    memset(&A(i), 0, sizeof A(i));
    struct vidmm_va_range *c = va_rec(vs, i);
    c->obj_prev = c->obj_next = 0;
    return i;
}

static void va_node_put(struct vidmm_va_space *vs, uint32_t i)
{
    K(i).r = vs->free_nodes;
    vs->free_nodes = i;
    vs->free_node_count++;
}

/* ---- object hash: object -> list of its mappings -------------------------- */

static inline uint64_t va_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static struct vidmm_va_objrec *va_obj_find(const struct vidmm_va_space *vs, uint64_t object)
{
    uint64_t mask = vs->obj_cap - 1;
    for (uint64_t i = va_hash(object) & mask;; i = (i + 1) & mask) {
        if (vs->objs[i].object == object)
            return &vs->objs[i];
        if (vs->objs[i].object == 0)
            return NULL;
    }
}

static inline void va_obj_prefetch(const struct vidmm_va_space *vs, uint64_t object)
{
    __builtin_prefetch(&vs->objs[va_hash(object) & (vs->obj_cap - 1)]);
}

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
    struct vidmm_va_objrec *t = vs->ha->alloc(vs->ha->user_data, (size_t)cap * sizeof *t, 16);
    if (!t)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(t, 0, (size_t)cap * sizeof *t);
    for (uint64_t j = 0; j < vs->obj_cap; j++) {
        if (!vs->objs[j].object)
            continue;
        uint64_t i = va_hash(vs->objs[j].object) & (cap - 1);
        while (t[i].object)
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
    for (uint64_t j = (i + 1) & mask; vs->objs[j].object; j = (j + 1) & mask) {
        uint64_t home = va_hash(vs->objs[j].object) & mask;
        /* j's entry may move to i if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            vs->objs[i] = vs->objs[j];
            i = j;
        }
    }
    vs->objs[i].object = 0;
    vs->objs[i].head = 0;
    vs->objs[i].count = 0;
    vs->obj_count--;
}

/* Capacity was reserved by the caller when the object may be new. */
static void va_obj_link(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    uint64_t object = c->d.object, mask = vs->obj_cap - 1;
    struct vidmm_va_objrec *rec;
    /* One probe sequence: the object's slot, or the empty one ending it. */
    for (uint64_t i = va_hash(object) & mask;; i = (i + 1) & mask) {
        rec = &vs->objs[i];
        if (rec->object == object)
            break;
        if (rec->object == 0) {
            rec->object = object;
            rec->head = 0;
            rec->count = 0;
            vs->obj_count++;
            break;
        }
    }
    c->obj_prev = 0;
    c->obj_next = rec->head;
    if (rec->head)
        va_rec(vs, rec->head)->obj_prev = n;
    rec->head = n;
    rec->count++;
}

static void va_obj_unlink(struct vidmm_va_space *vs, uint32_t n)
{
    struct vidmm_va_range *c = va_rec(vs, n);
    struct vidmm_va_objrec *rec = va_obj_find(vs, c->d.object);
    if (c->obj_prev)
        va_rec(vs, c->obj_prev)->obj_next = c->obj_next;
    else
        rec->head = c->obj_next;
    if (c->obj_next)
        va_rec(vs, c->obj_next)->obj_prev = c->obj_prev;
    c->obj_prev = c->obj_next = 0;
    if (--rec->count == 0)
        va_obj_delete(vs, rec);
}

/* ---- augmented AVL tree ------------------------------------------------------ */

/* The 64 KiB-aligned part of the hole [va - gap, va). */
static inline uint64_t va_gap64(uint64_t va, uint64_t gap)
{
    uint64_t lo = va_align_up(va - gap, VIDMM_VA_GRANULE);
    uint64_t hi = va & ~(VIDMM_VA_GRANULE - 1);
    return hi > lo ? hi - lo : 0;
}

/* A node's subtree summary, from its own fields and cached child slots. */
static inline uint64_t va_smax(const va_aug *a) { return va_max(a->gap, va_max(a->lmax, a->rmax)); }
static inline uint64_t va_smax64(uint64_t va, const va_aug *a)
{
    return va_max(va_gap64(va, a->gap), va_max(a->lmax64, a->rmax64));
}
static inline uint8_t va_height(const va_aug *a) { return (uint8_t)(1 + (a->lh > a->rh ? a->lh : a->rh)); }

/* Store child c's summary (c may be 0) in p's slot on that side; 1 if
 * the slot changed. */
static inline int va_slot(struct vidmm_va_space *vs, uint32_t p, int right, uint32_t c)
{
    uint64_t m = 0, m64 = 0;
    uint8_t h = 0;
    if (c) {
        const va_aug *ca = &A(c);
        m = va_smax(ca);
        m64 = va_smax64(K(c).va, ca);
        h = va_height(ca);
    }
    va_aug *pa = &A(p);
    if (right) {
        if (pa->rmax == m && pa->rmax64 == m64 && pa->rh == h)
            return 0;
        pa->rmax = m;
        pa->rmax64 = m64;
        pa->rh = h;
    } else {
        if (pa->lmax == m && pa->lmax64 == m64 && pa->lh == h)
            return 0;
        pa->lmax = m;
        pa->lmax64 = m64;
        pa->lh = h;
    }
    return 1;
}

/* After a change of i's own gap (or start): refresh the cached slots on
 * the path up, stopping at the first one that comes out unchanged.  Each
 * step reads and writes only the parent's line. */
static void va_up(struct vidmm_va_space *vs, uint32_t i)
{
    uint32_t p;
    while ((p = A(i).parent) != 0) {
        if (!va_slot(vs, p, K(p).r == i, i))
            return;
        i = p;
    }
}

static void va_replace_child(struct vidmm_va_space *vs, uint32_t p, uint32_t old, uint32_t n)
{
    if (!p)
        vs->root = n;
    else if (K(p).l == old)
        K(p).l = n;
    else
        K(p).r = n;
}

/* Rotations return the new root of the subtree; every cached slot they
 * change is recomputed from lines they touch anyway. */
static uint32_t va_rotate_left(struct vidmm_va_space *vs, uint32_t x)
{
    uint32_t y = K(x).r, b = K(y).l, xp = A(x).parent;
    va_aug *xa = &A(x), *ya = &A(y);
    K(x).r = b;
    xa->rmax = ya->lmax;
    xa->rmax64 = ya->lmax64;
    xa->rh = ya->lh;
    if (b)
        A(b).parent = x;
    ya->parent = xp;
    va_replace_child(vs, xp, x, y);
    K(y).l = x;
    xa->parent = y;
    va_slot(vs, y, 0, x);
    return y;
}

static uint32_t va_rotate_right(struct vidmm_va_space *vs, uint32_t x)
{
    uint32_t y = K(x).l, b = K(y).r, xp = A(x).parent;
    va_aug *xa = &A(x), *ya = &A(y);
    K(x).l = b;
    xa->lmax = ya->rmax;
    xa->lmax64 = ya->rmax64;
    xa->lh = ya->rh;
    if (b)
        A(b).parent = x;
    ya->parent = xp;
    va_replace_child(vs, xp, x, y);
    K(y).r = x;
    xa->parent = y;
    va_slot(vs, y, 1, x);
    return y;
}

/* Restore the AVL balance at p (|bf| == 2); returns the subtree's new root. */
static uint32_t va_balance(struct vidmm_va_space *vs, uint32_t p, int bf)
{
    if (bf > 1) {
        uint32_t l = K(p).l;
        if (A(l).lh < A(l).rh)
            va_slot(vs, p, 0, va_rotate_left(vs, l));
        return va_rotate_right(vs, p);
    }
    uint32_t r = K(p).r;
    if (A(r).rh < A(r).lh)
        va_slot(vs, p, 1, va_rotate_right(vs, r));
    return va_rotate_left(vs, p);
}

/* p's child on one side changed (replaced, or its summary did): refresh
 * p's slot, rebalance, and go on up until a slot comes out unchanged, but
 * not before passing `through` (a node whose own slots may be stale: the
 * successor erase moved into the erased node's place). */
static void va_retrace(struct vidmm_va_space *vs, uint32_t p, int right, uint32_t through)
{
    while (p) {
        int changed = va_slot(vs, p, right, right ? K(p).r : K(p).l);
        int bf = (int)A(p).lh - (int)A(p).rh;
        if (bf > 1 || bf < -1) {
            p = va_balance(vs, p, bf);
            changed = 1;
        } else if (!changed && !through) {
            return;
        }
        if (p == through)
            through = 0;
        uint32_t q = A(p).parent;
        if (!q)
            return;
        right = K(q).r == p;
        p = q;
    }
}

static uint32_t va_next_node(const struct vidmm_va_space *vs, uint32_t i)
{
    uint32_t r = K(i).r, p;
    if (r) {
        while (K(r).l)
            r = K(r).l;
        return r;
    }
    while ((p = A(i).parent) != 0 && K(p).r == i)
        i = p;
    return p;
}

static uint32_t va_prev_node(const struct vidmm_va_space *vs, uint32_t i)
{
    uint32_t l = K(i).l, p;
    if (l) {
        while (K(l).r)
            l = K(l).r;
        return l;
    }
    while ((p = A(i).parent) != 0 && K(p).l == i)
        i = p;
    return p;
}

/* First node (possibly the sentinel) ending after va.  The descent reads
 * only keys[]: the last start <= va and the first start > va; one aug
 * line then says whether the former still covers va. */
static uint32_t va_first_from_node(const struct vidmm_va_space *vs, uint64_t va)
{
    uint32_t n = vs->root, pred = 0, succ = vs->end;
    const struct vidmm_va_key *keys = vs->keys;
    while (n) {
        /* The change that usually follows walks back up this path
         * through aug[]: start those loads now, off the critical path. */
        __builtin_prefetch(&vs->aug[n]);
        /* Branch-free: the direction is a coin toss on random input. */
        const struct vidmm_va_key *k = &keys[n];
        uint32_t right = k->va <= va, m = 0u - right;
        pred = (n & m) | (pred & ~m);
        succ = (succ & m) | (n & ~m);
        n = k->c[right];
    }
    uint32_t r = pred && A(pred).end > va ? pred : succ;
    __builtin_prefetch(va_rec(vs, r));
    return r;
}

/* Link n (key, end and D(n) filled in) into the tree just before succ,
 * its successor in address order, inside the hole in front of succ (the
 * callers always know succ, which saves a descent; the hole starts at
 * succ.va - succ.gap, so no predecessor walk either). */
static void va_insert_before(struct vidmm_va_space *vs, uint32_t n, uint32_t succ)
{
    uint64_t prev_end = K(succ).va - A(succ).gap;
    uint32_t p;
    int right;
    if (!K(succ).l) {
        p = succ;
        right = 0;
        K(p).l = n;
    } else {
        for (p = K(succ).l; K(p).r; p = K(p).r)
            ;
        right = 1;
        K(p).r = n;
    }
    A(n).parent = p;
    A(n).gap = K(n).va - prev_end;
    A(succ).gap = K(succ).va - A(n).end;
    /* succ is an ancestor of n: the retrace refreshes it on the way up
     * unless it stops below it, and then va_up takes over from succ. */
    va_retrace(vs, p, right, 0);
    va_up(vs, succ);
    vs->range_count++;
    if (D(n).state == VIDMM_VA_MAPPED)
        vs->mapped_count++;
}

/* Unlink n from the tree (the caller frees it). */
static void va_erase(struct vidmm_va_space *vs, uint32_t n)
{
    uint32_t succ = va_next_node(vs, n), through = 0;
    A(succ).gap += A(n).gap + (A(n).end - K(n).va);
    va_up(vs, succ);
    if (K(n).l && K(n).r) {
        /* Swap n with its successor s structurally (records are referenced
         * from outside, so contents must not move).  s has no left child. */
        uint32_t s = succ;
        through = s;
        uint32_t np = A(n).parent, nl = K(n).l, nr = K(n).r, sp = A(s).parent, sr = K(s).r;
        va_aug *na = &A(n), *sa = &A(s);
        uint64_t srmax = sa->rmax, srmax64 = sa->rmax64;
        uint8_t srh = sa->rh;
        va_replace_child(vs, np, n, s);
        sa->parent = np;
        K(s).l = nl;
        A(nl).parent = s;
        sa->lmax = na->lmax;
        sa->lmax64 = na->lmax64;
        sa->lh = na->lh;
        /* s's right slot: n's, stale until the retrace passes s. */
        sa->rmax = na->rmax;
        sa->rmax64 = na->rmax64;
        sa->rh = na->rh;
        if (nr == s) {
            K(s).r = n;
            na->parent = s;
        } else {
            K(s).r = nr;
            A(nr).parent = s;
            K(sp).l = n;
            na->parent = sp;
        }
        K(n).l = 0;
        K(n).r = sr;
        na->lmax = na->lmax64 = 0;
        na->lh = 0;
        na->rmax = srmax;
        na->rmax64 = srmax64;
        na->rh = srh;
        if (sr)
            A(sr).parent = n;
    }
    uint32_t child = K(n).l ? K(n).l : K(n).r, p = A(n).parent;
    int right = p && K(p).r == n;
    if (child)
        A(child).parent = p;
    va_replace_child(vs, p, n, child);
    va_retrace(vs, p, right, through);
    vs->range_count--;
    if (D(n).state == VIDMM_VA_MAPPED)
        vs->mapped_count--;
}

/* Move n's end to new_end (never over the next range); succ: n's successor. */
static void va_set_end(struct vidmm_va_space *vs, uint32_t n, uint32_t succ, uint64_t new_end)
{
    A(succ).gap = K(succ).va - new_end;
    A(n).end = new_end;
    D(n).size = new_end - K(n).va;
    va_up(vs, succ);
}

/* Move n's start up to new_va; a mapping's object_offset follows. */
static void va_set_start(struct vidmm_va_space *vs, uint32_t n, uint64_t new_va)
{
    uint64_t delta = new_va - K(n).va;
    struct vidmm_va_desc *d = &D(n);
    A(n).gap += delta;
    K(n).va = new_va;
    d->va = new_va;
    d->size -= delta;
    if (d->state == VIDMM_VA_MAPPED)
        d->object_offset += delta;
    va_up(vs, n);
}

/* Lowest [x, x + size) inside a hole of n's subtree and inside [min, max],
 * x aligned to align (4 KiB or 64 KiB); the caller has checked that the
 * subtree's maximum admits size.  All holes of the subtree lie in
 * [lo, hi]; a subtree whose holes lie wholly inside [min, max] and whose
 * maximum passes is sure to hold a fit, so only the subtrees cut by min
 * or max are ever searched in vain: O(log n).  Children whose cached
 * maximum fails are skipped without being read. */
static int va_find_hole(const struct vidmm_va_space *vs, uint32_t n, uint64_t lo, uint64_t hi, uint64_t size,
                        uint64_t align, uint64_t min, uint64_t max, uint64_t *out)
{
    int big = align > VIDMM_VA_PAGE;
    while (n) {
        if (hi <= min || lo >= max)
            return 0;
        const va_aug *a = &A(n);
        uint64_t va = K(n).va, hole_lo = va - a->gap;
        if (K(n).l && (big ? a->lmax64 : a->lmax) >= size &&
            va_find_hole(vs, K(n).l, lo, hole_lo, size, align, min, max, out))
            return 1;
        uint64_t s = va_align_up(va_max(hole_lo, min), align), e = va_min(va, max);
        if (s < e && e - s >= size) {
            *out = s;
            return 1;
        }
        if (!K(n).r || (big ? a->rmax64 : a->rmax) < size)
            return 0;
        lo = a->end;
        n = K(n).r;
    }
    return 0;
}

static int va_find_hole_root(const struct vidmm_va_space *vs, uint64_t size, uint64_t align, uint64_t min,
                             uint64_t max, uint64_t *out)
{
    uint32_t r = vs->root;
    uint64_t m = align > VIDMM_VA_PAGE ? va_smax64(K(r).va, &A(r)) : va_smax(&A(r));
    return m >= size && va_find_hole(vs, r, vs->base, vs->limit, size, align, min, max, out);
}

/* ---- the one primitive: make [a, e) one new range (or a hole) --------------- */

static void va_emit(struct vidmm_va_space *vs, enum vidmm_va_step_op op, const struct vidmm_va_desc *old,
                    const struct vidmm_va_desc *nw, uint64_t prev_size, uint64_t next_size)
{
    struct vidmm_va_step s;
    memset(&s, 0, sizeof s);
    s.op = op;
    if (old)
        s.old = *old;
    if (nw)
        s.new = *nw;
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
    if (p && D(p).state == VIDMM_VA_RESERVED && D(p).mode == D(n).mode && A(p).end == K(n).va) {
        uint64_t e = A(n).end;
        uint32_t succ = va_next_node(vs, n);
        va_remove(vs, n);
        va_set_end(vs, p, succ, e);
        n = p;
    }
    uint32_t s = va_next_node(vs, n);
    if (s != vs->end && D(s).state == VIDMM_VA_RESERVED && D(s).mode == D(n).mode && A(n).end == K(s).va) {
        uint64_t e = A(s).end;
        uint32_t succ = va_next_node(vs, s);
        va_remove(vs, s);
        va_set_end(vs, n, succ, e);
    }
}

/* Cut everything in [a, e) out of the ranges there (UNMAP for whole ones,
 * REMAP for ones cut at an edge), then, if nd is not FREE, put the new
 * range nd ([a, e)) there and emit its MAP.  r: the first node ending
 * after a, if the caller has it (else 0).  Needs at most two nodes beyond
 * those it frees; the caller reserved them. */
static void va_replace(struct vidmm_va_space *vs, uint32_t r, uint64_t a, uint64_t e, const struct vidmm_va_desc *nd)
{
    if (!r)
        r = va_first_from_node(vs, a);
    /* Reserved already, in that mode (an UNMAP or COPY onto reserved VA):
     * nothing changes, not even the PTEs, so no steps either. */
    if (nd->state == VIDMM_VA_RESERVED && r != vs->end && D(r).state == VIDMM_VA_RESERVED &&
        D(r).mode == nd->mode && K(r).va <= a && A(r).end >= e)
        return;
    while (r != vs->end && K(r).va < e) {
        uint32_t next = va_next_node(vs, r);
        uint64_t rs = K(r).va, re = A(r).end;
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
            K(t).va = e;
            A(t).end = re;
            va_set_end(vs, r, next, a);
            va_insert_before(vs, t, next);
            if (td->state == VIDMM_VA_MAPPED)
                va_obj_link(vs, t);
            r = t;
            break;
        } else if (rs < a) {
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, a - rs, 0);
            va_set_end(vs, r, next, a);
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
    K(n).va = a;
    A(n).end = e;
    va_insert_before(vs, n, r); /* r: the first range at or after e */
    if (d->state == VIDMM_VA_MAPPED)
        va_obj_link(vs, n);
    VA_EMIT(vs, VIDMM_VA_STEP_MAP, NULL, d, 0, 0);
    if (d->state == VIDMM_VA_RESERVED)
        va_merge_reserved(vs, n);
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
    uint32_t r = va_first_from_node(vs, a);
    while (r != vs->end && K(r).va < e) {
        if (D(r).state != VIDMM_VA_MAPPED) {
            r = va_next_node(vs, r);
            continue;
        }
        /* The next mapping in the span survives the replace (which frees
         * only r's span and merges RESERVED neighbours): walk on from it
         * instead of descending from the root again. */
        uint32_t nm = va_next_node(vs, r);
        while (nm != vs->end && K(nm).va < e && D(nm).state != VIDMM_VA_MAPPED)
            nm = va_next_node(vs, nm);
        if (nm == vs->end || K(nm).va >= e)
            nm = 0;
        uint64_t ps = va_max(a, K(r).va), pe = va_min(e, A(r).end);
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
                            uint32_t *first)
{
    unsigned cov = 0;
    uint64_t cur = a, cnt = 0;
    uint32_t r0 = va_first_from_node(vs, a);
    if (first)
        *first = r0;
    for (uint32_t r = r0; r != vs->end && K(r).va < e; r = va_next_node(vs, r)) {
        if (K(r).va > cur)
            cov |= VA_COV_HOLE;
        const struct vidmm_va_desc *d = &D(r);
        cov |= va_backed(d) ? VA_COV_BACKED : VA_COV_PLAIN;
        if (d->state == VIDMM_VA_MAPPED) /* the replace that follows unlinks it */
            va_obj_prefetch(vs, d->object);
        cur = A(r).end;
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
    vs->objs = ha->alloc(ha->user_data, VA_OBJ_MIN * sizeof *vs->objs, 16);
    if (!vs->objs)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(vs->objs, 0, VA_OBJ_MIN * sizeof *vs->objs);
    vs->obj_cap = VA_OBJ_MIN;
    if (va_nodes_reserve(vs, 1) != VIDMM_OK) {
        ha->free(ha->user_data, vs->objs, VA_OBJ_MIN * sizeof *vs->objs, 16);
        vs->objs = NULL;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    uint32_t end = va_node_get(vs);
    memset(&D(end), 0, sizeof D(end));
    D(end).va = vs->limit;
    K(end).va = A(end).end = vs->limit;
    A(end).gap = vs->limit - vs->base;
    vs->end = vs->root = end;
    return VIDMM_OK;
}

void vidmm_va_space_fini(struct vidmm_va_space *vs)
{
    if (!vs || !vs->ha)
        return;
    if (vs->node_cap) {
        va_free_blocks(vs, vs->cold, 0, vs->cold_chunks);
        vs->ha->free(vs->ha->user_data, vs->cold, (size_t)vs->cold_dir_cap * sizeof *vs->cold, 16);
        vs->ha->free(vs->ha->user_data, vs->keys, (size_t)vs->node_cap * sizeof *vs->keys, 64);
        vs->ha->free(vs->ha->user_data, vs->aug, (size_t)vs->node_cap * sizeof *vs->aug, 64);
    }
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

vidmm_status vidmm_va_reserve(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                              uint64_t size, unsigned mode, uint64_t *va)
{
    if (!vs || !va || size == 0 || mode > VIDMM_VA_ZERO)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st;
    if (at) {
        if ((st = va_check_span(vs, at, size, VIDMM_VA_GRANULE)) != VIDMM_OK)
            return st;
        if (K(va_first_from_node(vs, at)).va < at + size)
            return VIDMM_E_BUSY;
    } else {
        if (!va_aligned(size, VIDMM_VA_GRANULE))
            return VIDMM_E_ALIGNMENT;
        if ((st = va_window(vs, &min, &max, VIDMM_VA_GRANULE)) != VIDMM_OK)
            return st;
        if (!va_find_hole_root(vs, size, VIDMM_VA_GRANULE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = va_nodes_reserve(vs, VA_NODES_PER_CALL)) != VIDMM_OK)
        return st;
    struct vidmm_va_desc d;
    memset(&d, 0, sizeof d);
    d.state = VIDMM_VA_RESERVED;
    d.mode = (uint8_t)mode;
    va_replace(vs, 0, at, at + size, &d);
    *va = at;
    return VIDMM_OK;
}

vidmm_status vidmm_va_map(struct vidmm_va_space *vs, uint64_t at, uint64_t min, uint64_t max,
                          uint64_t size, uint64_t object, uint64_t object_offset, unsigned prot,
                          uint64_t driver_protection, uint64_t *va)
{
    if (!vs || !va || size == 0 || object == 0 || (prot & ~VIDMM_VA_PROT_MASK))
        return VIDMM_E_INVALID_ARG;
    if (!va_aligned(object_offset, VIDMM_VA_PAGE))
        return VIDMM_E_ALIGNMENT;
    va_obj_prefetch(vs, object); /* linked at the end; start the miss now */
    vidmm_status st;
    struct vidmm_va_desc d;
    uint32_t first = 0;
    memset(&d, 0, sizeof d);
    if (at) {
        if ((st = va_check_span(vs, at, size, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
    } else if (!va_aligned(size, VIDMM_VA_PAGE)) {
        return VIDMM_E_ALIGNMENT;
    }
    if (object_offset + size < object_offset)
        return VIDMM_E_OVERFLOW;
    if (at) {
        unsigned cov = va_coverage(vs, at, at + size, NULL, &first);
        if ((cov & VA_COV_BACKED) && (cov & (VA_COV_HOLE | VA_COV_PLAIN)))
            return VIDMM_E_BUSY;
        if (cov & VA_COV_BACKED) {
            /* The mapping remembers the mode of the reservation under its
             * first page: unmap gives the whole mapping back in it. */
            d.in_reservation = 1;
            d.mode = D(first).mode;
        }
    } else {
        if ((st = va_window(vs, &min, &max, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
        if (!va_find_hole_root(vs, size, VIDMM_VA_PAGE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = va_nodes_reserve(vs, VA_NODES_PER_CALL)) != VIDMM_OK ||
        (st = va_obj_reserve(vs, 1)) != VIDMM_OK)
        return st;
    d.state = VIDMM_VA_MAPPED;
    d.object = object;
    d.object_offset = object_offset;
    d.prot = (uint8_t)prot;
    d.driver_protection = driver_protection;
    va_replace(vs, first, at, at + size, &d);
    *va = at;
    return VIDMM_OK;
}

vidmm_status vidmm_va_unmap(struct vidmm_va_space *vs, uint64_t va, uint64_t size)
{
    if (!vs)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = va_check_span(vs, va, size, VIDMM_VA_PAGE);
    if (st != VIDMM_OK)
        return st;
    if ((st = va_nodes_reserve(vs, VA_NODES_PER_CALL)) != VIDMM_OK)
        return st;
    va_unmap_span(vs, va, va + size);
    return VIDMM_OK;
}

vidmm_status vidmm_va_free(struct vidmm_va_space *vs, uint64_t va, uint64_t size)
{
    if (!vs)
        return VIDMM_E_INVALID_ARG;
    vidmm_status st = va_check_span(vs, va, size, VIDMM_VA_PAGE);
    if (st != VIDMM_OK)
        return st;
    uint32_t first;
    unsigned cov = va_coverage(vs, va, va + size, NULL, &first);
    if (cov & VA_COV_HOLE)
        return VIDMM_E_INVALID_ARG;
    if ((cov & VA_COV_BACKED) && (!va_aligned(va, VIDMM_VA_GRANULE) || !va_aligned(size, VIDMM_VA_GRANULE)))
        return VIDMM_E_ALIGNMENT;
    if ((st = va_nodes_reserve(vs, VA_NODES_PER_CALL)) != VIDMM_OK)
        return st;
    struct vidmm_va_desc d;
    memset(&d, 0, sizeof d);
    va_replace(vs, first, va, va + size, &d);
    return VIDMM_OK;
}

vidmm_status vidmm_va_unmap_object(struct vidmm_va_space *vs, uint64_t object)
{
    if (!vs || object == 0)
        return VIDMM_E_INVALID_ARG;
    if (!va_obj_find(vs, object))
        return VIDMM_OK;
    vidmm_status st = va_nodes_reserve(vs, VA_NODES_PER_CALL);
    if (st != VIDMM_OK)
        return st;
    /* Each replace removes the head; the record goes with the last one. */
    struct vidmm_va_objrec *rec;
    while ((rec = va_obj_find(vs, object)) != NULL) {
        uint32_t r = rec->head;
        struct vidmm_va_desc d;
        va_unmapped_desc(vs, r, &d);
        va_replace(vs, r, K(r).va, A(r).end, &d);
    }
    return VIDMM_OK;
}

/* Saturating add for node bounds. */
static inline uint64_t va_sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

vidmm_status vidmm_va_update(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n)
{
    if (!vs || (!ops && n))
        return VIDMM_E_INVALID_ARG;
    if (n == 0)
        return VIDMM_OK;
    /* Phase 1: validate every op on its own, and the target / source hulls. */
    uint64_t tlo = UINT64_MAX, thi = 0, slo = UINT64_MAX, shi = 0, maps = 0;
    vidmm_status st;
    for (size_t i = 0; i < n; i++) {
        const struct vidmm_va_update_op *op = &ops[i];
        if (op->type > VIDMM_VA_UPDATE_COPY || op->size == 0)
            return VIDMM_E_INVALID_ARG;
        if (op->type == VIDMM_VA_UPDATE_MAP && (op->object == 0 || (op->prot & ~VIDMM_VA_PROT_MASK)))
            return VIDMM_E_INVALID_ARG;
        if (op->type == VIDMM_VA_UPDATE_UNMAP && op->mode > VIDMM_VA_ZERO)
            return VIDMM_E_INVALID_ARG;
        if (op->type == VIDMM_VA_UPDATE_MAP) {
            if (!va_aligned(op->object_offset, VIDMM_VA_PAGE))
                return VIDMM_E_ALIGNMENT;
            if (op->object_offset + op->size < op->object_offset)
                return VIDMM_E_OVERFLOW;
            maps++;
        }
        if (op->type == VIDMM_VA_UPDATE_COPY) {
            if ((st = va_check_span(vs, op->src, op->size, VIDMM_VA_PAGE)) != VIDMM_OK)
                return st;
            slo = va_min(slo, op->src);
            shi = va_max(shi, op->src + op->size);
        }
        if ((st = va_check_span(vs, op->va, op->size, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
        tlo = va_min(tlo, op->va);
        thi = va_max(thi, op->va + op->size);
    }
    /* "Every target inside one reserved range": the targets' hull must be
     * one unbroken run of reservation-backed ranges.  No op of the batch
     * can break that run, so checking the starting state is enough. */
    uint64_t tranges, sranges = 0;
    if (va_coverage(vs, tlo, thi, &tranges, NULL) != VA_COV_BACKED)
        return VIDMM_E_INVALID_ARG;
    if (shi && va_coverage(vs, slo, shi, &sranges, NULL) != VA_COV_BACKED)
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
    if ((st = va_nodes_reserve(vs, need)) != VIDMM_OK || (st = va_obj_reserve(vs, maps)) != VIDMM_OK)
        return st;
    if (scratch > vs->scratch_cap) {
        if (scratch > SIZE_MAX / sizeof *vs->scratch)
            return VIDMM_E_NO_HOST_MEMORY;
        struct vidmm_va_desc *s = vs->ha->alloc(vs->ha->user_data, (size_t)scratch * sizeof *s, 16);
        if (!s)
            return VIDMM_E_NO_HOST_MEMORY;
        if (vs->scratch)
            vs->ha->free(vs->ha->user_data, vs->scratch, (size_t)vs->scratch_cap * sizeof *s, 16);
        vs->scratch = s;
        vs->scratch_cap = scratch;
    }
    /* Phase 2: apply in order; nothing below can fail. */
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
            for (uint32_t r = va_first_from_node(vs, op->src); r != vs->end && K(r).va < se;
                 r = va_next_node(vs, r)) {
                uint64_t ps = va_max(op->src, K(r).va), pe = va_min(se, A(r).end);
                struct vidmm_va_desc *p = &vs->scratch[np++];
                *p = D(r);
                p->va = op->va + (ps - op->src);
                p->size = pe - ps;
                if (p->state == VIDMM_VA_MAPPED)
                    p->object_offset += ps - K(r).va;
            }
            /* The source is reservation-backed, so copied mappings are
             * in_reservation already and keep the source's unmap mode. */
            for (uint64_t k = 0; k < np; k++)
                va_replace(vs, 0, vs->scratch[k].va, vs->scratch[k].va + vs->scratch[k].size, &vs->scratch[k]);
        }
    }
    return VIDMM_OK;
}

/* ---- queries ------------------------------------------------------------------ */

const struct vidmm_va_range *vidmm_va_lookup(const struct vidmm_va_space *vs, uint64_t va)
{
    uint32_t n = va_first_from_node(vs, va);
    return n != vs->end && K(n).va <= va ? va_rec(vs, n) : NULL;
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
    return rec ? rec->count : 0;
}

/* ---- check -------------------------------------------------------------------- */

/* Shape, parent links, heights, balance, the cached child summaries and
 * the key/record agreement of a subtree.  Returns its height; *m, *m64:
 * its largest gap and 64 KiB-aligned gap piece. */
static int va_check_subtree(const struct vidmm_va_space *vs, uint32_t n, uint32_t parent, uint64_t *m,
                            uint64_t *m64, uint64_t *seen, int *errs)
{
    *m = *m64 = 0;
    if (!n)
        return 0;
    if (n >= vs->node_cap || ++*seen > vs->range_count + 1) {
        (*errs)++;
        return 0;
    }
    const va_aug *a = &A(n);
    if (a->parent != parent || va_rec(vs, n)->node != n)
        (*errs)++;
    uint64_t lm, lm64, rm, rm64;
    int hl = va_check_subtree(vs, K(n).l, n, &lm, &lm64, seen, errs);
    int hr = va_check_subtree(vs, K(n).r, n, &rm, &rm64, seen, errs);
    if (a->lh != hl || a->rh != hr || hl - hr > 1 || hr - hl > 1)
        (*errs)++;
    if (a->lmax != lm || a->lmax64 != lm64 || a->rmax != rm || a->rmax64 != rm64)
        (*errs)++;
    /* The tree's copy of the key agrees with the public descriptor. */
    if (K(n).va != D(n).va || a->end != D(n).va + D(n).size)
        (*errs)++;
    *m = va_smax(a);
    *m64 = va_smax64(K(n).va, a);
    return 1 + (hl > hr ? hl : hr);
}

int vidmm_va_space_check(const struct vidmm_va_space *vs)
{
    int errs = 0;
    uint64_t m, m64, seen = 0;
    va_check_subtree(vs, vs->root, 0, &m, &m64, &seen, &errs);
    if (errs)
        return errs; /* the walks below trust the shape */
    uint64_t prev_end = vs->base, count = 0, mapped = 0;
    uint32_t prev = 0;
    uint32_t n = va_first_from_node(vs, 0);
    /* The sentinel must be the last node, [limit, limit). */
    if (va_next_node(vs, vs->end) != 0 || K(vs->end).va != vs->limit || A(vs->end).end != vs->limit ||
        D(vs->end).size != 0)
        errs++;
    for (; n; n = va_next_node(vs, n)) {
        const struct vidmm_va_desc *d = &D(n);
        if (d->va < prev_end || A(n).gap != d->va - prev_end)
            errs++;
        if (n == vs->end)
            break;
        count++;
        if (d->size == 0 || !va_aligned(d->va, VIDMM_VA_PAGE) || !va_aligned(d->size, VIDMM_VA_PAGE) ||
            A(n).end > vs->limit || A(n).end < d->va)
            errs++;
        if (d->state == VIDMM_VA_MAPPED) {
            mapped++;
            if (d->object == 0 || (d->prot & ~VIDMM_VA_PROT_MASK) || d->in_reservation > 1 ||
                d->mode > VIDMM_VA_ZERO || !va_aligned(d->object_offset, VIDMM_VA_PAGE))
                errs++;
            const struct vidmm_va_objrec *rec = va_obj_find(vs, d->object);
            if (!rec)
                errs++;
        } else if (d->state == VIDMM_VA_RESERVED) {
            if (d->object || d->mode > VIDMM_VA_ZERO)
                errs++;
            if (prev && D(prev).state == VIDMM_VA_RESERVED && A(prev).end == d->va && D(prev).mode == d->mode)
                errs++; /* should have been merged */
        } else {
            errs++;
        }
        /* Reservation-backed runs begin and end on 64 KiB. */
        int backed = va_backed(d);
        int prev_backed = prev && A(prev).end == d->va && va_backed(&D(prev));
        if (backed && !prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (!backed && prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (prev && va_backed(&D(prev)) && A(prev).end != d->va && !va_aligned(A(prev).end, VIDMM_VA_GRANULE))
            errs++;
        prev_end = A(n).end;
        prev = n;
    }
    if (prev && va_backed(&D(prev)) && !va_aligned(A(prev).end, VIDMM_VA_GRANULE))
        errs++;
    if (count != vs->range_count || mapped != vs->mapped_count)
        errs++;
    /* Object hash and lists. */
    uint64_t objs = 0, listed = 0;
    for (uint64_t i = 0; i < vs->obj_cap; i++) {
        const struct vidmm_va_objrec *rec = &vs->objs[i];
        if (!rec->object)
            continue;
        objs++;
        if (va_obj_find(vs, rec->object) != rec)
            errs++;
        uint64_t c = 0;
        uint32_t p = 0;
        for (uint32_t mi = rec->head; mi && mi < vs->node_cap && c <= vs->mapped_count;
             mi = va_rec(vs, mi)->obj_next, c++) {
            const struct vidmm_va_range *mr = va_rec(vs, mi);
            if (mr->obj_prev != p || mr->d.state != VIDMM_VA_MAPPED || mr->d.object != rec->object ||
                vidmm_va_lookup(vs, mr->d.va) != mr)
                errs++;
            p = mi;
        }
        if (c != rec->count || c == 0)
            errs++;
        listed += c;
    }
    if (objs != vs->obj_count || listed != vs->mapped_count || vs->obj_count * 2 > vs->obj_cap)
        errs++;
    /* The free-node pool is intact, and with the live nodes fills the arrays. */
    uint64_t fc = 0;
    for (uint32_t f = vs->free_nodes; f && f < vs->node_cap && fc <= vs->free_node_count; f = K(f).r)
        fc++;
    if (fc != vs->free_node_count || fc + vs->range_count + 2 != vs->node_cap)
        errs++;
    return errs;
}
