/*
 * daemon/main.c - vidmmd: one adapter (softgpu) shared by the processes
 * that connect to its Unix-domain socket (docs/DAEMON.md).
 *
 *   vidmmd [--socket PATH] [--preset NAME] [--segment ID=BYTES]... [--driver vkgpu|FILE.so]
 *          [--system-memory BYTES] [--max-locked BYTES] [--max-alloc-bytes BYTES]
 *          [--max-handles N] [--max-requests N] [--max-connections-per-uid N]
 *          [--user NAME] [--allow-set-budget] [--verbose|-v]... [--quiet] [--foreground]
 *
 * Run by a service manager it takes its listening socket from
 * LISTEN_FDS/LISTEN_PID (the sd_listen_fds protocol, read here without
 * libsystemd).  Started as root it must be told --user: it binds the
 * socket and opens the adapter, then drops to that user for good.
 *
 * One thread, one epoll loop: the listening socket, a signalfd for
 * SIGTERM/SIGINT, and every client's SOCK_SEQPACKET socket, all
 * non-blocking.  Paging-queue and context waits never block the loop: they are parked
 * and answered when the fence passes (checked every millisecond while any
 * is parked) or their time runs out.  On SIGTERM every client is torn down,
 * the checkers run, and a leak report goes to stderr; the exit status is 0
 * only when all of it came out clean.
 *
 * Many clients: each is one descriptor, so the soft RLIMIT_NOFILE is
 * raised to the hard limit at startup; nothing in the loop is sized by
 * the number of clients (a dropped client is recognised in O(1), its
 * memory freed after the batch of events that may still name it); when
 * descriptors run out anyway, a spare one is given up to accept and
 * close the connection, so the listening socket never spins.
 */
#define _GNU_SOURCE
#include "server.h"

#include "vidmm/softgpu.h"

#include "drvcheck.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

static void ca_usage(void *ud, int64_t *blocks, int64_t *bytes)
{
    struct counting_alloc *ca = ud;
    *blocks = ca->blocks;
    *bytes = ca->bytes;
}

/* The sd_listen_fds protocol (systemd's "sd_listen_fds" manual page):
 * LISTEN_PID names this process and LISTEN_FDS counts the descriptors
 * passed from 3 on.  vidmmd takes exactly one, a listening
 * SOCK_SEQPACKET Unix socket.  Returns it, -1 when nothing was passed
 * (or it was meant for another process), -2 after an error message. */
#define LISTEN_FDS_START 3
static int listen_fd_from_environment(void)
{
    const char *e_pid = getenv("LISTEN_PID"), *e_fds = getenv("LISTEN_FDS");
    if (!e_pid || !e_fds)
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long pid = strtoul(e_pid, &end, 10);
    if (errno || end == e_pid || *end || pid != (unsigned long)getpid())
        return -1;
    errno = 0;
    unsigned long n = strtoul(e_fds, &end, 10);
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (errno || end == e_fds || *end || n != 1) {
        fprintf(stderr, "vidmmd: LISTEN_FDS=%s: want exactly one socket\n", e_fds);
        return -2;
    }
    int fd = LISTEN_FDS_START, type = 0, listening = 0;
    socklen_t l1 = sizeof type, l2 = sizeof listening;
    struct sockaddr_un sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l2) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0 || sa.sun_family != AF_UNIX || type != SOCK_SEQPACKET ||
        !listening) {
        fprintf(stderr, "vidmmd: descriptor %d from LISTEN_FDS is not a listening SOCK_SEQPACKET Unix socket\n", fd);
        return -2;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        perror("vidmmd: LISTEN_FDS descriptor");
        return -2;
    }
    return fd;
}

/* Become pw for good: supplementary groups, group, user - in that order
 * (setgroups and setgid need the privilege setuid gives up) - then check
 * that root cannot be regained. */
