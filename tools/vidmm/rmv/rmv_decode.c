/*
 * rmv_decode.c - reading an RMV file whole (see rmv.h).
 *
 * Containers.  "AMD_RDF " (libamdrdf): a 32-byte header (format version,
 * the chunk index's offset and size) and 64-byte index entries (the
 * chunk's identifier, compression, version, header offset and size,
 * data offset and size, uncompressed size).  The importer requires the
 * header, the chunks' headers and data and the index to tile the file
 * exactly: an overlap, a gap or a region past the end means the index
 * cannot be trusted, and nothing read through it could be.  Chunks:
 *
 *   GpuMemSegment   the heap table: three (type, physical base, size)
 *                   records, local, invisible, system, in that order;
 *   AdapterInfo     the adapter's name, PCI ids, clocks, memory bus;
 *   SystemInfo      JSON; its "heaps" and adapter name must agree with
 *                   the two chunks above when both are present;
 *   RmtData         one chunk of a token stream: a 24-byte header
 *                   (process id, thread id, payload size, stream index,
 *                   RMT version); chunks of one stream index are
 *                   concatenated in file order, as AMD's parser does, so
 *                   a token may straddle two chunks;
 *   RmvSnapshotData a named point in time (name, time, name length).
 *
 * Other chunk identifiers are named and counted in the summary as not
 * read.  The legacy RMT file (magic 0x494e494d): a header, then chunks
 * with 16-byte headers that must tile the file; type 3 is RMT data
 * (process id, thread id, tokens), the others are named and counted.
 * Compressed RDF chunks are refused (the sample and Mesa's traces are
 * uncompressed).
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
#include "rmv.h"
#include "rmv_int.h"

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

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ---- the decoder's state -------------------------------------------- */

/* A set of 64-bit keys with a size each (open addressing; key 0 is
 * stored as the empty slot's complement, so any key fits). */
struct kset {
    uint64_t *key, *val;
    size_t cap, n;
};

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

static void kset_free(struct kset *s)
{
    free(s->key);
    free(s->val);
}

/* Live virtual allocations, sorted by (process, address): a reference
 * or CPU map must fall inside one. */
struct vrange {
    uint64_t pid, va, size;
};

struct vas {
    struct vrange *r;
    size_t n, cap;
};

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

struct dec {
    const char *name;
    FILE *err;
    struct rmv_import *imp;
    struct rmv_evs *ev;          /* NULL: events not kept */
    struct vas vas;              /* live virtual allocations */
    struct kset resources;       /* (pid, resource id) */
    int lenient;                 /* anomalies counted, not refused */
    char *system_info;           /* the SystemInfo JSON, NUL-terminated (NULL: none) */
    int failed;
};

