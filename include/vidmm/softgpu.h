/*
 * vidmm/softgpu.h - softgpu, the reference GPU driver and device.
 *
 * softgpu implements the driver interface of vidmm/driver.h, and nothing
 * else of vidmm, over a device whose memory is host memory: each memory
 * segment is a lazily reserved host mapping (an 80 GiB segment costs no
 * RAM until touched; an option pre-faults it), its aperture is a real page
 * table of host page pointers, its CPU host aperture is a host window
 * remapped onto segment pages, and its copy engine executes every paging
 * operation on those bytes.  It ships in libsoftgpu, separate from
 * libvidmm.
 *
 * Presets (segment ids in brackets):
 *   dgpu   [1] 256 MiB CPU-visible memory, 64 KiB pages (the BAR)
 *          [2] 4 GiB invisible memory, 64 KiB pages, 16 MiB CPU host aperture
 *          [3] 2 GiB aperture; paging buffers in the aperture
 *   igpu   [1] 2 GiB aperture only: system memory only
 *   wddm1  the four segments of the "describing the GPU address space"
 *          figure: [1] 64 MiB CPU-visible linear, [2] 192 MiB invisible
 *          linear, [3] read-only AGP aperture (64 MiB, given to vidmm as
 *          the OS's AGP aperture), [4] 256 MiB aperture; 4 KiB pages
 *   big    dgpu with an 80 GiB invisible segment (lazy backing)
 * Sizes can be changed per segment (softgpu_config.segment_size).
 *
 * Threading.  By default the copy engine is a thread of its own:
 * submit_command checks a paging buffer, queues it and returns; the
 * engine executes queued buffers in submission order and signals each
 * fence (vidmm_cb_notify_fence) from its thread once the buffer is done.
 * softgpu_config.synchronous = 1 executes the buffer inside
 * submit_command instead, and signals before returning (deterministic
 * tests, replays).  The test accessors below (stats, physical and
 * virtual reads/writes, translate, check) first wait until the engine is
 * idle and hold softgpu's lock while they run, so they always see every
 * buffer submitted before the call finished, and never a half-executed
 * one.  The wait is bounded: an engine that will not get idle by itself
 * - hung on an injected paging hang (until vidmm's adapter reset drops
 * the buffer) or held (softgpu_engine_hold) - is not waited for; the
 * accessor runs at once and sees the device without the hung or held
 * buffers (they have not run).  So a test or tool can inspect a device
 * while an engine is hung.  The driver ops follow driver.h: one thread at
 * a time per device.
 *
 * Deterministic mode (softgpu_config.scheduler = SOFTGPU_SCHED_MANUAL):
 * no engine thread at all; every submitted buffer (paging and contexts')
 * stays queued until the caller runs it with softgpu_step, which executes
 * one buffer of one engine and delivers its fault report and fence on
 * the caller's thread.  softgpu_pending lists what is queued, so a seeded
 * scheduler chooses which engine moves next; the same choices give the
 * same run (docs/SOFTGPU.md "Deterministic mode").  The accessors do not
 * wait in this mode: they see the device without the queued buffers.
 */
#ifndef VIDMM_SOFTGPU_H
#define VIDMM_SOFTGPU_H

#include "vidmm/adapter.h"
#include "vidmm/driver.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct softgpu;

#define SOFTGPU_MAX_SEGMENTS 8u

