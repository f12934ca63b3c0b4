/*
 * tdr.h - recovery: engine and adapter resets (internal, never installed).
 */
#ifndef VIDMM_TDR_TDR_H
#define VIDMM_TDR_TDR_H

#include "model/objects.h"

/* Run the reset a hang left pending (entry boundaries and recovery
 * points only): 0 none, else what ran. */
#define VIDMM_TDR_RAN_ENGINE 1
#define VIDMM_TDR_RAN_ADAPTER 2
int vidmm_tdr_run_pending(struct vidmm_adapter *a);

/* A hang found on node (-1 = paging engine): confirm it and leave its
 * reset pending (the upcall the fence waits call).  1 if pending. */
int vidmm_tdr_recover(struct vidmm_adapter *a, int node);

/* Write every page table again and every allocation's entries (their
 * memory lost its content: adapter reset, resume from a power state). */
vidmm_status vidmm_tdr_rebuild_page_tables(struct vidmm_adapter *a);

#endif
