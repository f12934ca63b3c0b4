/*
 * vidmm/policy.h - eviction policies, a replaceable component.
 *
 * When a segment has no room for an allocation being made resident, the
 * residency manager asks the adapter's eviction policy for the segment's
 * resident allocations in the order it would evict them, skips the ones
 * it may not touch (pinned, in the request being served, busy, within
 * their owner's fair share, ...) and evicts from the front until the
 * request fits.  A policy only orders; vidmm decides and does the work.
 *
 * Every allocation carries one struct vidmm_policy_entry for its whole
 * life.  vidmm fills the public fields; the private ones belong to the
 * policy, which may keep an entry in its own structures while the
 * allocation is evicted (ghost lists) until it is told the allocation is
 * destroyed.  The callbacks are called under the adapter's lock, never
 * concurrently for one adapter, and must not fail or allocate: all their
 * memory is the state made by create() and the entries' private fields.
 *
 * Built-in policies: vidmm_policy_lru (LRU within priority classes, the
 * default), vidmm_policy_adaptive (see its definition),
 * vidmm_policy_reuse (adaptive, robust to bursts and stray hits within a
 * cycle: docs/POLICIES.md) and vidmm_policy_belady (Belady's offline
 * optimum: evicts what is used next furthest in the future, from the
 * next_use hints a trace replay gives; it scores the other policies on
 * the same trace).
 */
#ifndef VIDMM_POLICY_H
#define VIDMM_POLICY_H

#include "vidmm/export.h"

#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Eviction priorities (D3DDDI_ALLOCATIONPRIORITY_*); any 32-bit value is
 * allowed and compares as a number.  0 is invalid. */
#define VIDMM_PRIORITY_MINIMUM 0x28000000u
#define VIDMM_PRIORITY_LOW     0x50000000u
#define VIDMM_PRIORITY_NORMAL  0x78000000u
#define VIDMM_PRIORITY_HIGH    0xa0000000u
#define VIDMM_PRIORITY_MAXIMUM 0xc8000000u

/* next_use when no hint was given, or the allocation is never used again. */
#define VIDMM_NEXT_USE_NEVER UINT64_MAX

struct vidmm_policy_entry {
    /* Written by vidmm before each callback; read-only for the policy. */
    uint64_t allocation;         /* vidmm_handle of the allocation */
    uint64_t process;            /* owning process handle (fairness, per-process modes); 0 = none */
    uint64_t size;               /* bytes it occupies when resident */
    uint32_t segment_id;         /* where it is resident (insert, touch, first/next) */
    uint32_t priority;           /* VIDMM_PRIORITY_* scale */
    uint64_t last_use;           /* the reference clock at its last reference */
    uint64_t next_use;           /* clock of its next reference (trace hint), or VIDMM_NEXT_USE_NEVER */
    /* Owned by the policy: zero when the allocation is created. */
    void *link[4];
    uint64_t key[2];
    uint32_t flags;
    uint32_t reserved;
};

/* Why an entry leaves the resident set. */
enum vidmm_policy_remove_reason {
    VIDMM_POLICY_EVICTED = 1,    /* evicted or discarded: may stay in ghost structures */
    VIDMM_POLICY_DESTROYED = 2   /* destroyed: the policy must drop every reference to it */
};

struct vidmm_eviction_policy {
    const char *name;
    /* Make the state for an adapter whose segment ids are < segment_count.
     * VIDMM_E_NO_HOST_MEMORY when ha refuses. */
    vidmm_status (*create)(const struct vidmm_host_allocator *ha, uint32_t segment_count, void **state);
    void (*destroy)(void *state);
    /* e became resident in e->segment_id (a restore, or a new allocation);
     * e->last_use is the current clock. */
    void (*insert)(void *state, struct vidmm_policy_entry *e);
    /* e (resident) was referenced: e->last_use and e->next_use are new. */
    void (*touch)(void *state, struct vidmm_policy_entry *e);
    /* e leaves the resident set of e->segment_id.  A DESTROYED entry may
     * also be one the policy holds only as a ghost, or one never inserted. */
    void (*remove)(void *state, struct vidmm_policy_entry *e, enum vidmm_policy_remove_reason why);
    /* The resident entries of a segment, first the one to evict first;
     * NULL at the end.  vidmm does not change the set while iterating. */
    struct vidmm_policy_entry *(*first)(void *state, uint32_t segment_id);
    struct vidmm_policy_entry *(*next)(void *state, const struct vidmm_policy_entry *e);
    /* Optional: violations of the state's invariants (0 = sound). */
    int (*check)(const void *state);
};

VIDMM_API extern const struct vidmm_eviction_policy vidmm_policy_lru;
VIDMM_API extern const struct vidmm_eviction_policy vidmm_policy_adaptive;
VIDMM_API extern const struct vidmm_eviction_policy vidmm_policy_belady;
VIDMM_API extern const struct vidmm_eviction_policy vidmm_policy_reuse;

/* The built-in policies, NULL-terminated (for tools: --policy NAME). */
VIDMM_API const struct vidmm_eviction_policy *const *vidmm_policies(void);

#ifdef __cplusplus
}
#endif
#endif
