/*
 * explore.c - one schedule of the deterministic explorer: the world it
 * builds, each event, the scheduler that runs engines while vidmm waits,
 * and the checks after every event (see explore.h).
 *
 * The checks: vidmm_adapter_check (structures), the rules checker
 * (support/rules_check.h: the library's rules and the GPU's view,
 * zero reservations included), and the rules the simulator can see
 * directly:
 *   driver.work_while_down   softgpu got a buffer while not in D0
 *   paging.touches_freed     a paging buffer about to run reads or writes
 *                            host memory vidmm already gave back
 * Host memory given back is quarantined (poisoned, never reused) for the
 * whole schedule, so a late write lands on memory nobody owns and the
 * touch check sees it before the buffer runs.
 */
#include "sim/explore.h"
#include "sim/sim_os.h"

#include "harness/fault_alloc.h"
#include "fault_driver.h"
#include "rules_check.h"
#include "splitmix.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NP 3u                     /* process slots: the simulated threads */
#define NA 8u                     /* allocation slots */
#define KIB 1024ull
#define TDR_NS 100000000ull       /* virtual: 100 ms */
#define MAX_BLOCKS 4096u
#define SET13 (VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(3))

struct ex_proc {
    vidmm_handle proc, dev, queue, ctx;
    uint64_t zero_va;             /* 0: none reserved */
};

struct ex_alloc {
    vidmm_handle h;
    uint32_t owner;
    uint64_t size, va;
};

struct ex_block {
    uintptr_t p;
    size_t size;
};

/* Host allocator over fault_alloc: knows every live block, quarantines
 * what is given back. */
struct ex_heap {
    struct vidmm_host_allocator ha;
    struct fault_alloc fa;
    struct ex_block live[MAX_BLOCKS];
    uint32_t nlive;
    struct ex_block quar[MAX_BLOCKS];
    uint32_t nquar;
    size_t qalign[MAX_BLOCKS];
};

struct ex_world {
    struct ex_heap heap;
    struct fault_driver drv;      /* refuses a chosen op's k-th call (EX_DRIVER_FAIL) */
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct ex_proc p[NP];
    struct ex_alloc al[NA];
    uint64_t rng;                 /* the scheduler's choices inside waits */
    uint32_t delay;               /* letting time pass inside a wait: slices left */
    uint64_t delay_resets;        /* resets seen when the delay began */
    const struct ex_options *opt;
    struct ex_result *r;
    char touch_msg[256];
};


static void fold(struct ex_result *r, uint64_t v)
{
    r->hash = (r->hash ^ v) * 0x100000001b3ull;
}

/* ---- host heap ------------------------------------------------------------ */

static void *heap_alloc_site(void *ud, size_t size, size_t alignment, unsigned site)
{
    struct ex_heap *h = ud;
    void *p = h->fa.ha.alloc_site(&h->fa, size, alignment, site);
    if (p && h->nlive < MAX_BLOCKS)
        h->live[h->nlive++] = (struct ex_block){ (uintptr_t)p, size };
    return p;
}

static void *heap_alloc(void *ud, size_t size, size_t alignment)
{
    return heap_alloc_site(ud, size, alignment, FAULT_ALLOC_NO_SITE);
}

static void heap_free(void *ud, void *ptr, size_t size, size_t alignment)
{
    struct ex_heap *h = ud;
    for (uint32_t i = 0; i < h->nlive; i++)
        if (h->live[i].p == (uintptr_t)ptr) {
            h->live[i] = h->live[--h->nlive];
            break;
        }
    if (size >= 4096 && h->nquar < MAX_BLOCKS) {
        memset(ptr, 0xEF, size);   /* nobody's memory now: a late GPU write is caught by the touch check */
        h->qalign[h->nquar] = alignment;
        h->quar[h->nquar++] = (struct ex_block){ (uintptr_t)ptr, size };
        return;
    }
    h->fa.ha.free(&h->fa, ptr, size, alignment);
}

