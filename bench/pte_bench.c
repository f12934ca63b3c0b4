/*
 * pte_bench.c - GpuMmu page-table updates through softgpu, against raw
 * stores into the same kind of memory.
 *
 * A dgpu with a 1 GiB segment 1 and a 1 GiB + 64 MiB segment 2 (prefaulted memfd
 * mappings): the leaf tables live in segment 2 like vidmm puts them; the
 * raw baselines store into segment 1's BAR mapping, which is the same
 * shmem-backed memory, so page size and TLB behaviour match.  Cases:
 *   seq N   one run of N consecutive leaf PTEs (N/8192 UPDATE_PAGE_TABLE
 *           operations of at most one 8192-entry leaf each), encoded and
 *           submitted as vidmm does, repeated over the same tables;
 *   random  single-PTE updates at random entries of 1 GiB of leaf tables,
 *           packed into 64 KiB paging buffers (about 1600 a buffer), the
 *           argument block reused (a second row clears it per update).
 * Each is timed next to its raw baseline (sequential / random 8-byte
 * stores over the same footprint); median of 5 after one warm-up.
 * Targets (docs/PERFORMANCE.md, against the machine's memory bandwidth):
 * <= 1 ns/PTE for runs >= 512; random <= 2 x 21 ns (21 ns: a random
 * 8-byte store on the reference machine).
 */
#include "bench.h"
#include "bench_softgpu.h"
#include "pte_bench.h"
#include "vidmm/softgpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_RUNS 5
#define PT_GIB(x) ((uint64_t)(x) << 30)
#define PT_LEAF 8192u              /* dgpu leaf: 13 index bits */
#define PT_TOUCH_CHUNK (1u << 20)

struct pt_ctx {
    struct softgpu *sg;
    const struct vidmm_driver_ops *ops;
    uint64_t *bar;                 /* segment 1 host mapping */
    uint64_t footprint;            /* bytes of tables (and of the baseline area) */
    struct vidmm_pte *ptes;        /* neutral entries, prepared outside the timing */
    uint64_t *idx;                 /* random entry indices */
    uint64_t nrand;
    uint64_t seq_n;
    uint64_t fence;
    int failed;
};

static uint64_t pt_dma[65536 / 8];

/* Encodes one operation into the current buffer, submitting full buffers
 * (the restart protocol). */
static void pt_submit(struct pt_ctx *c, uint32_t used)
{
    struct vidmm_submit_command_args s = { NULL, pt_dma, used, VIDMM_SUBMIT_PAGING, ++c->fence };
    if (used && c->ops->submit_command(c->sg, &s) != VIDMM_OK)
        c->failed = 1;
}

static void pt_encode(struct pt_ctx *c, struct vidmm_build_paging_buffer_args *a, uint32_t *used)
{
    a->multipass_offset = 0;
    for (;;) {
        a->dma_buffer = (uint8_t *)pt_dma + *used;
        a->dma_size = (uint32_t)sizeof pt_dma - *used;
        vidmm_status st = c->ops->build_paging_buffer(c->sg, a);
        *used = (uint32_t)sizeof pt_dma - a->dma_size;
        if (st == VIDMM_OK)
            return;
        if (st != VIDMM_E_INSUFFICIENT_DMA_BUFFER) {
            c->failed = 1;
            return;
        }
        pt_submit(c, *used);
        *used = 0;
    }
}

static void pt_args(struct vidmm_build_paging_buffer_args *a, uint64_t table, uint32_t start,
                    const struct vidmm_pte *e, uint32_t n)
{
    memset(a, 0, sizeof *a);
    a->operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    a->u.update_page_table.page_table_level = 0;
    a->u.update_page_table.page_table_address.segment_id = 2;
    a->u.update_page_table.page_table_address.segment_offset = table;
    a->u.update_page_table.page_table_entries = e;
    a->u.update_page_table.start_index = start;
    a->u.update_page_table.num_page_table_entries = n;
}

static void pt_sg_seq(struct pt_ctx *c)
{
    uint32_t used = 0;
    for (uint64_t done = 0; done < c->seq_n;) {
        uint32_t n = (uint32_t)(c->seq_n - done < PT_LEAF ? c->seq_n - done : PT_LEAF);
        struct vidmm_build_paging_buffer_args a;
        pt_args(&a, done / PT_LEAF * 65536u, 0, c->ptes + done, n);
        pt_encode(c, &a, &used);
        done += n;
    }
    pt_submit(c, used);
}

static void pt_raw_seq(struct pt_ctx *c)
{
    uint64_t *p = c->bar;
    for (uint64_t i = 0; i < c->seq_n; i++)
        p[i] = 0x0100000000000001ull | (i << 12);
}

/* Single-PTE updates, packed into 64 KiB buffers (about 1600 per buffer,
 * one submit and one fence each).  The argument block is cleared once and
 * only the table, index and entry change per update: its 300-byte memset
 * is the caller's cost, not the driver's (pt_sg_rand_memset keeps it). */
static void pt_sg_rand(struct pt_ctx *c)
{
    uint32_t used = 0;
    struct vidmm_build_paging_buffer_args a;
    pt_args(&a, 0, 0, c->ptes, 1);
    struct vidmm_paging_update_page_table *u = &a.u.update_page_table;
    for (uint64_t i = 0; i < c->nrand; i++) {
        uint64_t e = c->idx[i];
        u->page_table_address.segment_offset = e / PT_LEAF * 65536u;
        u->start_index = (uint32_t)(e % PT_LEAF);
        u->page_table_entries = c->ptes + (i & 4095);
        pt_encode(c, &a, &used);
    }
    pt_submit(c, used);
}

