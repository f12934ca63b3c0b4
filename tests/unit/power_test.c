/*
 * power_test.c - the power rules of vidmm/power.h that tdr_test.c's
 * cycles do not reach (docs/RESET_AND_POWER.md, docs/DECISIONS.md
 * D59-D60):
 *
 *   - going down only from D0: standby or hibernate requested while in
 *     either answers VIDMM_E_STATE, names the rule, changes nothing and
 *     tells the driver nothing;
 *   - no GPU work while down: a driver wrapper counts build_paging_buffer
 *     and submit_command calls made while the adapter is down; reserving
 *     GPU VA (refused), destroying a process (with an allocation of its
 *     own mapped in it) and destroying a mapped allocation (both succeed,
 *     their page-table changes wait for resume)
 *     must add none, and after resume softgpu's MMU sees the page tables
 *     vidmm's VA state describes;
 *   - zero reservations survive every page-table rebuild: after standby,
 *     hibernate and an adapter reset, a range reserved with
 *     VIDMM_GPUVA_RESERVE_ZERO, or unmapped back to it, translates to
 *     Zero entries (the rules checker's gpu.zero_translates_zero, and
 *     softgpu_translate directly).
 */
#include "gpuva_common.h"
#include "softgpu_fixture.h"
#include "harness/fault_alloc.h"
#include "harness/rules_check.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <string.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)
#define SET12 (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2))

struct pw {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_driver_ops ops;
    int down;                 /* the test says the adapter is down now */
    unsigned work_while_down; /* build_paging_buffer + submit_command calls meanwhile */
};

static struct pw *g_pw;       /* the wrappers' fixture (one test at a time) */

static vidmm_status counting_build(void *drv, struct vidmm_build_paging_buffer_args *args)
{
    if (g_pw && g_pw->down)
        g_pw->work_while_down++;
    return softgpu_driver_ops()->build_paging_buffer(drv, args);
}

static vidmm_status counting_submit(void *drv, const struct vidmm_submit_command_args *args)
{
    if (g_pw && g_pw->down)
        g_pw->work_while_down++;
    return softgpu_driver_ops()->submit_command(drv, args);
}

static int pw_open(struct pw *f)
{
    memset(f, 0, sizeof(*f));
    g_pw = f;
    struct softgpu_config cfg;
    softgpu_fixture_config(&cfg, "dgpu", 16 * MIB, 32 * MIB, 0);
    f->ops = *softgpu_driver_ops();
    f->ops.build_paging_buffer = counting_build;
    f->ops.submit_command = counting_submit;
    if (softgpu_open(&f->fa, &cfg, &f->ops, 0, &f->sg, &f->a))
        return -1;
    T_ST(vidmm_adapter_set_tdr_timeout(f->a, 50000000ull), VIDMM_OK);
    return 0;
}

static void pw_close(struct pw *f)
{
    softgpu_close(&f->fa, f->sg, f->a);
    g_pw = NULL;
}

static void go(struct pw *f, uint32_t state)
{
    f->down = 0;
    T_ST(vidmm_adapter_set_power_state(f->a, state), VIDMM_OK);
    f->down = state != VIDMM_POWER_D0;
}

/* The library's rules and the GPU's view of every process in procs. */
static int rules_broken(struct pw *f, const vidmm_handle *procs, uint32_t n)
{
    struct rc_objects o;
    memset(&o, 0, sizeof(o));
    o.proc = procs;
    o.nproc = n;
    char report[2048];
    int e = rc_check_rules(f->a, f->sg, &o, report, sizeof report);
    if (e)
        fprintf(stderr, "rules: %s\n", report);
    return e + softgpu_checked(f->a, f->sg);
}

/* What softgpu's MMU makes of va in proc: 'z' a Zero entry, 'f' a
 * fault, 'm' memory, '?' no root. */
