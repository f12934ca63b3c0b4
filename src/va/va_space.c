/*
 * va_space.c - the VA space's entries: prepare and commit of every change,
 * and the queries (interface: va_space.h; rules: docs/VA_SPACE.md).
 *
 * Each change is two halves.  Prepare validates, resolves the address
 * ("anywhere in [min, max]" is placed here, so the caller knows the span
 * before anything changes) and obtains every record, tree node, hash
 * slot and scratch entry the change can need; it changes no range and
 * emits no step, so a failure leaves the space exactly as it was.  Commit
 * applies the prepared change through the split/merge primitive
 * (va_split.c) and cannot fail.  The caller (process/process.c) makes
 * the page tables of the resolved span between the two, so whatever can
 * fail - host memory, page-table segment space - fails before the VA
 * tree changes.  The one-call entries (vidmm_va_map, ...) are the two
 * halves back to back.
 */
#include "va/va_int.h"

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
    uint32_t r0 = vidmm_vai_first_from_span(vs, a, e, &pos);
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
    if (vidmm_vai_nodes_reserve(vs, 1) != VIDMM_OK || vidmm_vai_leaves_reserve(vs, 1) != VIDMM_OK) {
        vidmm_va_space_fini(vs);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    uint32_t end = va_node_get(vs), lf = vidmm_vai_leaf_get(vs);
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
    if (vs->obj_fn && vs->obj_count)
        for (uint64_t i = 0; i < vs->obj_cap; i++)
            if (vs->objs[i].head)
                vs->obj_fn(vs->obj_ctx, va_rec(vs, vs->objs[i].head)->d.object, -1);
    if (vs->node_cap) {
        vidmm_vai_free_blocks(vs, vs->cold, 0, vs->cold_chunks);
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
    vidmm_vai_update_fini(vs);
    memset(vs, 0, sizeof *vs);
}

void vidmm_va_space_set_step_fn(struct vidmm_va_space *vs, vidmm_va_step_fn fn, void *ctx)
{
    vs->step_fn = fn;
    vs->step_ctx = ctx;
}

void vidmm_va_space_set_object_fn(struct vidmm_va_space *vs, vidmm_va_object_fn fn, void *ctx)
{
    vs->obj_fn = fn;
    vs->obj_ctx = ctx;
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
        if (!vidmm_vai_find_hole_root(vs, size, VIDMM_VA_GRANULE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = vidmm_vai_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK)
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
        if (!vidmm_vai_find_hole_root(vs, size, VIDMM_VA_PAGE, min, max, &at))
            return VIDMM_E_NO_SEGMENT_SPACE;
    }
    if ((st = vidmm_vai_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK ||
        (st = vidmm_vai_obj_reserve(vs, 1)) != VIDMM_OK)
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
        for (uint32_t r = va_first_from_node(vs, va); r != vs->end && VS(r) < va + size; r = vidmm_vai_next_node(vs, r))
            ins += D(r).state == VIDMM_VA_MAPPED && D(r).in_reservation;
    }
    if ((st = vidmm_vai_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL + ins)) != VIDMM_OK)
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
    if ((st = vidmm_vai_reserve(vs, VA_NODES_PER_CALL, VA_INS_PER_CALL)) != VIDMM_OK)
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
 * vidmm_vai_unmap_in_place), so destroying an allocation cannot fail for want of
 * host memory. */
vidmm_status vidmm_va_unmap_object_prepare(struct vidmm_va_space *vs, uint64_t object, struct vidmm_va_prep *op)
{
    if (!vs || !op || object == 0)
        return VIDMM_E_INVALID_ARG;
    va_prep_init(op, vidmm_vai_obj_find(vs, object) ? VIDMM_VA_PREP_UNMAP_OBJECT : VIDMM_VA_PREP_NONE);
    op->d.object = object;
    return VIDMM_OK;
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
    if ((st = vidmm_vai_reserve(vs, need, UINT64_MAX)) != VIDMM_OK || (st = vidmm_vai_obj_reserve(vs, maps)) != VIDMM_OK)
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
    /* The page tables follow the pages made valid, not the hull. */
    if ((st = vidmm_vai_update_spans(vs, ops, n)) != VIDMM_OK)
        return st;
    op->kind = VIDMM_VA_PREP_UPDATE;
    op->va = tlo;
    op->size = thi - tlo;
    op->ops = ops;
    op->n = n;
    op->spans = vs->upd_spans;
    op->nspans = (size_t)vs->upd_span_n;
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
            vidmm_vai_replace(vs, 0, op->va, op->va + op->size, &d);
        } else if (op->type == VIDMM_VA_UPDATE_UNMAP) {
            d.state = VIDMM_VA_RESERVED;
            d.mode = (uint8_t)op->mode;
            vidmm_vai_replace(vs, 0, op->va, op->va + op->size, &d);
        } else {
            /* Snapshot the source first: it may overlap the destination. */
            uint64_t np = 0, se = op->src + op->size;
            for (uint32_t r = va_first_from_node(vs, op->src); r != vs->end && VS(r) < se;
                 r = vidmm_vai_next_node(vs, r)) {
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
                vidmm_vai_replace(vs, 0, vs->scratch[k].va, vs->scratch[k].va + vs->scratch[k].size, &vs->scratch[k]);
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
        vidmm_vai_replace(vs, 0, op->va, op->va + op->size, &op->d);
        break;
    case VIDMM_VA_PREP_MAP:
    case VIDMM_VA_PREP_FREE:
        vidmm_vai_replace_at(vs, op->first, op->first ? &fpos : NULL, op->va, op->va + op->size, &op->d);
        break;
    case VIDMM_VA_PREP_UNMAP:
        vidmm_vai_unmap_span(vs, op->va, op->va + op->size);
        break;
    case VIDMM_VA_PREP_UNMAP_OBJECT: {
        /* Each unmap takes the head off; the hash record goes with the last one. */
        struct vidmm_va_objrec *rec;
        while ((rec = vidmm_vai_obj_find(vs, op->d.object)) != NULL)
            vidmm_vai_unmap_in_place(vs, rec->head);
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
    uint32_t n = vidmm_vai_next_node(vs, r->node);
    return !n || n == vs->end ? NULL : va_rec(vs, n);
}

uint64_t vidmm_va_object_mapping_count(const struct vidmm_va_space *vs, uint64_t object)
{
    const struct vidmm_va_objrec *rec = object ? vidmm_vai_obj_find(vs, object) : NULL;
    uint64_t k = 0;
    for (uint32_t m = rec ? rec->head : 0; m; m = va_rec(vs, m)->obj_next)
        k++;
    return k;
}

const struct vidmm_va_range *vidmm_va_object_first(const struct vidmm_va_space *vs, uint64_t object)
{
    const struct vidmm_va_objrec *rec = object ? vidmm_vai_obj_find(vs, object) : NULL;
    return rec ? va_rec(vs, rec->head) : NULL;
}

const struct vidmm_va_range *vidmm_va_object_next(const struct vidmm_va_space *vs, const struct vidmm_va_range *r)
{
    return r->obj_next ? va_rec(vs, r->obj_next) : NULL;
}
