/*
 * minidrv.h - a minimal vidmm driver, written to be read
 * (docs/WRITING_A_DRIVER.md walks through it).
 *
 * The "GPU" is host memory: one memory segment (the VRAM, a CPU-visible
 * block of host memory) and one aperture segment (a GART: a table of
 * host page pointers).  Paging buffers are a list of fixed-size commands
 * that a worker thread - the copy engine - executes with memcpy, in
 * submission order, signalling each buffer's fence when it is done.  No
 * GPU virtual memory: the driver reports neither GpuMmu nor IoMmu, so
 * vidmm gives it only the physical paging operations.
 */
#ifndef MINIDRV_H
#define MINIDRV_H

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct minidrv;

/* Deliberate protocol breakages, for proving that the conformance kit
 * (examples/drvcheck) notices them.  A real driver has none of these. */
#define MINIDRV_BREAK_NONE        0u
#define MINIDRV_BREAK_FENCE_EARLY 1u  /* the engine signals a fence before running its buffer */
#define MINIDRV_BREAK_RESTART     2u  /* a restarted operation skips one chunk (bad multipass_offset) */
#define MINIDRV_BREAK_STRIDE      3u  /* the segment query ignores segment_descriptor_stride */

struct minidrv_config {
    uint64_t vram_size;        /* bytes of the memory segment; 0 = 8 MiB (a multiple of 64 KiB) */
    uint64_t aperture_size;    /* bytes of the aperture segment; 0 = 16 MiB (a multiple of 4 KiB) */
    /* The fence callback.  WDDM hands a driver its callbacks in a table
     * (DXGKRNL_INTERFACE) rather than by linking: here too, so a test
     * harness can watch every fence and the driver can be a plug-in
     * with no link-time dependency on vidmm.  A program that just
     * wants vidmm passes vidmm_cb_notify_fence. */
    void (*notify_fence)(struct vidmm_adapter *adapter, uint64_t fence);
    uint32_t broken;           /* MINIDRV_BREAK_* (tests only) */
};

/* The user-mode driver's private data for one allocation: what
 * describe_allocation receives (DxgkDdiCreateAllocation's
 * pPrivateDriverData).  minidrv's format is this one struct. */
#define MINIDRV_ALLOC_VRAM        1u  /* GPU data: resident in VRAM only (evicted to system memory) */
#define MINIDRV_ALLOC_STAGING     2u  /* CPU upload: system memory (the aperture) preferred, VRAM allowed */
#define MINIDRV_ALLOC_RING        3u  /* read by the engine by physical address: AccessedPhysically,
                                         * VRAM or mapped into the aperture */
struct minidrv_alloc_desc {
    uint32_t kind;             /* MINIDRV_ALLOC_* */
    uint32_t cpu_visible;      /* the CPU will lock it */
    uint64_t size;             /* bytes */
};

/* VIDMM_E_INVALID_ARG for a bad config, VIDMM_E_NO_HOST_MEMORY when the
 * host refuses memory or the engine thread. */
vidmm_status minidrv_create(const struct minidrv_config *config, struct minidrv **out);
/* Runs what is still queued, stops the engine thread, frees everything. */
void minidrv_destroy(struct minidrv *md);

/* The ops table and driver pointer for vidmm_adapter_open. */
void minidrv_fill_adapter_create_info(struct minidrv *md, struct vidmm_adapter_create_info *info);
const struct vidmm_driver_ops *minidrv_ops(void);

/* Waits until every submitted buffer has run and its fence was signalled. */
vidmm_status minidrv_wait_idle(struct minidrv *md);

#ifdef __cplusplus
}
#endif
#endif
