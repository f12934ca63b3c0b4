/*
 * api_stream.c - libFuzzer harness: the input is a stream of public API
 * calls on one adapter opened on softgpu (synchronous mode, small
 * segments).
 *
 * Encoding (docs/FUZZING.md): byte 0 picks the preset (dgpu, igpu,
 * wddm1), byte 1 the softgpu options (paging ops advertised, MMU levels,
 * paging-buffer size), byte 2 and a 16-bit count an optional one-shot
 * host-allocation failure; then each call is one opcode byte followed by
 * its operands.  Handles are drawn from a table of the handles created so
 * far, or corrupted on purpose (stale, of another type, random bits, 0),
 * so the typed-handle validation of every entry is exercised.
 *
 * After every call: the status is a known vidmm_status,
 * vidmm_adapter_check() and softgpu_check() find nothing.  At the end
 * everything is destroyed and the counting host allocator must hold 0
 * live bytes.  A violation aborts (how a fuzzer reports).
 *
 * Command buffers are generated here from a fixed set of commands that
 * excludes WAIT: an unsatisfied WAIT stalls a node for good, and vidmm
 * waits for a context's work before destroying it.
 */
#include "fuzz.h"
#include "rules_check.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#define MIB (1ull << 20)
#define KIB (1ull << 10)

#define MAX_CALLS 256u
#define TAB 16u
#define DEAD 32u
#define VAS 16u

enum { H_ALLOC, H_PROC, H_DEV, H_CTX, H_QUEUE, H_TYPES };

struct fz {
    struct fz_in in;
    struct fz_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    vidmm_handle h[H_TYPES][TAB];
    uint32_t n[H_TYPES];
    vidmm_handle dead[DEAD];
    uint32_t ndead;
    uint64_t va[VAS], va_size[VAS];
    uint32_t nva;
    uint64_t last_fence;
    uint32_t trim_calls;
    int ext;                    /* revision 2 stream: the recovery, power and private-allocation opcodes */
    int async;                  /* softgpu's engine threads run the work */
    int tearing_down;           /* trim callbacks leave the tables alone */
    uint8_t trim_mode;          /* what a trim callback does (opcode 53) */
    uint8_t phys_buf[512];      /* physical command buffer: valid until its fence (synchronous: the call) */
    char report[1024];
    struct rc_fp fp[2];         /* before / after a make-resident (the failed-call rule) */
    uint32_t rule_violations;   /* counted instead of fatal when FUZZ_RULES_KNOWN is set */
};

/* The WDDM rules (support/rules_check.h) after every call.  A violation
 * aborts, unless FUZZ_RULES_KNOWN is set: tests/fuzz_replay.sh sets it
 * while tests/known_defects lists fuzz.api_stream.rules, and the
 * violations are then printed and counted. */
static void rules_objects(struct fz *f, struct rc_objects *o)
{
    memset(o, 0, sizeof(*o));
    o->proc = f->h[H_PROC], o->nproc = f->n[H_PROC];
    o->dev = f->h[H_DEV], o->ndev = f->n[H_DEV];
    o->ctx = f->h[H_CTX], o->nctx = f->n[H_CTX];
    o->queue = f->h[H_QUEUE], o->nqueue = f->n[H_QUEUE];
    o->alloc = f->h[H_ALLOC], o->nalloc = f->n[H_ALLOC];
}

static void rules_violated(struct fz *f, const char *what, int e)
{
    static int known = -1;
    if (known < 0)
        known = getenv("FUZZ_RULES_KNOWN") && *getenv("FUZZ_RULES_KNOWN");
    if (known) {
        if (!f->rule_violations++)
            fprintf(stderr, "fuzz: known defect: %s: %d rule violations\n%s", what, e, f->report);
        return;
    }
    FUZZ_REQUIRE(e == 0, "%s: %d rule violations\n%s", what, e, f->report);
}

static const char *const presets[] = { "dgpu", "igpu", "wddm1" };

/* why: the thread's last error right after the call that returned st. */
static void st_ok_why(struct fz *f, vidmm_status st, const char *what, const char *why)
{
    FZ_STEP(st, what, 36);
    /* Every failing call leaves a reason naming its entry (vidmm/status.h). */
    FUZZ_REQUIRE(st >= 0 || (why && strncmp(why, "vidmm_", 6) == 0), "%s (%s): no last-error text ('%s')", what,
                 vidmm_status_str(st), why ? why : "(null)");
    int e = vidmm_adapter_check(f->a, f->report, sizeof f->report);
    FUZZ_REQUIRE(e == 0, "%s (%s): adapter check: %d violations\n%s", what, vidmm_status_str(st), e, f->report);
    int s = softgpu_check(f->sg);
    FUZZ_REQUIRE(s == 0, "%s: softgpu check: %d violations", what, s);
    struct rc_objects o;
    rules_objects(f, &o);
    e = rc_check_rules(f->a, f->sg, &o, f->report, sizeof f->report);
    if (e)
        rules_violated(f, what, e);
}

static void st_ok(struct fz *f, vidmm_status st, const char *what)
{
    st_ok_why(f, st, what, vidmm_last_error());
}

static void add(struct fz *f, int type, vidmm_handle h)
{
    if (h == 0)
        return;
    if (f->n[type] < TAB) {
        f->h[type][f->n[type]++] = h;
    } else {
        /* Table full: forget the oldest slot's handle (it stays alive; the
         * teardown's adapter close reclaims it). */
        f->h[type][h % TAB] = h;
    }
}

static void kill(struct fz *f, int type, vidmm_handle h)
{
    for (uint32_t i = 0; i < f->n[type]; i++) {
        if (f->h[type][i] == h) {
            f->h[type][i] = f->h[type][--f->n[type]];
            break;
        }
    }
    f->dead[f->ndead++ % DEAD] = h;
}

/* A handle for an entry expecting `type`: mostly a live one of that type,
 * sometimes a corrupted one. */
static vidmm_handle pick(struct fz *f, int type)
{
    uint8_t b = fz_u8(&f->in);
    if (b < 208) {
        if (f->n[type] == 0)
            return 0;
        return f->h[type][b % f->n[type]];
    }
    switch (b & 7) {
    case 0:
        return 0;
    case 1:
        return f->ndead ? f->dead[fz_u8(&f->in) % (f->ndead < DEAD ? f->ndead : DEAD)] : 1;
    case 2: {
        int other = (type + 1 + fz_u8(&f->in) % (H_TYPES - 1)) % H_TYPES;
        return f->n[other] ? f->h[other][fz_u8(&f->in) % f->n[other]] : 0;
    }
    case 3:
        return fz_u64(&f->in);
    case 4: /* a live handle with one bit flipped: another generation, salt, type or slot */
        if (f->n[type])
            return f->h[type][0] ^ (1ull << (fz_u8(&f->in) & 63));
        return 0;
    case 5: /* right slot and salt, generation moved on */
        if (f->n[type])
            return f->h[type][0] + (1ull << 24);
        return 0;
    default:
        return f->n[type] ? f->h[type][f->n[type] - 1] : 0;
    }
}

