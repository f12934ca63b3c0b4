/*
 * softgpu_test.c - the softgpu device driven through its ops table alone
 * (no vidmm core): presets and the two-call segment query, allocation
 * descriptions, every paging operation on real bytes, the GART, the CPU
 * host aperture, the restart protocol, and the exact status of bad input.
 */
#include "harness/test.h"
#include "softgpu_int.h"
#include "vidmm/softgpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct vidmm_driver_ops *ops;

static struct softgpu *mk(const char *preset)
{
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = preset;
    struct softgpu *sg = NULL;
    if (t_no_big() && !strcmp(preset, "big"))
        return NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    ops = softgpu_driver_ops();
    return sg;
}

/* The two-call QUERYSEGMENT into d[] (at most 8). */
static uint32_t query_segments(struct softgpu *sg, struct vidmm_segment_descriptor *d, struct vidmm_query_segment_out *out)
{
    struct vidmm_query_segment_in in;
    memset(&in, 0, sizeof in);
    memset(out, 0, sizeof *out);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, &in, sizeof in, out, sizeof *out };
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
    uint32_t n = out->nb_segment;
    T_CHECK(n >= 1 && n <= 8);
    T_EQ(out->paging_buffer_size, 0); /* first call touches nb_segment only */
    out->segment_descriptor = d;
    out->segment_descriptor_stride = sizeof *d;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
    T_EQ(out->nb_segment, n);
    return n;
}

static void *mdl_pages(uint64_t pages)
{
    void *p = aligned_alloc(4096, (size_t)pages * 4096);
    T_CHECK(p != NULL);
    return p;
}

static void rand_fill(uint64_t *st, void *p, size_t n)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)t_rand(st);
}

/* Builds one request into buffers of buf_size bytes, submitting each full
 * buffer, as vidmm does.  Returns the final build status; *buffers gets
 * the number of buffers submitted. */
static vidmm_status run_op(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a, uint32_t buf_size,
                           int *buffers)
{
    static uint64_t buf[1 << 13]; /* 64 KiB */
    if (buf_size > sizeof buf)
        buf_size = sizeof buf;
    a->multipass_offset = 0;
    int n = 0;
    for (int guard = 0; guard < 10000; guard++) {
        a->dma_buffer = buf;
        a->dma_size = buf_size;
        vidmm_status st = ops->build_paging_buffer(sg, a);
        uint32_t used = buf_size - a->dma_size;
        if (st != VIDMM_OK && st != VIDMM_E_INSUFFICIENT_DMA_BUFFER)
            return st;
        T_CHECK(a->dma_buffer == (uint8_t *)buf + used);
        if (used) {
            struct vidmm_submit_command_args s = { NULL, buf, used, VIDMM_SUBMIT_PAGING, (uint64_t)guard + 1 };
            T_ST(ops->submit_command(sg, &s), VIDMM_OK);
            /* buf is reused for the next piece: as vidmm does, wait for
             * the copy engine to be done with it (its fence). */
            T_ST(softgpu_wait_idle(sg), VIDMM_OK);
            n++;
        }
        if (st == VIDMM_OK) {
            if (buffers)
                *buffers = n;
            return VIDMM_OK;
        }
    }
    T_CHECK(!"restart loop did not end");
    return VIDMM_E_DRIVER_FAILURE;
}

static vidmm_status op(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a)
{
    return run_op(sg, a, 65536, NULL);
}

static vidmm_status transfer(struct softgpu *sg, uint32_t src_seg, uint64_t src_addr, const struct vidmm_mdl *src_mdl,
                             uint32_t dst_seg, uint64_t dst_addr, const struct vidmm_mdl *dst_mdl, uint64_t size,
                             uint64_t mdl_offset)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = size;
    a.u.transfer.source.segment_id = src_seg;
    a.u.transfer.source.segment_address = src_addr;
    a.u.transfer.source.mdl = src_mdl;
    a.u.transfer.destination.segment_id = dst_seg;
    a.u.transfer.destination.segment_address = dst_addr;
    a.u.transfer.destination.mdl = dst_mdl;
    a.u.transfer.mdl_offset = mdl_offset;
    a.u.transfer.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    return op(sg, &a);
}

static vidmm_status fill(struct softgpu *sg, uint32_t seg, uint64_t addr, uint64_t size, uint32_t pattern)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.u.fill.fill_size = size;
    a.u.fill.fill_pattern = pattern;
    a.u.fill.destination_segment_id = seg;
    a.u.fill.destination_segment_address = addr;
    return op(sg, &a);
}

static vidmm_status map_ap(struct softgpu *sg, uint32_t seg, uint64_t first, uint64_t count,
                           const struct vidmm_mdl *mdl, uint64_t mdl_offset)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
    a.u.map_aperture_segment.segment_id = seg;
    a.u.map_aperture_segment.offset_in_pages = first;
    a.u.map_aperture_segment.number_of_pages = count;
    a.u.map_aperture_segment.mdl = mdl;
    a.u.map_aperture_segment.mdl_offset = mdl_offset;
    return op(sg, &a);
}

static vidmm_status unmap_ap(struct softgpu *sg, uint32_t seg, uint64_t first, uint64_t count, void *dummy)
{
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
    a.u.unmap_aperture_segment.segment_id = seg;
    a.u.unmap_aperture_segment.offset_in_pages = first;
    a.u.unmap_aperture_segment.number_of_pages = count;
    a.u.unmap_aperture_segment.dummy_page = dummy;
    return op(sg, &a);
}

/* ------------------------------------------------------------------ */

