/*
 * belady.c - vidmm_policy_belady: Belady's offline optimum, from hints.
 *
 * Rule.  Evict first the entry whose next reference is furthest in the
 * future: VIDMM_NEXT_USE_NEVER first, then by next_use descending.  Ties
 * go to the lower priority, then to the older last_use, then (so the
 * order is total and repeatable) to the lower entry address.  Priority is
 * only a tie-breaker: this policy is the yardstick a trace replay scores
 * the online policies against, not a policy to run a desktop with.  With
 * allocations of different sizes "furthest first" is Belady's rule, not a
 * proven byte optimum, so an online policy can occasionally come out
 * slightly ahead of it in paging bytes.
 *
 * Structure.  next_use changes on every touch, so each segment keeps its
 * resident entries in an intrusive AVL tree ordered by the rule above
 * (policy/avl.c: link[0..2], the height in flags).  insert, remove and
 * touch (remove + insert, skipped when the key did not change) are
 * O(log n) with no allocation; first() is O(1) from the cached first node
 * and next() is the in-order successor through the parent links (O(1)
 * amortised over a walk, O(log n) worst case).
 *
 * The key is snapshotted into the private fields when the entry is filed
 * (key[0] next_use, key[1] last_use, reserved priority), so the tree stays
 * ordered even if vidmm rewrites an entry's public fields before telling
 * the policy: it is re-keyed at its next touch.
 */
#include "policy/avl.h"
#include "policy/policy_int.h"

#include <stddef.h>
#include <string.h>

typedef struct vidmm_policy_entry entry;

struct bel_state {
    struct vidmm_host_allocator ha; /* a copy: destroy() must not depend on the caller's table */
    size_t alloc_size;
    uint32_t segment_count;
    uint64_t misuse;                /* contract breaches absorbed by callbacks */
    struct vidmm_avl seg[];
};

static vidmm_status bel_create(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **out)
{
    size_t size = 0;
    vidmm_status st = vidmm_policy_state_alloc(ha, segment_count, sizeof(struct bel_state), sizeof(struct vidmm_avl),
                                               _Alignof(struct bel_state), out, &size);
    if (st < 0)
        return st;
    struct bel_state *s = *out;
    s->ha = *ha;
    s->alloc_size = size;
    s->segment_count = segment_count;
    return VIDMM_OK;
}

static void bel_destroy(void *state)
{
    struct bel_state *s = state;
    if (!s)
        return;
    struct vidmm_host_allocator ha = s->ha;
    ha.free(ha.user_data, s, s->alloc_size, _Alignof(struct bel_state));
}

static void bel_file(struct bel_state *s, entry *e, uint32_t seg)
{
    e->key[0] = e->next_use;
    e->key[1] = e->last_use;
    e->reserved = e->priority;
    e->flags = VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(vidmm_policy_class(e->priority)) |
               vidmm_policy_flags_make_seg(seg);
    vidmm_avl_insert(&s->seg[seg], e);
}

static void bel_unfile(struct bel_state *s, entry *e)
{
    vidmm_avl_remove(&s->seg[vidmm_policy_flags_seg(e->flags)], e);
    e->flags = 0;
    e->key[0] = e->key[1] = 0;
    e->reserved = 0;
}

static void bel_insert(void *state, entry *e)
{
    struct bel_state *s = state;
    if (e->flags & VIDMM_POLICY_F_RESIDENT) { /* inserted twice: keep one filing */
        s->misuse++;
        bel_unfile(s, e);
    }
    if (e->segment_id >= s->segment_count) {
        s->misuse++;
        return;
    }
    bel_file(s, e, e->segment_id);
}

static void bel_touch(void *state, entry *e)
{
    struct bel_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT)) {
        s->misuse++;
        return;
    }
    if (e->key[0] == e->next_use && e->key[1] == e->last_use && e->reserved == e->priority)
        return;
    uint32_t seg = vidmm_policy_flags_seg(e->flags);
    bel_unfile(s, e);
    bel_file(s, e, seg);
}

static void bel_remove(void *state, entry *e, enum vidmm_policy_remove_reason why)
{
    struct bel_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT)) {
        /* A DESTROYED entry may never have been inserted; anything else is a breach. */
        if (why != VIDMM_POLICY_DESTROYED)
            s->misuse++;
        return;
    }
    bel_unfile(s, e);
}

static entry *bel_first(void *state, uint32_t segment_id)
{
    struct bel_state *s = state;
    return segment_id < s->segment_count ? s->seg[segment_id].first : NULL;
}

static entry *bel_next(void *state, const entry *e)
{
    (void)state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT))
        return NULL;
    return vidmm_avl_next(e);
}

/* Every node is resident, filed in this segment, keyed from its class. */
static uint64_t bel_visit(const void *ctx, const entry *e)
{
    uint32_t seg = *(const uint32_t *)ctx;
    uint32_t want = VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(vidmm_policy_class(e->reserved)) |
                    vidmm_policy_flags_make_seg(seg);
    return (e->flags & ~VIDMM_AVL_H_MASK) != want;
}

static int bel_check(const void *state)
{
    const struct bel_state *s = state;
    uint64_t bad = s->misuse;
    for (uint32_t i = 0; i < s->segment_count; i++)
        bad += vidmm_avl_check(&s->seg[i], bel_visit, &i);
    return bad > INT32_MAX ? INT32_MAX : (int)bad;
}

const struct vidmm_eviction_policy vidmm_policy_belady = {
    "belady", bel_create, bel_destroy, bel_insert, bel_touch, bel_remove, bel_first, bel_next, bel_check
};
