/*
 * rmv.h - importing AMD Radeon Memory Visualizer traces (.rmv): parse the
 * RMT token stream, replay its allocations and residency references
 * against vidmm, and compare vidmm's placements with the page-table
 * updates the trace recorded.
 */
#ifndef VIDMM_TOOL_RMV_H
#define VIDMM_TOOL_RMV_H

#include "report.h"

/* Does path start with an RMV file's magic? */
int rmv_is_rmv_file(const char *path);
/* `vidmm replay FILE.rmv`: returns the exit status. */
int rmv_replay(const char *path, enum report_format fmt, const char *output);

#endif
