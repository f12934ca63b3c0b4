/*
 * vidmm/host_alloc.h - the caller-replaceable host (CPU) memory allocator.
 *
 * vidmm never calls malloc directly: every host allocation of the core
 * library goes through one of these tables, given when an object is
 * created (Lua's lua_Alloc and SQLite's SQLITE_CONFIG_MALLOC are the
 * models).  Tests wrap it to fail the n-th call and so prove that every
 * call site turns a refusal into VIDMM_E_NO_HOST_MEMORY and leaks nothing.
 */
#ifndef VIDMM_HOST_ALLOC_H
#define VIDMM_HOST_ALLOC_H

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
};

/* The default allocator (aligned_alloc/free).  The returned table is
 * constant; it holds no state. */
const struct vidmm_host_allocator *vidmm_default_host_allocator(void);

#ifdef __cplusplus
}
#endif
#endif
