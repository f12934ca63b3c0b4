/*
 * api.c - the rest of the vidmm API over the wire (docs/PROTOCOL.md
 * opcodes 19-31, 64-65), against a running vidmmd: adapter and segment
 * queries, allocation priority, offer and reclaim, reservations, budgets,
 * trim events (delivered on the caller's thread, from a call or from
 * vidmm_client_poll_events), GPU VA update batches, contexts, virtual
 * submission and context fences.  Each call is checked with the
 * library's statuses, and with another connection's handles.
 *
 * Usage: api SOCKET         every case (the daemon runs with --allow-set-budget)
 *        api SOCKET cross   a trim event raised by another process's
 *                           make-resident (a daemon with little local
 *                           memory and automatic budgets)
 */
#include "dtest.h"

#include <poll.h>

#define MiB (1u << 20)

/* What the trim callback saw. */
struct trim_seen {
    int calls;
    vidmm_handle device;
    uint32_t flags;
    uint64_t bytes;
    struct vidmm_client *conn;
    int reentered;            /* the callback called the library: OK */
};

static void on_trim(void *context, vidmm_handle device, uint32_t flags, uint64_t bytes_to_trim)
{
    struct trim_seen *t = context;
    t->calls++;
    t->device = device;
    t->flags = flags;
    t->bytes = bytes_to_trim;
    /* Called without the connection's lock: the library is usable here. */
    struct vidmm_video_memory_info vi;
    if (t->conn && vidmm_client_query_video_memory_info(t->conn, VIDMM_SEGMENT_GROUP_LOCAL, &vi) == VIDMM_OK)
        t->reentered++;
}

static void queries(struct vidmm_client *c)
{
    struct vidmm_adapter_info ai;
    CHECK_ST(vidmm_client_adapter_query_info(c, &ai), VIDMM_OK);
    CHECK(ai.segment_count > 2 && ai.wddm_version >= 0x2000, "segments %u wddm %#x", ai.segment_count,
          ai.wddm_version);
    CHECK_ST(vidmm_client_adapter_query_info(c, NULL), VIDMM_E_INVALID_ARG);
    uint64_t local = 0;
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        CHECK_ST(vidmm_client_segment_query(c, id, &si), VIDMM_OK);
        CHECK(si.id == id, "segment %u answered as %u", id, si.id);
        if (si.kind == VIDMM_SEGMENT_KIND_MEMORY)
            local += si.size;
    }
    CHECK(local > 0, "no memory segment");
    struct vidmm_segment_info si;
    CHECK_ST(vidmm_client_segment_query(c, ai.segment_count, &si), VIDMM_E_INVALID_ARG);
}

