/*
 * scale_test.c - many processes on one adapter.
 *
 * The process table grows on demand up to the bound of the create info
 * (vidmm_adapter_create_info.max_processes, vidmm/process.h), so these
 * tests check the parts that only show with many processes: 4,096 live
 * processes each with a device and a resident allocation, torn down in
 * a seeded random order with the checker clean before and after; the
 * bound (VIDMM_E_BUSY) against a refused table growth
 * (VIDMM_E_NO_HOST_MEMORY), each changing nothing; ABI generation 1
 * callers, whose create info has no bound; and the per-allocation list
 * of processes mapping it that a move or a destroy walks instead of
 * every process.
 */
#include "harness/test.h"
#include "harness/fault_alloc.h"
#include "softgpu_fixture.h"
#include "gpuva_common.h"
#include "core/alloc_sites.h"

#include "vidmm/vidmm.h"
#include "vidmm/softgpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB(x) ((uint64_t)(x) << 20)
#define KIB(x) ((uint64_t)(x) << 10)

/* Segment sizes for N processes: each process's root page table (and
 * nothing else: its allocation lives in system memory) needs its
 * segment's share; scale_segments measures it on one process. */
static uint64_t root_bytes(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, MIB(8), MIB(16), 1))
        return 0;
    struct vidmm_segment_info before[3], after;
    uint64_t total = 0;
    for (uint32_t id = 1; id <= 2; id++)
        T_ST(vidmm_segment_query(f.a, id, &before[id]), VIDMM_OK);
    vidmm_handle p = 0;
    T_ST(vidmm_process_create(f.a, &p), VIDMM_OK);
    for (uint32_t id = 1; id <= 2; id++) {
        T_ST(vidmm_segment_query(f.a, id, &after), VIDMM_OK);
        total += before[id].free_bytes - after.free_bytes;
    }
    T_ST(vidmm_process_destroy(f.a, p), VIDMM_OK);
    softgpu_fx_close(&f);
    return total;
}

struct proc_set {
    vidmm_handle proc, dev, queue, alloc;
};

/* 4,096 processes (512 in a DEBUG build, where every entry runs the
 * checker, and under VIDMM_TEST_NO_BIG, valgrind's run): process, device, paging
 * queue, a 4 KiB CPU-visible allocation made resident. */
