/*
 * report.h - the line accumulator behind the checker walkers
 * (vidmm_adapter_check, vidmm_adapter_check_rules): each violation is
 * counted and, while the caller's buffer has room, appended as one line.
 * Internal; never installed.
 */
#ifndef VIDMM_CORE_REPORT_H
#define VIDMM_CORE_REPORT_H

#include <stddef.h>

struct vidmm_report {
    char *buf;        /* may be NULL: count only */
    size_t size, used;
    int errors;
    /* Optional: also handed each whole line (the adapter's debug
     * callback, which must see every violation even when buf is short). */
    void (*sink)(void *ctx, const char *line);
    void *sink_ctx;
};

/* Count one violation and append it (printf format) as a line. */
void vidmm_report_add(struct vidmm_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
