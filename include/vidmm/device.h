/*
 * vidmm/device.h - devices and contexts inside a process.
 *
 * As in WDDM, a process owns one GPU virtual address space and any number
 * of devices; a device owns contexts, each bound to one engine (node) of
 * the adapter and running in virtual mode (GPU virtual addresses through
 * the process's page tables; the root page table is bound to the context
 * with the driver's set_root_page_table) or physical mode (allocation and
 * patch lists).  A device is the unit of error: a GPU page fault raised
 * by one of its contexts puts it in the error state, after which it
 * answers VIDMM_E_DEVICE_LOST; other devices and processes go on.
 *
 * Handles are typed (device 3, context 4) with a 16-bit generation and
 * the adapter's salt: a stale handle, one of another type, or one of
 * another adapter is VIDMM_E_INVALID_HANDLE.  Destroying a device
 * destroys its contexts; destroying a process destroys its devices.
 */
#ifndef VIDMM_DEVICE_H
#define VIDMM_DEVICE_H

#include "vidmm/export.h"

#include "vidmm/allocation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Context modes (physical and virtual engines, as in Microsoft's
 * 'GPU virtual memory in WDDM 2.0' page). */
#define VIDMM_CONTEXT_VIRTUAL  0u
#define VIDMM_CONTEXT_PHYSICAL 1u

struct vidmm_context_desc {
    uint32_t node;               /* engine ordinal, < the driver's node_count */
    uint32_t mode;               /* VIDMM_CONTEXT_VIRTUAL or VIDMM_CONTEXT_PHYSICAL */
    uint32_t flags;              /* reserved, 0 */
    uint32_t reserved;
};

/* VIDMM_E_INVALID_HANDLE for a bad process. */
VIDMM_API vidmm_status vidmm_device_create(struct vidmm_adapter *adapter, vidmm_handle process, vidmm_handle *device);
/* Destroys the device's contexts too (their roots are unbound). */
VIDMM_API vidmm_status vidmm_device_destroy(struct vidmm_adapter *adapter, vidmm_handle device);

struct vidmm_device_info {
    vidmm_handle process;
    uint32_t lost;               /* in the error state */
    uint32_t contexts;
    uint64_t faults;             /* page faults raised by its contexts */
    uint64_t fault_va;           /* the first one */
    uint32_t fault_flags;        /* VIDMM_FAULT_* of the first one */
    uint32_t reset_status;       /* VIDMM_RESET_* (tdr.h): the last reset that concerned it */
    uint64_t resets;             /* resets that concerned it (guilty or innocent) */
};
VIDMM_API vidmm_status vidmm_device_query(const struct vidmm_adapter *adapter, vidmm_handle device,
                                struct vidmm_device_info *out);

/* VIDMM_E_INVALID_ARG for a node out of range, an unknown mode or
 * non-zero flags; VIDMM_E_NOT_SUPPORTED for a virtual context on an
 * adapter without GPU virtual addressing; VIDMM_E_DEVICE_LOST when the
 * device is in error. */
VIDMM_API vidmm_status vidmm_context_create(struct vidmm_adapter *adapter, vidmm_handle device,
                                  const struct vidmm_context_desc *desc, vidmm_handle *context);
VIDMM_API vidmm_status vidmm_context_destroy(struct vidmm_adapter *adapter, vidmm_handle context);

struct vidmm_context_info {
    vidmm_handle device, process;
    uint32_t node, mode;
    uint32_t root_bound;         /* virtual mode on a GpuMmu adapter */
    uint32_t reserved;
};
VIDMM_API vidmm_status vidmm_context_query(const struct vidmm_adapter *adapter, vidmm_handle context,
                                 struct vidmm_context_info *out);

/* ---- process-private allocations (docs/DECISIONS.md D38) ------------ */

/* D3DKMTCreateAllocation on a device: as vidmm_allocation_create2, but
 * the allocation belongs to the device's process.  Its handle is then
 * valid only in calls made for that process - GPU VA map and update,
 * make-resident, evict, offer, reclaim, physical allocation lists,
 * vidmm_device_lock - and VIDMM_E_INVALID_HANDLE in any other process's,
 * as a D3DKMT handle from another process's handle table would be.
 * Destroying the process destroys its allocations (unlocked and taken
 * off the display first; memory freed once its GPU work finished).
 * Allocations of vidmm_allocation_create/create2 stay adapter-wide:
 * every process may name them (the kernel-side case).  flags:
 * VIDMM_CREATE_RESIDENT, and VIDMM_CREATE_SHARED (vidmm/share.h): the
 * allocation may be exported to other processes, each of which then
 * holds it through a handle of its own; the process's destruction then
 * lets go of it rather than destroying it while others hold it.
 * VIDMM_E_INVALID_HANDLE for a bad device, VIDMM_E_DEVICE_LOST in the
 * error state, else the statuses of vidmm_allocation_create2. */
VIDMM_API vidmm_status vidmm_device_allocation_create(struct vidmm_adapter *adapter, vidmm_handle device,
                                            const void *private_data, size_t private_data_size, uint32_t flags,
                                            vidmm_handle *out);

/* D3DKMTLock2 / D3DKMTUnlock2: vidmm_allocation_lock/unlock on behalf of
 * the device's process; another process's private allocation is
 * VIDMM_E_INVALID_HANDLE and *cpu_address is left untouched.
 * (vidmm_allocation_lock itself is the adapter-wide, kernel-side view.) */
VIDMM_API vidmm_status vidmm_device_lock(struct vidmm_adapter *adapter, vidmm_handle device, vidmm_handle allocation,
                               void **cpu_address);
VIDMM_API vidmm_status vidmm_device_unlock(struct vidmm_adapter *adapter, vidmm_handle device, vidmm_handle allocation);

#ifdef __cplusplus
}
#endif
#endif
