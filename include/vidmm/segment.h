/*
 * vidmm/segment.h - segments as the manager sees them.
 *
 * Kinds (seed "GPU segments"):
 *   SYSTEM    id 0, implicit: system memory in 4 KiB pages;
 *   MEMORY    memory dedicated to the GPU, a pool of 4 KiB or 64 KiB pages,
 *             CPU-visible (a BAR), reachable through a CPU host aperture,
 *             or not reachable by the CPU at all;
 *   APERTURE  a global page table that makes scattered system pages look
 *             contiguous to the GPU (exactly one in WDDM 2);
 *   AGP       a legacy AGP-type aperture driven through the OS's GART.
 */
#ifndef VIDMM_SEGMENT_H
#define VIDMM_SEGMENT_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vidmm_segment_kind {
    VIDMM_SEGMENT_KIND_SYSTEM = 0,
    VIDMM_SEGMENT_KIND_MEMORY = 1,
    VIDMM_SEGMENT_KIND_APERTURE = 2,
    VIDMM_SEGMENT_KIND_AGP = 3
};

struct vidmm_segment_info {
    uint32_t id;
    enum vidmm_segment_kind kind;
    uint32_t flags;                 /* VIDMM_SEGMENT_* as the driver gave them */
    uint32_t page_size;             /* 4096 or 65536 */
    uint64_t base_address;          /* GPU physical base */
    uint64_t size;                  /* bytes of address space (segment 0: the system memory limit) */
    uint64_t commit_limit;          /* bytes that may be committed */
    uint64_t committed;             /* bytes committed now */
    uint64_t free_bytes;            /* address space not in use (memory, aperture, AGP) */
    uint64_t largest_free;          /* largest contiguous free range */
    uint64_t allocations;           /* allocations resident here */
    int cpu_visible;                /* CPU reaches it directly (memory segment BAR, system memory) */
    int cpu_host_aperture;          /* CPU reaches it through a host aperture */
    uint32_t host_aperture_pages;   /* size of that aperture, in segment pages */
    uint32_t host_aperture_free;    /* pages of it not mapped now */
};

/* id 0 .. segment_count-1 (see vidmm_adapter_info).  VIDMM_E_INVALID_ARG
 * for an id out of range or a NULL pointer. */
VIDMM_API vidmm_status vidmm_segment_query(const struct vidmm_adapter *adapter, uint32_t id, struct vidmm_segment_info *out);

/* "system", "memory", "aperture", "agp". */
VIDMM_API const char *vidmm_segment_kind_str(enum vidmm_segment_kind kind);

/* The DXGK_SEGMENTFLAGS field name of one VIDMM_SEGMENT_* bit a segment
 * reports ("Aperture", "CpuVisible", "Use64KBPages", ...), or NULL for a
 * value that is not such a single bit.  Walk bits 0..31 to name a
 * segment's flags in order. */
VIDMM_API const char *vidmm_segment_flag_name(uint32_t flag);

#ifdef __cplusplus
}
#endif
#endif