struct softgpu_config {
    const char *preset;                        /* "dgpu", "igpu", "wddm1", "big" */
    uint64_t segment_size[SOFTGPU_MAX_SEGMENTS + 1]; /* [id] overrides, 0 = preset size */
    int prefault;                              /* touch all segment backing at creation */
    uint32_t paging_buffer_size;               /* 0 = preset (64 KiB) */
    uint32_t mmu_levels;                       /* GpuMmu presets: page-table levels 2..6, 0 = preset default */
    /* 0 (default): paging buffers run on softgpu's copy-engine thread,
     * fences are signalled from that thread.  Non-zero: submit_command
     * executes the buffer and signals its fence before returning, on the
     * caller's thread (no engine thread is created). */
    int synchronous;
    /* Which content-move operations softgpu advertises (the GPUMMUCAPS
     * flag VIDMM_GPUMMU_VIRTUAL_PAGING_OPS): SOFTGPU_PAGING_PRESET keeps
     * the preset's choice (dgpu and big advertise TRANSFER_VIRTUAL /
     * FILL_VIRTUAL, wddm1 does not: a WDDM 1-style driver), PHYSICAL and
     * VIRTUAL force it (VIRTUAL needs a GpuMmu preset).  softgpu executes
     * both families whatever it advertises. */
    uint32_t paging_ops;
    /* Power transitions: bit id set = memory segment id is flagged
     * PRESERVED_DURING_STANDBY (standby_preserved) or also
     * PRESERVED_DURING_HIBERNATE (hibernate_preserved; implies standby).
     * The presets preserve nothing: discrete VRAM without self refresh. */
    uint32_t standby_preserved;
    uint32_t hibernate_preserved;
    /* SOFTGPU_SCHED_*: THREADED (0, the default) keeps what .synchronous
     * says; SYNCHRONOUS is .synchronous = 1; MANUAL queues every buffer
     * until softgpu_step runs it (see "Deterministic mode" above). */
    uint32_t scheduler;
};
#define SOFTGPU_SCHED_THREADED    0u
#define SOFTGPU_SCHED_SYNCHRONOUS 1u
#define SOFTGPU_SCHED_MANUAL      2u
#define SOFTGPU_PAGING_PRESET   0u
#define SOFTGPU_PAGING_PHYSICAL 1u
#define SOFTGPU_PAGING_VIRTUAL  2u

/* VIDMM_E_INVALID_ARG for an unknown preset, a bad size or paging_ops,
 * VIDMM_E_NO_HOST_MEMORY when the host refuses the reservation (or the
 * engine thread cannot be started). */
vidmm_status softgpu_create(const struct softgpu_config *config, struct softgpu **out);
/* Executes every buffer still queued (signalling its fence), stops the
 * engine thread, then releases the device. */
void softgpu_destroy(struct softgpu *sg);

/* Waits until every buffer submitted so far has executed and its fence
 * has been signalled.  Returns at once in synchronous mode.
 * VIDMM_E_STATE, at once, when the engine is hung (an injected paging
 * hang not yet dropped by a reset) or held with buffers queued: nothing
 * would make it idle.  VIDMM_E_INVALID_ARG for NULL.  Must not be called from the thread that
 * signals fences (inside vidmm_cb_notify_fence): it would wait for
 * itself. */
vidmm_status softgpu_wait_idle(struct softgpu *sg);

/* The ops table and driver pointer to give vidmm_adapter_open, plus the
 * AGP aperture the preset declares. */
void softgpu_fill_adapter_create_info(struct softgpu *sg, struct vidmm_adapter_create_info *info);
const struct vidmm_driver_ops *softgpu_driver_ops(void);

/* Names of the presets, NULL-terminated. */
const char *const *softgpu_preset_names(void);

/* Allocation kinds of softgpu's private driver data: what a user-mode
 * driver would send to describe_allocation. */
enum softgpu_alloc_kind {
    SOFTGPU_ALLOC_TEXTURE = 1,   /* GPU-only data: invisible memory preferred, any memory, system last */
    SOFTGPU_ALLOC_CONSTANT,      /* CPU-written, GPU-read: CPU-visible memory preferred */
    SOFTGPU_ALLOC_STAGING,       /* CPU upload/readback: system memory (aperture) preferred */
    SOFTGPU_ALLOC_PRIMARY,       /* scan-out surface: Primary, contiguous in memory */
    SOFTGPU_ALLOC_RING,          /* engine ring / DMA target: AccessedPhysically */
    SOFTGPU_ALLOC_EXPLICIT,      /* use .info as is (tests) */
    SOFTGPU_ALLOC_HEAP           /* a Direct3D 12 heap described by .heap (see below) */
};

