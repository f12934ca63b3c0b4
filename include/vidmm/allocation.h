/*
 * vidmm/allocation.h - allocations: creation, placement, CPU access,
 * moves and display.
 *
 * An allocation is described by the driver (describe_allocation) from the
 * user-mode driver's private data, then placed: vidmm walks the ordered
 * preferred segments, then the rest of the supported set (memory segments
 * in id order, the aperture/system memory last; docs/DECISIONS.md).  How
 * it is laid out follows Microsoft's 'GPU segments' page:
 *
 *                  AccessedPhysically=0   AccessedPhysically=1   Primary, AP=0
 *   memory seg.    set of pages           contiguous             contiguous
 *   aperture       system pages, not      system pages mapped    mapped into the
 *                  mapped (segment 0)     while resident         aperture only
 *                                                                while displayed
 *
 * Allocations are named by handles that carry a generation: a destroyed
 * allocation's handle is rejected with VIDMM_E_INVALID_HANDLE, even after
 * its slot is reused.
 */
#ifndef VIDMM_ALLOCATION_H
#define VIDMM_ALLOCATION_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Handle: bits 0-23 slot index, 24-39 generation, 40-55 adapter salt,
 * 56-63 object type.  0 is never a valid handle. */
typedef uint64_t vidmm_handle;
#define VIDMM_HANDLE_NULL 0u

/* Create one allocation.  private_data goes to the driver's
 * describe_allocation (or, without that op, is a struct
 * vidmm_allocation_info).  Statuses: VIDMM_E_INVALID_ARG (NULL, size 0,
 * unknown flags, AccessedPhysically-only flags misused), VIDMM_E_ALIGNMENT
 * (alignment not a power of two, or not 64 KiB for a 64 KiB-page
 * segment), VIDMM_E_BAD_SEGMENT_SET (empty set, unknown segment, a
 * preference outside the supported set), VIDMM_E_TOO_LARGE (larger than
 * every allowed segment can ever hold), VIDMM_E_NO_SEGMENT_SPACE /
 * VIDMM_E_COMMIT_LIMIT (no room now), VIDMM_E_NO_HOST_MEMORY. */
VIDMM_API vidmm_status vidmm_allocation_create(struct vidmm_adapter *adapter, const void *private_data,
                                     size_t private_data_size, vidmm_handle *out);

/* D3DKMT_CREATEALLOCATIONFLAGS.CreateResident: vidmm_allocation_create is
 * create2 with VIDMM_CREATE_RESIDENT.  Without it the allocation starts
 * evicted - zero bytes in system memory, no GPU placement, never
 * VIDMM_E_NO_SEGMENT_SPACE - and becomes resident on its first
 * make-resident (vidmm/residency.h): this is how a process creates more
 * than the GPU holds. */
#define VIDMM_CREATE_RESIDENT 0x1u
VIDMM_API vidmm_status vidmm_allocation_create2(struct vidmm_adapter *adapter, const void *private_data,
                                      size_t private_data_size, uint32_t flags, vidmm_handle *out);

/* Release the allocation and its placement.  VIDMM_E_BUSY while locked.
 * With a holder's handle of a shared allocation (vidmm/share.h): that
 * holder lets go (VIDMM_E_BUSY while locked through that handle; GPU
 * work using it finishes first, VIDMM_E_TIMEOUT when an engine hung),
 * and the allocation is released with its last holder. */
VIDMM_API vidmm_status vidmm_allocation_destroy(struct vidmm_adapter *adapter, vidmm_handle h);

enum vidmm_layout {
    VIDMM_LAYOUT_PAGES = 0,       /* a set of pages (GPU virtual access only) */
    VIDMM_LAYOUT_CONTIGUOUS = 1   /* one contiguous range */
};

