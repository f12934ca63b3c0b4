/*
 * fence_state.h - the fence layer's own state (private to src/fence/:
 * other modules reach it through fence/fence.h).
 *
 * Every engine's fence counters, the hang detector's samples, and the
 * records of resets (pending, generation, statistics).  The recovery
 * logic that runs resets is far above (tdr/), but what it records lives
 * here, with the waits that read it: a wait below every other module
 * must know whether a reset is pending without calling up.  Guarded by
 * the adapter's fence lock except where a comment says otherwise.
 */
#ifndef VIDMM_FENCE_FENCE_STATE_H
#define VIDMM_FENCE_FENCE_STATE_H

#include "model/objects.h"

struct vidmm_fence_state {
    uint64_t timeout_ns;            /* 0 = hang detection off */
    /* Contexts' work, per node: submission and the driver's callback
     * only move these counters (no clock on those paths). */
    uint64_t node_submitted[VIDMM_MAX_NODES];
    uint64_t node_completed[VIDMM_MAX_NODES];
    uint64_t node_seen[VIDMM_MAX_NODES];       /* node_completed at the last sample that saw progress */
    uint64_t node_seen_ns[VIDMM_MAX_NODES];    /* CLOCK_MONOTONIC of that sample */
    /* Was the engine busy at the last sample?  Work found busy right
     * after an idle sample starts its timeout at that sample, not at the
     * last progress seen before the idle gap. */
    int node_busy[VIDMM_MAX_NODES];
    /* The paging engine.  paging_next is the fence of the next paging
     * buffer (the adapter lock guards it: only submission moves it). */
    uint64_t paging_next;
    uint64_t paging_submitted;      /* last paging fence handed to the driver */
    uint64_t paging_completed;      /* last paging fence the driver reported */
    uint64_t paging_seen;
    uint64_t paging_seen_ns;
    int paging_busy;
    int paging_fault;               /* a paging buffer faulted: reset at the next wait or poll */
    uint64_t paging_fault_before;   /* paging_completed when it was reported */
    /* Resets.  Whether one is pending for the entry boundary is the
     * entry mechanism's (model/entry.h); whether one runs is here, for
     * the waits (docs/RESET_AND_POWER.md "Where a reset runs"). */
    int in_recovery;
    /* The pending reset (model/entry.h records whether one is, on which
     * node, for which thread) also resets the paging engine: a paging
     * hang or fault made it an adapter reset, whose every paging fence
     * passes before the entry returns.  paging_stopped: the paging
     * engine is confirmed stuck (the driver does not call it responsive):
     * nothing queued on it runs before that reset, so a paging wait may
     * give up.  A pending reset of a context's node alone stops nothing
     * on the paging engine (docs/DECISIONS.md D61).  Both go with the
     * pending reset when it is taken to run. */
    int pending_paging;
    int paging_stopped;
    uint64_t generation;            /* adapter resets so far (adapter lock) */
    /* The driver refused an adapter reset: nothing of its memory can be
     * trusted any more, not even the segments' CPU mappings (D94). */
    int adapter_removed;
    struct vidmm_tdr_stats stats;   /* counted where the event is seen */
};

#endif