static uint64_t pick_va(struct fz *f)
{
    uint8_t b = fz_u8(&f->in);
    if (f->nva && b < 224)
        return f->va[b % f->nva] + (uint64_t)(fz_u8(&f->in) & 15) * 4096u;
    return fz_u64(&f->in);
}

static uint64_t pick_size(struct fz *f)
{
    uint8_t b = fz_u8(&f->in);
    switch (b >> 6) {
    case 0: return (uint64_t)(b & 63) * 4096u;
    case 1: return (uint64_t)(b & 63) * 64u * KIB;
    case 2: return (uint64_t)((b & 63) + 1) * 4096u + (fz_u8(&f->in) & 1 ? 1 : 0);
    default: return fz_u64(&f->in);
    }
}

static void note_va(struct fz *f, uint64_t va, uint64_t size)
{
    if (va == 0)
        return;
    f->va[f->nva % VAS] = va;
    f->va_size[f->nva % VAS] = size;
    if (f->nva < VAS)
        f->nva++;
}

/* CPU waits: synchronous softgpu has finished every buffer when the call
 * returns (0 is enough); with engine threads, hangs or TDR the wait must
 * last, bounded all the same (a wait that never ends is a finding). */
static uint64_t wait_ns(const struct fz *f)
{
    return f->ext ? 5000000000ull : 0;
}

static void trim_cb(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct fz *f = context;
    (void)flags;
    (void)bytes_to_trim;
    f->trim_calls++;
    if (f->trim_calls >= 64 || f->tearing_down)
        return;
    vidmm_status st = VIDMM_OK;
    vidmm_handle h;
    /* Callbacks may call back in (residency.h).  Mode 0 is what an
     * application does: evict something of its own (it may well not be
     * on the list: the status is checked, not required).  The others
     * (revision 2) are hostile: destroy another device, an allocation,
     * or the very device being notified. */
    switch (f->ext ? f->trim_mode % 4 : 0) {
    case 0:
        if (!f->n[H_ALLOC])
            return;
        h = f->h[H_ALLOC][f->trim_calls % f->n[H_ALLOC]];
        st = vidmm_evict(f->a, device, &(struct vidmm_evict_args){ .allocations = &h, .count = 1 });
        break;
    case 1:
        for (uint32_t i = 0; i < f->n[H_DEV]; i++) {
            if (f->h[H_DEV][i] != device) {
                h = f->h[H_DEV][i];
                st = vidmm_device_destroy(f->a, h);
                if (st == VIDMM_OK)
                    kill(f, H_DEV, h);
                break;
            }
        }
        break;
    case 2:
        if (!f->n[H_ALLOC])
            return;
        h = f->h[H_ALLOC][f->trim_calls % f->n[H_ALLOC]];
        st = vidmm_allocation_destroy(f->a, h);
        if (st == VIDMM_OK)
            kill(f, H_ALLOC, h);
        break;
    default:
        st = vidmm_device_destroy(f->a, device);
        if (st == VIDMM_OK)
            kill(f, H_DEV, device);
        break;
    }
    FUZZ_REQUIRE(st >= VIDMM_E_NOT_ACCESSED_PHYSICALLY && st <= VIDMM_PENDING, "trim callback: %d", (int)st);
}

static void alloc_desc(struct fz *f, struct softgpu_alloc_desc *d)
{
    memset(d, 0, sizeof *d);
    uint8_t k = fz_u8(&f->in);
    d->kind = (enum softgpu_alloc_kind)(k % 7);     /* 0 is invalid on purpose */
    d->cpu_visible = (k >> 3) & 1;
    d->size = pick_size(f);
    if (k & 0x80)
        d->alignment = 1ull << (fz_u8(&f->in) & 31);
    if (d->kind == SOFTGPU_ALLOC_EXPLICIT) {
        d->info.size = d->size;
        d->info.alignment = d->alignment;
        d->info.supported_write_segment_set = fz_u8(&f->in);
        d->info.supported_read_segment_set = d->info.supported_write_segment_set;
        d->info.eviction_segment_set = fz_u8(&f->in) & 0x1f;
        d->info.preferred_segment = fz_u32(&f->in) & 0x3fffffffu;
        uint32_t fl = 0, fb = fz_u8(&f->in);
        if (fb & 1) fl |= VIDMM_ALLOC_CPU_VISIBLE;
        if (fb & 2) fl |= VIDMM_ALLOC_ACCESSED_PHYSICALLY;
        if (fb & 4) fl |= VIDMM_ALLOC_PRIMARY;
        if (fb & 8) fl |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
        if (fb & 16) fl |= VIDMM_ALLOC_PERMANENT_SYS_MEM;
        if (fb & 32) fl |= VIDMM_ALLOC_CACHED;
        if (fb & 64) fl |= VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION;
        if (fb & 128) fl |= fz_u32(&f->in);
        d->info.flags = fl;
        d->info.priority = fz_u8(&f->in) & 1 ? fz_u32(&f->in) : 0;
    }
}

static uint64_t cmd_addr(struct fz *f, int physical, vidmm_handle *alloc_out)
{
    if (!physical)
    {
        uint64_t va = pick_va(f);
        return va + (fz_u8(&f->in) & 0xf8u);
    }
    uint8_t b = fz_u8(&f->in);
    if (alloc_out)
        *alloc_out = 0;
    return SOFTGPU_PADDR(b & 7, (uint64_t)fz_u16(&f->in) * 8u);
}

/* Append 1..6 commands.  No WAIT in a revision-1 stream (see the
 * overview); revision 2 sets a TDR timeout of milliseconds, so a WAIT
 * nobody satisfies is a context hang that vidmm must detect and reset. */
