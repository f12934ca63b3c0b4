/*
 * softgpu_int.h - softgpu's internal state, shared by its source files.
 *
 * One struct softgpu holds the preset's segments.  A memory segment is a
 * memfd mapped once (MAP_SHARED|MAP_NORESERVE: sparse until touched); an
 * aperture or AGP segment is a GART (one host page pointer per 4 KiB page,
 * NULL meaning softgpu's own dummy page); a segment with a CPU host
 * aperture also owns a reserved host window remapped page by page onto
 * the memfd.  The copy engine (engine.c) is a bounded queue of
 * submitted paging buffers plus the thread that executes them.  Nothing
 * here is public: tests include it for white-box checks
 * (softgpu_aperture_entry, softgpu_host_aperture_base, the engine hooks).
 */
#ifndef SOFTGPU_INT_H
#define SOFTGPU_INT_H

#include "vidmm/softgpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SOFTGPU_PAGE_4K  4096u
#define SOFTGPU_PAGE_64K 65536u
#define SOFTGPU_KIB(x) ((uint64_t)(x) << 10)
#define SOFTGPU_MIB(x) ((uint64_t)(x) << 20)
#define SOFTGPU_GIB(x) ((uint64_t)(x) << 30)

/* Largest piece one paging-buffer command moves or fills. */
#define SOFTGPU_CHUNK SOFTGPU_MIB(16)

struct softgpu_segment {
    uint32_t flags;               /* VIDMM_SEGMENT_* */
    uint32_t page_size;           /* 4 KiB or 64 KiB */
    uint64_t base_address;        /* GPU physical base */
    uint64_t size;                /* bytes */
    uint64_t commit_limit;
    int is_memory;                /* neither APERTURE nor AGP: has backing */

    /* Memory segments. */
    int memfd;                    /* -1 when none */
    uint8_t *mem;                 /* mapping of the whole memfd */
    int prefaulted;               /* populated at creation: zero fills store, never release */

    /* Aperture and AGP segments: the GART. */
    void **gart;                  /* size / 4 KiB entries; NULL = softgpu dummy page */
    uint64_t *gart_mapped;        /* bitmap: entry holds an MDL page */
    uint64_t gart_pages;
    size_t gart_bytes;            /* of the gart mapping */

    /* CPU host aperture (SUPPORTS_CPU_HOST_APERTURE). */
    uint8_t *host_ap;             /* reserved window, host_ap_pages * page_size */
    uint32_t host_ap_pages;
    int64_t *host_ap_map;         /* segment page shown by each window page, -1 = none */
};

/* Paging-buffer command header (paging.c, mmu.c): every command starts
 * with it; size includes the header and is a multiple of 8. */
struct softgpu_cmd_hdr {
    uint16_t opcode;           /* the vidmm_paging_operation it encodes */
    uint16_t flags;            /* SOFTGPU_CMDF_* */
    uint32_t size;
};
#define SOFTGPU_CMDF_FIRST 0x1u     /* first command of an operation (counts the op) */
/* Bits 8-13: the operation's size class (floor(log2(size))) for the copy
 * path's choice (copy.c); TRANSFER and TRANSFER_VIRTUAL only. */
#define SOFTGPU_CMDF_CLASS_SHIFT 8u
#define SOFTGPU_CMDF_CLASS_MASK 0x3F00u
#define SOFTGPU_CMDF_CLASS(c) ((uint16_t)(((unsigned)(c) << SOFTGPU_CMDF_CLASS_SHIFT) & SOFTGPU_CMDF_CLASS_MASK))
#define SOFTGPU_CMDF_CLASS_OF(f) (((unsigned)(f) & SOFTGPU_CMDF_CLASS_MASK) >> SOFTGPU_CMDF_CLASS_SHIFT)