static int fail(struct dec *D, const char *fmt, ...)
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
            return fail(D, "out of memory");
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
    return fail(D, "stream %u (process %u): %s at byte %" PRIu64 " (the stream is corrupt or lost its place; "
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

/* Decode one token stream: count every token, check every closed field,
 * keep the replayable ones.  off0 is the stream's first byte's place in
 * the file, for messages. */
static int decode_stream(struct dec *D, const uint8_t *p, size_t n, struct rmv_stream_info *si, uint64_t off0)
{
    size_t off = 0;
    uint64_t now = 0;
    int seen_ts = 0;
    uint32_t clock = 0;
    const unsigned version = si->major * 10u + si->minor;
    const uint64_t pid = si->process_id;
    while (off < n) {
        const uint8_t *t = p + off;
        const size_t left = n - off;
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
                return fail(D, "stream %u (process %u): ResourceCreate at byte %" PRIu64
                               " has resource type %u, whose payload size this importer does not know "
                               "(types after 16, misc internal, such as work graphs): the rest of the stream "
                               "cannot be followed",
                            si->index, si->process_id, off0 + off, t[6]);
            size += 7;
            break;
        case RMV_TK_TIME_DELTA: size = 1 + ((t[0] >> 4) & 7); break;
        case RMV_TK_RESOURCE_DESTROY: size = 5; break;
        default:
            return fail(D, "stream %u (process %u): reserved token type %u at byte %" PRIu64
                           " (the stream is corrupt or lost its place)",
                        si->index, si->process_id, type, off0 + off);
        }
        if ((size_t)size > left)
            return fail(D, "stream %u (process %u): %s token at byte %" PRIu64 " needs %ld bytes, the stream has %zu left",
                        si->index, si->process_id, rmv_token_name[type], off0 + off, size, left);
        /* Time: a timestamp sets it, a time delta or the header nibble
         * advances it (not for the three types whose nibble is data). */
        if (type == RMV_TK_TIMESTAMP) {
            uint64_t ts = (rd64(t) >> 4) * 32;
            if (seen_ts && ts < now)
                return fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " goes back in time",
                            si->index, si->process_id, off0 + off);
            if (rd32(t + 8) == 0)
                return fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " gives a clock of 0 Hz",
                            si->index, si->process_id, off0 + off);
            if (seen_ts && rd32(t + 8) != clock)
                return fail(D, "stream %u (process %u): Timestamp at byte %" PRIu64 " changes the clock from %u to %u Hz",
                            si->index, si->process_id, off0 + off, clock, rd32(t + 8));
            clock = rd32(t + 8);
            now = ts;
            if (!seen_ts)
                si->first_ts = ts;
            seen_ts = 1;
        } else if (type == RMV_TK_TIME_DELTA) {
            /* A delta carries 1 to 7 bytes; none means the size field (or
             * the type) is not what the writer wrote. */
            if (size == 1)
                return fail(D, "stream %u (process %u): TimeDelta token at byte %" PRIu64 " has no delta bytes "
                               "(the stream is corrupt or lost its place)",
                            si->index, si->process_id, off0 + off);
            uint64_t d = 0;
            for (long i = 0; i < size - 1; i++)
                d |= (uint64_t)t[1 + i] << (8 * i);
            now += d * 32;
        } else if (type != RMV_TK_RESOURCE_DESTROY && type != RMV_TK_PAGE_REFERENCE &&
                   type != RMV_TK_RESOURCE_UPDATE) {
            now += (uint64_t)((t[0] >> 4) & 0xf) * 32;
        }
        if (!seen_ts)
            return fail(D, "stream %u (process %u): %s token at byte %" PRIu64
                           " before the stream's first Timestamp (its time is unknown)",
                        si->index, si->process_id, rmv_token_name[type], off0 + off);
        si->tokens[type]++;
        si->token_bytes[type] += (uint64_t)size;
        struct rmv_ev e;
        memset(&e, 0, sizeof e);
        e.ts = now;
        e.type = (uint8_t)type;
        e.pid = pid;
        int keep = 0;
        const char *bad = NULL;
        switch (type) {
        case RMV_TK_RESOURCE_UPDATE:
            if (version <= 18)
                bad = "no place in a stream of RMT 1.8 or older (the token came later)";
            else if (bits(t, 77, 72) >= RMV_RESOURCE_TYPES)
                bad = "an unknown resource type";
            break;
        case RMV_TK_PAGE_TABLE_UPDATE:
            e.va = bits(t, 43, 8) << 12;
            e.pa = bits(t, 79, 44) << 12;
            e.size = bits(t, 99, 80);
            e.page_size = (uint8_t)bits(t, 102, 100);
            e.unmap = (uint8_t)bits(t, 103, 103);
            e.pid = bits(t, 135, 104);
            e.update_type = (uint8_t)bits(t, 137, 136);
            if (!page_bytes[e.page_size])
                bad = "a page size that is none of 4 KiB .. 2 MiB";
            else if (e.update_type == 3)
                bad = "the reserved update type 3";
            else if (e.size == 0 && e.update_type == 1)
                bad = "no pages (a mapping update must map some)";
            /* Local pages lie in the heap table's local heaps; system
             * pages are recorded as physical address 0. */
            else if (e.pa && D->imp->local_size && !in_heap(e.pa, D->imp->local_base, D->imp->local_size) &&
                     !in_heap(e.pa, D->imp->invisible_base, D->imp->invisible_size) &&
                     anomaly(D, &D->imp->anomalies.pte_outside_heaps, si,
                             "PageTableUpdate of physical memory in no local heap", off0 + off))
                return 1;
            si->unmaps += e.unmap;
            si->pte_update_type[e.update_type]++;
            keep = 1;
            break;
        case RMV_TK_USERDATA: {
            unsigned ut = (unsigned)bits(t, 11, 8);
            if (ut == 3 || ut > 6)
                bad = "a reserved user-data kind";
            else if (ut == 0 && !name_payload(t + 4, (size_t)size - 4))
                bad = "a name that is not text, a NUL and a 4-byte id";
            else
                si->userdata_type[ut]++;
            break;
        }
        case RMV_TK_MISC:
            if (bits(t, 11, 8) > 6)
                bad = "a reserved misc event kind";
            break;
        case RMV_TK_RESOURCE_REFERENCE:
            e.unmap = (uint8_t)bits(t, 8, 8);   /* 0 add, 1 remove */
            e.va = bits(t, 56, 9);
            if (!vas_contains(&D->vas, pid, e.va) &&
                anomaly(D, &D->imp->anomalies.reference_unknown, si, "ResourceReference outside every live allocation",
                        off0 + off))
                return 1;
            keep = 1;
            break;
        case RMV_TK_RESOURCE_BIND: {
            uint64_t id = bits(t, 135, 104);
            if (bits(t, 99, 56) == 0)
                bad = "a size of 0";
            else if (!kset_has(&D->resources, pid << 32 | id) &&
                     anomaly(D, &D->imp->anomalies.bind_unknown, si, "ResourceBind of a resource never created", off0 + off))
                return 1;
            break;
        }
        case RMV_TK_PROCESS_EVENT:
            if (bits(t, 47, 40) > 1)
                bad = "an event that is neither start nor stop";
            break;
        case RMV_TK_PAGE_REFERENCE:
            if (!page_bytes[bits(t, 10, 8)])
                bad = "a page size that is none of 4 KiB .. 2 MiB";
            break;
        case RMV_TK_CPU_MAP:
            if (!vas_contains(&D->vas, pid, bits(t, 55, 8)) &&
                anomaly(D, &D->imp->anomalies.reference_unknown, si, "CpuMap outside every live allocation", off0 + off))
                return 1;
            break;
        case RMV_TK_VIRTUAL_FREE: {
            e.va = bits(t, 55, 8);
            size_t at;
            if (vas_exact(&D->vas, pid, e.va, &at)) {
                memmove(D->vas.r + at, D->vas.r + at + 1, (D->vas.n - at - 1) * sizeof *D->vas.r);
                D->vas.n--;
            } else if (anomaly(D, &D->imp->anomalies.free_unknown, si, "VirtualFree of an address never allocated", off0 + off))
                return 1;
            keep = 1;
            break;
        }
        case RMV_TK_VIRTUAL_ALLOCATE: {
            e.size = (bits(t, 31, 8) + 1) * 4096;
            e.owner = (uint8_t)bits(t, 33, 32);
            e.va = bits(t, 81, 34);
            unsigned count = 4;
            for (unsigned i = 0; i < 4; i++) {
                e.pref[i] = (uint8_t)bits(t, 83 + 2 * i, 82 + 2 * i);
                if (e.pref[i] == RMV_HEAP_NONE)
                    e.pref[i] = RMV_HEAP_SYSTEM;   /* GART cachable/USWC flattening, as the reference does */
            }
            if (version >= 16) {
                count = (unsigned)bits(t, 92, 90);
                if (count > 4)
                    bad = "more than 4 heap preferences";
            }
            for (unsigned i = count; i < 4; i++)
                e.pref[i] = RMV_HEAP_NONE;
            e.heap_count = (uint8_t)(count > 4 ? 4 : count);
            si->owner[e.owner]++;
            size_t at;
            if (vas_exact(&D->vas, pid, e.va, &at) &&
                anomaly(D, &D->imp->anomalies.alloc_duplicate, si, "VirtualAllocate at an address already allocated",
                        off0 + off))
                return 1;
            if (!(at < D->vas.n && D->vas.r[at].pid == pid && D->vas.r[at].va == e.va) &&
                vas_insert(&D->vas, at, pid, e.va, e.size))
                return fail(D, "out of memory");
            keep = 1;
            break;
        }
        case RMV_TK_RESOURCE_CREATE: {
            uint64_t id = bits(t, 39, 8);
            si->resource_type[t[6]]++;
            const uint8_t *pl = t + 7;   /* the payload */
            if (bits(t, 47, 46) == 3)
                bad = "the reserved commit type 3";
            else if (t[6] == 14 && t[9] > 8)
                bad = "a descriptor pool of more than 8 pool sizes";
            else if (t[6] == 15 && (bits(pl, 7, 4) > 3 || bits(pl, 123, 120) > 3 || bits(pl, 239, 236) > 3))
                bad = "a command allocator whose preferred heaps are none of local, invisible, system, none";
            else if (t[6] == 15 && (bits(pl, 119, 64) > bits(pl, 63, 8) || bits(pl, 235, 180) > bits(pl, 179, 124) ||
                                    bits(pl, 351, 296) > bits(pl, 295, 240)))
                bad = "a command allocator whose sub-allocations exceed its allocations";
            else if (t[6] == 0 && bits(pl, 36, 35) == 3)
                bad = "an image of the reserved type 3";
            else if (t[6] == 11 && bits(pl, 73, 69) > 5)
                bad = "a heap whose alignment is none of the page sizes";
            if (kset_has(&D->resources, pid << 32 | id)) {
                if (anomaly(D, &D->imp->anomalies.create_duplicate, si, "ResourceCreate of a live resource id", off0 + off))
                    return 1;
            } else if (kset_put(&D->resources, pid << 32 | id, 1))
                return fail(D, "out of memory");
            break;
        }
        case RMV_TK_RESOURCE_DESTROY:
            if (!kset_del(&D->resources, pid << 32 | bits(t, 39, 8)) &&
                anomaly(D, &D->imp->anomalies.destroy_unknown, si, "ResourceDestroy of a resource never created",
                        off0 + off))
                return 1;
            break;
        default:
            break;
        }
        if (bad)
            return fail(D, "stream %u (process %u): %s token at byte %" PRIu64 " has %s "
                           "(the stream is corrupt or lost its place)",
                        si->index, si->process_id, rmv_token_name[type], off0 + off, bad);
        if (keep && push(D, &e))
            return 1;
        off += (size_t)size;
    }
    si->last_ts = now;
    return 0;
}

