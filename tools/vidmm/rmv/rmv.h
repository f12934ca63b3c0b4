/*
 * rmv.h - importing AMD Radeon Memory Visualizer traces (.rmv).
 *
 * An RMV file holds RMT token streams (the format defined by the
 * MIT-licensed radeon_memory_visualizer parser), either in an "AMD_RDF "
 * container (Radeon Developer Panel) or in the legacy chunk file whose magic
 * is 0x494e494d.  rmv_decode.c and rmv_stream.c read every chunk and every
 * token, check what can be checked (token bytes against chunk sizes, chunk
 * regions against the file, the heap table against the system description)
 * and refuse the file with a message at the first inconsistency; what they do
 * not use they name and count.  rmv.c replays the application's virtual
 * allocations (with their heap preferences turned into segment preferences),
 * frees and residency references against vidmm through the recording layer
 * (so an import can be recorded as a vidmm trace), and scores vidmm's
 * placements against the page-table updates the driver recorded.
 */
#ifndef VIDMM_TOOL_RMV_H
#define VIDMM_TOOL_RMV_H

#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "trace/trace.h"

#define RMV_TOKEN_TYPES 16
#define RMV_MAX_STREAMS 16
#define RMV_MAX_CHUNK_KINDS 16
#define RMV_MAX_SNAPSHOTS 8
#define RMV_RESOURCE_TYPES 17        /* image .. misc internal: the types whose payload is known */

struct rmv_stream_info {
    uint32_t process_id, thread_id, index;
    uint16_t major, minor;
    uint32_t chunks;             /* RmtData chunks concatenated into this stream */
    uint64_t bytes;
    uint64_t tokens[RMV_TOKEN_TYPES];
    uint64_t token_bytes[RMV_TOKEN_TYPES];
    uint64_t unmaps;             /* page-table updates that unmap */
    uint64_t pte_update_type[4]; /* discard, update, transfer, reserved */
    uint64_t owner[4];           /* VirtualAllocate owners: application, PAL, client driver, KMD */
    uint64_t resource_type[RMV_RESOURCE_TYPES];
    uint64_t userdata_type[8];
    uint64_t first_ts, last_ts;  /* RMT clock (the Timestamp token's units) */
};

/* A chunk kind of the container: how many, their bytes, and whether the
 * importer reads them (why not, if not). */
struct rmv_chunk_kind {
    char id[17];
    uint32_t count;
    uint64_t bytes;
    const char *skipped;         /* NULL: read; else why it is not */
};

struct rmv_snapshot {
    char name[129];
    uint64_t point;              /* RMT clock */
};

/* What the stream says that does not fit together.  Refused unless the
 * import is lenient (a capture that starts after its process did may
 * free what it never saw allocated), then counted.  A token read at the
 * wrong place, or a flipped bit in an address or id, shows up here. */
struct rmv_anomalies {
    uint64_t free_unknown;       /* VirtualFree of an address no VirtualAllocate gave */
    uint64_t alloc_duplicate;    /* VirtualAllocate at an address already live in the process */
    uint64_t reference_unknown;  /* ResourceReference or CpuMap outside every live allocation */
    uint64_t destroy_unknown;    /* ResourceDestroy of an id never created */
    uint64_t bind_unknown;       /* ResourceBind of an id never created */
    uint64_t create_duplicate;   /* ResourceCreate of a live id */
    uint64_t pte_outside_heaps;  /* PageTableUpdate naming physical memory in no local heap (nor 0, system memory) */
};

/* One replayed process: a process stream of the file (its own vidmm
 * process), or the unattributed mappings (inferred = 1): page-table
 * updates that map pages inside no stream's allocation, which no stream
 * describes (other processes - the compositor and the rest - whose own
 * streams the capture does not hold).  Each maximal mapped range of
 * those becomes an allocation of one more vidmm process. */
#define RMV_MAX_PROCS (RMV_MAX_STREAMS + 1)
enum { RMV_WHY_PREFERENCE, RMV_WHY_SPACE, RMV_WHY_BUDGET, RMV_WHY_NOT_RESIDENT, RMV_WHY_OTHER, RMV_WHY_COUNT };
struct rmv_proc {
    uint64_t pid;
    int inferred;
    uint32_t p, d, q;            /* recording-layer ids (0: not created yet) */
    uint64_t allocations, alloc_failed, alloc_bytes, frees, references_add, references_remove;
    uint64_t agree[3][4], agree_bytes[3][4];   /* [trace heap][vidmm placement] */
    uint64_t why[RMV_WHY_COUNT], why_bytes[RMV_WHY_COUNT];   /* disagreements by cause */
};