/* The copy path's measurements (copy.c). */
enum { SOFTGPU_PATH_CACHED = 0, SOFTGPU_PATH_STREAM = 1 };
#define SOFTGPU_COPY_CLASSES 64u
#define SOFTGPU_COPY_TUNE_MIN 20u   /* copies and operations below 1 MiB stay memcpy, unmeasured */
struct softgpu_copy_class {
    _Atomic uint32_t copies;
    _Atomic uint32_t next_explore; /* copy number of the next run on the slower path */
    _Atomic uint32_t period;       /* copies between such runs; 0 = still learning */
    _Atomic uint32_t explore_path; /* the path of the run under way */
    _Atomic uint64_t run_ns;       /* its copies' time so far */
    _Atomic uint32_t mbps[2];  /* estimated throughput per path, MB/s; 0 = not measured */
};
struct softgpu_copy_tuner {
    int fixed;                 /* SOFTGPU_NT_THRESHOLD given: no measuring */
    uint64_t threshold;        /* then: copies of at least this many bytes stream */
    struct softgpu_copy_class cls[SOFTGPU_COPY_CLASSES];
};

/* softgpu's hardware PTE (8 bytes, docs/SOFTGPU.md "MMU").  Deliberately
 * not the neutral vidmm_pte layout: the driver must convert. */
#define SOFTGPU_HWPTE_VALID     0x1ull
#define SOFTGPU_HWPTE_ZERO      0x2ull
#define SOFTGPU_HWPTE_RO        0x4ull
#define SOFTGPU_HWPTE_NX        0x8ull
#define SOFTGPU_HWPTE_CC        0x10ull
#define SOFTGPU_HWPTE_PT64K     0x20ull                 /* level-1 entry: its leaf holds 64 KB entries */
#define SOFTGPU_HWPTE_FRAME_SHIFT 12u
#define SOFTGPU_HWPTE_FRAME_MASK  0x00FFFFFFFFFFF000ull /* bits 12-55: byte address >> 12 */
#define SOFTGPU_HWPTE_SEG_SHIFT 56u
#define SOFTGPU_HWPTE_SEG_MASK  (0x1Full << SOFTGPU_HWPTE_SEG_SHIFT)
#define SOFTGPU_HWPTE_RESERVED  (0xFC0ull | 0xE000000000000000ull) /* bits 6-11, 61-63: must be 0 */

/* What a neutral PTE with given flags becomes in a table of a given level
 * (mmu.c): the hardware bits that do not depend on the frame, and the
 * frames allowed (frame - lo <= span, frame & align == 0) when the entry
 * carries one (addr). */
struct softgpu_pte_class {
    uint64_t flags;
    uint64_t tmpl;
    uint64_t lo, span, align;
    int addr;
};

/* The GpuMmu geometry (mmu.c).  levels == 0: no GpuMmu (IoMmu preset). */
struct softgpu_mmu {
    uint32_t levels;
    uint32_t bits[VIDMM_MAX_PAGE_TABLE_LEVELS];    /* index bits, [0] = leaf */
    uint32_t shift[VIDMM_MAX_PAGE_TABLE_LEVELS];   /* VA bit where level's index starts */
    uint64_t table_size[VIDMM_MAX_PAGE_TABLE_LEVELS]; /* reported bytes */
    uint32_t va_bits;
    uint32_t pt_segment;                           /* where every level's tables live */
    uint32_t leaf64_bits;                          /* index bits of a 64 KB-entry leaf */
    uint64_t leaf64_size;                          /* reported bytes */
    int root_resizable;                            /* 2 levels: root sized by get_root_page_table_size */
    /* The last class build_paging_buffer computed, for the table kind
     * last_key = 1 + 2 * level + (64 KB leaf); 0: none.  Updates nearly
     * always repeat their flags, and a class depends only on the geometry
     * and the segment sizes, which never change.  Like stats, it is
     * written by build_paging_buffer, whose calls vidmm serialises. */
    struct softgpu_pte_class last;
    uint32_t last_key;
};

#define SOFTGPU_MAX_ROOTS 256u

/* Entries of the copy engine's queue.  vidmm keeps at most 16 buffers in
 * flight per adapter (its ring's records), so it never waits here; a
 * client that submits faster than the engine runs waits for a free entry,
 * as on a full hardware ring. */
