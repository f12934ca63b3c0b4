/*
 * paging.c - softgpu's paging-buffer format: build_paging_buffer encodes
 * vidmm's paging operations as copy-engine commands, submit_command
 * validates a buffer and hands it to the copy engine (engine.c), which
 * executes it on the host bytes with softgpu_execute_buffer and signals the
 * fence - on its own thread, or inside submit_command in synchronous
 * mode.
 *
 * A command is an 8-byte header {u16 opcode, u16 flags, u32 size} (size
 * includes the header; always a multiple of 8) followed by its payload;
 * commands are packed back to back.  Segment sides hold segment offsets
 * (GPU address - base_address), MDL sides hold the host address of the
 * first MDL page used.  docs/SOFTGPU.md has the byte-offset tables.
 * UPDATE_PAGE_TABLE and FLUSH_TLB are encoded, checked and executed by
 * mmu.c, TRANSFER_VIRTUAL and FILL_VIRTUAL by vpaging.c; this file only
 * dispatches them.
 *
 * Transfers and fills move at most SOFTGPU_CHUNK bytes per command.  When a
 * buffer fills up before an operation is complete, the number of chunks
 * already encoded is kept in multipass_offset and the answer is
 * VIDMM_E_INSUFFICIENT_DMA_BUFFER; vidmm submits, hands a fresh buffer
 * and calls again with the same request.  A call that cannot write even
 * one command answers the same without writing anything.
 */
#include "softgpu_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_REMOVE
#define MADV_REMOVE 9
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Opcodes equal the vidmm_paging_operation they come from. */
#define SOFTGPU_PAGING_CMD_COPY    VIDMM_PAGING_TRANSFER
#define SOFTGPU_PAGING_CMD_FILL    VIDMM_PAGING_FILL
#define SOFTGPU_CMD_DISCARD VIDMM_PAGING_DISCARD_CONTENT
#define SOFTGPU_CMD_MAP     VIDMM_PAGING_MAP_APERTURE_SEGMENT
#define SOFTGPU_CMD_UNMAP   VIDMM_PAGING_UNMAP_APERTURE_SEGMENT


struct softgpu_paging_copy {           /* 40 bytes */
    struct softgpu_cmd_hdr hdr;
    uint32_t src_segment;      /* 0: src is a host address */
    uint32_t dst_segment;      /* 0: dst is a host address */
    uint64_t src;              /* segment offset or host address */
    uint64_t dst;
    uint64_t size;
};

struct softgpu_paging_fill {           /* 32 bytes */
    struct softgpu_cmd_hdr hdr;
    uint32_t segment;
    uint32_t pattern;
    uint64_t offset;
    uint64_t size;
};

struct softgpu_cmd_discard {        /* 32 bytes */
    struct softgpu_cmd_hdr hdr;
    uint32_t segment;
    uint32_t flags;
    uint64_t offset;
    uint64_t size;
};

struct softgpu_cmd_map {            /* 40 bytes; also UNMAP, host = dummy page */
    struct softgpu_cmd_hdr hdr;
    uint32_t segment;
    uint32_t flags;
    uint64_t first_page;
    uint64_t page_count;
    uint64_t host;             /* MAP: host address of the first page; UNMAP: dummy page (0 = softgpu's) */
};

_Static_assert(sizeof(struct softgpu_paging_copy) == 40, "copy command layout");
_Static_assert(sizeof(struct softgpu_paging_fill) == 32, "fill command layout");
_Static_assert(sizeof(struct softgpu_cmd_discard) == 32, "discard command layout");
_Static_assert(sizeof(struct softgpu_cmd_map) == 40, "map command layout");

/* ------------------------------------------------------------------ */
/* Validation helpers                                                  */
/* ------------------------------------------------------------------ */

static struct softgpu_segment *softgpu_seg(struct softgpu *sg, uint32_t id)
{
    return id >= 1 && id <= sg->nb_segment ? &sg->seg[id] : NULL;
}

