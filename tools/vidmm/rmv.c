/*
 * rmv.c - Radeon Memory Visualizer trace import (see rmv.h).
 *
 * Containers.  "AMD_RDF " (libamdrdf: 32-byte header with the chunk
 * index's offset and size; 64-byte index entries naming each chunk, its
 * header and data): "RmtData" chunks carry one token stream each, with a
 * 24-byte header (process id, thread id, data size, stream index, RMT
 * version major.minor); "SystemInfo" is JSON that names the adapter and
 * its local (CPU-visible) and invisible heaps.  The legacy RMT file
 * (magic 0x494e494d) is a header then chunks of 16-byte headers; type 3
 * is RMT data (process id, thread id, tokens).  Compressed RDF chunks
 * are not supported (the sample and Mesa's traces are uncompressed).
 *
 * Tokens.  The first byte's low nibble is the type, its high nibble a
 * time delta in 32-tick quanta for most types; sizes are fixed per type
 * except user data (length field), time deltas (byte count) and resource
 * creation (a payload sized by resource type).  Field positions follow
 * the reference parser (rmt_parser.cpp).
 *
 * Replay.  Events of every stream are merged in timestamp order.  The
 * application's VirtualAllocate becomes a resident allocation whose
 * segment preferences follow the heap preferences (LOCAL -> the
 * CPU-visible memory segment, INVISIBLE -> the invisible one, SYSTEM ->
 * the aperture), VirtualFree a destroy, ResourceReference add/remove a
 * make-resident / evict (only if necessary, as WDDM's Evict promises) of
 * the allocation holding the resource's address.  At each page-table
 * update that maps pages of a replayed allocation, the heap the driver
 * mapped (by physical address: in the trace's local or invisible heap,
 * or system memory, which the driver records as address 0) is compared
 * with where vidmm has the allocation then.
 */
#include "rmv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum {
    TK_TIMESTAMP = 0, TK_RESOURCE_UPDATE = 1, TK_PAGE_TABLE_UPDATE = 3, TK_USERDATA = 4, TK_MISC = 5,
    TK_RESOURCE_REFERENCE = 6, TK_RESOURCE_BIND = 7, TK_PROCESS_EVENT = 8, TK_PAGE_REFERENCE = 9, TK_CPU_MAP = 10,
    TK_VIRTUAL_FREE = 11, TK_VIRTUAL_ALLOCATE = 12, TK_RESOURCE_CREATE = 13, TK_TIME_DELTA = 14,
    TK_RESOURCE_DESTROY = 15
};

static const char *const token_name[RMV_TOKEN_TYPES] = {
    "Timestamp", "ResourceUpdate", "Reserved", "PageTableUpdate", "Userdata", "Misc", "ResourceReference",
    "ResourceBind", "ProcessEvent", "PageReference", "CpuMap", "VirtualFree", "VirtualAllocate", "ResourceCreate",
    "TimeDelta", "ResourceDestroy",
};

enum { HEAP_LOCAL = 0, HEAP_INVISIBLE = 1, HEAP_SYSTEM = 2, HEAP_NONE = 3 };
static const char *const heap_name[4] = { "local", "invisible", "system", "none" };
static const char *const placement_name[4] = { "local", "invisible", "system", "not-resident" };

/* One replayable event. */
struct ev {
    uint64_t ts;
    uint32_t seq;                /* file order, to keep the sort stable */
    uint8_t type, heap_count, unmap, page_size;
    uint8_t pref[4];
    uint64_t pid;
    uint64_t va, size, pa;       /* size: bytes (allocate), pages (page-table update) */
};

struct evs {
    struct ev *e;
    size_t n, cap;
};

/* ---- bit fields ----------------------------------------------------- */

/* Bits [hi:lo] of a little-endian byte buffer (at most 64 bits). */
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

/* Size of the payload that follows a ResourceCreate token, by resource
 * type (rmt_parser.cpp's table). */
