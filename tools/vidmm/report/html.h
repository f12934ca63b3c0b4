/*
 * html.h - the HTML report of `vidmm run` and `vidmm replay` (--html FILE,
 * docs/OUTPUTS.md): one self-contained file with inline CSS and SVG
 * charts - segment occupancy over time per process, per-process usage
 * against budget, paging bandwidth by operation, a memory map of each
 * segment after the last call - and the report's summary as tables.
 *
 * The time series are collected while the calls run, by an observer of
 * the recording layer (tr_set_observer), on the timeline's simulated
 * clock; they are downsampled as they grow, so memory stays bounded
 * however long the run.  Everything written derives from vidmm's answers
 * and that clock: a synchronous replay writes the same bytes.
 */
#ifndef VIDMM_TOOL_HTML_H
#define VIDMM_TOOL_HTML_H

#include "trace/trace.h"

#include <stdio.h>

struct html_series;

/* Series for the adapter t has open, or NULL (out of memory).  Register
 * html_observe with tr_set_observer(t, html_observe, series) before
 * tr_start. */
struct html_series *html_series_new(struct tr *t);
void html_series_free(struct html_series *s);
void html_observe(struct tr *t, const struct tr_tick *k, void *series);
/* Collecting ran out of host memory: the series are incomplete. */
int html_series_oom(const struct html_series *s);

/* The report after the last call. */
void html_write(struct tr *t, const struct html_series *s, FILE *f);

/* Text as HTML character data or attribute value: & < > " ' escaped,
 * control characters and invalid UTF-8 replaced by U+FFFD. */
void html_escape(FILE *f, const char *s);

#endif
