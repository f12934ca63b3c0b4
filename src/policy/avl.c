/*
 * avl.c - intrusive AVL tree of policy entries (see avl.h).
 *
 * Parent links rather than a path stack: next() must step from any node
 * with no other context, and remove() must unlink a node vidmm hands back
 * without searching for it (its key may have been rewritten meanwhile).
 * The retrace after an insert or a remove stops at the first subtree that
 * comes out as high as it was, so most updates touch a few nodes only.
 */
#include "policy/avl.h"

#include <stddef.h>

typedef struct vidmm_policy_entry entry;

#define LEFT(n) ((entry *)(n)->link[0])
#define RIGHT(n) ((entry *)(n)->link[1])
#define PARENT(n) ((entry *)(n)->link[2])

static inline int height(const entry *n)
{
    return n ? (int)((n->flags & VIDMM_AVL_H_MASK) >> VIDMM_AVL_H_SHIFT) : 0;
}

static inline void set_height(entry *n, int h)
{
    n->flags = (n->flags & ~VIDMM_AVL_H_MASK) | ((uint32_t)h << VIDMM_AVL_H_SHIFT);
}

static inline void fix_height(entry *n)
{
    int l = height(LEFT(n)), r = height(RIGHT(n));
    set_height(n, 1 + (l > r ? l : r));
}

static void replace_child(struct vidmm_avl *t, entry *parent, entry *old, entry *new_child)
{
    if (!parent)
        t->root = new_child;
    else if (LEFT(parent) == old)
        parent->link[0] = new_child;
    else
        parent->link[1] = new_child;
}

static entry *rotate_left(struct vidmm_avl *t, entry *x)
{
    entry *y = RIGHT(x);
    x->link[1] = y->link[0];
    if (LEFT(y))
        LEFT(y)->link[2] = x;
    y->link[2] = x->link[2];
    replace_child(t, PARENT(x), x, y);
    y->link[0] = x;
    x->link[2] = y;
    fix_height(x);
    fix_height(y);
    return y;
}

static entry *rotate_right(struct vidmm_avl *t, entry *x)
{
    entry *y = LEFT(x);
    x->link[0] = y->link[1];
    if (RIGHT(y))
        RIGHT(y)->link[2] = x;
    y->link[2] = x->link[2];
    replace_child(t, PARENT(x), x, y);
    y->link[1] = x;
    x->link[2] = y;
    fix_height(x);
    fix_height(y);
    return y;
}

/* Walk up from n restoring heights and balance; stop as soon as a
 * subtree is as high as it was, since nothing above it changed. */
static void retrace(struct vidmm_avl *t, entry *n)
{
    while (n) {
        int old = height(n);
        int bf = height(LEFT(n)) - height(RIGHT(n));
        if (bf > 1) {
            if (height(LEFT(LEFT(n))) < height(RIGHT(LEFT(n))))
                rotate_left(t, LEFT(n));
            n = rotate_right(t, n);
        } else if (bf < -1) {
            if (height(RIGHT(RIGHT(n))) < height(LEFT(RIGHT(n))))
                rotate_right(t, RIGHT(n));
            n = rotate_left(t, n);
        } else {
            fix_height(n);
        }
        if (height(n) == old)
            return;
        n = PARENT(n);
    }
}

entry *vidmm_avl_next(const entry *n)
{
    if (RIGHT(n)) {
        n = RIGHT(n);
        while (LEFT(n))
            n = LEFT(n);
        return (entry *)n;
    }
    while (PARENT(n) && RIGHT(PARENT(n)) == n)
        n = PARENT(n);
    return PARENT(n);
}

entry *vidmm_avl_search(const struct vidmm_avl *t, int (*past)(const entry *, const void *), const void *ctx)
{
    entry *n = t->root, *found = NULL;
    while (n) {
        if (past(n, ctx)) {
            found = n;
            n = LEFT(n);
        } else {
            n = RIGHT(n);
        }
    }
    return found;
}

static entry *avl_prev(const entry *n)
{
    if (LEFT(n)) {
        n = LEFT(n);
        while (RIGHT(n))
            n = RIGHT(n);
        return (entry *)n;
    }
    while (PARENT(n) && LEFT(PARENT(n)) == n)
        n = PARENT(n);
    return PARENT(n);
}

