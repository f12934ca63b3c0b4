/*
 * basic.c - libvidmm-client against a running vidmmd: the API subset
 * with the library's statuses, handles private to a connection, CPU
 * access by copy (a stale pointer after unlock reaches only the client's
 * copy), paging-queue waits answered later, GPU VA.
 * Usage: basic SOCKET
 */
#include "dtest.h"

#include <unistd.h>

#define MiB (1u << 20)

static void api(const char *sock)
{
    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    if (!c)
        return;
    struct vidmm_client_info ci;
    CHECK_ST(vidmm_client_query(c, &ci), VIDMM_OK);
    CHECK(ci.pid == (uint32_t)getpid(), "SO_PEERCRED pid %u, we are %ld", ci.pid, (long)getpid());

    vidmm_handle dev = 0, q = 0, h = 0, t = 0;
    CHECK_ST(vidmm_client_device_create(c, &dev), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, VIDMM_PAGING_QUEUE_NORMAL, &q), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, 7, &t), VIDMM_E_INVALID_ARG);   /* as the library */
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, 64 * 1024);
    CHECK_ST(vidmm_client_allocation_create(c, &d, sizeof d, &h), VIDMM_OK);
    struct vidmm_client_allocation_info ai;
    CHECK_ST(vidmm_client_allocation_query(c, h, &ai), VIDMM_OK);
    CHECK(ai.size == 64 * 1024 && ai.resident, "size %llu resident %u", (unsigned long long)ai.size, ai.resident);

    /* The library's argument statuses come back unchanged. */
    struct softgpu_alloc_desc zero = dt_desc(SOFTGPU_ALLOC_CONSTANT, 0);
    vidmm_handle bad = 0;
    CHECK_ST(vidmm_client_allocation_create(c, &zero, sizeof zero, &bad), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0x80, &bad), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_allocation_destroy(c, 12345), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_device_destroy(c, q), VIDMM_E_INVALID_HANDLE);   /* a queue is not a device */
    struct softgpu_alloc_desc huge = dt_desc(SOFTGPU_ALLOC_TEXTURE, (uint64_t)1 << 40);
    CHECK_ST(vidmm_client_allocation_create(c, &huge, sizeof huge, &bad), VIDMM_E_TOO_LARGE);
    struct softgpu_alloc_desc inv = dt_desc(SOFTGPU_ALLOC_TEXTURE, 64 * 1024);
    inv.cpu_visible = 0;
    vidmm_handle hi = 0;
    CHECK_ST(vidmm_client_allocation_create(c, &inv, sizeof inv, &hi), VIDMM_OK);
    void *pp = NULL;
    CHECK_ST(vidmm_client_allocation_lock(c, hi, &pp), VIDMM_E_NOT_SUPPORTED);
    CHECK_ST(vidmm_client_allocation_unlock(c, h), VIDMM_E_STATE);

    /* Make-resident of a list, evict, wait. */
    vidmm_handle list[8];
    for (int i = 0; i < 8; i++) {
        struct softgpu_alloc_desc td = dt_desc(SOFTGPU_ALLOC_TEXTURE, 256 * 1024);
        CHECK_ST(vidmm_client_allocation_create2(c, &td, sizeof td, 0, &list[i]), VIDMM_OK);
    }
    CHECK_ST(vidmm_client_allocation_query(c, list[0], &ai), VIDMM_OK);
    CHECK(!ai.resident, "create2 without CREATE_RESIDENT starts evicted");
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = list;
    mr.count = 8;
    vidmm_status st = vidmm_client_make_resident(c, dev, &mr);
    CHECK(st == VIDMM_OK || st == VIDMM_PENDING, "make_resident: %s", vidmm_status_str(st));
    CHECK_ST(vidmm_client_paging_queue_wait(c, q, mr.paging_fence_value, UINT64_MAX), VIDMM_OK);
    uint64_t done = 0;
    CHECK_ST(vidmm_client_paging_queue_fence(c, q, &done), VIDMM_OK);
    CHECK(done >= mr.paging_fence_value, "fence %llu < %llu", (unsigned long long)done,
          (unsigned long long)mr.paging_fence_value);
    CHECK_ST(vidmm_client_paging_queue_wait(c, q, done + 1000, 0), VIDMM_E_TIMEOUT);
    CHECK_ST(vidmm_client_paging_queue_wait(c, q, done + 1000, 20 * 1000 * 1000), VIDMM_E_TIMEOUT); /* parked, then timed out */
    CHECK_ST(vidmm_client_allocation_query(c, list[3], &ai), VIDMM_OK);
    CHECK(ai.resident, "resident after make-resident");
    vidmm_handle mixed[2] = { list[0], 999 };
    mr.allocations = mixed;
    mr.count = 2;
    CHECK_ST(vidmm_client_make_resident(c, dev, &mr), VIDMM_E_INVALID_HANDLE);
    struct vidmm_evict_args ev;
    memset(&ev, 0, sizeof ev);
    ev.allocations = list;
    ev.count = 8;
    CHECK_ST(vidmm_client_evict(c, dev, &ev), VIDMM_OK);
    CHECK_ST(vidmm_client_evict(c, dev, &ev), VIDMM_E_STATE);   /* not on the list any more */
    CHECK_ST(vidmm_client_allocation_query(c, list[3], &ai), VIDMM_OK);
    CHECK(!ai.resident, "evicted");

    struct vidmm_video_memory_info vi;
    CHECK_ST(vidmm_client_query_video_memory_info(c, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    CHECK(vi.budget > 0, "budget %llu", (unsigned long long)vi.budget);
    CHECK_ST(vidmm_client_query_video_memory_info(c, (enum vidmm_segment_group)2, &vi), VIDMM_E_INVALID_ARG);

    /* GPU VA of the connection's process. */
    uint64_t va = 0, mva = 0;
    CHECK_ST(vidmm_client_gpuva_reserve(c, 0, 0, 0, 1u << 20, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va), VIDMM_OK);
    CHECK_ST(vidmm_client_gpuva_map(c, va, 0, 0, h, 0, 64 * 1024, 0, 0, &mva), VIDMM_OK);
    CHECK(mva == va, "mapped at %llx, reserved %llx", (unsigned long long)mva, (unsigned long long)va);
    CHECK_ST(vidmm_client_gpuva_free(c, va, 1u << 20), VIDMM_OK);
    CHECK_ST(vidmm_client_gpuva_free(c, va, 1u << 20), VIDMM_E_INVALID_ARG);

    /* Destroying the device takes its queues (the handle goes stale). */
    vidmm_handle dev2 = 0, q2 = 0;
    CHECK_ST(vidmm_client_device_create(c, &dev2), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev2, 0, &q2), VIDMM_OK);
    CHECK_ST(vidmm_client_device_destroy(c, dev2), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_fence(c, q2, &done), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_device_destroy(c, dev2), VIDMM_E_INVALID_HANDLE);

    for (int i = 0; i < 8; i++)
        CHECK_ST(vidmm_client_allocation_destroy(c, list[i]), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_destroy(c, list[0]), VIDMM_E_INVALID_HANDLE);   /* stale */
    CHECK_ST(vidmm_client_allocation_destroy(c, hi), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_destroy(c, h), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_destroy(c, q), VIDMM_OK);
    CHECK_ST(vidmm_client_device_destroy(c, dev), VIDMM_OK);
    vidmm_client_disconnect(c);
}