static void presets_query(void)
{
    const char *const *names = softgpu_preset_names();
    int count = 0;
    for (; names[count]; count++) {
        struct softgpu *sg = mk(names[count]);
        if (!sg)
            continue;
        struct vidmm_driver_caps caps;
        struct vidmm_query_adapter_info_args q = { VIDMM_QAI_DRIVERCAPS, NULL, 0, &caps, sizeof caps };
        T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
        T_EQ(caps.wddm_version, 0x2000);
        T_CHECK(caps.memory_management_caps & VIDMM_CAPS_VIRTUAL_ADDRESSING);

        struct vidmm_segment_descriptor d[8];
        struct vidmm_query_segment_out out;
        uint32_t n = query_segments(sg, d, &out);
        T_CHECK(out.paging_buffer_segment_id >= 1 && out.paging_buffer_segment_id <= n);
        T_CHECK(d[out.paging_buffer_segment_id - 1].flags & VIDMM_SEGMENT_APERTURE);
        T_EQ(out.paging_buffer_size, 65536);
        int apertures = 0;
        for (uint32_t i = 0; i < n; i++) {
            T_CHECK(d[i].size > 0 && d[i].size % 4096 == 0);
            T_CHECK((d[i].flags & ~VIDMM_SEGMENT_KNOWN_FLAGS) == 0);
            if (d[i].flags & VIDMM_SEGMENT_USE_64KB_PAGES)
                T_CHECK(d[i].size % 65536 == 0);
            if (d[i].flags & VIDMM_SEGMENT_APERTURE)
                apertures++;
            if (d[i].flags & VIDMM_SEGMENT_CPU_VISIBLE)
                T_CHECK(d[i].cpu_translated_address != NULL);
            if (d[i].flags & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) {
                T_CHECK(d[i].cpu_host_aperture.cpu_address != NULL);
                T_EQ(d[i].cpu_host_aperture.size_in_pages, 256);
            }
            for (uint32_t j = i + 1; j < n; j++)
                T_CHECK(d[i].base_address + d[i].size <= d[j].base_address ||
                        d[j].base_address + d[j].size <= d[i].base_address);
        }
        T_EQ(apertures, 1);
        struct vidmm_adapter_create_info ci;
        memset(&ci, 0, sizeof ci);
        softgpu_fill_adapter_create_info(sg, &ci);
        T_CHECK(ci.ops == softgpu_driver_ops() && ci.driver == sg && ci.host_allocator == NULL);

        if (!strcmp(names[count], "dgpu") || !strcmp(names[count], "big")) {
            T_EQ(n, 3);
            T_EQ(caps.memory_management_caps, VIDMM_CAPS_GPUMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING);
            T_EQ(caps.physical_adapter_flags, VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED);
            T_EQ(d[0].flags, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
            T_EQ(d[1].flags, VIDMM_SEGMENT_USE_64KB_PAGES | VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE |
                                 VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
            T_EQ(d[2].flags, VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CACHE_COHERENT | VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP);
            T_EQ_U64(d[0].size, 256ull << 20);
            T_EQ_U64(d[1].size, (!strcmp(names[count], "big") ? 80ull : 4ull) << 30);
            T_EQ_U64(d[2].size, 2ull << 30);
            T_EQ_U64(d[2].commit_limit, d[2].size);
            T_EQ(out.paging_buffer_segment_id, 3);
            T_EQ_U64(ci.agp_aperture_size, 0);
        } else if (!strcmp(names[count], "igpu")) {
            T_EQ(n, 1);
            T_EQ(caps.memory_management_caps, VIDMM_CAPS_IOMMU | VIDMM_CAPS_VIRTUAL_ADDRESSING);
            T_CHECK(d[0].flags & VIDMM_SEGMENT_APERTURE);
        } else if (!strcmp(names[count], "wddm1")) {
            T_EQ(n, 4);
            T_EQ(d[0].flags, VIDMM_SEGMENT_CPU_VISIBLE);
            T_EQ(d[1].flags, 0);
            T_EQ(d[2].flags, VIDMM_SEGMENT_AGP);
            T_EQ(d[3].flags, VIDMM_SEGMENT_APERTURE);
            T_EQ_U64(d[0].size, 64ull << 20);
            T_EQ_U64(d[1].size, 192ull << 20);
            T_EQ_U64(d[3].size, 256ull << 20);
            T_EQ_U64(ci.agp_aperture_base, d[2].base_address);
            T_EQ_U64(ci.agp_aperture_size, d[2].size);
            T_EQ_U64(d[2].size, 64ull << 20);
            T_EQ(out.paging_buffer_segment_id, 4);
        }
        T_EQ(softgpu_check(sg), 0);
        softgpu_destroy(sg);
    }
    T_EQ(count, 4);
}

static void query_stride_and_bad_args(void)
{
    struct softgpu *sg = mk("dgpu");
    /* A stride larger than the struct: records are walked by stride. */
    struct { struct vidmm_segment_descriptor d; uint64_t pad[3]; } big[3];
    memset(big, 0xAB, sizeof big);
    struct vidmm_query_segment_out out;
    memset(&out, 0, sizeof out);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &out, sizeof out };
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
    T_EQ(out.nb_segment, 3);
    out.segment_descriptor = &big[0].d;
    out.segment_descriptor_stride = sizeof big[0];
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_OK);
    T_EQ_U64(big[1].d.size, 4ull << 30);
    T_EQ_U64(big[2].d.size, 2ull << 30);
    T_EQ_U64(big[0].pad[0], 0xABABABABABABABABull);

    struct vidmm_segment_descriptor d[3];
    out.segment_descriptor = d;
    out.segment_descriptor_stride = sizeof d[0] - 8;   /* too small */
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    out.segment_descriptor_stride = sizeof d[0];
    out.nb_segment = 2;                                 /* too few records */
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    q.output_size = sizeof out - 1;
    T_ST(ops->query_adapter_info(sg, &q), VIDMM_E_INVALID_ARG);
    struct vidmm_query_segment_in in;
    struct vidmm_query_adapter_info_args qi = { VIDMM_QAI_QUERYSEGMENT, &in, sizeof in - 1, &out, sizeof out };
    T_ST(ops->query_adapter_info(sg, &qi), VIDMM_E_INVALID_ARG);
    struct vidmm_driver_caps caps;
    struct vidmm_query_adapter_info_args qc = { VIDMM_QAI_DRIVERCAPS, NULL, 0, &caps, sizeof caps - 1 };
    T_ST(ops->query_adapter_info(sg, &qc), VIDMM_E_INVALID_ARG);
    qc.output = NULL;
    qc.output_size = sizeof caps;
    T_ST(ops->query_adapter_info(sg, &qc), VIDMM_E_INVALID_ARG);
    struct vidmm_query_adapter_info_args qu = { (enum vidmm_query_type)99, NULL, 0, &caps, sizeof caps };
    T_ST(ops->query_adapter_info(sg, &qu), VIDMM_E_NOT_SUPPORTED);
    T_ST(ops->query_adapter_info(sg, NULL), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void big_is_lazy(void)
{
    double t0 = now_s();
    if (t_no_big())
        return;
    struct softgpu *sg = mk("big");
    T_CHECK(sg != NULL);
    if (!sg)
        return;
    /* The last byte of the 80 GiB segment is usable. */
    uint8_t v = 0x5A, r = 0;
    uint64_t last = (80ull << 30) - 1;
    T_ST(softgpu_write_physical(sg, 2, last, &v, 1), VIDMM_OK);
    T_ST(softgpu_read_physical(sg, 2, last, &r, 1), VIDMM_OK);
    T_EQ(r, 0x5A);
    T_ST(softgpu_read_physical(sg, 2, last, &r, 2), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);
    T_CHECK(now_s() - t0 < 1.0);
}

static void size_overrides(void)
{
    struct softgpu_config cfg;
    struct softgpu *sg = (struct softgpu *)1;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = 128ull << 20;
    cfg.segment_size[2] = 8ull << 20;      /* smaller than the 16 MiB host aperture */
    cfg.segment_size[3] = 64ull << 20;
    cfg.prefault = 1;
    cfg.paging_buffer_size = 16384;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    ops = softgpu_driver_ops();
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    T_EQ(query_segments(sg, d, &out), 3);
    T_EQ_U64(d[0].size, 128ull << 20);
    T_EQ_U64(d[1].size, 8ull << 20);
    T_EQ(d[1].cpu_host_aperture.size_in_pages, 128);
    T_EQ_U64(d[2].size, 64ull << 20);
    T_EQ(out.paging_buffer_size, 16384);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);

    /* wddm1: the AGP override moves the declared AGP aperture too. */
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "wddm1";
    cfg.segment_size[3] = 32ull << 20;
    cfg.segment_size[2] = 4ull << 30;      /* large enough to reach the AGP window */
    T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
    struct vidmm_adapter_create_info ci;
    softgpu_fill_adapter_create_info(sg, &ci);
    T_EQ_U64(ci.agp_aperture_size, 32ull << 20);
    T_EQ(query_segments(sg, d, &out), 4);
    T_EQ_U64(d[2].base_address, ci.agp_aperture_base);
    T_EQ(softgpu_check(sg), 0);   /* no overlap with the AGP window */
    softgpu_destroy(sg);

    sg = (struct softgpu *)1;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.segment_size[1] = (128ull << 20) + 4096;   /* not a 64 KiB multiple */
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    T_CHECK(sg == NULL);
    cfg.segment_size[1] = 0;
    cfg.segment_size[3] = 4096 * 3 + 1;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.segment_size[3] = 0;
    cfg.segment_size[4] = 1ull << 20;             /* dgpu has 3 segments */
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.segment_size[4] = 0;
    cfg.paging_buffer_size = 1000;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.paging_buffer_size = 0;
    cfg.preset = "tpu";
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    cfg.preset = NULL;
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_create(NULL, &sg), VIDMM_E_INVALID_ARG);
    cfg.preset = "dgpu";
    T_ST(softgpu_create(&cfg, NULL), VIDMM_E_INVALID_ARG);
    /* Prefaulting 80 GiB on a smaller host is refused, not attempted. */
    cfg.preset = "big";
    cfg.prefault = 1;
    cfg.segment_size[2] = 1ull << 40;   /* 1 TiB */
    T_ST(softgpu_create(&cfg, &sg), VIDMM_E_NO_HOST_MEMORY);
    softgpu_destroy(NULL);
}

static void describe(struct softgpu *sg, enum softgpu_alloc_kind kind, uint64_t size, uint32_t cpu_visible,
                     struct vidmm_allocation_info *info, vidmm_status want)
{
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = kind;
    desc.size = size;
    desc.cpu_visible = cpu_visible;
    memset(info, 0, sizeof *info);
    info->private_driver_data = &desc;
    info->private_driver_data_size = sizeof desc;
    struct vidmm_describe_allocation_args a = { info };
    T_ST(ops->describe_allocation(sg, &a), want);
    if (want == VIDMM_OK)
        T_CHECK(info->private_driver_data == &desc);
}

#define B(id) VIDMM_SEGMENT_BIT(id)

/* describe_allocation of a SOFTGPU_ALLOC_HEAP with these properties. */
static vidmm_status describe_heap(struct softgpu *sg, uint32_t type, uint32_t page, uint32_t pool,
                                  struct vidmm_allocation_info *info)
{
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_HEAP;
    desc.size = 4u << 20;
    desc.heap.type = type;
    desc.heap.cpu_page_property = page;
    desc.heap.memory_pool = pool;
    memset(info, 0, sizeof *info);
    info->private_driver_data = &desc;
    info->private_driver_data_size = sizeof desc;
    struct vidmm_describe_allocation_args a = { info };
    vidmm_status st = ops->describe_allocation(sg, &a);
    info->private_driver_data = NULL;
    return st;
}

/* Direct3D 12 heap properties to segments: the heap types as their
 * custom equivalents, L1 in local memory, L0 in system memory, and the
 * combinations Direct3D 12 refuses refused, on a discrete adapter (dgpu:
 * 1 CPU-visible, 2 invisible, 3 aperture), an integrated one (igpu: the
 * aperture alone) and one with AGP (wddm1). */
static void describe_heaps(void)
{
    struct vidmm_allocation_info i;
    struct softgpu *sg = mk("dgpu");
    T_ST(describe_heap(sg, SOFTGPU_HEAP_DEFAULT, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(3));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 2, 0) | VIDMM_PREF(1, 1, 0) | VIDMM_PREF(2, 3, 0));
    T_EQ(i.flags, 0);
    T_EQ_U64(i.size, 4u << 20);
    T_EQ_U64(i.alignment, 65536);
    struct vidmm_allocation_info c;
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_NOT_AVAILABLE, SOFTGPU_MEMORY_POOL_L1, &c), VIDMM_OK);
    T_EQ(c.supported_write_segment_set, i.supported_write_segment_set);
    T_EQ(c.preferred_segment, i.preferred_segment);
    T_EQ(c.flags, i.flags);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_UPLOAD, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(3));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 3, 0));
    T_EQ(i.flags, VIDMM_ALLOC_CPU_VISIBLE);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_WRITE_COMBINE, SOFTGPU_MEMORY_POOL_L0, &c), VIDMM_OK);
    T_EQ(c.supported_write_segment_set, i.supported_write_segment_set);
    T_EQ(c.flags, i.flags);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_READBACK, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(3));
    T_EQ(i.flags, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_NOT_AVAILABLE, SOFTGPU_MEMORY_POOL_L0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(3));
    T_EQ(i.flags, 0);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_GPU_UPLOAD, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 1, 0));
    T_EQ(i.flags, VIDMM_ALLOC_CPU_VISIBLE);
    /* What Direct3D 12 refuses. */
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_WRITE_COMBINE, SOFTGPU_MEMORY_POOL_L1, &i),
         VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_WRITE_BACK, SOFTGPU_MEMORY_POOL_L1, &i),
         VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_UNKNOWN, SOFTGPU_MEMORY_POOL_L0, &i),
         VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_WRITE_BACK, SOFTGPU_MEMORY_POOL_UNKNOWN, &i),
         VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_DEFAULT, SOFTGPU_CPU_PAGE_WRITE_BACK, 0, &i), VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_UPLOAD, 0, SOFTGPU_MEMORY_POOL_L0, &i), VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, 0, 0, 0, &i), VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, 6, 0, 0, &i), VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, 4, SOFTGPU_MEMORY_POOL_L0, &i), VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_WRITE_BACK, 3, &i), VIDMM_E_INVALID_ARG);
    /* A heap carries its properties in the whole descriptor only, and
     * asks for CPU access through them, not cpu_visible. */
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_HEAP;
    desc.size = 65536;
    desc.heap.type = SOFTGPU_HEAP_UPLOAD;
    i.private_driver_data = &desc;
    i.private_driver_data_size = offsetof(struct softgpu_alloc_desc, heap);
    struct vidmm_describe_allocation_args a = { &i };
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    desc.heap.reserved = 1;
    i.private_driver_data = &desc;
    i.private_driver_data_size = sizeof desc;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    desc.heap.reserved = 0;
    desc.cpu_visible = 1;
    i.private_driver_data = &desc;
    i.private_driver_data_size = sizeof desc;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    /* The layout before heaps (no .heap) still describes the other kinds. */
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_TEXTURE;
    desc.size = 65536;
    i.private_driver_data = &desc;
    i.private_driver_data_size = offsetof(struct softgpu_alloc_desc, heap);
    T_ST(ops->describe_allocation(sg, &a), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(3));
    softgpu_destroy(sg);

    /* Integrated (UMA): no L1, no CPU-visible local memory; DEFAULT is
     * L0 without CPU access. */
    sg = mk("igpu");
    T_ST(describe_heap(sg, SOFTGPU_HEAP_DEFAULT, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1));
    T_EQ(i.flags, 0);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_UPLOAD, 0, 0, &i), VIDMM_OK);
    T_EQ(i.flags, VIDMM_ALLOC_CPU_VISIBLE);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_CUSTOM, SOFTGPU_CPU_PAGE_NOT_AVAILABLE, SOFTGPU_MEMORY_POOL_L1, &i),
         VIDMM_E_INVALID_ARG);
    T_ST(describe_heap(sg, SOFTGPU_HEAP_GPU_UPLOAD, 0, 0, &i), VIDMM_E_INVALID_ARG);
    softgpu_destroy(sg);

    /* wddm1: system memory through the aperture (4), then AGP (3). */
    sg = mk("wddm1");
    T_ST(describe_heap(sg, SOFTGPU_HEAP_UPLOAD, 0, 0, &i), VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(3) | B(4));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 4, 0) | VIDMM_PREF(1, 3, 0));
    softgpu_destroy(sg);
}

