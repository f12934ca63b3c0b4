/*
 * physbuf.c - every physical-mode command buffer vidmm has patched and
 * submitted, adapter-wide, keyed by its host address range.
 *
 * A physical-mode buffer is the caller's host memory: vidmm's patch op
 * writes segment addresses into it, and the engine reads it until the
 * submission's fence passes (vidmm/submit.h).  Two promises rest on
 * knowing exactly which buffers are in flight and what each holds:
 *
 *   BUSY     a submission whose buffer overlaps one the GPU may still
 *            read is refused (VIDMM_E_BUSY) before anything is patched,
 *            whichever context or process submitted either: a patch
 *            would change bytes the engine has not read yet and point
 *            the queued work at the new submitter's allocations.
 *   REUSED   a buffer marked VIDMM_SUBMIT_REUSED keeps a patch location
 *            only when its last patch was for the same context, with the
 *            same allocation at that list index, and that allocation is
 *            still at the (segment, offset) patched; anything else is
 *            patched again, so a buffer never carries one context's
 *            addresses into another context's work.
 *
 * Identity is the host range: every process of an adapter lives in the
 * one address space of the library's caller (a daemon client's buffer is
 * a copy in the daemon's), so one table serves the whole adapter.
 *
 * The table holds one entry per known buffer - its range, the context and
 * fence of its last submission, the allocation handles and packed
 * addresses it was patched with - in an AVL tree ordered by start address
 * (policy/avl.h; key[0] = ~start, as that tree sorts key[0] descending).
 * Entries never overlap: a submission drops the idle entries its range
 * overlaps when it commits.  So the entries overlapping [s, e) are those
 * from the first one that ends after s, while they start before e:
 * O(log n + overlaps), with no capacity limit.
 *
 * Each entry is on one of two lists: in flight (its fence not seen to
 * pass) or idle, oldest first.  A claim first moves the entries whose
 * fence passed to the idle list - O(in flight), as the retirement of the
 * submission records is.  In-flight entries are never dropped (their
 * context goes only once its work finished); idle ones beyond
 * PHYSBUF_IDLE_KEEP are dropped oldest first: forgetting an idle buffer
 * only costs its next REUSED submission a full patch.
 *
 * Host memory: the table at the first physical submission (kept until
 * the adapter closes), then per new buffer an entry, and per buffer the
 * handle/address lists when they must grow - all obtained by the claim,
 * before the submission changes anything.  The commit allocates nothing.
 *
 * Locking: the adapter lock throughout; context fences are read under
 * the fence lock (the driver signals them from its threads).
 */
#include "submit/physbuf.h"

#include "fence/inflight.h"
#include "policy/avl.h"

#include <stdio.h>
#include <string.h>

/* Idle buffers remembered for REUSED submissions (in-flight ones are
 * all kept, however many). */
#define PHYSBUF_IDLE_KEEP 256u

#define PACK_ADDR(seg, off) (((uint64_t)(seg) << 56) | (off))

struct vidmm_physbuf {
    struct vidmm_policy_entry node;     /* first member: the tree link */
    uintptr_t start;
    uint32_t size;
    uint32_t count;                     /* allocation-list entries of its last patch */
    uint32_t cap;                       /* lists: cap handles, then cap packed addresses */
    int inflight;                       /* on the in-flight list, else on the idle one */
    struct vidmm_context *ctx;          /* of its last submission */
    uint64_t fence;                     /* that submission's context fence value */
    struct vidmm_physbuf *prev, *next;  /* in its list */
    uint64_t *lists;
};

struct pb_list {
    struct vidmm_physbuf *first, *last;
    uint64_t count;
};

struct vidmm_physbuf_table {
    struct vidmm_avl tree;
    struct pb_list inflight, idle;
};

/* The adapter's table (NULL: none yet, or the adapter is closing). */
static struct vidmm_physbuf_table *pb_table(const struct vidmm_adapter *a)
{
    const struct vidmm_submit_state *s = a->sub;
    return s ? s->physbufs : NULL;
}

static size_t lists_bytes(uint32_t cap)
{
    return (size_t)cap * 2u * sizeof(uint64_t);
}

static struct vidmm_physbuf *pb_of(const struct vidmm_policy_entry *n)
{
    return (struct vidmm_physbuf *)n;
}

static void pb_append(struct pb_list *l, struct vidmm_physbuf *e)
{
    e->next = NULL;
    e->prev = l->last;
    if (l->last)
        l->last->next = e;
    else
        l->first = e;
    l->last = e;
    l->count++;
}

