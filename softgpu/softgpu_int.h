/*
 * softgpu_int.h - softgpu's internal state, shared by its source files.
 *
 * One struct softgpu holds the preset's segments.  A memory segment is a
 * memfd mapped once (MAP_SHARED|MAP_NORESERVE: sparse until touched); an
 * aperture or AGP segment is a GART (one host page pointer per 4 KiB page,
 * NULL meaning softgpu's own dummy page); a segment with a CPU host
 * aperture also owns a reserved host window remapped page by page onto
 * the memfd.  Nothing here is public: tests include it for white-box
 * checks (softgpu_aperture_entry, softgpu_host_aperture_base).
 */
#ifndef SOFTGPU_INT_H
#define SOFTGPU_INT_H

#include "vidmm/softgpu.h"

#include <stddef.h>
#include <stdint.h>

#define SG_PAGE_4K  4096u
#define SG_PAGE_64K 65536u
#define SG_KIB(x) ((uint64_t)(x) << 10)
#define SG_MIB(x) ((uint64_t)(x) << 20)
#define SG_GIB(x) ((uint64_t)(x) << 30)

/* Largest piece one paging-buffer command moves or fills. */
#define SG_CHUNK SG_MIB(16)

struct sg_segment {
    uint32_t flags;               /* VIDMM_SEGMENT_* */
    uint32_t page_size;           /* 4 KiB or 64 KiB */
    uint64_t base_address;        /* GPU physical base */
    uint64_t size;                /* bytes */
    uint64_t commit_limit;
    int is_memory;                /* neither APERTURE nor AGP: has backing */

    /* Memory segments. */
    int memfd;                    /* -1 when none */
    uint8_t *mem;                 /* mapping of the whole memfd */

    /* Aperture and AGP segments: the GART. */
    void **gart;                  /* size / 4 KiB entries; NULL = softgpu dummy page */
    uint64_t *gart_mapped;        /* bitmap: entry holds an MDL page */
    uint64_t gart_pages;
    size_t gart_bytes;            /* of the gart mapping */

    /* CPU host aperture (SUPPORTS_CPU_HOST_APERTURE). */
    uint8_t *host_ap;             /* reserved window, host_ap_pages * page_size */
    uint32_t host_ap_pages;
    int64_t *host_ap_map;         /* segment page shown by each window page, -1 = none */
};

struct softgpu {
    char preset[16];
    uint32_t nb_segment;
    struct sg_segment seg[SOFTGPU_MAX_SEGMENTS + 1]; /* [1..nb_segment] */
    uint32_t paging_buffer_segment_id;
    uint32_t paging_buffer_size;
    struct vidmm_driver_caps caps;
    uint64_t agp_base, agp_size;  /* 0/0 without an AGP segment */

    /* Segment ids per role (0 = none), for describe_allocation. */
    uint32_t vis_id, invis_id, ap_id, agp_id;

    void *dummy_page;             /* 4 KiB of zeros */
    uint32_t inject_insufficient;
    struct softgpu_stats stats;
};

/* memory.c */
vidmm_status sg_memory_create(struct sg_segment *s, uint32_t id, int prefault);
void sg_memory_destroy(struct sg_segment *s);
uint64_t sg_available_ram(void);

/* aperture.c: the GART */
vidmm_status sg_gart_create(struct sg_segment *s);
void sg_gart_destroy(struct sg_segment *s);
void sg_gart_map(struct softgpu *sg, struct sg_segment *s, uint64_t first, uint64_t count, uint8_t *pages);
void sg_gart_unmap(struct softgpu *sg, struct sg_segment *s, uint64_t first, uint64_t count, void *dummy);
int sg_gart_is_mapped(const struct sg_segment *s, uint64_t page);
int sg_gart_check(const struct softgpu *sg, const struct sg_segment *s, uint64_t *mapped);

/* host_aperture.c */
vidmm_status sg_host_aperture_create(struct sg_segment *s);
void sg_host_aperture_destroy(struct sg_segment *s);
int sg_host_aperture_check(const struct sg_segment *s, uint64_t *mapped);
vidmm_status sg_map_cpu_host_aperture(void *driver, const struct vidmm_map_cpu_host_aperture_args *args);
vidmm_status sg_unmap_cpu_host_aperture(void *driver, const struct vidmm_unmap_cpu_host_aperture_args *args);

/* Host bytes of [offset, offset+len) in segment s as the GPU sees them:
 * returns a pointer valid for *run bytes (<= len; a memory segment gives
 * the whole range, an aperture up to the end of one 4 KiB page).  For an
 * aperture page that is not mapped, the entry's dummy page is returned
 * and *mapped is set to 0. */
uint8_t *sg_resolve(struct softgpu *sg, const struct sg_segment *s, uint64_t offset, uint64_t len,
                    uint64_t *run, int *mapped);

/* query.c */
vidmm_status sg_query_adapter_info(void *driver, const struct vidmm_query_adapter_info_args *args);
vidmm_status sg_describe_allocation(void *driver, struct vidmm_describe_allocation_args *args);

/* paging.c */
vidmm_status sg_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args);
vidmm_status sg_submit_command(void *driver, const struct vidmm_submit_command_args *args);
void sg_fill32(uint8_t *dst, uint64_t size, uint32_t pattern);

/* White-box access for tests. */
/* The host page the GART entry points at (softgpu's dummy page for an
 * entry never mapped), or NULL for a bad segment/page. */
const void *softgpu_aperture_entry(const struct softgpu *sg, uint32_t segment_id, uint64_t page);
/* Start of segment_id's CPU host aperture window, or NULL. */
const void *softgpu_host_aperture_base(const struct softgpu *sg, uint32_t segment_id);
/* softgpu's own dummy page. */
const void *softgpu_dummy_page(const struct softgpu *sg);

#endif
