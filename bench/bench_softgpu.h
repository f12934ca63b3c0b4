/*
 * bench_softgpu.h - the softgpu setup shared by the benchmarks that drive
 * a whole adapter (submit, tdr): a dgpu with synchronous engines (work
 * runs inside the submitting call, so figures are the CPU path, not a
 * thread hand-off) under a vidmm adapter on the default host allocator,
 * and make-resident that waits for its paging.  Failures are returned,
 * never asserted: a benchmark reports "setup failed" and goes on.  Also
 * the segment query of those that drive softgpu without an adapter.
 */
#ifndef VIDMM_BENCH_SOFTGPU_H
#define VIDMM_BENCH_SOFTGPU_H

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdint.h>

/* softgpu dgpu (preset segment sizes, synchronous) and a vidmm adapter on
 * it with ops (NULL: softgpu's own).  0 on success; on failure nothing is
 * left open and *sg, *a are NULL. */
int bench_sg_open(const struct vidmm_driver_ops *ops, struct softgpu **sg, struct vidmm_adapter **a);
/* Make l[0..n) resident (CantTrimFurther) on queue of dev, waiting for
 * the paging fence when PENDING.  0 on success. */
int bench_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue, const vidmm_handle *l,
                        uint32_t n);

/* The segment descriptors softgpu gives a driver-model caller
 * (QUERYSEGMENT) into d, which has room for every segment of the preset
 * (a dgpu has 3).  For the benchmarks that drive softgpu without an
 * adapter (paging, pte). */
void bench_sg_segments(struct softgpu *sg, struct vidmm_segment_descriptor *d);

#endif