#define SOFTGPU_QUEUE_LEN 64u

/* One submitted paging buffer.  The submitter keeps the bytes untouched
 * until the fence is signalled (driver.h), so the engine reads them in
 * place: nothing is copied or allocated on the submit path. */
struct softgpu_job {
    const uint8_t *buf;
    uint32_t size;
    uint64_t fence;
    struct vidmm_adapter *adapter;   /* for vidmm_cb_notify_fence; NULL: nobody to tell */
};

/* The copy engine (engine.c).  lock guards every field below, the device
 * state the engine mutates (memory, GART, stats, roots) whenever the
 * engine is idle, and sg->adapter / sg->roots.  While busy, the engine
 * executes one job without the lock; nobody else touches device state
 * then, because every accessor waits for idle while holding the lock. */
struct softgpu_engine {
    pthread_mutex_t lock;
    pthread_cond_t work;          /* engine: a job was queued, the hold ended, or stop */
    pthread_cond_t done;          /* submitters: an entry is free; waiters: maybe idle */
    pthread_t thread;
    int synchronous;              /* no thread: submit executes in place */
    int manual;                   /* no thread: jobs wait for softgpu_step (SOFTGPU_SCHED_MANUAL) */
    int lock_ok, work_ok, done_ok, running;   /* what init created (for fini) */
    int stop;                     /* destroy: drain the queue, then exit */
    int busy;                     /* a job is executing (or its fence being signalled) */
    int hold;                     /* test hook: do not start new jobs */
    uint32_t head, count;         /* queue[head] is the oldest of count jobs */
    uint32_t blocked;             /* submitters waiting for a free entry (test hook) */
    void (*observer)(void *ctx, uint64_t fence);   /* test hook, called before each fence */
    void *observer_ctx;
    void (*touch)(void *ctx, uint32_t segment_id, uint64_t address, uint64_t size, int write); /* manual: before each job */
    void *touch_ctx;
    struct softgpu_job queue[SOFTGPU_QUEUE_LEN];
    /* Hang injection (softgpu_inject_paging_hang): hang_armed with
     * hang_after buffers to go; hung while the engine sits on one. */
    int hang_armed;
    uint32_t hang_after;
    int hung;
    int drop_current;             /* adapter reset: the job being held is dropped */
    struct softgpu_job hung_job;       /* synchronous mode: the job hung on */
};

struct softgpu {
    char preset[16];
    uint32_t nb_segment;
    struct softgpu_segment seg[SOFTGPU_MAX_SEGMENTS + 1]; /* [1..nb_segment] */
    uint32_t paging_buffer_segment_id;
    uint32_t paging_buffer_size;
    struct vidmm_driver_caps caps;
    int virtual_paging;           /* GPUMMUCAPS advertises TRANSFER_VIRTUAL / FILL_VIRTUAL */
    uint64_t agp_base, agp_size;  /* 0/0 without an AGP segment */

    /* Segment ids per role (0 = none), for describe_allocation. */
    uint32_t vis_id, invis_id, ap_id, agp_id;

    void *dummy_page;             /* 4 KiB of zeros */
    struct softgpu_copy_tuner copy_tuner; /* cached or streaming copies, per operation size (copy.c) */
    uint32_t inject_insufficient;
    struct softgpu_stats stats;
    struct softgpu_reset_stats reset_stats;   /* guarded by the engine lock */
    uint32_t power_state;
    struct softgpu_mmu mmu;
    /* Roots bound by set_root_page_table, so a fault can be reported to
     * the manager for the context that owns the root (DxgkCbNotifyInterrupt
     * PAGE_FAULTED).  adapter comes with every submission. */
    struct vidmm_adapter *adapter;
    struct softgpu_root_binding {
        uint32_t segment_id;
        uint32_t num_entries;     /* the GPU faults on root indices at or past it */
        uint64_t offset;
        uint64_t context;
    } roots[SOFTGPU_MAX_ROOTS];
    uint32_t nroots;
    struct softgpu_engine engine;
    struct softgpu_cmdproc *cp;        /* the engines that run contexts' command buffers (cmdproc.c) */
};

