/*
 * range_alloc_check.c - the range allocator's walkers: the ranges in
 * address order (dumps), and the checker that names each broken
 * invariant and where it broke, the way tlsf_check does (see
 * range_alloc.h).
 *
 * The checker counts violations as it always did (each one once; a
 * broken chain ends the walk so a cycle cannot loop) and keeps the text
 * of the first: a corrupted allocator is debugged from the first thing
 * that went wrong, not from a count.
 */
#include "seg/range_alloc.h"
#include "seg/range_alloc_int.h"

#include <stdarg.h>
#include <stdio.h>

void vidmm_ra_for_each(const struct vidmm_range_alloc *ra,
                       void (*fn)(void *ctx, uint64_t offset, uint64_t size, int used), void *ctx)
{
    if (!ra || !ra->nodes || !fn)
        return;
    for (uint32_t i = ra->first_node; i != RA_NIL; i = ra->nodes[i].next_phys)
        fn(ctx, ra->nodes[i].offset, ra->nodes[i].size, ra->nodes[i].prev_free == RA_USED);
}

/* The checker's tally: violations, and the first one's words. */
struct ra_tally {
    int errors;
    char *msg;
    size_t n;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void bad(struct ra_tally *t, const char *fmt, ...)
{
    if (!t->errors++ && t->msg && t->n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->msg, t->n, fmt, ap);
        va_end(ap);
    }
}

/* What the physical walk found, for the later phases. */
struct ra_walk {
    uint64_t seen, free_nodes;
};

/* Phase 1: the ranges tile [0, size) in address order, no two free ranges
 * touch, a live range caches its class; the totals match.  0 when the
 * chain itself is broken (the walk stopped). */
static int check_physical(const struct vidmm_range_alloc *ra, struct ra_tally *t, struct ra_walk *w)
{
    uint64_t pos = 0, free_bytes = 0, live = 0;
    uint32_t prev = RA_NIL;
    int prev_free = 0;
    for (uint32_t i = ra->first_node; i != RA_NIL; i = ra->nodes[i].next_phys) {
        if (i >= ra->node_cap || ++w->seen > ra->node_count) {
            bad(t, "physical chain: node %u after node %u is past node_cap %u or the chain is longer than "
                "node_count %u (a cycle)", i, prev, ra->node_cap, ra->node_count);
            return 0;
        }
        const struct vidmm_ra_node *n = &ra->nodes[i];
        if (n->prev_phys != prev)
            bad(t, "node %u at 0x%llx: prev_phys %u, but the address walk came from node %u", i,
                (unsigned long long)n->offset, n->prev_phys, prev);
        if (n->offset != pos || !n->size || (n->size & (ra->chunk - 1)) || n->prev_free == RA_SLOT)
            bad(t, "node %u: range [0x%llx, +0x%llx) does not tile on from 0x%llx in whole chunks of 0x%llx, "
                "or is an unused slot", i, (unsigned long long)n->offset, (unsigned long long)n->size,
                (unsigned long long)pos, (unsigned long long)ra->chunk);
        int fr = n->prev_free != RA_USED;
        if (fr) {
            free_bytes += n->size;
            w->free_nodes++;
            if (prev_free)
                bad(t, "nodes %u and %u: two adjacent free ranges at 0x%llx (not coalesced)", prev, i,
                    (unsigned long long)n->offset);
        } else {
            live++;
            if (n->next_free != class_index(n->size >> ra->chunk_shift))
                bad(t, "live node %u at 0x%llx: cached class index %u, its size 0x%llx is class %u", i,
                    (unsigned long long)n->offset, n->next_free, (unsigned long long)n->size,
                    class_index(n->size >> ra->chunk_shift));
        }
        prev_free = fr;
        pos = n->offset + n->size;
        prev = i;
    }
    if (pos != ra->size)
        bad(t, "the ranges end at 0x%llx, the allocator's size is 0x%llx", (unsigned long long)pos,
            (unsigned long long)ra->size);
    if (free_bytes != ra->free_bytes)
        bad(t, "free_bytes 0x%llx, the free ranges add up to 0x%llx", (unsigned long long)ra->free_bytes,
            (unsigned long long)free_bytes);
    if (live != ra->live_count)
        bad(t, "live_count %llu, the address walk found %llu live ranges", (unsigned long long)ra->live_count,
            (unsigned long long)live);
    return 1;
}

/* Phase 2: every slot not in the address chain is on the slot chain. */
static int check_slots(const struct vidmm_range_alloc *ra, struct ra_tally *t, const struct ra_walk *w)
{
    uint64_t slots = 0;
    for (uint32_t i = ra->free_node_head; i != RA_NIL; i = ra->nodes[i].next_free) {
        if (i >= ra->node_cap || ++slots > ra->node_cap) {
            bad(t, "slot chain: node %u is past node_cap %u or the chain is a cycle", i, ra->node_cap);
            return 0;
        }
        if (ra->nodes[i].prev_free != RA_SLOT)
            bad(t, "slot chain: node %u is not marked an unused slot", i);
    }
    if (w->seen != ra->node_count || slots != (uint64_t)ra->node_cap - ra->node_count)
        bad(t, "node_count %u of node_cap %u, but %llu nodes in the address chain and %llu unused slots",
            ra->node_count, ra->node_cap, (unsigned long long)w->seen, (unsigned long long)slots);
    return 1;
}

