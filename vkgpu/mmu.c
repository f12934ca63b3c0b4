/*
 * mmu.c - GpuMmu through sparse binding (vkgpu_config.gpummu, on devices
 * with sparseBinding and sparseResidencyBuffer and a sparse block of at
 * most 64 KiB).
 *
 * The geometry vkgpu declares: two levels, 4 KiB tables in system memory
 * (vidmm allocates them on the host; their "physical address" is their
 * host address): the leaf indexes 9 VA bits (512 pages, 2 MiB), the root
 * 7 (128 leaves): a 256 MiB address space per process.  Entries are
 * vkgpu's 8-byte format: bit 0 valid, bits 1-5 the segment, bit 6 (root
 * entries) the leaf holds 64 KB entries, bits 12+ the 4 KiB frame (a
 * memory segment's offset, or a host address).
 *
 * Pages.  The bind unit (g->block) is the device's sparse block when
 * that is 4 KiB, else 64 KiB (a 64 KiB-block GPU; page64 asks for it on
 * a 4 KiB-block device).  With 64 KiB units the memory segments have 64
 * KB pages and vkgpu declares 64 KB leaves (32 entries in a 4 KiB
 * table).  A unit of a sparse buffer is bound when every valid entry
 * covering it names the matching bytes of one unit-aligned range of one
 * arena (docs/DECISIONS.md D85), else unbound; vkgpu's own checks still
 * refuse a command that touches an invalid entry.
 *
 * The GPU's view of a process's address space is one sparse VkBuffer
 * (SPARSE_BINDING | SPARSE_RESIDENCY) per root table, made on first use:
 * GPU VA v of that process is byte v of the buffer.  UPDATE_PAGE_TABLE
 * writes the host table when the paging buffer is recorded (as the
 * aperture's GART) and queues the binds of the units whose entries
 * changed (for a leaf linked into a root that has a buffer, or a root
 * entry linking a leaf); they run as one vkQueueBindSparse before the
 * next command the queue gets, ordered with it by the order timeline
 * (engine.c), so work queued before reads the old mapping and work after
 * the new.  FLUSH_TLB needs nothing.
 *
 * TRANSFER_VIRTUAL / FILL_VIRTUAL run through the sparse buffer of the
 * root they name (vidmm's system paging process): a side whose pages are
 * in a memory segment is that buffer at the VA; a side in system memory
 * (or the aperture) is host pages, which no measured driver binds into a
 * sparse buffer: vkgpu reads the entry and imports the pages for the
 * submission, as for a physical TRANSFER (D83).  An operation whose pages
 * do not translate is skipped whole and reported as a page fault of the
 * root's token before its buffer's fence.
 *
 * A virtual-mode context submission names its buffer by GPU VA: vkgpu
 * reads it through the process's tables (memory segments' CPU mappings),
 * then records its vkgpu_cmd commands against the process's sparse buffer.
 */
#include "vkgpu_int.h"

#include <stdlib.h>
#include <string.h>

#define MMU_LEAF_BITS 9u
#define MMU_ROOT_BITS 7u
#define MMU_VA_BITS (12u + MMU_LEAF_BITS + MMU_ROOT_BITS)
#define MMU_LEAF_SPAN (1ull << (12u + MMU_LEAF_BITS))
#define MMU_LEAF64_ENTRIES (MMU_LEAF_SPAN / VK_PAGE64)
#define MMU_VALID 0x1ull
#define MMU_PT64 0x40ull
#define MMU_SEG(e) ((uint32_t)(((e) >> 1) & 31u))
#define MMU_FRAME(e) ((e) >> 12)

/* ---- the geometry ---------------------------------------------------------- */

vidmm_status vk_mmu_query(struct vkgpu *g, const struct vidmm_query_adapter_info_args *args)
{
    if (!g->mmu)
        return VIDMM_E_NOT_SUPPORTED;
    if (args->type == VIDMM_QAI_GPUMMUCAPS) {
        if (!args->output || args->output_size < sizeof(struct vidmm_gpummu_caps))
            return VIDMM_E_INVALID_ARG;
        struct vidmm_gpummu_caps c;
        memset(&c, 0, sizeof c);
        /* Content moves through the paging process's sparse buffer. */
        c.flags = VIDMM_GPUMMU_VIRTUAL_PAGING_OPS;
        c.page_table_update_mode = VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL;
        c.virtual_address_bit_count = MMU_VA_BITS;
        c.page_table_level_count = 2;
        c.leaf_page_table_size_for_64k_pages_in_bytes = g->block == VK_PAGE64 ? VK_PAGE : 0;
        memcpy(args->output, &c, sizeof c);
        return VIDMM_OK;
    }
    const struct vidmm_query_page_table_level_in *in = args->input;
    if (!in || args->input_size < sizeof *in || in->level_index > 1 || !args->output ||
        args->output_size < sizeof(struct vidmm_page_table_level_desc))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_page_table_level_desc d;
    memset(&d, 0, sizeof d);
    d.page_table_index_bit_count = in->level_index ? MMU_ROOT_BITS : MMU_LEAF_BITS;
    d.page_table_segment_id = 0;                   /* host memory: vkgpu reads its tables at any time */
    d.paging_process_page_table_segment_id = 0;
    d.page_table_size_in_bytes = VK_PAGE;
    memcpy(args->output, &d, sizeof d);
    return VIDMM_OK;
}

