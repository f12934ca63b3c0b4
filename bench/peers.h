/*
 * peers.h - other allocators linked into the benchmark for same-run
 * comparison.
 *
 * bench_peers is a NULL-terminated list of adapters (struct
 * bench_allocator, bench.h) for workloads A, B2, C and D.
 * bench/peers_none.c provides the empty list; `make bench PEERS="my_peer.c
 * other.o"` links those files instead, and one of them must define
 * bench_peers.  Each workload then runs every peer that fits it
 * (bench_fits) on the identical trace, interleaved with vidmm's
 * allocators and the harness alone, and prints vidmm/peer ratios measured
 * in that one run; every verdict is such a ratio.
 *
 * Workloads E and G have hooks of their own (below).  Their lists are
 * optional: the bench defines empty ones as weak symbols, so a peer file
 * that defines only bench_peers (as the peer kit's lists do) still links,
 * and one that defines bench_evict_peers or bench_va_peers replaces them.
 */
#ifndef VIDMM_BENCH_PEERS_H
#define VIDMM_BENCH_PEERS_H

#include "bench.h"

extern const struct bench_allocator *const bench_peers[];

/* Workload E (eviction under over-commitment): a range allocator with a
 * drm_mm_scan-style eviction scan.  The bench owns the allocations, named
 * by id (< max_ids, recycled), their LRU order and the request stream;
 * the adapter places ids and plans evictions.  The same loop drives
 * vidmm's range allocator and scan through this interface (the "hook"
 * rows of E), so a peer is compared with code paths of equal shape. */
struct bench_evict_peer {
    const char *name;
    void *(*create)(uint64_t range, uint64_t chunk, uint32_t max_ids);
    void (*destroy)(void *);
    /* Place allocation id (size, align: powers of two >= chunk);
     * 0 on success, non-zero when no hole fits.  after_scan is set on the
     * retry right after a scan's victims were freed (drm_mm places it
     * with DRM_MM_INSERT_EVICT there). */
    int (*alloc)(void *, uint32_t id, uint64_t size, uint64_t align, int after_scan);
    void (*free)(void *, uint32_t id);
    /* Start a scan for a hole of (size, align); add blocks in eviction
     * order until scan_add returns 1 (a hole can be formed); scan_end
     * then calls victim() for every added block that must be evicted -
     * the bench frees them through free() after scan_end returns - and
     * forgets the roster.  scan_end also follows a scan that found
     * nothing (no victims then). */
    void (*scan_begin)(void *, uint64_t size, uint64_t align);
    int (*scan_add)(void *, uint32_t id);
    void (*scan_end)(void *, void (*victim)(void *ctx, uint32_t id), void *ctx);
};
extern const struct bench_evict_peer *const bench_evict_peers[];

/* Workload G (VA map / unmap with splits, drm_gpuvm sm_map / sm_unmap):
 * map replaces whatever it covers, unmap cuts what it covers. */
struct bench_va_peer {
    const char *name;
    void *(*create)(unsigned va_bits);
    void (*destroy)(void *);
    /* 0 on success; obj is a new object handle per map (as va_bench.c
     * passes to vidmm_va_map). */
    int (*map)(void *, uint64_t va, uint64_t size, uint64_t obj);
    int (*unmap)(void *, uint64_t va, uint64_t size);
    uint64_t (*live)(void *); /* live mappings */
};
extern const struct bench_va_peer *const bench_va_peers[];

#endif
