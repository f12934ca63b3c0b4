/*
 * entry_state.h - the entry mechanism's state in the adapter (its
 * `entry` member): the adapter lock's nesting and holder, the reset a
 * hang left pending for the entry boundary, the invariants found broken.
 * model/entry.c owns it; other modules call model/entry.h.
 */
#ifndef VIDMM_MODEL_ENTRY_STATE_H
#define VIDMM_MODEL_ENTRY_STATE_H

#include <pthread.h>
#include <stdint.h>

struct vidmm_entry_state {
    uint32_t lock_depth;            /* nesting of the adapter lock (its holder reads and writes it) */
    pthread_t lock_owner;           /* valid while lock_depth > 0 */
    /* A reset a hang left pending for the entry boundary (model/entry.c
     * owns these three; reached through its vidmm_entry_reset_*).  Set
     * and cleared by the adapter lock's holder under the fence lock, so
     * that holder reads them freely and others under the fence lock. */
    int reset_pending;
    /* A reset a refused driver step scheduled could not finish (its own
     * paging was refused): the next outermost entry runs one first
     * (model/entry.c), so the next call does not fail for it. */
    int reset_carried;
    int pending_node;               /* -1: the paging engine */
    pthread_t pending_owner;
    /* Violated invariants found by VIDMM_BUG_ON in a release build
     * (model/entry.h); vidmm_adapter_check reports them. */
    uint64_t bugs;
    char bug_msg[160];
};

#endif
