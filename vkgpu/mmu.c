/*
 * mmu.c - GpuMmu through sparse binding (vkgpu_config.gpummu, on devices
 * with sparseBinding and sparseResidencyBuffer and a 4 KiB sparse block).
 *
 * The geometry vkgpu declares: two levels, 4 KiB tables in system memory
 * (vidmm allocates them on the host; their "physical address" is their
 * host address): the leaf indexes 9 VA bits (512 pages, 2 MiB), the root
 * 7 (128 leaves): a 256 MiB address space per process.  Entries are
 * vkgpu's 8-byte format: bit 0 valid, bits 1-5 the segment, bits 12+ the
 * 4 KiB frame (a memory segment's offset, or a host address).
 *
 * The GPU's view of a process's address space is one sparse VkBuffer
 * (SPARSE_BINDING | SPARSE_RESIDENCY) per root table, made on first use:
 * GPU VA v of that process is byte v of the buffer.  UPDATE_PAGE_TABLE
 * writes the host table when the paging buffer is recorded (as the
 * aperture's GART) and, for a leaf linked into a bound root (or a root
 * entry linking a leaf), binds the pages with vkQueueBindSparse: a page
 * of a memory segment to that arena's VkDeviceMemory at its offset,
 * anything else unbound.  The binds wait for the queue to drain first, so
 * work submitted before reads the old mapping, work after the new (a
 * simple, conservative ordering: docs/VKGPU.md).  FLUSH_TLB needs nothing.
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
#define MMU_VALID 0x1ull
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
        c.page_table_update_mode = VIDMM_PAGE_TABLE_UPDATE_GPU_PHYSICAL;
        c.virtual_address_bit_count = MMU_VA_BITS;
        c.page_table_level_count = 2;
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

void vk_mmu_set_root(void *driver, const struct vidmm_set_root_page_table_args *args)
{
    struct vkgpu *g = driver;
    if (!g || !args || !g->mmu)
        return;
    /* The token's previous root loses a reference. */
    for (uint32_t i = 0; i < g->ntoken; i++)
        if (g->token[i].table && g->token[i].token == args->context) {
            struct vk_root *r = root_of_table(g, g->token[i].table);
            if (r && --r->refs == 0) {
                vkQueueWaitIdle(g->queue);
                if (r->sparse)
                    vkDestroyBuffer(g->device, r->sparse, NULL);
                memset(r, 0, sizeof *r);
            }
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

/* The process's sparse buffer, made on first use with every page its
 * tables already map bound. */
static vidmm_status binds_flush(struct vkgpu *g, struct vk_root *r);
static void bind_leaf(struct vkgpu *g, struct vk_root *r, uint32_t index, uint64_t leaf);

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
            bind_leaf(g, r, i, MMU_FRAME(root[i]) << 12);
    return binds_flush(g, r);
}

/* ---- binds ------------------------------------------------------------------- */

/* Queues the bind of page `va` of r to what entry e names (or unbinds). */
static void bind_page(struct vkgpu *g, uint64_t va, uint64_t e)
{
    VkSparseMemoryBind b;
    memset(&b, 0, sizeof b);
    b.resourceOffset = va;
    b.size = VK_PAGE;
    uint32_t s = MMU_SEG(e);
    if ((e & MMU_VALID) && s >= 1 && s <= g->nseg && (MMU_FRAME(e) << 12) < g->seg[s].size) {
        b.memory = g->seg[s].memory;
        b.memoryOffset = MMU_FRAME(e) << 12;
    }
    /* Continues the previous bind? One record for the run. */
    if (g->nbinds) {
        VkSparseMemoryBind *p = &g->binds[g->nbinds - 1];
        if (p->resourceOffset + p->size == va && p->memory == b.memory &&
            (!b.memory || p->memoryOffset + p->size == b.memoryOffset)) {
            p->size += VK_PAGE;
            return;
        }
    }
    if (g->nbinds == g->capbinds) {
        uint32_t cap = g->capbinds ? 2 * g->capbinds : 256;
        VkSparseMemoryBind *n = realloc(g->binds, cap * sizeof *n);
        if (!n) {
            g->bind_failed = 1;
            return;
        }
        g->binds = n;
        g->capbinds = cap;
    }
    g->binds[g->nbinds++] = b;
}

/* Every entry of the leaf linked at root index `index`. */
static void bind_leaf(struct vkgpu *g, struct vk_root *r, uint32_t index, uint64_t leaf)
{
    (void)r;
    const uint64_t *e = (const uint64_t *)(uintptr_t)leaf;
    uint64_t base = (uint64_t)index << (12 + MMU_LEAF_BITS);
    for (uint32_t k = 0; k < (1u << MMU_LEAF_BITS); k++)
        bind_page(g, base + (uint64_t)k * VK_PAGE, leaf ? e[k] : 0);
}

/* Runs the queued binds on r's buffer, after everything submitted
 * before, and waits for them. */