static int drop_privileges(const struct passwd *pw)
{
    gid_t gid = pw->pw_gid;
    if (setgroups(1, &gid) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
        fprintf(stderr, "vidmmd: cannot become user %s: %s\n", pw->pw_name, strerror(errno));
        return -1;
    }
    if (pw->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
        fprintf(stderr, "vidmmd: still able to regain root after dropping to %s\n", pw->pw_name);
        return -1;
    }
    return 0;
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
               "              [--system-memory BYTES] [--max-locked BYTES] [--max-alloc-bytes BYTES]\n"
               "              [--max-handles N] [--max-requests N] [--max-connections-per-uid N]\n"
               "              [--max-processes N] [--user NAME] [--allow-set-budget] [-v|--verbose]...\n"
               "              [--quiet] [--foreground] [--driver vkgpu|FILE.so] [--version] [--help]\n"
               "  --driver: the adapter on a driver plug-in instead of softgpu: vkgpu (a Vulkan\n"
               "  device, docs/VKGPU.md; VIDMM_VKGPU_DEVICE picks it) or a FILE.so exporting\n"
               "  vidmm_driver_entry; VIDMM_DRIVER_OPTIONS goes to its constructor.\n"
               "  --allow-set-budget: clients may pin their own budgets (PROCESS_SET_BUDGET; tests).\n"
               "  BYTES takes a K, M or G suffix.  The socket defaults to $VIDMMD_SOCKET,\n"
               "  else $XDG_RUNTIME_DIR/vidmmd.sock, else /tmp/vidmmd-$UID.sock; a socket\n"
               "  passed by the service manager (LISTEN_FDS) is used instead (the system\n"
               "  unit's is /run/vidmmd/vidmmd.sock, on the clients' default search path).\n"
               "  Limits per connection (defaults): --max-locked 256M, --max-alloc-bytes 4G,\n"
               "  --max-handles 65536, --max-requests 256; per uid: --max-connections-per-uid 256.\n"
               "  As root, --user NAME is required: the daemon drops to NAME once the socket\n"
               "  is bound and the adapter open.\n");
}

/* Raise the soft descriptor limit to the hard one: every client is a
 * descriptor.  Says so when even the hard limit leaves room for fewer
 * clients than the adapter has processes. */
static void raise_nofile(uint64_t processes, int verbose)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
        else
            fprintf(stderr, "vidmmd: cannot raise RLIMIT_NOFILE from %llu to %llu: %s\n",
                    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, strerror(errno));
    }
    /* The daemon's own: stdio, the socket, epoll, signalfd, the spare,
     * softgpu's, a lock's memfd in flight. */
    const uint64_t own = 32;
    uint64_t need = processes + own;
    if (rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < need)
        fprintf(stderr,
                "vidmmd: RLIMIT_NOFILE is %llu (hard %llu): room for about %llu clients, fewer than the %llu "
                "processes the adapter allows (raise the hard limit, e.g. LimitNOFILE=)\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
                (unsigned long long)(rl.rlim_cur > own ? rl.rlim_cur - own : 0), (unsigned long long)processes);
    else if (verbose >= 2)
        fprintf(stderr, "vidmmd: RLIMIT_NOFILE %llu\n", (unsigned long long)rl.rlim_cur);
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
        /* The first descriptor goes to the request (a SHARE_OPEN names its
         * share by it; the server closes it); any other is closed. */
        int fds = 0, first = -1, trunc = 0;
        long r = vmmd_recv(vmmd_client_fd(c), buf, VMMD_MAX_MESSAGE, MSG_DONTWAIT, &first, &fds, &trunc);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r <= 0) {
            vmmd_client_drop(srv, c, r == 0 ? "connection closed" : "receive failed");
            return;
        }
        if (vmmd_client_message_fd(srv, c, buf, (size_t)r, fds, first, trunc) < 0)
            break;
    }
    settle(srv, ep, c, "protocol error");
}

/* softgpu, or the plug-in's driver and the plug-in. */
static void driver_close(struct softgpu *sg, struct drvcheck_driver *drv, void *lib)
{
    if (sg) {
        softgpu_destroy(sg);
        return;
    }
    if (drv->wait_idle)
        drv->wait_idle(drv->driver);
    drv->destroy(drv->driver);
    dlclose(lib);
}

#ifndef VIDMM_PLUGIN_DIR
#define VIDMM_PLUGIN_DIR "/usr/local/lib/vidmm"
#endif

/* A driver plug-in instead of softgpu (--driver): "vkgpu" is vkgpu.so
 * from $VIDMM_VKGPU_PLUGIN, beside the daemon, or the installed plug-in
 * directory; anything else a path.  0, or -1 after saying why. */