static char gpu_sees(struct pw *f, vidmm_handle proc, uint64_t va)
{
    struct vidmm_physical_address root;
    struct softgpu_translation t;
    if (vidmm_process_root_page_table(f->a, proc, &root) != VIDMM_OK)
        return '?';
    vidmm_status st = softgpu_translate(f->sg, &root, va, SOFTGPU_ACCESS_READ, &t);
    if (st == VIDMM_E_PAGE_FAULT)
        return 'f';
    return st == VIDMM_OK ? (t.zero ? 'z' : 'm') : '?';
}

/* ---- going down only from D0 --------------------------------------------- */

static void down_only_from_d0(void)
{
    struct pw f;
    if (pw_open(&f))
        return;
    static const uint32_t low[] = { VIDMM_POWER_STANDBY, VIDMM_POWER_HIBERNATE };
    for (int i = 0; i < 2; i++) {
        go(&f, low[i]);
        struct vidmm_power_stats before, after;
        struct softgpu_reset_stats rb, ra;
        T_ST(vidmm_adapter_get_power_stats(f.a, &before), VIDMM_OK);
        softgpu_get_reset_stats(f.sg, &rb);
        for (int j = 0; j < 2; j++) {   /* the same state again, and the other one */
            T_ST(vidmm_adapter_set_power_state(f.a, low[j]), VIDMM_E_STATE);
            T_CHECK(strstr(vidmm_last_error(), "only from D0") != NULL);
        }
        uint32_t ps = 9;
        T_ST(vidmm_adapter_get_power_state(f.a, &ps), VIDMM_OK);
        T_EQ(ps, low[i]);
        T_ST(vidmm_adapter_get_power_stats(f.a, &after), VIDMM_OK);
        softgpu_get_reset_stats(f.sg, &ra);
        T_EQ_U64(after.transitions, before.transitions);
        T_EQ_U64(ra.power_transitions, rb.power_transitions);   /* the driver was told nothing */
        T_EQ(f.work_while_down, 0);
        go(&f, VIDMM_POWER_D0);
        T_ST(vidmm_adapter_set_power_state(f.a, VIDMM_POWER_D0), VIDMM_OK);   /* running: nothing to do */
        T_ST(vidmm_adapter_get_power_stats(f.a, &after), VIDMM_OK);
        T_EQ_U64(after.transitions, before.transitions + 1);
    }
    T_EQ(softgpu_checked(f.a, f.sg), 0);
    pw_close(&f);
}

/* ---- no GPU work while down ------------------------------------------------ */