static vidmm_status binds_flush(struct vkgpu *g, struct vk_root *r)
{
    vidmm_status st = g->bind_failed ? VIDMM_E_NO_HOST_MEMORY : VIDMM_OK;
    if (g->nbinds && r->sparse && st == VIDMM_OK) {
        vkQueueWaitIdle(g->queue);
        VkSparseBufferMemoryBindInfo bb = { r->sparse, g->nbinds, g->binds };
        VkBindSparseInfo bi;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_BIND_SPARSE_INFO;
        bi.bufferBindCount = 1;
        bi.pBufferBinds = &bb;
        if (vkQueueBindSparse(g->queue, 1, &bi, g->bind_fence) != VK_SUCCESS ||
            vkWaitForFences(g->device, 1, &g->bind_fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
            st = VIDMM_E_DRIVER_FAILURE;
        vkResetFences(g->device, 1, &g->bind_fence);
        g->sparse_binds += g->nbinds;
    }
    g->nbinds = 0;
    g->bind_failed = 0;
    return st;
}

/* ---- UPDATE_PAGE_TABLE ------------------------------------------------------ */

static uint64_t encode(const struct vidmm_pte *p)
{
    if (!(p->flags & VIDMM_PTE_VALID))
        return 0;
    return (p->page_address << 12) | ((uint64_t)VIDMM_PTE_SEGMENT(p) << 1) | MMU_VALID;
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
    uint32_t entries = u->page_table_level ? 1u << MMU_ROOT_BITS : 1u << MMU_LEAF_BITS;
    if (!g->mmu || u->page_table_level > 1 || u->page_table_address.segment_id != 0 ||
        !u->page_table_address.segment_offset || u->page_table_address.segment_offset % VK_PAGE ||
        !u->page_table_entries || u->start_index > entries || u->num_page_table_entries > entries - u->start_index)
        return VIDMM_E_INVALID_ARG;
    struct vk_rec r;
    memset(&r, 0, sizeof r);
    r.op = VK_REC_UPT;
    r.dst_seg = (uint8_t)u->page_table_level;
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

/* Which bound root links leaf table `leaf`, and at which index. */
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

/* Applied when the buffer is recorded: the host table now, the binds
 * once the queue has drained. */
vidmm_status vk_mmu_apply(struct vkgpu *g, const struct vk_rec *rec, const uint8_t *payload)
{
    uint64_t *t = (uint64_t *)(uintptr_t)rec->dst;
    uint32_t start = (uint32_t)(rec->size >> 32), n = (uint32_t)rec->size;
    uint64_t old[1u << MMU_LEAF_BITS];
    memcpy(old, t, sizeof old[0] * (rec->dst_seg ? (1u << MMU_ROOT_BITS) : (1u << MMU_LEAF_BITS)));
    for (uint32_t i = 0; i < n; i++)
        memcpy(&t[start + i], payload + (rec->src_seg ? 0 : (size_t)i * 8), 8);

    if (rec->dst_seg == 1) {                       /* a root: leaves linked or unlinked */
        struct vk_root *r = root_of_table(g, rec->dst);
        if (!r || !r->sparse)
            return VIDMM_OK;                       /* bound when the buffer is first needed */
        for (uint32_t i = start; i < start + n; i++)
            if (t[i] != old[i])
                bind_leaf(g, r, i, (t[i] & MMU_VALID) && MMU_SEG(t[i]) == 0 ? MMU_FRAME(t[i]) << 12 : 0);
        return binds_flush(g, r);
    }
    uint32_t index;
    struct vk_root *r = root_linking(g, rec->dst, &index);
    if (!r)
        return VIDMM_OK;
    uint64_t base = (uint64_t)index << (12 + MMU_LEAF_BITS);
    for (uint32_t i = start; i < start + n; i++)
        if (t[i] != old[i])
            bind_page(g, base + (uint64_t)i * VK_PAGE, t[i]);
    return binds_flush(g, r);
}

/* ---- virtual-mode submission -------------------------------------------------- */

/* The entry mapping `va` in root r, or 0. */
static uint64_t translate(const struct vk_root *r, uint64_t va)
{
    if (va >> MMU_VA_BITS)
        return 0;
    const uint64_t *root = (const uint64_t *)(uintptr_t)r->table;
    uint64_t e = root[va >> (12 + MMU_LEAF_BITS)];
    if (!(e & MMU_VALID) || MMU_SEG(e) != 0)
        return 0;
    const uint64_t *leaf = (const uint64_t *)(uintptr_t)(MMU_FRAME(e) << 12);
    return leaf[(va >> 12) & ((1u << MMU_LEAF_BITS) - 1)];
}

/* Every page of [va, va+size) mapped to a memory segment (what the
 * sparse buffer has bound)? */
static int mapped(const struct vkgpu *g, const struct vk_root *r, uint64_t va, uint64_t size)
{
    if (!size || va + size < va || (va + size - 1) >> MMU_VA_BITS)
        return 0;
    for (uint64_t p = va & ~(uint64_t)(VK_PAGE - 1); p < va + size; p += VK_PAGE) {
        uint64_t e = translate(r, p);
        if (!(e & MMU_VALID) || MMU_SEG(e) < 1 || MMU_SEG(e) > g->nseg)
            return 0;
    }
    return 1;
}

/* Reads the command buffer through the tables (the arenas' mappings). */
static int read_virtual(const struct vkgpu *g, const struct vk_root *r, uint64_t va, void *dst, uint32_t size)
{
    for (uint32_t done = 0; done < size;) {
        uint64_t e = translate(r, va + done);
        uint32_t s = MMU_SEG(e), in = (uint32_t)((va + done) % VK_PAGE);
        uint32_t len = VK_PAGE - in < size - done ? VK_PAGE - in : size - done;
        if (!(e & MMU_VALID) || s < 1 || s > g->nseg || !g->seg[s].map || (MMU_FRAME(e) << 12) >= g->seg[s].size)
            return -1;
        memcpy((uint8_t *)dst + done, (const uint8_t *)g->seg[s].map + (MMU_FRAME(e) << 12) + in, len);
        done += len;
    }
    return 0;
}

static void barrier(VkCommandBuffer cb)
{
    VkMemoryBarrier mb;
    memset(&mb, 0, sizeof mb);
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

static int cmd_ok(const struct vkgpu *g, const struct vk_root *r, const struct vkgpu_cmd *c)
{
    switch (c->op) {
    case VKGPU_CMD_COPY:
        return mapped(g, r, c->src, c->size_or_value) && mapped(g, r, c->dst, c->size_or_value) &&
               (c->src + c->size_or_value <= c->dst || c->dst + c->size_or_value <= c->src);
    case VKGPU_CMD_FILL:
        return mapped(g, r, c->dst, c->size_or_value) && c->size_or_value % 4 == 0 && c->dst % 4 == 0;
    case VKGPU_CMD_WRITE64:
        return mapped(g, r, c->dst, 8) && c->dst % 4 == 0;
    default:
        return 0;
    }
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
    for (uint32_t i = 0; i < n; i++) {
        const struct vkgpu_cmd *c = &cmd[i];
        barrier(j->cb);
        if (c->op == VKGPU_CMD_COPY) {
            VkBufferCopy bc = { c->src, c->dst, c->size_or_value };
            vkCmdCopyBuffer(j->cb, r->sparse, r->sparse, 1, &bc);
            j->stat.copy_commands++;
            j->stat.copy_bytes += c->size_or_value;
        } else if (c->op == VKGPU_CMD_FILL) {
            vkCmdFillBuffer(j->cb, r->sparse, c->dst, c->size_or_value, (uint32_t)c->src);
            j->stat.fill_commands++;
            j->stat.fill_bytes += c->size_or_value;
        } else {
            vkCmdUpdateBuffer(j->cb, r->sparse, c->dst, 8, &c->size_or_value);
        }
    }
    free(cmd);
    st = vk_job_submit(g, j);
    if (st >= 0)
        g->context_serial++;
    return st;
}

/* ---- setup ------------------------------------------------------------------- */

/* Whether the device can carry vkgpu's GpuMmu: sparse residency buffers
 * of 4 KiB blocks over the arenas' memory type, on the paging queue. */
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
        if (!(req.memoryTypeBits & (1u << g->seg[i].type)))
            return VIDMM_E_NOT_SUPPORTED;
    if (req.alignment != VK_PAGE)
        return VIDMM_E_NOT_SUPPORTED;              /* 64 KiB blocks would need 64 KB-page segments */
    VkFenceCreateInfo fi = { VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0 };
    if (vkCreateFence(g->device, &fi, NULL, &g->bind_fence) != VK_SUCCESS)
        return VIDMM_E_NO_HOST_MEMORY;
    g->mmu = 1;
    return VIDMM_OK;
}

void vk_mmu_device_gone(struct vkgpu *g)
{
    for (uint32_t i = 0; i < g->nroot; i++)
        if (g->root[i].sparse) {
            vkDestroyBuffer(g->device, g->root[i].sparse, NULL);
            g->root[i].sparse = VK_NULL_HANDLE;
        }
    if (g->bind_fence)
        vkDestroyFence(g->device, g->bind_fence, NULL);
    g->bind_fence = VK_NULL_HANDLE;
}

vidmm_status vk_mmu_device_back(struct vkgpu *g)
{
    if (!g->mmu)
        return VIDMM_OK;
    VkFenceCreateInfo fi = { VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0 };
    return vkCreateFence(g->device, &fi, NULL, &g->bind_fence) == VK_SUCCESS ? VIDMM_OK : VIDMM_E_NO_HOST_MEMORY;
}

void vk_mmu_fini(struct vkgpu *g)
{
    if (g->device) {
        for (uint32_t i = 0; i < g->nroot; i++)
            if (g->root[i].sparse)
                vkDestroyBuffer(g->device, g->root[i].sparse, NULL);
        if (g->bind_fence)
            vkDestroyFence(g->device, g->bind_fence, NULL);
    }
    free(g->root);
    free(g->token);
    g->root = NULL;
    g->token = NULL;
    g->nroot = g->ntoken = 0;
    g->bind_fence = VK_NULL_HANDLE;
    free(g->binds);
    g->binds = NULL;
    g->nbinds = g->capbinds = 0;
}
