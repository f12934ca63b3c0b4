/*
 * trace.h - the tool's recording layer: every call the tool makes into
 * vidmm goes through one of these wrappers.
 *
 * A wrapper names objects by trace-local ids (process P1, device D1,
 * paging queue Q1, allocation A1, GPU VA range V1), calls vidmm, and
 * formats one line of the trace format (docs/TRACE_FORMAT.md): the verb,
 * its arguments, " = ", the status and the outputs.  The line is
 *   - appended to the record file when recording is on (--record);
 *   - compared by the replayer with the line it read (replay.c);
 *   - turned into timeline events when a timeline is wanted (--timeline),
 *     and handed with its place on the simulated clock to an observer
 *     (the HTML report's series, --html).
 * Scenarios (scenarios.c) and the replayer use the same wrappers, so a
 * replay re-creates the run call for call, and the report (report.c) reads
 * only state that both have: vidmm's answers and the wrappers' counters.
 *
 * The layer is five files: trace_format.c (names and definitions of the
 * format), trace_write.c and trace_write_calls.c (the wrappers and their
 * lines), trace_timeline.c (the Chrome trace JSON) and trace_read.c
 * (reading a trace back; its execution is replay.c).
 *
 * Raw vidmm handles never leave this layer: they embed an address-derived
 * salt and would differ between a run and its replay.
 */
#ifndef VIDMM_TOOL_TRACE_H
#define VIDMM_TOOL_TRACE_H

#include "fault_driver.h"
#include "rules_check.h"
#include "vidmm/drvcheck.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdint.h>
#include <stdio.h>

/* Version 2 ends with an end record: "end calls=N checksum=0x..." (the
 * call lines and the FNV-1a 64 of every byte before it), so a reader can
 * prove a trace whole.  Version 1 (no end record) is still read. */
#define TR_FORMAT_VERSION 2
#define TR_FNV_OFFSET 0xcbf29ce484222325ull
/* FNV-1a 64 of n bytes, continuing from h (TR_FNV_OFFSET to start). */
uint64_t tr_fnv1a(uint64_t h, const void *p, size_t n);
/* A tool-level status for integrity checks whose bytes differ (vidmm
 * statuses are small negative numbers; this one is outside their range). */
#define TR_MISMATCH ((vidmm_status)-100)
/* A tool-level status for a call the tool does not make on this driver:
 * what it needs is softgpu's own (its MMU walker, its command set, its
 * segment sets) or a feature the driver declares absent.  Written
 * "NOT_APPLICABLE"; the first of each verb is said on stderr with the
 * reason, all are counted (docs/DECISIONS.md D80). */
#define TR_NOT_APPLICABLE ((vidmm_status)-101)

#define TR_STATUS_INDEX(st) ((int)(st) + 110 < 0 ? 0 : (int)(st) + 110 > 127 ? 127 : (int)(st) + 110)

/* Contexts (C1) belong to a device; command buffers (B1) are host
 * memory the tool built (struct tr_obj.data). */
enum tr_kind { TR_PROC, TR_DEV, TR_QUEUE, TR_ALLOC, TR_VA, TR_CTX, TR_BUF, TR_KINDS };

/* Everything a trace header says: enough to rebuild the same adapter. */
struct tr_header {
    char preset[16];
    uint64_t segment_size[SOFTGPU_MAX_SEGMENTS + 1];  /* 0 = preset size */
    uint64_t system_memory;      /* vidmm's system memory limit (fixed, so reports do not depend on the host) */
    uint32_t mmu_levels;         /* 0 = preset default */
    int synchronous;             /* softgpu runs paging buffers inside submit (deterministic) */
    char policy[16];             /* eviction policy name */
    uint64_t seed;               /* the scenario's random seed (informative on replay) */
    char scenario[64];           /* what produced the trace */
    /* The driver: "" (softgpu, built from the fields above) or a plug-in
     * ("vkgpu", or a FILE.so), written "driver NAME" with its options
     * "driver-options STR" (docs/VKGPU.md).  On a plug-in the preset and
     * segment sizes only size it (run.c), and its own segments are used. */
    char driver[256];
    char driver_options[256];
    /* Not part of the trace: a failing driver (`vidmm run --fail-driver`)
     * that tr_open puts between vidmm and softgpu; NULL = none. */
    struct fault_driver *fault;
    /* Not part of the trace: the constructed plug-in driver when driver
     * names one (the caller makes it and destroys it after tr_close). */
    const struct drvcheck_driver *plugin;
};

