/*
 * vkgpu_int.h - vkgpu's internal state, shared by its files:
 *
 *   device.c   the Vulkan instance, the physical device chosen, the
 *              logical device, its queue, and the arenas (segments);
 *   paging.c   build_paging_buffer: vidmm's operations into vkgpu's
 *              paging-buffer records (struct vk_rec);
 *   engine.c   submission: records into Vulkan command buffers, host
 *              pages imported for the system side, the timeline
 *              semaphores (fences, and the order of binds with the
 *              queue), the waiter thread that reports fences;
 *   submit.c   physical-mode context submission and patching;
 *   mmu.c      GpuMmu through sparse binding (optional): host page
 *              tables, a sparse buffer per process, its binds, virtual
 *              submission, TRANSFER_VIRTUAL / FILL_VIRTUAL;
 *   vkgpu.c    the ops table, the adapter queries, describe_allocation,
 *              create and destroy;
 *   entry.c    vidmm_driver_entry: vkgpu as the plug-in vkgpu.so.
 */
#ifndef VKGPU_INT_H
#define VKGPU_INT_H

#include "vidmm/vkgpu.h"

#include <pthread.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#define VK_PAGE          4096u
#define VK_PAGE64        65536u            /* a 64 KB page (GpuMmu on 64 KiB sparse blocks, or page64) */
#define VK_MAX_SEG       16u               /* segments vkgpu reports at most */
#define VK_RING          16u               /* submissions in flight */
#define VK_CHUNK         (256u << 10)        /* bytes per paging record (restart granularity) */
#define VK_PAGING_BUFFER (64u << 10)
#define VKGPU_GPUMMU_MAX_ARENA (256ull << 20) /* with GpuMmu (device.c) */
#define VK_ALIGN64K(x)   ((x) & ~((uint64_t)(64u << 10) - 1))

/* A paging-buffer record.  Segment sides name the segment and the byte
 * offset in it; system sides (seg 0) a host address.  MAP: dst = first
 * aperture page, src = host address of the first page, size = pages;
 * UNMAP: the same with src = the dummy page, each entry pointing at it. */
enum vk_rec_op {
    VK_REC_COPY = 1, VK_REC_FILL = 2, VK_REC_MAP = 4, VK_REC_UNMAP = 5, VK_REC_UPT = 6,
    VK_REC_VCOPY = 7, VK_REC_VFILL = 8, VK_REC_VROOT = 9
};
/* UPT (UPDATE_PAGE_TABLE, mmu.c): dst = the table's host address,
 * dst_seg = its level, reserved = 1 for a leaf of 64 KB entries, src =
 * how many encoded entries follow the record (vk_mmu_payload bytes),
 * src_seg = 1 for REPEAT (one entry for all), size = start index << 32 |
 * entry count.
 * VCOPY / VFILL (TRANSFER_VIRTUAL / FILL_VIRTUAL, mmu.c): src = the
 * source VA (VFILL: the 32-bit pattern), dst = the destination VA, size
 * = bytes; always followed by one VROOT record whose dst is the host
 * address of the root table the VAs translate through. */
struct vk_rec {
    uint32_t op;
    uint8_t src_seg, dst_seg;
    uint16_t reserved;
    uint64_t src;                          /* offset, or host address when src_seg is 0; FILL: the pattern */
    uint64_t dst;
    uint64_t size;
};

/* One memory segment: one arena. */
struct vk_segment {
    uint32_t heap, type;
    uint64_t size;
    VkDeviceMemory memory;
    VkBuffer buffer;                       /* over the whole arena */
    uint64_t base;                         /* what vidmm is told: the buffer's device address (or a synthetic base) */
    void *map;                             /* persistent mapping when HOST_VISIBLE | HOST_COHERENT */
    void *host;                            /* CPU device: vkgpu's own host memory, imported (kept across a loss) */
};

/* A host range imported for one submission (VK_EXT_external_memory_host). */
struct vk_import {
    VkDeviceMemory memory;
    VkBuffer buffer;
    uintptr_t base;                        /* aligned host address of offset 0 */
    uint64_t size;
};


/* A process's root table and the sparse buffer that is its GPU view. */
struct vk_root {
    uint64_t table;                        /* host address of the root table */
    uint32_t refs;                         /* tokens bound to it */
    VkBuffer sparse;                       /* made on first use */
    VkSparseMemoryBind *binds;             /* queued for the next vkQueueBindSparse */
    uint32_t nbinds, capbinds;
};

enum vk_job_kind { VK_JOB_PAGING = 1, VK_JOB_CONTEXT = 2 };

