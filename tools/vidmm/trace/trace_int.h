/*
 * trace_int.h - what the writer (trace_write.c) and the timeline
 * (trace_timeline.c) share beyond trace.h: the timeline's two entry
 * points the writer calls.  Not for the rest of the tool.
 */
#ifndef VIDMM_TOOL_TRACE_INT_H
#define VIDMM_TOOL_TRACE_INT_H

#include "trace.h"

/* A metadata event naming track (pid, tid) of the timeline: what is
 * "process_name" or "thread_name".  Nothing when no timeline is on. */
void tl_meta(struct tr *t, const char *what, uint32_t pid, uint32_t tid, const char *name);
/* The events of the call just finished (its line is t->line) on the
 * timeline and for the observer; advances the simulated clock. */
void tl_call(struct tr *t, const char *name, const char *cat);

#endif