/* One traced object.  parent: the process of a device or VA range, the
 * device of a queue.  For allocations: size, softgpu kind and the pattern
 * seed last written (0 = zeros / unknown). */
struct tr_obj {
    vidmm_handle h;
    uint32_t parent;
    uint32_t kind;
    uint64_t va, size;           /* VA ranges */
    uint64_t alloc;              /* VA ranges: the mapped allocation id (0 = reservation) */
    int alive;
    char name[32];
    void *data;                  /* command buffers: the built bytes (size bytes) */
};

/* Verbs, also the index of the per-verb call counters. */
enum tr_verb {
    TV_PROCESS, TV_PROCESS_DESTROY, TV_DEVICE, TV_DEVICE_DESTROY, TV_QUEUE, TV_QUEUE_DESTROY,
    TV_CREATE, TV_CREATE2, TV_DESTROY, TV_PRIORITY, TV_MOVE, TV_MOVE_DISCARD, TV_FLIP,
    TV_RESERVE, TV_MAP, TV_UNMAP, TV_FREE,
    TV_MAKE_RESIDENT, TV_EVICT, TV_WAIT, TV_OFFER, TV_RECLAIM,
    TV_BUDGET, TV_RESERVATION,
    TV_WRITE, TV_CHECK, TV_GPU_READ, TV_GPU_WRITE, TV_CHECK_ADAPTER,
    TV_CONTEXT, TV_CONTEXT_DESTROY, TV_CMDBUF, TV_SUBMIT_VIRTUAL, TV_SUBMIT_PHYSICAL,
    TV_CONTEXT_WAIT, TV_CONTEXT_FENCE, TV_RESULT,
    TV_LOCK, TV_UNLOCK,
    TV_PLACE,
    TV_COUNT
};
extern const char *const tr_verb_names[TV_COUNT];

