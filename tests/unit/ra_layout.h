/*
 * ra_layout.h - a fingerprint of a range allocator's whole layout, used by
 * the allocator tests to prove "state unchanged" after a refused call.
 */
#ifndef VIDMM_TEST_RA_LAYOUT_H
#define VIDMM_TEST_RA_LAYOUT_H

#include "seg/range_alloc.h"

uint64_t ra_layout(const struct vidmm_range_alloc *ra);

#endif