/* GPU address range of a segment -> offset; NULL if outside. */
static struct softgpu_segment *softgpu_seg_range(struct softgpu *sg, uint32_t id, uint64_t gpu_address, uint64_t size,
                                       uint64_t *offset)
{
    struct softgpu_segment *s = softgpu_seg(sg, id);
    if (!s || gpu_address < s->base_address)
        return NULL;
    uint64_t o = gpu_address - s->base_address;
    if (o > s->size || size > s->size - o)
        return NULL;
    *offset = o;
    return s;
}

/* MDL side: mdl_offset pages in, size bytes, all inside the MDL. */
static uint8_t *softgpu_mdl_range(const struct vidmm_mdl *mdl, uint64_t mdl_offset, uint64_t size)
{
    if (!mdl || !mdl->base || ((uintptr_t)mdl->base & (SOFTGPU_PAGE_4K - 1)))
        return NULL;
    if (mdl_offset > mdl->page_count)
        return NULL;
    uint64_t avail = mdl->page_count - mdl_offset;
    if (avail > UINT64_MAX / SOFTGPU_PAGE_4K || size > avail * SOFTGPU_PAGE_4K)
        return NULL;
    return (uint8_t *)mdl->base + mdl_offset * SOFTGPU_PAGE_4K;
}

/* ------------------------------------------------------------------ */
/* Build                                                               */
/* ------------------------------------------------------------------ */

static void softgpu_emit(struct vidmm_build_paging_buffer_args *args, const void *cmd, uint32_t size)
{
    memcpy(args->dma_buffer, cmd, size);
    args->dma_buffer = (uint8_t *)args->dma_buffer + size;
    args->dma_size -= size;
}

/* Encodes chunks multipass_offset.. of an operation of total bytes,
 * each made by make(ctx, chunk_index, chunk_offset, chunk_bytes). */
struct softgpu_chunked {
    uint16_t opcode;
    uint32_t cmd_size;
    uint64_t total;
    int reverse;               /* emit chunks from the end (overlapping move upward) */
    void (*make)(const struct softgpu_chunked *c, void *cmd, uint64_t off, uint64_t len);
    const void *ctx;
    uint64_t a, b;             /* op-specific */
    uint32_t sa, sb;
    uint32_t pattern;
};

