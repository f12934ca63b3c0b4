/*
 * multi.c - several client processes on one vidmmd.
 *
 *   multi SOCKET stress NPROC ALLOCS SIZE ROUNDS
 *       NPROC processes, each with ALLOCS allocations of SIZE bytes and
 *       a seeded pattern in each, cycle groups of them through make-
 *       resident / evict for ROUNDS rounds (the daemon is sized so that
 *       together they over-commit it), check a group's bytes every
 *       round and every byte at the end.
 *   multi SOCKET kill NPROC ALLOCS SIZE ROUNDS
 *       the same, and the first process is SIGKILLed mid-run; the others
 *       must finish with their bytes intact, and afterwards nothing of
 *       the killed one is left in the adapter.
 * Either way the adapter check is clean and no allocation is alive once
 * every process is gone.
 */
#include "dtest.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int child(const char *sock, uint32_t seed, uint32_t nalloc, uint64_t size, uint32_t rounds, int ready_fd)
{
    struct vidmm_client *c = NULL;
    if (vidmm_client_connect(sock, &c) < 0)
        return 10;
    vidmm_handle dev = 0, q = 0;
    vidmm_handle *h = calloc(nalloc, sizeof *h);
    if (!h || vidmm_client_device_create(c, &dev) < 0 || vidmm_client_paging_queue_create(c, dev, 0, &q) < 0)
        return 11;
    for (uint32_t i = 0; i < nalloc; i++) {
        struct softgpu_alloc_desc d = dt_desc(i % 3 ? SOFTGPU_ALLOC_TEXTURE : SOFTGPU_ALLOC_CONSTANT, size);
        vidmm_status st = vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h[i]);
        if (st < 0) {
            fprintf(stderr, "child %u: create %u: %s\n", seed, i, vidmm_status_str(st));
            return 12;
        }
        if (dt_fill(c, h[i], seed, i, size) < 0)
            return 13;
    }
    if (ready_fd >= 0) {
        (void)!write(ready_fd, "r", 1);
        close(ready_fd);
    }
    uint32_t x = seed * 2654435761u + 1;
    for (uint32_t r = 0; r < rounds; r++) {
        vidmm_handle g[3];
        uint32_t gi[3];
        for (int k = 0; k < 3; k++) {
            x = x * 1103515245u + 12345u;
            gi[k] = (x >> 8) % nalloc;
            g[k] = h[gi[k]];
        }
        vidmm_status st = dt_make_resident(c, dev, q, g, 3);
        if (st < 0) {
            fprintf(stderr, "child %u: make_resident round %u: %s\n", seed, r, vidmm_status_str(st));
            return 14;
        }
        if (dt_verify(c, g[r % 3], seed, gi[r % 3], size) != 1) {
            fprintf(stderr, "child %u: round %u: allocation %u's bytes differ\n", seed, r, gi[r % 3]);
            return 15;
        }
        struct vidmm_evict_args ev;
        memset(&ev, 0, sizeof ev);
        ev.allocations = g;
        ev.count = 3;
        if (vidmm_client_evict(c, dev, &ev) < 0)
            return 16;
    }
    for (uint32_t i = 0; i < nalloc; i++)
        if (dt_verify(c, h[i], seed, i, size) != 1) {
            fprintf(stderr, "child %u: at the end allocation %u's bytes differ\n", seed, i);
            return 17;
        }
    /* Half destroy what they made, half leave it to the daemon. */
    if (seed % 2)
        for (uint32_t i = 0; i < nalloc; i++)
            if (vidmm_client_allocation_destroy(c, h[i]) < 0)
                return 18;
    vidmm_client_disconnect(c);
    free(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: multi SOCKET stress|kill NPROC ALLOCS SIZE ROUNDS\n");
        return 2;
    }
    const char *sock = argv[1];
    int kill_mode = !strcmp(argv[2], "kill");
    dt_name = kill_mode ? "daemon kill" : "daemon stress";
    uint32_t nproc = (uint32_t)atoi(argv[3]), nalloc = (uint32_t)atoi(argv[4]), rounds = (uint32_t)atoi(argv[6]);
    uint64_t size = strtoull(argv[5], NULL, 0);
    if (nproc < 1 || nproc > 64 || nalloc < 3)
        return 2;
    pid_t pids[64];
    int ready[64];
    fflush(stdout);
    for (uint32_t i = 0; i < nproc; i++) {
        int pfd[2];
        if (pipe(pfd) != 0)
            return 2;
        pids[i] = fork();
        if (pids[i] == 0) {
            close(pfd[0]);
            /* The victim runs for ever: it is killed, never finishes. */
            _exit(child(sock, i + 1, nalloc, size, kill_mode && i == 0 ? 1000000u : rounds, pfd[1]));
        }
        close(pfd[1]);
        ready[i] = pfd[0];
    }
    if (kill_mode) {
        /* Once the victim has its allocations and is cycling them, kill it. */
        char ch;
        CHECK(read(ready[0], &ch, 1) == 1, "victim ready");
        struct timespec ts = { 0, 150 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        kill(pids[0], SIGKILL);
    }
    for (uint32_t i = 0; i < nproc; i++) {
        int ws = 0;
        waitpid(pids[i], &ws, 0);
        close(ready[i]);
        if (kill_mode && i == 0)
            CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "victim: status 0x%x", ws);
        else
            CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "process %u: exit status 0x%x", i + 1, ws);
    }
    /* Afterwards: nothing left, the checkers clean.  The daemon tears a
     * dead client down as soon as it sees the socket close. */
    struct vidmm_client *c = NULL;
    CHECK_ST(vidmm_client_connect(sock, &c), VIDMM_OK);
    if (c) {
        uint32_t viol = 99, clients = 0;
        uint64_t live = 1;
        for (int tries = 0; tries < 100; tries++) {
            CHECK_ST(vidmm_client_debug_check(c, &viol, &clients, &live), VIDMM_OK);
            if (clients == 1 && live == 0)
                break;
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
        CHECK(viol == 0, "adapter check: %u violations", viol);
        CHECK(live == 0, "%llu allocations still alive", (unsigned long long)live);
        CHECK(clients == 1, "%u clients still connected", clients);
        vidmm_client_disconnect(c);
    }
    return dt_summary();
}
