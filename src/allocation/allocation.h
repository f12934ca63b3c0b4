/*
 * allocation.h - allocation lifetimes: create, destroy (deferred while busy), move, lock (internal, never installed).
 */
#ifndef VIDMM_ALLOCATION_ALLOCATION_H
#define VIDMM_ALLOCATION_ALLOCATION_H

#include "model/objects.h"

/* Destroy while in use: hide the handle, keep the memory until the work
 * finished.  1 if deferred (the caller is done), 0 if al is idle. */
int vidmm_allocation_defer_destroy(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* Release an allocation now (it is idle). */
void vidmm_allocation_destroy_now(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* A process goes: its private allocations go with it (unlocked,
 * undisplayed, destroyed now or deferred while GPU work uses them). */
void vidmm_allocation_destroy_private(struct vidmm_adapter *a, vidmm_handle process);

#endif