static void heap_init(struct ex_heap *h)
{
    memset(h, 0, sizeof *h);
    fault_alloc_init(&h->fa);
    h->ha.alloc = heap_alloc;
    h->ha.free = heap_free;
    h->ha.alloc_site = heap_alloc_site;
    h->ha.user_data = h;
}

static void heap_fini(struct ex_heap *h)
{
    for (uint32_t i = 0; i < h->nquar; i++)
        h->fa.ha.free(&h->fa, (void *)h->quar[i].p, h->quar[i].size, h->qalign[i]);
    h->nquar = 0;
}

static int heap_owns(const struct ex_heap *h, uint64_t addr, uint64_t size)
{
    for (uint32_t i = 0; i < h->nlive; i++)
        if (addr >= h->live[i].p && addr - h->live[i].p <= h->live[i].size &&
            size <= h->live[i].size - (addr - h->live[i].p))
            return 1;
    return h->nlive == MAX_BLOCKS;   /* table full: cannot tell, do not accuse */
}

/* softgpu's touch hook: every host range a paging buffer is about to use
 * must be a live block of vidmm's.  Memory-segment ranges are not
 * checked: vidmm may free a range whose paging is still queued, because
 * the copy engine runs in order and whatever reuses the range is paged
 * after it. */
static void touch(void *ctx, uint32_t segment_id, uint64_t address, uint64_t size, int write)
{
    struct ex_world *w = ctx;
    if (w->opt->verbose > 1)
        printf("         touch seg %u 0x%llx +0x%llx %s\n", segment_id, (unsigned long long)address,
               (unsigned long long)size, write ? "write" : "read");
    if (!size || w->touch_msg[0])
        return;
    if (segment_id || heap_owns(&w->heap, address, size))
        return;
    snprintf(w->touch_msg, sizeof w->touch_msg,
             "paging.touches_freed: a paging buffer %s %llu bytes of %s memory vidmm freed",
             write ? "writes" : "reads", (unsigned long long)size, "host");
}

/* ---- the scheduler inside waits ----------------------------------------------- */

static uint64_t resets_seen(struct ex_world *w)
{
    struct softgpu_reset_stats rs;
    softgpu_get_reset_stats(w->sg, &rs);
    return rs.engine_resets + rs.adapter_resets + rs.buffers_dropped;
}

static int step(struct ex_world *w, uint32_t engine)
{
    if (softgpu_step(w->sg, engine) != VIDMM_OK)
        return 0;
    if (w->opt->verbose)
        printf("         step of engine %d\n", engine == SOFTGPU_ENGINE_PAGING ? -1 : (int)engine);
    w->r->steps++;
    fold(w->r, 0x5000u + engine);
    return 1;
}

/* vidmm would block: run one engine event, or let time pass (0).  While
 * an engine is stuck (a hang to find), the seed may choose to let time
 * pass for the rest of this wait's chance: vidmm's hang detection then
 * runs inside the wait, with other engines' work still queued - the
 * order a free-running GPU reaches only by timing. */
static int sched_block(void *ctx, int deadline)
{
    struct ex_world *w = ctx;
    struct softgpu_pending p[1 + SOFTGPU_NODES];
    uint32_t n = softgpu_pending(w->sg, p, 1 + SOFTGPU_NODES);
    uint32_t run[1 + SOFTGPU_NODES], nrun = 0, stuck = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (p[i].stuck)
            stuck++;
        else
            run[nrun++] = p[i].engine;
    }
    if (w->opt->verbose > 1)
        printf("         wait: deadline %d, %u engines queued, %u stuck, delay %u\n", deadline, n, stuck, w->delay);
    if (w->delay) {
        if (resets_seen(w) != w->delay_resets || !--w->delay)
            w->delay = 0;
        else
            return 0;
    }
    if (deadline && stuck && nrun && splitmix64_next(&w->rng) % 3 == 0) {
        w->delay = 64;   /* bounded: at most 64 slices of the wait */
        if (w->opt->verbose)
            printf("         time passes inside a wait (an engine is stuck)\n");
        w->delay_resets = resets_seen(w);
        fold(w->r, 0xDE1A);
        return 0;
    }
    if (nrun) {
        uint32_t first = (uint32_t)(splitmix64_next(&w->rng) % nrun);
        for (uint32_t k = 0; k < nrun; k++)
            if (step(w, run[(first + k) % nrun]))
                return 1;
    }
    for (uint32_t i = 0; i < n; i++)   /* a WAIT may be met by now */
        if (p[i].stuck && p[i].engine != SOFTGPU_ENGINE_PAGING && step(w, p[i].engine))
            return 1;
    return 0;
}

