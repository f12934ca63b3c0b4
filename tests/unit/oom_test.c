/*
 * oom_test.c - host out-of-memory injection through whole scenarios,
 * in the manner of SQLite's and Lua's countdown tests.
 *
 * A scenario is a list of steps, each one public call with its arguments.
 * The runner takes each step in turn and, for k = 1, 2, ..., fails the
 * k-th host allocation inside it - first in fail-forever mode (that call
 * and every later one), then in fail-once mode - until the step runs
 * without reaching its k-th allocation: over the whole scenario this is
 * N = 1, 2, ... After every injected failure:
 *
 *   - the call returned VIDMM_E_NO_HOST_MEMORY;
 *   - vidmm_adapter_check() (segments, allocations, handles, devices,
 *     residency, submission, every VA space and page-table tree, the
 *     paging process) and softgpu_check() are clean;
 *   - the live host blocks and bytes are those before the call;
 *   - the state fingerprint (fp_take below: every query the public API
 *     offers about the objects the scenario knows) equals the one taken
 *     before the call.
 *
 * The next attempt (k + 1) starts from that state and passes the point
 * that failed; the last one, which never reaches its armed allocation,
 * is the run with injection off, and must return the step's status.
 * Targeted scenarios (and, with VIDMM_OOM_LONG=1, every step of the dgpu
 * scenario) run from a fresh adapter per k instead: the failed call is
 * re-run at once with injection off, then the rest of the scenario.
 * Exceptions, each asserted precisely: docs/DECISIONS.md D35 (evictions
 * and restores done before a failure inside a make-resident or a
 * submission stay; grown tables stay grown) and the refusals a call may
 * absorb (absorbable_site).
 * Scenarios: dgpu (GpuMmu, virtual content moves, 2x over-commitment),
 * igpu (IoMmu), wddm1 (no GPU VA, physical moves), and adapter open
 * itself on each.  At the end "oom: sites hit X / Y" counts the
 * allocation sites (src/core/alloc_sites.def) where a failure was
 * injected, and names the others.  VIDMM_OOM_VERBOSE=1 prints every
 * step's attempts.
 */
#include "harness/fault_alloc.h"
#include "rules_check.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)

/* Per site: injected failures over every scenario of this run. */
static uint64_t site_failed[FAULT_ALLOC_MAX_SITES];
static uint64_t site_reached[FAULT_ALLOC_MAX_SITES];

static int verbose(void)
{
    const char *v = getenv("VIDMM_OOM_VERBOSE");
    return v && *v && *v != '0';
}

/* ---- the fixture ------------------------------------------------------ */

enum { PRESET_DGPU = 1, PRESET_IGPU = 2, PRESET_WDDM1 = 4, PRESET_ALL = 7 };

#define NPROC 2
#define NDEV 2
#define NCTX 3
#define NQUEUE 2
#define NALLOC 24
#define NVA 16

struct ox {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    unsigned preset;
    vidmm_handle proc[NPROC], dev[NDEV], ctx[NCTX], queue[NQUEUE], al[NALLOC];
    uint64_t va[NVA];
    uint64_t trims;                  /* trim notifications received */
    uint64_t fence[NCTX];            /* last submission's context fence */
    uint8_t pbuf[256];               /* physical-mode command buffer */
    uint32_t pbuf_size;
    struct vidmm_patch_location pl[4];
    struct vidmm_submit_allocation plist[2];
    struct vidmm_submit_physical_args pa;
    uint64_t steps, attempts, injected, absorbed, d35;
};

static void on_trim(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes)
{
    (void)device, (void)flags, (void)bytes;
    ((struct ox *)context)->trims++;
}

/* Variations of the presets (VIDMM_OOM_LONG runs the scenario on them;
 * private_data makes the driver ask for paging-buffer private data,
 * which softgpu does not). */
static struct {
    uint32_t mmu_levels;
    uint32_t paging_ops;
    int private_data;
} variant;

static vidmm_status query_with_private_data(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    vidmm_status st = softgpu_driver_ops()->query_adapter_info(driver, args);
    if (st >= 0 && args && args->type == VIDMM_QAI_QUERYSEGMENT && args->output &&
        args->output_size >= sizeof(struct vidmm_query_segment_out)) {
        struct vidmm_query_segment_out *o = args->output;
        if (o->segment_descriptor)
            o->paging_buffer_private_data_size = 64;
    }
    return st;
}

/* The create info for x's softgpu: its ops (wrapped for the
 * private_data variant), x's fault_alloc, 256 MiB of system memory. */
static void ox_create_info(struct ox *x, struct vidmm_adapter_create_info *ci)
{
    memset(ci, 0, sizeof *ci);
    softgpu_fill_adapter_create_info(x->sg, ci);
    static struct vidmm_driver_ops ops;
    if (variant.private_data) {
        ops = *softgpu_driver_ops();
        ops.query_adapter_info = query_with_private_data;
        ci->ops = &ops;
    }
    ci->host_allocator = &x->fa.ha;
    ci->system_memory_limit = 256 * MIB;
}

static int ox_open(struct ox *x, unsigned preset)
{
    memset(x, 0, sizeof *x);
    fault_alloc_init(&x->fa);
    x->preset = preset;
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.synchronous = 1;
    cfg.mmu_levels = variant.mmu_levels;
    cfg.paging_ops = variant.paging_ops;
    if (preset == PRESET_DGPU) {
        cfg.preset = "dgpu";
        cfg.segment_size[1] = 12 * MIB;
        cfg.segment_size[2] = 12 * MIB;
    } else if (preset == PRESET_IGPU) {
        cfg.preset = "igpu";
        cfg.segment_size[1] = 64 * MIB;
    } else {
        cfg.preset = "wddm1";
        cfg.segment_size[1] = 12 * MIB;
        cfg.segment_size[2] = 12 * MIB;
    }
    T_ST(softgpu_create(&cfg, &x->sg), VIDMM_OK);
    if (!x->sg)
        return -1;
    struct vidmm_adapter_create_info ci;
    ox_create_info(x, &ci);
    T_ST(vidmm_adapter_open(&ci, &x->a), VIDMM_OK);
    return x->a ? 0 : -1;
}

/* A fixture on the heap (it is large), opened on preset; NULL (and a
 * failed check) when that fails. */
static struct ox *ox_new(unsigned preset)
{
    struct ox *x = calloc(1, sizeof *x);
    if (!x || ox_open(x, preset)) {
        T_CHECK(0);
        free(x);
        return NULL;
    }
    return x;
}

static void ox_close(struct ox *x)
{
    vidmm_adapter_close(x->a);
    T_EQ(x->fa.live_blocks, 0);
    T_EQ(x->fa.live_bytes, 0);
    T_EQ(softgpu_check(x->sg), 0);
    softgpu_destroy(x->sg);
    for (unsigned s = 0; s < FAULT_ALLOC_MAX_SITES; s++) {
        site_failed[s] += x->fa.site_fails[s];
        site_reached[s] += x->fa.site_hits[s];
    }
}

/* ---- the state fingerprint -------------------------------------------- */

/* The shared fingerprint (support/rules_check.h: every query the public
 * API offers about the objects the scenario knows), plus the trim
 * callbacks this fixture counted. */
#define FP_MAX 8192

static void fp_take(const struct ox *x, struct rc_fp *f)
{
    struct rc_objects o = { x->proc, x->dev, x->ctx, x->queue, x->al, NPROC, NDEV, NCTX, NQUEUE, NALLOC };
    rc_fp_take(f, x->a, &o);
    rc_fp_put(f, "trim callbacks", 0, x->trims);
}

/* 0 when equal (with weak, residency labels may differ - D35); else
 * names the first difference. */
static int fp_diff(const struct rc_fp *p, const struct rc_fp *q, const char *step, int weak)
{
    char msg[200];
    if (!rc_fp_diff(p, q, weak, NULL, msg, sizeof msg))
        return 0;
    if (step)
        fprintf(stderr, "  %s: %s\n", step, msg);
    return 1;
}

/* D35's rule for a failed make-resident or submission: an allocation
 * whose residency changed was either evicted (resident 1 -> 0, one
 * more eviction) or restored (0 -> 1, one more restore); one whose
 * residency did not change has the same counts. */
