/*
 * gpuva_common.h - helpers shared by the GPU VA test suites: allocations
 * with a seeded byte pattern, and reading them back through softgpu's
 * MMU walker, the oracle that knows nothing of vidmm.
 */
#ifndef VIDMM_TEST_GPUVA_COMMON_H
#define VIDMM_TEST_GPUVA_COMMON_H

#include "vidmm/process.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

/* A CPU-visible allocation of size bytes allowed in the segments of set. */
vidmm_handle gv_alloc_in(struct vidmm_adapter *a, uint32_t set, uint64_t size);
/* The same with the allocation flags given (VIDMM_ALLOC_*). */
vidmm_handle gv_alloc_flags(struct vidmm_adapter *a, uint32_t set, uint32_t flags, uint64_t size);
/* Fill the whole allocation, through the CPU, with the pattern of seed. */
void gv_pattern(struct vidmm_adapter *a, vidmm_handle h, uint64_t seed);
/* Through proc's page tables, [va, va+size) reads bytes [off, off+size)
 * of the pattern of seed (seed 0: reads zeros). */
int gv_gpu_sees(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va, uint64_t off,
                uint64_t size, uint64_t seed);
/* A GPU read of va would fault (a translation probe: not reported to the
 * process, so its device stays usable). */
int gv_gpu_faults(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va);
/* The leaf entry size softgpu's walker finds at va (0: the probe faults).
 * A probe, not an access: no fault is reported to the process. */
uint32_t gv_leaf_page_size(struct vidmm_adapter *a, struct softgpu *sg, vidmm_handle proc, uint64_t va);

#endif