static size_t resource_payload(const uint8_t *p, size_t avail, unsigned major, unsigned minor)
{
    switch (p[6]) {
    case 0: return major * 10 + minor >= 16 ? 39 : 38;   /* image */
    case 1: return 11;                                   /* buffer */
    case 2: case 3: case 7: case 16: return 1;           /* GPU event, border palette, query heap, misc internal */
    case 6: return 12;                                   /* perf experiment */
    case 8: return 4;                                    /* video decoder */
    case 9: return 6;                                    /* video encoder */
    case 11: return 10;                                  /* heap */
    case 12: return 19;                                  /* pipeline */
    case 13: return 4;                                   /* descriptor heap */
    case 14:                                             /* descriptor pool: 3 + 4 per pool size */
        return avail >= 11 ? 3 + 4 * ((rd32(p + 7) >> 16) & 0xff) : 3;
    case 15: return 44;                                  /* command allocator */
    default: return 0;
    }
}

static int push(struct evs *v, const struct ev *e)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 4096;
        struct ev *n = realloc(v->e, nc * sizeof(*n));
        if (!n)
            return -1;
        v->e = n;
        v->cap = nc;
    }
    v->e[v->n] = *e;
    v->e[v->n].seq = (uint32_t)v->n;
    v->n++;
    return 0;
}

/* Decode one token stream; count every token, keep the replayable ones. */
static int decode_stream(const uint8_t *p, size_t n, struct rmv_stream_info *si, struct evs *out)
{
    size_t off = 0;
    uint64_t now = 0;
    while (off < n) {
        const uint8_t *t = p + off;
        unsigned type = t[0] & 0xf;
        size_t size;
        switch (type) {
        case TK_TIMESTAMP: size = 12; break;
        case TK_PAGE_TABLE_UPDATE: size = 18; break;
        case TK_USERDATA: size = off + 4 <= n ? 4 + ((rd32(t) >> 12) & 0xfffff) : 4; break;
        case TK_MISC: size = 2; break;
        case TK_RESOURCE_REFERENCE: size = 8; break;
        case TK_RESOURCE_BIND: size = 17; break;
        case TK_PROCESS_EVENT: size = 6; break;
        case TK_PAGE_REFERENCE: size = 10; break;
        case TK_CPU_MAP: size = 8; break;
        case TK_VIRTUAL_FREE: size = 7; break;
        case TK_VIRTUAL_ALLOCATE: size = 12; break;
        case TK_RESOURCE_CREATE: size = off + 7 <= n ? 7 + resource_payload(t, n - off, si->major, si->minor) : 7; break;
        case TK_TIME_DELTA: size = 1 + ((t[0] >> 4) & 7); break;
        case TK_RESOURCE_DESTROY: size = 5; break;
        default:
            fprintf(stderr, "rmv: unknown token type %u at stream offset %zu\n", type, off);
            return -1;
        }
        if (off + size > n) {
            fprintf(stderr, "rmv: %s token at stream offset %zu runs past the stream's end\n", token_name[type], off);
            return -1;
        }
        /* Time: a timestamp sets it, a time delta or the header nibble advances it. */
        if (type == TK_TIMESTAMP) {
            now = (rd64(t) >> 4) * 32;
        } else if (type == TK_TIME_DELTA) {
            uint64_t d = 0;
            for (size_t i = 0; i < size - 1; i++)
                d |= (uint64_t)t[1 + i] << (8 * i);
            now += d * 32;
        } else if (type != TK_RESOURCE_DESTROY && type != TK_PAGE_REFERENCE && type != TK_RESOURCE_UPDATE) {
            now += (uint64_t)((t[0] >> 4) & 0xf) * 32;
        }
        si->tokens[type]++;
        struct ev e;
        memset(&e, 0, sizeof e);
        e.ts = now;
        e.type = (uint8_t)type;
        e.pid = si->process_id;
        int keep = 1;
        switch (type) {
        case TK_VIRTUAL_ALLOCATE: {
            e.size = (bits(t, 31, 8) + 1) * 4096;
            e.va = bits(t, 81, 34);
            unsigned count = 4;
            for (unsigned i = 0; i < 4; i++) {
                e.pref[i] = (uint8_t)bits(t, 83 + 2 * i, 82 + 2 * i);
                if (e.pref[i] == HEAP_NONE)
                    e.pref[i] = HEAP_SYSTEM;   /* GART cachable/USWC flattening */
            }
            if (si->major * 10 + si->minor >= 16)
                count = (unsigned)bits(t, 92, 90);
            for (unsigned i = count; i < 4; i++)
                e.pref[i] = HEAP_NONE;
            e.heap_count = (uint8_t)(count > 4 ? 4 : count);
            break;
        }
        case TK_VIRTUAL_FREE:
            e.va = bits(t, 55, 8);
            break;
        case TK_PAGE_TABLE_UPDATE:
            e.va = bits(t, 43, 8) << 12;
            e.pa = bits(t, 79, 44) << 12;
            e.size = bits(t, 99, 80);
            e.page_size = (uint8_t)bits(t, 102, 100);
            e.unmap = (uint8_t)bits(t, 103, 103);
            e.pid = bits(t, 135, 104);
            si->unmaps += e.unmap;
            break;
        case TK_RESOURCE_REFERENCE:
            e.unmap = (uint8_t)bits(t, 8, 8);   /* 0 add, 1 remove */
            e.va = bits(t, 56, 9);
            break;
        default:
            keep = 0;
        }
        if (keep && push(out, &e)) {
            fprintf(stderr, "rmv: out of memory\n");
            return -1;
        }
        off += size;
    }
    return 0;
}

