/*
 * avl.h - the intrusive AVL tree shared by the ordered policies (belady,
 * adaptive) and the submission layer's table of physical-mode command
 * buffers (submit/physbuf.c, key[0] = ~start address); internal, never
 * installed.
 *
 * Nodes are struct vidmm_policy_entry: link[0] left, link[1] right,
 * link[2] parent, the subtree height in flags bits 5..11 (the other flag
 * bits are the caller's).  The order is fixed, so the comparison inlines
 * into the descent: key[0] descending, then reserved ascending, then
 * key[1] ascending, then the entry's address (a total, repeatable order).
 * belady files next_use / priority / last_use there, adaptive its
 * predicted next reference / priority / last_use, so in both the in-order
 * first node is the first to evict.
 *
 * insert and remove are O(log n) and allocate nothing; the first and last
 * nodes are cached, so first() is O(1); successor is O(1) amortised over
 * a walk, O(log n) worst case.
 */
#ifndef VIDMM_POLICY_AVL_H
#define VIDMM_POLICY_AVL_H

#include "vidmm/policy.h"

#include <stdint.h>

#define VIDMM_AVL_H_SHIFT 5
#define VIDMM_AVL_H_MASK (0x7fu << VIDMM_AVL_H_SHIFT)

struct vidmm_avl {
    struct vidmm_policy_entry *root;
    struct vidmm_policy_entry *first;   /* in-order first: the next victim */
    struct vidmm_policy_entry *last;    /* in-order last: the smallest key[0] */
    uint64_t count;
};

/* a comes before b in the tree's order. */
static inline int vidmm_avl_before(const struct vidmm_policy_entry *a, const struct vidmm_policy_entry *b)
{
    if (a->key[0] != b->key[0])
        return a->key[0] > b->key[0];
    if (a->reserved != b->reserved)
        return a->reserved < b->reserved;
    if (a->key[1] != b->key[1])
        return a->key[1] < b->key[1];
    return (uintptr_t)a < (uintptr_t)b;
}

void vidmm_avl_insert(struct vidmm_avl *t, struct vidmm_policy_entry *e);
/* The same when e usually sorts after every node (a most recent entry in
 * a recency tree): O(1) amortised without a descent, else an insert. */
void vidmm_avl_insert_last(struct vidmm_avl *t, struct vidmm_policy_entry *e);
void vidmm_avl_remove(struct vidmm_avl *t, struct vidmm_policy_entry *e);
struct vidmm_policy_entry *vidmm_avl_next(const struct vidmm_policy_entry *e);
/* The first node, in order, for which past(node, ctx) holds, when past is
 * false on a prefix of the order and true on the rest; NULL if none.
 * O(log n). */
struct vidmm_policy_entry *vidmm_avl_search(const struct vidmm_avl *t,
                                            int (*past)(const struct vidmm_policy_entry *e, const void *ctx),
                                            const void *ctx);
/* Violations: parent links, stored heights, balance, strict in-order
 * order, cached first/last, count; visit(ctx, e) is called on every node
 * (NULL for none) and its return value added. */
uint64_t vidmm_avl_check(const struct vidmm_avl *t, uint64_t (*visit)(const void *ctx, const struct vidmm_policy_entry *e),
                         const void *ctx);

#endif
