/*
 * observe.c - allocation names and user data, the walk over the live
 * allocations, the debug callback and the close's leak report
 * (vidmm/observe.h, docs/OBSERVABILITY.md).  The JSON statistics are in
 * stats.c, the fdinfo text in fdinfo.c; the text buffer both write into
 * is here.
 *
 * Read-only apart from the name, the user data and the callback: nothing
 * here changes where an allocation is or what it holds.
 */
#include "handle/lookup.h"
#include "observe/observe.h"
#include "handle/handle.h"
#include "placement/placement.h"
#include "residency/residency.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- text buffers (two-call pattern) ---------------------------------- */

void vidmm_text_add(struct vidmm_text *t, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    /* Every caller's pieces are short (numbers, keys); a longer one is cut
     * rather than failing the whole text. */
    size_t k = (size_t)n < sizeof small ? (size_t)n : sizeof small - 1;
    if (t->len < t->size) {
        size_t room = t->size - t->len;
        memcpy(t->buf + t->len, small, k < room ? k : room);
    }
    t->len += k;
}

static void text_put(struct vidmm_text *t, const char *s, size_t k)
{
    if (t->len < t->size) {
        size_t room = t->size - t->len;
        memcpy(t->buf + t->len, s, k < room ? k : room);
    }
    t->len += k;
}

void vidmm_text_json_str(struct vidmm_text *t, const char *s)
{
    text_put(t, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            text_put(t, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            /* Names cannot hold these; other strings might one day. */
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            text_put(t, e, 6);
        } else {
            text_put(t, (const char *)&c, 1);
        }
    }
    text_put(t, "\"", 1);
}

int vidmm_text_args_ok(const char *buf, size_t size, const size_t *needed)
{
    if (!buf)
        return size == 0 && needed != NULL;   /* the size query needs somewhere to answer */
    return size > 0;
}

vidmm_status vidmm_text_args_fail(const char *buf, size_t size, const size_t *needed)
{
    if (!buf && size)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "buf is NULL with size %zu", size);
    if (!buf && !needed)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "buf and needed are both NULL: a size query needs needed");
    return vidmm_fail(VIDMM_E_INVALID_ARG, "size 0 with a buffer");
}

vidmm_status vidmm_text_finish(struct vidmm_text *t, size_t *needed)
{
    if (needed)
        *needed = t->len + 1;
    if (!t->buf)
        return VIDMM_OK;
    if (t->len < t->size) {
        t->buf[t->len] = '\0';
        return VIDMM_OK;
    }
    t->buf[t->size - 1] = '\0';
    return VIDMM_E_BUFFER_TOO_SMALL;
}

/* ---- what an allocation looks like from outside ----------------------- */

vidmm_handle vidmm_observe_process_of(const struct vidmm_allocation *al)
{
    if (al->private_process)
        return al->private_process;
    if (vidmm_residency_is_owned(al))
        return vidmm_residency_owner(al);
    /* A shared allocation its creator let go, unowned: its first holder's. */
    return al->shared ? al->share->holders->process : 0;
}

uint32_t vidmm_observe_residency(const struct vidmm_allocation *al)
{
    if (vidmm_residency_is_offered(al))
        return VIDMM_RESIDENCY_OFFERED;
    return al->resident ? VIDMM_RESIDENCY_RESIDENT : VIDMM_RESIDENCY_EVICTED;
}

uint32_t vidmm_observe_where(const struct vidmm_allocation *al, uint64_t *offset, uint32_t *extents)
{
    const struct vidmm_placement *pl = &al->pl;
    *offset = 0;
    *extents = 0;
    if (pl->sys) {
        /* As vidmm_allocation_physical_ranges reports it: mapped system
         * pages are in the aperture (or AGP) segment. */
        *extents = 1;
        if (pl->ap_mapped) {
            *offset = pl->ap_offset;
            return pl->ap_segment;
        }
        return 0;
    }
    if (!pl->pages.count)
        return 0;
    *extents = pl->pages.count;
    *offset = pl->pages.ext[0].offset;
    return pl->segment_id;
}

