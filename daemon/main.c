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

#include "plugin.h"

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

/* The command line (parse_args), before anything is set up. */
struct options {
    const char *sock_path;          /* --socket, else $VIDMMD_SOCKET; NULL: the default */
    struct softgpu_config sc;       /* --preset, --segment */
    const char *driver;             /* --driver; NULL: softgpu */
    const char *user;               /* --user */
    uint64_t sysmem, max_locked, max_alloc, max_handles, max_requests, max_per_uid, max_processes;
    int verbose, allow_set_budget;
};

/* What main() sets up phase by phase, and shut_down() takes apart. */
struct daemon {
    struct options o;
    struct passwd pwbuf, *pw;       /* --user's entry, or NULL */
    char pwstore[4096];
    int lfd, sfd, ep;               /* the listening socket, the signalfd, the epoll instance */
    int activated;                  /* lfd came from the service manager */
    const char *sock_path;          /* for the log, and to unlink at shutdown */
    char path_buf[108];
    struct sockaddr_un sa;
    sigset_t mask;                  /* SIGTERM and SIGINT: read from sfd only */
    struct softgpu *sg;             /* the driver: softgpu, or */
    struct vidmm_plugin plugin;     /* the --driver plug-in */
    struct counting_alloc ca;
    struct vidmm_adapter *ad;
    struct vmmd_server *srv;
    uint8_t *buf;                   /* one received message */
    int spare;                      /* given up when accept finds no descriptor left */
    uint64_t refused_nofile;
};

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

/* --preset NAME: -1 when it names a softgpu preset, else 2 after
 * listing them. */
static int parse_preset(const char *v, struct softgpu_config *sc)
{
    if (!preset_known(v)) {
        fprintf(stderr, "vidmmd: --preset %s: no such softgpu preset (", v);
        for (const char *const *p = softgpu_preset_names(); *p; p++)
            fprintf(stderr, "%s%s", p == softgpu_preset_names() ? "" : ", ", *p);
        fprintf(stderr, ")\n");
        return 2;
    }
    sc->preset = v;
    return -1;
}

/* --segment ID=BYTES: -1, or 2 after a usage error. */
static int parse_segment(const char *v, struct softgpu_config *sc)
{
    const char *eq = strchr(v, '=');
    uint64_t id = 0, size = 0;
    char idbuf[16];
    if (!eq || (size_t)(eq - v) >= sizeof idbuf)
        return bad_usage("--segment %s: want ID=BYTES (ID 1-%u)", v, SOFTGPU_MAX_SEGMENTS);
    memcpy(idbuf, v, (size_t)(eq - v));
    idbuf[eq - v] = 0;
    if (parse_u64(idbuf, &id) || id == 0 || id > SOFTGPU_MAX_SEGMENTS || parse_u64(eq + 1, &size))
        return bad_usage("--segment %s: want ID=BYTES (ID 1-%u, BYTES with K, M or G)", v, SOFTGPU_MAX_SEGMENTS);
    sc->segment_size[id] = size;
    return -1;
}

/* The command line, GNU style (getopt_long: --name=value, options in any
 * order, -- ends them).  Returns -1 to go on, else the exit status (0
 * after --help or --version, 2 after a usage error naming the argument). */
