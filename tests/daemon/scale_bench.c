/*
 * scale_bench.c - vidmmd's throughput as clients are added
 * (docs/PERFORMANCE.md "vidmmd"): 1, 2, 4, 8 and 16 client processes,
 * each on its own connection, run as fast as they can for a fixed time
 *   - make-resident of its list of 16 already-resident allocations, then
 *   - lock and unlock of one 4 KiB allocation (a copy each way),
 * and the totals are printed as calls per second and as a ratio to one
 * client, measured in the same run.  Then batching: a make-resident of
 * 1,000 allocations must be one request (the daemon's own count of the
 * connection's requests, through the administration view).
 *
 *   scale_bench VIDMMD [--seconds S]     (S per measurement, default 0.5;
 *                                         the sweep runs 3 times, medians printed)
 * starts VIDMMD on a scratch socket and stops it (SIGTERM) at the end.
 */
#define _GNU_SOURCE
#include "dtest.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIST 16

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One client: set up, say ready, wait for go (two absolute deadlines on
 * the system-wide monotonic clock), run the make-resident loop until the
 * first and the lock loop until the second, report the two call counts.
 * Shared deadlines: the totals are over one window all clients share. */
static void client(const char *sock, int ready, int go, int result)
{
    struct vidmm_client *c = NULL;
    vidmm_handle dev = 0, q = 0, h[LIST], small = 0;
    uint64_t count[2] = { 0, 0 };
    double deadline[2];
    if (vidmm_client_connect(sock, &c) < 0 || vidmm_client_device_create(c, &dev) < 0 ||
        vidmm_client_paging_queue_create(c, dev, 0, &q) < 0)
        _exit(10);
    for (int i = 0; i < LIST; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_TEXTURE, 64 * 1024);
        if (vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h[i]) < 0)
            _exit(11);
    }
    struct softgpu_alloc_desc sd = dt_desc(SOFTGPU_ALLOC_CONSTANT, 4096);
    if (vidmm_client_allocation_create2(c, &sd, sizeof sd, 0, &small) < 0 || dt_make_resident(c, dev, q, h, LIST) < 0 ||
        dt_make_resident(c, dev, q, &small, 1) < 0)
        _exit(12);
    char b = 'r';
    if (write(ready, &b, 1) != 1 || read(go, deadline, sizeof deadline) != (ssize_t)sizeof deadline)
        _exit(13);
    while (now_s() < deadline[0]) {
        struct vidmm_make_resident_args a;
        memset(&a, 0, sizeof a);
        a.paging_queue = q;
        a.allocations = h;
        a.count = LIST;
        if (vidmm_client_make_resident(c, dev, &a) != VIDMM_OK)
            _exit(14);
        count[0]++;
    }
    while (now_s() < deadline[1]) {
        void *p = NULL;
        if (vidmm_client_allocation_lock(c, small, &p) < 0 || vidmm_client_allocation_unlock(c, small) < 0)
            _exit(15);
        count[1]++;
    }
    if (write(result, count, sizeof count) != (ssize_t)sizeof count)
        _exit(16);
    vidmm_client_disconnect(c);
    _exit(0);
}

/* n clients at once; the sums of their rates. */
static int measure(const char *sock, int n, double seconds, double out[2])
{
    int ready[2], go[2], res[2];
    if (pipe(ready) || pipe(go) || pipe(res))
        return -1;
    pid_t pid[16];
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            close(ready[0]);
            close(go[1]);
            close(res[0]);
            client(sock, ready[1], go[0], res[1]);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(res[1]);
    char b;
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= read(ready[0], &b, 1) == 1;
    double t_go = now_s();
    double deadline[2] = { t_go + seconds, t_go + 2 * seconds };
    for (int i = 0; i < n; i++)   /* everyone starts together */
        ok &= write(go[1], deadline, sizeof deadline) == (ssize_t)sizeof deadline;
    uint64_t total[2] = { 0, 0 };
    for (int i = 0; i < n; i++) {
        uint64_t r[2];
        if (read(res[0], r, sizeof r) != (ssize_t)sizeof r) {
            ok = 0;
            break;
        }
        total[0] += r[0];
        total[1] += r[1];
    }
    out[0] = (double)total[0] / seconds;
    out[1] = (double)total[1] / seconds;
    for (int i = 0; i < n; i++) {
        int ws = 0;
        waitpid(pid[i], &ws, 0);
        ok &= WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    }
    close(ready[0]);
    close(go[1]);
    close(res[0]);
    return ok ? 0 : -1;
}

/* A make-resident of 1,000 allocations counted by the daemon: requests
 * of the connection before and after (seen from another connection). */