/* The same with a fresh, cleared argument block per update. */
static void pt_sg_rand_memset(struct pt_ctx *c)
{
    uint32_t used = 0;
    for (uint64_t i = 0; i < c->nrand; i++) {
        uint64_t e = c->idx[i];
        struct vidmm_build_paging_buffer_args a;
        pt_args(&a, e / PT_LEAF * 65536u, (uint32_t)(e % PT_LEAF), c->ptes + (i & 4095), 1);
        pt_encode(c, &a, &used);
    }
    pt_submit(c, used);
}

static void pt_raw_rand(struct pt_ctx *c)
{
    uint64_t *p = c->bar;
    for (uint64_t i = 0; i < c->nrand; i++)
        p[c->idx[i]] = 0x0100000000000001ull | (i << 12);
}

/* Median ns per PTE of fn over reps repetitions of count PTEs. */
static double pt_time(struct pt_ctx *c, void (*fn)(struct pt_ctx *), uint64_t reps, uint64_t count)
{
    double r[PT_RUNS];
    for (int k = -1; k < PT_RUNS; k++) {
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < reps; i++)
            fn(c);
        double ns = (double)(bench_now_ns() - t0) / (double)(reps * count);
        if (k >= 0)
            r[k] = ns;
    }
    qsort(r, PT_RUNS, sizeof r[0], bench_cmp_double);
    return r[PT_RUNS / 2];
}

void bench_pte(void)
{
    struct pt_ctx c;
    memset(&c, 0, sizeof c);
    c.footprint = bench_opts.quick ? PT_GIB(1) / 16 : PT_GIB(1);
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = c.footprint;
    cfg.segment_size[2] = c.footprint + PT_GIB(1) / 16;
    cfg.segment_size[3] = (uint64_t)64 << 20;
    cfg.prefault = 1;
    /* The paging buffer is reused right after each submit, and the
     * figures are the executor's own (docs/PERFORMANCE.md): run it inside
     * submit_command, with no engine thread hand-off. */
    cfg.synchronous = 1;
    /* softgpu's prefault refuses more than the host's free RAM, which
     * counts a full page cache as used: then create sparse and touch every
     * page here (the same populated shmem, page-cache pages reclaimed). */
    int touch = 0;
    if (softgpu_create(&cfg, &c.sg) != VIDMM_OK) {
        cfg.prefault = 0;
        touch = 1;
        if (softgpu_create(&cfg, &c.sg) != VIDMM_OK) {
            printf("pte: softgpu_create failed\n");
            return;
        }
    }
    if (touch) {
        static uint64_t zero[PT_TOUCH_CHUNK / 8];
        for (uint32_t id = 1; id <= 2; id++)
            for (uint64_t o = 0; o < cfg.segment_size[id]; o += sizeof zero)
                if (softgpu_write_physical(c.sg, id, o, zero, sizeof zero) != VIDMM_OK)
                    c.failed = 1;
    }
    c.ops = softgpu_driver_ops();
    struct vidmm_segment_descriptor d[3];
    bench_sg_segments(c.sg, d);
    c.bar = d[0].cpu_translated_address;

    const uint64_t maxseq = 262144;
    c.nrand = bench_opts.quick ? 100000 : 1000000;
    c.ptes = malloc(maxseq * sizeof *c.ptes);
    c.idx = malloc(c.nrand * sizeof *c.idx);
    if (!c.ptes || !c.idx || !c.bar) {
        printf("pte: out of memory\n");
        goto out;
    }
    for (uint64_t i = 0; i < maxseq; i++) {
        /* Consecutive 4 KiB pages of segment 1, as vidmm maps an allocation. */
        c.ptes[i].flags = VIDMM_PTE_VALID | (1ull << VIDMM_PTE_SEGMENT_SHIFT);
        c.ptes[i].page_address = i % (c.footprint >> 12);
    }
    uint64_t s = 0x9E3779B97F4A7C15ull, entries = c.footprint / 8;
    for (uint64_t i = 0; i < c.nrand; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        c.idx[i] = s % entries;
    }

    printf("\nGpuMmu page-table updates (ns per PTE, median of %d after 1 warm-up; tables %llu MiB in segment 2)\n",
           PT_RUNS, (unsigned long long)(c.footprint >> 20));
    printf("| case | raw 8-byte stores | softgpu UPDATE_PAGE_TABLE | ratio | target |\n");
    printf("|---|---|---|---|---|\n");
    uint64_t runs[3] = { 512, 4096, 262144 };
    for (int i = 0; i < 3; i++) {
        c.seq_n = runs[i];
        uint64_t reps = 4194304 / runs[i];
        double raw = pt_time(&c, pt_raw_seq, reps, runs[i]);
        double sg = pt_time(&c, pt_sg_seq, reps, runs[i]);
        printf("| sequential run of %llu | %.3f | %.3f | %.2f | <= 1 ns/PTE |\n", (unsigned long long)runs[i], raw,
               sg, sg / raw);
    }
    double raw = pt_time(&c, pt_raw_rand, 1, c.nrand);
    double sg = pt_time(&c, pt_sg_rand, 1, c.nrand);
    double sgm = pt_time(&c, pt_sg_rand_memset, 1, c.nrand);
    printf("| random single PTE, %llu MiB of tables | %.1f | %.1f | %.2f | <= 42 ns/PTE |\n",
           (unsigned long long)(c.footprint >> 20), raw, sg, sg / raw);
    printf("| random single PTE, args memset per update | %.1f | %.1f | %.2f | (caller cost included) |\n", raw,
           sgm, sgm / raw);
    if (c.failed)
        printf("pte: a paging operation FAILED\n");
out:
    free(c.ptes);
    free(c.idx);
    softgpu_destroy(c.sg);
}