/* A growable text buffer (timeline events, formatted lines). */
struct tr_buf {
    char *p;
    size_t len, cap;
    int oom;                     /* an append failed: the buffer is incomplete */
};
void tr_buf_printf(struct tr_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tr_buf_free(struct tr_buf *b);
/* Character c as it stands inside a JSON string (quote and backslash
 * escaped, control characters as \u00XX), written to out; returns out.
 * The report's JSON and the timeline escape alike through it. */
const char *tr_json_char(char c, char out[8]);

/* What one call did on the simulated clock, handed to an observer
 * (tr_set_observer) after the call: the call's slice [ts, ts + dur) and,
 * per paging operation (enum vidmm_paging_operation), the slice the
 * timeline draws for it on the paging-engine track and its bytes.  The
 * HTML report (html.c) builds its time series from these, so its charts
 * and the timeline share one clock. */
struct tr_tick {
    uint64_t ts, dur;
    enum tr_verb verb;
    int setup;                   /* the adapter-open slice, not a call */
    uint64_t paging_at[17], paging_dur[17], paging_bytes[17];   /* dur 0: none */
};
struct tr;
typedef void (*tr_observer_fn)(struct tr *t, const struct tr_tick *k, void *ctx);

/* Counter tracks emitted into the timeline, remembered so that a counter
 * is written only when its value changes. */
struct tr_counter_state {
    uint64_t usage[2], budget[2];
    int valid;
};

struct tr {
    struct tr_header hdr;
    struct softgpu *gpu;         /* NULL on a plug-in driver (hdr.plugin) */
    struct vidmm_adapter *adapter;
    int gpummu, iommu;           /* the adapter's GPU VA model */

    FILE *rec;                   /* record file, NULL = not recording */
    int rec_error;               /* a write to it failed (or a line could not be built) */
    uint64_t rec_hash;           /* FNV-1a 64 of every byte recorded so far */
    uint64_t rec_calls;          /* call lines recorded */
    int rec_ended;               /* the end record is written */

    struct tr_obj *obj[TR_KINDS];
    uint32_t nobj[TR_KINDS], cap[TR_KINDS];   /* ids 1..nobj; obj[k][0] unused */

    /* The line of the last call: "verb args = STATUS outputs" (any
     * length: grown as it is built; never NULL while open). */
    char *line;
    size_t line_len, line_cap;
    int line_oom;                /* the host refused to grow it: the line is cut */
    size_t result_at;            /* offset of the result part (after " = ") */
    enum tr_verb verb;
    uint32_t track_pid, track_tid;  /* timeline track of the last call */

    /* Counters for the report: all derived from the call sequence. */
    uint64_t calls, failed_calls, pending, fence_waits, frames;
    uint64_t verb_calls[TV_COUNT], verb_failed[TV_COUNT];
    uint64_t checks, check_failures, check_bytes;   /* CPU and GPU read-backs */
    uint64_t gpu_faults;         /* GPU accesses that faulted */
    uint64_t adapter_checks, adapter_check_failures;
    uint64_t over_budget;        /* E_OVER_BUDGET answers */
    uint64_t by_status[128];
    /* Command submission. */
    uint64_t submits_virtual, submits_physical, submit_failed;
    uint64_t patches_written;    /* patch locations vidmm wrote (the "patched" outputs) */
    uint64_t context_waits;      /* CPU waits on context fences */
    uint64_t commands_built;     /* commands in the tool's command buffers */
    uint64_t gpu_results, gpu_result_failures;   /* GPU-computed values checked by the CPU */
    /* Calls the tool did not make on this driver (TR_NOT_APPLICABLE), per
     * verb; a verb's first is said on stderr with its reason. */
    uint64_t not_applicable[TV_COUNT];
    uint64_t va_refused;         /* GPU VA calls refused: the driver has no GPU VA (tr_driver_refused) */     /* calls per status, index TR_STATUS_INDEX(st) */

    /* Timeline (NULL buffer = not collecting). */
    struct tr_buf *timeline;
    uint64_t clock_us;           /* simulated microseconds: 1 per call + paging bytes at 16 KiB/us */
    struct vidmm_adapter_info last_ai;
    struct vidmm_residency_stats last_rs;
    struct tr_counter_state *counters;   /* per process id */
    uint32_t counters_cap;
    tr_observer_fn observer;     /* NULL = none */
    void *observer_ctx;

    /* The WDDM rules checker (support/rules_check.h), on by default:
     * after every call the library's rules and the GPU's view are
     * checked, around a make-resident the failed-call rule.  The first
     * violation is kept (and said on stderr); checking stops there, so a
     * replayer or a scenario can stop too. */
    int rules;                   /* check after every call */
    uint64_t rules_checks;       /* calls checked */
    uint64_t rules_violations;   /* violations found (0 or those of the first failing call) */
    uint64_t rules_failed_call;  /* the call (1-based) after which they were found */
    int rules_pending;           /* the failed-call rule's violations, reported after the call */
    uint64_t rules_gpu_sig;      /* what the GPU's view depended on at the last MMU walk */
    uint64_t rules_gpu_walks;    /* checks that walked the MMU */
    /* Checks that left out the rules reading softgpu's internals (the
     * gpu.* family) since the driver is not softgpu, or the adapter has
     * no GpuMmu: counted, never silent (rules_check.h). */
    uint64_t rules_not_applicable;
    char rules_report[1024];     /* the first violations, one a line */
    char rules_line[512];        /* the call line they followed */
    struct rc_fp rules_fp[2];    /* before / after a make-resident */
    vidmm_handle *rules_handles; /* rc_objects' arrays, rebuilt per check */
    uint32_t rules_handles_cap;

    uint64_t *scratch;           /* read-back buffer */
    size_t scratch_size;
    char error[256];
};

/* Defaults: dgpu, synchronous, lru, 4 GiB of system memory. */
void tr_header_defaults(struct tr_header *h);
/* Build softgpu and the adapter the header describes.  rec (may be NULL)
 * receives the header now and one line per call.  Returns 0, or 1 with
 * a message on stderr. */
int tr_open(struct tr *t, const struct tr_header *h, FILE *rec);
/* Turn the rules checker on or off (after tr_open, before the first
 * call).  0, or -1 when the host is out of memory. */
int tr_enable_rules(struct tr *t, int on);
/* The objects the trace knows, for the harness checkers (arrays owned
 * by t, valid until the next call). */
int tr_rules_objects(struct tr *t, struct rc_objects *o);
/* The rules now: library rules plus the GPU's view; report as
 * vidmm/rules.h.  Returns the violations. */
int tr_check_rules_now(struct tr *t, char *report, size_t n);
/* The driver's name as reports say it: "softgpu" or the plug-in's. */
const char *tr_driver_name(const struct tr *t);
/* The driver's private data for the tool's allocation description d
 * (trace_driver.c): d itself on softgpu, a translation on vkgpu, the
 * plug-in's own description of a CPU-visible allocation on any other.
 * Returns the bytes written to buf, or 0 when the driver cannot express
 * d, with the reason in *why. */
size_t tr_driver_desc(const struct tr *t, const struct softgpu_alloc_desc *d, void *buf, size_t cap,
                      const char **why);
/* Says on stderr, once per verb, why the tool does not make this call on
 * this driver, and counts it.  Returns TR_NOT_APPLICABLE. */
vidmm_status tr_not_applicable(struct tr *t, const char *why);
/* After a call on a plug-in driver: a GPU VA call vidmm refused since
 * the driver declares no GPU virtual addressing is said once, by name. */
void tr_driver_refused(struct tr *t, vidmm_status st);
/* Close the adapter and softgpu; free everything. */
void tr_close(struct tr *t);
/* Start collecting timeline events into buf (before tr_start). */
void tr_enable_timeline(struct tr *t, struct tr_buf *buf);
/* Call fn after every call with what it did on the simulated clock
 * (before tr_start). */
void tr_set_observer(struct tr *t, tr_observer_fn fn, void *ctx);
/* Start the simulated clock, after the outputs are enabled and before the
 * first call: a first "adapter-open" slice accounts for the paging done
 * when the adapter was opened, so the clock is the same whichever
 * outputs (timeline, HTML) a run writes. */
void tr_start(struct tr *t);
/* Write the end record ("end calls=N checksum=0x...") to the record
 * file, once, when the run is over and before the file is closed.  0, or
 * 1 when recording failed somewhere (t->rec_error).  Nothing without a
 * record file. */
int tr_end_record(struct tr *t);
/* Policy by name (NULL if unknown); the names the tool accepts. */
const struct vidmm_eviction_policy *tr_policy_by_name(const char *name);
const char *tr_policy_names(void);

/* Object access (id 0 or out of range: NULL). */
struct tr_obj *tr_get(struct tr *t, enum tr_kind k, uint32_t id);
vidmm_handle tr_handle(struct tr *t, enum tr_kind k, uint32_t id);

/* One physical extent of a live allocation the trace made. */
struct tr_extent {
    uint32_t segment, alloc;     /* segment id (0: system memory), allocation id */
    uint64_t offset, size;
};
/* Every extent of every live allocation, allocation by allocation
 * (malloc'ed, *count of them; NULL and 0 when the host is out of memory).
 * The snapshot and the HTML report's memory maps are drawn from it. */
struct tr_extent *tr_extents(struct tr *t, size_t *count);

/* Status names as the trace writes them: "OK", "PENDING", "E_OVER_BUDGET",
 * "MISMATCH".  tr_status_parse returns 0 and the status, or -1. */
const char *tr_status_name(vidmm_status st);
int tr_status_parse(const char *s, vidmm_status *st);

/* A GPU virtual address: a VA range id plus an offset, or (v == 0) a
 * literal address. */
struct tr_addr {
    uint32_t v;
    uint64_t off;
};
uint64_t tr_addr_value(struct tr *t, struct tr_addr a);

/* ---- the wrappers: one vidmm call (or one integrity check) each ---- */
vidmm_status tr_process_create(struct tr *t, const char *name, uint32_t *id);
vidmm_status tr_process_destroy(struct tr *t, uint32_t p);
vidmm_status tr_device_create(struct tr *t, uint32_t p, uint32_t *id);
vidmm_status tr_device_destroy(struct tr *t, uint32_t d);
vidmm_status tr_queue_create(struct tr *t, uint32_t d, int priority, uint32_t *id);
vidmm_status tr_queue_destroy(struct tr *t, uint32_t q);

/* create2 != 0: vidmm_allocation_create2 with flags, else
 * vidmm_allocation_create.  name may be NULL. */
vidmm_status tr_create(struct tr *t, const struct softgpu_alloc_desc *d, int create2, uint32_t flags,
                       const char *name, uint32_t *id);
/* The same on device dev (vidmm_device_allocation_create: private to its
 * process; the line reads create2 A<n> device=D<dev> ...); dev 0 is
 * tr_create with create2. */
vidmm_status tr_create_on(struct tr *t, uint32_t dev, const struct softgpu_alloc_desc *d, uint32_t flags,
                          const char *name, uint32_t *id);
vidmm_status tr_destroy(struct tr *t, uint32_t a);
vidmm_status tr_priority(struct tr *t, uint32_t a, uint32_t priority);
vidmm_status tr_move(struct tr *t, uint32_t a, uint32_t segment, int discard);
vidmm_status tr_flip(struct tr *t, uint32_t source, uint32_t a);   /* a == 0: blank */

vidmm_status tr_reserve(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint64_t size,
                        unsigned mode, uint32_t *id);
vidmm_status tr_map(struct tr *t, uint32_t p, struct tr_addr base, uint64_t min, uint64_t max, uint32_t a,
                    uint64_t offset, uint64_t size, unsigned protection, uint64_t driver_protection, uint32_t *id);
/* A Direct3D 12 placed resource: size bytes of heap allocation a at
 * offset, mapped anywhere in process p's GPU VA space.  The runtime's
 * placement rule is checked first (offset a multiple of align, one of
 * 4 KiB, 64 KiB or 4 MiB): a breach answers VIDMM_E_INVALID_ARG without
 * calling vidmm, which checks the range against the heap itself. */
vidmm_status tr_place(struct tr *t, uint32_t p, uint32_t a, uint64_t offset, uint64_t size, uint64_t align,
                      uint32_t *id);
/* Heap property names of the trace format (indexed by the softgpu enums). */
extern const char *const tr_heap_type_names[6];
extern const char *const tr_cpu_page_names[4];
extern const char *const tr_memory_pool_names[3];
vidmm_status tr_unmap(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size);
vidmm_status tr_free(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size);

/* fence/trim may be NULL. */
vidmm_status tr_make_resident(struct tr *t, uint32_t d, uint32_t q, const uint32_t *list, uint32_t n,
                              uint32_t flags, uint64_t *fence, uint64_t *trim);
vidmm_status tr_evict(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t flags, uint64_t *trim);
vidmm_status tr_wait(struct tr *t, uint32_t q, uint64_t fence);
vidmm_status tr_offer(struct tr *t, uint32_t d, const uint32_t *list, uint32_t n, uint32_t priority);
/* results (n entries) and fence may be NULL. */
vidmm_status tr_reclaim(struct tr *t, uint32_t q, const uint32_t *list, uint32_t n, uint32_t *results,
                        uint64_t *fence);
vidmm_status tr_budget(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes);
vidmm_status tr_reservation(struct tr *t, uint32_t p, enum vidmm_segment_group g, uint64_t bytes);

/* Integrity: the CPU writes / reads back a seeded pattern through a lock;
 * the GPU reads / writes one through the process's page tables (softgpu's
 * MMU walker) or, in IoMmu mode, at the CPU address the mapping is.
 * seed 0 is all zeros.  TR_MISMATCH when bytes differ. */
vidmm_status tr_write(struct tr *t, uint32_t a, uint64_t seed);
vidmm_status tr_check(struct tr *t, uint32_t a, uint64_t seed);
/* CPU lock and unlock on their own (vidmm_allocation_lock / unlock): a
 * locked allocation is not moved or destroyed (E_BUSY); locks nest.
 * The pointer is the host's and is not recorded. */
vidmm_status tr_lock(struct tr *t, uint32_t a);
vidmm_status tr_unlock(struct tr *t, uint32_t a);
vidmm_status tr_gpu_read(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed);
vidmm_status tr_gpu_write(struct tr *t, uint32_t p, struct tr_addr va, uint64_t size, uint64_t seed);
/* vidmm_adapter_check and softgpu_check: TR_MISMATCH on a violation. */
vidmm_status tr_check_adapter(struct tr *t);

/* ---- command submission --------------------------------------------- */

/* One command of a command buffer: a softgpu opcode (SOFTGPU_CMD_*) and
 * its operands in the order of softgpu.h; an address operand is a VA
 * range plus offset (virtual mode) or a literal (v == 0, physical mode:
 * usually 0, patched). */
struct tr_cmd {
    uint32_t op;
    struct tr_addr arg[4];
};
/* Operand count of an opcode, -1 if unknown; its name in traces. */
int tr_cmd_operands(uint32_t op);
const char *tr_cmd_name(uint32_t op);
int tr_cmd_parse_name(const char *s, uint32_t *op);

/* node: SOFTGPU_NODE_*, mode: VIDMM_CONTEXT_*. */
vidmm_status tr_context_create(struct tr *t, uint32_t d, uint32_t node, uint32_t mode, uint32_t *id);
vidmm_status tr_context_destroy(struct tr *t, uint32_t c);
/* Build a command buffer B<id> of n commands in host memory; if to != 0
 * the bytes are also written by the CPU into allocation to at offset
 * (a virtual-mode buffer).  Outputs: size and softgpu_checksum of the
 * bytes. */
vidmm_status tr_cmdbuf(struct tr *t, const struct tr_cmd *cmds, uint32_t n, uint32_t to, uint64_t offset,
                       uint32_t *id);
/* vidmm_submit_virtual; *fence may be NULL. */
vidmm_status tr_submit_virtual(struct tr *t, uint32_t c, struct tr_addr va, uint32_t size, uint64_t *fence);
/* vidmm_submit_physical of command buffer b: allocations (ids) with
 * VIDMM_SUBMIT_WRITE flags, patch locations (allocation_index,
 * allocation_offset, patch_offset used), VIDMM_SUBMIT_REUSED flags. */
struct tr_patch {
    uint32_t index, allocation_offset, patch_offset;
};
vidmm_status tr_submit_physical(struct tr *t, uint32_t c, uint32_t b, const uint32_t *allocs,
                                const uint32_t *alloc_flags, uint32_t nalloc, const struct tr_patch *patches,
                                uint32_t npatch, uint32_t flags, uint64_t *fence, uint32_t *patched);
vidmm_status tr_context_wait(struct tr *t, uint32_t c, uint64_t fence);
vidmm_status tr_context_fence(struct tr *t, uint32_t c, uint64_t *submitted, uint64_t *completed);
/* The CPU reads the 64-bit value at offset of allocation a (a GPU
 * result) and compares it with expect: TR_MISMATCH when it differs.
 * Output: the value. */
vidmm_status tr_result(struct tr *t, uint32_t a, uint64_t offset, uint64_t expect, uint64_t *value);
/* softgpu_checksum of the tool's seeded pattern (seed 0: zeros) of size
 * bytes, and of size bytes filled with a 32-bit pattern. */
uint64_t tr_pattern_checksum(uint64_t size, uint64_t seed);
uint64_t tr_fill_checksum(uint64_t size, uint32_t pattern);

/* A frame boundary (a comment-like line "frame N"; no vidmm call). */
void tr_frame(struct tr *t, uint64_t n);

/* Names used in lines: softgpu allocation kinds, make-resident and
 * evict flag bits (bit 0, bit 1). */
const char *tr_alloc_kind_name(uint32_t kind);
extern const char *const tr_create_flag_names[2];
extern const char *const tr_make_resident_flag_names[2];
extern const char *const tr_evict_flag_names[2];
const char *tr_paging_op_name(int op);
/* The letter of an object kind's ids (P1, D1, Q1, A1, V1, C1, B1). */
extern const char tr_kind_prefix[TR_KINDS];
/* "local", "non-local" ("?" for anything else). */
const char *tr_group_name(enum vidmm_segment_group g);
/* "graphics", "compute", "copy"; NULL for another node. */
const char *tr_node_name(uint32_t node);

/* The result part of the last call's line (after " = "). */
const char *tr_last_result(const struct tr *t);

#endif
