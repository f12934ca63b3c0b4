/*
 * fault_alloc.h - a host allocator for tests that can refuse on demand.
 *
 * It counts live blocks and bytes (so a test can assert nothing leaked)
 * and fails the call number fail_at (1-based; 0 = never fail).  Sweeping
 * fail_at from 1 until a run succeeds visits every allocation call site
 * of an operation.  With fail_forever set it refuses fail_at and every
 * call after it (SQLite's "fail-forever" mode: an error path that
 * allocates again must cope too).  It takes vidmm's allocation site ids
 * (vidmm_host_allocator.alloc_site) and counts, per site, the calls that
 * reached it and the ones it refused.
 */
#ifndef VIDMM_FAULT_ALLOC_H
#define VIDMM_FAULT_ALLOC_H

#include "vidmm/host_alloc.h"

#include <stdint.h>

/* More than vidmm_host_alloc_site_count(); fault_alloc_init checks. */
#define FAULT_ALLOC_MAX_SITES 128u
/* last_site of a call that came through plain alloc (no site id). */
#define FAULT_ALLOC_NO_SITE UINT32_MAX

struct fault_alloc {
    struct vidmm_host_allocator ha;  /* hand &fa.ha to vidmm */
    uint64_t calls;                  /* alloc calls so far */
    uint64_t fail_at;                /* fail this call (1-based), 0 = never */
    uint64_t failures;               /* refusals so far */
    int64_t live_blocks;
    int64_t live_bytes;
    int fail_forever;                /* refuse fail_at and every later call */
    uint32_t last_site;              /* site of the last call (FAULT_ALLOC_NO_SITE: plain alloc) */
    uint32_t last_fail_site;         /* site of the last refusal */
    uint64_t site_hits[FAULT_ALLOC_MAX_SITES];   /* calls per site */
    uint64_t site_fails[FAULT_ALLOC_MAX_SITES];  /* refusals per site */
    uint64_t plain_calls;            /* calls through alloc (no site id) */
    /* Live blocks per site (index FAULT_ALLOC_MAX_SITES: plain alloc);
     * each block carries its site in a header before it. */
    int64_t site_live[FAULT_ALLOC_MAX_SITES + 1];
    int64_t site_live_bytes[FAULT_ALLOC_MAX_SITES + 1];
};

void fault_alloc_init(struct fault_alloc *fa);
/* Fail the n-th call from now (n >= 1), once or from then on. */
void fault_alloc_arm(struct fault_alloc *fa, uint64_t n, int forever);
void fault_alloc_disarm(struct fault_alloc *fa);

#endif