static void sched_deadlock(void *ctx)
{
    struct ex_world *w = ctx;
    snprintf(w->r->msg, sizeof w->r->msg, "deadlock: vidmm waits without a deadline and no engine can move");
    w->r->failed = 1;
    /* vidmm is stopped inside a call with its locks held: report and end
     * the process (the explorer runs each schedule in a child). */
    fflush(stdout);
    _exit(3);
}

/* ---- world ------------------------------------------------------------------- */

static int world_open(struct ex_world *w)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = 8 * KIB * KIB;
    cfg.segment_size[2] = 8 * KIB * KIB;
    cfg.scheduler = SOFTGPU_SCHED_MANUAL;
    cfg.paging_ops = SOFTGPU_PAGING_PHYSICAL;   /* TRANSFER and FILL name their memory: the touch check sees it */
    if (softgpu_create(&cfg, &w->sg) != VIDMM_OK)
        return -1;
    softgpu_set_touch_hook(w->sg, touch, w);
    struct vidmm_adapter_create_info info;
    memset(&info, 0, sizeof info);
    softgpu_fill_adapter_create_info(w->sg, &info);
    fault_driver_wrap(&w->drv, &info);
    info.host_allocator = &w->heap.ha;
    info.system_memory_limit = 64 * KIB * KIB;
    if (vidmm_adapter_open(&info, &w->a) != VIDMM_OK)
        return -1;
    return vidmm_adapter_set_tdr_timeout(w->a, TDR_NS) == VIDMM_OK ? 0 : -1;
}

static void world_close(struct ex_world *w)
{
    fault_driver_disarm(&w->drv);
    w->heap.fa.fail_at = 0;
    vidmm_adapter_close(w->a);
    softgpu_destroy(w->sg);
    heap_fini(&w->heap);
}

static struct ex_alloc *alloc_of(struct ex_world *w, unsigned slot)
{
    return slot < NA && w->al[slot].h ? &w->al[slot] : NULL;
}

static struct ex_proc *proc_of(struct ex_world *w, unsigned slot)
{
    return slot < NP && w->p[slot].proc ? &w->p[slot] : NULL;
}

/* ---- events ------------------------------------------------------------------- */

static vidmm_status ev_proc(struct ex_world *w, unsigned slot)
{
    if (slot >= NP || w->p[slot].proc)
        return VIDMM_OK;
    struct ex_proc *p = &w->p[slot];
    vidmm_status st = vidmm_process_create(w->a, &p->proc);
    if (st == VIDMM_OK)
        st = vidmm_device_create(w->a, p->proc, &p->dev);
    if (st == VIDMM_OK)
        st = vidmm_paging_queue_create(w->a, p->dev, VIDMM_PAGING_QUEUE_NORMAL, &p->queue);
    if (st == VIDMM_OK) {
        struct vidmm_context_desc cd = { slot == 2 ? SOFTGPU_NODE_COMPUTE : SOFTGPU_NODE_GRAPHICS,
                                         VIDMM_CONTEXT_VIRTUAL, 0, 0 };
        st = vidmm_context_create(w->a, p->dev, &cd, &p->ctx);
    }
    if (st != VIDMM_OK && p->proc) {
        (void)vidmm_process_destroy(w->a, p->proc);
        memset(p, 0, sizeof *p);
    }
    return st;
}

static void forget_owned(struct ex_world *w, unsigned slot)
{
    for (unsigned i = 0; i < NA; i++)
        if (w->al[i].h && w->al[i].owner == slot)
            memset(&w->al[i], 0, sizeof w->al[i]);
    memset(&w->p[slot], 0, sizeof w->p[slot]);
}

