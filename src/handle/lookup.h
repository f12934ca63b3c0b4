/*
 * lookup.h - every object kind looked up by handle, one helper each
 * (internal, never installed).
 *
 * A public entry that names an object starts with one of these: the
 * status is VIDMM_E_INVALID_HANDLE and the thread's last-error reason is
 * already recorded ("<kind> handle 0x...: not a live <kind> of this
 * adapter") when the handle names nothing live, so every entry refuses a
 * stale, foreign or wrong-type handle with the same words.  *out is
 * NULL then.  The caller checked the adapter pointer.
 */
#ifndef VIDMM_HANDLE_LOOKUP_H
#define VIDMM_HANDLE_LOOKUP_H

#include "model/objects.h"

vidmm_status vidmm_process_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_process **out);
vidmm_status vidmm_device_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_device **out);

/* Contexts are added and removed under the fence lock: _locked when the
 * caller holds it, else the lookup takes it. */
vidmm_status vidmm_context_lookup(struct vidmm_adapter *a, vidmm_handle h, struct vidmm_context **out);
vidmm_status vidmm_context_lookup_locked(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_context **out);

/* A live allocation (vidmm_handle_get: no zombie, an opener's handle of a
 * shared allocation names the allocation). */
vidmm_status vidmm_allocation_lookup(const struct vidmm_adapter *a, vidmm_handle h, struct vidmm_allocation **out);

/* The same as seen from process's call (vidmm_handle_get_for: another
 * process's private allocation is no handle there, D38). */
vidmm_status vidmm_allocation_lookup_for(const struct vidmm_adapter *a, vidmm_handle h, vidmm_handle process,
                                         struct vidmm_allocation **out);

#endif
