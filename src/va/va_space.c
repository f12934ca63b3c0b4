/*
 * va_space.c - per-process GPU VA bookkeeping (see va_space.h and
 * docs/VA_SPACE.md).
 *
 * Layout.  Every live range (RESERVED or MAPPED) is a node of one intrusive
 * AVL tree keyed by start address.  Holes are not nodes: each node records
 * the hole in front of it (gap), and a sentinel node [limit, limit) that
 * is always the last one carries the final hole, so "the holes" are
 * exactly the nodes' gaps.  Each node also keeps the maximum over its
 * subtree of the gaps (max_gap) and of their 64 KiB-aligned usable parts
 * (max_gap64), which lets find_hole() skip every subtree that cannot hold
 * the request.  Only subtrees cut by min or max can fail after passing
 * that test, so the lowest fitting hole is found in O(log n).
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

#define VA_SLAB_FIRST 64u
#define VA_SLAB_MAX   4096u
#define VA_SLAB_HDR   64u   /* slab header size: keeps nodes cache-line aligned */
#define VA_OBJ_MIN    16u
#define VA_NODES_PER_CALL 4u /* a single call's worst case (two per replace, see above) */

struct vidmm_va_slab {
    struct vidmm_va_slab *next;
    uint64_t count;
};

/* One allocation's mappings.  object 0 marks an empty slot. */
struct vidmm_va_objrec {
    uint64_t object;
    struct vidmm_va_range *head;
    uint64_t count;
};

typedef struct vidmm_va_range va_node;

static inline uint64_t va_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t va_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t va_end(const va_node *n) { return n->d.va + n->d.size; }
static inline int va_aligned(uint64_t x, uint64_t a) { return (x & (a - 1)) == 0; }
static inline uint64_t va_align_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Reserved VA, or a mapping made in reserved VA: the WDDM "reserved range"
 * that update ops must stay in and that free cuts only at 64 KiB. */
static inline int va_backed(const struct vidmm_va_desc *d)
{
    return d->state == VIDMM_VA_RESERVED || (d->state == VIDMM_VA_MAPPED && d->in_reservation);
}

/* ---- node slab ---------------------------------------------------------- */

static vidmm_status va_nodes_reserve(struct vidmm_va_space *vs, uint64_t want)
{
    while (vs->free_node_count < want) {
        uint64_t cnt = vs->slab_next_nodes;
        if (cnt < want - vs->free_node_count)
            cnt = want - vs->free_node_count; /* a big batch: one slab, not thousands */
        if (cnt > (SIZE_MAX - VA_SLAB_HDR) / sizeof(va_node))
            return VIDMM_E_NO_HOST_MEMORY;
        size_t bytes = VA_SLAB_HDR + (size_t)cnt * sizeof(va_node);
        struct vidmm_va_slab *s = vs->ha->alloc(vs->ha->user_data, bytes, 64);
        if (!s)
            return VIDMM_E_NO_HOST_MEMORY;
        s->next = vs->slabs;
        s->count = cnt;
        vs->slabs = s;
        va_node *nodes = (va_node *)(void *)((char *)s + VA_SLAB_HDR);
        for (uint64_t i = 0; i < cnt; i++) {
            nodes[i].right = vs->free_nodes;
            vs->free_nodes = &nodes[i];
        }
        vs->free_node_count += cnt;
        if (vs->slab_next_nodes < VA_SLAB_MAX)
            vs->slab_next_nodes *= 2;
    }
    return VIDMM_OK;
}

/* Only after va_nodes_reserve(): never fails. */
static va_node *va_node_get(struct vidmm_va_space *vs)
{
    va_node *n = vs->free_nodes;
    vs->free_nodes = n->right;
    vs->free_node_count--;
    memset(n, 0, sizeof *n);
    return n;
}

static void va_node_put(struct vidmm_va_space *vs, va_node *n)
{
    n->right = vs->free_nodes;
    vs->free_nodes = n;
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
    vs->objs[i].head = NULL;
    vs->objs[i].count = 0;
    vs->obj_count--;
}

