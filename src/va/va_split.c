/*
 * va_split.c - split and merge: the one primitive every change goes through.
 *
 * Everything that edits ranges goes through vidmm_vai_replace(): make
 * [a, e) be exactly one new range (or a hole), cutting the ranges it
 * overlaps and emitting drm_gpuvm-style UNMAP / REMAP / MAP steps.  The
 * public entries differ only in validation and in what they ask
 * replace to put where.  A replace needs at most two records beyond
 * those it frees itself (one for the tail of a range split in two, one for
 * the new range) and inserts at most two entries (each may split one leaf
 * and, up the path, inner nodes); every entry's prepare half obtains its
 * worst case of records, leaves and inner nodes before the commit: the
 * commit half cannot fail.
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
#include "va/va_int.h"

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
        vidmm_vai_obj_unlink(vs, n);
    vidmm_vai_erase(vs, n);
    va_node_put(vs, n);
}

/* Merge a RESERVED range with RESERVED neighbours of its mode (no steps:
 * the PTEs are the same either way). */
static void va_merge_reserved(struct vidmm_va_space *vs, uint32_t n)
{
    uint32_t p = vidmm_vai_prev_node(vs, n);
    if (p && D(p).state == VIDMM_VA_RESERVED && D(p).mode == D(n).mode && VE(p) == VS(n)) {
        uint64_t e = VE(n);
        va_remove(vs, n);
        vidmm_vai_set_end(vs, p, e);
        n = p;
    }
    uint32_t s = vidmm_vai_next_node(vs, n);
    if (s != vs->end && D(s).state == VIDMM_VA_RESERVED && D(s).mode == D(n).mode && VE(n) == VS(s)) {
        uint64_t e = VE(s);
        va_remove(vs, s);
        vidmm_vai_set_end(vs, n, e);
    }
}

/* va_replace_leaf's plan: the leaf's entries s..k-1 are covered by
 * [a, e); m new entries (the kept head, the new range, the kept tail)
 * take their place. */
struct va_leaf_plan {
    unsigned s, k, c, nk, m, nc;
    unsigned head, split, tail, neu;
    /* The covered entries, for the record half. */
    uint32_t ci[VA_LB];
    uint64_t cs[VA_LB], ce[VA_LB];
    /* The new entries. */
    uint64_t ns[3], ne[3];
    uint32_t ni[3], nt[3];
    uint8_t nkd[3];
    uint32_t n, t;   /* the new range's record; the split tail's */
};

/* Replace, phase 1: does the change stay inside leaf lf and its fill
 * bounds?  0 (nothing changed) when not; else the plan's shape. */
static inline int va_leaf_plan_fits(const struct vidmm_va_space *vs, const va_leaf *l, uint64_t a, uint64_t e,
                                    const struct vidmm_va_desc *nd, int plain, struct va_leaf_plan *p)
{
    unsigned s = p->s, c = l->count, k = s;
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
    p->k = k;
    p->c = c;
    p->head = s < k && l->start[s] < a;
    p->split = p->head && l->end[s] > e;
    p->tail = p->split || (k > s && l->end[k - 1] > e);
    p->neu = nd->state != VIDMM_VA_FREE;
    p->m = p->head + p->neu + p->tail;
    p->nc = c - (k - s) + p->m;
    p->nk = k - s;
    return !(p->nc > VA_LB || (p->nc < VA_LMIN && vs->height));
}

/* Replace, phase 2: note the covered entries; those wholly inside
 * [a, e) leave the space's counts. */
static inline void va_leaf_take_covered(struct vidmm_va_space *vs, const va_leaf *l, uint64_t a, uint64_t e,
                                        struct va_leaf_plan *p)
{
    for (unsigned i = 0; i < p->nk; i++) {
        p->ci[i] = l->idx[p->s + i];
        p->cs[i] = l->start[p->s + i];
        p->ce[i] = l->end[p->s + i];
        unsigned kd = l->kind[p->s + i];
        if (p->cs[i] >= a && p->ce[i] <= e) {
            (void)VIDMM_BUG_ON_LOG(&vs->bugs, vs->range_count == 0 || ((kd & VIDMM_VA_MAPPED) && vs->mapped_count == 0),
                                   "replace: range [0x%llx, 0x%llx) removed with no live range counted",
                                   (unsigned long long)p->cs[i], (unsigned long long)p->ce[i]);
            vs->range_count--;
            if (kd & VIDMM_VA_MAPPED) {
                vs->mapped_count--;
                vs->inres_count -= (kd & VA_K_INRES) != 0;
            }
        }
    }
}

/* Replace, phase 3: the new entries at s - the kept head, the new range,
 * the kept tail (a new record when the one range is split in two). */
