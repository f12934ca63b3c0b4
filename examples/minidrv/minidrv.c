/*
 * minidrv.c - the whole of a small vidmm driver (docs/WRITING_A_DRIVER.md
 * explains it section by section).
 *
 * The device:
 *   segment 1  VRAM: vram_size bytes of host memory at GPU address 0,
 *              CPU-visible (its "BAR" is the host pointer itself);
 *   segment 2  the aperture: a GART of host page pointers at GPU address
 *              MD_APERTURE_BASE, so scattered system pages look
 *              contiguous to the GPU;
 *   paging buffers live in system memory (segment 0).
 *
 * The paging-buffer format is one 40-byte command per step (struct
 * md_cmd).  Transfers and fills are cut into MD_CHUNK-byte commands, so
 * a large one may need several paging buffers: that is where the restart
 * protocol (multipass_offset) comes in.  A worker thread plays the copy
 * engine: it takes submitted buffers in order, runs their commands with
 * memcpy, and only then signals the buffer's fence.
 *
 * What minidrv leaves out, because vidmm's defaults or its caps make it
 * unnecessary: GpuMmu and IoMmu (no page tables, no virtual paging
 * operations, no GPU VA for processes), a CPU host aperture, command
 * submission for contexts (only paging buffers run), per-engine reset.
 */
#include "minidrv.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MD_PAGE               4096u
#define MD_CHUNK              (64u << 10)        /* bytes per copy/fill command */
#define MD_QUEUE              16u                /* buffers the engine can hold queued */
#define MD_PAGING_BUFFER_SIZE (16u << 10)
#define MD_APERTURE_BASE      0x40000000ull      /* GPU address of the aperture: past any VRAM size we accept */
#define MD_SEG_VRAM           1u
#define MD_SEG_APERTURE       2u
#define MD_POISON             0xDB               /* what VRAM holds after it lost its content */

/* ------------------------------------------------------------------ */
/* The device and its paging-buffer format                              */
/* ------------------------------------------------------------------ */

enum md_opcode { MD_CMD_COPY = 1, MD_CMD_FILL = 2, MD_CMD_MAP = 3, MD_CMD_UNMAP = 4 };
#define MD_HOST_SRC 0x1u   /* COPY: src is a host address (system pages), not a GPU address */
#define MD_HOST_DST 0x2u

/* One command.  COPY: src, dst, size.  FILL: dst, size, arg = pattern.
 * MAP: dst = first aperture page, src = host address of the first page,
 * size = pages.  UNMAP: dst = first page, src = dummy page, size = pages. */
struct md_cmd {
    uint32_t opcode;
    uint32_t flags;
    uint64_t src;
    uint64_t dst;
    uint64_t size;
    uint64_t arg;
};

struct md_job {
    const uint8_t *buf;
    uint32_t size;
    uint64_t fence;
    struct vidmm_adapter *adapter;
};

struct minidrv {
    uint8_t *vram;
    uint64_t vram_size;
    uint8_t **gart;                  /* one host page per aperture page; NULL = never mapped */
    uint64_t gart_pages;
    uint8_t *dummy;                  /* what never-mapped aperture pages read */
    void (*notify_fence)(struct vidmm_adapter *adapter, uint64_t fence);
    uint32_t broken;
    uint32_t power_state;

    /* The engine.  The lock guards the queue; the worker runs a buffer
     * without it (marked busy) so submitters can queue meanwhile. */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work;             /* the queue got a job, or stop */
    pthread_cond_t done;             /* a job left the queue or finished */
    struct md_job queue[MD_QUEUE];
    uint32_t head, count;
    int busy, stop;
};

/* ------------------------------------------------------------------ */
/* DxgkDdiQueryAdapterInfo                                              */
/* ------------------------------------------------------------------ */

