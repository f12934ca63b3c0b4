/*
 * va_check.c - vidmm_va_space_check(), the walker over every VA-space
 * invariant.
 *
 * It re-derives everything the other files cache or maintain and counts
 * disagreements: the ranges (sorted, non-overlapping, aligned, inside the
 * space, reservation runs 64 KiB granular, no two equal RESERVED ranges
 * adjacent), the B+-tree's shape and cached hole summaries (va_tree.c),
 * the counts, the free lists of the pools (va_pool.c), and the object
 * index against the MAPPED ranges (va_objidx.c).  Read-only; O(n).
 *
 * vidmm_va_prep_check() walks the one structure prepare hands to commit
 * (struct vidmm_va_prep): what commit relies on without checking it -
 * the span, the position hint and the reservation - must hold.
 */
#include "va/va_int.h"

/* ---- check -------------------------------------------------------------------- */

struct va_chk {
    int errs;
    uint64_t leaves, inners, entries;
    uint32_t prev_leaf; /* the leaf chain, rebuilt in order */
};

/* Shape of the subtree at n (height h, parent p, whose stale flag is
 * pstale): fill, unused slots, order, keys, back-pointers, the leaf chain
 * and prev_end, and the cached summaries - exact wherever they are not
 * marked stale: a node not stale, and the slot of a child not stale; a
 * stale node's parent is stale.  *m, *m64: its largest hole and aligned
 * piece, from the ranges; *lo: its least start. */
static void va_check_node(const struct vidmm_va_space *vs, uint32_t n, uint32_t h, uint32_t p, uint32_t pstale,
                          struct va_chk *c, uint64_t *m, uint64_t *m64, uint64_t *lo)
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
        vidmm_vai_leaf_sum(l, m, m64);
        if (l->stale > 1 || (l->stale && !root && !pstale) || (!l->stale && (l->smax != *m || l->smax64 != *m64)))
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
        in->key[0] != 0 || in->stale > 1 || (in->stale && !root && !pstale)) {
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
        va_check_node(vs, in->child[j], h - 1, n, in->stale, c, &cm, &cm64, &clo);
        if (c->errs)
            return; /* the walk trusts the shape */
        uint32_t cst = h == 1 ? LF(in->child[j]).stale : IN(in->child[j]).stale;
        if ((!cst && (in->max[j] != cm || in->max64[j] != cm64)) || (j && in->key[j] != clo) ||
            (j >= 2 && in->key[j] <= in->key[j - 1]))
            c->errs++;
        if (!j)
            *lo = clo;
        *m = va_max(*m, cm);
        *m64 = va_max(*m64, cm64);
    }
    if (!in->stale && (in->smax != *m || in->smax64 != *m64))
        c->errs++;
}

/* Walk, phase 2: the ranges in address order - each sound, tiling up to
 * the sentinel, reservation-backed runs on 64 KiB, equal reserved
 * neighbours merged - and the counts. */