static vidmm_status softgpu_emit_chunked(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args,
                                    const struct softgpu_chunked *c)
{
    uint64_t nchunks = (c->total + SOFTGPU_CHUNK - 1) / SOFTGPU_CHUNK;
    uint64_t k = args->multipass_offset;
    if (k >= nchunks)
        return VIDMM_E_INVALID_ARG;   /* a restart past the end of the request */
    int wrote = 0;
    while (k < nchunks) {
        if (args->dma_size < c->cmd_size) {
            sg->stats.multipass_restarts++;
            if (wrote)
                args->multipass_offset = (uint32_t)k;
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        uint64_t idx = c->reverse ? nchunks - 1 - k : k;
        uint64_t off = idx * SOFTGPU_CHUNK;
        uint64_t len = c->total - off < SOFTGPU_CHUNK ? c->total - off : SOFTGPU_CHUNK;
        union { struct softgpu_paging_copy copy; struct softgpu_paging_fill fill; } cmd;
        memset(&cmd, 0, sizeof cmd);
        struct softgpu_cmd_hdr *h = (struct softgpu_cmd_hdr *)&cmd;
        h->opcode = c->opcode;
        h->flags = k == 0 ? SOFTGPU_CMDF_FIRST : 0;
        if (c->opcode == SOFTGPU_PAGING_CMD_COPY)
            h->flags |= SOFTGPU_CMDF_CLASS(softgpu_copy_size_class(c->total));
        h->size = c->cmd_size;
        c->make(c, &cmd, off, len);
        softgpu_emit(args, &cmd, c->cmd_size);
        wrote = 1;
        k++;
    }
    return VIDMM_OK;
}

static void softgpu_make_copy(const struct softgpu_chunked *c, void *cmd, uint64_t off, uint64_t len)
{
    struct softgpu_paging_copy *x = cmd;
    x->src_segment = c->sa;
    x->dst_segment = c->sb;
    x->src = c->a + off;
    x->dst = c->b + off;
    x->size = len;
}

static void softgpu_make_fill(const struct softgpu_chunked *c, void *cmd, uint64_t off, uint64_t len)
{
    struct softgpu_paging_fill *x = cmd;
    /* A pattern chunk starts on a multiple of SOFTGPU_CHUNK, a multiple of 4:
     * the pattern phase stays that of the start of the fill. */
    x->segment = c->sa;
    x->pattern = c->pattern;
    x->offset = c->a + off;
    x->size = len;
}

static vidmm_status softgpu_build_transfer(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_transfer *t = &args->u.transfer;
    uint64_t size = t->transfer_size;
    struct softgpu_chunked c;
    memset(&c, 0, sizeof c);
    c.opcode = SOFTGPU_PAGING_CMD_COPY;
    c.cmd_size = sizeof(struct softgpu_paging_copy);
    c.total = size;
    c.make = softgpu_make_copy;
    c.sa = t->source.segment_id;
    c.sb = t->destination.segment_id;
    /* Source side. */
    if (c.sa) {
        if (!softgpu_seg_range(sg, c.sa, t->source.segment_address, size, &c.a))
            return VIDMM_E_INVALID_ARG;
    } else {
        uint8_t *p = softgpu_mdl_range(t->source.mdl, t->mdl_offset, size);
        if (!p)
            return VIDMM_E_INVALID_ARG;
        c.a = (uint64_t)(uintptr_t)p;
    }
    /* Destination side. */
    if (c.sb) {
        if (!softgpu_seg_range(sg, c.sb, t->destination.segment_address, size, &c.b))
            return VIDMM_E_INVALID_ARG;
    } else {
        uint8_t *p = softgpu_mdl_range(t->destination.mdl, t->mdl_offset, size);
        if (!p)
            return VIDMM_E_INVALID_ARG;
        c.b = (uint64_t)(uintptr_t)p;
    }
    if (size == 0)
        return VIDMM_OK;   /* an eviction notice only: nothing to move */
    /* An overlapping move upward inside one segment (or one MDL) copies
     * its chunks from the end, so no chunk reads bytes already written. */
    c.reverse = c.sa == c.sb && c.b > c.a && c.b < c.a + size;
    return softgpu_emit_chunked(sg, args, &c);
}

static vidmm_status softgpu_build_fill(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_fill *f = &args->u.fill;
    struct softgpu_chunked c;
    memset(&c, 0, sizeof c);
    c.opcode = SOFTGPU_PAGING_CMD_FILL;
    c.cmd_size = sizeof(struct softgpu_paging_fill);
    c.total = f->fill_size;
    c.make = softgpu_make_fill;
    c.sa = f->destination_segment_id;
    c.pattern = f->fill_pattern;
    struct softgpu_segment *s = softgpu_seg_range(sg, c.sa, f->destination_segment_address, f->fill_size, &c.a);
    if (!s || !s->is_memory)
        return VIDMM_E_INVALID_ARG;   /* fills target memory segments only */
    if (f->fill_size == 0)
        return VIDMM_OK;
    return softgpu_emit_chunked(sg, args, &c);
}

static vidmm_status softgpu_emit_one(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args, const void *cmd,
                                uint32_t size)
{
    if (args->dma_size < size) {
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    softgpu_emit(args, cmd, size);
    return VIDMM_OK;
}

static vidmm_status softgpu_build_discard(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_discard_content *d = &args->u.discard_content;
    struct softgpu_cmd_discard cmd;
    memset(&cmd, 0, sizeof cmd);
    struct softgpu_segment *s = softgpu_seg_range(sg, d->segment_id, d->segment_address, d->size, &cmd.offset);
    if (!s || !s->is_memory)
        return VIDMM_E_INVALID_ARG;
    cmd.hdr.opcode = SOFTGPU_CMD_DISCARD;
    cmd.hdr.flags = SOFTGPU_CMDF_FIRST;
    cmd.hdr.size = sizeof cmd;
    cmd.segment = d->segment_id;
    cmd.flags = d->flags;
    cmd.size = d->size;
    return softgpu_emit_one(sg, args, &cmd, sizeof cmd);
}

/* An aperture or AGP segment and a page range inside it. */
static struct softgpu_segment *softgpu_gart_range(struct softgpu *sg, uint32_t id, uint64_t first, uint64_t count)
{
    struct softgpu_segment *s = softgpu_seg(sg, id);
    if (!s || s->is_memory || count == 0 || first > s->gart_pages || count > s->gart_pages - first)
        return NULL;
    return s;
}

static vidmm_status softgpu_build_map(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_map_aperture *m = &args->u.map_aperture_segment;
    if (!softgpu_gart_range(sg, m->segment_id, m->offset_in_pages, m->number_of_pages))
        return VIDMM_E_INVALID_ARG;
    if (m->number_of_pages > UINT64_MAX / SOFTGPU_PAGE_4K)
        return VIDMM_E_INVALID_ARG;
    uint8_t *host = softgpu_mdl_range(m->mdl, m->mdl_offset, m->number_of_pages * SOFTGPU_PAGE_4K);
    if (!host)
        return VIDMM_E_INVALID_ARG;
    struct softgpu_cmd_map cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.hdr.opcode = SOFTGPU_CMD_MAP;
    cmd.hdr.flags = SOFTGPU_CMDF_FIRST;
    cmd.hdr.size = sizeof cmd;
    cmd.segment = m->segment_id;
    cmd.flags = m->flags;
    cmd.first_page = m->offset_in_pages;
    cmd.page_count = m->number_of_pages;
    cmd.host = (uint64_t)(uintptr_t)host;
    return softgpu_emit_one(sg, args, &cmd, sizeof cmd);
}

static vidmm_status softgpu_build_unmap(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_unmap_aperture *u = &args->u.unmap_aperture_segment;
    if (!softgpu_gart_range(sg, u->segment_id, u->offset_in_pages, u->number_of_pages))
        return VIDMM_E_INVALID_ARG;
    if ((uintptr_t)u->dummy_page & (SOFTGPU_PAGE_4K - 1))
        return VIDMM_E_INVALID_ARG;
    struct softgpu_cmd_map cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.hdr.opcode = SOFTGPU_CMD_UNMAP;
    cmd.hdr.flags = SOFTGPU_CMDF_FIRST;
    cmd.hdr.size = sizeof cmd;
    cmd.segment = u->segment_id;
    cmd.first_page = u->offset_in_pages;
    cmd.page_count = u->number_of_pages;
    cmd.host = (uint64_t)(uintptr_t)u->dummy_page;
    return softgpu_emit_one(sg, args, &cmd, sizeof cmd);
}

vidmm_status softgpu_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || (!args->dma_buffer && args->dma_size))
        return VIDMM_E_INVALID_ARG;
    vidmm_status (*build)(struct softgpu *, struct vidmm_build_paging_buffer_args *);
    switch (args->operation) {
    case VIDMM_PAGING_TRANSFER: build = softgpu_build_transfer; break;
    case VIDMM_PAGING_FILL: build = softgpu_build_fill; break;
    case VIDMM_PAGING_TRANSFER_VIRTUAL:
    case VIDMM_PAGING_FILL_VIRTUAL: build = softgpu_build_virtual; break;
    case VIDMM_PAGING_DISCARD_CONTENT: build = softgpu_build_discard; break;
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT: build = softgpu_build_map; break;
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT: build = softgpu_build_unmap; break;
    case VIDMM_PAGING_UPDATE_PAGE_TABLE: build = softgpu_build_update_page_table; break;
    case VIDMM_PAGING_FLUSH_TLB: build = softgpu_build_flush_tlb; break;
    default: return VIDMM_E_INVALID_ARG;
    }
    if (sg->inject_insufficient) {
        sg->inject_insufficient--;
        sg->stats.multipass_restarts++;
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    }
    if (!args->dma_buffer)
        args->dma_size = 0;
    return build(sg, args);
}

