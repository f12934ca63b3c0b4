/*
 * vpaging.c - softgpu's virtual paging commands: TRANSFER_VIRTUAL and
 * FILL_VIRTUAL, the WDDM 2 form of content moves, where both sides are
 * GPU virtual addresses of the manager's system paging process (its
 * scratch window) rather than segment addresses or MDLs.
 *
 * Build: the request is checked (a root that is a table of the
 * page-table segment, a VA range inside the VA width, known direction
 * and flags) and split into commands of at most SOFTGPU_CHUNK bytes, with the
 * same restart protocol as TRANSFER and FILL (multipass_offset counts
 * the commands already written).  Each command carries the root and, as
 * bound by set_root_page_table when the command was built, its NumEntries
 * and context token: the engine then needs no binding lookup, so it
 * never reads state another thread may be changing.
 *
 * Execute (copy engine): the VAs are translated page by page through
 * the root with softgpu's own MMU walker (mmu.c), which re-checks every
 * entry it reads.  Consecutive commands of one operation run as one (as
 * a copy engine coalesces descriptors).  The operation is checked whole
 * first - every page of the source readable, every page of the
 * destination writable - and only then copied run by run: pages that are
 * contiguous in host memory on both sides, across leaf tables too, are
 * one memcpy, so a large move gets the same large copies as a physical
 * TRANSFER.  A fault in a paging operation is a bug of the manager or
 * the driver, never a normal event: the operation's commands in this
 * buffer are skipped without writing a byte, counted in
 * stats.paging_faults, and reported to vidmm as a page fault of the
 * root's context (the paging process's token) before the buffer's
 * fence; later commands still run.  A walk that fails during the copy
 * itself (the operation overwrote page tables it translates through)
 * stops it there: the walker never yields a host pointer outside the
 * device's memory or a mapped system page, so memory cannot be corrupted
 * either way.
 *
 * Build reads the root bindings without softgpu's lock: only
 * set_root_page_table writes them, and vidmm calls both driver ops from
 * one thread at a time (driver.h).
 */
#include "softgpu_int.h"

#include <string.h>

/* TRANSFER_VIRTUAL (opcode 8) and FILL_VIRTUAL (opcode 9), 56 bytes. */
struct softgpu_cmd_virtual {
    struct softgpu_cmd_hdr hdr;
    uint32_t root_segment;     /* root table: memory segment and offset */
    uint32_t root_entries;     /* NumEntries the root was bound with (the GPU faults past it) */
    uint64_t root;
    uint64_t context;          /* token to report a fault to (0: the root was not bound) */
    uint64_t src;              /* TRANSFER_VIRTUAL: source VA; FILL_VIRTUAL: the 32-bit pattern */
    uint64_t dst_va;
    uint64_t size;             /* bytes, 1 .. SOFTGPU_CHUNK */
};
_Static_assert(sizeof(struct softgpu_cmd_virtual) == 56, "virtual paging command layout");

#define SOFTGPU_VT_KNOWN_FLAGS (VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES | VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES)

/* [va, va+size) inside the VA width (overflow-safe). */
static int softgpu_va_range_ok(const struct softgpu *sg, uint64_t va, uint64_t size)
{
    uint32_t bits = sg->mmu.va_bits;
    uint64_t limit = bits >= 64 ? UINT64_MAX : 1ull << bits;
    return va <= limit && size <= limit - va;
}

static int softgpu_root_table_ok(struct softgpu *sg, uint32_t segment, uint64_t offset)
{
    const struct softgpu_mmu *m = &sg->mmu;
    if (segment < 1 || segment > sg->nb_segment)
        return 0;
    const struct softgpu_segment *s = &sg->seg[segment];
    uint64_t bytes = m->table_size[m->levels - 1];
    return s->is_memory && !(offset & (SOFTGPU_PAGE_4K - 1)) && offset <= s->size && bytes <= s->size - offset;
}