/* Client B naming client A's handle values gets VIDMM_E_INVALID_HANDLE,
 * even for slots B uses itself. */
static void isolation(const char *sock)
{
    struct vidmm_client *a = NULL, *b = NULL;
    CHECK_ST(vidmm_client_connect(sock, &a), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(sock, &b), VIDMM_OK);
    if (!a || !b)
        return;
    vidmm_handle da = 0, qa = 0, ha = 0, db = 0, qb = 0, hb = 0;
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, 64 * 1024);
    CHECK_ST(vidmm_client_device_create(a, &da), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(a, da, 0, &qa), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_create(a, &d, sizeof d, &ha), VIDMM_OK);
    CHECK_ST(vidmm_client_device_create(b, &db), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(b, db, 0, &qb), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_create(b, &d, sizeof d, &hb), VIDMM_OK);
    CHECK(ha != hb && da != db, "two connections gave the same handle values");
    CHECK_ST(dt_fill(a, ha, 1, 0, 64 * 1024), VIDMM_OK);
    void *p = NULL;
    CHECK_ST(vidmm_client_allocation_lock(b, ha, &p), VIDMM_E_INVALID_HANDLE);
    CHECK(p == NULL, "no pointer for a foreign handle");
    CHECK_ST(vidmm_client_allocation_destroy(b, ha), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_device_destroy(b, da), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_paging_queue_destroy(b, qa), VIDMM_E_INVALID_HANDLE);
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = qb;
    mr.allocations = &ha;
    mr.count = 1;
    CHECK_ST(vidmm_client_make_resident(b, db, &mr), VIDMM_E_INVALID_HANDLE);
    mr.paging_queue = qa;
    mr.allocations = &hb;
    CHECK_ST(vidmm_client_make_resident(b, da, &mr), VIDMM_E_INVALID_HANDLE);
    uint64_t va = 0;
    CHECK_ST(vidmm_client_gpuva_map(b, 0, 0, 0, ha, 0, 64 * 1024, 0, 0, &va), VIDMM_E_INVALID_HANDLE);
    /* A's objects are intact. */
    CHECK(dt_verify(a, ha, 1, 0, 64 * 1024) == 1, "A's bytes");
    CHECK_ST(vidmm_client_allocation_destroy(a, ha), VIDMM_OK);
    vidmm_client_disconnect(a);
    vidmm_client_disconnect(b);
}