/* ------------------------------------------------------------------ */
/* Execute                                                             */
/* ------------------------------------------------------------------ */

void softgpu_fill32(uint8_t *dst, uint64_t size, uint32_t pattern)
{
    softgpu_asan_check(dst, NULL, size);
    uint64_t i = 0;
    /* Head: bytes until 16-byte aligned.  Byte i of the fill is byte i%4
     * of the pattern (little-endian). */
    while (i < size && ((uintptr_t)(dst + i) & 15u)) {
        dst[i] = (uint8_t)(pattern >> (8u * (i & 3u)));
        i++;
    }
    uint32_t rot = (uint32_t)(8u * (i & 3u));
    uint32_t p = rot ? (pattern >> rot) | (pattern << (32u - rot)) : pattern;
#if defined(__SSE2__)
    if (size - i >= 256) {
        __m128i v = _mm_set1_epi32((int)p);
        uint8_t *q = dst + i;
        uint64_t n = (size - i) & ~(uint64_t)63;
        for (uint64_t o = 0; o < n; o += 64) {
            _mm_stream_si128((__m128i *)(void *)(q + o), v);
            _mm_stream_si128((__m128i *)(void *)(q + o + 16), v);
            _mm_stream_si128((__m128i *)(void *)(q + o + 32), v);
            _mm_stream_si128((__m128i *)(void *)(q + o + 48), v);
        }
        _mm_sfence();
        i += n;
    }
#endif
    for (; i + 4 <= size; i += 4)
        memcpy(dst + i, &p, 4);
    for (uint32_t k = 0; i < size; i++, k++)
        dst[i] = (uint8_t)(p >> (8u * k));
}