/* One submission in flight. */
struct vk_job {
    VkCommandPool pool;
    VkCommandBuffer cb;                    /* the one being recorded: cbs[ncb - 1] */
    VkCommandBuffer *cbs;                  /* a job is cut where sparse binds must run between its commands */
    uint32_t ncb, capcb;
    int dirty;                             /* commands recorded in cb */
    int queued;                            /* parts of the job already on the queue */
    int faulted;                           /* a virtual paging op did not translate: reported before the fence */
    uint64_t fault_context, fault_va;
    enum vk_job_kind kind;
    struct vidmm_adapter *adapter;
    uint64_t fence;                        /* vidmm's paging fence, or the context's */
    uint64_t context;
    uint32_t node;
    int dropped;                           /* a reset abandoned it: report nothing */
    VkSemaphore sem;                       /* which timeline it signals */
    uint64_t value;                        /* and the value */
    struct vk_import *imports;
    uint32_t nimports, capimports;
    struct {                               /* what was recorded, added to vkgpu_device_info at submission */
        uint64_t copy_commands, copy_bytes, fill_commands, fill_bytes, host_imports;
        uint64_t vcopy_bytes, vfill_bytes, faults;
    } stat;
};

struct vkgpu {
    struct vkgpu_config cfg;
    struct vkgpu_device_info info;

    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t family;
    uint32_t type_host_import;             /* memory-type bits usable for host imports, probed lazily */
    uint64_t import_align;                 /* minImportedHostPointerAlignment */
    int have_bda;
    PFN_vkGetMemoryHostPointerPropertiesEXT get_host_ptr_props;

    struct vk_segment seg[VK_MAX_SEG + 1]; /* [1..nseg] memory segments */
    uint32_t nseg;
    /* The aperture segment (id nseg + 1): a GART of host page addresses,
     * read when a buffer is recorded (queue order = execution order, so
     * each buffer sees the mappings of the buffers before it). */
    uint32_t ap_id;
    uint64_t ap_base, ap_pages;
    uint64_t *gart;                        /* host address per page; 0 = never mapped (reads dummy) */
    uint8_t *dummy;                        /* zeroed page for never-mapped entries */

    /* Timelines: paging (signalled with vidmm's paging fence) and
     * contexts (a vkgpu serial: context fences are per context). */
    VkSemaphore paging_sem, context_sem;
    uint64_t context_serial;
    uint64_t last_paging_fence;            /* a new paging timeline after a loss starts here */

    /* GpuMmu through sparse binding (mmu.c). */
    int mmu;
    uint64_t block;                        /* the bind unit and the segments' page: 4 KiB or 64 KiB */
    struct vk_root *root;                  /* nroot slots, refs 0 = free; grows */
    uint32_t nroot, ntoken;
    struct vk_token { uint64_t token, table; } *token;   /* ntoken slots, table 0 = free; grows */
    int binds_pending;                     /* some root has binds queued */
    int bind_failed;
    uint64_t sparse_binds, bind_batches;

    /* Order on the queue (engine.c): every queue operation signals the
     * order timeline with the next serial; a sparse bind waits for the
     * operation before it, an operation after a bind waits for the bind
     * (Vulkan orders binds and submissions only through semaphores).
     * The gate: while a test holds the queue, every operation also
     * waits for gate_value. */
    VkSemaphore order_sem, gate_sem;
    uint64_t order_serial, gate_value;
    int last_was_bind, held;

    /* The ring of submissions.  The lock guards head, count, the jobs'
     * dropped flags, lost and stop; a job's Vulkan objects belong to the
     * submitting thread until counted, then to the waiter. */
    pthread_t waiter;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    struct vk_job ring[VK_RING];
    uint32_t head, count;
    int stop, lost, injected_loss, thread_started;
    uint64_t completed_value;              /* progress seen by the waiter, for query_engine_status */
    uint64_t status_seen;
};

/* device.c */
vidmm_status vk_device_open(struct vkgpu *g, char *err, size_t errsz);
void vk_device_close(struct vkgpu *g);
/* The segment that holds [offset, offset+size) of segment id, or NULL. */
const struct vk_segment *vk_segment(const struct vkgpu *g, uint32_t id, uint64_t offset, uint64_t size);
/* [offset, offset+size) inside memory segment id or the aperture? */
int vk_side_ok(const struct vkgpu *g, uint32_t id, uint64_t offset, uint64_t size);
/* Finds the segment that a device address in [addr, addr+size) lies in:
 * its id, and the offset in it; 0 if none. */
uint32_t vk_find_address(const struct vkgpu *g, uint64_t addr, uint64_t size, uint64_t *offset);

/* Once GpuMmu chose 64 KB pages: the segment bases again, aligned to
 * them, and the aperture above. */
vidmm_status vk_device_rebase(struct vkgpu *g);
/* After a device loss (engine idle, its objects freed): a new logical
 * device with the same arenas.  VIDMM_E_DRIVER_FAILURE when they did not
 * land at the addresses vidmm was told. */