/* ---- chunks ------------------------------------------------------------ */

static struct rmv_chunk_kind *chunk_kind(struct rmv_import *imp, const char *id)
{
    for (uint32_t i = 0; i < imp->chunk_kinds; i++)
        if (!strcmp(imp->chunk[i].id, id))
            return &imp->chunk[i];
    if (imp->chunk_kinds == RMV_MAX_CHUNK_KINDS)
        return NULL;
    struct rmv_chunk_kind *k = &imp->chunk[imp->chunk_kinds++];
    snprintf(k->id, sizeof k->id, "%s", id);
    return k;
}

/* The JSON of SystemInfo is well formed as far as the importer can
 * tell without a full parser: printable, strings closed, brackets
 * balanced, one value that ends with the chunk. */
static int json_whole(const char *js, size_t n)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)js[i];
        if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
            return 0;
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"')
            in_str = 1;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth < 0)
                return 0;
            if (depth == 0) {
                while (++i < n && (js[i] == ' ' || js[i] == '\n' || js[i] == '\r' || js[i] == '\t' || js[i] == '\0'))
                    ;
                return i == n;
            }
        }
    }
    return 0;
}

/* "key":{"physicalAddress":N,"size":N} in the SystemInfo JSON. */
static int json_heap(const char *js, const char *key, uint64_t *base, uint64_t *size)
{
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\":{", key);
    const char *s = strstr(js, pat);
    if (!s)
        return 0;
    s += strlen(pat);
    const char *pa = strstr(s, "\"physicalAddress\":"), *sz = strstr(s, "\"size\":");
    if (!pa || !sz || pa - s > 64 || sz - s > 64)
        return 0;
    *base = strtoull(pa + 18, NULL, 10);
    *size = strtoull(sz + 7, NULL, 10);
    return 1;
}

