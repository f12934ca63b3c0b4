/*
 * vidmm/tdr.h - timeout detection and recovery: hung engines, engine and
 * adapter resets, and what survives them.
 *
 * A hang is an engine (a node running contexts' work, or the paging
 * engine) that holds unfinished work and has not completed anything for
 * the TDR timeout (2 s by default, as Windows).  vidmm looks for hangs
 * whenever it waits for a fence (its own waits and vidmm_context_wait /
 * vidmm_paging_queue_wait) and when vidmm_adapter_detect_hangs is called
 * (the OS timer's job in WDDM).  Recovery:
 *
 *  - engine reset: the driver abandons the buffer the node is stuck on
 *    (reset_engine); that buffer's context is guilty: its device is put
 *    in the error state (VIDMM_E_DEVICE_LOST from then on, reset status
 *    GUILTY); the work queued behind it runs; memory is untouched.
 *  - adapter reset, when the engine reset is impossible or fails, the
 *    paging engine hung, or a paging buffer faulted (reported for the
 *    system paging process: reset at the next wait or poll, no timeout): the driver drops all queued work
 *    (reset_from_timeout), every fence is treated as passed, memory
 *    segments lose their content.  Then (docs/DECISIONS.md D30):
 *    allocations in memory segments whose system copy is current are
 *    restored in place from it; the others are zero-filled and reported
 *    lost (vidmm_allocation_query: content_lost); allocations in system
 *    memory and the aperture keep their content, except those whose
 *    paging was aborted (lost too).  Page tables are rebuilt.  The guilty
 *    device is lost; devices whose submitted work was dropped get reset
 *    status INNOCENT and go on; a paging hang puts the devices owning
 *    allocations whose paging was aborted in the error state (WDDM).
 *  - a reset the driver refuses removes the adapter: every device lost,
 *    no more resets, waits answer VIDMM_E_DEVICE_LOST, CPU locks are
 *    refused; destroys, queries and the close still work
 *    (docs/RESET_AND_POWER.md).
 */
#ifndef VIDMM_TDR_H
#define VIDMM_TDR_H

#include "vidmm/export.h"

#include "vidmm/adapter.h"
#include "vidmm/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VIDMM_TDR_DEFAULT_TIMEOUT_NS 2000000000ull

/* Set the hang timeout (nanoseconds, at least 1 ms; 0 turns detection off:
 * waits then wait forever).  VIDMM_E_INVALID_ARG below 1 ms. */
VIDMM_API vidmm_status vidmm_adapter_set_tdr_timeout(struct vidmm_adapter *adapter, uint64_t timeout_ns);

/* Look for a hung engine now and recover it.  *recovered (may be NULL)
 * receives 1 when a reset was made. */
VIDMM_API vidmm_status vidmm_adapter_detect_hangs(struct vidmm_adapter *adapter, int *recovered);

struct vidmm_tdr_stats {
    uint64_t timeout_ns;
    uint64_t hangs;                   /* hangs detected */
    uint64_t engine_resets;           /* resolved by resetting one engine */
    uint64_t adapter_resets;
    uint64_t paging_hangs;            /* hangs of the paging engine, and paging buffers that faulted */
    uint64_t devices_guilty;          /* devices put in error by a reset */
    uint64_t devices_innocent;        /* devices whose work a reset dropped */
    uint64_t allocations_restored;    /* restored in place from a system copy after an adapter reset */
    uint64_t allocations_lost;        /* zero-filled after an adapter reset */
};
VIDMM_API vidmm_status vidmm_adapter_get_tdr_stats(const struct vidmm_adapter *adapter, struct vidmm_tdr_stats *out);

/* Device reset status (vidmm_device_info.reset_status), as the
 * robustness extensions of graphics APIs report it. */
#define VIDMM_RESET_NONE     0u
#define VIDMM_RESET_GUILTY   1u       /* its work hung or faulted: the device is lost */
#define VIDMM_RESET_INNOCENT 2u       /* an adapter reset dropped some of its work; it goes on */

#ifdef __cplusplus
}
#endif
#endif
