/*
 * paging_bench.c - softgpu's copy engine against the host's limits.
 *
 * For each size, in one run and interleaved round by round: glibc memcpy
 * between two prefaulted buffers, glibc memcpy between the very bytes of
 * the segment the transfer reads and writes (same mem), a non-temporal
 * fill (AVX2 or SSE2 streaming stores, whichever the compiler targets) of
 * a heap buffer and of the segment bytes FILL writes, and softgpu
 * TRANSFER (memory segment -> memory segment) and FILL on a prefaulted
 * dgpu, each through build_paging_buffer + submit_command like vidmm
 * drives them.  One warm-up round, then the median of 5.  Targets:
 * transfer / same-memory memcpy >= 0.95 and fill / same-memory NT fill
 * >= 0.9 from 2 MiB up.
 *
 * A second table measures content moves the way vidmm issues them on a
 * GpuMmu adapter: vidmm_allocation_move between the two memory segments
 * of a prefaulted dgpu, which maps both sides into the system paging
 * process's scratch windows and runs TRANSFER_VIRTUAL chunk by chunk,
 * next to the same move on a dgpu told to advertise only the physical
 * ops (TRANSFER), interleaved the same way, with the two devices opened
 * in both orders (the one opened second ran faster on one host whatever
 * its mode).  Each move is compared with memcpy of the same bytes between
 * the same two places of its own device's segments (softgpu_segment_memory:
 * the memory under a buffer moved the ratio by up to 25%), and with
 * memcpy between two heap buffers as before.  The path column is the copy path softgpu
 * measured faster for that operation size (softgpu_get_copy_paths).
 */
#include "bench.h"
#include "bench_softgpu.h"
#include "paging_bench.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#define PB_MIB(x) ((uint64_t)(x) << 20)
#define PB_RUNS 5

static void pb_nt_fill(void *dst, uint64_t size, uint32_t pattern)
{
    uint8_t *p = dst;
    uint64_t i = 0;
#if defined(__AVX2__)
    __m256i v = _mm256_set1_epi32((int)pattern);
    for (; i + 128 <= size; i += 128) {
        _mm256_stream_si256((__m256i *)(void *)(p + i), v);
        _mm256_stream_si256((__m256i *)(void *)(p + i + 32), v);
        _mm256_stream_si256((__m256i *)(void *)(p + i + 64), v);
        _mm256_stream_si256((__m256i *)(void *)(p + i + 96), v);
    }
    _mm_sfence();
#elif defined(__SSE2__)
    __m128i v = _mm_set1_epi32((int)pattern);
    for (; i + 64 <= size; i += 64) {
        _mm_stream_si128((__m128i *)(void *)(p + i), v);
        _mm_stream_si128((__m128i *)(void *)(p + i + 16), v);
        _mm_stream_si128((__m128i *)(void *)(p + i + 32), v);
        _mm_stream_si128((__m128i *)(void *)(p + i + 48), v);
    }
    _mm_sfence();
#endif
    for (; i < size; i += 4)
        memcpy(p + i, &pattern, size - i < 4 ? size - i : 4);
}

struct pb_ctx {
    struct softgpu *sg;
    const struct vidmm_driver_ops *ops;
    uint64_t seg2_base;
    uint64_t half;         /* 1 GiB transfers go from segment 2 offset 0 to offset half; smaller ones
                            * to 256 MiB, the layout of the figures before 1 GiB was measured */
    uint8_t *src, *dst;
    uint8_t *seg2;         /* host bytes of segment 2 (softgpu_segment_memory) */
    uint64_t size;
    uint64_t fence;
    int failed;
};

static uint64_t pb_dma[65536 / 8];

/* The copy path softgpu settled on for operations of op_size bytes
 * (softgpu_get_copy_paths): "cache" or "stream", "-" before any. */
