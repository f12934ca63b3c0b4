/*
 * daemon/main.c - vidmmd: one adapter (softgpu) shared by the processes
 * that connect to its Unix-domain socket (docs/DAEMON.md).
 *
 *   vidmmd [--socket PATH] [--preset NAME] [--segment ID=BYTES]...
 *          [--system-memory BYTES] [--max-locked BYTES] [--verbose|-v]...
 *          [--quiet] [--foreground]
 *
 * One thread, one epoll loop: the listening socket, a signalfd for
 * SIGTERM/SIGINT, and every client's SOCK_SEQPACKET socket, all
 * non-blocking.  Paging-queue waits never block the loop: they are parked
 * and answered when the fence passes (checked every millisecond while any
 * is parked) or their time runs out.  On SIGTERM every client is torn down,
 * the checkers run, and a leak report goes to stderr; the exit status is 0
 * only when all of it came out clean.
 */
#define _GNU_SOURCE
#include "server.h"

#include "vidmm/softgpu.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A host allocator that counts what vidmm holds, for the leak report. */
struct counting_alloc {
    struct vidmm_host_allocator ha;
    _Atomic int64_t blocks, bytes;
};

static void *ca_alloc(void *ud, size_t size, size_t alignment)
{
    struct counting_alloc *ca = ud;
    size_t al = alignment < sizeof(void *) ? sizeof(void *) : alignment;
    void *p = aligned_alloc(al, (size + al - 1) / al * al);
    if (p) {
        ca->blocks++;
        ca->bytes += (int64_t)size;
    }
    return p;
}

static void ca_free(void *ud, void *ptr, size_t size, size_t alignment)
{
    struct counting_alloc *ca = ud;
    (void)alignment;
    ca->blocks--;
    ca->bytes -= (int64_t)size;
    free(ptr);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    else if (*end == 'G' || *end == 'g')
        v <<= 30, end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vidmmd [--socket PATH] [--preset dgpu|igpu|wddm1|big] [--segment ID=BYTES]...\n"
               "              [--system-memory BYTES] [--max-locked BYTES] [-v|--verbose]... [--quiet]\n"
               "              [--foreground]\n"
               "  BYTES takes a K, M or G suffix.  The socket defaults to $VIDMMD_SOCKET,\n"
               "  else $XDG_RUNTIME_DIR/vidmmd.sock, else /tmp/vidmmd-$UID.sock.\n");
}

static void add_client(struct vmmd_server *srv, int ep, int fd)
{
    struct ucred cr;
    socklen_t cl = sizeof cr;
    memset(&cr, 0, sizeof cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0)
        cr.pid = -1, cr.uid = (uid_t)-1, cr.gid = (gid_t)-1;
    struct vmmd_client *c = vmmd_client_new(srv, fd, cr.pid, cr.uid, cr.gid);
    if (!c) {
        close(fd);
        return;
    }
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        vmmd_client_drop(srv, c, "epoll_ctl failed");
}

/* Flush and, when closing or broken, drop.  Returns 1 when dropped. */
static int settle(struct vmmd_server *srv, int ep, struct vmmd_client *c, const char *why)
{
    int f = vmmd_client_flush(c);
    if (f < 0 || (f == 1 && vmmd_client_closing(c))) {
        vmmd_client_drop(srv, c, f < 0 ? "send failed" : why);
        return 1;
    }
    /* Full: stop reading until the replies are taken.  The mode is
     * changed only when it changes (a system call saved per request). */
    int *mode = vmmd_client_loop_word(c);
    int want = f == 0 ? 1 : 0;
    if (*mode != want) {
        struct epoll_event ev;
        memset(&ev, 0, sizeof ev);
        ev.events = want ? EPOLLOUT : EPOLLIN;
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_MOD, vmmd_client_fd(c), &ev);
        *mode = want;
    }
    return 0;
}

/* Read up to 32 messages (fairness between clients). */
static void client_readable(struct vmmd_server *srv, int ep, struct vmmd_client *c, uint8_t *buf)
{
    for (int i = 0; i < 32; i++) {
        union {
            char b[CMSG_SPACE(sizeof(int) * 8)];
            struct cmsghdr align;
        } u;
        struct iovec iov = { buf, VMMD_MAX_MESSAGE };
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = u.b;
        mh.msg_controllen = sizeof u.b;
        ssize_t r = recvmsg(vmmd_client_fd(c), &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            vmmd_client_drop(srv, c, r == 0 ? "connection closed" : "receive failed");
            return;
        }
        /* The first descriptor goes to the request (a SHARE_OPEN names its
         * share by it; the server closes it); any other is closed here. */
        int fds = 0, first = -1;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < k; j++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(cm) + j * sizeof(int), sizeof fd);
                    if (first < 0)
                        first = fd;
                    else
                        close(fd);
                    fds++;
                }
            }
        if (mh.msg_flags & MSG_CTRUNC)
            fds++;
        if (vmmd_client_message_fd(srv, c, buf, (size_t)r, fds, first, (mh.msg_flags & MSG_TRUNC) != 0) < 0)
            break;
    }
    settle(srv, ep, c, "protocol error");
}

