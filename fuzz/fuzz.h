/*
 * fuzz.h - what the libFuzzer harnesses of fuzz/ share: the entry point
 * every harness defines, a bounded reader that turns the input bytes into
 * decisions (zeros once the input is used up, so every input is valid),
 * and FUZZ_REQUIRE, the one way a harness reports a violated invariant
 * (abort(), which libFuzzer and the replayer both treat as a crash).
 */
#ifndef VIDMM_FUZZ_H
#define VIDMM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_in {
    const uint8_t *p;
    size_t n, i;
};

static inline int fz_done(const struct fz_in *in) { return in->i >= in->n; }

static inline uint8_t fz_u8(struct fz_in *in) { return in->i < in->n ? in->p[in->i++] : 0; }

static inline uint16_t fz_u16(struct fz_in *in)
{
    uint16_t v = fz_u8(in);
    return (uint16_t)(v | (uint16_t)fz_u8(in) << 8);
}

static inline uint32_t fz_u32(struct fz_in *in)
{
    uint32_t v = fz_u16(in);
    return v | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(struct fz_in *in)
{
    uint64_t v = fz_u32(in);
    return v | (uint64_t)fz_u32(in) << 32;
}

#define FUZZ_REQUIRE(cond, ...)                                                    \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
            abort();                                                               \
        }                                                                          \
    } while (0)

#endif