static void gen_cmds(struct fz *f, struct softgpu_cmdbuf *cb, int physical)
{
    uint32_t n = 1 + fz_u8(&f->in) % 6;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t op = fz_u8(&f->in) % (f->ext ? 9 : 8);
        uint64_t sz = (uint64_t)(fz_u8(&f->in) + 1) * 64u;
        uint64_t a0 = cmd_addr(f, physical, NULL), a1, a2;
        switch (op) {
        case 0: softgpu_cmd_nop(cb); break;
        case 1: softgpu_cmd_write32(cb, a0, fz_u32(&f->in)); break;
        case 2: softgpu_cmd_write64(cb, a0, fz_u64(&f->in)); break;
        case 3: a1 = cmd_addr(f, physical, NULL); softgpu_cmd_copy(cb, a0, a1, sz); break;
        case 4: softgpu_cmd_fill(cb, a0, sz, fz_u32(&f->in)); break;
        case 5: a1 = cmd_addr(f, physical, NULL); softgpu_cmd_checksum(cb, a0 & ~7ull, sz, a1); break;
        case 6:
            a1 = cmd_addr(f, physical, NULL);
            a2 = cmd_addr(f, physical, NULL);
            softgpu_cmd_compare(cb, a0, a1, sz, a2);
            break;
        case 7: softgpu_cmd_signal(cb, a0, fz_u64(&f->in)); break;
        default: softgpu_cmd_wait(cb, a0 & ~7ull, fz_u64(&f->in)); break;
        }
    }
}

static void op_submit_virtual(struct fz *f)
{
    /* The buffer goes into an allocation through a CPU lock, then runs
     * from a VA that, if the fuzzer chose well, maps that allocation. */
    vidmm_handle al = pick(f, H_ALLOC);
    uint8_t buf[256];
    struct softgpu_cmdbuf cb = { buf, 0, sizeof buf };
    gen_cmds(f, &cb, 0);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(f->a, al, &p);
    st_ok(f, st, "lock (cmdbuf)");
    if (st == VIDMM_OK) {
        struct vidmm_allocation_state s;
        if (vidmm_allocation_query(f->a, al, &s) == VIDMM_OK && s.requested_size >= cb.size)
            memcpy(p, buf, cb.size);
        st_ok(f, vidmm_allocation_unlock(f->a, al), "unlock (cmdbuf)");
    }
    uint64_t fence = 0;
    uint32_t size = fz_u8(&f->in) & 1 ? cb.size : fz_u32(&f->in);
    vidmm_handle ctx = pick(f, H_CTX);
    uint64_t va = pick_va(f);
    int no_fence = fz_u8(&f->in) == 0xff;
    st = vidmm_submit_virtual(f->a, ctx, va, size, no_fence ? NULL : &fence);
    st_ok(f, st, "submit_virtual");
    if (st >= 0)
        f->last_fence = fence;
}

static void op_submit_physical(struct fz *f)
{
    struct softgpu_cmdbuf cb = { f->phys_buf, 0, sizeof f->phys_buf };
    gen_cmds(f, &cb, 1);
    struct vidmm_submit_allocation al[3];
    struct vidmm_patch_location pl[4];
    memset(al, 0, sizeof al);
    memset(pl, 0, sizeof pl);
    uint32_t nal = fz_u8(&f->in) % 4, npl = fz_u8(&f->in) % 5;
    for (uint32_t i = 0; i < nal; i++) {
        al[i].allocation = pick(f, H_ALLOC);
        al[i].flags = fz_u8(&f->in) & 3;
    }
    for (uint32_t i = 0; i < npl; i++) {
        uint8_t b = fz_u8(&f->in);
        pl[i].allocation_index = b & 0x80 ? fz_u32(&f->in) : (uint32_t)(b & 3);
        pl[i].allocation_offset = b & 0x40 ? fz_u32(&f->in) : (uint32_t)fz_u8(&f->in) * 8u;
        pl[i].patch_offset = b & 0x20 ? fz_u32(&f->in) : (uint32_t)(fz_u8(&f->in) % 12) * 8u + 8u;
        pl[i].driver_id = b & 0x10;
    }
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof pa);
    pa.buffer = f->phys_buf;
    pa.size = fz_u8(&f->in) & 1 ? cb.size : fz_u16(&f->in);
    if (pa.size > sizeof f->phys_buf)
        pa.size = cb.size;
    pa.allocations = al;
    pa.allocation_count = nal;
    pa.patches = pl;
    pa.patch_count = npl;
    pa.flags = fz_u8(&f->in) & 3;
    vidmm_handle ctx = pick(f, H_CTX);
    vidmm_status st = vidmm_submit_physical(f->a, ctx, &pa);
    st_ok(f, st, "submit_physical");
    if (st >= 0) {
        f->last_fence = pa.fence;
        /* The buffer stays untouched until its fence passed (submit.h):
         * with engine threads, wait before the next submission reuses it. */
        if (f->async)
            st_ok(f, vidmm_context_wait(f->a, ctx, pa.fence, wait_ns(f)), "context_wait (physical buffer)");
    }
}

static void op_make_resident(struct fz *f)
{
    vidmm_handle list[6];
    uint32_t n = fz_u8(&f->in) % 7;
    for (uint32_t i = 0; i < n; i++)
        list[i] = pick(f, H_ALLOC);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = pick(f, H_QUEUE);
    mr.allocations = n || fz_u8(&f->in) & 1 ? list : NULL;
    mr.count = n;
    mr.flags = fz_u8(&f->in) & 7;
    struct rc_objects o;
    rules_objects(f, &o);
    if (f->fp[0].cap)
        rc_fp_take(&f->fp[0], f->a, &o);
    vidmm_status st = vidmm_make_resident(f->a, pick(f, H_DEV), &mr);
    char why[512];
    snprintf(why, sizeof why, "%s", vidmm_last_error());   /* the footprint below makes calls of its own */
    if (f->fp[0].cap && st < 0) {
        rc_fp_take(&f->fp[1], f->a, &o);
        int e = rc_check_failed_make_resident(&f->fp[0], &f->fp[1], st, f->report, sizeof f->report);
        if (e)
            rules_violated(f, "make_resident", e);
    }
    st_ok_why(f, st, "make_resident", why);
    if (st == VIDMM_PENDING) {
        /* Synchronous softgpu: the paging is done already - unless a
         * revision-2 stream hung the paging engine (the wait then finds
         * the hang and resets) or runs the engine threads. */
        st = vidmm_paging_queue_wait(f->a, mr.paging_queue, mr.paging_fence_value, wait_ns(f));
        st_ok(f, st, "paging_queue_wait after make_resident");
        FUZZ_REQUIRE(f->ext || st == VIDMM_OK, "pending make-resident not done on a synchronous device: %s",
                     vidmm_status_str(st));
    }
}

static void op_gpuva_update(struct fz *f)
{
    struct vidmm_gpuva_update_op ops[4];
    memset(ops, 0, sizeof ops);
    uint32_t n = fz_u8(&f->in) % 5;
    for (uint32_t i = 0; i < n; i++) {
        ops[i].type = fz_u8(&f->in) % 4;
        ops[i].protection = fz_u8(&f->in) & 3;
        ops[i].va = pick_va(f);
        ops[i].size = pick_size(f);
        ops[i].allocation = pick(f, H_ALLOC);
        ops[i].offset = (uint64_t)(fz_u8(&f->in) & 15) * 4096u;
        ops[i].unmap_mode = fz_u8(&f->in) % 3;
        ops[i].source = pick_va(f);
    }
    st_ok(f, vidmm_gpuva_update(f->a, pick(f, H_PROC), n ? ops : NULL, n), "gpuva_update");
}

