/*
 * fault_alloc.h - a host allocator for tests that can refuse on demand.
 *
 * It counts live blocks and bytes (so a test can assert nothing leaked)
 * and fails the call number fail_at (1-based; 0 = never fail).  Sweeping
 * fail_at from 1 until a run succeeds visits every allocation call site
 * of an operation.
 */
#ifndef VIDMM_FAULT_ALLOC_H
#define VIDMM_FAULT_ALLOC_H

#include "vidmm/host_alloc.h"

#include <stdint.h>

struct fault_alloc {
    struct vidmm_host_allocator ha;  /* hand &fa.ha to vidmm */
    uint64_t calls;                  /* alloc calls so far */
    uint64_t fail_at;                /* fail this call (1-based), 0 = never */
    uint64_t failures;               /* refusals so far */
    int64_t live_blocks;
    int64_t live_bytes;
};

void fault_alloc_init(struct fault_alloc *fa);

#endif
