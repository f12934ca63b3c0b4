/*
 * demo_overcommit.c - the over-commitment part of `vidmm demo`.
 *
 * Three processes of different priorities (a game, a browser, a
 * background indexer) own allocations that add up to twice the invisible
 * memory segment.  Each frame every process makes a working set resident
 * (WDDM 2 make-resident on its paging queue), waits for the paging fence,
 * and the GPU reads every listed allocation through the process's page
 * tables (softgpu's MMU walker); then the process evicts its list.  The
 * demo reports per-process usage against budget, evictions, restores,
 * paging traffic by operation, and the integrity of every read-back.
 */
#include "cli/cli.h"
#include "splitmix.h"

#include <stdlib.h>
#include <string.h>

#define OC_PROCS 3
#define OC_MAX 320

struct oc_alloc {
    vidmm_handle h;
    uint64_t size, va, seed;
    int owner;
};

static int oc_fill(struct vidmm_adapter *a, struct oc_alloc *x)
{
    void *p = NULL;
    if (vidmm_allocation_lock(a, x->h, &p) < 0)
        return -1;
    uint64_t s = x->seed, *w = p;
    for (uint64_t i = 0; i < x->size / 8; i++)
        w[i] = splitmix64_next(&s);
    return vidmm_allocation_unlock(a, x->h) < 0 ? -1 : 0;
}

/* The GPU reads the allocation at its VA: the seeded bytes, wherever
 * vidmm placed them. */
static int oc_gpu_check(struct cli_session *s, vidmm_handle proc, const struct oc_alloc *x, uint64_t *buf)
{
    struct vidmm_physical_address root;
    if (vidmm_process_root_page_table(s->adapter, proc, &root) < 0 ||
        softgpu_read_virtual(s->gpu, &root, x->va, buf, (size_t)x->size) < 0)
        return -1;
    uint64_t sd = x->seed;
    for (uint64_t i = 0; i < x->size / 8; i++)
        if (buf[i] != splitmix64_next(&sd))
            return -1;
    return 0;
}

/* The demo's state: the processes, their allocations, the generator
 * that picks sizes and working sets, and what the frames counted. */
struct oc {
    struct cli_session *s;
    struct vidmm_adapter *a;
    vidmm_handle proc[OC_PROCS], dev[OC_PROCS], queue[OC_PROCS];
    struct oc_alloc *al;
    int n;
    uint64_t *buf;               /* read-back buffer (8 MiB, the largest allocation) */
    uint64_t rng;
    uint64_t local;              /* bytes of the memory segments */
    uint64_t seg_size;           /* the invisible segment's */
    int failures;
    uint64_t verified, verified_bytes, fence_waits, trimmed;
};

static const char *const oc_name[OC_PROCS] = { "game", "browser", "indexer" };

/* All local memory: the memory segments. */
static uint64_t oc_local_bytes(struct vidmm_adapter *a)
{
    uint64_t local = 0;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info x;
        if (vidmm_segment_query(a, id, &x) == VIDMM_OK && x.kind == VIDMM_SEGMENT_KIND_MEMORY)
            local += x.size;
    }
    return local;
}

/* Textures of 1-8 MiB, created evicted (no room needed), filled by
 * the CPU while in system memory, mapped at a fixed GPU VA, until each
 * process owns its share of target.  -1: one failed (counted). */
static int oc_populate(struct oc *o, uint64_t target, uint64_t *total)
{
    static const uint32_t prio[OC_PROCS] = { VIDMM_PRIORITY_HIGH, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_LOW };
    static const int share[OC_PROCS] = { 50, 30, 20 };   /* % of the total each owns */
    struct vidmm_adapter *a = o->a;
    for (int p = 0; p < OC_PROCS; p++) {
        uint64_t mine = 0, quota = target * (uint64_t)share[p] / 100;
        while (mine < quota && o->n < OC_MAX) {
            struct oc_alloc *x = &o->al[o->n];
            struct softgpu_alloc_desc d;
            memset(&d, 0, sizeof d);
            d.kind = SOFTGPU_ALLOC_TEXTURE;
            d.cpu_visible = 1;
            d.size = (1ull << 20) << (splitmix64_next(&o->rng) % 4);
            x->size = d.size;
            x->seed = 5000 + (uint64_t)o->n;
            x->owner = p;
            if (vidmm_allocation_create2(a, &d, sizeof d, 0, &x->h) < 0 || oc_fill(a, x) < 0 ||
                vidmm_allocation_set_priority(a, x->h, prio[p]) < 0 ||
                vidmm_gpuva_map(a, o->proc[p], 0, 0, 0, x->h, 0, x->size, 0, 0, &x->va) < 0) {
                o->failures++;
                return -1;
            }
            mine += x->size;
            *total += x->size;
            o->n++;
        }
    }
    return 0;
}

