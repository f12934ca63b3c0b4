/*
 * handle.c - allocation handles and allocation objects.
 *
 * Handles come from the adapter's typed handle table for allocations
 * (core/objtab.h), as every other object's do: (type << 56) | (adapter
 * salt << 40) | (generation << 24) | slot, with a slot whose generation
 * would wrap retired instead of reused, so a stale handle - or one of
 * another object type or adapter - never reaches a live object.
 *
 * The objects come in chunks of 64 and are reused through a free list:
 * allocations created together sit together, which keeps walks over lists
 * of them (make-resident, residency checks) in few cache lines and pages.
 * A released object goes back to the list; its memory is returned only
 * when the adapter closes.
 */
#include "model/objects.h"
#include "handle/handle.h"

#include <stdio.h>
#include <string.h>

#define ALLOC_CHUNK 64u   /* allocation objects per host block */

struct vidmm_alloc_chunk {
    struct vidmm_allocation obj[ALLOC_CHUNK];   /* first: 64-byte aligned with the block */
    struct vidmm_alloc_chunk *next;
};

static vidmm_status more_objects(struct vidmm_adapter *a)
{
    struct vidmm_alloc_chunk *c = vidmm_hzalloc(a->ha, VIDMM_SITE_HANDLE_ALLOC_CHUNK, sizeof(*c),
                                                _Alignof(struct vidmm_alloc_chunk));
    if (!c)
        return VIDMM_E_NO_HOST_MEMORY;
    c->next = a->alloc_pool.chunks;
    a->alloc_pool.chunks = c;
    /* Handed out in address order. */
    for (uint32_t k = ALLOC_CHUNK; k-- > 0;) {
        c->obj[k].pool_next = a->alloc_pool.free;
        a->alloc_pool.free = &c->obj[k];
    }
    return VIDMM_OK;
}

vidmm_status vidmm_handle_new(struct vidmm_adapter *a, struct vidmm_allocation **out, vidmm_handle *h)
{
    VIDMM_ASSERT_LOCKED(a);
    if (!a->alloc_pool.free) {
        vidmm_status st = more_objects(a);
        if (st < 0)
            return st;
    }
    struct vidmm_allocation *al = a->alloc_pool.free;
    if (VIDMM_BUG_ON_MSG(a, al->live, "handle new: the pooled allocation object of handle 0x%llx is still live",
                         (unsigned long long)al->self))
        return VIDMM_E_INTERNAL;
    uint64_t handle;
    vidmm_status st = vidmm_objtab_add(&a->allocations, a->ha, al, &handle);
    if (st < 0)
        return st == VIDMM_E_BUSY ? VIDMM_E_NO_HOST_MEMORY : st;   /* 16 M live allocations per adapter */
    a->alloc_pool.free = al->pool_next;
    uint16_t gen = al->handle_gen;   /* written by the table's add */
    memset(al, 0, sizeof(*al));
    al->handle_gen = gen;
    al->live = 1;
    *out = al;
    *h = handle;
    return VIDMM_OK;
}

struct vidmm_allocation *vidmm_handle_get(const struct vidmm_adapter *a, vidmm_handle h)
{
    if (VIDMM_HANDLE_TYPE(h) == VIDMM_HANDLE_TYPE_SHARED_ALLOCATION) {
        const struct vidmm_share_holder *sh = vidmm_objtab_get(&a->share_holders, h);
        return sh ? sh->share->al : NULL;   /* a holder keeps it alive: never a zombie */
    }
    struct vidmm_allocation *al = vidmm_handle_get_any(a, h);
    if (!al || al->zombie)
        return NULL;   /* a zombie (destroyed while in use) is gone for the API */
    /* A shared allocation whose creator let go: its own handle is gone
     * with that hold, only the openers' handles name it. */
    return al->shared && !al->share->holders->creator ? NULL : al;
}

struct vidmm_allocation *vidmm_handle_get_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process)
{
    if (VIDMM_HANDLE_TYPE(h) == VIDMM_HANDLE_TYPE_SHARED_ALLOCATION) {
        const struct vidmm_share_holder *sh = vidmm_share_holder_of(a, h);
        return sh && sh->process == process ? sh->share->al : NULL;
    }
    struct vidmm_allocation *al = vidmm_handle_get(a, h);
    return al && (!al->private_process || al->private_process == process) ? al : NULL;
}

struct vidmm_allocation *vidmm_handle_get_any(const struct vidmm_adapter *a, vidmm_handle h)
{
    return vidmm_objtab_get(&a->allocations, h);
}

struct vidmm_share_holder *vidmm_share_holder_of(const struct vidmm_adapter *a, vidmm_handle h)
{
    if (VIDMM_HANDLE_TYPE(h) == VIDMM_HANDLE_TYPE_SHARED_ALLOCATION)
        return vidmm_objtab_get(&a->share_holders, h);
    const struct vidmm_allocation *al = vidmm_objtab_get(&a->allocations, h);
    if (!al || !al->shared || al->zombie)
        return NULL;
    struct vidmm_share_holder *c = al->share->holders;   /* the creator's hold is kept first */
    return c && c->creator ? c : NULL;
}

vidmm_handle vidmm_share_handle_in(const struct vidmm_allocation *al, vidmm_handle process)
{
    if (!al->share)
        return al->self;
    for (const struct vidmm_share_holder *sh = al->share->holders; sh; sh = sh->next)
        if (sh->process == process)
            return sh->self;
    return al->self;
}

void vidmm_handle_release(struct vidmm_adapter *a, vidmm_handle h)
{
    struct vidmm_allocation *al = vidmm_objtab_get(&a->allocations, h);
    if (VIDMM_BUG_ON_MSG(a, !al || !al->live, "handle release: 0x%llx names no live allocation object",
                         (unsigned long long)h))
        return;
    vidmm_objtab_remove(&a->allocations, h);
    /* The name goes with the object: the next user of the slot starts unnamed. */
    if (al->name)
        vidmm_hfree(a->ha, al->name, al->name_size, 1);
    al->name = NULL;
    al->live = 0;
    al->pool_next = a->alloc_pool.free;
    a->alloc_pool.free = al;
}

void vidmm_handle_table_fini(struct vidmm_adapter *a)
{
    while (a->alloc_pool.chunks) {
        struct vidmm_alloc_chunk *c = a->alloc_pool.chunks;
        a->alloc_pool.chunks = c->next;
        vidmm_hfree(a->ha, c, sizeof(*c), _Alignof(struct vidmm_alloc_chunk));
    }
    a->alloc_pool.free = NULL;
    vidmm_objtab_fini(&a->allocations, a->ha);
}

int vidmm_handle_check(const struct vidmm_adapter *a, char *msg, size_t n)
{
    int e = 0;
    if (vidmm_objtab_check(&a->allocations)) {
        e++;
        snprintf(msg, n, "allocation handle table inconsistent");
    }
    uint64_t pooled = 0, objects = 0;
    for (const struct vidmm_alloc_chunk *c = a->alloc_pool.chunks; c; c = c->next)
        objects += ALLOC_CHUNK;
    for (const struct vidmm_allocation *al = a->alloc_pool.free; al && pooled <= objects; al = al->pool_next) {
        pooled++;
        if (al->live || al->busy || al->zombie) {
            e++;
            snprintf(msg, n, "a free allocation object is live, busy or deferred");
            break;
        }
    }
    if (pooled + a->allocations.live != objects) {
        e++;
        snprintf(msg, n, "%llu allocation objects, %llu free and %u live", (unsigned long long)objects,
                 (unsigned long long)pooled, a->allocations.live);
    }
    return e;
}