static void no_gpu_work_case(uint32_t state)
{
    struct pw f;
    if (pw_open(&f))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle x = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, SET12, 1 * MIB, 11, 0);   /* destroyed while down */
    vidmm_handle w = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, SET12, 1 * MIB, 13, 0);   /* kept */
    vidmm_handle y = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, SET12, 1 * MIB, 17, 0);   /* q's */
    uint64_t vx = softgpu_map(f.a, p.proc, x, 1 * MIB), vw = softgpu_map(f.a, p.proc, w, 1 * MIB);
    uint64_t vy = softgpu_map(f.a, q.proc, y, 1 * MIB);
    (void)vy;
    /* q's own allocation, mapped in q: q's destruction destroys it. */
    struct softgpu_alloc_desc d;
    softgpu_cpu_desc(&d, SOFTGPU_ALLOC_EXPLICIT, SET12, 1 * MIB);
    vidmm_handle qp = 0;
    T_ST(vidmm_device_allocation_create(f.a, q.dev, &d, sizeof d, 0, &qp), VIDMM_OK);
    uint64_t vqp = softgpu_map(f.a, q.proc, qp, 1 * MIB);
    (void)vqp;
    uint64_t vz = 0, vq = 0;
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 2 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &vz), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(f.a, q.proc, 0, 0, 0, 2 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &vq), VIDMM_OK);
    vidmm_handle px[] = { x, w };
    softgpu_make_resident(f.a, p.dev, p.queue, px, 2);
    vidmm_handle qy[] = { y, qp };
    softgpu_make_resident(f.a, q.dev, q.queue, qy, 2);
    T_EQ(gpu_sees(&f, p.proc, vx), 'm');

    go(&f, state);
    uint32_t before_ranges;
    struct vidmm_process_info pi;
    T_ST(vidmm_process_query(f.a, p.proc, &pi), VIDMM_OK);
    before_ranges = pi.ranges;
    /* Refused, and nothing changes. */
    uint64_t va = 0;
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 1 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &va), VIDMM_E_STATE);
    T_CHECK(strstr(vidmm_last_error(), "powered down") != NULL);
    T_EQ(f.work_while_down, 0);
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 1 * MIB, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va), VIDMM_E_STATE);
    T_ST(vidmm_process_query(f.a, p.proc, &pi), VIDMM_OK);
    T_EQ(pi.ranges, before_ranges);
    T_EQ(f.work_while_down, 0);
    /* Destroy and teardown always succeed; their page-table work waits. */
    T_ST(vidmm_process_destroy(f.a, q.proc), VIDMM_OK);
    T_EQ(f.work_while_down, 0);
    T_ST(vidmm_allocation_destroy(f.a, x), VIDMM_OK);
    T_EQ(f.work_while_down, 0);
    T_ST(vidmm_allocation_destroy(f.a, y), VIDMM_OK);
    T_EQ(f.work_while_down, 0);
    T_EQ(softgpu_checked(f.a, NULL), 0);

    go(&f, VIDMM_POWER_D0);
    softgpu_make_resident(f.a, p.dev, p.queue, &w, 1);
    /* The GPU's view is what vidmm's VA state says: x's range unmapped
     * (faults), w mapped to its placement with its bytes, the zero
     * reservation Zero. */
    T_EQ(gpu_sees(&f, p.proc, vx), 'f');
    T_EQ(gpu_sees(&f, p.proc, vx + 1 * MIB - 4096), 'f');
    T_CHECK(gv_gpu_sees(f.a, f.sg, p.proc, vw, 0, 1 * MIB, 13));
    T_EQ(gpu_sees(&f, p.proc, vz), 'z');
    T_EQ(rules_broken(&f, &p.proc, 1), 0);
    /* And the refused calls work now. */
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 1 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &va), VIDMM_OK);
    T_EQ(gpu_sees(&f, p.proc, va), 'z');
    pw_close(&f);
}

static void no_gpu_work_standby(void) { no_gpu_work_case(VIDMM_POWER_STANDBY); }
static void no_gpu_work_hibernate(void) { no_gpu_work_case(VIDMM_POWER_HIBERNATE); }

/* ---- zero reservations after a rebuild -------------------------------------- */

enum rebuild_kind { REBUILD_STANDBY, REBUILD_HIBERNATE, REBUILD_ADAPTER_RESET };

/* A paging hang on q's make-resident: vidmm resets the adapter and
 * rebuilds every page table. */
