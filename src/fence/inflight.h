/*
 * inflight.h - the in-flight submission records (fence layer; internal).
 * Shared with the submission layer above, which creates the records, and
 * the allocation layer, which queues deferred destructions.
 */
#ifndef VIDMM_FENCE_INFLIGHT_H
#define VIDMM_FENCE_INFLIGHT_H

#include "model/objects.h"
#include "vidmm/submit.h"

struct vidmm_submission {
    struct vidmm_submission *next;     /* submission order */
    struct vidmm_context *ctx;
    uint64_t fence;
    uint64_t seq;                      /* submission order (hang recovery names the oldest) */
    uint32_t count;
    uint32_t list_cap;                 /* entries allocated: count drops to the distinct ones */
    struct vidmm_allocation **list;    /* each allocation once; busy raised by one */
};

struct vidmm_physbuf_table;

struct vidmm_submit_state {
    struct vidmm_submission *head;
    uint64_t in_flight;
    uint64_t seq;
    struct vidmm_allocation *zombies;
    uint64_t zombie_count;
    struct vidmm_submit_stats stats;
    /* Patch scratch, grown as needed (host memory only when it grows). */
    struct vidmm_allocation_list_entry *alist;
    uint32_t alist_cap;
    struct vidmm_patch_location *plist;
    uint32_t plist_cap;
    /* The physical-mode command buffers known (the submission layer's
     * submit/physbuf.c owns and releases it; NULL until the first). */
    struct vidmm_physbuf_table *physbufs;
};

vidmm_status vidmm_inflight_init(struct vidmm_adapter *a);
/* Wait for every submission, free deferred destructions, release. */
void vidmm_inflight_fini(struct vidmm_adapter *a);
/* Retire every record whose fence passed (adapter lock held); the count. */
uint32_t vidmm_inflight_retire(struct vidmm_adapter *a);
/* Release the deferred destructions nothing uses any more.  Only at the
 * start of a public entry: a release pages and rewrites page tables. */
void vidmm_inflight_reap(struct vidmm_adapter *a);
/* Free a record that never reached the driver, or retired. */
void vidmm_inflight_free_record(struct vidmm_adapter *a, struct vidmm_submission *r);
/* A context goes: wait for its work and retire its records. */
void vidmm_inflight_context_gone(struct vidmm_adapter *a, struct vidmm_context *c);

vidmm_status vidmm_inflight_init(struct vidmm_adapter *a);

/* Wait for every submission, free deferred destructions, release. */
void vidmm_inflight_fini(struct vidmm_adapter *a);

/* Wait until no submitted work uses al (its fences passed). */
void vidmm_inflight_wait_idle(struct vidmm_adapter *a, struct vidmm_allocation *al);

/* Eviction found nothing evictable: wait for the oldest in-flight
 * submission and retire it.  1 if anything retired, 0 if none was in
 * flight. */
int vidmm_inflight_wait_some(struct vidmm_adapter *a);

/* The context of the oldest unfinished submission on node (NULL: none);
 * *fence its fence value.  Submission lock held. */
struct vidmm_context *vidmm_inflight_oldest_on_node(struct vidmm_adapter *a, uint32_t node, uint64_t *fence);

/* After an adapter reset made every fence pass: retire every record. */
void vidmm_inflight_retire_all(struct vidmm_adapter *a);

/* Wait until no submitted work is in flight (hangs are reset meanwhile). */
void vidmm_inflight_wait_all(struct vidmm_adapter *a);

#endif