static const struct vidmm_eviction_policy *pick_policy(struct fz *f)
{
    switch (fz_u8(&f->in) % 4) {
    case 0: return &vidmm_policy_lru;
    case 1: return &vidmm_policy_adaptive;
    case 2: return &vidmm_policy_belady;
    default: return NULL;
    }
}

static void do_process_create(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    st = vidmm_process_create(f->a, &h);
    st_ok(f, st, "process_create");
    if (st == VIDMM_OK)
        add(f, H_PROC, h);
}

/* Destroy a picked handle of one type; forget it when the call took it. */
static void destroy_one(struct fz *f, int type, vidmm_status (*destroy)(struct vidmm_adapter *, vidmm_handle),
                        const char *name)
{
    vidmm_handle h = pick(f, type);
    vidmm_status st = destroy(f->a, h);
    st_ok(f, st, name);
    if (st == VIDMM_OK)
        kill(f, type, h);
}

static void do_process_destroy(struct fz *f) { destroy_one(f, H_PROC, vidmm_process_destroy, "process_destroy"); }

static void do_device_create(struct fz *f)
{
    vidmm_status st;
    vidmm_handle d = 0;
    st = vidmm_device_create(f->a, pick(f, H_PROC), &d);
    st_ok(f, st, "device_create");
    if (st == VIDMM_OK)
        add(f, H_DEV, d);
}

static void do_device_destroy(struct fz *f) { destroy_one(f, H_DEV, vidmm_device_destroy, "device_destroy"); }

static void do_context_create(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    struct vidmm_context_desc cd = { 0, 0, 0, 0 };
    cd.node = fz_u8(&f->in) % 4;
    cd.mode = fz_u8(&f->in) % 3;
    if (fz_u8(&f->in) == 0xff)
        cd.flags = 1;
    st = vidmm_context_create(f->a, pick(f, H_DEV), &cd, &h);
    st_ok(f, st, "context_create");
    if (st == VIDMM_OK)
        add(f, H_CTX, h);
}

static void do_context_destroy(struct fz *f) { destroy_one(f, H_CTX, vidmm_context_destroy, "context_destroy"); }

static void do_queue_create(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    h = pick(f, H_DEV);
    st = vidmm_paging_queue_create(f->a, h, (int)(fz_u8(&f->in) % 5) - 2, &h);
    st_ok(f, st, "paging_queue_create");
    if (st == VIDMM_OK)
        add(f, H_QUEUE, h);
}

static void do_queue_destroy(struct fz *f) { destroy_one(f, H_QUEUE, vidmm_paging_queue_destroy, "paging_queue_destroy"); }

/* allocation_create and allocation_create2 (which adds create flags). */
static void allocation_create(struct fz *f, int create2)
{
    vidmm_status st;
    vidmm_handle h = 0;
    struct softgpu_alloc_desc d;
    alloc_desc(f, &d);
    size_t dsz = fz_u8(&f->in) == 0xfe ? sizeof d - 8 : sizeof d;
    if (!create2)
        st = vidmm_allocation_create(f->a, &d, dsz, &h);
    else
        st = vidmm_allocation_create2(f->a, &d, dsz, fz_u8(&f->in) % 3, &h);
    st_ok(f, st, "allocation_create");
    if (st == VIDMM_OK)
        add(f, H_ALLOC, h);
}

static void do_allocation_create(struct fz *f)
{
    allocation_create(f, 0);
}

static void do_allocation_create2(struct fz *f)
{
    allocation_create(f, 1);
}

static void do_allocation_destroy(struct fz *f) { destroy_one(f, H_ALLOC, vidmm_allocation_destroy, "allocation_destroy"); }

static void do_lock(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    void *p = NULL;
    h = pick(f, H_ALLOC);
    st = vidmm_allocation_lock(f->a, h, &p);
    st_ok(f, st, "lock");
    if (st == VIDMM_OK) {
        struct vidmm_allocation_state s;
        FUZZ_REQUIRE(p != NULL, "lock OK without a pointer");
        st_ok(f, vidmm_allocation_query(f->a, h, &s), "query after lock");
        /* Touch the first and last byte the driver asked for (ASan
         * sees any mapping that is too short). */
        ((volatile uint8_t *)p)[0] = 0x5a;
        ((volatile uint8_t *)p)[s.requested_size - 1] = 0xa5;
        if (fz_u8(&f->in) & 1)
            st_ok(f, vidmm_allocation_unlock(f->a, h), "unlock");
    }
}

static void do_unlock(struct fz *f)
{
    st_ok(f, vidmm_allocation_unlock(f->a, pick(f, H_ALLOC)), "unlock");
}

static void do_move(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_ALLOC);
    st_ok(f, vidmm_allocation_move(f->a, h, fz_u8(&f->in) % 6), "move");
}

static void do_move_discard(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_ALLOC);
    st_ok(f, vidmm_allocation_move_discard(f->a, h, fz_u8(&f->in) % 6), "move_discard");
}

static void do_flip(struct fz *f)
{
    vidmm_handle h = 0;
    uint32_t source = fz_u8(&f->in) % 10;
    h = fz_u8(&f->in) & 1 ? 0 : pick(f, H_ALLOC);
    st_ok(f, vidmm_adapter_flip(f->a, source, h), "flip");
}

static void do_gpuva_reserve(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    uint64_t v = 0;
    uint64_t base = fz_u8(&f->in) & 1 ? pick_va(f) & ~0xffffull : 0;
    uint64_t size = pick_size(f);
    h = pick(f, H_PROC);
    uint64_t lo = fz_u8(&f->in) & 1 ? pick_va(f) : 0;
    uint64_t hi = fz_u8(&f->in) & 1 ? pick_va(f) : 0;
    st = vidmm_gpuva_reserve(f->a, h, base, lo, hi, size, fz_u8(&f->in) % 3, &v);
    st_ok(f, st, "gpuva_reserve");
    if (st == VIDMM_OK)
        note_va(f, v, size);
}