/* A Direct3D 12 heap's properties, as a user-mode driver hands them down
 * in its private data (Microsoft's "D3D12_HEAP_PROPERTIES"; the values are
 * those of D3D12_HEAP_TYPE, D3D12_CPU_PAGE_PROPERTY and D3D12_MEMORY_POOL).
 * softgpu turns them into segments the way a driver does
 * (docs/SOFTGPU.md "Direct3D 12 heaps"):
 *   DEFAULT    = CUSTOM, not available, L1 (L0 on an adapter without local memory)
 *   UPLOAD     = CUSTOM, write-combine, L0
 *   READBACK   = CUSTOM, write-back, L0
 *   GPU_UPLOAD = CPU-visible local memory, write-combine (the BAR)
 * L1 is local memory (preferred invisible, then visible, system last), L0
 * system memory (the aperture, then AGP).  Refused (VIDMM_E_INVALID_ARG), as
 * Direct3D 12 refuses them: CUSTOM with an unknown page property or pool; a
 * page property or pool given with another type; L1 with CPU access on an
 * adapter with local memory; L1 or GPU_UPLOAD on one without. */
enum softgpu_heap_type {
    SOFTGPU_HEAP_DEFAULT = 1,
    SOFTGPU_HEAP_UPLOAD = 2,
    SOFTGPU_HEAP_READBACK = 3,
    SOFTGPU_HEAP_CUSTOM = 4,
    SOFTGPU_HEAP_GPU_UPLOAD = 5
};
enum softgpu_cpu_page_property {
    SOFTGPU_CPU_PAGE_UNKNOWN = 0,
    SOFTGPU_CPU_PAGE_NOT_AVAILABLE = 1,
    SOFTGPU_CPU_PAGE_WRITE_COMBINE = 2,
    SOFTGPU_CPU_PAGE_WRITE_BACK = 3
};
enum softgpu_memory_pool {
    SOFTGPU_MEMORY_POOL_UNKNOWN = 0,
    SOFTGPU_MEMORY_POOL_L0 = 1,
    SOFTGPU_MEMORY_POOL_L1 = 2
};
struct softgpu_heap_properties {
    uint32_t type;               /* enum softgpu_heap_type */
    uint32_t cpu_page_property;  /* enum softgpu_cpu_page_property */
    uint32_t memory_pool;        /* enum softgpu_memory_pool */
    uint32_t reserved;           /* 0 */
};

/* The private data is sizeof(struct softgpu_alloc_desc) bytes, or the
 * bytes before .heap (the layout before heaps existed) for every kind but
 * SOFTGPU_ALLOC_HEAP. */
struct softgpu_alloc_desc {
    enum softgpu_alloc_kind kind;
    uint32_t cpu_visible;        /* ask for CPU access (sets VIDMM_ALLOC_CPU_VISIBLE); not with HEAP */
    uint64_t size;
    uint64_t alignment;          /* 0 = what the segments need */
    struct vidmm_allocation_info info; /* SOFTGPU_ALLOC_EXPLICIT only */
    struct softgpu_heap_properties heap; /* SOFTGPU_ALLOC_HEAP only */
};

/* Test and tool access to the device.  Every accessor from here on
 * (except softgpu_inject_insufficient_dma) waits for the engine to be
 * idle, unless it is hung or held, and runs under softgpu's lock (see
 * "Threading" above). */