static int plugin_open(const char *name, void **lib, struct drvcheck_driver *drv)
{
    char buf[4096];
    const char *path = name;
    if (!strcmp(name, "vkgpu")) {
        const char *env = getenv("VIDMM_VKGPU_PLUGIN");
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 16);
        char *slash = n > 0 ? (buf[n] = 0, strrchr(buf, '/')) : NULL;
        if (env && *env)
            path = env;
        else if (slash && (strcpy(slash, "/vkgpu.so"), access(buf, R_OK) == 0))
            path = buf;
        else
            path = VIDMM_PLUGIN_DIR "/vkgpu.so";
    }
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *sym = *lib ? dlsym(*lib, DRVCHECK_ENTRY_SYMBOL) : NULL;
    if (!sym) {
        fprintf(stderr, "vidmmd: --driver %s: cannot load %s or it has no %s\n", name, path, DRVCHECK_ENTRY_SYMBOL);
        if (*lib)
            dlclose(*lib);
        return -1;
    }
    drvcheck_ctor ctor;
    memcpy(&ctor, &sym, sizeof ctor);       /* POSIX: a data pointer from dlsym names the function */
    struct drvcheck_env env = { vidmm_cb_notify_fence, vidmm_cb_notify_context_fence, vidmm_cb_notify_page_fault,
                                getenv("VIDMM_DRIVER_OPTIONS") };
    vidmm_status st = ctor(&env, drv);
    if (st < 0) {
        fprintf(stderr, "vidmmd: --driver %s: the driver did not start: %s\n", name, vidmm_status_str(st));
        dlclose(*lib);
        return -1;
    }
    return 0;
}

/* A usage error: what was wrong, then where the options are listed.
 * Returns 2. */
static int bad_usage(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "vidmmd: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(vidmmd --help lists the options)\n");
    return 2;
}

/* The preset names, for a --preset that names none. */
static int preset_known(const char *name)
{
    for (const char *const *p = softgpu_preset_names(); *p; p++)
        if (!strcmp(*p, name))
            return 1;
    return 0;
}

/* The command line, GNU style (getopt_long: --name=value, options in any
 * order, -- ends them).  Returns -1 to go on, else the exit status (0
 * after --help or --version, 2 after a usage error naming the argument). */
