/*
 * segment.h - one segment of an adapter (struct vidmm_adapter.seg[id]):
 * what the driver described, what is committed in it, and the range
 * allocators that hand out its address space and its CPU host aperture.
 * A descriptor only: the allocators are range_alloc.h's, placement fills
 * them (placement/placement.c).
 */
#ifndef VIDMM_SEG_SEGMENT_H
#define VIDMM_SEG_SEGMENT_H

#include "vidmm/segment.h"
#include "seg/range_alloc.h"

#include <stdint.h>

struct vidmm_segment {
    uint32_t id;
    enum vidmm_segment_kind kind;
    uint32_t flags;
    uint32_t page_size;
    uint64_t base_address;
    uint64_t size;
    uint64_t commit_limit;
    uint64_t committed;
    uint64_t allocations;
    int has_ra;                     /* memory, aperture and AGP segments hand out address space */
    struct vidmm_range_alloc ra;
    void *cpu_base;                 /* CPU-visible memory segment */
    /* CPU host aperture: a window of host_ap_pages segment pages. */
    unsigned char *host_ap_base;
    uint32_t host_ap_pages;
    int has_host_ap_ra;
    struct vidmm_range_alloc host_ap_ra; /* in units of segment pages (chunk = page_size) */
};

#endif