struct softgpu_stats {
    uint64_t paging_buffers;         /* executed */
    uint64_t ops[17];                /* executed per vidmm_paging_operation */
    uint64_t bytes[17];              /* bytes per operation */
    uint64_t multipass_restarts;     /* INSUFFICIENT_DMA_BUFFER answers given */
    uint64_t aperture_pages_mapped;  /* now */
    uint64_t host_aperture_pages_mapped; /* now */
    uint64_t ptes_written;           /* hardware PTEs stored by UPDATE_PAGE_TABLE */
    uint64_t page_faults;            /* softgpu_translate/read_virtual/write_virtual faults */
    /* TRANSFER_VIRTUAL / FILL_VIRTUAL commands skipped because a page did
     * not translate (a manager or driver bug; reported to vidmm as a page
     * fault of the paging process). */
    uint64_t paging_faults;
    /* Command processor (contexts' work on the nodes). */
    uint64_t command_buffers;        /* finished (run to the end or stopped at a fault) */
    uint64_t commands;               /* executed */
    uint64_t command_faults;         /* buffers stopped by a fault */
};
void softgpu_get_stats(const struct softgpu *sg, struct softgpu_stats *out);

/* The copy engine's path per operation size (TRANSFER, TRANSFER_VIRTUAL):
 * a cached copy or streaming stores, whichever it measured faster for
 * operations of that size on this host (docs/SOFTGPU.md "Copy path").
 * One entry per size class that has copied: operations of min_size up to
 * twice that.  With SOFTGPU_NT_THRESHOLD set the path is fixed: path is
 * SOFTGPU_COPY_FIXED and nothing is measured. */
enum softgpu_copy_path_kind {
    SOFTGPU_COPY_CACHED = 0,
    SOFTGPU_COPY_STREAMING = 1,
    SOFTGPU_COPY_FIXED = 2
};
struct softgpu_copy_path {
    uint64_t min_size;               /* a power of two, from 1 MiB */
    uint32_t copies;                 /* copies of this class so far (wraps) */
    uint32_t path;                   /* enum softgpu_copy_path_kind: the steady choice now */
    uint32_t cached_mbps;            /* measured throughput, MB/s (0 = not yet) */
    uint32_t streaming_mbps;
};
/* Fill out[0..max) with the classes that have copied, smallest first;
 * returns how many there are (may exceed max).  0 for a NULL device. */
uint32_t softgpu_get_copy_paths(const struct softgpu *sg, struct softgpu_copy_path *out, uint32_t max);

/* Fault injection for hang and reset tests (does not wait for idle).
 * The copy engine hangs on the paging buffer submitted `after` buffers
 * from now (0 = the next one): it neither runs it nor signals its fence
 * until vidmm resets the adapter (DxgkDdiResetFromTimeout), which drops
 * it.  Contexts' hangs need no hook: a WAIT on a word nobody writes
 * stalls its node. */
void softgpu_inject_paging_hang(struct softgpu *sg, uint32_t after);

/* Resets and power transitions seen (reset_engine, reset_from_timeout,
 * set_power_state), and buffers they dropped. */
struct softgpu_reset_stats {
    uint64_t engine_resets;          /* reset_engine calls that aborted a buffer */
    uint64_t adapter_resets;
    uint64_t buffers_dropped;        /* paging and context buffers dropped by resets */
    uint64_t power_transitions;
    uint64_t segments_lost;          /* memory segments whose content was destroyed */
    /* Buffers (paging or contexts') submitted while the device was not in
     * D0: the manager must hand no work to a powered-down adapter (they
     * are executed anyway, as a real engine would not be; a checker
     * asserts this stays 0). */
    uint64_t work_while_down;
};
void softgpu_get_reset_stats(const struct softgpu *sg, struct softgpu_reset_stats *out);

/* Read/write device memory as the GPU sees it: a memory segment offset,
 * or an aperture/AGP offset translated through the aperture page table.
 * VIDMM_E_INVALID_ARG when out of range or (aperture) not mapped. */
vidmm_status softgpu_read_physical(struct softgpu *sg, uint32_t segment_id, uint64_t offset, void *dst, size_t size);
vidmm_status softgpu_write_physical(struct softgpu *sg, uint32_t segment_id, uint64_t offset, const void *src, size_t size);

/* The host memory of a memory segment: the bytes the GPU sees at segment
 * offsets 0 .. *size - 1, valid until softgpu_destroy.  For benchmarks
 * and debuggers that need the very memory the copy engine works on (a
 * host copy between two segments is the fair reference for a move
 * between them); vidmm knows nothing of writes made through it.
 * VIDMM_E_INVALID_ARG for NULL pointers or a segment that is not a memory
 * segment (an aperture or AGP segment has no memory of its own). */
