/*
 * host_alloc.c - the default host allocator, and the allocation helpers
 * every module uses (vidmm_halloc, vidmm_hzalloc, vidmm_hfree).
 *
 * aligned_alloc wants the size to be a multiple of the alignment, so the
 * size is rounded up here; free() does not need the size back.  The
 * allocation site names come from src/core/alloc_sites.def.
 */
#include "vidmm/host_alloc.h"

#include "core/alloc_sites.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user_data, size_t size, size_t alignment)
{
    (void)user_data;
    if (alignment < sizeof(void *))
        alignment = sizeof(void *);
    size_t rounded = (size + alignment - 1) & ~(alignment - 1);
    if (rounded < size)
        return NULL;
    return aligned_alloc(alignment, rounded);
}

static void default_free(void *user_data, void *ptr, size_t size, size_t alignment)
{
    (void)user_data;
    (void)size;
    (void)alignment;
    free(ptr);
}

static const struct vidmm_host_allocator default_allocator = {
    default_alloc, default_free, NULL, NULL
};

const struct vidmm_host_allocator *vidmm_default_host_allocator(void)
{
    return &default_allocator;
}

static const char *const site_names[VIDMM_SITE_COUNT] = {
#define VIDMM_ALLOC_SITE(id, name) [VIDMM_SITE_##id] = name,
#include "core/alloc_sites.def"
#undef VIDMM_ALLOC_SITE
};

unsigned vidmm_host_alloc_site_count(void)
{
    return VIDMM_SITE_COUNT;
}

const char *vidmm_host_alloc_site_name(unsigned site)
{
    return site < VIDMM_SITE_COUNT ? site_names[site] : "?";
}

/* ---- the helpers every module allocates with (core/alloc_sites.h) ---- */

void *vidmm_halloc(const struct vidmm_host_allocator *ha, enum vidmm_alloc_site site, size_t size, size_t align)
{
    if (size == 0)
        size = 1;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return vidmm_host_alloc_at(ha, site, size, align);
}

void *vidmm_hzalloc(const struct vidmm_host_allocator *ha, enum vidmm_alloc_site site, size_t size, size_t align)
{
    void *p = vidmm_halloc(ha, site, size, align);
    if (p)
        memset(p, 0, size ? size : 1);
    return p;
}

void vidmm_hfree(const struct vidmm_host_allocator *ha, void *p, size_t size, size_t align)
{
    if (!p)
        return;
    if (size == 0)
        size = 1;
    if (align < sizeof(void *))
        align = sizeof(void *);
    ha->free(ha->user_data, p, size, align);
}
