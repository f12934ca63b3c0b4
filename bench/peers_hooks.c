/*
 * peers_hooks.c - the default, empty E and G peer lists (peers.h).
 *
 * Weak, so that a peer file linked through PEERS may define its own lists
 * and the peer lists written before the hooks existed, which define only
 * bench_peers, link unchanged.  (The bench is a program built with gcc or
 * clang; the core library uses no such attribute.)
 */
#include "peers.h"

#include <stddef.h>

__attribute__((weak)) const struct bench_evict_peer *const bench_evict_peers[] = { NULL };
__attribute__((weak)) const struct bench_va_peer *const bench_va_peers[] = { NULL };
