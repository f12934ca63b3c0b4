/*
 * alloc_common.h - shared fixtures of the allocation, placement and
 * integrity suites: a softgpu preset plus a vidmm adapter opened on a
 * fault_alloc host allocator, the adapter checker as a test assertion,
 * state snapshots, explicit allocations and seeded byte patterns.
 */
#ifndef VIDMM_ALLOC_COMMON_H
#define VIDMM_ALLOC_COMMON_H

#include "harness/fault_alloc.h"
#include "harness/test.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdint.h>

#define AC_MIB(x) ((uint64_t)(x) << 20)
#define AC_KIB(x) ((uint64_t)(x) << 10)

struct ac_fixture {
    struct fault_alloc fa;
    struct softgpu *sg;
    struct vidmm_adapter *a;
    struct vidmm_adapter_info ai;
    char err[256];
};

/* Opens preset with segment sizes sizes[1..] (0 = keep; a NULL array =
 * the small defaults of ac_small_sizes) and a system memory limit
 * (0 = 256 MiB).  Returns 0 on success (T_* checks report failures). */
int ac_open(struct ac_fixture *f, const char *preset, const uint64_t *sizes, uint64_t sysmem);
/* The same with softgpu's engine mode chosen: synchronous = 1 executes
 * paging buffers inside submit_command, 0 on the engine thread. */
int ac_open_mode(struct ac_fixture *f, const char *preset, const uint64_t *sizes, uint64_t sysmem, int synchronous);
/* Closes the adapter and the device; checks that no host block leaked. */
void ac_close(struct ac_fixture *f);

/* Runs vidmm_adapter_check and fails the test with the report if it finds
 * anything.  Returns the error count. */
int ac_check_adapter(const struct vidmm_adapter *a, const char *file, int line);
#define CHECK_ADAPTER(a) ac_check_adapter((a), __FILE__, __LINE__)

/* State snapshot: every segment, the live count, the fault allocator's
 * live blocks and the state of up to AC_SNAP_HANDLES tracked handles. */
#define AC_SNAP_HANDLES 16
struct ac_snapshot {
    uint32_t segment_count;
    struct vidmm_segment_info seg[VIDMM_MAX_SEGMENTS + 1];
    uint64_t live_allocations;
    int64_t host_blocks;
    uint32_t nh;
    vidmm_handle h[AC_SNAP_HANDLES];
    vidmm_status hst[AC_SNAP_HANDLES];
    struct vidmm_allocation_state state[AC_SNAP_HANDLES];
    uint32_t nranges[AC_SNAP_HANDLES];
    struct vidmm_physical_range r0[AC_SNAP_HANDLES];
};
void ac_snap(const struct ac_fixture *f, struct ac_snapshot *s, const vidmm_handle *h, uint32_t nh);
/* 1 when equal; otherwise prints the first differences (tagged with what). */
int ac_snap_equal(const struct ac_snapshot *x, const struct ac_snapshot *y, const char *what);
int ac_snap_equal_slack(const struct ac_snapshot *x, const struct ac_snapshot *y, const char *what, int64_t slack);
/* Takes a new snapshot with the handles of old and compares. */
int ac_snap_unchanged(const struct ac_fixture *f, const struct ac_snapshot *old, const char *what);
/* The same, but the host allocator may hold up to slack more blocks: a
 * create that fails after validation keeps its handle-table slot object
 * for the next create (reused, freed at close; not a leak). */
int ac_snap_unchanged_slack(const struct ac_fixture *f, const struct ac_snapshot *old, const char *what,
                            int64_t slack);

/* SOFTGPU_ALLOC_EXPLICIT description and creation. */
void ac_explicit_desc(struct softgpu_alloc_desc *d, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size,
                      uint64_t alignment);
vidmm_status ac_create(struct vidmm_adapter *a, uint32_t set, uint32_t pref, uint32_t flags, uint64_t size,
                       vidmm_handle *h);
vidmm_status ac_create_kind(struct vidmm_adapter *a, enum softgpu_alloc_kind kind, int cpu, uint64_t size,
                            vidmm_handle *h);

struct vidmm_allocation_state ac_state(const struct vidmm_adapter *a, vidmm_handle h);
struct vidmm_segment_info ac_seg(const struct vidmm_adapter *a, uint32_t id);

/* The seeded pattern: 64-bit word i of the stream for seed. */
void ac_pattern_fill(void *p, uint64_t size, uint64_t seed);
/* Returns the index of the first mismatching byte, or UINT64_MAX. */
uint64_t ac_pattern_find_mismatch(const void *p, uint64_t size, uint64_t seed);
/* Lock, write or verify the pattern, unlock.  Returns the lock/unlock
 * status, or VIDMM_E_STATE when the bytes differ (verify). */
vidmm_status ac_write(struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed);
vidmm_status ac_verify(struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed);
/* Verify the bytes the GPU sees through the allocation's physical ranges
 * (memory segments, or aperture/AGP when mapped).  Returns 1 if it could
 * check (placement GPU-readable), 0 if not (plain system memory), -1 on a
 * mismatch or a failed read. */
int ac_verify_gpu(struct softgpu *sg, struct vidmm_adapter *a, vidmm_handle h, uint64_t size, uint64_t seed);

/* Fills segment `seg` with `unit`-byte page-set allocations (set = seg)
 * and destroys every other one, leaving isolated holes; returns the
 * number of survivors written to keep[] (capacity cap). */
uint32_t ac_fragment(struct vidmm_adapter *a, uint32_t seg, uint64_t unit, vidmm_handle *keep, uint32_t cap);
void ac_destroy_all(struct vidmm_adapter *a, vidmm_handle *h, uint32_t n);

#endif