static int d35_rule(const struct rc_fp *p, const struct rc_fp *q, const char *step)
{
    uint64_t res[2][NALLOC], ev[2][NALLOC], rs[2][NALLOC];
    memset(res, 0, sizeof res);
    memset(ev, 0, sizeof ev);
    memset(rs, 0, sizeof rs);
    const struct rc_fp *f[2] = { p, q };
    for (int w = 0; w < 2; w++)
        for (uint32_t i = 0; i < f[w]->n; i++) {
            uint32_t k = f[w]->idx[i] % NALLOC;
            if (!strcmp(f[w]->lab[i], "res.resident"))
                res[w][k] = f[w]->v[i];
            else if (!strcmp(f[w]->lab[i], "res.evictions"))
                ev[w][k] = f[w]->v[i];
            else if (!strcmp(f[w]->lab[i], "res.restores"))
                rs[w][k] = f[w]->v[i];
        }
    int bad = 0;
    for (uint32_t k = 0; k < NALLOC; k++) {
        int ok = res[0][k] == res[1][k]   ? ev[0][k] == ev[1][k] && rs[0][k] == rs[1][k]
                 : res[0][k] && !res[1][k] ? ev[1][k] == ev[0][k] + 1 && rs[0][k] == rs[1][k]
                                            : rs[1][k] == rs[0][k] + 1 && ev[0][k] == ev[1][k];
        if (!ok) {
            fprintf(stderr, "  %s: allocation %u: resident %llu -> %llu, evictions %llu -> %llu, restores %llu -> %llu\n",
                    step, k, (unsigned long long)res[0][k], (unsigned long long)res[1][k],
                    (unsigned long long)ev[0][k], (unsigned long long)ev[1][k], (unsigned long long)rs[0][k],
                    (unsigned long long)rs[1][k]);
            bad = 1;
        }
    }
    return bad;
}

static int checks_clean(struct ox *x, const char *step)
{
    char rep[2048];
    rep[0] = 0;
    int e = vidmm_adapter_check(x->a, rep, sizeof rep);
    if (e)
        fprintf(stderr, "  %s: adapter check: %s\n", step, rep);
    int g = softgpu_check(x->sg);
    return e + g;
}

/* ---- steps ------------------------------------------------------------ */

struct step;
typedef vidmm_status (*step_fn)(struct ox *x, const struct step *s);
struct step {
    const char *name;
    step_fn fn;
    unsigned presets;          /* PRESET_* it runs on */
    uint32_t a, b, c, d;       /* slots and arguments, per step function */
    uint32_t mask;             /* allocation slots (bit i = al[i]) */
    int want[3];               /* status on dgpu, igpu, wddm1 (0 = VIDMM_OK) */
};

static vidmm_status s_process(struct ox *x, const struct step *s)
{
    vidmm_handle h = 0;
    vidmm_status st = vidmm_process_create(x->a, &h);
    if (st >= 0)
        x->proc[s->a] = h;
    return st;
}
static vidmm_status s_device(struct ox *x, const struct step *s)
{
    vidmm_handle h = 0;
    vidmm_status st = vidmm_device_create(x->a, x->proc[s->b], &h);
    if (st >= 0)
        x->dev[s->a] = h;
    return st;
}
/* a = context slot, b = device slot, c = node, d = mode */
static vidmm_status s_context(struct ox *x, const struct step *s)
{
    struct vidmm_context_desc cd = { s->c, s->d, 0, 0 };
    vidmm_handle h = 0;
    vidmm_status st = vidmm_context_create(x->a, x->dev[s->b], &cd, &h);
    if (st >= 0)
        x->ctx[s->a] = h;
    return st;
}
static vidmm_status s_queue(struct ox *x, const struct step *s)
{
    vidmm_handle h = 0;
    vidmm_status st = vidmm_paging_queue_create(x->a, x->dev[s->b], (int)s->c - 1, &h);
    if (st >= 0)
        x->queue[s->a] = h;
    return st;
}
static vidmm_status s_trim(struct ox *x, const struct step *s)
{
    return vidmm_register_trim_notification(x->a, x->dev[s->a], on_trim, x);
}
/* a = slot, b = softgpu kind, c = KiB, d = bit 0 resident, bit 1 cpu_visible */
static vidmm_status s_create(struct ox *x, const struct step *s)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = (enum softgpu_alloc_kind)s->b;
    d.size = (uint64_t)s->c * KIB;
    d.cpu_visible = (s->d & 2) != 0;
    vidmm_handle h = 0;
    vidmm_status st = vidmm_allocation_create2(x->a, &d, sizeof d, (s->d & 1) ? VIDMM_CREATE_RESIDENT : 0, &h);
    if (st >= 0)
        x->al[s->a] = h;
    return st;
}
/* A resident allocation of kind b taking every free byte of segment c
 * (slot a). */
static vidmm_status s_fill(struct ox *x, const struct step *s)
{
    struct vidmm_segment_info si;
    vidmm_status st = vidmm_segment_query(x->a, s->c, &si);
    if (st < 0)
        return st;
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = (enum softgpu_alloc_kind)s->b;
    d.size = si.largest_free;
    vidmm_handle h = 0;
    st = vidmm_allocation_create(x->a, &d, sizeof d, &h);
    if (st >= 0)
        x->al[s->a] = h;
    return st;
}

static vidmm_status s_priority(struct ox *x, const struct step *s)
{
    return vidmm_allocation_set_priority(x->a, x->al[s->a], s->b);
}
static vidmm_status s_next_use(struct ox *x, const struct step *s)
{
    return vidmm_allocation_set_next_use(x->a, x->al[s->a], s->b);
}
/* a = va slot, b = process slot, c = MiB */
static vidmm_status s_reserve(struct ox *x, const struct step *s)
{
    uint64_t va = 0;
    vidmm_status st = vidmm_gpuva_reserve(x->a, x->proc[s->b], 0, 0, 0, (uint64_t)s->c * MIB,
                                          VIDMM_GPUVA_RESERVE_ZERO, &va);
    if (st >= 0)
        x->va[s->a] = va;
    return st;
}
/* a = va slot, b = process slot, c = allocation slot, d = KiB; mask != 0:
 * at va[mask - 1] + 1 MiB (inside a reservation) */
static vidmm_status s_map(struct ox *x, const struct step *s)
{
    uint64_t va = 0, base = s->mask ? x->va[s->mask - 1] + MIB : 0;
    vidmm_status st = vidmm_gpuva_map(x->a, x->proc[s->b], base, 0, 0, x->al[s->c], 0, (uint64_t)s->d * KIB, 0, 0,
                                      &va);
    if (st >= 0)
        x->va[s->a] = va;
    return st;
}
/* a = va slot, b = process slot, c = KiB */
static vidmm_status s_unmap(struct ox *x, const struct step *s)
{
    return vidmm_gpuva_unmap(x->a, x->proc[s->b], x->va[s->a], (uint64_t)s->c * KIB);
}
static vidmm_status s_vafree(struct ox *x, const struct step *s)
{
    return vidmm_gpuva_free(x->a, x->proc[s->b], x->va[s->a], (uint64_t)s->c * MIB);
}
/* In the reservation va[a] of process b: map allocation c (64 KiB) at
 * +4 MiB, copy those entries to +6 MiB, unmap the first. */
static vidmm_status s_update(struct ox *x, const struct step *s)
{
    struct vidmm_gpuva_update_op op[3];
    memset(op, 0, sizeof op);
    uint64_t r = x->va[s->a];
    op[0].type = VIDMM_GPUVA_UPDATE_MAP;
    op[0].va = r + 4 * MIB;
    op[0].size = 64 * KIB;
    op[0].allocation = x->al[s->c];
    op[1].type = VIDMM_GPUVA_UPDATE_COPY;
    op[1].va = r + 6 * MIB;
    op[1].size = 64 * KIB;
    op[1].source = r + 4 * MIB;
    op[2].type = VIDMM_GPUVA_UPDATE_UNMAP;
    op[2].va = r + 4 * MIB;
    op[2].size = 64 * KIB;
    op[2].unmap_mode = VIDMM_GPUVA_RESERVE_NO_ACCESS;
    return vidmm_gpuva_update(x->a, x->proc[s->b], op, 3);
}

