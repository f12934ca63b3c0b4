/*
 * scenario.h - the built-in scenarios of `vidmm run`.
 *
 * A scenario drives vidmm only through the recording layer (trace.h), so
 * every run can be recorded and replayed.  It may query vidmm to decide
 * what to do next (which allocations to trim, for instance): queries do
 * not change state, and the replay re-executes the calls those decisions
 * produced, not the decisions.
 */
#ifndef VIDMM_TOOL_SCENARIO_H
#define VIDMM_TOOL_SCENARIO_H

#include "trace/trace.h"

struct scenario_params {
    uint64_t seed;
    uint32_t frames;             /* 0 = the scenario's default */
};

struct scenario {
    const char *name;
    const char *summary;
    const char *preset;                              /* adapter it runs on */
    uint64_t segment_size[SOFTGPU_MAX_SEGMENTS + 1]; /* defaults (small, so a run takes about a second) */
    uint32_t frames;                                 /* default frame count */
    /* Returns the number of unexpected outcomes (0 = ran as designed). */
    int (*run)(struct tr *t, const struct scenario_params *p, FILE *log);
};

/* NULL-terminated. */
const struct scenario *const *scenarios(void);
const struct scenario *scenario_find(const char *name);

#endif
