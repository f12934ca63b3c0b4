/*
 * softgpu_fixture.h - the softgpu test fixture shared by the end-to-end suites
 * (submit, tdr, residency, device, process, gpuva_badinput, stress,
 * teardown, and iso_common's isolation/teardown fixture): a softgpu
 * adapter opened over a counting host allocator (fault_alloc, so closing
 * can assert nothing leaked), processes with a device, a paging queue and
 * one context, CPU-visible allocations holding a seeded pattern (the
 * bytes gv_pattern writes, and their checksum for GPU CHECKSUM results),
 * make-resident that waits for its paging fence (or not), and CPU reads
 * and writes through a lock.  The benchmarks have their own, assert-free
 * counterpart (bench/bench_softgpu.h).
 *
 * struct softgpu_fx is the whole fixture most suites need; the helpers take
 * the pieces (allocator, softgpu, adapter) rather than it, so a suite can
 * keep its own fixture with whatever else it needs (driver-op wrappers, a
 * VA limit, counters).  Checks inside go through the harness (T_*); a
 * failed step leaves zero handles behind so the test goes on failing
 * cleanly rather than crashing.
 */
#ifndef VIDMM_TEST_SG_FIXTURE_H
#define VIDMM_TEST_SG_FIXTURE_H

#include "harness/fault_alloc.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stddef.h>
#include <stdint.h>

/* The usual fixture: all most suites need. */
struct softgpu_fx {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
};

/* A process with one device, a NORMAL paging queue and one context. */
struct softgpu_proc {
    vidmm_handle proc, dev, queue, ctx;
};

/* cfg for preset with segments 1 and 2 resized (0 = the preset's size);
 * sync picks softgpu's synchronous engine mode. */
void softgpu_fixture_config(struct softgpu_config *cfg, const char *preset, uint64_t seg1, uint64_t seg2, int sync);

/* Initialise fa, create softgpu from cfg and open a vidmm adapter on it
 * over fa (ops NULL: softgpu's own; system_memory_limit 0: the default).
 * 0 on success; on failure nothing is left open and *sg, *a are NULL. */
int softgpu_open(struct fault_alloc *fa, const struct softgpu_config *cfg, const struct vidmm_driver_ops *ops,
            uint64_t system_memory_limit, struct softgpu **sg, struct vidmm_adapter **a);
/* softgpu_open with vidmm_adapter_create_info.max_processes (0 = the default). */
int softgpu_open_bounded(struct fault_alloc *fa, const struct softgpu_config *cfg, const struct vidmm_driver_ops *ops,
                    uint64_t system_memory_limit, uint32_t max_processes, struct softgpu **sg,
                    struct vidmm_adapter **a);
/* softgpu_open into f: dgpu (see softgpu_fixture_config). */
int softgpu_fx_open(struct softgpu_fx *f, uint64_t seg1, uint64_t seg2, int sync);
/* softgpu_open into f: preset with segments 1 and 2 at 64 and 128 MiB (igpu,
 * which has no local segments to resize, as it comes); asynchronous. */
int softgpu_fx_open_preset(struct softgpu_fx *f, const char *preset);

/* Violations vidmm_adapter_check finds (the report goes to stderr), plus
 * softgpu_check's when sg is given. */
int softgpu_checked(struct vidmm_adapter *a, struct softgpu *sg);
/* Asserts the adapter is consistent, closes it, asserts no host block or
 * byte is left on fa, destroys softgpu. */
void softgpu_close(struct fault_alloc *fa, struct softgpu *sg, struct vidmm_adapter *a);
void softgpu_fx_close(struct softgpu_fx *f);

/* Process, device, paging queue and a context of mode on node. */
void softgpu_new_proc(struct vidmm_adapter *a, struct softgpu_proc *p, uint32_t node, uint32_t mode);

/* The softgpu description of an allocation of kind and size bytes in the
 * segments of set with flags (VIDMM_ALLOC_*), the rest zero ... */
void softgpu_desc(struct softgpu_alloc_desc *d, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size,
             uint32_t flags);
/* ... and of a CPU-visible one. */
void softgpu_cpu_desc(struct softgpu_alloc_desc *d, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size);
/* A CPU-visible softgpu allocation of kind in the segments of set,
 * created evicted (resident = 1: created resident), holding seed's
 * pattern (gv_pattern; seed 0: left as created). */
vidmm_handle softgpu_new_alloc(struct vidmm_adapter *a, enum softgpu_alloc_kind kind, uint32_t set, uint64_t size,
                          uint64_t seed, int resident);
/* Map all of h at a VA vidmm picks in proc's address space. */
uint64_t softgpu_map(struct vidmm_adapter *a, vidmm_handle proc, vidmm_handle h, uint64_t size);
/* Make l[0..n) resident (CantTrimFurther) on queue of dev; waits for the
 * paging fence when PENDING.  OK or PENDING is the only success. */
void softgpu_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue, const vidmm_handle *l,
                      uint32_t n);
/* The same without waiting: the paging it queued may still be running
 * when it returns VIDMM_PENDING (the status returned; *fence, when
 * given, is the paging fence value to wait for). */
vidmm_status softgpu_make_resident_nowait(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                     const vidmm_handle *l, uint32_t n, uint64_t *fence);
/* Make-resident and wait, checking nothing (for calls expected to fail,
 * or made under fault injection): the make-resident's status, or the
 * wait's when it was PENDING. */
vidmm_status softgpu_try_make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                  const vidmm_handle *l, uint32_t n);

/* vidmm_allocation_query of h (expected to succeed; zeros when not). */
struct vidmm_allocation_state softgpu_alloc_state(struct vidmm_adapter *a, vidmm_handle h);

/* CPU access through vidmm_allocation_lock/unlock. */
void softgpu_cpu_write(struct vidmm_adapter *a, vidmm_handle h, uint64_t off, const void *src, size_t n);
uint64_t softgpu_cpu_read64(struct vidmm_adapter *a, vidmm_handle h, uint64_t off);

/* softgpu_checksum of the bytes gv_pattern writes for seed (size a
 * multiple of 8; seed 0: zeros): what a GPU CHECKSUM of them must find. */
uint64_t softgpu_pattern_sum(uint64_t size, uint64_t seed);

#endif
