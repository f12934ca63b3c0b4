/*
 * admin.c - the daemon's administration view and the tool verbs over it
 * (docs/DAEMON.md "Observing the daemon"):
 *
 *   admin SOCKET VIDMM_TOOL
 *
 * Two holder processes (named vmmd-hold-a and vmmd-hold-b) connect, make
 * allocations of known sizes resident and wait.  The ADMIN_CLIENTS
 * records must name them (pid, uid, comm) with their allocations' count
 * and bytes, usage within budget and a process handle; ADMIN_ADAPTER
 * must count them and the live allocations.  Then `vidmm ps`, `vidmm
 * info --socket` and `vidmm top --once` / `-n 2` run against the same
 * daemon and their output must show the same processes and figures.
 */
#define _GNU_SOURCE
#include "dtest.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct holder {
    pid_t pid;
    int go[2];      /* parent -> holder: closed = exit */
    int ready[2];   /* holder -> parent: one byte once its allocations are resident */
};

static void holder_main(const char *sock, const char *name, uint32_t n, uint64_t size, struct holder *h)
{
    prctl(PR_SET_NAME, name, 0, 0, 0);
    close(h->go[1]);
    close(h->ready[0]);
    struct vidmm_client *c = NULL;
    vidmm_handle dev = 0, q = 0, a[8];
    if (vidmm_client_connect(sock, &c) < 0 || vidmm_client_device_create(c, &dev) < 0 ||
        vidmm_client_paging_queue_create(c, dev, 0, &q) < 0)
        _exit(10);
    for (uint32_t i = 0; i < n; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, size);
        if (vidmm_client_allocation_create2(c, &d, sizeof d, 0, &a[i]) < 0 || dt_fill(c, a[i], 7, i, size) < 0)
            _exit(11);
    }
    if (dt_make_resident(c, dev, q, a, n) < 0)
        _exit(12);
    (void)!write(h->ready[1], "r", 1);
    char b;
    (void)!read(h->go[0], &b, 1);   /* until the parent closes it */
    vidmm_client_disconnect(c);
    _exit(0);
}

static int start_holder(const char *sock, const char *name, uint32_t n, uint64_t size, struct holder *h)
{
    if (pipe2(h->go, O_CLOEXEC) != 0 || pipe2(h->ready, O_CLOEXEC) != 0)
        return -1;
    h->pid = fork();
    if (h->pid == 0)
        holder_main(sock, name, n, size, h);
    close(h->go[0]);
    close(h->ready[1]);
    char b = 0;
    return read(h->ready[0], &b, 1) == 1 ? 0 : -1;
}