static vidmm_status ev_proc_destroy(struct ex_world *w, unsigned slot)
{
    struct ex_proc *p = proc_of(w, slot);
    if (!p)
        return VIDMM_OK;
    vidmm_status st = vidmm_process_destroy(w->a, p->proc);
    if (st == VIDMM_OK)
        forget_owned(w, slot);
    return st;
}

static vidmm_status ev_alloc(struct ex_world *w, unsigned slot, unsigned owner, unsigned cls)
{
    struct ex_proc *p = proc_of(w, owner);
    if (slot >= NA || w->al[slot].h || !p)
        return VIDMM_OK;
    static const uint64_t sizes[4] = { 64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB };
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.cpu_visible = 1;
    d.size = sizes[cls % 4];
    d.info.size = d.size;
    d.info.supported_write_segment_set = SET13;
    d.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    vidmm_handle h = 0;
    vidmm_status st = vidmm_device_allocation_create(w->a, p->dev, &d, sizeof d, 0, &h);
    if (st == VIDMM_OK)
        w->al[slot] = (struct ex_alloc){ h, owner, d.size, 0 };
    return st;
}

static vidmm_status ev_map(struct ex_world *w, unsigned slot)
{
    struct ex_alloc *al = alloc_of(w, slot);
    if (!al || al->va)
        return VIDMM_OK;
    return vidmm_gpuva_map(w->a, w->p[al->owner].proc, 0, 0, 0, al->h, 0, al->size, 0, 0, &al->va);
}

static vidmm_status ev_resident(struct ex_world *w, unsigned slot, int evict)
{
    struct ex_alloc *al = alloc_of(w, slot);
    if (!al)
        return VIDMM_OK;
    struct ex_proc *p = &w->p[al->owner];
    if (evict) {
        struct vidmm_evict_args ea;
        memset(&ea, 0, sizeof ea);
        ea.allocations = &al->h;
        ea.count = 1;
        return vidmm_evict(w->a, p->dev, &ea);
    }
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = p->queue;
    mr.allocations = &al->h;
    mr.count = 1;
    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    return vidmm_make_resident(w->a, p->dev, &mr);
}

static vidmm_status ev_destroy(struct ex_world *w, unsigned slot)
{
    struct ex_alloc *al = alloc_of(w, slot);
    if (!al)
        return VIDMM_OK;
    vidmm_status st = vidmm_allocation_destroy(w->a, al->h);
    if (st == VIDMM_OK)
        memset(al, 0, sizeof *al);
    return st;
}

/* Write cb into the command allocation through a CPU lock and submit it
 * on the process's context. */
static vidmm_status submit(struct ex_world *w, struct ex_proc *p, struct ex_alloc *cmd,
                           const struct softgpu_cmdbuf *cb)
{
    void *cpu = NULL;
    vidmm_status st = vidmm_allocation_lock(w->a, cmd->h, &cpu);
    if (st != VIDMM_OK)
        return st;
    memcpy(cpu, cb->data, cb->size);
    st = vidmm_allocation_unlock(w->a, cmd->h);
    if (st != VIDMM_OK)
        return st;
    uint64_t fence = 0;
    return vidmm_submit_virtual(w->a, p->ctx, cmd->va, cb->size, &fence);
}

static vidmm_status ev_gpu(struct ex_world *w, unsigned ps, unsigned cs, unsigned ts, int hang)
{
    struct ex_proc *p = proc_of(w, ps);
    struct ex_alloc *cmd = alloc_of(w, cs), *t = alloc_of(w, ts);
    if (!p || !cmd || !t || cs == ts || cmd->owner != ps || t->owner != ps || !cmd->va || !t->va)
        return VIDMM_OK;
    uint8_t buf[24 * 32];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    if (hang) {
        (void)softgpu_cmd_wait(&cb, t->va, 1);          /* the word stays 0: the node stalls */
    } else {
        uint64_t chunk = t->size / 24;
        for (unsigned i = 0; i < 24; i++)
            (void)softgpu_cmd_fill(&cb, t->va + i * chunk, chunk, 0xA5A50000u + i);
    }
    return submit(w, p, cmd, &cb);
}

