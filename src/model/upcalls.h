/*
 * upcalls.h - the adapter's upcall table (struct vidmm_adapter.up): the
 * functions of higher layers that lower ones call, installed at open.
 */
#ifndef VIDMM_MODEL_UPCALLS_H
#define VIDMM_MODEL_UPCALLS_H

#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

struct vidmm_adapter;
struct vidmm_process;
struct vidmm_allocation;

/* Upcalls: the only way a lower layer reaches a higher one
 * (docs/ARCHITECTURE.md "Layers").  Installed by vidmm_adapter_open
 * before anything can call them; never NULL afterwards. */
struct vidmm_upcalls {
    /* Page tables need room in a memory segment: evict offered and
     * unreferenced allocations (residency; never what a device lists). */
    vidmm_status (*make_room)(struct vidmm_adapter *a, uint32_t segment_id, uint64_t size, uint64_t align);
    /* A process's root page table moved: bind it again for the process
     * and every context bound to it (devices). */
    void (*root_moved)(struct vidmm_adapter *a, struct vidmm_process *p);
    /* A hang was found (node, -1 = the paging engine): confirm it and
     * leave its reset pending (tdr).  1 if a reset is pending. */
    int (*recover)(struct vidmm_adapter *a, int node);
    /* An entry boundary, or a recovery point: run the reset left pending
     * (tdr).  0: none; 1: an engine reset ran; 2: an adapter reset ran. */
    int (*run_pending)(struct vidmm_adapter *a);
    /* A deferred-destroyed allocation went idle: release it now
     * (allocation lifetime). */
    void (*destroy_now)(struct vidmm_adapter *a, struct vidmm_allocation *al);
    /* Debug builds, at every entry boundary: the structure and rules
     * checkers (adapter).  Violations, with the first in msg. */
    int (*debug_check)(const struct vidmm_adapter *a, char *msg, size_t n);
};

#endif