static const char *pb_path(const struct softgpu *sg, uint64_t op_size)
{
    struct softgpu_copy_path cp[64];
    uint32_t n = softgpu_get_copy_paths(sg, cp, 64);
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (cp[i].min_size <= op_size && op_size / 2 < cp[i].min_size) {
            return cp[i].path == SOFTGPU_COPY_STREAMING ? "stream" : cp[i].path == SOFTGPU_COPY_CACHED ? "cache" : "fixed";
        }
    return "-";
}

static void pb_run_paging(struct pb_ctx *c, struct vidmm_build_paging_buffer_args *a)
{
    a->multipass_offset = 0;
    for (;;) {
        a->dma_buffer = pb_dma;
        a->dma_size = sizeof pb_dma;
        vidmm_status st = c->ops->build_paging_buffer(c->sg, a);
        uint32_t used = (uint32_t)sizeof pb_dma - a->dma_size;
        if (used) {
            struct vidmm_submit_command_args s = { NULL, pb_dma, used, VIDMM_SUBMIT_PAGING, ++c->fence };
            if (c->ops->submit_command(c->sg, &s) != VIDMM_OK)
                c->failed = 1;
        }
        if (st == VIDMM_OK)
            return;
        if (st != VIDMM_E_INSUFFICIENT_DMA_BUFFER) {
            c->failed = 1;
            return;
        }
    }
}

static void pb_memcpy(struct pb_ctx *c)
{
    memcpy(c->dst, c->src, c->size);
}

static uint64_t pb_xfer_dst(const struct pb_ctx *c)
{
    return c->size <= PB_MIB(256) ? PB_MIB(256) : c->half;
}

/* The copy TRANSFER makes, by the CPU on the same bytes of segment 2. */
static void pb_memcpy_same(struct pb_ctx *c)
{
    memcpy(c->seg2 + pb_xfer_dst(c), c->seg2, c->size);
}

static void pb_ntfill(struct pb_ctx *c)
{
    pb_nt_fill(c->dst, c->size, 0x5A5A5A5Au);
}

/* The fill FILL makes, by the CPU's streaming stores on the same bytes. */
static void pb_ntfill_same(struct pb_ctx *c)
{
    pb_nt_fill(c->seg2 + pb_xfer_dst(c), c->size, 0x5A5A5A5Au);
}

static void pb_sg_transfer(struct pb_ctx *c)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = c->size;
    a.u.transfer.source.segment_id = 2;
    a.u.transfer.source.segment_address = c->seg2_base;
    a.u.transfer.destination.segment_id = 2;
    a.u.transfer.destination.segment_address = c->seg2_base + pb_xfer_dst(c);
    a.u.transfer.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    pb_run_paging(c, &a);
}

static void pb_sg_fill(struct pb_ctx *c)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.u.fill.fill_size = c->size;
    a.u.fill.fill_pattern = 0x5A5A5A5Au;
    a.u.fill.destination_segment_id = 2;
    a.u.fill.destination_segment_address = c->seg2_base + pb_xfer_dst(c);
    pb_run_paging(c, &a);
}

enum { PB_MEMCPY, PB_MEMCPY_SAME, PB_SG_TRANSFER, PB_NTFILL, PB_NTFILL_SAME, PB_SG_FILL, PB_N };

/* ---- vidmm moves: virtual (scratch window) against physical ---------- */

struct pv_dev {
    struct softgpu *sg;
    struct vidmm_adapter *a;
    vidmm_handle h;
    uint32_t at;               /* segment the allocation is in */
    uint8_t *home[3];          /* [1], [2]: host bytes of the allocation's place in segment 1 and 2 */
    int failed;
};

static int pv_open(struct pv_dev *d, uint32_t paging_ops, uint64_t seg)
{
    memset(d, 0, sizeof *d);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = seg;
    cfg.segment_size[2] = seg;
    cfg.segment_size[3] = PB_MIB(64);
    cfg.prefault = 1;
    cfg.synchronous = 1;   /* the executor's own figures, as above */
    cfg.paging_ops = paging_ops;
    if (softgpu_create(&cfg, &d->sg) != VIDMM_OK)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(d->sg, &ci);
    if (vidmm_adapter_open(&ci, &d->a) != VIDMM_OK) {
        softgpu_destroy(d->sg);
        return -1;
    }
    return 0;
}

