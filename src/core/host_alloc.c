/*
 * host_alloc.c - the default host allocator.
 *
 * aligned_alloc wants the size to be a multiple of the alignment, so the
 * size is rounded up here; free() does not need the size back.
 */
#include "vidmm/host_alloc.h"

#include <stdlib.h>

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
    default_alloc, default_free, NULL
};

const struct vidmm_host_allocator *vidmm_default_host_allocator(void)
{
    return &default_allocator;
}
