/*
 * rmv_stream.c - decoding the RMT token streams of an RMV file (see rmv.h;
 * the containers are rmv_decode.c): the decoder's key set and live
 * virtual ranges, and the tokens.
 *
 * Tokens.  The first byte's low nibble is the type, its high nibble a
 * time delta in 32-tick quanta for most types; sizes are fixed per type
 * except user data (length field), time deltas (byte count) and resource
 * creation (a payload sized by resource type).  Field positions follow
 * the reference parser (rmt_parser.cpp).  A stream must end exactly at
 * a token boundary, and every field with a closed set of values (page
 * sizes, update types, misc and user-data kinds, process events,
 * resource types) must hold one of them: a token read at the wrong
 * offset fails these checks long before the stream ends, so a file that
 * lost its place is refused instead of misread.  Two things are refused
 * because their layout cannot be followed: the reserved token type 2,
 * and a ResourceCreate of a resource type after "misc internal" (16),
 * such as the work-graph type, whose payload size this importer does not
 * know: skipping it by a guess would misread the rest of the stream.
 * ResourceUpdate (type 1, RMT 1.9 and later) is read as 16 bytes
 * (resource id, subresource id, resource type, usage before and after).
 */
#include "rmv_dec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const rmv_token_name[16] = {
    "Timestamp", "ResourceUpdate", "Reserved", "PageTableUpdate", "Userdata", "Misc", "ResourceReference",
    "ResourceBind", "ProcessEvent", "PageReference", "CpuMap", "VirtualFree", "VirtualAllocate", "ResourceCreate",
    "TimeDelta", "ResourceDestroy",
};

/* ---- bytes and bits ------------------------------------------------- */

static uint64_t bits(const uint8_t *p, unsigned hi, unsigned lo)
{
    uint64_t v = 0;
    for (unsigned b = hi + 1; b-- > lo;)
        v = (v << 1) | ((p[b / 8] >> (b % 8)) & 1u);
    return v;
}

/* ---- the decoder's state -------------------------------------------- */

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static size_t kset_slot(const struct kset *s, uint64_t key)
{
    size_t i = (size_t)mix(key) & (s->cap - 1);
    while (s->key[i] && s->key[i] != ~key)
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int kset_has(const struct kset *s, uint64_t key)
{
    return s->cap && s->key[kset_slot(s, key)] == ~key;
}

static int kset_put(struct kset *s, uint64_t key, uint64_t val)
{
    if ((s->n + 1) * 2 > s->cap) {
        struct kset g = { NULL, NULL, s->cap ? s->cap * 2 : 1024, 0 };
        g.key = calloc(g.cap, sizeof *g.key);
        g.val = calloc(g.cap, sizeof *g.val);
        if (!g.key || !g.val) {
            free(g.key);
            free(g.val);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->key[i]) {
                size_t j = kset_slot(&g, ~s->key[i]);
                g.key[j] = s->key[i];
                g.val[j] = s->val[i];
                g.n++;
            }
        free(s->key);
        free(s->val);
        *s = g;
    }
    size_t i = kset_slot(s, key);
    if (!s->key[i])
        s->n++;
    s->key[i] = ~key;
    s->val[i] = val;
    return 0;
}

/* Removal by backward shift keeps every probe chain whole. */
static int kset_del(struct kset *s, uint64_t key)
{
    if (!kset_has(s, key))
        return 0;
    size_t i = kset_slot(s, key);
    s->key[i] = 0;
    s->n--;
    for (size_t j = (i + 1) & (s->cap - 1); s->key[j]; j = (j + 1) & (s->cap - 1)) {
        uint64_t k = ~s->key[j], v = s->val[j];
        s->key[j] = 0;
        size_t t = kset_slot(s, k);
        s->key[t] = ~k;
        s->val[t] = v;
    }
    return 1;
}

void rmv_kset_free(struct kset *s)
{
    free(s->key);
    free(s->val);
}

/* The index of the first range not before (pid, va). */
static size_t vas_lower(const struct vas *v, uint64_t pid, uint64_t va)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct vrange *m = &v->r[mid];
        if (m->pid < pid || (m->pid == pid && m->va < va))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int vas_exact(const struct vas *v, uint64_t pid, uint64_t va, size_t *at)
{
    *at = vas_lower(v, pid, va);
    return *at < v->n && v->r[*at].pid == pid && v->r[*at].va == va;
}

static int vas_contains(const struct vas *v, uint64_t pid, uint64_t va)
{
    size_t i = vas_lower(v, pid, va);
    if (i < v->n && v->r[i].pid == pid && v->r[i].va == va)
        return 1;
    if (i == 0)
        return 0;
    const struct vrange *r = &v->r[i - 1];
    return r->pid == pid && va - r->va < r->size;
}

static int vas_insert(struct vas *v, size_t at, uint64_t pid, uint64_t va, uint64_t size)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 1024;
        struct vrange *nr = realloc(v->r, nc * sizeof *nr);
        if (!nr)
            return -1;
        v->r = nr;
        v->cap = nc;
    }
    memmove(v->r + at + 1, v->r + at, (v->n - at) * sizeof *v->r);
    v->r[at] = (struct vrange){ pid, va, size };
    v->n++;
    return 0;
}