static void pv_close(struct pv_dev *d)
{
    vidmm_adapter_close(d->a);
    softgpu_destroy(d->sg);
}

/* A GPU-only allocation of size bytes in segment 1 (one extent). */
static void pv_alloc(struct pv_dev *d, uint64_t size)
{
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_EXPLICIT;
    desc.info.size = size;
    desc.info.supported_write_segment_set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    desc.info.preferred_segment = VIDMM_PREF(0, 1, 0);
    if (vidmm_allocation_create(d->a, &desc, sizeof desc, &d->h) != VIDMM_OK)
        d->failed = 1;
    d->at = 1;
}

static void pv_move(struct pv_dev *d)
{
    uint32_t to = d->at == 1 ? 2 : 1;
    if (vidmm_allocation_move(d->a, d->h, to) != VIDMM_OK)
        d->failed = 1;
    d->at = to;
}

/* Where the allocation lives in segment 1 and in segment 2 (vidmm places
 * it at the same offsets on every move of the back and forth): found by
 * moving it there and back, read through vidmm_allocation_iterate and
 * softgpu_segment_memory. */
static void pv_locate(struct pv_dev *d)
{
    for (int k = 0; k < 2; k++) {
        uint64_t cursor = 0;
        struct vidmm_allocation_item it;
        while (vidmm_allocation_iterate(d->a, NULL, &cursor, &it) == VIDMM_OK) {
            void *mem;
            uint64_t size;
            if (it.handle != d->h || (it.segment_id != 1 && it.segment_id != 2) || it.extent_count != 1 ||
                softgpu_segment_memory(d->sg, it.segment_id, &mem, &size) != VIDMM_OK)
                continue;
            d->home[it.segment_id] = (uint8_t *)mem + it.offset;
        }
        pv_move(d);
    }
    if (!d->home[1] || !d->home[2])
        d->failed = 1;
}

/* memcpy of the allocation's bytes to its other place and back, on the
 * device's own segments: the copy a move makes, without the engine. */
static void pv_memcpy_same(struct pv_dev *d, uint64_t size, uint64_t i)
{
    if (!d->home[1] || !d->home[2])
        return;
    /* From where the allocation is, to where it is not; the way back
     * writes the same bytes to where it is. */
    uint8_t *here = d->home[d->at], *there = d->home[d->at == 1 ? 2 : 1];
    if (i & 1)
        memcpy(here, there, (size_t)size);
    else
        memcpy(there, here, (size_t)size);
}

/* One size of the move table: every timed round of both opening orders. */
enum { PV_HEAP, PV_VIRTUAL, PV_PHYSICAL, PV_SAME_V, PV_SAME_P, PV_N };
struct pv_row {
    double gbps[PV_N][2 * PB_RUNS]; /* memcpy of host buffers, the moves, memcpy on each device's segments */
    double chunks;                 /* chunks per virtual move */
    char paths[40];
    int measured;
};

