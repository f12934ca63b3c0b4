/*
 * demo_recovery.c - the hang, reset and power part of `vidmm demo`.
 *
 * Three processes: "app" hangs its engine (a WAIT on a word nobody
 * writes), "viewer" has work queued behind it on the same engine,
 * "editor" is idle with one clean and one CPU-written texture in video
 * memory.  The demo shortens the TDR timeout to 100 ms and shows:
 *   1. the engine reset: app's device lost, viewer's buffer runs;
 *   2. an adapter reset (the paging engine is made to hang while it
 *      restores an allocation): what was restored from a system copy,
 *      what was lost, page tables rebuilt (the viewer's GPU work runs);
 *   3. standby and resume: what was saved, and every byte back.
 * Every read-back goes through the GPU (a CHECKSUM command) or the CPU.
 */
#include "cli/cli.h"
#include "splitmix.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RD_SZ (1ull << 20)

struct rd_proc {
    const char *name;
    vidmm_handle proc, dev, queue, ctx;
};

struct rd_env {
    struct cli_session *s;
    struct vidmm_adapter *a;
    int failures;
};

static void rd_fail(struct rd_env *e, const char *what, vidmm_status st)
{
    printf("  FAILED: %s (%s)\n", what, vidmm_status_str(st));
    e->failures++;
}

static int rd_proc_open(struct rd_env *e, struct rd_proc *p, const char *name)
{
    memset(p, 0, sizeof *p);
    p->name = name;
    struct vidmm_context_desc cd = { SOFTGPU_NODE_GRAPHICS, VIDMM_CONTEXT_VIRTUAL, 0, 0 };
    vidmm_status st;
    if ((st = vidmm_process_create(e->a, &p->proc)) < 0 || (st = vidmm_device_create(e->a, p->proc, &p->dev)) < 0 ||
        (st = vidmm_paging_queue_create(e->a, p->dev, VIDMM_PAGING_QUEUE_NORMAL, &p->queue)) < 0 ||
        (st = vidmm_context_create(e->a, p->dev, &cd, &p->ctx)) < 0) {
        rd_fail(e, "process", st);
        return -1;
    }
    return 0;
}

/* A CPU-visible texture of size, created evicted, filled with seed's
 * pattern (seed 0: left zero), mapped in p's address space. */
static vidmm_handle rd_alloc(struct rd_env *e, const struct rd_proc *p, uint32_t set, uint64_t size, uint64_t seed,
                             uint64_t *va)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = SOFTGPU_ALLOC_EXPLICIT;
    d.cpu_visible = 1;
    d.size = size;
    d.info.size = size;
    d.info.supported_write_segment_set = set;
    d.info.flags = VIDMM_ALLOC_CPU_VISIBLE;
    vidmm_handle h = 0;
    void *cpu = NULL;
    vidmm_status st = vidmm_allocation_create2(e->a, &d, sizeof d, 0, &h);
    if (st >= 0 && seed) {
        st = vidmm_allocation_lock(e->a, h, &cpu);
        if (st >= 0) {
            uint64_t s = seed, *w = cpu;
            for (uint64_t i = 0; i < size / 8; i++)
                w[i] = splitmix64_next(&s);
            st = vidmm_allocation_unlock(e->a, h);
        }
    }
    if (st >= 0 && va)
        st = vidmm_gpuva_map(e->a, p->proc, 0, 0, 0, h, 0, size, 0, 0, va);
    if (st < 0)
        rd_fail(e, "allocation", st);
    return h;
}

static vidmm_status rd_resident(struct rd_env *e, const struct rd_proc *p, const vidmm_handle *l, uint32_t n)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = p->queue;
    mr.allocations = l;
    mr.count = n;
    mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    vidmm_status st = vidmm_make_resident(e->a, p->dev, &mr);
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(e->a, p->queue, mr.paging_fence_value, UINT64_MAX);
    return st;
}

/* The checksum softgpu's CHECKSUM command gives for seed's pattern. */
static uint64_t rd_sum(uint64_t size, uint64_t seed)
{
    uint64_t *w = malloc(size), s = seed, h = 0;
    if (!w)
        return 0;
    for (uint64_t i = 0; i < size / 8; i++)
        w[i] = seed ? splitmix64_next(&s) : 0;
    h = softgpu_checksum(w, size);
    free(w);
    return h;
}