/* ---- walking the host tables ------------------------------------------------- */

/* The entry mapping `va` in root r (0: none), with *addr the byte's
 * address (segment offset, or host address for segment 0) and *left the
 * bytes from va to the end of what the entry (or the hole) covers. */
static uint64_t walk(const struct vk_root *r, uint64_t va, uint64_t *addr, uint64_t *left)
{
    *left = MMU_LEAF_SPAN - (va & (MMU_LEAF_SPAN - 1));
    if (va >> MMU_VA_BITS)
        return 0;
    const uint64_t *root = (const uint64_t *)(uintptr_t)r->table;
    uint64_t re = root[va >> (12 + MMU_LEAF_BITS)];
    if (!(re & MMU_VALID) || MMU_SEG(re) != 0)
        return 0;
    const uint64_t *leaf = (const uint64_t *)(uintptr_t)(MMU_FRAME(re) << 12);
    uint64_t psize = (re & MMU_PT64) ? VK_PAGE64 : VK_PAGE;
    uint64_t e = leaf[(va & (MMU_LEAF_SPAN - 1)) / psize];
    uint64_t in = va & (psize - 1);
    *left = psize - in;
    if (!(e & MMU_VALID))
        return 0;
    *addr = (MMU_FRAME(e) << 12) + in;
    return e;
}

/* What the unit of r's sparse buffer at `va` (unit-aligned) is bound to:
 * 1 with the arena and its offset when every valid entry over the unit
 * names the matching bytes of one unit-aligned arena range, else 0. */
static int unit_target(const struct vkgpu *g, const struct vk_root *r, uint64_t va, uint32_t *seg, uint64_t *off)
{
    int any = 0;
    for (uint64_t p = va, left; p < va + g->block; p += left) {
        uint64_t addr;
        uint64_t e = walk(r, p, &addr, &left);
        if (!(e & MMU_VALID))
            continue;
        uint32_t s = MMU_SEG(e);
        if (s < 1 || s > g->nseg || addr < p - va)
            return 0;
        uint64_t base = addr - (p - va);
        if ((any && (s != *seg || base != *off)) || base % g->block || base + g->block > g->seg[s].size)
            return 0;
        *seg = s;
        *off = base;
        any = 1;
    }
    return any;
}

/* Every byte of [va, va+size) under a valid entry that the GPU reaches:
 * a memory-segment page whose unit is bound (local), or with host ok,
 * system or aperture pages.  *bad: the first byte that is not. */
static int range_ok(const struct vkgpu *g, const struct vk_root *r, uint64_t va, uint64_t size, int host, uint64_t *bad)
{
    uint64_t checked = UINT64_MAX;                 /* the last unit found bound */
    if (!size || va + size < va || (va + size - 1) >> MMU_VA_BITS) {
        *bad = va;
        return 0;
    }
    for (uint64_t p = va & ~(uint64_t)(VK_PAGE - 1); p < va + size; p += VK_PAGE) {
        uint64_t addr, left, off;
        uint64_t e = walk(r, p, &addr, &left);
        uint32_t s = MMU_SEG(e), seg;
        uint64_t unit = p & ~(g->block - 1);
        *bad = p > va ? p : va;
        if (!(e & MMU_VALID))
            return 0;
        if (s == 0 || s == g->ap_id) {
            if (!host)
                return 0;
            continue;
        }
        if (s > g->nseg || (unit != checked && !unit_target(g, r, unit, &seg, &off)))
            return 0;
        checked = unit;
    }
    return 1;
}

/* ---- roots and their sparse buffers ------------------------------------------ */

/* A slot array doubled (new slots zeroed), or NULL when refused (the
 * old one then stays as it was). */