/* A write to a GPU VA below every mapping (the first 64 KiB are never
 * handed out): the node faults, the process's device is lost. */
static vidmm_status ev_fault(struct ex_world *w, unsigned ps, unsigned cs)
{
    struct ex_proc *p = proc_of(w, ps);
    struct ex_alloc *cmd = alloc_of(w, cs);
    if (!p || !cmd || cmd->owner != ps || !cmd->va)
        return VIDMM_OK;
    uint8_t buf[64];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    (void)softgpu_cmd_write64(&cb, 0x1000, 0xBAD);
    return submit(w, p, cmd, &cb);
}

static vidmm_status ev_reserve_zero(struct ex_world *w, unsigned ps)
{
    struct ex_proc *p = proc_of(w, ps);
    if (!p || p->zero_va)
        return VIDMM_OK;
    uint64_t va = 0;
    vidmm_status st = vidmm_gpuva_reserve(w->a, p->proc, 0, 0, 0, 64 * KIB, VIDMM_GPUVA_RESERVE_ZERO, &va);
    if (st == VIDMM_OK)
        p->zero_va = va;
    return st;
}

static vidmm_status ev_tick(struct ex_world *w)
{
    sim_advance(TDR_NS / 2 + 1);
    int rec = 0;
    return vidmm_adapter_detect_hangs(w->a, &rec);
}

/* The ops EX_DRIVER_FAIL refuses (its a indexes this). */
static const enum fault_op drv_ops[] = {
    FAULT_OP_BUILD_PAGING_BUFFER, FAULT_OP_SUBMIT_COMMAND, FAULT_OP_SUBMIT_COMMAND_VIRTUAL, FAULT_OP_DESCRIBE_ALLOCATION,
    FAULT_OP_RESET_ENGINE, FAULT_OP_RESET_FROM_TIMEOUT, FAULT_OP_SET_POWER_STATE, FAULT_OP_QUERY_ENGINE_STATUS
};

static vidmm_status apply(struct ex_world *w, const struct ex_event *e)
{
    switch (e->op) {
    case EX_PROC: return ev_proc(w, e->a);
    case EX_PROC_DESTROY: return ev_proc_destroy(w, e->a);
    case EX_ALLOC: return ev_alloc(w, e->a, e->b, e->c);
    case EX_MAP: return ev_map(w, e->a);
    case EX_RESIDENT: return ev_resident(w, e->a, 0);
    case EX_EVICT: return ev_resident(w, e->a, 1);
    case EX_DESTROY: return ev_destroy(w, e->a);
    case EX_MOVE: return alloc_of(w, e->a) ? vidmm_allocation_move(w->a, w->al[e->a].h, e->b) : VIDMM_OK;
    case EX_FILLS: return ev_gpu(w, e->a, e->b, e->c, 0);
    case EX_HANG: return ev_gpu(w, e->a, e->b, e->c, 1);
    case EX_RESERVE_ZERO: return ev_reserve_zero(w, e->a);
    case EX_STANDBY: return vidmm_adapter_set_power_state(w->a, VIDMM_POWER_STANDBY);
    case EX_RESUME: return vidmm_adapter_set_power_state(w->a, VIDMM_POWER_D0);
    case EX_TICK: return ev_tick(w);
    case EX_STEP: return step(w, e->a < SOFTGPU_NODES ? e->a : SOFTGPU_ENGINE_PAGING) ? VIDMM_OK : VIDMM_E_STATE;
    case EX_PAGING_HANG: softgpu_inject_paging_hang(w->sg, 0); return VIDMM_OK;
    case EX_HOST_FAIL: fault_alloc_arm(&w->heap.fa, e->a + 1u, 0); return VIDMM_OK;
    case EX_DRIVER_FAIL:
        fault_driver_arm(&w->drv, drv_ops[e->a % (sizeof drv_ops / sizeof drv_ops[0])], e->b + 1u,
                         e->c ? FAULT_DRIVER_STICKY : FAULT_DRIVER_ONCE, VIDMM_E_DRIVER_FAILURE);
        return VIDMM_OK;
    case EX_FAULT: return ev_fault(w, e->a, e->b);
    case EX_HIBERNATE: return vidmm_adapter_set_power_state(w->a, VIDMM_POWER_HIBERNATE);
    default: return VIDMM_E_INVALID_ARG;
    }
}