static int parse_args(int argc, char **argv, const char **sock_path, struct softgpu_config *sc, uint64_t *sysmem,
                      uint64_t *max_locked, uint64_t *max_alloc, uint64_t *max_handles, uint64_t *max_requests,
                      uint64_t *max_per_uid, uint64_t *max_processes, const char **user, int *verbose,
                      int *allow_set_budget, const char **driver)
{
    enum { O_SOCKET = 256, O_PRESET, O_SEGMENT, O_SYSMEM, O_MAX_LOCKED, O_MAX_PROCESSES, O_MAX_ALLOC, O_MAX_HANDLES,
           O_MAX_REQUESTS, O_MAX_PER_UID, O_USER, O_QUIET, O_ALLOW_BUDGET, O_FOREGROUND, O_VERSION, O_DRIVER };
    static const struct option longs[] = {
        { "socket", required_argument, NULL, O_SOCKET },
        { "preset", required_argument, NULL, O_PRESET },
        { "driver", required_argument, NULL, O_DRIVER },
        { "segment", required_argument, NULL, O_SEGMENT },
        { "system-memory", required_argument, NULL, O_SYSMEM },
        { "max-locked", required_argument, NULL, O_MAX_LOCKED },
        { "max-processes", required_argument, NULL, O_MAX_PROCESSES },
        { "max-alloc-bytes", required_argument, NULL, O_MAX_ALLOC },
        { "max-handles", required_argument, NULL, O_MAX_HANDLES },
        { "max-requests", required_argument, NULL, O_MAX_REQUESTS },
        { "max-connections-per-uid", required_argument, NULL, O_MAX_PER_UID },
        { "user", required_argument, NULL, O_USER },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, O_QUIET },
        { "allow-set-budget", no_argument, NULL, O_ALLOW_BUDGET },
        { "foreground", no_argument, NULL, O_FOREGROUND },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, O_VERSION },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":vh", longs, NULL)) != -1) {
        const char *v = optarg, *opt = argv[optind - 1];
        switch (c) {
        case O_SOCKET: *sock_path = v; break;
        case O_PRESET:
            if (!preset_known(v)) {
                fprintf(stderr, "vidmmd: --preset %s: no such softgpu preset (", v);
                for (const char *const *p = softgpu_preset_names(); *p; p++)
                    fprintf(stderr, "%s%s", p == softgpu_preset_names() ? "" : ", ", *p);
                fprintf(stderr, ")\n");
                return 2;
            }
            sc->preset = v;
            break;
        case O_SEGMENT: {
            const char *eq = strchr(v, '=');
            uint64_t id = 0, size = 0;
            char idbuf[16];
            if (!eq || (size_t)(eq - v) >= sizeof idbuf)
                return bad_usage("--segment %s: want ID=BYTES (ID 1-%u)", v, SOFTGPU_MAX_SEGMENTS);
            memcpy(idbuf, v, (size_t)(eq - v));
            idbuf[eq - v] = 0;
            if (parse_u64(idbuf, &id) || id == 0 || id > SOFTGPU_MAX_SEGMENTS || parse_u64(eq + 1, &size))
                return bad_usage("--segment %s: want ID=BYTES (ID 1-%u, BYTES with K, M or G)", v,
                                 SOFTGPU_MAX_SEGMENTS);
            sc->segment_size[id] = size;
            break;
        }
        case O_SYSMEM:
            if (parse_u64(v, sysmem))
                return bad_usage("--system-memory %s: want BYTES (K, M or G suffix)", v);
            break;
        case O_MAX_LOCKED:
            if (parse_u64(v, max_locked))
                return bad_usage("--max-locked %s: want BYTES (K, M or G suffix)", v);
            break;
        case O_MAX_PROCESSES:
            if (parse_u64(v, max_processes) || *max_processes > VIDMM_MAX_PROCESSES_LIMIT)
                return bad_usage("--max-processes %s: want a number up to %u", v, VIDMM_MAX_PROCESSES_LIMIT);
            break;
        case O_MAX_ALLOC: case O_MAX_HANDLES: case O_MAX_REQUESTS: case O_MAX_PER_UID: {
            uint64_t *dst = c == O_MAX_ALLOC ? max_alloc : c == O_MAX_HANDLES ? max_handles
                          : c == O_MAX_REQUESTS ? max_requests : max_per_uid;
            uint64_t cap = c == O_MAX_ALLOC ? UINT64_MAX : c == O_MAX_HANDLES ? (1u << 24) - 1 : UINT32_MAX;
            if (parse_u64(v, dst) || *dst == 0 || *dst > cap)
                return bad_usage("%s %s: want a positive number%s", opt, v,
                                 c == O_MAX_HANDLES ? " up to 16777215" : "");
            break;
        }
        case O_USER: *user = v; break;
        case O_DRIVER: *driver = v; break;
        case 'v': (*verbose)++; break;
        case O_QUIET: *verbose = 0; break;
        case O_ALLOW_BUDGET: *allow_set_budget = 1; break;
        case O_FOREGROUND: break;   /* the only mode: a service manager keeps it in the foreground */
        case 'h': usage(stdout); return 0;
        case O_VERSION: printf("vidmmd %s\n", VIDMM_VERSION_STRING); return 0;
        case ':': return bad_usage("%s needs a value", opt);
        default:
            if (optopt && opt[0] == '-' && opt[1] == '-' && strchr(opt, '='))
                return bad_usage("%.*s takes no value", (int)(strchr(opt, '=') - opt), opt);
            if (optopt && !(opt[0] == '-' && opt[1] == '-'))
                return bad_usage("unknown option '-%c'", optopt);
            return bad_usage("unknown option '%s'", opt);
        }
    }
    if (optind < argc)
        return bad_usage("unknown argument '%s' (vidmmd takes options only)", argv[optind]);
    return -1;
}

