/*
 * error.c - the calling thread's last-error text.
 *
 * The one piece of state the library keeps outside an adapter: a
 * per-thread diagnostic buffer, as errno is, holding text only (no
 * pointer into any adapter), so two adapters or two threads never see
 * each other's reasons (docs/DECISIONS.md D46).
 */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local struct {
    char reason[320];          /* what a check said, without the entry's name */
    char text[448];            /* what vidmm_last_error() returns */
    int have_reason;
} last;

vidmm_status vidmm_fail(vidmm_status st, const char *fmt, ...)
{
    if (!last.have_reason) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(last.reason, sizeof(last.reason), fmt, ap);
        va_end(ap);
        last.have_reason = 1;
    }
    return st;
}

void vidmm_error_clear(void)
{
    last.have_reason = 0;
    last.reason[0] = '\0';
    last.text[0] = '\0';
}

void vidmm_error_finish(const char *entry, vidmm_status st)
{
    if (st >= 0) {
        vidmm_error_clear();
        return;
    }
    if (last.have_reason)
        snprintf(last.text, sizeof(last.text), "%.64s: %.48s: %.300s", entry, vidmm_status_str(st), last.reason);
    else
        snprintf(last.text, sizeof(last.text), "%.64s: %.48s", entry, vidmm_status_str(st));
    last.have_reason = 0;
}

const char *vidmm_last_error(void)
{
    return last.text;
}

int vidmm_bug_note(uint64_t *count, char *first, size_t n, const char *cond, const char *file, int line,
                   const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
#ifdef VIDMM_DEBUG
    (void)count;
    (void)first;
    (void)n;
    fprintf(stderr, "vidmm: BUG at %s:%d: %s (%s)\n", file, line, what, cond);
    abort();
#else
    if (count && !(*count)++ && first && n)
        snprintf(first, n, "%s:%d: %s (%s)", file, line, what, cond);
    return 1;
#endif
}
