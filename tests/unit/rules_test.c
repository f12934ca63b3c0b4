/*
 * rules_test.c - the WDDM rules checker: vidmm_adapter_check_rules (the
 * library's rules) and the harness's GPU view and failed-call rule
 * (support/rules_check.h), on states whose answer is known: a clean
 * adapter, the exemptions the budget rule allows, a failed call that
 * changes nothing, and the fingerprint naming what a call changed.
 * Minimal repros of open defects the checker finds go to
 * tests/scenarios/pending/ (none today; docs/TESTING.md "Rules").
 */
#include "rules_check.h"
#include "harness/test.h"
#include "unit/softgpu_fixture.h"

#include <string.h>

#define MIB (1ull << 20)

static void null_adapter(void)
{
    char rep[256];
    T_EQ(vidmm_adapter_check_rules(NULL, rep, sizeof rep), 1);
    T_CHECK(!strncmp(rep, "rules.adapter:", 14));
    T_EQ(vidmm_adapter_check_rules(NULL, NULL, 0), 1);
    char tiny[4];
    T_EQ(vidmm_adapter_check_rules(NULL, tiny, sizeof tiny), 1);
    T_CHECK(strlen(tiny) < sizeof tiny);
}

/* Two processes, resident and mapped allocations: no rule is broken and
 * the MMU walk finds every page where the placement says; after an
 * eviction the pages fault, which is the rule too. */
static void clean_and_gpu_view(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p[2];
    vidmm_handle h[4];
    for (int i = 0; i < 2; i++)
        softgpu_new_proc(f.a, &p[i], SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    uint64_t va0 = 0;
    for (int i = 0; i < 4; i++) {
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, 2 * MIB, 10 + (uint64_t)i, 0);
        uint64_t va = softgpu_map(f.a, p[i & 1].proc, h[i], 2 * MIB);
        if (i == 0)
            va0 = va;
        softgpu_make_resident(f.a, p[i & 1].dev, p[i & 1].queue, &h[i], 1);
    }
    /* The walk has pages to walk: the first mapping translates. */
    struct vidmm_physical_address root;
    struct softgpu_translation tr;
    T_ST(vidmm_process_root_page_table(f.a, p[0].proc, &root), VIDMM_OK);
    T_ST(softgpu_translate(f.sg, &root, va0, SOFTGPU_ACCESS_READ, &tr), VIDMM_OK);
    vidmm_handle procs[2] = { p[0].proc, p[1].proc };
    struct rc_objects o = { procs, NULL, NULL, NULL, h, 2, 0, 0, 0, 4 };
    char rep[1024];
    T_EQ(vidmm_adapter_check_rules(f.a, rep, sizeof rep), 0);
    T_EQ(rc_check_gpu(f.a, f.sg, &o, rep, sizeof rep), 0);
    T_ST(vidmm_evict(f.a, p[0].dev, &(struct vidmm_evict_args){ .allocations = &h[0], .count = 1 }), VIDMM_OK);
    T_EQ(rc_check_rules(f.a, f.sg, &o, rep, sizeof rep), 0);
    /* A move rewrites the page tables: still where the placement is. */
    T_ST(vidmm_allocation_move(f.a, h[1], 1), VIDMM_OK);
    T_EQ(rc_check_rules(f.a, f.sg, &o, rep, sizeof rep), 0);
    if (rep[0])
        fprintf(stderr, "%s", rep);
    softgpu_fx_close(&f);
}

/* Over budget is allowed after a CantTrimFurther make-resident, and when
 * the budget dropped after the process's last make-resident (the OS
 * pinned it lower: the process is owed a trim, not in breach). */