static int batching(const char *sock, uint64_t *delta)
{
    struct vidmm_client *c = NULL, *adm = NULL;
    if (vidmm_client_connect(sock, &c) < 0 || vidmm_client_connect(sock, &adm) < 0)
        return -1;
    vidmm_handle dev = 0, q = 0;
    static vidmm_handle h[1000];
    if (vidmm_client_device_create(c, &dev) < 0 || vidmm_client_paging_queue_create(c, dev, 0, &q) < 0)
        return -1;
    for (int i = 0; i < 1000; i++) {
        struct softgpu_alloc_desc d = dt_desc(SOFTGPU_ALLOC_CONSTANT, 4096);
        if (vidmm_client_allocation_create2(c, &d, sizeof d, 0, &h[i]) < 0)
            return -1;
    }
    struct vidmm_client_info ci;
    if (vidmm_client_query(c, &ci) < 0)
        return -1;
    uint64_t before = 0, after = 0;
    struct vidmm_client_admin_process p[64];
    for (int round = 0; round < 2; round++) {
        uint32_t n = 0;
        if (round == 1) {
            struct vidmm_make_resident_args a;
            memset(&a, 0, sizeof a);
            a.paging_queue = q;
            a.allocations = h;
            a.count = 1000;
            vidmm_status st = vidmm_client_make_resident(c, dev, &a);
            if (st < 0) {
                fprintf(stderr, "scale_bench: make-resident of 1,000: %s\n", vidmm_status_str(st));
                return -1;
            }
        }
        if (vidmm_client_admin_processes(adm, 0, p, 64, &n, NULL) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            if (p[i].connection == ci.connection)
                *(round ? &after : &before) = p[i].requests;
    }
    *delta = after - before;
    vidmm_client_disconnect(adm);
    vidmm_client_disconnect(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: scale_bench VIDMMD [--seconds S]\n");
        return 2;
    }
    double seconds = 0.5;
    if (argc == 4 && !strcmp(argv[2], "--seconds"))
        seconds = atof(argv[3]);
    if (!(seconds > 0 && seconds <= 10))
        return 2;
    char dir[] = "/tmp/vidmmd-scale-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char sock[128];
    snprintf(sock, sizeof sock, "%s/s", dir);
    struct vidmm_client *probe = NULL;
    pid_t d = dt_start_daemon("scale_bench", argv[1], sock, &probe);
    if (d < 0)
        return 1;
    vidmm_client_disconnect(probe);
    printf("scale_bench: %.2f s per measurement, median of 3 sweeps; make-resident of %d resident allocations; lock+unlock of 4 KiB\n",
           seconds, LIST);
    printf("scale_bench: %7s %16s %7s %16s %7s\n", "clients", "make-resident/s", "ratio", "lock+unlock/s", "ratio");
    /* The sweep REPS times, interleaved (load that comes and goes hits
     * every count alike); the median of each. */
    int fail = 0;
    static const int counts[] = { 1, 2, 4, 8, 16 };
    enum { NC = sizeof counts / sizeof counts[0], REPS = 3 };
    double r[NC][2][REPS];
    for (int k = 0; k < REPS && !fail; k++)
        for (int i = 0; i < NC; i++) {
            double x[2];
            if (measure(sock, counts[i], seconds, x) != 0) {
                fprintf(stderr, "scale_bench: the run with %d clients failed\n", counts[i]);
                fail = 1;
                break;
            }
            r[i][0][k] = x[0];
            r[i][1][k] = x[1];
        }
    double med[NC][2];
    for (int i = 0; i < NC && !fail; i++)
        for (int m = 0; m < 2; m++) {
            double *v = r[i][m];
            for (int a = 0; a < REPS; a++)   /* insertion sort of 3 */
                for (int b2 = a; b2 > 0 && v[b2 - 1] > v[b2]; b2--) {
                    double t = v[b2];
                    v[b2] = v[b2 - 1];
                    v[b2 - 1] = t;
                }
            med[i][m] = v[REPS / 2];
        }
    for (int i = 0; i < NC && !fail; i++)
        printf("scale_bench: %7d %16.0f %6.2fx %16.0f %6.2fx\n", counts[i], med[i][0], med[i][0] / med[0][0],
               med[i][1], med[i][1] / med[0][1]);
    uint64_t delta = 0;
    if (batching(sock, &delta) != 0) {
        fprintf(stderr, "scale_bench: the batching check could not run\n");
        fail = 1;
    } else {
        printf("scale_bench: make-resident of 1,000 allocations: %llu request(s) counted by the daemon%s\n",
               (unsigned long long)delta, delta == 1 ? " (one round trip)" : " - NOT ONE ROUND TRIP");
        fail |= delta != 1;
    }
    kill(d, SIGTERM);
    int ws = 0;
    waitpid(d, &ws, 0);
    rmdir(dir);
    int clean = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    printf("scale_bench: daemon exit %s\n", clean ? "clean" : "NOT CLEAN");
    return fail || !clean;
}