/* Capacity was reserved by the caller when the object may be new. */
static void va_obj_link(struct vidmm_va_space *vs, va_node *n)
{
    struct vidmm_va_objrec *rec = va_obj_find(vs, n->d.object);
    if (!rec) {
        uint64_t mask = vs->obj_cap - 1, i = va_hash(n->d.object) & mask;
        while (vs->objs[i].object)
            i = (i + 1) & mask;
        rec = &vs->objs[i];
        rec->object = n->d.object;
        rec->head = NULL;
        rec->count = 0;
        vs->obj_count++;
    }
    n->obj_prev = NULL;
    n->obj_next = rec->head;
    if (rec->head)
        rec->head->obj_prev = n;
    rec->head = n;
    rec->count++;
}

static void va_obj_unlink(struct vidmm_va_space *vs, va_node *n)
{
    struct vidmm_va_objrec *rec = va_obj_find(vs, n->d.object);
    if (n->obj_prev)
        n->obj_prev->obj_next = n->obj_next;
    else
        rec->head = n->obj_next;
    if (n->obj_next)
        n->obj_next->obj_prev = n->obj_prev;
    n->obj_prev = n->obj_next = NULL;
    if (--rec->count == 0)
        va_obj_delete(vs, rec);
}

/* ---- augmented AVL tree ------------------------------------------------------ */

static inline int32_t va_h(const va_node *n) { return n ? n->height : 0; }

/* The 64 KiB-aligned part of the hole in front of n. */
static inline uint64_t va_gap64(const va_node *n)
{
    uint64_t lo = va_align_up(n->d.va - n->gap, VIDMM_VA_GRANULE);
    uint64_t hi = n->d.va & ~(VIDMM_VA_GRANULE - 1);
    return hi > lo ? hi - lo : 0;
}

static void va_pull(va_node *n)
{
    int32_t hl = va_h(n->left), hr = va_h(n->right);
    n->height = 1 + (hl > hr ? hl : hr);
    uint64_t g = n->gap, g64 = va_gap64(n);
    if (n->left) {
        g = va_max(g, n->left->max_gap);
        g64 = va_max(g64, n->left->max_gap64);
    }
    if (n->right) {
        g = va_max(g, n->right->max_gap);
        g64 = va_max(g64, n->right->max_gap64);
    }
    n->max_gap = g;
    n->max_gap64 = g64;
}

/* After a gap change at n: refresh the maxima up to where they stop changing. */
static void va_propagate(va_node *n)
{
    for (; n; n = n->parent) {
        uint64_t g = n->max_gap, g64 = n->max_gap64;
        va_pull(n);
        if (n->max_gap == g && n->max_gap64 == g64)
            break;
    }
}

static void va_replace_child(struct vidmm_va_space *vs, va_node *p, va_node *old, va_node *n)
{
    if (!p)
        vs->root = n;
    else if (p->left == old)
        p->left = n;
    else
        p->right = n;
}

static void va_rotate_left(struct vidmm_va_space *vs, va_node *x)
{
    va_node *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    y->parent = x->parent;
    va_replace_child(vs, x->parent, x, y);
    y->left = x;
    x->parent = y;
    va_pull(x);
    va_pull(y);
}

static void va_rotate_right(struct vidmm_va_space *vs, va_node *x)
{
    va_node *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    y->parent = x->parent;
    va_replace_child(vs, x->parent, x, y);
    y->right = x;
    x->parent = y;
    va_pull(x);
    va_pull(y);
}

/* Refresh heights and maxima from n towards the root, rotating where the
 * AVL balance is broken.  The walk stops at the first node whose height
 * and maxima come out unchanged (nothing above it can change), but not
 * before it has refreshed `through`, a node whose own fields are stale
 * (the successor that erase moved into the erased node's place).  Most
 * walks end within a level or two, which is what keeps the siblings'
 * cache lines out of the common path. */
static void va_rebalance(struct vidmm_va_space *vs, va_node *n, const va_node *through)
{
    while (n) {
        int32_t h = n->height;
        uint64_t g = n->max_gap, g64 = n->max_gap64;
        int pass = n == through;
        va_pull(n);
        int32_t bf = va_h(n->left) - va_h(n->right);
        if (bf > 1) {
            if (va_h(n->left->left) < va_h(n->left->right))
                va_rotate_left(vs, n->left);
            va_rotate_right(vs, n);
            n = n->parent;
        } else if (bf < -1) {
            if (va_h(n->right->right) < va_h(n->right->left))
                va_rotate_right(vs, n->right);
            va_rotate_left(vs, n);
            n = n->parent;
        } else if (!through && n->height == h && n->max_gap == g && n->max_gap64 == g64) {
            break;
        }
        if (pass)
            through = NULL;
        n = n->parent;
    }
}