static int read_system_info(struct dec *D, const uint8_t *p, uint64_t n)
{
    char *js = malloc(n + 1);
    if (!js)
        return fail(D, "out of memory for the SystemInfo chunk");
    memcpy(js, p, n);
    js[n] = '\0';
    int rc = 0;
    struct rmv_import *imp = D->imp;
    if (!json_whole(js, n)) {
        rc = fail(D, "SystemInfo chunk is not one whole JSON value");
    } else {
        uint64_t lb = 0, ls = 0, ib = 0, is = 0;
        int have = json_heap(js, "local", &lb, &ls) && json_heap(js, "invisible", &ib, &is);
        if (have && imp->have_segments &&
            (lb != imp->local_base || ls != imp->local_size || ib != imp->invisible_base || is != imp->invisible_size))
            rc = fail(D, "SystemInfo's heaps (local %" PRIu64 "@0x%" PRIx64 ", invisible %" PRIu64 "@0x%" PRIx64
                         ") disagree with the GpuMemSegment heap table",
                      ls, lb, is, ib);
        else if (have && !imp->have_segments) {
            imp->local_base = lb;
            imp->local_size = ls;
            imp->invisible_base = ib;
            imp->invisible_size = is;
        }
        const char *nm = strstr(js, "\"gpus\":[");
        const char *q = nm ? strstr(nm, "\"name\":\"") : NULL;
        if (!rc && q) {
            char name[129];
            size_t k = 0;
            for (q += 8; *q && *q != '"' && k + 1 < sizeof name; q++)
                name[k++] = *q;
            name[k] = '\0';
            int printable = 1;
            for (size_t i = 0; i < k; i++)
                printable &= name[i] >= 0x20 && name[i] <= 0x7e;
            if (!printable)
                rc = fail(D, "SystemInfo's adapter name holds a non-printable byte");
            else if (imp->have_adapter_info && strcmp(name, imp->adapter))
                rc = fail(D, "SystemInfo names the adapter '%s', AdapterInfo '%s'", name, imp->adapter);
            else if (!imp->have_adapter_info)
                snprintf(imp->adapter, sizeof imp->adapter, "%s", name);
        }
        imp->have_system_info = 1;
        imp->processes_listed = strstr(js, "\"processId\":") != NULL;
    }
    D->system_info = js;
    return rc;
}

static int read_segments(struct dec *D, const uint8_t *p, uint64_t n)
{
    struct rmv_import *imp = D->imp;
    if (n != 72)
        return fail(D, "GpuMemSegment chunk holds %" PRIu64 " bytes, not three 24-byte heap records", n);
    for (unsigned i = 0; i < 3; i++) {
        const uint8_t *r = p + 24 * i;
        if (rd32(r) != i || rd32(r + 4) != 0)
            return fail(D, "GpuMemSegment record %u is of heap type %u, not %u", i, rd32(r), i);
    }
    imp->local_base = rd64(p + 8);
    imp->local_size = rd64(p + 16);
    imp->invisible_base = rd64(p + 32);
    imp->invisible_size = rd64(p + 40);
    imp->system_size = rd64(p + 64);
    if (!imp->local_size || imp->local_base + imp->local_size < imp->local_base ||
        imp->invisible_base + imp->invisible_size < imp->invisible_base ||
        (imp->invisible_size && imp->invisible_base < imp->local_base + imp->local_size &&
         imp->local_base < imp->invisible_base + imp->invisible_size))
        return fail(D, "GpuMemSegment heaps are empty, wrap or overlap (local %" PRIu64 "@0x%" PRIx64
                       ", invisible %" PRIu64 "@0x%" PRIx64 ")",
                    imp->local_size, imp->local_base, imp->invisible_size, imp->invisible_base);
    imp->have_segments = 1;
    return 0;
}

