/*
 * trace_int.h - what the writer (trace_write.c, trace_write_calls.c) and
 * the timeline (trace_timeline.c) share beyond trace.h: the timeline's two
 * entry points the writer calls, and the writer's line building, object
 * table and rules-checker steps that its call wrappers use.  Not for the
 * rest of the tool.
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

/* ---- the writer's pieces (trace_write.c) ---------------------------- */

/* The seeded pattern of a CPU write or check (seed 0: zeros). */
void trw_pattern_fill(uint64_t *w, uint64_t size, uint64_t seed);
int trw_pattern_matches(const uint64_t *w, uint64_t size, uint64_t seed);
/* A new object id of kind k (0 when the table cannot grow), and the
 * process (its P id) an object belongs to. */
uint32_t trw_new_obj(struct tr *t, enum tr_kind k);
uint32_t trw_process_of(struct tr *t, enum tr_kind k, uint32_t id);
/* An object's name: the one given, else PREFIX<id>. */
void trw_obj_name(struct tr_obj *o, const char *name, char prefix, uint32_t id);
/* Line building: begin (verb, timeline track), arguments, end (status,
 * outputs; counts, records and times the call). */
void trw_line_begin(struct tr *t, enum tr_verb v, uint32_t pid, uint32_t tid);
void trw_line_add(struct tr *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void trw_line_id(struct tr *t, enum tr_kind k, uint32_t id);
void trw_line_list(struct tr *t, const uint32_t *list, uint32_t n);
void trw_line_addr(struct tr *t, const char *key, struct tr_addr a);
void trw_line_flags(struct tr *t, uint32_t flags, const char *const names[2]);
void trw_line_end(struct tr *t, vidmm_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The rules checker's make-resident counters around the call. */
void trw_rules_before_make_resident(struct tr *t);
void trw_rules_after_make_resident(struct tr *t, vidmm_status st);
/* The destroy of an object nothing depends on (paging queue, context). */
vidmm_status trw_destroy_leaf(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid,
                              vidmm_status (*destroy)(struct vidmm_adapter *, vidmm_handle));

#endif
