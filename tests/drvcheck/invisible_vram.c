/*
 * invisible_vram.c - a second small driver, written from
 * docs/WRITING_A_DRIVER.md alone, whose VRAM the CPU cannot reach: the
 * case of a discrete GPU without a resizable BAR.  tests/drvcheck_test.sh
 * builds it as a plug-in and runs the conformance kit on it, which must
 * pass: the guide says such drivers are supported.
 *
 * The device:
 *   segment 1  VRAM: 4 MiB of host memory at GPU address 0, NOT
 *              CPU-visible (no cpu_translated_address, no host aperture);
 *   segment 2  the aperture: 8 MiB, a GART of host page pointers at GPU
 *              address IV_APERTURE_BASE;
 *   paging buffers in system memory.
 * The engine is synchronous: submit_command runs the buffer and signals
 * its fence before it returns (the callback may come from inside
 * submit_command, docs/WRITING_A_DRIVER.md section 7).
 *
 * Commands are 40-byte records as in minidrv, cut into 64 KiB chunks so
 * the restart protocol (multipass_offset) is exercised.
 *
 * Option mistake=no-cpu-visible makes the private data of the kit's
 * allocations leave out CPU_VISIBLE (a driver author's slip): the kit must
 * then fail and name the refused lock and vidmm's reason.
 */
#include "vidmm/adapter.h"
#include "vidmm/driver.h"
#include "vidmm/drvcheck.h"

#include <stdlib.h>
#include <string.h>

#define IV_PAGE          4096u
#define IV_CHUNK         (64u << 10)
#define IV_VRAM_SIZE     (4u << 20)
#define IV_APERTURE_SIZE (8u << 20)
#define IV_APERTURE_BASE 0x40000000ull
#define IV_SEG_VRAM      1u
#define IV_SEG_APERTURE  2u

enum { IV_COPY = 1, IV_FILL, IV_MAP, IV_UNMAP };
#define IV_HOST_SRC 1u
#define IV_HOST_DST 2u

struct iv_cmd {
    uint32_t op, flags;
    uint64_t src, dst, size, arg;
};

struct iv_alloc_desc {         /* the private driver data of an allocation */
    uint64_t size;
    uint32_t cpu_visible;
    uint32_t reserved;
};

struct iv {
    uint8_t *vram;
    uint8_t *gart[IV_APERTURE_SIZE / IV_PAGE];
    uint8_t dummy[IV_PAGE];
    void (*notify_fence)(struct vidmm_adapter *adapter, uint64_t fence);
    uint32_t cpu_visible;      /* what iv_private_data asks for (option mistake=no-cpu-visible: 0) */
};

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out);

static vidmm_status iv_query(void *driver, const struct vidmm_query_adapter_info_args *args)
{
    (void)driver;
    if (args->type == VIDMM_QAI_DRIVERCAPS) {
        if (!args->output || args->output_size < sizeof(struct vidmm_driver_caps))
            return VIDMM_E_INVALID_ARG;
        struct vidmm_driver_caps caps;
        memset(&caps, 0, sizeof caps);
        caps.wddm_version = 0x2000;
        caps.node_count = 1;
        memcpy(args->output, &caps, sizeof caps);
        return VIDMM_OK;
    }
    if (args->type != VIDMM_QAI_QUERYSEGMENT)
        return VIDMM_E_NOT_SUPPORTED;
    struct vidmm_query_segment_out *o = args->output;
    if (!o || args->output_size < sizeof *o)
        return VIDMM_E_INVALID_ARG;
    if (!o->segment_descriptor) {
        o->nb_segment = 2;
        return VIDMM_OK;
    }
    if (o->nb_segment < 2 || o->segment_descriptor_stride < sizeof(struct vidmm_segment_descriptor))
        return VIDMM_E_INVALID_ARG;
    struct vidmm_segment_descriptor d[2];
    memset(d, 0, sizeof d);
    d[0].size = IV_VRAM_SIZE;                      /* flags 0: the CPU cannot reach it */
    d[1].flags = VIDMM_SEGMENT_APERTURE;
    d[1].base_address = IV_APERTURE_BASE;
    d[1].size = IV_APERTURE_SIZE;
    d[1].commit_limit = IV_APERTURE_SIZE;
    memcpy(o->segment_descriptor, &d[0], sizeof d[0]);
    memcpy((unsigned char *)o->segment_descriptor + o->segment_descriptor_stride, &d[1], sizeof d[1]);
    o->nb_segment = 2;
    o->paging_buffer_segment_id = 0;
    o->paging_buffer_size = 16u << 10;
    o->paging_buffer_private_data_size = 0;
    return VIDMM_OK;
}

