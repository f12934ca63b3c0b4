/*
 * many.c - thousands of clients connected to one vidmmd at once.
 *
 *   many SOCKET NCHILD PER_CHILD
 *
 * NCHILD forked processes each open PER_CHILD connections (each its own
 * vidmm process in the daemon) and keep them all open; on every
 * connection: a device, a paging queue, a 4 KiB allocation made
 * resident, a seeded pattern written through lock/unlock, then read back
 * through a second lock.  When every child has all its connections
 * served, the parent's own connection asks the daemon for its check:
 * NCHILD x PER_CHILD + 1 clients, no violation.  Then the children
 * disconnect everything, and the check finds one client (the parent)
 * and no allocation alive.  Each process raises its own RLIMIT_NOFILE to
 * the hard limit (every connection is a descriptor).  The daemon must
 * have been started with segments that hold that many root page tables
 * (run.sh, docs/DAEMON.md "How many clients").
 */
#include "dtest.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 4096u

static int raise_nofile(uint64_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    return rl.rlim_cur == RLIM_INFINITY || (uint64_t)rl.rlim_cur >= need ? 0 : -1;
}

/* Exit status: 0 all served and verified, 10+ the step that failed. */
static int child(const char *sock, uint32_t ci, uint32_t n, int ready_fd, int go_fd)
{
    if (raise_nofile(n + 16) < 0)
        return 9;
    struct vidmm_client **c = calloc(n, sizeof *c);
    if (!c)
        return 9;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = ci * n + i;
        vidmm_status st = vidmm_client_connect(sock, &c[i]);
        if (st < 0) {
            fprintf(stderr, "child %u: connection %u: %s\n", ci, i, vidmm_status_str(st));
            return 10;
        }
        vidmm_handle dev = 0, q = 0, h = 0;
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_STAGING, SIZE);
        if ((st = vidmm_client_device_create(c[i], &dev)) < 0 ||
            (st = vidmm_client_paging_queue_create(c[i], dev, 0, &q)) < 0 ||
            (st = vidmm_client_allocation_create2(c[i], &d, sizeof d, 0, &h)) < 0 ||
            (st = dt_make_resident(c[i], dev, q, &h, 1)) < 0) {
            fprintf(stderr, "child %u: connection %u: setup: %s\n", ci, i, vidmm_status_str(st));
            return 11;
        }
        if ((st = dt_fill(c[i], h, 0x5ca1e, id, SIZE)) < 0) {
            fprintf(stderr, "child %u: connection %u: fill: %s\n", ci, i, vidmm_status_str(st));
            return 12;
        }
        int ok = dt_verify(c[i], h, 0x5ca1e, id, SIZE);
        if (ok != 1) {
            fprintf(stderr, "child %u: connection %u: read back %s\n", ci, i,
                    ok < 0 ? vidmm_status_str(ok) : "differs");
            return 13;
        }
    }
    (void)!write(ready_fd, "r", 1);
    close(ready_fd);
    char b;
    (void)!read(go_fd, &b, 1);   /* EOF: the parent has checked; disconnect */
    for (uint32_t i = 0; i < n; i++)
        vidmm_client_disconnect(c[i]);
    free(c);
    return 0;
}

int main(int argc, char **argv)
{
    dt_name = "daemon many";
    if (argc < 4) {
        fprintf(stderr, "usage: many SOCKET NCHILD PER_CHILD\n");
        return 2;
    }
    const char *sock = argv[1];
    uint32_t nchild = (uint32_t)atoi(argv[2]), per = (uint32_t)atoi(argv[3]);
    CHECK(nchild >= 1 && nchild <= 64 && per >= 1, "%u children of %u connections", nchild, per);
    if (!(nchild >= 1 && nchild <= 64 && per >= 1))
        return dt_summary();
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0)
        return 2;
    fflush(stdout);
    pid_t *pid = calloc(nchild, sizeof *pid);
    if (!pid)
        return 2;
    for (uint32_t k = 0; k < nchild; k++) {
        pid[k] = fork();
        if (pid[k] == 0) {
            close(ready[0]);
            close(go[1]);
            _exit(child(sock, k, per, ready[1], go[0]));
        }
    }
    close(ready[1]);
    close(go[0]);
    /* Every child served and verified (a child that fails closes its end
     * without writing). */
    uint32_t served = 0;
    char b;
    while (served < nchild && read(ready[0], &b, 1) == 1)
        served++;
    CHECK(served == nchild, "%u of %u children have all %u connections served", served, nchild, per);
    struct vidmm_client *me = NULL;
    CHECK_ST(vidmm_client_connect(sock, &me), VIDMM_OK);
    uint32_t violations = 1, clients = 0;
    uint64_t live = 0;
    if (me) {
        CHECK_ST(vidmm_client_debug_check(me, &violations, &clients, &live), VIDMM_OK);
        CHECK(violations == 0, "%u adapter check violations with every client connected", violations);
        CHECK(clients == nchild * per + 1, "%u clients connected, want %u", clients, nchild * per + 1);
        CHECK(live == (uint64_t)served * per, "%llu allocations alive, want %llu", (unsigned long long)live,
              (unsigned long long)served * per);
    }
    printf("%s: %u clients connected at once (%u processes x %u), each with a resident allocation read back\n",
           dt_name, clients ? clients - 1 : 0, nchild, per);
    close(go[1]);   /* the children disconnect */
    int exited_ok = 0;
    for (uint32_t k = 0; k < nchild; k++) {
        int status = 0;
        waitpid(pid[k], &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            exited_ok++;
        else
            printf("%s: child %u: %s %d\n", dt_name, k, WIFEXITED(status) ? "exit" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    CHECK(exited_ok == (int)nchild, "%d of %u children finished cleanly", exited_ok, nchild);
    if (me) {
        /* The daemon has seen every child's connections close once their
         * sockets are shut; a check answered after that counts one. */
        vidmm_status st = VIDMM_OK;
        for (int tries = 0; tries < 500; tries++) {
            st = vidmm_client_debug_check(me, &violations, &clients, &live);
            if (st < 0 || clients == 1)
                break;
            usleep(10000);
        }
        CHECK_ST(st, VIDMM_OK);
        CHECK(violations == 0, "%u adapter check violations after the disconnects", violations);
        CHECK(clients == 1, "%u clients still connected, want 1", clients);
        CHECK(live == 0, "%llu allocations alive after the disconnects", (unsigned long long)live);
        vidmm_client_disconnect(me);
    }
    free(pid);
    return dt_summary();
}