static uint32_t list_of(const struct ox *x, uint32_t mask, vidmm_handle *h)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < NALLOC; i++)
        if (mask & (1u << i))
            h[n++] = x->al[i];
    return n;
}
/* a = device slot, b = queue slot, c = flags */
static vidmm_status s_make_resident(struct ox *x, const struct step *s)
{
    vidmm_handle h[NALLOC];
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = x->queue[s->b];
    mr.allocations = h;
    mr.count = list_of(x, s->mask, h);
    mr.flags = s->c;
    return vidmm_make_resident(x->a, x->dev[s->a], &mr);
}
/* a = device slot, c = flags */
static vidmm_status s_evict(struct ox *x, const struct step *s)
{
    vidmm_handle h[NALLOC];
    return vidmm_evict(x->a, x->dev[s->a], &(struct vidmm_evict_args){ .allocations = h, .count = list_of(x, s->mask, h), .flags = s->c });
}
static vidmm_status s_offer(struct ox *x, const struct step *s)
{
    vidmm_handle h[NALLOC];
    return vidmm_offer(x->a, x->dev[s->a], h, list_of(x, s->mask, h), VIDMM_OFFER_NORMAL);
}
/* b = queue slot */
static vidmm_status s_reclaim(struct ox *x, const struct step *s)
{
    vidmm_handle h[NALLOC];
    uint32_t res[NALLOC];
    uint64_t fence = 0;
    return vidmm_reclaim(x->a, x->queue[s->b], h, list_of(x, s->mask, h), res, &fence);
}
/* a = process slot, b = group, c = MiB */
static vidmm_status s_reservation(struct ox *x, const struct step *s)
{
    return vidmm_change_video_memory_reservation(x->a, x->proc[s->a], (enum vidmm_segment_group)s->b,
                                                 (uint64_t)s->c * MIB);
}
static vidmm_status s_budget(struct ox *x, const struct step *s)
{
    return vidmm_process_set_budget(x->a, x->proc[s->a], (enum vidmm_segment_group)s->b, (uint64_t)s->c * MIB);
}
static vidmm_status s_lock(struct ox *x, const struct step *s)
{
    void *p = NULL;
    return vidmm_allocation_lock(x->a, x->al[s->a], &p);
}
static vidmm_status s_unlock(struct ox *x, const struct step *s)
{
    return vidmm_allocation_unlock(x->a, x->al[s->a]);
}
/* a = 0 lru, 1 adaptive, 2 belady */
static vidmm_status s_policy(struct ox *x, const struct step *s)
{
    const struct vidmm_eviction_policy *p[3] = { &vidmm_policy_lru, &vidmm_policy_adaptive, &vidmm_policy_belady };
    return vidmm_adapter_set_eviction_policy(x->a, p[s->a]);
}
/* a = allocation slot, b = segment, c = discard */
static vidmm_status s_move(struct ox *x, const struct step *s)
{
    return s->c ? vidmm_allocation_move_discard(x->a, x->al[s->a], s->b)
                : vidmm_allocation_move(x->a, x->al[s->a], s->b);
}
/* a = source, b = allocation slot + 1 (0 = blank) */
static vidmm_status s_flip(struct ox *x, const struct step *s)
{
    return vidmm_adapter_flip(x->a, s->a, s->b ? x->al[s->b - 1] : VIDMM_HANDLE_NULL);
}
/* Write a small GPU program into allocation a through the CPU: it writes
 * a word into allocation c's first mapping va[d] (lock, write, unlock). */
static vidmm_status s_write_program(struct ox *x, const struct step *s)
{
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(x->a, x->al[s->a], &p);
    if (st < 0)
        return st;
    struct softgpu_cmdbuf cb = { p, 0, 64 };
    softgpu_cmd_write64(&cb, x->va[s->d], 0x5eed);
    softgpu_cmd_nop(&cb);
    return vidmm_allocation_unlock(x->a, x->al[s->a]);
}
/* a = context slot, b = va slot of the program */
static vidmm_status s_submit_virtual(struct ox *x, const struct step *s)
{
    uint64_t fence = 0;
    vidmm_status st = vidmm_submit_virtual(x->a, x->ctx[s->a], x->va[s->b], 32, &fence);
    if (st >= 0)
        x->fence[s->a] = fence;
    return st;
}
/* a = context slot; allocations b and c (AccessedPhysically): fill c
 * with a pattern, then copy b into c; d = VIDMM_SUBMIT_REUSED. */
static vidmm_status s_submit_physical(struct ox *x, const struct step *s)
{
    if (!s->d) {
        struct softgpu_cmdbuf cb = { x->pbuf, 0, sizeof x->pbuf };
        memset(x->pl, 0, sizeof x->pl);
        uint32_t at = cb.size;
        softgpu_cmd_fill(&cb, 0, 4096, 0x01020304u);
        x->pl[0] = (struct vidmm_patch_location){ 1, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(0), 0 };
        at = cb.size;
        softgpu_cmd_copy(&cb, 0, 0, 4096);
        x->pl[1] = (struct vidmm_patch_location){ 1, 0, 0, 4096, at + SOFTGPU_CMD_OPERAND(0), 0 };
        x->pl[2] = (struct vidmm_patch_location){ 0, 0, 0, 0, at + SOFTGPU_CMD_OPERAND(1), 0 };
        x->pbuf_size = cb.size;
        x->plist[0] = (struct vidmm_submit_allocation){ x->al[s->b], 0, 0 };
        x->plist[1] = (struct vidmm_submit_allocation){ x->al[s->c], VIDMM_SUBMIT_WRITE, 0 };
    }
    memset(&x->pa, 0, sizeof x->pa);
    x->pa.buffer = x->pbuf;
    x->pa.size = x->pbuf_size;
    x->pa.allocations = x->plist;
    x->pa.allocation_count = 2;
    x->pa.patches = x->pl;
    x->pa.patch_count = 3;
    x->pa.flags = s->d;
    vidmm_status st = vidmm_submit_physical(x->a, x->ctx[s->a], &x->pa);
    if (st >= 0)
        x->fence[s->a] = x->pa.fence;
    return st;
}
static vidmm_status s_context_wait(struct ox *x, const struct step *s)
{
    return vidmm_context_wait(x->a, x->ctx[s->a], x->fence[s->a], UINT64_MAX);
}
/* A destroy's status; on success the handle is forgotten. */
static vidmm_status forget(vidmm_status st, vidmm_handle *h)
{
    if (st >= 0)
        *h = 0;
    return st;
}
static vidmm_status s_destroy_alloc(struct ox *x, const struct step *s)
{
    return forget(vidmm_allocation_destroy(x->a, x->al[s->a]), &x->al[s->a]);
}
static vidmm_status s_destroy_context(struct ox *x, const struct step *s)
{
    return forget(vidmm_context_destroy(x->a, x->ctx[s->a]), &x->ctx[s->a]);
}
static vidmm_status s_destroy_queue(struct ox *x, const struct step *s)
{
    return forget(vidmm_paging_queue_destroy(x->a, x->queue[s->a]), &x->queue[s->a]);
}
/* Forget the children that went with a destroyed parent: devices (when
 * devices), contexts and queues whose handles no longer resolve. */
static void forget_orphans(struct ox *x, int devices)
{
    for (uint32_t i = 0; devices && i < NDEV; i++) {
        struct vidmm_device_info di;
        if (x->dev[i] && vidmm_device_query(x->a, x->dev[i], &di) == VIDMM_E_INVALID_HANDLE)
            x->dev[i] = 0;
    }
    for (uint32_t i = 0; i < NCTX; i++) {
        struct vidmm_context_info ci;
        if (x->ctx[i] && vidmm_context_query(x->a, x->ctx[i], &ci) == VIDMM_E_INVALID_HANDLE)
            x->ctx[i] = 0;
    }
    for (uint32_t i = 0; i < NQUEUE; i++) {
        uint64_t v;
        if (x->queue[i] && vidmm_paging_queue_fence(x->a, x->queue[i], &v) == VIDMM_E_INVALID_HANDLE)
            x->queue[i] = 0;
    }
}
/* The device's contexts and queues go with it. */
static vidmm_status s_destroy_device(struct ox *x, const struct step *s)
{
    vidmm_status st = vidmm_device_destroy(x->a, x->dev[s->a]);
    if (st >= 0) {
        forget_orphans(x, 0);
        x->dev[s->a] = 0;
    }
    return st;
}
static vidmm_status s_destroy_process(struct ox *x, const struct step *s)
{
    vidmm_status st = forget(vidmm_process_destroy(x->a, x->proc[s->a]), &x->proc[s->a]);
    if (st >= 0)
        forget_orphans(x, 1);
    return st;
}

/* ---- the runner ------------------------------------------------------- */