/* ---- checks ------------------------------------------------------------------- */

static void objects(struct ex_world *w, struct rc_objects *o, vidmm_handle *proc, vidmm_handle *dev,
                    vidmm_handle *ctx, vidmm_handle *queue, vidmm_handle *alloc)
{
    for (unsigned i = 0; i < NP; i++) {
        proc[i] = w->p[i].proc;
        dev[i] = w->p[i].dev;
        ctx[i] = w->p[i].ctx;
        queue[i] = w->p[i].queue;
    }
    for (unsigned i = 0; i < NA; i++)
        alloc[i] = w->al[i].h;
    *o = (struct rc_objects){ proc, dev, ctx, queue, alloc, NP, NP, NP, NP, NA };
}

/* The GPU's view matches vidmm's only once the paging vidmm queued has
 * run: in manual mode the accessors do not wait for it, so the gpu.*
 * rules and the zero check look only when the copy engine is idle. */
static int paging_idle(struct ex_world *w)
{
    struct softgpu_pending p[1 + SOFTGPU_NODES];
    uint32_t n = softgpu_pending(w->sg, p, 1 + SOFTGPU_NODES);
    return !(n && p[0].engine == SOFTGPU_ENGINE_PAGING);
}

static int check_all(struct ex_world *w, char *msg, size_t n)
{
    if (w->touch_msg[0]) {
        snprintf(msg, n, "%.480s", w->touch_msg);
        return 1;
    }
    char rep[1024];
    rep[0] = 0;
    if (vidmm_adapter_check(w->a, rep, sizeof rep)) {
        snprintf(msg, n, "structure: %.480s", rep);
        return 1;
    }
    if (softgpu_check(w->sg)) {
        snprintf(msg, n, "softgpu: the device's own invariants failed (softgpu_check)");
        return 1;
    }
    struct softgpu_reset_stats rs;
    softgpu_get_reset_stats(w->sg, &rs);
    if (rs.work_while_down) {
        snprintf(msg, n, "driver.work_while_down: softgpu got %llu buffer(s) while not in D0",
                 (unsigned long long)rs.work_while_down);
        return 1;
    }
    int idle = paging_idle(w);
    struct rc_objects o;
    vidmm_handle proc[NP], dev[NP], ctx[NP], queue[NP], alloc[NA];
    objects(w, &o, proc, dev, ctx, queue, alloc);
    rep[0] = 0;
    if (rc_check_rules(w->a, idle ? w->sg : NULL, &o, rep, sizeof rep)) {
        snprintf(msg, n, "rules: %.480s", rep);
        return 1;
    }
    return 0;
}