static void *grow(void *arr, uint32_t *n, size_t elem)
{
    uint32_t cap = *n ? 2 * *n : 16;
    uint8_t *p = realloc(arr, (size_t)cap * elem);
    if (!p)
        return NULL;
    memset(p + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
    *n = cap;
    return p;
}

static struct vk_root *root_of_table(struct vkgpu *g, uint64_t table)
{
    for (uint32_t i = 0; i < g->nroot; i++)
        if (g->root[i].refs && g->root[i].table == table)
            return &g->root[i];
    return NULL;
}

/* The token a root was bound with (for fault reports), or 0. */
static uint64_t token_of(const struct vkgpu *g, uint64_t table)
{
    for (uint32_t i = 0; i < g->ntoken; i++)
        if (g->token[i].table == table)
            return g->token[i].token;
    return 0;
}

/* A root nothing names any more: its buffer goes once the queue no
 * longer uses it. */
static void root_release(struct vkgpu *g, struct vk_root *r)
{
    if (r->sparse) {
        vkQueueWaitIdle(g->queue);
        vkDestroyBuffer(g->device, r->sparse, NULL);
    }
    free(r->binds);
    memset(r, 0, sizeof *r);
}

void vk_mmu_set_root(void *driver, const struct vidmm_set_root_page_table_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !g->mmu)
        return;
    /* The token's previous root loses a reference. */
    for (uint32_t i = 0; i < g->ntoken; i++)
        if (g->token[i].table && g->token[i].token == args->context) {
            struct vk_root *r = root_of_table(g, g->token[i].table);
            if (r && --r->refs == 0)
                root_release(g, r);
            g->token[i].table = 0;
        }
    if (args->address.segment_id != 0 || args->address.segment_offset == 0)
        return;                                    /* an unbind (or a root vkgpu did not place) */
    uint64_t table = args->address.segment_offset;
    uint32_t t = 0;
    while (t < g->ntoken && g->token[t].table)
        t++;
    if (t == g->ntoken) {
        struct vk_token *n = grow(g->token, &g->ntoken, sizeof *g->token);
        if (!n)
            return;                                /* no host memory: this token's submissions are refused */
        g->token = n;
    }
    struct vk_root *r = root_of_table(g, table);
    uint32_t k = 0;
    while (!r && k < g->nroot && g->root[k].refs)
        k++;
    if (!r && k == g->nroot) {
        struct vk_root *n = grow(g->root, &g->nroot, sizeof *g->root);
        if (!n)
            return;
        g->root = n;
    }
    if (!r) {
        r = &g->root[k];
        memset(r, 0, sizeof *r);
        r->table = table;
    }
    r->refs++;
    g->token[t].token = args->context;
    g->token[t].table = table;
}

/* ---- binds ------------------------------------------------------------------- */

/* Queues the bind of the unit at `va` of r to what its entries name (or
 * its unbind); a run of units that continue each other is one record. */
static void bind_unit(struct vkgpu *g, struct vk_root *r, uint64_t va)
{
    VkSparseMemoryBind b;
    memset(&b, 0, sizeof b);
    b.resourceOffset = va;
    b.size = g->block;
    uint32_t s;
    uint64_t off;
    if (unit_target(g, r, va, &s, &off)) {
        b.memory = g->seg[s].memory;
        b.memoryOffset = off;
    }
    g->binds_pending = 1;
    if (r->nbinds) {
        VkSparseMemoryBind *p = &r->binds[r->nbinds - 1];
        if (p->resourceOffset + p->size == va && p->memory == b.memory &&
            (!b.memory || p->memoryOffset + p->size == b.memoryOffset)) {
            p->size += g->block;
            return;
        }
    }
    if (r->nbinds == r->capbinds) {
        uint32_t cap = r->capbinds ? 2 * r->capbinds : 64;
        VkSparseMemoryBind *n = realloc(r->binds, cap * sizeof *n);
        if (!n) {
            g->bind_failed = 1;
            return;
        }
        r->binds = n;
        r->capbinds = cap;
    }
    r->binds[r->nbinds++] = b;
}

/* Every unit of [lo, hi) of r, from the tables as they are now. */
static void bind_range(struct vkgpu *g, struct vk_root *r, uint64_t lo, uint64_t hi)
{
    for (uint64_t va = lo & ~(g->block - 1); va < hi; va += g->block)
        bind_unit(g, r, va);
}

vidmm_status vk_mmu_flush_binds(struct vkgpu *g, VkSemaphore sig, uint64_t value)
{
    vidmm_status st = g->bind_failed ? VIDMM_E_NO_HOST_MEMORY : VIDMM_OK;
    uint32_t n = 0, records = 0;
    VkSparseBufferMemoryBindInfo *bb = NULL;
    for (uint32_t i = 0; i < g->nroot; i++)
        n += g->root[i].nbinds && g->root[i].sparse;
    if (n && st >= 0 && !(bb = malloc(n * sizeof *bb)))
        st = VIDMM_E_NO_HOST_MEMORY;
    n = 0;
    for (uint32_t i = 0; i < g->nroot && st >= 0; i++) {
        struct vk_root *r = &g->root[i];
        if (r->nbinds && r->sparse) {
            bb[n].buffer = r->sparse;
            bb[n].bindCount = r->nbinds;
            bb[n++].pBinds = r->binds;
            records += r->nbinds;
        }
    }
    if (st >= 0 && (n || sig))
        st = vk_queue_bind(g, bb, n, sig, value);
    if (st >= 0) {
        pthread_mutex_lock(&g->lock);
        g->sparse_binds += records;
        g->bind_batches += n != 0;
        pthread_mutex_unlock(&g->lock);
    }
    free(bb);
    for (uint32_t i = 0; i < g->nroot; i++)
        g->root[i].nbinds = 0;
    g->binds_pending = 0;
    g->bind_failed = 0;
    return st;
}