/* Zero fills of at least this many bytes release whole pages. */
#define SOFTGPU_ZERO_RELEASE_MIN ((uint64_t)64 << 10)

/* Zeroing memory that nobody reads yet is the commonest fill (vidmm clears
 * every new allocation, docs/HOST_MEMORY.md): writing it faults every page
 * of the sparse memfd in, zeroes it in the kernel and then again here.
 * Releasing the page-aligned interior instead (MADV_REMOVE punches a hole
 * in the memfd, so every mapping of it - BAR, host aperture - reads zeros
 * and the RAM goes back to the host) costs one system call; the unaligned
 * edges are stored.  A prefaulted segment keeps its pages resident, as it
 * was asked to.  When madvise refuses, the bytes are written. */
void softgpu_fill(struct softgpu *sg, uint8_t *dst, uint64_t size, uint32_t pattern)
{
    if (pattern == 0 && size >= SOFTGPU_ZERO_RELEASE_MIN) {
        for (uint32_t i = 1; i <= sg->nb_segment; i++) {
            const struct softgpu_segment *s = &sg->seg[i];
            if (!s->is_memory || !s->mem || s->memfd < 0 || s->prefaulted || dst < s->mem ||
                (uint64_t)(dst - s->mem) > s->size || size > s->size - (uint64_t)(dst - s->mem))
                continue;
            uintptr_t a = ((uintptr_t)dst + SOFTGPU_PAGE_4K - 1) & ~(uintptr_t)(SOFTGPU_PAGE_4K - 1);
            uintptr_t b = ((uintptr_t)dst + size) & ~(uintptr_t)(SOFTGPU_PAGE_4K - 1);
            if (b <= a || madvise((void *)a, (size_t)(b - a), MADV_REMOVE) != 0)
                break;
            softgpu_fill32(dst, (uint64_t)(a - (uintptr_t)dst), 0);
            softgpu_fill32((uint8_t *)b, (uint64_t)((uintptr_t)dst + size - b), 0);
            return;
        }
    }
    softgpu_fill32(dst, size, pattern);
}

/* Host side of a copy operand: a run of contiguous bytes at offset off. */
static uint8_t *softgpu_side(struct softgpu *sg, uint32_t segment, uint64_t base, uint64_t off, uint64_t len,
                        uint64_t *run)
{
    if (segment == 0) {
        *run = len;
        return (uint8_t *)(uintptr_t)(base + off);
    }
    int mapped;
    return softgpu_resolve(sg, &sg->seg[segment], base + off, len, run, &mapped);
}