static void describe_allocation(void)
{
    struct vidmm_allocation_info i;
    struct softgpu *sg = mk("dgpu");
    describe(sg, SOFTGPU_ALLOC_TEXTURE, 1 << 20, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(3));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 2, 0) | VIDMM_PREF(1, 1, 0) | VIDMM_PREF(2, 3, 0));
    T_EQ_U64(i.alignment, 65536);
    T_EQ_U64(i.size, 1 << 20);
    T_EQ(i.flags, 0);
    describe(sg, SOFTGPU_ALLOC_CONSTANT, 4096, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(3));
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 1);
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 1), 3);
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 2), 0);
    T_CHECK(i.flags & VIDMM_ALLOC_CPU_VISIBLE);
    describe(sg, SOFTGPU_ALLOC_STAGING, 4096, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(3));
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 3);
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 1), 1);
    T_CHECK(i.flags & VIDMM_ALLOC_CPU_VISIBLE);
    describe(sg, SOFTGPU_ALLOC_PRIMARY, 8 << 20, 1, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(3));
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 1);
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 1), 2);
    T_EQ(i.flags, VIDMM_ALLOC_PRIMARY | VIDMM_ALLOC_CPU_VISIBLE);
    describe(sg, SOFTGPU_ALLOC_PRIMARY, 8 << 20, 0, &i, VIDMM_OK);
    T_EQ(i.flags, VIDMM_ALLOC_PRIMARY);
    describe(sg, SOFTGPU_ALLOC_RING, 65536, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(3));
    T_EQ(i.flags, VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_CPU_VISIBLE);
    describe(sg, SOFTGPU_ALLOC_TEXTURE, 0, 0, &i, VIDMM_E_INVALID_ARG);
    describe(sg, (enum softgpu_alloc_kind)99, 4096, 0, &i, VIDMM_E_INVALID_ARG);

    /* Explicit alignment larger than the page need; non power of two. */
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_TEXTURE;
    desc.size = 4096;
    desc.alignment = 1 << 20;
    i.private_driver_data = &desc;
    i.private_driver_data_size = sizeof desc;
    struct vidmm_describe_allocation_args a = { &i };
    T_ST(ops->describe_allocation(sg, &a), VIDMM_OK);
    T_EQ_U64(i.alignment, 1 << 20);
    desc.alignment = 3 << 12;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    /* Wrong private data size, NULL. */
    i.private_driver_data_size = sizeof desc - 1;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    i.private_driver_data = NULL;
    i.private_driver_data_size = sizeof desc;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);
    a.info = NULL;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_E_INVALID_ARG);

    /* EXPLICIT: verbatim but the private data. */
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_EXPLICIT;
    desc.info.size = 12345;
    desc.info.alignment = 4096;
    desc.info.supported_write_segment_set = B(2);
    desc.info.preferred_segment = VIDMM_PREF(0, 2, 1);
    desc.info.flags = VIDMM_ALLOC_CACHED;
    desc.info.priority = 7;
    desc.info.driver_allocation = &desc;
    desc.info.private_driver_data = (void *)8;
    memset(&i, 0, sizeof i);
    i.private_driver_data = &desc;
    i.private_driver_data_size = sizeof desc;
    a.info = &i;
    T_ST(ops->describe_allocation(sg, &a), VIDMM_OK);
    T_EQ_U64(i.size, 12345);
    T_EQ(i.supported_write_segment_set, B(2));
    T_EQ(i.preferred_segment, VIDMM_PREF(0, 2, 1));
    T_EQ(i.flags, VIDMM_ALLOC_CACHED);
    T_EQ(i.priority, 7);
    T_CHECK(i.driver_allocation == &desc);
    T_CHECK(i.private_driver_data == &desc);
    T_EQ(i.private_driver_data_size, sizeof desc);
    softgpu_destroy(sg);

    sg = mk("igpu");
    for (int k = SOFTGPU_ALLOC_TEXTURE; k <= SOFTGPU_ALLOC_RING; k++) {
        describe(sg, (enum softgpu_alloc_kind)k, 4096, 0, &i, VIDMM_OK);
        T_EQ(i.supported_write_segment_set, B(1));
        T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 1);
        T_EQ(VIDMM_PREF_ID(i.preferred_segment, 1), 0);
        T_EQ_U64(i.alignment, 4096);
    }
    softgpu_destroy(sg);

    sg = mk("wddm1");
    describe(sg, SOFTGPU_ALLOC_STAGING, 4096, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(3) | B(4));
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 4);
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 1), 3);
    T_EQ_U64(i.alignment, 4096);
    describe(sg, SOFTGPU_ALLOC_TEXTURE, 4096, 0, &i, VIDMM_OK);
    T_EQ(i.supported_write_segment_set, B(1) | B(2) | B(4));
    T_EQ(VIDMM_PREF_ID(i.preferred_segment, 0), 2);
    softgpu_destroy(sg);
}

/* Random bytes go MDL -> seg1 -> seg2 -> seg2 (moved) -> MDL -> MDL,
 * and through the aperture, and come back intact. */
static void transfers_preserve_bytes(void)
{
    uint64_t rs = t_seed() ^ 0x50f7;
    struct softgpu *sg = mk("dgpu");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    query_segments(sg, d, &out);
    const uint64_t pages = 600, size = pages * 4096 - 123;   /* odd size, crosses 64 KiB pages */
    uint8_t *src = mdl_pages(pages + 2), *dst = mdl_pages(pages + 2), *dst2 = mdl_pages(pages + 2);
    uint8_t *ref = malloc((size_t)size);
    rand_fill(&rs, src, (size_t)(pages + 2) * 4096);
    memset(dst, 0, (size_t)(pages + 2) * 4096);
    memset(dst2, 0, (size_t)(pages + 2) * 4096);
    struct vidmm_mdl msrc = { src, pages + 2 }, mdst = { dst, pages + 2 }, mdst2 = { dst2, pages + 2 };
    memcpy(ref, src + 2 * 4096, (size_t)size);

    /* MDL (offset 2 pages) -> seg1 at 1 MiB. */
    T_ST(transfer(sg, 0, 0, &msrc, 1, d[0].base_address + (1 << 20), NULL, size, 2), VIDMM_OK);
    T_CHECK(memcmp((uint8_t *)d[0].cpu_translated_address + (1 << 20), ref, (size_t)size) == 0);
    /* seg1 -> seg2 near its end. */
    uint64_t s2 = d[1].size - (8ull << 20);
    T_ST(transfer(sg, 1, d[0].base_address + (1 << 20), NULL, 2, d[1].base_address + s2, NULL, size, 0), VIDMM_OK);
    /* Overlapping moves inside seg2, up then down (MOVE_PAGING). */
    T_ST(transfer(sg, 2, d[1].base_address + s2, NULL, 2, d[1].base_address + s2 + 4096 * 7, NULL, size, 0), VIDMM_OK);
    T_ST(transfer(sg, 2, d[1].base_address + s2 + 4096 * 7, NULL, 2, d[1].base_address + s2 + 4096 * 3, NULL, size, 0),
         VIDMM_OK);
    /* seg2 -> MDL (offset 1 page). */
    T_ST(transfer(sg, 2, d[1].base_address + s2 + 4096 * 3, NULL, 0, 0, &mdst, size, 1), VIDMM_OK);
    T_CHECK(memcmp(dst + 4096, ref, (size_t)size) == 0);
    /* MDL -> MDL (both at offset 1). */
    T_ST(transfer(sg, 0, 0, &mdst, 0, 0, &mdst2, size, 1), VIDMM_OK);
    T_CHECK(memcmp(dst2 + 4096, ref, (size_t)size) == 0);

    /* Through the aperture: map dst2 at aperture page 10, copy seg1 ->
     * aperture and aperture -> seg2. */
    memset(dst2, 0, (size_t)(pages + 2) * 4096);
    T_ST(map_ap(sg, 3, 10, pages, &mdst2, 0), VIDMM_OK);
    T_ST(transfer(sg, 1, d[0].base_address + (1 << 20), NULL, 3, d[2].base_address + 10 * 4096 + 5, NULL, size - 5, 0),
         VIDMM_OK);
    T_CHECK(memcmp(dst2 + 5, ref, (size_t)size - 5) == 0);
    T_ST(transfer(sg, 3, d[2].base_address + 10 * 4096 + 5, NULL, 2, d[1].base_address, NULL, size - 5, 0), VIDMM_OK);
    uint8_t *back = malloc((size_t)size);
    T_ST(softgpu_read_physical(sg, 2, 0, back, (size_t)size - 5), VIDMM_OK);
    T_CHECK(memcmp(back, ref, (size_t)size - 5) == 0);
    T_ST(unmap_ap(sg, 3, 10, pages, NULL), VIDMM_OK);

    /* A zero-size transfer (eviction notice) writes nothing and succeeds. */
    struct vidmm_build_paging_buffer_args a;
    uint64_t buf[8];
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.source.segment_id = 1;
    a.u.transfer.source.segment_address = d[0].base_address;
    a.u.transfer.destination.mdl = &mdst;
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_OK);
    T_EQ(a.dma_size, sizeof buf);

    struct softgpu_stats st;
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.ops[VIDMM_PAGING_TRANSFER], 8);
    T_EQ_U64(st.ops[VIDMM_PAGING_MAP_APERTURE_SEGMENT], 1);
    T_EQ_U64(st.bytes[VIDMM_PAGING_TRANSFER], 8 * size - 10);
    T_EQ_U64(st.aperture_pages_mapped, 0);
    T_EQ(softgpu_check(sg), 0);
    free(back);
    free(ref);
    free(src);
    free(dst);
    free(dst2);
    softgpu_destroy(sg);
}