static void pb_unlink(struct pb_list *l, struct vidmm_physbuf *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->first = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->last = e->prev;
    e->prev = e->next = NULL;
    l->count--;
}

static void pb_free(struct vidmm_adapter *a, struct vidmm_physbuf *e)
{
    if (!e)
        return;
    vidmm_hfree(a->ha, e->lists, lists_bytes(e->cap), _Alignof(uint64_t));
    vidmm_hfree(a->ha, e, sizeof(*e), _Alignof(struct vidmm_physbuf));
}

static void pb_drop(struct vidmm_adapter *a, struct vidmm_physbuf_table *t, struct vidmm_physbuf *e)
{
    vidmm_avl_remove(&t->tree, &e->node);
    pb_unlink(e->inflight ? &t->inflight : &t->idle, e);
    pb_free(a, e);
}

static int ends_after(const struct vidmm_policy_entry *n, const void *ctx)
{
    const struct vidmm_physbuf *e = pb_of(n);
    return e->start + e->size > *(const uintptr_t *)ctx;
}

/* The first entry that may overlap a range starting at start. */
static struct vidmm_physbuf *first_ending_after(const struct vidmm_physbuf_table *t, uintptr_t start)
{
    struct vidmm_policy_entry *n = vidmm_avl_search(&t->tree, ends_after, &start);
    return n ? pb_of(n) : NULL;
}

static struct vidmm_physbuf *pb_next(const struct vidmm_physbuf *e)
{
    struct vidmm_policy_entry *n = vidmm_avl_next(&e->node);
    return n ? pb_of(n) : NULL;
}

/* Move the entries whose fence passed to the idle list. */
static void pb_retire(struct vidmm_adapter *a, struct vidmm_physbuf_table *t)
{
    pthread_mutex_lock(&a->fence_lock);
    for (struct vidmm_physbuf *e = t->inflight.first, *nx; e; e = nx) {
        nx = e->next;
        if (e->ctx->fence_completed >= e->fence) {
            pb_unlink(&t->inflight, e);
            e->inflight = 0;
            pb_append(&t->idle, e);
        }
    }
    pthread_mutex_unlock(&a->fence_lock);
}

/* Drop the entries [start, start + size) overlaps, except keep.  They are
 * idle: the claim refused the submission otherwise. */
static void pb_drop_overlaps(struct vidmm_adapter *a, struct vidmm_physbuf_table *t, uintptr_t start,
                             uint32_t size, const struct vidmm_physbuf *keep)
{
    for (struct vidmm_physbuf *e = first_ending_after(t, start), *nx; e && e->start < start + size; e = nx) {
        nx = pb_next(e);
        if (e != keep && !VIDMM_BUG_ON_MSG(a, e->inflight, "physical buffer entry freed while a submission still uses it"))
            pb_drop(a, t, e);
    }
}

vidmm_status vidmm_physbuf_claim(struct vidmm_adapter *a, const void *buffer, uint32_t size, uint32_t count,
                                 struct vidmm_physbuf_claim *cl)
{
    memset(cl, 0, sizeof(*cl));
    uintptr_t start = (uintptr_t)buffer;
    if (size > UINTPTR_MAX - start)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "command buffer %p: %u bytes run past the end of the address space",
                          buffer, size);
    struct vidmm_submit_state *s = a->sub;
    if (!s->physbufs) {
        s->physbufs = vidmm_hzalloc(a->ha, VIDMM_SITE_SUBMIT_PHYSBUF_TABLE, sizeof(*s->physbufs),
                                    _Alignof(struct vidmm_physbuf_table));
        if (!s->physbufs)
            return VIDMM_E_NO_HOST_MEMORY;
    }
    struct vidmm_physbuf_table *t = s->physbufs;
    pb_retire(a, t);
    for (struct vidmm_physbuf *e = first_ending_after(t, start); e && e->start < start + size; e = pb_next(e)) {
        if (e->inflight)
            return vidmm_fail(VIDMM_E_BUSY,
                              "command buffer %p (%u bytes) overlaps %p (%u bytes), whose submission on context "
                              "0x%llx (fence %llu) has not finished",
                              buffer, size, (const void *)e->start, e->size, (unsigned long long)e->ctx->self,
                              (unsigned long long)e->fence);
        if (e->start == start && e->size == size)
            cl->entry = e;
    }
    cl->start = start;
    cl->size = size;
    cl->count = count;
    if (!cl->entry) {
        cl->fresh = vidmm_hzalloc(a->ha, VIDMM_SITE_SUBMIT_PHYSBUF_ENTRY, sizeof(*cl->fresh),
                                  _Alignof(struct vidmm_physbuf));
        if (!cl->fresh)
            return VIDMM_E_NO_HOST_MEMORY;
    }
    const struct vidmm_physbuf *e = cl->entry ? cl->entry : cl->fresh;
    if (count > e->cap) {
        cl->lists = vidmm_halloc(a->ha, VIDMM_SITE_SUBMIT_PHYSBUF_LISTS, lists_bytes(count), _Alignof(uint64_t));
        if (!cl->lists) {
            vidmm_physbuf_release(a, cl);
            return VIDMM_E_NO_HOST_MEMORY;
        }
        cl->lists_cap = count;
    }
    return VIDMM_OK;
}