static void processes_4096(void)
{
    uint32_t n = t_no_big() ? 512 : 4096;
#ifdef VIDMM_DEBUG
    n = 512;   /* the checker at every entry makes this quadratic */
#endif
    uint64_t root = root_bytes();
    T_CHECK(root > 0);
    if (!root)
        return;
    /* The local segments hold the root tables and maybe the allocations
     * (a 64 KiB page each where softgpu places them in a local
     * segment): each segment has room for n roots and a quarter, both
     * together for 2.5 root sizes per process. */
    uint64_t seg = (root * n + root * n / 4 + MIB(1)) & ~(MIB(1) - 1);
    printf("scale.processes_4096: %u processes, %llu bytes of root page table each, segments of %llu MiB\n", n,
           (unsigned long long)root, (unsigned long long)(seg >> 20));
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, seg, seg, 1))
        return;
    struct proc_set *ps = calloc(n, sizeof *ps);
    uint32_t *order = calloc(n, sizeof *order);
    T_CHECK(ps && order);
    if (!ps || !order)
        goto out;
    struct softgpu_alloc_desc d;
    softgpu_cpu_desc(&d, SOFTGPU_ALLOC_STAGING, 0, KIB(4));
    uint32_t made = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct proc_set *s = &ps[i];
        if (vidmm_process_create(f.a, &s->proc) != VIDMM_OK) {
            T_CHECK(!"process_create");
            printf("scale.processes_4096: process %u refused\n", i);
            break;
        }
        T_ST(vidmm_device_create(f.a, s->proc, &s->dev), VIDMM_OK);
        T_ST(vidmm_paging_queue_create(f.a, s->dev, VIDMM_PAGING_QUEUE_NORMAL, &s->queue), VIDMM_OK);
        T_ST(vidmm_allocation_create(f.a, &d, sizeof d, &s->alloc), VIDMM_OK);
        softgpu_make_resident(f.a, s->dev, s->queue, &s->alloc, 1);
        made++;
    }
    T_EQ(made, n);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    /* Every process alive and distinct, every allocation resident. */
    uint32_t resident = 0;
    for (uint32_t i = 0; i < made; i++) {
        struct vidmm_process_info pi;
        T_ST(vidmm_process_query(f.a, ps[i].proc, &pi), VIDMM_OK);
        struct vidmm_residency_state rs;
        memset(&rs, 0, sizeof rs);
        T_ST(vidmm_allocation_residency(f.a, ps[i].alloc, &rs), VIDMM_OK);
        resident += rs.resident && rs.references == 1;
    }
    T_EQ(resident, made);
    /* Destroy in a seeded random order (Fisher-Yates). */
    uint64_t rs = t_seed() ^ 0x5ca1e;
    for (uint32_t i = 0; i < made; i++)
        order[i] = i;
    for (uint32_t i = made; i > 1; i--) {
        uint32_t j = (uint32_t)t_rand_range(&rs, i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint32_t k = 0; k < made; k++) {
        struct proc_set *s = &ps[order[k]];
        T_ST(vidmm_allocation_destroy(f.a, s->alloc), VIDMM_OK);
        T_ST(vidmm_process_destroy(f.a, s->proc), VIDMM_OK);
        if (k == made / 2)
            T_EQ(softgpu_checked(f.a, f.sg), 0);
    }
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(f.a, ps[order[0]].proc, &pi), VIDMM_E_INVALID_HANDLE);
    /* The slots come back. */
    vidmm_handle again = 0;
    T_ST(vidmm_process_create(f.a, &again), VIDMM_OK);
    T_ST(vidmm_process_destroy(f.a, again), VIDMM_OK);
out:
    free(ps);
    free(order);
    softgpu_fx_close(&f);
}

/* Segment space and host blocks of the adapter, to prove a refusal
 * changed nothing. */
struct footprint {
    uint64_t committed[3], free_bytes[3];
    int64_t blocks;
};

static void footprint(struct softgpu_fx *f, struct footprint *fp)
{
    for (uint32_t id = 0; id <= 2; id++) {
        struct vidmm_segment_info si;
        T_ST(vidmm_segment_query(f->a, id, &si), VIDMM_OK);
        fp->committed[id] = si.committed;
        fp->free_bytes[id] = si.free_bytes;
    }
    fp->blocks = f->fa.live_blocks;
}

static void same_footprint(struct softgpu_fx *f, const struct footprint *was)
{
    struct footprint now;
    footprint(f, &now);
    for (uint32_t id = 0; id <= 2; id++) {
        T_EQ_U64(now.committed[id], was->committed[id]);
        T_EQ_U64(now.free_bytes[id], was->free_bytes[id]);
    }
    T_EQ(now.blocks, was->blocks);
}

/* The bound of 40 (not a power of two: the last growth is clipped to it)
 * answers VIDMM_E_BUSY; a refused growth of the table answers
 * VIDMM_E_NO_HOST_MEMORY; neither changes anything. */