static void fill_patterns(void)
{
    struct softgpu *sg = mk("wddm1");
    const uint32_t patterns[] = { 0, 0xFFFFFFFFu, 0xDEADBEEFu, 0x01020304u };
    const uint64_t offs[] = { 0, 3, 4096, 65536 + 1 };
    const uint64_t sizes[] = { 1, 7, 4096, 100003, (3u << 20) + 9 };
    uint8_t *buf = malloc((4u << 20) + 64);
    for (size_t p = 0; p < 4; p++)
        for (size_t o = 0; o < 4; o++)
            for (size_t s = 0; s < 5; s++) {
                uint32_t seg = (s + o) % 2 ? 2 : 1;
                uint64_t base = seg == 1 ? 0 : (64ull << 20);
                /* Guard bytes around the fill must survive. */
                uint8_t guard[2] = { 0x77, 0x77 };
                if (offs[o])
                    softgpu_write_physical(sg, seg, offs[o] - 1, &guard[0], 1);
                softgpu_write_physical(sg, seg, offs[o] + sizes[s], &guard[1], 1);
                T_ST(fill(sg, seg, base + offs[o], sizes[s], patterns[p]), VIDMM_OK);
                T_ST(softgpu_read_physical(sg, seg, offs[o], buf, (size_t)sizes[s] + 1), VIDMM_OK);
                int ok = 1;
                for (uint64_t i = 0; i < sizes[s]; i++)
                    if (buf[i] != (uint8_t)(patterns[p] >> (8 * (i % 4)))) {
                        ok = 0;
                        break;
                    }
                T_CHECK(ok);
                T_EQ(buf[sizes[s]], 0x77);
                if (offs[o]) {
                    uint8_t g = 0;
                    softgpu_read_physical(sg, seg, offs[o] - 1, &g, 1);
                    T_EQ(g, 0x77);
                }
            }
    /* softgpu_fill32 directly, on every alignment of a small buffer. */
    for (unsigned mis = 0; mis < 16; mis++) {
        memset(buf, 0x11, 1024);
        softgpu_fill32(buf + mis, 700, 0xA1B2C3D4u);
        int ok = buf[mis + 700] == 0x11 && (mis == 0 || buf[mis - 1] == 0x11);
        for (unsigned i = 0; i < 700; i++)
            ok &= buf[mis + i] == (uint8_t)(0xA1B2C3D4u >> (8 * (i % 4)));
        T_CHECK(ok);
    }
    /* Discard leaves the content and is counted. */
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_DISCARD_CONTENT;
    a.u.discard_content.segment_id = 1;
    a.u.discard_content.segment_address = 0;
    a.u.discard_content.size = 4096;
    T_ST(op(sg, &a), VIDMM_OK);
    T_ST(softgpu_read_physical(sg, 1, 0, buf, 4), VIDMM_OK);
    T_EQ(buf[0], 0x04);
    struct softgpu_stats st;
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.ops[VIDMM_PAGING_DISCARD_CONTENT], 1);
    T_EQ_U64(st.bytes[VIDMM_PAGING_DISCARD_CONTENT], 4096);
    T_EQ_U64(st.ops[VIDMM_PAGING_FILL], 80);
    T_EQ(softgpu_check(sg), 0);
    free(buf);
    softgpu_destroy(sg);
}

/* A large zero fill of a memory segment that was not prefaulted releases
 * its whole pages (softgpu_fill): the range must read back as zeros - through
 * the copy engine's view and the CPU's - with the unaligned edges and the
 * bytes around it untouched; a prefaulted segment gets the same bytes by
 * stores. */
static void zero_fill_release(void)
{
    for (int prefault = 0; prefault < 2; prefault++) {
        struct softgpu_config cfg;
        struct softgpu *sg = NULL;
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = "dgpu";
        cfg.segment_size[1] = 16ull << 20;
        cfg.segment_size[2] = 16ull << 20;
        cfg.segment_size[3] = 64ull << 20;
        cfg.prefault = prefault;
        T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
        ops = softgpu_driver_ops();
        struct vidmm_segment_descriptor d[8];
        struct vidmm_query_segment_out out;
        T_CHECK(query_segments(sg, d, &out) >= 2);
        const uint64_t span = 4ull << 20, off = 3 * 4096 + 5, size = (2ull << 20) + 11;
        uint8_t *buf = malloc((size_t)span);
        T_ST(fill(sg, 2, d[1].base_address, span, 0xFFFFFFFFu), VIDMM_OK);
        T_ST(fill(sg, 2, d[1].base_address + off, size, 0), VIDMM_OK);
        T_ST(softgpu_read_physical(sg, 2, 0, buf, (size_t)span), VIDMM_OK);
        int ok = 1;
        for (uint64_t i = 0; i < span; i++)
            ok &= buf[i] == (i >= off && i < off + size ? 0x00 : 0xFF);
        T_CHECK(ok);
        /* Written again after the release: the pages come back. */
        T_ST(fill(sg, 2, d[1].base_address + off, size, 0x5A5A5A5Au), VIDMM_OK);
        T_ST(softgpu_read_physical(sg, 2, off, buf, (size_t)size), VIDMM_OK);
        ok = 1;
        for (uint64_t i = 0; i < size; i++)
            ok &= buf[i] == 0x5A;
        T_CHECK(ok);
        T_EQ(softgpu_check(sg), 0);
        free(buf);
        softgpu_destroy(sg);
    }
}

/* Transfers above the streaming threshold (softgpu_copy's non-temporal path,
 * forced down to 256 bytes through SOFTGPU_NT_THRESHOLD) move exactly the
 * bytes memcpy would, for every misalignment of both sides and sizes
 * around the 64-byte body and 16-byte head. */
static void transfer_streaming(void)
{
    uint64_t rs = t_seed() ^ 0x57e4;
    setenv("SOFTGPU_NT_THRESHOLD", "256", 1);
    struct softgpu *sg = mk("dgpu");
    unsetenv("SOFTGPU_NT_THRESHOLD");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    T_CHECK(query_segments(sg, d, &out) >= 2);
    const size_t span = 1u << 20;
    uint8_t *src = malloc(span), *dst = malloc(span), *back = malloc(span);
    const uint64_t sizes[] = { 255, 256, 257, 319, 4096 + 13, 100003, 4 * 65536 + 4099 };
    int ok = 1;
    for (unsigned so = 0; so < 17; so += 4)
        for (unsigned dof = 0; dof < 17; dof += 3)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                uint64_t n = sizes[k];
                rand_fill(&rs, src, (size_t)n + 64);
                rand_fill(&rs, dst, (size_t)n + 64);
                T_ST(softgpu_write_physical(sg, 1, 0, src, (size_t)n + 64), VIDMM_OK);
                T_ST(softgpu_write_physical(sg, 2, 0, dst, (size_t)n + 64), VIDMM_OK);
                T_ST(transfer(sg, 1, d[0].base_address + so, NULL, 2, d[1].base_address + dof, NULL, n, 0), VIDMM_OK);
                T_ST(softgpu_read_physical(sg, 2, 0, back, (size_t)n + 64), VIDMM_OK);
                memcpy(dst + dof, src + so, (size_t)n);
                ok &= !memcmp(back, dst, (size_t)n + 64);
            }
    T_CHECK(ok);
    T_EQ(softgpu_check(sg), 0);
    free(src);
    free(dst);
    free(back);
    softgpu_destroy(sg);
}

/* The copy path's choice (copy.c), driven with made-up timings: a run of
 * four cached copies then four streaming ones, the last two of each
 * timed; the faster path from then on; a confirming run on the other
 * path eight copies later, which can undo the choice; estimates that rise
 * at once and sink by a quarter; runs spaced by what the last one cost. */
