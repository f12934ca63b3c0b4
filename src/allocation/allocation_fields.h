/*
 * allocation_fields.h - what the allocation module (allocation/: lifetimes,
 * CPU locks, sharing) keeps inside the shared objects: an allocation's CPU
 * mapping (`cpu_map`), a process's holds of shared allocations and the
 * adapter's table of shares (`sharing`), and the sharing records.
 * model/objects.h embeds them, so it includes this header; nothing else
 * outside src/allocation/ does.  Types only.  Only src/allocation/ names
 * the `cpu_map` and `sharing` members (tests/layering.sh); the others call
 * allocation/allocation.h.
 */
#ifndef VIDMM_ALLOCATION_ALLOCATION_FIELDS_H
#define VIDMM_ALLOCATION_ALLOCATION_FIELDS_H

#include "vidmm/allocation.h"

#include <stdint.h>

struct vidmm_allocation;
struct vidmm_share;

/* One process's hold on a shared allocation (vidmm/share.h): the
 * creator's (named by the allocation's own handle) or an opener's (named
 * by a handle of the share-holder table, type
 * VIDMM_HANDLE_TYPE_SHARED_ALLOCATION).  Holders keep the allocation
 * alive: it is destroyed when the last one lets go. */
struct vidmm_share_holder {
    struct vidmm_share *share;
    vidmm_handle process;           /* the holding process */
    vidmm_handle self;              /* its handle: the allocation's own for the creator */
    uint32_t locks;                 /* CPU locks taken through this handle (in al->lock_count) */
    uint32_t creator;               /* the creator's hold (handle = the allocation's) */
    struct vidmm_share_holder *next; /* the share's holders */
    struct vidmm_share_holder *proc_prev, *proc_next; /* the holding process's holds */
};

/* A shared allocation's sharing state: its token (the adapter's table
 * of tokens is the list of these) and its holders, one per process. */
struct vidmm_share {
    struct vidmm_allocation *al;
    uint64_t token[2];              /* 128 random bits; never 0, 0 */
    struct vidmm_share_holder *holders;
    uint32_t holder_count;
    uint32_t exported;              /* tokens handed out (vidmm_share_export calls) */
    struct vidmm_share *prev, *next; /* the adapter's shares */
};

/* An allocation's CPU mapping while locked (vidmm_allocation_lock): its
 * address, and for a memory segment without a CPU-visible window the
 * host aperture pages that map it. */
struct vidmm_alloc_cpu_map {
    void *lock_ptr;
    int host_ap_mapped;
    uint32_t host_ap_node;
    uint64_t host_ap_first;         /* first host aperture page */
    uint64_t host_ap_count;
    uint32_t *host_ap_list;         /* aperture page indices, kept for the unmap at unlock */
};

/* A process's holds of shared allocations (allocation/share.c), through
 * the holders' proc_* links and counted: its teardown lets go of these,
 * not of every share. */
struct vidmm_process_sharing {
    struct vidmm_share_holder *share_holds;
    uint32_t share_hold_count;
};

/* The adapter's shared allocations (allocation/share.c, docs/SHARING.md):
 * every share, as a list and as the token table an open looks up. */
struct vidmm_share_table {
    struct vidmm_share *shares;
    uint32_t share_count;
    uint32_t share_index_cap;       /* slots of share_index: 0 or a power of two, at most half full */
    struct vidmm_share **share_index; /* the token table: open addressing by token[0], linear probing */
    uint64_t share_tokens;          /* tokens made: mixed into the next (entropy fallback) */
};

#endif
