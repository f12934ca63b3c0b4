/*
 * d3dkmt_consumer.c - a program that uses an installed vidmm's D3DKMT
 * front end and client library as a user would: <d3dkmt/...> and
 * <vidmm-client/client.h>, linked through pkg-config (vidmm-d3dkmt,
 * vidmm-client) or CMake (vidmm::d3dkmt, vidmm::client).  It opens a
 * runtime on softgpu, an adapter and a device, creates an allocation,
 * and asks the client library where vidmmd would listen.
 */
#include <stdio.h>
#include <string.h>

#include <d3dkmt/d3dkmthk.h>
#include <d3dkmt/softgpu.h>
#include <vidmm-client/client.h>
#include <vidmm/softgpu.h>

int main(void)
{
    struct d3dkmt_runtime_create_info ci = { D3DKMT_RUNTIME_ABI_VERSION, NULL };
    struct d3dkmt_runtime *rt = NULL;
    LUID luid = { 1, 0 };
    char sock[108];
    if (d3dkmt_runtime_open(&ci, &rt) != STATUS_SUCCESS || d3dkmt_runtime_add_softgpu(rt, "dgpu", 1, luid) != STATUS_SUCCESS ||
        d3dkmt_runtime_bind_thread(rt) != STATUS_SUCCESS) {
        printf("d3dkmt_consumer: no runtime\n");
        return 1;
    }
    D3DKMT_OPENADAPTERFROMLUID oa;
    memset(&oa, 0, sizeof oa);
    oa.AdapterLuid = luid;
    D3DKMT_CREATEDEVICE cd;
    memset(&cd, 0, sizeof cd);
    struct softgpu_alloc_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.kind = SOFTGPU_ALLOC_CONSTANT;
    desc.cpu_visible = 1;
    desc.size = 65536;
    D3DDDI_ALLOCATIONINFO2 info;
    memset(&info, 0, sizeof info);
    info.pPrivateDriverData = &desc;
    info.PrivateDriverDataSize = sizeof desc;
    D3DKMT_CREATEALLOCATION ca;
    memset(&ca, 0, sizeof ca);
    int ok = D3DKMTOpenAdapterFromLuid(&oa) == STATUS_SUCCESS;
    cd.hAdapter = oa.hAdapter;
    ok = ok && D3DKMTCreateDevice(&cd) == STATUS_SUCCESS;
    ca.hDevice = cd.hDevice;
    ca.NumAllocations = 1;
    ca.pAllocationInfo2 = &info;
    ok = ok && D3DKMTCreateAllocation2(&ca) == STATUS_SUCCESS && info.hAllocation;
    ok = ok && vidmm_client_default_socket(sock, sizeof sock)[0] == '/';
    d3dkmt_runtime_close(rt);
    printf("d3dkmt_consumer: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
