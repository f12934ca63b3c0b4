/*
 * splitmix.h - splitmix64, the one small PRNG of the tool, the tests, the
 * fuzzers and the benchmarks.
 *
 * One definition so that a seed means the same sequence everywhere: a
 * pattern the demo writes, a trace the generator makes and a benchmark's
 * op list all reproduce from their seed alone.  Static inline, header only,
 * so every program that includes it needs no extra object; the library
 * (src/) does not use it.
 */
#ifndef VIDMM_HARNESS_SPLITMIX_H
#define VIDMM_HARNESS_SPLITMIX_H

#include <stdint.h>

/* The splitmix64 increment (2^64 / golden ratio). */
#define SPLITMIX64_GAMMA 0x9E3779B97F4A7C15ull

/* The splitmix64 output function: a bijective mix of one 64-bit word,
 * usable on its own as a counter-based hash (word i of a pattern). */
static inline uint64_t splitmix64_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Next value of the sequence whose state is *s. */
static inline uint64_t splitmix64_next(uint64_t *s)
{
    return splitmix64_mix(*s += SPLITMIX64_GAMMA);
}

#endif
