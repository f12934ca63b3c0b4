/*
 * vidmm/process.h - processes and their GPU virtual address spaces
 * (GpuMmu model).
 *
 * Each process owns one GPU VA space and the page tables behind it.  The
 * caller picks GPU virtual addresses (at an address, or anywhere in
 * [min, max]); vidmm keeps the page tables in the segments the driver
 * named and changes them only through UPDATE_PAGE_TABLE and FLUSH_TLB
 * paging operations.  An allocation's GPU virtual address stays the same
 * while vidmm moves its bytes: moves rewrite the page-table entries.
 *
 * Rules (the D3DKMTReserveGpuVirtualAddress and D3DKMTMapGpuVirtualAddress
 * reference pages): reservations are 64 KiB aligned and sized;
 * mappings are 4 KiB granular; VA [0, 64 KiB) is never valid; destroying
 * an allocation removes its mappings from every process.
 */
#ifndef VIDMM_PROCESS_H
#define VIDMM_PROCESS_H

#include "vidmm/export.h"

#include "vidmm/allocation.h"
#include "vidmm/driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many processes an adapter may hold at once: the process table grows
 * on demand (in doubling steps, from 16 slots) up to the bound the
 * caller set in vidmm_adapter_create_info.max_processes; 0 (and a caller
 * of ABI generation 1, which has no such member) gets
 * VIDMM_DEFAULT_MAX_PROCESSES.  VIDMM_MAX_PROCESSES_LIMIT is the largest
 * bound (the 24-bit slot field of a handle).  Each process also needs
 * its root page table in a segment (GpuMmu), which usually runs out
 * first: see docs/DAEMON.md "How many clients". */
#define VIDMM_DEFAULT_MAX_PROCESSES 65536u
#define VIDMM_MAX_PROCESSES_LIMIT 16777216u

/* On an adapter with neither GpuMmu nor IoMmu a process has devices and
 * residency lists but no GPU VA: its VA entries answer
 * VIDMM_E_NOT_SUPPORTED.  Statuses of the table: VIDMM_E_BUSY when the
 * adapter's bound of live processes is reached (or every free slot has
 * served 65,535 processes and was retired, so no stale handle revives);
 * VIDMM_E_NO_HOST_MEMORY when growing the table is refused by the host
 * allocator; VIDMM_E_NO_SEGMENT_SPACE when the root page table fits in
 * no segment.  Creating a process costs O(1) in the number of live
 * processes (amortised over the table's doubling). */
VIDMM_API vidmm_status vidmm_process_create(struct vidmm_adapter *adapter, vidmm_handle *process);
/* Frees the VA space and every page table; the allocations stay. */
VIDMM_API vidmm_status vidmm_process_destroy(struct vidmm_adapter *adapter, vidmm_handle process);

/* What a reserved span reads as (D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE). */
#define VIDMM_GPUVA_RESERVE_NO_ACCESS 0u
#define VIDMM_GPUVA_RESERVE_ZERO      1u
/* Mapping protection. */
#define VIDMM_GPUVA_READ_ONLY  0x1u
#define VIDMM_GPUVA_NO_EXECUTE 0x2u

/* D3DKMTReserveGpuVirtualAddress: at base (64 KiB aligned), or with base 0
 * anywhere in [min, max] (0 = no bound).  VIDMM_E_BUSY when base overlaps
 * anything, VIDMM_E_NO_SEGMENT_SPACE when no hole fits, VIDMM_E_STATE
 * while the adapter is powered down (vidmm/power.h). */
VIDMM_API vidmm_status vidmm_gpuva_reserve(struct vidmm_adapter *adapter, vidmm_handle process, uint64_t base,
                                 uint64_t min, uint64_t max, uint64_t size, unsigned mode, uint64_t *va);

/* D3DKMTMapGpuVirtualAddress: map size bytes of the allocation from
 * offset (both 4 KiB multiples) at base, or anywhere in [min, max].  The
 * PTEs are written before this returns. */