/* ---- containers ----------------------------------------------------- */

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *n = len;
    return buf;
}

int rmv_is_rmv_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t m[8];
    size_t got = fread(m, 1, 8, f);
    fclose(f);
    return (got == 8 && !memcmp(m, "AMD_RDF ", 8)) || (got >= 4 && rd32(m) == 0x494e494du);
}

/* "key":{"physicalAddress":N,"size":N} in the SystemInfo JSON (js[n] is
 * its terminating NUL: the searches end with the chunk). */
static void json_heap(const char *js, size_t n, const char *key, uint64_t *base, uint64_t *size)
{
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\":{", key);
    size_t pl = strlen(pat);
    for (size_t i = 0; i + pl < n; i++) {
        if (memcmp(js + i, pat, pl))
            continue;
        const char *s = js + i + pl;
        const char *pa = strstr(s, "\"physicalAddress\":"), *sz = strstr(s, "\"size\":");
        if (pa && pa - s < 64)
            *base = strtoull(pa + 18, NULL, 10);
        if (sz && sz - s < 64)
            *size = strtoull(sz + 7, NULL, 10);
        return;
    }
}

static int ev_cmp(const void *pa, const void *pb)
{
    const struct ev *a = pa, *b = pb;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int rmv_load(const char *path, struct rmv_import *imp, struct tr_header *h, void **state)
{
    memset(imp, 0, sizeof(*imp));
    *state = NULL;
    size_t n;
    uint8_t *d = read_all(path, &n);
    if (!d) {
        fprintf(stderr, "vidmm: cannot read '%s'\n", path);
        return 1;
    }
    struct evs *v = calloc(1, sizeof(*v));
    int bad = !v;
    /* Heaps of the sample's adapter class until the file says otherwise. */
    imp->local_size = 256ull << 20;
    imp->invisible_base = 256ull << 20;
    imp->invisible_size = 8ull << 30;
    if (!bad && n >= 32 && !memcmp(d, "AMD_RDF ", 8)) {
        snprintf(imp->container, sizeof imp->container, "RDF");
        uint64_t io = rd64(d + 16), isz = rd64(d + 24);
        if (io > n || isz > n - io) {
            fprintf(stderr, "rmv: %s: chunk index out of the file\n", path);
            bad = 1;
        }
        for (uint64_t i = 0; !bad && i + 64 <= isz; i += 64) {
            const uint8_t *e = d + io + i;
            char id[17];
            memcpy(id, e, 16);
            id[16] = '\0';
            uint64_t ho = rd64(e + 24), hs = rd64(e + 32), dof = rd64(e + 40), ds = rd64(e + 48);
            if (ho > n || hs > n - ho || dof > n || ds > n - dof) {
                fprintf(stderr, "rmv: %s: chunk '%s' out of the file\n", path, id);
                bad = 1;
                break;
            }
            if (e[16] != 0) {
                fprintf(stderr, "rmv: %s: chunk '%s' is compressed (not supported)\n", path, id);
                bad = 1;
                break;
            }
            if (!strcmp(id, "SystemInfo")) {
                /* The JSON is not NUL-terminated in the file: the string
                 * searches below run on a terminated copy, so they stop at
                 * the chunk's end instead of reading the bytes after it
                 * (or past the file). */
                char *js = malloc(ds + 1);
                if (!js) {
                    fprintf(stderr, "rmv: %s: out of memory for the SystemInfo chunk\n", path);
                    bad = 1;
                    break;
                }
                memcpy(js, d + dof, ds);
                js[ds] = '\0';
                json_heap(js, ds, "local", &imp->local_base, &imp->local_size);
                json_heap(js, ds, "invisible", &imp->invisible_base, &imp->invisible_size);
                const char *nm = strstr(js, "\"gpus\":[");
                const char *q = nm ? strstr(nm, "\"name\":\"AMD") : NULL;
                if (q) {
                    size_t k = 0;
                    for (q += 8; *q && *q != '"' && k + 1 < sizeof imp->adapter; q++)
                        imp->adapter[k++] = *q;
                    imp->adapter[k] = '\0';
                }
                free(js);
            } else if (!strcmp(id, "RmtData") && hs >= 24 && imp->streams < RMV_MAX_STREAMS) {
                struct rmv_stream_info *si = &imp->stream[imp->streams++];
                const uint8_t *sh = d + ho;
                si->process_id = rd32(sh);
                si->thread_id = rd32(sh + 4);
                si->major = (uint16_t)(sh[20] | sh[21] << 8);
                si->minor = (uint16_t)(sh[22] | sh[23] << 8);
                si->bytes = ds;
                if (decode_stream(d + dof, ds, si, v))
                    bad = 1;
            }
        }
    } else if (!bad && n >= 56 && rd32(d) == 0x494e494du) {
        snprintf(imp->container, sizeof imp->container, "RMT");
        uint64_t off = rd32(d + 16);
        while (!bad && off + 16 <= n) {
            const uint8_t *c = d + off;
            uint32_t type = c[0];
            uint64_t size = rd32(c + 8);
            if (size < 16 || size > n - off) {
                fprintf(stderr, "rmv: %s: bad chunk at offset %" PRIu64 "\n", path, off);
                bad = 1;
                break;
            }
            if (type == 3 && size >= 32 && imp->streams < RMV_MAX_STREAMS) {
                struct rmv_stream_info *si = &imp->stream[imp->streams++];
                si->process_id = (uint32_t)rd64(c + 16);
                si->thread_id = (uint32_t)rd64(c + 24);
                si->minor = (uint16_t)(c[4] | c[5] << 8);
                si->major = (uint16_t)(c[6] | c[7] << 8);
                si->bytes = size - 32;
                if (decode_stream(c + 32, size - 32, si, v))
                    bad = 1;
            }
            off += size;
        }
    } else if (!bad) {
        fprintf(stderr, "rmv: %s: not an RMV file\n", path);
        bad = 1;
    }
    free(d);
    if (bad) {
        if (v)
            free(v->e);
        free(v);
        return 1;
    }
    for (uint32_t s = 0; s < imp->streams; s++)
        for (int k = 0; k < RMV_TOKEN_TYPES; k++)
            imp->tokens[k] += imp->stream[s].tokens[k];
    /* The application: the stream with the most virtual allocations. */
    uint64_t most = 0;
    for (uint32_t s = 0; s < imp->streams; s++)
        if (imp->stream[s].tokens[TK_VIRTUAL_ALLOCATE] > most) {
            most = imp->stream[s].tokens[TK_VIRTUAL_ALLOCATE];
            imp->app_pid = imp->stream[s].process_id;
        }
    if (v->n)
        qsort(v->e, v->n, sizeof(*v->e), ev_cmp);   /* no event: no array (qsort wants one even for 0) */
    *state = v;

    tr_header_defaults(h);
    snprintf(h->scenario, sizeof h->scenario, "rmv");
    snprintf(h->preset, sizeof h->preset, "dgpu");
    /* The trace's heaps become the segments: LOCAL the CPU-visible one,
     * INVISIBLE the other (64 KiB multiples; softgpu reserves lazily). */
    h->segment_size[1] = imp->local_size & ~0xffffull;
    h->segment_size[2] = imp->invisible_size & ~0xffffull;
    if (!h->segment_size[1])
        h->segment_size[1] = 256ull << 20;
    if (!h->segment_size[2])
        h->segment_size[2] = 4ull << 30;
    h->system_memory = 16ull << 30;
    return 0;
}

/* ---- replay --------------------------------------------------------- */

struct live {
    uint64_t va, size;
    uint32_t a;                  /* allocation id in the recording layer */
};

/* Index of the live allocation holding va, or -1 (sorted by va). */
static long find(const struct live *l, size_t n, uint64_t va)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l[mid].va <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct live *c = &l[lo - 1];
    return va - c->va < c->size ? (long)(lo - 1) : -1;
}

