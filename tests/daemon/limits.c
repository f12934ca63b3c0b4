/*
 * limits.c - vidmmd's per-connection and per-uid limits (docs/DAEMON.md
 * "Limits"), against a daemon started with small ones:
 *
 *   limits SOCKET ALLOC_BYTES HANDLES REQUESTS CONNS_PER_UID
 *
 * Each limit is reached, the refused request answers
 * VIDMM_CLIENT_E_QUOTA_EXCEEDED and changes nothing (the daemon's own
 * figures before and after agree), another connection is not affected,
 * and freeing room makes the same request succeed (a SHARE_OPEN counts
 * toward the byte limit as a creation).  The requests-in-
 * flight limit is driven with raw pipelined QUEUE_WAITs on a fence that
 * never comes.  The administration requests are refused to a uid other
 * than the daemon's or root (when the test runs as root).
 */
#define _GNU_SOURCE
#include "dtest.h"
#include "proto.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static struct vidmm_client *admin;

static uint64_t live_allocations(void)
{
    struct vidmm_client_admin_adapter a;
    memset(&a, 0, sizeof a);
    vidmm_client_admin_adapter(admin, &a);
    return a.live_allocations;
}

/* The daemon's record of connection conn (0 when absent). */
static int find_record(uint32_t conn, struct vidmm_client_admin_process *out)
{
    static struct vidmm_client_admin_process p[64];
    uint32_t n = 0, total = 0;
    if (vidmm_client_admin_processes(admin, 0, p, 64, &n, &total) < 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (p[i].connection == conn) {
            *out = p[i];
            return 1;
        }
    return 0;
}

static uint32_t conn_of(struct vidmm_client *c)
{
    struct vidmm_client_info ci;
    memset(&ci, 0, sizeof ci);
    vidmm_client_query(c, &ci);
    return ci.connection;
}

static void test_alloc_bytes(const char *sock, uint64_t limit)
{
    struct vidmm_client *c = NULL, *other = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(sock, &other), VIDMM_OK);
    if (!c || !other)
        return;
    uint64_t piece = limit / 4;
    vidmm_handle h[4] = { 0 }, extra = 0;
    for (int i = 0; i < 4; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, piece);
        CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h[i]), VIDMM_OK);
    }
    struct vidmm_client_admin_process rec;
    memset(&rec, 0, sizeof rec);
    CHECK(find_record(conn_of(c), &rec), "the admin view lists the connection");
    CHECK(rec.allocated_bytes == limit && rec.allocations == 4, "allocated %llu bytes in %u allocations, want %llu in 4",
          (unsigned long long)rec.allocated_bytes, rec.allocations, (unsigned long long)limit);
    uint64_t live = live_allocations();
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, 65536);
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0, &extra), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK(extra == 0, "no handle for a refused allocation");
    CHECK(live_allocations() == live, "the refused allocation left nothing in the adapter");
    CHECK(find_record(conn_of(c), &rec) && rec.allocated_bytes == limit && rec.allocations == 4 && rec.handles == 4,
          "the connection's figures unchanged by the refusal");
    CHECK(!strcmp(vidmm_client_status_str(VIDMM_CLIENT_E_QUOTA_EXCEEDED), "VIDMM_CLIENT_E_QUOTA_EXCEEDED"),
          "the status has a name");
    /* The limit is per connection: another one allocates as much. */
    vidmm_handle o[4] = { 0 };
    for (int i = 0; i < 4; i++) {
        struct softgpu_alloc_desc od = dt_desc(SOFTGPU_ALLOC_TEXTURE, piece);
        CHECK_ST(vidmm_client_allocation_create2(other, &od, sizeof od, 0, &o[i]), VIDMM_OK);
    }
    /* Room made, the same request succeeds. */
    CHECK_ST(vidmm_client_allocation_destroy(c, h[0]), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0, &extra), VIDMM_OK);
    CHECK(find_record(conn_of(c), &rec) && rec.allocated_bytes == 3 * piece + 65536 && rec.allocations == 4,
          "allocated %llu after destroy + create", (unsigned long long)rec.allocated_bytes);
    vidmm_client_disconnect(other);
    vidmm_client_disconnect(c);
}