static void softgpu_exec_copy(struct softgpu *sg, const struct softgpu_paging_copy *c)
{
    uint64_t done = 0;
    while (done < c->size) {
        uint64_t rs, rd;
        uint8_t *s = softgpu_side(sg, c->src_segment, c->src, done, c->size - done, &rs);
        uint8_t *d = softgpu_side(sg, c->dst_segment, c->dst, done, c->size - done, &rd);
        uint64_t n = rs < rd ? rs : rd;
        if (s < d + n && d < s + n)
            memmove(d, s, (size_t)n);
        else
            softgpu_copy(sg, d, s, n, SOFTGPU_CMDF_CLASS_OF(c->hdr.flags));
        done += n;
    }
}

static void softgpu_exec_fill(struct softgpu *sg, const struct softgpu_paging_fill *c)
{
    uint64_t done = 0;
    while (done < c->size) {
        uint64_t run;
        int mapped;
        uint8_t *d = softgpu_resolve(sg, &sg->seg[c->segment], c->offset + done, c->size - done, &run, &mapped);
        uint32_t rot = (uint32_t)(8u * (done & 3u));
        softgpu_fill(sg, d, run, rot ? (c->pattern >> rot) | (c->pattern << (32u - rot)) : c->pattern);
        done += run;
    }
}

/* Checks one command against the device; returns its size or 0.  A run
 * of MMU commands is checked as a whole and its total size returned. */
static uint32_t softgpu_validate(struct softgpu *sg, const uint8_t *p, uint32_t left)
{
    struct softgpu_cmd_hdr h;
    if (left < sizeof h)
        return 0;
    memcpy(&h, p, sizeof h);
    if (h.size > left || (h.size & 7u))
        return 0;
    switch (h.opcode) {
    case SOFTGPU_PAGING_CMD_COPY: {
        struct softgpu_paging_copy c;
        if (h.size != sizeof c)
            return 0;
        memcpy(&c, p, sizeof c);
        const struct softgpu_segment *s;
        if (c.src_segment && (!(s = softgpu_seg(sg, c.src_segment)) || c.src > s->size || c.size > s->size - c.src))
            return 0;
        if (c.dst_segment && (!(s = softgpu_seg(sg, c.dst_segment)) || c.dst > s->size || c.size > s->size - c.dst))
            return 0;
        if ((!c.src_segment && !c.src) || (!c.dst_segment && !c.dst))
            return 0;
        return h.size;
    }
    case SOFTGPU_PAGING_CMD_FILL:
    case SOFTGPU_CMD_DISCARD: {
        struct softgpu_paging_fill c;   /* same layout as discard */
        if (h.size != sizeof c)
            return 0;
        memcpy(&c, p, sizeof c);
        const struct softgpu_segment *s = softgpu_seg(sg, c.segment);
        if (!s || !s->is_memory || c.offset > s->size || c.size > s->size - c.offset)
            return 0;
        return h.size;
    }
    case SOFTGPU_CMD_MAP:
    case SOFTGPU_CMD_UNMAP: {
        struct softgpu_cmd_map c;
        if (h.size != sizeof c)
            return 0;
        memcpy(&c, p, sizeof c);
        if (!softgpu_gart_range(sg, c.segment, c.first_page, c.page_count))
            return 0;
        if (h.opcode == SOFTGPU_CMD_MAP && !c.host)
            return 0;
        return h.size;
    }
    case VIDMM_PAGING_UPDATE_PAGE_TABLE:
    case VIDMM_PAGING_FLUSH_TLB:
        return softgpu_mmu_validate_run(sg, p, left);   /* the whole run of MMU commands */
    case VIDMM_PAGING_TRANSFER_VIRTUAL:
    case VIDMM_PAGING_FILL_VIRTUAL:
        return softgpu_validate_virtual(sg, p, left);
    default:
        return 0;
    }
}

