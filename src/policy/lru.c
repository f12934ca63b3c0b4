/*
 * lru.c - vidmm_policy_lru: least recently used first, within priority
 * classes (the default eviction policy).
 *
 * Rule.  Priorities fall into five classes: below LOW, below NORMAL, below
 * HIGH, below MAXIMUM, and MAXIMUM and above ("soft-pinned": evicted only
 * when nothing else is left).  A segment's eviction order is the lowest
 * class first and, inside a class, the least recently referenced first.
 * This is WDDM's documented rule: priority decides, recency breaks ties.
 *
 * Structure.  Per segment, one intrusive doubly linked list per class
 * through entry->link[0] (towards the LRU end) and link[1] (towards the
 * MRU end); the head is the next victim.  insert and touch append at the
 * MRU end, so a list is in call order, which is last_use order because the
 * reference clock never runs backwards (entries referenced at the same
 * clock stay in call order).  Every callback is O(1); first() and the
 * step from one class to the next look at no more than the five heads.
 *
 * Private fields: link[0..1] list links; key[0] the size counted in the
 * segment's byte total; flags = RESIDENT | class | the segment id the
 * entry was filed under (policy_int.h), so remove and next never depend
 * on public fields vidmm may have rewritten meanwhile (a new priority is
 * picked up at the next touch, which moves the entry to its new class).
 *
 * Callbacks must not fail, so a contract breach (touching an entry that
 * is not resident, inserting one twice, a segment id out of range) is
 * absorbed without corrupting the lists and counted; check() reports the
 * count next to the structural violations so tests see it.
 */
#include "policy/policy_int.h"

#include <stddef.h>
#include <string.h>

typedef struct vidmm_policy_entry entry;

struct lru_list {
    entry *head; /* next victim */
    entry *tail; /* most recently used */
    uint64_t count;
};

struct lru_seg {
    struct lru_list cls[VIDMM_POLICY_CLASSES];
    uint64_t count;
    uint64_t bytes;
};

struct lru_state {
    struct vidmm_host_allocator ha; /* a copy: destroy() must not depend on the caller's table */
    size_t alloc_size;
    uint32_t segment_count;
    uint64_t misuse;                /* contract breaches absorbed by callbacks */
    struct lru_seg seg[];
};

#define PREV(e) ((entry *)(e)->link[0])
#define NEXT(e) ((entry *)(e)->link[1])

static void list_append(struct lru_list *l, entry *e)
{
    e->link[0] = l->tail;
    e->link[1] = NULL;
    if (l->tail)
        l->tail->link[1] = e;
    else
        l->head = e;
    l->tail = e;
    l->count++;
}

static void list_unlink(struct lru_list *l, entry *e)
{
    if (PREV(e))
        PREV(e)->link[1] = e->link[1];
    else
        l->head = NEXT(e);
    if (NEXT(e))
        NEXT(e)->link[0] = e->link[0];
    else
        l->tail = PREV(e);
    e->link[0] = e->link[1] = NULL;
    l->count--;
}

static vidmm_status lru_create(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **out)
{
    size_t size = 0;
    vidmm_status st = vidmm_policy_state_alloc(ha, segment_count, sizeof(struct lru_state), sizeof(struct lru_seg),
                                               _Alignof(struct lru_state), out, &size);
    if (st < 0)
        return st;
    struct lru_state *s = *out;
    s->ha = *ha;
    s->alloc_size = size;
    s->segment_count = segment_count;
    return VIDMM_OK;
}

static void lru_destroy(void *state)
{
    struct lru_state *s = state;
    if (!s)
        return;
    struct vidmm_host_allocator ha = s->ha;
    ha.free(ha.user_data, s, s->alloc_size, _Alignof(struct lru_state));
}

static void lru_remove_resident(struct lru_state *s, entry *e)
{
    struct lru_seg *g = &s->seg[vidmm_policy_flags_seg(e->flags)];
    list_unlink(&g->cls[vidmm_policy_flags_class(e->flags)], e);
    g->count--;
    g->bytes -= e->key[0];
    e->flags = 0;
    e->key[0] = 0;
}