vidmm_status softgpu_build_virtual(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args)
{
    if (!sg->mmu.levels)
        return VIDMM_E_INVALID_ARG;   /* no MMU (IoMmu preset): no virtual addresses to move between */
    struct softgpu_cmd_virtual c;
    memset(&c, 0, sizeof c);
    const struct vidmm_physical_address *root;
    uint64_t total;
    if (args->operation == VIDMM_PAGING_TRANSFER_VIRTUAL) {
        const struct vidmm_paging_transfer_virtual *t = &args->u.transfer_virtual;
        if (t->transfer_direction > VIDMM_TRANSFER_LOCAL_TO_LOCAL || (t->flags & ~SOFTGPU_VT_KNOWN_FLAGS))
            return VIDMM_E_INVALID_ARG;
        if (!softgpu_va_range_ok(sg, t->source_virtual_address, t->transfer_size_in_bytes) ||
            !softgpu_va_range_ok(sg, t->destination_virtual_address, t->transfer_size_in_bytes))
            return VIDMM_E_INVALID_ARG;
        root = &t->root_page_table_address;
        total = t->transfer_size_in_bytes;
        c.src = t->source_virtual_address;
        c.dst_va = t->destination_virtual_address;
    } else {
        const struct vidmm_paging_fill_virtual *f = &args->u.fill_virtual;
        if (!softgpu_va_range_ok(sg, f->destination_virtual_address, f->fill_size_in_bytes))
            return VIDMM_E_INVALID_ARG;
        root = &f->root_page_table_address;
        total = f->fill_size_in_bytes;
        c.src = f->fill_pattern;
        c.dst_va = f->destination_virtual_address;
    }
    if (!softgpu_root_table_ok(sg, root->segment_id, root->segment_offset))
        return VIDMM_E_INVALID_ARG;
    if (total == 0)
        return VIDMM_OK;   /* nothing to move: writes nothing, like a 0-byte TRANSFER */
    uint64_t entries, context;
    softgpu_mmu_binding(sg, root, &entries, &context);
    c.hdr.opcode = (uint16_t)args->operation;
    c.hdr.size = sizeof c;
    c.root_segment = root->segment_id;
    c.root_entries = (uint32_t)entries;
    c.root = root->segment_offset;
    c.context = context;
    uint64_t nchunks = (total + SOFTGPU_CHUNK - 1) / SOFTGPU_CHUNK;
    uint64_t k = args->multipass_offset;
    if (k >= nchunks)
        return VIDMM_E_INVALID_ARG;   /* a restart past the end of the request */
    uint64_t src0 = c.src, dst0 = c.dst_va;
    int wrote = 0;
    for (; k < nchunks; k++) {
        if (args->dma_size < sizeof c) {
            sg->stats.multipass_restarts++;
            if (wrote)
                args->multipass_offset = (uint32_t)k;
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        uint64_t off = k * SOFTGPU_CHUNK;
        c.hdr.flags = k == 0 ? SOFTGPU_CMDF_FIRST : 0;
        if (args->operation == VIDMM_PAGING_TRANSFER_VIRTUAL)
            c.hdr.flags |= SOFTGPU_CMDF_CLASS(softgpu_copy_size_class(total));
        c.size = total - off < SOFTGPU_CHUNK ? total - off : SOFTGPU_CHUNK;
        c.dst_va = dst0 + off;
        /* A fill chunk starts on a multiple of SOFTGPU_CHUNK (of 4): the
         * pattern keeps its phase. */
        c.src = args->operation == VIDMM_PAGING_TRANSFER_VIRTUAL ? src0 + off : src0;
        memcpy(args->dma_buffer, &c, sizeof c);
        args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof c;
        args->dma_size -= (uint32_t)sizeof c;
        wrote = 1;
    }
    return VIDMM_OK;
}

uint32_t softgpu_validate_virtual(struct softgpu *sg, const uint8_t *p, uint32_t left)
{
    struct softgpu_cmd_virtual c;
    if (!sg->mmu.levels || left < sizeof c)
        return 0;
    memcpy(&c, p, sizeof c);
    if (c.hdr.size != sizeof c || c.size == 0 || c.size > SOFTGPU_CHUNK || !softgpu_root_table_ok(sg, c.root_segment, c.root))
        return 0;
    if (c.root_entries == 0 || c.root_entries > (1ull << sg->mmu.bits[sg->mmu.levels - 1]))
        return 0;
    if (!softgpu_va_range_ok(sg, c.dst_va, c.size) ||
        (c.hdr.opcode == VIDMM_PAGING_TRANSFER_VIRTUAL && !softgpu_va_range_ok(sg, c.src, c.size)) ||
        (c.hdr.opcode == VIDMM_PAGING_FILL_VIRTUAL && c.src > UINT32_MAX))
        return 0;
    return c.hdr.size;
}

/* The longest host-contiguous run at va (up to len), across leaf tables:
 * softgpu_mmu_run stops at the end of a leaf, the next one may well continue
 * the same memory-segment range. */
static vidmm_status softgpu_vrun(struct softgpu *sg, const struct vidmm_physical_address *root, uint32_t entries,
                            uint64_t va, uint64_t len, uint32_t access, struct softgpu_run *r)
{
    vidmm_status st = softgpu_mmu_run(sg, root, entries, va, len, access, r);
    while (st == VIDMM_OK && !r->zero && r->run < len) {
        struct softgpu_run n;
        if (softgpu_mmu_run(sg, root, entries, va + r->run, len - r->run, access, &n) != VIDMM_OK || n.zero ||
            n.host != r->host + r->run)
            break;
        r->run += n.run;
    }
    return st;
}

/* Does [va, va+size) translate for access?  On a fault, fills *f.
 * *first is the first run (often the whole range: one memory extent). */
static int softgpu_vcheck(struct softgpu *sg, const struct vidmm_physical_address *root, const struct softgpu_cmd_virtual *c,
                     uint64_t va, uint32_t access, struct softgpu_fault *f, struct softgpu_run *first)
{
    for (uint64_t done = 0; done < c->size;) {
        struct softgpu_run r;
        if (softgpu_vrun(sg, root, c->root_entries, va + done, c->size - done, access, &r) != VIDMM_OK) {
            f->context = c->context;
            f->va = va + done;
            f->flags = r.fault_flags;
            return 0;
        }
        if (!done)
            *first = r;
        done += r.run;
    }
    return 1;
}

/* Does command b continue command a (the next chunk of one operation)? */
static int softgpu_vcontinues(const struct softgpu_cmd_virtual *a, const struct softgpu_cmd_virtual *b)
{
    if (b->hdr.opcode != a->hdr.opcode || (b->hdr.flags & SOFTGPU_CMDF_FIRST) || b->root_segment != a->root_segment ||
        b->root != a->root || b->root_entries != a->root_entries || b->context != a->context ||
        b->dst_va != a->dst_va + a->size)
        return 0;
    if (a->hdr.opcode == VIDMM_PAGING_TRANSFER_VIRTUAL)
        return b->src == a->src + a->size;
    return b->src == a->src && (a->size & 3u) == 0;   /* a fill keeps its pattern phase */
}

uint32_t softgpu_exec_virtual(struct softgpu *sg, const uint8_t *p, uint32_t left, struct softgpu_fault *fault)
{
    /* The commands of one operation that follow each other run as one,
     * as a copy engine coalesces descriptors: one check, then copies as
     * long as host memory is contiguous on both sides (so a large move
     * gets large memcpy calls, like a physical TRANSFER). */
    struct softgpu_cmd_virtual c, last, next;
    memcpy(&c, p, sizeof c);
    last = c;
    uint32_t used = c.hdr.size;
    uint64_t ops = (c.hdr.flags & SOFTGPU_CMDF_FIRST) != 0;
    while (left - used >= sizeof next) {
        memcpy(&next, p + used, sizeof next);
        if (!softgpu_vcontinues(&last, &next))
            break;
        c.size += next.size;
        last = next;
        used += next.hdr.size;
    }
    struct vidmm_physical_address root;
    memset(&root, 0, sizeof root);
    root.segment_id = c.root_segment;
    root.segment_offset = c.root;
    int copy = c.hdr.opcode == VIDMM_PAGING_TRANSFER_VIRTUAL;
    struct softgpu_fault f;
    memset(&f, 0, sizeof f);
    struct softgpu_run fs, fd;
    memset(&fs, 0, sizeof fs);
    memset(&fd, 0, sizeof fd);
    int ok = (!copy || softgpu_vcheck(sg, &root, &c, c.src, SOFTGPU_ACCESS_READ, &f, &fs)) &&
             softgpu_vcheck(sg, &root, &c, c.dst_va, SOFTGPU_ACCESS_WRITE, &f, &fd);
    /* Both sides one run (the usual chunk: one extent each): the check's
     * walk is the copy's, no second one. */
    int single = ok && fd.run == c.size && (!copy || fs.run == c.size);
    uint32_t pattern = (uint32_t)c.src;
    for (uint64_t done = 0; ok && done < c.size;) {
        struct softgpu_run rs, rd;
        memset(&rs, 0, sizeof rs);
        if (single) {
            rs = fs;
            rd = fd;
        } else if (copy && softgpu_vrun(sg, &root, c.root_entries, c.src + done, c.size - done, SOFTGPU_ACCESS_READ, &rs) !=
                        VIDMM_OK) {
            f.context = c.context, f.va = c.src + done, f.flags = rs.fault_flags, ok = 0;
            break;
        }
        if (!single &&
            softgpu_vrun(sg, &root, c.root_entries, c.dst_va + done, c.size - done, SOFTGPU_ACCESS_WRITE, &rd) !=
                VIDMM_OK) {
            f.context = c.context, f.va = c.dst_va + done, f.flags = rd.fault_flags, ok = 0;
            break;
        }
        uint64_t n = copy && rs.run < rd.run ? rs.run : rd.run;
        if (rd.zero) {
            /* a Zero page: the write is dropped */
        } else if (!copy) {
            uint32_t rot = (uint32_t)(8u * (done & 3u));
            softgpu_fill(sg, rd.host, n, rot ? (pattern >> rot) | (pattern << (32u - rot)) : pattern);
        } else if (rs.zero) {
            memset(rd.host, 0, (size_t)n);
        } else if (rs.host < rd.host + n && rd.host < rs.host + n) {
            memmove(rd.host, rs.host, (size_t)n);
        } else {
            softgpu_copy(sg, rd.host, rs.host, n, SOFTGPU_CMDF_CLASS_OF(c.hdr.flags));
        }
        done += n;
    }
    sg->stats.ops[c.hdr.opcode] += ops;
    if (ok) {
        sg->stats.bytes[c.hdr.opcode] += c.size;
    } else {
        sg->stats.paging_faults++;
        if (!fault->pending) {
            *fault = f;
            fault->pending = 1;   /* the engine reports it to the job's adapter */
        }
    }
    return used;
}