static void copy_path_choice(void)
{
    struct softgpu_copy_tuner *t = calloc(1, sizeof *t);
    T_CHECK(t != NULL);
    if (!t)
        return;
    unsetenv("SOFTGPU_NT_THRESHOLD");
    softgpu_copy_tuner_init(t);
    const unsigned cls = 24; /* 16 MiB operations */
    const uint64_t n = (uint64_t)16 << 20;
    const uint64_t ns_12 = n * 1000u / 12000u, ns_4 = n * 1000u / 4000u, ns_24 = n * 1000u / 24000u;
    /* Small operations are not measured, nor small pieces of a large one
     * (the 4 KiB runs of a scattered transfer), which are not counted. */
    struct softgpu_copy_ticket k = softgpu_copy_choose(t, 19, (uint64_t)512 << 10);
    T_EQ(k.path, SOFTGPU_PATH_CACHED);
    T_EQ(k.time, 0);
    k = softgpu_copy_choose(t, cls, 4096);
    T_EQ(k.path, SOFTGPU_PATH_CACHED);
    T_EQ(k.time, 0);
    uint32_t c0, c1, c2;
    softgpu_copy_class_info(t, cls, &c0, &c1, &c2);
    T_EQ(c0, 0u);
    T_EQ(softgpu_copy_size_class((uint64_t)16 << 20), 24u);
    T_EQ(softgpu_copy_size_class(((uint64_t)32 << 20) - 1), 24u);
    T_EQ(softgpu_copy_size_class(0), 0u);
    /* Learning. */
    for (unsigned i = 0; i < 8; i++) {
        k = softgpu_copy_choose(t, cls, n);
        T_EQ(k.path, (i < 4 ? SOFTGPU_PATH_CACHED : SOFTGPU_PATH_STREAM));
        T_EQ(k.time, ((i % 4) >= 2));
        T_EQ(k.sample, k.time);
        T_EQ(k.explore, 0);
        if (k.time)   /* streaming measured slow at first (a first touch, say) */
            softgpu_copy_record(t, cls, k, n, k.path == SOFTGPU_PATH_CACHED ? ns_12 : ns_4);
    }
    uint32_t copies, m0, m1;
    T_EQ(softgpu_copy_class_info(t, cls, &copies, &m0, &m1), SOFTGPU_PATH_CACHED);
    T_EQ(copies, 8u);
    T_EQ(m0, 12000u);
    T_EQ(m1, 4000u);
    /* Cached for eight copies, then the confirming streaming run, which
     * measures 24 GB/s: the choice flips at once. */
    for (unsigned i = 8; i < 16; i++) {
        k = softgpu_copy_choose(t, cls, n);
        T_EQ(k.path, SOFTGPU_PATH_CACHED);
        T_EQ(k.time, (i % 4 == 0));   /* one steady copy in four is timed */
        T_EQ(k.sample, k.time);
        T_EQ(k.explore, 0);
        if (k.time)
            softgpu_copy_record(t, cls, k, n, ns_12);
    }
    for (unsigned i = 16; i < 20; i++) {
        k = softgpu_copy_choose(t, cls, n);
        T_EQ(k.path, SOFTGPU_PATH_STREAM);
        T_EQ(k.time, 1);
        T_EQ(k.sample, (i >= 18));
        T_EQ(k.explore, 1);
        T_EQ(k.last, (i == 19));
        softgpu_copy_record(t, cls, k, n, ns_24);
    }
    T_EQ(softgpu_copy_class_info(t, cls, &copies, &m0, &m1), SOFTGPU_PATH_STREAM);
    T_EQ(m1, 24000u);
    /* That run cost nothing over the chosen path: the next (cached) run
     * comes SOFTGPU_COPY_EXPLORE (64) copies later.  It costs four copies at
     * 12 GB/s against 24: 300 x (its excess / a copy) = 1200 copies to
     * the one after. */
    T_EQ(softgpu_copy_period(400, 100, 4), 64u);
    T_EQ(softgpu_copy_period(410, 100, 4), 64u);          /* a close race: often */
    T_EQ(softgpu_copy_period(800, 100, 4), 1200u);
    T_EQ(softgpu_copy_period(200, 100, 1), 300u);     /* a run of one copy at half speed */
    T_EQ(softgpu_copy_period(UINT64_MAX, 1, 4), 8192u);   /* a hopeless path: rarely */
    T_EQ(softgpu_copy_period(1000, 0, 4), 64u);
    /* From 128 MiB operations up a run is one copy, timed. */
    T_EQ(softgpu_copy_run(24), 4u);
    T_EQ(softgpu_copy_run(26), 4u);
    T_EQ(softgpu_copy_run(27), 1u);
    T_EQ(softgpu_copy_run(30), 1u);
    unsigned cached = 0, streamed = 0, first_cached = 0;
    for (unsigned i = 20; i < 1292; i++) {
        k = softgpu_copy_choose(t, cls, n);
        if (k.path == SOFTGPU_PATH_CACHED) {
            if (!cached)
                first_cached = i;
            cached++;
            softgpu_copy_record(t, cls, k, n, ns_12);
        } else {
            streamed++;
            if (k.time)
                softgpu_copy_record(t, cls, k, n, ns_24);
        }
    }
    T_EQ(first_cached, 84u);
    T_EQ(cached, 8u);                /* 84-87 and 1288-1291 */
    T_EQ(streamed, 1272u - 8u);
    /* A lasting slowdown of the chosen path sinks its estimate by a
     * quarter per copy until the other path wins. */
    unsigned steps = 0;
    for (unsigned i = 0; i < 64 && softgpu_copy_class_info(t, cls, &copies, &m0, &m1) == SOFTGPU_PATH_STREAM; i++) {
        k = softgpu_copy_choose(t, cls, n);
        if (k.path == SOFTGPU_PATH_STREAM && k.time)
            softgpu_copy_record(t, cls, k, n, ns_4);
        steps += k.time;
    }
    T_EQ(softgpu_copy_class_info(t, cls, &copies, &m0, &m1), SOFTGPU_PATH_CACHED);
    T_EQ(steps, 4u);   /* timed copies: 24000 -> 19000 -> 15250 -> 12437 -> 10328 */
    /* A 1 GiB class learns in two copies, one per path, both timed, and
     * explores one copy at a time. */
    {
        const unsigned big = 30;
        const uint64_t nb = (uint64_t)1 << 30;
        k = softgpu_copy_choose(t, big, nb);
        T_EQ(k.path, SOFTGPU_PATH_CACHED);
        T_EQ(k.time, 1);
        softgpu_copy_record(t, big, k, nb, nb * 1000u / 6000u);
        k = softgpu_copy_choose(t, big, nb);
        T_EQ(k.path, SOFTGPU_PATH_STREAM);
        T_EQ(k.time, 1);
        softgpu_copy_record(t, big, k, nb, nb * 1000u / 11000u);
        for (unsigned i = 2; i < 10; i++) {
            k = softgpu_copy_choose(t, big, nb);
            T_EQ(k.path, SOFTGPU_PATH_STREAM);
            T_EQ(k.explore, 0);
        }
        k = softgpu_copy_choose(t, big, nb);   /* the confirming run: one cached copy */
        T_EQ(k.path, SOFTGPU_PATH_CACHED);
        T_EQ(k.explore, 1);
        T_EQ(k.last, 1);
        T_EQ(k.sample, 1);
        softgpu_copy_record(t, big, k, nb, nb * 1000u / 6000u);
        T_EQ(softgpu_copy_choose(t, big, nb).path, SOFTGPU_PATH_STREAM);
    }
    /* Bad arguments to record change nothing. */
    k.path = 7;
    k.sample = 1;
    softgpu_copy_record(t, cls, k, n, 1);
    k.path = SOFTGPU_PATH_CACHED;
    softgpu_copy_record(t, SOFTGPU_COPY_CLASSES, k, n, 1);
    uint32_t m0b, m1b;
    softgpu_copy_class_info(t, cls, &copies, &m0b, &m1b);
    T_EQ(m0b, m0);
    T_EQ(m1b, m1);
    /* A fixed threshold: no measuring, the copy's own size decides. */
    setenv("SOFTGPU_NT_THRESHOLD", "4096", 1);
    softgpu_copy_tuner_init(t);
    unsetenv("SOFTGPU_NT_THRESHOLD");
    k = softgpu_copy_choose(t, cls, 4096);
    T_EQ(k.path, SOFTGPU_PATH_STREAM);
    T_EQ(k.time, 0);
    k = softgpu_copy_choose(t, cls, 4095);
    T_EQ(k.path, SOFTGPU_PATH_CACHED);
    k = softgpu_copy_choose(t, cls, n);
    T_EQ(k.path, SOFTGPU_PATH_STREAM);
    k = softgpu_copy_choose(t, cls, n);
    T_EQ(softgpu_copy_class_info(t, cls, &copies, &m0, &m1), -1);
    T_EQ(copies, 2u);   /* the copies of 1 MiB or more counted */
    T_EQ(m0 + m1, 0u);  /* not measured */
    setenv("SOFTGPU_NT_THRESHOLD", "0", 1);   /* 0: never stream */
    softgpu_copy_tuner_init(t);
    unsetenv("SOFTGPU_NT_THRESHOLD");
    T_EQ(softgpu_copy_choose(t, cls, (uint64_t)1 << 40).path, SOFTGPU_PATH_CACHED);
    free(t);
}

/* Transfers on a device that measures its copy path: the bytes are
 * exact whichever path each copy takes (the learning runs take both),
 * the commands carry the operation's size class, and
 * softgpu_get_copy_paths reports the class with both estimates. */
