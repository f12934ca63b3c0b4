/*
 * va_tree.c - the B+-tree of ranges keyed by start address.
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
 * This file holds the tree's own operations: hole summaries, leaf and
 * inner splits and underflows, insertion and removal of one entry,
 * moving an entry's ends, ordered walks and the hole search.  It knows
 * nothing of what a range means (va_split.c does); every node it needs
 * was reserved in prepare (va_pool.c).
 */
#include "va/va_int.h"

/* ---- B+-tree --------------------------------------------------------------- */

static inline unsigned va_child_slot(const va_inner *in, uint32_t c)
{
    unsigned s = 0;
    for (unsigned i = 0; i < VA_IB; i++)
        s |= in->child[i] == c ? i : 0;
    return s;
}

/* Largest hole and 64 KiB-aligned hole piece of a leaf / an inner node. */
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
        vidmm_vai_leaf_sum(l, m, m64);
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
 * unchanged (without reading its parent).  Stale nodes keep their mark
 * (the refresh may stop at one whose summary was already out of date). */
void vidmm_vai_fix(struct vidmm_va_space *vs, uint32_t lf)
{
    uint64_t m, m64;
    va_leaf *l = &LF(lf);
    vidmm_vai_leaf_sum(l, &m, &m64);
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
        /* The node's maximum moves only if the slot rises above it (it
         * becomes the slot's), or was it and falls: only then are the
         * other slots read (their four lines are rarely in cache). */
        uint64_t r = m >= nm ? m : om == nm ? 0 : nm;
        uint64_t r64 = m64 >= nm64 ? m64 : om64 == nm64 ? 0 : nm64;
        if ((m < nm && om == nm) || (m64 < nm64 && om64 == nm64)) {
            uint64_t x, x64;
            va_inner_sum(in, &x, &x64);
            r = x;
            r64 = x64;
        }
        if (r == nm && r64 == nm64)
            return;
        in->smax = m = r;
        in->smax64 = m64 = r64;
        n = p;
        p = in->parent;
    }
}

static inline uint32_t va_stale(const struct vidmm_va_space *vs, uint32_t n, int leaf)
{
    return leaf ? LF(n).stale : IN(n).stale;
}

/* Refresh the stale summaries under node n (height h), top-down: a
 * node that is not stale has exact summaries, and so has its slot in a
 * stale parent; a stale node's slots are refreshed for its stale
 * children only. */
static void va_clean(struct vidmm_va_space *vs, uint32_t n, uint32_t h, uint64_t *m, uint64_t *m64)
{
    if (!h) {
        va_leaf *l = &LF(n);
        if (l->stale) {
            vidmm_vai_leaf_sum(l, &l->smax, &l->smax64);
            l->stale = 0;
        }
        *m = l->smax;
        *m64 = l->smax64;
        return;
    }
    va_inner *in = &IN(n);
    if (in->stale) {
        for (unsigned j = 0; j < in->count; j++)
            if (va_stale(vs, in->child[j], h == 1))
                va_clean(vs, in->child[j], h - 1, &in->max[j], &in->max64[j]);
        va_inner_sum(in, &in->smax, &in->smax64);
        in->stale = 0;
    }
    *m = in->smax;
    *m64 = in->smax64;
}

/* Leaf lf's least start is now key: update the one ancestor key naming it. */
void vidmm_vai_key_up(struct vidmm_va_space *vs, uint32_t lf, uint64_t key)
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
        p = vidmm_vai_inner_get(vs);
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
        in->stale = va_stale(vs, left, leaf) | va_stale(vs, right, leaf);
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
    uint32_t q = vidmm_vai_inner_get(vs);
    va_inner *a = &IN(p), *b = &IN(q);
    const unsigned h = VA_IB / 2;
    int lk = (int)a->leafkids;
    uint64_t qkey = a->key[h];
    b->leafkids = a->leafkids;
    b->stale = a->stale;   /* it may take stale children */
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
    uint32_t r = vidmm_vai_leaf_get(vs);
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
        vidmm_vai_key_up(vs, lf, l->start[0]);
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
            vidmm_vai_inner_put(vs, p);
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
        vidmm_vai_leaf_put(vs, R);
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
    a->stale = b->stale = a->stale | b->stale;   /* either may take the other's stale children */
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
        vidmm_vai_inner_put(vs, R);
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
        vidmm_vai_key_up(vs, lf, l->start[0]);
    va_dirty(vs, lf);
    if (c < VA_LMIN && vs->height)
        va_leaf_underflow(vs, lf);
}

uint32_t vidmm_vai_next_node(const struct vidmm_va_space *vs, uint32_t n)
{
    const va_leaf *l = &LF(va_rec(vs, n)->leaf);
    unsigned s = va_leaf_slot(l, n);
    if (s + 1 < l->count)
        return l->idx[s + 1];
    return l->next ? LF(l->next).idx[0] : 0;
}

uint32_t vidmm_vai_prev_node(const struct vidmm_va_space *vs, uint32_t n)
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
uint32_t vidmm_vai_first_from_span(const struct vidmm_va_space *vs, uint64_t va, uint64_t e, struct va_pos *p)
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
        /* The child line is read right after the keys: start its miss
         * with theirs instead of after them. */
        __builtin_prefetch(&in->child[0]);
        __builtin_prefetch(&in->key[8]);
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

/* Link n (D(n) filled in) into the tree just before succ, its successor
 * in address order (the callers always know succ, which saves a descent). */
void vidmm_vai_insert_before(struct vidmm_va_space *vs, uint32_t n, uint32_t succ)
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
void vidmm_vai_erase(struct vidmm_va_space *vs, uint32_t n)
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
void vidmm_vai_set_end(struct vidmm_va_space *vs, uint32_t n, uint64_t new_end)
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
void vidmm_vai_set_start(struct vidmm_va_space *vs, uint32_t n, uint64_t new_va)
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
        vidmm_vai_key_up(vs, lf, new_va);
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

int vidmm_vai_find_hole_root(struct vidmm_va_space *vs, uint64_t size, uint64_t align, uint64_t min,
                             uint64_t max, uint64_t *out)
{
    uint64_t m, m64;
    va_clean(vs, vs->root, vs->height, &m, &m64);   /* the summaries the changes since the last search left stale */
    vs->eager = VA_EAGER;
    return (align > VIDMM_VA_PAGE ? m64 : m) >= size &&
           va_find_hole(vs, vs->root, vs->height, vs->base, vs->limit, size, align, min, max, out);
}
