/*
 * vidmm/vkgpu.h - vkgpu, a vidmm driver over a real Vulkan 1.2 device.
 *
 * vkgpu answers include/vidmm/driver.h with a Vulkan physical device's
 * memory: every DEVICE_LOCAL heap becomes memory segments, each backed by
 * one VkDeviceMemory arena with one buffer over all of it, and the
 * paging buffers vidmm builds run as vkCmdCopyBuffer / vkCmdFillBuffer on
 * a transfer-capable queue, their fences signalled through a timeline
 * semaphore (docs/VKGPU.md says what each operation becomes and what
 * Vulkan cannot express).  Any Vulkan 1.2 driver will do: Mesa's
 * lavapipe on a machine without a GPU, or NVIDIA, AMD or Intel hardware.
 *
 * The header needs no Vulkan header: a program that uses vkgpu only
 * through vidmm never sees a Vulkan type.  Link with -lvkgpu -lvulkan
 * (pkg-config vkgpu).
 *
 * Threading: as every vidmm driver, ops of one adapter come from one
 * thread at a time; fences are reported from vkgpu's waiter thread.
 */
#ifndef VIDMM_VKGPU_H
#define VIDMM_VKGPU_H

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vkgpu;

/* The default cap on a heap's segments on a CPU device (lavapipe): it
 * does not enforce its heap and would let vkgpu reserve host memory it
 * never meant to. */
#define VKGPU_DEFAULT_CPU_DEVICE_CAP (256ull << 20)

struct vkgpu_config {
    /* The physical device: a decimal index into vkEnumeratePhysicalDevices'
     * list, or a case-insensitive substring of its name ("llvmpipe",
     * "NVIDIA").  NULL: the environment variable VIDMM_VKGPU_DEVICE, and
     * without it device 0. */
    const char *device;
    /* Bytes of each DEVICE_LOCAL heap vkgpu takes at most (rounded down
     * to 64 KiB).  0: the budget (VK_EXT_memory_budget) or the heap size,
     * and VKGPU_DEFAULT_CPU_DEVICE_CAP on a CPU device. */
    uint64_t heap_cap;
    /* Bytes of each arena (one segment each), rounded down to 64 KiB;
     * 0 = maxMemoryAllocationSize.  Smaller arenas give more segments. */
    uint64_t arena_size;
    /* Bytes of the aperture segment (system pages the device reaches
     * through vkgpu's GART, imported for each transfer); a multiple of
     * 4 KiB, 0 = 256 MiB. */
    uint64_t aperture_size;
    /* Bytes per paging buffer; 0 = 64 KiB. */
    uint32_t paging_buffer_size;
    /* 1: GpuMmu through sparse binding (a sparse buffer per process
     * address space, 256 MiB each; virtual-mode contexts; content moves
     * as TRANSFER_VIRTUAL / FILL_VIRTUAL through the system paging
     * process's own sparse buffer).  Needs sparseBinding,
     * sparseResidencyBuffer and a sparse block of 4 KiB or up to 64 KiB
     * (lavapipe 25: 4 KiB): else vkgpu_create answers
     * VIDMM_E_NOT_SUPPORTED.  A block above 4 KiB gives 64 KB-page
     * memory segments.  0: physical mode only. */
    uint32_t gpummu;
    /* With gpummu: 1 = 64 KB pages (64 KB-page segments, binds of whole
     * 64 KiB) even on a device whose sparse block is 4 KiB, so that the
     * path of 64 KiB-block GPUs runs on lavapipe.  0 = the device's
     * block decides. */
    uint32_t page64;
    /* The fence callbacks: vidmm_cb_notify_fence and
     * vidmm_cb_notify_context_fence for a program that links vidmm; a
     * conformance kit passes its own.  notify_fence is required. */
    void (*notify_fence)(struct vidmm_adapter *adapter, uint64_t fence);
    void (*notify_context_fence)(struct vidmm_adapter *adapter, uint64_t context, uint32_t node, uint64_t fence);
    /* vidmm_cb_notify_page_fault: a virtual paging operation whose pages
     * did not translate (skipped whole, reported before its buffer's
     * fence).  Optional: without it the fault is only counted. */
    void (*notify_page_fault)(struct vidmm_adapter *adapter, uint64_t context, uint64_t va, uint32_t flags);
    /* Optional: receives a message naming what failed when create fails. */
    char *error_message;
    size_t error_message_size;
};

/* VIDMM_E_INVALID_ARG for a bad config or an unknown device,
 * VIDMM_E_NOT_SUPPORTED when no Vulkan loader or driver is found or the
 * device lacks what vkgpu needs (Vulkan 1.2, timeline semaphores,
 * VK_EXT_external_memory_host, a DEVICE_LOCAL heap),
 * VIDMM_E_NO_HOST_MEMORY when memory or the waiter thread is refused. */
vidmm_status vkgpu_create(const struct vkgpu_config *config, struct vkgpu **out);
/* Waits for every submitted buffer, stops the waiter, frees the device. */
void vkgpu_destroy(struct vkgpu *gpu);
/* Returns once every submitted buffer has run and its fence was
 * reported (or dropped by a reset).  Must not be called from inside a
 * fence callback. */
vidmm_status vkgpu_wait_idle(struct vkgpu *gpu);

/* The ops table and driver pointer for vidmm_adapter_open. */
void vkgpu_fill_adapter_create_info(struct vkgpu *gpu, struct vidmm_adapter_create_info *info);
const struct vidmm_driver_ops *vkgpu_driver_ops(void);