void vidmm_observe_region(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t n)
{
    switch (a->seg[id].kind) {
    case VIDMM_SEGMENT_KIND_SYSTEM:
        snprintf(buf, n, "system");
        return;
    case VIDMM_SEGMENT_KIND_APERTURE:
        snprintf(buf, n, "aperture");   /* one per adapter (WDDM 2) */
        return;
    case VIDMM_SEGMENT_KIND_AGP:
        snprintf(buf, n, "agp");        /* at most one */
        return;
    case VIDMM_SEGMENT_KIND_MEMORY:
        break;
    }
    uint32_t k = 0;
    for (uint32_t i = 1; i < id; i++)
        k += a->seg[i].kind == VIDMM_SEGMENT_KIND_MEMORY;
    snprintf(buf, n, "vram%u", k);
}

static vidmm_status segment_region_name(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t size)
{
    if (!buf || size < 16 || id >= a->segment_count)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !buf ? "buf is NULL" : size < 16 ? "size %u: at least 16 bytes"
                          : "segment %u: the adapter has segments 0 to %u", !buf ? 0u : size < 16 ? (unsigned)size : id,
                          a->segment_count - 1);
    vidmm_observe_region(a, id, buf, size);
    return VIDMM_OK;
}

/* ---- names and user data ------------------------------------------------ */

/* UTF-8 without control characters, at most VIDMM_ALLOCATION_NAME_MAX
 * bytes; *len gets the length.  Reads at most one byte past the limit. */