static int placement_of(struct tr *t, uint32_t a, uint32_t seg_local, uint32_t seg_invisible)
{
    struct vidmm_residency_state rs;
    struct vidmm_allocation_state as;
    vidmm_handle h = tr_handle(t, TR_ALLOC, a);
    if (vidmm_allocation_residency(t->adapter, h, &rs) < 0 || !rs.resident ||
        vidmm_allocation_query(t->adapter, h, &as) < 0)
        return 3;
    if (as.segment_id == seg_local)
        return HEAP_LOCAL;
    if (as.segment_id == seg_invisible)
        return HEAP_INVISIBLE;
    return HEAP_SYSTEM;
}

int rmv_replay(struct tr *t, struct rmv_import *imp, void *state)
{
    struct evs *v = state;
    if (!t) {
        /* The session could not start: only free the events. */
        free(v ? v->e : NULL);
        free(v);
        return 1;
    }
    size_t nlive = 0, cap = 1024;
    struct live *live = malloc(cap * sizeof(*live));
    uint32_t p = 0, d = 0, q = 0;
    int bad = !live;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(t->adapter, &ai);
    const uint32_t seg_local = 1, seg_invisible = 2, seg_system = ai.aperture_segment_id;
    if (!bad) {
        char name[32];
        snprintf(name, sizeof name, "pid%" PRIu64, imp->app_pid);
        if (tr_process_create(t, name, &p) < 0 || tr_device_create(t, p, &d) < 0 ||
            tr_queue_create(t, d, VIDMM_PAGING_QUEUE_NORMAL, &q) < 0) {
            fprintf(stderr, "rmv: cannot create the replay process\n");
            bad = 1;
        }
    }
    for (size_t i = 0; !bad && i < v->n; i++) {
        const struct ev *e = &v->e[i];
        if (e->type == TK_VIRTUAL_ALLOCATE && e->pid == imp->app_pid) {
            struct softgpu_alloc_desc desc;
            memset(&desc, 0, sizeof desc);
            desc.kind = SOFTGPU_ALLOC_EXPLICIT;
            desc.info.size = e->size;
            desc.info.supported_write_segment_set =
                VIDMM_SEGMENT_BIT(seg_local) | VIDMM_SEGMENT_BIT(seg_invisible) | VIDMM_SEGMENT_BIT(seg_system);
            uint32_t pref = 0, slot = 0, seen = 0;
            for (int k = 0; k < 4 && e->pref[k] != HEAP_NONE && slot < VIDMM_PREF_SLOTS; k++) {
                uint32_t id = e->pref[k] == HEAP_LOCAL ? seg_local : e->pref[k] == HEAP_INVISIBLE ? seg_invisible
                                                                                                   : seg_system;
                if (seen & (1u << id))
                    continue;
                seen |= 1u << id;
                pref |= VIDMM_PREF(slot, id, 0);
                slot++;
            }
            desc.info.preferred_segment = pref;
            desc.info.flags = e->pref[0] == HEAP_LOCAL || e->pref[0] == HEAP_SYSTEM ? VIDMM_ALLOC_CPU_VISIBLE : 0;
            imp->pref_first[e->pref[0] < 4 ? e->pref[0] : 3]++;
            char name[32];
            snprintf(name, sizeof name, "va-%" PRIx64, e->va);
            uint32_t a;
            vidmm_status st = tr_create(t, &desc, 1, VIDMM_CREATE_RESIDENT, name, &a);
            imp->allocations++;
            if (st < 0) {
                imp->alloc_failed++;
                continue;
            }
            imp->alloc_bytes += e->size;
            if (nlive == cap) {
                struct live *nl = realloc(live, cap * 2 * sizeof(*live));
                if (!nl) {
                    bad = 1;
                    break;
                }
                live = nl;
                cap *= 2;
            }
            size_t at = 0;
            while (at < nlive && live[at].va < e->va)
                at++;
            memmove(live + at + 1, live + at, (nlive - at) * sizeof(*live));
            live[at] = (struct live){ e->va, e->size, a };
            nlive++;
        } else if (e->type == TK_VIRTUAL_FREE && e->pid == imp->app_pid) {
            long k = find(live, nlive, e->va);
            if (k < 0 || live[k].va != e->va)
                continue;
            tr_destroy(t, live[k].a);
            imp->frees++;
            memmove(live + k, live + k + 1, (nlive - (size_t)k - 1) * sizeof(*live));
            nlive--;
        } else if (e->type == TK_RESOURCE_REFERENCE && e->pid == imp->app_pid) {
            long k = find(live, nlive, e->va);
            if (k < 0) {
                imp->reference_unmatched++;
                continue;
            }
            if (!e->unmap) {
                uint64_t fence = 0;
                vidmm_status st = tr_make_resident(t, d, q, &live[k].a, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER,
                                                   &fence, NULL);
                if (st == VIDMM_PENDING)
                    st = tr_wait(t, q, fence);
                imp->references_add++;
                imp->make_resident_failed += st < 0;
            } else {
                vidmm_status st = tr_evict(t, d, &live[k].a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL);
                imp->references_remove++;
                imp->evict_failed += st < 0;
            }
        } else if (e->type == TK_PAGE_TABLE_UPDATE && !e->unmap) {
            /* The kernel driver reports page-table updates from its own
             * stream under the system process's id (4 on Windows), so
             * they are matched by address alone. */
            if (e->pid != imp->app_pid)
                imp->pte_maps_other_process++;
            long k = find(live, nlive, e->va);
            if (k < 0) {
                imp->pte_maps_unmatched++;
                continue;
            }
            /* Physical address 0 is what the driver records for system
             * memory pages (their host addresses are not traced): every
             * such mapping in the sample lies in an allocation whose
             * first preference is SYSTEM. */
            int heap = e->pa == 0 ? HEAP_SYSTEM
                       : e->pa >= imp->local_base && e->pa - imp->local_base < imp->local_size ? HEAP_LOCAL
                       : e->pa >= imp->invisible_base && e->pa - imp->invisible_base < imp->invisible_size
                           ? HEAP_INVISIBLE
                           : HEAP_SYSTEM;
            int got = placement_of(t, live[k].a, seg_local, seg_invisible);
            static const uint64_t page_bytes[8] = { 0, 4096, 65536, 262144, 1 << 20, 2 << 20, 0, 0 };
            imp->pte_maps_matched++;
            imp->agree[heap][got]++;
            imp->agree_bytes[heap][got] += e->size * page_bytes[e->page_size & 7];
        }
    }
    free(live);
    free(v->e);
    free(v);
    return bad;
}

