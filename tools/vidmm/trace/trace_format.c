/*
 * trace_format.c - what the trace format (docs/TRACE_FORMAT.md) defines,
 * shared by the writer (trace_write.c), the reader (trace_read.c,
 * replay.c) and the timeline (trace_timeline.c): verb and object-kind
 * names, status, paging-operation, allocation-kind, segment-group, node
 * and command names, the header's defaults, the pattern checksums, and
 * the growable text buffer the outputs are built in.
 */
#include "trace.h"
#include "softgpu_cmds.h"
#include "splitmix.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tr_verb_names[TV_COUNT] = {
    "process", "process-destroy", "device", "device-destroy", "queue", "queue-destroy",
    "create", "create2", "destroy", "priority", "move", "move-discard", "flip",
    "reserve", "map", "unmap", "free",
    "make-resident", "evict", "wait", "offer", "reclaim",
    "budget", "reservation",
    "write", "check", "gpu-read", "gpu-write", "check-adapter",
    "context", "context-destroy", "cmdbuf", "submit-virtual", "submit-physical",
    "context-wait", "context-fence", "result",
    "lock", "unlock",
    "place",
};

const char tr_kind_prefix[TR_KINDS] = { 'P', 'D', 'Q', 'A', 'V', 'C', 'B' };

/* Paging operation names, indexed by enum vidmm_paging_operation. */
static const char *const paging_op_name[17] = {
    [VIDMM_PAGING_TRANSFER] = "transfer",
    [VIDMM_PAGING_FILL] = "fill",
    [VIDMM_PAGING_DISCARD_CONTENT] = "discard",
    [VIDMM_PAGING_MAP_APERTURE_SEGMENT] = "map-aperture",
    [VIDMM_PAGING_UNMAP_APERTURE_SEGMENT] = "unmap-aperture",
    [VIDMM_PAGING_VIRTUAL_TRANSFER] = "virtual-transfer",
    [VIDMM_PAGING_VIRTUAL_FILL] = "virtual-fill",
    [VIDMM_PAGING_UPDATE_PAGE_TABLE] = "update-page-table",
    [VIDMM_PAGING_FLUSH_TLB] = "flush-tlb",
    [VIDMM_PAGING_SIGNAL_MONITORED_FENCE] = "signal-fence",
};

const char *tr_paging_op_name(int op)
{
    return op >= 0 && op < 17 ? paging_op_name[op] : NULL;
}

const char *const tr_create_flag_names[2] = { "resident", "bit1" };
const char *const tr_make_resident_flag_names[2] = { "cant-trim", "must-succeed" };
const char *const tr_evict_flag_names[2] = { "if-necessary", "not-written" };

const char *tr_status_name(vidmm_status st)
{
    if (st == TR_MISMATCH)
        return "MISMATCH";
    if (st == TR_NOT_APPLICABLE)
        return "NOT_APPLICABLE";
    const char *s = vidmm_status_str(st);
    return strncmp(s, "VIDMM_", 6) ? s : s + 6;
}

int tr_status_parse(const char *s, vidmm_status *st)
{
    if (!strcmp(s, "MISMATCH")) {
        *st = TR_MISMATCH;
        return 0;
    }
    if (!strcmp(s, "NOT_APPLICABLE")) {
        *st = TR_NOT_APPLICABLE;
        return 0;
    }
    for (int v = -64; v <= 8; v++) {
        const char *n = vidmm_status_str((vidmm_status)v);
        if (!strncmp(n, "VIDMM_", 6) && !strcmp(n + 6, s)) {
            *st = (vidmm_status)v;
            return 0;
        }
    }
    return -1;
}

/* The library's built-in policies, by name (vidmm_policies()). */
const struct vidmm_eviction_policy *tr_policy_by_name(const char *name)
{
    for (const struct vidmm_eviction_policy *const *p = vidmm_policies(); *p; p++)
        if (!strcmp((*p)->name, name))
            return *p;
    return NULL;
}

const char *tr_policy_names(void)
{
    return "lru, adaptive, belady, reuse";
}

void tr_header_defaults(struct tr_header *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->preset, sizeof h->preset, "dgpu");
    h->system_memory = 4ull << 30;
    h->synchronous = 1;
    snprintf(h->policy, sizeof h->policy, "lru");
    h->seed = 1;
    snprintf(h->scenario, sizeof h->scenario, "file");
}

static const char *const alloc_kind_names[] = { "?", "texture", "constant", "staging", "primary", "ring", "explicit",
                                                 "heap" };

const char *const tr_heap_type_names[6] = { "?", "default", "upload", "readback", "custom", "gpu-upload" };
const char *const tr_cpu_page_names[4] = { "unknown", "not-available", "write-combine", "write-back" };
const char *const tr_memory_pool_names[3] = { "unknown", "L0", "L1" };

const char *tr_alloc_kind_name(uint32_t kind)
{
    return kind < sizeof(alloc_kind_names) / sizeof(alloc_kind_names[0]) ? alloc_kind_names[kind] : "?";
}

const char *tr_group_name(enum vidmm_segment_group g)
{
    return g == VIDMM_SEGMENT_GROUP_LOCAL ? "local" : g == VIDMM_SEGMENT_GROUP_NON_LOCAL ? "non-local" : "?";
}

const char *tr_node_name(uint32_t node)
{
    return node == SOFTGPU_NODE_GRAPHICS ? "graphics" : node == SOFTGPU_NODE_COMPUTE ? "compute"
                                                      : node == SOFTGPU_NODE_COPY    ? "copy"
                                                                                     : NULL;
}

/* ---- command-buffer commands (the shared table, support/softgpu_cmds.h) */

int tr_cmd_operands(uint32_t op)
{
    const struct cmd_kind *k = cmd_kind_of(op);
    return k ? k->operands : -1;
}

const char *tr_cmd_name(uint32_t op)
{
    const struct cmd_kind *k = cmd_kind_of(op);
    return k ? k->name : NULL;
}

int tr_cmd_parse_name(const char *s, uint32_t *op)
{
    size_t n;
    const struct cmd_kind *k = cmd_kinds(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, k[i].name)) {
            *op = k[i].op;
            return 0;
        }
    return -1;
}

uint64_t tr_pattern_checksum(uint64_t size, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull, s = seed;
    for (uint64_t i = 0; i < size / 8; i++)
        h = (h ^ (seed ? splitmix64_next(&s) : 0)) * 0x100000001b3ull;
    return h;
}

uint64_t tr_fill_checksum(uint64_t size, uint32_t pattern)
{
    uint64_t w = ((uint64_t)pattern << 32) | pattern, h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < size / 8; i++)
        h = (h ^ w) * 0x100000001b3ull;
    return h;
}

/* ---- small utilities ------------------------------------------------ */

void tr_buf_printf(struct tr_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t want = b->cap ? b->cap * 2 : 65536;
        while (want < b->len + (size_t)n + 1)
            want *= 2;
        char *np = realloc(b->p, want);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = want;
    }
}

void tr_buf_free(struct tr_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

const char *tr_json_char(char c, char out[8])
{
    if (c == '"' || c == '\\')
        snprintf(out, 8, "\\%c", c);
    else if ((unsigned char)c < 0x20)
        snprintf(out, 8, "\\u%04x", (unsigned)(unsigned char)c);
    else
        out[0] = c, out[1] = '\0';   /* the common case, without a printf */
    return out;
}

uint64_t tr_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
