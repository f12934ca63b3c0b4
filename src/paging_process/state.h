/*
 * pp_state.h - the system paging process's own state (private to
 * src/paging_process/: other modules reach it through content/content.h).
 */
#ifndef VIDMM_PAGING_PROCESS_STATE_H
#define VIDMM_PAGING_PROCESS_STATE_H

#include "model/objects.h"

/* The system paging process of a GpuMmu adapter whose driver takes the
 * virtual paging ops (paging_process/paging_process.c).  Internal: it is not in
 * the process table and has no handle a caller could name; only its page tables
 * are used (no VA-space bookkeeping: its layout is fixed). */
/* The four scratch windows: source and destination, with 4 KB and with
 * 64 KB entries. */
enum pp_window { PP_SRC, PP_DST, PP_SRC64, PP_DST64 };

struct vidmm_paging_process {
    struct vidmm_process proc;      /* root, tables, PTE buffer; proc.self is its fault token */
    uint64_t scratch_va;            /* source window [scratch_va, +window), destination window right after */
    uint64_t scratch_va64;          /* the same two windows with 64 KB leaves; 0 = none */
    uint64_t window;                /* bytes of each window: the most one virtual op moves */
    uint64_t mapped[4];             /* bytes of each window (enum pp_window) holding valid entries (0 between moves) */
    int unmap_owed;                 /* a driver failure stopped the last unmap: the next move retries it */
    uint64_t moves, chunks;         /* statistics */
    uint64_t chunks64;              /* chunks with a side through a 64 KB window */
    uint64_t faults;                /* page faults reported for it (guarded by the fence lock) */
    uint64_t fault_va;
};

#endif