static void stop_holder(struct holder *h)
{
    close(h->go[1]);
    close(h->ready[0]);
    int ws = 0;
    waitpid(h->pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "holder %ld exit %d", (long)h->pid,
          WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

/* Run the tool; its whole stdout into buf.  Returns the exit status. */
static int run_tool(char *buf, size_t n, const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t got = fread(buf, 1, n - 1, p);
    buf[got] = 0;
    int ws = pclose(p);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* The output line that holds word, or NULL. */
static const char *line_with(const char *text, const char *word, char *line, size_t n)
{
    const char *p = strstr(text, word);
    if (!p)
        return NULL;
    const char *b = p;
    while (b > text && b[-1] != '\n')
        b--;
    const char *e = strchr(p, '\n');
    size_t k = e ? (size_t)(e - b) : strlen(b);
    if (k >= n)
        k = n - 1;
    memcpy(line, b, k);
    line[k] = 0;
    return line;
}

int main(int argc, char **argv)
{
    dt_name = "daemon admin";
    if (argc != 3) {
        fprintf(stderr, "usage: admin SOCKET VIDMM_TOOL\n");
        return 2;
    }
    const char *sock = argv[1], *tool = argv[2];
    struct holder ha, hb;
    CHECK(start_holder(sock, "vmmd-hold-a", 3, 1 << 20, &ha) == 0, "holder a ready");
    CHECK(start_holder(sock, "vmmd-hold-b", 2, 512 << 10, &hb) == 0, "holder b ready");

    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    if (!c)
        return dt_summary();
    struct vidmm_client_admin_process p[64];
    uint32_t n = 0, total = 0;
    /* Bad arguments: refused before anything is sent. */
    CHECK_ST(vidmm_client_admin_adapter(c, NULL), VIDMM_E_INVALID_ARG);
    CHECK_ST(vidmm_client_admin_processes(c, 0, NULL, 4, &n, &total), VIDMM_E_INVALID_ARG);
    CHECK(n == 0 && total == 0, "a refused request wrote its counts");
    CHECK_ST(vidmm_client_admin_processes(c, 0, p, 64, &n, &total), VIDMM_OK);
    CHECK(n == total && n >= 3, "%u records of %u connections", n, total);
    int seen_a = 0, seen_b = 0, seen_self = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct vidmm_client_admin_process *r = &p[i];
        if ((pid_t)r->pid == ha.pid || (pid_t)r->pid == hb.pid) {
            int a = (pid_t)r->pid == ha.pid;
            seen_a += a;
            seen_b += !a;
            CHECK(!strcmp(r->comm, a ? "vmmd-hold-a" : "vmmd-hold-b"), "comm '%s'", r->comm);
            CHECK(r->uid == (uint32_t)getuid(), "uid %u", r->uid);
            CHECK(r->allocations == (a ? 3u : 2u), "allocations %u", r->allocations);
            CHECK(r->allocated_bytes == (a ? 3ull << 20 : 1ull << 20), "allocated %llu",
                  (unsigned long long)r->allocated_bytes);
            CHECK(r->process != 0, "a process handle");
            CHECK(r->usage[0] + r->usage[1] >= r->allocated_bytes, "usage %llu + %llu covers the resident allocations",
                  (unsigned long long)r->usage[0], (unsigned long long)r->usage[1]);
            CHECK(r->budget[0] > 0 && r->usage[0] <= r->budget[0], "local usage %llu within budget %llu",
                  (unsigned long long)r->usage[0], (unsigned long long)r->budget[0]);
            CHECK(r->requests >= 2 + (a ? 3u : 2u) * 3, "requests %llu", (unsigned long long)r->requests);
            CHECK(r->handles == 2 + (a ? 3u : 2u), "handles %u", r->handles);
        }
        if (r->flags & VIDMM_CLIENT_ADMIN_SELF) {
            seen_self++;
            CHECK((pid_t)r->pid == getpid() && r->allocations == 0, "the asking connection is this process");
        }
    }
    CHECK(seen_a == 1 && seen_b == 1 && seen_self == 1, "holders listed once each (%d %d), self once (%d)", seen_a,
          seen_b, seen_self);
    struct vidmm_client_admin_adapter ad;
    CHECK_ST(vidmm_client_admin_adapter(c, &ad), VIDMM_OK);
    CHECK(ad.clients == total, "adapter: %u clients, %u records", ad.clients, total);
    CHECK(ad.live_allocations >= 5, "adapter: %llu live allocations", (unsigned long long)ad.live_allocations);
    CHECK(ad.host_blocks > 0 && ad.host_bytes > 0, "host blocks %lld", (long long)ad.host_blocks);
    CHECK(ad.segment_count >= 3 && !strcmp(ad.segment[0].region, "system") && !strcmp(ad.segment[1].region, "vram0"),
          "segments: %u, '%s' '%s'", ad.segment_count, ad.segment[0].region, ad.segment[1].region);
    CHECK(ad.make_resident_calls >= 2, "make-resident calls %llu", (unsigned long long)ad.make_resident_calls);
    CHECK(ad.daemon_pid > 0 && ad.uptime_ns > 0, "daemon pid and uptime");

    /* The verbs. */
    static char out[65536];
    char line[512], pid_a[32], pid_b[32];
    snprintf(pid_a, sizeof pid_a, " %ld ", (long)ha.pid);
    snprintf(pid_b, sizeof pid_b, " %ld ", (long)hb.pid);
    int rc = run_tool(out, sizeof out, "%s ps --socket %s", tool, sock);
    CHECK(rc == 0, "vidmm ps exit %d", rc);
    CHECK(strstr(out, "PID") && strstr(out, "COMM") && strstr(out, "ALLOCATED"), "ps header:\n%s", out);
    CHECK(line_with(out, pid_a, line, sizeof line) && strstr(line, "vmmd-hold-a") && strstr(line, " 3 MiB"),
          "ps line of holder a (3 allocations, 3 MiB):\n%s", out);
    CHECK(line_with(out, pid_b, line, sizeof line) && strstr(line, "vmmd-hold-b") && strstr(line, " 1 MiB"),
          "ps line of holder b (2 allocations, 1 MiB):\n%s", out);
    rc = run_tool(out, sizeof out, "%s info --socket %s", tool, sock);
    CHECK(rc == 0, "vidmm info --socket exit %d", rc);
    char want[128];
    snprintf(want, sizeof want, "daemon: vidmmd pid %u", ad.daemon_pid);
    CHECK(strstr(out, want) != NULL, "info names the daemon (%s):\n%s", want, out);
    CHECK(strstr(out, "vram0") && strstr(out, "limits: per connection") && strstr(out, "host memory:"),
          "info lists segments, limits, host memory:\n%s", out);
    rc = run_tool(out, sizeof out, "%s top --socket %s --once", tool, sock);
    CHECK(rc == 0, "vidmm top --once exit %d", rc);
    CHECK(line_with(out, pid_a, line, sizeof line) && strstr(line, "vmmd-hold-a") && strstr(line, "3 MiB") &&
              strchr(line, '%'),
          "top line of holder a:\n%s", out);
    CHECK(strstr(out, "paging (since start)") != NULL, "top --once: rates since start:\n%s", out);
    CHECK(strstr(out, "\033[") == NULL, "no escape sequences into a pipe");
    rc = run_tool(out, sizeof out, "%s top --socket %s -n 2 --interval 0.05", tool, sock);
    CHECK(rc == 0, "vidmm top -n 2 exit %d", rc);
    const char *second = strstr(out, "paging (last interval)");
    CHECK(second && strstr(second, "vmmd-hold-b"), "two frames, the second with interval rates:\n%s", out);
    rc = run_tool(out, sizeof out, "%s ps --socket %s/nobody-here 2>/dev/null", tool, sock);
    CHECK(rc == 1, "ps on a socket nobody listens on: exit %d, want 1", rc);
    rc = run_tool(out, sizeof out, "%s top --socket %s --interval 0 2>/dev/null", tool, sock);
    CHECK(rc == 2, "top --interval 0: exit %d, want 2", rc);

    /* Holders gone: the daemon's view follows. */
    stop_holder(&hb);   /* b first: it inherited a's end of a's pipe */
    stop_holder(&ha);
    vidmm_status st = VIDMM_OK;
    for (int i = 0; i < 200; i++) {   /* the daemon sees them go in its own time */
        st = vidmm_client_admin_processes(c, 0, p, 64, &n, &total);
        if (st < 0 || total == 1)
            break;
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    CHECK_ST(st, VIDMM_OK);
    CHECK(total == 1 && (p[0].flags & VIDMM_CLIENT_ADMIN_SELF), "only this connection left: %u", total);
    vidmm_client_disconnect(c);
    return dt_summary();
}
