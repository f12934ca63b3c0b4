/*
 * residency_fields.h - what the residency manager keeps inside the shared
 * objects: the `res` member of struct vidmm_allocation, vidmm_process and
 * vidmm_device (model/objects.h embeds them, so it includes this header;
 * nothing else outside src/residency/ does).
 *
 * Types only, built from public and lower-layer types.  Only the files of
 * src/residency/ name these members (`->res.`); other modules go through
 * residency/residency.h (tests/layering.sh checks both).
 */
#ifndef VIDMM_RESIDENCY_RESIDENCY_FIELDS_H
#define VIDMM_RESIDENCY_RESIDENCY_FIELDS_H

#include "vidmm/allocation.h"
#include "vidmm/policy.h"
#include "vidmm/residency.h"
#include "vidmm/segment.h"
#include "placement/placement_fields.h"

#include <stdint.h>

struct vidmm_residency_ref;
struct vidmm_residency_slot;
struct vidmm_paging_queue;

/* What a make-resident's undo record says an allocation is to it
 * (residency/api.c, vidmm_residency_undo). */
enum vidmm_residency_undo_kind {
    VIDMM_UNDO_NONE = 0,        /* not changed by the call whose epoch it carries */
    VIDMM_UNDO_VICTIM = 1,      /* evicted from seg to make room: put back there */
    VIDMM_UNDO_RESTORED = 2     /* a list member the call made resident: evicted again */
};

/* Make-resident undo: set while a call's undo epoch is open. */
struct vidmm_residency_undo {
    uint64_t epoch;
    uint32_t seg;                   /* victim: the segment it was evicted from */
    uint8_t kind;                   /* enum vidmm_residency_undo_kind */
    uint8_t top;                    /* victim: it was placed from the segment's top */
    uint8_t lost;                   /* restored: its content was lost before (offered, discarded) */
    uint8_t fresh;                  /* victim: it had no system copy before the eviction */
    uint8_t extents;                /* victim: its extents (at most 2) kept to go back exactly; 0: not kept */
    enum vidmm_layout layout;
    uint64_t off[2], len[2];
};

/* An allocation's residency state.  The first members share the
 * allocation's first cache line with the handle lookup's fields: a
 * make-resident of an already resident, already referenced allocation
 * reads that line and its reference record only. */
struct vidmm_alloc_residency {
    uint64_t request_epoch;         /* == residency epoch: part of the request being served */
    struct vidmm_residency_ref *refs;     /* per-device references (residency lists) */
    struct vidmm_residency_ref *scratch_ref; /* make-resident: this request's reference record */
    uint32_t ref_total;
    int offered;
    uint64_t use_clock;             /* reference clock of the last use; pe.last_use follows it into the policy */
    uint32_t owned;                 /* pe.process is set (kept here so the hot path need not read pe) */
    int in_memory_segment;          /* handed to the eviction policy (resident in a memory segment) */
    struct vidmm_policy_entry pe;   /* priority, owner, clock; policy-private links */
    struct vidmm_placement backing; /* system copy kept while resident in memory (clean eviction) */
    int backing_valid;              /* backing holds the current content (not written since) */
    uint32_t offer_priority;
    int content_lost;               /* discarded while offered: reads as zero */
    int offer_discarded;            /* discarded since the last offer: reclaim says DISCARDED */
    uint64_t evictions, restores;
    struct vidmm_residency_undo undo;
    /* Last: a virtual submission writes it beside the allocation's busy
     * count, which model/objects.h places right after this struct. */
    int gpu_dirty;                  /* on a virtual submission's list since its system copy was made */
};

/* A process's residency accounting: resident bytes it owns per segment,
 * demand (bytes on its lists) and budgets per segment group. */
struct vidmm_process_residency {
    uint64_t seg_usage[VIDMM_MAX_SEGMENTS + 1];
    uint64_t demand[2];
    uint64_t budget_override[2];
    uint64_t reservation[2];
    /* "Over budget" cached for one eviction round (res_over_epoch). */
    uint64_t over_epoch[2];
    int over_val[2];
    uint64_t fair_held;   /* scratch of the fair-share check at a refusal (fair_share.c) */
    /* For the rules checker (through vidmm_residency_last_request), per
     * segment group: whether its last successful make-resident that left
     * something resident in the group said CantTrimFurther (then its
     * usage may exceed its budget), and its budget right after its last
     * successful make-resident (a budget that dropped since - another
     * process's demand, the OS - owes it a trim notification, not a
     * refusal). */
    int last_mr_cant_trim[2];
    uint64_t budget_after_mr[2];
    uint64_t usage_after_mr[2];
    /* The allocations whose residency owner it is (pe.process), through
     * their `owned` links, and how many: its teardown walks these, not
     * every allocation. */
    struct vidmm_allocation *owned_first;
    uint64_t owned_allocations;
};

/* An allocation's links on its residency owner's list of owned
 * allocations (the allocation's `owned` member; NULL links without an
 * owner). */
struct vidmm_alloc_owned_link {
    struct vidmm_allocation *prev, *next;
};

/* A device's residency requirement list, paging queues, trim callback
 * and make-resident fast table (residency/res_state.h), by allocation
 * slot: references taken without touching the objects.  Two levels:
 * res_dir[slot >> VIDMM_RES_CHUNK_SHIFT] is a chunk of entries, made when
 * the device first references a slot in it, so a device's table costs
 * memory for the slots it uses, not for every slot below the highest
 * (with thousands of processes each referencing a few allocations, a
 * flat table per device would be O(devices x allocations)).
 * res_slot_cap = res_dir_len chunks' worth of slots. */
struct vidmm_device_residency {
    struct vidmm_residency_ref *refs;     /* its residency requirement list */
    uint64_t ref_count;
    struct vidmm_paging_queue *queues;
    vidmm_trim_callback trim_cb;
    void *trim_ctx;
    uint64_t trim_round[2];         /* notified in this walk (budget.c) */
    struct vidmm_residency_slot **res_dir;
    uint32_t res_dir_len;
    uint32_t res_slot_cap;
};

#endif