/* ---- summary -------------------------------------------------------- */

static uint64_t agreed(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        s += bytes ? imp->agree_bytes[h][h] : imp->agree[h][h];
    return s;
}

static uint64_t total(const struct rmv_import *imp, int bytes)
{
    uint64_t s = 0;
    for (int h = 0; h < 3; h++)
        for (int g = 0; g < 4; g++)
            s += bytes ? imp->agree_bytes[h][g] : imp->agree[h][g];
    return s;
}

void rmv_report(const struct rmv_import *imp, enum report_format fmt, FILE *f)
{
    uint64_t n = total(imp, 0), ok = agreed(imp, 0), nb = total(imp, 1), okb = agreed(imp, 1);
    if (fmt == REPORT_CSV) {
        for (uint32_t s = 0; s < imp->streams; s++)
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (imp->stream[s].tokens[k])
                    fprintf(f, "rmv,stream%u,%s,%" PRIu64 "\n", s, token_name[k], imp->stream[s].tokens[k]);
        fprintf(f, "rmv,replay,allocations,%" PRIu64 "\nrmv,replay,frees,%" PRIu64 "\nrmv,replay,references_add,%" PRIu64
                   "\nrmv,replay,references_remove,%" PRIu64 "\nrmv,agreement,page_table_maps,%" PRIu64
                   "\nrmv,agreement,agree,%" PRIu64 "\n",
                imp->allocations, imp->frees, imp->references_add, imp->references_remove, n, ok);
        return;
    }
    if (fmt == REPORT_JSON) {
        fprintf(f, "\"import\": {\"container\": \"%s\", \"adapter\": \"%s\", \"app_pid\": %" PRIu64
                   ",\n  \"heaps\": {\"local\": {\"base\": %" PRIu64 ", \"size\": %" PRIu64 "}, \"invisible\": {\"base\": %" PRIu64
                   ", \"size\": %" PRIu64 "}},\n  \"streams\": [",
                imp->container, imp->adapter, imp->app_pid, imp->local_base, imp->local_size, imp->invisible_base,
                imp->invisible_size);
        for (uint32_t s = 0; s < imp->streams; s++) {
            const struct rmv_stream_info *si = &imp->stream[s];
            fprintf(f, "%s\n    {\"process_id\": %u, \"version\": \"%u.%u\", \"bytes\": %" PRIu64 ", \"page_table_unmaps\": %" PRIu64
                       ", \"tokens\": {",
                    s ? "," : "", si->process_id, si->major, si->minor, si->bytes, si->unmaps);
            int first = 1;
            for (int k = 0; k < RMV_TOKEN_TYPES; k++)
                if (si->tokens[k]) {
                    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", token_name[k], si->tokens[k]);
                    first = 0;
                }
            fprintf(f, "}}");
        }
        fprintf(f, "],\n  \"replay\": {\"allocations\": %" PRIu64 ", \"allocation_failures\": %" PRIu64
                   ", \"allocated_bytes\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"references_add\": %" PRIu64
                   ", \"references_remove\": %" PRIu64 ", \"references_unmatched\": %" PRIu64
                   ", \"make_resident_failures\": %" PRIu64 ", \"evict_failures\": %" PRIu64 "},\n",
                imp->allocations, imp->alloc_failed, imp->alloc_bytes, imp->frees, imp->references_add,
                imp->references_remove, imp->reference_unmatched, imp->make_resident_failed, imp->evict_failed);
        fprintf(f, "  \"agreement\": {\"page_table_maps\": %" PRIu64 ", \"agree\": %" PRIu64 ", \"bytes\": %" PRIu64
                   ", \"bytes_agree\": %" PRIu64 ", \"unmatched_maps\": %" PRIu64 ", \"other_process_maps\": %" PRIu64
                   ", \"matrix\": {",
                n, ok, nb, okb, imp->pte_maps_unmatched, imp->pte_maps_other_process);
        for (int h = 0; h < 3; h++) {
            fprintf(f, "%s\"%s\": {", h ? ", " : "", heap_name[h]);
            for (int g = 0; g < 4; g++)
                fprintf(f, "%s\"%s\": %" PRIu64, g ? ", " : "", placement_name[g], imp->agree[h][g]);
            fprintf(f, "}");
        }
        fprintf(f, "}}},\n");
        return;
    }
    fprintf(f, "== RMV import (%s container%s%s) ==\n", imp->container, imp->adapter[0] ? ", " : "", imp->adapter);
    fprintf(f, "heaps: local %" PRIu64 " MiB at 0x%" PRIx64 ", invisible %" PRIu64 " MiB at 0x%" PRIx64 "\n",
            imp->local_size >> 20, imp->local_base, imp->invisible_size >> 20, imp->invisible_base);
    for (uint32_t s = 0; s < imp->streams; s++) {
        const struct rmv_stream_info *si = &imp->stream[s];
        fprintf(f, "stream %u: process %u, RMT %u.%u, %" PRIu64 " bytes:", s, si->process_id, si->major, si->minor,
                si->bytes);
        for (int k = 0; k < RMV_TOKEN_TYPES; k++)
            if (si->tokens[k])
                fprintf(f, " %s %" PRIu64, token_name[k], si->tokens[k]);
        if (si->tokens[TK_PAGE_TABLE_UPDATE])
            fprintf(f, " (%" PRIu64 " unmaps)", si->unmaps);
        fputc('\n', f);
    }
    fprintf(f, "replayed (process %" PRIu64 "): %" PRIu64 " allocations (%" PRIu64 " failed, %" PRIu64
               " MiB), first preference local %" PRIu64 " / invisible %" PRIu64 " / system %" PRIu64 "; %" PRIu64
               " frees; references: %" PRIu64 " add -> make-resident (%" PRIu64 " failed), %" PRIu64
               " remove -> evict (%" PRIu64 " failed), %" PRIu64 " outside any allocation\n",
            imp->app_pid, imp->allocations, imp->alloc_failed, imp->alloc_bytes >> 20, imp->pref_first[0],
            imp->pref_first[1], imp->pref_first[2], imp->frees, imp->references_add, imp->make_resident_failed,
            imp->references_remove, imp->evict_failed, imp->reference_unmatched);
    fprintf(f, "placement agreement: %" PRIu64 " of %" PRIu64 " page-table mappings (%.1f%%), %" PRIu64 " of %" PRIu64
               " MiB (%.1f%%)\n",
            ok, n, n ? 100.0 * (double)ok / (double)n : 0.0, okb >> 20, nb >> 20,
            nb ? 100.0 * (double)okb / (double)nb : 0.0);
    fprintf(f, "  %-14s %10s %10s %10s %13s\n", "trace \\ vidmm", "local", "invisible", "system", "not-resident");
    for (int h = 0; h < 3; h++)
        fprintf(f, "  %-14s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %13" PRIu64 "\n", heap_name[h], imp->agree[h][0],
                imp->agree[h][1], imp->agree[h][2], imp->agree[h][3]);
    fprintf(f, "  (%" PRIu64 " mappings outside the replayed allocations; %" PRIu64 " reported by another process id)\n\n",
            imp->pte_maps_unmatched, imp->pte_maps_other_process);
}