/* A shared allocation opened counts toward the opener's byte limit as a
 * created one (a hold keeps the whole allocation alive): an open over it
 * is refused and changes nothing - no handle, the holders and the
 * adapter's allocations as before - and succeeds once room is made. */
static void test_share_open_bytes(const char *sock, uint64_t limit)
{
    struct vidmm_client *c = NULL, *o = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    CHECK_ST(vidmm_client_connect(sock, &o), VIDMM_OK);
    if (!c || !o)
        return;
    uint64_t piece = limit / 4;
    vidmm_handle sh = 0, got = 0, h[4] = { 0 };
    int fd = -1;
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, 2 * piece);
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, VIDMM_CREATE_SHARED, &sh), VIDMM_OK);
    CHECK_ST(vidmm_client_share_export(c, sh, &fd), VIDMM_OK);
    for (int i = 0; i < 4; i++) {
        struct softgpu_alloc_desc pd = dt_desc(SOFTGPU_ALLOC_TEXTURE, piece);
        CHECK_ST(vidmm_client_allocation_create2(o, &pd, sizeof pd, 0, &h[i]), VIDMM_OK);
    }
    uint64_t live = live_allocations();
    CHECK_ST(vidmm_client_share_open(o, fd, &got), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK(got == 0, "no handle for a refused open");
    CHECK(live_allocations() == live, "the refused open left the adapter's allocations as they were");
    struct vidmm_client_share_info si;
    memset(&si, 0, sizeof si);
    CHECK_ST(vidmm_client_share_query(c, sh, &si), VIDMM_OK);
    CHECK(si.holders == 1, "%u holders after a refused open, want 1", si.holders);
    struct vidmm_client_admin_process rec;
    CHECK(find_record(conn_of(o), &rec) && rec.allocated_bytes == limit && rec.allocations == 4 && rec.handles == 4,
          "the opener's figures unchanged by the refusal");
    /* Room made, the same open succeeds and counts. */
    CHECK_ST(vidmm_client_allocation_destroy(o, h[0]), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_destroy(o, h[1]), VIDMM_OK);
    CHECK_ST(vidmm_client_share_open(o, fd, &got), VIDMM_OK);
    CHECK(find_record(conn_of(o), &rec) && rec.allocated_bytes == limit && rec.allocations == 3,
          "allocated %llu in %u after the open, want %llu in 3", (unsigned long long)rec.allocated_bytes,
          rec.allocations, (unsigned long long)limit);
    CHECK_ST(vidmm_client_share_query(c, sh, &si), VIDMM_OK);
    CHECK(si.holders == 2, "%u holders after the open, want 2", si.holders);
    if (fd >= 0)
        close(fd);
    vidmm_client_disconnect(o);
    vidmm_client_disconnect(c);
}

static void test_handles(const char *sock, uint32_t limit)
{
    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    if (!c)
        return;
    vidmm_handle dev = 0, q = 0, last = 0;
    CHECK_ST(vidmm_client_device_create(c, &dev), VIDMM_OK);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, 0, &q), VIDMM_OK);
    struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, 4096);
    uint32_t made = 2;
    while (made < limit) {
        vidmm_status st = vidmm_client_allocation_create2(c, &d, sizeof d, 0, &last);
        if (st != VIDMM_OK) {
            CHECK(0, "allocation %u of %u: %s", made, limit, vidmm_client_status_str(st));
            break;
        }
        made++;
    }
    uint64_t live = live_allocations();
    vidmm_handle h = 0;
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK_ST(vidmm_client_device_create(c, &h), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK_ST(vidmm_client_paging_queue_create(c, dev, 0, &h), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK(live_allocations() == live, "refused creations left nothing in the adapter");
    struct vidmm_client_admin_process rec;
    CHECK(find_record(conn_of(c), &rec) && rec.handles == limit, "%u handles, want %u", rec.handles, limit);
    /* The objects it has still work. */
    CHECK_ST(dt_make_resident(c, dev, q, &last, 1), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_destroy(c, last), VIDMM_OK);
    CHECK_ST(vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h), VIDMM_OK);
    vidmm_client_disconnect(c);
}