static void bound_and_oom(void)
{
    struct softgpu_fx f;
    memset(&f, 0, sizeof f);
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", MIB(64), MIB(128), 1);
    if (softgpu_open_bounded(&f.fa, &cfg, NULL, 0, 40, &f.sg, &f.a))
        return;
    vidmm_handle p[41];
    memset(p, 0, sizeof p);
    /* 16 slots at the first create; the 17th needs the table to grow. */
    for (uint32_t i = 0; i < 16; i++)
        T_ST(vidmm_process_create(f.a, &p[i]), VIDMM_OK);
    struct footprint fp;
    footprint(&f, &fp);
    /* Fail each host allocation of the 17th create in turn, until one
     * succeeds: the three of the table's growth answer
     * VIDMM_E_NO_HOST_MEMORY and leave the footprint as it was. */
    unsigned table_sites = 0;
    for (uint64_t k = 1; k < 500; k++) {
        fault_alloc_arm(&f.fa, k, 0);
        vidmm_handle x = 0xDEAD;
        vidmm_status st = vidmm_process_create(f.a, &x);
        int refused = f.fa.failures > 0;
        uint32_t site = f.fa.last_fail_site;
        fault_alloc_disarm(&f.fa);
        f.fa.failures = 0;
        if (!refused) {
            T_ST(st, VIDMM_OK);
            p[16] = x;
            break;
        }
        T_CHECK(st < 0);
        T_EQ_U64(x, VIDMM_HANDLE_NULL);
        if (site == VIDMM_SITE_PROCESS_TABLE_OBJECTS || site == VIDMM_SITE_PROCESS_TABLE_GENERATIONS ||
            site == VIDMM_SITE_PROCESS_TABLE_FREE_LINKS) {
            table_sites++;
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            same_footprint(&f, &fp);
        }
        T_EQ(softgpu_checked(f.a, f.sg), 0);
    }
    T_EQ(table_sites, 3);
    T_CHECK(p[16] != 0);
    for (uint32_t i = 17; i < 40; i++)
        T_ST(vidmm_process_create(f.a, &p[i]), VIDMM_OK);
    footprint(&f, &fp);
    vidmm_handle x = 0xDEAD;
    T_ST(vidmm_process_create(f.a, &x), VIDMM_E_BUSY);
    T_EQ_U64(x, VIDMM_HANDLE_NULL);
    same_footprint(&f, &fp);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    /* One destroyed: its slot is taken again, with a new generation. */
    T_ST(vidmm_process_destroy(f.a, p[7]), VIDMM_OK);
    T_ST(vidmm_process_create(f.a, &p[40]), VIDMM_OK);
    T_EQ(p[40] & 0xFFFFFFu, p[7] & 0xFFFFFFu);
    T_CHECK(p[40] != p[7]);
    T_ST(vidmm_process_create(f.a, &x), VIDMM_E_BUSY);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    softgpu_fx_close(&f);
}

/* Generation 1 of the create info has no max_processes: whatever lies
 * past its end is not read (the default bound applies); generation 2
 * refuses a bound above VIDMM_MAX_PROCESSES_LIMIT. */
static void abi_generations(void)
{
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", MIB(64), MIB(128), 1);
    struct softgpu *sg = NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    if (!sg)
        return;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    struct vidmm_adapter *a = NULL;
    ci.max_processes = VIDMM_MAX_PROCESSES_LIMIT + 1;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_E_INVALID_ARG);
    T_CHECK(a == NULL);
    /* Generation 1: the member is past its structure, so a bound of 2
     * there must not apply. */
    ci.abi_version = 1;
    ci.max_processes = 2;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    if (a) {
        vidmm_handle p[3] = { 0, 0, 0 };
        for (int i = 0; i < 3; i++)
            T_ST(vidmm_process_create(a, &p[i]), VIDMM_OK);
        T_EQ(vidmm_adapter_check(a, NULL, 0), 0);
        vidmm_adapter_close(a);
        a = NULL;
    }
    /* Generation 2 with the same bound: the third is refused. */
    ci.abi_version = VIDMM_ABI_VERSION;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    if (a) {
        vidmm_handle p[3] = { 0, 0, 0 };
        T_ST(vidmm_process_create(a, &p[0]), VIDMM_OK);
        T_ST(vidmm_process_create(a, &p[1]), VIDMM_OK);
        T_ST(vidmm_process_create(a, &p[2]), VIDMM_E_BUSY);
        vidmm_adapter_close(a);
    }
    /* A driver of generation 1 is still accepted. */
    struct vidmm_driver_ops ops = *softgpu_driver_ops();
    ops.abi_version = 1;
    ci.ops = &ops;
    ci.max_processes = 0;
    a = NULL;
    T_ST(vidmm_adapter_open(&ci, &a), VIDMM_OK);
    vidmm_adapter_close(a);
    softgpu_destroy(sg);
}