int vidmm_physbuf_patched(const struct vidmm_physbuf_claim *cl, const struct vidmm_context *c, uint32_t k,
                          vidmm_handle allocation, const struct vidmm_allocation_list_entry *le)
{
    const struct vidmm_physbuf *e = cl->entry;
    return e && e->ctx == c && e->count == cl->count && k < e->count && e->lists[k] == allocation &&
           e->lists[e->cap + k] == PACK_ADDR(le->segment_id, le->segment_offset);
}

void vidmm_physbuf_commit(struct vidmm_adapter *a, struct vidmm_physbuf_claim *cl, struct vidmm_context *c,
                          uint64_t fence, const struct vidmm_submit_allocation *al,
                          const struct vidmm_allocation_list_entry *le)
{
    struct vidmm_physbuf_table *t = pb_table(a);
    struct vidmm_physbuf *e = cl->entry ? cl->entry : cl->fresh;
    pb_drop_overlaps(a, t, cl->start, cl->size, e);
    if (cl->fresh) {
        e->start = cl->start;
        e->size = cl->size;
        e->node.key[0] = ~(uint64_t)cl->start;   /* the tree sorts key[0] descending: ascending starts */
        vidmm_avl_insert(&t->tree, &e->node);
        cl->fresh = NULL;
    } else {
        pb_unlink(&t->idle, e);   /* idle: the claim refused the submission otherwise */
    }
    if (cl->lists) {
        vidmm_hfree(a->ha, e->lists, lists_bytes(e->cap), _Alignof(uint64_t));
        e->lists = cl->lists;
        e->cap = cl->lists_cap;
        cl->lists = NULL;
    }
    cl->entry = e;
    e->ctx = c;
    e->fence = fence;
    e->count = cl->count;
    for (uint32_t i = 0; i < cl->count; i++) {
        e->lists[i] = al[i].allocation;
        e->lists[e->cap + i] = PACK_ADDR(le[i].segment_id, le[i].segment_offset);
    }
    e->inflight = 1;
    pb_append(&t->inflight, e);
    while (t->idle.count > PHYSBUF_IDLE_KEEP)
        pb_drop(a, t, t->idle.first);
}

void vidmm_physbuf_release(struct vidmm_adapter *a, struct vidmm_physbuf_claim *cl)
{
    struct vidmm_physbuf_table *t = pb_table(a);
    if (cl->patched && t)
        pb_drop_overlaps(a, t, cl->start, cl->size, NULL);   /* their bytes may have changed */
    pb_free(a, cl->fresh);
    vidmm_hfree(a->ha, cl->lists, lists_bytes(cl->lists_cap), _Alignof(uint64_t));
    cl->fresh = NULL;
    cl->lists = NULL;
    cl->entry = NULL;
    cl->patched = 0;
}

void vidmm_physbuf_context_gone(struct vidmm_adapter *a, const struct vidmm_context *c)
{
    struct vidmm_physbuf_table *t = pb_table(a);
    if (!t)
        return;
    struct pb_list *lists[2] = { &t->inflight, &t->idle };
    for (int i = 0; i < 2; i++)
        for (struct vidmm_physbuf *e = lists[i]->first, *nx; e; e = nx) {
            nx = e->next;
            if (e->ctx == c)
                pb_drop(a, t, e);
        }
}