/* Connections of this uid: the limit counts the admin connection too. */
static void test_connections(const char *sock, uint32_t limit)
{
    struct vidmm_client *c[64] = { 0 };
    uint32_t have = 1;   /* the admin connection */
    uint32_t n = 0;
    while (have < limit && n < 64) {
        vidmm_status st = vidmm_client_connect(sock, &c[n]);
        CHECK_ST(st, VIDMM_OK);
        if (st < 0)
            break;
        n++, have++;
    }
    struct vidmm_client *x = NULL;
    CHECK_ST(vidmm_client_connect(sock, &x), VIDMM_CLIENT_E_QUOTA_EXCEEDED);
    CHECK(x == NULL, "no connection object for a refused connection");
    struct vidmm_client_admin_adapter a;
    memset(&a, 0, sizeof a);
    CHECK_ST(vidmm_client_admin_adapter(admin, &a), VIDMM_OK);
    CHECK(a.quota_refusals > 0, "the daemon counts the refusals");
    /* One leaves: a new one is taken once the daemon has seen it go. */
    if (n) {
        vidmm_client_disconnect(c[--n]);
        vidmm_status st = VIDMM_CLIENT_E_QUOTA_EXCEEDED;
        for (int i = 0; i < 200 && st == VIDMM_CLIENT_E_QUOTA_EXCEEDED; i++) {
            st = vidmm_client_connect(sock, &x);
            if (st == VIDMM_CLIENT_E_QUOTA_EXCEEDED)
                sleep_ms(5);
        }
        CHECK_ST(st, VIDMM_OK);
        vidmm_client_disconnect(x);
    }
    while (n)
        vidmm_client_disconnect(c[--n]);
}

/* ---- raw messages: requests in flight ----------------------------------- */

static int raw_connect(const char *sock)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int raw_send(int fd, uint16_t op, const uint8_t *payload, uint32_t n, uint64_t id)
{
    uint8_t m[VMMD_HEADER_SIZE + 64];
    vmmd_header_put(m, op, n, 0, id);
    if (n)
        memcpy(m + VMMD_HEADER_SIZE, payload, n);
    return send(fd, m, VMMD_HEADER_SIZE + n, MSG_NOSIGNAL) == (ssize_t)(VMMD_HEADER_SIZE + n) ? 0 : -1;
}

/* The next reply: its status, request id and first 64-bit result. */
static int raw_recv(int fd, int32_t *st, uint64_t *id, uint64_t *v)
{
    uint8_t m[VMMD_MAX_MESSAGE];
    ssize_t r = recv(fd, m, sizeof m, 0);
    if (r < (ssize_t)(VMMD_HEADER_SIZE + 8))
        return -1;
    *id = vmmd_get64(m + 16);
    *st = (int32_t)vmmd_get32(m + VMMD_HEADER_SIZE);
    *v = r >= (ssize_t)(VMMD_HEADER_SIZE + 16) ? vmmd_get64(m + VMMD_HEADER_SIZE + 8) : 0;
    return 0;
}