/* Lock is copy-in/copy-out: writes through a pointer kept after unlock
 * reach only this client's copy. */
static void stale_pointer(const char *sock)
{
    struct vidmm_client *a = NULL, *b = NULL;
    CHECK_ST(vidmm_client_connect(sock, &a), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(sock, &b), VIDMM_OK);
    if (!a || !b)
        return;
    const uint64_t size = 256 * 1024;
    vidmm_handle ha = 0, hb = 0;
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, size);
    CHECK_ST(vidmm_client_allocation_create(a, &d, sizeof d, &ha), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_create(b, &d, sizeof d, &hb), VIDMM_OK);
    CHECK_ST(dt_fill(a, ha, 7, 0, size), VIDMM_OK);
    CHECK_ST(dt_fill(b, hb, 8, 0, size), VIDMM_OK);
    uint8_t *p = NULL, *p2 = NULL;
    CHECK_ST(vidmm_client_allocation_lock(a, ha, (void **)&p), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_lock(a, ha, (void **)&p2), VIDMM_OK);   /* nested: same mapping */
    CHECK(p == p2, "nested lock: %p vs %p", (void *)p, (void *)p2);
    CHECK_ST(vidmm_client_allocation_destroy(a, ha), VIDMM_E_BUSY);
    CHECK_ST(vidmm_client_allocation_unlock(a, ha), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_unlock(a, ha), VIDMM_OK);
    /* The stale pointer: every byte overwritten after unlock. */
    memset(p, 0xEE, size);
    CHECK(dt_verify(a, ha, 7, 0, size) == 1, "A's allocation changed through a pointer kept after unlock");
    CHECK(dt_verify(b, hb, 8, 0, size) == 1, "B's allocation changed");
    /* The same after eviction: the copy is not the allocation's memory. */
    vidmm_handle dev = 0, q = 0;
    CHECK_ST(vidmm_client_device_create(a, &dev), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(a, dev, 0, &q), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_lock(a, ha, (void **)&p), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_unlock(a, ha), VIDMM_OK);
    CHECK_ST(dt_make_resident(a, dev, q, &ha, 1), VIDMM_OK);
    struct vidmm_evict_args ev;
    memset(&ev, 0, sizeof ev);
    ev.allocations = &ha;
    ev.count = 1;
    CHECK_ST(vidmm_client_evict(a, dev, &ev), VIDMM_OK);
    memset(p, 0x11, size);
    CHECK(dt_verify(a, ha, 7, 0, size) == 1, "A's allocation changed after eviction through a stale pointer");
    CHECK(dt_verify(b, hb, 8, 0, size) == 1, "B's allocation changed");
    /* Writes under lock do reach it. */
    CHECK_ST(dt_fill(a, ha, 9, 0, size), VIDMM_OK);
    CHECK(dt_verify(a, ha, 9, 0, size) == 1, "written under lock");
    vidmm_client_disconnect(a);   /* with its allocation alive: the daemon destroys it */
    CHECK(dt_verify(b, hb, 8, 0, size) == 1, "B after A left");
    uint32_t viol = 99, clients = 0;
    uint64_t live = 0;
    CHECK_ST(vidmm_client_debug_check(b, &viol, &clients, &live), VIDMM_OK);
    CHECK(viol == 0, "adapter check: %u violations", viol);
    CHECK_ST(vidmm_client_allocation_destroy(b, hb), VIDMM_OK);
    vidmm_client_disconnect(b);
}