static vidmm_status md_query_segments(struct minidrv *md, const struct vidmm_query_adapter_info_args *args)
{
    if (!args->output || args->output_size < sizeof(struct vidmm_query_segment_out))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_query_segment_out *out = args->output;
    /* First call: only the count, so vidmm can size the array. */
    if (!out->segment_descriptor) {
        out->nb_segment = 2;
        return VIDMM_OK;
    }
    /* Second call: the array vidmm sized.  Records are stride bytes
     * apart, which may be more than the struct we know (a newer vidmm);
     * we write only the fields we know into each. */
    size_t stride = out->segment_descriptor_stride;
    if (md->broken == MINIDRV_BREAK_STRIDE)
        stride = sizeof(struct vidmm_segment_descriptor);
    if (out->nb_segment < 2 || stride < sizeof(struct vidmm_segment_descriptor))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_segment_descriptor d[2];
    memset(d, 0, sizeof d);
    d[0].flags = VIDMM_SEGMENT_CPU_VISIBLE;
    d[0].base_address = 0;
    d[0].size = md->vram_size;
    d[0].cpu_translated_address = md->vram;
    d[1].flags = VIDMM_SEGMENT_APERTURE;
    d[1].base_address = MD_APERTURE_BASE;
    d[1].size = md->gart_pages * MD_PAGE;
    d[1].commit_limit = d[1].size;
    unsigned char *p = (unsigned char *)out->segment_descriptor;
    memcpy(p, &d[0], sizeof d[0]);
    memcpy(p + stride, &d[1], sizeof d[1]);
    out->nb_segment = 2;
    out->paging_buffer_segment_id = 0;              /* paging buffers in system memory */
    out->paging_buffer_size = MD_PAGING_BUFFER_SIZE;
    out->paging_buffer_private_data_size = 0;
    return VIDMM_OK;
}

static vidmm_status md_query_adapter_info(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    struct minidrv *md = driver;
    switch (args->type) {
    case VIDMM_QAI_DRIVERCAPS: {
        if (!args->output || args->output_size < sizeof(struct vidmm_driver_caps))
            return VIDMM_E_INVALID_ARG;
        struct vidmm_driver_caps caps;
        memset(&caps, 0, sizeof caps);
        caps.wddm_version = 0x2000;
        caps.memory_management_caps = 0;            /* neither GpuMmu nor IoMmu: physical paging only */
        caps.node_count = 1;
        memcpy(args->output, &caps, sizeof caps);
        return VIDMM_OK;
    }
    case VIDMM_QAI_QUERYSEGMENT:
        return md_query_segments(md, args);
    default:
        return VIDMM_E_NOT_SUPPORTED;              /* GPUMMUCAPS and the rest: not this GPU */
    }
}

/* ------------------------------------------------------------------ */
/* DxgkDdiCreateAllocation                                              */
/* ------------------------------------------------------------------ */

