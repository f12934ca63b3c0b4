/*
 * report.c - the checkers' violation lines (report.h).  Truncates
 * rather than fails: a report that does not fit still counts every
 * violation.
 */
#include "core/report.h"

#include <stdarg.h>
#include <stdio.h>

void vidmm_report_add(struct vidmm_report *r, const char *fmt, ...)
{
    r->errors++;
    if (r->sink) {
        char line[512];
        va_list sp;
        va_start(sp, fmt);
        vsnprintf(line, sizeof line, fmt, sp);
        va_end(sp);
        r->sink(r->sink_ctx, line);
    }
    if (!r->buf || r->used + 1 >= r->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->buf + r->used, r->size - r->used, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    r->used += (size_t)n;
    if (r->used >= r->size) {
        r->used = r->size - 1;
    } else if (r->used + 1 < r->size) {
        r->buf[r->used++] = '\n';
        r->buf[r->used] = '\0';
    }
}
