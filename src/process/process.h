/*
 * process.h - processes and their GPU VA spaces (internal, never installed).
 */
#ifndef VIDMM_PROCESS_PROCESS_H
#define VIDMM_PROCESS_PROCESS_H

#include "model/objects.h"

/* The allocation moved or changed: rewrite its PTEs in every process. */
vidmm_status vidmm_process_remap_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* After a rebuild (vidmm_pt_rebuild): write p's zero reservations
 * again, the entries no allocation's remap writes (D60). */
vidmm_status vidmm_process_rewrite_zero(struct vidmm_adapter *a, struct vidmm_process *p);

/* Before al's bytes go to dst: switch to 4 KB entries wherever a mapping
 * of al could not keep 64 KB entries there (may allocate). */
vidmm_status vidmm_process_prepare_move(struct vidmm_adapter *a, struct vidmm_allocation *al,
                                        const struct vidmm_placement *dst);

/* The allocation is being destroyed: unmap it everywhere. */
void vidmm_process_forget_allocation(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* One process lets go of al (a holder of a shared allocation closed its
 * handle): unmap it in p only. */
void vidmm_process_unmap_allocation_in(struct vidmm_adapter *a, struct vidmm_process *p, struct vidmm_allocation *al);
/* Take p off the adapter's list of live processes (teardown, with its
 * table slot, under the fence lock). */
void vidmm_process_unlist(struct vidmm_adapter *a, struct vidmm_process *p);

/* Free p's spare links of allocations' user lists (teardown, after its
 * VA space is gone). */
void vidmm_process_free_users(struct vidmm_adapter *a, struct vidmm_process *p);

/* The live process of a handle, or NULL. */
struct vidmm_process *vidmm_process_get(const struct vidmm_adapter *a, vidmm_handle h);

/* The adapter checker's parts (adapter/check.c): p's spare links, and
 * al's list of mapping processes (returns its count). */
struct vidmm_report;
void vidmm_process_check_spares(const struct vidmm_process *p, struct vidmm_report *r);
uint32_t vidmm_process_check_users(const struct vidmm_adapter *a, const struct vidmm_allocation *al, uint32_t slot,
                                   struct vidmm_report *r);

/* The processes mapping al, first to last (read-only). */
static inline const struct vidmm_va_user *vidmm_process_users_of(const struct vidmm_allocation *al)
{
    return al->va_map.users;
}

/* A GPU page fault of p's: the first puts p in error (vidmm/process.h's
 * info reports it), every one counts.  Under the fence lock. */
void vidmm_process_note_fault_locked(struct vidmm_process *p, uint64_t va, uint32_t flags);

#endif