static vidmm_status md_describe_allocation(void *driver, struct vidmm_describe_allocation_args *args)
{
    (void)driver;
    struct vidmm_allocation_info *info = args->info;
    struct minidrv_alloc_desc desc;
    if (!info->private_driver_data || info->private_driver_data_size != sizeof desc)
        return VIDMM_E_INVALID_ARG;
    memcpy(&desc, info->private_driver_data, sizeof desc);
    if (desc.size == 0)
        return VIDMM_E_INVALID_ARG;
    uint32_t both = VIDMM_SEGMENT_BIT(MD_SEG_VRAM) | VIDMM_SEGMENT_BIT(MD_SEG_APERTURE);
    info->size = desc.size;
    info->alignment = 0;                           /* the segment's page */
    /* Where it may live while resident.  Eviction always goes to system
     * memory (segment 0), whatever the set says. */
    info->supported_write_segment_set = desc.kind == MINIDRV_ALLOC_VRAM ? VIDMM_SEGMENT_BIT(MD_SEG_VRAM) : both;
    info->supported_read_segment_set = info->supported_write_segment_set;
    info->eviction_segment_set = 0;
    info->priority = 0;
    info->driver_allocation = NULL;                /* minidrv keeps no per-allocation state */
    info->flags = desc.cpu_visible ? VIDMM_ALLOC_CPU_VISIBLE : 0;
    switch (desc.kind) {
    case MINIDRV_ALLOC_VRAM:
        info->preferred_segment = VIDMM_PREF(0, MD_SEG_VRAM, 0);
        return VIDMM_OK;
    case MINIDRV_ALLOC_STAGING:
        info->preferred_segment = VIDMM_PREF(0, MD_SEG_APERTURE, 0) | VIDMM_PREF(1, MD_SEG_VRAM, 1);
        return VIDMM_OK;
    case MINIDRV_ALLOC_RING:
        info->flags |= VIDMM_ALLOC_ACCESSED_PHYSICALLY;
        info->preferred_segment = VIDMM_PREF(0, MD_SEG_VRAM, 1) | VIDMM_PREF(1, MD_SEG_APERTURE, 0);
        return VIDMM_OK;
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

/* ------------------------------------------------------------------ */
/* DxgkDdiBuildPagingBuffer                                             */
/* ------------------------------------------------------------------ */

/* A GPU address range inside segment id (VRAM or aperture)? */
static int md_gpu_range(const struct minidrv *md, uint32_t id, uint64_t addr, uint64_t size)
{
    uint64_t base = id == MD_SEG_VRAM ? 0 : MD_APERTURE_BASE;
    uint64_t limit = id == MD_SEG_VRAM ? md->vram_size : md->gart_pages * MD_PAGE;
    if (id != MD_SEG_VRAM && id != MD_SEG_APERTURE)
        return 0;
    return addr >= base && addr - base <= limit && size <= limit - (addr - base);
}

/* The host address of bytes [mdl_offset pages, + size) of an MDL, or 0. */
static uint64_t md_mdl_range(const struct vidmm_mdl *mdl, uint64_t mdl_offset, uint64_t size)
{
    if (!mdl || !mdl->base || mdl_offset > mdl->page_count ||
        size > (mdl->page_count - mdl_offset) * MD_PAGE)
        return 0;
    return (uint64_t)(uintptr_t)mdl->base + mdl_offset * MD_PAGE;
}

static void md_put(struct vidmm_build_paging_buffer_args *args, const struct md_cmd *c)
{
    memcpy(args->dma_buffer, c, sizeof *c);
    args->dma_buffer = (uint8_t *)args->dma_buffer + sizeof *c;
    args->dma_size -= (uint32_t)sizeof *c;
}

/* Writes chunks multipass_offset.. of a copy or fill.  When the buffer
 * is full, multipass_offset says where the next buffer resumes and the
 * answer is INSUFFICIENT_DMA_BUFFER: vidmm submits this buffer and calls
 * again, same request, fresh buffer. */
static vidmm_status md_emit_chunks(struct minidrv *md, struct vidmm_build_paging_buffer_args *args,
                                   const struct md_cmd *whole)
{
    uint64_t chunks = (whole->size + MD_CHUNK - 1) / MD_CHUNK;
    uint64_t k = args->multipass_offset;
    if (k >= chunks)
        return VIDMM_E_INVALID_ARG;                /* a resume past the end: not a request we made */
    while (k < chunks) {
        if (args->dma_size < sizeof(struct md_cmd)) {
            args->multipass_offset = (uint32_t)k;
            if (md->broken == MINIDRV_BREAK_RESTART && k + 1 < chunks)
                args->multipass_offset = (uint32_t)(k + 1);
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        uint64_t off = k * MD_CHUNK;
        struct md_cmd c = *whole;
        if (c.opcode == MD_CMD_COPY)
            c.src += off;
        c.dst += off;
        c.size = whole->size - off < MD_CHUNK ? whole->size - off : MD_CHUNK;
        md_put(args, &c);
        k++;
    }
    return VIDMM_OK;
}

static vidmm_status md_build_transfer(struct minidrv *md, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_transfer *t = &args->u.transfer;
    struct md_cmd c;
    memset(&c, 0, sizeof c);
    c.opcode = MD_CMD_COPY;
    c.size = t->transfer_size;
    /* Each side is a GPU address in VRAM or the aperture, or (segment 0)
     * system pages given as an MDL; mdl_offset applies to the MDL side. */
    if (t->source.segment_id) {
        if (!md_gpu_range(md, t->source.segment_id, t->source.segment_address, c.size))
            return VIDMM_E_INVALID_ARG;
        c.src = t->source.segment_address;
    } else {
        if (!(c.src = md_mdl_range(t->source.mdl, t->mdl_offset, c.size)))
            return VIDMM_E_INVALID_ARG;
        c.flags |= MD_HOST_SRC;
    }
    if (t->destination.segment_id) {
        if (!md_gpu_range(md, t->destination.segment_id, t->destination.segment_address, c.size))
            return VIDMM_E_INVALID_ARG;
        c.dst = t->destination.segment_address;
    } else {
        if (!(c.dst = md_mdl_range(t->destination.mdl, t->mdl_offset, c.size)))
            return VIDMM_E_INVALID_ARG;
        c.flags |= MD_HOST_DST;
    }
    if (c.size == 0)
        return VIDMM_OK;                           /* nothing to move */
    return md_emit_chunks(md, args, &c);
}

static vidmm_status md_build_fill(struct minidrv *md, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_fill *f = &args->u.fill;
    /* vidmm fills memory segments only; system pages are zeroed by it. */
    if (f->destination_segment_id != MD_SEG_VRAM ||
        !md_gpu_range(md, MD_SEG_VRAM, f->destination_segment_address, f->fill_size))
        return VIDMM_E_INVALID_ARG;
    if (f->fill_size == 0)
        return VIDMM_OK;
    struct md_cmd c;
    memset(&c, 0, sizeof c);
    c.opcode = MD_CMD_FILL;
    c.dst = f->destination_segment_address;
    c.size = f->fill_size;
    c.arg = f->fill_pattern;
    return md_emit_chunks(md, args, &c);
}

static vidmm_status md_build_one(struct vidmm_build_paging_buffer_args *args, const struct md_cmd *c)
{
    if (args->dma_size < sizeof *c)
        return VIDMM_E_INSUFFICIENT_DMA_BUFFER;    /* nothing written; vidmm retries on a fresh buffer */
    md_put(args, c);
    return VIDMM_OK;
}

static vidmm_status md_build_map(struct minidrv *md, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_map_aperture *m = &args->u.map_aperture_segment;
    if (m->segment_id != MD_SEG_APERTURE || m->number_of_pages == 0 || m->offset_in_pages > md->gart_pages ||
        m->number_of_pages > md->gart_pages - m->offset_in_pages)
        return VIDMM_E_INVALID_ARG;
    struct md_cmd c;
    memset(&c, 0, sizeof c);
    c.opcode = MD_CMD_MAP;
    c.dst = m->offset_in_pages;
    c.size = m->number_of_pages;
    if (!(c.src = md_mdl_range(m->mdl, m->mdl_offset, m->number_of_pages * MD_PAGE)))
        return VIDMM_E_INVALID_ARG;
    return md_build_one(args, &c);
}

static vidmm_status md_build_unmap(struct minidrv *md, struct vidmm_build_paging_buffer_args *args)
{
    const struct vidmm_paging_unmap_aperture *u = &args->u.unmap_aperture_segment;
    if (u->segment_id != MD_SEG_APERTURE || u->number_of_pages == 0 || u->offset_in_pages > md->gart_pages ||
        u->number_of_pages > md->gart_pages - u->offset_in_pages)
        return VIDMM_E_INVALID_ARG;
    struct md_cmd c;
    memset(&c, 0, sizeof c);
    c.opcode = MD_CMD_UNMAP;
    c.dst = u->offset_in_pages;
    c.size = u->number_of_pages;
    /* Unmapped entries must point at the dummy page vidmm gives, so a
     * stray GPU access reads harmless bytes. */
    c.src = (uint64_t)(uintptr_t)(u->dummy_page ? u->dummy_page : md->dummy);
    return md_build_one(args, &c);
}

static vidmm_status md_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args)
{
    struct minidrv *md = driver;
    switch (args->operation) {
    case VIDMM_PAGING_TRANSFER:
        return md_build_transfer(md, args);
    case VIDMM_PAGING_FILL:
        return md_build_fill(md, args);
    case VIDMM_PAGING_DISCARD_CONTENT: {
        /* A hint that the bytes are no longer needed; VRAM keeps them,
         * so there is nothing to encode.  The range is still checked. */
        const struct vidmm_paging_discard_content *d = &args->u.discard_content;
        return md_gpu_range(md, d->segment_id, d->segment_address, d->size) && d->segment_id == MD_SEG_VRAM
                   ? VIDMM_OK
                   : VIDMM_E_INVALID_ARG;
    }
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT:
        return md_build_map(md, args);
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT:
        return md_build_unmap(md, args);
    default:
        return VIDMM_E_INVALID_ARG;                /* virtual and page-table operations: no GpuMmu here */
    }
}

/* ------------------------------------------------------------------ */
/* The engine: runs buffers in order, then signals their fences         */
/* ------------------------------------------------------------------ */

/* Host address of GPU address addr and how many bytes from there are
 * contiguous on the host (an aperture page ends where its host page
 * ends). */
static uint8_t *md_resolve(struct minidrv *md, uint64_t addr, uint64_t len, uint64_t *run)
{
    if (addr < md->vram_size) {
        *run = len;
        return md->vram + addr;
    }
    uint64_t o = addr - MD_APERTURE_BASE;
    uint64_t page = o / MD_PAGE, in = o % MD_PAGE;
    uint8_t *host = md->gart[page] ? md->gart[page] : md->dummy;
    *run = MD_PAGE - in < len ? MD_PAGE - in : len;
    return host + in;
}

static void md_exec_copy(struct minidrv *md, const struct md_cmd *c)
{
    for (uint64_t done = 0; done < c->size;) {
        uint64_t rs = c->size - done, rd = rs;
        uint8_t *s = (c->flags & MD_HOST_SRC) ? (uint8_t *)(uintptr_t)(c->src + done)
                                              : md_resolve(md, c->src + done, rs, &rs);
        uint8_t *d = (c->flags & MD_HOST_DST) ? (uint8_t *)(uintptr_t)(c->dst + done)
                                              : md_resolve(md, c->dst + done, rd, &rd);
        uint64_t n = rs < rd ? rs : rd;
        memmove(d, s, (size_t)n);
        done += n;
    }
}

static void md_exec_fill(struct minidrv *md, const struct md_cmd *c)
{
    /* Byte i of a fill is byte i % 4 of the little-endian pattern;
     * chunks start on multiples of MD_CHUNK, so the phase carries over. */
    uint8_t *d = md->vram + c->dst;
    uint8_t p[4] = { (uint8_t)c->arg, (uint8_t)(c->arg >> 8), (uint8_t)(c->arg >> 16), (uint8_t)(c->arg >> 24) };
    for (uint64_t i = 0; i < c->size; i++)
        d[i] = p[i & 3u];
}

static void md_execute(struct minidrv *md, const uint8_t *buf, uint32_t size)
{
    for (uint32_t o = 0; o + sizeof(struct md_cmd) <= size; o += (uint32_t)sizeof(struct md_cmd)) {
        struct md_cmd c;
        memcpy(&c, buf + o, sizeof c);
        switch (c.opcode) {
        case MD_CMD_COPY:
            md_exec_copy(md, &c);
            break;
        case MD_CMD_FILL:
            md_exec_fill(md, &c);
            break;
        case MD_CMD_MAP:
            for (uint64_t i = 0; i < c.size; i++)
                md->gart[c.dst + i] = (uint8_t *)(uintptr_t)(c.src + i * MD_PAGE);
            break;
        case MD_CMD_UNMAP:
            for (uint64_t i = 0; i < c.size; i++)
                md->gart[c.dst + i] = (uint8_t *)(uintptr_t)c.src;
            break;
        default:
            break;                                 /* refused at submission */
        }
    }
}

static void *md_engine(void *arg)
{
    struct minidrv *md = arg;
    pthread_mutex_lock(&md->lock);
    for (;;) {
        while (!md->stop && md->count == 0)
            pthread_cond_wait(&md->work, &md->lock);
        if (md->count == 0)
            break;                                 /* stopping, queue drained */
        struct md_job j = md->queue[md->head];
        md->head = (md->head + 1) % MD_QUEUE;
        md->count--;
        md->busy = 1;
        pthread_cond_broadcast(&md->done);         /* room for a waiting submitter */
        pthread_mutex_unlock(&md->lock);

        /* The fence says "this buffer has finished": vidmm may reuse the
         * buffer and free or hand out the memory it read as soon as it
         * hears it.  So: run first, signal after. */
        if (md->broken == MINIDRV_BREAK_FENCE_EARLY)
            md->notify_fence(j.adapter, j.fence);
        md_execute(md, j.buf, j.size);
        if (md->broken != MINIDRV_BREAK_FENCE_EARLY)
            md->notify_fence(j.adapter, j.fence);

        pthread_mutex_lock(&md->lock);
        md->busy = 0;
        pthread_cond_broadcast(&md->done);
    }
    pthread_mutex_unlock(&md->lock);
    return NULL;
}

/* DxgkDdiSubmitCommand (paging).  Queues the buffer and returns; the
 * fence comes later from the engine thread. */
static vidmm_status md_submit_command(void *driver, const struct vidmm_submit_command_args *args)
{
    struct minidrv *md = driver;
    if (args->dma_buffer_size % sizeof(struct md_cmd))
        return VIDMM_E_INVALID_ARG;
    /* Refuse a buffer we did not build before any of it runs. */
    for (uint32_t o = 0; o < args->dma_buffer_size; o += (uint32_t)sizeof(struct md_cmd)) {
        struct md_cmd c;
        memcpy(&c, (const uint8_t *)args->dma_buffer + o, sizeof c);
        if (c.opcode < MD_CMD_COPY || c.opcode > MD_CMD_UNMAP)
            return VIDMM_E_INVALID_ARG;
    }
    pthread_mutex_lock(&md->lock);
    while (md->count == MD_QUEUE)                  /* a full ring: wait as a CPU would for hardware */
        pthread_cond_wait(&md->done, &md->lock);
    struct md_job *j = &md->queue[(md->head + md->count) % MD_QUEUE];
    j->buf = args->dma_buffer;
    j->size = args->dma_buffer_size;
    j->fence = args->fence;
    j->adapter = args->adapter;
    md->count++;
    pthread_cond_signal(&md->work);
    pthread_mutex_unlock(&md->lock);
    return VIDMM_OK;
}

/* Waits with the lock held until nothing is queued or running. */
static void md_idle_locked(struct minidrv *md)
{
    while (md->count || md->busy)
        pthread_cond_wait(&md->done, &md->lock);
}

vidmm_status minidrv_wait_idle(struct minidrv *md)
{
    if (!md)
        return VIDMM_E_INVALID_ARG;
    pthread_mutex_lock(&md->lock);
    md_idle_locked(md);
    pthread_mutex_unlock(&md->lock);
    return VIDMM_OK;
}

/* ------------------------------------------------------------------ */
/* Reset and power                                                      */
/* ------------------------------------------------------------------ */

/* DxgkDdiResetFromTimeout: drop what is queued (its fences are never
 * signalled: vidmm counts them as passed), let the running buffer end,
 * and lose VRAM as a real reset does. */
static vidmm_status md_reset_from_timeout(void *driver)
{
    struct minidrv *md = driver;
    pthread_mutex_lock(&md->lock);
    md->head = (md->head + md->count) % MD_QUEUE;
    md->count = 0;
    md_idle_locked(md);
    memset(md->vram, MD_POISON, (size_t)md->vram_size);
    pthread_mutex_unlock(&md->lock);
    return VIDMM_OK;
}

static vidmm_status md_restart_from_timeout(void *driver)
{
    (void)driver;                                  /* nothing held across the reset */
    return VIDMM_OK;
}

/* DxgkDdiSetPowerState.  vidmm calls it with the engine idle and, going
 * down, after saving what VRAM held (the segment is not flagged
 * PRESERVED_DURING_STANDBY).  Losing VRAM here shows that it did. */
static vidmm_status md_set_power_state(void *driver, uint32_t state)
{
    struct minidrv *md = driver;
    if (state > VIDMM_POWER_HIBERNATE)
        return VIDMM_E_INVALID_ARG;
    pthread_mutex_lock(&md->lock);
    md_idle_locked(md);
    if (state != VIDMM_POWER_D0)
        memset(md->vram, MD_POISON, (size_t)md->vram_size);
    md->power_state = state;
    pthread_mutex_unlock(&md->lock);
    return VIDMM_OK;
}

/* ------------------------------------------------------------------ */
/* Creation                                                             */
/* ------------------------------------------------------------------ */

static const struct vidmm_driver_ops md_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    .query_adapter_info = md_query_adapter_info,
    .describe_allocation = md_describe_allocation,
    .build_paging_buffer = md_build_paging_buffer,
    .submit_command = md_submit_command,
    .reset_from_timeout = md_reset_from_timeout,
    .restart_from_timeout = md_restart_from_timeout,
    .set_power_state = md_set_power_state,
    /* Left NULL, vidmm's default or not needed: destroy_allocation,
     * map/unmap_cpu_host_aperture (no host aperture), the GpuMmu ops,
     * context submission and patch, reset_engine, query_engine_status. */
};

const struct vidmm_driver_ops *minidrv_ops(void)
{
    return &md_ops;
}

void minidrv_fill_adapter_create_info(struct minidrv *md, struct vidmm_adapter_create_info *info)
{
    info->abi_version = VIDMM_ABI_VERSION;     /* the layouts this driver was built with */
    info->ops = &md_ops;
    info->driver = md;
    info->agp_aperture_base = 0;                   /* no AGP segment */
    info->agp_aperture_size = 0;
}

vidmm_status minidrv_create(const struct minidrv_config *config, struct minidrv **out)
{
    if (!config || !out || !config->notify_fence)
        return VIDMM_E_INVALID_ARG;
    *out = NULL;
    uint64_t vram = config->vram_size ? config->vram_size : (8u << 20);
    uint64_t ap = config->aperture_size ? config->aperture_size : (16u << 20);
    if (vram % (64u << 10) || vram >= MD_APERTURE_BASE || ap % MD_PAGE || ap > (4ull << 30))
        return VIDMM_E_INVALID_ARG;
    struct minidrv *md = calloc(1, sizeof *md);
    if (!md)
        return VIDMM_E_NO_HOST_MEMORY;
    md->vram_size = vram;
    md->gart_pages = ap / MD_PAGE;
    md->notify_fence = config->notify_fence;
    md->broken = config->broken;
    md->vram = aligned_alloc(MD_PAGE, (size_t)vram);
    md->gart = calloc((size_t)md->gart_pages, sizeof *md->gart);
    md->dummy = aligned_alloc(MD_PAGE, MD_PAGE);
    if (!md->vram || !md->gart || !md->dummy)
        goto fail;
    memset(md->vram, 0, (size_t)vram);
    memset(md->dummy, 0, MD_PAGE);
    if (pthread_mutex_init(&md->lock, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&md->work, NULL) != 0 || pthread_cond_init(&md->done, NULL) != 0 ||
        pthread_create(&md->thread, NULL, md_engine, md) != 0) {
        /* A partly made set of sync objects: keeping track of which
         * exist costs more than this one-time path is worth. */
        pthread_mutex_destroy(&md->lock);
        goto fail;
    }
    *out = md;
    return VIDMM_OK;
fail:
    free(md->vram);
    free(md->gart);
    free(md->dummy);
    free(md);
    return VIDMM_E_NO_HOST_MEMORY;
}

void minidrv_destroy(struct minidrv *md)
{
    if (!md)
        return;
    pthread_mutex_lock(&md->lock);
    md->stop = 1;                                  /* the worker drains the queue first */
    pthread_cond_broadcast(&md->work);
    pthread_mutex_unlock(&md->lock);
    pthread_join(md->thread, NULL);
    pthread_cond_destroy(&md->work);
    pthread_cond_destroy(&md->done);
    pthread_mutex_destroy(&md->lock);
    free(md->vram);
    free(md->gart);
    free(md->dummy);
    free(md);
}
