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


/* The harnesses' host allocator: counts live blocks and bytes, can refuse
 * call number fail_at (1-based, 0 = never), and checks every free
 * against its allocation - a header in front of each block records size
 * and alignment, so a free with another size (which would unbalance a
 * byte count only much later) aborts at the faulty call site. */
#include "vidmm/host_alloc.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

/* Atomic: with softgpu's engine threads (api_stream's asynchronous
 * mode) vidmm may allocate and free on a fence callback while the
 * harness thread calls in. */
struct fz_alloc {
    struct vidmm_host_allocator ha;
    _Atomic uint64_t calls, fail_at, failures;
    _Atomic int64_t live_blocks, live_bytes;
};

struct fz_alloc_hdr {
    uint64_t magic, size, alignment, reserved;
};
#define FZ_ALLOC_MAGIC 0x7669646d6d667a21ull
#define FZ_ALLOC_MAX ((size_t)256 << 20)

static inline void *fz_alloc_alloc(void *ud, size_t size, size_t alignment)
{
    struct fz_alloc *fa = ud;
    uint64_t call = ++fa->calls;
    if (fa->fail_at && call == fa->fail_at) {
        fa->failures++;
        return NULL;
    }
    size_t pre = alignment > sizeof(struct fz_alloc_hdr) ? alignment : sizeof(struct fz_alloc_hdr);
    /* A host with 256 MiB to give: larger requests (a driver describing
     * page tables of 2^28 entries makes vidmm ask for gigabytes) are
     * refused, as under memory pressure, instead of exhausting the
     * fuzzer's memory limit. */
    if ((alignment & (alignment - 1)) || alignment < sizeof(void *) || size > FZ_ALLOC_MAX) {
        fa->failures++;
        return NULL;
    }
    size_t al = alignment < 16 ? 16 : alignment;   /* pre (32 or alignment) keeps the block aligned */
    size_t total = (pre + size + al - 1) & ~(al - 1);  /* aligned_alloc wants a multiple of al */
    uint8_t *base = aligned_alloc(al, total);
    if (!base)
        return NULL;
    struct fz_alloc_hdr h = { FZ_ALLOC_MAGIC, size, alignment, 0 };
    memcpy(base + pre - sizeof h, &h, sizeof h);
    fa->live_blocks++;
    fa->live_bytes += (int64_t)size;
    return base + pre;
}

static inline void fz_alloc_free(void *ud, void *ptr, size_t size, size_t alignment)
{
    struct fz_alloc *fa = ud;
    size_t pre = alignment > sizeof(struct fz_alloc_hdr) ? alignment : sizeof(struct fz_alloc_hdr);
    struct fz_alloc_hdr h;
    memcpy(&h, (uint8_t *)ptr - sizeof h, sizeof h);
    if (h.magic != FZ_ALLOC_MAGIC || h.size != size || h.alignment != alignment) {
        fprintf(stderr, "fuzz: host free of %p with size %zu alignment %zu; allocated with size %llu alignment %llu%s\n",
                ptr, size, alignment, (unsigned long long)h.size, (unsigned long long)h.alignment,
                h.magic != FZ_ALLOC_MAGIC ? " (no header: not ours, or corrupted)" : "");
        abort();
    }
    memset((uint8_t *)ptr - sizeof h, 0, sizeof h);
    fa->live_blocks--;
    fa->live_bytes -= (int64_t)size;
    free((uint8_t *)ptr - pre);
}

static inline void fz_alloc_init(struct fz_alloc *fa)
{
    memset(fa, 0, sizeof *fa);
    fa->ha.alloc = fz_alloc_alloc;
    fa->ha.free = fz_alloc_free;
    fa->ha.user_data = fa;
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

/* The system memory every harness gives vidmm: small, so that eviction to
 * system memory runs out too. */
#define FZ_SYSTEM_MEMORY ((uint64_t)64 << 20)

/* An adapter on softgpu sg whose host memory comes from fa (reset here). */
static inline vidmm_status fz_open_on_softgpu(struct softgpu *sg, struct fz_alloc *fa, struct vidmm_adapter **a)
{
    fz_alloc_init(fa);
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    ci.host_allocator = &fa->ha;
    ci.system_memory_limit = FZ_SYSTEM_MEMORY;
    return vidmm_adapter_open(&ci, a);
}

/* FUZZ_TRACE set: a harness prints every step and its status (debugging
 * a reproducer).  Read once. */
static inline int fz_tracing(void)
{
    static int on = -1;
    if (on < 0)
        on = getenv("FUZZ_TRACE") != NULL;
    return on;
}

/* The first check of every step of a harness: the step printed when
 * tracing (its name padded to width), then a status vidmm defines. */
#define FZ_STEP(st, what, width)                                                                  \
    do {                                                                                          \
        vidmm_status st_ = (st);                                                                  \
        if (fz_tracing())                                                                         \
            fprintf(stderr, "  %-*s %s\n", (width), (what), vidmm_status_str(st_));               \
        FUZZ_REQUIRE(st_ >= VIDMM_E_NOT_ACCESSED_PHYSICALLY && st_ <= VIDMM_PENDING,              \
                     "%s: unknown status %d", (what), (int)st_);                                  \
    } while (0)

#endif
