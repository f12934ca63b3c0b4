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

/* Record why the current call fails (printf format), unless a reason is
 * already recorded; returns st, so a check reads
 *     return vidmm_fail(VIDMM_E_INVALID_ARG, "size 0: ...");   */
vidmm_status vidmm_fail(vidmm_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A public entry starts (outermost only): no reason yet. */
void vidmm_error_clear(void);

/* The outermost public entry `entry` returns st: finish the text. */
void vidmm_error_finish(const char *entry, vidmm_status st);

#endif