/* Make process p's list resident.  Over budget, it does what a UMD does:
 * trim (its resident, unlisted allocations go), then retry, at last
 * saying it cannot trim further; then waits for the paging fence. */
static vidmm_status oc_make_resident(struct oc *o, int p, struct vidmm_make_resident_args *mr)
{
    struct vidmm_adapter *a = o->a;
    vidmm_status st = vidmm_make_resident(a, o->dev[p], mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        for (int i = 0; i < o->n && mr->bytes_to_trim; i++) {
            struct vidmm_residency_state r;
            if (o->al[i].owner != p || vidmm_allocation_residency(a, o->al[i].h, &r) < 0 || !r.resident ||
                r.references)
                continue;
            vidmm_handle one = o->al[i].h;
            if (vidmm_make_resident(a, o->dev[p], &(struct vidmm_make_resident_args){
                    .paging_queue = o->queue[p], .allocations = &one, .count = 1,
                    .flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER }) >= 0 &&
                vidmm_evict(a, o->dev[p], &(struct vidmm_evict_args){ .allocations = &one, .count = 1, .flags = VIDMM_EVICT_NOT_WRITTEN_TO }) >= 0)
                mr->bytes_to_trim = mr->bytes_to_trim > o->al[i].size ? mr->bytes_to_trim - o->al[i].size : 0;
            o->trimmed++;
        }
        st = vidmm_make_resident(a, o->dev[p], mr);
        if (st == VIDMM_E_OVER_BUDGET) {
            mr->flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
            st = vidmm_make_resident(a, o->dev[p], mr);
        }
    }
    if (st == VIDMM_PENDING) {
        o->fence_waits++;
        st = vidmm_paging_queue_wait(a, o->queue[p], mr->paging_fence_value, 2000000000ull);
    }
    return st;
}

/* Process p's part of frame f: a random working set of up to a third of
 * the segment made resident, read by the GPU, evicted.  -1: make-resident
 * failed (the frame stops). */
static int oc_frame(struct oc *o, int f, int p)
{
    struct vidmm_adapter *a = o->a;
    vidmm_handle list[OC_MAX];
    int idx[OC_MAX];
    uint32_t m = 0;
    uint64_t bytes = 0, cap = p == 2 ? o->local * 3 / 32 : o->seg_size / 3; /* the indexer fits its budget */
    for (int i = 0; i < o->n; i++)
        if (o->al[i].owner == p && splitmix64_next(&o->rng) % 3 && bytes + o->al[i].size <= cap) {
            idx[m] = i;
            list[m++] = o->al[i].h;
            bytes += o->al[i].size;
        }
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = o->queue[p];
    mr.allocations = list;
    mr.count = m;
    vidmm_status st = oc_make_resident(o, p, &mr);
    if (st < 0) {
        printf("  frame %d %s: make-resident %s\n", f, oc_name[p], vidmm_status_str(st));
        o->failures++;
        return -1;
    }
    for (uint32_t k = 0; k < m; k++) {
        if (oc_gpu_check(o->s, o->proc[p], &o->al[idx[k]], o->buf) < 0) {
            printf("  INTEGRITY FAILURE: frame %d, %s allocation %d\n", f, oc_name[p], idx[k]);
            o->failures++;
        } else {
            o->verified++;
            o->verified_bytes += o->al[idx[k]].size;
        }
    }
    if (vidmm_evict(a, o->dev[p], &(struct vidmm_evict_args){ .allocations = list, .count = m, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO }) < 0)
        o->failures++;
    if (vidmm_adapter_check(a, NULL, 0))
        o->failures++;
    return 0;
}

/* Usage against budget per process, the residency counters, and the
 * integrity of the read-backs. */
