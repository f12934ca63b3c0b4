/*
 * replay.h - reading the trace format (docs/TRACE_FORMAT.md): the header,
 * then each line executed through the recording layer (trace.h).
 *
 * The same reader serves `vidmm replay FILE` (strict: every call line
 * carries its recorded result, and the result the call gives now must be
 * the same) and scenario files for `vidmm run FILE` (results optional:
 * a line that states one is checked, one that does not just runs; sizes
 * may be written 4M, mapping and GPU access sizes may be left out, and a
 * wait may name the queue's last fence as fence=last).
 */
#ifndef VIDMM_TOOL_REPLAY_H
#define VIDMM_TOOL_REPLAY_H

#include "trace.h"

#include <stdio.h>

struct replay {
    FILE *f;
    const char *path;
    int strict;                  /* replay: results required on call lines */
    int progress;                /* draw a progress bar on stderr */
    uint64_t file_size;

    char *buf;                   /* line buffer, at most TR_MAX_LINE (trace_read.c) */
    size_t buf_cap;
    int failed;                  /* a read fault ended the input (reported) */
    int pending;                 /* buf holds a body line read while looking for the header's end */
    uint64_t lineno;

    /* Proving the input whole (format version 2's end record). */
    int version;                 /* the header's "vidmm-trace N"; 0: none (a scenario file) */
    int in_body;                 /* past the header: call lines are counted */
    int ended;                   /* the end record was read and agreed */
    uint64_t hash;               /* FNV-1a 64 of every byte read */
    uint64_t hash_line;          /* ... of every byte before the line last read */
    uint64_t body_calls;         /* call lines read */

    /* File ids -> the recording layer's ids, per kind (sparse: index = file id). */
    uint32_t *map[TR_KINDS];
    uint32_t map_cap[TR_KINDS];
    uint64_t *last_fence;        /* per recording-layer queue id: fence=last */
    uint32_t last_fence_cap;

    /* The trace was written for another driver than the one it runs on
     * (a softgpu scenario or trace on vkgpu): stated results are held
     * exactly only for the integrity checks (write, check, gpu-read,
     * gpu-write, result, check-adapter); the others are that driver's
     * outcomes, listed and counted in driver_outcomes, and a call the
     * tool does not make there (NOT_APPLICABLE) is not compared, and one
     * recorded NOT_APPLICABLE is not made here (skipped_na).  A
     * create the driver cannot express ends the run: not_applicable
     * (docs/DECISIONS.md D80). */
    int foreign_driver;
    uint64_t driver_outcomes;
    uint64_t skipped_na;         /* calls recorded NOT_APPLICABLE by the other driver: not made here */
    int not_applicable;
    uint64_t executed;           /* call lines run */
    uint64_t checked;            /* lines whose result was compared */
    uint64_t mismatches;
    uint64_t reported;           /* mismatch messages printed (the first 20) */
};

/* Open path and read the header into h (defaults for what it omits).
 * Returns 0, or 1 with a message on stderr and nothing left open (a
 * directory, a line over TR_MAX_LINE, binary data and read errors are
 * refused here, before any adapter is started).  A version-2 trace in a
 * regular file is read through once here to prove it whole (its end
 * record: the call count and checksum agree, nothing follows it); a
 * pipe is proven as it is executed, and refused at its end.  strict
 * (`vidmm replay`) refuses a file without a version line and notes on
 * stderr that a version-1 trace cannot be proven whole. */
int replay_open(struct replay *r, const char *path, struct tr_header *h, int strict);
/* The same on an open stream f (a pipe, a memory buffer: read once, so
 * a version-2 input is proven as it is executed); f is the reader's
 * now, closed by replay_close or on a fault. */
int replay_open_stream(struct replay *r, FILE *f, const char *name, struct tr_header *h, int strict);
/* Execute every remaining line against t.  Returns 0 when every line ran
 * (mismatches are counted in r->mismatches, not failures), 1 on a
 * malformed line (reported with its line number) or a read error. */
int replay_run(struct replay *r, struct tr *t);
void replay_close(struct replay *r);

/* Parse a byte count: decimal or 0x hex, optional K/M/G/T (binary)
 * suffix with optional "iB"/"B".  Returns 0 or -1. */
int tr_parse_u64(const char *s, uint64_t *out);

#endif