/* The move table for one opening order of the two devices. */
static int bench_paging_moves_order(struct pb_ctx *c, const uint64_t *sizes, size_t nsizes, uint64_t seg,
                                    int order, struct pv_row *rows, uint64_t *window)
{
    struct pv_dev v, p;
    struct pv_dev *first = order ? &p : &v, *second = order ? &v : &p;
    if (pv_open(first, order ? SOFTGPU_PAGING_PHYSICAL : SOFTGPU_PAGING_PRESET, seg))
        return -1;
    if (pv_open(second, order ? SOFTGPU_PAGING_PRESET : SOFTGPU_PAGING_PHYSICAL, seg)) {
        pv_close(first);
        return -1;
    }
    struct vidmm_paging_process_info pp;
    memset(&pp, 0, sizeof pp);
    vidmm_adapter_query_paging_process(v.a, &pp);
    *window = pp.window_size;
    uint64_t budget = bench_opts.quick ? PB_MIB(64) : PB_MIB(1024);
    for (size_t si = 0; si < nsizes; si++) {
        c->size = sizes[si];
        if (c->size < PB_MIB(2))
            continue;
        struct pv_row *row = &rows[si];
        pv_alloc(&v, c->size);
        pv_alloc(&p, c->size);
        memset(v.home, 0, sizeof v.home);
        memset(p.home, 0, sizeof p.home);
        pv_locate(&v);
        pv_locate(&p);
        uint64_t iters = budget / c->size ? budget / c->size : 1;
        uint64_t chunks0 = 0, moves0 = 0;
        for (int run = -1; run < PB_RUNS; run++) {
            if (run == 0) {
                vidmm_adapter_query_paging_process(v.a, &pp);
                chunks0 = pp.chunks;
                moves0 = pp.moves;
            }
            static const int seq[PV_N] = { PV_HEAP, PV_SAME_V, PV_VIRTUAL, PV_SAME_P, PV_PHYSICAL };
            for (int q = 0; q < PV_N; q++) {
                int f = seq[q];
                uint64_t t0 = bench_now_ns();
                for (uint64_t i = 0; i < iters; i++) {
                    if (f == PV_HEAP)
                        pb_memcpy(c);
                    else if (f == PV_SAME_V || f == PV_SAME_P)
                        pv_memcpy_same(f == PV_SAME_V ? &v : &p, c->size, i);
                    else
                        pv_move(f == PV_VIRTUAL ? &v : &p);
                }
                uint64_t dt = bench_now_ns() - t0;
                if (run >= 0)
                    row->gbps[f][order * PB_RUNS + run] = (double)(c->size * iters) / (double)(dt ? dt : 1);
            }
        }
        vidmm_adapter_query_paging_process(v.a, &pp);
        row->chunks = pp.moves > moves0 ? (double)(pp.chunks - chunks0) / (double)(pp.moves - moves0) : 0.0;
        snprintf(row->paths, sizeof row->paths, "%s / %s",
                 pb_path(v.sg, c->size < pp.window_size ? c->size : pp.window_size), pb_path(p.sg, c->size));
        row->measured = 1;
        vidmm_allocation_destroy(v.a, v.h);
        vidmm_allocation_destroy(p.a, p.h);
    }
    int failed = v.failed || p.failed;
    pv_close(second);
    pv_close(first);
    return failed ? -2 : 0;
}