static void do_gpuva_map(struct fz *f)
{
    vidmm_status st;
    uint64_t v = 0;
    uint64_t base = fz_u8(&f->in) & 1 ? pick_va(f) : 0;
    vidmm_handle proc = pick(f, H_PROC), al = pick(f, H_ALLOC);
    uint64_t off = (uint64_t)(fz_u8(&f->in) & 7) * 4096u, size = pick_size(f);
    if (fz_u8(&f->in) & 1) { /* the whole allocation, the common case */
        struct vidmm_allocation_state s;
        if (vidmm_allocation_query(f->a, al, &s) == VIDMM_OK) {
            off = 0;
            size = (s.requested_size + 4095u) & ~4095ull;
        }
    }
    uint32_t prot = fz_u8(&f->in) & 3;
    uint32_t mflags = fz_u8(&f->in);
    st = vidmm_gpuva_map(f->a, proc, base, 0, 0, al, off, size, prot, mflags, &v);
    st_ok(f, st, "gpuva_map");
    if (st == VIDMM_OK)
        note_va(f, v, size);
}

static void do_gpuva_unmap(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_PROC);
    uint64_t va = pick_va(f);
    st_ok(f, vidmm_gpuva_unmap(f->a, h, va, pick_size(f)), "gpuva_unmap");
}

static void do_gpuva_free(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_PROC);
    uint64_t va = pick_va(f);
    st_ok(f, vidmm_gpuva_free(f->a, h, va, pick_size(f)), "gpuva_free");
}

static void do_evict(struct fz *f)
{
    vidmm_handle h = 0;
    vidmm_handle list[6];
    uint32_t n = fz_u8(&f->in) % 7;
    for (uint32_t i = 0; i < n; i++)
        list[i] = pick(f, H_ALLOC);
    h = pick(f, H_DEV);
    uint32_t flags = fz_u8(&f->in) & 7;
    /* One byte used to choose whether bytes_to_trim was asked for (the
     * argument struct always carries it now): still read, so the corpora
     * keep their meaning. */
    (void)fz_u8(&f->in);
    struct vidmm_evict_args ev = { .allocations = list, .count = n, .flags = flags };
    st_ok(f, vidmm_evict(f->a, h, &ev), "evict");
}

static void do_offer(struct fz *f)
{
    vidmm_handle h = 0;
    vidmm_handle list[4];
    uint32_t n = fz_u8(&f->in) % 5;
    for (uint32_t i = 0; i < n; i++)
        list[i] = pick(f, H_ALLOC);
    h = pick(f, H_DEV);
    st_ok(f, vidmm_offer(f->a, h, list, n, fz_u8(&f->in) % 6), "offer");
}

static void do_reclaim(struct fz *f)
{
    vidmm_status st;
    uint64_t v = 0;
    vidmm_handle list[4];
    uint32_t res[4];
    uint32_t n = fz_u8(&f->in) % 5;
    for (uint32_t i = 0; i < n; i++)
        list[i] = pick(f, H_ALLOC);
    vidmm_handle q = pick(f, H_QUEUE);
    st = vidmm_reclaim(f->a, q, list, n, res, &v);
    st_ok(f, st, "reclaim");
    if (st == VIDMM_PENDING)
        st_ok(f, vidmm_paging_queue_wait(f->a, q, v, wait_ns(f)), "paging_queue_wait after reclaim");
}

static void do_query_video_memory_info(struct fz *f)
{
    vidmm_handle h = 0;
    struct vidmm_video_memory_info mi;
    h = pick(f, H_PROC);
    st_ok(f, vidmm_query_video_memory_info(f->a, h, (enum vidmm_segment_group)(fz_u8(&f->in) % 3), &mi),
          "query_video_memory_info");
}

/* change_video_memory_reservation and process_set_budget: same operands. */
static void group_bytes(struct fz *f, int budget)
{
    vidmm_handle h = pick(f, H_PROC);
    enum vidmm_segment_group g = (enum vidmm_segment_group)(fz_u8(&f->in) % 3);
    uint64_t bytes = pick_size(f);
    if (!budget)
        st_ok(f, vidmm_change_video_memory_reservation(f->a, h, g, bytes), "change_reservation");
    else
        st_ok(f, vidmm_process_set_budget(f->a, h, g, bytes), "set_budget");
}

static void do_change_reservation(struct fz *f)
{
    group_bytes(f, 0);
}

static void do_set_budget(struct fz *f)
{
    group_bytes(f, 1);
}

static void do_set_priority(struct fz *f)
{
    uint8_t b = fz_u8(&f->in);
    uint32_t prio = b & 1 ? fz_u32(&f->in) : (uint32_t)(b >> 1) << 25;
    st_ok(f, vidmm_allocation_set_priority(f->a, pick(f, H_ALLOC), prio), "set_priority");
}

static void do_set_next_use(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_ALLOC);
    st_ok(f, vidmm_allocation_set_next_use(f->a, h, vidmm_residency_clock(f->a) + fz_u8(&f->in)),
          "set_next_use");
}

static void do_set_eviction_policy(struct fz *f)
{
    st_ok(f, vidmm_adapter_set_eviction_policy(f->a, pick_policy(f)), "set_eviction_policy");
}

static void do_register_trim_notification(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_DEV);
    st_ok(f, vidmm_register_trim_notification(f->a, h, fz_u8(&f->in) & 1 ? trim_cb : NULL, f),
          "register_trim_notification");
}

static void do_context_wait(struct fz *f)
{
    uint8_t b = fz_u8(&f->in);
    uint64_t val = b & 1 ? f->last_fence : (uint64_t)(b >> 1);
    st_ok(f, vidmm_context_wait(f->a, pick(f, H_CTX), val, 0), "context_wait");
}

static void do_context_fence(struct fz *f)
{
    vidmm_status st;
    uint64_t sub = 0, done = 0;
    st = vidmm_context_fence(f->a, pick(f, H_CTX), &sub, &done);
    st_ok(f, st, "context_fence");
    FUZZ_REQUIRE(st < 0 || done <= sub, "context fence: completed %llu > submitted %llu",
                 (unsigned long long)done, (unsigned long long)sub);
}

static void do_paging_queue_fence_wait(struct fz *f)
{
    uint64_t v = 0;
    vidmm_handle q = pick(f, H_QUEUE);
    st_ok(f, vidmm_paging_queue_fence(f->a, q, &v), "paging_queue_fence");
    st_ok(f, vidmm_paging_queue_wait(f->a, q, fz_u8(&f->in), 0), "paging_queue_wait");
}

static void do_allocation_queries(struct fz *f)
{
    vidmm_handle h = 0;
    struct vidmm_allocation_state s;
    struct vidmm_residency_state r;
    struct vidmm_physical_range pr[4];
    uint32_t cnt = 0;
    h = pick(f, H_ALLOC);
    st_ok(f, vidmm_allocation_query(f->a, h, &s), "allocation_query");
    st_ok(f, vidmm_allocation_residency(f->a, h, &r), "allocation_residency");
    st_ok(f, vidmm_allocation_physical_ranges(f->a, h, pr, fz_u8(&f->in) % 5, &cnt), "physical_ranges");
}