static inline void va_leaf_new_entries(struct vidmm_va_space *vs, uint32_t lf, const va_leaf *l, uint64_t a,
                                       uint64_t e, const struct vidmm_va_desc *nd, struct va_leaf_plan *p)
{
    unsigned j = 0, s = p->s;
    if (p->head) {
        p->ns[j] = l->start[s];
        p->ne[j] = a;
        p->ni[j] = l->idx[s];
        p->nkd[j] = l->kind[s];
        p->nt[j++] = l->tag[s];
    }
    if (p->neu) {
        p->n = va_node_get(vs);
        va_rec(vs, p->n)->leaf = lf;
        p->ns[j] = a;
        p->ne[j] = e;
        p->ni[j] = p->n;
        p->nkd[j] = va_kind(nd);
        p->nt[j++] = nd->state == VIDMM_VA_MAPPED ? va_tag(nd->object) : 0;
        vs->range_count++;
        if (nd->state == VIDMM_VA_MAPPED) {
            vs->mapped_count++;
            vs->inres_count += nd->in_reservation;
        }
    }
    if (p->tail) {
        unsigned from = p->split ? s : p->k - 1;
        p->ns[j] = e;
        p->ne[j] = l->end[from];
        p->ni[j] = l->idx[from];
        p->nkd[j] = l->kind[from];
        p->nt[j] = l->tag[from];
        if (p->split) {
            p->t = p->ni[j] = va_node_get(vs);
            va_rec(vs, p->t)->leaf = lf;
            vs->range_count++;
            if (p->nkd[j] & VIDMM_VA_MAPPED) {
                vs->mapped_count++;
                vs->inres_count += (p->nkd[j] & VA_K_INRES) != 0;
            }
        }
    }
}

/* Replace, phase 4: the leaf - entries k.. move to s + m, the new ones go
 * in front; its key and the next leaf's prev_end follow, both summaries
 * are marked stale. */
static inline void va_leaf_write(struct vidmm_va_space *vs, uint32_t lf, va_leaf *l, const struct va_leaf_plan *p)
{
    unsigned s = p->s, k = p->k, c = p->c, m = p->m, nc = p->nc;
    uint64_t first = l->start[0];
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
        l->start[s + i] = p->ns[i];
        l->end[s + i] = p->ne[i];
        l->idx[s + i] = p->ni[i];
        l->tag[s + i] = p->nt[i];
        l->kind[s + i] = p->nkd[i];
    }
    l->count = nc;
    if (s == 0 && l->start[0] != first)
        vidmm_vai_key_up(vs, lf, l->start[0]);
    if (k == c && LF(l->next).prev_end != l->end[nc - 1]) {
        LF(l->next).prev_end = l->end[nc - 1];
        va_dirty(vs, l->next);
    }
    va_dirty(vs, lf);
}

/* Replace, phase 5: the records - copy the old descriptors for the steps
 * into old, then cut, unlink and free the covered ones; fill the new
 * range's. */
static inline void va_records_replace(struct vidmm_va_space *vs, uint64_t a, uint64_t e,
                                      const struct vidmm_va_desc *nd, const struct va_leaf_plan *p,
                                      struct vidmm_va_desc *old)
{
    for (unsigned i = 0; i < p->nk; i++) {
        uint32_t r = p->ci[i];
        struct vidmm_va_desc *rd = &D(r);
        uint64_t rs = p->cs[i], re = p->ce[i];
        old[i] = *rd;
        if (rs >= a && re <= e) {
            if (rd->state == VIDMM_VA_MAPPED)
                vidmm_vai_obj_unlink(vs, r);
            va_node_put(vs, r); /* d stays intact: nothing is allocated below */
        } else if (rs < a && re > e) {
            struct vidmm_va_desc *td = &D(p->t);
            *td = *rd;
            td->va = e;
            td->size = re - e;
            rd->size = a - rs;
            if (td->state == VIDMM_VA_MAPPED) {
                td->object_offset += e - rs;
                vidmm_vai_obj_link_after(vs, p->t, r); /* r's object: no hash access */
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
    if (p->neu) {
        struct vidmm_va_desc *d = &D(p->n);
        *d = *nd;
        d->va = a;
        d->size = e - a;
        if (d->state == VIDMM_VA_MAPPED)
            vidmm_vai_obj_link(vs, p->n);
    }
}

/* Replace, phase 6: the steps, from the copies of the old descriptors. */
static void va_replace_steps(struct vidmm_va_space *vs, uint64_t a, uint64_t e, const struct va_leaf_plan *p,
                             const struct vidmm_va_desc *old)
{
    for (unsigned i = 0; i < p->nk; i++) {
        uint64_t rs = p->cs[i], re = p->ce[i];
        if (rs >= a && re <= e)
            va_emit(vs, VIDMM_VA_STEP_UNMAP, &old[i], NULL, 0, 0);
        else
            va_emit(vs, VIDMM_VA_STEP_REMAP, &old[i], NULL, rs < a ? a - rs : 0, re > e ? re - e : 0);
    }
    if (p->neu)
        va_emit(vs, VIDMM_VA_STEP_MAP, NULL, &D(p->n), 0, 0);
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
 * range is), and its summaries refreshed or marked stale (va_dirty);
 * only then are the covered ranges' records read (the descent started
 * their misses, which this work overlaps), updated, unlinked and freed.  The steps go out last,
 * from copies of the old descriptors, so every step callback of the
 * change sees the space in its final state. */
static int va_replace_leaf(struct vidmm_va_space *vs, uint32_t lf, unsigned s, uint64_t a, uint64_t e,
                           const struct vidmm_va_desc *nd, int plain)
{
    va_leaf *l = &LF(lf);
    struct va_leaf_plan p;
    p.s = s;
    p.n = p.t = 0;
    if (!va_leaf_plan_fits(vs, l, a, e, nd, plain, &p))
        return 0;
    va_leaf_take_covered(vs, l, a, e, &p);
    va_leaf_new_entries(vs, lf, l, a, e, nd, &p);
    va_leaf_write(vs, lf, l, &p);
    struct vidmm_va_desc old[VA_LB];
    va_records_replace(vs, a, e, nd, &p, old);
    if (vs->step_fn)
        va_replace_steps(vs, a, e, &p, old);
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
            vidmm_vai_key_up(vs, lf, a);
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
            vidmm_vai_key_up(vs, lf, a);
        vs->range_count++;
    }
    /* The leaf's last range keeps its end, so the next leaf's prev_end
     * stands. */
    va_dirty(vs, lf);
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
        r = vidmm_vai_first_from_span(vs, a, e, &pos);
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
        uint32_t next = vidmm_vai_next_node(vs, r);
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
            vidmm_vai_set_end(vs, r, a);
            vidmm_vai_insert_before(vs, t, next);
            if (td->state == VIDMM_VA_MAPPED)
                vidmm_vai_obj_link_after(vs, t, r); /* r's object: no hash access */
            r = t;
            break;
        } else if (rs < a) {
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, a - rs, 0);
            vidmm_vai_set_end(vs, r, a);
        } else {
            VA_EMIT(vs, VIDMM_VA_STEP_REMAP, rd, NULL, 0, re - e);
            vidmm_vai_set_start(vs, r, e);
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
    vidmm_vai_insert_before(vs, n, r); /* r: the first range at or after e */
    if (d->state == VIDMM_VA_MAPPED)
        vidmm_vai_obj_link(vs, n);
    VA_EMIT(vs, VIDMM_VA_STEP_MAP, NULL, d, 0, 0);
    if (d->state == VIDMM_VA_RESERVED)
        va_merge_reserved(vs, n);
}