static uint64_t rd_read64(struct rd_env *e, vidmm_handle h, uint64_t off)
{
    void *cpu = NULL;
    uint64_t v = 0;
    if (vidmm_allocation_lock(e->a, h, &cpu) >= 0) {
        memcpy(&v, (char *)cpu + off, 8);
        vidmm_allocation_unlock(e->a, h);
    }
    return v;
}

/* Write cb into cmd and submit it on p's context. */
static vidmm_status rd_submit(struct rd_env *e, const struct rd_proc *p, vidmm_handle cmd, uint64_t vcmd,
                              const struct softgpu_cmdbuf *cb, uint64_t *fence)
{
    void *cpu = NULL;
    vidmm_status st = vidmm_allocation_lock(e->a, cmd, &cpu);
    if (st < 0)
        return st;
    memcpy(cpu, cb->data, cb->size);
    vidmm_allocation_unlock(e->a, cmd);
    return vidmm_submit_virtual(e->a, p->ctx, vcmd, cb->size, fence);
}

static double rd_ms(uint64_t t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return ((double)t.tv_sec * 1e9 + (double)t.tv_nsec - (double)t0) / 1e6;
}

static uint64_t rd_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static const char *rd_reset_str(uint32_t r)
{
    return r == VIDMM_RESET_GUILTY ? "GUILTY" : r == VIDMM_RESET_INNOCENT ? "INNOCENT" : "none";
}

static void rd_devices(struct rd_env *e, struct rd_proc *const *ps, int n)
{
    for (int i = 0; i < n; i++) {
        struct vidmm_device_info di;
        memset(&di, 0, sizeof di);
        vidmm_device_query(e->a, ps[i]->dev, &di);
        printf("    %-7s device %s, reset status %s\n", ps[i]->name, di.lost ? "LOST" : "ok",
               rd_reset_str(di.reset_status));
    }
}

/* Standby and resume: the viewer's resident texture is saved to system
 * memory and comes back; a submission while down is refused; the first
 * one after resume sees every byte. */
static void rd_standby(struct rd_env *e, struct rd_proc *viewer, uint32_t set, struct softgpu_cmdbuf *cb,
                       vidmm_handle vcmd, uint64_t vvc, uint64_t vvd, uint64_t vvr, vidmm_handle vres)
{
    struct vidmm_adapter *a = e->a;
    vidmm_status st;
    uint64_t t0, fv = 0;
    vidmm_handle keep = rd_alloc(e, viewer, set, RD_SZ, 79, NULL);
    if ((st = rd_resident(e, viewer, &keep, 1)) < 0)
        rd_fail(e, "make-resident", st);
    t0 = rd_now();
    st = vidmm_adapter_set_power_state(a, VIDMM_POWER_STANDBY);
    struct vidmm_power_stats ps;
    vidmm_adapter_get_power_stats(a, &ps);
    char sb[32];
    cli_format_size(ps.bytes_saved, sb, sizeof sb);
    printf("\n== standby and resume ==\n  standby: %s in %.1f ms, %llu allocations saved to system memory (%s), "
           "%llu dropped (a current system copy exists)\n",
           vidmm_status_str(st), rd_ms(t0), (unsigned long long)ps.allocations_saved, sb,
           (unsigned long long)ps.allocations_discarded);
    uint64_t f2;
    printf("  while down, a submission answers %s\n",
           vidmm_status_str(vidmm_submit_virtual(a, viewer->ctx, vvc, 8, &f2)));
    t0 = rd_now();
    vidmm_status st2 = vidmm_adapter_set_power_state(a, VIDMM_POWER_D0);
    cb->size = 0;
    softgpu_cmd_checksum(cb, vvd, RD_SZ, vvr + 16);
    if (st2 >= 0 && (st2 = rd_submit(e, viewer, vcmd, vvc, cb, &fv)) >= 0)
        st2 = vidmm_context_wait(a, viewer->ctx, fv, UINT64_MAX);
    void *cpu = NULL;
    int keep_ok = 0;
    if (st2 >= 0 && vidmm_allocation_lock(a, keep, &cpu) >= 0) {
        uint64_t sd = 79, *w = cpu;
        keep_ok = 1;
        for (uint64_t i = 0; i < RD_SZ / 8; i++)
            keep_ok &= w[i] == splitmix64_next(&sd);
        vidmm_allocation_unlock(a, keep);
    }
    int ok = st >= 0 && st2 >= 0 && rd_read64(e, vres, 16) == rd_sum(RD_SZ, 71) && keep_ok;
    printf("  resume and first submission: %s in %.1f ms; every byte back (GPU checksum and CPU read): %s\n",
           vidmm_status_str(st2), rd_ms(t0), ok ? "yes" : "NO");
    e->failures += !ok;
}

