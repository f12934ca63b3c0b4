/*
 * hostile.c - raw protocol abuse against a running vidmmd: truncated,
 * oversized, short and bad-magic messages, a wrong version, unknown
 * opcodes, wrong payload sizes, descriptors sent to the daemon (and
 * SHARE_OPEN without, with two, or with one that names no share), guessed
 * handles, random bytes, a client that never reads its replies, a
 * locked copy whose size the client tries to change.  Each gets an error
 * reply or the disconnection of that client only: a bystander client's
 * bytes and calls stay intact throughout.
 * Usage: hostile SOCKET
 */
#define _GNU_SOURCE
#include "dtest.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *sock_path;
static struct vidmm_client *by;     /* the bystander */
static vidmm_handle by_h;
#define BY_SIZE (128u * 1024u)

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Receive one reply within 5 s: its status (opcode in *op), 1000 for
 * EOF, 2000 for a timeout or an error. */
static int raw_reply(int fd, uint16_t *op, int *fd_out)
{
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, 5000) != 1)
        return 2000;
    static uint8_t buf[VMMD_MAX_MESSAGE];
    long r = vmmd_recv(fd, buf, sizeof buf, 0, fd_out, NULL, NULL);
    if (r == 0 || (r < 0 && errno == ECONNRESET))
        return 1000;
    if (r < 0)
        return 2000;
    struct vmmd_header h;
    if (vmmd_header_get(buf, (size_t)r, &h) != 0 || h.length < 8)
        return 2000;
    if (op)
        *op = h.opcode;
    return (int)(int32_t)vmmd_get32(buf + VMMD_HEADER_SIZE);
}