int rmv_fail(struct dec *D, const char *fmt, ...)
{
    if (!D->failed && D->err) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(D->err, "rmv: %s: ", D->name);
        vfprintf(D->err, fmt, ap);
        fputc('\n', D->err);
        va_end(ap);
    }
    D->failed = 1;
    return 1;
}

static int push(struct dec *D, const struct rmv_ev *e)
{
    struct rmv_evs *v = D->ev;
    if (!v)
        return 0;
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 4096;
        struct rmv_ev *n = realloc(v->e, nc * sizeof(*n));
        if (!n)
            return rmv_fail(D, "out of memory");
        v->e = n;
        v->cap = nc;
    }
    v->e[v->n] = *e;
    v->e[v->n].seq = (uint32_t)v->n;
    v->n++;
    return 0;
}

/* Something the stream says that does not fit what it said before:
 * refused, or with lenient counted (a capture that starts after its
 * process did may free or bind what it never saw made). */
static int in_heap(uint64_t pa, uint64_t base, uint64_t size)
{
    return pa >= base && pa - base < size;
}

static int anomaly(struct dec *D, uint64_t *count, const struct rmv_stream_info *si, const char *what, uint64_t at)
{
    (*count)++;
    if (D->lenient)
        return 0;
    return rmv_fail(D, "stream %u (process %u): %s at byte %" PRIu64 " (the stream is corrupt or lost its place; "
                   "--lenient counts such tokens instead)",
                    si->index, si->process_id, what, at);
}

/* ---- tokens ------------------------------------------------------------ */

/* The payload after a ResourceCreate token's 7 bytes, by resource type
 * (the reference parser's table); -1 for a type whose payload is not
 * known.  p has avail bytes from the token's start. */
static long resource_payload(const uint8_t *p, size_t avail, unsigned version)
{
    switch (p[6]) {
    case 0: return version >= 16 ? 39 : 38;              /* image (one more bit per dimension from 1.6) */
    case 1: return 11;                                   /* buffer */
    case 2: case 3: case 7: case 16: return 1;           /* GPU event, border palette, query heap, misc internal */
    case 4: case 5: case 10: return 0;                   /* indirect command generator, motion estimator, timestamp */
    case 6: return 12;                                   /* perf experiment */
    case 8: return 4;                                    /* video decoder */
    case 9: return 6;                                    /* video encoder */
    case 11: return 10;                                  /* heap */
    case 12: return 19;                                  /* pipeline */
    case 13: return 4;                                   /* descriptor heap */
    case 14:                                             /* descriptor pool: 3 + 4 per pool size */
        return avail >= 10 ? 3 + 4 * (long)p[9] : 3;
    case 15: return 44;                                  /* command allocator */
    default: return -1;
    }
}

/* A Name user-data payload: text, a NUL (zero padding allowed), then
 * the 32-bit id of the resource it names, which the reference reads
 * from the payload's last four bytes. */