void softgpu_set_root_page_table(void *driver, const struct vidmm_set_root_page_table_args *args);
uint64_t softgpu_get_root_page_table_size(void *driver, uint32_t *number_of_pte);

/* engine.c: the copy engine.  init starts the thread (unless
 * synchronous); fini executes what is queued, then joins it.  submit
 * takes an already validated buffer.  softgpu_lock_idle takes the lock once
 * the engine is idle (queue empty, nothing executing): execution on the
 * nodes and power transitions run between it and softgpu_unlock. */
/* Engine modes (softgpu_config.scheduler): a thread per engine, inside
 * submit, or queued until the harness steps them (softgpu_step). */
#define SOFTGPU_MODE_THREADED 0
#define SOFTGPU_MODE_SYNCHRONOUS 1
#define SOFTGPU_MODE_MANUAL 2
vidmm_status softgpu_engine_init(struct softgpu *sg, int mode);
void softgpu_engine_fini(struct softgpu *sg);
vidmm_status softgpu_engine_submit(struct softgpu *sg, const struct softgpu_job *job);
void softgpu_lock_idle(const struct softgpu *sg);
/* The test accessors' variant: does not wait for a hung or held engine
 * (engine.c). */
void softgpu_lock_access(const struct softgpu *sg);
void softgpu_lock(const struct softgpu *sg);
/* A buffer reached an engine: counted in work_while_down when the device
 * is not in D0 (engine.c). */
void softgpu_note_work(struct softgpu *sg);
void softgpu_unlock(const struct softgpu *sg);

/* memory.c */
vidmm_status softgpu_memory_create(struct softgpu_segment *s, uint32_t id, int prefault);
void softgpu_memory_destroy(struct softgpu_segment *s);
uint64_t softgpu_available_ram(void);

/* aperture.c: the GART */
vidmm_status softgpu_gart_create(struct softgpu_segment *s);
void softgpu_gart_destroy(struct softgpu_segment *s);
void softgpu_gart_map(struct softgpu *sg, struct softgpu_segment *s, uint64_t first, uint64_t count, uint8_t *pages);
void softgpu_gart_unmap(struct softgpu *sg, struct softgpu_segment *s, uint64_t first, uint64_t count, void *dummy);
int softgpu_gart_is_mapped(const struct softgpu_segment *s, uint64_t page);
int softgpu_gart_check(const struct softgpu *sg, const struct softgpu_segment *s, uint64_t *mapped);

/* host_aperture.c */
vidmm_status softgpu_host_aperture_create(struct softgpu_segment *s);
void softgpu_host_aperture_destroy(struct softgpu_segment *s);
int softgpu_host_aperture_check(const struct softgpu_segment *s, uint64_t *mapped);
vidmm_status softgpu_map_cpu_host_aperture(void *driver, const struct vidmm_map_cpu_host_aperture_args *args);
vidmm_status softgpu_unmap_cpu_host_aperture(void *driver, const struct vidmm_unmap_cpu_host_aperture_args *args);

/* Host bytes of [offset, offset+len) in segment s as the GPU sees them:
 * returns a pointer valid for *run bytes (<= len; a memory segment gives
 * the whole range, an aperture up to the end of one 4 KiB page).  For an
 * aperture page that is not mapped, the entry's dummy page is returned
 * and *mapped is set to 0. */
uint8_t *softgpu_resolve(struct softgpu *sg, const struct softgpu_segment *s, uint64_t offset, uint64_t len,
                    uint64_t *run, int *mapped);

/* query.c */
vidmm_status softgpu_query_adapter_info(void *driver, const struct vidmm_query_adapter_info_args *args);
vidmm_status softgpu_describe_allocation(void *driver, struct vidmm_describe_allocation_args *args);

/* A GPU page fault to report to the manager (DxgkCbNotifyInterrupt
 * PAGE_FAULTED): found while softgpu's lock is held (or while the engine
 * executes) and sent once it is dropped, before the buffer's fence. */
