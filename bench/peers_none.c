/*
 * peers_none.c - the default, empty peer list (see peers.h).
 */
#include "peers.h"

#include <stddef.h>

const struct bench_allocator *const bench_peers[] = { NULL };
