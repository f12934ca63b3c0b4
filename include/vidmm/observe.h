/*
 * vidmm/observe.h - what a program, a tool or a person can see of an
 * adapter: allocation names and user data, a walk over the live
 * allocations, statistics as GpuMemDump JSON, per-process figures as
 * Linux DRM fdinfo text, and a debug-message callback
 * (docs/OBSERVABILITY.md).
 *
 * Text outputs (vidmm_allocation_get_name, vidmm_adapter_stats_json,
 * vidmm_process_fdinfo) use one two-call pattern:
 *
 *   size_t n;
 *   vidmm_adapter_stats_json(a, NULL, 0, &n);        // VIDMM_OK, n = bytes with the NUL
 *   char *s = malloc(n);
 *   vidmm_adapter_stats_json(a, s, n, &n);           // VIDMM_OK, s holds all of it
 *
 * buf may be NULL only with size 0 (a size query: VIDMM_OK).  *needed
 * (needed may be NULL when buf is given) receives the bytes the whole
 * text takes, terminating NUL included.  When size is smaller, as much as
 * fits is written, NUL-terminated, and the call returns
 * VIDMM_E_BUFFER_TOO_SMALL: the state may have changed between the two
 * calls (another thread created an allocation), so a caller loops until
 * VIDMM_OK.  The text is a consistent picture of one moment: it is made
 * under the adapter lock.
 *
 * Every entry validates its arguments first and changes nothing on bad
 * input.  Allocation handles are accepted as vidmm_allocation_query
 * accepts them (private ones included: these are inspection calls).
 */
#ifndef VIDMM_OBSERVE_H
#define VIDMM_OBSERVE_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"
#include "vidmm/allocation.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- names and user data ------------------------------------------ */

/* Longest name, in bytes, without the terminating NUL. */
#define VIDMM_ALLOCATION_NAME_MAX 255u

/* Name an allocation (VMA's vmaSetAllocationName, D3D12's SetName).  The
 * name is copied into host memory from the adapter's allocator and
 * released with the allocation; NULL or "" removes it.  A name is at most
 * VIDMM_ALLOCATION_NAME_MAX bytes of UTF-8 without control characters
 * (reports are line-oriented and JSON): anything else is
 * VIDMM_E_INVALID_ARG, and the old name stays.  VIDMM_E_NO_HOST_MEMORY
 * also keeps the old name. */
VIDMM_API vidmm_status vidmm_allocation_set_name(struct vidmm_adapter *adapter, vidmm_handle allocation,
                                                 const char *name);

/* The name ("" when none), with the two-call pattern above. */
VIDMM_API vidmm_status vidmm_allocation_get_name(const struct vidmm_adapter *adapter, vidmm_handle allocation,
                                                 char *buf, size_t size, size_t *needed);

/* An opaque pointer kept with the allocation for the caller (NULL when
 * never set); vidmm never dereferences it.  Reports print it as a
 * number when it is not NULL. */
VIDMM_API vidmm_status vidmm_allocation_set_user_data(struct vidmm_adapter *adapter, vidmm_handle allocation,
                                                      void *user_data);
VIDMM_API vidmm_status vidmm_allocation_get_user_data(const struct vidmm_adapter *adapter, vidmm_handle allocation,
                                                      void **user_data);

/* ---- the live allocations ------------------------------------------ */

/* Residency states of an allocation, one at a time.  As a filter they
 * are bits: any combination. */
#define VIDMM_RESIDENCY_RESIDENT 0x1u   /* has a GPU placement, not offered */
#define VIDMM_RESIDENCY_EVICTED  0x2u   /* no GPU placement (content in system memory, or none yet), not offered */
#define VIDMM_RESIDENCY_OFFERED  0x4u   /* offered (vidmm_offer), whether or not its memory was taken back */
#define VIDMM_RESIDENCY_ALL      0x7u

/* vidmm_allocation_filter.flags: which members below apply. */
#define VIDMM_FILTER_PROCESS   0x1u   /* item.process == process (0: allocations of no process) */
#define VIDMM_FILTER_SEGMENT   0x2u   /* item.segment_id == segment_id */
#define VIDMM_FILTER_RESIDENCY 0x4u   /* item.residency is one of the bits of residency */

struct vidmm_allocation_filter {
    uint32_t flags;                 /* VIDMM_FILTER_*; 0 = every live allocation */
    uint32_t segment_id;            /* < segment_count */
    vidmm_handle process;           /* a process that no longer exists matches nothing */
    uint32_t residency;             /* VIDMM_RESIDENCY_* bits, not 0 */
    uint32_t reserved;              /* 0 */
};

struct vidmm_allocation_item {
    vidmm_handle handle;            /* shared (vidmm/share.h): the handle of process's hold */
    /* The process it belongs to: the one it is private to
     * (vidmm_device_allocation_create; a shared allocation's creator while
     * it holds it), else its accounting owner (the first process that made
     * it resident), else a shared allocation's first holder, else 0. */
    vidmm_handle process;
    uint64_t size;                  /* bytes placed */
    uint64_t offset;                /* of its first extent in segment_id (0 in system memory) */
    uint32_t segment_id;            /* where its bytes are: a memory segment, the aperture or AGP segment
                                       (mapped system pages), or 0 (system memory, evicted included) */
    uint32_t residency;             /* one VIDMM_RESIDENCY_* */
    uint32_t extent_count;          /* contiguous pieces (0: no bytes yet, created evicted) */
    uint32_t flags;                 /* VIDMM_ALLOC_* of its description */
    uint32_t priority;              /* eviction priority */
    uint32_t busy;                  /* in-flight submissions that use it */
    void *user_data;
    char name[VIDMM_ALLOCATION_NAME_MAX + 1]; /* "" when unnamed */
};