static int preset_index(unsigned p)
{
    return p == PRESET_DGPU ? 0 : p == PRESET_IGPU ? 1 : 2;
}

/* Tables that grow geometrically and are kept: a failed call may leave
 * one larger than before (as realloc would), never smaller, and the
 * next call uses the room.  Every other site's live blocks and bytes
 * must be exactly those before the call. */
static int capacity_site(const char *name)
{
    static const char *const cap[] = {
        "objtab.grow.objects", "objtab.grow.generations", "objtab.grow.free_links",
        "va_space.nodes_reserve.directory", "va_space.nodes_reserve.ranges", "va_space.leaves_reserve.leaves",
        "va_space.inners_reserve.inners", "va_space.obj_reserve.records", "range_alloc.grow_nodes.nodes",
        "ring.grow_recs.records", "submit.grow_scratch.allocation_list", "submit.grow_scratch.patch_list",
        "evict_scan.reserve.entries", "evict_scan.reserve.victims", "evict_scan.reserve.node_map",
        "submit.physbuf.table",
        "handle.new.allocation_chunk", "residency.make_resident.fast_table",
        "va_space.update.scratch", "va_space.update.spans",
    };
    for (size_t i = 0; i < sizeof cap / sizeof cap[0]; i++)
        if (!strcmp(cap[i], name))
            return 1;
    return 0;
}

/* A refusal here may be absorbed and the call succeed: the eviction
 * scan is an optimisation (without its roster eviction goes in policy
 * order), and make_room counts victims evicted before a refused one as
 * progress and tries again. */
static int absorbable_site(const char *name)
{
    /* The checkers' scratch (".check."): a debug build runs them inside
     * every entry, and they skip a count when host memory is short. */
    return !strncmp(name, "evict_scan.reserve.", 19) || !strcmp(name, "placement.place_system.pages") ||
           strstr(name, ".check.") != NULL;
}

/* Steps that page allocations in and out (D35: what they evicted or
 * restored before a failure stays so). */
static int residency_step(const struct step *s)
{
    return s->fn == s_make_resident || s->fn == s_reclaim || s->fn == s_submit_virtual ||
           s->fn == s_submit_physical;
}

/* Sites whose blocks follow residency: a victim's system copy, a
 * restored allocation's extents. */
static int residency_site(const char *name)
{
    return !strcmp(name, "placement.place_system.pages") || !strcmp(name, "page_pool.grow_ext.extents");
}

enum { NOT_REACHED, FAILED, ABSORBED, FAILED_GREW };

/* One attempt with the k-th allocation armed: NOT_REACHED when the step
 * ran through without reaching it (its result is checked by the
 * caller), FAILED when a failure was injected and the call failed
 * (everything checked here), ABSORBED when the call succeeded anyway at
 * a site where that is allowed. */
static int attempt(struct ox *x, const struct step *s, uint64_t k, int forever, vidmm_status want,
                   vidmm_status *out)
{
    /* Kept across steps (allocated once): the fingerprint is large. */
    static struct rc_fp before, after;
    if (!before.cap && (rc_fp_init(&before, FP_MAX) || rc_fp_init(&after, FP_MAX))) {
        T_CHECK(0);
        return FAILED;
    }
    fp_take(x, &before);
    static int64_t live[FAULT_ALLOC_MAX_SITES + 1], live_bytes[FAULT_ALLOC_MAX_SITES + 1];
    static uint64_t fails[FAULT_ALLOC_MAX_SITES];
    memcpy(live, x->fa.site_live, sizeof live);
    memcpy(live_bytes, x->fa.site_live_bytes, sizeof live_bytes);
    memcpy(fails, x->fa.site_fails, sizeof fails);
    uint64_t calls0 = x->fa.calls;
    fault_alloc_arm(&x->fa, k, forever);
    vidmm_status st = s->fn(x, s);
    fault_alloc_disarm(&x->fa);
    x->attempts++;
    *out = st;
    if (x->fa.calls - calls0 < k)
        return NOT_REACHED;
    x->injected++;
    const char *site = vidmm_host_alloc_site_name(x->fa.last_fail_site);
    const char *mode = forever ? "forever" : "once";
    if (verbose())
        printf("    %s k=%llu %s: %s at %s\n", s->name, (unsigned long long)k, mode, vidmm_status_str(st), site);
    int bad = 0, absorbed = st == want;
    for (unsigned i = 0; i < FAULT_ALLOC_MAX_SITES && absorbed; i++)
        if (x->fa.site_fails[i] != fails[i] && !absorbable_site(vidmm_host_alloc_site_name(i)))
            absorbed = 0;
    if (st != VIDMM_E_NO_HOST_MEMORY && !absorbed) {
        fprintf(stderr, "  %s: allocation %llu (%s, %s) failed, the call returned %s\n", s->name,
                (unsigned long long)k, site, mode, vidmm_status_str(st));
        bad = 1;
    }
    if (checks_clean(x, s->name)) {
        fprintf(stderr, "  %s: checkers after allocation %llu (%s) failed\n", s->name, (unsigned long long)k, site);
        bad = 1;
    }
    if (absorbed) {
        T_EQ(bad, 0);
        return ABSORBED;
    }
    int weak = residency_step(s), grew = 0;
    for (unsigned i = 0; i <= FAULT_ALLOC_MAX_SITES; i++) {
        if (x->fa.site_live[i] == live[i] && x->fa.site_live_bytes[i] == live_bytes[i])
            continue;
        const char *name = i < FAULT_ALLOC_MAX_SITES ? vidmm_host_alloc_site_name(i) : "(plain alloc)";
        if (capacity_site(name) && x->fa.site_live[i] >= live[i] && x->fa.site_live_bytes[i] >= live_bytes[i]) {
            grew = 1;
            continue;
        }
        if (weak && residency_site(name))
            continue;
        fprintf(stderr, "  %s: allocation %llu (%s, %s) failed: %s holds %lld blocks / %lld bytes, %lld / %lld before\n",
                s->name, (unsigned long long)k, site, mode, name, (long long)x->fa.site_live[i],
                (long long)x->fa.site_live_bytes[i], (long long)live[i], (long long)live_bytes[i]);
        bad = 1;
    }
    fp_take(x, &after);
    if (weak && fp_diff(&before, &after, NULL, 0))
        x->d35++;
    if (fp_diff(&before, &after, s->name, weak) || (weak && d35_rule(&before, &after, s->name))) {
        fprintf(stderr, "  %s: state changed by a failure at allocation %llu (%s, %s)\n", s->name,
                (unsigned long long)k, site, mode);
        bad = 1;
    }
    T_EQ(bad, 0);
    return grew ? FAILED_GREW : FAILED;
}

static void run_step(struct ox *x, const struct step *s)
{
    vidmm_status want = (vidmm_status)s->want[preset_index(x->preset)];
    vidmm_status st = VIDMM_OK;
    x->steps++;
    /* A table grown by a failed attempt stays grown, so the next
     * attempt's allocations are numbered differently: start again at 1
     * (growth is bounded) so that no allocation of the new sequence is
     * skipped. */
    uint32_t restarts = 0;
    for (uint64_t k = 1; k < 100000; k++) {
        int r = attempt(x, s, k, 1, want, &st);
        if (r == FAILED || r == FAILED_GREW) {
            int r2 = attempt(x, s, k, 0, want, &st);
            r = r2 == FAILED && r == FAILED_GREW ? FAILED_GREW : r2;
        }
        if (r == FAILED_GREW && restarts < 64) {
            restarts++;
            k = 0;
            continue;
        }
        if (r != FAILED && r != FAILED_GREW) {
            x->absorbed += r == ABSORBED;
            break;
        }
        if (t_current_failures() > 20)
            return;
    }
    if (st != want) {
        char m[256];
        snprintf(m, sizeof m, "step %s: %s, want %s", s->name, vidmm_status_str(st), vidmm_status_str(want));
        t_fail(__FILE__, __LINE__, m);
    }
    T_EQ(checks_clean(x, s->name), 0);
}