vidmm_status softgpu_segment_memory(struct softgpu *sg, uint32_t segment_id, void **host, uint64_t *size);

/* Make the next n build_paging_buffer calls claim the buffer is too small
 * (exercises vidmm's restart protocol). */
void softgpu_inject_insufficient_dma(struct softgpu *sg, uint32_t n);

/* softgpu's MMU (GpuMmu presets).  It walks the device's own page tables
 * - written by UPDATE_PAGE_TABLE paging operations in softgpu's hardware
 * PTE format (docs/SOFTGPU.md) - independently of vidmm, so tests use it
 * as an oracle.  root is the root page table's physical address. */
#define SOFTGPU_ACCESS_READ  0x1u
#define SOFTGPU_ACCESS_WRITE 0x2u
#define SOFTGPU_ACCESS_EXEC  0x4u
struct softgpu_translation {
    uint32_t segment_id;        /* 0 = system memory */
    uint32_t page_size;         /* 4096 or 65536: the leaf entry that mapped it */
    uint64_t offset;            /* segment offset (segment 0: host address) of va's byte */
    int read_only;
    int no_execute;
    int zero;                   /* a Zero entry: reads 0, writes dropped */
};
/* VIDMM_OK, VIDMM_E_PAGE_FAULT (invalid entry, or access not allowed by
 * the entry's protection; nothing is touched), VIDMM_E_INVALID_ARG. */
vidmm_status softgpu_translate(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                               uint32_t access, struct softgpu_translation *out);
/* GPU reads/writes through the MMU, page by page; a fault stops the
 * access before any byte of the faulting page is touched. */
vidmm_status softgpu_read_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                  void *dst, size_t size);
vidmm_status softgpu_write_virtual(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                                   const void *src, size_t size);

/* Invariants of the device (aperture table entries valid, host aperture
 * mappings consistent).  Returns the violation count. */
int softgpu_check(const struct softgpu *sg);

/* ---- engines and the command processor (docs/SOFTGPU.md) ------------ */

/* softgpu has three engines (nodes); each runs virtual- and
 * physical-mode contexts, one buffer at a time in submission order, on
 * its own thread (inside the submit call in synchronous mode). */
#define SOFTGPU_NODES 3u
#define SOFTGPU_NODE_GRAPHICS 0u
#define SOFTGPU_NODE_COMPUTE  1u
#define SOFTGPU_NODE_COPY     2u

/* Command opcodes.  Every command starts with an 8-byte header (opcode
 * 16 bits, flags 16 bits = 0, size 32 bits) followed by 8-byte operands;
 * an address operand is a GPU virtual address (virtual mode) or
 * SOFTGPU_PADDR(segment, offset) (physical mode). */
#define SOFTGPU_CMD_NOP      0x20u   /*  8 bytes */
#define SOFTGPU_CMD_WRITE32  0x21u   /* 24: addr, value (low 32 bits) */
#define SOFTGPU_CMD_WRITE64  0x22u   /* 24: addr, value */
#define SOFTGPU_CMD_COPY     0x23u   /* 32: dst, src, size */
#define SOFTGPU_CMD_FILL     0x24u   /* 32: dst, size, pattern (low 32 bits) */
#define SOFTGPU_CMD_CHECKSUM 0x25u   /* 32: src, size, result: 8 bytes = softgpu_checksum */
#define SOFTGPU_CMD_COMPARE  0x26u   /* 40: a, b, size, result: 8 bytes, 0 = equal, else 1 + first differing offset */
#define SOFTGPU_CMD_SIGNAL   0x27u   /* 24: addr, value: 64-bit store of a fence value */
#define SOFTGPU_CMD_WAIT     0x28u   /* 24: addr, value: stall until the 64-bit word at addr >= value */
/* Byte offset of operand n (0-based) inside a command: where a patch
 * location points. */
