/*
 * d3dkmt/softgpu.h - an adapter for a thunk runtime without a GPU:
 * softgpu (libsoftgpu) behind libvidmm, opened and owned by the runtime.
 * Link libsoftgpu when calling it.
 */
#ifndef D3DKMT_SOFTGPU_H
#define D3DKMT_SOFTGPU_H

#include "d3dkmt/d3dkmthk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a softgpu device of the preset ("dgpu", "igpu", "wddm1",
 * "big"; NULL = "dgpu"), opens a vidmm adapter on it with the runtime's
 * host allocator, and registers it under luid
 * (d3dkmt_runtime_add_adapter).  Closing the runtime closes both.
 * synchronous != 0 runs softgpu's engines on the caller's thread
 * (deterministic tests).  STATUS_INVALID_PARAMETER for an unknown
 * preset or a bad luid, else the statuses of the steps. */
NTSTATUS d3dkmt_runtime_add_softgpu(struct d3dkmt_runtime *rt, const char *preset, int synchronous, LUID luid);

#ifdef __cplusplus
}
#endif
#endif