static void run_scenario(unsigned preset, const struct step *steps, size_t n)
{
    struct ox *x = ox_new(preset);
    if (!x)
        return;
    for (size_t i = 0; i < n && t_current_failures() <= 20; i++)
        if (steps[i].presets & preset)
            run_step(x, &steps[i]);
    struct vidmm_residency_stats rs;
    struct vidmm_paging_process_info pp;
    memset(&pp, 0, sizeof pp);
    vidmm_residency_get_stats(x->a, &rs);
    (void)vidmm_adapter_query_paging_process(x->a, &pp);
    if (verbose())
        printf("  %llu evictions, %llu restores, %llu discards; paging process: %llu moves in %llu chunks; "
               "%llu failures left D35 changes; %llu trim notifications\n",
               (unsigned long long)rs.evictions, (unsigned long long)rs.restores, (unsigned long long)rs.discards,
               (unsigned long long)pp.moves, (unsigned long long)pp.chunks, (unsigned long long)x->d35,
               (unsigned long long)x->trims);
    if (verbose())
        printf("  %llu steps, %llu attempts, %llu injected failures, %llu steps absorbed one\n",
               (unsigned long long)x->steps, (unsigned long long)x->attempts, (unsigned long long)x->injected,
               (unsigned long long)x->absorbed);
    ox_close(x);
    free(x);
}

/* Run steps[from .. to) without injection; each must give its status. */
static void run_plain(struct ox *x, const struct step *steps, size_t from, size_t to, const char *what)
{
    for (size_t i = from; i < to; i++) {
        if (!(steps[i].presets & x->preset))
            continue;
        vidmm_status st = steps[i].fn(x, &steps[i]);
        if (st != (vidmm_status)steps[i].want[preset_index(x->preset)]) {
            char m[256];
            snprintf(m, sizeof m, "%s step %s: %s", what, steps[i].name, vidmm_status_str(st));
            t_fail(__FILE__, __LINE__, m);
        }
    }
}

/* SQLite's way: for k = 1, 2, ... in both modes, a fresh adapter runs
 * steps before `target` without injection, then `target` with its k-th
 * allocation failed (checked as in the main runner); after a failure the
 * same call, injection off, must give its status, and so must every
 * step after it; teardown leaks nothing.  Each k starts from the same
 * state, so an absorbed failure does not end the sweep. */
static void run_fresh_at(unsigned preset, const struct step *steps, size_t n, size_t target)
{
    const struct step *t = &steps[target];
    if (!(t->presets & preset))
        return;
    vidmm_status want = (vidmm_status)t->want[preset_index(preset)];
    for (int forever = 1; forever >= 0; forever--)
        for (uint64_t k = 1; k < 1000 && t_current_failures() <= 20; k++) {
            struct ox *x = ox_new(preset);
            if (!x)
                return;
            run_plain(x, steps, 0, target, "set-up");
            vidmm_status st = VIDMM_OK;
            int r = attempt(x, t, k, forever, want, &st);
            if (r == FAILED || r == FAILED_GREW) {
                st = t->fn(x, t);   /* the same call once injection stopped */
                r = FAILED;
            }
            if (st != want) {
                char m[256];
                snprintf(m, sizeof m, "step %s: %s, want %s", t->name, vidmm_status_str(st), vidmm_status_str(want));
                t_fail(__FILE__, __LINE__, m);
            }
            T_EQ(checks_clean(x, t->name), 0);
            run_plain(x, steps, target + 1, n, "later");
            T_EQ(checks_clean(x, t->name), 0);
            ox_close(x);
            free(x);
            if (r != FAILED)
                break;
        }
}

static void run_fresh(unsigned preset, const struct step *steps, size_t n)
{
    run_fresh_at(preset, steps, n, n - 1);
}

/* ---- scenarios ---------------------------------------------------------- */

#define TEX SOFTGPU_ALLOC_TEXTURE
#define CONST SOFTGPU_ALLOC_CONSTANT
#define STAGING SOFTGPU_ALLOC_STAGING
#define PRIMARY SOFTGPU_ALLOC_PRIMARY
#define RING SOFTGPU_ALLOC_RING
#define RES 1u
#define CPU 2u
#define VIRT VIDMM_CONTEXT_VIRTUAL
#define PHYS VIDMM_CONTEXT_PHYSICAL
#define B(i) (1u << (i))

/* Allocation slots. */
enum {
    T0, K0, S0, R0, R1, PR, CB, HT, E0, E1, E2, E3, E4, E5, E6, E7, C1, E8, E9
};
#define GPUVA (PRESET_DGPU | PRESET_IGPU)
#define GPUMMU PRESET_DGPU   /* reservations, updates, virtual submission: not on IoMmu */
#define NOIGPU (PRESET_DGPU | PRESET_WDDM1)
#define ALL PRESET_ALL