VIDMM_API vidmm_status vidmm_gpuva_map(struct vidmm_adapter *adapter, vidmm_handle process, uint64_t base, uint64_t min,
                             uint64_t max, vidmm_handle allocation, uint64_t offset, uint64_t size,
                             unsigned protection, uint64_t driver_protection, uint64_t *va);

/* Unmap [va, va + size): mapped parts made in a reservation become
 * reserved again, others free. */
VIDMM_API vidmm_status vidmm_gpuva_unmap(struct vidmm_adapter *adapter, vidmm_handle process, uint64_t va, uint64_t size);

/* D3DKMTFreeGpuVirtualAddress: every byte must be reserved or mapped. */
VIDMM_API vidmm_status vidmm_gpuva_free(struct vidmm_adapter *adapter, vidmm_handle process, uint64_t va, uint64_t size);

/* D3DKMTUpdateGpuVirtualAddress: a batch applied in order.  Every target
 * (MAP, UNMAP, COPY destination) lies in one reserved range, every COPY
 * source in one; one bad operation and nothing changes. */
enum vidmm_gpuva_update_type {
    VIDMM_GPUVA_UPDATE_MAP = 0,
    VIDMM_GPUVA_UPDATE_UNMAP = 1,
    VIDMM_GPUVA_UPDATE_COPY = 2
};
struct vidmm_gpuva_update_op {
    uint32_t type;               /* enum vidmm_gpuva_update_type */
    uint32_t protection;         /* MAP: VIDMM_GPUVA_* */
    uint64_t va, size;           /* target; COPY: destination */
    vidmm_handle allocation;     /* MAP */
    uint64_t offset;             /* MAP: bytes into the allocation */
    uint64_t driver_protection;  /* MAP */
    uint32_t unmap_mode;         /* UNMAP: VIDMM_GPUVA_RESERVE_* end state */
    uint32_t reserved;
    uint64_t source;             /* COPY: source VA */
};
VIDMM_API vidmm_status vidmm_gpuva_update(struct vidmm_adapter *adapter, vidmm_handle process,
                                const struct vidmm_gpuva_update_op *ops, uint32_t count);

/* The root page table, as DxgkDdiSetRootPageTable would give it. */
VIDMM_API vidmm_status vidmm_process_root_page_table(const struct vidmm_adapter *adapter, vidmm_handle process,
                                           struct vidmm_physical_address *root);

/* A process's device state.  After a GPU page fault in its address space
 * the device is in the error state (as a WDDM device after a fault): every
 * VA change answers VIDMM_E_DEVICE_LOST; queries still answer and destroy
 * works. */
struct vidmm_process_info {
    int faulted;
    uint32_t fault_flags;        /* VIDMM_FAULT_* of the first fault */
    uint64_t fault_va;           /* the first faulting address */
    uint64_t faults;             /* faults reported */
    uint64_t ranges;             /* reserved + mapped ranges */
    uint64_t page_table_bytes;   /* in all segments */
    uint64_t page_tables;
    uint32_t root_entries;       /* entries of the root now (a resizable root grows) */
    uint32_t reserved;
    uint64_t root_grows;         /* times the resizable root grew */
};
VIDMM_API vidmm_status vidmm_process_query(const struct vidmm_adapter *adapter, vidmm_handle process,
                                 struct vidmm_process_info *out);

/* One range of a process's VA space, for dumps and tests. */
struct vidmm_gpuva_range {
    uint64_t va, size;
    uint32_t state;              /* 1 reserved, 2 mapped */
    uint32_t mode;               /* reserved: VIDMM_GPUVA_RESERVE_* */
    vidmm_handle allocation;     /* mapped */
    uint64_t offset;             /* mapped: byte offset in the allocation */
    uint32_t protection;         /* mapped: VIDMM_GPUVA_* */
    uint32_t reserved;
};
/* Ranges in address order starting at the first one ending after va;
 * fills up to capacity, *count = how many were filled. */
VIDMM_API vidmm_status vidmm_gpuva_query(const struct vidmm_adapter *adapter, vidmm_handle process, uint64_t va,
                               struct vidmm_gpuva_range *ranges, uint32_t capacity, uint32_t *count);

#ifdef __cplusplus
}
#endif
#endif
