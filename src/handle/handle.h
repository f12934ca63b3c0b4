/*
 * handle.h - the allocation handle table (internal, never installed).
 *
 * Handles name allocations to callers; the table maps a handle to its
 * object, zombies (destroyed while in use) included, and answers which
 * hold of a shared allocation a process's handle names.
 */
#ifndef VIDMM_HANDLE_HANDLE_H
#define VIDMM_HANDLE_HANDLE_H

#include "model/objects.h"

vidmm_status vidmm_handle_new(struct vidmm_adapter *a, struct vidmm_allocation **out, vidmm_handle *h);

void vidmm_handle_release(struct vidmm_adapter *a, vidmm_handle h);

struct vidmm_allocation *vidmm_handle_get(const struct vidmm_adapter *a, vidmm_handle h);

/* The same, zombies included: for VA descriptors, which keep naming an
 * allocation destroyed while in use until it is released. */
struct vidmm_allocation *vidmm_handle_get_any(const struct vidmm_adapter *a, vidmm_handle h);


/* vidmm_handle_get as seen from a process's call: another process's
 * private allocation is not a handle there (D38). */
struct vidmm_allocation *vidmm_handle_get_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process);

/* The hold a handle names on a shared allocation (an opener's handle,
 * or the creator's while it holds), else NULL. */
struct vidmm_share_holder *vidmm_share_holder_of(const struct vidmm_adapter *a, vidmm_handle h);

/* The handle process names al by: its holder's handle when al is
 * shared (what VA queries report), else al's own. */
vidmm_handle vidmm_share_handle_in(const struct vidmm_allocation *al, vidmm_handle process);

void vidmm_handle_table_fini(struct vidmm_adapter *a);
/* The table and the object pool agree (for vidmm_adapter_check). */
int vidmm_handle_check(const struct vidmm_adapter *a, char *msg, size_t n);

/* The live allocations of the adapter (deferred destructions included),
 * in slot order - the one walk of the handle table outside handle.c:
 *
 *     uint32_t it = 0;
 *     for (struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;)
 *
 * it - 1 is al's slot.  The body may destroy al. */
static inline struct vidmm_allocation *vidmm_alloc_next(const struct vidmm_adapter *a, uint32_t *it)
{
    return (struct vidmm_allocation *)vidmm_objtab_next(&a->allocations, it);
}

#endif