static int parse_args(int argc, char **argv, struct options *o)
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
    int c, rc;
    while ((c = getopt_long(argc, argv, ":vh", longs, NULL)) != -1) {
        const char *v = optarg, *opt = argv[optind - 1];
        switch (c) {
        case O_SOCKET: o->sock_path = v; break;
        case O_PRESET:
            if ((rc = parse_preset(v, &o->sc)) >= 0)
                return rc;
            break;
        case O_SEGMENT:
            if ((rc = parse_segment(v, &o->sc)) >= 0)
                return rc;
            break;
        case O_SYSMEM:
            if (parse_u64(v, &o->sysmem))
                return bad_usage("--system-memory %s: want BYTES (K, M or G suffix)", v);
            break;
        case O_MAX_LOCKED:
            if (parse_u64(v, &o->max_locked))
                return bad_usage("--max-locked %s: want BYTES (K, M or G suffix)", v);
            break;
        case O_MAX_PROCESSES:
            if (parse_u64(v, &o->max_processes) || o->max_processes > VIDMM_MAX_PROCESSES_LIMIT)
                return bad_usage("--max-processes %s: want a number up to %u", v, VIDMM_MAX_PROCESSES_LIMIT);
            break;
        case O_MAX_ALLOC: case O_MAX_HANDLES: case O_MAX_REQUESTS: case O_MAX_PER_UID: {
            uint64_t *dst = c == O_MAX_ALLOC ? &o->max_alloc : c == O_MAX_HANDLES ? &o->max_handles
                          : c == O_MAX_REQUESTS ? &o->max_requests : &o->max_per_uid;
            uint64_t cap = c == O_MAX_ALLOC ? UINT64_MAX : c == O_MAX_HANDLES ? (1u << 24) - 1 : UINT32_MAX;
            if (parse_u64(v, dst) || *dst == 0 || *dst > cap)
                return bad_usage("%s %s: want a positive number%s", opt, v,
                                 c == O_MAX_HANDLES ? " up to 16777215" : "");
            break;
        }
        case O_USER: o->user = v; break;
        case O_DRIVER: o->driver = v; break;
        case 'v': o->verbose++; break;
        case O_QUIET: o->verbose = 0; break;
        case O_ALLOW_BUDGET: o->allow_set_budget = 1; break;
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

/* ---- setup, one phase each ----------------------------------------------- */

/* Who the daemon will be: refused as root without --user (a client
 * would reach an adapter - memfds, the paging engine - run by root).
 * -1 to go on, else the exit status. */
static int check_user(struct daemon *d)
{
    const char *user = d->o.user;
    if (user) {
        int e = getpwnam_r(user, &d->pwbuf, d->pwstore, sizeof d->pwstore, &d->pw);
        if (e || !d->pw) {
            fprintf(stderr, "vidmmd: --user %s: no such user\n", user);
            return 2;
        }
        if (geteuid() != 0 && d->pw->pw_uid != geteuid()) {
            fprintf(stderr, "vidmmd: --user %s: only root can change user\n", user);
            return 2;
        }
    } else if (geteuid() == 0) {
        fprintf(stderr, "vidmmd: refusing to run as root: give --user NAME (the daemon drops to it once the socket is "
                        "bound), or start it as that user\n");
        return 2;
    }
    return -1;
}

/* The socket: the service manager's (LISTEN_FDS), else --socket, else
 * the default path.  -1 to go on, else the exit status. */
static int choose_socket(struct daemon *d)
{
    d->lfd = listen_fd_from_environment();
    if (d->lfd == -2)
        return 2;
    d->activated = d->lfd >= 0;
    d->sock_path = d->o.sock_path;
    if (!d->sock_path) {
        const char *rt = getenv("XDG_RUNTIME_DIR");
        if (rt && *rt)
            snprintf(d->path_buf, sizeof d->path_buf, "%s/vidmmd.sock", rt);
        else
            snprintf(d->path_buf, sizeof d->path_buf, "/tmp/vidmmd-%ld.sock", (long)getuid());
        d->sock_path = d->path_buf;
    }
    struct sockaddr_un *sa = &d->sa;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (d->activated) {   /* the service manager's socket: its path for the log only */
        socklen_t sl = sizeof *sa;
        if (getsockname(d->lfd, (struct sockaddr *)sa, &sl) != 0 || sl <= offsetof(struct sockaddr_un, sun_path))
            snprintf(sa->sun_path, sizeof sa->sun_path, "(unnamed)");
        sa->sun_path[sizeof sa->sun_path - 1] = 0;
        snprintf(d->path_buf, sizeof d->path_buf, "%s", sa->sun_path);
        d->sock_path = d->path_buf;
    } else if (strlen(d->sock_path) >= sizeof sa->sun_path) {
        fprintf(stderr, "vidmmd: socket path too long: %s\n", d->sock_path);
        return 2;
    }
    if (!d->activated)
        strcpy(sa->sun_path, d->sock_path);
    return -1;
}

/* SIGTERM and SIGINT blocked before softgpu starts its engine thread
 * (threads inherit the mask): they arrive on the signalfd only, never
 * kill a thread that did not block them. */
static void block_signals(struct daemon *d)
{
    sigemptyset(&d->mask);
    sigaddset(&d->mask, SIGTERM);
    sigaddset(&d->mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &d->mask, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The driver: softgpu, or the --driver plug-in (support/plugin.c, as
 * the tool loads it).  0, or -1 after saying why. */
static int open_driver(struct daemon *d)
{
    if (d->o.driver)
        return vidmm_plugin_start("vidmmd", d->o.driver, &d->plugin) == VIDMM_PLUGIN_OK ? 0 : -1;
    vidmm_status st = softgpu_create(&d->o.sc, &d->sg);
    if (st < 0) {
        fprintf(stderr, "vidmmd: softgpu_create(%s): %s\n", d->o.sc.preset, vidmm_status_str(st));
        return -1;
    }
    return 0;
}

static void close_driver(struct daemon *d)
{
    if (d->sg)
        softgpu_destroy(d->sg);
    else
        vidmm_plugin_stop(&d->plugin);
}

/* The adapter on the driver, its host memory counted for the leak
 * report.  0, or -1 after saying why (the driver closed again). */
static int open_adapter(struct daemon *d)
{
    struct counting_alloc *ca = &d->ca;
    memset(ca, 0, sizeof *ca);
    ca->ha.alloc = ca_alloc;
    ca->ha.free = ca_free;
    ca->ha.user_data = ca;
    char msg[256] = "";
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    if (d->sg) {
        softgpu_fill_adapter_create_info(d->sg, &ci);
    } else {
        ci.abi_version = VIDMM_ABI_VERSION;
        ci.ops = d->plugin.drv.ops;
        ci.driver = d->plugin.drv.driver;
        ci.agp_aperture_base = d->plugin.drv.agp_aperture_base;
        ci.agp_aperture_size = d->plugin.drv.agp_aperture_size;
    }
    ci.host_allocator = &ca->ha;
    ci.system_memory_limit = d->o.sysmem;
    ci.max_processes = (uint32_t)d->o.max_processes;
    ci.error_message = msg;
    ci.error_message_size = sizeof msg;
    vidmm_status st = vidmm_adapter_open(&ci, &d->ad);
    if (st < 0) {
        fprintf(stderr, "vidmmd: vidmm_adapter_open: %s: %s\n", vidmm_status_str(st), msg);
        close_driver(d);
        return -1;
    }
    return 0;
}

/* The request server on the adapter, with the limits of the command
 * line.  0, or -1 after saying why. */
static int start_server(struct daemon *d)
{
    struct vmmd_server_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.adapter = d->ad;
    cfg.log = stderr;
    cfg.verbose = d->o.verbose;
    cfg.max_locked_bytes = d->o.max_locked;
    cfg.allow_set_budget = d->o.allow_set_budget;
    cfg.max_alloc_bytes = d->o.max_alloc;
    cfg.max_objects = (uint32_t)d->o.max_handles;
    cfg.max_requests = (uint32_t)d->o.max_requests;
    cfg.max_connections_per_uid = (uint32_t)d->o.max_per_uid;
    cfg.admin_uid = d->pw ? d->pw->pw_uid : geteuid();
    cfg.host_usage = ca_usage;
    cfg.host_usage_user = &d->ca;
    if (vmmd_server_create(&cfg, &d->srv) < 0) {
        fprintf(stderr, "vidmmd: out of memory\n");
        return -1;
    }
    return 0;
}

/* Bind and listen (unless the service manager did), hand the socket to
 * --user's user.  0, or -1 after saying why. */
static int bind_socket(struct daemon *d)
{
    unlink(d->sock_path);   /* a stale socket of an earlier run */
    mode_t old = umask(0077);   /* only this user connects (docs/DAEMON.md) */
    int brc = bind(d->lfd, (struct sockaddr *)&d->sa, sizeof d->sa);
    umask(old);
    /* SOMAXCONN: many clients may connect at once (the kernel clips it
     * to net.core.somaxconn). */
    if (brc != 0 || listen(d->lfd, SOMAXCONN) != 0) {
        fprintf(stderr, "vidmmd: cannot listen on %s: %s\n", d->sock_path, strerror(errno));
        return -1;
    }
    /* The socket belongs to the user the daemon serves as. */
    if (d->pw && geteuid() == 0 && chown(d->sock_path, d->pw->pw_uid, d->pw->pw_gid) != 0) {
        fprintf(stderr, "vidmmd: chown %s to %s: %s\n", d->sock_path, d->pw->pw_name, strerror(errno));
        return -1;
    }
    return 0;
}

/* The signalfd and the socket, privileges dropped, the epoll instance
 * watching both.  0, or -1 after saying why. */
static int open_socket(struct daemon *d)
{
    d->sfd = signalfd(-1, &d->mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (!d->activated)
        d->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->sfd < 0 || d->lfd < 0) {
        perror("vidmmd: socket");
        return -1;
    }
    if (!d->activated && bind_socket(d) < 0)
        return -1;
    /* Socket bound and adapter open: nothing needs root from here on. */
    if (d->pw && geteuid() == 0 && drop_privileges(d->pw) != 0)
        return -1;
    /* A change of uid resets the dumpable flag to the system's default:
     * not dumpable again (the export files, main()). */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    d->ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &d->lfd;
    epoll_ctl(d->ep, EPOLL_CTL_ADD, d->lfd, &ev);
    ev.data.ptr = &d->sfd;
    epoll_ctl(d->ep, EPOLL_CTL_ADD, d->sfd, &ev);
    return 0;
}

/* ---- serving ------------------------------------------------------------- */

/* Every pending connection taken.  Out of descriptors, the connection is
 * taken with the spare's and closed (the client sees the connection
 * end), or it would stay pending and wake the loop forever. */
static void accept_clients(struct daemon *d)
{
    for (;;) {
        int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && d->spare >= 0) {
            close(d->spare);
            fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                close(fd);
            d->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (d->refused_nofile++ == 0 || d->o.verbose >= 2)
                fprintf(stderr, "vidmmd: out of descriptors (RLIMIT_NOFILE): connection refused\n");
            continue;
        }
        if (fd < 0)
            break;
        add_client(d->srv, d->ep, fd);
    }
}

/* One event of a batch.  Returns 0 when a signal asks to shut down. */
static int on_event(struct daemon *d, const struct epoll_event *e)
{
    void *p = e->data.ptr;
    if (p == &d->sfd) {
        struct signalfd_siginfo si;
        while (read(d->sfd, &si, sizeof si) == (ssize_t)sizeof si)
            if (d->o.verbose)
                fprintf(stderr, "vidmmd: %s: shutting down\n", strsignal((int)si.ssi_signo));
        return 0;
    }
    if (p == &d->lfd) {
        accept_clients(d);
        return 1;
    }
    /* A client dropped earlier in this batch is still in memory (freed
     * after the batch): O(1) to skip. */
    struct vmmd_client *c = p;
    if (vmmd_client_dropped(c))
        return 1;
    if (e->events & EPOLLIN)
        client_readable(d->srv, d->ep, c, d->buf);
    else if (e->events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
        settle(d->srv, d->ep, c, "closing");
    return 1;
}

/* The loop, until SIGTERM or SIGINT.  0, or 1 when there was no memory
 * for the receive buffer. */
static int serve(struct daemon *d)
{
    if (d->o.verbose)
        fprintf(stderr, "vidmmd: listening on %s%s (%s %s, pid %ld, uid %ld)\n", d->sock_path,
                d->activated ? " (socket from the service manager)" : "", d->o.driver ? "driver" : "preset",
                d->o.driver ? d->plugin.drv.name : d->o.sc.preset, (long)getpid(), (long)geteuid());
    d->buf = malloc(VMMD_MAX_MESSAGE);
    if (!d->buf)
        return 1;
    d->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int running = 1;
    while (running) {
        struct epoll_event evs[64];
        size_t parked = vmmd_server_poll_waits(d->srv);
        /* Send what was queued outside a client's own turn - the answers
         * of waits just released, trim events raised by another client's
         * request - to those clients only (the server lists them). */
        for (struct vmmd_client *c; (c = vmmd_server_next_pending(d->srv)) != NULL;)
            settle(d->srv, d->ep, c, "closing");
        int n = epoll_wait(d->ep, evs, 64, parked ? 1 : -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++)
            running &= on_event(d, &evs[i]);
        vmmd_server_reap(d->srv);   /* no event of this batch names them any more */
    }
    free(d->buf);
    if (d->spare >= 0)
        close(d->spare);
    return 0;
}

/* ---- shutdown ------------------------------------------------------------ */

/* What the run served, and whether it left anything behind. */
static void shutdown_report(const struct vmmd_server_stats *ss, size_t left, const struct vidmm_residency_stats *rs)
{
    fprintf(stderr,
            "vidmmd: shutdown: %llu connections served (%zu still open, torn down), %llu requests, "
            "%llu protocol errors, %llu locks\n",
            (unsigned long long)ss->connections, left, (unsigned long long)ss->requests,
            (unsigned long long)ss->protocol_errors, (unsigned long long)ss->locks);
    fprintf(stderr, "vidmmd: sharing: %llu exports, %llu opens, %llu export files open at shutdown\n",
            (unsigned long long)ss->shares_exported, (unsigned long long)ss->shares_opened,
            (unsigned long long)ss->shares_live);
    fprintf(stderr, "vidmmd: residency: %llu make-resident calls, %llu evictions (%llu MiB), %llu restores\n",
            (unsigned long long)rs->make_resident_calls, (unsigned long long)rs->evictions,
            (unsigned long long)(rs->bytes_evicted >> 20), (unsigned long long)rs->restores);
    fprintf(stderr, "vidmmd: submissions: %llu virtual submissions, %llu waits parked, %llu trim events sent\n",
            (unsigned long long)ss->submissions, (unsigned long long)ss->waits_parked,
            (unsigned long long)ss->trim_events);
}

/* Every client torn down, the checkers, the leak report.  The exit
 * status: 0 only when all of it came out clean. */
static int shut_down(struct daemon *d)
{
    struct vmmd_server_stats ss;
    vmmd_server_get_stats(d->srv, &ss);
    size_t left = vmmd_server_client_count(d->srv);
    vmmd_server_destroy(d->srv);
    close(d->lfd);
    if (!d->activated)   /* the service manager's socket outlives this run */
        unlink(d->sock_path);
    char report[4096] = "";
    int violations = vidmm_adapter_check(d->ad, report, sizeof report);
    struct vidmm_adapter_info ai;
    memset(&ai, 0, sizeof ai);
    vidmm_adapter_query_info(d->ad, &ai);
    struct vidmm_residency_stats rs;
    memset(&rs, 0, sizeof rs);
    vidmm_residency_get_stats(d->ad, &rs);
    vidmm_adapter_close(d->ad);
    int softgpu_bad = d->sg ? softgpu_check(d->sg) : 0;
    close_driver(d);
    int64_t lb = d->ca.blocks, lbytes = d->ca.bytes;
    shutdown_report(&ss, left, &rs);
    fprintf(stderr,
            "vidmmd: leak report: %llu allocations alive after teardown, %lld host blocks (%lld bytes) alive after "
            "close, %d adapter check violations, %d softgpu check violations\n",
            (unsigned long long)ai.live_allocations, (long long)lb, (long long)lbytes, violations, softgpu_bad);
    if (violations)
        fprintf(stderr, "%s\n", report);
    int clean = ai.live_allocations == 0 && lb == 0 && lbytes == 0 && violations == 0 && softgpu_bad == 0;
    fprintf(stderr, "vidmmd: %s\n", clean ? "clean" : "NOT CLEAN");
    close(d->ep);
    close(d->sfd);
    return clean ? 0 : 1;
}

/* Parse, validate, open the driver, open the adapter, serve, shut down. */
int main(int argc, char **argv)
{
    struct daemon d;
    memset(&d, 0, sizeof d);
    d.o.sock_path = getenv("VIDMMD_SOCKET");
    d.o.sc.preset = "dgpu";
    d.o.verbose = 1;
    /* Not dumpable: /proc/<vidmmd>/fd, the one path to the export files
     * that name shared allocations, is then closed to other processes of
     * its user (docs/DAEMON.md "Shared allocations"). */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int rc = parse_args(argc, argv, &d.o);
    if (rc < 0)
        rc = check_user(&d);
    if (rc < 0)
        rc = choose_socket(&d);
    if (rc >= 0)
        return rc;
    block_signals(&d);
    raise_nofile(d.o.max_processes ? d.o.max_processes : VIDMM_DEFAULT_MAX_PROCESSES, d.o.verbose);
    if (open_driver(&d) < 0 || open_adapter(&d) < 0 || start_server(&d) < 0 || open_socket(&d) < 0)
        return 1;
    if (serve(&d) != 0)
        return 1;
    return shut_down(&d);
}
