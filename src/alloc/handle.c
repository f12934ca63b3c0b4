/*
 * handle.c - the adapter's allocation handle table.
 *
 * A handle is (type << 56) | (adapter salt << 40) | (generation << 24) |
 * slot.  Slots are reused through a free list, and the generation is
 * bumped on every release, so a stale handle - or one of another object
 * type - never reaches a live object; a slot whose generation would wrap
 * is retired instead of reused.  The 16-bit salt is derived from the
 * adapter's address at open, so a handle of one adapter is rejected by
 * another (1 chance in 65536 of two adapters sharing a salt).  Lookups are
 * O(1); the table grows geometrically through the host allocator.
 */
#include "model/objects.h"
#include "alloc/alloc.h"

#include <string.h>

#define GEN_MASK 0xFFFFu
#define MAX_SLOTS (1u << 24)
#define ALLOC_CHUNK 64u   /* allocation objects per host block */

static vidmm_status grow(struct vidmm_adapter *a)
{
    uint32_t cap = a->slot_cap ? a->slot_cap * 2 : 64;
    if (cap > MAX_SLOTS)
        cap = MAX_SLOTS;
    if (cap <= a->slot_cap)
        return VIDMM_E_NO_HOST_MEMORY; /* 16 M live allocations per adapter */
    struct vidmm_allocation **n = vidmm_halloc(a->ha, VIDMM_SITE_HANDLE_SLOTS, cap * sizeof(*n), _Alignof(struct vidmm_allocation *));
    if (!n)
        return VIDMM_E_NO_HOST_MEMORY;
    if (a->slots)
        memcpy(n, a->slots, a->slot_cap * sizeof(*n));
    memset(n + a->slot_cap, 0, (cap - a->slot_cap) * sizeof(*n));
    vidmm_hfree(a->ha, a->slots, a->slot_cap * sizeof(*n), _Alignof(struct vidmm_allocation *));
    a->slots = n;
    a->slot_cap = cap;
    return VIDMM_OK;
}

vidmm_status vidmm_handle_new(struct vidmm_adapter *a, struct vidmm_allocation **out, vidmm_handle *h)
{
    VIDMM_ASSERT_LOCKED(a);
    uint32_t idx;
    struct vidmm_allocation *al;
    if (a->free_head != UINT32_MAX) {
        idx = a->free_head;
        al = a->slots[idx];
        a->free_head = al->next_free;
        uint32_t gen = al->generation;
        memset(al, 0, sizeof(*al));
        al->generation = gen;
    } else {
        if (a->slot_used == a->slot_cap) {
            vidmm_status st = grow(a);
            if (st < 0)
                return st;
        }
        if (a->slot_used % ALLOC_CHUNK == 0) {
            /* Allocation objects come in chunks: the ones created together
             * sit together, which keeps walks over lists of them (make-
             * resident, residency checks) in few cache lines and pages. */
            struct vidmm_allocation *chunk =
                vidmm_hzalloc(a->ha, VIDMM_SITE_HANDLE_ALLOC_CHUNK, ALLOC_CHUNK * sizeof(*chunk), _Alignof(struct vidmm_allocation));
            if (!chunk)
                return VIDMM_E_NO_HOST_MEMORY;
            for (uint32_t k = 0; k < ALLOC_CHUNK; k++)
                a->slots[a->slot_used + k] = &chunk[k];
        }
        idx = a->slot_used++;
        al = a->slots[idx];
        al->generation = 1;
    }
    al->live = 1;
    al->next_free = UINT32_MAX;
    a->live++;
    *out = al;
    *h = vidmm_handle_make(a, idx, al->generation);
    return VIDMM_OK;
}

struct vidmm_allocation *vidmm_handle_get(const struct vidmm_adapter *a, vidmm_handle h)
{
    struct vidmm_allocation *al = vidmm_handle_get_any(a, h);
    return al && !al->zombie ? al : NULL;   /* a zombie (destroyed while in use) is gone for the API */
}

struct vidmm_allocation *vidmm_handle_get_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process)
{
    struct vidmm_allocation *al = vidmm_handle_get(a, h);
    return al && (!al->private_process || al->private_process == process) ? al : NULL;
}

struct vidmm_allocation *vidmm_handle_get_any(const struct vidmm_adapter *a, vidmm_handle h)
{
    if ((h >> 56) != VIDMM_HANDLE_TYPE_ALLOCATION || ((h >> 40) & 0xFFFFu) != a->handle_salt)
        return NULL;
    uint32_t idx = (uint32_t)h & (MAX_SLOTS - 1);
    uint32_t gen = (uint32_t)(h >> 24) & GEN_MASK;
    if (idx >= a->slot_used)
        return NULL;
    struct vidmm_allocation *al = a->slots[idx];
    if (!al || !al->live || al->generation != gen)
        return NULL;
    return al;
}

vidmm_handle vidmm_handle_make(const struct vidmm_adapter *a, uint32_t idx, uint32_t generation)
{
    return ((vidmm_handle)VIDMM_HANDLE_TYPE_ALLOCATION << 56) | ((vidmm_handle)a->handle_salt << 40) |
           ((vidmm_handle)generation << 24) | idx;
}

void vidmm_handle_release(struct vidmm_adapter *a, vidmm_handle h)
{
    uint32_t idx = (uint32_t)h & (MAX_SLOTS - 1);
    struct vidmm_allocation *al = a->slots[idx];
    al->live = 0;
    a->live--;
    if (al->generation == GEN_MASK) {
        /* The next generation would repeat an old one: retire the slot
         * for good, so no stale handle ever names a later allocation. */
        al->retired = 1;
        a->slots_retired++;
        return;
    }
    al->generation++;
    al->next_free = a->free_head;
    a->free_head = idx;
}

void vidmm_handle_table_fini(struct vidmm_adapter *a)
{
    for (uint32_t i = 0; i < a->slot_used; i += ALLOC_CHUNK)
        vidmm_hfree(a->ha, a->slots[i], ALLOC_CHUNK * sizeof(struct vidmm_allocation),
                    _Alignof(struct vidmm_allocation));
    vidmm_hfree(a->ha, a->slots, a->slot_cap * sizeof(*a->slots), _Alignof(struct vidmm_allocation *));
    a->slots = NULL;
    a->slot_cap = a->slot_used = 0;
}