static void echo(const char *sock)
{
    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    if (!c)
        return;
    static uint8_t big[65528];
    CHECK_ST(vidmm_client_echo(c, "ping", 4), VIDMM_OK);
    CHECK_ST(vidmm_client_echo(c, big, sizeof big), VIDMM_OK);
    CHECK_ST(vidmm_client_echo(c, big, sizeof big + 1), VIDMM_E_INVALID_ARG);
    vidmm_client_disconnect(c);
    struct vidmm_client *none = NULL;
    CHECK_ST(vidmm_client_connect("/nonexistent/vidmmd.sock", &none), VIDMM_E_DEVICE_LOST);
}

/* Each connection is a vidmm process: past the daemon's bound of live
 * processes (run.sh starts it with --max-processes BOUND and passes BOUND
 * here) - or earlier, when the segments cannot hold another process's
 * root page table - the daemon answers the refusal (VIDMM_E_BUSY,
 * VIDMM_E_NO_SEGMENT_SPACE) and closes; the others go on. */
static void capacity(const char *sock, uint32_t bound)
{
    struct vidmm_client **cs = calloc(bound + 4, sizeof *cs);
    CHECK(cs != NULL, "calloc");
    if (!cs)
        return;
    uint32_t ok = 0, busy = 0, no_space = 0;
    for (uint32_t i = 0; i < bound + 4; i++) {
        vidmm_status st = vidmm_client_connect(sock, &cs[i]);
        if (st == VIDMM_OK)
            ok++;
        else if (st == VIDMM_E_BUSY)
            busy++;
        else if (st == VIDMM_E_NO_SEGMENT_SPACE)
            no_space++;
        else
            printf("%s: connection %u: %s\n", dt_name, i, vidmm_status_str(st));
    }
    CHECK(ok <= bound && ok > bound / 2 && ok + busy + no_space == bound + 4,
          "%u connections served, %u refused busy, %u refused for segment space", ok, busy, no_space);
    /* The bound is the first limit (it is below the segments' room):
     * the refusals past it are VIDMM_E_BUSY. */
    CHECK(busy >= 4, "%u refused busy (want at least the 4 past the bound)", busy);
    vidmm_handle d = 0;
    CHECK_ST(vidmm_client_device_create(cs[0], &d), VIDMM_OK);
    for (uint32_t i = 0; i < bound + 4; i++)
        vidmm_client_disconnect(cs[i]);
    free(cs);
    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);   /* the slots came back */
    vidmm_client_disconnect(c);
}

int main(int argc, char **argv)
{
    dt_name = "daemon basic";
    if (argc < 3 || atoi(argv[2]) < 8) {
        fprintf(stderr, "usage: basic SOCKET BOUND (the daemon's --max-processes)\n");
        return 2;
    }
    api(argv[1]);
    isolation(argv[1]);
    stale_pointer(argv[1]);
    echo(argv[1]);
    capacity(argv[1], (uint32_t)atoi(argv[2]));
    return dt_summary();
}
