/*
 * error.h - the calling thread's last-error text (internal, never
 * installed; the public side is vidmm_last_error() in vidmm/status.h).
 *
 * A failing check says why where it fails - the argument or handle and
 * the rule - with vidmm_fail(); the outermost public entry prefixes its
 * own name as it returns, or writes "<entry>: <status>" when no check
 * said more.  The first reason set in a call wins: it is the one nearest
 * the cause.  An entry that succeeds leaves the text empty.
 */
#ifndef VIDMM_CORE_ERROR_H
#define VIDMM_CORE_ERROR_H

#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

/* Record why the current call fails (printf format), unless a reason is
 * already recorded; returns st, so a check reads
 *     return vidmm_fail(VIDMM_E_INVALID_ARG, "size 0: ...");   */
vidmm_status vidmm_fail(vidmm_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Broken internal invariants (never bad input: that is a status).  An
 * object below the adapter (a range allocator, a VA space) keeps a log
 * of them, and its checker reports it; the adapter's own is kept by
 * VIDMM_BUG_ON / VIDMM_BUG_ON_MSG (model/entry.h), which share this
 * behaviour: a debug build (VIDMM_DEBUG) prints where and what and
 * aborts; a release build counts the violation, keeps the first one's
 * text and yields 1, so the caller backs out (VIDMM_E_INTERNAL) instead
 * of going on with broken state.  The message names the invariant, the
 * way tlsf_check's and DRM_MM_BUG_ON's do:
 *
 *     if (VIDMM_BUG_ON_LOG(&ra->bugs, ra->live_count == 0, "free: no live range to free"))
 *         return VIDMM_E_INTERNAL;                                        */
struct vidmm_bug_log {
    uint64_t count;
    char first[160];   /* "file:line: message (condition)" of the first */
};

/* Note (or, debug builds, report and abort on) a broken invariant into
 * count and first[n] (both may be NULL); returns 1.  cond is the
 * condition's text, fmt the invariant in words (printf format). */
int vidmm_bug_note(uint64_t *count, char *first, size_t n, const char *cond, const char *file, int line,
                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

#define VIDMM_BUG_ON_LOG(log, cond, ...)                                                                       \
    ((cond) ? vidmm_bug_note(&(log)->count, (log)->first, sizeof((log)->first), #cond, __FILE__, __LINE__,  \
                             __VA_ARGS__)                                                                  \
            : 0)

/* A public entry starts (outermost only): no reason yet. */
void vidmm_error_clear(void);

/* The outermost public entry `entry` returns st: finish the text. */
void vidmm_error_finish(const char *entry, vidmm_status st);

#endif