static vidmm_status iv_describe(void *driver, struct vidmm_describe_allocation_args *args)
{
    (void)driver;
    struct vidmm_allocation_info *info = args->info;
    struct iv_alloc_desc d;
    if (!info->private_driver_data || info->private_driver_data_size != sizeof d)
        return VIDMM_E_INVALID_ARG;
    memcpy(&d, info->private_driver_data, sizeof d);
    if (d.size == 0 || d.reserved)
        return VIDMM_E_INVALID_ARG;
    info->size = d.size;
    /* VRAM preferred, the aperture allowed: a CPU lock of a resident
     * allocation moves it to where the CPU can reach it. */
    info->supported_write_segment_set = VIDMM_SEGMENT_BIT(IV_SEG_VRAM) | VIDMM_SEGMENT_BIT(IV_SEG_APERTURE);
    info->supported_read_segment_set = info->supported_write_segment_set;
    info->preferred_segment = VIDMM_PREF(0, IV_SEG_VRAM, 0) | VIDMM_PREF(1, IV_SEG_APERTURE, 0);
    info->flags = d.cpu_visible ? VIDMM_ALLOC_CPU_VISIBLE : 0;
    return VIDMM_OK;
}

/* A GPU range inside segment id; the host bytes of an MDL range. */
static int iv_range(uint32_t id, uint64_t addr, uint64_t size)
{
    uint64_t base = id == IV_SEG_VRAM ? 0 : IV_APERTURE_BASE;
    uint64_t lim = id == IV_SEG_VRAM ? IV_VRAM_SIZE : IV_APERTURE_SIZE;
    return (id == IV_SEG_VRAM || id == IV_SEG_APERTURE) && addr >= base && addr - base <= lim &&
           size <= lim - (addr - base);
}

static uint64_t iv_mdl(const struct vidmm_mdl *m, uint64_t first, uint64_t size)
{
    if (!m || !m->base || first > m->page_count || size > (m->page_count - first) * IV_PAGE)
        return 0;
    return (uint64_t)(uintptr_t)m->base + first * IV_PAGE;
}

/* Chunks multipass_offset.. of c; INSUFFICIENT_DMA_BUFFER with the
 * resume point when the buffer is full. */
static vidmm_status iv_emit(struct vidmm_build_paging_buffer_args *a, const struct iv_cmd *c)
{
    uint64_t n = c->op == IV_COPY || c->op == IV_FILL ? (c->size + IV_CHUNK - 1) / IV_CHUNK : 1;
    uint64_t k = a->multipass_offset;
    if (k >= n)
        return VIDMM_E_INVALID_ARG;
    for (; k < n; k++) {
        if (a->dma_size < sizeof *c) {
            a->multipass_offset = (uint32_t)k;
            return VIDMM_E_INSUFFICIENT_DMA_BUFFER;
        }
        struct iv_cmd x = *c;
        if (n > 1 || x.op == IV_COPY || x.op == IV_FILL) {
            uint64_t off = k * IV_CHUNK;
            x.src += x.op == IV_COPY ? off : 0;
            x.dst += off;
            x.size = c->size - off < IV_CHUNK ? c->size - off : IV_CHUNK;
        }
        memcpy(a->dma_buffer, &x, sizeof x);
        a->dma_buffer = (uint8_t *)a->dma_buffer + sizeof x;
        a->dma_size -= (uint32_t)sizeof x;
    }
    return VIDMM_OK;
}

static vidmm_status iv_side(const struct vidmm_transfer_side *s, const struct vidmm_paging_transfer *t, uint64_t *addr,
                            uint32_t *flags, uint32_t host_flag)
{
    if (s->segment_id) {
        *addr = s->segment_address;
        return iv_range(s->segment_id, *addr, t->transfer_size) ? VIDMM_OK : VIDMM_E_INVALID_ARG;
    }
    *flags |= host_flag;
    *addr = iv_mdl(s->mdl, t->mdl_offset, t->transfer_size);
    return *addr ? VIDMM_OK : VIDMM_E_INVALID_ARG;
}

