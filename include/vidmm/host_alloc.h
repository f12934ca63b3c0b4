/*
 * vidmm/host_alloc.h - the caller-replaceable host (CPU) memory allocator.
 *
 * vidmm never calls malloc directly: every host allocation of the core
 * library goes through one of these tables, given when an object is
 * created (Lua's lua_Alloc and SQLite's SQLITE_CONFIG_MALLOC are the
 * models).  Tests wrap it to fail the n-th call and so prove that every
 * call site turns a refusal into VIDMM_E_NO_HOST_MEMORY and leaks nothing.
 *
 * Every allocation call site of the core has an id (0 ..
 * vidmm_host_alloc_site_count() - 1, named "module.function.what" by
 * vidmm_host_alloc_site_name()).  An allocator that sets alloc_site is
 * called through it, with the id, instead of through alloc: fault
 * injection per site, accounting per site (docs/HOST_MEMORY.md).  The
 * ids are stable within one build only; compare names across builds.
 * softgpu is a driver, not the core: its own memory does not go through
 * this table.
 */
#ifndef VIDMM_HOST_ALLOC_H
#define VIDMM_HOST_ALLOC_H

#include "vidmm/export.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vidmm_host_allocator {
    /* Return size bytes aligned to alignment (a power of two, at least
     * sizeof(void *)), or NULL.  size is never 0. */
    void *(*alloc)(void *user_data, size_t size, size_t alignment);
    /* Release a block from alloc; size and alignment are those asked for.
     * ptr is never NULL. */
    void (*free)(void *user_data, void *ptr, size_t size, size_t alignment);
    void *user_data;
    /* Optional (NULL = use alloc): alloc with the call site's id.  When
     * set, vidmm calls it for every allocation of the core instead of
     * alloc (alloc is still required: eviction policies given this table
     * call it).  A table initialised with the three members above, or
     * zero-initialised, leaves it NULL. */
    void *(*alloc_site)(void *user_data, size_t size, size_t alignment, unsigned site);
};

/* The default allocator (aligned_alloc/free).  The returned table is
 * constant; it holds no state. */
VIDMM_API const struct vidmm_host_allocator *vidmm_default_host_allocator(void);

/* How many allocation sites the core has; ids are 0 .. count - 1. */
VIDMM_API unsigned vidmm_host_alloc_site_count(void);
/* "module.function.what" of a site id, e.g. "process.create.process";
 * "?" for an id out of range.  Never NULL. */
VIDMM_API const char *vidmm_host_alloc_site_name(unsigned site);

#ifdef __cplusplus
}
#endif
#endif