/* want[] per preset: dgpu, igpu, wddm1. */
static const struct step scenario[] = {
    { "process_create 0", s_process, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "process_create 1", s_process, ALL, 1, 0, 0, 0, 0, { 0 } },
    { "device_create 0", s_device, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "device_create 1", s_device, ALL, 1, 1, 0, 0, 0, { 0 } },
    { "context_create virtual", s_context, GPUVA, 0, 0, SOFTGPU_NODE_GRAPHICS, VIRT, 0, { 0 } },
    { "context_create physical", s_context, ALL, 1, 0, SOFTGPU_NODE_COPY, PHYS, 0, { 0 } },
    { "context_create virtual 1", s_context, GPUVA, 2, 1, SOFTGPU_NODE_COMPUTE, VIRT, 0, { 0 } },
    { "paging_queue_create 0", s_queue, ALL, 0, 0, 1, 0, 0, { 0 } },
    { "paging_queue_create 1", s_queue, ALL, 1, 1, 2, 0, 0, { 0 } },
    { "register_trim_notification 0", s_trim, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "register_trim_notification 1", s_trim, ALL, 1, 0, 0, 0, 0, { 0 } },
    { "create texture", s_create, ALL, T0, TEX, 2048, RES, 0, { 0 } },
    { "create constant", s_create, ALL, K0, CONST, 1024, RES, 0, { 0 } },
    { "create staging", s_create, ALL, S0, STAGING, 1024, RES, 0, { 0 } },
    { "create ring", s_create, ALL, R0, RING, 256, RES, 0, { 0 } },
    { "create ring 2", s_create, ALL, R1, RING, 64, RES, 0, { 0 } },
    { "create primary", s_create, ALL, PR, PRIMARY, 2048, RES, 0, { 0 } },
    { "create command buffer", s_create, ALL, CB, CONST, 64, RES | CPU, 0, { 0 } },
    { "create cpu texture", s_create, ALL, HT, TEX, 1024, RES | CPU, 0, { 0 } },
    { "create2 evicted 0", s_create, ALL, E0, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 1", s_create, ALL, E1, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 2", s_create, ALL, E2, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 3", s_create, ALL, E3, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 4", s_create, ALL, E4, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 5", s_create, ALL, E5, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 6", s_create, ALL, E6, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 7", s_create, ALL, E7, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 8", s_create, ALL, E8, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted 9", s_create, ALL, E9, TEX, 4096, 0, 0, { 0 } },
    { "create2 evicted constant", s_create, ALL, C1, CONST, 2048, 0, 0, { 0 } },
    { "move to visible", s_move, ALL, T0, 1, 0, 0, 0, { 0 } },
    { "move to system", s_move, ALL, T0, 0, 0, 0, 0, { 0 } },
    { "move discard", s_move, NOIGPU, T0, 2, 1, 0, 0, { 0 } },
    { "set_priority high", s_priority, ALL, E0, VIDMM_PRIORITY_HIGH, 0, 0, 0, { 0 } },
    { "set_priority low", s_priority, ALL, E7, VIDMM_PRIORITY_LOW, 0, 0, 0, { 0 } },
    { "set_next_use", s_next_use, ALL, E1, 1000, 0, 0, 0, { 0 } },
    { "gpuva_reserve", s_reserve, GPUMMU, 0, 0, 8, 0, 0, { 0 } },
    { "gpuva_map in reservation", s_map, GPUMMU, 1, 0, T0, 2048, 1, { 0 } },
    { "gpuva_map constant", s_map, GPUVA, 2, 0, K0, 1024, 0, { 0 } },
    { "gpuva_map command buffer", s_map, GPUVA, 3, 0, CB, 64, 0, { 0 } },
    { "gpuva_map e0", s_map, GPUVA, 4, 0, E0, 4096, 0, { 0 } },
    { "gpuva_map e1", s_map, GPUVA, 5, 0, E1, 4096, 0, { 0 } },
    { "gpuva_map e2", s_map, GPUVA, 6, 0, E2, 4096, 0, { 0 } },
    { "gpuva_map e3", s_map, GPUVA, 7, 0, E3, 4096, 0, { 0 } },
    { "gpuva_map p1 e4", s_map, GPUVA, 8, 1, E4, 4096, 0, { 0 } },
    { "gpuva_map p1 e5", s_map, GPUVA, 9, 1, E5, 4096, 0, { 0 } },
    { "gpuva_map p1 texture", s_map, GPUVA, 10, 1, T0, 2048, 0, { 0 } },
    { "gpuva_update", s_update, GPUMMU, 0, 0, HT, 0, 0, { 0 } },
    { "gpuva_unmap", s_unmap, GPUMMU, 1, 0, 1024, 0, 0, { 0 } },
    { "make_resident d0", s_make_resident, ALL, 0, 0, 0, 0, B(E0) | B(E1) | B(E2) | B(K0) | B(CB), { 0 } },
    { "make_resident d1 (evicts)", s_make_resident, ALL, 1, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0, B(E4) | B(E5) | B(E6) | B(E7), { 0 } },
    { "make_resident d0 e3", s_make_resident, ALL, 0, 0, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0, B(E3), { 0 } },
    { "make_resident contiguous", s_make_resident, ALL, 0, 0, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0, B(C1),
      { 0 } },
    { "evict", s_evict, ALL, 0, 0, 0, 0, B(E1), { 0 } },
    { "evict not written", s_evict, ALL, 0, 0, VIDMM_EVICT_NOT_WRITTEN_TO, 0, B(E2), { 0 } },
    { "evict only if necessary", s_evict, ALL, 0, 0, VIDMM_EVICT_ONLY_IF_NECESSARY, 0, B(E3), { 0 } },
    { "offer", s_offer, ALL, 1, 0, 0, 0, B(E5) | B(E6), { 0 } },
    { "make_resident d0 again", s_make_resident, ALL, 0, 0, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0, B(E1) | B(E2) | B(E3), { 0 } },
    { "reclaim", s_reclaim, ALL, 0, 1, 0, 0, B(E5) | B(E6), { 0 } },
    { "make_resident d1 e8 e9", s_make_resident, ALL, 1, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0,
      B(E8) | B(E9), { 0 } },
    { "reservation", s_reservation, NOIGPU, 1, VIDMM_SEGMENT_GROUP_LOCAL, 2, 0, 0, { 0 } },
    { "reservation non-local", s_reservation, PRESET_IGPU, 1, VIDMM_SEGMENT_GROUP_NON_LOCAL, 2, 0, 0, { 0 } },
    { "set_budget (trim)", s_budget, ALL, 1, VIDMM_SEGMENT_GROUP_LOCAL, 4, 0, 0, { 0 } },
    { "make_resident over budget", s_make_resident, ALL, 1, 1, 0, 0, B(E4) | B(T0),
      { VIDMM_E_OVER_BUDGET, 0, VIDMM_E_OVER_BUDGET } },
    { "make_resident cant trim", s_make_resident, ALL, 1, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0,
      B(E4) | B(T0), { 0 } },
    { "set_budget auto", s_budget, ALL, 1, VIDMM_SEGMENT_GROUP_LOCAL, 0, 0, 0, { 0 } },
    { "lock constant", s_lock, ALL, K0, 0, 0, 0, 0, { 0 } },
    { "unlock constant", s_unlock, ALL, K0, 0, 0, 0, 0, { 0 } },
    { "lock host aperture", s_lock, ALL, HT, 0, 0, 0, 0, { 0 } },
    { "unlock host aperture", s_unlock, ALL, HT, 0, 0, 0, 0, { 0 } },
    { "lock staging", s_lock, ALL, S0, 0, 0, 0, 0, { 0 } },
    { "unlock staging", s_unlock, ALL, S0, 0, 0, 0, 0, { 0 } },
    { "policy adaptive", s_policy, ALL, 1, 0, 0, 0, 0, { 0 } },
    { "policy belady", s_policy, ALL, 2, 0, 0, 0, 0, { 0 } },
    { "policy lru", s_policy, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "flip", s_flip, ALL, 0, PR + 1, 0, 0, 0, { 0 } },
    { "flip blank", s_flip, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "write program", s_write_program, GPUMMU, CB, 0, 0, 2, 0, { 0 } },
    { "submit_virtual", s_submit_virtual, GPUMMU, 0, 3, 0, 0, 0, { 0 } },
    { "context_wait virtual", s_context_wait, GPUMMU, 0, 0, 0, 0, 0, { 0 } },
    { "submit_physical", s_submit_physical, ALL, 1, R0, R1, 0, 0, { 0 } },
    { "submit_physical reused", s_submit_physical, ALL, 1, R0, R1, VIDMM_SUBMIT_REUSED, 0, { 0 } },
    { "context_wait physical", s_context_wait, ALL, 1, 0, 0, 0, 0, { 0 } },
    { "gpuva_free", s_vafree, GPUMMU, 0, 0, 8, 0, 0, { 0 } },
    { "destroy allocation e4", s_destroy_alloc, ALL, E4, 0, 0, 0, 0, { 0 } },
    { "context_destroy", s_destroy_context, GPUVA, 0, 0, 0, 0, 0, { 0 } },
    { "paging_queue_destroy", s_destroy_queue, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "device_destroy", s_destroy_device, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "process_destroy 0", s_destroy_process, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "destroy allocation t0", s_destroy_alloc, ALL, T0, 0, 0, 0, 0, { 0 } },
    { "destroy allocation e0", s_destroy_alloc, ALL, E0, 0, 0, 0, 0, { 0 } },
    { "process_destroy 1", s_destroy_process, ALL, 1, 0, 0, 0, 0, { 0 } },
};

static void oom_dgpu(void)
{
    run_scenario(PRESET_DGPU, scenario, sizeof scenario / sizeof scenario[0]);
}
static void oom_igpu(void)
{
    run_scenario(PRESET_IGPU, scenario, sizeof scenario / sizeof scenario[0]);
}
static void oom_wddm1(void)
{
    run_scenario(PRESET_WDDM1, scenario, sizeof scenario / sizeof scenario[0]);
}

/* VIDMM_OOM_LONG=1: the dgpu scenario again on a 2-level GpuMmu (the
 * resizable root), on 5 levels, and with physical content moves (no
 * paging process), and the targeted scenarios on wddm1/igpu too. */
static int long_run(void)
{
    const char *v = getenv("VIDMM_OOM_LONG");
    return v && *v && *v != '0';
}
static void oom_long(void)
{
    if (!long_run())
        return;
    variant.mmu_levels = 2;
    run_scenario(PRESET_DGPU, scenario, sizeof scenario / sizeof scenario[0]);
    variant.mmu_levels = 5;
    run_scenario(PRESET_DGPU, scenario, sizeof scenario / sizeof scenario[0]);
    variant.mmu_levels = 0;
    variant.paging_ops = SOFTGPU_PAGING_PHYSICAL;
    run_scenario(PRESET_DGPU, scenario, sizeof scenario / sizeof scenario[0]);
    variant.paging_ops = 0;
    variant.private_data = 1;
    run_scenario(PRESET_WDDM1, scenario, sizeof scenario / sizeof scenario[0]);
    variant.private_data = 0;
    /* Every step of the dgpu scenario the SQLite way: a fresh adapter
     * per k, the failed call re-run with injection off, then the rest
     * of the scenario. */
    size_t n = sizeof scenario / sizeof scenario[0];
    for (size_t i = 0; i < n && t_current_failures() <= 20; i++)
        run_fresh_at(PRESET_DGPU, scenario, n, i);
}

/* Targeted scenarios: sites the main scenario reaches only from states
 * it does not hold at that moment. */
enum { X0, X1, X2, X3, X4, X5, X6, X7, FILL, BIG };

/* Locking a CPU-visible allocation in invisible memory maps it through
 * the CPU host aperture. */
static const struct step host_aperture[] = {
    { "create cpu texture", s_create, ALL, HT, TEX, 1024, RES | CPU, 0, { 0 } },
    { "lock host aperture", s_lock, ALL, HT, 0, 0, 0, 0, { 0 } },
};

/* A page set of more extents than it holds inline: four 64 KiB holes
 * in a full invisible segment. */
static const struct step extents[] = {
    { "x0", s_create, ALL, X0, TEX, 64, RES, 0, { 0 } },
    { "x1", s_create, ALL, X1, TEX, 64, RES, 0, { 0 } },
    { "x2", s_create, ALL, X2, TEX, 64, RES, 0, { 0 } },
    { "x3", s_create, ALL, X3, TEX, 64, RES, 0, { 0 } },
    { "x4", s_create, ALL, X4, TEX, 64, RES, 0, { 0 } },
    { "x5", s_create, ALL, X5, TEX, 64, RES, 0, { 0 } },
    { "x6", s_create, ALL, X6, TEX, 64, RES, 0, { 0 } },
    { "x7", s_create, ALL, X7, TEX, 64, RES, 0, { 0 } },
    { "fill", s_fill, ALL, FILL, TEX, 2, 0, 0, { 0 } },
    { "destroy x0", s_destroy_alloc, ALL, X0, 0, 0, 0, 0, { 0 } },
    { "destroy x2", s_destroy_alloc, ALL, X2, 0, 0, 0, 0, { 0 } },
    { "destroy x4", s_destroy_alloc, ALL, X4, 0, 0, 0, 0, { 0 } },
    { "destroy x6", s_destroy_alloc, ALL, X6, 0, 0, 0, 0, { 0 } },
    { "create in the holes", s_create, ALL, BIG, TEX, 256, RES, 0, { 0 } },
};

/* A contiguous make-resident in a fragmented CPU-visible segment plans
 * with the eviction scan (its roster, victims and node map). */
static const struct step scan[] = {
    { "process_create", s_process, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "device_create", s_device, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "paging_queue_create", s_queue, ALL, 0, 0, 1, 0, 0, { 0 } },
    { "x0", s_create, ALL, X0, CONST, 1024, RES, 0, { 0 } },
    { "x1", s_create, ALL, X1, CONST, 1024, RES, 0, { 0 } },
    { "x2", s_create, ALL, X2, CONST, 1024, RES, 0, { 0 } },
    { "x3", s_create, ALL, X3, CONST, 1024, RES, 0, { 0 } },
    { "fill", s_fill, ALL, FILL, CONST, 1, 0, 0, { 0 } },
    { "destroy x0", s_destroy_alloc, ALL, X0, 0, 0, 0, 0, { 0 } },
    { "destroy x2", s_destroy_alloc, ALL, X2, 0, 0, 0, 0, { 0 } },
    { "create evicted", s_create, ALL, BIG, CONST, 2048, 0, 0, { 0 } },
    { "make_resident contiguous", s_make_resident, ALL, 0, 0, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, 0, B(BIG),
      { 0 } },
};

/* More allocations mapped in one process than its object table holds
 * at half load (16 records: the ninth grows it). */
static const struct step objects[] = {
    { "process_create", s_process, ALL, 0, 0, 0, 0, 0, { 0 } },
    { "x0", s_create, ALL, X0, TEX, 64, 0, 0, { 0 } },
    { "x1", s_create, ALL, X1, TEX, 64, 0, 0, { 0 } },
    { "x2", s_create, ALL, X2, TEX, 64, 0, 0, { 0 } },
    { "x3", s_create, ALL, X3, TEX, 64, 0, 0, { 0 } },
    { "x4", s_create, ALL, X4, TEX, 64, 0, 0, { 0 } },
    { "x5", s_create, ALL, X5, TEX, 64, 0, 0, { 0 } },
    { "x6", s_create, ALL, X6, TEX, 64, 0, 0, { 0 } },
    { "x7", s_create, ALL, X7, TEX, 64, 0, 0, { 0 } },
    { "x8", s_create, ALL, FILL, TEX, 64, 0, 0, { 0 } },
    { "map x0", s_map, GPUVA, 0, 0, X0, 64, 0, { 0 } },
    { "map x1", s_map, GPUVA, 1, 0, X1, 64, 0, { 0 } },
    { "map x2", s_map, GPUVA, 2, 0, X2, 64, 0, { 0 } },
    { "map x3", s_map, GPUVA, 3, 0, X3, 64, 0, { 0 } },
    { "map x4", s_map, GPUVA, 4, 0, X4, 64, 0, { 0 } },
    { "map x5", s_map, GPUVA, 5, 0, X5, 64, 0, { 0 } },
    { "map x6", s_map, GPUVA, 6, 0, X6, 64, 0, { 0 } },
    { "map x7", s_map, GPUVA, 7, 0, X7, 64, 0, { 0 } },
    { "map x8", s_map, GPUVA, 8, 0, FILL, 64, 0, { 0 } },
};

#define RUN_FRESH(preset, steps) run_fresh(preset, steps, sizeof steps / sizeof steps[0])
static void oom_targeted(void)
{
    RUN_FRESH(PRESET_DGPU, host_aperture);
    RUN_FRESH(PRESET_DGPU, extents);
    RUN_FRESH(PRESET_DGPU, scan);
    RUN_FRESH(PRESET_WDDM1, scan);
    RUN_FRESH(PRESET_DGPU, objects);
    if (long_run()) {
        RUN_FRESH(PRESET_WDDM1, host_aperture);
        RUN_FRESH(PRESET_WDDM1, extents);
        RUN_FRESH(PRESET_IGPU, objects);
    }
}

/* (d) adapter open and close themselves: every allocation of open
 * failed in turn, both modes: VIDMM_E_NO_HOST_MEMORY, nothing left
 * allocated, the driver's state sound, and open succeeds after. */
static void open_preset(unsigned preset)
{
    struct ox *x = ox_new(preset);
    if (!x)
        return;
    vidmm_adapter_close(x->a);
    x->a = NULL;
    T_EQ(x->fa.live_blocks, 0);
    struct vidmm_adapter_create_info ci;
    ox_create_info(x, &ci);
    uint64_t k;
    for (k = 1; k < 10000; k++) {
        int reached = 0;
        for (int forever = 1; forever >= 0; forever--) {
            uint64_t calls0 = x->fa.calls;
            struct vidmm_adapter *a = NULL;
            fault_alloc_arm(&x->fa, k, forever);
            vidmm_status st = vidmm_adapter_open(&ci, &a);
            fault_alloc_disarm(&x->fa);
            if (x->fa.calls - calls0 < k) {
                T_ST(st, VIDMM_OK);
                x->a = a;
                break;
            }
            reached = 1;
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_CHECK(a == NULL);
            if (a)
                vidmm_adapter_close(a);
            T_EQ(x->fa.live_blocks, 0);
            T_EQ(x->fa.live_bytes, 0);
            T_EQ(softgpu_check(x->sg), 0);
        }
        if (!reached || x->a)
            break;
    }
    T_CHECK(x->a != NULL);
    if (x->a)
        T_EQ(checks_clean(x, "open"), 0);
    ox_close(x);
    free(x);
}
static void oom_open(void)
{
    open_preset(PRESET_DGPU);
    open_preset(PRESET_IGPU);
    open_preset(PRESET_WDDM1);
    variant.private_data = 1;   /* paging.init.private_data */
    open_preset(PRESET_DGPU);
    variant.private_data = 0;
}

/* vidmm_adapter_check allocates a scratch array of busy counts
 * (submit.check.busy_counts); refused, it skips that comparison and
 * reports no false violation, and frees what it took. */
static void oom_check_walker(void)
{
    struct ox *x = ox_new(PRESET_DGPU);
    if (!x)
        return;
    static const struct step s = { "create", s_create, ALL, 0, TEX, 256, RES, 0, { 0 } };
    T_ST(s.fn(x, &s), VIDMM_OK);
    for (uint64_t k = 1; k < 100; k++) {
        uint64_t calls0 = x->fa.calls;
        int64_t blocks = x->fa.live_blocks;
        fault_alloc_arm(&x->fa, k, 1);
        int e = vidmm_adapter_check(x->a, NULL, 0);
        fault_alloc_disarm(&x->fa);
        T_EQ(e, 0);
        T_EQ(x->fa.live_blocks, blocks);
        if (x->fa.calls - calls0 < k)
            break;
    }
    ox_close(x);
    free(x);
}

/* The observability calls (vidmm/observe.h): a refused name keeps the
 * old one, a refused statistics scratch list fails the call; neither
 * leaves a block behind. */
static void oom_observe(void)
{
    struct ox *x = ox_new(PRESET_DGPU);
    if (!x)
        return;
    static const struct step s = { "create", s_create, ALL, 0, TEX, 256, RES, 0, { 0 } };
    T_ST(s.fn(x, &s), VIDMM_OK);
    vidmm_handle h = x->al[0];
    T_ST(vidmm_allocation_set_name(x->a, h, "before"), VIDMM_OK);
    int64_t blocks = x->fa.live_blocks;
    fault_alloc_arm(&x->fa, 1, 1);
    T_ST(vidmm_allocation_set_name(x->a, h, "after"), VIDMM_E_NO_HOST_MEMORY);
    size_t n;
    T_ST(vidmm_adapter_stats_json(x->a, NULL, 0, &n), VIDMM_E_NO_HOST_MEMORY);
    fault_alloc_disarm(&x->fa);
    T_EQ(x->fa.live_blocks, blocks);
    char name[16];
    T_ST(vidmm_allocation_get_name(x->a, h, name, sizeof name, NULL), VIDMM_OK);
    T_CHECK(!strcmp(name, "before"));
    ox_close(x);
    free(x);
}

/* ---- shared allocations (vidmm/share.h) -------------------------------- */

/* What a refused share call must leave as it was. */
struct share_fp {
    int64_t blocks, bytes;
    uint64_t live;
    uint32_t holders;
};

static void share_fp_take(struct ox *x, vidmm_handle h, struct share_fp *f)
{
    struct vidmm_adapter_info ai;
    struct vidmm_share_info si;
    memset(f, 0, sizeof *f);
    memset(&si, 0, sizeof si);
    f->blocks = x->fa.live_blocks;
    f->bytes = x->fa.live_bytes;
    T_ST(vidmm_adapter_query_info(x->a, &ai), VIDMM_OK);
    f->live = ai.live_allocations;
    if (h)
        T_ST(vidmm_share_query(x->a, h, &si), VIDMM_OK);
    f->holders = si.holders;
}

/* The sweep over one share entry: fail its k-th host allocation (once,
 * then from then on) for k = 1, 2, ... until it runs without reaching
 * the k-th; each refusal is VIDMM_E_NO_HOST_MEMORY with the fingerprint
 * unchanged and the checker clean.  call returns the status and, on
 * success, the handle. */
static void share_sweep(struct ox *x, const char *what, vidmm_handle probe,
                        vidmm_status (*call)(struct ox *x, vidmm_handle *out), vidmm_handle *out)
{
    for (int forever = 0; forever <= 1; forever++) {
        for (uint64_t k = 1;; k++) {
            struct share_fp before, after;
            share_fp_take(x, probe, &before);
            uint64_t failures = x->fa.failures;
            fault_alloc_arm(&x->fa, k, forever);
            vidmm_handle h = 0;
            vidmm_status st = call(x, &h);
            fault_alloc_disarm(&x->fa);
            if (x->fa.failures == failures) {
                T_ST(st, VIDMM_OK);
                if (forever)
                    *out = h;
                else if (st >= 0)
                    T_ST(vidmm_allocation_destroy(x->a, h), VIDMM_OK);   /* run again in the next mode */
                if (verbose())
                    printf("oom.share: %s: %llu allocations\n", what, (unsigned long long)(k - 1));
                break;
            }
            if (st >= 0 && absorbable_site(vidmm_host_alloc_site_name(x->fa.last_fail_site))) {
                /* Only a checker's scratch was refused (a debug build runs
                 * them inside the entry): the call went through; undo it. */
                T_ST(vidmm_allocation_destroy(x->a, h), VIDMM_OK);
                continue;
            }
            T_ST(st, VIDMM_E_NO_HOST_MEMORY);
            T_EQ(h, 0);
            share_fp_take(x, probe, &after);
            T_CHECK(!memcmp(&before, &after, sizeof before));
            char rep[512];
            T_EQ(vidmm_adapter_check(x->a, rep, sizeof rep), 0);
            T_EQ(vidmm_adapter_check_rules(x->a, rep, sizeof rep), 0);
            if (k > 64) {
                T_CHECK(0);   /* never ends */
                break;
            }
        }
    }
}

static vidmm_status share_create_call(struct ox *x, vidmm_handle *out)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_TEXTURE;
    d.size = 256 * KIB;
    d.cpu_visible = 1;
    return vidmm_device_allocation_create(x->a, x->dev[0], &d, sizeof d, VIDMM_CREATE_SHARED | VIDMM_CREATE_RESIDENT,
                                          out);
}

