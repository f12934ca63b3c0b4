/*
 * vidmm/adapter.h - opening an adapter: the driver's segments become the
 * manager's.
 *
 * vidmm_adapter_open() runs the two-call segment query of
 * DxgkDdiQueryAdapterInfo (count, then descriptors), validates the answer
 * and builds one segment object per descriptor plus the implicit
 * system-memory segment 0.  A description it cannot accept fails with
 * VIDMM_E_BAD_DRIVER_DESC and a message that names the fault, written to
 * the caller's error buffer.
 *
 * Threading (docs/THREADING.md): every entry may be called from several
 * threads at once.  Entries that read or change adapter state serialise
 * on the adapter's one recursive lock, as WDDM's VidMm does on its
 * device-wide lock; CPU fence waits (vidmm_context_wait,
 * vidmm_paging_queue_wait) sleep without it.  The driver callbacks
 * (vidmm_cb_notify_*) come from any thread and never take it.  User
 * callbacks (trim notifications, eviction policies) run with it held and
 * may call back in on the same thread.  Exceptions: vidmm_adapter_open
 * makes a new adapter; vidmm_adapter_close requires that no other thread
 * is inside the adapter.  Lock order: adapter lock -> paging lock -> the
 * driver's own locks.
 */
#ifndef VIDMM_ADAPTER_H
#define VIDMM_ADAPTER_H

#include "vidmm/export.h"
#include "vidmm/version.h"

#include "vidmm/driver.h"
#include "vidmm/host_alloc.h"
#include "vidmm/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_adapter;

struct vidmm_adapter_create_info {
    /* VIDMM_ABI_VERSION of the headers the caller was compiled with
     * (vidmm/version.h): the layout of this and every structure the
     * caller passes or receives.  Required (0 is refused), so a member
     * added later is never read from a caller that does not have it. */
    uint32_t abi_version;
    const struct vidmm_driver_ops *ops;     /* required */
    void *driver;                           /* first argument of every op */
    const struct vidmm_host_allocator *host_allocator; /* NULL = vidmm_default_host_allocator() */
    /* The AGP aperture the OS found (DXGK_QUERYSEGMENTIN); 0/0 = none, and
     * then a driver that reports an AGP segment fails to start.  Base and
     * size are 4 KB multiples and the range ends at or below 2^64 - 1
     * (VIDMM_E_INVALID_ARG otherwise). */
    uint64_t agp_aperture_base;
    uint64_t agp_aperture_size;
    /* Bytes of system memory vidmm may commit for allocations (segment 0);
     * 0 = half of the host's physical memory, at least 64 MiB (the WDDM
     * TotalSystemMemoryAvailableForGraphics rule); a limit below 4 KB is
     * refused (VIDMM_E_INVALID_ARG), others are rounded down to 4 KB. */
    uint64_t system_memory_limit;
    /* Optional: receives a message naming the fault when open fails. */
    char *error_message;
    size_t error_message_size;
    /* ABI generation 2.  At most this many live processes (vidmm/process.h);
     * 0 = VIDMM_DEFAULT_MAX_PROCESSES; above VIDMM_MAX_PROCESSES_LIMIT is
     * refused (VIDMM_E_INVALID_ARG).  The process table grows on demand
     * up to it; a caller of generation 1 gets the default. */
    uint32_t max_processes;
};

VIDMM_API vidmm_status vidmm_adapter_open(const struct vidmm_adapter_create_info *info,
                                struct vidmm_adapter **adapter_out);

/* Destroys every allocation still alive, then the adapter. NULL is a no-op.
 * No other thread may be inside the adapter, or enter it afterwards. */
VIDMM_API void vidmm_adapter_close(struct vidmm_adapter *adapter);

struct vidmm_adapter_info {
    uint32_t wddm_version;
    uint32_t memory_management_caps;
    uint32_t physical_adapter_flags;
    uint32_t segment_count;             /* including segment 0 */
    uint32_t aperture_segment_id;       /* 0 if the driver reports none */
    uint32_t agp_segment_id;            /* 0 if none */
    uint32_t paging_buffer_segment_id;
    uint32_t paging_buffer_size;
    uint64_t aperture_segment_commit_limit; /* global cap, 0 = none */
    uint64_t live_allocations;
    /* Paging statistics since open. */
    uint64_t paging_buffers_submitted;
    uint64_t paging_restarts;           /* INSUFFICIENT_DMA_BUFFER answers */
    uint64_t paging_ops[17];            /* per vidmm_paging_operation value */
    uint64_t paging_bytes[17];          /* bytes moved/filled/mapped per operation */
    uint64_t last_fence_submitted;
    uint64_t last_fence_completed;
};

VIDMM_API vidmm_status vidmm_adapter_query_info(const struct vidmm_adapter *adapter, struct vidmm_adapter_info *out);

/* Walk every structure of the adapter (segments, allocators, allocations,
 * aperture mappings, commit accounting) and count invariant violations.
 * 0 means sound.  If report is not NULL each violation is described
 * there (one line each, truncated to report_size). */
VIDMM_API int vidmm_adapter_check(const struct vidmm_adapter *adapter, char *report, size_t report_size);

#ifdef __cplusplus
}
#endif
#endif
