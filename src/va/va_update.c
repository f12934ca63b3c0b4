/*
 * va_update.c - which targets of a vidmm_va_update batch need page tables.
 *
 * A leaf entry needs its table only when it is valid: a mapped page or
 * the zero page.  An invalid entry is what a missing table already says.
 * So a batch needs tables for the spans that will hold valid entries,
 * never for the hull of its targets: two 4 KiB maps at the two ends of a
 * 2 TiB reservation need the tables of two pages, as they would in two
 * calls (docs/VA_SPACE.md, "Batches").
 *
 * Per op, in order:
 *   MAP                the whole target;
 *   UNMAP to ZERO      the whole target;
 *   UNMAP to NO_ACCESS nothing;
 *   COPY               the pieces of the target whose source will be
 *                      valid when the COPY runs.
 * A COPY's source state is resolved exactly: walk the earlier ops of the
 * batch backwards; each one decides the part of the still-unresolved
 * source it targets (valid, invalid, or - for an earlier COPY - its own
 * valid pieces); what no earlier op targets is as the VA tree says now.
 * The unresolved pieces grow by at most one per earlier op, and every
 * span found is a piece of a MAP, a ZERO unmap or a valid range, so the
 * work is O(ops^2 + valid pieces) for at most 4096 ops per batch (the
 * walk stops where the hull of the ops up to there misses the source:
 * a batch whose COPYs read what no earlier op wrote costs O(ops)), and
 * the spans' bytes are bounded by what the batch maps, zeroes or copies
 * from valid memory.
 *
 * The buffers live in the space and are reused; they grow in prepare
 * (NO_HOST_MEMORY then, nothing changed).
 */
#include "va/va_int.h"

/* Make *buf hold at least need elements of elem bytes, keeping the
 * first keep.  Capacity doubles, so a batch grows it O(log) times. */
static vidmm_status upd_grow(struct vidmm_va_space *vs, void **buf, uint64_t *cap, uint64_t need, uint64_t keep,
                             size_t elem)
{
    if (need <= *cap)
        return VIDMM_OK;
    uint64_t n = va_max(va_max(need, *cap * 2), 16);
    if (n > SIZE_MAX / elem)
        return VIDMM_E_NO_HOST_MEMORY;
    void *b = vidmm_host_alloc_at(vs->ha, VIDMM_SITE_VA_UPDATE_SPANS, (size_t)n * elem, 16);
    if (!b)
        return VIDMM_E_NO_HOST_MEMORY;
    if (*buf) {
        memcpy(b, *buf, (size_t)keep * elem);
        vs->ha->free(vs->ha->user_data, *buf, (size_t)*cap * elem, 16);
    }
    *buf = b;
    *cap = n;
    return VIDMM_OK;
}

/* Append [lo, hi) to the spans needing tables (empty ones dropped). */
static vidmm_status upd_out(struct vidmm_va_space *vs, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return VIDMM_OK;
    vidmm_status st = upd_grow(vs, (void **)&vs->upd_spans, &vs->upd_span_cap, vs->upd_span_n + 1, vs->upd_span_n,
                               sizeof *vs->upd_spans);
    if (st == VIDMM_OK)
        vs->upd_spans[vs->upd_span_n++] = (struct vidmm_va_span){ lo, hi };
    return st;
}

/* Append [lo, hi) to work list w, holding *n pieces. */
static vidmm_status upd_work(struct vidmm_va_space *vs, int w, uint64_t *n, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return VIDMM_OK;
    vidmm_status st = upd_grow(vs, (void **)&vs->upd_work[w], &vs->upd_work_cap[w], *n + 1, *n,
                               sizeof *vs->upd_work[w]);
    if (st == VIDMM_OK)
        vs->upd_work[w][(*n)++] = (struct vidmm_va_span){ lo, hi };
    return st;
}

/* Does op o leave its whole target valid (MAP, UNMAP to ZERO)? */
static int upd_all_valid(const struct vidmm_va_update_op *o)
{
    return o->type == VIDMM_VA_UPDATE_MAP || (o->type == VIDMM_VA_UPDATE_UNMAP && o->mode == VIDMM_VA_ZERO);
}

/* Source piece [lo, hi), which earlier op j targets: its valid parts go
 * out moved by delta (target - source, modulo 2^64). */
static vidmm_status upd_resolve(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t j,
                                uint64_t lo, uint64_t hi, uint64_t delta)
{
    if (upd_all_valid(&ops[j]))
        return upd_out(vs, lo + delta, hi + delta);
    if (ops[j].type != VIDMM_VA_UPDATE_COPY)
        return VIDMM_OK;
    for (uint64_t k = vs->upd_first[j]; k < vs->upd_first[j + 1]; k++) {
        struct vidmm_va_span s = vs->upd_spans[k];   /* a copy: upd_out may move the array */
        uint64_t a = va_max(lo, s.lo), e = va_min(hi, s.hi);
        vidmm_status st = a < e ? upd_out(vs, a + delta, e + delta) : VIDMM_OK;
        if (st != VIDMM_OK)
            return st;
    }
    return VIDMM_OK;
}

