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

int cli_demo_overcommit(struct cli_session *s, uint32_t invis)
{
    struct vidmm_adapter *a = s->adapter;
    static const char *const name[OC_PROCS] = { "game", "browser", "indexer" };
    static const uint32_t prio[OC_PROCS] = { VIDMM_PRIORITY_HIGH, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_LOW };
    static const int share[OC_PROCS] = { 50, 30, 20 };   /* % of the total each owns */
    vidmm_handle proc[OC_PROCS], dev[OC_PROCS], queue[OC_PROCS];
    struct oc_alloc *al = calloc(OC_MAX, sizeof *al);
    uint64_t *buf = malloc(8u << 20);
    int failures = 0, n = 0;
    uint64_t verified = 0, verified_bytes = 0, fence_waits = 0, trimmed = 0;
    if (!al || !buf) {
        free(al);
        free(buf);
        return 1;
    }
    struct vidmm_segment_info si;
    vidmm_segment_query(a, invis, &si);
    /* Twice all local memory (the memory segments). */
    uint64_t local = 0;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    for (uint32_t id = 1; id < ai.segment_count; id++) {
        struct vidmm_segment_info x;
        if (vidmm_segment_query(a, id, &x) == VIDMM_OK && x.kind == VIDMM_SEGMENT_KIND_MEMORY)
            local += x.size;
    }
    uint64_t target = 2 * local, total = 0, rng = 2026;
    for (int p = 0; p < OC_PROCS; p++) {
        failures += vidmm_process_create(a, &proc[p]) < 0;
        failures += vidmm_device_create(a, proc[p], &dev[p]) < 0;
        failures += vidmm_paging_queue_create(a, dev[p], VIDMM_PAGING_QUEUE_NORMAL, &queue[p]) < 0;
    }
    if (failures)
        goto out;
    /* Textures of 1-8 MiB, created evicted (no room needed), filled by
     * the CPU while in system memory, mapped at a fixed GPU VA. */
    for (int p = 0; p < OC_PROCS; p++) {
        uint64_t mine = 0, quota = target * (uint64_t)share[p] / 100;
        while (mine < quota && n < OC_MAX) {
            struct oc_alloc *x = &al[n];
            struct softgpu_alloc_desc d;
            memset(&d, 0, sizeof d);
            d.kind = SOFTGPU_ALLOC_TEXTURE;
            d.cpu_visible = 1;
            d.size = (1ull << 20) << (splitmix64_next(&rng) % 4);
            x->size = d.size;
            x->seed = 5000 + (uint64_t)n;
            x->owner = p;
            if (vidmm_allocation_create2(a, &d, sizeof d, 0, &x->h) < 0 || oc_fill(a, x) < 0 ||
                vidmm_allocation_set_priority(a, x->h, prio[p]) < 0 ||
                vidmm_gpuva_map(a, proc[p], 0, 0, 0, x->h, 0, x->size, 0, 0, &x->va) < 0) {
                failures++;
                goto out;
            }
            mine += x->size;
            total += x->size;
            n++;
        }
    }
    char tb[32], sb[32];
    cli_format_size(total, tb, sizeof tb);
    cli_format_size(local, sb, sizeof sb);
    printf("\n== over-commitment: %d allocations, %s against %s of memory segments (%.1fx) ==\n", n, tb, sb,
           (double)total / (double)local);
    /* The OS gives the background process a small budget, as it would
     * to an app in the background. */
    vidmm_process_set_budget(a, proc[2], VIDMM_SEGMENT_GROUP_LOCAL, local / 8);
    for (int p = 0; p < OC_PROCS; p++)
        printf("  %-8s priority %s\n", name[p], p == 0 ? "HIGH" : p == 1 ? "NORMAL" : "LOW");

    /* Frames: each process makes a random working set of up to a third
     * of the segment resident, the GPU reads it, the process evicts it. */
    const int frames = 12;
    for (int f = 0; f < frames && !failures; f++) {
        for (int p = 0; p < OC_PROCS; p++) {
            vidmm_handle list[OC_MAX];
            int idx[OC_MAX];
            uint32_t m = 0;
            uint64_t bytes = 0, cap = p == 2 ? local * 3 / 32 : si.size / 3; /* the indexer fits its budget */
            for (int i = 0; i < n; i++)
                if (al[i].owner == p && splitmix64_next(&rng) % 3 && bytes + al[i].size <= cap) {
                    idx[m] = i;
                    list[m++] = al[i].h;
                    bytes += al[i].size;
                }
            struct vidmm_make_resident_args mr;
            memset(&mr, 0, sizeof mr);
            mr.paging_queue = queue[p];
            mr.allocations = list;
            mr.count = m;
            vidmm_status st = vidmm_make_resident(a, dev[p], &mr);
            if (st == VIDMM_E_OVER_BUDGET) {
                /* What a UMD does: trim (its resident, unlisted
                 * allocations go), then retry, at last saying it cannot
                 * trim further. */
                for (int i = 0; i < n && mr.bytes_to_trim; i++) {
                    struct vidmm_residency_state r;
                    if (al[i].owner != p || vidmm_allocation_residency(a, al[i].h, &r) < 0 || !r.resident ||
                        r.references)
                        continue;
                    vidmm_handle one = al[i].h;
                    if (vidmm_make_resident(a, dev[p], &(struct vidmm_make_resident_args){
                            .paging_queue = queue[p], .allocations = &one, .count = 1,
                            .flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER }) >= 0 &&
                        vidmm_evict(a, dev[p], &(struct vidmm_evict_args){ .allocations = &one, .count = 1, .flags = VIDMM_EVICT_NOT_WRITTEN_TO }) >= 0)
                        mr.bytes_to_trim = mr.bytes_to_trim > al[i].size ? mr.bytes_to_trim - al[i].size : 0;
                    trimmed++;
                }
                st = vidmm_make_resident(a, dev[p], &mr);
                if (st == VIDMM_E_OVER_BUDGET) {
                    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
                    st = vidmm_make_resident(a, dev[p], &mr);
                }
            }
            if (st == VIDMM_PENDING) {
                fence_waits++;
                st = vidmm_paging_queue_wait(a, queue[p], mr.paging_fence_value, 2000000000ull);
            }
            if (st < 0) {
                printf("  frame %d %s: make-resident %s\n", f, name[p], vidmm_status_str(st));
                failures++;
                break;
            }
            for (uint32_t k = 0; k < m; k++) {
                if (oc_gpu_check(s, proc[p], &al[idx[k]], buf) < 0) {
                    printf("  INTEGRITY FAILURE: frame %d, %s allocation %d\n", f, name[p], idx[k]);
                    failures++;
                } else {
                    verified++;
                    verified_bytes += al[idx[k]].size;
                }
            }
            if (vidmm_evict(a, dev[p], &(struct vidmm_evict_args){ .allocations = list, .count = m, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO }) < 0)
                failures++;
            if (vidmm_adapter_check(a, NULL, 0))
                failures++;
        }
    }
    printf("  %d frames x %d processes: make-resident, GPU reads of every listed allocation, evict\n", frames,
           OC_PROCS);
    printf("\n  %-8s %12s %12s %12s\n", "process", "usage", "budget", "reservation");
    for (int p = 0; p < OC_PROCS; p++) {
        struct vidmm_video_memory_info vi;
        vidmm_query_video_memory_info(a, proc[p], VIDMM_SEGMENT_GROUP_LOCAL, &vi);
        char u[32], b[32], r[32];
        cli_format_size(vi.current_usage, u, sizeof u);
        cli_format_size(vi.budget, b, sizeof b);
        cli_format_size(vi.current_reservation, r, sizeof r);
        printf("  %-8s %12s %12s %12s\n", name[p], u, b, r);
    }
    struct vidmm_residency_stats rs;
    vidmm_residency_get_stats(a, &rs);
    char eb[32], rb[32], db[32];
    cli_format_size(rs.bytes_evicted, eb, sizeof eb);
    cli_format_size(rs.bytes_restored, rb, sizeof rb);
    cli_format_size(rs.bytes_discarded, db, sizeof db);
    printf("\n  budget: %llu make-resident calls refused over budget, %llu allocations trimmed by their process, "
           "%llu trim notifications\n",
           (unsigned long long)rs.over_budget, (unsigned long long)trimmed, (unsigned long long)rs.trim_notifications);
    printf("  residency: %llu make-resident calls (%llu waited on the paging fence), %llu restores (%s), "
           "%llu evictions (%s transferred, %llu discarded clean: %s)\n",
           (unsigned long long)rs.make_resident_calls, (unsigned long long)fence_waits,
           (unsigned long long)rs.restores, rb, (unsigned long long)rs.evictions, eb,
           (unsigned long long)rs.discards, db);
    char vb[32];
    cli_format_size(verified_bytes, vb, sizeof vb);
    printf("  over-commitment integrity: %llu GPU read-backs (%s) matched, %d failures\n",
           (unsigned long long)verified, vb, failures);
out:
    for (int i = 0; i < n; i++)
        vidmm_allocation_destroy(a, al[i].h);
    for (int p = 0; p < OC_PROCS; p++)
        vidmm_process_destroy(a, proc[p]);
    free(al);
    free(buf);
    return failures;
}
