/*
 * observe.h - what the layer above (adapter/) calls of observe/: the debug
 * callback's emitters and the leak report of the close (internal, never
 * installed).  Public side: vidmm/observe.h.
 */
#ifndef VIDMM_OBSERVE_OBSERVE_H
#define VIDMM_OBSERVE_OBSERVE_H

#include "model/objects.h"

/* Hand one line to the adapter's debug callback, if any (printf format;
 * lines longer than 512 bytes are cut). */
void vidmm_debug_emit(const struct vidmm_adapter *a, enum vidmm_debug_severity sev, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A struct vidmm_report sink (core/report.h): ctx is the adapter, each
 * line an ERROR. */
void vidmm_debug_report_sink(void *ctx, const char *line);

/* Has the caller installed a debug callback? */
static inline int vidmm_debug_hooked(const struct vidmm_adapter *a)
{
    return a->debug.cb != NULL;
}

/* The close's leak report: one WARNING per live process and allocation,
 * then a summary; nothing without a callback or without leaks. */
void vidmm_observe_report_leaks(const struct vidmm_adapter *a);

/* Allocation's process as the public item reports it (vidmm/observe.h). */
vidmm_handle vidmm_observe_process_of(const struct vidmm_allocation *al);

/* Its residency state, one VIDMM_RESIDENCY_*. */
uint32_t vidmm_observe_residency(const struct vidmm_allocation *al);

/* The segment its bytes are in (0: system memory) and the offset of its
 * first extent there; *extents gets the count (0: no bytes yet). */
uint32_t vidmm_observe_where(const struct vidmm_allocation *al, uint64_t *offset, uint32_t *extents);

/* A growing text: appends count past the end, the buffer keeps what fits. */
struct vidmm_text {
    char *buf;
    size_t size;
    size_t len;        /* bytes the whole text takes, without the NUL */
};
void vidmm_text_add(struct vidmm_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A JSON string literal of s (quotes included). */
void vidmm_text_json_str(struct vidmm_text *t, const char *s);
/* End the text: NUL-terminate what fits, set *needed, and pick the status
 * of the two-call pattern. */
vidmm_status vidmm_text_finish(struct vidmm_text *t, size_t *needed);
/* Validate buf/size/needed of the two-call pattern. */
int vidmm_text_args_ok(const char *buf, size_t size, const size_t *needed);
/* The refusal of arguments vidmm_text_args_ok rejected, with the reason. */
vidmm_status vidmm_text_args_fail(const char *buf, size_t size, const size_t *needed);

/* The region name of segment id (vidmm/observe.h); n >= 16. */
void vidmm_observe_region(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t n);

/* The handle without the adapter's salt and type (bits 0-39: slot and
 * generation): the same in every run that makes the same calls, which
 * the handle itself is not. */
static inline uint64_t vidmm_observe_id(vidmm_handle h)
{
    return VIDMM_HANDLE_LOCAL(h);
}

#endif
