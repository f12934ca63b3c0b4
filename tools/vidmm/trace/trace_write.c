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
#include "softgpu_cmds.h"
#include "splitmix.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void trw_pattern_fill(uint64_t *w, uint64_t size, uint64_t seed)
{
    uint64_t s = seed;
    for (uint64_t i = 0; i < size / 8; i++)
        w[i] = seed ? splitmix64_next(&s) : 0;
}

int trw_pattern_matches(const uint64_t *w, uint64_t size, uint64_t seed)
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
uint32_t trw_new_obj(struct tr *t, enum tr_kind k)
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
uint32_t trw_process_of(struct tr *t, enum tr_kind k, uint32_t id)
{
    struct tr_obj *o = tr_get(t, k, id);
    if (!o)
        return 0;
    if (k == TR_QUEUE || k == TR_CTX)
        return trw_process_of(t, TR_DEV, o->parent);
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

/* Append to the line, growing it as needed (a line has any length: a
 * make-resident list of 10,000 allocations is one line).  When the host
 * refuses memory the line is cut and t->line_oom set; trw_line_end then
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

void trw_line_add(struct tr *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    line_vadd(t, fmt, ap);
    va_end(ap);
}

void trw_line_begin(struct tr *t, enum tr_verb v, uint32_t pid, uint32_t tid)
{
    t->verb = v;
    t->line_len = 0;
    t->line[0] = '\0';
    t->line_oom = 0;
    t->result_at = 0;
    t->track_pid = pid;
    t->track_tid = tid;
    trw_line_add(t, "%s", tr_verb_names[v]);
}

void trw_line_id(struct tr *t, enum tr_kind k, uint32_t id)
{
    trw_line_add(t, " %c%u", tr_kind_prefix[k], id);
}

void trw_line_list(struct tr *t, const uint32_t *list, uint32_t n)
{
    if (!n) {
        trw_line_add(t, " -");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        trw_line_add(t, "%sA%u", i ? "," : " ", list[i]);
}

void trw_line_addr(struct tr *t, const char *key, struct tr_addr a)
{
    if (a.v && a.off)
        trw_line_add(t, " %s=V%u+0x%" PRIx64, key, a.v, a.off);
    else if (a.v)
        trw_line_add(t, " %s=V%u", key, a.v);
    else
        trw_line_add(t, " %s=0x%" PRIx64, key, a.off);
}

void trw_line_flags(struct tr *t, uint32_t flags, const char *const names[2])
{
    if (!flags) {
        trw_line_add(t, " flags=-");
        return;
    }
    trw_line_add(t, " flags=");
    int first = 1;
    for (int b = 0; b < 2; b++)
        if (flags & (1u << b)) {
            trw_line_add(t, "%s%s", first ? "" : ",", names[b]);
            first = 0;
        }
    if (flags & ~3u)
        trw_line_add(t, "%s0x%x", first ? "" : ",", flags & ~3u);
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
void trw_rules_before_make_resident(struct tr *t)
{
    struct rc_objects o;
    if (t->rules && !t->rules_violations && !tr_rules_objects(t, &o))
        rc_fp_take(&t->rules_fp[0], t->adapter, &o);
}

void trw_rules_after_make_resident(struct tr *t, vidmm_status st)
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
void trw_line_end(struct tr *t, vidmm_status st, const char *fmt, ...)
{
    trw_line_add(t, " = ");
    t->result_at = t->line_len;
    trw_line_add(t, "%s", tr_status_name(st));
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

void trw_obj_name(struct tr_obj *o, const char *name, char prefix, uint32_t id)
{
    if (name && *name)
        snprintf(o->name, sizeof o->name, "%s", name);
    else
        snprintf(o->name, sizeof o->name, "%c%u", prefix, id);
}

vidmm_status tr_process_create(struct tr *t, const char *name, uint32_t *id)
{
    uint32_t p = trw_new_obj(t, TR_PROC);
    if (!p)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_PROC][p];
    trw_obj_name(o, name, 'P', p);
    trw_line_begin(t, TV_PROCESS, p, 0);
    trw_line_id(t, TR_PROC, p);
    if (name && *name)
        trw_line_add(t, " name=%s", o->name);
    vidmm_status st = vidmm_process_create(t->adapter, &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[64];
        snprintf(label, sizeof label, "P%u %s", p, o->name);
        tl_meta(t, "process_name", p, 0, label);
        tl_meta(t, "thread_name", p, 0, "process");
    }
    trw_line_end(t, st, NULL);
    *id = p;
    return st;
}

vidmm_status tr_process_destroy(struct tr *t, uint32_t p)
{
    trw_line_begin(t, TV_PROCESS_DESTROY, p, 0);
    trw_line_id(t, TR_PROC, p);
    vidmm_status st = vidmm_process_destroy(t->adapter, tr_handle(t, TR_PROC, p));
    if (st >= 0) {
        t->obj[TR_PROC][p].alive = 0;
        /* Its devices, queues and VA ranges go with it. */
        for (int k = TR_DEV; k <= TR_CTX; k++) {
            if (k == TR_ALLOC)
                continue;
            for (uint32_t i = 1; i <= t->nobj[k]; i++)
                if (trw_process_of(t, (enum tr_kind)k, i) == p)
                    t->obj[k][i].alive = 0;
        }
    }
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_device_create(struct tr *t, uint32_t p, uint32_t *id)
{
    uint32_t d = trw_new_obj(t, TR_DEV);
    if (!d)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_DEV][d];
    o->parent = p;
    trw_line_begin(t, TV_DEVICE, p, d);
    trw_line_id(t, TR_DEV, d);
    trw_line_id(t, TR_PROC, p);
    vidmm_status st = vidmm_device_create(t->adapter, tr_handle(t, TR_PROC, p), &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[32];
        snprintf(label, sizeof label, "device D%u", d);
        tl_meta(t, "thread_name", p, d, label);
    }
    trw_line_end(t, st, NULL);
    *id = d;
    return st;
}

