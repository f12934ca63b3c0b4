/*
 * vidmm/status.h - the one result type of every fallible vidmm entry.
 *
 * Every public function returns a vidmm_status.  Success codes are >= 0,
 * failures are < 0, so "if (st < 0)" is the error test.  The values are
 * modelled on the NTSTATUS codes a WDDM driver sees (the name of the
 * closest NTSTATUS is given for each), but they are small integers so they
 * can be used as array indices and printed by vidmm_status_str().
 *
 * Two failures the standards keep apart on purpose:
 *   VIDMM_E_NO_HOST_MEMORY     the host (CPU) allocator refused a request;
 *   VIDMM_E_NO_SEGMENT_SPACE   the GPU segments cannot hold the request.
 */
#ifndef VIDMM_STATUS_H
#define VIDMM_STATUS_H

#include "vidmm/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vidmm_status {
    VIDMM_OK = 0,                     /* STATUS_SUCCESS */
    VIDMM_PENDING = 1,                /* STATUS_PENDING: queued, wait on the fence */
    VIDMM_NO_MORE = 2,                /* STATUS_NO_MORE_ENTRIES: an iteration is over (vidmm/observe.h) */

    VIDMM_E_INVALID_ARG = -1,         /* STATUS_INVALID_PARAMETER: NULL, zero, bad flag */
    VIDMM_E_INVALID_HANDLE = -2,      /* STATUS_INVALID_HANDLE: stale, foreign or wrong-type handle */
    VIDMM_E_NO_HOST_MEMORY = -3,      /* STATUS_NO_MEMORY: host allocator failed */
    VIDMM_E_NO_SEGMENT_SPACE = -4,    /* STATUS_GRAPHICS_NO_VIDEO_MEMORY: no room in any allowed segment */
    VIDMM_E_OVERFLOW = -5,            /* STATUS_INTEGER_OVERFLOW: size/offset arithmetic overflows */
    VIDMM_E_ALIGNMENT = -6,           /* STATUS_DATATYPE_MISALIGNMENT: bad or impossible alignment */
    VIDMM_E_BAD_SEGMENT_SET = -7,     /* preference outside the supported set, empty set, unknown segment */
    VIDMM_E_BAD_DRIVER_DESC = -8,     /* STATUS_GRAPHICS_INVALID_DRIVER_MODEL: driver described its segments wrongly */
    VIDMM_E_DRIVER_FAILURE = -9,      /* a driver op failed in a way the protocol does not allow */
    VIDMM_E_NOT_SUPPORTED = -10,      /* STATUS_NOT_SUPPORTED: valid request the adapter cannot do */
    VIDMM_E_BUSY = -11,               /* STATUS_DEVICE_BUSY: locked, displayed or pinned */
    VIDMM_E_INSUFFICIENT_DMA_BUFFER = -12, /* STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER: driver asks for a fresh paging buffer */
    VIDMM_E_ALLOCATION_BUSY = -13,    /* STATUS_GRAPHICS_ALLOCATION_BUSY: driver asks vidmm to wait for idle */
    VIDMM_E_TOO_LARGE = -14,          /* the size can never fit: larger than every allowed segment */
    VIDMM_E_COMMIT_LIMIT = -15,       /* STATUS_GRAPHICS_NO_VIDEO_MEMORY from a commit limit, not from fragmentation */
    VIDMM_E_STATE = -16,              /* STATUS_INVALID_DEVICE_STATE: call not valid in the object's state */
    VIDMM_E_DEVICE_LOST = -17,        /* STATUS_DEVICE_REMOVED */
    VIDMM_E_TIMEOUT = -18,            /* STATUS_TIMEOUT */
    VIDMM_E_PAGE_FAULT = -19,         /* a GPU access hit an invalid or protected GPU virtual address */
    VIDMM_E_OVER_BUDGET = -20,        /* E_OUTOFMEMORY of MakeResident: trim bytes_to_trim and retry */
    VIDMM_E_NOT_ACCESSED_PHYSICALLY = -21, /* an allocation list names an allocation without AccessedPhysically */
    VIDMM_E_INTERNAL = -22,           /* an internal invariant failed (a vidmm defect): the call stopped there */
    VIDMM_E_BUFFER_TOO_SMALL = -23    /* STATUS_BUFFER_TOO_SMALL: text truncated, *needed says how much (vidmm/observe.h) */
} vidmm_status;

/* A short constant English name, e.g. "VIDMM_E_NO_SEGMENT_SPACE".  Never NULL. */
VIDMM_API const char *vidmm_status_str(vidmm_status st);

/* Why the calling thread's last vidmm call failed, as one line: the
 * entry, the status, and - where a check knows it - the argument or
 * handle at fault and the rule it broke, e.g.
 *   "vidmm_evict: VIDMM_E_STATE: allocation 0x1000a: not on device
 *    0x30001's residency list".
 * Empty ("") after a call that succeeded.  Never NULL; the text belongs
 * to the thread and stays until its next vidmm call. */
VIDMM_API const char *vidmm_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