static int name_ok(const char *name, size_t *len)
{
    size_t n = 0;
    const unsigned char *s = (const unsigned char *)name;
    while (s[n]) {
        if (n >= VIDMM_ALLOCATION_NAME_MAX)
            return 0;
        unsigned c = s[n];
        if (c < 0x20 || c == 0x7f)
            return 0;
        if (c < 0x80) {
            n++;
            continue;
        }
        /* Lead byte: how many continuation bytes, and the smallest value
         * the sequence may encode (no overlong forms, no surrogates, no
         * value past U+10FFFF). */
        unsigned more, v;
        if (c >= 0xc2 && c <= 0xdf) {
            more = 1;
            v = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            more = 2;
            v = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            more = 3;
            v = c & 0x07;
        } else {
            return 0;
        }
        if (n + more >= VIDMM_ALLOCATION_NAME_MAX + 1u)
            return 0;
        for (unsigned k = 1; k <= more; k++) {
            if ((s[n + k] & 0xc0) != 0x80)
                return 0;   /* also stops at the NUL */
            v = (v << 6) | (s[n + k] & 0x3f);
        }
        if ((more == 2 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (more == 3 && (v < 0x10000 || v > 0x10ffff)))
            return 0;
        if (v >= 0x80 && v < 0xa0)
            return 0;   /* C1 controls */
        n += more + 1;
    }
    *len = n;
    return 1;
}

static vidmm_status set_name(struct vidmm_adapter *a, vidmm_handle h, const char *name)
{
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    size_t len = 0;
    if (name && !name_ok(name, &len))
        return vidmm_fail(VIDMM_E_INVALID_ARG, "name: longer than the limit or holding a control character");
    char *copy = NULL;
    if (len) {
        copy = vidmm_halloc(a->ha, VIDMM_SITE_OBSERVE_NAME, len + 1, 1);
        if (!copy)
            return VIDMM_E_NO_HOST_MEMORY;
        memcpy(copy, name, len);
        copy[len] = '\0';
    }
    if (al->name)
        vidmm_hfree(a->ha, al->name, al->name_size, 1);
    al->name = copy;
    al->name_size = copy ? (uint32_t)len + 1 : 0;
    return VIDMM_OK;
}

static vidmm_status get_name(const struct vidmm_adapter *a, vidmm_handle h, char *buf, size_t size, size_t *needed)
{
    if (!vidmm_text_args_ok(buf, size, needed))
        return vidmm_text_args_fail(buf, size, needed);
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    struct vidmm_text t = { buf, size, 0 };
    if (al->name)
        text_put(&t, al->name, al->name_size - 1);
    return vidmm_text_finish(&t, needed);
}

static vidmm_status set_user_data(struct vidmm_adapter *a, vidmm_handle h, void *user_data)
{
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    al->user_data = user_data;
    return VIDMM_OK;
}

static vidmm_status get_user_data(const struct vidmm_adapter *a, vidmm_handle h, void **user_data)
{
    if (!user_data)
        return vidmm_fail(VIDMM_E_INVALID_ARG, "user_data is NULL");
    struct vidmm_allocation *al;
    vidmm_status st = vidmm_allocation_lookup(a, h, &al);
    if (st < 0)
        return st;
    *user_data = al->user_data;
    return VIDMM_OK;
}

/* ---- the walk ------------------------------------------------------------ */

static vidmm_status iterate(const struct vidmm_adapter *a, const struct vidmm_allocation_filter *f, uint64_t *cursor,
                            struct vidmm_allocation_item *out)
{
    if (!cursor || !out || *cursor > UINT32_MAX)
        return vidmm_fail(VIDMM_E_INVALID_ARG, !cursor ? "cursor is NULL" : !out ? "out is NULL"
                                                                    : "cursor: not one this call returned");
    if (f) {
        if (f->flags & ~(uint32_t)(VIDMM_FILTER_PROCESS | VIDMM_FILTER_SEGMENT | VIDMM_FILTER_RESIDENCY) ||
            f->reserved)
            return vidmm_fail(VIDMM_E_INVALID_ARG, "filter flags 0x%x (reserved %u): PROCESS, SEGMENT, RESIDENCY only",
                              f->flags, (unsigned)f->reserved);
        if ((f->flags & VIDMM_FILTER_SEGMENT) && f->segment_id >= a->segment_count)
            return vidmm_fail(VIDMM_E_INVALID_ARG, "filter segment %u: the adapter has segments 0 to %u",
                              f->segment_id, a->segment_count - 1);
        if ((f->flags & VIDMM_FILTER_RESIDENCY) && (!f->residency || (f->residency & ~VIDMM_RESIDENCY_ALL)))
            return vidmm_fail(VIDMM_E_INVALID_ARG, "filter residency 0x%x: a non-empty set of VIDMM_RESIDENCY_* bits",
                              (unsigned)f->residency);
    }
    uint32_t it = (uint32_t)*cursor;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->zombie)
            continue;   /* destroyed for the caller; only the GPU still holds it */
        uint64_t offset;
        uint32_t extents;
        uint32_t seg = vidmm_observe_where(al, &offset, &extents);
        vidmm_handle proc = vidmm_observe_process_of(al);
        uint32_t res = vidmm_observe_residency(al);
        if (f && (f->flags & VIDMM_FILTER_PROCESS) && proc != f->process)
            continue;
        if (f && (f->flags & VIDMM_FILTER_SEGMENT) && seg != f->segment_id)
            continue;
        if (f && (f->flags & VIDMM_FILTER_RESIDENCY) && !(res & f->residency))
            continue;
        memset(out, 0, sizeof(*out));
        /* A shared allocation by the handle of its process's hold: its
         * own handle names nothing once its creator let go. */
        out->handle = al->shared ? vidmm_share_handle_in(al, proc) : al->self;
        out->process = proc;
        out->size = al->size;
        out->offset = offset;
        out->segment_id = seg;
        out->residency = res;
        out->extent_count = extents;
        out->flags = al->info.flags;
        out->priority = vidmm_residency_priority(al);
        out->busy = al->busy;
        out->user_data = al->user_data;
        if (al->name)
            memcpy(out->name, al->name, al->name_size);
        *cursor = it;
        return VIDMM_OK;
    }
    *cursor = it;
    return VIDMM_NO_MORE;
}

/* ---- debug messages ------------------------------------------------------ */

void vidmm_debug_emit(const struct vidmm_adapter *a, enum vidmm_debug_severity sev, const char *fmt, ...)
{
    if (!a->debug.cb)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    a->debug.cb(a->debug.user, sev, line);
}

void vidmm_debug_report_sink(void *ctx, const char *line)
{
    vidmm_debug_emit((const struct vidmm_adapter *)ctx, VIDMM_DEBUG_ERROR, "%s", line);
}

static vidmm_status set_debug_callback(struct vidmm_adapter *a, vidmm_debug_callback fn, void *user)
{
    a->debug.cb = fn;
    a->debug.user = fn ? user : NULL;
    return VIDMM_OK;
}

