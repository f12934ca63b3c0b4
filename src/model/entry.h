/*
 * entry.h - the one way into the library, and its cheap invariants
 * (model layer; internal, never installed).
 *
 * Every public entry that reads or changes adapter state is written
 *
 *     VIDMM_ENTRY(a, op(a, ...));
 *
 * which checks the adapter, takes the lock, runs op (whose own
 * validation comes first and changes nothing on bad input) and releases
 * the lock.  The outermost release is the entry boundary: a reset a hang
 * left pending runs there - never inside op, whose callers may hold
 * pointers into what a reset rewrites.  When op backed out with
 * VIDMM_E_TIMEOUT because an engine hung, the engine reset runs at the
 * boundary and op runs again, so a caller sees an engine reset only as
 * its guilty device's error state; after an adapter reset it sees the
 * timeout.  A debug build (make DEBUG=1) runs the structure and rules
 * checkers at the boundary and stops at the first violation.
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

/* entry.c: take / release the adapter lock (recursive: an entry may call
 * another entry, or a user callback run under it may call back in on the
 * same thread).  const: the lock is not part of the adapter's logical
 * state, and read-only entries take it too.  trylock: 0 when taken (hang
 * recovery from a wait that does not hold it). */
void vidmm_adapter_lock(const struct vidmm_adapter *a);
void vidmm_adapter_unlock(const struct vidmm_adapter *a);
int vidmm_adapter_trylock(struct vidmm_adapter *a);

#define VIDMM_ENTRY(a, call)                                                                                 \
    do {                                                                                                     \
        if (!(a))                                                                                            \
            return vidmm_entry_no_adapter(__func__);                                                         \
        vidmm_entry_enter(a);                                                                                \
        vidmm_status vidmm_entry_st_ = (call);                                                               \
        for (int vidmm_entry_n_ = 0; vidmm_entry_st_ == VIDMM_E_TIMEOUT && vidmm_entry_n_ < 4 &&             \
                                     vidmm_entry_recover(a);                                                 \
             vidmm_entry_n_++)                                                                               \
            vidmm_entry_st_ = (call);                                                                        \
        return vidmm_entry_leave_named(a, vidmm_entry_st_, __func__);                                        \
    } while (0)

/* At the boundary of the outermost entry, after its operation backed out
 * with VIDMM_E_TIMEOUT: run the reset a hang left pending.  1 if it was
 * an engine reset, after which the operation runs again (the hung work
 * is abandoned, nothing else changed); 0 otherwise (an adapter reset
 * runs as the lock is released, and the caller sees the timeout). */
int vidmm_entry_recover(const struct vidmm_adapter *a);

/* Take the lock (VIDMM_ENTRY); the outermost entry starts with no
 * last-error reason (core/error.h). */
void vidmm_entry_enter(const struct vidmm_adapter *a);

/* Release the lock VIDMM_ENTRY took; st passes through.  The outermost
 * entry finishes the thread's last-error text with its name. */
vidmm_status vidmm_entry_leave(const struct vidmm_adapter *a, vidmm_status st);
vidmm_status vidmm_entry_leave_named(const struct vidmm_adapter *a, vidmm_status st, const char *entry);

/* An entry called with a NULL adapter. */
vidmm_status vidmm_entry_no_adapter(const char *entry);

/* 1 after reporting a violated invariant (see above). */
int vidmm_bug(const struct vidmm_adapter *a, const char *what, const char *file, int line);
#define VIDMM_BUG_ON(a, cond) ((cond) ? vidmm_bug((a), #cond, __FILE__, __LINE__) : 0)
/* The same with the invariant in words (printf format), the way
 * DRM_MM_BUG_ON's callers say what broke: the adapter's log keeps
 * "file:line: message (condition)" (core/error.h, VIDMM_BUG_ON_LOG). */
int vidmm_bug_msg(const struct vidmm_adapter *a, const char *cond, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
#define VIDMM_BUG_ON_MSG(a, cond, ...) ((cond) ? vidmm_bug_msg((a), #cond, __FILE__, __LINE__, __VA_ARGS__) : 0)

/* A reset is pending for the calling thread (the adapter lock's holder),
 * on *node (-1: the paging engine; node may be NULL).  NULL-safe. */
int vidmm_entry_reset_flagged(const struct vidmm_adapter *a, int *node);

/* A reset is pending for any thread (the fence lock held). */
int vidmm_entry_reset_any(const struct vidmm_adapter *a);

/* Leave a reset pending on node for the calling thread, or take it back
 * (the fence lock held; the caller holds the adapter lock). */
void vidmm_entry_reset_set(struct vidmm_adapter *a, int node);
void vidmm_entry_reset_clear(struct vidmm_adapter *a);

/* Does the calling thread hold the adapter lock? */
int vidmm_adapter_held(const struct vidmm_adapter *a);

/* The adapter lock's nesting (its holder reads it), and its reset by the
 * adapter's open and close, which release the lock without an entry
 * boundary. */
uint32_t vidmm_entry_depth(const struct vidmm_adapter *a);
void vidmm_entry_set_depth(struct vidmm_adapter *a, uint32_t depth);

/* A reset a refused driver step scheduled could not finish: the next
 * outermost entry runs one first (on = 1), or it ran (on = 0). */
void vidmm_entry_carry_reset(struct vidmm_adapter *a, int on);

/* Invariants VIDMM_BUG_ON found broken in a release build, the first
 * described in *first. */
uint64_t vidmm_entry_bugs(const struct vidmm_adapter *a, const char **first);

#ifdef VIDMM_DEBUG
#define VIDMM_ASSERT_LOCKED(a) ((void)VIDMM_BUG_ON((a), !vidmm_adapter_held(a)))
#else
/* Release builds: the owner field is read without synchronisation, so
 * it is not read at all (ThreadSanitizer runs the release build). */
#define VIDMM_ASSERT_LOCKED(a) ((void)(a))
#endif

#endif