static void test_requests(const char *sock, uint32_t limit)
{
    int fd = raw_connect(sock);
    CHECK(fd >= 0, "raw connection");
    if (fd < 0)
        return;
    int32_t st = 0;
    uint64_t id = 0, dev = 0, q = 0, done = 0;
    uint8_t p[64];
    CHECK(raw_send(fd, VMMD_OP_DEVICE_CREATE, NULL, 0, 1) == 0 && raw_recv(fd, &st, &id, &dev) == 0 && st == 0,
          "DEVICE_CREATE");
    vmmd_put64(p, dev);
    vmmd_put32(p + 8, 0);
    vmmd_put32(p + 12, 0);
    CHECK(raw_send(fd, VMMD_OP_QUEUE_CREATE, p, 16, 2) == 0 && raw_recv(fd, &st, &id, &q) == 0 && st == 0,
          "QUEUE_CREATE");
    vmmd_put64(p, q);
    CHECK(raw_send(fd, VMMD_OP_QUEUE_FENCE, p, 8, 3) == 0 && raw_recv(fd, &st, &id, &done) == 0 && st == 0,
          "QUEUE_FENCE");
    /* limit + 2 waits on a fence value nobody will submit, 300 ms each,
     * sent without reading: the first `limit` are parked, the rest
     * refused at once (their replies come first). */
    uint32_t sent = limit + 2;
    for (uint32_t i = 0; i < sent; i++) {
        vmmd_put64(p, q);
        vmmd_put64(p + 8, done + 1000000);
        vmmd_put64(p + 16, 300ull * 1000000u);
        CHECK(raw_send(fd, VMMD_OP_QUEUE_WAIT, p, 24, 100 + i) == 0, "QUEUE_WAIT %u sent", i);
    }
    uint32_t quota = 0, timeouts = 0, order_ok = 1;
    for (uint32_t i = 0; i < sent; i++) {
        uint64_t v = 0;
        if (raw_recv(fd, &st, &id, &v) != 0) {
            CHECK(0, "reply %u of %u", i, sent);
            break;
        }
        if (st == VMMD_E_QUOTA_EXCEEDED) {
            quota++;
            order_ok &= id >= 100 + limit && timeouts == 0;
        } else if (st == VIDMM_E_TIMEOUT) {
            timeouts++;
            order_ok &= id < 100 + limit;
        }
    }
    CHECK(quota == 2 && timeouts == limit, "%u refused, %u timed out; want 2 and %u", quota, timeouts, limit);
    CHECK(order_ok, "the requests past the limit were the ones refused, answered before the parked ones");
    /* Nothing in flight any more: the connection goes on. */
    uint64_t v = 0;
    vmmd_put64(p, q);
    CHECK(raw_send(fd, VMMD_OP_QUEUE_FENCE, p, 8, 999) == 0 && raw_recv(fd, &st, &id, &v) == 0 && st == 0 &&
              id == 999,
          "a request after the refusals is served");
    close(fd);
}

/* ADMIN_CLIENTS's paging and its reserved word, on the wire. */
static void test_admin_wire(const char *sock)
{
    int fd = raw_connect(sock);
    CHECK(fd >= 0, "raw connection");
    if (fd < 0)
        return;
    uint8_t p[8], m[VMMD_MAX_MESSAGE];
    uint32_t total = 0;
    for (uint32_t first = 0; first < 3; first++) {
        vmmd_put32(p, first);
        vmmd_put32(p + 4, 0);
        ssize_t r = raw_send(fd, VMMD_OP_ADMIN_CLIENTS, p, 8, 50 + first) == 0 ? recv(fd, m, sizeof m, 0) : -1;
        CHECK(r >= (ssize_t)(VMMD_HEADER_SIZE + 16) && (int32_t)vmmd_get32(m + VMMD_HEADER_SIZE) == 0,
              "ADMIN_CLIENTS from %u answered", first);
        if (r < (ssize_t)(VMMD_HEADER_SIZE + 16))
            break;
        uint32_t t = vmmd_get32(m + VMMD_HEADER_SIZE + 8), n = vmmd_get32(m + VMMD_HEADER_SIZE + 12);
        if (first == 0)
            total = t;
        CHECK(t == total && n == (first < t ? t - first : 0) &&
                  r == (ssize_t)(VMMD_HEADER_SIZE + 16 + (size_t)n * VMMD_ADMIN_CLIENT_SIZE),
              "from %u: %u of %u records in %zd bytes", first, n, t, r);
    }
    CHECK(total == 2, "two connections open (the admin one and this), %u listed", total);
    int32_t st = 0;
    uint64_t id = 0, v = 0;
    vmmd_put32(p, 0);
    vmmd_put32(p + 4, 1);
    CHECK(raw_send(fd, VMMD_OP_ADMIN_CLIENTS, p, 8, 60) == 0 && raw_recv(fd, &st, &id, &v) == 0 &&
              st == VIDMM_E_INVALID_ARG && id == 60,
          "a non-zero reserved word: %d", st);
    CHECK(raw_send(fd, VMMD_OP_ADMIN_ADAPTER, p, 8, 61) == 0 && raw_recv(fd, &st, &id, &v) == 0 &&
              st == VIDMM_E_INVALID_ARG && id == 61,
          "ADMIN_ADAPTER with a payload: %d", st);
    CHECK(raw_send(fd, VMMD_OP_ADMIN_ADAPTER, NULL, 0, 62) == 0 && raw_recv(fd, &st, &id, &v) == 0 && st == 0 &&
              id == 62,
          "the connection goes on: %d", st);
    close(fd);
}