static int read_adapter_info(struct dec *D, const uint8_t *p, uint64_t n)
{
    struct rmv_import *imp = D->imp;
    if (n != 172)
        return fail(D, "AdapterInfo chunk holds %" PRIu64 " bytes, not 172", n);
    size_t len = strnlen((const char *)p, 128);
    if (len == 0 || len == 128)
        return fail(D, "AdapterInfo's name is empty or not terminated");
    for (size_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return fail(D, "AdapterInfo's name holds a non-printable byte");
    memcpy(imp->adapter, p, len);
    imp->adapter[len] = '\0';
    imp->family_id = rd32(p + 128);
    imp->revision_id = rd32(p + 132);
    imp->device_id = rd32(p + 136);
    imp->memory_bus_width = rd32(p + 156);
    imp->min_mem_clock = rd32(p + 164);
    imp->max_mem_clock = rd32(p + 168);
    if (rd32(p + 140) > rd32(p + 144) || imp->min_mem_clock > imp->max_mem_clock)
        return fail(D, "AdapterInfo's minimum clocks exceed its maximum clocks");
    imp->have_adapter_info = 1;
    return 0;
}

static int read_snapshot(struct dec *D, const uint8_t *p, uint64_t n)
{
    struct rmv_import *imp = D->imp;
    if (n != 144)
        return fail(D, "RmvSnapshotData chunk holds %" PRIu64 " bytes, not 144", n);
    uint32_t len = rd32(p + 136);
    if (len == 0 || len >= 128 || strnlen((const char *)p, 128) != len)
        return fail(D, "RmvSnapshotData's name length (%u) does not match its name", len);
    for (uint32_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return fail(D, "RmvSnapshotData's name holds a non-printable byte");
    if (imp->snapshots < RMV_MAX_SNAPSHOTS) {
        struct rmv_snapshot *s = &imp->snapshot[imp->snapshots];
        memcpy(s->name, p, len);
        s->name[len] = '\0';
        s->point = rd64(p + 128);
    }
    imp->snapshots++;
    return 0;
}

/* One RmtData chunk of the RDF container. */
struct data_chunk {
    uint64_t off, size;
    uint32_t pid, tid, index;
    uint16_t major, minor;
};

static int by_stream(const void *pa, const void *pb)
{
    const struct data_chunk *a = pa, *b = pb;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* Decode the streams the RmtData chunks make (chunks of one stream index
 * concatenated in file order). */
static int decode_streams(struct dec *D, const uint8_t *d, struct data_chunk *dc, size_t ndc)
{
    struct rmv_import *imp = D->imp;
    qsort(dc, ndc, sizeof *dc, by_stream);
    for (size_t i = 0; i < ndc && !D->failed;) {
        size_t j = i;
        uint64_t total = 0;
        while (j < ndc && dc[j].index == dc[i].index) {
            if (dc[j].pid != dc[i].pid || dc[j].major != dc[i].major || dc[j].minor != dc[i].minor)
                return fail(D, "RmtData chunks of stream %u disagree on the process or RMT version", dc[i].index);
            total += dc[j].size;
            j++;
        }
        if (imp->streams == RMV_MAX_STREAMS)
            return fail(D, "more than %d token streams", RMV_MAX_STREAMS);
        struct rmv_stream_info *si = &imp->stream[imp->streams++];
        si->process_id = dc[i].pid;
        si->thread_id = dc[i].tid;
        si->index = dc[i].index;
        si->major = dc[i].major;
        si->minor = dc[i].minor;
        si->chunks = (uint32_t)(j - i);
        si->bytes = total;
        if (j == i + 1) {
            decode_stream(D, d + dc[i].off, dc[i].size, si, dc[i].off);
        } else {
            uint8_t *cat = malloc(total ? total : 1);
            if (!cat)
                return fail(D, "out of memory");
            uint64_t at = 0;
            for (size_t k = i; k < j; k++) {
                memcpy(cat + at, d + dc[k].off, dc[k].size);
                at += dc[k].size;
            }
            /* Byte positions in messages are within the joined stream. */
            decode_stream(D, cat, total, si, 0);
            free(cat);
        }
        i = j;
    }
    return D->failed;
}

/* The known chunk identifier that the 16 bytes at e differ from in
 * exactly one bit, or NULL: such an identifier is far likelier a
 * corrupt entry than a new kind of chunk. */
static const char *near_known(const uint8_t *e)
{
    static const char *const known[] = { "GpuMemSegment", "AdapterInfo", "SystemInfo", "RmtData",
                                         "RmvSnapshotData", "RmvSnapshotIndex" };
    for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
        char want[16] = { 0 };
        memcpy(want, known[k], strlen(known[k]) < 16 ? strlen(known[k]) : 16);
        unsigned diff = 0;
        for (size_t i = 0; i < 16; i++)
            diff += (unsigned)__builtin_popcount((unsigned)(e[i] ^ (uint8_t)want[i]));
        if (diff == 1)
            return known[k];
    }
    return NULL;
}

/* A region of the file that the index claims. */
struct region {
    uint64_t off, size;
};

static int by_offset(const void *pa, const void *pb)
{
    const struct region *a = pa, *b = pb;
    return a->off < b->off ? -1 : a->off > b->off;
}

static int decode_rdf(struct dec *D, const uint8_t *d, size_t n)
{
    struct rmv_import *imp = D->imp;
    snprintf(imp->container, sizeof imp->container, "RDF");
    imp->container_version = rd32(d + 8);
    if (imp->container_version < 2 || imp->container_version > 3)
        return fail(D, "RDF container version %u (this importer reads 2 and 3)", imp->container_version);
    uint64_t io = rd64(d + 16), isz = rd64(d + 24);
    if (io < 32 || io > n || isz > n - io || isz % 64 || isz == 0)
        return fail(D, "the chunk index (%" PRIu64 " bytes at %" PRIu64 ") does not fit the %zu-byte file", isz, io, n);
    size_t entries = (size_t)(isz / 64);
    struct region *reg = calloc(2 * entries + 2, sizeof *reg);
    struct data_chunk *dc = calloc(entries, sizeof *dc);
    size_t nreg = 0, ndc = 0;
    if (!reg || !dc) {
        free(reg);
        free(dc);
        return fail(D, "out of memory");
    }
    reg[nreg++] = (struct region){ 0, 32 };
    reg[nreg++] = (struct region){ io, isz };
    /* Pass 1: every entry is sane and claims its bytes. */
    for (size_t i = 0; i < entries && !D->failed; i++) {
        const uint8_t *e = d + io + 64 * i;
        char id[17];
        memcpy(id, e, 16);
        id[16] = '\0';
        size_t idl = strnlen(id, 16);
        int printable = idl > 0;
        for (size_t k = 0; k < 16; k++)
            if (k < idl ? (e[k] < 0x20 || e[k] > 0x7e) : e[k] != 0)
                printable = 0;
        uint64_t ho = rd64(e + 24), hs = rd64(e + 32), dof = rd64(e + 40), ds = rd64(e + 48), us = rd64(e + 56);
        if (!printable) {
            fail(D, "chunk index entry %zu has no identifier (NUL-padded text)", i);
            break;
        }
        if (ho > n || hs > n - ho || dof > n || ds > n - dof) {
            fail(D, "chunk %zu (%s) lies outside the file", i, id);
            break;
        }
        if (e[16] != 0) {
            fail(D, "chunk %zu (%s) is compressed (method %u): compressed chunks are not supported", i, id, e[16]);
            break;
        }
        if (rd32(e + 16) != 0 || (us != 0 && us != ds)) {
            fail(D, "chunk %zu (%s): uncompressed, yet its compression fields are set", i, id);
            break;
        }
        if (hs)
            reg[nreg++] = (struct region){ ho, hs };
        if (ds)
            reg[nreg++] = (struct region){ dof, ds };
        struct rmv_chunk_kind *k = chunk_kind(imp, id);
        if (!k) {
            fail(D, "more than %d kinds of chunk", RMV_MAX_CHUNK_KINDS);
            break;
        }
        k->count++;
        k->bytes += hs + ds;
        if (!strcmp(id, "RmtData")) {
            if (hs != 24) {
                fail(D, "RmtData chunk %zu has a %" PRIu64 "-byte header, not 24", i, hs);
                break;
            }
            const uint8_t *h = d + ho;
            if (rd64(h + 8) != ds) {
                fail(D, "RmtData chunk %zu says it holds %" PRIu64 " bytes of tokens, the index %" PRIu64, i, rd64(h + 8),
                     ds);
                break;
            }
            dc[ndc++] = (struct data_chunk){ dof, ds, rd32(h), rd32(h + 4), rd32(h + 16),
                                             (uint16_t)(h[20] | h[21] << 8), (uint16_t)(h[22] | h[23] << 8) };
            if (dc[ndc - 1].index >= RMV_MAX_STREAMS)
                fail(D, "RmtData chunk %zu is of stream %u (at most %d streams)", i, dc[ndc - 1].index,
                     RMV_MAX_STREAMS - 1);
        } else if (hs && (!strcmp(id, "GpuMemSegment") || !strcmp(id, "AdapterInfo") || !strcmp(id, "SystemInfo") ||
                          !strcmp(id, "RmvSnapshotData"))) {
            fail(D, "%s chunk %zu has a header (%" PRIu64 " bytes); the format has none", id, i, hs);
        } else if (near_known(e)) {
            fail(D, "chunk %zu's identifier '%s' is one bit from '%s' (a corrupt index entry)", i, id, near_known(e));
        } else if (strcmp(id, "GpuMemSegment") && strcmp(id, "AdapterInfo") && strcmp(id, "SystemInfo") &&
                   strcmp(id, "RmvSnapshotData")) {
            k->skipped = "not an RMV chunk this importer knows (named and counted only)";
        }
    }
    /* The header, the chunks and the index tile the file. */
    if (!D->failed) {
        qsort(reg, nreg, sizeof *reg, by_offset);
        uint64_t at = 0;
        for (size_t i = 0; i < nreg && !D->failed; i++) {
            if (reg[i].off < at)
                fail(D, "chunks overlap at byte %" PRIu64 " (the chunk index is corrupt)", reg[i].off);
            else if (reg[i].off > at)
                fail(D, "bytes %" PRIu64 "..%" PRIu64 " belong to no chunk (the chunk index is corrupt)", at,
                     reg[i].off - 1);
            at = reg[i].off + reg[i].size;
        }
        if (!D->failed && at != n)
            fail(D, "bytes %" PRIu64 "..%zu belong to no chunk (the chunk index is corrupt or the file has a tail)",
                 at, n - 1);
    }
    /* Pass 2: the heap table and the adapter before the system
     * description that must agree with them, the snapshots, the streams. */
    static const char *const order[] = { "GpuMemSegment", "AdapterInfo", "SystemInfo", "RmvSnapshotData" };
    for (size_t o = 0; o < 4 && !D->failed; o++)
        for (size_t i = 0; i < entries && !D->failed; i++) {
            const uint8_t *e = d + io + 64 * i;
            if (strncmp((const char *)e, order[o], 16))
                continue;
            const uint8_t *p = d + rd64(e + 40);
            uint64_t ds = rd64(e + 48);
            if (o == 0) {
                if (imp->have_segments)
                    fail(D, "more than one GpuMemSegment chunk");
                else
                    read_segments(D, p, ds);
            } else if (o == 1) {
                if (imp->have_adapter_info)
                    fail(D, "more than one AdapterInfo chunk");
                else
                    read_adapter_info(D, p, ds);
            } else if (o == 2) {
                if (imp->have_system_info)
                    fail(D, "more than one SystemInfo chunk");
                else
                    read_system_info(D, p, ds);
            } else {
                read_snapshot(D, p, ds);
            }
        }
    if (!D->failed && !ndc)
        fail(D, "no RmtData chunk: the file holds no token stream");
    /* A stream of a process names a process SystemInfo lists. */
    for (size_t i = 0; i < ndc && !D->failed && imp->processes_listed; i++) {
        char pat[40];
        snprintf(pat, sizeof pat, "\"processId\":%u}", dc[i].pid);
        if (dc[i].pid && !strstr(D->system_info, pat))
            fail(D, "RmtData chunk of stream %u is of process %u, which SystemInfo does not list", dc[i].index, dc[i].pid);
    }
    if (!D->failed)
        decode_streams(D, d, dc, ndc);
    free(reg);
    free(dc);
    return D->failed;
}

/* The legacy RMT file: a header, then chunks of 16-byte headers (type in
 * the first byte, version, size). */
static int decode_rmt(struct dec *D, const uint8_t *d, size_t n)
{
    static const char *const legacy[] = { "AsicInfo", "ApiInfo", "SystemInfo", "RmtData",
                                          "SegmentInfo", "ProcessStart", "SnapshotInfo", "AdapterInfo" };
    struct rmv_import *imp = D->imp;
    snprintf(imp->container, sizeof imp->container, "RMT");
    imp->container_version = rd32(d + 4);
    uint64_t off = rd32(d + 16);
    if (off < 20 || off > n)
        return fail(D, "the first chunk's offset (%" PRIu64 ") is outside the file", off);
    while (!D->failed && off < n) {
        if (n - off < 16)
            return fail(D, "%zu stray bytes after the last chunk", (size_t)(n - off));
        const uint8_t *c = d + off;
        uint32_t type = c[0];
        uint64_t size = rd32(c + 8);
        if (size < 16 || size > n - off)
            return fail(D, "chunk at byte %" PRIu64 " claims %" PRIu64 " bytes (the file has %" PRIu64 " left)", off, size,
                        (uint64_t)(n - off));
        char id[17];
        snprintf(id, sizeof id, "%s", type < 8 ? legacy[type] : "unknown");
        struct rmv_chunk_kind *k = chunk_kind(imp, id);
        if (!k)
            return fail(D, "more than %d kinds of chunk", RMV_MAX_CHUNK_KINDS);
        k->count++;
        k->bytes += size;
        if (type == 3) {
            if (size < 32)
                return fail(D, "RmtData chunk at byte %" PRIu64 " is shorter than its header", off);
            if (imp->streams == RMV_MAX_STREAMS)
                return fail(D, "more than %d token streams", RMV_MAX_STREAMS);
            struct rmv_stream_info *si = &imp->stream[imp->streams];
            si->index = imp->streams++;
            si->process_id = (uint32_t)rd64(c + 16);
            si->thread_id = (uint32_t)rd64(c + 24);
            si->minor = (uint16_t)(c[4] | c[5] << 8);
            si->major = (uint16_t)(c[6] | c[7] << 8);
            si->chunks = 1;
            si->bytes = size - 32;
            decode_stream(D, c + 32, size - 32, si, off + 32);
        } else {
            k->skipped = type < 8 ? "legacy-file chunk not decoded (only its token streams are)"
                                  : "unknown legacy chunk type (named and counted only)";
        }
        off += size;
    }
    if (!D->failed && !imp->streams)
        fail(D, "no RMT data chunk: the file holds no token stream");
    return D->failed;
}

static int ev_cmp(const void *pa, const void *pb)
{
    const struct rmv_ev *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void rmv_free_state(void *state)
{
    struct rmv_evs *v = state;
    if (v)
        free(v->e);
    free(v);
}

int rmv_decode(const uint8_t *d, size_t n, const char *name, struct rmv_import *imp, void **state, FILE *err,
               int lenient)
{
    memset(imp, 0, sizeof(*imp));
    if (state)
        *state = NULL;
    struct dec D;
    memset(&D, 0, sizeof D);
    D.name = name;
    D.err = err;
    D.imp = imp;
    D.lenient = lenient;
    if (state && !(D.ev = calloc(1, sizeof *D.ev)))
        return fail(&D, "out of memory");
    if (n >= 32 && !memcmp(d, "AMD_RDF ", 8))
        decode_rdf(&D, d, n);
    else if (n >= 20 && rd32(d) == 0x494e494du)
        decode_rmt(&D, d, n);
    else
        fail(&D, "not an RMV file (no AMD_RDF or RMT magic, or too short)");
    free(D.vas.r);
    free(D.system_info);
    kset_free(&D.resources);
    /* Snapshots name points in the streams' time. */
    for (uint32_t s = 0; !D.failed && s < imp->snapshots && s < RMV_MAX_SNAPSHOTS; s++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (uint32_t k = 0; k < imp->streams; k++) {
            if (imp->stream[k].first_ts < lo)
                lo = imp->stream[k].first_ts;
            if (imp->stream[k].last_ts > hi)
                hi = imp->stream[k].last_ts;
        }
        if (imp->snapshot[s].point < lo || imp->snapshot[s].point > hi)
            fail(&D, "snapshot '%s' is at a time outside every token stream", imp->snapshot[s].name);
    }
    if (D.failed) {
        rmv_free_state(D.ev);
        return 1;
    }
    for (uint32_t s = 0; s < imp->streams; s++)
        for (int k = 0; k < RMV_TOKEN_TYPES; k++)
            imp->tokens[k] += imp->stream[s].tokens[k];
    /* The application: the stream with the most virtual allocations. */
    uint64_t most = 0;
    for (uint32_t s = 0; s < imp->streams; s++)
        if (imp->stream[s].tokens[RMV_TK_VIRTUAL_ALLOCATE] > most) {
            most = imp->stream[s].tokens[RMV_TK_VIRTUAL_ALLOCATE];
            imp->app_pid = imp->stream[s].process_id;
        }
    if (D.ev && D.ev->n)
        qsort(D.ev->e, D.ev->n, sizeof(*D.ev->e), ev_cmp);
    if (state)
        *state = D.ev;
    return 0;
}

/* ---- summary ----------------------------------------------------------- */

void rmv_decode_report(const struct rmv_import *imp, FILE *f)
{
    fprintf(f, "container: %s version %u\n", imp->container, imp->container_version);
    fprintf(f, "chunks:");
    for (uint32_t i = 0; i < imp->chunk_kinds; i++)
        fprintf(f, " %s %u (%" PRIu64 " bytes)%s", imp->chunk[i].id, imp->chunk[i].count, imp->chunk[i].bytes,
                imp->chunk[i].skipped ? " [not read]" : "");
    fputc('\n', f);
    for (uint32_t i = 0; i < imp->chunk_kinds; i++)
        if (imp->chunk[i].skipped)
            fprintf(f, "not read: %u %s chunk%s, %" PRIu64 " bytes: %s\n", imp->chunk[i].count, imp->chunk[i].id,
                    imp->chunk[i].count == 1 ? "" : "s", imp->chunk[i].bytes, imp->chunk[i].skipped);
    if (imp->have_adapter_info)
        fprintf(f, "adapter: %s (family %u, revision %u, device 0x%04x, %u-bit memory bus, memory clock %u..%u MHz)\n",
                imp->adapter, imp->family_id, imp->revision_id, imp->device_id, imp->memory_bus_width,
                imp->min_mem_clock, imp->max_mem_clock);
    else if (imp->adapter[0])
        fprintf(f, "adapter: %s\n", imp->adapter);
    fprintf(f, "heaps (%s): local %" PRIu64 " bytes at 0x%" PRIx64 ", invisible %" PRIu64 " bytes at 0x%" PRIx64,
            imp->have_segments ? "GpuMemSegment" : imp->have_system_info ? "SystemInfo" : "not in the file",
            imp->local_size, imp->local_base, imp->invisible_size, imp->invisible_base);
    if (imp->have_segments)
        fprintf(f, ", system %" PRIu64 " bytes", imp->system_size);
    fputc('\n', f);
    for (uint32_t s = 0; s < imp->snapshots && s < RMV_MAX_SNAPSHOTS; s++)
        fprintf(f, "snapshot: '%s' at %" PRIu64 "\n", imp->snapshot[s].name, imp->snapshot[s].point);
    for (uint32_t s = 0; s < imp->streams; s++) {
        const struct rmv_stream_info *si = &imp->stream[s];
        uint64_t sum = 0, cnt = 0;
        for (int k = 0; k < RMV_TOKEN_TYPES; k++) {
            sum += si->token_bytes[k];
            cnt += si->tokens[k];
        }
        fprintf(f, "stream %u: process %u, thread %u, RMT %u.%u, %u chunk%s, %" PRIu64 " bytes = %" PRIu64
                   " tokens of %" PRIu64 " bytes:",
                si->index, si->process_id, si->thread_id, si->major, si->minor, si->chunks, si->chunks == 1 ? "" : "s",
                si->bytes, cnt, sum);
        for (int k = 0; k < RMV_TOKEN_TYPES; k++)
            if (si->tokens[k])
                fprintf(f, " %s %" PRIu64, rmv_token_name[k], si->tokens[k]);
        fputc('\n', f);
        if (si->tokens[RMV_TK_PAGE_TABLE_UPDATE])
            fprintf(f, "  page-table updates: %" PRIu64 " update, %" PRIu64 " discard, %" PRIu64 " transfer; %" PRIu64
                       " unmaps\n",
                    si->pte_update_type[1], si->pte_update_type[0], si->pte_update_type[2], si->unmaps);
        if (si->tokens[RMV_TK_VIRTUAL_ALLOCATE])
            fprintf(f, "  allocation owners: application %" PRIu64 ", PAL %" PRIu64 ", client driver %" PRIu64
                       ", KMD %" PRIu64 "\n",
                    si->owner[0], si->owner[1], si->owner[2], si->owner[3]);
    }
    const struct rmv_anomalies *a = &imp->anomalies;
    fprintf(f, "anomalies: %" PRIu64 " frees of unknown addresses, %" PRIu64 " allocations at a live address, %" PRIu64
               " references or CPU maps outside every allocation, %" PRIu64 " destroys and %" PRIu64
               " binds of unknown resources, %" PRIu64 " duplicate resource ids, %" PRIu64
               " page-table updates outside every local heap\n",
            a->free_unknown, a->alloc_duplicate, a->reference_unknown, a->destroy_unknown, a->bind_unknown,
            a->create_duplicate, a->pte_outside_heaps);
    fprintf(f, "not replayed (read and counted): ResourceCreate/Bind/Destroy/Update, Userdata, Misc, CpuMap, "
               "ProcessEvent, PageReference\n");
}