void vidmm_avl_insert(struct vidmm_avl *t, entry *e)
{
    entry *p = NULL, *n = t->root;
    int left = 0, leftmost = 1, rightmost = 1;
    while (n) {
        p = n;
        left = vidmm_avl_before(e, n);
        leftmost &= left;
        rightmost &= !left;
        n = left ? LEFT(n) : RIGHT(n);
    }
    e->link[0] = e->link[1] = NULL;
    e->link[2] = p;
    set_height(e, 1);
    if (!p)
        t->root = e;
    else if (left)
        p->link[0] = e;
    else
        p->link[1] = e;
    if (leftmost)
        t->first = e;
    if (rightmost)
        t->last = e;
    t->count++;
    if (p)
        retrace(t, p);
}

void vidmm_avl_insert_last(struct vidmm_avl *t, entry *e)
{
    entry *p = t->last;
    if (!p || !vidmm_avl_before(p, e)) {
        vidmm_avl_insert(t, e);
        return;
    }
    /* The in-order last node has no right child: e goes there, and only
     * the right spine, which such appends keep in cache, is retraced. */
    e->link[0] = e->link[1] = NULL;
    e->link[2] = p;
    set_height(e, 1);
    p->link[1] = e;
    t->last = e;
    t->count++;
    retrace(t, p);
}

void vidmm_avl_remove(struct vidmm_avl *t, entry *z)
{
    entry *fix;
    if (t->first == z)
        t->first = vidmm_avl_next(z);
    if (t->last == z)
        t->last = avl_prev(z);
    if (LEFT(z) && RIGHT(z)) {
        /* z's in-order successor y (no left child) takes z's place. */
        entry *y = RIGHT(z);
        while (LEFT(y))
            y = LEFT(y);
        if (PARENT(y) == z) {
            fix = y;
        } else {
            fix = PARENT(y);
            fix->link[0] = y->link[1];
            if (RIGHT(y))
                RIGHT(y)->link[2] = fix;
            y->link[1] = z->link[1];
            RIGHT(z)->link[2] = y;
        }
        y->link[0] = z->link[0];
        LEFT(z)->link[2] = y;
        y->link[2] = z->link[2];
        replace_child(t, PARENT(z), z, y);
        set_height(y, height(z)); /* what the retrace compares against */
    } else {
        entry *child = LEFT(z) ? LEFT(z) : RIGHT(z);
        fix = PARENT(z);
        if (child)
            child->link[2] = z->link[2];
        replace_child(t, PARENT(z), z, child);
    }
    t->count--;
    z->link[0] = z->link[1] = z->link[2] = NULL;
    set_height(z, 0);
    retrace(t, fix);
}

/* Returns the real height of the subtree, or -1 once the node budget is
 * spent (a corrupted tree with a cycle must not recurse forever). */
static int check_subtree(const entry *n, const entry *parent, uint64_t *budget, uint64_t *bad,
                         uint64_t (*visit)(const void *, const entry *), const void *ctx)
{
    if (!n)
        return 0;
    if (!*budget) {
        (*bad)++;
        return -1;
    }
    (*budget)--;
    *bad += PARENT(n) != parent;
    if (visit)
        *bad += visit(ctx, n);
    int l = check_subtree(LEFT(n), n, budget, bad, visit, ctx);
    int r = check_subtree(RIGHT(n), n, budget, bad, visit, ctx);
    if (l < 0 || r < 0)
        return -1;
    int h = 1 + (l > r ? l : r);
    *bad += h != height(n);
    *bad += l - r > 1 || r - l > 1;
    return h;
}

uint64_t vidmm_avl_check(const struct vidmm_avl *t, uint64_t (*visit)(const void *, const entry *), const void *ctx)
{
    uint64_t bad = 0, budget = t->count, n = 0;
    const entry *first = t->root, *last = t->root, *prev = NULL;
    bad += t->root && PARENT(t->root) != NULL;
    if (check_subtree(t->root, NULL, &budget, &bad, visit, ctx) < 0)
        return bad;
    bad += budget != 0; /* fewer nodes than counted */
    while (first && LEFT(first))
        first = LEFT(first);
    while (last && RIGHT(last))
        last = RIGHT(last);
    bad += first != t->first;
    bad += last != t->last;
    for (const entry *e = first; e && n <= t->count; prev = e, e = vidmm_avl_next(e), n++)
        bad += prev && !vidmm_avl_before(prev, e);
    bad += n != t->count;
    return bad;
}