struct softgpu_fault {
    struct vidmm_adapter *adapter;    /* walker accessors: NULL = nothing to report */
    uint64_t context, va;
    uint32_t flags;
    int pending;                      /* executor: a paging command faulted (adapter = the job's) */
};

/* paging.c */
vidmm_status softgpu_build_paging_buffer(void *driver, struct vidmm_build_paging_buffer_args *args);
vidmm_status softgpu_submit_command(void *driver, const struct vidmm_submit_command_args *args);
/* The executor, shared by both engine modes: runs a buffer that passed
 * validation at submission, and counts it.  A paging command that
 * faulted leaves its report in *fault (the first one; context 0 = no
 * binding to report to); the caller sends it to adapter without locks. */
void softgpu_execute_buffer(struct softgpu *sg, const uint8_t *buf, uint32_t size, struct softgpu_fault *fault);
void softgpu_fill32(uint8_t *dst, uint64_t size, uint32_t pattern);
/* The memory a validated paging buffer's COPY and FILL commands will
 * touch, one call of fn per range (softgpu_set_touch_hook). */
void softgpu_touch_buffer(struct softgpu *sg, const uint8_t *buf, uint32_t end,
                     void (*fn)(void *, uint32_t, uint64_t, uint64_t, int), void *ctx);
/* Fill size bytes at host address dst with pattern (softgpu_fill32), except
 * that a large zero fill inside a memory segment that was not prefaulted
 * releases its whole pages instead of writing them (paging.c). */
void softgpu_fill(struct softgpu *sg, uint8_t *dst, uint64_t size, uint32_t pattern);
/* copy.c: the copy engine's host copy and its per-size path choice. */
void softgpu_copy_tuner_init(struct softgpu_copy_tuner *t);
/* floor(log2(size)) (0 for 0 and 1): an operation's size class. */
unsigned softgpu_copy_size_class(uint64_t size);
/* The path for a copy of n bytes of an operation of size class cls:
 * path SOFTGPU_PATH_CACHED / SOFTGPU_PATH_STREAM; time: time it and report it with
 * softgpu_copy_record; sample: its timing updates the path's estimate;
 * explore: a copy of a run on the path that is not the current choice
 * (last: the run's last copy); index: its number in the class. */
struct softgpu_copy_ticket {
    int path, time, sample, explore, last;
    uint32_t index;
};
struct softgpu_copy_ticket softgpu_copy_choose(struct softgpu_copy_tuner *t, unsigned cls, uint64_t n);
/* Copies between two runs on the slower path, for a run of copies
 * copies that took run_ns against copy_ns per copy on the chosen path. */
uint32_t softgpu_copy_period(uint64_t run_ns, uint64_t copy_ns, unsigned copies);
/* Copies per learning or exploring run for size class cls. */
unsigned softgpu_copy_run(unsigned cls);
/* A timed copy: n bytes in ns nanoseconds, as the ticket said. */
void softgpu_copy_record(struct softgpu_copy_tuner *t, unsigned cls, struct softgpu_copy_ticket k, uint64_t n, uint64_t ns);
/* A class's copies and estimates (MB/s, 0 = not measured); returns the
 * path its next steady copy takes, -1 under a fixed threshold. */
int softgpu_copy_class_info(const struct softgpu_copy_tuner *t, unsigned cls, uint32_t *copies, uint32_t *cached_mbps,
                       uint32_t *stream_mbps);
/* Copy n bytes between host buffers that do not overlap, for an
 * operation of size class op_class (softgpu_copy_size_class of its size). */
void softgpu_copy(struct softgpu *sg, uint8_t *dst, const uint8_t *src, uint64_t n, unsigned op_class);

/* ASan does not see the SSE2 streaming stores of the copy and fill
 * paths: under ASan, check the ranges as its memcpy interceptor would,
 * so a copy or fill into (or out of) freed memory - a manager that
 * freed pages its paging still names - is reported where it happens.
 * Nothing without ASan. */