static va_node *va_next_node(const va_node *n)
{
    if (n->right) {
        n = n->right;
        while (n->left)
            n = n->left;
        return (va_node *)n;
    }
    while (n->parent && n->parent->right == n)
        n = n->parent;
    return n->parent;
}

static va_node *va_prev_node(const va_node *n)
{
    if (n->left) {
        n = n->left;
        while (n->right)
            n = n->right;
        return (va_node *)n;
    }
    while (n->parent && n->parent->left == n)
        n = n->parent;
    return n->parent;
}

/* First node (possibly the sentinel) ending after va. */
static va_node *va_first_from_node(const struct vidmm_va_space *vs, uint64_t va)
{
    va_node *n = vs->root, *best = (va_node *)&vs->end;
    while (n) {
        if (va_end(n) > va) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best;
}

/* Link n (d filled in, not overlapping anything) into the tree just
 * before succ, its successor in address order (the callers always know
 * it, which saves a descent from the root). */
static void va_insert_before(struct vidmm_va_space *vs, va_node *n, va_node *succ)
{
    va_node *p;
    n->left = n->right = NULL;
    if (!succ->left) {
        p = succ;
        p->left = n;
    } else {
        for (p = succ->left; p->right; p = p->right)
            ;
        p->right = n;
    }
    n->parent = p;
    va_node *prev = va_prev_node(n);
    n->gap = n->d.va - (prev ? va_end(prev) : vs->base);
    succ->gap = succ->d.va - va_end(n);
    n->height = 0; /* so the walk never mistakes the new leaf for unchanged */
    va_rebalance(vs, n, NULL);
    va_propagate(succ);
    vs->range_count++;
    if (n->d.state == VIDMM_VA_MAPPED)
        vs->mapped_count++;
}

/* Unlink n from the tree (the caller frees it). */
static void va_erase(struct vidmm_va_space *vs, va_node *n)
{
    va_node *succ = va_next_node(n);
    succ->gap += n->gap + n->d.size;
    va_propagate(succ);
    va_node *moved = NULL;
    if (n->left && n->right) {
        /* Swap n with its successor s structurally (nodes are referenced
         * from outside, so contents must not move). */
        va_node *s = succ;
        moved = s;
        va_node *np = n->parent, *nl = n->left, *nr = n->right, *sp = s->parent, *sr = s->right;
        int32_t h = n->height;
        n->height = s->height;
        s->height = h;
        va_replace_child(vs, np, n, s);
        s->parent = np;
        s->left = nl;
        nl->parent = s;
        if (nr == s) {
            s->right = n;
            n->parent = s;
        } else {
            s->right = nr;
            nr->parent = s;
            sp->left = n;
            n->parent = sp;
        }
        n->left = NULL;
        n->right = sr;
        if (sr)
            sr->parent = n;
    }
    va_node *child = n->left ? n->left : n->right, *p = n->parent;
    if (child)
        child->parent = p;
    va_replace_child(vs, p, n, child);
    /* s (if moved) carries n's old height and its own stale maxima. */
    va_rebalance(vs, p, moved);
    vs->range_count--;
    if (n->d.state == VIDMM_VA_MAPPED)
        vs->mapped_count--;
}

/* Move n's end to new_end (never over the next range). */
static void va_set_end(va_node *n, uint64_t new_end)
{
    va_node *succ = va_next_node(n);
    succ->gap = succ->d.va - new_end;
    n->d.size = new_end - n->d.va;
    va_propagate(succ);
}

/* Move n's start up to new_va; a mapping's object_offset follows. */
static void va_set_start(va_node *n, uint64_t new_va)
{
    uint64_t delta = new_va - n->d.va;
    n->gap += delta;
    n->d.va = new_va;
    n->d.size -= delta;
    if (n->d.state == VIDMM_VA_MAPPED)
        n->d.object_offset += delta;
    va_propagate(n);
}

/* Lowest [x, x + size) inside a hole of n's subtree and inside [min, max],
 * x aligned to align (4 KiB or 64 KiB).  All holes of the subtree lie in
 * [lo, hi]; a subtree whose holes lie wholly inside [min, max] and whose
 * maximum passes is sure to hold a fit, so only the subtrees cut by min
 * or max are ever searched in vain: O(log n). */
static int va_find_hole(const va_node *n, uint64_t lo, uint64_t hi, uint64_t size, uint64_t align,
                        uint64_t min, uint64_t max, uint64_t *out)
{
    while (n) {
        if ((align > VIDMM_VA_PAGE ? n->max_gap64 : n->max_gap) < size || hi <= min || lo >= max)
            return 0;
        uint64_t hole_lo = n->d.va - n->gap;
        if (va_find_hole(n->left, lo, hole_lo, size, align, min, max, out))
            return 1;
        uint64_t s = va_align_up(va_max(hole_lo, min), align), e = va_min(n->d.va, max);
        if (s < e && e - s >= size) {
            *out = s;
            return 1;
        }
        lo = va_end(n);
        n = n->right;
    }
    return 0;
}

/* ---- the one primitive: make [a, e) one new range (or a hole) --------------- */

static void va_emit(struct vidmm_va_space *vs, enum vidmm_va_step_op op, const struct vidmm_va_desc *old,
                    const struct vidmm_va_desc *nw, uint64_t prev_size, uint64_t next_size)
{
    if (!vs->step_fn)
        return;
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

static void va_remove(struct vidmm_va_space *vs, va_node *n)
{
    if (n->d.state == VIDMM_VA_MAPPED)
        va_obj_unlink(vs, n);
    va_erase(vs, n);
    va_node_put(vs, n);
}

/* Merge a RESERVED range with RESERVED neighbours of its mode (no steps:
 * the PTEs are the same either way). */
static void va_merge_reserved(struct vidmm_va_space *vs, va_node *n)
{
    va_node *p = va_prev_node(n);
    if (p && p->d.state == VIDMM_VA_RESERVED && p->d.mode == n->d.mode && va_end(p) == n->d.va) {
        uint64_t e = va_end(n);
        va_remove(vs, n);
        va_set_end(p, e);
        n = p;
    }
    va_node *s = va_next_node(n);
    if (s != &vs->end && s->d.state == VIDMM_VA_RESERVED && s->d.mode == n->d.mode &&
        va_end(n) == s->d.va) {
        uint64_t e = va_end(s);
        va_remove(vs, s);
        va_set_end(n, e);
    }
}

/* Cut everything in [a, e) out of the ranges there (UNMAP for whole ones,
 * REMAP for ones cut at an edge), then, if nd is not FREE, put the new
 * range nd ([a, e)) there and emit its MAP.  Needs at most two nodes beyond
 * those it frees; the caller reserved them. */
static void va_replace(struct vidmm_va_space *vs, va_node *r, uint64_t a, uint64_t e,
                       const struct vidmm_va_desc *nd)
{
    if (!r)
        r = va_first_from_node(vs, a);
    /* Reserved already, in that mode (an UNMAP or COPY onto reserved VA):
     * nothing changes, not even the PTEs, so no steps either. */
    if (nd->state == VIDMM_VA_RESERVED && r->d.state == VIDMM_VA_RESERVED && r->d.mode == nd->mode &&
        r->d.va <= a && va_end(r) >= e)
        return;
    while (r != &vs->end && r->d.va < e) {
        va_node *next = va_next_node(r);
        uint64_t rs = r->d.va, re = va_end(r);
        /* On exit r is the successor of [a, e): the cut-off tail, the
         * trimmed last range, or the first range past e. */
        if (rs >= a && re <= e) {
            va_emit(vs, VIDMM_VA_STEP_UNMAP, &r->d, NULL, 0, 0);
            va_remove(vs, r);
        } else if (rs < a && re > e) {
            /* Split: r keeps the head, a new node takes the tail. */
            va_emit(vs, VIDMM_VA_STEP_REMAP, &r->d, NULL, a - rs, re - e);
            va_node *t = va_node_get(vs);
            t->d = r->d;
            t->d.va = e;
            t->d.size = re - e;
            if (t->d.state == VIDMM_VA_MAPPED)
                t->d.object_offset += e - rs;
            va_set_end(r, a);
            va_insert_before(vs, t, next);
            if (t->d.state == VIDMM_VA_MAPPED)
                va_obj_link(vs, t);
            r = t;
            break;
        } else if (rs < a) {
            va_emit(vs, VIDMM_VA_STEP_REMAP, &r->d, NULL, a - rs, 0);
            va_set_end(r, a);
        } else {
            va_emit(vs, VIDMM_VA_STEP_REMAP, &r->d, NULL, 0, re - e);
            va_set_start(r, e);
            break;
        }
        r = next;
    }
    if (nd->state == VIDMM_VA_FREE)
        return;
    va_node *n = va_node_get(vs);
    n->d = *nd;
    n->d.va = a;
    n->d.size = e - a;
    va_insert_before(vs, n, r); /* r: the first range at or after e */
    if (n->d.state == VIDMM_VA_MAPPED)
        va_obj_link(vs, n);
    va_emit(vs, VIDMM_VA_STEP_MAP, NULL, &n->d, 0, 0);
    if (n->d.state == VIDMM_VA_RESERVED)
        va_merge_reserved(vs, n);
}

/* What unmap leaves where mapping r was. */
static void va_unmapped_desc(const va_node *r, struct vidmm_va_desc *d)
{
    memset(d, 0, sizeof *d);
    if (r->d.in_reservation) {
        d->state = VIDMM_VA_RESERVED;
        d->mode = r->d.mode;
    }
}

/* Unmap every MAPPED byte of [a, e). */
static void va_unmap_span(struct vidmm_va_space *vs, uint64_t a, uint64_t e)
{
    va_node *r = va_first_from_node(vs, a);
    while (r != &vs->end && r->d.va < e) {
        if (r->d.state != VIDMM_VA_MAPPED) {
            r = va_next_node(r);
            continue;
        }
        /* The next mapping in the span survives the replace (which frees
         * only r's span and merges RESERVED neighbours): walk on from it
         * instead of descending from the root again. */
        va_node *nm = va_next_node(r);
        while (nm != &vs->end && nm->d.va < e && nm->d.state != VIDMM_VA_MAPPED)
            nm = va_next_node(nm);
        if (nm == &vs->end || nm->d.va >= e)
            nm = NULL;
        uint64_t ps = va_max(a, r->d.va), pe = va_min(e, va_end(r));
        struct vidmm_va_desc d;
        va_unmapped_desc(r, &d);
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
                            va_node **first)
{
    unsigned cov = 0;
    uint64_t cur = a, cnt = 0;
    va_node *r0 = va_first_from_node(vs, a);
    if (first)
        *first = r0;
    for (va_node *r = r0; r != &vs->end && r->d.va < e; r = va_next_node(r)) {
        if (r->d.va > cur)
            cov |= VA_COV_HOLE;
        cov |= va_backed(&r->d) ? VA_COV_BACKED : VA_COV_PLAIN;
        cur = va_end(r);
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
    vs->slab_next_nodes = VA_SLAB_FIRST;
    vs->end.d.va = vs->limit;
    vs->end.gap = vs->limit - vs->base;
    vs->end.height = 1;
    va_pull(&vs->end);
    vs->root = &vs->end;
    vs->objs = ha->alloc(ha->user_data, VA_OBJ_MIN * sizeof *vs->objs, 16);
    if (!vs->objs)
        return VIDMM_E_NO_HOST_MEMORY;
    memset(vs->objs, 0, VA_OBJ_MIN * sizeof *vs->objs);
    vs->obj_cap = VA_OBJ_MIN;
    if (va_nodes_reserve(vs, VA_SLAB_FIRST) != VIDMM_OK) {
        ha->free(ha->user_data, vs->objs, VA_OBJ_MIN * sizeof *vs->objs, 16);
        vs->objs = NULL;
        return VIDMM_E_NO_HOST_MEMORY;
    }
    return VIDMM_OK;
}

void vidmm_va_space_fini(struct vidmm_va_space *vs)
{
    if (!vs || !vs->ha)
        return;
    while (vs->slabs) {
        struct vidmm_va_slab *s = vs->slabs;
        vs->slabs = s->next;
        vs->ha->free(vs->ha->user_data, s, VA_SLAB_HDR + (size_t)s->count * sizeof(va_node), 64);
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
        if (va_first_from_node(vs, at)->d.va < at + size)
            return VIDMM_E_BUSY;
    } else {
        if (!va_aligned(size, VIDMM_VA_GRANULE))
            return VIDMM_E_ALIGNMENT;
        if ((st = va_window(vs, &min, &max, VIDMM_VA_GRANULE)) != VIDMM_OK)
            return st;
        if (!va_find_hole(vs->root, vs->base, vs->limit, size, VIDMM_VA_GRANULE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = va_nodes_reserve(vs, VA_NODES_PER_CALL)) != VIDMM_OK)
        return st;
    struct vidmm_va_desc d;
    memset(&d, 0, sizeof d);
    d.state = VIDMM_VA_RESERVED;
    d.mode = (uint8_t)mode;
    va_replace(vs, NULL, at, at + size, &d);
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
    vidmm_status st;
    struct vidmm_va_desc d;
    va_node *first = NULL;
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
            d.mode = first->d.mode;
        }
    } else {
        if ((st = va_window(vs, &min, &max, VIDMM_VA_PAGE)) != VIDMM_OK)
            return st;
        if (!va_find_hole(vs->root, vs->base, vs->limit, size, VIDMM_VA_PAGE, min, max, &at))
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
    va_node *first;
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
        va_node *r = rec->head;
        struct vidmm_va_desc d;
        va_unmapped_desc(r, &d);
        va_replace(vs, r, r->d.va, va_end(r), &d);
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
            d.mode = va_first_from_node(vs, op->va)->d.mode;
            d.object = op->object;
            d.object_offset = op->object_offset;
            d.prot = (uint8_t)op->prot;
            d.driver_protection = op->driver_protection;
            va_replace(vs, NULL, op->va, op->va + op->size, &d);
        } else if (op->type == VIDMM_VA_UPDATE_UNMAP) {
            d.state = VIDMM_VA_RESERVED;
            d.mode = (uint8_t)op->mode;
            va_replace(vs, NULL, op->va, op->va + op->size, &d);
        } else {
            /* Snapshot the source first: it may overlap the destination. */
            uint64_t np = 0, se = op->src + op->size;
            for (va_node *r = va_first_from_node(vs, op->src); r != &vs->end && r->d.va < se;
                 r = va_next_node(r)) {
                uint64_t ps = va_max(op->src, r->d.va), pe = va_min(se, va_end(r));
                struct vidmm_va_desc *p = &vs->scratch[np++];
                *p = r->d;
                p->va = op->va + (ps - op->src);
                p->size = pe - ps;
                if (p->state == VIDMM_VA_MAPPED)
                    p->object_offset += ps - r->d.va;
            }
            /* The source is reservation-backed, so copied mappings are
             * in_reservation already and keep the source's unmap mode. */
            for (uint64_t k = 0; k < np; k++)
                va_replace(vs, NULL, vs->scratch[k].va, vs->scratch[k].va + vs->scratch[k].size, &vs->scratch[k]);
        }
    }
    return VIDMM_OK;
}

/* ---- queries ------------------------------------------------------------------ */

const struct vidmm_va_range *vidmm_va_lookup(const struct vidmm_va_space *vs, uint64_t va)
{
    const va_node *n = vs->root;
    while (n) {
        if (va < n->d.va)
            n = n->left;
        else if (va < va_end(n))
            return n == &vs->end ? NULL : n;
        else
            n = n->right;
    }
    return NULL;
}

const struct vidmm_va_range *vidmm_va_first_from(const struct vidmm_va_space *vs, uint64_t va)
{
    const va_node *n = va_first_from_node(vs, va);
    return n == &vs->end ? NULL : n;
}

const struct vidmm_va_range *vidmm_va_first(const struct vidmm_va_space *vs)
{
    return vidmm_va_first_from(vs, 0);
}

const struct vidmm_va_range *vidmm_va_next(const struct vidmm_va_space *vs, const struct vidmm_va_range *r)
{
    const va_node *n = va_next_node(r);
    return !n || n == &vs->end ? NULL : n;
}

uint64_t vidmm_va_object_mapping_count(const struct vidmm_va_space *vs, uint64_t object)
{
    const struct vidmm_va_objrec *rec = object ? va_obj_find(vs, object) : NULL;
    return rec ? rec->count : 0;
}

/* ---- check -------------------------------------------------------------------- */

/* Shape, parent links, heights, balance and maxima of a subtree. */
static int va_check_subtree(const va_node *n, const va_node *parent, int *errs)
{
    if (!n)
        return 0;
    if (n->parent != parent)
        (*errs)++;
    int hl = va_check_subtree(n->left, n, errs), hr = va_check_subtree(n->right, n, errs);
    int h = 1 + (hl > hr ? hl : hr);
    if (n->height != h || hl - hr > 1 || hr - hl > 1)
        (*errs)++;
    uint64_t g = n->gap, g64 = va_gap64(n);
    if (n->left) {
        g = va_max(g, n->left->max_gap);
        g64 = va_max(g64, n->left->max_gap64);
    }
    if (n->right) {
        g = va_max(g, n->right->max_gap);
        g64 = va_max(g64, n->right->max_gap64);
    }
    if (n->max_gap != g || n->max_gap64 != g64)
        (*errs)++;
    return h;
}

int vidmm_va_space_check(const struct vidmm_va_space *vs)
{
    int errs = 0;
    va_check_subtree(vs->root, NULL, &errs);
    uint64_t prev_end = vs->base, count = 0, mapped = 0;
    const va_node *prev = NULL;
    const va_node *n = va_first_from_node(vs, 0);
    /* The sentinel must be the last node, [limit, limit). */
    if (va_next_node(&vs->end) != NULL || vs->end.d.va != vs->limit || vs->end.d.size != 0)
        errs++;
    for (; n; n = va_next_node(n)) {
        const struct vidmm_va_desc *d = &n->d;
        if (d->va < prev_end || n->gap != d->va - prev_end)
            errs++;
        if (n == &vs->end)
            break;
        count++;
        if (d->size == 0 || !va_aligned(d->va, VIDMM_VA_PAGE) || !va_aligned(d->size, VIDMM_VA_PAGE) ||
            va_end(n) > vs->limit || va_end(n) < d->va)
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
            if (prev && prev->d.state == VIDMM_VA_RESERVED && va_end(prev) == d->va &&
                prev->d.mode == d->mode)
                errs++; /* should have been merged */
        } else {
            errs++;
        }
        /* Reservation-backed runs begin and end on 64 KiB. */
        int backed = va_backed(d);
        int prev_backed = prev && va_end(prev) == d->va && va_backed(&prev->d);
        if (backed && !prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (!backed && prev_backed && !va_aligned(d->va, VIDMM_VA_GRANULE))
            errs++;
        if (prev && va_backed(&prev->d) && va_end(prev) != d->va && !va_aligned(va_end(prev), VIDMM_VA_GRANULE))
            errs++;
        prev_end = va_end(n);
        prev = n;
    }
    if (prev && va_backed(&prev->d) && !va_aligned(va_end(prev), VIDMM_VA_GRANULE))
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
        const va_node *p = NULL;
        for (const va_node *m = rec->head; m && c <= vs->mapped_count; m = m->obj_next, c++) {
            if (m->obj_prev != p || m->d.state != VIDMM_VA_MAPPED || m->d.object != rec->object ||
                vidmm_va_lookup(vs, m->d.va) != m)
                errs++;
            p = m;
        }
        if (c != rec->count || c == 0)
            errs++;
        listed += c;
    }
    if (objs != vs->obj_count || listed != vs->mapped_count || vs->obj_count * 2 > vs->obj_cap)
        errs++;
    /* The free-node pool is intact. */
    uint64_t fc = 0;
    for (const va_node *f = vs->free_nodes; f && fc <= vs->free_node_count; f = f->right)
        fc++;
    if (fc != vs->free_node_count)
        errs++;
    return errs;
}