void vidmm_physbuf_fini(struct vidmm_adapter *a)
{
    struct vidmm_physbuf_table *t = pb_table(a);
    if (!t)
        return;
    while (t->inflight.first)
        pb_drop(a, t, t->inflight.first);
    while (t->idle.first)
        pb_drop(a, t, t->idle.first);
    vidmm_hfree(a->ha, t, sizeof(*t), _Alignof(struct vidmm_physbuf_table));
    struct vidmm_submit_state *s = a->sub;
    s->physbufs = NULL;
}

/* ---- the checker -------------------------------------------------------- */

struct pb_check {
    const struct vidmm_adapter *a;
    const struct vidmm_physbuf *prev;   /* in-order predecessor */
    char *msg;
    size_t n;
};

/* One entry, in tree order: its own fields, its context, no overlap
 * with the one before.  Fence lock held. */
static uint64_t pb_check_entry(struct pb_check *k, const struct vidmm_physbuf *e)
{
    uint64_t bad = 0;
    if (!e->size || e->count > e->cap || (e->cap && !e->lists) || e->node.key[0] != ~(uint64_t)e->start) {
        bad++;
        snprintf(k->msg, k->n, "command buffer %p: size %u, %u of %u list entries, key inconsistent",
                 (const void *)e->start, e->size, e->count, e->cap);
    }
    if (!e->ctx || vidmm_objtab_get(&k->a->contexts, e->ctx->self) != e->ctx ||
        e->ctx->mode != VIDMM_CONTEXT_PHYSICAL) {
        bad++;
        snprintf(k->msg, k->n, "command buffer %p: its context is not a live physical-mode context",
                 (const void *)e->start);
    } else if (!e->fence || e->fence > e->ctx->fence_submitted ||
               (!e->inflight && e->ctx->fence_completed < e->fence)) {
        bad++;
        snprintf(k->msg, k->n, "command buffer %p: fence %llu %s, context submitted %llu completed %llu",
                 (const void *)e->start, (unsigned long long)e->fence, e->inflight ? "in flight" : "idle",
                 (unsigned long long)e->ctx->fence_submitted, (unsigned long long)e->ctx->fence_completed);
    }
    if (k->prev && k->prev->start + k->prev->size > e->start) {
        bad++;
        snprintf(k->msg, k->n, "command buffers %p and %p overlap", (const void *)k->prev->start,
                 (const void *)e->start);
    }
    k->prev = e;
    return bad;
}

/* One list: links, flags and count. */
static int pb_check_list(const struct pb_list *l, int inflight, char *msg, size_t n)
{
    uint64_t count = 0;
    const struct vidmm_physbuf *prev = NULL;
    for (const struct vidmm_physbuf *e = l->first; e && count <= l->count; prev = e, e = e->next, count++)
        if (e->prev != prev || e->inflight != inflight) {
            snprintf(msg, n, "%s list: broken link or entry of the other list", inflight ? "in-flight" : "idle");
            return 1;
        }
    if (count != l->count || l->last != prev) {
        snprintf(msg, n, "%s list: %llu entries walked, %llu counted", inflight ? "in-flight" : "idle",
                 (unsigned long long)count, (unsigned long long)l->count);
        return 1;
    }
    return 0;
}

int vidmm_physbuf_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    const struct vidmm_physbuf_table *t = pb_table(a);
    if (!t)
        return 0;
    struct pb_check k = { a, NULL, msg, n };
    pthread_mutex_lock((pthread_mutex_t *)&a->fence_lock);
    uint64_t bad = vidmm_avl_check(&t->tree, NULL, NULL);
    if (bad)
        snprintf(msg, n, "command-buffer tree: %llu structural violations", (unsigned long long)bad);
    else   /* in order, so each entry is compared with its predecessor */
        for (const struct vidmm_physbuf *e = t->tree.first ? pb_of(t->tree.first) : NULL; e; e = pb_next(e))
            bad += pb_check_entry(&k, e);
    pthread_mutex_unlock((pthread_mutex_t *)&a->fence_lock);
    bad += (uint64_t)pb_check_list(&t->inflight, 1, msg, n);
    bad += (uint64_t)pb_check_list(&t->idle, 0, msg, n);
    if (t->inflight.count + t->idle.count != t->tree.count) {
        bad++;
        snprintf(msg, n, "%llu command buffers in the tree, %llu + %llu on the lists",
                 (unsigned long long)t->tree.count, (unsigned long long)t->inflight.count,
                 (unsigned long long)t->idle.count);
    }
    return bad > 1000 ? 1000 : (int)bad;
}
