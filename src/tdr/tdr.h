/*
 * tdr.h - recovery: engine and adapter resets (internal, never installed).
 */
#ifndef VIDMM_TDR_TDR_H
#define VIDMM_TDR_TDR_H

#include "model/objects.h"

/* A recovery point: run the pending reset now.  Only where the caller
 * and every caller above it hold nothing a reset frees or rewrites
 * (the outermost entry unwinding, a context destroy, the close). */
void vidmm_tdr_run_pending(struct vidmm_adapter *a);

/* Recover a hang found on node (-1 = paging engine): the upcall the
 * fence waits call.  1 if a reset was made now. */
int vidmm_tdr_recover(struct vidmm_adapter *a, int node);

/* Write every page table again and every allocation's entries (their
 * memory lost its content: adapter reset, resume from a power state). */
vidmm_status vidmm_tdr_rebuild_page_tables(struct vidmm_adapter *a);

#endif