static void residency(struct vidmm_client *c, struct vidmm_client *other)
{
    vidmm_handle dev = 0, q = 0, h[2] = { 0, 0 };
    CHECK_ST(vidmm_client_device_create(c, &dev), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, VIDMM_PAGING_QUEUE_NORMAL, &q), VIDMM_OK);
    for (int i = 0; i < 2; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, MiB);
        CHECK_ST(vidmm_client_device_allocation_create(c, dev, &d, sizeof d, 0, &h[i]), VIDMM_OK);
    }
    CHECK_ST(dt_make_resident(c, dev, q, h, 2), VIDMM_OK);

    /* Priority: the library's scale, 0 invalid; another connection's
     * handle is unknown. */
    CHECK_ST(vidmm_client_allocation_set_priority(c, h[0], VIDMM_PRIORITY_HIGH), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_set_priority(c, h[0], 0), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_allocation_set_priority(other, h[0], VIDMM_PRIORITY_HIGH), VIDMM_E_INVALID_HANDLE);

    /* Offer, then reclaim: the content survived or was discarded, and
     * the paging fence is waitable. */
    vidmm_handle bad[2] = { h[0], 12345 };
    CHECK_ST(vidmm_client_offer(c, dev, bad, 2, VIDMM_OFFER_LOW), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_offer(other, dev, h, 2, VIDMM_OFFER_LOW), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_offer(c, dev, h, 2, 0), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_offer(c, dev, h, 2, VIDMM_OFFER_LOW), VIDMM_OK);
    uint32_t results[2] = { 77, 77 };
    uint64_t fence = 0;
    CHECK_ST(vidmm_client_reclaim(other, q, h, 2, results, &fence), VIDMM_E_INVALID_HANDLE);
    vidmm_status st = vidmm_client_reclaim(c, q, h, 2, results, &fence);
    CHECK(st == VIDMM_OK || st == VIDMM_PENDING, "reclaim: %s", vidmm_status_str(st));
    for (int i = 0; i < 2; i++)
        CHECK(results[i] == VIDMM_RECLAIM_OK || results[i] == VIDMM_RECLAIM_DISCARDED, "result %u", results[i]);
    CHECK_ST(vidmm_client_paging_queue_wait(c, q, fence, UINT64_MAX), VIDMM_OK);
    CHECK_ST(vidmm_client_reclaim(c, q, h, 2, NULL, &fence), VIDMM_E_INVALID_ARG);

    /* Reservations: half of what is available; more than available is
     * refused and changes nothing. */
    struct vidmm_video_memory_info vi;
    CHECK_ST(vidmm_client_query_video_memory_info(c, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    uint64_t half = vi.available_for_reservation / 2;
    CHECK_ST(vidmm_client_change_video_memory_reservation(c, VIDMM_SEGMENT_GROUP_LOCAL, half), VIDMM_OK);
    CHECK_ST(vidmm_client_query_video_memory_info(c, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    CHECK(vi.current_reservation == half, "reservation %llu, want %llu", (unsigned long long)vi.current_reservation,
          (unsigned long long)half);
    CHECK(vidmm_client_change_video_memory_reservation(c, VIDMM_SEGMENT_GROUP_LOCAL,
                                                       vi.available_for_reservation + 4096) < 0,
          "reservation past the available accepted");
    CHECK_ST(vidmm_client_query_video_memory_info(c, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    CHECK(vi.current_reservation == half, "a refused change changed it");
    CHECK_ST(vidmm_client_change_video_memory_reservation(c, (enum vidmm_segment_group)2, 0), VIDMM_E_INVALID_ARG);
    /* The other process's reservation is its own. */
    CHECK_ST(vidmm_client_query_video_memory_info(other, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    CHECK(vi.current_reservation == 0, "another process's reservation %llu", (unsigned long long)vi.current_reservation);
    CHECK_ST(vidmm_client_change_video_memory_reservation(c, VIDMM_SEGMENT_GROUP_LOCAL, 0), VIDMM_OK);

    /* Trim events: over a pinned budget, the callback hears of it on
     * this thread when the call that caused it returns. */
    struct trim_seen ts;
    memset(&ts, 0, sizeof ts);
    ts.conn = c;
    CHECK_ST(vidmm_client_register_trim_notification(other, dev, on_trim, &ts), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_register_trim_notification(c, dev, on_trim, &ts), VIDMM_OK);
    CHECK_ST(vidmm_client_process_set_budget(c, VIDMM_SEGMENT_GROUP_LOCAL, MiB), VIDMM_OK);
    CHECK(ts.calls > 0, "no trim callback after the budget went under the usage");
    CHECK(ts.device == dev, "callback for %#llx, registered %#llx", (unsigned long long)ts.device,
          (unsigned long long)dev);
    CHECK((ts.flags & VIDMM_TRIM_TO_BUDGET) && ts.bytes >= MiB, "flags %#x bytes %llu", ts.flags,
          (unsigned long long)ts.bytes);
    CHECK(ts.reentered == ts.calls, "the callback could not call the library");
    uint32_t n = 99;
    CHECK_ST(vidmm_client_poll_events(c, &n), VIDMM_OK);
    CHECK(n == 0, "%u events left after the call delivered them", n);
    /* Unregistered: the next over-budget walk tells nobody. */
    CHECK_ST(vidmm_client_register_trim_notification(c, dev, NULL, NULL), VIDMM_OK);
    int before = ts.calls;
    CHECK_ST(vidmm_client_process_set_budget(c, VIDMM_SEGMENT_GROUP_LOCAL, MiB / 2), VIDMM_OK);
    CHECK(ts.calls == before, "callback after unregistering");
    CHECK_ST(vidmm_client_process_set_budget(c, VIDMM_SEGMENT_GROUP_LOCAL, 0), VIDMM_OK);   /* automatic again */
    CHECK_ST(vidmm_client_process_set_budget(c, (enum vidmm_segment_group)5, 0), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_device_destroy(c, dev), VIDMM_OK);
}

/* A command buffer that writes value at target_va, submitted on ctx. */
static vidmm_status submit_write(struct vidmm_client *c, vidmm_handle ctx, vidmm_handle cmd, uint64_t cmd_va,
                                 uint64_t target_va, uint32_t value, uint64_t *fence)
{
    void *p = NULL;
    vidmm_status st = vidmm_client_allocation_lock(c, cmd, &p);
    if (st < 0)
        return st;
    struct softgpu_cmdbuf cb = { p, 0, 4096 };
    st = softgpu_cmd_write32(&cb, target_va, value);
    vidmm_status su = vidmm_client_allocation_unlock(c, cmd);
    if (st < 0 || su < 0)
        return st < 0 ? st : su;
    return vidmm_client_submit_virtual(c, ctx, cmd_va, (uint32_t)cb.size, fence);
}

static void contexts(struct vidmm_client *c, struct vidmm_client *other)
{
    vidmm_handle dev = 0, q = 0, h[2] = { 0, 0 };
    CHECK_ST(vidmm_client_device_create(c, &dev), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, VIDMM_PAGING_QUEUE_NORMAL, &q), VIDMM_OK);
    for (int i = 0; i < 2; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, 64 * 1024);
        CHECK_ST(vidmm_client_device_allocation_create(c, dev, &d, sizeof d, 0, &h[i]), VIDMM_OK);
    }
    CHECK_ST(dt_make_resident(c, dev, q, h, 2), VIDMM_OK);

    /* GPU VA: a MAP and an UNMAP batch into a reservation; a bad
     * operation and nothing happens; a MAP of another process's
     * allocation is an unknown handle. */
    uint64_t va = 0, cmd_va = 0, target_va = 0;
    CHECK_ST(vidmm_client_gpuva_reserve(c, 0, 0, 0, MiB, VIDMM_GPUVA_RESERVE_NO_ACCESS, &va), VIDMM_OK);
    struct vidmm_gpuva_update_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].type = VIDMM_GPUVA_UPDATE_MAP;
    ops[0].va = va;
    ops[0].size = 64 * 1024;
    ops[0].allocation = h[0];
    CHECK_ST(vidmm_client_gpuva_update(other, ops, 1), VIDMM_E_INVALID_HANDLE);
    ops[1].type = 9;
    CHECK_ST(vidmm_client_gpuva_update(c, ops, 2), VIDMM_E_INVALID_ARG);
    ops[1].type = VIDMM_GPUVA_UPDATE_UNMAP;
    ops[1].va = va;
    ops[1].size = 64 * 1024;
    ops[1].allocation = h[1];   /* only a MAP names an allocation */
    CHECK_ST(vidmm_client_gpuva_update(c, ops, 2), VIDMM_E_INVALID_ARG);
    ops[1].allocation = 0;
    CHECK_ST(vidmm_client_gpuva_update(c, ops, 2), VIDMM_OK);
    CHECK_ST(vidmm_client_gpuva_update(c, ops, 1), VIDMM_OK);   /* mapped again: it was unmapped */
    CHECK_ST(vidmm_client_gpuva_update(c, NULL, 0), VIDMM_OK);   /* as the library: nothing to do */
    CHECK_ST(vidmm_client_gpuva_update(c, NULL, 1), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_gpuva_update(c, ops, 1024), VIDMM_E_INVALID_ARG);   /* more than one message holds */
    CHECK_ST(vidmm_client_gpuva_free(c, va, MiB), VIDMM_OK);
    CHECK_ST(vidmm_client_gpuva_map(c, 0, 0, 0, h[0], 0, 64 * 1024, 0, 0, &cmd_va), VIDMM_OK);
    CHECK_ST(vidmm_client_gpuva_map(c, 0, 0, 0, h[1], 0, 64 * 1024, 0, 0, &target_va), VIDMM_OK);

    /* Contexts: the library's argument statuses; handles private. */
    struct vidmm_context_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.node = 99;
    vidmm_handle ctx = 0, ctx2 = 0;
    CHECK_ST(vidmm_client_context_create(c, dev, &cd, &ctx), VIDMM_E_INVALID_ARG);
    cd.node = SOFTGPU_NODE_GRAPHICS;
    cd.flags = 1;
    CHECK_ST(vidmm_client_context_create(c, dev, &cd, &ctx), VIDMM_E_INVALID_ARG);
    cd.flags = 0;
    CHECK_ST(vidmm_client_context_create(other, dev, &cd, &ctx), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_context_create(c, dev, &cd, &ctx), VIDMM_OK);
    CHECK_ST(vidmm_client_context_create(c, q, &cd, &ctx2), VIDMM_E_INVALID_HANDLE);   /* a queue is no device */

    /* Submit, wait, read the GPU's write back. */
    uint64_t fence = 0, sub = 0, done = 0;
    CHECK_ST(vidmm_client_submit_virtual(c, ctx, cmd_va, 0, &fence), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_submit_virtual(other, ctx, cmd_va, 16, &fence), VIDMM_E_INVALID_HANDLE);
    for (uint32_t i = 1; i <= 3; i++) {
        CHECK_ST(submit_write(c, ctx, h[0], cmd_va, target_va + 4 * i, 0xC0FFEE00u + i, &fence), VIDMM_OK);
        CHECK(fence == i, "submission %u has fence %llu", i, (unsigned long long)fence);
    }
    CHECK_ST(vidmm_client_context_wait(c, ctx, fence + 1, UINT64_MAX), VIDMM_E_INVALID_ARG);   /* never submitted */
    CHECK_ST(vidmm_client_context_wait(other, ctx, fence, UINT64_MAX), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_context_wait(c, ctx, fence, UINT64_MAX), VIDMM_OK);
    CHECK_ST(vidmm_client_context_fence(c, ctx, &sub, &done), VIDMM_OK);
    CHECK(sub == fence && done >= fence, "fence submitted %llu completed %llu, want %llu",
          (unsigned long long)sub, (unsigned long long)done, (unsigned long long)fence);
    CHECK_ST(vidmm_client_context_wait(c, ctx, fence, 0), VIDMM_OK);   /* passed: no wait */
    uint32_t *p = NULL;
    CHECK_ST(vidmm_client_allocation_lock(c, h[1], (void **)&p), VIDMM_OK);
    if (p)
        for (uint32_t i = 1; i <= 3; i++)
            CHECK(p[i] == 0xC0FFEE00u + i, "word %u: %#x", i, p[i]);
    CHECK_ST(vidmm_client_allocation_unlock(c, h[1]), VIDMM_OK);

    /* Destroy: once; the other connection cannot; a device's contexts go
     * with it. */
    CHECK_ST(vidmm_client_context_destroy(other, ctx), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_context_destroy(c, ctx), VIDMM_OK);
    CHECK_ST(vidmm_client_context_destroy(c, ctx), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_context_fence(c, ctx, &sub, &done), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_context_create(c, dev, &cd, &ctx2), VIDMM_OK);
    CHECK_ST(vidmm_client_device_destroy(c, dev), VIDMM_OK);
    CHECK_ST(vidmm_client_context_destroy(c, ctx2), VIDMM_E_INVALID_HANDLE);
    CHECK_ST(vidmm_client_allocation_destroy(c, h[0]), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_destroy(c, h[1]), VIDMM_OK);
}

/* A trim event raised by another process: A holds local memory and
 * listens; B's make-resident of more than is left lowers every
 * automatic budget, A's walk finds it over and the daemon sends A the
 * event while serving B.  A learns of it from poll() on its socket and
 * vidmm_client_poll_events, on its own thread, between its requests. */
static void cross(const char *sock)
{
    struct vidmm_client *a = NULL, *b = NULL;
    CHECK_ST(vidmm_client_connect(sock, &a), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(sock, &b), VIDMM_OK);
    if (!a || !b)
        return;
    struct vidmm_video_memory_info vi;
    CHECK_ST(vidmm_client_query_video_memory_info(a, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    vidmm_handle da = 0, qa = 0, db = 0, qb = 0, ha[16], hb[32];
    uint32_t na = 0, nb = 0;
    CHECK_ST(vidmm_client_device_create(a, &da), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(a, da, VIDMM_PAGING_QUEUE_NORMAL, &qa), VIDMM_OK);
    CHECK_ST(vidmm_client_device_create(b, &db), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(b, db, VIDMM_PAGING_QUEUE_NORMAL, &qb), VIDMM_OK);
    struct trim_seen ts;
    memset(&ts, 0, sizeof ts);
    CHECK_ST(vidmm_client_register_trim_notification(a, da, on_trim, &ts), VIDMM_OK);
    /* A: 3/4 of its budget, in 1 MiB allocations. */
    uint64_t want_a = vi.budget / MiB * 3 / 4;
    for (; na < want_a && na < 16; na++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, MiB);
        CHECK_ST(vidmm_client_device_allocation_create(a, da, &d, sizeof d, 0, &ha[na]), VIDMM_OK);
    }
    CHECK_ST(dt_make_resident(a, da, qa, ha, na), VIDMM_OK);
    int after_own = ts.calls;
    /* B: as much again as the whole local memory. */
    uint64_t want_b = vi.budget / MiB;
    for (; nb < want_b && nb < 32; nb++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, MiB);
        CHECK_ST(vidmm_client_device_allocation_create(b, db, &d, sizeof d, 0, &hb[nb]), VIDMM_OK);
    }
    CHECK_ST(dt_make_resident(b, db, qb, hb, nb), VIDMM_OK);
    CHECK(ts.calls == after_own, "A's callback ran during B's calls (another thread's)");
    struct pollfd pfd = { vidmm_client_fd(a), POLLIN, 0 };
    int r = poll(&pfd, 1, 10000);   /* the event is already sent: this only waits for its arrival */
    CHECK(r == 1 && (pfd.revents & POLLIN), "A's socket not readable: poll %d revents %#x", r, pfd.revents);
    uint32_t n = 0;
    CHECK_ST(vidmm_client_poll_events(a, &n), VIDMM_OK);
    CHECK(n >= 1 && ts.calls > after_own, "%u events read, %d callbacks", n, ts.calls - after_own);
    CHECK(ts.device == da && ts.bytes > 0, "device %#llx bytes %llu", (unsigned long long)ts.device,
          (unsigned long long)ts.bytes);
    /* The connection still answers requests in order after events. */
    CHECK_ST(vidmm_client_query_video_memory_info(a, VIDMM_SEGMENT_GROUP_LOCAL, &vi), VIDMM_OK);
    CHECK_ST(vidmm_client_process_set_budget(a, VIDMM_SEGMENT_GROUP_LOCAL, MiB), VIDMM_E_NOT_SUPPORTED); /* the OS's */
    vidmm_client_disconnect(b);
    vidmm_client_disconnect(a);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: api SOCKET [cross]\n");
        return 2;
    }
    if (argc > 2 && strcmp(argv[2], "cross") == 0) {
        dt_name = "daemon trim";
        cross(argv[1]);
        return dt_summary();
    }
    dt_name = "daemon api";
    struct vidmm_client *c = NULL, *other = NULL;
    CHECK_ST(vidmm_client_connect(argv[1], &c), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(argv[1], &other), VIDMM_OK);
    if (c && other) {
        queries(c);
        residency(c, other);
        contexts(c, other);
        uint32_t violations = 1;
        CHECK_ST(vidmm_client_debug_check(c, &violations, NULL, NULL), VIDMM_OK);
        CHECK(violations == 0, "%u adapter check violations", violations);
    }
    vidmm_client_disconnect(other);
    vidmm_client_disconnect(c);
    return dt_summary();
}