#if defined(__SANITIZE_ADDRESS__)
#define SOFTGPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOFTGPU_ASAN 1
#endif
#endif
#ifdef SOFTGPU_ASAN
#include <sanitizer/asan_interface.h>
static inline void softgpu_asan_check(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    volatile uint8_t *w = __asan_region_is_poisoned(dst, (size_t)n);
    if (w)
        *w = 0;   /* reported as the write it is */
    const volatile uint8_t *r = src ? __asan_region_is_poisoned((void *)(uintptr_t)src, (size_t)n) : NULL;
    if (r)
        (void)*r;
}
#else
static inline void softgpu_asan_check(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    (void)dst;
    (void)src;
    (void)n;
}
#endif

#define SOFTGPU_ROOT_MAX_BITS 20u   /* a resizable root: up to 1 M entries (8 MiB) */

/* Table geometry and placement, shared by the paging commands (mmu.c)
 * and the walker (mmu_walk.c). */
static inline uint64_t softgpu_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static inline uint64_t softgpu_tsize(const struct softgpu_mmu *m, uint32_t level, int leaf64)
{
    return leaf64 ? m->leaf64_size : m->table_size[level];
}

/* A memory segment holding a whole table of bytes at a 4 KiB-aligned
 * offset. */
static inline struct softgpu_segment *softgpu_table_seg(struct softgpu *sg, uint32_t id, uint64_t offset, uint64_t bytes)
{
    if (id < 1 || id > sg->nb_segment)
        return NULL;
    struct softgpu_segment *s = &sg->seg[id];
    if (!s->is_memory || (offset & (SOFTGPU_PAGE_4K - 1)) || offset > s->size || bytes > s->size - offset)
        return NULL;
    return s;
}

/* mmu.c: GpuMmu geometry, UPDATE_PAGE_TABLE / FLUSH_TLB; mmu_walk.c: the walker */
vidmm_status softgpu_mmu_init(struct softgpu *sg, uint32_t levels);
vidmm_status softgpu_query_gpummu_caps(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args);
vidmm_status softgpu_query_page_table_level(struct softgpu *sg, const struct vidmm_query_adapter_info_args *args);
vidmm_status softgpu_build_update_page_table(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args);
vidmm_status softgpu_build_flush_tlb(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args);
/* Submitted buffers: the run of consecutive UPDATE_PAGE_TABLE / FLUSH_TLB
 * commands at p (p holds one), at most left bytes.  validate_run returns
 * the bytes of the run, or 0 when a command of it is malformed; exec_run
 * executes an already validated run and returns its bytes. */
uint32_t softgpu_mmu_validate_run(struct softgpu *sg, const uint8_t *p, uint32_t left);
uint32_t softgpu_mmu_exec_run(struct softgpu *sg, const uint8_t *p, uint32_t left);
/* The binding of a root (set_root_page_table): its NumEntries (the full
 * root when unbound) and context token (0 when unbound). */
void softgpu_mmu_binding(const struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t *entries,
                    uint64_t *context);
/* One run of a GPU virtual access, for the copy engine: va translated
 * through root (NumEntries root_entries) for access, and extended over
 * the next entries of the same leaf while the host bytes stay
 * contiguous, up to len.  VIDMM_E_PAGE_FAULT (fault_flags set, nothing
 * touched) when va does not translate. */
struct softgpu_run {
    uint8_t *host;             /* NULL for a Zero page (reads 0, writes dropped) */
    uint64_t run;              /* bytes from va, <= len */
    int zero;
    uint32_t fault_flags;      /* VIDMM_FAULT_* on a fault */
};
vidmm_status softgpu_mmu_run(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t root_entries,
                        uint64_t va, uint64_t len, uint32_t access, struct softgpu_run *r);

/* vpaging.c: TRANSFER_VIRTUAL and FILL_VIRTUAL (build, validate, execute). */
vidmm_status softgpu_build_virtual(struct softgpu *sg, struct vidmm_build_paging_buffer_args *args);
uint32_t softgpu_validate_virtual(struct softgpu *sg, const uint8_t *p, uint32_t left);
/* Executes the validated command at p, merged with the following ones
 * of the same operation (at most left bytes); returns the bytes used. */