static int name_payload(const uint8_t *p, size_t n)
{
    if (n < 5)
        return 0;
    size_t i = 0;
    while (i < n - 4 && p[i] >= 0x20 && p[i] != 0x7f)
        i++;
    if (i == n - 4 || p[i] != 0)
        return 0;
    while (i < n - 4)
        if (p[i++] != 0)
            return 0;
    return 1;
}

static const uint64_t page_bytes[8] = { 0, 4096, 65536, 262144, 1 << 20, 2 << 20, 0, 0 };

/* The size of the token at t, of which left bytes remain in the stream;
 * at is its place in the file, for messages.  1: the stream cannot be
 * followed (reported). */
static int token_size(struct dec *D, const uint8_t *t, size_t left, unsigned version,
                      const struct rmv_stream_info *si, uint64_t at, long *out)
{
    unsigned type = t[0] & 0xf;
    long size;
    switch (type) {
    case RMV_TK_TIMESTAMP: size = 12; break;
    case RMV_TK_RESOURCE_UPDATE: size = 16; break;
    case RMV_TK_PAGE_TABLE_UPDATE: size = 18; break;
    case RMV_TK_USERDATA: size = left >= 4 ? 4 + (long)((rd32(t) >> 12) & 0xfffff) : 4; break;
    case RMV_TK_MISC: size = 2; break;
    case RMV_TK_RESOURCE_REFERENCE: size = 8; break;
    case RMV_TK_RESOURCE_BIND: size = 17; break;
    case RMV_TK_PROCESS_EVENT: size = 6; break;
    case RMV_TK_PAGE_REFERENCE: size = 10; break;
    case RMV_TK_CPU_MAP: size = 8; break;
    case RMV_TK_VIRTUAL_FREE: size = 7; break;
    case RMV_TK_VIRTUAL_ALLOCATE: size = 12; break;
    case RMV_TK_RESOURCE_CREATE:
        if (left < 7) {
            size = 7;
            break;
        }
        size = resource_payload(t, left, version);
        if (size < 0)
            return rmv_fail(D, "stream %u (process %u): ResourceCreate at byte %" PRIu64
                               " has resource type %u, whose payload size this importer does not know "
                               "(types after 16, misc internal, such as work graphs): the rest of the stream "
                               "cannot be followed",
                            si->index, si->process_id, at, t[6]);
        size += 7;
        break;
    case RMV_TK_TIME_DELTA: size = 1 + ((t[0] >> 4) & 7); break;
    case RMV_TK_RESOURCE_DESTROY: size = 5; break;
    default:
        return rmv_fail(D, "stream %u (process %u): reserved token type %u at byte %" PRIu64
                           " (the stream is corrupt or lost its place)",
                        si->index, si->process_id, type, at);
    }
    if ((size_t)size > left)
        return rmv_fail(D, "stream %u (process %u): %s token at byte %" PRIu64 " needs %ld bytes, the stream has %zu left",
                        si->index, si->process_id, rmv_token_name[type], at, size, left);
    *out = size;
    return 0;
}

/* A stream's clock: the time of the token being read. */
struct stream_clock {
    uint64_t now;
    int seen_ts;
    uint32_t clock;              /* Hz, from the first Timestamp */
};

/* Time: a timestamp sets it, a time delta or the header nibble advances
 * it (not for the three types whose nibble is data).  Every token needs
 * a time, so none may come before the first Timestamp. */