static struct vidmm_share_token share_tok;

static vidmm_status share_open_call(struct ox *x, vidmm_handle *out)
{
    return vidmm_share_open(x->a, x->proc[1], &share_tok, out);
}

/* Export, query, close and process teardown take no host memory: with
 * every allocation refused they still succeed. */
static void oom_share(void)
{
    struct ox *x = ox_new(PRESET_DGPU);
    if (!x)
        return;
    for (int i = 0; i < 2; i++) {
        T_ST(vidmm_process_create(x->a, &x->proc[i]), VIDMM_OK);
        T_ST(vidmm_device_create(x->a, x->proc[i], &x->dev[i]), VIDMM_OK);
    }
    /* Warm the allocation object pool and handle table with an allocation
     * that is not shared: the sweeps below then fail every site of the
     * shares' own (the token table's first growth and the holder table's
     * included), none of which a refusal may leave behind. */
    {
        struct softgpu_alloc_desc d;
        memset(&d, 0, sizeof d);
        d.kind = SOFTGPU_ALLOC_TEXTURE;
        d.size = 256 * KIB;
        vidmm_handle warm = 0;
        T_ST(vidmm_device_allocation_create(x->a, x->dev[0], &d, sizeof d, VIDMM_CREATE_RESIDENT, &warm), VIDMM_OK);
        T_ST(vidmm_allocation_destroy(x->a, warm), VIDMM_OK);
    }

    vidmm_handle ha = 0, hb = 0;
    share_sweep(x, "create", 0, share_create_call, &ha);
    T_CHECK(ha != 0);
    fault_alloc_arm(&x->fa, 1, 1);
    T_ST(vidmm_share_export(x->a, x->proc[0], ha, &share_tok), VIDMM_OK);
    fault_alloc_disarm(&x->fa);
    share_sweep(x, "open", ha, share_open_call, &hb);
    T_CHECK(hb != 0);
    fault_alloc_arm(&x->fa, 1, 1);
    uint64_t failures = x->fa.failures;
    struct vidmm_share_info si;
    T_ST(vidmm_share_query(x->a, hb, &si), VIDMM_OK);
    T_EQ(si.holders, 2);
    T_ST(vidmm_allocation_destroy(x->a, ha), VIDMM_OK);        /* the creator lets go */
    T_ST(vidmm_process_destroy(x->a, x->proc[1]), VIDMM_OK);   /* the last holder's process goes */
    /* None of them asked for host memory (a debug build's checkers may,
     * and skip what they cannot count). */
    T_CHECK(x->fa.failures == failures || absorbable_site(vidmm_host_alloc_site_name(x->fa.last_fail_site)));
    fault_alloc_disarm(&x->fa);
    T_ST(vidmm_share_query(x->a, hb, &si), VIDMM_E_INVALID_HANDLE);
    char rep[512];
    T_EQ(vidmm_adapter_check(x->a, rep, sizeof rep), 0);
    ox_close(x);
    free(x);
}

