/*
 * ra_layout.c - see ra_layout.h (FNV-1a over every range in order).
 */
#include "ra_layout.h"

static void hash_range(void *ctx, uint64_t off, uint64_t size, int used)
{
    uint64_t *h = ctx;
    *h = (*h ^ off) * 0x100000001B3ull;
    *h = (*h ^ size) * 0x100000001B3ull;
    *h = (*h ^ (uint64_t)used) * 0x100000001B3ull;
}

uint64_t ra_layout(const struct vidmm_range_alloc *ra)
{
    uint64_t h = 0xcbf29ce484222325ull;
    vidmm_ra_for_each(ra, hash_range, &h);
    return h ^ ra->free_bytes ^ (ra->live_count << 40);
}