struct rmv_import {
    char container[16];          /* "RDF" or "RMT" */
    uint32_t container_version;
    char adapter[129];
    /* AdapterInfo. */
    int have_adapter_info;
    uint32_t family_id, revision_id, device_id, memory_bus_width, min_mem_clock, max_mem_clock;
    /* Heaps: GpuMemSegment (the heap table) when present, else SystemInfo. */
    int have_segments, have_system_info;
    int processes_listed;        /* SystemInfo lists processes: every stream's process must be one */
    uint64_t local_base, local_size, invisible_base, invisible_size, system_size;
    struct rmv_stream_info stream[RMV_MAX_STREAMS];
    uint32_t streams;
    struct rmv_chunk_kind chunk[RMV_MAX_CHUNK_KINDS];
    uint32_t chunk_kinds;
    struct rmv_snapshot snapshot[RMV_MAX_SNAPSHOTS];
    uint32_t snapshots;
    uint64_t tokens[RMV_TOKEN_TYPES];   /* all streams */
    struct rmv_anomalies anomalies;
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
    uint64_t pte_not_update;            /* discard / transfer updates: not mappings (as AMD's page table) */
    /* Every process replayed (streams in file order, then the
     * unattributed mappings), the preference the inferred allocations get
     * (the streams' most common preference list), the adapter. */
    struct rmv_proc proc[RMV_MAX_PROCS];
    uint32_t procs;
    uint8_t inferred_pref[4];
    uint32_t local_scale;        /* the local heaps were divided by this (1: as recorded) */
    uint64_t seg_size[3];        /* vidmm's segments: CPU-visible, invisible, aperture */
    char policy[16];
    uint64_t inferred_maps;      /* page-table updates that created an inferred allocation */
    uint64_t ambiguous_maps;     /* mappings inside allocations of two processes (first stream taken) */
    /* Paging during the replay (vidmm_residency_get_stats). */
    uint64_t evictions, bytes_evicted, restores, bytes_restored, make_resident_over_budget;
    uint64_t hints;              /* next-use hints given (policy belady) */
    uint64_t uses, reuses;       /* make-residents the replay makes; those of an allocation used again later */
    uint64_t created_evicted;    /* no room to create resident: created evicted, then made resident */
};

/* Does path start with an RMV file's magic ("AMD_RDF " or 0x494e494d)? */
int rmv_is_rmv_file(const char *path);

/* Decode the n bytes at d (every chunk, every token), name in messages.
 * Returns 0, or 1 after one message on err (none if err is NULL).  An
 * anomaly (struct rmv_anomalies) is refused, or with lenient counted.  With
 * state non-NULL, *state receives the replayable events (free with
 * rmv_free_state, or hand to rmv_replay). */
int rmv_decode(const uint8_t *d, size_t n, const char *name, struct rmv_import *imp, void **state, FILE *err,
               int lenient);
void rmv_free_state(void *state);
/* The decode summary: chunks, heaps, streams, token counts, what was not
 * used and why, anomalies (text). */
void rmv_decode_report(const struct rmv_import *imp, FILE *f);

/* Read and decode path; fill the header of the adapter to replay on:
 * dgpu sized from the file (the local heap as the CPU-visible memory
 * segment, the invisible heap as the other, each divided by local_scale
 * when it is above 1; the system heap as the aperture and as vidmm's
 * system memory).  Returns 0, or 1 with a message on stderr.  *state
 * receives the decoded events for rmv_replay (freed by it). */
int rmv_load(const char *path, int lenient, uint32_t local_scale, struct rmv_import *imp, struct tr_header *h,
             void **state);
/* Replay the loaded events against t; frees state.  Returns 0 or 1. */
int rmv_replay(struct tr *t, struct rmv_import *imp, void *state);
/* The import summary (token counts, replay, agreement) in fmt. */
void rmv_report(const struct rmv_import *imp, enum report_format fmt, FILE *f);

#endif