static void copy_paths_measured(void)
{
    uint64_t rs = t_seed() ^ 0xC0B7;
    unsetenv("SOFTGPU_NT_THRESHOLD");
    struct softgpu *sg = mk("dgpu");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    T_CHECK(query_segments(sg, d, &out) >= 2);
    T_EQ(softgpu_get_copy_paths(sg, NULL, 0), 0u);
    T_EQ(softgpu_get_copy_paths(NULL, NULL, 0), 0u);
    /* The segments' host memory is what the engine copies. */
    void *m1 = NULL, *m2 = NULL;
    uint64_t z1 = 0, z2 = 0;
    T_ST(softgpu_segment_memory(sg, 1, &m1, &z1), VIDMM_OK);
    T_ST(softgpu_segment_memory(sg, 2, &m2, &z2), VIDMM_OK);
    T_EQ_U64(z1, d[0].size);
    T_EQ_U64(z2, d[1].size);
    void *bad = (void *)&z1;
    uint64_t bz = 7;
    T_ST(softgpu_segment_memory(sg, 0, &bad, &bz), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_segment_memory(sg, out.nb_segment + 1, &bad, &bz), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_segment_memory(sg, 1, NULL, &bz), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_segment_memory(sg, 1, &bad, NULL), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_segment_memory(NULL, 1, &bad, &bz), VIDMM_E_INVALID_ARG);
    for (uint32_t id = 1; id <= out.nb_segment; id++)
        if (d[id - 1].flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP))
            T_ST(softgpu_segment_memory(sg, id, &bad, &bz), VIDMM_E_INVALID_ARG);
    T_CHECK(bad == (void *)&z1 && bz == 7);   /* refusals change nothing */
    const size_t n = (2u << 20) + 4099;   /* class 2 MiB, unaligned tail */
    uint8_t *src = malloc(n), *back = malloc(n);
    int ok = 1;
    for (int i = 0; i < 12; i++) {
        rand_fill(&rs, src, n);
        T_ST(softgpu_write_physical(sg, 1, 3, src, n), VIDMM_OK);
        T_ST(transfer(sg, 1, d[0].base_address + 3, NULL, 2, d[1].base_address + 64 * 1024 + 5, NULL, n, 0),
             VIDMM_OK);
        T_ST(softgpu_read_physical(sg, 2, 64 * 1024 + 5, back, n), VIDMM_OK);
        ok &= !memcmp(back, src, n);
        ok &= !memcmp((uint8_t *)m2 + 64 * 1024 + 5, src, n);   /* the same bytes, seen directly */
    }
    T_CHECK(ok);
    struct softgpu_copy_path cp[4];
    memset(cp, 0, sizeof cp);
    T_EQ(softgpu_get_copy_paths(sg, cp, 4), 1u);
    T_EQ_U64(cp[0].min_size, (uint64_t)2 << 20);
    T_EQ(cp[0].copies, 12u);
    T_CHECK(cp[0].cached_mbps > 0 && cp[0].streaming_mbps > 0);
    T_CHECK(cp[0].path == (cp[0].streaming_mbps > cp[0].cached_mbps ? SOFTGPU_COPY_STREAMING : SOFTGPU_COPY_CACHED));
    T_EQ(softgpu_get_copy_paths(sg, cp, 0), 1u);   /* counts without writing */
    /* The command header: FIRST on the first command, the class of the
     * whole operation on every copy command. */
    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    uint64_t buf[64];
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = (uint64_t)40 << 20;   /* three chunks, class 25 */
    a.u.transfer.source.segment_id = 1;
    a.u.transfer.source.segment_address = d[0].base_address;
    a.u.transfer.destination.segment_id = 2;
    a.u.transfer.destination.segment_address = d[1].base_address;
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_OK);
    uint32_t used = (uint32_t)sizeof buf - a.dma_size;
    unsigned cmds = 0;
    for (uint32_t o = 0; o < used;) {
        struct softgpu_cmd_hdr h;
        memcpy(&h, (uint8_t *)buf + o, sizeof h);
        T_EQ(h.opcode, VIDMM_PAGING_TRANSFER);
        T_EQ(SOFTGPU_CMDF_CLASS_OF(h.flags), 25u);
        T_EQ((h.flags & SOFTGPU_CMDF_FIRST), (cmds == 0 ? SOFTGPU_CMDF_FIRST : 0u));
        cmds++;
        o += h.size ? h.size : used;
    }
    T_EQ(cmds, 3u);
    T_EQ(softgpu_check(sg), 0);
    free(src);
    free(back);
    softgpu_destroy(sg);
    /* With SOFTGPU_NT_THRESHOLD the path is fixed and reported so. */
    setenv("SOFTGPU_NT_THRESHOLD", "1048576", 1);
    sg = mk("dgpu");
    unsetenv("SOFTGPU_NT_THRESHOLD");
    T_ST(transfer(sg, 1, d[0].base_address, NULL, 2, d[1].base_address, NULL, (uint64_t)2 << 20, 0), VIDMM_OK);
    T_EQ(softgpu_get_copy_paths(sg, cp, 4), 1u);   /* counted, not measured */
    T_EQ(cp[0].path, SOFTGPU_COPY_FIXED);
    T_EQ(cp[0].copies, 1u);
    T_EQ(cp[0].cached_mbps + cp[0].streaming_mbps, 0u);
    softgpu_destroy(sg);
}

static void aperture_map_unmap(void)
{
    uint64_t rs = t_seed() ^ 0xA9;
    const char *presets[] = { "dgpu", "igpu", "wddm1" };
    for (int pi = 0; pi < 3; pi++) {
        struct softgpu *sg = mk(presets[pi]);
        struct vidmm_segment_descriptor d[8];
        struct vidmm_query_segment_out out;
        uint32_t n = query_segments(sg, d, &out);
        uint8_t *pg = mdl_pages(16);
        rand_fill(&rs, pg, 16 * 4096);
        struct vidmm_mdl mdl = { pg, 16 };
        for (uint32_t id = 1; id <= n; id++) {
            if (!(d[id - 1].flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP)))
                continue;
            uint64_t last = d[id - 1].size / 4096;
            uint8_t tmp[3 * 4096];
            T_CHECK(softgpu_aperture_entry(sg, id, 100) == softgpu_dummy_page(sg));
            T_ST(softgpu_read_physical(sg, id, 100 * 4096, tmp, 4), VIDMM_E_INVALID_ARG);
            T_ST(map_ap(sg, id, 100, 12, &mdl, 4), VIDMM_OK);
            T_ST(map_ap(sg, id, last - 1, 1, &mdl, 0), VIDMM_OK);   /* last entry */
            T_EQ(softgpu_check(sg), 0);
            T_CHECK(softgpu_aperture_entry(sg, id, 100) == pg + 4 * 4096);
            T_CHECK(softgpu_aperture_entry(sg, id, 111) == pg + 15 * 4096);
            T_ST(softgpu_read_physical(sg, id, 100 * 4096 + 10, tmp, sizeof tmp), VIDMM_OK);
            T_CHECK(memcmp(tmp, pg + 4 * 4096 + 10, sizeof tmp) == 0);
            /* write through the aperture lands in the MDL page */
            T_ST(softgpu_write_physical(sg, id, 105 * 4096, "abc", 3), VIDMM_OK);
            T_CHECK(memcmp(pg + 9 * 4096, "abc", 3) == 0);
            struct softgpu_stats st;
            softgpu_get_stats(sg, &st);
            T_EQ_U64(st.aperture_pages_mapped, 13);
            /* Unmap half onto vidmm's dummy page, the rest onto softgpu's. */
            uint8_t *dummy = mdl_pages(1);
            T_ST(unmap_ap(sg, id, 100, 6, dummy), VIDMM_OK);
            T_ST(unmap_ap(sg, id, 106, 6, NULL), VIDMM_OK);
            T_ST(unmap_ap(sg, id, last - 1, 1, NULL), VIDMM_OK);
            T_CHECK(softgpu_aperture_entry(sg, id, 100) == dummy);
            T_CHECK(softgpu_aperture_entry(sg, id, 105) == dummy);
            T_CHECK(softgpu_aperture_entry(sg, id, 106) == softgpu_dummy_page(sg));
            T_CHECK(softgpu_aperture_entry(sg, id, last) == NULL);
            T_ST(softgpu_read_physical(sg, id, 100 * 4096, tmp, 4), VIDMM_E_INVALID_ARG);
            softgpu_get_stats(sg, &st);
            T_EQ_U64(st.aperture_pages_mapped, 0);
            T_EQ(softgpu_check(sg), 0);
            free(dummy);
        }
        free(pg);
        softgpu_destroy(sg);
    }
}

static void host_aperture(void)
{
    struct softgpu *sg = mk("dgpu");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    query_segments(sg, d, &out);
    uint8_t *win = d[1].cpu_host_aperture.cpu_address;
    T_CHECK(win == softgpu_host_aperture_base(sg, 2));
    uint64_t seg_pages[3] = { 7, 65535, 0 };
    uint32_t ap_pages[3] = { 5, 255, 0 };
    const uint64_t P = 65536;
    T_ST(softgpu_write_physical(sg, 2, 7 * P + 100, "segment", 8), VIDMM_OK);
    struct vidmm_map_cpu_host_aperture_args m = { NULL, 2, 0, 3, ap_pages, seg_pages };
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_OK);
    T_CHECK(memcmp(win + 5 * P + 100, "segment", 8) == 0);
    /* CPU writes through the window land in the segment (last page too). */
    memcpy(win + 255 * P + P - 6, "window", 6);
    memcpy(win + 5 * P + 200, "hello", 6);
    char got[8];
    T_ST(softgpu_read_physical(sg, 2, 65535 * P + P - 6, got, 6), VIDMM_OK);
    T_CHECK(memcmp(got, "window", 6) == 0);
    T_ST(softgpu_read_physical(sg, 2, 7 * P + 200, got, 6), VIDMM_OK);
    T_CHECK(memcmp(got, "hello", 6) == 0);
    /* A copy-engine fill is seen through the window. */
    T_ST(fill(sg, 2, d[1].base_address, P, 0x61616161u), VIDMM_OK);
    T_CHECK(win[0] == 'a' && win[P - 1] == 'a');
    struct softgpu_stats st;
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.host_aperture_pages_mapped, 3);
    T_EQ(softgpu_check(sg), 0);
    /* Remap window page 5 to segment page 8. */
    seg_pages[0] = 8;
    m.number_of_pages = 1;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_OK);
    T_CHECK(win[5 * P + 100] == 0);
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.host_aperture_pages_mapped, 3);

    struct vidmm_unmap_cpu_host_aperture_args u = { 2, 0, 3, ap_pages };
    T_ST(ops->unmap_cpu_host_aperture(sg, &u), VIDMM_OK);
    T_ST(ops->unmap_cpu_host_aperture(sg, &u), VIDMM_OK);   /* idempotent */
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.host_aperture_pages_mapped, 0);
    T_EQ(softgpu_check(sg), 0);

    /* Bad arguments. */
    m.number_of_pages = 1;
    m.segment_id = 1;   /* CPU-visible, no host aperture */
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    m.segment_id = 3;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    m.segment_id = 9;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    m.segment_id = 2;
    ap_pages[0] = 256;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    ap_pages[0] = 0;
    seg_pages[0] = 65536;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    seg_pages[0] = 0;
    m.number_of_pages = 0;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    m.number_of_pages = 1;
    m.memory_segment_pages = NULL;
    T_ST(ops->map_cpu_host_aperture(sg, &m), VIDMM_E_INVALID_ARG);
    T_ST(ops->map_cpu_host_aperture(sg, NULL), VIDMM_E_INVALID_ARG);
    u.segment_id = 1;
    T_ST(ops->unmap_cpu_host_aperture(sg, &u), VIDMM_E_INVALID_ARG);
    u.segment_id = 2;
    ap_pages[1] = 300;
    u.number_of_pages = 2;
    T_ST(ops->unmap_cpu_host_aperture(sg, &u), VIDMM_E_INVALID_ARG);
    u.cpu_host_aperture_pages = NULL;
    T_ST(ops->unmap_cpu_host_aperture(sg, &u), VIDMM_E_INVALID_ARG);
    softgpu_get_stats(sg, &st);
    T_EQ_U64(st.host_aperture_pages_mapped, 0);
    T_EQ(softgpu_check(sg), 0);
    softgpu_destroy(sg);
}