vidmm_status tr_device_destroy(struct tr *t, uint32_t d)
{
    uint32_t p = trw_process_of(t, TR_DEV, d);
    trw_line_begin(t, TV_DEVICE_DESTROY, p, d);
    trw_line_id(t, TR_DEV, d);
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
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_queue_create(struct tr *t, uint32_t d, int priority, uint32_t *id)
{
    uint32_t q = trw_new_obj(t, TR_QUEUE);
    if (!q)
        return VIDMM_E_NO_HOST_MEMORY;
    struct tr_obj *o = &t->obj[TR_QUEUE][q];
    o->parent = d;
    uint32_t p = trw_process_of(t, TR_DEV, d);
    trw_line_begin(t, TV_QUEUE, p, 1000 + q);
    trw_line_id(t, TR_QUEUE, q);
    trw_line_id(t, TR_DEV, d);
    trw_line_add(t, " priority=%d", priority);
    vidmm_status st = vidmm_paging_queue_create(t->adapter, tr_handle(t, TR_DEV, d), priority, &o->h);
    o->alive = st >= 0;
    if (t->timeline) {
        char label[32];
        snprintf(label, sizeof label, "paging queue Q%u", q);
        tl_meta(t, "thread_name", p, 1000 + q, label);
    }
    trw_line_end(t, st, NULL);
    *id = q;
    return st;
}

/* The destroy of an object nothing else depends on (a paging queue, a
 * context): the line, the call, the id marked dead.  tid: its timeline
 * track. */
vidmm_status trw_destroy_leaf(struct tr *t, enum tr_verb v, enum tr_kind k, uint32_t id, uint32_t tid,
                              vidmm_status (*destroy)(struct vidmm_adapter *, vidmm_handle))
{
    trw_line_begin(t, v, trw_process_of(t, k, id), tid);
    trw_line_id(t, k, id);
    vidmm_status st = destroy(t->adapter, tr_handle(t, k, id));
    if (st >= 0)
        t->obj[k][id].alive = 0;
    trw_line_end(t, st, NULL);
    return st;
}

vidmm_status tr_queue_destroy(struct tr *t, uint32_t q)
{
    return trw_destroy_leaf(t, TV_QUEUE_DESTROY, TR_QUEUE, q, 1000 + q, vidmm_paging_queue_destroy);
}
