/*
 * objtab.h - the typed handle table every vidmm object is named through
 * (allocations, processes, devices, contexts, paging queues): internal,
 * never installed.
 *
 * Handles have one layout: (type << 56) | (adapter salt << 40) | (16-bit
 * generation << 24) | slot.  A slot's generation is bumped on every
 * release; a slot whose generation would wrap is retired for good instead
 * of being reused, so a stale handle can never name a later object,
 * however many times its slot was recycled.  A lookup reads the object
 * pointer and the generation (from a dense array, or from the object
 * itself: vidmm_objtab_set_object_generation); the free-list links are
 * apart, touched by add and remove only.
 */
#ifndef VIDMM_OBJTAB_H
#define VIDMM_OBJTAB_H

#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stdint.h>

/* The fields of a handle, by name: every place that builds or takes a
 * handle apart goes through these (nothing else shifts or masks one). */
#define VIDMM_HANDLE_TYPE_SHIFT 56
#define VIDMM_HANDLE_SALT_SHIFT 40
#define VIDMM_HANDLE_GEN_SHIFT  24
#define VIDMM_HANDLE_SLOT_MASK  0xFFFFFFull   /* 24 bits */
#define VIDMM_HANDLE_TYPE(h) ((uint32_t)((uint64_t)(h) >> VIDMM_HANDLE_TYPE_SHIFT))
#define VIDMM_HANDLE_SALT(h) ((uint32_t)((uint64_t)(h) >> VIDMM_HANDLE_SALT_SHIFT) & 0xFFFFu)
#define VIDMM_HANDLE_GEN(h)  ((uint32_t)((uint64_t)(h) >> VIDMM_HANDLE_GEN_SHIFT) & 0xFFFFu)
#define VIDMM_HANDLE_SLOT(h) ((uint32_t)((uint64_t)(h) & VIDMM_HANDLE_SLOT_MASK))
/* Generation and slot without type and salt: unique among one adapter's
 * objects of one type, over its whole life (what reports print). */
#define VIDMM_HANDLE_LOCAL(h) ((uint64_t)(h) & ((UINT64_C(1) << VIDMM_HANDLE_SALT_SHIFT) - 1))
#define VIDMM_HANDLE_MAKE(type, salt, gen, slot)                                                               \
    (((uint64_t)(type) << VIDMM_HANDLE_TYPE_SHIFT) | ((uint64_t)(salt) << VIDMM_HANDLE_SALT_SHIFT) |           \
     ((uint64_t)(gen) << VIDMM_HANDLE_GEN_SHIFT) | (uint64_t)(slot))

/* The library's handle types (VIDMM_HANDLE_TYPE of a handle). */
#define VIDMM_HANDLE_TYPE_ALLOCATION 1u
#define VIDMM_HANDLE_TYPE_PROCESS 2u
#define VIDMM_HANDLE_TYPE_DEVICE 3u
#define VIDMM_HANDLE_TYPE_CONTEXT 4u
#define VIDMM_HANDLE_TYPE_PAGING_QUEUE 5u
#define VIDMM_HANDLE_TYPE_PAGING_PROCESS 6u   /* only as the fault token of the system paging process */
#define VIDMM_HANDLE_TYPE_SHARED_ALLOCATION 7u /* an opener's handle of a shared allocation (vidmm/share.h) */

struct vidmm_objtab {
    uint32_t type;               /* VIDMM_HANDLE_TYPE_* of every handle */
    uint32_t salt;               /* the adapter's salt */
    void **obj;                  /* slot -> object, NULL when free */
    uint16_t *gen;               /* slot -> current generation (1..0xFFFF) */
    uint32_t *next_free;         /* free-list links (touched by add and remove only) */
    uint32_t cap, used;          /* slots allocated / ever handed out */
    uint32_t free_head;          /* UINT32_MAX = none */
    uint32_t live, retired;
    uint32_t max_slots;          /* the table never grows beyond */
    uint32_t obj_gen_off;        /* UINT32_MAX, or where each object keeps a copy of its generation */
    uint16_t site[3];            /* host allocation sites of obj, gen, next_free (vidmm_objtab_set_sites) */
};

void vidmm_objtab_init(struct vidmm_objtab *t, uint32_t type, uint32_t salt);
/* At most max slots (default: the 24 bits of a handle's slot field);
 * a full table answers VIDMM_E_BUSY. */
void vidmm_objtab_set_limit(struct vidmm_objtab *t, uint32_t max);
/* The three arrays' host allocation sites (core/alloc_sites.def), so an
 * OOM test can fail one table's growth apart from the others'; default
 * VIDMM_SITE_OBJTAB_*. */
void vidmm_objtab_set_sites(struct vidmm_objtab *t, unsigned objects, unsigned generations, unsigned free_links);
/* The largest limit vidmm_objtab_set_limit takes (a handle's 24-bit slot). */
#define VIDMM_OBJTAB_MAX_SLOTS ((uint32_t)VIDMM_HANDLE_SLOT_MASK + 1u)
/* Objects keep a copy of their slot's generation, a uint16_t at byte
 * offset off, and lookups compare that copy instead of the table's: a
 * lookup then reads the object pointer and a line of the object the
 * caller reads anyway (allocations: make-resident of a million-entry
 * table touches one table line per handle, not two). */
void vidmm_objtab_set_object_generation(struct vidmm_objtab *t, uint32_t off);
/* Would an add answer VIDMM_E_BUSY (no free slot, at the limit)? */
int vidmm_objtab_full(const struct vidmm_objtab *t);
void vidmm_objtab_fini(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha);
/* Take a slot for obj; VIDMM_E_NO_HOST_MEMORY when the host allocator
 * refuses the growth, VIDMM_E_BUSY when the table is at its limit. */
vidmm_status vidmm_objtab_add(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha, void *obj,
                              uint64_t *handle);
/* Release a live handle's slot (the generation moves on). */
void vidmm_objtab_remove(struct vidmm_objtab *t, uint64_t handle);
/* Violations of the table's invariants (free list, counters). */
int vidmm_objtab_check(const struct vidmm_objtab *t);

/* The object of a live handle of this table's type, or NULL.  Inline:
 * every public call that names an object starts here. */
static inline void *vidmm_objtab_get(const struct vidmm_objtab *t, uint64_t h)
{
    uint32_t s = VIDMM_HANDLE_SLOT(h);
    if (VIDMM_HANDLE_TYPE(h) != t->type || VIDMM_HANDLE_SALT(h) != t->salt || s >= t->used)
        return NULL;
    void *o = t->obj[s];
    if (!o)
        return NULL;
    uint16_t g = t->obj_gen_off != UINT32_MAX ? *(const uint16_t *)((const char *)o + t->obj_gen_off) : t->gen[s];
    return g == VIDMM_HANDLE_GEN(h) ? o : NULL;
}

/* The object in slot s (< t->used), or NULL. */
static inline void *vidmm_objtab_at(const struct vidmm_objtab *t, uint32_t s)
{
    return s < t->used ? t->obj[s] : NULL;
}

/* Walk the live objects in slot order: *it starts at 0; it - 1 is the
 * slot of the object returned.  The body may remove it. */
static inline void *vidmm_objtab_next(const struct vidmm_objtab *t, uint32_t *it)
{
    while (*it < t->used) {
        void *o = t->obj[(*it)++];
        if (o)
            return o;
    }
    return NULL;
}

#endif