void ex_run(uint64_t seed, const struct ex_event *ev, uint32_t n, const struct ex_options *o, struct ex_result *r)
{
    static struct ex_world world;
    struct ex_world *w = &world;
    memset(w, 0, sizeof *w);
    memset(r, 0, sizeof *r);
    r->hash = 0xcbf29ce484222325ull;
    w->opt = o;
    w->r = r;
    w->rng = seed ^ 0x5C4EDu;
    heap_init(&w->heap);
    struct sim_hooks hooks = { sched_block, sched_deadlock, w };
    sim_install(&hooks, 1000000000ull);
    if (world_open(w)) {
        r->failed = 1;
        snprintf(r->msg, sizeof r->msg, "setup: the adapter did not open");
        sim_install(NULL, 0);
        return;
    }
    for (uint32_t i = 0; i < n && !r->failed; i++) {
        w->rng = seed ^ (0x9E3779B97F4A7C15ull * (ev[i].id + 1u));   /* this event's own choices */
        vidmm_status st = apply(w, &ev[i]);
        fold(r, (uint64_t)(int64_t)st ^ ((uint64_t)i << 32));
        if (o->verbose) {
            struct softgpu_reset_stats rs;
            softgpu_get_reset_stats(w->sg, &rs);
            printf("  %4u %-14s %u %u %u -> %s  (resets: %llu engine, %llu adapter)\n", i, ex_op_name(ev[i].op),
                   ev[i].a, ev[i].b, ev[i].c, vidmm_status_str(st), (unsigned long long)rs.engine_resets,
                   (unsigned long long)rs.adapter_resets);
        }
        if (ev[i].op != EX_HOST_FAIL && ev[i].op != EX_DRIVER_FAIL) {
            /* An armed failure lives through the next event only: then
             * the host and the driver work again. */
            w->heap.fa.fail_at = 0;
            fault_driver_disarm(&w->drv);
        }
        r->events = i + 1;
        if (check_all(w, r->msg, sizeof r->msg)) {
            r->failed = 1;
            r->at = i;
        }
    }
    struct softgpu_stats gs;
    softgpu_get_stats(w->sg, &gs);   /* what the device did, into the run's hash */
    fold(r, gs.paging_buffers);
    fold(r, gs.ptes_written);
    fold(r, gs.commands);
    fold(r, gs.bytes[VIDMM_PAGING_TRANSFER]);
    if (!r->failed) {
        /* Back to D0 and every engine drained before closing: the close
         * waits for fences, the scheduler runs them. */
        (void)vidmm_adapter_set_power_state(w->a, VIDMM_POWER_D0);
    }
    world_close(w);
    if (!r->failed && (w->heap.fa.live_blocks || w->heap.fa.live_bytes)) {
        r->failed = 1;
        r->at = n;
        snprintf(r->msg, sizeof r->msg, "leak: %lld host blocks (%lld bytes) left after close",
                 (long long)w->heap.fa.live_blocks, (long long)w->heap.fa.live_bytes);
    }
    sim_install(NULL, 0);
}

/* ---- generation ------------------------------------------------------------------- */

static const char *const op_names[EX_NOPS] = {
    "proc", "proc_destroy", "alloc", "map", "resident", "evict", "destroy", "move", "fills", "hang",
    "reserve_zero", "standby", "resume", "tick", "step", "paging_hang", "host_fail", "driver_fail", "fault",
    "hibernate"
};

const char *ex_op_name(unsigned op)
{
    return op < EX_NOPS ? op_names[op] : "?";
}

int ex_parse(const char *line, struct ex_event *e)
{
    char name[32];
    unsigned a = 0, b = 0, c = 0, id = e->id;
    if (sscanf(line, "%31s %u %u %u %u", name, &a, &b, &c, &id) < 1)
        return -1;
    for (unsigned op = 0; op < EX_NOPS; op++)
        if (!strcmp(name, op_names[op])) {
            *e = (struct ex_event){ (uint8_t)op, (uint8_t)a, (uint8_t)b, (uint8_t)c, (uint16_t)id };
            return 0;
        }
    return -1;
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
    return (uint32_t)(splitmix64_next(s) % n);
}

/* One simulated thread's stream: a process and its allocations, set up,
 * then used (GPU work, residency, moves, destruction), perhaps torn
 * down. */