/* The process's sparse buffer, made on first use with every page its
 * tables already map queued for binding. */
static vidmm_status root_buffer(struct vkgpu *g, struct vk_root *r)
{
    if (r->sparse)
        return VIDMM_OK;
    VkBufferCreateInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.flags = VK_BUFFER_CREATE_SPARSE_BINDING_BIT | VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT;
    bi.size = 1ull << MMU_VA_BITS;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(g->device, &bi, NULL, &r->sparse) != VK_SUCCESS) {
        r->sparse = VK_NULL_HANDLE;
        return VIDMM_E_NO_HOST_MEMORY;             /* the device's sparse address space is used up */
    }
    const uint64_t *root = (const uint64_t *)(uintptr_t)r->table;
    for (uint32_t i = 0; i < (1u << MMU_ROOT_BITS); i++)
        if ((root[i] & MMU_VALID) && MMU_SEG(root[i]) == 0)
            bind_range(g, r, (uint64_t)i * MMU_LEAF_SPAN, (uint64_t)(i + 1) * MMU_LEAF_SPAN);
    return VIDMM_OK;
}

/* ---- UPDATE_PAGE_TABLE ------------------------------------------------------ */

static uint64_t encode(const struct vidmm_pte *p)
{
    if (!(p->flags & VIDMM_PTE_VALID))
        return 0;
    return (p->page_address << 12) | ((p->flags & VIDMM_PTE_PAGE_TABLE_64KB) ? MMU_PT64 : 0) |
           ((uint64_t)VIDMM_PTE_SEGMENT(p) << 1) | MMU_VALID;
}

/* Entries of a table: the root's, a 4 KB leaf's or a 64 KB leaf's. */
static uint32_t table_entries(uint32_t level, int leaf64)
{
    return level ? 1u << MMU_ROOT_BITS : leaf64 ? (uint32_t)MMU_LEAF64_ENTRIES : 1u << MMU_LEAF_BITS;
}

/* Bytes the UPT record's entries take after it (whole records). */
uint32_t vk_mmu_payload(const struct vk_rec *r)
{
    uint64_t m = r->src;
    return (uint32_t)((m * 8 + sizeof *r - 1) / sizeof *r * sizeof *r);
}

/* The entries go into the paging buffer itself, in vkgpu's format: the
 * array vidmm passes may not outlive the call. */
vidmm_status vk_mmu_build_update(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_update_page_table *u = &args->u.update_page_table;
    int leaf64 = (u->flags & VIDMM_UPDATE_PT_USE_64KB_PAGES) != 0;
    uint32_t entries = table_entries(u->page_table_level, leaf64);
    if (!g->mmu || u->page_table_level > 1 || (leaf64 && (u->page_table_level || g->block != VK_PAGE64)) ||
        u->page_table_address.segment_id != 0 || !u->page_table_address.segment_offset ||
        u->page_table_address.segment_offset % VK_PAGE || !u->page_table_entries || u->start_index > entries ||
        u->num_page_table_entries > entries - u->start_index)
        return VIDMM_E_INVALID_ARG;
    struct vk_rec r;
    memset(&r, 0, sizeof r);
    r.op = VK_REC_UPT;
    r.dst_seg = (uint8_t)u->page_table_level;
    r.reserved = (uint16_t)leaf64;
    r.src_seg = (u->flags & VIDMM_UPDATE_PT_REPEAT) ? 1 : 0;
    r.src = r.src_seg ? 1 : u->num_page_table_entries;
    r.dst = u->page_table_address.segment_offset;
    r.size = ((uint64_t)u->start_index << 32) | u->num_page_table_entries;
    uint32_t payload = vk_mmu_payload(&r);
    if (args->dma_size < sizeof r + payload)
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
    uint8_t *p = args->dma_buffer;
    memcpy(p, &r, sizeof r);
    memset(p + sizeof r, 0, payload);
    for (uint64_t i = 0; i < r.src; i++) {
        uint64_t e = encode(&u->page_table_entries[i]);
        memcpy(p + sizeof r + i * 8, &e, 8);
    }
    args->dma_buffer = p + sizeof r + payload;
    args->dma_size -= (uint32_t)(sizeof r + payload);
    return VIDMM_OK;
}

/* Which root with a buffer links leaf table `leaf`, and at which index. */
static struct vk_root *root_linking(struct vkgpu *g, uint64_t leaf, uint32_t *index)
{
    for (uint32_t i = 0; i < g->nroot; i++) {
        struct vk_root *r = &g->root[i];
        if (!r->refs || !r->sparse)
            continue;
        const uint64_t *e = (const uint64_t *)(uintptr_t)r->table;
        for (uint32_t k = 0; k < (1u << MMU_ROOT_BITS); k++)
            if ((e[k] & MMU_VALID) && MMU_SEG(e[k]) == 0 && (MMU_FRAME(e[k]) << 12) == leaf) {
                *index = k;
                return r;
            }
    }
    return NULL;
}