/* One live allocation that passes the filter (NULL = none) per call, in
 * handle-slot order.  *cursor is 0 to start and is advanced past the item
 * returned; it names a slot, not an object, so allocations may be
 * created and destroyed between calls: each allocation alive for the
 * whole walk is returned exactly once, one created or destroyed during
 * it may or may not be.  An allocation destroyed while the GPU still
 * uses it (its destruction deferred) is no longer listed.
 * VIDMM_OK with *out filled; VIDMM_NO_MORE at the end (*out untouched);
 * VIDMM_E_INVALID_ARG for NULL pointers, unknown filter flags or
 * residency bits, a segment id out of range, a reserved member not 0 or
 * a cursor above 2^32 - 1 (no call makes one). */
VIDMM_API vidmm_status vidmm_allocation_iterate(const struct vidmm_adapter *adapter,
                                                const struct vidmm_allocation_filter *filter, uint64_t *cursor,
                                                struct vidmm_allocation_item *out);

/* ---- statistics ---------------------------------------------------- */

/* The adapter as JSON in the GpuMemDump layout of the Vulkan and D3D12
 * Memory Allocators (vmaBuildStatsString, D3D12MA BuildStatsString),
 * valid against its schema, so their visualiser (GpuMemDumpVis.py) draws
 * it: one heap and one default pool per segment, one block per memory,
 * aperture or AGP segment with the allocations as suballocations at
 * their offsets (FREE gaps between them), system memory's allocations as
 * dedicated allocations.  vidmm's own figures - segments, every
 * allocation with its process and residency, per-process budgets and
 * usage - are under "General"."vidmm" (docs/OBSERVABILITY.md has the
 * mapping).  Two-call pattern above; VIDMM_E_NO_HOST_MEMORY when the
 * scratch list of extents cannot be allocated. */
VIDMM_API vidmm_status vidmm_adapter_stats_json(const struct vidmm_adapter *adapter, char *buf, size_t size,
                                                size_t *needed);

/* ---- per-process figures ------------------------------------------- */

/* The process's memory as Linux DRM fdinfo key-value lines
 * (Documentation/gpu/drm-usage-stats.rst), one region per segment, key
 * and value separated by ":" and a tab as the kernel prints them:
 *
 *   drm-driver: vidmm
 *   drm-client-id: 16777217
 *   drm-total-vram0: 65536 KiB
 *   drm-shared-vram0: 0 KiB
 *   drm-resident-vram0: 65536 KiB
 *   drm-purgeable-vram0: 0 KiB
 *   drm-active-vram0: 0 KiB
 *   ...
 *
 * Regions: "system" (segment 0), "vram0", "vram1"... (memory segments in
 * id order), "aperture", "agp".  Which allocations count and where:
 * docs/OBSERVABILITY.md.  Two-call pattern above; VIDMM_E_INVALID_HANDLE
 * for a process handle that is not live. */
VIDMM_API vidmm_status vidmm_process_fdinfo(const struct vidmm_adapter *adapter, vidmm_handle process, char *buf,
                                            size_t size, size_t *needed);

/* The fdinfo region name of a segment ("system", "vram0", "aperture",
 * "agp") into buf (at least 16 bytes); VIDMM_E_INVALID_ARG for an id out
 * of range or a short buffer. */
VIDMM_API vidmm_status vidmm_segment_region_name(const struct vidmm_adapter *adapter, uint32_t segment_id, char *buf,
                                                 size_t size);

/* ---- debug messages ------------------------------------------------ */

enum vidmm_debug_severity {
    VIDMM_DEBUG_INFO = 0,
    VIDMM_DEBUG_WARNING = 1,        /* leaks at close */
    VIDMM_DEBUG_ERROR = 2           /* rule violations */
};

/* text is one line without a newline, valid only during the call.  Runs
 * on the thread that caused it, with the adapter lock held: it may call
 * read-only entries of the adapter (the lock is recursive) but must not
 * close it. */
typedef void (*vidmm_debug_callback)(void *user, enum vidmm_debug_severity severity, const char *text);

/* Install (fn NULL: remove) the adapter's debug callback.  It receives:
 *   - at vidmm_adapter_close, before anything is destroyed, one WARNING
 *     per process and per allocation still alive ("leak: allocation
 *     'name' ...") and a summary line;
 *   - from vidmm_adapter_check_rules, one ERROR per violation (the line
 *     the report holds).
 * VIDMM_E_INVALID_ARG for a NULL adapter. */
VIDMM_API vidmm_status vidmm_adapter_set_debug_callback(struct vidmm_adapter *adapter, vidmm_debug_callback fn,
                                                        void *user);

/* "info", "warning", "error"; "?" otherwise.  Never NULL. */
VIDMM_API const char *vidmm_debug_severity_str(enum vidmm_debug_severity severity);

#ifdef __cplusplus
}
#endif
#endif