static uint32_t gen_stream(uint64_t *s, unsigned ps, struct ex_event *ev, uint32_t max)
{
    uint32_t n = 0;
#define PUT(o, x, y, z) do { if (n < max) ev[n++] = (struct ex_event){ (o), (uint8_t)(x), (uint8_t)(y), (uint8_t)(z), 0 }; } while (0)
    unsigned base = ps * 2 + (ps == 2 ? 0 : 0), slots[3] = { base % NA, (base + 1) % NA, (6 + ps % 2) % NA };
    PUT(EX_PROC, ps, 0, 0);
    unsigned nalloc = ps == 2 ? 2 : 3;
    for (unsigned i = 0; i < nalloc; i++) {
        PUT(EX_ALLOC, slots[i], ps, i == 0 ? 0 : 1 + rnd(s, 3));
        PUT(EX_MAP, slots[i], 0, 0);
        PUT(EX_RESIDENT, slots[i], 0, 0);
    }
    unsigned ops = 3 + rnd(s, 6);
    for (unsigned k = 0; k < ops; k++) {
        unsigned t = slots[1 + rnd(s, nalloc - 1)];
        switch (rnd(s, 13)) {
        case 0: case 1: PUT(EX_FILLS, ps, slots[0], t); break;
        case 2: case 3: PUT(EX_HANG, ps, slots[0], t); break;
        case 4: PUT(EX_DESTROY, t, 0, 0); break;
        case 5: case 6: PUT(EX_MOVE, t, rnd(s, 2) ? 3 : 1, 0); break;
        case 7: PUT(EX_EVICT, t, 0, 0); break;
        case 8: PUT(EX_RESIDENT, t, 0, 0); break;
        case 9: PUT(EX_RESERVE_ZERO, ps, 0, 0); break;
        case 10: PUT(EX_ALLOC, t, ps, rnd(s, 4)); PUT(EX_MAP, t, 0, 0); PUT(EX_RESIDENT, t, 0, 0); break;
        case 11:
            if (rnd(s, 2))
                PUT(EX_DESTROY, slots[0], 0, 0);
            else
                PUT(EX_FAULT, ps, slots[0], 0);
            break;
        default: PUT(EX_MOVE, slots[0], rnd(s, 2) ? 3 : 1, 0); break;
        }
    }
    if (rnd(s, 2))
        PUT(EX_PROC_DESTROY, ps, 0, 0);
#undef PUT
    for (uint32_t i = 0; i < n; i++)
        ev[i].id = (uint16_t)i;
    return n;
}

/* A global event between the streams' calls. */
static struct ex_event gen_global(uint64_t *s, const struct ex_options *o)
{
    uint32_t k = rnd(s, 100);
    if (k < 62)
        return (struct ex_event){ EX_STEP, (uint8_t)rnd(s, 4), 0, 0, 0 };
    if (k < 70)
        return (struct ex_event){ EX_TICK, 0, 0, 0, 0 };
    if (k < 78)
        return (struct ex_event){ rnd(s, 4) ? EX_STANDBY : EX_HIBERNATE, 0, 0, 0, 0 };
    if (k < 88)
        return (struct ex_event){ EX_RESUME, 0, 0, 0, 0 };
    if (k < 91)
        return (struct ex_event){ EX_PAGING_HANG, 0, 0, 0, 0 };
    if (k < 96 || !o->driver_failures)
        return (struct ex_event){ EX_HOST_FAIL, (uint8_t)rnd(s, 6), 0, 0, 0 };
    return (struct ex_event){ EX_DRIVER_FAIL, (uint8_t)rnd(s, 8), (uint8_t)rnd(s, 4), (uint8_t)rnd(s, 2), 0 };
}

uint32_t ex_generate(uint64_t seed, const struct ex_options *o, struct ex_event *ev, uint32_t max)
{
    uint64_t s = seed;
    struct ex_event st[NP][64];
    uint32_t len[NP], pos[NP] = { 0, 0, 0 };
    unsigned nthreads = 1 + rnd(&s, NP);
    for (unsigned i = 0; i < nthreads; i++)
        len[i] = gen_stream(&s, i, st[i], 64);
    uint32_t n = 0;
    for (;;) {
        unsigned live = 0;
        for (unsigned i = 0; i < nthreads; i++)
            live += pos[i] < len[i];
        if (!live || n >= max)
            break;
        if (rnd(&s, 100) < 45) {
            ev[n++] = gen_global(&s, o);
            continue;
        }
        unsigned pick = rnd(&s, live);
        for (unsigned i = 0; i < nthreads; i++)
            if (pos[i] < len[i] && pick-- == 0) {
                ev[n++] = st[i][pos[i]++];
                break;
            }
    }
    for (uint32_t i = 0; i < n; i++)
        ev[i].id = (uint16_t)i;
    return n;
}