/* Sites hit, over everything above. */
static void oom_report(void)
{
    unsigned n = vidmm_host_alloc_site_count(), hit = 0;
    T_CHECK(n <= FAULT_ALLOC_MAX_SITES);
    T_CHECK(!strcmp(vidmm_host_alloc_site_name(n), "?"));
    for (unsigned s = 0; s < n && s < FAULT_ALLOC_MAX_SITES; s++)
        hit += site_failed[s] != 0;
    printf("oom: sites hit %u / %u\n", hit, n);
    for (unsigned s = 0; s < n && s < FAULT_ALLOC_MAX_SITES; s++)
        if (!site_failed[s])
            printf("oom:   never hit: %s (%s)\n", vidmm_host_alloc_site_name(s),
                   site_reached[s] ? "reached, never failed" : "never reached");
}

void suite_oom(void);
void suite_oom(void)
{
    t_run("oom.open", oom_open);
    t_run("oom.check_walker", oom_check_walker);
    t_run("oom.observe", oom_observe);
    t_run("oom.dgpu", oom_dgpu);
    t_run("oom.igpu", oom_igpu);
    t_run("oom.wddm1", oom_wddm1);
    t_run("oom.targeted", oom_targeted);
    t_run("oom.long", oom_long);
    t_run("oom.share", oom_share);
    t_run("oom.report", oom_report);
}