/* What vkgpu found and chose, for `vidmm info --driver vkgpu` and the
 * benchmark's report. */
struct vkgpu_device_info {
    char device_name[256];
    char driver_name[256];          /* VkPhysicalDeviceDriverProperties */
    char driver_info[256];
    uint32_t api_version;           /* VK_MAKE_API_VERSION form */
    uint32_t vendor_id, device_id;
    uint32_t device_type;           /* VkPhysicalDeviceType */
    uint32_t queue_family;          /* the paging queue's family */
    uint32_t transfer_only_queue;   /* 1 when that family has no graphics or compute */
    uint32_t segment_count;
    uint32_t memory_budget;         /* VK_EXT_memory_budget sized the segments */
    uint32_t sparse_binding;        /* sparseBinding + sparseResidencyBuffer (GpuMmu possible) */
    uint32_t buffer_device_address; /* segment base addresses are device addresses */
    uint32_t reserved;
    uint64_t max_allocation_size;   /* maxMemoryAllocationSize */
    /* What the queue was given since creation: Vulkan commands recorded
     * for paging and context buffers, and their bytes. */
    uint64_t submissions;
    uint64_t copy_commands, copy_bytes;
    uint64_t fill_commands, fill_bytes;
    uint64_t host_imports;          /* system ranges imported (VK_EXT_external_memory_host) */
    uint64_t device_losses;         /* VK_ERROR_DEVICE_LOST seen (or injected) */
    uint64_t device_recreations;    /* new logical devices made after a loss */
    uint64_t sparse_binds;          /* VkSparseMemoryBind records run (GpuMmu) */
    uint32_t gpummu;                /* GpuMmu through sparse binding is on */
    uint32_t page_size;             /* of the memory segments: 4096, or 65536 (64 KB pages) */
    uint32_t sparse_block;          /* the device's sparse block for a VA buffer (0: no GpuMmu) */
    uint32_t reserved2;
    uint64_t bind_batches;          /* vkQueueBindSparse calls */
    uint64_t virtual_copy_bytes;    /* TRANSFER_VIRTUAL bytes (also in copy_bytes) */
    uint64_t virtual_fill_bytes;    /* FILL_VIRTUAL bytes (also in fill_bytes) */
    uint64_t paging_faults;         /* virtual paging operations skipped: a page did not translate */
};
vidmm_status vkgpu_query_device(const struct vkgpu *gpu, struct vkgpu_device_info *out);

/* The device's physical-device names, one per index, into buf as
 * "INDEX: NAME\n" lines (truncated to size).  VIDMM_E_NOT_SUPPORTED
 * without a Vulkan loader. */
vidmm_status vkgpu_list_devices(char *buf, size_t size);

/* ---- allocations: vkgpu's private driver data ---------------------- */

/* What describe_allocation receives (DxgkDdiCreateAllocation's private
 * data). */
enum vkgpu_alloc_kind {
    VKGPU_ALLOC_LOCAL = 1,      /* device-local data: any memory segment, CPU-visible ones last */
    VKGPU_ALLOC_UPLOAD = 2,     /* CPU-written: CPU-visible segments preferred */
    VKGPU_ALLOC_PHYSICAL = 3    /* read or written by submitted commands by device address
                                 * (AccessedPhysically, patched) */
};
struct vkgpu_alloc_desc {
    uint32_t kind;              /* enum vkgpu_alloc_kind */
    uint32_t cpu_visible;       /* the CPU will lock it: CPU-visible segments only */
    uint64_t size;              /* bytes */
};

/* ---- physical-mode command buffers (submit_command_physical) ------- */

/* A context's DMA buffer is a list of these 32-byte commands; addresses
 * are device addresses that vidmm's patch step writes (the allocation's
 * segment base + offset, which vkgpu keeps equal to the arena's buffer
 * device address plus the offset).  COPY: src, dst, size.  FILL: dst,
 * size (multiple of 4), value = the 32-bit pattern.  WRITE64: dst, value. */
enum vkgpu_cmd_op { VKGPU_CMD_COPY = 1, VKGPU_CMD_FILL = 2, VKGPU_CMD_WRITE64 = 3 };
struct vkgpu_cmd {
    uint32_t op;
    uint32_t reserved;
    uint64_t src;
    uint64_t dst;
    uint64_t size_or_value;     /* COPY, FILL: bytes; WRITE64: the value */
};
/* FILL's pattern rides in the low 32 bits of src (no source). */

/* Byte offsets inside a struct vkgpu_cmd where patch writes an address:
 * give them as patch_offset = command index * 32 + one of these. */
#define VKGPU_CMD_SRC_OFFSET 8u
#define VKGPU_CMD_DST_OFFSET 16u

/* ---- test access ---------------------------------------------------- */

/* Acts as if the device answered VK_ERROR_DEVICE_LOST: what was
 * submitted finishes, nothing submitted afterwards completes, the engine
 * reports itself unresponsive, and vidmm's adapter reset recreates the
 * device (tests).  Call it with no op of this driver running. */
vidmm_status vkgpu_inject_device_loss(struct vkgpu *gpu);

/* hold 1: every queue operation from now on (submissions and sparse
 * binds) waits on a gate the host opens with hold 0, so that a test can
 * have several in flight at once and see their order kept by the
 * device, not by host waits.  While held, nothing that waits for the
 * queue may be called (vkgpu_wait_idle, a reset, destroying a process's
 * last root); vkgpu_destroy opens the gate itself. */
vidmm_status vkgpu_hold_queue(struct vkgpu *gpu, int hold);

#ifdef __cplusplus
}
#endif
#endif