static void do_process_queries(struct fz *f)
{
    vidmm_handle h = 0;
    uint64_t v = 0;
    struct vidmm_process_info pi;
    struct vidmm_physical_address root;
    struct vidmm_gpuva_range r[4];
    uint32_t cnt = 0;
    h = pick(f, H_PROC);
    st_ok(f, vidmm_process_query(f->a, h, &pi), "process_query");
    st_ok(f, vidmm_process_root_page_table(f->a, h, &root), "root_page_table");
    v = pick_va(f);
    st_ok(f, vidmm_gpuva_query(f->a, h, v, r, fz_u8(&f->in) % 5, &cnt), "gpuva_query");
}

static void do_device_context_queries(struct fz *f)
{
    struct vidmm_device_info di;
    struct vidmm_context_info ci;
    st_ok(f, vidmm_device_query(f->a, pick(f, H_DEV), &di), "device_query");
    st_ok(f, vidmm_context_query(f->a, pick(f, H_CTX), &ci), "context_query");
}

static void do_adapter_queries(struct fz *f)
{
    struct vidmm_adapter_info ai;
    struct vidmm_segment_info si;
    struct vidmm_gpummu_info gi;
    struct vidmm_paging_process_info pp;
    st_ok(f, vidmm_adapter_query_info(f->a, &ai), "adapter_query_info");
    st_ok(f, vidmm_segment_query(f->a, fz_u8(&f->in) % 8, &si), "segment_query");
    st_ok(f, vidmm_adapter_query_gpummu(f->a, &gi), "query_gpummu");
    st_ok(f, vidmm_adapter_query_paging_process(f->a, &pp), "query_paging_process");
}

static void do_stats(struct fz *f)
{
    struct vidmm_residency_stats rs;
    struct vidmm_submit_stats ss;
    st_ok(f, vidmm_residency_get_stats(f->a, &rs), "residency_stats");
    st_ok(f, vidmm_submit_get_stats(f->a, &ss), "submit_stats");
}

/* ---- revision 2: power, TDR, injected hangs and faults, private
 * allocations, hostile trim callbacks, bounded waits ---------------- */

static void do_set_power_state(struct fz *f)
{
    st_ok(f, vidmm_adapter_set_power_state(f->a, fz_u8(&f->in) % 4), "set_power_state");
}

static void do_power_tdr_stats(struct fz *f)
{
    vidmm_status st;
    uint32_t ps = 99;
    struct vidmm_power_stats pws;
    struct vidmm_tdr_stats ts;
    st = vidmm_adapter_get_power_state(f->a, &ps);
    st_ok(f, st, "get_power_state");
    FUZZ_REQUIRE(st == VIDMM_OK && ps <= VIDMM_POWER_HIBERNATE, "power state %u (%s)", ps, vidmm_status_str(st));
    st_ok(f, vidmm_adapter_get_power_stats(f->a, &pws), "get_power_stats");
    st_ok(f, vidmm_adapter_get_tdr_stats(f->a, &ts), "get_tdr_stats");
}

static void do_set_tdr_timeout(struct fz *f)
{
    vidmm_status st;
    static const uint64_t tdr[] = { 1000000, 2000000, 20000000, 999999 };
    uint8_t k = fz_u8(&f->in) % 4;
    st = vidmm_adapter_set_tdr_timeout(f->a, tdr[k]);
    st_ok(f, st, "set_tdr_timeout");
    FUZZ_REQUIRE(k == 3 ? st == VIDMM_E_INVALID_ARG : st == VIDMM_OK, "set_tdr_timeout %llu: %s",
                 (unsigned long long)tdr[k], vidmm_status_str(st));
}

static void do_detect_hangs(struct fz *f)
{
    vidmm_status st;
    int rec = -1;
    st = vidmm_adapter_detect_hangs(f->a, fz_u8(&f->in) & 1 ? &rec : NULL);
    st_ok(f, st, "detect_hangs");
}

static void do_inject_paging_hang(struct fz *f)
{
    softgpu_inject_paging_hang(f->sg, fz_u8(&f->in) % 4);
    st_ok(f, VIDMM_OK, "inject_paging_hang");
}

static void do_inject_insufficient_dma(struct fz *f)
{
    softgpu_inject_insufficient_dma(f->sg, fz_u8(&f->in) % 4);
    st_ok(f, VIDMM_OK, "inject_insufficient_dma");
}

static void do_device_allocation_create(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    struct softgpu_alloc_desc d;
    alloc_desc(f, &d);
    vidmm_handle dev = pick(f, H_DEV);
    st = vidmm_device_allocation_create(f->a, dev, &d, sizeof d, fz_u8(&f->in) % 3, &h);
    st_ok(f, st, "device_allocation_create");
    if (st == VIDMM_OK)
        add(f, H_ALLOC, h);
}

static void do_device_lock(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    void *p = NULL;
    vidmm_handle dev = pick(f, H_DEV);
    h = pick(f, H_ALLOC);
    st = vidmm_device_lock(f->a, dev, h, &p);
    st_ok(f, st, "device_lock");
    if (st == VIDMM_OK) {
        struct vidmm_allocation_state as;
        FUZZ_REQUIRE(p != NULL, "device_lock OK without a pointer");
        st_ok(f, vidmm_allocation_query(f->a, h, &as), "query after device_lock");
        ((volatile uint8_t *)p)[0] = 0x5a;
        ((volatile uint8_t *)p)[as.requested_size - 1] = 0xa5;
        if (fz_u8(&f->in) & 1)
            st_ok(f, vidmm_device_unlock(f->a, dev, h), "device_unlock");
    }
}

static void do_device_unlock(struct fz *f)
{
    vidmm_handle h = 0;
    h = pick(f, H_DEV);
    st_ok(f, vidmm_device_unlock(f->a, h, pick(f, H_ALLOC)), "device_unlock");
}

static void do_hostile_trim(struct fz *f)
{
    f->trim_mode = fz_u8(&f->in);
    st_ok(f, vidmm_register_trim_notification(f->a, pick(f, H_DEV), trim_cb, f), "register_trim (hostile)");
}

static void do_bounded_wait(struct fz *f)
{
    uint64_t v = 0;
    uint8_t b = fz_u8(&f->in);
    uint64_t val = b & 1 ? f->last_fence : (uint64_t)(b >> 1);
    if (b & 2) {
        st_ok(f, vidmm_context_wait(f->a, pick(f, H_CTX), val, wait_ns(f)), "context_wait (timeout)");
    } else {
        vidmm_handle q = pick(f, H_QUEUE);
        uint64_t ns = wait_ns(f);
        if (vidmm_paging_queue_fence(f->a, q, &v) == VIDMM_OK) {
            if (b & 4)
                val = v;
            /* Past the completed value (paging_queue_fence): most
             * likely never submitted, and nothing on this thread
             * submits while the wait lasts - do not sit out the
             * whole bound (a short wait, E_TIMEOUT is fine). */
            if (val > v)
                ns = 1000000;
        }
        st_ok(f, vidmm_paging_queue_wait(f->a, q, val, ns), "paging_queue_wait (timeout)");
    }
}