static void restart_protocol(void)
{
    uint64_t rs = t_seed() ^ 0x12345;
    struct softgpu *sg = mk("dgpu");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    query_segments(sg, d, &out);
    const uint64_t size = (40ull << 20) + 4096 * 3;   /* 3 chunks */
    uint8_t *src = mdl_pages(size / 4096), *dst = mdl_pages(size / 4096);
    rand_fill(&rs, src, (size_t)size);
    memset(dst, 0, (size_t)size);
    struct vidmm_mdl ms = { src, size / 4096 }, md = { dst, size / 4096 };

    struct vidmm_build_paging_buffer_args a;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_TRANSFER;
    a.u.transfer.transfer_size = size;
    a.u.transfer.source.mdl = &ms;
    a.u.transfer.destination.segment_id = 2;
    a.u.transfer.destination.segment_address = d[1].base_address + (1ull << 30);

    /* A buffer too small for one command: nothing written, offset kept. */
    uint64_t small[2];
    a.dma_buffer = small;
    a.dma_size = sizeof small;
    a.multipass_offset = 0;
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_CHECK(a.dma_buffer == (void *)small);
    T_EQ(a.dma_size, sizeof small);
    T_EQ(a.multipass_offset, 0);

    /* Room for one command per buffer: 3 buffers, 2 restarts. */
    int buffers = 0;
    struct softgpu_stats st0, st1;
    softgpu_get_stats(sg, &st0);
    T_ST(run_op(sg, &a, 48, &buffers), VIDMM_OK);
    T_EQ(buffers, 3);
    softgpu_get_stats(sg, &st1);
    T_EQ_U64(st1.multipass_restarts - st0.multipass_restarts, 2);
    T_EQ_U64(st1.ops[VIDMM_PAGING_TRANSFER] - st0.ops[VIDMM_PAGING_TRANSFER], 1);
    T_EQ_U64(st1.bytes[VIDMM_PAGING_TRANSFER] - st0.bytes[VIDMM_PAGING_TRANSFER], size);

    /* Back to an MDL, with two injected refusals first. */
    a.u.transfer.source.segment_id = 2;
    a.u.transfer.source.segment_address = d[1].base_address + (1ull << 30);
    a.u.transfer.destination.segment_id = 0;
    a.u.transfer.destination.mdl = &md;
    softgpu_inject_insufficient_dma(sg, 2);
    uint64_t buf[16];
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.multipass_offset = 0;
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_CHECK(a.dma_buffer == (void *)buf);
    T_EQ(a.multipass_offset, 0);
    T_ST(run_op(sg, &a, 88, &buffers), VIDMM_OK);   /* two commands per buffer */
    T_EQ(buffers, 2);
    T_CHECK(memcmp(src, dst, (size_t)size) == 0);

    /* A big fill across several buffers, then a check of both ends. */
    struct vidmm_build_paging_buffer_args f;
    memset(&f, 0, sizeof f);
    f.operation = VIDMM_PAGING_FILL;
    f.u.fill.fill_size = size;
    f.u.fill.fill_pattern = 0xC0FFEE11u;
    f.u.fill.destination_segment_id = 2;
    f.u.fill.destination_segment_address = d[1].base_address;
    T_ST(run_op(sg, &f, 32, &buffers), VIDMM_OK);
    T_EQ(buffers, 3);
    uint32_t w[2];
    T_ST(softgpu_read_physical(sg, 2, 0, &w[0], 4), VIDMM_OK);
    T_ST(softgpu_read_physical(sg, 2, size - 4, &w[1], 4), VIDMM_OK);
    T_EQ(w[0], 0xC0FFEE11u);
    T_EQ(w[1], 0xC0FFEE11u);

    /* Overlapping multi-chunk moves inside seg2, up then down, in one
     * buffer and one command per buffer: same bytes as memmove. */
    T_ST(softgpu_write_physical(sg, 2, 0, src, (size_t)size), VIDMM_OK);
    const uint64_t shift = (5ull << 20) + 4096;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t bsz = pass ? 40 : 65536;
        memset(&f, 0, sizeof f);
        f.operation = VIDMM_PAGING_TRANSFER;
        f.u.transfer.transfer_size = size;
        f.u.transfer.source.segment_id = 2;
        f.u.transfer.source.segment_address = d[1].base_address;
        f.u.transfer.destination.segment_id = 2;
        f.u.transfer.destination.segment_address = d[1].base_address + shift;
        T_ST(run_op(sg, &f, bsz, &buffers), VIDMM_OK);
        T_EQ(buffers, pass ? 3 : 1);
        f.u.transfer.source.segment_address = d[1].base_address + shift;
        f.u.transfer.destination.segment_address = d[1].base_address;
        T_ST(run_op(sg, &f, bsz, &buffers), VIDMM_OK);
        memset(dst, 0, (size_t)size);
        T_ST(softgpu_read_physical(sg, 2, 0, dst, (size_t)size), VIDMM_OK);
        T_CHECK(memcmp(src, dst, (size_t)size) == 0);
    }

    /* Map/unmap/discard restart too: no room -> nothing written. */
    memset(&f, 0, sizeof f);
    f.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
    f.u.map_aperture_segment.segment_id = 3;
    f.u.map_aperture_segment.number_of_pages = 1;
    f.u.map_aperture_segment.mdl = &ms;
    f.dma_buffer = small;
    f.dma_size = sizeof small;
    T_ST(ops->build_paging_buffer(sg, &f), VIDMM_E_INSUFFICIENT_DMA_BUFFER);
    T_EQ(f.dma_size, sizeof small);
    /* A restart offset past the end of the request is a bad request. */
    a.dma_buffer = buf;
    a.dma_size = sizeof buf;
    a.multipass_offset = 3;
    T_ST(ops->build_paging_buffer(sg, &a), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_check(sg), 0);
    free(src);
    free(dst);
    softgpu_destroy(sg);
}

static vidmm_status build1(struct softgpu *sg, struct vidmm_build_paging_buffer_args *a)
{
    static uint64_t buf[64];
    a->dma_buffer = buf;
    a->dma_size = sizeof buf;
    a->multipass_offset = 0;
    vidmm_status st = ops->build_paging_buffer(sg, a);
    if (st != VIDMM_OK)
        T_EQ(a->dma_size, sizeof buf);   /* a refused request writes nothing */
    return st;
}

/* The accessors of a device whose copy engine is hung (an injected paging
 * hang that no reset has dropped yet) must return: the hung buffer never
 * runs by itself.  They run on a helper thread so that a regression fails
 * the test (after 5 s) instead of hanging the suite: the reset that
 * follows releases the helper either way. */
struct hung_probe {
    struct softgpu *sg;
    atomic_int done;
    struct softgpu_stats stats;
    uint8_t byte;
    vidmm_status read_st, wait_st;
    int check;
};

static void *hung_probe_main(void *arg)
{
    struct hung_probe *p = arg;
    softgpu_get_stats(p->sg, &p->stats);
    p->read_st = softgpu_read_physical(p->sg, 1, 0, &p->byte, 1);
    p->check = softgpu_check(p->sg);
    (void)softgpu_aperture_entry(p->sg, 3, 0);
    p->wait_st = softgpu_wait_idle(p->sg);
    atomic_store(&p->done, 1);
    return NULL;
}