static vidmm_status iv_build(void *driver, struct vidmm_build_paging_buffer_args *a)
{
    struct iv *iv = driver;
    struct iv_cmd c;
    memset(&c, 0, sizeof c);
    switch (a->operation) {
    case VIDMM_PAGING_TRANSFER:
        c.op = IV_COPY;
        c.size = a->u.transfer.transfer_size;
        if (iv_side(&a->u.transfer.source, &a->u.transfer, &c.src, &c.flags, IV_HOST_SRC) < 0 ||
            iv_side(&a->u.transfer.destination, &a->u.transfer, &c.dst, &c.flags, IV_HOST_DST) < 0)
            return VIDMM_E_INVALID_ARG;
        return c.size ? iv_emit(a, &c) : VIDMM_OK;
    case VIDMM_PAGING_FILL:
        if (a->u.fill.destination_segment_id != IV_SEG_VRAM ||
            !iv_range(IV_SEG_VRAM, a->u.fill.destination_segment_address, a->u.fill.fill_size))
            return VIDMM_E_INVALID_ARG;
        c.op = IV_FILL;
        c.dst = a->u.fill.destination_segment_address;
        c.size = a->u.fill.fill_size;
        c.arg = a->u.fill.fill_pattern;
        return c.size ? iv_emit(a, &c) : VIDMM_OK;
    case VIDMM_PAGING_DISCARD_CONTENT:
        return a->u.discard_content.segment_id == IV_SEG_VRAM &&
                       iv_range(IV_SEG_VRAM, a->u.discard_content.segment_address, a->u.discard_content.size)
                   ? VIDMM_OK
                   : VIDMM_E_INVALID_ARG;
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT: {
        const struct vidmm_paging_map_aperture *m = &a->u.map_aperture_segment;
        if (m->segment_id != IV_SEG_APERTURE || !m->number_of_pages ||
            m->offset_in_pages + m->number_of_pages > IV_APERTURE_SIZE / IV_PAGE ||
            !(c.src = iv_mdl(m->mdl, m->mdl_offset, m->number_of_pages * IV_PAGE)))
            return VIDMM_E_INVALID_ARG;
        c.op = IV_MAP;
        c.dst = m->offset_in_pages;
        c.size = m->number_of_pages;
        return iv_emit(a, &c);
    }
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT: {
        const struct vidmm_paging_unmap_aperture *u = &a->u.unmap_aperture_segment;
        if (u->segment_id != IV_SEG_APERTURE || !u->number_of_pages ||
            u->offset_in_pages + u->number_of_pages > IV_APERTURE_SIZE / IV_PAGE)
            return VIDMM_E_INVALID_ARG;
        c.op = IV_UNMAP;
        c.dst = u->offset_in_pages;
        c.size = u->number_of_pages;
        c.src = (uint64_t)(uintptr_t)(u->dummy_page ? u->dummy_page : iv->dummy);
        return iv_emit(a, &c);
    }
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

/* The host byte of GPU address addr, and how many follow contiguously. */
static uint8_t *iv_host(struct iv *iv, uint64_t addr, uint64_t len, uint64_t *run)
{
    if (addr < IV_VRAM_SIZE) {
        *run = len;
        return iv->vram + addr;
    }
    uint64_t o = addr - IV_APERTURE_BASE, in = o % IV_PAGE;
    uint8_t *page = iv->gart[o / IV_PAGE] ? iv->gart[o / IV_PAGE] : iv->dummy;
    *run = IV_PAGE - in < len ? IV_PAGE - in : len;
    return page + in;
}

static void iv_run(struct iv *iv, const struct iv_cmd *c)
{
    if (c->op == IV_MAP || c->op == IV_UNMAP) {
        for (uint64_t i = 0; i < c->size; i++)
            iv->gart[c->dst + i] = (uint8_t *)(uintptr_t)(c->src + (c->op == IV_MAP ? i * IV_PAGE : 0));
        return;
    }
    for (uint64_t done = 0; done < c->size;) {
        uint64_t rs = c->size - done, rd = rs;
        uint8_t *d = (c->flags & IV_HOST_DST) ? (uint8_t *)(uintptr_t)(c->dst + done) : iv_host(iv, c->dst + done, rd, &rd);
        if (c->op == IV_FILL) {
            for (uint64_t i = 0; i < rd; i++)
                d[i] = (uint8_t)(c->arg >> (8 * ((done + i) & 3u)));
            done += rd;
            continue;
        }
        uint8_t *s = (c->flags & IV_HOST_SRC) ? (uint8_t *)(uintptr_t)(c->src + done) : iv_host(iv, c->src + done, rs, &rs);
        uint64_t n = rs < rd ? rs : rd;
        memmove(d, s, (size_t)n);
        done += n;
    }
}

/* Synchronous: run the buffer, then signal its fence, before returning. */
static vidmm_status iv_submit(void *driver, const struct vidmm_submit_command_args *a)
{
    struct iv *iv = driver;
    if (a->dma_buffer_size % sizeof(struct iv_cmd))
        return VIDMM_E_INVALID_ARG;
    for (uint32_t o = 0; o < a->dma_buffer_size; o += (uint32_t)sizeof(struct iv_cmd)) {
        struct iv_cmd c;
        memcpy(&c, (const uint8_t *)a->dma_buffer + o, sizeof c);
        if (c.op < IV_COPY || c.op > IV_UNMAP)
            return VIDMM_E_INVALID_ARG;
    }
    for (uint32_t o = 0; o < a->dma_buffer_size; o += (uint32_t)sizeof(struct iv_cmd)) {
        struct iv_cmd c;
        memcpy(&c, (const uint8_t *)a->dma_buffer + o, sizeof c);
        iv_run(iv, &c);
    }
    iv->notify_fence(a->adapter, a->fence);
    return VIDMM_OK;
}

/* A reset or a power-down loses VRAM, as real hardware does. */
static vidmm_status iv_reset(void *driver)
{
    memset(((struct iv *)driver)->vram, 0xDB, IV_VRAM_SIZE);
    return VIDMM_OK;
}

static vidmm_status iv_restart(void *driver)
{
    (void)driver;
    return VIDMM_OK;
}

static vidmm_status iv_power(void *driver, uint32_t state)
{
    if (state > VIDMM_POWER_HIBERNATE)
        return VIDMM_E_INVALID_ARG;
    return state == VIDMM_POWER_D0 ? VIDMM_OK : iv_reset(driver);
}

static const struct vidmm_driver_ops iv_ops = {
    .abi_version = VIDMM_ABI_VERSION,
    .query_adapter_info = iv_query,
    .describe_allocation = iv_describe,
    .build_paging_buffer = iv_build,
    .submit_command = iv_submit,
    .reset_from_timeout = iv_reset,
    .restart_from_timeout = iv_restart,
    .set_power_state = iv_power,
};

static size_t iv_private_data(void *driver, uint64_t size, void *buf, size_t capacity)
{
    struct iv_alloc_desc d = { size, ((struct iv *)driver)->cpu_visible, 0 };   /* the kit locks it */
    if (capacity < sizeof d)
        return 0;
    memcpy(buf, &d, sizeof d);
    return sizeof d;
}

static vidmm_status iv_idle(void *driver)
{
    (void)driver;   /* synchronous: nothing is ever in flight */
    return VIDMM_OK;
}

static void iv_destroy(void *driver)
{
    struct iv *iv = driver;
    free(iv->vram);
    free(iv);
}

vidmm_status vidmm_driver_entry(const struct drvcheck_env *env, struct drvcheck_driver *out)
{
    struct iv *iv = calloc(1, sizeof *iv);
    if (!iv || !(iv->vram = calloc(1, IV_VRAM_SIZE))) {
        free(iv);
        return VIDMM_E_NO_HOST_MEMORY;
    }
    iv->notify_fence = env->notify_fence;
    iv->cpu_visible = !(env->options && strstr(env->options, "mistake=no-cpu-visible"));
    memset(out, 0, sizeof *out);
    out->name = "invisible_vram";
    out->ops = &iv_ops;
    out->driver = iv;
    out->signals_through_env = 1;
    out->wait_idle = iv_idle;
    out->private_data = iv_private_data;
    out->destroy = iv_destroy;
    return VIDMM_OK;
}
