/*
 * physbuf.h - the physical-mode command buffers vidmm knows (submission
 * layer; internal, never installed): which one the GPU may still read,
 * and what each was last patched with.  See physbuf.c.
 */
#ifndef VIDMM_SUBMIT_PHYSBUF_H
#define VIDMM_SUBMIT_PHYSBUF_H

#include "model/objects.h"
#include "vidmm/driver.h"
#include "vidmm/submit.h"

struct vidmm_physbuf;

/* One physical submission's hold on its buffer, from the checks to the
 * end of the call.  vidmm_physbuf_claim fills it; the submission then
 * either commits it or releases it.  In between the table changes only
 * by entries going idle: the submission holds the adapter lock and runs
 * no caller code (the driver's callbacks touch only fences, and a reset
 * run meanwhile retires work, it destroys no context). */
struct vidmm_physbuf_claim {
    uintptr_t start;
    uint32_t size;
    uint32_t count;                 /* allocation-list entries */
    struct vidmm_physbuf *entry;    /* the known buffer of exactly this range; NULL: none */
    struct vidmm_physbuf *fresh;    /* a new entry, for a buffer not known yet */
    uint64_t *lists;                /* new handle + address arrays, when the entry's are too short */
    uint32_t lists_cap;
    int patched;                    /* set before the patch op runs: the buffer's bytes change */
};

/* Before anything of the submission changes: VIDMM_E_BUSY when
 * [buffer, buffer + size) overlaps a buffer whose submission has not
 * finished, on any context; VIDMM_E_NO_HOST_MEMORY when the host memory
 * the commit needs is refused (nothing changed).  Adapter lock held. */
vidmm_status vidmm_physbuf_claim(struct vidmm_adapter *a, const void *buffer, uint32_t size, uint32_t count,
                                 struct vidmm_physbuf_claim *cl);

/* May patch location(s) of allocation-list entry k be skipped?  Only
 * when the buffer's last patch was for context c, with the same list
 * length, the same allocation at k, and that allocation at the address
 * le gives now (the caller checks VIDMM_SUBMIT_REUSED). */
int vidmm_physbuf_patched(const struct vidmm_physbuf_claim *cl, const struct vidmm_context *c, uint32_t k,
                          vidmm_handle allocation, const struct vidmm_allocation_list_entry *le);

/* The buffer was handed to the driver as the submission of fence on c,
 * patched for the allocation list al / le (count entries): it is in flight
 * until that fence passes.  Allocates nothing. */
void vidmm_physbuf_commit(struct vidmm_adapter *a, struct vidmm_physbuf_claim *cl, struct vidmm_context *c,
                          uint64_t fence, const struct vidmm_submit_allocation *al,
                          const struct vidmm_allocation_list_entry *le);

/* The submission failed: give back what the claim holds; if the buffer
 * was (perhaps half) patched, forget what it and the buffers it overlaps
 * were patched with. */
void vidmm_physbuf_release(struct vidmm_adapter *a, struct vidmm_physbuf_claim *cl);

/* Context c goes, its work finished: forget the buffers last submitted
 * on it. */
void vidmm_physbuf_context_gone(struct vidmm_adapter *a, const struct vidmm_context *c);

/* The adapter closes: release every entry and the table. */
void vidmm_physbuf_fini(struct vidmm_adapter *a);

/* Violations of the table's invariants (physbuf.c); the last one is
 * described in msg. */
int vidmm_physbuf_check(const struct vidmm_adapter *a, char *msg, size_t n);

#endif
