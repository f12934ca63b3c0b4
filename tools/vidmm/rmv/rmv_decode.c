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
 * The token streams are rmv_stream.c.
 */
#include "rmv_dec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
        return rmv_fail(D, "out of memory for the SystemInfo chunk");
    memcpy(js, p, n);
    js[n] = '\0';
    int rc = 0;
    struct rmv_import *imp = D->imp;
    if (!json_whole(js, n)) {
        rc = rmv_fail(D, "SystemInfo chunk is not one whole JSON value");
    } else {
        uint64_t lb = 0, ls = 0, ib = 0, is = 0;
        int have = json_heap(js, "local", &lb, &ls) && json_heap(js, "invisible", &ib, &is);
        if (have && imp->have_segments &&
            (lb != imp->local_base || ls != imp->local_size || ib != imp->invisible_base || is != imp->invisible_size))
            rc = rmv_fail(D, "SystemInfo's heaps (local %" PRIu64 "@0x%" PRIx64 ", invisible %" PRIu64 "@0x%" PRIx64
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
                rc = rmv_fail(D, "SystemInfo's adapter name holds a non-printable byte");
            else if (imp->have_adapter_info && strcmp(name, imp->adapter))
                rc = rmv_fail(D, "SystemInfo names the adapter '%s', AdapterInfo '%s'", name, imp->adapter);
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
        return rmv_fail(D, "GpuMemSegment chunk holds %" PRIu64 " bytes, not three 24-byte heap records", n);
    for (unsigned i = 0; i < 3; i++) {
        const uint8_t *r = p + 24 * i;
        if (rd32(r) != i || rd32(r + 4) != 0)
            return rmv_fail(D, "GpuMemSegment record %u is of heap type %u, not %u", i, rd32(r), i);
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
        return rmv_fail(D, "GpuMemSegment heaps are empty, wrap or overlap (local %" PRIu64 "@0x%" PRIx64
                       ", invisible %" PRIu64 "@0x%" PRIx64 ")",
                        imp->local_size, imp->local_base, imp->invisible_size, imp->invisible_base);
    imp->have_segments = 1;
    return 0;
}

static int read_adapter_info(struct dec *D, const uint8_t *p, uint64_t n)
{
    struct rmv_import *imp = D->imp;
    if (n != 172)
        return rmv_fail(D, "AdapterInfo chunk holds %" PRIu64 " bytes, not 172", n);
    size_t len = strnlen((const char *)p, 128);
    if (len == 0 || len == 128)
        return rmv_fail(D, "AdapterInfo's name is empty or not terminated");
    for (size_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return rmv_fail(D, "AdapterInfo's name holds a non-printable byte");
    memcpy(imp->adapter, p, len);
    imp->adapter[len] = '\0';
    imp->family_id = rd32(p + 128);
    imp->revision_id = rd32(p + 132);
    imp->device_id = rd32(p + 136);
    imp->memory_bus_width = rd32(p + 156);
    imp->min_mem_clock = rd32(p + 164);
    imp->max_mem_clock = rd32(p + 168);
    if (rd32(p + 140) > rd32(p + 144) || imp->min_mem_clock > imp->max_mem_clock)
        return rmv_fail(D, "AdapterInfo's minimum clocks exceed its maximum clocks");
    imp->have_adapter_info = 1;
    return 0;
}

static int read_snapshot(struct dec *D, const uint8_t *p, uint64_t n)
{
    struct rmv_import *imp = D->imp;
    if (n != 144)
        return rmv_fail(D, "RmvSnapshotData chunk holds %" PRIu64 " bytes, not 144", n);
    uint32_t len = rd32(p + 136);
    if (len == 0 || len >= 128 || strnlen((const char *)p, 128) != len)
        return rmv_fail(D, "RmvSnapshotData's name length (%u) does not match its name", len);
    for (uint32_t i = 0; i < len; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return rmv_fail(D, "RmvSnapshotData's name holds a non-printable byte");
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
                return rmv_fail(D, "RmtData chunks of stream %u disagree on the process or RMT version", dc[i].index);
            total += dc[j].size;
            j++;
        }
        if (imp->streams == RMV_MAX_STREAMS)
            return rmv_fail(D, "more than %d token streams", RMV_MAX_STREAMS);
        struct rmv_stream_info *si = &imp->stream[imp->streams++];
        si->process_id = dc[i].pid;
        si->thread_id = dc[i].tid;
        si->index = dc[i].index;
        si->major = dc[i].major;
        si->minor = dc[i].minor;
        si->chunks = (uint32_t)(j - i);
        si->bytes = total;
        if (j == i + 1) {
            rmv_decode_stream(D, d + dc[i].off, dc[i].size, si, dc[i].off);
        } else {
            uint8_t *cat = malloc(total ? total : 1);
            if (!cat)
                return rmv_fail(D, "out of memory");
            uint64_t at = 0;
            for (size_t k = i; k < j; k++) {
                memcpy(cat + at, d + dc[k].off, dc[k].size);
                at += dc[k].size;
            }
            /* Byte positions in messages are within the joined stream. */
            rmv_decode_stream(D, cat, total, si, 0);
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
        return rmv_fail(D, "RDF container version %u (this importer reads 2 and 3)", imp->container_version);
    uint64_t io = rd64(d + 16), isz = rd64(d + 24);
    if (io < 32 || io > n || isz > n - io || isz % 64 || isz == 0)
        return rmv_fail(D, "the chunk index (%" PRIu64 " bytes at %" PRIu64 ") does not fit the %zu-byte file", isz, io, n);
    size_t entries = (size_t)(isz / 64);
    struct region *reg = calloc(2 * entries + 2, sizeof *reg);
    struct data_chunk *dc = calloc(entries, sizeof *dc);
    size_t nreg = 0, ndc = 0;
    if (!reg || !dc) {
        free(reg);
        free(dc);
        return rmv_fail(D, "out of memory");
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
            rmv_fail(D, "chunk index entry %zu has no identifier (NUL-padded text)", i);
            break;
        }
        if (ho > n || hs > n - ho || dof > n || ds > n - dof) {
            rmv_fail(D, "chunk %zu (%s) lies outside the file", i, id);
            break;
        }
        if (e[16] != 0) {
            rmv_fail(D, "chunk %zu (%s) is compressed (method %u): compressed chunks are not supported", i, id, e[16]);
            break;
        }
        if (rd32(e + 16) != 0 || (us != 0 && us != ds)) {
            rmv_fail(D, "chunk %zu (%s): uncompressed, yet its compression fields are set", i, id);
            break;
        }
        if (hs)
            reg[nreg++] = (struct region){ ho, hs };
        if (ds)
            reg[nreg++] = (struct region){ dof, ds };
        struct rmv_chunk_kind *k = chunk_kind(imp, id);
        if (!k) {
            rmv_fail(D, "more than %d kinds of chunk", RMV_MAX_CHUNK_KINDS);
            break;
        }
        k->count++;
        k->bytes += hs + ds;
        if (!strcmp(id, "RmtData")) {
            if (hs != 24) {
                rmv_fail(D, "RmtData chunk %zu has a %" PRIu64 "-byte header, not 24", i, hs);
                break;
            }
            const uint8_t *h = d + ho;
            if (rd64(h + 8) != ds) {
                rmv_fail(D, "RmtData chunk %zu says it holds %" PRIu64 " bytes of tokens, the index %" PRIu64, i, rd64(h + 8),
                         ds);
                break;
            }
            dc[ndc++] = (struct data_chunk){ dof, ds, rd32(h), rd32(h + 4), rd32(h + 16),
                                             (uint16_t)(h[20] | h[21] << 8), (uint16_t)(h[22] | h[23] << 8) };
            if (dc[ndc - 1].index >= RMV_MAX_STREAMS)
                rmv_fail(D, "RmtData chunk %zu is of stream %u (at most %d streams)", i, dc[ndc - 1].index,
                         RMV_MAX_STREAMS - 1);
        } else if (hs && (!strcmp(id, "GpuMemSegment") || !strcmp(id, "AdapterInfo") || !strcmp(id, "SystemInfo") ||
                          !strcmp(id, "RmvSnapshotData"))) {
            rmv_fail(D, "%s chunk %zu has a header (%" PRIu64 " bytes); the format has none", id, i, hs);
        } else if (near_known(e)) {
            rmv_fail(D, "chunk %zu's identifier '%s' is one bit from '%s' (a corrupt index entry)", i, id, near_known(e));
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
                rmv_fail(D, "chunks overlap at byte %" PRIu64 " (the chunk index is corrupt)", reg[i].off);
            else if (reg[i].off > at)
                rmv_fail(D, "bytes %" PRIu64 "..%" PRIu64 " belong to no chunk (the chunk index is corrupt)", at,
                         reg[i].off - 1);
            at = reg[i].off + reg[i].size;
        }
        if (!D->failed && at != n)
            rmv_fail(D, "bytes %" PRIu64 "..%zu belong to no chunk (the chunk index is corrupt or the file has a tail)",
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
                    rmv_fail(D, "more than one GpuMemSegment chunk");
                else
                    read_segments(D, p, ds);
            } else if (o == 1) {
                if (imp->have_adapter_info)
                    rmv_fail(D, "more than one AdapterInfo chunk");
                else
                    read_adapter_info(D, p, ds);
            } else if (o == 2) {
                if (imp->have_system_info)
                    rmv_fail(D, "more than one SystemInfo chunk");
                else
                    read_system_info(D, p, ds);
            } else {
                read_snapshot(D, p, ds);
            }
        }
    if (!D->failed && !ndc)
        rmv_fail(D, "no RmtData chunk: the file holds no token stream");
    /* A stream of a process names a process SystemInfo lists. */
    for (size_t i = 0; i < ndc && !D->failed && imp->processes_listed; i++) {
        char pat[40];
        snprintf(pat, sizeof pat, "\"processId\":%u}", dc[i].pid);
        if (dc[i].pid && !strstr(D->system_info, pat))
            rmv_fail(D, "RmtData chunk of stream %u is of process %u, which SystemInfo does not list", dc[i].index, dc[i].pid);
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
        return rmv_fail(D, "the first chunk's offset (%" PRIu64 ") is outside the file", off);
    while (!D->failed && off < n) {
        if (n - off < 16)
            return rmv_fail(D, "%zu stray bytes after the last chunk", (size_t)(n - off));
        const uint8_t *c = d + off;
        uint32_t type = c[0];
        uint64_t size = rd32(c + 8);
        if (size < 16 || size > n - off)
            return rmv_fail(D, "chunk at byte %" PRIu64 " claims %" PRIu64 " bytes (the file has %" PRIu64 " left)", off, size,
                            (uint64_t)(n - off));
        char id[17];
        snprintf(id, sizeof id, "%s", type < 8 ? legacy[type] : "unknown");
        struct rmv_chunk_kind *k = chunk_kind(imp, id);
        if (!k)
            return rmv_fail(D, "more than %d kinds of chunk", RMV_MAX_CHUNK_KINDS);
        k->count++;
        k->bytes += size;
        if (type == 3) {
            if (size < 32)
                return rmv_fail(D, "RmtData chunk at byte %" PRIu64 " is shorter than its header", off);
            if (imp->streams == RMV_MAX_STREAMS)
                return rmv_fail(D, "more than %d token streams", RMV_MAX_STREAMS);
            struct rmv_stream_info *si = &imp->stream[imp->streams];
            si->index = imp->streams++;
            si->process_id = (uint32_t)rd64(c + 16);
            si->thread_id = (uint32_t)rd64(c + 24);
            si->minor = (uint16_t)(c[4] | c[5] << 8);
            si->major = (uint16_t)(c[6] | c[7] << 8);
            si->chunks = 1;
            si->bytes = size - 32;
            rmv_decode_stream(D, c + 32, size - 32, si, off + 32);
        } else {
            k->skipped = type < 8 ? "legacy-file chunk not decoded (only its token streams are)"
                                  : "unknown legacy chunk type (named and counted only)";
        }
        off += size;
    }
    if (!D->failed && !imp->streams)
        rmv_fail(D, "no RMT data chunk: the file holds no token stream");
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
        return rmv_fail(&D, "out of memory");
    if (n >= 32 && !memcmp(d, "AMD_RDF ", 8))
        decode_rdf(&D, d, n);
    else if (n >= 20 && rd32(d) == 0x494e494du)
        decode_rmt(&D, d, n);
    else
        rmv_fail(&D, "not an RMV file (no AMD_RDF or RMT magic, or too short)");
    free(D.vas.r);
    free(D.system_info);
    rmv_kset_free(&D.resources);
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
            rmv_fail(&D, "snapshot '%s' is at a time outside every token stream", imp->snapshot[s].name);
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
