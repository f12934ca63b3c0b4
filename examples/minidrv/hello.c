/*
 * hello.c - vidmm on minidrv, end to end: open an adapter, make a
 * process and a device, create three times more allocations than VRAM
 * holds, write them, move one through the aperture, cycle the others
 * through VRAM (vidmm evicts and restores as it must), go to standby and back,
 * check every byte, close.  Exits 0 when everything matched.
 *
 * Built against the public headers only (include/vidmm and minidrv.h).
 */
#include "minidrv.h"

#include "vidmm/vidmm.h"

#include <stdio.h>
#include <string.h>

#define N_ALLOCS 24u                 /* 24 MiB against 8 MiB of VRAM */
#define ALLOC_SIZE (1u << 20)
#define GROUP 4u                     /* allocations made resident together */

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        printf("FAILED: %s\n", what);
    }
}

/* The bytes allocation i should hold in generation g. */
static uint8_t pattern(uint32_t i, uint32_t g, uint64_t off)
{
    return (uint8_t)(i * 31u + g * 7u + (uint32_t)(off * 2654435761u >> 13));
}

static int write_bytes(struct vidmm_adapter *a, vidmm_handle h, uint32_t i, uint32_t g)
{
    uint8_t *p = NULL;
    if (vidmm_allocation_lock(a, h, (void **)&p) < 0)
        return -1;
    for (uint64_t o = 0; o < ALLOC_SIZE; o++)
        p[o] = pattern(i, g, o);
    return vidmm_allocation_unlock(a, h);
}

static int bytes_match(struct vidmm_adapter *a, vidmm_handle h, uint32_t i, uint32_t g)
{
    uint8_t *p = NULL;
    if (vidmm_allocation_lock(a, h, (void **)&p) < 0)
        return 0;
    int ok = 1;
    for (uint64_t o = 0; o < ALLOC_SIZE && ok; o++)
        ok = p[o] == pattern(i, g, o);
    vidmm_allocation_unlock(a, h);
    return ok;
}

/* WDDM 2 make-resident: on OVER_BUDGET a real runtime would trim its
 * own working set first; here it just says it cannot trim further. */
static vidmm_status make_resident(struct vidmm_adapter *a, vidmm_handle dev, vidmm_handle queue,
                                  const vidmm_handle *h, uint32_t n)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = queue;
    mr.allocations = h;
    mr.count = n;
    vidmm_status st = vidmm_make_resident(a, dev, &mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        st = vidmm_make_resident(a, dev, &mr);
    }
    if (st == VIDMM_PENDING)          /* paging queued: wait for the queue's fence */
        st = vidmm_paging_queue_wait(a, queue, mr.paging_fence_value, UINT64_MAX);
    return st;
}