int cli_demo_recovery(struct cli_session *s)
{
    struct rd_env e = { s, s->adapter, 0 };
    struct vidmm_adapter *a = s->adapter;
    const uint32_t set = VIDMM_SEGMENT_BIT(1) | VIDMM_SEGMENT_BIT(2);
    struct rd_proc app, viewer, editor;
    if (rd_proc_open(&e, &app, "app") || rd_proc_open(&e, &viewer, "viewer") || rd_proc_open(&e, &editor, "editor"))
        return e.failures;
    vidmm_adapter_set_tdr_timeout(a, 100000000ull);
    printf("\n== hangs and resets (TDR timeout shortened to 100 ms for the demo; default 2 s) ==\n");

    uint64_t vac, vaw, vvc, vvr, vvd;
    vidmm_handle acmd = rd_alloc(&e, &app, set, 65536, 0, &vac), aword = rd_alloc(&e, &app, set, 65536, 0, &vaw);
    vidmm_handle vcmd = rd_alloc(&e, &viewer, set, 65536, 0, &vvc), vres = rd_alloc(&e, &viewer, set, 65536, 0, &vvr);
    vidmm_handle vdata = rd_alloc(&e, &viewer, set, RD_SZ, 71, &vvd);
    vidmm_handle clean = rd_alloc(&e, &editor, set, RD_SZ, 73, NULL), dirty = rd_alloc(&e, &editor, set, RD_SZ, 0, NULL);
    vidmm_handle la[] = { acmd, aword }, lv[] = { vcmd, vres, vdata }, le[] = { clean, dirty };
    vidmm_status st;
    if ((st = rd_resident(&e, &app, la, 2)) < 0 || (st = rd_resident(&e, &viewer, lv, 3)) < 0 ||
        (st = rd_resident(&e, &editor, le, 2)) < 0) {
        rd_fail(&e, "make-resident", st);
        goto out;
    }
    /* The editor writes one texture with the CPU while it is resident:
     * vidmm has no current system copy of it any more. */
    {
        void *cpu = NULL;
        if (vidmm_allocation_lock(a, dirty, &cpu) >= 0) {
            memset(cpu, 0x5A, RD_SZ);
            vidmm_allocation_unlock(a, dirty);
        }
    }

    /* 1. Engine reset. */
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    softgpu_cmd_wait(&cb, vaw, 1);   /* nobody ever writes that word */
    uint64_t fa = 0, fv = 0;
    if ((st = rd_submit(&e, &app, acmd, vac, &cb, &fa)) < 0) {
        rd_fail(&e, "app submit", st);
        goto out;
    }
    cb.size = 0;
    softgpu_cmd_checksum(&cb, vvd, RD_SZ, vvr);
    if ((st = rd_submit(&e, &viewer, vcmd, vvc, &cb, &fv)) < 0) {
        rd_fail(&e, "viewer submit", st);
        goto out;
    }
    uint64_t t0 = rd_now();
    st = vidmm_context_wait(a, viewer.ctx, fv, UINT64_MAX);
    struct vidmm_tdr_stats ts;
    vidmm_adapter_get_tdr_stats(a, &ts);
    printf("  app's buffer waits forever on graphics; viewer's buffer is queued behind it\n");
    printf("  viewer's wait returned %s after %.0f ms: %llu hang found, %llu engine reset, %llu adapter resets\n",
           vidmm_status_str(st), rd_ms(t0), (unsigned long long)ts.hangs, (unsigned long long)ts.engine_resets,
           (unsigned long long)ts.adapter_resets);
    int ok = st == VIDMM_OK && rd_read64(&e, vres, 0) == rd_sum(RD_SZ, 71);
    printf("  viewer's GPU checksum after the engine reset: %s\n", ok ? "matches" : "WRONG");
    e.failures += !ok || ts.engine_resets != 1;
    struct rd_proc *all[] = { &app, &viewer, &editor };
    rd_devices(&e, all, 3);

    /* 2. Adapter reset: the paging engine hangs on the next buffer. */
    vidmm_handle late = rd_alloc(&e, &editor, set, RD_SZ, 77, NULL);
    softgpu_inject_paging_hang(s->gpu, 0);
    t0 = rd_now();
    st = rd_resident(&e, &editor, &late, 1);
    vidmm_adapter_get_tdr_stats(a, &ts);
    printf("  the paging engine hangs while restoring an editor texture: make-resident %s after %.0f ms, "
           "%llu adapter reset\n",
           vidmm_status_str(st), rd_ms(t0), (unsigned long long)ts.adapter_resets);
    printf("  video memory content after the reset: %llu allocations restored from their system copy, %llu lost "
           "(zero-filled, reported)\n",
           (unsigned long long)ts.allocations_restored, (unsigned long long)ts.allocations_lost);
    struct vidmm_allocation_state as;
    vidmm_allocation_query(a, clean, &as);
    int clean_ok = as.content_lost == 0 && rd_read64(&e, clean, 8) != 0;
    vidmm_allocation_query(a, dirty, &as);
    int dirty_ok = as.content_lost == 1 && rd_read64(&e, dirty, 8) == 0;
    printf("    editor's clean texture: %s; editor's CPU-written texture: %s\n",
           clean_ok ? "restored" : "WRONG", dirty_ok ? "lost, reads zero" : "WRONG");
    rd_devices(&e, all, 3);
    printf("    (the editor owned the texture the hung paging buffer was restoring: WDDM puts such a device in "
           "error;\n     the viewer's texture was on its GPU work's residency list, so no system copy could be "
           "trusted: lost too)\n");
    e.failures += !clean_ok || !dirty_ok || ts.adapter_resets != 1;
    vidmm_allocation_query(a, vdata, &as);
    if (as.content_lost) {
        /* What an application does with a lost allocation: upload it again. */
        void *cpu0 = NULL;
        if (vidmm_allocation_lock(a, vdata, &cpu0) >= 0) {
            uint64_t sd = 71, *w = cpu0;
            for (uint64_t i = 0; i < RD_SZ / 8; i++)
                w[i] = splitmix64_next(&sd);
            vidmm_allocation_unlock(a, vdata);
        }
        printf("  viewer uploads its lost texture again\n");
    }
    /* The viewer goes on: its page tables were rebuilt. */
    cb.size = 0;
    softgpu_cmd_write64(&cb, vvr + 8, 42);
    if ((st = rd_submit(&e, &viewer, vcmd, vvc, &cb, &fv)) >= 0)
        st = vidmm_context_wait(a, viewer.ctx, fv, UINT64_MAX);
    ok = st == VIDMM_OK && rd_read64(&e, vres, 8) == 42;
    printf("  viewer's next GPU work through the rebuilt page tables: %s\n", ok ? "ok" : "FAILED");
    e.failures += !ok;

    /* 3. Standby and resume. */
    rd_standby(&e, &viewer, set, &cb, vcmd, vvc, vvd, vvr, vres);
    printf("  recovery integrity: %d failures; adapter check: %s\n", e.failures,
           vidmm_adapter_check(a, NULL, 0) ? "FAILED" : "clean");
out:
    vidmm_process_destroy(a, app.proc);
    vidmm_process_destroy(a, viewer.proc);
    vidmm_process_destroy(a, editor.proc);
    vidmm_adapter_set_tdr_timeout(a, VIDMM_TDR_DEFAULT_TIMEOUT_NS);
    return e.failures;
}