static void oc_report(struct oc *o, int frames)
{
    struct vidmm_adapter *a = o->a;
    printf("  %d frames x %d processes: make-resident, GPU reads of every listed allocation, evict\n", frames,
           OC_PROCS);
    printf("\n  %-8s %12s %12s %12s\n", "process", "usage", "budget", "reservation");
    for (int p = 0; p < OC_PROCS; p++) {
        struct vidmm_video_memory_info vi;
        vidmm_query_video_memory_info(a, o->proc[p], VIDMM_SEGMENT_GROUP_LOCAL, &vi);
        char u[32], b[32], r[32];
        cli_format_size(vi.current_usage, u, sizeof u);
        cli_format_size(vi.budget, b, sizeof b);
        cli_format_size(vi.current_reservation, r, sizeof r);
        printf("  %-8s %12s %12s %12s\n", oc_name[p], u, b, r);
    }
    struct vidmm_residency_stats rs;
    vidmm_residency_get_stats(a, &rs);
    char eb[32], rb[32], db[32];
    cli_format_size(rs.bytes_evicted, eb, sizeof eb);
    cli_format_size(rs.bytes_restored, rb, sizeof rb);
    cli_format_size(rs.bytes_discarded, db, sizeof db);
    printf("\n  budget: %llu make-resident calls refused over budget, %llu allocations trimmed by their process, "
           "%llu trim notifications\n",
           (unsigned long long)rs.over_budget, (unsigned long long)o->trimmed,
           (unsigned long long)rs.trim_notifications);
    printf("  residency: %llu make-resident calls (%llu waited on the paging fence), %llu restores (%s), "
           "%llu evictions (%s transferred, %llu discarded clean: %s)\n",
           (unsigned long long)rs.make_resident_calls, (unsigned long long)o->fence_waits,
           (unsigned long long)rs.restores, rb, (unsigned long long)rs.evictions, eb,
           (unsigned long long)rs.discards, db);
    char vb[32];
    cli_format_size(o->verified_bytes, vb, sizeof vb);
    printf("  over-commitment integrity: %llu GPU read-backs (%s) matched, %d failures\n",
           (unsigned long long)o->verified, vb, o->failures);
}

int cli_demo_overcommit(struct cli_session *s, uint32_t invis)
{
    struct oc *o = calloc(1, sizeof *o);
    if (!o)
        return 1;
    o->s = s;
    o->a = s->adapter;
    o->al = calloc(OC_MAX, sizeof *o->al);
    o->buf = malloc(8u << 20);
    if (!o->al || !o->buf) {
        free(o->al);
        free(o->buf);
        free(o);
        return 1;
    }
    struct vidmm_adapter *a = o->a;
    struct vidmm_segment_info si;
    vidmm_segment_query(a, invis, &si);
    o->seg_size = si.size;
    /* Twice all local memory. */
    o->local = oc_local_bytes(a);
    uint64_t target = 2 * o->local, total = 0;
    o->rng = 2026;
    for (int p = 0; p < OC_PROCS; p++) {
        o->failures += vidmm_process_create(a, &o->proc[p]) < 0;
        o->failures += vidmm_device_create(a, o->proc[p], &o->dev[p]) < 0;
        o->failures += vidmm_paging_queue_create(a, o->dev[p], VIDMM_PAGING_QUEUE_NORMAL, &o->queue[p]) < 0;
    }
    if (!o->failures && !oc_populate(o, target, &total)) {
        char tb[32], sb[32];
        cli_format_size(total, tb, sizeof tb);
        cli_format_size(o->local, sb, sizeof sb);
        printf("\n== over-commitment: %d allocations, %s against %s of memory segments (%.1fx) ==\n", o->n, tb, sb,
               (double)total / (double)o->local);
        /* The OS gives the background process a small budget, as it would
         * to an app in the background. */
        vidmm_process_set_budget(a, o->proc[2], VIDMM_SEGMENT_GROUP_LOCAL, o->local / 8);
        for (int p = 0; p < OC_PROCS; p++)
            printf("  %-8s priority %s\n", oc_name[p], p == 0 ? "HIGH" : p == 1 ? "NORMAL" : "LOW");
        /* Frames: each process makes a working set resident, the GPU
         * reads it, the process evicts it. */
        const int frames = 12;
        for (int f = 0; f < frames && !o->failures; f++)
            for (int p = 0; p < OC_PROCS; p++)
                if (oc_frame(o, f, p) < 0)
                    break;
        oc_report(o, frames);
    }
    for (int i = 0; i < o->n; i++)
        vidmm_allocation_destroy(a, o->al[i].h);
    for (int p = 0; p < OC_PROCS; p++)
        vidmm_process_destroy(a, o->proc[p]);
    int failures = o->failures;
    free(o->al);
    free(o->buf);
    free(o);
    return failures;
}