/* Applied when the buffer is recorded: the host table now, the binds of
 * the units whose entries changed queued for the next queue operation. */
vidmm_status vk_mmu_apply(struct vkgpu *g, const struct vk_rec *rec, const uint8_t *payload)
{
    uint64_t *t = (uint64_t *)(uintptr_t)rec->dst;
    uint32_t start = (uint32_t)(rec->size >> 32), n = (uint32_t)rec->size;
    uint64_t old[1u << MMU_LEAF_BITS];
    memcpy(old, t, sizeof old[0] * table_entries(rec->dst_seg, rec->reserved != 0));
    for (uint32_t i = 0; i < n; i++)
        memcpy(&t[start + i], payload + (rec->src_seg ? 0 : (size_t)i * 8), 8);

    if (rec->dst_seg == 1) {                       /* a root: leaves linked or unlinked */
        struct vk_root *r = root_of_table(g, rec->dst);
        if (!r || !r->sparse)
            return VIDMM_OK;                       /* bound when the buffer is first needed */
        for (uint32_t i = start; i < start + n; i++)
            if (t[i] != old[i])
                bind_range(g, r, (uint64_t)i * MMU_LEAF_SPAN, (uint64_t)(i + 1) * MMU_LEAF_SPAN);
        return VIDMM_OK;
    }
    uint32_t index;
    struct vk_root *r = root_linking(g, rec->dst, &index);
    if (!r)
        return VIDMM_OK;
    /* The leaf may hold 64 KB entries whatever the record says: the root
     * entry linking it is what the walk follows. */
    const uint64_t *root = (const uint64_t *)(uintptr_t)r->table;
    uint64_t psize = (root[index] & MMU_PT64) ? VK_PAGE64 : VK_PAGE;
    uint64_t base = (uint64_t)index * MMU_LEAF_SPAN, last = UINT64_MAX;
    for (uint32_t i = start; i < start + n; i++) {
        if (t[i] == old[i])
            continue;
        uint64_t lo = base + (uint64_t)i * psize;
        if ((lo & ~(g->block - 1)) == last)
            continue;                              /* the unit is queued already */
        bind_range(g, r, lo, lo + psize);
        last = (lo + psize - 1) & ~(g->block - 1);
    }
    return VIDMM_OK;
}

uint32_t vk_mmu_records_valid(const struct vkgpu *g, const uint8_t *p, uint32_t left)
{
    struct vk_rec rec;
    const struct vk_rec *r = &rec;
    if (!g->mmu || left < sizeof rec)
        return 0;
    memcpy(&rec, p, sizeof rec);
    left -= (uint32_t)sizeof rec;
    if (r->op == VK_REC_UPT) {
        uint32_t n = (uint32_t)r->size, start = (uint32_t)(r->size >> 32);
        uint32_t entries = table_entries(r->dst_seg, r->reserved != 0);
        if (r->dst_seg > 1 || r->reserved > 1 || (r->reserved && (r->dst_seg || g->block != VK_PAGE64)) || !r->dst ||
            r->dst % VK_PAGE || start > entries || n > entries - start || r->src != (r->src_seg ? 1u : n) ||
            vk_mmu_payload(r) > left)
            return 0;
        return (uint32_t)sizeof *r + vk_mmu_payload(r);
    }
    struct vk_rec root;
    if ((r->op != VK_REC_VCOPY && r->op != VK_REC_VFILL) || left < sizeof root)
        return 0;
    memcpy(&root, p + sizeof rec, sizeof root);
    const uint64_t lim = 1ull << MMU_VA_BITS;
    if (root.op != VK_REC_VROOT || !root.dst || root.dst % VK_PAGE || !r->size || r->size > lim ||
        r->dst > lim - r->size)
        return 0;
    if (r->op == VK_REC_VCOPY ? r->src > lim - r->size : (r->src > UINT32_MAX || r->size % 4 || r->dst % 4))
        return 0;
    return (uint32_t)(2 * sizeof *r);
}

/* ---- TRANSFER_VIRTUAL / FILL_VIRTUAL ------------------------------------------ */

/* Chunks of VK_CHUNK bytes (the restart granularity), each a V* record
 * and its VROOT. */
