/*
 * paging_state.h - the paging-buffer ring's own state (private to
 * src/paging/: other modules reach it through paging/paging.h).
 */
#ifndef VIDMM_PAGING_PAGING_STATE_H
#define VIDMM_PAGING_PAGING_STATE_H

#include "model/objects.h"

#define VIDMM_PAGING_SLOTS 8u  /* ring size in paging buffers */

struct vidmm_paging {
    unsigned char *area;            /* the ring's memory: VIDMM_PAGING_SLOTS paging buffers */
    size_t area_size;
    uint32_t buffer_size;           /* PagingBufferSize */
    struct vidmm_ring ring;         /* submitted buffers, trimmed to what they hold, in fence order */
    uint64_t fence_fifo[VIDMM_RING_INLINE_RECS]; /* fence of each live ring record, oldest first */
    uint32_t fence_first;
    int have_buffer;                /* a buffer is reserved and being written */
    unsigned char *start;           /* start of the buffer being written */
    unsigned char *cursor;          /* write position in it */
    uint32_t left;                  /* bytes left in it */
    uint64_t sequence;              /* buffers taken so far: picks the private-data slot */
    void *private_data;             /* VIDMM_RING_INLINE_RECS slots of private_data_size */
    uint32_t private_data_size;
    int ap_mapped;                  /* area mapped into the paging-buffer aperture */
    uint32_t ap_node;
    /* statistics (vidmm_adapter_query_info) */
    uint64_t buffers;               /* submitted */
    uint64_t restarts;              /* INSUFFICIENT_DMA_BUFFER answers */
    uint64_t ops[17];               /* per operation */
    uint64_t bytes[17];
};

#endif