int main(int argc, char **argv)
{
    const char *driver = NULL;
    void *driver_lib = NULL;
    struct drvcheck_driver drv;
    memset(&drv, 0, sizeof drv);
    const char *sock_path = getenv("VIDMMD_SOCKET");
    char default_path[108];
    struct softgpu_config sc;
    memset(&sc, 0, sizeof sc);
    sc.preset = "dgpu";
    uint64_t sysmem = 0, max_locked = 0, max_alloc = 0, max_handles = 0, max_requests = 0, max_per_uid = 0;
    uint64_t max_processes = 0;
    const char *user = NULL;
    int verbose = 1, allow_set_budget = 0;
    /* Not dumpable: /proc/<vidmmd>/fd, the one path to the export files
     * that name shared allocations, is then closed to other processes of
     * its user (docs/DAEMON.md "Shared allocations"). */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int rc = parse_args(argc, argv, &sock_path, &sc, &sysmem, &max_locked, &max_alloc, &max_handles, &max_requests,
                        &max_per_uid, &max_processes, &user, &verbose, &allow_set_budget, &driver);
    if (rc >= 0)
        return rc;
    /* Who the daemon will be: refused as root without --user (a client
     * would reach an adapter - memfds, the paging engine - run by root). */
    struct passwd pwbuf, *pw = NULL;
    char pwstore[4096];
    if (user) {
        int e = getpwnam_r(user, &pwbuf, pwstore, sizeof pwstore, &pw);
        if (e || !pw) {
            fprintf(stderr, "vidmmd: --user %s: no such user\n", user);
            return 2;
        }
        if (geteuid() != 0 && pw->pw_uid != geteuid()) {
            fprintf(stderr, "vidmmd: --user %s: only root can change user\n", user);
            return 2;
        }
    } else if (geteuid() == 0) {
        fprintf(stderr, "vidmmd: refusing to run as root: give --user NAME (the daemon drops to it once the socket is "
                        "bound), or start it as that user\n");
        return 2;
    }
    int lfd = listen_fd_from_environment();
    if (lfd == -2)
        return 2;
    int activated = lfd >= 0;
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
    if (activated) {   /* the service manager's socket: its path for the log only */
        socklen_t sl = sizeof sa;
        if (getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0 || sl <= offsetof(struct sockaddr_un, sun_path))
            snprintf(sa.sun_path, sizeof sa.sun_path, "(unnamed)");
        sa.sun_path[sizeof sa.sun_path - 1] = 0;
        snprintf(default_path, sizeof default_path, "%s", sa.sun_path);
        sock_path = default_path;
    } else if (strlen(sock_path) >= sizeof sa.sun_path) {
        fprintf(stderr, "vidmmd: socket path too long: %s\n", sock_path);
        return 2;
    }
    if (!activated)
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
    raise_nofile(max_processes ? max_processes : VIDMM_DEFAULT_MAX_PROCESSES, verbose);

    /* The adapter. */
    struct softgpu *sg = NULL;
    vidmm_status st = VIDMM_OK;
    if (driver) {
        if (plugin_open(driver, &driver_lib, &drv) < 0)
            return 1;
    } else if ((st = softgpu_create(&sc, &sg)) < 0) {
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
    if (sg) {
        softgpu_fill_adapter_create_info(sg, &ci);
    } else {
        ci.abi_version = VIDMM_ABI_VERSION;
        ci.ops = drv.ops;
        ci.driver = drv.driver;
        ci.agp_aperture_base = drv.agp_aperture_base;
        ci.agp_aperture_size = drv.agp_aperture_size;
    }
    ci.host_allocator = &ca.ha;
    ci.system_memory_limit = sysmem;
    ci.max_processes = (uint32_t)max_processes;
    ci.error_message = msg;
    ci.error_message_size = sizeof msg;
    struct vidmm_adapter *ad = NULL;
    st = vidmm_adapter_open(&ci, &ad);
    if (st < 0) {
        fprintf(stderr, "vidmmd: vidmm_adapter_open: %s: %s\n", vidmm_status_str(st), msg);
        driver_close(sg, &drv, driver_lib);
        return 1;
    }
    struct vmmd_server_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.adapter = ad;
    cfg.log = stderr;
    cfg.verbose = verbose;
    cfg.max_locked_bytes = max_locked;
    cfg.allow_set_budget = allow_set_budget;
    cfg.max_alloc_bytes = max_alloc;
    cfg.max_objects = (uint32_t)max_handles;
    cfg.max_requests = (uint32_t)max_requests;
    cfg.max_connections_per_uid = (uint32_t)max_per_uid;
    cfg.admin_uid = pw ? pw->pw_uid : geteuid();
    cfg.host_usage = ca_usage;
    cfg.host_usage_user = &ca;
    struct vmmd_server *srv = NULL;
    if (vmmd_server_create(&cfg, &srv) < 0) {
        fprintf(stderr, "vidmmd: out of memory\n");
        return 1;
    }

    /* Socket, loop. */
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (!activated)
        lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sfd < 0 || lfd < 0) {
        perror("vidmmd: socket");
        return 1;
    }
    if (!activated) {
        unlink(sock_path);   /* a stale socket of an earlier run */
        mode_t old = umask(0077);   /* only this user connects (docs/DAEMON.md) */
        int brc = bind(lfd, (struct sockaddr *)&sa, sizeof sa);
        umask(old);
        /* SOMAXCONN: many clients may connect at once (the kernel clips
         * it to net.core.somaxconn). */
        if (brc != 0 || listen(lfd, SOMAXCONN) != 0) {
            fprintf(stderr, "vidmmd: cannot listen on %s: %s\n", sock_path, strerror(errno));
            return 1;
        }
        /* The socket belongs to the user the daemon serves as. */
        if (pw && geteuid() == 0 && chown(sock_path, pw->pw_uid, pw->pw_gid) != 0) {
            fprintf(stderr, "vidmmd: chown %s to %s: %s\n", sock_path, pw->pw_name, strerror(errno));
            return 1;
        }
    }
    /* Socket bound and adapter open: nothing needs root from here on. */
    if (pw && geteuid() == 0 && drop_privileges(pw) != 0)
        return 1;
    /* A change of uid resets the dumpable flag to the system's default:
     * not dumpable again (the export files, above). */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &lfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    ev.data.ptr = &sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
    if (verbose)
        fprintf(stderr, "vidmmd: listening on %s%s (%s %s, pid %ld, uid %ld)\n", sock_path,
                activated ? " (socket from the service manager)" : "", driver ? "driver" : "preset",
                driver ? drv.name : sc.preset, (long)getpid(), (long)geteuid());
    uint8_t *buf = malloc(VMMD_MAX_MESSAGE);
    if (!buf)
        return 1;
    /* Given up when accept finds no descriptor left (EMFILE), so the
     * pending connection can be taken and closed. */
    int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    uint64_t refused_nofile = 0;
    int running = 1;
    while (running) {
        struct epoll_event evs[64];
        size_t parked = vmmd_server_poll_waits(srv);
        /* Send what was queued outside a client's own turn - the answers
         * of waits just released, trim events raised by another client's
         * request - to those clients only (the server lists them). */
        for (struct vmmd_client *c; (c = vmmd_server_next_pending(srv)) != NULL;)
            settle(srv, ep, c, "closing");
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
                    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare >= 0) {
                        /* Out of descriptors: take the connection with
                         * the spare's and close it (the client sees the
                         * connection end), or it would stay pending and
                         * wake the loop forever. */
                        close(spare);
                        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd >= 0)
                            close(fd);
                        spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
                        if (refused_nofile++ == 0 || verbose >= 2)
                            fprintf(stderr, "vidmmd: out of descriptors (RLIMIT_NOFILE): connection refused\n");
                        continue;
                    }
                    if (fd < 0)
                        break;
                    add_client(srv, ep, fd);
                }
            } else {
                /* A client dropped earlier in this batch is still in
                 * memory (freed after the batch): O(1) to skip. */
                struct vmmd_client *c = p;
                if (vmmd_client_dropped(c))
                    continue;
                if (evs[i].events & EPOLLIN)
                    client_readable(srv, ep, c, buf);
                else if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                    settle(srv, ep, c, "closing");
            }
        }
        vmmd_server_reap(srv);   /* no event of this batch names them any more */
    }
    free(buf);
    if (spare >= 0)
        close(spare);

    /* Shutdown: every client torn down, the checkers, the leak report. */
    struct vmmd_server_stats ss;
    vmmd_server_get_stats(srv, &ss);
    size_t left = vmmd_server_client_count(srv);
    vmmd_server_destroy(srv);
    close(lfd);
    if (!activated)   /* the service manager's socket outlives this run */
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
    int softgpu_bad = sg ? softgpu_check(sg) : 0;
    driver_close(sg, &drv, driver_lib);
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
    fprintf(stderr, "vidmmd: submissions: %llu virtual submissions, %llu waits parked, %llu trim events sent\n",
            (unsigned long long)ss.submissions, (unsigned long long)ss.waits_parked,
            (unsigned long long)ss.trim_events);
    fprintf(stderr,
            "vidmmd: leak report: %llu allocations alive after teardown, %lld host blocks (%lld bytes) alive after "
            "close, %d adapter check violations, %d softgpu check violations\n",
            (unsigned long long)ai.live_allocations, (long long)lb, (long long)lbytes, violations, softgpu_bad);
    if (violations)
        fprintf(stderr, "%s\n", report);
    int clean = ai.live_allocations == 0 && lb == 0 && lbytes == 0 && violations == 0 && softgpu_bad == 0;
    fprintf(stderr, "vidmmd: %s\n", clean ? "clean" : "NOT CLEAN");
    close(ep);
    close(sfd);
    return clean ? 0 : 1;
}
