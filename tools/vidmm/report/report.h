/*
 * report.h - what `vidmm run` and `vidmm replay` print, and the files
 * they write (docs/OUTPUTS.md).
 *
 * Every output is computed from vidmm's answers to queries and the
 * recording layer's counters after the last call, never from handles,
 * host addresses or clocks: a synchronous replay of a recorded run
 * writes the same bytes.
 */
#ifndef VIDMM_TOOL_REPORT_H
#define VIDMM_TOOL_REPORT_H

#include "trace/trace.h"

#include <stdio.h>

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_CSV };

/* The summary: segments, per-process usage against budget, residency,
 * paging traffic by operation, faults, fence waits, integrity. */
void report_write(struct tr *t, enum report_format fmt, FILE *f);

/* The same summary as HTML tables, a <section id="summary"> for the
 * HTML report (html.c). */
void report_write_html(struct tr *t, FILE *f);

/* A statistics snapshot in the GpuMemDump JSON layout (D3D12 Memory
 * Allocator / VMA's BuildStatsString, GpuMemDumpVis): the library's
 * vidmm_adapter_stats_json. */
void snapshot_write(struct tr *t, FILE *f);

/* The segments' memory map as SVG, each segment at its own scale (memmap.c). */
void memmap_write(struct tr *t, FILE *f);

/* Every live process's DRM fdinfo text (the library's), each after a
 * "# P<id> <name>" line and followed by an empty line. */
void fdinfo_write(struct tr *t, FILE *f);

/* The Chrome Trace Event JSON timeline from the events the recording
 * layer collected (tr_enable_timeline). */
void timeline_write(const struct tr *t, const struct tr_buf *events, FILE *f);

#endif