int main(void)
{
    /* 1. The driver, then the adapter on it. */
    struct minidrv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.notify_fence = vidmm_cb_notify_fence;
    struct minidrv *md = NULL;
    if (minidrv_create(&cfg, &md) < 0) {
        printf("minidrv_create failed\n");
        return 1;
    }
    char msg[256] = "";
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    minidrv_fill_adapter_create_info(md, &ci);
    ci.error_message = msg;
    ci.error_message_size = sizeof msg;
    struct vidmm_adapter *a = NULL;
    vidmm_status st = vidmm_adapter_open(&ci, &a);
    if (st < 0) {
        printf("vidmm_adapter_open: %s: %s\n", vidmm_status_str(st), msg);
        minidrv_destroy(md);
        return 1;
    }
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    printf("adapter open: %u segments (with system memory), aperture is segment %u\n", ai.segment_count,
           ai.aperture_segment_id);

    /* 2. A process, a device and its paging queue. */
    vidmm_handle proc = 0, dev = 0, queue = 0;
    check(vidmm_process_create(a, &proc) == VIDMM_OK, "process_create");
    check(vidmm_device_create(a, proc, &dev) == VIDMM_OK, "device_create");
    check(vidmm_paging_queue_create(a, dev, VIDMM_PAGING_QUEUE_NORMAL, &queue) == VIDMM_OK, "paging_queue_create");

    /* 3. Allocations, created evicted (no CreateResident) so together
     * they may exceed VRAM; written through the CPU while in system
     * memory. */
    vidmm_handle h[N_ALLOCS];
    uint32_t gen[N_ALLOCS];
    struct minidrv_alloc_desc d = { MINIDRV_ALLOC_VRAM, 1, ALLOC_SIZE };
    for (uint32_t i = 0; i < N_ALLOCS; i++) {
        gen[i] = 0;
        check(vidmm_device_allocation_create(a, dev, &d, sizeof d, 0, &h[i]) == VIDMM_OK, "allocation_create");
        check(write_bytes(a, h[i], i, 0) == VIDMM_OK, "first write");
    }
    printf("created %u allocations of %u KiB: %u MiB against 8 MiB of VRAM\n", N_ALLOCS, ALLOC_SIZE >> 10,
           N_ALLOCS * ALLOC_SIZE >> 20);

    /* 4. The aperture: an AccessedPhysically allocation moved to system
     * memory is mapped into the aperture (MAP_APERTURE_SEGMENT), then
     * moved back into VRAM and out to plain system memory (UNMAP). */
    struct minidrv_alloc_desc rd = { MINIDRV_ALLOC_RING, 1, 64u << 10 };
    vidmm_handle ring = 0;
    check(vidmm_allocation_create(a, &rd, sizeof rd, &ring) == VIDMM_OK, "ring create");
    uint8_t *p = NULL;
    if (vidmm_allocation_lock(a, ring, (void **)&p) == VIDMM_OK) {
        memset(p, 0x5A, 64u << 10);
        vidmm_allocation_unlock(a, ring);
    }
    struct vidmm_allocation_state rst;
    check(vidmm_allocation_move(a, ring, 2) == VIDMM_OK, "ring to the aperture");
    vidmm_allocation_query(a, ring, &rst);
    check(rst.aperture_mapped == 1, "ring mapped into the aperture");
    check(vidmm_allocation_move(a, ring, 1) == VIDMM_OK, "ring back to VRAM");
    vidmm_allocation_query(a, ring, &rst);
    check(rst.segment_id == 1 && !rst.aperture_mapped, "ring in VRAM, unmapped");
    if (vidmm_allocation_lock(a, ring, (void **)&p) == VIDMM_OK) {
        check(p[0] == 0x5A && p[(64u << 10) - 1] == 0x5A, "ring bytes through the aperture and back");
        vidmm_allocation_unlock(a, ring);
    }
    printf("ring: VRAM -> aperture (mapped) -> VRAM, bytes kept\n");

    /* 5. Three rounds over every group: make it resident (vidmm restores
     * it into VRAM, evicting older groups to make room), check the bytes
     * where they are now, write a new generation, and release it. */
    for (uint32_t round = 0; round < 3; round++)
        for (uint32_t g0 = 0; g0 < N_ALLOCS; g0 += GROUP) {
            check(make_resident(a, dev, queue, &h[g0], GROUP) == VIDMM_OK, "make_resident");
            for (uint32_t i = g0; i < g0 + GROUP; i++) {
                struct vidmm_allocation_state s;
                vidmm_allocation_query(a, h[i], &s);
                check(s.segment_id == 1, "resident in VRAM");
                check(bytes_match(a, h[i], i, gen[i]), "bytes after restore");
                check(write_bytes(a, h[i], i, ++gen[i]) == VIDMM_OK, "write in VRAM");
            }
            check(vidmm_evict(a, dev, &(struct vidmm_evict_args){ .allocations = &h[g0], .count = GROUP, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY }) == VIDMM_OK, "evict");
        }
    struct vidmm_residency_stats rs;
    vidmm_residency_get_stats(a, &rs);
    printf("3 rounds: %llu evictions, %llu restores, %llu MiB paged out\n", (unsigned long long)rs.evictions,
           (unsigned long long)rs.restores, (unsigned long long)(rs.bytes_evicted >> 20));
    check(rs.evictions > 0 && rs.restores > 0, "over-commitment evicted and restored");

    /* 6. Standby and back: minidrv loses VRAM going down, so whatever
     * was resident must come back from vidmm's copies. */
    check(vidmm_adapter_set_power_state(a, VIDMM_POWER_STANDBY) == VIDMM_OK, "standby");
    check(vidmm_adapter_set_power_state(a, VIDMM_POWER_D0) == VIDMM_OK, "resume");
    for (uint32_t g0 = 0; g0 < N_ALLOCS; g0 += GROUP) {
        check(make_resident(a, dev, queue, &h[g0], GROUP) == VIDMM_OK, "make_resident after resume");
        for (uint32_t i = g0; i < g0 + GROUP; i++)
            check(bytes_match(a, h[i], i, gen[i]), "bytes after standby");
        vidmm_evict(a, dev, &(struct vidmm_evict_args){ .allocations = &h[g0], .count = GROUP, .flags = VIDMM_EVICT_ONLY_IF_NECESSARY });
    }
    printf("standby and resume: every byte back\n");

    /* 7. Close: allocations, device, process, adapter, driver. */
    char report[512];
    check(vidmm_adapter_check(a, report, sizeof report) == 0, "adapter check");
    for (uint32_t i = 0; i < N_ALLOCS; i++)
        check(vidmm_allocation_destroy(a, h[i]) == VIDMM_OK, "destroy");
    check(vidmm_allocation_destroy(a, ring) == VIDMM_OK, "destroy ring");
    check(vidmm_device_destroy(a, dev) == VIDMM_OK, "device_destroy");
    check(vidmm_process_destroy(a, proc) == VIDMM_OK, "process_destroy");
    vidmm_adapter_close(a);
    minidrv_destroy(md);
    printf("minidrv hello: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