static int va_check_ranges(const struct vidmm_va_space *vs)
{
    int errs = 0;
    uint64_t prev_end = vs->base, count = 0, mapped = 0, inres = 0;
    uint32_t prev = 0;
    uint32_t n = va_first_from_node(vs, 0);
    /* The sentinel must be the last entry, [limit, limit). */
    if (vidmm_vai_next_node(vs, vs->end) != 0 || D(vs->end).va != vs->limit || D(vs->end).size != 0)
        errs++;
    for (; n; n = vidmm_vai_next_node(vs, n)) {
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
            const struct vidmm_va_objrec *rec = vidmm_vai_obj_find(vs, d->object);
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
    return errs;
}

/* Walk, phase 3: the object hash and each object's list of mappings. */
static int va_check_objects(const struct vidmm_va_space *vs)
{
    int errs = 0;
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
        if (rec->tag != va_tag(object) || vidmm_vai_obj_find(vs, object) != rec)
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
    return errs;
}

/* Walk, phase 4: the free pools are intact, and with the live nodes fill
 * the arrays. */
static int va_check_pools(const struct vidmm_va_space *vs)
{
    int errs = 0;
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

/* In phases: the tree's shape and summaries (phase 1, va_check_node),
 * then - trusting the shape - the ranges, the objects and the pools. */
int vidmm_va_space_check(const struct vidmm_va_space *vs)
{
    struct va_chk c;
    memset(&c, 0, sizeof c);
    uint64_t m, m64, lo;
    va_check_node(vs, vs->root, vs->height, 0, 0, &c, &m, &m64, &lo);
    if (!c.errs && (c.leaves != vs->leaf_used || c.inners != vs->inner_used || c.entries != vs->range_count + 1 ||
                    LF(c.prev_leaf).next != 0))
        c.errs++;
    if (vs->bugs.count)
        c.errs++;   /* an invariant broken where it changed (va_space.h: bugs.first says which) */
    if (c.errs)
        return c.errs; /* the walks below trust the shape */
    for (uint64_t i = 0; i < vs->obj_cap; i++)
        if (vs->objs[i].head >= vs->node_cap)
            return 1; /* the walks below follow the heads */
    return va_check_ranges(vs) + va_check_objects(vs) + va_check_pools(vs);
}

int vidmm_va_prep_check(const struct vidmm_va_space *vs, const struct vidmm_va_prep *op)
{
    if (!vs || !op)
        return 1;
    int e = 0;
    if (op->kind > VIDMM_VA_PREP_UNMAP_OBJECT)
        return 1;
    if (op->kind == VIDMM_VA_PREP_NONE)
        return 0;
    if (op->kind == VIDMM_VA_PREP_UNMAP_OBJECT)
        return op->d.object == 0 || !vidmm_vai_obj_find(vs, op->d.object);
    uint64_t align = op->kind == VIDMM_VA_PREP_RESERVE ? VIDMM_VA_GRANULE : VIDMM_VA_PAGE;
    e += op->size == 0 || !va_aligned(op->va, align) || !va_aligned(op->size, align);
    e += op->va < vs->base || op->va + op->size < op->va || op->va + op->size > vs->limit;
    /* The commit takes records from the free list without looking. */
    e += vs->free_node_count < VA_NODES_PER_CALL;
    if (op->first) {
        e += op->first >= vs->node_cap || op->first_leaf == 0 || op->first_leaf >= vs->leaf_cap ||
             op->first_slot >= VA_LB;
        if (!e)
            e += LF(op->first_leaf).idx[op->first_slot] != op->first || va_rec(vs, op->first)->leaf != op->first_leaf ||
                 VE(op->first) <= op->va; /* the first range ending after va (maybe the sentinel) */
    }
    switch (op->kind) {
    case VIDMM_VA_PREP_RESERVE:
        e += op->d.state != VIDMM_VA_RESERVED || op->d.mode > VIDMM_VA_ZERO;
        break;
    case VIDMM_VA_PREP_MAP:
        e += op->d.state != VIDMM_VA_MAPPED || op->d.object == 0 || (op->d.prot & ~VIDMM_VA_PROT_MASK);
        e += (vs->obj_count + 1) * 2 > vs->obj_cap;
        break;
    case VIDMM_VA_PREP_FREE:
        e += op->d.state != VIDMM_VA_FREE;
        break;
    case VIDMM_VA_PREP_UPDATE:
        e += !op->ops || op->n == 0;
        for (size_t i = 0; !e && i < op->n; i++)
            e += op->ops[i].va < op->va || op->ops[i].va + op->ops[i].size > op->va + op->size;
        /* The spans that get tables: non-empty, page-aligned pieces of the hull. */
        e += op->nspans && !op->spans;
        for (size_t k = 0; !e && k < op->nspans; k++)
            e += op->spans[k].lo >= op->spans[k].hi || op->spans[k].lo < op->va ||
                 op->spans[k].hi > op->va + op->size || !va_aligned(op->spans[k].lo | op->spans[k].hi, VIDMM_VA_PAGE);
        break;
    default:
        break;
    }
    return e;
}
