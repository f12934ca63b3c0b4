/*
 * paging.h - paging buffers: build, submit, flush (internal, never installed).
 */
#ifndef VIDMM_PAGING_PAGING_H
#define VIDMM_PAGING_PAGING_H

#include "model/objects.h"

vidmm_status vidmm_paging_init(struct vidmm_adapter *a, uint32_t buffer_size, uint32_t private_size);

void vidmm_paging_fini(struct vidmm_adapter *a);

/* Encode one operation, restarting in a fresh buffer as the driver asks. */
vidmm_status vidmm_paging_emit(struct vidmm_adapter *a, struct vidmm_build_paging_buffer_args *op);

/* Submit what is queued and wait until the GPU finished everything. */
vidmm_status vidmm_paging_flush(struct vidmm_adapter *a);

/* Submit what is queued without waiting; *last_fence (may be NULL) is
 * the fence after which everything submitted so far is done. */
vidmm_status vidmm_paging_submit(struct vidmm_adapter *a, uint64_t *last_fence);

/* PagingBufferSize, as the driver gave it. */
uint32_t vidmm_paging_buffer_size(const struct vidmm_adapter *a);

/* Changes whenever paging work is queued (a buffer taken or submitted):
 * compare two marks to know whether an operation emitted any. */
uint64_t vidmm_paging_work_mark(const struct vidmm_adapter *a);

/* The paging statistics of vidmm_adapter_query_info. */
void vidmm_paging_stats(const struct vidmm_adapter *a, struct vidmm_adapter_info *out);

/* The ring mapped into the paging-buffer aperture: 1 and the aperture
 * range's size and commitment (the checker sums every user). */
int vidmm_paging_aperture_use(const struct vidmm_adapter *a, uint64_t *used, uint64_t *committed);

/* The ring is sound, holds at most the buffers in flight plus the one
 * being written, and their fences increase. */
struct vidmm_report;
void vidmm_paging_check(const struct vidmm_adapter *a, struct vidmm_report *r);

#endif