/* What no earlier op targets: valid where the tree has a mapping or a
 * ZERO reservation now. */
static vidmm_status upd_from_tree(struct vidmm_va_space *vs, uint64_t lo, uint64_t hi, uint64_t delta)
{
    for (uint32_t r = va_first_from_node(vs, lo); r != vs->end && VS(r) < hi; r = vidmm_vai_next_node(vs, r)) {
        const struct vidmm_va_desc *d = &D(r);
        if (d->state != VIDMM_VA_MAPPED && !(d->state == VIDMM_VA_RESERVED && d->mode == VIDMM_VA_ZERO))
            continue;
        vidmm_status st = upd_out(vs, va_max(lo, VS(r)) + delta, va_min(hi, VE(r)) + delta);
        if (st != VIDMM_OK)
            return st;
    }
    return VIDMM_OK;
}

/* COPY op i: the pieces of its target whose source is valid when it runs. */
static vidmm_status upd_copy(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t i)
{
    const struct vidmm_va_update_op *o = &ops[i];
    uint64_t delta = o->va - o->src, n = 0;
    int w = 0;
    vidmm_status st = upd_work(vs, w, &n, o->src, o->src + o->size);
    for (size_t j = i; st == VIDMM_OK && n && j-- > 0;) {
        /* No op up to j targets the source: the rest is the tree's. */
        if (vs->upd_hull[j].hi <= o->src || vs->upd_hull[j].lo >= o->src + o->size)
            break;
        uint64_t tlo = ops[j].va, thi = ops[j].va + ops[j].size, m = 0;
        for (uint64_t k = 0; st == VIDMM_OK && k < n; k++) {
            struct vidmm_va_span u = vs->upd_work[w][k];
            if (u.hi <= tlo || u.lo >= thi) {
                st = upd_work(vs, !w, &m, u.lo, u.hi);
                continue;
            }
            uint64_t a = va_max(u.lo, tlo), e = va_min(u.hi, thi);
            st = upd_resolve(vs, ops, j, a, e, delta);
            if (st == VIDMM_OK)
                st = upd_work(vs, !w, &m, u.lo, a);
            if (st == VIDMM_OK)
                st = upd_work(vs, !w, &m, e, u.hi);
        }
        w = !w;
        n = m;
    }
    for (uint64_t k = 0; st == VIDMM_OK && k < n; k++)
        st = upd_from_tree(vs, vs->upd_work[w][k].lo, vs->upd_work[w][k].hi, delta);
    return st;
}

vidmm_status vidmm_vai_update_spans(struct vidmm_va_space *vs, const struct vidmm_va_update_op *ops, size_t n)
{
    vs->upd_span_n = 0;
    vidmm_status st = upd_grow(vs, (void **)&vs->upd_first, &vs->upd_first_cap, (uint64_t)n + 1, 0,
                               sizeof *vs->upd_first);
    if (st == VIDMM_OK)
        st = upd_grow(vs, (void **)&vs->upd_hull, &vs->upd_hull_cap, n, 0, sizeof *vs->upd_hull);
    for (size_t i = 0; st == VIDMM_OK && i < n; i++) {
        struct vidmm_va_span h = { ops[i].va, ops[i].va + ops[i].size };
        if (i) {
            h.lo = va_min(h.lo, vs->upd_hull[i - 1].lo);
            h.hi = va_max(h.hi, vs->upd_hull[i - 1].hi);
        }
        vs->upd_hull[i] = h;
        vs->upd_first[i] = vs->upd_span_n;
        if (upd_all_valid(&ops[i]))
            st = upd_out(vs, ops[i].va, ops[i].va + ops[i].size);
        else if (ops[i].type == VIDMM_VA_UPDATE_COPY)
            st = upd_copy(vs, ops, i);
    }
    if (st == VIDMM_OK)
        vs->upd_first[n] = vs->upd_span_n;
    return st;
}

void vidmm_vai_update_fini(struct vidmm_va_space *vs)
{
    if (vs->upd_spans)
        vs->ha->free(vs->ha->user_data, vs->upd_spans, (size_t)vs->upd_span_cap * sizeof *vs->upd_spans, 16);
    for (int w = 0; w < 2; w++)
        if (vs->upd_work[w])
            vs->ha->free(vs->ha->user_data, vs->upd_work[w], (size_t)vs->upd_work_cap[w] * sizeof *vs->upd_work[w], 16);
    if (vs->upd_first)
        vs->ha->free(vs->ha->user_data, vs->upd_first, (size_t)vs->upd_first_cap * sizeof *vs->upd_first, 16);
    if (vs->upd_hull)
        vs->ha->free(vs->ha->user_data, vs->upd_hull, (size_t)vs->upd_hull_cap * sizeof *vs->upd_hull, 16);
}
