/*
 * trace_write.c - the writer of the recording layer (see trace.h):
 * wrappers around every vidmm call the tool makes and the trace line each
 * one produces, the objects the trace names, and the rules checker run
 * after each call.
 *
 * Line layout (docs/TRACE_FORMAT.md): "verb args = STATUS outputs".
 * Arguments name objects by trace-local ids; numbers are decimal bytes,
 * hex addresses and bit sets.  Outputs are only values that a replay in
 * synchronous mode reproduces exactly (GPU VAs under GpuMmu, fence values,
 * bytes to trim, reclaim results) - never a handle, a host address or a
 * time.  Each finished line also goes to the timeline (trace_timeline.c).
 */
#include "trace_int.h"
#include "harness/softgpu_cmds.h"
#include "harness/splitmix.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void pattern_fill(uint64_t *w, uint64_t size, uint64_t seed)
{
    uint64_t s = seed;
    for (uint64_t i = 0; i < size / 8; i++)
        w[i] = seed ? splitmix64_next(&s) : 0;
}

static int pattern_matches(const uint64_t *w, uint64_t size, uint64_t seed)
{
    uint64_t s = seed;
    for (uint64_t i = 0; i < size / 8; i++)
        if (w[i] != (seed ? splitmix64_next(&s) : 0))
            return 0;
    return 1;
}

/* Every recorded byte goes through here: the end record's checksum
 * covers exactly what was written. */
static void rec_put(struct tr *t, const char *s, size_t n)
{
    if (!t->rec || t->rec_ended)
        return;
    t->rec_hash = tr_fnv1a(t->rec_hash, s, n);
    if (fwrite(s, 1, n, t->rec) != n)
        t->rec_error = 1;
}

