/*
 * rmv.h - importing AMD Radeon Memory Visualizer traces (.rmv).
 *
 * An RMV file holds RMT token streams (the format defined by the
 * MIT-licensed radeon_memory_visualizer parser), either in an "AMD_RDF "
 * container (Radeon Developer Panel) or in the legacy chunk file whose
 * magic is 0x494e494d.  The importer decodes every token, then replays
 * the application's virtual allocations (with their heap preferences
 * turned into segment preferences), frees and residency references
 * against vidmm through the recording layer (so an import can be
 * recorded as a vidmm trace), and scores vidmm's placements against the
 * page-table updates the driver recorded.
 */
#ifndef VIDMM_TOOL_RMV_H
#define VIDMM_TOOL_RMV_H

#include "report.h"
#include "trace.h"

#define RMV_TOKEN_TYPES 16
#define RMV_MAX_STREAMS 16

struct rmv_stream_info {
    uint32_t process_id, thread_id;
    uint16_t major, minor;
    uint64_t bytes;
    uint64_t tokens[RMV_TOKEN_TYPES];
    uint64_t unmaps;             /* page-table updates that unmap */
};

struct rmv_import {
    char container[16];          /* "RDF" or "RMT" */
    char adapter[128];
    uint64_t local_base, local_size, invisible_base, invisible_size;
    struct rmv_stream_info stream[RMV_MAX_STREAMS];
    uint32_t streams;
    uint64_t tokens[RMV_TOKEN_TYPES];   /* all streams */
    uint64_t app_pid;            /* the process whose allocations are replayed */
    /* Replay. */
    uint64_t allocations, alloc_failed, alloc_bytes, frees, references_add, references_remove, reference_unmatched;
    uint64_t make_resident_failed, evict_failed;
    uint64_t pref_first[4];      /* first heap preference: local, invisible, system, none */
    /* Placement agreement, at each page-table update that maps pages of a
     * replayed allocation: [trace heap][vidmm placement]. */
    uint64_t agree[3][4], agree_bytes[3][4];
    uint64_t pte_maps_matched, pte_maps_unmatched;
    uint64_t pte_maps_other_process;    /* reported under another process id (the kernel driver's) */
};

/* Does path start with an RMV file's magic ("AMD_RDF " or 0x494e494d)? */
int rmv_is_rmv_file(const char *path);

/* Read and decode path (every stream, every token).  Fills the header
 * of the adapter to replay on (dgpu with the trace's heap sizes).
 * Returns 0, or 1 with a message on stderr.  *state receives the decoded
 * events for rmv_replay (freed by it). */
int rmv_load(const char *path, struct rmv_import *imp, struct tr_header *h, void **state);
/* Replay the loaded events against t; frees state.  Returns 0 or 1. */
int rmv_replay(struct tr *t, struct rmv_import *imp, void *state);
/* The import summary (token counts, replay, agreement) in fmt. */
void rmv_report(const struct rmv_import *imp, enum report_format fmt, FILE *f);

#endif