static void do_softgpu_accessors(struct fz *f)
{
    /* softgpu's accessors answer while an engine is hung. */
    struct softgpu_stats ss;
    struct softgpu_reset_stats rs;
    uint8_t byte[8];
    softgpu_get_stats(f->sg, &ss);
    softgpu_get_reset_stats(f->sg, &rs);
    uint32_t seg = 1 + fz_u8(&f->in) % 4;
    (void)softgpu_read_physical(f->sg, seg, (uint64_t)fz_u16(&f->in) * 4096u, byte, sizeof byte);
    st_ok(f, VIDMM_OK, "softgpu accessors");
}

/* A little scenario in one opcode: process, device, queue, a
 * created-evicted texture made resident and mapped.  Shortens the
 * fuzzer's way to the interesting states. */
static void do_scenario(struct fz *f)
{
    vidmm_status st;
    vidmm_handle h = 0;
    uint64_t v = 0;
    vidmm_handle p = 0, d = 0, q = 0, al = 0;
    if (vidmm_process_create(f->a, &p) != VIDMM_OK)
        return;
    add(f, H_PROC, p);
    st_ok(f, vidmm_device_create(f->a, p, &d), "device_create (scenario)");
    add(f, H_DEV, d);
    st_ok(f, vidmm_paging_queue_create(f->a, d, 0, &q), "queue_create (scenario)");
    add(f, H_QUEUE, q);
    struct vidmm_context_desc cd = { 0, 0, 0, 0 };
    cd.node = fz_u8(&f->in) % 3;
    cd.mode = fz_u8(&f->in) & 1;
    st = vidmm_context_create(f->a, d, &cd, &h);
    st_ok(f, st, "context_create (scenario)");
    if (st == VIDMM_OK)
        add(f, H_CTX, h);
    struct softgpu_alloc_desc ad;
    memset(&ad, 0, sizeof ad);
    ad.kind = (enum softgpu_alloc_kind)(1 + fz_u8(&f->in) % 5);
    ad.cpu_visible = 1;
    ad.size = (uint64_t)(1 + fz_u8(&f->in) % 16) * 64u * KIB;
    st = vidmm_allocation_create2(f->a, &ad, sizeof ad, 0, &al);
    st_ok(f, st, "allocation_create2 (scenario)");
    if (st != VIDMM_OK)
        return;
    add(f, H_ALLOC, al);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = &al;
    mr.count = 1;
    st_ok(f, vidmm_make_resident(f->a, d, &mr), "make_resident (scenario)");
    st = vidmm_gpuva_map(f->a, p, 0, 0, 0, al, 0, ad.size, 0, 0, &v);
    st_ok(f, st, "gpuva_map (scenario)");
    if (st == VIDMM_OK)
        note_va(f, v, ad.size);
}

/* Every opcode of the stream: its name (FUZZ_TRACE, docs), the stream
 * revision that has it and its handler, which reads its own operand bytes
 * (their count varies with the values read, so the table has none).
 * The opcode byte is taken modulo the number of opcodes of the stream's
 * revision (44 in revision 1, 56 in revision 2), so the stored corpora
 * keep their meaning only while the entries stay in this order: add new
 * ones at the end, under a new revision. */
static const struct fz_op {
    const char *name;           /* what the opcode calls (for reading a reproducer) */
    int revision;
    void (*fn)(struct fz *f);
} ops[] = {
    [0] = { "process_create", 1, do_process_create },
    [1] = { "process_destroy", 1, do_process_destroy },
    [2] = { "device_create", 1, do_device_create },
    [3] = { "device_destroy", 1, do_device_destroy },
    [4] = { "context_create", 1, do_context_create },
    [5] = { "context_destroy", 1, do_context_destroy },
    [6] = { "queue_create", 1, do_queue_create },
    [7] = { "queue_destroy", 1, do_queue_destroy },
    [8] = { "allocation_create", 1, do_allocation_create },
    [9] = { "allocation_create2", 1, do_allocation_create2 },
    [10] = { "allocation_destroy", 1, do_allocation_destroy },
    [11] = { "lock", 1, do_lock },
    [12] = { "unlock", 1, do_unlock },
    [13] = { "move", 1, do_move },
    [14] = { "move_discard", 1, do_move_discard },
    [15] = { "flip", 1, do_flip },
    [16] = { "gpuva_reserve", 1, do_gpuva_reserve },
    [17] = { "gpuva_map", 1, do_gpuva_map },
    [18] = { "gpuva_map", 1, do_gpuva_map },
    [19] = { "gpuva_unmap", 1, do_gpuva_unmap },
    [20] = { "gpuva_free", 1, do_gpuva_free },
    [21] = { "gpuva_update", 1, op_gpuva_update },
    [22] = { "make_resident", 1, op_make_resident },
    [23] = { "evict", 1, do_evict },
    [24] = { "offer", 1, do_offer },
    [25] = { "reclaim", 1, do_reclaim },
    [26] = { "query_video_memory_info", 1, do_query_video_memory_info },
    [27] = { "change_reservation", 1, do_change_reservation },
    [28] = { "set_budget", 1, do_set_budget },
    [29] = { "set_priority", 1, do_set_priority },
    [30] = { "set_next_use", 1, do_set_next_use },
    [31] = { "set_eviction_policy", 1, do_set_eviction_policy },
    [32] = { "register_trim_notification", 1, do_register_trim_notification },
    [33] = { "submit_virtual", 1, op_submit_virtual },
    [34] = { "submit_physical", 1, op_submit_physical },
    [35] = { "context_wait", 1, do_context_wait },
    [36] = { "context_fence", 1, do_context_fence },
    [37] = { "paging_queue_fence_wait", 1, do_paging_queue_fence_wait },
    [38] = { "allocation_queries", 1, do_allocation_queries },
    [39] = { "process_queries", 1, do_process_queries },
    [40] = { "device_context_queries", 1, do_device_context_queries },
    [41] = { "adapter_queries", 1, do_adapter_queries },
    [42] = { "stats", 1, do_stats },
    [43] = { "scenario", 1, do_scenario },
    [44] = { "set_power_state", 2, do_set_power_state },
    [45] = { "power_tdr_stats", 2, do_power_tdr_stats },
    [46] = { "set_tdr_timeout", 2, do_set_tdr_timeout },
    [47] = { "detect_hangs", 2, do_detect_hangs },
    [48] = { "inject_paging_hang", 2, do_inject_paging_hang },
    [49] = { "inject_insufficient_dma", 2, do_inject_insufficient_dma },
    [50] = { "device_allocation_create", 2, do_device_allocation_create },
    [51] = { "device_lock", 2, do_device_lock },
    [52] = { "device_unlock", 2, do_device_unlock },
    [53] = { "hostile_trim", 2, do_hostile_trim },
    [54] = { "bounded_wait", 2, do_bounded_wait },
    [55] = { "softgpu_accessors", 2, do_softgpu_accessors },
};
#define OPS (sizeof ops / sizeof ops[0])

