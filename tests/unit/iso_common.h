/*
 * iso_common.h - fixtures shared by the isolation and teardown suites: a
 * softgpu adapter on a fault_alloc host allocator, processes with a
 * device, a paging queue, physical and virtual contexts and an auxiliary
 * allocation (command buffers and results), private allocations, and GPU
 * CHECKSUM runs in a process's own contexts.  The adapter is opened and
 * closed through softgpu_fixture.h.
 */
#ifndef VIDMM_ISO_COMMON_H
#define VIDMM_ISO_COMMON_H

#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdint.h>

#define MIB (1ull << 20)
#define KIB (1ull << 10)

/* Layout of a process's auxiliary allocation (aperture, AccessedPhysically):
 * command buffers for virtual submissions, then 8-byte results. */
#define AUX_SIZE (256 * KIB)
#define AUX_RES (128 * KIB)
#define MAX_ALLOCS 64u

struct iso_fx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    uint32_t ap;          /* aperture segment id */
    int gpummu;
};

struct iso_proc {
    vidmm_handle proc, dev, queue, vctx, pctx;
    vidmm_handle aux;
    uint64_t aux_va;
};

/* softgpu preset (segment seg resized to seg_size when seg != 0; sizes[]
 * per segment id, 0 = preset) under a vidmm adapter on f->fa; sync picks
 * softgpu's engine mode.  0 on success. */
int iso_open(struct iso_fx *f, const char *preset, uint32_t seg, uint64_t seg_size, int sync);
int iso_open_sizes(struct iso_fx *f, const char *preset, const uint64_t *sizes, int sync);
/* vidmm_adapter_check + softgpu_check violations (reported on stderr). */
int iso_checked(struct iso_fx *f);
/* Checks, closes, and asserts no host block or byte is left. */
void iso_close(struct iso_fx *f);
/* make-resident (waiting for PENDING), expecting want. */
void iso_mr(struct iso_fx *f, struct iso_proc *p, const vidmm_handle *l, uint32_t n, vidmm_status want);
/* A private allocation of p in set (AccessedPhysically when ap, CPU-visible
 * when cpu, created resident when resident), expecting want. */
vidmm_handle iso_palloc(struct iso_fx *f, struct iso_proc *p, uint32_t set, uint64_t size, int ap, int cpu,
                        int resident, vidmm_status want);
uint64_t iso_map(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint64_t size);
/* Process, device, queue, physical copy-node context, virtual graphics
 * context (GpuMmu), and a resident, listed, mapped aux allocation. */
void iso_new_proc(struct iso_fx *f, struct iso_proc *p);
uint64_t iso_aux_read(struct iso_fx *f, struct iso_proc *p, uint64_t off);
void iso_aux_write(struct iso_fx *f, struct iso_proc *p, uint64_t off, const void *src, size_t n);
/* Copy cb into p's aux allocation, submit it on p's virtual context, wait. */
void iso_run_virtual(struct iso_fx *f, struct iso_proc *p, const struct softgpu_cmdbuf *cb);
uint64_t iso_zero_sum(uint64_t size);
uint64_t iso_fill_sum(uint64_t size, uint32_t pattern);
/* CHECKSUM of each h[i] in p's contexts (virtual at va[i] when va != NULL,
 * physical when phys), each must equal want. */
void iso_gpu_sums(struct iso_fx *f, struct iso_proc *p, const vidmm_handle *h, const uint64_t *va, uint32_t n,
                  uint64_t size, int phys, uint64_t want);
void iso_cpu_zero(struct iso_fx *f, struct iso_proc *p, vidmm_handle h, uint64_t size);

#endif