static int advance_clock(struct dec *D, const uint8_t *t, unsigned type, long size, struct rmv_stream_info *si,
                         uint64_t at, struct stream_clock *c)
{
    if (type == RMV_TK_TIMESTAMP) {
        uint64_t ts = (rd64(t) >> 4) * 32;
        if (c->seen_ts && ts < c->now)
            return rmv_fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " goes back in time",
                            si->index, si->process_id, at);
        if (rd32(t + 8) == 0)
            return rmv_fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " gives a clock of 0 Hz",
                            si->index, si->process_id, at);
        if (c->seen_ts && rd32(t + 8) != c->clock)
            return rmv_fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " changes the clock from %u to %u Hz",
                            si->index, si->process_id, at, c->clock, rd32(t + 8));
        c->clock = rd32(t + 8);
        c->now = ts;
        if (!c->seen_ts)
            si->first_ts = ts;
        c->seen_ts = 1;
    } else if (type == RMV_TK_TIME_DELTA) {
        /* A delta carries 1 to 7 bytes; none means the size field (or
         * the type) is not what the writer wrote. */
        if (size == 1)
            return rmv_fail(D, "stream %u (process %u): TimeDelta token at byte %" PRIu64 " has no delta bytes "
                               "(the stream is corrupt or lost its place)",
                            si->index, si->process_id, at);
        uint64_t d = 0;
        for (long i = 0; i < size - 1; i++)
            d |= (uint64_t)t[1 + i] << (8 * i);
        c->now += d * 32;
    } else if (type != RMV_TK_RESOURCE_DESTROY && type != RMV_TK_PAGE_REFERENCE &&
               type != RMV_TK_RESOURCE_UPDATE) {
        c->now += (uint64_t)((t[0] >> 4) & 0xf) * 32;
    }
    if (!c->seen_ts)
        return rmv_fail(D, "stream %u (process %u): %s token at byte %" PRIu64
                           " before the stream's first Timestamp (its time is unknown)",
                        si->index, si->process_id, rmv_token_name[type], at);
    return 0;
}

/* What decoding one token found: the event to keep (keep), or the field
 * whose value no writer produces (bad).  The token readers below return
 * 1 when the decode stops (an anomaly refused, or no memory). */
struct token_out {
    struct rmv_ev e;
    int keep;
    const char *bad;
};

static int page_table_update(struct dec *D, const uint8_t *t, struct rmv_stream_info *si, uint64_t at,
                             struct token_out *o)
{
    struct rmv_ev *e = &o->e;
    e->va = bits(t, 43, 8) << 12;
    e->pa = bits(t, 79, 44) << 12;
    e->size = bits(t, 99, 80);
    e->page_size = (uint8_t)bits(t, 102, 100);
    e->unmap = (uint8_t)bits(t, 103, 103);
    e->pid = bits(t, 135, 104);
    e->update_type = (uint8_t)bits(t, 137, 136);
    if (!page_bytes[e->page_size])
        o->bad = "a page size that is none of 4 KiB .. 2 MiB";
    else if (e->update_type == 3)
        o->bad = "the reserved update type 3";
    else if (e->size == 0 && e->update_type == 1)
        o->bad = "no pages (a mapping update must map some)";
    /* Local pages lie in the heap table's local heaps; system
     * pages are recorded as physical address 0. */
    else if (e->pa && D->imp->local_size && !in_heap(e->pa, D->imp->local_base, D->imp->local_size) &&
             !in_heap(e->pa, D->imp->invisible_base, D->imp->invisible_size) &&
             anomaly(D, &D->imp->anomalies.pte_outside_heaps, si,
                     "PageTableUpdate of physical memory in no local heap", at))
        return 1;
    si->unmaps += e->unmap;
    si->pte_update_type[e->update_type]++;
    o->keep = 1;
    return 0;
}

static int virtual_free(struct dec *D, const uint8_t *t, struct rmv_stream_info *si, uint64_t at,
                        struct token_out *o)
{
    const uint64_t pid = si->process_id;
    o->e.va = bits(t, 55, 8);
    size_t i;
    if (vas_exact(&D->vas, pid, o->e.va, &i)) {
        memmove(D->vas.r + i, D->vas.r + i + 1, (D->vas.n - i - 1) * sizeof *D->vas.r);
        D->vas.n--;
    } else if (anomaly(D, &D->imp->anomalies.free_unknown, si, "VirtualFree of an address never allocated", at))
        return 1;
    o->keep = 1;
    return 0;
}

