/*
 * allocation.h - allocation lifetimes: create, destroy (deferred while busy), move, lock (internal, never installed).
 */
#ifndef VIDMM_ALLOCATION_ALLOCATION_H
#define VIDMM_ALLOCATION_ALLOCATION_H

#include "model/objects.h"

/* Destroy while in use: hide the handle, keep the memory until the work
 * finished.  1 if deferred (the caller is done), 0 if al is idle. */
/* Move al to segment target (move.c): the new placement first, the GPU
 * mappings pointed at it, then the old one let go; discard: the content
 * need not follow.  A failure changes nothing. */
vidmm_status vidmm_allocation_move_to(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t target,
                                      int discard);

int vidmm_allocation_defer_destroy(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* Release an allocation now (it is idle). */
void vidmm_allocation_destroy_now(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* al is no longer private: off its creator's list of private
 * allocations (if that process lives), private_process 0. */
void vidmm_allocation_unlist_private(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* A process goes: its private allocations go with it (unlocked,
 * undisplayed, destroyed now or deferred while GPU work uses them). */
void vidmm_allocation_destroy_private(struct vidmm_adapter *a, vidmm_handle process);

/* Drop n of al's CPU locks (a dying holder's); the last one releases
 * the CPU host aperture mapping. */
void vidmm_allocation_drop_locks(struct vidmm_adapter *a, struct vidmm_allocation *al, uint32_t n);

/* Destroy an unlocked allocation: off the display, then now or deferred
 * while GPU work uses it. */
void vidmm_allocation_destroy_unlocked(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* ---- shared allocations (share.c, vidmm/share.h) ---- */

/* al (just created for process) becomes shared: its share record and
 * the creator's hold.  VIDMM_E_NO_HOST_MEMORY (nothing changed). */
vidmm_status vidmm_share_attach(struct vidmm_adapter *a, struct vidmm_allocation *al, vidmm_handle process);

/* A holder closes its handle (vidmm_allocation_destroy): VIDMM_E_BUSY
 * while locked through it; the last holder's close destroys al. */
vidmm_status vidmm_share_close(struct vidmm_adapter *a, struct vidmm_share_holder *sh);

/* A process goes: each of its holds lets go (its locks dropped);
 * O(its holds): the process's list of them. */
void vidmm_share_process_gone(struct vidmm_adapter *a, struct vidmm_process *p);

/* The adapter closes: the token table goes (every share went with its
 * last holder's process). */
void vidmm_share_fini(struct vidmm_adapter *a);

/* The shares, their holders and the holder table agree (for
 * vidmm_adapter_check).  Violations; the last one in msg. */
int vidmm_share_check(const struct vidmm_adapter *a, char *msg, size_t n);

/* A CPU lock maps it through the host aperture (memory segment without a
 * CPU-visible window), and how many aperture pages. */
static inline int vidmm_allocation_host_ap_mapped(const struct vidmm_allocation *al)
{
    return al->cpu_map.host_ap_mapped;
}

static inline uint64_t vidmm_allocation_host_ap_pages(const struct vidmm_allocation *al)
{
    return al->cpu_map.host_ap_count;
}

#endif
