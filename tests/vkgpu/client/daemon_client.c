/*
 * daemon_client.c - a vidmmd client on an adapter that is a real Vulkan
 * device (vidmmd --driver vkgpu): three times the memory segments in
 * 1 MiB vkgpu allocations with seeded bytes, written and read back by
 * copy through the socket, made resident and evicted in groups; every
 * byte must come back.  Prints "vkgpu daemon client: ok" on success.
 * Usage: daemon_client SOCKET
 */
#include "vidmm-client/client.h"
#include "vidmm/vkgpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SZ (1u << 20)
#define GROUP 8u

static uint8_t byte_of(uint32_t seed, uint32_t i)
{
    uint32_t x = seed * 2654435761u ^ (i >> 2) * 40503u;
    x ^= x >> 15;
    return (uint8_t)(x >> (8 * (i & 3)));
}

static int rw(struct vidmm_client *c, vidmm_handle h, uint32_t seed, int write)
{
    uint8_t *p;
    if (vidmm_client_allocation_lock(c, h, (void **)&p) < 0)
        return -1;
    int bad = 0;
    for (uint32_t i = 0; i < SZ; i++) {
        if (write)
            p[i] = byte_of(seed, i);
        else
            bad |= p[i] != byte_of(seed, i);
    }
    return vidmm_client_allocation_unlock(c, h) < 0 || bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct vidmm_client *c;
    if (argc != 2 || vidmm_client_connect(argv[1], &c) < 0) {
        fprintf(stderr, "daemon_client: cannot connect\n");
        return 1;
    }
    struct vidmm_segment_info si;
    uint64_t local = 0;
    for (uint32_t id = 1; vidmm_client_segment_query(c, id, &si) == VIDMM_OK; id++)
        local += si.kind == VIDMM_SEGMENT_KIND_MEMORY ? si.size : 0;
    uint32_t n = (uint32_t)(3 * local / SZ) / GROUP * GROUP;
    vidmm_handle dev, q, *h = calloc(n ? n : 1, sizeof *h);
    int fail = !n || !h || vidmm_client_device_create(c, &dev) < 0 ||
               vidmm_client_paging_queue_create(c, dev, VIDMM_PAGING_QUEUE_NORMAL, &q) < 0;
    struct vkgpu_alloc_desc d = { VKGPU_ALLOC_LOCAL, 1, SZ };
    for (uint32_t i = 0; !fail && i < n; i++)
        fail = vidmm_client_device_allocation_create(c, dev, &d, sizeof d, 0, &h[i]) < 0 || rw(c, h[i], i, 1) < 0;
    unsigned bad = 0;
    for (uint32_t g = 0; !fail && g < n; g += GROUP) {
        struct vidmm_make_resident_args mr;
        memset(&mr, 0, sizeof mr);
        mr.paging_queue = q;
        mr.allocations = &h[g];
        mr.count = GROUP;
        vidmm_status st = vidmm_client_make_resident(c, dev, &mr);
        if (st == VIDMM_PENDING)
            st = vidmm_client_paging_queue_wait(c, q, mr.paging_fence_value, 10000000000ull);
        fail = st != VIDMM_OK;
        for (uint32_t i = g; !fail && i < g + GROUP; i++)
            bad += rw(c, h[i], i, 0) < 0;
        struct vidmm_evict_args ev = { &h[g], GROUP, 0, 0 };
        vidmm_client_evict(c, dev, &ev);
    }
    for (uint32_t i = 0; !fail && i < n; i++)   /* once more, from system memory */
        bad += rw(c, h[i], i, 0) < 0;
    for (uint32_t i = 0; h && i < n; i++)
        vidmm_client_allocation_destroy(c, h[i]);
    free(h);
    vidmm_client_disconnect(c);
    printf("vkgpu daemon client: %u x 1 MiB on %llu MiB, %u read back wrong: %s\n", n,
           (unsigned long long)(local >> 20), bad, fail || bad ? "FAILED" : "ok");
    return fail || bad ? 1 : 0;
}