static int virtual_allocate(struct dec *D, const uint8_t *t, unsigned version, struct rmv_stream_info *si,
                            uint64_t at, struct token_out *o)
{
    const uint64_t pid = si->process_id;
    struct rmv_ev *e = &o->e;
    e->size = (bits(t, 31, 8) + 1) * 4096;
    e->owner = (uint8_t)bits(t, 33, 32);
    e->va = bits(t, 81, 34);
    unsigned count = 4;
    for (unsigned i = 0; i < 4; i++) {
        e->pref[i] = (uint8_t)bits(t, 83 + 2 * i, 82 + 2 * i);
        if (e->pref[i] == RMV_HEAP_NONE)
            e->pref[i] = RMV_HEAP_SYSTEM;   /* GART cachable/USWC flattening, as the reference does */
    }
    if (version >= 16) {
        count = (unsigned)bits(t, 92, 90);
        if (count > 4)
            o->bad = "more than 4 heap preferences";
    }
    for (unsigned i = count; i < 4; i++)
        e->pref[i] = RMV_HEAP_NONE;
    e->heap_count = (uint8_t)(count > 4 ? 4 : count);
    si->owner[e->owner]++;
    size_t i;
    if (vas_exact(&D->vas, pid, e->va, &i) &&
        anomaly(D, &D->imp->anomalies.alloc_duplicate, si, "VirtualAllocate at an address already allocated", at))
        return 1;
    if (!(i < D->vas.n && D->vas.r[i].pid == pid && D->vas.r[i].va == e->va) &&
        vas_insert(&D->vas, i, pid, e->va, e->size))
        return rmv_fail(D, "out of memory");
    o->keep = 1;
    return 0;
}

static int resource_create(struct dec *D, const uint8_t *t, struct rmv_stream_info *si, uint64_t at,
                           struct token_out *o)
{
    const uint64_t pid = si->process_id;
    uint64_t id = bits(t, 39, 8);
    si->resource_type[t[6]]++;
    const uint8_t *pl = t + 7;   /* the payload */
    if (bits(t, 47, 46) == 3)
        o->bad = "the reserved commit type 3";
    else if (t[6] == 14 && t[9] > 8)
        o->bad = "a descriptor pool of more than 8 pool sizes";
    else if (t[6] == 15 && (bits(pl, 7, 4) > 3 || bits(pl, 123, 120) > 3 || bits(pl, 239, 236) > 3))
        o->bad = "a command allocator whose preferred heaps are none of local, invisible, system, none";
    else if (t[6] == 15 && (bits(pl, 119, 64) > bits(pl, 63, 8) || bits(pl, 235, 180) > bits(pl, 179, 124) ||
                            bits(pl, 351, 296) > bits(pl, 295, 240)))
        o->bad = "a command allocator whose sub-allocations exceed its allocations";
    else if (t[6] == 0 && bits(pl, 36, 35) == 3)
        o->bad = "an image of the reserved type 3";
    else if (t[6] == 11 && bits(pl, 73, 69) > 5)
        o->bad = "a heap whose alignment is none of the page sizes";
    if (kset_has(&D->resources, pid << 32 | id)) {
        if (anomaly(D, &D->imp->anomalies.create_duplicate, si, "ResourceCreate of a live resource id", at))
            return 1;
    } else if (kset_put(&D->resources, pid << 32 | id, 1))
        return rmv_fail(D, "out of memory");
    return 0;
}

/* The checks of one token's closed fields and the references it makes
 * to what the stream created before; the replayable event it carries. */
