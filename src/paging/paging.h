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

#endif