static void adapter_reset(struct pw *f, const struct softgpu_proc *q)
{
    vidmm_handle h = softgpu_new_alloc(f->a, SOFTGPU_ALLOC_EXPLICIT, SET12, 1 * MIB, 19, 0);
    softgpu_inject_paging_hang(f->sg, 0);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof(mr));
    mr.paging_queue = q->queue;
    mr.allocations = &h;
    mr.count = 1;
    vidmm_status st = vidmm_make_resident(f->a, q->dev, &mr);
    T_CHECK(st == VIDMM_PENDING || st == VIDMM_OK);
    T_ST(vidmm_paging_queue_wait(f->a, q->queue, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    if (st == VIDMM_OK)
        T_ST(vidmm_adapter_detect_hangs(f->a, NULL), VIDMM_OK);
    struct vidmm_tdr_stats ts;
    T_ST(vidmm_adapter_get_tdr_stats(f->a, &ts), VIDMM_OK);
    T_EQ_U64(ts.adapter_resets, 1);
    T_ST(vidmm_allocation_destroy(f->a, h), VIDMM_OK);
}

static void zero_after_rebuild_case(enum rebuild_kind kind)
{
    struct pw f;
    if (pw_open(&f))
        return;
    struct softgpu_proc p, q;
    softgpu_new_proc(f.a, &p, SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL);
    softgpu_new_proc(f.a, &q, SOFTGPU_NODE_COMPUTE, VIDMM_CONTEXT_VIRTUAL);
    vidmm_handle m = softgpu_new_alloc(f.a, SOFTGPU_ALLOC_EXPLICIT, SET12, 256 * KIB, 23, 0);
    uint64_t z1 = 0, z2 = 0, vm = 0;
    /* z1: reserved Zero; z2: Zero with m mapped into its middle, then the
     * first half of that unmapped back to Zero. */
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 4 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &z1), VIDMM_OK);
    T_ST(vidmm_gpuva_reserve(f.a, p.proc, 0, 0, 0, 2 * MIB, VIDMM_GPUVA_RESERVE_ZERO, &z2), VIDMM_OK);
    T_ST(vidmm_gpuva_map(f.a, p.proc, z2 + 1 * MIB, 0, 0, m, 0, 256 * KIB, 0, 0, &vm), VIDMM_OK);
    T_ST(vidmm_gpuva_unmap(f.a, p.proc, vm, 128 * KIB), VIDMM_OK);
    softgpu_make_resident(f.a, p.dev, p.queue, &m, 1);
    T_EQ(gpu_sees(&f, p.proc, z1), 'z');
    T_EQ(gpu_sees(&f, p.proc, vm), 'z');
    T_EQ(gpu_sees(&f, p.proc, vm + 128 * KIB), 'm');
    T_EQ(rules_broken(&f, &p.proc, 1), 0);

    if (kind == REBUILD_ADAPTER_RESET) {
        adapter_reset(&f, &q);
    } else {
        go(&f, kind == REBUILD_STANDBY ? VIDMM_POWER_STANDBY : VIDMM_POWER_HIBERNATE);
        go(&f, VIDMM_POWER_D0);
    }
    softgpu_make_resident(f.a, p.dev, p.queue, &m, 1);
    T_EQ(gpu_sees(&f, p.proc, z1), 'z');
    T_EQ(gpu_sees(&f, p.proc, z1 + 4 * MIB - 4096), 'z');
    T_EQ(gpu_sees(&f, p.proc, z2), 'z');
    T_EQ(gpu_sees(&f, p.proc, vm), 'z');                        /* unmapped back to Zero */
    T_EQ(gpu_sees(&f, p.proc, vm + 256 * KIB), 'z');
    T_CHECK(gv_gpu_sees(f.a, f.sg, p.proc, vm + 128 * KIB, 128 * KIB, 128 * KIB, 23));   /* still m's bytes */
    T_EQ(rules_broken(&f, &p.proc, 1), 0);
    pw_close(&f);
}

static void zero_after_standby(void) { zero_after_rebuild_case(REBUILD_STANDBY); }
static void zero_after_hibernate(void) { zero_after_rebuild_case(REBUILD_HIBERNATE); }
static void zero_after_adapter_reset(void) { zero_after_rebuild_case(REBUILD_ADAPTER_RESET); }

void suite_power(void);
void suite_power(void)
{
    t_run("power.down_only_from_d0", down_only_from_d0);
    t_run("power.no_gpu_work_while_down_standby", no_gpu_work_standby);
    t_run("power.no_gpu_work_while_down_hibernate", no_gpu_work_hibernate);
    t_run("power.zero_after_standby", zero_after_standby);
    t_run("power.zero_after_hibernate", zero_after_hibernate);
    t_run("power.zero_after_adapter_reset", zero_after_adapter_reset);
}