static int decode_token(struct dec *D, const uint8_t *t, long size, unsigned version, struct rmv_stream_info *si,
                        uint64_t at, struct token_out *o)
{
    const uint64_t pid = si->process_id;
    switch (t[0] & 0xf) {
    case RMV_TK_RESOURCE_UPDATE:
        if (version <= 18)
            o->bad = "no place in a stream of RMT 1.8 or older (the token came later)";
        else if (bits(t, 77, 72) >= RMV_RESOURCE_TYPES)
            o->bad = "an unknown resource type";
        return 0;
    case RMV_TK_PAGE_TABLE_UPDATE:
        return page_table_update(D, t, si, at, o);
    case RMV_TK_USERDATA: {
        unsigned ut = (unsigned)bits(t, 11, 8);
        if (ut == 3 || ut > 6)
            o->bad = "a reserved user-data kind";
        else if (ut == 0 && !name_payload(t + 4, (size_t)size - 4))
            o->bad = "a name that is not text, a NUL and a 4-byte id";
        else
            si->userdata_type[ut]++;
        return 0;
    }
    case RMV_TK_MISC:
        if (bits(t, 11, 8) > 6)
            o->bad = "a reserved misc event kind";
        return 0;
    case RMV_TK_RESOURCE_REFERENCE:
        o->e.unmap = (uint8_t)bits(t, 8, 8);   /* 0 add, 1 remove */
        o->e.va = bits(t, 56, 9);
        if (!vas_contains(&D->vas, pid, o->e.va) &&
            anomaly(D, &D->imp->anomalies.reference_unknown, si, "ResourceReference outside every live allocation",
                    at))
            return 1;
        o->keep = 1;
        return 0;
    case RMV_TK_RESOURCE_BIND:
        if (bits(t, 99, 56) == 0)
            o->bad = "a size of 0";
        else if (!kset_has(&D->resources, pid << 32 | bits(t, 135, 104)) &&
                 anomaly(D, &D->imp->anomalies.bind_unknown, si, "ResourceBind of a resource never created", at))
            return 1;
        return 0;
    case RMV_TK_PROCESS_EVENT:
        if (bits(t, 47, 40) > 1)
            o->bad = "an event that is neither start nor stop";
        return 0;
    case RMV_TK_PAGE_REFERENCE:
        if (!page_bytes[bits(t, 10, 8)])
            o->bad = "a page size that is none of 4 KiB .. 2 MiB";
        return 0;
    case RMV_TK_CPU_MAP:
        return !vas_contains(&D->vas, pid, bits(t, 55, 8)) &&
               anomaly(D, &D->imp->anomalies.reference_unknown, si, "CpuMap outside every live allocation", at);
    case RMV_TK_VIRTUAL_FREE:
        return virtual_free(D, t, si, at, o);
    case RMV_TK_VIRTUAL_ALLOCATE:
        return virtual_allocate(D, t, version, si, at, o);
    case RMV_TK_RESOURCE_CREATE:
        return resource_create(D, t, si, at, o);
    case RMV_TK_RESOURCE_DESTROY:
        return !kset_del(&D->resources, pid << 32 | bits(t, 39, 8)) &&
               anomaly(D, &D->imp->anomalies.destroy_unknown, si, "ResourceDestroy of a resource never created", at);
    default:
        return 0;
    }
}

/* Decode one token stream, token by token: its size, its time, its
 * count, its checks and event; a field no writer produces stops the
 * stream. */
int rmv_decode_stream(struct dec *D, const uint8_t *p, size_t n, struct rmv_stream_info *si, uint64_t off0)
{
    size_t off = 0;
    struct stream_clock c = { 0, 0, 0 };
    const unsigned version = si->major * 10u + si->minor;
    while (off < n) {
        const uint8_t *t = p + off;
        const uint64_t at = off0 + off;
        unsigned type = t[0] & 0xf;
        long size = 0;
        if (token_size(D, t, n - off, version, si, at, &size) || advance_clock(D, t, type, size, si, at, &c))
            return 1;
        si->tokens[type]++;
        si->token_bytes[type] += (uint64_t)size;
        struct token_out o;
        memset(&o, 0, sizeof o);
        o.e.ts = c.now;
        o.e.type = (uint8_t)type;
        o.e.pid = si->process_id;
        if (decode_token(D, t, size, version, si, at, &o))
            return 1;
        if (o.bad)
            return rmv_fail(D, "stream %u (process %u): %s token at byte %" PRIu64 " has %s "
                               "(the stream is corrupt or lost its place)",
                            si->index, si->process_id, rmv_token_name[type], at, o.bad);
        if (o.keep && push(D, &o.e))
            return 1;
        off += (size_t)size;
    }
    si->last_ts = c.now;
    return 0;
}
