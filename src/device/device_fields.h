/*
 * device_fields.h - the device module's objects (device/device.c): a
 * device and its contexts.  Embedded by nothing, but read by the layers
 * below that serve them (fences and faults, residency lists, submission),
 * so model/objects.h includes this header; nothing else outside
 * src/device/ does.  Types only; a device's residency list and fast table
 * are residency's member `res` (residency/residency_fields.h).
 */
#ifndef VIDMM_DEVICE_DEVICE_FIELDS_H
#define VIDMM_DEVICE_DEVICE_FIELDS_H

#include "vidmm/device.h"
#include "residency/residency_fields.h"

#include <stdint.h>

struct vidmm_process;
struct vidmm_device;

struct vidmm_context {
    struct vidmm_device *device;
    vidmm_handle self;
    struct vidmm_context *prev, *next;  /* in the device's list */
    uint32_t node, mode;
    int root_bound;                 /* set_root_page_table told the driver */
    /* Monitored fence (submit/submit.c): submitted under the submission
     * lock, completed under the fence lock (the driver reports it). */
    uint64_t fence_submitted;
    uint64_t fence_completed;
};

struct vidmm_device {
    struct vidmm_process *process;
    vidmm_handle self;
    struct vidmm_device *prev, *next;   /* in the process's list */
    struct vidmm_context *contexts;
    uint32_t context_count;
    /* Error state (guarded by the fence lock: faults come from driver threads). */
    int lost;
    uint32_t fault_flags;
    uint64_t fault_va;
    uint64_t faults;
    uint32_t reset_status;          /* VIDMM_RESET_* (guarded by the fence lock) */
    uint64_t resets;
    struct vidmm_device_residency res; /* residency/residency_fields.h */
};

#endif