void vidmm_observe_report_leaks(const struct vidmm_adapter *a)
{
    if (!a->debug.cb)
        return;
    uint32_t procs = 0, allocs = 0;
    uint64_t bytes = 0;
    /* Slot order (the report's order since the first release). */
    uint32_t slot = 0;
    for (const struct vidmm_process *p; (p = vidmm_objtab_next(&a->processes, &slot)) != NULL;) {
        uint32_t n = 0;
        uint64_t b = 0;
        uint32_t it = 0;
        for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;)
            if (!al->zombie && vidmm_observe_process_of(al) == p->self) {
                n++;
                b += al->size;
            }
        procs++;
        vidmm_debug_emit(a, VIDMM_DEBUG_WARNING,
                         "leak: process %llu still alive at close: %u devices, %u allocations, %llu KiB",
                         (unsigned long long)vidmm_observe_id(p->self), p->device_count, n,
                         (unsigned long long)(b >> 10));
    }
    uint32_t it = 0;
    for (const struct vidmm_allocation *al; (al = vidmm_alloc_next(a, &it)) != NULL;) {
        if (al->zombie)
            continue;
        uint64_t offset;
        uint32_t extents;
        uint32_t seg = vidmm_observe_where(al, &offset, &extents);
        char region[16];
        vidmm_observe_region(a, seg, region, sizeof region);
        static const char *const res_name[8] = { "", "resident", "evicted", "", "offered", "", "", "" };
        char who[48] = "";
        vidmm_handle proc = vidmm_observe_process_of(al);
        if (proc)
            snprintf(who, sizeof who, ", process %llu", (unsigned long long)vidmm_observe_id(proc));
        allocs++;
        bytes += al->size;
        vidmm_debug_emit(a, VIDMM_DEBUG_WARNING, "leak: allocation %llu '%s' still alive at close: %llu KiB in %s, %s%s",
                         (unsigned long long)vidmm_observe_id(al->self), al->name ? al->name : "",
                         (unsigned long long)(al->size >> 10), region, res_name[vidmm_observe_residency(al) & 7], who);
    }
    if (procs || allocs)
        vidmm_debug_emit(a, VIDMM_DEBUG_WARNING, "leak: %u processes and %u allocations (%llu KiB) alive at close",
                         procs, allocs, (unsigned long long)(bytes >> 10));
}

const char *vidmm_debug_severity_str(enum vidmm_debug_severity s)
{
    switch (s) {
    case VIDMM_DEBUG_INFO: return "info";
    case VIDMM_DEBUG_WARNING: return "warning";
    case VIDMM_DEBUG_ERROR: return "error";
    }
    return "?";
}

/* ---- public entries: the adapter lock around each body (docs/THREADING.md) ---- */

vidmm_status vidmm_allocation_set_name(struct vidmm_adapter *a, vidmm_handle h, const char *name)
{
    VIDMM_ENTRY(a, set_name(a, h, name));
}

vidmm_status vidmm_allocation_get_name(const struct vidmm_adapter *a, vidmm_handle h, char *buf, size_t size,
                                       size_t *needed)
{
    VIDMM_ENTRY(a, get_name(a, h, buf, size, needed));
}

vidmm_status vidmm_allocation_set_user_data(struct vidmm_adapter *a, vidmm_handle h, void *user_data)
{
    VIDMM_ENTRY(a, set_user_data(a, h, user_data));
}

vidmm_status vidmm_allocation_get_user_data(const struct vidmm_adapter *a, vidmm_handle h, void **user_data)
{
    VIDMM_ENTRY(a, get_user_data(a, h, user_data));
}

vidmm_status vidmm_allocation_iterate(const struct vidmm_adapter *a, const struct vidmm_allocation_filter *f,
                                      uint64_t *cursor, struct vidmm_allocation_item *out)
{
    VIDMM_ENTRY(a, iterate(a, f, cursor, out));
}

vidmm_status vidmm_segment_region_name(const struct vidmm_adapter *a, uint32_t id, char *buf, size_t size)
{
    VIDMM_ENTRY(a, segment_region_name(a, id, buf, size));
}

vidmm_status vidmm_adapter_set_debug_callback(struct vidmm_adapter *a, vidmm_debug_callback fn, void *user)
{
    VIDMM_ENTRY(a, set_debug_callback(a, fn, user));
}