/* A uid that is neither the daemon's nor root may not ask. */
static void test_admin_uid(const char *sock)
{
    if (geteuid() != 0) {
        printf("daemon limits: not root: the administration uid check is skipped\n");
        return;
    }
    struct stat sb;
    if (stat(sock, &sb) != 0 || chmod(sock, 0666) != 0) {
        CHECK(0, "chmod %s", sock);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        uid_t u = 54321;
        if (setgid(u) != 0 || setuid(u) != 0)
            _exit(10);
        struct vidmm_client *c = NULL;
        if (vidmm_client_connect(sock, &c) < 0)
            _exit(11);
        struct vidmm_client_admin_adapter a;
        if (vidmm_client_admin_adapter(c, &a) != VIDMM_CLIENT_E_ACCESS_DENIED)
            _exit(12);
        struct vidmm_client_admin_process p[4];
        if (vidmm_client_admin_processes(c, 0, p, 4, NULL, NULL) != VIDMM_CLIENT_E_ACCESS_DENIED)
            _exit(13);
        uint8_t b[16] = { 1 };
        if (vidmm_client_echo(c, b, sizeof b) != VIDMM_OK)   /* refused, not dropped */
            _exit(14);
        vidmm_client_disconnect(c);
        _exit(0);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "uid 54321: admin requests refused, the connection served (exit %d)",
          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    chmod(sock, sb.st_mode & 07777);
}

int main(int argc, char **argv)
{
    dt_name = "daemon limits";
    if (argc != 6) {
        fprintf(stderr, "usage: limits SOCKET ALLOC_BYTES HANDLES REQUESTS CONNS_PER_UID\n");
        return 2;
    }
    const char *sock = argv[1];
    uint64_t bytes = strtoull(argv[2], NULL, 0);
    uint32_t handles = (uint32_t)strtoul(argv[3], NULL, 0), requests = (uint32_t)strtoul(argv[4], NULL, 0);
    uint32_t conns = (uint32_t)strtoul(argv[5], NULL, 0);
    CHECK_ST(vidmm_client_connect(sock, &admin), VIDMM_OK);
    if (!admin)
        return dt_summary();
    struct vidmm_client_admin_adapter a;
    memset(&a, 0, sizeof a);
    CHECK_ST(vidmm_client_admin_adapter(admin, &a), VIDMM_OK);
    CHECK(a.max_alloc_bytes == bytes && a.max_handles == handles && a.max_requests == requests &&
              a.max_connections_per_uid == conns,
          "the daemon reports the limits it was given");
    test_alloc_bytes(sock, bytes);
    test_share_open_bytes(sock, bytes);
    test_handles(sock, handles);
    test_connections(sock, conns);
    test_requests(sock, requests);
    test_admin_wire(sock);
    test_admin_uid(sock);
    uint32_t violations = 1;
    CHECK_ST(vidmm_client_debug_check(admin, &violations, NULL, NULL), VIDMM_OK);
    CHECK(violations == 0, "adapter check: %u violations", violations);
    vidmm_client_disconnect(admin);
    return dt_summary();
}
