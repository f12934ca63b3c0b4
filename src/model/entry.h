/*
 * entry.h - the one way into the library, and its cheap invariants
 * (model layer; internal, never installed).
 *
 * Every public entry that reads or changes adapter state is written
 *
 *     VIDMM_ENTER(a);                           adapter checked, lock taken
 *     return vidmm_entry_leave(a, op(a, ...));  run, then unlock
 *
 * op's own validation comes first inside it and changes nothing on bad
 * input.  The argument of vidmm_entry_leave is evaluated before the call,
 * so op runs with the lock held and the lock is released after it.  The
 * outermost leave is the entry boundary: a reset a hang left pending
 * runs there (model/entry.c), and a debug build (make DEBUG=1) runs the
 * structure and rules checkers there and stops at the first violation.
 *
 * Locks: every internal function may assume the adapter lock is held
 * (debug builds assert it where state changes: VIDMM_ASSERT_LOCKED); a
 * name ending in _locked means its caller also holds the fence lock
 * (model/objects.h).
 *
 * VIDMM_BUG_ON(a, cond) marks what cannot happen.  A debug build prints
 * the condition and aborts; a release build counts it on the adapter
 * (vidmm_adapter_check reports it) and yields 1, so the caller returns
 * VIDMM_E_INTERNAL instead of going on with broken state.
 */
#ifndef VIDMM_MODEL_ENTRY_H
#define VIDMM_MODEL_ENTRY_H

#include "vidmm/status.h"

struct vidmm_adapter;

#define VIDMM_ENTER(a)                                                                                       \
    do {                                                                                                     \
        if (!(a))                                                                                            \
            return VIDMM_E_INVALID_ARG;                                                                      \
        vidmm_adapter_lock(a);                                                                               \
    } while (0)

/* Release the lock VIDMM_ENTER took; st passes through. */
vidmm_status vidmm_entry_leave(const struct vidmm_adapter *a, vidmm_status st);

/* 1 after reporting a violated invariant (see above). */
int vidmm_bug(const struct vidmm_adapter *a, const char *what, const char *file, int line);
#define VIDMM_BUG_ON(a, cond) ((cond) ? vidmm_bug((a), #cond, __FILE__, __LINE__) : 0)

/* Does the calling thread hold the adapter lock? */
int vidmm_adapter_held(const struct vidmm_adapter *a);

#ifdef VIDMM_DEBUG
#define VIDMM_ASSERT_LOCKED(a) ((void)VIDMM_BUG_ON((a), !vidmm_adapter_held(a)))
#else
/* Release builds: the owner field is read without synchronisation, so
 * it is not read at all (ThreadSanitizer runs the release build). */
#define VIDMM_ASSERT_LOCKED(a) ((void)(a))
#endif

#endif
