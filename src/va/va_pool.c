/*
 * va_pool.c - the VA space's storage: range records and tree nodes.
 *
 * Every range's public record (struct vidmm_va_range) lives in a chunk
 * of 256 that never moves, so the pointers the queries hand out stay
 * valid while the range lives; tree leaves and inner nodes live in
 * arrays that grow by doubling (copied: only 32-bit indices refer to
 * them).  Everything is obtained here, in the prepare half of a change
 * (vidmm_vai_reserve: a change's worst case, all or nothing), so that the
 * commit half only takes from and gives back to free lists and cannot
 * fail.  Layout and sizes: va_int.h.
 */
#include "va/va_int.h"

/* ---- record storage ------------------------------------------------------ */

void vidmm_vai_free_blocks(const struct vidmm_va_space *vs, struct vidmm_va_chunk *dir, uint64_t from, uint64_t to)
{
    for (uint64_t c = from; c < to;) {
        uint64_t n = dir[c].block_chunks;
        vs->ha->free(vs->ha->user_data, dir[c].recs, (size_t)n * VA_CHUNK * sizeof(struct vidmm_va_range), 64);
        c += n;
    }
}

/* Grow the records until `want` are free.  All or nothing. */
vidmm_status vidmm_vai_nodes_reserve(struct vidmm_va_space *vs, uint64_t want)
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

/* Records are taken and given back by va_node_get() / va_node_put()
 * (va_int.h: inline, they run several times per change). */

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

vidmm_status vidmm_vai_leaves_reserve(struct vidmm_va_space *vs, uint64_t want)
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
vidmm_status vidmm_vai_reserve_slow(struct vidmm_va_space *vs, uint64_t recs, uint64_t ins)
{
    vidmm_status st;
    uint64_t leaf_total = (vs->range_count + 1 + recs) / VA_LMIN + 2;
    uint64_t leaves = leaf_total > vs->leaf_used ? va_min(ins, leaf_total - vs->leaf_used) : 0;
    if ((st = vidmm_vai_nodes_reserve(vs, recs)) != VIDMM_OK || (st = vidmm_vai_leaves_reserve(vs, leaves)) != VIDMM_OK)
        return st;
    uint64_t inner_total = ((uint64_t)vs->leaf_used + leaves) / 3 + VA_INNER_SLACK;
    return inner_total > vs->inner_used ? va_inners_reserve(vs, inner_total - vs->inner_used) : VIDMM_OK;
}

uint32_t vidmm_vai_leaf_get(struct vidmm_va_space *vs)
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

void vidmm_vai_leaf_put(struct vidmm_va_space *vs, uint32_t i)
{
    memset(&LF(i), 0, sizeof LF(i));
    LF(i).next = vs->free_leaves;
    vs->free_leaves = i;
    vs->free_leaf_count++;
    vs->leaf_used--;
}

uint32_t vidmm_vai_inner_get(struct vidmm_va_space *vs)
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

void vidmm_vai_inner_put(struct vidmm_va_space *vs, uint32_t i)
{
    memset(&IN(i), 0, sizeof IN(i));
    IN(i).parent = vs->free_inners;
    vs->free_inners = i;
    vs->free_inner_count++;
    vs->inner_used--;
}
