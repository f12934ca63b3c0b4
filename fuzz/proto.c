/*
 * proto.c - libFuzzer harness: vidmmd's message decoder and request
 * handlers (daemon/proto.c, daemon/dispatch.c and the req_*.c files)
 * on hostile bytes.
 *
 * An adapter on softgpu (synchronous, dgpu with small segments) and a
 * vidmmd server with two socket-less clients.  The input is a list of
 * records: a kind byte, a 16-bit length, then that many bytes of one
 * message.  Kind bit 0 set: the harness repairs the header (magic,
 * version, length, flags 0), so most such records reach the handlers;
 * clear: the bytes go as they are.  Bit 1 picks the client; bit 2 drops
 * that client first and connects a new one (a process death at any
 * point).  The clients' uid is the server's administration uid, and the
 * per-connection limits are small, so ADMIN_* and the refusals run.  In a
 * repaired record, every 8-byte payload word whose top byte is 0xFE
 * becomes a handle of the client: type (1 allocation, 3 device, 5 paging
 * queue, 7 context) from
 * bits 0-7 of the word, slot from bits 8-15, generation from 16-23, so
 * the fuzzer names live objects.  A repaired SHARE_OPEN carries a
 * descriptor: with kind bit 3 a live export file of the server (the
 * request id's low byte picks which; none left: /dev/null), without it
 * /dev/null (a descriptor that names no share).  The server lets clients
 * pin their budgets (PROCESS_SET_BUDGET), so trim events are raised and
 * queued (to socket-less clients: dropped) in the middle of requests, the
 * clients' own or the other's.  Every decode result and status is a
 * known one; after the last record the clients are dropped and
 * vidmm_adapter_check, the live allocation count and the host allocator
 * must all be clean.
 */