/* Phase 3, one bin: its list holds free ranges of its class with
 * consistent links, and its bitmap bit says whether it is empty.  0 when
 * the list itself is broken. */
static int check_bin(const struct vidmm_range_alloc *ra, struct ra_tally *t, unsigned fl, unsigned sl,
                     const struct ra_walk *w, uint64_t *in_bins)
{
    uint32_t head = ra->bins[fl * SL_COUNT + sl];
    int bit = (ra->sl_bitmap[fl] >> sl) & 1;
    if (bit != (head != RA_NIL))
        bad(t, "bin (%u, %u): bitmap bit %d but the list is %s", fl, sl, bit, head != RA_NIL ? "not empty" : "empty");
    uint32_t pv = RA_NIL;
    for (uint32_t b = head; b != RA_NIL; b = ra->nodes[b].next_free) {
        if (b >= ra->node_cap || ++*in_bins > w->free_nodes) {
            bad(t, "bin (%u, %u): node %u is past node_cap %u or the bins hold more than the %llu free ranges",
                fl, sl, b, ra->node_cap, (unsigned long long)w->free_nodes);
            return 0;
        }
        const struct vidmm_ra_node *n = &ra->nodes[b];
        unsigned f2, s2;
        if (n->prev_free == RA_USED || n->prev_free == RA_SLOT || n->prev_free != pv || !n->size) {
            bad(t, "bin (%u, %u): node %u is live, an unused slot, empty, or links back to %u instead of %u",
                fl, sl, b, n->prev_free, pv);
        } else {
            mapping(n->size >> ra->chunk_shift, &f2, &s2);
            if (f2 != fl || s2 != sl)
                bad(t, "bin (%u, %u): node %u at 0x%llx of size 0x%llx belongs in bin (%u, %u)", fl, sl, b,
                    (unsigned long long)n->offset, (unsigned long long)n->size, f2, s2);
        }
        pv = b;
    }
    return 1;
}

/* Phase 3: the bins, and the bitmaps set exactly for non-empty bins. */
static int check_bins(const struct vidmm_range_alloc *ra, struct ra_tally *t, const struct ra_walk *w)
{
    uint64_t in_bins = 0;
    for (unsigned fl = 0; fl < ra->fl_count; fl++) {
        for (unsigned sl = 0; sl < SL_COUNT; sl++)
            if (!check_bin(ra, t, fl, sl, w, &in_bins))
                return 0;
        if (((ra->fl_bitmap >> fl) & 1) != (ra->sl_bitmap[fl] != 0))
            bad(t, "first-level bitmap bit %u disagrees with its second-level word 0x%llx", fl,
                (unsigned long long)ra->sl_bitmap[fl]);
    }
    if (ra->fl_count < 64 && (ra->fl_bitmap >> ra->fl_count))
        bad(t, "first-level bitmap 0x%llx has bits at or past fl_count %u", (unsigned long long)ra->fl_bitmap,
            ra->fl_count);
    if (in_bins != w->free_nodes)
        bad(t, "the bins hold %llu ranges, the address walk found %llu free", (unsigned long long)in_bins,
            (unsigned long long)w->free_nodes);
    return 1;
}

int vidmm_ra_check_msg(const struct vidmm_range_alloc *ra, char *msg, size_t n)
{
    struct ra_tally t = { 0, msg, n };
    if (msg && n)
        msg[0] = '\0';
    if (!ra || !ra->nodes || !ra->bins || !ra->sl_bitmap) {
        bad(&t, "not initialised: no node array, bins or bitmaps");
        return t.errors;
    }
    if (!is_pow2(ra->chunk) || ((uint64_t)1 << ra->chunk_shift) != ra->chunk)
        bad(&t, "chunk 0x%llx is not a power of two or not 1 << chunk_shift (%u)", (unsigned long long)ra->chunk,
            ra->chunk_shift);
    if (ra->node_count > ra->node_cap) {
        bad(&t, "node_count %u over node_cap %u", ra->node_count, ra->node_cap);
        return t.errors;
    }
    if (ra->bugs.count)
        bad(&t, "%llu internal invariants broken where it changed; first: %s", (unsigned long long)ra->bugs.count,
            ra->bugs.first);
    struct ra_walk w = { 0, 0 };
    if (check_physical(ra, &t, &w) && check_slots(ra, &t, &w))
        (void)check_bins(ra, &t, &w);
    return t.errors;
}

int vidmm_ra_check(const struct vidmm_range_alloc *ra)
{
    return vidmm_ra_check_msg(ra, NULL, 0);
}
