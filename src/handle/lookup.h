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

/* Process slots and the live-process list (the adapter's processes
 * table and process_first/live_next).
 *
 * The process in handle-table slot `slot`, or NULL. */
static inline struct vidmm_process *vidmm_process_at(const struct vidmm_adapter *a, uint32_t slot)
{
    return (struct vidmm_process *)vidmm_objtab_at(&a->processes, slot);
}

/* A process's slot in the handle table (reports name processes by it). */
static inline uint32_t vidmm_process_slot(const struct vidmm_process *p)
{
    return VIDMM_HANDLE_SLOT(p->self);
}

/* Every live process, first created first: O(live processes).  The body
 * must not free the process it is on (process teardown walks
 * `while (a->process_first)` instead). */
#define vidmm_for_each_process(a, p) for ((p) = (a)->process_first; (p); (p) = (p)->live_next)

#endif