static void lru_file(struct lru_state *s, entry *e, uint32_t seg)
{
    unsigned c = vidmm_policy_class(e->priority);
    struct lru_seg *g = &s->seg[seg];
    e->flags = VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(c) | vidmm_policy_flags_make_seg(seg);
    e->key[0] = e->size; /* the size counted in g->bytes, in case vidmm rewrites size */
    list_append(&g->cls[c], e);
    g->count++;
    g->bytes += e->size;
}

static void lru_insert(void *state, entry *e)
{
    struct lru_state *s = state;
    if (e->flags & VIDMM_POLICY_F_RESIDENT) { /* inserted twice: keep one filing */
        s->misuse++;
        lru_remove_resident(s, e);
    }
    if (e->segment_id >= s->segment_count) {
        s->misuse++;
        return;
    }
    lru_file(s, e, e->segment_id);
}

static void lru_touch(void *state, entry *e)
{
    struct lru_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT)) {
        s->misuse++;
        return;
    }
    uint32_t seg = vidmm_policy_flags_seg(e->flags);
    unsigned c = vidmm_policy_class(e->priority);
    struct lru_list *l = &s->seg[seg].cls[vidmm_policy_flags_class(e->flags)];
    if (l->tail == e && c == vidmm_policy_flags_class(e->flags))
        return; /* already the most recent of its class */
    lru_remove_resident(s, e);
    lru_file(s, e, seg);
}

static void lru_remove(void *state, entry *e, enum vidmm_policy_remove_reason why)
{
    struct lru_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT)) {
        /* A DESTROYED entry may never have been inserted; anything else is a breach. */
        if (why != VIDMM_POLICY_DESTROYED)
            s->misuse++;
        return;
    }
    lru_remove_resident(s, e);
}

static entry *lru_class_head(const struct lru_seg *g, unsigned from)
{
    for (unsigned c = from; c < VIDMM_POLICY_CLASSES; c++)
        if (g->cls[c].head)
            return g->cls[c].head;
    return NULL;
}

static entry *lru_first(void *state, uint32_t segment_id)
{
    struct lru_state *s = state;
    if (segment_id >= s->segment_count)
        return NULL;
    return lru_class_head(&s->seg[segment_id], 0);
}

static entry *lru_next(void *state, const entry *e)
{
    struct lru_state *s = state;
    if (!(e->flags & VIDMM_POLICY_F_RESIDENT))
        return NULL;
    if (NEXT(e))
        return NEXT(e);
    return lru_class_head(&s->seg[vidmm_policy_flags_seg(e->flags)], vidmm_policy_flags_class(e->flags) + 1);
}

static int lru_check(const void *state)
{
    const struct lru_state *s = state;
    uint64_t bad = s->misuse;
    for (uint32_t i = 0; i < s->segment_count; i++) {
        const struct lru_seg *g = &s->seg[i];
        uint64_t count = 0, bytes = 0;
        for (unsigned c = 0; c < VIDMM_POLICY_CLASSES; c++) {
            const struct lru_list *l = &g->cls[c];
            const entry *prev = NULL;
            uint64_t n = 0;
            bad += (l->head == NULL) != (l->tail == NULL);
            bad += l->head && PREV(l->head) != NULL;
            /* Bounded by the stored count so a cycle cannot hang the walk. */
            for (const entry *e = l->head; e && n <= l->count; prev = e, e = NEXT(e), n++) {
                bad += PREV(e) != prev;
                bad += e->flags != (VIDMM_POLICY_F_RESIDENT | vidmm_policy_flags_make_class(c) |
                                    vidmm_policy_flags_make_seg(i));
                bytes += e->key[0];
            }
            bad += prev != l->tail;
            bad += n != l->count;
            count += n;
        }
        bad += count != g->count;
        bad += bytes != g->bytes;
    }
    return bad > INT32_MAX ? INT32_MAX : (int)bad;
}

const struct vidmm_eviction_policy vidmm_policy_lru = {
    "lru", lru_create, lru_destroy, lru_insert, lru_touch, lru_remove, lru_first, lru_next, lru_check
};