vidmm_status vk_device_recreate(struct vkgpu *g);

/* paging.c */
vidmm_status vk_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args);

/* engine.c */
vidmm_status vk_engine_start(struct vkgpu *g);
void vk_engine_stop(struct vkgpu *g);
/* Takes a free ring slot (waiting for one) with its command buffer
 * begun; NULL when the device is lost. */
struct vk_job *vk_job_begin(struct vkgpu *g);
/* Imports the host pages holding [addr, addr+size) for job j; the
 * buffer and the offset of addr in it. */
vidmm_status vk_job_import(struct vkgpu *g, struct vk_job *j, uintptr_t addr, uint64_t size, VkBuffer *buf,
                           uint64_t *off);
/* Ends, submits and hands the job to the waiter; on failure the slot
 * is given back. */
vidmm_status vk_job_submit(struct vkgpu *g, struct vk_job *j);
void vk_job_abandon(struct vkgpu *g, struct vk_job *j);
vidmm_status vk_submit_command(void *driver, const struct vidmm_submit_command_args *args);
vidmm_status vk_query_engine_status(void *driver, uint32_t node, uint32_t *responsive);
vidmm_status vk_reset_from_timeout(void *driver);
vidmm_status vk_restart_from_timeout(void *driver);
/* Before a command is recorded into j: binds queued since j's last
 * command run first (j is cut there). */
vidmm_status vk_job_flush_binds(struct vkgpu *g, struct vk_job *j);
/* One vkQueueBindSparse in queue order (after the operation before it,
 * before the next), also signalling sig = value when sig is given. */
vidmm_status vk_queue_bind(struct vkgpu *g, const VkSparseBufferMemoryBindInfo *bb, uint32_t n, VkSemaphore sig,
                           uint64_t value);
/* Recorded into j's current command buffer, each after a barrier: a
 * copy (in pieces of step bytes, first to last when forward, else last
 * to first, when step is not 0: overlapping bytes of one memory), a fill. */
void vk_barrier_transfer(VkCommandBuffer cb);
void vk_cmd_copy(struct vk_job *j, VkBuffer sb, uint64_t so, VkBuffer db, uint64_t dof, uint64_t size, uint64_t step,
                 int forward);
void vk_cmd_fill(struct vk_job *j, VkBuffer b, uint64_t off, uint64_t size, uint32_t pattern);
/* Records one run of paging records (or a context command) into j. */
vidmm_status vk_record_run(struct vkgpu *g, struct vk_job *j, const struct vk_rec *r);
vidmm_status vk_engine_remake(struct vkgpu *g, uint64_t paging_value);
void vk_engine_unmake(struct vkgpu *g);

/* mmu.c */
vidmm_status vk_mmu_init(struct vkgpu *g);
void vk_mmu_fini(struct vkgpu *g);
/* Before a lost device is replaced: its sparse buffers go (remade, all
 * bound again, on first use), and the bind fence is made anew after. */
void vk_mmu_device_gone(struct vkgpu *g);
vidmm_status vk_mmu_device_back(struct vkgpu *g);
vidmm_status vk_mmu_query(struct vkgpu *g, const struct vidmm_query_adapter_info_args *args);
void vk_mmu_set_root(void *driver, const struct vidmm_set_root_page_table_args *args);
vidmm_status vk_mmu_build_update(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args);
vidmm_status vk_mmu_apply(struct vkgpu *g, const struct vk_rec *rec, const uint8_t *payload);
uint32_t vk_mmu_payload(const struct vk_rec *r);
vidmm_status vk_mmu_submit_virtual(void *driver, const struct vidmm_submit_context_args *args);
/* The queued binds of every root as one vkQueueBindSparse (signalling
 * sig = value too when sig is given); VIDMM_OK when none are queued. */
vidmm_status vk_mmu_flush_binds(struct vkgpu *g, VkSemaphore sig, uint64_t value);
/* TRANSFER_VIRTUAL / FILL_VIRTUAL (r, then its VROOT record) into j. */
vidmm_status vk_mmu_record_virtual(struct vkgpu *g, struct vk_job *j, const struct vk_rec *r, const struct vk_rec *root);
vidmm_status vk_mmu_build_virtual(struct vkgpu *g, struct vidmm_build_paging_buffer_args *args);
/* Bytes of the UPT, VCOPY or VFILL record at p with what follows it
 * (left bytes from p), or 0 when malformed. */
uint32_t vk_mmu_records_valid(const struct vkgpu *g, const uint8_t *p, uint32_t left);

/* submit.c */
vidmm_status vk_submit_command_physical(void *driver, const struct vidmm_submit_context_args *args);
vidmm_status vk_patch(void *driver, const struct vidmm_patch_args *args);

#endif