/* One allocation mapped in 3 of 64 processes: made resident (the GPU
 * reads its bytes through each of the three mappings), evicted (each
 * faults), made resident again (each reads them), then destroyed, with the checker
 * (which walks each allocation's list of mapping processes against the
 * VA spaces) clean at each step. */
static void mapped_in_some(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, MIB(64), MIB(128), 1))
        return;
    enum { NP = 64 };
    struct softgpu_proc pr[NP];
    for (int i = 0; i < NP; i++)
        softgpu_new_proc(f.a, &pr[i], 0, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, VIDMM_SEGMENT_BIT(1), KIB(256), 7, 0);
    static const int users[3] = { 5, 31, 60 };
    uint64_t va[3];
    for (int k = 0; k < 3; k++)
        va[k] = softgpu_map(f.a, pr[users[k]].proc, h, KIB(256));
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    softgpu_make_resident(f.a, pr[5].dev, pr[5].queue, &h, 1);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    for (int k = 0; k < 3; k++)
        T_CHECK(gv_gpu_sees(f.a, f.sg, pr[users[k]].proc, va[k], 0, KIB(256), 7));
    struct vidmm_evict_args ea;
    memset(&ea, 0, sizeof ea);
    ea.allocations = &h;
    ea.count = 1;
    T_ST(vidmm_evict(f.a, pr[5].dev, &ea), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    /* Evicted: every one of the three processes' mappings faults (its
     * PTEs were rewritten through the allocation's list of users). */
    struct vidmm_residency_state rs;
    memset(&rs, 0, sizeof rs);
    T_ST(vidmm_allocation_residency(f.a, h, &rs), VIDMM_OK);
    T_EQ(rs.resident, 0);
    for (int k = 0; k < 3; k++)
        T_CHECK(gv_gpu_faults(f.a, f.sg, pr[users[k]].proc, va[k]));
    softgpu_make_resident(f.a, pr[5].dev, pr[5].queue, &h, 1);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    for (int k = 0; k < 3; k++)
        T_CHECK(gv_gpu_sees(f.a, f.sg, pr[users[k]].proc, va[k], 0, KIB(256), 7));
    for (int k = 0; k < 3; k++) {
        struct vidmm_gpuva_range r;
        uint32_t cnt = 0;
        T_ST(vidmm_gpuva_query(f.a, pr[users[k]].proc, va[k], &r, 1, &cnt), VIDMM_OK);
        T_CHECK(cnt == 1 && r.allocation == h && r.va == va[k]);
    }
    /* A second mapping in one of them counts that process once. */
    (void)softgpu_map(f.a, pr[31].proc, h, KIB(64));
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    T_ST(vidmm_allocation_destroy(f.a, h), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    for (int k = 0; k < 3; k++) {
        struct vidmm_gpuva_range r;
        uint32_t cnt = 0;
        memset(&r, 0, sizeof r);
        T_ST(vidmm_gpuva_query(f.a, pr[users[k]].proc, va[k], &r, 1, &cnt), VIDMM_OK);
        T_CHECK(cnt == 0 || r.allocation != h);
    }
    /* A process destroyed while mapping an allocation drops its count. */
    vidmm_handle h2 = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, VIDMM_SEGMENT_BIT(1), KIB(64), 9, 0);
    (void)softgpu_map(f.a, pr[10].proc, h2, KIB(64));
    (void)softgpu_map(f.a, pr[11].proc, h2, KIB(64));
    T_ST(vidmm_process_destroy(f.a, pr[10].proc), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    T_ST(vidmm_allocation_destroy(f.a, h2), VIDMM_OK);
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    softgpu_fx_close(&f);
}

void suite_scale(void);
void suite_scale(void)
{
    t_run("scale.processes_4096", processes_4096);
    t_run("scale.bound_and_oom", bound_and_oom);
    t_run("scale.abi_generations", abi_generations);
    t_run("scale.mapped_in_some", mapped_in_some);
}
