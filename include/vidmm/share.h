/*
 * vidmm/share.h - shared allocations: one allocation held by several
 * processes of an adapter, each through a handle of its own.
 *
 * As a WDDM shared resource (D3DKMTCreateAllocation with CreateShared,
 * D3DKMTShareObjects, D3DKMTOpenResourceFromNtHandle): a process creates
 * the allocation shareable on one of its devices, exports a share token
 * (the NT handle's role; vidmmd passes it as a file descriptor,
 * docs/DAEMON.md), and another process of the same adapter opens the
 * token and gets its own allocation handle.  Each holder maps it in its
 * own GPU VA space (vidmm_gpuva_map), makes it resident through its own
 * devices (vidmm_make_resident) and locks it (vidmm_device_lock); the
 * bytes are the same through every holder.  The allocation lives until
 * its last holder lets go: vidmm_allocation_destroy with the holder's
 * handle, or the holder's process destroyed.
 *
 * docs/SHARING.md describes the model; docs/DECISIONS.md D53-D56 the
 * choices Microsoft's pages leave open (budget accounting, one handle per
 * process, eviction across holders, tokens).
 */
#ifndef VIDMM_SHARE_H
#define VIDMM_SHARE_H

#include "vidmm/export.h"

#include "vidmm/allocation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* vidmm_device_allocation_create flag (D3DKMT_CREATEALLOCATIONFLAGS
 * CreateShared): the allocation is the device's process's, and it may
 * be exported.  Only through a device: vidmm_allocation_create2 answers
 * VIDMM_E_INVALID_ARG for it (an adapter-wide allocation is every
 * process's already). */
#define VIDMM_CREATE_SHARED 0x2u

/* A share token: 128 random bits drawn when the shared allocation is
 * created, unrelated to any handle.  Valid while the allocation lives;
 * an all-zero token is never valid. */
struct vidmm_share_token {
    uint64_t value[2];
};

/* Export: the token of a shared allocation, for process (a holder) to
 * pass on.  Every export of one allocation gives the same token.
 * VIDMM_E_INVALID_HANDLE: a bad process, or an allocation handle that
 * process may not name; VIDMM_E_NOT_SUPPORTED: the allocation was not
 * created shareable (adapter-wide, or device-private without
 * VIDMM_CREATE_SHARED). */
VIDMM_API vidmm_status vidmm_share_export(struct vidmm_adapter *adapter, vidmm_handle process, vidmm_handle allocation,
                                          struct vidmm_share_token *token);

/* Open: process becomes a holder of the token's allocation; *allocation
 * is its own handle for it, valid in that process's calls only.
 * VIDMM_E_INVALID_HANDLE: a bad process, or a token that names no live
 * shared allocation (never valid, or its allocation is gone);
 * VIDMM_E_STATE: the process holds it already (its handle is the one to
 * use: one handle per process, docs/DECISIONS.md D54);
 * VIDMM_E_NO_HOST_MEMORY.  On failure nothing changed and *allocation
 * is untouched. */
VIDMM_API vidmm_status vidmm_share_open(struct vidmm_adapter *adapter, vidmm_handle process,
                                        const struct vidmm_share_token *token, vidmm_handle *allocation);

struct vidmm_share_info {
    uint32_t holders;            /* processes holding it (the creator included while it holds) */
    uint32_t creator_holds;      /* the creator has not let go */
    uint32_t locks;              /* CPU locks taken through this handle */
    uint32_t is_creator;         /* this handle is the creator's */
    vidmm_handle process;        /* the process this handle belongs to */
    uint64_t exports;            /* vidmm_share_export calls that gave its token */
};

/* The sharing state seen through one holder's handle (the creator's or
 * an opener's).  VIDMM_E_INVALID_HANDLE for anything else, including a
 * live allocation that is not shared. */
VIDMM_API vidmm_status vidmm_share_query(const struct vidmm_adapter *adapter, vidmm_handle allocation,
                                         struct vidmm_share_info *out);

#ifdef __cplusplus
}
#endif
#endif