#include "fuzz.h"
#include "server.h"

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <fcntl.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size, 0 };
    struct softgpu_config sc;
    memset(&sc, 0, sizeof sc);
    sc.preset = "dgpu";
    sc.synchronous = 1;
    sc.segment_size[1] = 4u << 20;
    sc.segment_size[2] = 8u << 20;
    sc.segment_size[3] = 16u << 20;
    struct softgpu *sg = NULL;
    FUZZ_REQUIRE(softgpu_create(&sc, &sg) == VIDMM_OK, "softgpu_create");
    struct fz_alloc fa;
    struct vidmm_adapter *a = NULL;
    FUZZ_REQUIRE(fz_open_on_softgpu(sg, &fa, &a) == VIDMM_OK, "adapter open");
    struct vmmd_server_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.adapter = a;
    cfg.log = fz_tracing() ? stderr : NULL;
    cfg.verbose = 2;
    cfg.max_locked_bytes = 16u << 20;
    cfg.max_objects = 256;
    /* Small limits, and the clients' uid may administer: the limit
     * refusals and the administration handlers are fuzzed too. */
    cfg.max_alloc_bytes = 8u << 20;
    cfg.max_requests = 4;
    cfg.max_connections_per_uid = 2;
    cfg.admin_uid = 1000;
    cfg.salt_seed = 0x1234567;
    cfg.allow_set_budget = 1;
    struct vmmd_server *s = NULL;
    FUZZ_REQUIRE(vmmd_server_create(&cfg, &s) == VIDMM_OK, "server");
    struct vmmd_client *cl[2];
    cl[0] = vmmd_client_new(s, -1, 100, 1000, 1000);
    cl[1] = vmmd_client_new(s, -1, 101, 1000, 1000);
    FUZZ_REQUIRE(cl[0] && cl[1], "clients");
    static uint8_t msg[VMMD_MAX_MESSAGE];
    while (!fz_done(&in)) {
        uint8_t kind = fz_u8(&in);
        uint16_t len = fz_u16(&in);
        size_t n = 0;
        while (n < len && !fz_done(&in))
            msg[n++] = fz_u8(&in);
        int k = (kind >> 1) & 1;
        if ((kind & 4) || !cl[k]) {
            if (cl[k])
                vmmd_client_drop(s, cl[k], "fuzz: reconnect");
            cl[k] = vmmd_client_new(s, -1, 200 + k, 1000, 1000);
            FUZZ_REQUIRE(cl[k] != NULL, "reconnect");
        }
        int fd = -1, fds = 0;
        if ((kind & 1) && n >= VMMD_HEADER_SIZE) {
            uint16_t op = vmmd_get16(msg + 6);
            uint64_t id = vmmd_get64(msg + 16);
            if (op == VMMD_OP_SHARE_OPEN) {
                if (kind & 8)
                    fd = vmmd_server_share_fd(s, (uint32_t)(id & 0xff));
                if (fd < 0)
                    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                fds = fd >= 0;
            }
            vmmd_header_put(msg, op, (uint32_t)(n - VMMD_HEADER_SIZE), fds ? VMMD_FLAG_FD : 0, id);
            for (size_t o = VMMD_HEADER_SIZE; o + 8 <= n; o += 8) {
                uint64_t w = vmmd_get64(msg + o);
                if ((w >> 56) == 0xFE)
                    vmmd_put64(msg + o, vmmd_client_handle_guess(cl[k], (uint8_t)w, (uint32_t)((w >> 8) & 0xff),
                                                                 (uint16_t)((w >> 16) & 0xff)));
            }
        }
        struct vmmd_request r;
        int d = vmmd_decode_request(msg, n, &r);
        FUZZ_REQUIRE(d <= 0 && d >= VMMD_DECODE_BAD_FLAGS, "decode result %d", d);
        if (d == 0 && (r.h.opcode == VMMD_OP_MAKE_RESIDENT || r.h.opcode == VMMD_OP_EVICT ||
                       r.h.opcode == VMMD_OP_OFFER || r.h.opcode == VMMD_OP_RECLAIM))
            FUZZ_REQUIRE(r.list + 8 * (size_t)r.list_count <= msg + n, "list past the message");
        if (d == 0 && r.h.opcode == VMMD_OP_GPUVA_UPDATE)
            FUZZ_REQUIRE(r.list_count <= VMMD_MAX_GPUVA_OPS &&
                             r.list + VMMD_GPUVA_OP_SIZE * (size_t)r.list_count <= msg + n,
                         "operations past the message");
        if (d == 0)
            FUZZ_REQUIRE(r.h.opcode != VMMD_EV_TRIM, "an event opcode decoded as a request");
        if (d == 0 && r.data)
            FUZZ_REQUIRE(r.data + r.data_size <= msg + n, "data past the message");
        if (vmmd_client_message_fd(s, cl[k], msg, n, fds, fd, 0) < 0) {   /* closes fd */
            vmmd_client_drop(s, cl[k], "fuzz: protocol error");
            cl[k] = NULL;
        }
        vmmd_server_poll_waits(s);
        vmmd_server_reap(s);   /* the clients dropped above */
        FUZZ_REQUIRE(vidmm_adapter_check(a, NULL, 0) == 0, "adapter check after a message");
    }
    vmmd_server_destroy(s);
    struct vidmm_adapter_info ai;
    FUZZ_REQUIRE(vidmm_adapter_query_info(a, &ai) == VIDMM_OK, "query info");
    FUZZ_REQUIRE(ai.live_allocations == 0, "%llu allocations outlive their clients",
                 (unsigned long long)ai.live_allocations);
    FUZZ_REQUIRE(vidmm_adapter_check(a, NULL, 0) == 0, "adapter check at the end");
    vidmm_adapter_close(a);
    FUZZ_REQUIRE(fa.live_blocks == 0 && fa.live_bytes == 0, "host memory leaked: %lld blocks",
                 (long long)fa.live_blocks);
    FUZZ_REQUIRE(softgpu_check(sg) == 0, "softgpu check");
    softgpu_destroy(sg);
    return 0;
}
