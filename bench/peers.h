/*
 * peers.h - other allocators linked into the benchmark for same-run
 * comparison.
 *
 * bench_peers is a NULL-terminated list of adapters (struct
 * bench_allocator, bench.h).  bench/peers_none.c provides the empty list;
 * `make bench PEERS="my_peer.c other.c"` links those files instead, and one
 * of them must define bench_peers.  Each workload then runs every peer on
 * the identical trace, interleaved with vidmm's allocator and the harness
 * alone, and prints vidmm/peer ratios measured in that one run.
 */
#ifndef VIDMM_BENCH_PEERS_H
#define VIDMM_BENCH_PEERS_H

#include "bench.h"

extern const struct bench_allocator *const bench_peers[];

#endif