static void budget_exemptions(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[3];
    for (int i = 0; i < 3; i++)
        h[i] = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, 2 * MIB, 0, 0);
    char rep[512];
    /* softgpu_make_resident says CantTrimFurther: 6 MiB against 4 MiB is fine. */
    T_ST(vidmm_process_set_budget(f.a, p.proc, VIDMM_SEGMENT_GROUP_LOCAL, 4 * MIB), VIDMM_OK);
    softgpu_make_resident(f.a, p.dev, p.queue, h, 3);
    struct vidmm_video_memory_info vi;
    T_ST(vidmm_query_video_memory_info(f.a, p.proc, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    T_CHECK(vi.current_usage > vi.budget);
    T_EQ(vidmm_adapter_check_rules(f.a, rep, sizeof rep), 0);
    /* Back to the automatic budget, a make-resident without the flag,
     * then the OS pins the budget below the usage. */
    T_ST(vidmm_process_set_budget(f.a, p.proc, VIDMM_SEGMENT_GROUP_LOCAL, 0), VIDMM_OK);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = p.queue;
    mr.allocations = h;
    mr.count = 1;
    T_CHECK(vidmm_make_resident(f.a, p.dev, &mr) >= 0);
    T_ST(vidmm_process_set_budget(f.a, p.proc, VIDMM_SEGMENT_GROUP_LOCAL, 2 * MIB), VIDMM_OK);
    T_EQ(vidmm_adapter_check_rules(f.a, rep, sizeof rep), 0);
    softgpu_fx_close(&f);
}

/* The fingerprint: unchanged by a refused call, and naming the first
 * difference after a real change; the failed-call rule follows it. */
static void fingerprint_and_failed_call(void)
{
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h[2] = { softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, 2 * MIB, 0, 0), 0 };
    struct rc_objects o = { &p.proc, &p.dev, &p.ctx, &p.queue, h, 1, 1, 1, 1, 1 };
    struct rc_fp before, after;
    T_EQ(rc_fp_init(&before, 4096), 0);
    T_EQ(rc_fp_init(&after, 4096), 0);
    rc_fp_take(&before, f.a, &o);
    /* A list naming a stale handle is refused as a whole. */
    vidmm_handle bad[2] = { h[0], h[0] + 1 };
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = p.queue;
    mr.allocations = bad;
    mr.count = 2;
    vidmm_status st = vidmm_make_resident(f.a, p.dev, &mr);
    T_CHECK(st < 0);
    rc_fp_take(&after, f.a, &o);
    char rep[512];
    T_EQ(rc_check_failed_make_resident(&before, &after, st, rep, sizeof rep), 0);
    /* A real change is named. */
    T_ST(vidmm_allocation_set_priority(f.a, h[0], VIDMM_PRIORITY_HIGH), VIDMM_OK);
    rc_fp_take(&after, f.a, &o);
    char msg[200];
    T_EQ(rc_fp_diff(&before, &after, 0, NULL, msg, sizeof msg), 1);
    T_CHECK(strstr(msg, "res.priority[0]") != NULL);
    T_EQ(rc_check_failed_make_resident(&before, &after, VIDMM_E_NO_SEGMENT_SPACE, rep, sizeof rep), 1);
    T_CHECK(!strncmp(rep, "call.failed_make_resident_no_trace:", 35));
    /* A too-small fingerprint says so rather than comparing half. */
    struct rc_fp small;
    T_EQ(rc_fp_init(&small, 4), 0);
    rc_fp_take(&small, f.a, &o);
    T_CHECK(small.overflow);
    T_EQ(rc_fp_diff(&small, &small, 0, NULL, msg, sizeof msg), 1);
    rc_fp_free(&small);
    rc_fp_free(&before);
    rc_fp_free(&after);
    softgpu_fx_close(&f);
}

/* The rules that read softgpu itself are named (a harness on another
 * driver says them "not applicable"), each one gpu.*, and without a
 * softgpu they report nothing while the library's rules still run. */
static void softgpu_only(void)
{
    size_t n = 0;
    for (; rc_softgpu_only_rules[n]; n++)
        T_CHECK(!strncmp(rc_softgpu_only_rules[n], "gpu.", 4));
    T_EQ(n, 7);
    char all[512], tiny[8];
    rc_softgpu_only_names(all, sizeof all);
    T_CHECK(strstr(all, "gpu.resident_translates, ") == all);
    T_CHECK(strstr(all, "gpu.aperture_entry_owned") != NULL);
    rc_softgpu_only_names(tiny, sizeof tiny);
    T_EQ(strlen(tiny), sizeof tiny - 1);
    struct softgpu_fx f;
    if (softgpu_fx_open(&f, 8 * MIB, 16 * MIB, 1))
        return;
    struct softgpu_proc p;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle h = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_TEXTURE, 0, 2 * MIB, 7, 0);
    softgpu_map(f.a, p.proc, h, 2 * MIB);
    softgpu_make_resident(f.a, p.dev, p.queue, &h, 1);
    struct rc_objects o = { &p.proc, NULL, NULL, NULL, &h, 1, 0, 0, 0, 1 };
    char rep[512];
    T_EQ(rc_check_gpu(f.a, NULL, &o, rep, sizeof rep), 0);
    T_EQ(rep[0], '\0');
    T_EQ(rc_check_unmapped(f.a, NULL, &o, 64, rep, sizeof rep), 0);
    T_EQ(rc_check_aperture(f.a, NULL, rep, sizeof rep), 0);
    T_EQ(rc_check_rules(f.a, NULL, &o, rep, sizeof rep), vidmm_adapter_check_rules(f.a, NULL, 0));
    softgpu_fx_close(&f);
}

void suite_rules(void);
void suite_rules(void)
{
    t_run("rules.null_adapter", null_adapter);
    t_run("rules.clean_and_gpu_view", clean_and_gpu_view);
    t_run("rules.budget_exemptions", budget_exemptions);
    t_run("rules.fingerprint_and_failed_call", fingerprint_and_failed_call);
    t_run("rules.softgpu_only", softgpu_only);
}