#define SOFTGPU_CMD_OPERAND(n) (8u + 8u * (uint32_t)(n))
/* A physical address operand: segment id in bits 56-60, offset below. */
#define SOFTGPU_PADDR(segment, offset) (((uint64_t)(segment) << 56) | (uint64_t)(offset))

/* A command buffer being written: data[0..size) of capacity bytes. */
struct softgpu_cmdbuf {
    void *data;
    uint32_t size;
    uint32_t capacity;
};
/* Append one command; VIDMM_E_INVALID_ARG when cb is NULL or full. */
vidmm_status softgpu_cmd_nop(struct softgpu_cmdbuf *cb);
vidmm_status softgpu_cmd_write32(struct softgpu_cmdbuf *cb, uint64_t addr, uint32_t value);
vidmm_status softgpu_cmd_write64(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value);
vidmm_status softgpu_cmd_copy(struct softgpu_cmdbuf *cb, uint64_t dst, uint64_t src, uint64_t size);
vidmm_status softgpu_cmd_fill(struct softgpu_cmdbuf *cb, uint64_t dst, uint64_t size, uint32_t pattern);
/* src and size must be multiples of 8. */
vidmm_status softgpu_cmd_checksum(struct softgpu_cmdbuf *cb, uint64_t src, uint64_t size, uint64_t result);
vidmm_status softgpu_cmd_compare(struct softgpu_cmdbuf *cb, uint64_t a, uint64_t b, uint64_t size, uint64_t result);
vidmm_status softgpu_cmd_signal(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value);
vidmm_status softgpu_cmd_wait(struct softgpu_cmdbuf *cb, uint64_t addr, uint64_t value);
/* What CHECKSUM computes over size bytes (a multiple of 8): FNV-1a over
 * 64-bit little-endian words, h = (h ^ w) * 0x100000001b3 from
 * 0xcbf29ce484222325. */
uint64_t softgpu_checksum(const void *data, uint64_t size);

/* ---- deterministic mode (SOFTGPU_SCHED_MANUAL) ------------------------- */

/* The copy engine that runs paging buffers, for softgpu_step and
 * softgpu_pending (nodes are 0 .. SOFTGPU_NODES - 1). */
#define SOFTGPU_ENGINE_PAGING VIDMM_PAGING_ENGINE
struct softgpu_pending {
    uint32_t engine;      /* a node, or SOFTGPU_ENGINE_PAGING */
    uint32_t queued;      /* buffers queued (the head included) */
    int stuck;            /* the head cannot run: an injected paging hang, or a node's WAIT not yet met */
};
/* Fill out[0..max) with the engines that have queued buffers (the copy
 * engine first, then nodes in order); returns how many there are.  0 in
 * the other modes. */
uint32_t softgpu_pending(struct softgpu *sg, struct softgpu_pending *out, uint32_t max);
/* Run one buffer of engine: the copy engine's oldest (its fault report
 * and fence delivered to vidmm before returning), or a node's head until
 * it ends, faults or stalls on a WAIT.  VIDMM_OK when something moved,
 * VIDMM_E_STATE when nothing could (empty, hung, stalled as before, or
 * not manual mode), VIDMM_E_INVALID_ARG for a bad engine.  Must not be
 * called from inside a driver op. */
vidmm_status softgpu_step(struct softgpu *sg, uint32_t engine);
/* Called before each paging buffer runs in manual mode, once per range
 * its TRANSFER and FILL commands will read or write: segment_id 0 = host
 * memory at address (aperture pages are resolved to the host pages they
 * map), else a memory segment's offset.  Lets a harness verify that the
 * memory a buffer touches is still owned.  NULL removes it. */
void softgpu_set_touch_hook(struct softgpu *sg,
                            void (*fn)(void *ctx, uint32_t segment_id, uint64_t address, uint64_t size, int write),
                            void *ctx);

#ifdef __cplusplus
}
#endif
#endif