uint32_t softgpu_exec_virtual(struct softgpu *sg, const uint8_t *p, uint32_t left, struct softgpu_fault *fault);

/* mmu_walk.c: one GPU VA as the command processor reaches it (lock held). */
vidmm_status softgpu_mmu_access(struct softgpu *sg, const struct vidmm_physical_address *root, uint64_t va,
                           uint32_t access, uint8_t **host, uint64_t *run, uint32_t *fflags);

/* cmdproc.c: the nodes (engines) running contexts' command buffers.
 * init after the copy engine, fini before it. */
vidmm_status softgpu_cmdproc_init(struct softgpu *sg, int mode);
/* Manual mode (cmdproc.c): run node's head job once; 1 when it made
 * progress (finished, faulted or moved past a command). */
int softgpu_cmdproc_step(struct softgpu *sg, uint32_t node);
/* Manual mode: node's queued jobs and whether its head is stalled. */
void softgpu_cmdproc_pending(struct softgpu *sg, uint32_t node, uint32_t *queued, int *stalled);
void softgpu_cmdproc_fini(struct softgpu *sg);
vidmm_status softgpu_submit_command_virtual(void *driver, const struct vidmm_submit_context_args *args);
vidmm_status softgpu_submit_command_physical(void *driver, const struct vidmm_submit_context_args *args);
vidmm_status softgpu_patch(void *driver, const struct vidmm_patch_args *args);
vidmm_status softgpu_reset_engine(void *driver, struct vidmm_reset_engine_args *args);
vidmm_status softgpu_query_engine_status(void *driver, uint32_t node, uint32_t *responsive);
/* cmdproc.c: drop every queued context buffer (adapter reset); returns how many. */
uint64_t softgpu_cmdproc_drop_all(struct softgpu *sg);

/* reset.c: adapter reset and power (DxgkDdiResetFromTimeout,
 * DxgkDdiRestartFromTimeout, DxgkDdiSetPowerState). */
vidmm_status softgpu_reset_from_timeout(void *driver);
vidmm_status softgpu_restart_from_timeout(void *driver);
vidmm_status softgpu_set_power_state(void *driver, uint32_t state);
/* engine.c: drop the copy engine's queue and a hung buffer; returns how many. */
uint64_t softgpu_engine_drop_all(struct softgpu *sg);

/* White-box access for tests. */
/* The host page the GART entry points at (softgpu's dummy page for an
 * entry never mapped), or NULL for a bad segment/page. */
const void *softgpu_aperture_entry(const struct softgpu *sg, uint32_t segment_id, uint64_t page);
/* Start of segment_id's CPU host aperture window, or NULL. */
const void *softgpu_host_aperture_base(const struct softgpu *sg, uint32_t segment_id);
/* softgpu's own dummy page. */
const void *softgpu_dummy_page(const struct softgpu *sg);
/* Engine hooks (engine.c).  The observer is called on the thread that
 * signals (the engine thread, or the submitter in synchronous mode)
 * after a buffer executed and right before its fence goes to vidmm, with
 * no lock held; it may read device memory directly (sg->seg[].mem) but
 * must not call a softgpu accessor (they wait for the engine, which is
 * the caller).  NULL removes it. */
void softgpu_set_fence_observer(struct softgpu *sg, void (*fn)(void *ctx, uint64_t fence), void *ctx);
/* hold != 0: the engine starts no new buffer until released (a stalled
 * engine, so tests can fill the queue).  Accessors that wait for idle
 * would wait forever while held with work queued; destroy overrides the
 * hold and drains. */
void softgpu_engine_hold(struct softgpu *sg, int hold);
/* Jobs queued and not started, and submitters waiting for a free entry. */
void softgpu_engine_queue(const struct softgpu *sg, uint32_t *queued, uint32_t *blocked);

#endif