static int raw_send(int fd, const void *b, size_t n)
{
    return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static size_t msg(uint8_t *b, uint16_t op, const void *payload, uint32_t n)
{
    vmmd_header_put(b, op, n, 0, 42);
    if (n && payload)
        memcpy(b + VMMD_HEADER_SIZE, payload, n);
    return VMMD_HEADER_SIZE + n;
}

/* Send b with nfds descriptors attached (SCM_RIGHTS). */
static int send_fds(int fd, const void *b, size_t n, const int *fds, int nfds)
{
    union {
        char c[CMSG_SPACE(sizeof(int) * 2)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = { (void *)b, n };
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds) {
        mh.msg_control = u.c;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void bystander_ok(const char *after)
{
    CHECK(dt_verify(by, by_h, 3, 0, BY_SIZE) == 1, "bystander's bytes after %s", after);
    vidmm_handle d = 0;
    CHECK_ST(vidmm_client_device_create(by, &d), VIDMM_OK);
    CHECK_ST(vidmm_client_device_destroy(by, d), VIDMM_OK);
}

/* A framing error: an error reply, then the connection is closed. */
static void framing(const char *what, const void *b, size_t n, int want)
{
    int fd = raw_connect();
    CHECK(fd >= 0, "connect");
    if (fd < 0)
        return;
    CHECK(raw_send(fd, b, n) == 0, "%s: send", what);
    int st = raw_reply(fd, NULL, NULL);
    CHECK(st == want, "%s: reply %d, want %d", what, st, want);
    st = raw_reply(fd, NULL, NULL);
    CHECK(st == 1000, "%s: connection kept open (%d)", what, st);
    close(fd);
    bystander_ok(what);
}

/* A bad request on a good frame: an error reply, the connection goes on. */
static void refused(int fd, const char *what, const void *b, size_t n, int want)
{
    CHECK(raw_send(fd, b, n) == 0, "%s: send", what);
    uint16_t op = 0;
    int st = raw_reply(fd, &op, NULL);
    CHECK(st == want, "%s: reply %d, want %d", what, st, want);
    uint8_t m[64];
    CHECK(raw_send(fd, m, msg(m, VMMD_OP_HELLO, NULL, 0)) == 0, "%s: hello", what);
    CHECK(raw_reply(fd, &op, NULL) == VIDMM_OK && op == (VMMD_OP_HELLO | VMMD_REPLY), "%s: connection unusable",
          what);
}

int main(int argc, char **argv)
{
    dt_name = "daemon hostile";
    if (argc < 2)
        return 2;
    sock_path = argv[1];
    CHECK_ST(vidmm_client_connect(sock_path, &by), VIDMM_OK);
    if (!by)
        return dt_summary();
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, BY_SIZE);
    CHECK_ST(vidmm_client_allocation_create(by, &d, sizeof d, &by_h), VIDMM_OK);
    CHECK_ST(dt_fill(by, by_h, 3, 0, BY_SIZE), VIDMM_OK);

    static uint8_t b[VMMD_MAX_MESSAGE + 4096];
    size_t n;
    /* Framing errors. */
    memset(b, 0, 64);
    framing("short message", b, 10, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_HELLO, NULL, 0);
    b[0] ^= 0xff;
    framing("bad magic", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_HELLO, NULL, 0);
    vmmd_put16(b + 4, 99);
    framing("bad version", b, n, VIDMM_E_NOT_SUPPORTED);
    n = msg(b, VMMD_OP_DEVICE_DESTROY, "12345678", 8);
    vmmd_put32(b + 8, 100);   /* claims 100 payload bytes, carries 8 */
    framing("truncated", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_ECHO, NULL, 0);
    vmmd_put32(b + 8, VMMD_MAX_PAYLOAD + 4000);
    framing("oversized", b, VMMD_HEADER_SIZE + VMMD_MAX_PAYLOAD + 4000, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_ECHO, NULL, 0);
    vmmd_put32(b + 8, 0xffffffffu);
    framing("length 4 GiB", b, n, VIDMM_E_INVALID_ARG);

    /* Refused requests on a connection that goes on. */
    int fd = raw_connect();
    CHECK(fd >= 0, "connect");
    uint8_t p[128];
    memset(p, 0, sizeof p);
    n = msg(b, 999, NULL, 0);
    refused(fd, "unknown opcode", b, n, VIDMM_E_NOT_SUPPORTED);
    /* An ECHO over the documented maximum (65,528 bytes: the reply's
     * status takes 8) is refused, not answered cut short. */
    memset(b + VMMD_HEADER_SIZE, 0x5a, VMMD_MAX_PAYLOAD);
    n = msg(b, VMMD_OP_ECHO, NULL, VMMD_MAX_PAYLOAD);
    refused(fd, "ECHO of 65,536 bytes", b, n, VIDMM_E_TOO_LARGE);
    n = msg(b, VMMD_OP_ECHO, NULL, VMMD_MAX_PAYLOAD - 8);
    refused(fd, "ECHO of 65,528 bytes", b, n, VIDMM_OK);
    n = msg(b, VMMD_OP_ECHO | VMMD_REPLY, NULL, 0);
    refused(fd, "a reply opcode", b, n, VIDMM_E_NOT_SUPPORTED);
    n = msg(b, VMMD_OP_DEVICE_DESTROY, p, 4);
    refused(fd, "payload too short", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_DEVICE_DESTROY, p, 16);
    refused(fd, "payload too long", b, n, VIDMM_E_INVALID_ARG);
    vmmd_put32(p + 20, 1000);   /* MAKE_RESIDENT count 1000, no list */
    n = msg(b, VMMD_OP_MAKE_RESIDENT, p, 24);
    refused(fd, "list count past the message", b, n, VIDMM_E_INVALID_ARG);
    vmmd_put32(p + 20, 0xffffffffu);
    n = msg(b, VMMD_OP_MAKE_RESIDENT, p, 24);
    refused(fd, "list count 2^32-1", b, n, VIDMM_E_INVALID_ARG);
    memset(p, 0, sizeof p);
    vmmd_put32(p + 12, 5000);
    n = msg(b, VMMD_OP_ALLOC_CREATE, p, 16);
    refused(fd, "private data size past the message", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_HELLO, NULL, 0);
    vmmd_put32(b + 12, 1);
    refused(fd, "request flags", b, n, VIDMM_E_INVALID_ARG);
    /* The rest of the API's opcodes (19-31, 64-65). */
    memset(p, 0, sizeof p);
    vmmd_put32(p + 12, 3);   /* OFFER of 3 handles, none present */
    n = msg(b, VMMD_OP_OFFER, p, 16);
    refused(fd, "offer list past the message", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_RECLAIM, p, 16 + 8);
    refused(fd, "reclaim list count not the bytes", b, n, VIDMM_E_INVALID_ARG);
    memset(p, 0, sizeof p);
    vmmd_put32(p, 2);   /* GPUVA_UPDATE of 2 operations, 1 present */
    n = msg(b, VMMD_OP_GPUVA_UPDATE, p, 8 + VMMD_GPUVA_OP_SIZE);
    refused(fd, "gpuva update count past the message", b, n, VIDMM_E_INVALID_ARG);
    vmmd_put32(p, 0xffffffffu);
    n = msg(b, VMMD_OP_GPUVA_UPDATE, p, 8);
    refused(fd, "gpuva update count 2^32-1", b, n, VIDMM_E_INVALID_ARG);
    memset(p, 0, sizeof p);
    n = msg(b, VMMD_OP_CONTEXT_CREATE, p, 16);
    refused(fd, "context create too short", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_OP_SUBMIT_VIRTUAL, p, 32);
    refused(fd, "submit too long", b, n, VIDMM_E_INVALID_ARG);
    n = msg(b, VMMD_EV_TRIM, p, 24);
    refused(fd, "an event opcode as a request", b, n, VIDMM_E_NOT_SUPPORTED);
    n = msg(b, VMMD_OP_PROCESS_SET_BUDGET, p, 16);
    refused(fd, "set budget on a daemon that does not allow it", b, n, VIDMM_E_NOT_SUPPORTED);
    vmmd_put32(p + 4, 1);   /* reserved field */
    n = msg(b, VMMD_OP_CHANGE_RESERVATION, p, 16);
    refused(fd, "reservation with a reserved field set", b, n, VIDMM_E_INVALID_ARG);
    memset(p, 0, sizeof p);
    vmmd_put64(p, by_h);   /* the bystander's handle value */
    n = msg(b, VMMD_OP_ALLOC_SET_PRIORITY, p, 16);
    refused(fd, "another connection's handle (priority)", b, n, VIDMM_E_INVALID_HANDLE);
    n = msg(b, VMMD_OP_TRIM_REGISTER, p, 16);
    refused(fd, "another connection's handle (trim register)", b, n, VIDMM_E_INVALID_HANDLE);
    n = msg(b, VMMD_OP_CONTEXT_DESTROY, p, 8);
    refused(fd, "another connection's handle (context)", b, n, VIDMM_E_INVALID_HANDLE);
    n = msg(b, VMMD_OP_LOCK, p, 8);
    refused(fd, "another connection's handle", b, n, VIDMM_E_INVALID_HANDLE);
    n = msg(b, VMMD_OP_ALLOC_DESTROY, p, 8);
    refused(fd, "another connection's handle (destroy)", b, n, VIDMM_E_INVALID_HANDLE);
    for (int i = 0; i < 200; i++) {   /* guessed handles */
        vmmd_put64(p, (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)(i % 6));
        n = msg(b, (uint16_t)(i & 1 ? VMMD_OP_ALLOC_QUERY : VMMD_OP_QUEUE_FENCE), p, 8);
        CHECK(raw_send(fd, b, n) == 0, "send");
        int st = raw_reply(fd, NULL, NULL);
        if (st != VIDMM_E_INVALID_HANDLE) {
            CHECK(st == VIDMM_E_INVALID_HANDLE, "guessed handle %d: %d", i, st);
            break;
        }
    }
    dt_pass++;
    /* A descriptor sent to the daemon is closed and the request refused. */
    {
        n = msg(b, VMMD_OP_HELLO, NULL, 0);
        int pass = open("/dev/null", O_RDONLY);
        CHECK(vmmd_send(fd, b, n, pass, 0) == (long)n, "sendmsg with a descriptor");
        close(pass);
        CHECK(raw_reply(fd, NULL, NULL) == VIDMM_E_INVALID_ARG, "a descriptor sent to the daemon");
    }
    /* SHARE_OPEN and descriptors (docs/PROTOCOL.md): its flag without a
     * descriptor, a descriptor without its flag, two descriptors, the
     * flag on another request - refused, the connection goes on; a
     * descriptor that is not an export file of the daemon: a valid
     * request naming no share. */
    {
        int dn[2] = { open("/dev/null", O_RDONLY | O_CLOEXEC), open("/dev/null", O_RDONLY | O_CLOEXEC) };
        struct {
            const char *what;
            uint16_t op;
            uint32_t flags;
            int nfds;
            int want;
        } cases[] = {
            { "SHARE_OPEN flagged, no descriptor", VMMD_OP_SHARE_OPEN, VMMD_FLAG_FD, 0, VIDMM_E_INVALID_ARG },
            { "SHARE_OPEN with a descriptor, not flagged", VMMD_OP_SHARE_OPEN, 0, 1, VIDMM_E_INVALID_ARG },
            { "SHARE_OPEN with two descriptors", VMMD_OP_SHARE_OPEN, VMMD_FLAG_FD, 2, VIDMM_E_INVALID_ARG },
            { "HELLO flagged with a descriptor", VMMD_OP_HELLO, VMMD_FLAG_FD, 1, VIDMM_E_INVALID_ARG },
            { "SHARE_OPEN of /dev/null", VMMD_OP_SHARE_OPEN, VMMD_FLAG_FD, 1, VIDMM_E_INVALID_HANDLE },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            vmmd_header_put(b, cases[i].op, 0, cases[i].flags, 42);
            CHECK(send_fds(fd, b, VMMD_HEADER_SIZE, dn, cases[i].nfds) == 0, "%s: send", cases[i].what);
            uint16_t op = 0;
            int st = raw_reply(fd, &op, NULL);
            CHECK(st == cases[i].want, "%s: reply %d, want %d", cases[i].what, st, cases[i].want);
        }
        n = msg(b, VMMD_OP_HELLO, NULL, 0);
        CHECK(raw_send(fd, b, n) == 0 && raw_reply(fd, NULL, NULL) == VIDMM_OK, "connection unusable after SHARE_OPEN abuse");
        close(dn[0]);
        close(dn[1]);
    }
    close(fd);
    bystander_ok("refused requests");

    /* A raw client locking through the protocol: the descriptor's seals. */
    {
        int f2 = raw_connect();
        struct softgpu_alloc_desc cd = dt_desc(SOFTGPU_ALLOC_CONSTANT, 64 * 1024);
        memset(p, 0, sizeof p);
        vmmd_put32(p + 8, 0x1);
        vmmd_put32(p + 12, (uint32_t)sizeof cd);
        memcpy(p + 16, &cd, sizeof cd);
        n = msg(b, VMMD_OP_ALLOC_CREATE, p, (uint32_t)(16 + sizeof cd));
        raw_send(f2, b, n);
        /* the handle: read the reply by hand */
        static uint8_t rb[256];
        struct pollfd pf = { f2, POLLIN, 0 };
        poll(&pf, 1, 5000);
        ssize_t r = recv(f2, rb, sizeof rb, 0);
        CHECK(r == VMMD_HEADER_SIZE + 16 && vmmd_get32(rb + VMMD_HEADER_SIZE) == 0, "raw create: %zd", r);
        uint64_t h = vmmd_get64(rb + VMMD_HEADER_SIZE + 8);
        vmmd_put64(p, h);
        n = msg(b, VMMD_OP_LOCK, p, 8);
        raw_send(f2, b, n);
        int mfd = -1;
        CHECK(raw_reply(f2, NULL, &mfd) == VIDMM_OK && mfd >= 0, "raw lock gives a descriptor");
        if (mfd >= 0) {
            CHECK(ftruncate(mfd, 0) != 0, "the copy could be shrunk");
            CHECK(ftruncate(mfd, 1 << 30) != 0, "the copy could be grown");
            int seals = fcntl(mfd, F_GET_SEALS);
            CHECK(seals >= 0 && (seals & F_SEAL_SEAL), "seals 0x%x", seals);
            close(mfd);
        }
        n = msg(b, VMMD_OP_UNLOCK, p, 8);
        raw_send(f2, b, n);
        CHECK(raw_reply(f2, NULL, NULL) == VIDMM_OK, "raw unlock");
        close(f2);   /* allocation left alive: torn down with the connection */
        bystander_ok("a raw lock");
    }

    /* Random bytes, some with a valid header. */
    srand(7);
    for (int k = 0; k < 20; k++) {
        int f = raw_connect();
        for (int i = 0; i < 50; i++) {
            size_t len = (size_t)(rand() % 200);
            for (size_t j = 0; j < len; j++)
                b[j] = (uint8_t)rand();
            if (rand() % 2 && len >= VMMD_HEADER_SIZE)
                vmmd_header_put(b, (uint16_t)(rand() % VMMD_OP_LAST), (uint32_t)(len - VMMD_HEADER_SIZE), 0, (uint64_t)i);
            if (raw_send(f, b, len) != 0)
                break;
            if (raw_reply(f, NULL, NULL) >= 1000)
                break;
        }
        close(f);
    }
    bystander_ok("random messages");

    /* A client that sends without reading: the daemon stops reading it
     * (its replies back up) and goes on serving the others. */
    {
        int f = raw_connect();
        int fl = fcntl(f, F_GETFL);
        fcntl(f, F_SETFL, fl | O_NONBLOCK);
        static const uint8_t zeros[60000];
        n = msg(b, VMMD_OP_ECHO, zeros, sizeof zeros);
        int sent = 0;
        for (int i = 0; i < 2000; i++) {
            if (send(f, b, n, MSG_NOSIGNAL) != (ssize_t)n)
                break;
            sent++;
        }
        CHECK(sent > 0 && sent < 2000, "the flood stopped (%d sent)", sent);
        bystander_ok("a client that does not read");
        close(f);
        /* A client that closes with a request in flight. */
        f = raw_connect();
        n = msg(b, VMMD_OP_DEVICE_CREATE, NULL, 0);
        raw_send(f, b, n);
        close(f);
        bystander_ok("a client gone with a request in flight");
    }

    uint32_t viol = 99;
    CHECK_ST(vidmm_client_debug_check(by, &viol, NULL, NULL), VIDMM_OK);
    CHECK(viol == 0, "adapter check: %u violations", viol);
    CHECK_ST(vidmm_client_allocation_destroy(by, by_h), VIDMM_OK);
    vidmm_client_disconnect(by);
    return dt_summary();
}
