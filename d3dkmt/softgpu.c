/*
 * softgpu.c - d3dkmt_runtime_add_softgpu: a softgpu adapter owned by
 * the runtime (in its own object file: programs that never call it do
 * not need libsoftgpu).
 */
#include "internal.h"

#include "d3dkmt/softgpu.h"
#include "vidmm/softgpu.h"

#include <string.h>

struct owned_softgpu {
    struct vidmm_host_allocator ha;
    struct softgpu *sg;
    struct vidmm_adapter *va;
};

static void release_softgpu(void *owner)
{
    struct owned_softgpu *o = owner;
    struct vidmm_host_allocator ha = o->ha;
    vidmm_adapter_close(o->va);
    softgpu_destroy(o->sg);
    ha.free(ha.user_data, o, sizeof *o, 16);
}

NTSTATUS d3dkmt_runtime_add_softgpu(struct d3dkmt_runtime *rt, const char *preset, int synchronous, LUID luid)
{
    struct softgpu_config cfg;
    struct vidmm_adapter_create_info info;
    struct owned_softgpu *o;
    vidmm_status vs;
    NTSTATUS st;
    if (!rt || (luid.LowPart == 0 && luid.HighPart == 0))
        return STATUS_INVALID_PARAMETER;
    o = d3dkmt_alloc(rt, sizeof *o);
    if (!o)
        return STATUS_NO_MEMORY;
    o->ha = rt->ha;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = preset ? preset : "dgpu";
    cfg.synchronous = synchronous;
    vs = softgpu_create(&cfg, &o->sg);
    if (vs < 0) {
        d3dkmt_free(rt, o, sizeof *o);
        return d3dkmt_nt(vs);
    }
    memset(&info, 0, sizeof info);
    softgpu_fill_adapter_create_info(o->sg, &info);
    info.abi_version = VIDMM_ABI_VERSION;
    info.host_allocator = &rt->ha;
    vs = vidmm_adapter_open(&info, &o->va);
    if (vs < 0) {
        softgpu_destroy(o->sg);
        d3dkmt_free(rt, o, sizeof *o);
        return d3dkmt_nt(vs);
    }
    st = d3dkmt_runtime_add_adapter(rt, o->va, luid);
    if (st != STATUS_SUCCESS) {
        release_softgpu(o);
        return st;
    }
    pthread_mutex_lock(&rt->lock);
    rt->adapters[rt->adapter_count - 1].release = release_softgpu;
    rt->adapters[rt->adapter_count - 1].owner = o;
    pthread_mutex_unlock(&rt->lock);
    return STATUS_SUCCESS;
}