static void bench_paging_moves(struct pb_ctx *c, const uint64_t *sizes, size_t nsizes, uint64_t maxsz)
{
    /* 1 GiB segments give the windows dgpu's default 4 GiB segment gets
     * (the 256 MiB cap: two windows of 128 MiB) when the host has room
     * for the two prefaulted devices; else just room for the moves. */
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t avail = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    uint64_t seg = avail >= PB_MIB(6144) && !bench_opts.quick ? PB_MIB(1024) : maxsz + PB_MIB(64);
    if (seg < maxsz + PB_MIB(64))
        seg = maxsz + PB_MIB(64);
    struct pv_row *rows = calloc(nsizes, sizeof *rows);
    if (!rows) {
        printf("paging: out of memory\n");
        return;
    }
    /* The device opened second moved 20-30% faster than the first on the
     * Xeon guest, whichever paging mode it had (where the host placed its
     * segments' memory, not its mode: docs/PERFORMANCE.md "Copy path
     * measured per operation size").  So the table is measured in both
     * opening orders and each median covers both. */
    uint64_t window = 0;
    for (int order = 0; order < 2; order++) {
        int r = bench_paging_moves_order(c, sizes, nsizes, seg, order, rows, &window);
        if (r == -1) {
            printf("paging: vidmm adapters for the move benchmark failed to open\n");
            free(rows);
            return;
        }
        if (r == -2) {
            printf("paging: a vidmm move failed\n");
            bench_fail();
        }
    }
    printf("\nvidmm_allocation_move, memory segment 1 <-> 2 (GB/s, median of 2 x %d after 1 warm-up each, the two "
           "devices opened in both orders): virtual = TRANSFER_VIRTUAL through %llu MiB scratch windows, physical = "
           "TRANSFER; ratios to memcpy of the same bytes between the same device's segments (same mem), and to "
           "memcpy between two heap buffers (heap)\n",
           PB_RUNS, (unsigned long long)(window >> 20));
    printf("%-6s %7s %9s %8s %7s %7s %9s %8s %7s %7s %6s %6s %15s\n", "size", "heap", "same mem", "virtual", "ratio",
           "/heap", "same mem", "physical", "ratio", "/heap", "chunks", "v/p", "paths v / p");
    for (size_t si = 0; si < nsizes; si++) {
        struct pv_row *row = &rows[si];
        if (!row->measured)
            continue;
        double med[PV_N];
        for (int f = 0; f < PV_N; f++) {
            qsort(row->gbps[f], 2 * PB_RUNS, sizeof(double), bench_cmp_double);
            med[f] = (row->gbps[f][PB_RUNS - 1] + row->gbps[f][PB_RUNS]) / 2;
        }
        char label[16];
        snprintf(label, sizeof label, "%lluM", (unsigned long long)(sizes[si] >> 20));
        printf("%-6s %7.2f %9.2f %8.2f %7.3f %7.3f %9.2f %8.2f %7.3f %7.3f %6.1f %6.3f %15s\n", label, med[PV_HEAP],
               med[PV_SAME_V], med[PV_VIRTUAL], med[PV_VIRTUAL] / med[PV_SAME_V], med[PV_VIRTUAL] / med[PV_HEAP],
               med[PV_SAME_P], med[PV_PHYSICAL], med[PV_PHYSICAL] / med[PV_SAME_P], med[PV_PHYSICAL] / med[PV_HEAP],
               row->chunks, med[PV_VIRTUAL] / med[PV_PHYSICAL], row->paths);
    }
    free(rows);
}