vidmm_status vk_mmu_build_virtual(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args)
{
    int copy = args->operation == VIDMM_PAGING_TRANSFER_VIRTUAL;
    const struct vidmm_paging_transfer_virtual *t = &args->u.transfer_virtual;
    const struct vidmm_paging_fill_virtual *f = &args->u.fill_virtual;
    const struct vidmm_physical_address *root = copy ? &t->root_page_table_address : &f->root_page_table_address;
    struct vk_rec r, rr;
    memset(&r, 0, sizeof r);
    memset(&rr, 0, sizeof rr);
    r.op = copy ? VK_REC_VCOPY : VK_REC_VFILL;
    r.src = copy ? t->source_virtual_address : f->fill_pattern;
    r.dst = copy ? t->destination_virtual_address : f->destination_virtual_address;
    uint64_t total = copy ? t->transfer_size_in_bytes : f->fill_size_in_bytes;
    rr.op = VK_REC_VROOT;
    rr.dst = root->segment_offset;
    const uint32_t known = VIDMM_TRANSFER_VIRTUAL_SRC_64KB_PAGES | VIDMM_TRANSFER_VIRTUAL_DST_64KB_PAGES;
    if (!g->mmu || root->segment_id != 0 || !root->segment_offset || root->segment_offset % VK_PAGE ||
        (copy && (t->transfer_direction > VIDMM_TRANSFER_LOCAL_TO_LOCAL || (t->flags & ~known))))
        return VIDMM_E_INVALID_ARG;
    if (total == 0)
        return VIDMM_OK;
    r.size = total;
    uint64_t chunks = (total + VK_CHUNK - 1) / VK_CHUNK, k = args->multipass_offset;
    uint8_t pair[2 * sizeof r];
    memcpy(pair, &r, sizeof r);
    memcpy(pair + sizeof r, &rr, sizeof rr);
    if (k >= chunks || !vk_mmu_records_valid(g, pair, sizeof pair))
        return VIDMM_E_INVALID_ARG;
    for (; k < chunks; k++) {
        if (args->dma_size < sizeof pair) {
            args->multipass_offset = (uint32_t)k;
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        struct vk_rec c = r;
        uint64_t off = k * VK_CHUNK;
        c.src = copy ? r.src + off : r.src;
        c.dst = r.dst + off;
        c.size = total - off < VK_CHUNK ? total - off : VK_CHUNK;
        memcpy(args->dma_buffer, &c, sizeof c);
        memcpy((uint8_t *)args->dma_buffer + sizeof c, &rr, sizeof rr);
        args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof pair;
        args->dma_size -= (uint32_t)sizeof pair;
    }
    return VIDMM_OK;
}

/* One side of a virtual operation at a VA: the process's sparse buffer
 * (a memory segment: seg, off say where, for overlap checks) or host
 * pages (host), and how many bytes from there stay so. */
struct vside {
    int local;
    uint32_t seg;
    uint64_t off, host, len;
};

static uint64_t host_of(const struct vkgpu *g, uint32_t s, uint64_t addr)
{
    if (s == 0)
        return addr;
    uint64_t page = addr / VK_PAGE;                /* the aperture: the GART's page */
    uint64_t h = page < g->ap_pages && g->gart[page] ? g->gart[page] : (uint64_t)(uintptr_t)g->dummy;
    return h + addr % VK_PAGE;
}

/* The side at va, up to want bytes; range_ok has vouched for every page. */
static void side_at(const struct vkgpu *g, const struct vk_root *r, uint64_t va, uint64_t want, struct vside *o)
{
    uint64_t addr, left;
    uint64_t e = walk(r, va, &addr, &left);
    uint32_t s = MMU_SEG(e);
    o->local = s >= 1 && s <= g->nseg;
    o->seg = s;
    o->off = addr;
    o->host = o->local ? 0 : host_of(g, s, addr);
    o->len = left;
    while (o->len < want) {                        /* the next pages continue it? */
        uint64_t a2, l2;
        uint64_t e2 = walk(r, va + o->len, &a2, &l2);
        uint32_t s2 = MMU_SEG(e2);
        if ((s2 >= 1 && s2 <= g->nseg) != o->local ||
            (o->local ? s2 != s || a2 != addr + o->len : host_of(g, s2, a2) != o->host + o->len))
            break;
        o->len += l2;
    }
    if (o->len > want)
        o->len = want;
}

/* The buffer and offset a side is read or written at. */
static vidmm_status side_buffer(struct vkgpu *g, struct vk_job *j, const struct vk_root *r, uint64_t va,
                                const struct vside *s, uint64_t len, VkBuffer *buf, uint64_t *off)
{
    if (s->local) {
        *buf = r->sparse;
        *off = va;
        return VIDMM_OK;
    }
    return vk_job_import(g, j, (uintptr_t)s->host, len, buf, off);
}

static vidmm_status record_piece(struct vkgpu *g, struct vk_job *j, const struct vk_root *rt, const struct vk_rec *r,
                                 uint64_t done, uint64_t *len)
{
    struct vside d, s;
    side_at(g, rt, r->dst + done, r->size - done, &d);
    *len = d.len;
    if (r->op == VK_REC_VCOPY) {
        side_at(g, rt, r->src + done, *len, &s);
        *len = s.len;
    }
    VkBuffer db, sb;
    uint64_t doff, soff;
    vidmm_status st = side_buffer(g, j, rt, r->dst + done, &d, *len, &db, &doff);
    if (st >= 0 && r->op == VK_REC_VCOPY)
        st = side_buffer(g, j, rt, r->src + done, &s, *len, &sb, &soff);
    if (st >= 0)
        st = vk_job_flush_binds(g, j);
    if (st < 0)
        return st;
    if (r->op == VK_REC_VFILL) {
        vk_cmd_fill(j, db, doff, *len, (uint32_t)r->src);
        j->stat.vfill_bytes += *len;
        return VIDMM_OK;
    }
    /* Two VAs of one arena's overlapping bytes (a move inside a segment):
     * pieces of the distance, in the safe direction, as physically. */
    uint64_t step = 0;
    int forward = 1;
    if (d.local && s.local && d.seg == s.seg && s.off < d.off + *len && d.off < s.off + *len && s.off != d.off) {
        step = s.off > d.off ? s.off - d.off : d.off - s.off;
        forward = s.off > d.off;
    }
    vk_cmd_copy(j, sb, soff, db, doff, *len, step, forward);
    j->stat.vcopy_bytes += *len;
    return VIDMM_OK;
}

vidmm_status vk_mmu_record_virtual(struct vkgpu *g, struct vk_job *j, const struct vk_rec *r, const struct vk_rec *root)
{
    struct vk_root *rt = root_of_table(g, root->dst);
    uint64_t bad = r->dst;
    int ok = rt != NULL;
    if (ok && root_buffer(g, rt) < 0)
        return VIDMM_E_NO_HOST_MEMORY;
    ok = ok && (r->op != VK_REC_VCOPY || range_ok(g, rt, r->src, r->size, 1, &bad)) &&
         range_ok(g, rt, r->dst, r->size, 1, &bad);
    if (!ok) {                                     /* skipped whole, reported before the fence */
        if (!j->faulted) {
            j->faulted = 1;
            j->fault_context = token_of(g, root->dst);
            j->fault_va = bad;
        }
        j->stat.faults++;
        return VIDMM_OK;
    }
    for (uint64_t done = 0, len; done < r->size; done += len) {
        vidmm_status st = record_piece(g, j, rt, r, done, &len);
        if (st < 0)
            return st;
    }
    return VIDMM_OK;
}

/* ---- virtual-mode submission -------------------------------------------------- */

/* Reads the command buffer through the tables (the arenas' mappings). */
static int read_virtual(const struct vkgpu *g, const struct vk_root *r, uint64_t va, void *dst, uint32_t size)
{
    for (uint32_t done = 0; done < size;) {
        uint64_t addr, left;
        uint64_t e = walk(r, va + done, &addr, &left);
        uint32_t s = MMU_SEG(e);
        uint32_t len = left < size - done ? (uint32_t)left : size - done;
        if (!(e & MMU_VALID) || s < 1 || s > g->nseg || !g->seg[s].map || addr >= g->seg[s].size ||
            len > g->seg[s].size - addr)
            return -1;
        memcpy((uint8_t *)dst + done, (const uint8_t *)g->seg[s].map + addr, len);
        done += len;
    }
    return 0;
}

static int cmd_ok(const struct vkgpu *g, const struct vk_root *r, const struct vkgpu_cmd *c)
{
    uint64_t bad;
    switch (c->op) {
    case VKGPU_CMD_COPY:
        return range_ok(g, r, c->src, c->size_or_value, 0, &bad) && range_ok(g, r, c->dst, c->size_or_value, 0, &bad) &&
               (c->src + c->size_or_value <= c->dst || c->dst + c->size_or_value <= c->src);
    case VKGPU_CMD_FILL:
        return range_ok(g, r, c->dst, c->size_or_value, 0, &bad) && c->size_or_value % 4 == 0 && c->dst % 4 == 0;
    case VKGPU_CMD_WRITE64:
        return range_ok(g, r, c->dst, 8, 0, &bad) && c->dst % 4 == 0;
    default:
        return 0;
    }
}

static vidmm_status record_cmds(struct vkgpu *g, struct vk_job *j, const struct vk_root *r,
                                const struct vkgpu_cmd *cmd, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct vkgpu_cmd *c = &cmd[i];
        vidmm_status st = vk_job_flush_binds(g, j);
        if (st < 0)
            return st;
        if (c->op == VKGPU_CMD_COPY) {
            vk_cmd_copy(j, r->sparse, c->src, r->sparse, c->dst, c->size_or_value, 0, 1);
        } else if (c->op == VKGPU_CMD_FILL) {
            vk_cmd_fill(j, r->sparse, c->dst, c->size_or_value, (uint32_t)c->src);
        } else {
            vk_barrier_transfer(j->cb);
            vkCmdUpdateBuffer(j->cb, r->sparse, c->dst, 8, &c->size_or_value);
        }
    }
    return VIDMM_OK;
}

