/*
 * handle_fields.h - the allocation object pool's state in the adapter
 * (its `alloc_pool` member, handle/handle.c): objects come from 64-object
 * chunks, released ones are reused first.  model/objects.h embeds it;
 * only src/handle/ names the member.  Types only.
 */
#ifndef VIDMM_HANDLE_HANDLE_FIELDS_H
#define VIDMM_HANDLE_HANDLE_FIELDS_H

struct vidmm_allocation;
struct vidmm_alloc_chunk;

struct vidmm_alloc_pool {
    struct vidmm_allocation *free;  /* released objects (through pool_next), reused first */
    struct vidmm_alloc_chunk *chunks;
};

#endif