/* Pieces of one operation follow each other in a buffer: a copy (or
 * fill) command that continues the previous one on both sides is merged
 * with it and executed as one memcpy (or one fill), as a copy engine
 * coalesces descriptors.  Aperture sides are never merged (their host
 * pages are not contiguous). */
static int softgpu_continues_copy(const struct softgpu_paging_copy *a, const struct softgpu_paging_copy *b, const struct softgpu *sg)
{
    if (a->src_segment != b->src_segment || a->dst_segment != b->dst_segment)
        return 0;
    if ((a->src_segment && !sg->seg[a->src_segment].is_memory) ||
        (a->dst_segment && !sg->seg[a->dst_segment].is_memory))
        return 0;
    return b->src == a->src + a->size && b->dst == a->dst + a->size;
}

static int softgpu_continues_fill(const struct softgpu_paging_fill *a, const struct softgpu_paging_fill *b)
{
    return a->segment == b->segment && a->pattern == b->pattern && b->offset == a->offset + a->size &&
           (a->size & 3u) == 0;
}

static void softgpu_account(struct softgpu *sg, const struct softgpu_cmd_hdr *h, uint64_t bytes)
{
    if (h->flags & SOFTGPU_CMDF_FIRST)
        sg->stats.ops[h->opcode]++;
    sg->stats.bytes[h->opcode] += bytes;
}

/* Checks every command of a buffer against the device.  It reads only
 * what never changes after creation (segment geometry, MMU geometry), so
 * it runs on the submitter's thread while the engine executes earlier
 * buffers. */
static int softgpu_validate_buffer(struct softgpu *sg, const uint8_t *buf, uint32_t end)
{
    for (uint32_t o = 0; o < end;) {
        uint32_t n = softgpu_validate(sg, buf + o, end - o);
        if (!n)
            return 0;
        o += n;
    }
    return 1;
}

void softgpu_execute_buffer(struct softgpu *sg, const uint8_t *buf, uint32_t end, struct softgpu_fault *fault)
{
    for (uint32_t o = 0; o < end;) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, buf + o, sizeof h);
        switch (h.opcode) {
        case SOFTGPU_PAGING_CMD_COPY: {
            struct softgpu_paging_copy c, next, run;
            memcpy(&c, buf + o, sizeof c);
            run = c;
            softgpu_account(sg, &h, c.size);
            o += h.size;
            while (o < end) {
                memcpy(&next, buf + o, sizeof next);
                if (next.hdr.opcode != SOFTGPU_PAGING_CMD_COPY || !softgpu_continues_copy(&c, &next, sg))
                    break;
                softgpu_account(sg, &next.hdr, next.size);
                run.size += next.size;
                c = next;
                o += next.hdr.size;
            }
            softgpu_exec_copy(sg, &run);
            break;
        }
        case SOFTGPU_PAGING_CMD_FILL: {
            struct softgpu_paging_fill c, next, run;
            memcpy(&c, buf + o, sizeof c);
            run = c;
            softgpu_account(sg, &h, c.size);
            o += h.size;
            while (o < end) {
                memcpy(&next, buf + o, sizeof next);
                if (next.hdr.opcode != SOFTGPU_PAGING_CMD_FILL || !softgpu_continues_fill(&c, &next))
                    break;
                softgpu_account(sg, &next.hdr, next.size);
                run.size += next.size;
                c = next;
                o += next.hdr.size;
            }
            softgpu_exec_fill(sg, &run);
            break;
        }
        case SOFTGPU_CMD_DISCARD: {
            struct softgpu_cmd_discard c;
            memcpy(&c, buf + o, sizeof c);
            softgpu_account(sg, &h, c.size);   /* content is left as it is */
            o += h.size;
            break;
        }
        case SOFTGPU_CMD_MAP: {
            struct softgpu_cmd_map c;
            memcpy(&c, buf + o, sizeof c);
            softgpu_gart_map(sg, &sg->seg[c.segment], c.first_page, c.page_count, (uint8_t *)(uintptr_t)c.host);
            softgpu_account(sg, &h, c.page_count * SOFTGPU_PAGE_4K);
            o += h.size;
            break;
        }
        case SOFTGPU_CMD_UNMAP: {
            struct softgpu_cmd_map c;
            memcpy(&c, buf + o, sizeof c);
            void *dummy = c.host ? (void *)(uintptr_t)c.host : sg->dummy_page;
            softgpu_gart_unmap(sg, &sg->seg[c.segment], c.first_page, c.page_count, dummy);
            softgpu_account(sg, &h, c.page_count * SOFTGPU_PAGE_4K);
            o += h.size;
            break;
        }
        case VIDMM_PAGING_UPDATE_PAGE_TABLE:
        case VIDMM_PAGING_FLUSH_TLB:
            o += softgpu_mmu_exec_run(sg, buf + o, end - o);   /* the whole run of MMU commands */
            break;
        case VIDMM_PAGING_TRANSFER_VIRTUAL:
        case VIDMM_PAGING_FILL_VIRTUAL:
            o += softgpu_exec_virtual(sg, buf + o, end - o, fault);
            break;
        default:
            o += h.size;   /* unreachable: validated at submission */
            break;
        }
    }
    sg->stats.paging_buffers++;
}