vidmm_status vk_mmu_submit_virtual(void *driver, const struct vidmm_submit_context_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !g->mmu || args->node != 0 || !args->dma_buffer_size ||
        args->dma_buffer_size % sizeof(struct vkgpu_cmd) || args->dma_buffer_size > (1u << 20))
        return VIDMM_E_INVALID_ARG;
    struct vk_root *r = NULL;
    for (uint32_t i = 0; i < g->ntoken && !r; i++)
        if (g->token[i].table && g->token[i].token == args->context)
            r = root_of_table(g, g->token[i].table);
    uint32_t n = args->dma_buffer_size / (uint32_t)sizeof(struct vkgpu_cmd);
    struct vkgpu_cmd *cmd = malloc(args->dma_buffer_size);
    vidmm_status st = !r || !cmd ? VIDMM_E_INVALID_ARG : root_buffer(g, r);
    if (st >= 0 && read_virtual(g, r, args->dma_buffer_virtual_address, cmd, args->dma_buffer_size) < 0)
        st = VIDMM_E_INVALID_ARG;
    for (uint32_t i = 0; st >= 0 && i < n; i++)     /* the whole buffer valid, or nothing runs */
        if (!cmd_ok(g, r, &cmd[i]))
            st = VIDMM_E_INVALID_ARG;
    struct vk_job *j = st >= 0 ? vk_job_begin(g) : NULL;
    if (st >= 0 && !j)
        st = VIDMM_E_DRIVER_FAILURE;
    if (st < 0) {
        free(cmd);
        return st;
    }
    j->kind = VK_JOB_CONTEXT;
    j->adapter = args->adapter;
    j->fence = args->fence;
    j->context = args->context;
    j->node = args->node;
    j->sem = g->context_sem;
    j->value = g->context_serial + 1;
    st = record_cmds(g, j, r, cmd, n);
    free(cmd);
    if (st < 0) {
        vk_job_abandon(g, j);
        return st;
    }
    st = vk_job_submit(g, j);
    if (st >= 0)
        g->context_serial++;
    return st;
}