void vidmm_vai_replace(struct vidmm_va_space *vs, uint32_t r, uint64_t a, uint64_t e, const struct vidmm_va_desc *nd)
{
    va_replace_do(vs, r, NULL, a, e, nd);
}

/* The same, with r's place in the tree known. */
void vidmm_vai_replace_at(struct vidmm_va_space *vs, uint32_t r, const struct va_pos *rp, uint64_t a, uint64_t e,
                          const struct vidmm_va_desc *nd)
{
    va_replace_do(vs, r, rp, a, e, nd);
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
void vidmm_vai_unmap_span(struct vidmm_va_space *vs, uint64_t a, uint64_t e)
{
    struct va_pos pos;
    uint32_t r = vidmm_vai_first_from_span(vs, a, e, &pos);
    /* Only plain mappings (and holes) in one leaf: one cut to holes. */
    struct vidmm_va_desc hole;
    memset(&hole, 0, sizeof hole);
    if (va_replace_leaf(vs, pos.lf, pos.slot, a, e, &hole, 1))
        return;
    while (r != vs->end && VS(r) < e) {
        if (D(r).state != VIDMM_VA_MAPPED) {
            r = vidmm_vai_next_node(vs, r);
            continue;
        }
        /* The next mapping in the span survives the replace (which frees
         * only r's span and merges RESERVED neighbours): walk on from it
         * instead of descending from the root again. */
        VA_UNLINK_PREFETCH(vs, r);
        uint32_t nm = vidmm_vai_next_node(vs, r);
        while (nm != vs->end && VS(nm) < e && D(nm).state != VIDMM_VA_MAPPED)
            nm = vidmm_vai_next_node(vs, nm);
        if (nm == vs->end || VS(nm) >= e)
            nm = 0;
        uint64_t ps = va_max(a, VS(r)), pe = va_min(e, VE(r));
        struct vidmm_va_desc d;
        va_unmapped_desc(vs, r, &d);
        vidmm_vai_replace(vs, r, ps, pe, &d);
        if (!nm)
            break;
        r = nm;
    }
}

/* Unmap the whole mapping r without taking a record or a tree slot: a
 * mapping made outside reservations is cut out (a removal), one made in a
 * reservation becomes RESERVED in the same record and slot, then merges
 * with equal neighbours (removals again).  Removals only free, so this
 * needs nothing reserved.  Steps: UNMAP of the mapping, MAP of the
 * reservation, as the general replace emits them. */
void vidmm_vai_unmap_in_place(struct vidmm_va_space *vs, uint32_t r)
{
    struct vidmm_va_desc old = D(r), nd;
    va_unmapped_desc(vs, r, &nd);
    if (nd.state == VIDMM_VA_FREE) {
        vidmm_vai_replace(vs, r, VS(r), VE(r), &nd);
        return;
    }
    vidmm_vai_obj_unlink(vs, r);
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
}
