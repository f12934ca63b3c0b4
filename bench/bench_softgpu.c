/*
 * bench_softgpu.c - see bench_softgpu.h.
 */
#include "bench_softgpu.h"

#include <string.h>

int bench_sg_open(const struct vidmm_driver_ops *ops, struct softgpu **sg, struct vidmm_adapter **a)
{
    *sg = NULL;
    *a = NULL;
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    cfg.synchronous = 1;
    if (softgpu_create(&cfg, sg) != VIDMM_OK)
        return -1;
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(*sg, &ci);
    if (ops)
        ci.ops = ops;
    if (vidmm_adapter_open(&ci, a) != VIDMM_OK) {
        softgpu_destroy(*sg);
        *sg = NULL;
        *a = NULL;
        return -1;
    }
    return 0;
}

int bench_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue, const vidmm_handle *l,
                        uint32_t n)
{
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.paging_queue = queue;
    m.allocations = l;
    m.count = n;
    m.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    vidmm_status st = vidmm_make_resident(a, dev, &m);
    if (st == VIDMM_PENDING)
        st = vidmm_paging_queue_wait(a, queue, m.paging_fence_value, UINT64_MAX);
    return st < 0 ? -1 : 0;
}

void bench_sg_segments(struct softgpu *sg, struct vidmm_segment_descriptor *d)
{
    const struct vidmm_driver_ops *ops = softgpu_driver_ops();
    struct vidmm_query_segment_out out;
    memset(&out, 0, sizeof out);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &out, sizeof out };
    /* First the count, then the descriptors (the driver model's two calls). */
    ops->query_adapter_info(sg, &q);
    out.segment_descriptor = d;
    out.segment_descriptor_stride = sizeof d[0];
    ops->query_adapter_info(sg, &q);
}