/* ---- setup ------------------------------------------------------------------- */

/* Whether the device can carry vkgpu's GpuMmu: sparse residency buffers
 * over the arenas' memory type, on the paging queue, with a sparse block
 * that divides 64 KiB; the bind unit follows from the block. */
vidmm_status vk_mmu_init(struct vkgpu *g)
{
    if (!g->cfg.gpummu)
        return VIDMM_OK;
    VkQueueFamilyProperties q[32];
    uint32_t nq = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(g->phys, &nq, q);
    if (!g->info.sparse_binding || g->family >= nq || !(q[g->family].queueFlags & VK_QUEUE_SPARSE_BINDING_BIT))
        return VIDMM_E_NOT_SUPPORTED;
    VkBufferCreateInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.flags = VK_BUFFER_CREATE_SPARSE_BINDING_BIT | VK_BUFFER_CREATE_SPARSE_RESIDENCY_BIT;
    bi.size = 1ull << MMU_VA_BITS;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkBuffer probe;
    if (vkCreateBuffer(g->device, &bi, NULL, &probe) != VK_SUCCESS)
        return VIDMM_E_NOT_SUPPORTED;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, probe, &req);
    vkDestroyBuffer(g->device, probe, NULL);
    for (uint32_t i = 1; i <= g->nseg; i++)
        if (!(req.memoryTypeBits & (1u << g->seg[i].type)) || g->seg[i].size % VK_PAGE64)
            return VIDMM_E_NOT_SUPPORTED;
    if (req.alignment < VK_PAGE || req.alignment > VK_PAGE64 || VK_PAGE64 % req.alignment)
        return VIDMM_E_NOT_SUPPORTED;              /* larger blocks would need pages vidmm does not have */
    g->block = req.alignment > VK_PAGE || g->cfg.page64 ? VK_PAGE64 : VK_PAGE;
    g->info.sparse_block = (uint32_t)req.alignment;
    g->mmu = 1;
    return g->block == VK_PAGE ? VIDMM_OK : vk_device_rebase(g);
}

void vk_mmu_device_gone(struct vkgpu *g)
{
    for (uint32_t i = 0; i < g->nroot; i++) {
        if (g->root[i].sparse)
            vkDestroyBuffer(g->device, g->root[i].sparse, NULL);
        g->root[i].sparse = VK_NULL_HANDLE;
        g->root[i].nbinds = 0;                     /* remade, all bound again, on first use */
    }
    g->binds_pending = 0;
    g->bind_failed = 0;
}

vidmm_status vk_mmu_device_back(struct vkgpu *g)
{
    (void)g;
    return VIDMM_OK;
}

void vk_mmu_fini(struct vkgpu *g)
{
    for (uint32_t i = 0; i < g->nroot; i++) {
        if (g->device && g->root[i].sparse)
            vkDestroyBuffer(g->device, g->root[i].sparse, NULL);
        free(g->root[i].binds);
    }
    free(g->root);
    free(g->token);
    g->root = NULL;
    g->token = NULL;
    g->nroot = g->ntoken = 0;
    g->binds_pending = 0;
}