int main(int argc, char **argv)
{
    const char *sock_path = getenv("VIDMMD_SOCKET");
    char default_path[108];
    struct softgpu_config sc;
    memset(&sc, 0, sizeof sc);
    sc.preset = "dgpu";
    uint64_t sysmem = 0, max_locked = 0;
    int verbose = 1;
    /* Not dumpable: /proc/<vidmmd>/fd, the one path to the export files
     * that name shared allocations, is then closed to other processes of
     * its user (docs/DAEMON.md "Shared allocations"). */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--socket") && v) {
            sock_path = v, i++;
        } else if (!strcmp(a, "--preset") && v) {
            sc.preset = v, i++;
        } else if (!strcmp(a, "--segment") && v) {
            char *eq = strchr(v, '=');
            uint64_t id = 0, size = 0;
            char idbuf[16];
            if (!eq || (size_t)(eq - v) >= sizeof idbuf) {
                usage(stderr);
                return 2;
            }
            memcpy(idbuf, v, (size_t)(eq - v));
            idbuf[eq - v] = 0;
            if (parse_u64(idbuf, &id) || id == 0 || id > SOFTGPU_MAX_SEGMENTS || parse_u64(eq + 1, &size)) {
                fprintf(stderr, "vidmmd: bad --segment %s\n", v);
                return 2;
            }
            sc.segment_size[id] = size;
            i++;
        } else if (!strcmp(a, "--system-memory") && v) {
            if (parse_u64(v, &sysmem)) {
                fprintf(stderr, "vidmmd: bad --system-memory %s\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--max-locked") && v) {
            if (parse_u64(v, &max_locked)) {
                fprintf(stderr, "vidmmd: bad --max-locked %s\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose++;
        } else if (!strcmp(a, "--quiet")) {
            verbose = 0;
        } else if (!strcmp(a, "--foreground")) {
            /* the only mode: a service manager keeps it in the foreground */
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!sock_path) {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        if (rt && *rt)
            snprintf(default_path, sizeof default_path, "%s/vidmmd.sock", rt);
        else
            snprintf(default_path, sizeof default_path, "/tmp/vidmmd-%ld.sock", (long)getuid());
        sock_path = default_path;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(sock_path) >= sizeof sa.sun_path) {
        fprintf(stderr, "vidmmd: socket path too long: %s\n", sock_path);
        return 2;
    }
    strcpy(sa.sun_path, sock_path);

    /* SIGTERM and SIGINT blocked before softgpu starts its engine
     * thread (threads inherit the mask): they arrive on the signalfd
     * only, never kill a thread that did not block them. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* The adapter. */
    struct softgpu *sg = NULL;
    vidmm_status st = softgpu_create(&sc, &sg);
    if (st < 0) {
        fprintf(stderr, "vidmmd: softgpu_create(%s): %s\n", sc.preset, vidmm_status_str(st));
        return 1;
    }
    struct counting_alloc ca;
    memset(&ca, 0, sizeof ca);
    ca.ha.alloc = ca_alloc;
    ca.ha.free = ca_free;
    ca.ha.user_data = &ca;
    char msg[256] = "";
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    ci.host_allocator = &ca.ha;
    ci.system_memory_limit = sysmem;
    ci.error_message = msg;
    ci.error_message_size = sizeof msg;
    struct vidmm_adapter *ad = NULL;
    st = vidmm_adapter_open(&ci, &ad);
    if (st < 0) {
        fprintf(stderr, "vidmmd: vidmm_adapter_open: %s: %s\n", vidmm_status_str(st), msg);
        softgpu_destroy(sg);
        return 1;
    }
    struct vmmd_server_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.adapter = ad;
    cfg.log = stderr;
    cfg.verbose = verbose;
    cfg.max_locked_bytes = max_locked;
    struct vmmd_server *srv = NULL;
    if (vmmd_server_create(&cfg, &srv) < 0) {
        fprintf(stderr, "vidmmd: out of memory\n");
        return 1;
    }

    /* Socket, loop. */
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sfd < 0 || lfd < 0) {
        perror("vidmmd: socket");
        return 1;
    }
    unlink(sock_path);   /* a stale socket of an earlier run */
    mode_t old = umask(0077);   /* only this user connects (docs/DAEMON.md) */
    int brc = bind(lfd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (brc != 0 || listen(lfd, 128) != 0) {
        fprintf(stderr, "vidmmd: cannot listen on %s: %s\n", sock_path, strerror(errno));
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &lfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    ev.data.ptr = &sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
    if (verbose)
        fprintf(stderr, "vidmmd: listening on %s (preset %s, pid %ld)\n", sock_path, sc.preset, (long)getpid());
    uint8_t *buf = malloc(VMMD_MAX_MESSAGE);
    if (!buf)
        return 1;
    int running = 1;
    while (running) {
        struct epoll_event evs[64];
        struct vmmd_server_stats before, after;
        vmmd_server_get_stats(srv, &before);
        size_t parked = vmmd_server_poll_waits(srv);
        vmmd_server_get_stats(srv, &after);
        if (after.waits_answered != before.waits_answered)   /* send the answers of waits just released */
            for (size_t i = 0; i < vmmd_server_client_count(srv);) {
                struct vmmd_client *c = vmmd_server_client_at(srv, i);
                i += settle(srv, ep, c, "closing") ? 0 : 1;
            }
        int n = epoll_wait(ep, evs, 64, parked ? 1 : -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &sfd) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                    if (verbose)
                        fprintf(stderr, "vidmmd: %s: shutting down\n", strsignal((int)si.ssi_signo));
                running = 0;
            } else if (p == &lfd) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0)
                        break;
                    add_client(srv, ep, fd);
                }
            } else {
                /* A client dropped earlier in this batch is never named
                 * again: check it is still one of ours. */
                struct vmmd_client *c = p;
                int alive = 0;
                for (size_t k = 0; k < vmmd_server_client_count(srv) && !alive; k++)
                    alive = vmmd_server_client_at(srv, k) == c;
                if (!alive)
                    continue;
                if (evs[i].events & EPOLLIN)
                    client_readable(srv, ep, c, buf);
                else if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                    settle(srv, ep, c, "closing");
            }
        }
    }
    free(buf);

    /* Shutdown: every client torn down, the checkers, the leak report. */
    struct vmmd_server_stats ss;
    vmmd_server_get_stats(srv, &ss);
    size_t left = vmmd_server_client_count(srv);
    vmmd_server_destroy(srv);
    close(lfd);
    unlink(sock_path);
    char report[4096] = "";
    int violations = vidmm_adapter_check(ad, report, sizeof report);
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_adapter_query_info(ad, &ai);
    struct vidmm_residency_stats rs;
    memset(&rs, 0, sizeof rs);
    vidmm_residency_get_stats(ad, &rs);
    vidmm_adapter_close(ad);
    int sg_bad = softgpu_check(sg);
    softgpu_destroy(sg);
    int64_t lb = ca.blocks, lbytes = ca.bytes;
    fprintf(stderr,
            "vidmmd: shutdown: %llu connections served (%zu still open, torn down), %llu requests, "
            "%llu protocol errors, %llu locks\n",
            (unsigned long long)ss.connections, left, (unsigned long long)ss.requests,
            (unsigned long long)ss.protocol_errors, (unsigned long long)ss.locks);
    fprintf(stderr, "vidmmd: sharing: %llu exports, %llu opens, %llu export files open at shutdown\n",
            (unsigned long long)ss.shares_exported, (unsigned long long)ss.shares_opened,
            (unsigned long long)ss.shares_live);
    fprintf(stderr, "vidmmd: residency: %llu make-resident calls, %llu evictions (%llu MiB), %llu restores\n",
            (unsigned long long)rs.make_resident_calls, (unsigned long long)rs.evictions,
            (unsigned long long)(rs.bytes_evicted >> 20), (unsigned long long)rs.restores);
    fprintf(stderr,
            "vidmmd: leak report: %llu allocations alive after teardown, %lld host blocks (%lld bytes) alive after "
            "close, %d adapter check violations, %d softgpu check violations\n",
            (unsigned long long)ai.live_allocations, (long long)lb, (long long)lbytes, violations, sg_bad);
    if (violations)
        fprintf(stderr, "%s\n", report);
    int clean = ai.live_allocations == 0 && lb == 0 && lbytes == 0 && violations == 0 && sg_bad == 0;
    fprintf(stderr, "vidmmd: %s\n", clean ? "clean" : "NOT CLEAN");
    close(ep);
    close(sfd);
    return clean ? 0 : 1;
}
