/*
 * range_alloc_int.h - the range allocator's node layout and size-class
 * arithmetic, shared by its allocation paths (range_alloc.c) and its
 * walkers (range_alloc_check.c).  Private to seg/.
 */
#ifndef VIDMM_SEG_RANGE_ALLOC_INT_H
#define VIDMM_SEG_RANGE_ALLOC_INT_H

#include "seg/range_alloc.h"

#include <stdint.h>

#define RA_NIL  VIDMM_RA_NONE /* no node (0xFFFFFFFF) */
#define RA_USED 0xFFFFFFFEu   /* prev_free of a live allocation */
#define RA_SLOT 0xFFFFFFFDu   /* prev_free of an unused slot (next_free chains slots) */
#define RA_MAX_NODES 0x7FFFFFFFu

/* 64 second-level bins per power of two, one uint64 bitmap word each. */
#define SL_LOG2 6u
#define SL_COUNT 64u
#define SLBIT(sl) (UINT64_C(1) << (sl))

struct vidmm_ra_node {
    uint64_t offset;
    uint64_t size;
    uint32_t prev_phys, next_phys;
    /* Free range: its bin's list links.  Live allocation: prev_free is
     * RA_USED and next_free the class index of its size, so a free that
     * merges with nothing inserts it without recomputing the mapping. */
    uint32_t prev_free, next_free;
};

/* ---- bit helpers: builtins where available, portable loops otherwise ---- */

static inline unsigned msb64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__)
    return 63u - (unsigned)__builtin_clzll(x);
#else
    unsigned r = 0;
    if (x >> 32) { x >>= 32; r += 32; }
    if (x >> 16) { x >>= 16; r += 16; }
    if (x >> 8) { x >>= 8; r += 8; }
    if (x >> 4) { x >>= 4; r += 4; }
    if (x >> 2) { x >>= 2; r += 2; }
    if (x >> 1) r += 1;
    return r;
#endif
}

static inline unsigned ctz64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    return msb64(x & (~x + 1));
#endif
}

/* Size class of n chunks (n >= 1). */
static inline void mapping(uint64_t n, unsigned *fl, unsigned *sl)
{
    if (n < SL_COUNT) {
        *fl = 0;
        *sl = (unsigned)n;
    } else {
        unsigned m = msb64(n);
        *fl = m - SL_LOG2 + 1;
        *sl = (unsigned)(n >> (m - SL_LOG2)) & (SL_COUNT - 1);
    }
}

/* Smallest size in chunks of bin (fl, sl). */
static inline uint64_t bin_low(unsigned fl, unsigned sl)
{
    if (fl == 0)
        return sl;
    return (uint64_t)(SL_COUNT + sl) << (fl - 1);
}

/* Class index fl * SL_COUNT + sl of n chunks. */
static inline unsigned class_index(uint64_t n)
{
    unsigned fl, sl;
    mapping(n, &fl, &sl);
    return fl * SL_COUNT + sl;
}

static inline int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

#endif