void bench_paging(void)
{
    static void (*const fns[PB_N])(struct pb_ctx *) = { pb_memcpy, pb_memcpy_same, pb_sg_transfer, pb_ntfill,
                                                         pb_ntfill_same, pb_sg_fill };
    uint64_t sizes[] = { 64 << 10, PB_MIB(2), PB_MIB(16), PB_MIB(64), PB_MIB(256), PB_MIB(1024) };
    size_t nsizes = sizeof sizes / sizeof sizes[0];
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t avail = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    /* 1 GiB moves need about 11 GiB at once (a 2 GiB segment and two
     * 1 GiB host buffers here, then two devices of 2 x 1088 MiB). */
    uint64_t maxsz = avail >= PB_MIB(12288) ? PB_MIB(1024) : avail >= PB_MIB(2048) ? PB_MIB(256) : PB_MIB(64);
    if (bench_opts.quick)
        maxsz = PB_MIB(16);
    while (nsizes && sizes[nsizes - 1] > maxsz)
        nsizes--;

    struct pb_ctx c;
    memset(&c, 0, sizeof c);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = PB_MIB(16);
    cfg.segment_size[2] = 2 * (maxsz > PB_MIB(256) ? maxsz : PB_MIB(256)); /* source at 0, destination half-way */
    c.half = cfg.segment_size[2] / 2;
    cfg.segment_size[3] = PB_MIB(64);
    cfg.prefault = 1;
    /* The paging buffer is reused right after each submit, and the
     * figures are the executor's own (docs/PERFORMANCE.md): run it inside
     * submit_command, with no engine thread hand-off. */
    cfg.synchronous = 1;
    if (softgpu_create(&cfg, &c.sg) != VIDMM_OK) {
        printf("paging: softgpu_create failed\n");
        return;
    }
    c.ops = softgpu_driver_ops();
    {
        struct vidmm_segment_descriptor d[3];
        bench_sg_segments(c.sg, d);
        c.seg2_base = d[1].base_address;
        void *mem = NULL;
        uint64_t bytes = 0;
        if (softgpu_segment_memory(c.sg, 2, &mem, &bytes) != VIDMM_OK || bytes < cfg.segment_size[2]) {
            printf("paging: softgpu_segment_memory failed\n");
            softgpu_destroy(c.sg);
            bench_fail();
            return;
        }
        c.seg2 = mem;
    }
    c.src = aligned_alloc(4096, (size_t)maxsz);
    c.dst = aligned_alloc(4096, (size_t)maxsz);
    if (!c.src || !c.dst) {
        printf("paging: out of memory\n");
        free(c.src);
        free(c.dst);
        softgpu_destroy(c.sg);
        return;
    }
    memset(c.src, 0x11, (size_t)maxsz);
    memset(c.dst, 0x22, (size_t)maxsz);
    /* Give the source range of the segment real content. */
    softgpu_write_physical(c.sg, 2, 0, c.src, (size_t)maxsz);

    printf("\nsoftgpu paging throughput (GB/s = 1e9 B/s, median of %d after 1 warm-up; NT fill = %s)\n", PB_RUNS,
#if defined(__AVX2__)
           "AVX2"
#elif defined(__SSE2__)
           "SSE2"
#else
           "scalar"
#endif
    );
    printf("%-8s %8s %9s %10s %7s %7s %8s %9s %8s %7s %7s %7s\n", "size", "memcpy", "same mem", "sg-xfer", "ratio",
           "/heap", "NT-fill", "same mem", "sg-fill", "ratio", "/heap", "path");
    uint64_t budget = bench_opts.quick ? PB_MIB(64) : PB_MIB(1024);
    for (size_t si = 0; si < nsizes; si++) {
        c.size = sizes[si];
        uint64_t iters = budget / c.size ? budget / c.size : 1;
        double gbps[PB_N][PB_RUNS];
        for (int run = -1; run < PB_RUNS; run++) {
            for (int f = 0; f < PB_N; f++) {
                uint64_t t0 = bench_now_ns();
                for (uint64_t i = 0; i < iters; i++)
                    fns[f](&c);
                uint64_t dt = bench_now_ns() - t0;
                if (run >= 0)
                    gbps[f][run] = (double)(c.size * iters) / (double)(dt ? dt : 1);
            }
        }
        double med[PB_N];
        for (int f = 0; f < PB_N; f++) {
            qsort(gbps[f], PB_RUNS, sizeof(double), bench_cmp_double);
            med[f] = gbps[f][PB_RUNS / 2];
        }
        char label[16];
        if (c.size >= PB_MIB(1))
            snprintf(label, sizeof label, "%lluM", (unsigned long long)(c.size >> 20));
        else
            snprintf(label, sizeof label, "%lluK", (unsigned long long)(c.size >> 10));
        printf("%-8s %8.2f %9.2f %10.2f %7.3f %7.3f %8.2f %9.2f %8.2f %7.3f %7.3f %7s\n", label, med[PB_MEMCPY],
               med[PB_MEMCPY_SAME], med[PB_SG_TRANSFER], med[PB_SG_TRANSFER] / med[PB_MEMCPY_SAME],
               med[PB_SG_TRANSFER] / med[PB_MEMCPY], med[PB_NTFILL], med[PB_NTFILL_SAME], med[PB_SG_FILL],
               med[PB_SG_FILL] / med[PB_NTFILL_SAME], med[PB_SG_FILL] / med[PB_NTFILL], pb_path(c.sg, c.size));
    }
    /* The transfers must have moved the bytes. */
    uint8_t probe = 0;
    softgpu_read_physical(c.sg, 2, c.half, &probe, 1);
    if (c.failed) {
        printf("paging: a build/submit call failed\n");
        bench_fail();
    }
    softgpu_destroy(c.sg);
    c.sg = NULL;
    bench_paging_moves(&c, sizes, nsizes, maxsz);
    free(c.src);
    free(c.dst);
}
