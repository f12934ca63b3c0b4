/*
 * objtab.h - a typed handle table for small kernel-style objects
 * (devices, contexts, paging queues): internal, never installed.
 *
 * Handles have the layout of allocation handles: (type << 56) |
 * (adapter salt << 40) | (16-bit generation << 24) | slot.  A slot's
 * generation is bumped on every release; a slot whose generation would
 * wrap is retired for good instead of being reused, so a stale handle can
 * never name a later object, however many times its slot was recycled.
 */
#ifndef VIDMM_OBJTAB_H
#define VIDMM_OBJTAB_H

#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stdint.h>

struct vidmm_objtab {
    uint32_t type;               /* VIDMM_HANDLE_TYPE_* of every handle */
    uint32_t salt;               /* the adapter's salt */
    void **obj;                  /* slot -> object, NULL when free */
    uint16_t *gen;               /* slot -> current generation (1..0xFFFF) */
    uint32_t *next_free;         /* free-list links */
    uint32_t cap, used;          /* slots allocated / ever handed out */
    uint32_t free_head;          /* UINT32_MAX = none */
    uint32_t live, retired;
    uint32_t max_slots;          /* the table never grows beyond */
};

void vidmm_objtab_init(struct vidmm_objtab *t, uint32_t type, uint32_t salt);
/* At most max slots (default: the 24 bits of a handle's slot field);
 * a full table answers VIDMM_E_BUSY. */
void vidmm_objtab_set_limit(struct vidmm_objtab *t, uint32_t max);
/* Would an add answer VIDMM_E_BUSY (no free slot, at the limit)? */
int vidmm_objtab_full(const struct vidmm_objtab *t);
void vidmm_objtab_fini(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha);
/* Take a slot for obj; VIDMM_E_NO_HOST_MEMORY when the host allocator
 * refuses the growth, VIDMM_E_BUSY when the table is at its limit. */
vidmm_status vidmm_objtab_add(struct vidmm_objtab *t, const struct vidmm_host_allocator *ha, void *obj,
                              uint64_t *handle);
/* The object of a live handle of this table's type, or NULL. */
void *vidmm_objtab_get(const struct vidmm_objtab *t, uint64_t handle);
/* Release a live handle's slot (the generation moves on). */
void vidmm_objtab_remove(struct vidmm_objtab *t, uint64_t handle);
/* Violations of the table's invariants (free list, counters). */
int vidmm_objtab_check(const struct vidmm_objtab *t);

#endif