struct vidmm_allocation_state {
    uint64_t size;                /* bytes placed (rounded to the page size) */
    uint64_t requested_size;      /* bytes the driver asked for */
    uint64_t alignment;
    uint32_t flags;               /* VIDMM_ALLOC_* */
    uint32_t segment_id;          /* where it lives: a memory segment, the aperture (mapped), or 0 */
    uint32_t supported_segment_set;
    uint32_t preferred_segment;
    enum vidmm_layout layout;
    uint32_t extent_count;        /* contiguous pieces (1 when contiguous) */
    int aperture_mapped;          /* system pages mapped into the aperture segment now */
    uint64_t aperture_offset;     /* offset in the aperture segment when mapped */
    int displayed;
    uint32_t lock_count;
    uint64_t moves;               /* times moved since creation */
    uint32_t content_lost;        /* adapter resets that lost its content (it then read as zero): vidmm/tdr.h */
    uint32_t reserved;
};

VIDMM_API vidmm_status vidmm_allocation_query(const struct vidmm_adapter *adapter, vidmm_handle h,
                                    struct vidmm_allocation_state *out);

/* A physical reference: (segment id, offset) and a length.  Page-set
 * allocations have several; contiguous ones one.  For system memory
 * (segment 0) the offset is the byte offset in the allocation's backing
 * store. */
struct vidmm_physical_range {
    uint32_t segment_id;
    uint32_t reserved;
    uint64_t offset;
    uint64_t size;
};

/* Fill up to capacity ranges, in allocation order; *count receives the
 * total number (which may exceed capacity). */
VIDMM_API vidmm_status vidmm_allocation_physical_ranges(const struct vidmm_adapter *adapter, vidmm_handle h,
                                              struct vidmm_physical_range *ranges, uint32_t capacity,
                                              uint32_t *count);

/* CPU access.  Requires VIDMM_ALLOC_CPU_VISIBLE (else VIDMM_E_NOT_SUPPORTED).
 * Direct for CPU-visible segments and system memory; through the CPU host
 * aperture for invisible segments that have one; otherwise the allocation
 * is first moved to a CPU-reachable supported segment.  The pointer is
 * valid until the matching unlock; locks nest.  A locked allocation is
 * not moved (VIDMM_E_BUSY).  VIDMM_E_DEVICE_LOST once the adapter is
 * removed (its driver refused an adapter reset, vidmm/tdr.h), even
 * for an allocation already locked. */
VIDMM_API vidmm_status vidmm_allocation_lock(struct vidmm_adapter *adapter, vidmm_handle h, void **cpu_address);
VIDMM_API vidmm_status vidmm_allocation_unlock(struct vidmm_adapter *adapter, vidmm_handle h);

/* Move the allocation to segment_id (in its supported set, or 0 =
 * system memory) with paging operations, keeping its bytes.  Moving to
 * where it already is does nothing; an evicted allocation is in system
 * memory already (0: VIDMM_OK, elsewhere: VIDMM_E_STATE, make it
 * resident first).  An AccessedPhysically allocation in system memory
 * is mapped into the aperture (or an AGP segment) and reports that
 * segment's id; VIDMM_E_BAD_SEGMENT_SET when it supports neither
 * (docs/DECISIONS.md D43). */
VIDMM_API vidmm_status vidmm_allocation_move(struct vidmm_adapter *adapter, vidmm_handle h, uint32_t segment_id);

/* The same move when the content is no longer needed: the source leaves
 * with DISCARD_CONTENT instead of a transfer, and the destination starts
 * zero-filled, as a content-less allocation does. */
VIDMM_API vidmm_status vidmm_allocation_move_discard(struct vidmm_adapter *adapter, vidmm_handle h, uint32_t segment_id);

/* Scan-out: show a primary on a video present source (0..7) (the flip).
 * A primary living in system memory is mapped into the aperture while
 * displayed; the primary shown before on that source stops being
 * displayed (and is unmapped).  h = VIDMM_HANDLE_NULL blanks the source. */
#define VIDMM_MAX_VIDPN_SOURCES 8u
VIDMM_API vidmm_status vidmm_adapter_flip(struct vidmm_adapter *adapter, uint32_t vidpn_source, vidmm_handle h);

#ifdef __cplusplus
}
#endif
#endif
