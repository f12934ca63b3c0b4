/*
 * alloc_sites.h - host allocation site ids and the host memory helpers
 * (internal).
 *
 * Every host allocation of the core names its call site with one id of
 * src/core/alloc_sites.def.  A caller's allocator that sets alloc_site
 * (vidmm/host_alloc.h) receives the id; otherwise vidmm calls its plain
 * alloc.  Modules below the adapter (range allocator, page pool, ring,
 * VA space, policies) call vidmm_host_alloc_at, which passes size and
 * alignment through unchanged; the rest use vidmm_halloc/vidmm_hzalloc.
 */
#ifndef VIDMM_ALLOC_SITES_H
#define VIDMM_ALLOC_SITES_H

#include "vidmm/host_alloc.h"

#include <stddef.h>

enum vidmm_alloc_site {
#define VIDMM_ALLOC_SITE(id, name) VIDMM_SITE_##id,
#include "core/alloc_sites.def"
#undef VIDMM_ALLOC_SITE
    VIDMM_SITE_COUNT
};

/* ha->alloc_site when set, else ha->alloc; no rounding. */
static inline void *vidmm_host_alloc_at(const struct vidmm_host_allocator *ha, enum vidmm_alloc_site site,
                                        size_t size, size_t align)
{
    return ha->alloc_site ? ha->alloc_site(ha->user_data, size, align, (unsigned)site)
                          : ha->alloc(ha->user_data, size, align);
}

/* Size 0 becomes 1 and alignment at least sizeof(void *), as
 * vidmm_hfree expects back. */
void *vidmm_halloc(const struct vidmm_host_allocator *ha, enum vidmm_alloc_site site, size_t size, size_t align);
void *vidmm_hzalloc(const struct vidmm_host_allocator *ha, enum vidmm_alloc_site site, size_t size, size_t align);
void vidmm_hfree(const struct vidmm_host_allocator *ha, void *p, size_t size, size_t align);

#endif