static void accessors_while_hung(void)
{
    for (int sync = 0; sync < 2; sync++) {
        struct softgpu_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.preset = "wddm1";
        cfg.synchronous = sync;
        struct softgpu *sg = NULL;
        T_ST(softgpu_create(&cfg, &sg), VIDMM_OK);
        if (!sg)
            return;
        ops = softgpu_driver_ops();
        uint8_t zero = 0;
        T_ST(softgpu_write_physical(sg, 1, 0, &zero, 1), VIDMM_OK);
        softgpu_inject_paging_hang(sg, 0);
        /* A FILL of segment 1's first page: the engine hangs on it. */
        static uint64_t buf[512];
        struct vidmm_build_paging_buffer_args a;
        memset(&a, 0, sizeof a);
        a.operation = VIDMM_PAGING_FILL;
        a.u.fill.fill_size = 4096;
        a.u.fill.fill_pattern = 0xabababab;
        a.u.fill.destination_segment_id = 1;
        a.dma_buffer = buf;
        a.dma_size = sizeof buf;
        T_ST(ops->build_paging_buffer(sg, &a), VIDMM_OK);
        struct vidmm_submit_command_args sc = { NULL, buf, (uint32_t)(sizeof buf - a.dma_size), VIDMM_SUBMIT_PAGING, 1 };
        T_ST(ops->submit_command(sg, &sc), VIDMM_OK);

        struct hung_probe p;
        memset(&p, 0, sizeof p);
        p.sg = sg;
        atomic_init(&p.done, 0);
        pthread_t th;
        int started = pthread_create(&th, NULL, hung_probe_main, &p) == 0;
        T_CHECK(started);
        for (int i = 0; started && i < 500 && !atomic_load(&p.done); i++) {
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        T_EQ(atomic_load(&p.done), 1);
        /* The reset drops the hung buffer (and frees a stuck probe). */
        T_ST(ops->reset_from_timeout(sg), VIDMM_OK);
        if (started)
            pthread_join(th, NULL);
        T_ST(p.read_st, VIDMM_OK);
        T_EQ(p.byte, 0);                          /* the hung FILL never ran */
        T_EQ_U64(p.stats.paging_buffers, 0);
        T_EQ(p.check, 0);
        T_ST(p.wait_st, VIDMM_E_STATE);           /* it would never get idle */
        T_ST(softgpu_wait_idle(sg), VIDMM_OK);    /* after the reset it is */
        struct softgpu_reset_stats rs;
        softgpu_get_reset_stats(sg, &rs);
        T_EQ_U64(rs.buffers_dropped, 1);
        softgpu_destroy(sg);
    }
}

static void bad_args(void)
{
    struct softgpu *sg = mk("dgpu");
    struct vidmm_segment_descriptor d[8];
    struct vidmm_query_segment_out out;
    query_segments(sg, d, &out);
    uint8_t *pg = mdl_pages(4);
    struct vidmm_mdl mdl = { pg, 4 }, unaligned = { pg + 1, 3 }, nullmdl = { NULL, 4 };
    struct vidmm_build_paging_buffer_args a;
#define TR(ss, sa, sm, ds, da, dm, sz, mo, want)                                              \
    do {                                                                                      \
        memset(&a, 0, sizeof a);                                                              \
        a.operation = VIDMM_PAGING_TRANSFER;                                                  \
        a.u.transfer.source.segment_id = ss;                                                  \
        a.u.transfer.source.segment_address = sa;                                             \
        a.u.transfer.source.mdl = sm;                                                         \
        a.u.transfer.destination.segment_id = ds;                                             \
        a.u.transfer.destination.segment_address = da;                                        \
        a.u.transfer.destination.mdl = dm;                                                    \
        a.u.transfer.transfer_size = sz;                                                      \
        a.u.transfer.mdl_offset = mo;                                                         \
        T_ST(build1(sg, &a), want);                                                           \
    } while (0)
    uint64_t b1 = d[0].base_address, b2 = d[1].base_address, e1 = b1 + d[0].size;
    TR(1, b1, NULL, 0, 0, &mdl, 4 * 4096, 0, VIDMM_OK);
    TR(1, b1, NULL, 0, 0, &mdl, 4 * 4096 + 1, 0, VIDMM_E_INVALID_ARG);   /* MDL too short */
    TR(1, b1, NULL, 0, 0, &mdl, 4096, 4, VIDMM_E_INVALID_ARG);           /* mdl_offset past the end */
    TR(1, b1, NULL, 0, 0, &mdl, 4096, ~0ull, VIDMM_E_INVALID_ARG);
    TR(1, b1, NULL, 0, 0, NULL, 4096, 0, VIDMM_E_INVALID_ARG);
    TR(1, b1, NULL, 0, 0, &nullmdl, 4096, 0, VIDMM_E_INVALID_ARG);
    TR(1, b1, NULL, 0, 0, &unaligned, 4096, 0, VIDMM_E_INVALID_ARG);
    TR(1, e1 - 4096, NULL, 2, b2, NULL, 4096, 0, VIDMM_OK);
    TR(1, e1 - 4096, NULL, 2, b2, NULL, 4097, 0, VIDMM_E_INVALID_ARG);  /* past the segment end */
    TR(1, e1, NULL, 2, b2, NULL, 1, 0, VIDMM_E_INVALID_ARG);
    TR(2, b2 - 1, NULL, 1, b1, NULL, 1, 0, VIDMM_E_INVALID_ARG);       /* below the base */
    TR(2, b2, NULL, 1, b1, NULL, ~0ull, 0, VIDMM_E_INVALID_ARG);
    TR(4, 0, NULL, 1, b1, NULL, 1, 0, VIDMM_E_INVALID_ARG);            /* no segment 4 */
    TR(1, b1, NULL, 31, 0, NULL, 1, 0, VIDMM_E_INVALID_ARG);

    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_FILL;
    a.u.fill.fill_size = 4096;
    a.u.fill.destination_segment_id = 3;   /* an aperture */
    a.u.fill.destination_segment_address = d[2].base_address;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.fill.destination_segment_id = 1;
    a.u.fill.destination_segment_address = e1 - 4095;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.fill.destination_segment_id = 0;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);

    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_DISCARD_CONTENT;
    a.u.discard_content.segment_id = 2;
    a.u.discard_content.segment_address = b2 + d[1].size;
    a.u.discard_content.size = 1;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);

    uint64_t ap_pages = d[2].size / 4096;
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_MAP_APERTURE_SEGMENT;
    a.u.map_aperture_segment.segment_id = 3;
    a.u.map_aperture_segment.offset_in_pages = ap_pages - 2;
    a.u.map_aperture_segment.number_of_pages = 3;   /* past the aperture end */
    a.u.map_aperture_segment.mdl = &mdl;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.map_aperture_segment.number_of_pages = 2;
    T_ST(build1(sg, &a), VIDMM_OK);
    a.u.map_aperture_segment.mdl_offset = 3;        /* needs MDL pages 3..4 */
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.map_aperture_segment.mdl_offset = 0;
    a.u.map_aperture_segment.number_of_pages = 0;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.map_aperture_segment.number_of_pages = 1;
    a.u.map_aperture_segment.segment_id = 1;        /* a memory segment */
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.map_aperture_segment.segment_id = 3;
    a.u.map_aperture_segment.mdl = NULL;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);

    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
    a.u.unmap_aperture_segment.segment_id = 3;
    a.u.unmap_aperture_segment.offset_in_pages = ap_pages;
    a.u.unmap_aperture_segment.number_of_pages = 1;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.unmap_aperture_segment.offset_in_pages = 0;
    a.u.unmap_aperture_segment.dummy_page = pg + 8;  /* not a page */
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.u.unmap_aperture_segment.segment_id = 2;
    a.u.unmap_aperture_segment.dummy_page = NULL;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);

    /* Operations softgpu does not encode. */
    memset(&a, 0, sizeof a);
    a.operation = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    a.operation = (enum vidmm_paging_operation)77;
    T_ST(build1(sg, &a), VIDMM_E_INVALID_ARG);
    T_ST(ops->build_paging_buffer(sg, NULL), VIDMM_E_INVALID_ARG);

    /* Submitting garbage executes nothing. */
    struct softgpu_stats st0, st1;
    softgpu_get_stats(sg, &st0);
    uint32_t junk[8] = { 0x3, 16, 0, 0, 0, 0, 0, 0 };   /* opcode 3 does not exist */
    struct vidmm_submit_command_args s = { NULL, junk, sizeof junk, VIDMM_SUBMIT_PAGING, 1 };
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    junk[0] = VIDMM_PAGING_FILL;
    junk[1] = 64;                                         /* size past the buffer */
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    junk[1] = 32;
    junk[2] = 1;                                          /* fill seg 1 ... */
    junk[4] = (uint32_t)d[0].size;                        /* ... at its end, 1 byte */
    junk[6] = 1;
    s.dma_buffer_size = 32;
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    s.dma_buffer = NULL;
    T_ST(ops->submit_command(sg, &s), VIDMM_E_INVALID_ARG);
    T_ST(ops->submit_command(sg, NULL), VIDMM_E_INVALID_ARG);
    softgpu_get_stats(sg, &st1);
    T_EQ_U64(st1.paging_buffers, st0.paging_buffers);
    /* An empty buffer is fine. */
    s.dma_buffer_size = 0;
    T_ST(ops->submit_command(sg, &s), VIDMM_OK);

    /* Physical access out of range. */
    uint8_t b[8];
    T_ST(softgpu_read_physical(sg, 0, 0, b, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_physical(sg, 4, 0, b, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_physical(sg, 1, d[0].size - 4, b, 8), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_physical(sg, 1, ~0ull, b, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_physical(sg, 1, 0, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_write_physical(sg, 1, 0, NULL, 1), VIDMM_E_INVALID_ARG);
    T_ST(softgpu_read_physical(NULL, 1, 0, b, 1), VIDMM_E_INVALID_ARG);
    T_EQ(softgpu_check(sg), 0);
    free(pg);
    softgpu_destroy(sg);
}

void suite_softgpu(void);
void suite_softgpu(void)
{
    t_run("softgpu.presets_query", presets_query);
    t_run("softgpu.query_stride_and_bad_args", query_stride_and_bad_args);
    t_run("softgpu.big_is_lazy", big_is_lazy);
    t_run("softgpu.size_overrides", size_overrides);
    t_run("softgpu.describe_allocation", describe_allocation);
    t_run("softgpu.describe_heaps", describe_heaps);
    t_run("softgpu.transfers_preserve_bytes", transfers_preserve_bytes);
    t_run("softgpu.fill_patterns", fill_patterns);
    t_run("softgpu.zero_fill_release", zero_fill_release);
    t_run("softgpu.transfer_streaming", transfer_streaming);
    t_run("softgpu.copy_path_choice", copy_path_choice);
    t_run("softgpu.copy_paths_measured", copy_paths_measured);
    t_run("softgpu.aperture_map_unmap", aperture_map_unmap);
    t_run("softgpu.host_aperture", host_aperture);
    t_run("softgpu.restart_protocol", restart_protocol);
    t_run("softgpu.bad_args", bad_args);
    t_run("softgpu.accessors_while_hung", accessors_while_hung);
}