/* One side of a COPY or FILL for the touch hook: host memory (segment
 * 0, or aperture pages resolved through the GART, each run reported as
 * segment 0 at its host address) or a memory segment's offset. */
static void softgpu_touch_side(struct softgpu *sg, uint32_t seg, uint64_t addr, uint64_t size, int write,
                          void (*fn)(void *, uint32_t, uint64_t, uint64_t, int), void *ctx)
{
    const struct softgpu_segment *s = seg ? softgpu_seg(sg, seg) : NULL;
    if (!s || s->is_memory) {
        fn(ctx, seg, addr, size, write);
        return;
    }
    for (uint64_t done = 0; done < size;) {
        uint64_t run = 0;
        int mapped = 0;
        uint8_t *h = softgpu_resolve(sg, s, addr + done, size - done, &run, &mapped);
        if (!run)
            break;
        if (mapped)
            fn(ctx, 0, (uint64_t)(uintptr_t)h, run, write);
        done += run;
    }
}

void softgpu_touch_buffer(struct softgpu *sg, const uint8_t *buf, uint32_t end,
                     void (*fn)(void *, uint32_t, uint64_t, uint64_t, int), void *ctx)
{
    for (uint32_t o = 0; o < end;) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, buf + o, sizeof h);
        if (h.opcode == SOFTGPU_PAGING_CMD_COPY) {
            struct softgpu_paging_copy c;
            memcpy(&c, buf + o, sizeof c);
            softgpu_touch_side(sg, c.src_segment, c.src, c.size, 0, fn, ctx);
            softgpu_touch_side(sg, c.dst_segment, c.dst, c.size, 1, fn, ctx);
        } else if (h.opcode == SOFTGPU_PAGING_CMD_FILL) {
            struct softgpu_paging_fill c;
            memcpy(&c, buf + o, sizeof c);
            softgpu_touch_side(sg, c.segment, c.offset, c.size, 1, fn, ctx);
        }
        if (!h.size)
            break;   /* unreachable: validated at submission */
        o += h.size;
    }
}

vidmm_status softgpu_submit_command(void *driver, const struct vidmm_submit_command_args *args)
{
    struct softgpu *sg = driver;
    if (!sg || !args || (!args->dma_buffer && args->dma_buffer_size))
        return VIDMM_E_INVALID_ARG;
    /* Validate the whole buffer first, synchronously in both modes: a
     * bad buffer is refused here and executes nothing. */
    if (!softgpu_validate_buffer(sg, args->dma_buffer, args->dma_buffer_size))
        return VIDMM_E_INVALID_ARG;
    struct softgpu_job job = { args->dma_buffer, args->dma_buffer_size, args->fence, args->adapter };
    return softgpu_engine_submit(sg, &job);
}