/* How many opcodes a revision's stream has: the table's leading entries of
 * that revision or older (they are sorted by revision). */
static uint32_t ops_of_revision(int revision)
{
    uint32_t n = 0;
    while (n < OPS && ops[n].revision <= revision)
        n++;
    return n;
}

static void one_call(struct fz *f, uint8_t op)
{
    ops[op % ops_of_revision(f->ext ? 2 : 1)].fn(f);
}

static void teardown(struct fz *f)
{
    vidmm_status st;
    f->tearing_down = 1;
    /* Back to D0 (a no-op, VIDMM_E_STATE, when already there): destroying
     * works while down, but the teardown should also cover resume. */
    if (f->ext)
        st_ok(f, vidmm_adapter_set_power_state(f->a, VIDMM_POWER_D0), "set_power_state D0 (teardown)");
    /* Unlock what is still locked (locks nest), then destroy in an order
     * that mixes parents and children. */
    for (uint32_t i = 0; i < f->n[H_ALLOC]; i++)
        for (int k = 0; k < 300 && vidmm_allocation_unlock(f->a, f->h[H_ALLOC][i]) == VIDMM_OK; k++)
            ;
    for (uint32_t s = 0; s < VIDMM_MAX_VIDPN_SOURCES; s++)
        st_ok(f, vidmm_adapter_flip(f->a, s, 0), "flip (blank)");
    static const int order[] = { H_CTX, H_QUEUE, H_DEV, H_PROC, H_ALLOC };
    for (uint32_t t = 0; t < sizeof order / sizeof order[0]; t++) {
        int type = order[t];
        while (f->n[type]) {
            vidmm_handle h = f->h[type][f->n[type] - 1];
            switch (type) {
            case H_CTX: st = vidmm_context_destroy(f->a, h); break;
            case H_QUEUE: st = vidmm_paging_queue_destroy(f->a, h); break;
            case H_DEV: st = vidmm_device_destroy(f->a, h); break;
            case H_PROC: st = vidmm_process_destroy(f->a, h); break;
            default: st = vidmm_allocation_destroy(f->a, h); break;
            }
            st_ok(f, st, "destroy (teardown)");
            /* A child already gone with its parent is stale: INVALID_HANDLE. */
            FUZZ_REQUIRE(st == VIDMM_OK || st == VIDMM_E_INVALID_HANDLE, "teardown destroy of type %d: %s", type,
                         vidmm_status_str(st));
            f->n[type]--;
        }
    }
    vidmm_adapter_close(f->a);
    FUZZ_REQUIRE(f->fa.live_bytes == 0 && f->fa.live_blocks == 0, "leak: %lld bytes in %lld blocks",
                 (long long)f->fa.live_bytes, (long long)f->fa.live_blocks);
    FUZZ_REQUIRE(softgpu_check(f->sg) == 0, "softgpu check after close");
    softgpu_destroy(f->sg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fz fs;     /* large (the tables): not on the stack; one run at a time */
    struct fz *f = &fs;
    /* The fingerprints outlive the runs (allocated once, by the harness's
     * own malloc: not counted against vidmm). */
    struct rc_fp fp0 = fs.fp[0], fp1 = fs.fp[1];
    memset(f, 0, sizeof *f);
    f->fp[0] = fp0, f->fp[1] = fp1;
    if (!f->fp[0].cap && (rc_fp_init(&f->fp[0], 1u << 14) || rc_fp_init(&f->fp[1], 1u << 14)))
        FUZZ_REQUIRE(0, "no memory for the fingerprints");
    f->in.p = data;
    f->in.n = size;

    uint8_t preset = fz_u8(&f->in) % 3, opt = fz_u8(&f->in), failb = fz_u8(&f->in);
    uint16_t fail_after = fz_u16(&f->in);
    /* Revision byte: 0 = the revision-1 stream (44 opcodes, synchronous,
     * default TDR timeout); else revision 2: bit 0 asynchronous softgpu,
     * bits 1-2 the TDR timeout, 56 opcodes. */
    uint8_t rev = fz_u8(&f->in);
    f->ext = rev != 0;
    f->async = rev & 1;
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = presets[preset];
    cfg.synchronous = !f->async;
    switch (preset) {
    case 0: cfg.segment_size[1] = 4 * MIB; cfg.segment_size[2] = 8 * MIB; cfg.segment_size[3] = 16 * MIB; break;
    case 1: cfg.segment_size[1] = 16 * MIB; break;
    default:
        cfg.segment_size[1] = 2 * MIB;
        cfg.segment_size[2] = 4 * MIB;
        cfg.segment_size[3] = 4 * MIB;
        cfg.segment_size[4] = 8 * MIB;
        break;
    }
    if (preset != 1) {
        cfg.paging_ops = opt & 3;              /* 3 is refused by softgpu_create: fine, nothing to fuzz */
        cfg.mmu_levels = (opt >> 2) & 7;       /* 0 = default; 1 and 7 are refused */
    }
    cfg.paging_buffer_size = (opt & 0x80) ? 4096u * (1u + ((opt >> 5) & 3)) : 0;
    if (softgpu_create(&cfg, &f->sg) != VIDMM_OK)
        return 0;
    vidmm_status st = fz_open_on_softgpu(f->sg, &f->fa, &f->a);
    FUZZ_REQUIRE(st == VIDMM_OK, "adapter_open on softgpu %s: %s", cfg.preset, vidmm_status_str(st));
    if (f->ext) {
        /* Milliseconds, not the default 2 s: hangs are resolved within
         * the fuzzer's time per input. */
        static const uint64_t tdr[] = { 2000000, 1000000, 5000000, 20000000 };
        st_ok(f, vidmm_adapter_set_tdr_timeout(f->a, tdr[(rev >> 1) & 3]), "set_tdr_timeout (open)");
    }
    /* One host-allocation refusal somewhere in the stream. */
    if (failb & 1)
        f->fa.fail_at = f->fa.calls + 1 + fail_after;

    for (uint32_t calls = 0; calls < MAX_CALLS && !fz_done(&f->in); calls++)
        one_call(f, fz_u8(&f->in));
    f->fa.fail_at = 0;
    teardown(f);
    return 0;
}