static void rec_printf(struct tr *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void rec_printf(struct tr *t, const char *fmt, ...)
{
    char b[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof b) {
        t->rec_error = 1;
        return;
    }
    rec_put(t, b, (size_t)n);
}

static void write_header(struct tr *t, const struct tr_header *h)
{
    rec_printf(t, "vidmm-trace %d\n", TR_FORMAT_VERSION);
    rec_printf(t, "scenario %s\n", h->scenario);
    rec_printf(t, "adapter %s\n", h->preset);
    if (h->driver[0]) {
        rec_printf(t, "driver %s\n", h->driver);
        if (h->driver_options[0])
            rec_printf(t, "driver-options %s\n", h->driver_options);
    }
    for (uint32_t id = 1; id <= SOFTGPU_MAX_SEGMENTS; id++)
        if (h->segment_size[id])
            rec_printf(t, "segment %u %" PRIu64 "\n", id, h->segment_size[id]);
    if (h->mmu_levels)
        rec_printf(t, "mmu-levels %u\n", h->mmu_levels);
    rec_printf(t, "system-memory %" PRIu64 "\n", h->system_memory);
    rec_printf(t, "synchronous %d\n", h->synchronous);
    rec_printf(t, "policy %s\n", h->policy);
    rec_printf(t, "seed %" PRIu64 "\n", h->seed);
    rec_printf(t, "begin\n");
}

int tr_end_record(struct tr *t)
{
    if (!t->rec)
        return 0;
    if (!t->rec_ended) {
        /* The checksum is of every byte before this line. */
        char b[96];
        int n = snprintf(b, sizeof b, "end calls=%" PRIu64 " checksum=0x%016" PRIx64 "\n", t->rec_calls,
                         t->rec_hash);
        if (fwrite(b, 1, (size_t)n, t->rec) != (size_t)n)
            t->rec_error = 1;
        t->rec_ended = 1;
    }
    if (fflush(t->rec))
        t->rec_error = 1;
    return t->rec_error;
}

/* ---- objects -------------------------------------------------------- */

struct tr_obj *tr_get(struct tr *t, enum tr_kind k, uint32_t id)
{
    if (id == 0 || id > t->nobj[k])
        return NULL;
    return &t->obj[k][id];
}

vidmm_handle tr_handle(struct tr *t, enum tr_kind k, uint32_t id)
{
    struct tr_obj *o = tr_get(t, k, id);
    return o ? o->h : VIDMM_HANDLE_NULL;
}

/* A new id of kind k (its object zeroed).  Returns 0 when the host is out
 * of memory. */
static uint32_t new_obj(struct tr *t, enum tr_kind k)
{
    if (t->nobj[k] + 2 > t->cap[k]) {
        uint32_t nc = t->cap[k] ? t->cap[k] * 2 : 64;
        struct tr_obj *n = realloc(t->obj[k], (size_t)nc * sizeof(*n));
        if (!n)
            return 0;
        t->obj[k] = n;
        t->cap[k] = nc;
    }
    uint32_t id = ++t->nobj[k];
    memset(&t->obj[k][id], 0, sizeof(struct tr_obj));
    return id;
}

uint64_t tr_addr_value(struct tr *t, struct tr_addr a)
{
    if (!a.v)
        return a.off;
    struct tr_obj *o = tr_get(t, TR_VA, a.v);
    return o ? o->va + a.off : a.off;
}

/* The process a device, queue or VA range belongs to (0 if unknown). */
static uint32_t process_of(struct tr *t, enum tr_kind k, uint32_t id)
{
    struct tr_obj *o = tr_get(t, k, id);
    if (!o)
        return 0;
    if (k == TR_QUEUE || k == TR_CTX)
        return process_of(t, TR_DEV, o->parent);
    if (k == TR_BUF)
        return 0;
    return o->parent;
}

struct tr_extent *tr_extents(struct tr *t, size_t *count)
{
    size_t n = 0, cap = 256;
    struct tr_extent *ex = malloc(cap * sizeof(*ex));
    for (uint32_t a = 1; ex && a <= t->nobj[TR_ALLOC]; a++) {
        const struct tr_obj *o = &t->obj[TR_ALLOC][a];
        if (!o->alive)
            continue;
        /* First the count, then the ranges. */
        uint32_t c = 0;
        struct vidmm_physical_range one;
        if (vidmm_allocation_physical_ranges(t->adapter, o->h, &one, 1, &c) < 0 || !c)
            continue;
        struct vidmm_physical_range *r = malloc((size_t)c * sizeof(*r));
        if (!r || vidmm_allocation_physical_ranges(t->adapter, o->h, r, c, &c) < 0) {
            free(r);
            continue;
        }
        for (uint32_t i = 0; i < c; i++) {
            if (n == cap) {
                struct tr_extent *nx = realloc(ex, cap * 2 * sizeof(*ex));
                if (!nx)
                    break;
                ex = nx;
                cap *= 2;
            }
            ex[n++] = (struct tr_extent){ r[i].segment_id, a, r[i].offset, r[i].size };
        }
        free(r);
    }
    *count = ex ? n : 0;
    return ex;
}

/* ---- line building -------------------------------------------------- */

static void line_add(struct tr *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append to the line, growing it as needed (a line has any length: a
 * make-resident list of 10,000 allocations is one line).  When the host
 * refuses memory the line is cut and t->line_oom set; line_end then
 * marks the recording failed rather than write a cut line. */
static void line_vadd(struct tr *t, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(t->line + t->line_len, t->line_cap - t->line_len, fmt, aq);
    va_end(aq);
    if (n < 0)
        return;
    if ((size_t)n >= t->line_cap - t->line_len) {
        size_t need = t->line_len + (size_t)n + 1, nc = t->line_cap * 2;
        while (nc < need)
            nc *= 2;
        char *nl = realloc(t->line, nc);
        if (!nl) {
            t->line_oom = 1;
            t->line_len = strlen(t->line);
            return;
        }
        t->line = nl;
        t->line_cap = nc;
        vsnprintf(t->line + t->line_len, t->line_cap - t->line_len, fmt, ap);
    }
    t->line_len += (size_t)n;
}

static void line_add(struct tr *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    line_vadd(t, fmt, ap);
    va_end(ap);
}

static void line_begin(struct tr *t, enum tr_verb v, uint32_t pid, uint32_t tid)
{
    t->verb = v;
    t->line_len = 0;
    t->line[0] = '\0';
    t->line_oom = 0;
    t->result_at = 0;
    t->track_pid = pid;
    t->track_tid = tid;
    line_add(t, "%s", tr_verb_names[v]);
}

static void line_id(struct tr *t, enum tr_kind k, uint32_t id)
{
    line_add(t, " %c%u", tr_kind_prefix[k], id);
}

static void line_list(struct tr *t, const uint32_t *list, uint32_t n)
{
    if (!n) {
        line_add(t, " -");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        line_add(t, "%sA%u", i ? "," : " ", list[i]);
}

static void line_addr(struct tr *t, const char *key, struct tr_addr a)
{
    if (a.v && a.off)
        line_add(t, " %s=V%u+0x%" PRIx64, key, a.v, a.off);
    else if (a.v)
        line_add(t, " %s=V%u", key, a.v);
    else
        line_add(t, " %s=0x%" PRIx64, key, a.off);
}

static void line_flags(struct tr *t, uint32_t flags, const char *const names[2])
{
    if (!flags) {
        line_add(t, " flags=-");
        return;
    }
    line_add(t, " flags=");
    int first = 1;
    for (int b = 0; b < 2; b++)
        if (flags & (1u << b)) {
            line_add(t, "%s%s", first ? "" : ",", names[b]);
            first = 0;
        }
    if (flags & ~3u)
        line_add(t, "%s0x%x", first ? "" : ",", flags & ~3u);
}

/* ---- the rules checker --------------------------------------------- */

int tr_rules_objects(struct tr *t, struct rc_objects *o)
{
    static const enum tr_kind kinds[5] = { TR_PROC, TR_DEV, TR_CTX, TR_QUEUE, TR_ALLOC };
    uint32_t need = 0;
    for (int i = 0; i < 5; i++)
        need += t->nobj[kinds[i]];
    if (need > t->rules_handles_cap || !t->rules_handles) {   /* never NULL + 0 */
        uint32_t cap = need + 256;
        vidmm_handle *h = realloc(t->rules_handles, (size_t)cap * sizeof(*h));
        if (!h)
            return -1;
        t->rules_handles = h;
        t->rules_handles_cap = cap;
    }
    const vidmm_handle *arr[5];
    uint32_t cnt[5], at = 0;
    for (int i = 0; i < 5; i++) {
        enum tr_kind k = kinds[i];
        arr[i] = t->rules_handles + at;
        cnt[i] = t->nobj[k];
        for (uint32_t id = 1; id <= t->nobj[k]; id++)
            t->rules_handles[at++] = t->obj[k][id].alive ? t->obj[k][id].h : VIDMM_HANDLE_NULL;
    }
    memset(o, 0, sizeof(*o));
    o->proc = arr[0], o->nproc = cnt[0];
    o->dev = arr[1], o->ndev = cnt[1];
    o->ctx = arr[2], o->nctx = cnt[2];
    o->queue = arr[3], o->nqueue = cnt[3];
    o->alloc = arr[4], o->nalloc = cnt[4];
    return 0;
}

int tr_check_rules_now(struct tr *t, char *report, size_t n)
{
    struct rc_objects o;
    if (tr_rules_objects(t, &o)) {
        if (report && n)
            snprintf(report, n, "rules: out of host memory");
        return 1;
    }
    /* On a plug-in driver the GPU's view (softgpu's MMU) cannot be
     * walked: counted, said in the run's summary (run.c). */
    if (!t->gpu)
        t->rules_not_applicable++;
    return rc_check_rules(t->adapter, t->gpummu ? t->gpu : NULL, &o, report, n);
}

int tr_enable_rules(struct tr *t, int on)
{
    t->rules = 0;
    if (on && !t->rules_fp[0].cap &&
        (rc_fp_init(&t->rules_fp[0], 1u << 16) || rc_fp_init(&t->rules_fp[1], 1u << 16)))
        return -1;
    t->rules = on;
    return 0;
}

static void rules_fail(struct tr *t, int n)
{
    t->rules_violations += (uint64_t)n;
    t->rules_failed_call = t->calls;
    snprintf(t->rules_line, sizeof t->rules_line, "%.*s", (int)t->line_len, t->line);
    fprintf(stderr, "vidmm: rules: %d violation%s after call %" PRIu64 " '%s':\n%s", n, n == 1 ? "" : "s",
            t->calls, t->rules_line, t->rules_report);
}

/* Before a make-resident: the fingerprint the failed-call rule compares
 * with. */
static void rules_before_make_resident(struct tr *t)
{
    struct rc_objects o;
    if (t->rules && !t->rules_violations && !tr_rules_objects(t, &o))
        rc_fp_take(&t->rules_fp[0], t->adapter, &o);
}

static void rules_after_make_resident(struct tr *t, vidmm_status st)
{
    struct rc_objects o;
    if (!t->rules || t->rules_violations || st >= 0 || tr_rules_objects(t, &o))
        return;
    rc_fp_take(&t->rules_fp[1], t->adapter, &o);
    t->rules_pending = rc_check_failed_make_resident(&t->rules_fp[0], &t->rules_fp[1], st, t->rules_report,
                                                     sizeof t->rules_report);
}

/* What the GPU's view depends on: page tables and placements change only
 * through paging operations, residency through evictions, restores and
 * discards, mappings through UPDATE_PAGE_TABLE.  While this signature
 * stays, the MMU walk would find what it found last time, so it is
 * skipped (the walk is most of the checker's cost). */
static uint64_t gpu_view_signature(struct tr *t)
{
    struct vidmm_adapter_info ai;
    struct vidmm_residency_stats rs;
    if (vidmm_adapter_query_info(t->adapter, &ai) < 0 || vidmm_residency_get_stats(t->adapter, &rs) < 0)
        return 0;
    uint64_t h = ai.paging_buffers_submitted * 31 + ai.live_allocations;
    for (int k = 0; k < 17; k++)
        h = h * 1000003 + ai.paging_ops[k];
    h = h * 31 + rs.evictions;
    h = h * 31 + rs.restores;
    h = h * 31 + rs.discards;
    h = h * 31 + rs.relocations;
    h = h * 31 + t->nobj[TR_VA];
    return h ? h : 1;
}

static void rules_after_call(struct tr *t)
{
    if (!t->rules || t->rules_violations)
        return;
    t->rules_checks++;
    int n = t->rules_pending;
    t->rules_pending = 0;
    if (!n) {
        uint64_t sig = gpu_view_signature(t);
        if (sig && sig == t->rules_gpu_sig) {
            n = vidmm_adapter_check_rules(t->adapter, t->rules_report, sizeof t->rules_report);
        } else {
            n = tr_check_rules_now(t, t->rules_report, sizeof t->rules_report);
            t->rules_gpu_sig = sig;
            t->rules_gpu_walks += t->gpu != NULL;   /* a plug-in's: counted as not applicable */
        }
    }
    if (n)
        rules_fail(t, n);
}

/* Finish the line: status and outputs (printf-style, may be NULL), count
 * the call, record it, emit its timeline events. */
static void line_end(struct tr *t, vidmm_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void line_end(struct tr *t, vidmm_status st, const char *fmt, ...)
{
    line_add(t, " = ");
    t->result_at = t->line_len;
    line_add(t, "%s", tr_status_name(st));
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        line_vadd(t, fmt, ap);
        va_end(ap);
    }
    t->calls++;
    t->verb_calls[t->verb]++;
    if (st < 0) {
        t->failed_calls++;
        t->verb_failed[t->verb]++;
    }
    t->by_status[TR_STATUS_INDEX(st)]++;
    if (st == VIDMM_PENDING)
        t->pending++;
    if (st == VIDMM_E_OVER_BUDGET)
        t->over_budget++;
    tr_driver_refused(t, st);
    if (t->rec) {
        if (t->line_oom) {
            /* A cut line would replay as another call: the record is lost. */
            if (!t->rec_error)
                fprintf(stderr, "vidmm: out of memory for a %zu-byte trace line: the record is incomplete\n",
                        t->line_len);
            t->rec_error = 1;
        }
        t->line[t->line_len] = '\n';
        rec_put(t, t->line, t->line_len + 1);
        t->line[t->line_len] = '\0';
        t->rec_calls++;
    }
    tl_call(t, tr_verb_names[t->verb], "call");
    rules_after_call(t);
}

const char *tr_last_result(const struct tr *t)
{
    return t->line + t->result_at;
}

void tr_frame(struct tr *t, uint64_t n)
{
    t->frames++;
    if (t->rec)
        rec_printf(t, "frame %" PRIu64 "\n", n);
    if (t->timeline)
        tr_buf_printf(t->timeline,
                      ",\n{\"ph\":\"i\",\"s\":\"g\",\"name\":\"frame %" PRIu64 "\",\"pid\":0,\"tid\":0,\"ts\":%" PRIu64 "}",
                      n, t->clock_us);
}

/* ---- open / close --------------------------------------------------- */

int tr_open(struct tr *t, const struct tr_header *h, FILE *rec)
{
    memset(t, 0, sizeof(*t));
    t->hdr = *h;
    const struct vidmm_eviction_policy *pol = tr_policy_by_name(h->policy);
    if (!pol) {
        fprintf(stderr, "vidmm: unknown eviction policy '%s' (known: %s)\n", h->policy, tr_policy_names());
        return 1;
    }
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    vidmm_status st;
    if (h->plugin) {
        /* A plug-in driver, constructed by the caller (run.c). */
        ci.abi_version = VIDMM_ABI_VERSION;
        ci.ops = h->plugin->ops;
        ci.driver = h->plugin->driver;
        ci.agp_aperture_base = h->plugin->agp_aperture_base;
        ci.agp_aperture_size = h->plugin->agp_aperture_size;
    } else {
        struct softgpu_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = t->hdr.preset;
        memcpy(cfg.segment_size, h->segment_size, sizeof cfg.segment_size);
        cfg.mmu_levels = h->mmu_levels;
        cfg.synchronous = h->synchronous;
        st = softgpu_create(&cfg, &t->gpu);
        if (st < 0) {
            fprintf(stderr, "vidmm: cannot create softgpu '%s': %s\n", h->preset, vidmm_status_str(st));
            return 1;
        }
        softgpu_fill_adapter_create_info(t->gpu, &ci);
    }
    ci.system_memory_limit = h->system_memory;
    if (h->fault)
        fault_driver_wrap(h->fault, &ci);
    ci.error_message = t->error;
    ci.error_message_size = sizeof t->error;
    st = vidmm_adapter_open(&ci, &t->adapter);
    if (st < 0) {
        fprintf(stderr, "vidmm: adapter open failed: %s: %s\n", vidmm_status_str(st), t->error);
        if (t->gpu)
            softgpu_destroy(t->gpu);
        t->gpu = NULL;
        return 1;
    }
    t->line_cap = 256;
    t->line = malloc(t->line_cap);
    if (!t->line) {
        fprintf(stderr, "vidmm: out of memory\n");
        tr_close(t);
        return 1;
    }
    t->line[0] = '\0';
    st = vidmm_adapter_set_eviction_policy(t->adapter, pol);
    if (st < 0) {
        fprintf(stderr, "vidmm: cannot set policy '%s': %s\n", h->policy, vidmm_status_str(st));
        tr_close(t);
        return 1;
    }
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    t->gpummu = (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) != 0;
    t->iommu = !t->gpummu && (ai.memory_management_caps & VIDMM_CAPS_IOMMU);
    t->last_ai = ai;
    vidmm_residency_get_stats(t->adapter, &t->last_rs);
    t->rec = rec;
    t->rec_hash = TR_FNV_OFFSET;
    if (rec)
        write_header(t, h);
    return 0;
}

void tr_close(struct tr *t)
{
    vidmm_adapter_close(t->adapter);
    if (t->gpu)
        softgpu_destroy(t->gpu);
    for (uint32_t b = 1; b <= t->nobj[TR_BUF]; b++)
        free(t->obj[TR_BUF][b].data);
    for (int k = 0; k < TR_KINDS; k++)
        free(t->obj[k]);
    free(t->counters);
    free(t->scratch);
    free(t->rules_handles);
    free(t->line);
    t->line = NULL;
    t->line_cap = t->line_len = 0;
    rc_fp_free(&t->rules_fp[0]);
    rc_fp_free(&t->rules_fp[1]);
    t->rules_handles = NULL;
    t->adapter = NULL;
    t->gpu = NULL;
    memset(t->obj, 0, sizeof t->obj);
    t->counters = NULL;
    t->scratch = NULL;
}

/* ---- processes, devices, queues ------------------------------------- */

static void obj_name(struct tr_obj *o, const char *name, char prefix, uint32_t id)
{
    if (name && *name)
        snprintf(o->name, sizeof o->name, "%s", name);
    else
        snprintf(o->name, sizeof o->name, "%c%u", prefix, id);
}

vidmm_status tr_process_create(struct tr *t, const char *name, uint32_t *id)
{
    uint32_t p = new_obj(t, TR_PROC);
    if (!p)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_PROC][p];
    obj_name(o, name, 'P', p);
    line_begin(t, TV_PROCESS, p, 0);
    line_id(t, TR_PROC, p);
    if (name && *name)
        line_add(t, " name=%s", o->name);
    vidmm_status st = vidmm_process_create(t->adapter, &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[64];
        snprintf(label, sizeof label, "P%u %s", p, o->name);
        tl_meta(t, "process_name", p, 0, label);
        tl_meta(t, "thread_name", p, 0, "process");
    }
    line_end(t, st, NULL);
    *id = p;
    return st;
}

vidmm_status tr_process_destroy(struct tr *t, uint32_t p)
{
    line_begin(t, TV_PROCESS_DESTROY, p, 0);
    line_id(t, TR_PROC, p);
    vidmm_status st = vidmm_process_destroy(t->adapter, tr_handle(t, TR_PROC, p));
    if (st >= 0) {
        t->obj[TR_PROC][p].alive = 0;
        /* Its devices, queues and VA ranges go with it. */
        for (int k = TR_DEV; k <= TR_CTX; k++) {
            if (k == TR_ALLOC)
                continue;
            for (uint32_t i = 1; i <= t->nobj[k]; i++)
                if (process_of(t, (enum tr_kind)k, i) == p)
                    t->obj[k][i].alive = 0;
        }
    }
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_device_create(struct tr *t, uint32_t p, uint32_t *id)
{
    uint32_t d = new_obj(t, TR_DEV);
    if (!d)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_DEV][d];
    o->parent = p;
    line_begin(t, TV_DEVICE, p, d);
    line_id(t, TR_DEV, d);
    line_id(t, TR_PROC, p);
    vidmm_status st = vidmm_device_create(t->adapter, tr_handle(t, TR_PROC, p), &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[32];
        snprintf(label, sizeof label, "device D%u", d);
        tl_meta(t, "thread_name", p, d, label);
    }
    line_end(t, st, NULL);
    *id = d;
    return st;
}

vidmm_status tr_device_destroy(struct tr *t, uint32_t d)
{
    uint32_t p = process_of(t, TR_DEV, d);
    line_begin(t, TV_DEVICE_DESTROY, p, d);
    line_id(t, TR_DEV, d);
    vidmm_status st = vidmm_device_destroy(t->adapter, tr_handle(t, TR_DEV, d));
    if (st >= 0) {
        t->obj[TR_DEV][d].alive = 0;
        for (uint32_t q = 1; q <= t->nobj[TR_QUEUE]; q++)
            if (t->obj[TR_QUEUE][q].parent == d)
                t->obj[TR_QUEUE][q].alive = 0;
        for (uint32_t c = 1; c <= t->nobj[TR_CTX]; c++)
            if (t->obj[TR_CTX][c].parent == d)
                t->obj[TR_CTX][c].alive = 0;
    }
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_queue_create(struct tr *t, uint32_t d, int priority, uint32_t *id)
{
    uint32_t q = new_obj(t, TR_QUEUE);
    if (!q)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_QUEUE][q];
    o->parent = d;
    uint32_t p = process_of(t, TR_DEV, d);
    line_begin(t, TV_QUEUE, p, 1000 + q);
    line_id(t, TR_QUEUE, q);
    line_id(t, TR_DEV, d);
    line_add(t, " priority=%d", priority);
    vidmm_status st = vidmm_paging_queue_create(t->adapter, tr_handle(t, TR_DEV, d), priority, &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[32];
        snprintf(label, sizeof label, "paging queue Q%u", q);
        tl_meta(t, "thread_name", p, 1000 + q, label);
    }
    line_end(t, st, NULL);
    *id = q;
    return st;
}

/* The destroy of an object nothing else depends on (a paging queue, a
 * context): the line, the call, the id marked dead.  tid: its timeline
 * track. */
static vidmm_status destroy_leaf(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid,
                                 vidmm_status (*destroy)(struct vidmm_adapter *, vidmm_handle))
{
    line_begin(t, v, process_of(t, k, id), tid);
    line_id(t, k, id);
    vidmm_status st = destroy(t->adapter, tr_handle(t, k, id));
    if (st >= 0)
        t->obj[k][id].alive = 0;
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_queue_destroy(struct tr *t, uint32_t q)
{
    return destroy_leaf(t, TV_QUEUE_DESTROY, TR_QUEUE, q, 1000 + q, vidmm_paging_queue_destroy);
}

/* ---- allocations ---------------------------------------------------- */

/* A heap property's name, or its number when the format has no name for
 * it (a refused value still records and replays). */
static const char *prop_name(const char *const *names, uint32_t n, uint32_t v, char num[16])
{
    if (v < n && strcmp(names[v], "?"))
        return names[v];
    snprintf(num, 16, "%u", v);
    return num;
}

static vidmm_status create(struct tr *t, uint32_t dev, const struct softgpu_alloc_desc *d, int create2,
                           uint32_t flags, const char *name, uint32_t *id)
{
    uint32_t a = new_obj(t, TR_ALLOC);
    if (!a)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_ALLOC][a];
    o->kind = (uint32_t)d->kind;
    o->size = d->kind == SOFTGPU_ALLOC_EXPLICIT ? d->info.size : d->size;
    obj_name(o, name, 'A', a);
    /* A device allocation belongs to the device's process (its line and
     * its accounting in the reports). */
    o->parent = dev ? process_of(t, TR_DEV, dev) : 0;
    line_begin(t, create2 ? TV_CREATE2 : TV_CREATE, o->parent, dev);
    line_id(t, TR_ALLOC, a);
    if (dev) {
        line_add(t, " device=%c%u", tr_kind_prefix[TR_DEV], dev);
    }
    if (create2)
        line_flags(t, flags, tr_create_flag_names);
    line_add(t, " kind=%s", tr_alloc_kind_name(o->kind));
    if (d->kind == SOFTGPU_ALLOC_EXPLICIT)
        line_add(t,
                 " size=%" PRIu64 " align=%" PRIu64 " write-set=0x%x read-set=0x%x evict-set=0x%x pref=0x%x"
                 " alloc-flags=0x%x priority=0x%x",
                 d->info.size, d->info.alignment, d->info.supported_write_segment_set,
                 d->info.supported_read_segment_set, d->info.eviction_segment_set, d->info.preferred_segment,
                 d->info.flags, d->info.priority);
    else if (d->kind == SOFTGPU_ALLOC_HEAP) {
        /* A custom heap's page property and pool; unknown (0) is left out. */
        char n0[16], n1[16], n2[16];
        line_add(t, " size=%" PRIu64 " align=%" PRIu64 " heap=%s", d->size, d->alignment,
                 prop_name(tr_heap_type_names, 6, d->heap.type, n0));
        if (d->heap.cpu_page_property)
            line_add(t, " cpu-page=%s", prop_name(tr_cpu_page_names, 4, d->heap.cpu_page_property, n1));
        if (d->heap.memory_pool)
            line_add(t, " pool=%s", prop_name(tr_memory_pool_names, 3, d->heap.memory_pool, n2));
    }
    else
        line_add(t, " size=%" PRIu64 " align=%" PRIu64 " cpu=%u", d->size, d->alignment, d->cpu_visible);
    if (name && *name)
        line_add(t, " name=%s", o->name);
    /* The driver's private data for it (trace_driver.c). */
    unsigned char pd[256];
    const char *why;
    size_t pds = tr_driver_desc(t, d, pd, sizeof pd, &why);
    vidmm_status st = !pds      ? tr_not_applicable(t, why)
                      : dev     ? vidmm_device_allocation_create(t->adapter, tr_handle(t, TR_DEV, dev), pd, pds, flags,
                                                                 &o->h)
                      : create2 ? vidmm_allocation_create2(t->adapter, pd, pds, flags, &o->h)
                                : vidmm_allocation_create(t->adapter, pd, pds, &o->h);
    if (st < 0)
        o->h = VIDMM_HANDLE_NULL;
    else {
        /* The library's reports (snapshot, leaks) name it as the tool does. */
        char nm[48];
        snprintf(nm, sizeof nm, "A%u %s", a, o->name);
        (void)vidmm_allocation_set_name(t->adapter, o->h, nm);
    }
    o->alive = st >= 0;
    line_end(t, st, NULL);
    *id = a;
    return st;
}

vidmm_status tr_create(struct tr *t, const struct softgpu_alloc_desc *d, int create2, uint32_t flags,
                       const char *name, uint32_t *id)
{
    return create(t, 0, d, create2, flags, name, id);
}

vidmm_status tr_create_on(struct tr *t, uint32_t dev, const struct softgpu_alloc_desc *d, uint32_t flags,
                          const char *name, uint32_t *id)
{
    return create(t, dev, d, 1, flags, name, id);
}

vidmm_status tr_destroy(struct tr *t, uint32_t a)
{
    line_begin(t, TV_DESTROY, 0, 0);
    line_id(t, TR_ALLOC, a);
    vidmm_status st = vidmm_allocation_destroy(t->adapter, tr_handle(t, TR_ALLOC, a));
    if (st >= 0) {
        t->obj[TR_ALLOC][a].alive = 0;
        /* Destroying an allocation removes its mappings everywhere. */
        for (uint32_t v = 1; v <= t->nobj[TR_VA]; v++)
            if (t->obj[TR_VA][v].alloc == a)
                t->obj[TR_VA][v].alive = 0;
    }
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_priority(struct tr *t, uint32_t a, uint32_t priority)
{
    line_begin(t, TV_PRIORITY, 0, 0);
    line_id(t, TR_ALLOC, a);
    line_add(t, " 0x%x", priority);
    vidmm_status st = vidmm_allocation_set_priority(t->adapter, tr_handle(t, TR_ALLOC, a), priority);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_move(struct tr *t, uint32_t a, uint32_t segment, int discard)
{
    line_begin(t, discard ? TV_MOVE_DISCARD : TV_MOVE, 0, 0);
    line_id(t, TR_ALLOC, a);
    line_add(t, " segment=%u", segment);
    vidmm_handle h = tr_handle(t, TR_ALLOC, a);
    vidmm_status st = discard ? vidmm_allocation_move_discard(t->adapter, h, segment)
                              : vidmm_allocation_move(t->adapter, h, segment);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_flip(struct tr *t, uint32_t source, uint32_t a)
{
    line_begin(t, TV_FLIP, 0, 3);
    line_add(t, " %u", source);
    if (a)
        line_id(t, TR_ALLOC, a);
    else
        line_add(t, " -");
    vidmm_status st = vidmm_adapter_flip(t->adapter, source, a ? tr_handle(t, TR_ALLOC, a) : VIDMM_HANDLE_NULL);
    line_end(t, st, NULL);
    return st;
}

/* ---- GPU virtual addresses ------------------------------------------ */

vidmm_status tr_reserve(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint64_t size,
                        unsigned mode, uint32_t *id)
{
    uint32_t v = new_obj(t, TR_VA);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->parent = p;
    o->size = size;
    line_begin(t, TV_RESERVE, p, 0);
    line_id(t, TR_VA, v);
    line_id(t, TR_PROC, p);
    line_addr(t, "base", base);
    line_add(t, " min=0x%" PRIx64 " max=0x%" PRIx64 " size=%" PRIu64 " mode=%s", min, max, size,
             mode == VIDMM_GPUVA_RESERVE_ZERO ? "zero" : mode == VIDMM_GPUVA_RESERVE_NO_ACCESS ? "no-access" : "?");
    vidmm_status st = vidmm_gpuva_reserve(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, base), min, max,
                                          size, mode, &o->va);
    o->alive = st >= 0;
    if (st >= 0)
        line_end(t, st, " va=0x%" PRIx64, o->va);
    else
        line_end(t, st, NULL);
    *id = v;
    return st;
}

/* A mapping's V id for process p over allocation a, and its line's start
 * (verb, V, P, A); 0 when the host is out of memory. */
static uint32_t map_begin(struct tr *t, enum tr_verb verb, uint32_t p, uint32_t a, uint64_t size)
{
    uint32_t v = new_obj(t, TR_VA);
    if (!v)
        return 0;
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->parent = p;
    o->size = size;
    o->alloc = a;
    line_begin(t, verb, p, 0);
    line_id(t, TR_VA, v);
    line_id(t, TR_PROC, p);
    line_id(t, TR_ALLOC, a);
    return v;
}

/* A mapping's line's end.  In IoMmu mode the VA is the host address of
 * the system pages: it changes from run to run, so it is not an output. */
static vidmm_status map_end(struct tr *t, uint32_t v, vidmm_status st, uint32_t *id)
{
    struct tr_obj *o = &t->obj[TR_VA][v];
    o->alive = st >= 0;
    if (st >= 0 && !t->iommu)
        line_end(t, st, " va=0x%" PRIx64, o->va);
    else
        line_end(t, st, NULL);
    *id = v;
    return st;
}

vidmm_status tr_map(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint32_t a,
                    uint64_t offset, uint64_t size, unsigned protection, uint64_t driver_protection, uint32_t *id)
{
    uint32_t v = map_begin(t, TV_MAP, p, a, size);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    line_addr(t, "base", base);
    line_add(t, " min=0x%" PRIx64 " max=0x%" PRIx64 " offset=%" PRIu64 " size=%" PRIu64 " protection=0x%x"
                " driver-protection=0x%" PRIx64,
             min, max, offset, size, protection, driver_protection);
    vidmm_status st = vidmm_gpuva_map(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, base), min, max,
                                      tr_handle(t, TR_ALLOC, a), offset, size, protection, driver_protection,
                                      &t->obj[TR_VA][v].va);
    return map_end(t, v, st, id);
}

vidmm_status tr_place(struct tr *t, uint32_t p, uint32_t a, uint64_t offset, uint64_t size, uint64_t align,
                      uint32_t *id)
{
    uint32_t v = map_begin(t, TV_PLACE, p, a, size);
    if (!v)
        return VIDMM_E_NO_HOST_MEMORY;
    line_add(t, " offset=%" PRIu64 " size=%" PRIu64 " align=%" PRIu64, offset, size, align);
    /* The runtime's placement rule for CreatePlacedResource: an alignment
     * Direct3D 12 knows (small resources, the default, MSAA) and an offset
     * on it.  A resource outside its heap, or empty, vidmm's map refuses
     * itself. */
    vidmm_status st;
    if ((align != 4096 && align != 65536 && align != 4194304) || offset % align)
        st = VIDMM_E_INVALID_ARG;
    else
        st = vidmm_gpuva_map(t->adapter, tr_handle(t, TR_PROC, p), 0, 0, 0, tr_handle(t, TR_ALLOC, a), offset, size,
                             0, 0, &t->obj[TR_VA][v].va);
    return map_end(t, v, st, id);
}

/* unmap and free: the same arguments; a range given back whole ends
 * its V id. */
static vidmm_status unmap_or_free(struct tr *t, enum tr_verb v, uint32_t p, struct tr_addr va, uint64_t size,
                                  vidmm_status (*fn)(struct vidmm_adapter *, vidmm_handle, uint64_t, uint64_t))
{
    line_begin(t, v, p, 0);
    line_id(t, TR_PROC, p);
    line_addr(t, "va", va);
    line_add(t, " size=%" PRIu64, size);
    vidmm_status st = fn(t->adapter, tr_handle(t, TR_PROC, p), tr_addr_value(t, va), size);
    if (st >= 0 && va.v && !va.off && size == t->obj[TR_VA][va.v].size)
        t->obj[TR_VA][va.v].alive = 0;
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_unmap(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size)
{
    return unmap_or_free(t, TV_UNMAP, p, va, size, vidmm_gpuva_unmap);
}

vidmm_status tr_free(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size)
{
    return unmap_or_free(t, TV_FREE, p, va, size, vidmm_gpuva_free);
}

/* ---- residency ------------------------------------------------------ */

/* Handles of a list of allocation ids, in a buffer the caller frees. */
static vidmm_handle *handles_of(struct tr *t, const uint32_t *list, uint32_t n)
{
    vidmm_handle *h = malloc((size_t)(n ? n : 1) * sizeof(*h));
    if (h)
        for (uint32_t i = 0; i < n; i++)
            h[i] = tr_handle(t, TR_ALLOC, list[i]);
    return h;
}

vidmm_status tr_make_resident(struct tr *t, uint32_t d, uint32_t q, const uint32_t *list, uint32_t n,
                              uint32_t flags, uint64_t *fence, uint64_t *trim)
{
    line_begin(t, TV_MAKE_RESIDENT, process_of(t, TR_DEV, d), 1000 + q);
    line_id(t, TR_DEV, d);
    line_id(t, TR_QUEUE, q);
    line_flags(t, flags, tr_make_resident_flag_names);
    line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = tr_handle(t, TR_QUEUE, q);
    mr.allocations = h;
    mr.count = n;
    mr.flags = flags;
    rules_before_make_resident(t);
    vidmm_status st = h ? vidmm_make_resident(t->adapter, tr_handle(t, TR_DEV, d), &mr) : VIDMM_E_NO_HOST_MEMORY;
    rules_after_make_resident(t, st);
    free(h);
    if (fence)
        *fence = mr.paging_fence_value;
    if (trim)
        *trim = mr.bytes_to_trim;
    if (st == VIDMM_PENDING)
        line_end(t, st, " fence=%" PRIu64, mr.paging_fence_value);
    else if (st == VIDMM_E_OVER_BUDGET)
        line_end(t, st, " trim=%" PRIu64, mr.bytes_to_trim);
    else
        line_end(t, st, NULL);
    return st;
}

vidmm_status tr_evict(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t flags, uint64_t *trim)
{
    line_begin(t, TV_EVICT, process_of(t, TR_DEV, d), d);
    line_id(t, TR_DEV, d);
    line_flags(t, flags, tr_evict_flag_names);
    line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    struct vidmm_evict_args ev = { .allocations = h, .count = n, .flags = flags };
    vidmm_status st = h ? vidmm_evict(t->adapter, tr_handle(t, TR_DEV, d), &ev) : VIDMM_E_NO_HOST_MEMORY;
    uint64_t tb = ev.bytes_to_trim;
    free(h);
    if (trim)
        *trim = tb;
    if (st >= 0 && tb)
        line_end(t, st, " trim=%" PRIu64, tb);
    else
        line_end(t, st, NULL);
    return st;
}

/* A CPU wait for fence on a paging queue or a context (tid: its timeline
 * track), counted in *waits.  No deadline: in synchronous mode the fence
 * has already signalled; otherwise a hang is the reset path's business. */
static vidmm_status wait_fence(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid, uint64_t fence,
                               vidmm_status (*wait)(struct vidmm_adapter *, vidmm_handle, uint64_t, uint64_t),
                               uint64_t *waits)
{
    line_begin(t, v, process_of(t, k, id), tid);
    line_id(t, k, id);
    line_add(t, " fence=%" PRIu64, fence);
    vidmm_status st = wait(t->adapter, tr_handle(t, k, id), fence, UINT64_MAX);
    (*waits)++;
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_wait(struct tr *t, uint32_t q, uint64_t fence)
{
    return wait_fence(t, TV_WAIT, TR_QUEUE, q, 1000 + q, fence, vidmm_paging_queue_wait, &t->fence_waits);
}

vidmm_status tr_offer(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t priority)
{
    line_begin(t, TV_OFFER, process_of(t, TR_DEV, d), d);
    line_id(t, TR_DEV, d);
    static const char *const pn[] = { "?", "low", "normal", "high", "auto" };
    line_add(t, " priority=%s", priority < 5 ? pn[priority] : "?");
    line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    vidmm_status st = h ? vidmm_offer(t->adapter, tr_handle(t, TR_DEV, d), h, n, priority) : VIDMM_E_NO_HOST_MEMORY;
    free(h);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_reclaim(struct tr *t, uint32_t q, const uint32_t *list, uint32_t n, uint32_t *results,
                        uint64_t *fence)
{
    line_begin(t, TV_RECLAIM, process_of(t, TR_QUEUE, q), 1000 + q);
    line_id(t, TR_QUEUE, q);
    line_list(t, list, n);
    vidmm_handle *h = handles_of(t, list, n);
    uint32_t *r = calloc(n ? n : 1, sizeof(*r));
    uint64_t fv = 0;
    vidmm_status st = h && r ? vidmm_reclaim(t->adapter, tr_handle(t, TR_QUEUE, q), h, n, r, &fv)
                             : VIDMM_E_NO_HOST_MEMORY;
    if (fence)
        *fence = fv;
    if (results && r)
        memcpy(results, r, (size_t)n * sizeof(*r));
    /* The per-allocation results are outputs, after the status. */
    if (st >= 0 && r) {
        char res[2048];
        size_t used = 0;
        res[0] = '\0';
        for (uint32_t i = 0; i < n && used + 16 < sizeof res; i++)
            used += (size_t)snprintf(res + used, sizeof res - used, "%s%s", i ? "," : "",
                                     r[i] == VIDMM_RECLAIM_DISCARDED ? "discarded" : "ok");
        if (st == VIDMM_PENDING)
            line_end(t, st, " fence=%" PRIu64 " results=%s", fv, n ? res : "-");
        else
            line_end(t, st, " results=%s", n ? res : "-");
    } else {
        line_end(t, st, NULL);
    }
    free(h);
    free(r);
    return st;
}

vidmm_status tr_budget(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes)
{
    line_begin(t, TV_BUDGET, p, 0);
    line_id(t, TR_PROC, p);
    line_add(t, " %s %" PRIu64, tr_group_name(g), bytes);
    vidmm_status st = vidmm_process_set_budget(t->adapter, tr_handle(t, TR_PROC, p), g, bytes);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_reservation(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes)
{
    line_begin(t, TV_RESERVATION, p, 0);
    line_id(t, TR_PROC, p);
    line_add(t, " %s %" PRIu64, tr_group_name(g), bytes);
    vidmm_status st = vidmm_change_video_memory_reservation(t->adapter, tr_handle(t, TR_PROC, p), g, bytes);
    line_end(t, st, NULL);
    return st;
}

/* ---- integrity ------------------------------------------------------ */

static uint64_t *scratch(struct tr *t, uint64_t size)
{
    if (size > SIZE_MAX / 2)
        return NULL;
    if (t->scratch_size < size) {
        free(t->scratch);
        t->scratch = malloc((size_t)size);
        t->scratch_size = t->scratch ? (size_t)size : 0;
    }
    return t->scratch;
}

vidmm_status tr_write(struct tr *t, uint32_t a, uint64_t seed)
{
    line_begin(t, TV_WRITE, 0, 0);
    line_id(t, TR_ALLOC, a);
    line_add(t, " seed=%" PRIu64, seed);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(t->adapter, o ? o->h : VIDMM_HANDLE_NULL, &p);
    if (st >= 0) {
        pattern_fill(p, o->size, seed);
        st = vidmm_allocation_unlock(t->adapter, o->h);
    }
    line_end(t, st, NULL);
    return st;
}

static vidmm_status lock_line(struct tr *t, enum tr_verb v, uint32_t a)
{
    line_begin(t, v, 0, 0);
    line_id(t, TR_ALLOC, a);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    vidmm_handle h = o ? o->h : VIDMM_HANDLE_NULL;
    void *p = NULL;
    vidmm_status st = v == TV_LOCK ? vidmm_allocation_lock(t->adapter, h, &p) : vidmm_allocation_unlock(t->adapter, h);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_lock(struct tr *t, uint32_t a)
{
    return lock_line(t, TV_LOCK, a);
}

vidmm_status tr_unlock(struct tr *t, uint32_t a)
{
    return lock_line(t, TV_UNLOCK, a);
}

static void count_check(struct tr *t, vidmm_status st, uint64_t bytes)
{
    t->checks++;
    if (st == TR_MISMATCH)
        t->check_failures++;
    else if (st >= 0)
        t->check_bytes += bytes;
}

vidmm_status tr_check(struct tr *t, uint32_t a, uint64_t seed)
{
    line_begin(t, TV_CHECK, 0, 0);
    line_id(t, TR_ALLOC, a);
    line_add(t, " seed=%" PRIu64, seed);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    vidmm_status st = vidmm_allocation_lock(t->adapter, o ? o->h : VIDMM_HANDLE_NULL, &p);
    if (st >= 0) {
        int ok = pattern_matches(p, o->size, seed);
        st = vidmm_allocation_unlock(t->adapter, o->h);
        if (st >= 0 && !ok)
            st = TR_MISMATCH;
    }
    count_check(t, st, o ? o->size : 0);
    line_end(t, st, NULL);
    return st;
}

/* Where the GPU reaches va of process p: through softgpu's MMU with the
 * process's root page table (GpuMmu), or (IoMmu) at the CPU address the
 * mapping is, which the GPU can use only while the allocation is
 * resident.  On success *host is NULL for the MMU path. */
static vidmm_status gpu_target(struct tr *t, uint32_t p, struct tr_addr va, struct vidmm_physical_address *root,
                               void **host)
{
    *host = NULL;
    if (!t->iommu && !t->gpu)
        return tr_not_applicable(t, "the tool's GPU reads and writes go through softgpu's MMU walker (vkgpu's GPU "
                                    "view is tested by its own sparse test, docs/VKGPU.md)");
    if (!t->iommu)
        return vidmm_process_root_page_table(t->adapter, tr_handle(t, TR_PROC, p), root);
    struct tr_obj *v = tr_get(t, TR_VA, va.v);
    if (!v || !v->alive || !v->alloc || v->parent != p)
        return VIDMM_E_PAGE_FAULT;
    struct vidmm_residency_state rs;
    vidmm_status st = vidmm_allocation_residency(t->adapter, tr_handle(t, TR_ALLOC, (uint32_t)v->alloc), &rs);
    if (st < 0)
        return st;
    if (!rs.resident)
        return VIDMM_E_PAGE_FAULT;
    *host = (void *)(uintptr_t)(v->va + va.off);
    return VIDMM_OK;
}

static void gpu_line(struct tr *t, enum tr_verb verb, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    line_begin(t, verb, p, 0);
    line_id(t, TR_PROC, p);
    line_addr(t, "va", va);
    line_add(t, " size=%" PRIu64 " seed=%" PRIu64, size, seed);
}

vidmm_status tr_gpu_read(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    gpu_line(t, TV_GPU_READ, p, va, size, seed);
    struct vidmm_physical_address root;
    void *host;
    uint64_t *buf = scratch(t, size);
    vidmm_status st = buf ? gpu_target(t, p, va, &root, &host) : VIDMM_E_NO_HOST_MEMORY;
    if (st >= 0) {
        if (host)
            memcpy(buf, host, (size_t)size);
        else
            st = softgpu_read_virtual(t->gpu, &root, tr_addr_value(t, va), buf, (size_t)size);
    }
    if (st >= 0 && !pattern_matches(buf, size, seed))
        st = TR_MISMATCH;
    if (st == VIDMM_E_PAGE_FAULT)
        t->gpu_faults++;
    count_check(t, st, size);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_gpu_write(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed)
{
    gpu_line(t, TV_GPU_WRITE, p, va, size, seed);
    struct vidmm_physical_address root;
    void *host;
    uint64_t *buf = scratch(t, size);
    vidmm_status st = buf ? gpu_target(t, p, va, &root, &host) : VIDMM_E_NO_HOST_MEMORY;
    if (st >= 0) {
        pattern_fill(buf, size, seed);
        if (host)
            memcpy(host, buf, (size_t)size);
        else
            st = softgpu_write_virtual(t->gpu, &root, tr_addr_value(t, va), buf, (size_t)size);
    }
    if (st == VIDMM_E_PAGE_FAULT)
        t->gpu_faults++;
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_check_adapter(struct tr *t)
{
    line_begin(t, TV_CHECK_ADAPTER, 0, 0);
    /* The structure walkers and, whatever --rules says, the rules. */
    char rep[1024];
    int bad = vidmm_adapter_check(t->adapter, NULL, 0) + (t->gpu ? softgpu_check(t->gpu) : 0);
    int rules = tr_check_rules_now(t, rep, sizeof rep);
    if (rules)
        fprintf(stderr, "vidmm: check-adapter: %d rule violation%s:\n%s", rules, rules == 1 ? "" : "s", rep);
    bad += rules;
    vidmm_status st = bad ? TR_MISMATCH : VIDMM_OK;
    t->adapter_checks++;
    if (bad)
        t->adapter_check_failures++;
    line_end(t, st, NULL);
    return st;
}

/* ---- command submission ------------------------------------------------ */

/* On a plug-in driver the tool submits nothing: its command buffers are
 * softgpu's command set (trace_driver.c). */
static vidmm_status submission_na(struct tr *t)
{
    return tr_not_applicable(t, "the tool's command buffers are softgpu's command set (vkgpu's own submission "
                                "is tested by build/vkgpu-tests, docs/VKGPU.md)");
}

/* A call of the submission family not made: its line, answered
 * TR_NOT_APPLICABLE. */
static vidmm_status na_call(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid,
                            const uint64_t *fence)
{
    line_begin(t, v, process_of(t, k, id), tid);
    line_id(t, k, id);
    if (fence)
        line_add(t, " fence=%" PRIu64, *fence);
    vidmm_status st = submission_na(t);
    line_end(t, st, NULL);
    return st;
}

vidmm_status tr_context_create(struct tr *t, uint32_t d, uint32_t node, uint32_t mode, uint32_t *id)
{
    uint32_t c = new_obj(t, TR_CTX);
    if (!c)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_CTX][c];
    o->parent = d;
    o->kind = mode;
    uint32_t p = process_of(t, TR_DEV, d);
    line_begin(t, TV_CONTEXT, p, 2000 + c);
    line_id(t, TR_CTX, c);
    line_id(t, TR_DEV, d);
    if (tr_node_name(node))
        line_add(t, " node=%s", tr_node_name(node));
    else
        line_add(t, " node=%u", node);
    line_add(t, " mode=%s", mode == VIDMM_CONTEXT_VIRTUAL ? "virtual" : mode == VIDMM_CONTEXT_PHYSICAL ? "physical" : "?");
    struct vidmm_context_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.node = node;
    cd.mode = mode;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_context_create(t->adapter, tr_handle(t, TR_DEV, d), &cd, &o->h);
    if (st < 0)
        o->h = VIDMM_HANDLE_NULL;
    o->alive = st >= 0;
    if (t->timeline) {
        char label[48];
        snprintf(label, sizeof label, "context C%u (%s, %s)", c, tr_node_name(node) ? tr_node_name(node) : "?",
                 mode == VIDMM_CONTEXT_PHYSICAL ? "physical" : "virtual");
        tl_meta(t, "thread_name", p, 2000 + c, label);
    }
    line_end(t, st, NULL);
    *id = c;
    return st;
}

vidmm_status tr_context_destroy(struct tr *t, uint32_t c)
{
    if (!t->gpu)
        return na_call(t, TV_CONTEXT_DESTROY, TR_CTX, c, 2000 + c, NULL);
    return destroy_leaf(t, TV_CONTEXT_DESTROY, TR_CTX, c, 2000 + c, vidmm_context_destroy);
}

/* An operand as the trace writes it: V<n>[+0x..] or a number (addresses
 * and the fill pattern in hex, the rest decimal). */
static void line_operand(struct tr *t, struct tr_addr a, int hex)
{
    if (a.v && a.off)
        line_add(t, "V%u+0x%" PRIx64, a.v, a.off);
    else if (a.v)
        line_add(t, "V%u", a.v);
    else if (hex)
        line_add(t, "0x%" PRIx64, a.off);
    else
        line_add(t, "%" PRIu64, a.off);
}

vidmm_status tr_cmdbuf(struct tr *t, const struct tr_cmd *cmds, uint32_t n, uint32_t to, uint64_t offset,
                       uint32_t *id)
{
    uint32_t b = new_obj(t, TR_BUF);
    if (!b)
        return VIDMM_E_NO_HOST_MEMORY;
    line_begin(t, TV_CMDBUF, process_of(t, TR_ALLOC, to), 0);
    line_id(t, TR_BUF, b);
    line_add(t, " cmds=");
    uint64_t cap = 0;
    int badop = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct cmd_kind *k = cmd_kind_of(cmds[i].op);
        if (!k) {
            line_add(t, "%s0x%x", i ? "," : "", cmds[i].op);
            badop = 1;
            continue;
        }
        line_add(t, "%s%s", i ? "," : "", k->name);
        for (int j = 0; j < k->operands; j++) {
            line_add(t, ":");
            line_operand(t, cmds[i].arg[j],
                         (k->addr_mask >> j & 1) || (cmds[i].op == SOFTGPU_CMD_FILL && j == 2));
        }
        cap += 8 + 8 * (uint64_t)k->operands;
    }
    if (!n)
        line_add(t, "-");
    if (to)
        line_add(t, " to=A%u offset=%" PRIu64, to, offset);
    vidmm_status st = badop || !n || cap > UINT32_MAX ? VIDMM_E_INVALID_ARG : VIDMM_OK;
    if (st >= 0 && !t->gpu)
        st = submission_na(t);
    void *data = st >= 0 ? calloc(1, (size_t)cap) : NULL;
    if (st >= 0 && !data)
        st = VIDMM_E_NO_HOST_MEMORY;
    struct softgpu_cmdbuf cb = { data, 0, (uint32_t)cap };
    for (uint32_t i = 0; i < n && st >= 0; i++) {
        uint64_t v[4];
        for (int j = 0; j < 4; j++)
            v[j] = tr_addr_value(t, cmds[i].arg[j]);
        switch (cmds[i].op) {
        case SOFTGPU_CMD_NOP: st = softgpu_cmd_nop(&cb); break;
        case SOFTGPU_CMD_WRITE32: st = softgpu_cmd_write32(&cb, v[0], (uint32_t)v[1]); break;
        case SOFTGPU_CMD_WRITE64: st = softgpu_cmd_write64(&cb, v[0], v[1]); break;
        case SOFTGPU_CMD_COPY: st = softgpu_cmd_copy(&cb, v[0], v[1], v[2]); break;
        case SOFTGPU_CMD_FILL: st = softgpu_cmd_fill(&cb, v[0], v[1], (uint32_t)v[2]); break;
        case SOFTGPU_CMD_CHECKSUM: st = softgpu_cmd_checksum(&cb, v[0], v[1], v[2]); break;
        case SOFTGPU_CMD_COMPARE: st = softgpu_cmd_compare(&cb, v[0], v[1], v[2], v[3]); break;
        case SOFTGPU_CMD_SIGNAL: st = softgpu_cmd_signal(&cb, v[0], v[1]); break;
        case SOFTGPU_CMD_WAIT: st = softgpu_cmd_wait(&cb, v[0], v[1]); break;
        default: st = VIDMM_E_INVALID_ARG; break;
        }
    }
    if (st >= 0 && to) {
        struct tr_obj *ao = tr_get(t, TR_ALLOC, to);
        void *p = NULL;
        if (!ao || offset > ao->size || ao->size - offset < cb.size)
            st = VIDMM_E_INVALID_ARG;
        else if ((st = vidmm_allocation_lock(t->adapter, ao->h, &p)) >= 0) {
            memcpy((char *)p + offset, data, cb.size);
            st = vidmm_allocation_unlock(t->adapter, ao->h);
        }
    }
    struct tr_obj *o = &t->obj[TR_BUF][b];
    if (st >= 0) {
        o->data = data;
        o->size = cb.size;
        o->alive = 1;
        t->commands_built += n;
        line_end(t, st, " size=%u sum=0x%" PRIx64, cb.size, softgpu_checksum(data, cb.size));
    } else {
        free(data);
        line_end(t, st, NULL);
    }
    *id = b;
    return st;
}

vidmm_status tr_submit_virtual(struct tr *t, uint32_t c, struct tr_addr va, uint32_t size, uint64_t *fence)
{
    line_begin(t, TV_SUBMIT_VIRTUAL, process_of(t, TR_CTX, c), 2000 + c);
    line_id(t, TR_CTX, c);
    line_addr(t, "va", va);
    line_add(t, " size=%u", size);
    uint64_t fv = 0;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_submit_virtual(t->adapter, tr_handle(t, TR_CTX, c), tr_addr_value(t, va), size, &fv);
    if (fence)
        *fence = fv;
    if (st >= 0) {
        t->submits_virtual++;
        line_end(t, st, " fence=%" PRIu64, fv);
    } else {
        t->submit_failed++;
        line_end(t, st, NULL);
    }
    return st;
}

vidmm_status tr_submit_physical(struct tr *t, uint32_t c, uint32_t b, const uint32_t *allocs,
                                const uint32_t *alloc_flags, uint32_t nalloc, const struct tr_patch *patches,
                                uint32_t npatch, uint32_t flags, uint64_t *fence, uint32_t *patched)
{
    line_begin(t, TV_SUBMIT_PHYSICAL, process_of(t, TR_CTX, c), 2000 + c);
    line_id(t, TR_CTX, c);
    line_id(t, TR_BUF, b);
    line_add(t, " allocs=");
    for (uint32_t i = 0; i < nalloc; i++) {
        line_add(t, "%sA%u", i ? "," : "", allocs[i]);
        if (alloc_flags[i] & VIDMM_SUBMIT_WRITE)
            line_add(t, ":write");
        if (alloc_flags[i] & ~VIDMM_SUBMIT_WRITE)
            line_add(t, ":0x%x", alloc_flags[i] & ~VIDMM_SUBMIT_WRITE);
    }
    if (!nalloc)
        line_add(t, "-");
    line_add(t, " patches=");
    for (uint32_t i = 0; i < npatch; i++)
        line_add(t, "%s%u+%u@%u", i ? "," : "", patches[i].index, patches[i].allocation_offset,
                 patches[i].patch_offset);
    if (!npatch)
        line_add(t, "-");
    line_add(t, " flags=%s", flags == VIDMM_SUBMIT_REUSED ? "reused" : flags ? "?" : "-");
    if (flags & ~VIDMM_SUBMIT_REUSED)
        line_add(t, "0x%x", flags);
    struct vidmm_submit_allocation *al = calloc(nalloc ? nalloc : 1, sizeof(*al));
    struct vidmm_patch_location *pl = calloc(npatch ? npatch : 1, sizeof(*pl));
    struct tr_obj *bo = tr_get(t, TR_BUF, b);
    struct vidmm_submit_physical_args pa;
    memset(&pa, 0, sizeof pa);
    vidmm_status st = !t->gpu ? submission_na(t) : VIDMM_E_NO_HOST_MEMORY;
    if (al && pl && t->gpu) {
        for (uint32_t i = 0; i < nalloc; i++) {
            al[i].allocation = tr_handle(t, TR_ALLOC, allocs[i]);
            al[i].flags = alloc_flags[i];
        }
        for (uint32_t i = 0; i < npatch; i++) {
            pl[i].allocation_index = patches[i].index;
            pl[i].allocation_offset = patches[i].allocation_offset;
            pl[i].patch_offset = patches[i].patch_offset;
        }
        pa.buffer = bo && bo->alive ? bo->data : NULL;
        pa.size = bo && bo->alive ? (uint32_t)bo->size : 0;
        pa.allocation_count = nalloc;
        pa.allocations = al;
        pa.patches = pl;
        pa.patch_count = npatch;
        pa.flags = flags;
        st = vidmm_submit_physical(t->adapter, tr_handle(t, TR_CTX, c), &pa);
    }
    free(al);
    free(pl);
    if (fence)
        *fence = pa.fence;
    if (patched)
        *patched = pa.patched;
    if (st >= 0) {
        t->submits_physical++;
        t->patches_written += pa.patched;
        line_end(t, st, " fence=%" PRIu64 " patched=%u", pa.fence, pa.patched);
    } else {
        t->submit_failed++;
        line_end(t, st, NULL);
    }
    return st;
}

vidmm_status tr_context_wait(struct tr *t, uint32_t c, uint64_t fence)
{
    if (!t->gpu)
        return na_call(t, TV_CONTEXT_WAIT, TR_CTX, c, 2000 + c, &fence);
    return wait_fence(t, TV_CONTEXT_WAIT, TR_CTX, c, 2000 + c, fence, vidmm_context_wait, &t->context_waits);
}

vidmm_status tr_context_fence(struct tr *t, uint32_t c, uint64_t *submitted, uint64_t *completed)
{
    line_begin(t, TV_CONTEXT_FENCE, process_of(t, TR_CTX, c), 2000 + c);
    line_id(t, TR_CTX, c);
    uint64_t s = 0, d = 0;
    vidmm_status st = !t->gpu ? submission_na(t) : vidmm_context_fence(t->adapter, tr_handle(t, TR_CTX, c), &s, &d);
    if (submitted)
        *submitted = s;
    if (completed)
        *completed = d;
    if (st >= 0)
        line_end(t, st, " submitted=%" PRIu64 " completed=%" PRIu64, s, d);
    else
        line_end(t, st, NULL);
    return st;
}

vidmm_status tr_result(struct tr *t, uint32_t a, uint64_t offset, uint64_t expect, uint64_t *value)
{
    line_begin(t, TV_RESULT, 0, 0);
    line_id(t, TR_ALLOC, a);
    line_add(t, " offset=%" PRIu64 " expect=0x%" PRIx64, offset, expect);
    struct tr_obj *o = tr_get(t, TR_ALLOC, a);
    void *p = NULL;
    uint64_t v = 0;
    vidmm_status st = !t->gpu                                      ? submission_na(t)
                      : !o || offset > o->size || o->size - offset < 8 ? VIDMM_E_INVALID_ARG
                                                                     : vidmm_allocation_lock(t->adapter, o->h, &p);
    if (st >= 0) {
        memcpy(&v, (char *)p + offset, 8);
        st = vidmm_allocation_unlock(t->adapter, o->h);
        if (st >= 0 && v != expect)
            st = TR_MISMATCH;
    }
    if (value)
        *value = v;
    if (st == TR_NOT_APPLICABLE) {
        line_end(t, st, NULL);
        return st;
    }
    t->gpu_results++;
    if (st == TR_MISMATCH)
        t->gpu_result_failures++;
    if (st >= 0 || st == TR_MISMATCH)
        line_end(t, st, " value=0x%" PRIx64, v);
    else
        line_end(t, st, NULL);
    return st;
}
