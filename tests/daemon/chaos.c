/*
 * chaos.c - client processes killed at random points while others work
 * (docs/DAEMON.md "Tests"):
 *
 *   chaos SOCKET [--seconds S] [--clients N] [--seed X]
 *
 * (VIDMM_TEST_SEED=X in the environment is --seed X.)
 * N worker processes each run a seeded random sequence of allocate,
 * make-resident, evict, lock-and-write (a new pattern), verify and free
 * on their own connection.  For S seconds a supervisor SIGKILLs a random
 * worker after a random pause and starts a replacement.  Then every
 * survivor is asked to stop (SIGTERM): it verifies every byte of every
 * allocation it still has against its pattern and exits 0 only if all
 * match.  Once all of them are gone the daemon's checker must be clean
 * and its host-allocator block count and live allocations back at the
 * baseline.  The baseline is taken after a first, shorter round of the
 * same chaos (a quarter of the time, at least a second): the adapter's
 * tables grow geometrically and stay grown (docs/HOST_MEMORY.md), so the
 * count before any client ever connected is not the level a daemon
 * without leaks returns to.
 *
 * The seed (printed; --seed takes it back) fixes every worker's sequence
 * of operations and the supervisor's choices of victim and pause; where
 * in its sequence a victim is when the signal lands depends on timing.
 */
#define _GNU_SOURCE
#include "dtest.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define MAX_ALLOCS 16

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return x ? x : 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- worker ----------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;
static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct walloc {
    vidmm_handle h;
    uint64_t size;
    uint32_t key;     /* the pattern's allocation argument: slot << 16 | generation */
    uint32_t refs;    /* make-residents not yet undone by an evict (evict needs one) */
    int alive;
};

#define WFAIL(code, ...)                                  \
    do {                                                  \
        fprintf(stderr, "chaos worker %u: ", wseed);      \
        fprintf(stderr, __VA_ARGS__);                     \
        fprintf(stderr, "\n");                            \
        _exit(code);                                      \
    } while (0)

static void worker(const char *sock, uint32_t wseed)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &term, NULL);
    uint64_t x = mix(wseed, 77);
    struct vidmm_client *c = NULL;
    vidmm_handle dev = 0, q = 0;
    vidmm_status st = vidmm_client_connect(sock, &c);
    if (st < 0)
        WFAIL(10, "connect: %s", vidmm_client_status_str(st));
    if ((st = vidmm_client_device_create(c, &dev)) < 0 || (st = vidmm_client_paging_queue_create(c, dev, 0, &q)) < 0)
        WFAIL(11, "device/queue: %s", vidmm_client_status_str(st));
    struct walloc a[MAX_ALLOCS];
    memset(a, 0, sizeof a);
    while (!stop_requested) {
        uint32_t op = (uint32_t)(rng_next(&x) % 100);
        uint32_t k = (uint32_t)(rng_next(&x) % MAX_ALLOCS);
        struct walloc *w = &a[k];
        if (op < 25) {   /* allocate (with its pattern) */
            if (w->alive)
                continue;
            uint64_t size = 4096 * (1 + rng_next(&x) % 32);
            struct softgpu_alloc_desc d = dt_desc(k % 3 ? SOFTGPU_ALLOC_TEXTURE : SOFTGPU_ALLOC_CONSTANT, size);
            if ((st = vidmm_client_allocation_create2(c, &d, sizeof d, 0, &w->h)) < 0)
                WFAIL(12, "create %llu bytes: %s", (unsigned long long)size, vidmm_client_status_str(st));
            w->size = size;
            w->key = (k << 16) | ((w->key + 1) & 0xffff);
            w->refs = 0;
            w->alive = 1;
            if ((st = dt_fill(c, w->h, wseed, w->key, size)) < 0)
                WFAIL(13, "fill: %s", vidmm_client_status_str(st));
        } else if (op < 60) {   /* make resident (< 45) or evict, up to 4 */
            vidmm_handle list[4];
            struct walloc *in[4];
            uint32_t n = 0;
            for (uint32_t i = 0; i < 4; i++) {
                struct walloc *v = &a[(k + i * 5) % MAX_ALLOCS];
                if (v->alive && (op < 45 || v->refs))
                    in[n] = v, list[n++] = v->h;
            }
            if (!n)
                continue;
            for (uint32_t i = 0; i < n; i++)
                in[i]->refs += op < 45 ? 1u : (uint32_t)-1;
            if (op < 45) {
                if ((st = dt_make_resident(c, dev, q, list, n)) < 0)
                    WFAIL(14, "make-resident of %u: %s", n, vidmm_client_status_str(st));
            } else {
                struct vidmm_evict_args ev;
                memset(&ev, 0, sizeof ev);
                ev.allocations = list;
                ev.count = n;
                if ((st = vidmm_client_evict(c, dev, &ev)) < 0)
                    WFAIL(15, "evict of %u: %s", n, vidmm_client_status_str(st));
            }
        } else if (op < 75) {   /* lock, write a new pattern, unlock */
            if (!w->alive)
                continue;
            w->key = (k << 16) | ((w->key + 1) & 0xffff);
            if ((st = dt_fill(c, w->h, wseed, w->key, w->size)) < 0)
                WFAIL(16, "rewrite: %s", vidmm_client_status_str(st));
        } else if (op < 90) {   /* verify */
            if (!w->alive)
                continue;
            int ok = dt_verify(c, w->h, wseed, w->key, w->size);
            if (ok != 1)
                WFAIL(17, "allocation %u: %s", k, ok == 0 ? "bytes differ" : vidmm_client_status_str(ok));
        } else {   /* free */
            if (!w->alive)
                continue;
            if ((st = vidmm_client_allocation_destroy(c, w->h)) < 0)
                WFAIL(18, "destroy: %s", vidmm_client_status_str(st));
            w->alive = 0;
        }
    }
    /* Asked to stop: every byte of what is left. */
    for (uint32_t k = 0; k < MAX_ALLOCS; k++)
        if (a[k].alive) {
            int ok = dt_verify(c, a[k].h, wseed, a[k].key, a[k].size);
            if (ok != 1)
                WFAIL(19, "at the end allocation %u: %s", k, ok == 0 ? "bytes differ" : vidmm_client_status_str(ok));
        }
    vidmm_client_disconnect(c);   /* what is left goes with the connection */
    _exit(0);
}

/* ---- supervisor --------------------------------------------------------- */

static pid_t start_worker(const char *sock, uint32_t wseed)
{
    pid_t p = fork();
    if (p == 0)
        worker(sock, wseed);
    return p;
}

static int daemon_idle(struct vidmm_client *adm, struct vidmm_client_admin_adapter *a)
{
    for (int i = 0; i < 400; i++) {   /* the daemon sees the connections go in its own time */
        if (vidmm_client_admin_adapter(adm, a) < 0)
            return 0;
        if (a->clients == 1)
            return 1;
        sleep_ms(5);
    }
    return 0;
}

/* One round: nworkers workers, kills and replacements for `seconds`,
 * then the survivors stop and verify every byte. */
static void run_round(const char *sock, uint64_t seed, uint64_t *x, uint32_t nworkers, double seconds,
                      uint32_t *started, const char *what)
{
    pid_t pid[MAX_WORKERS];
    uint32_t wseed[MAX_WORKERS], kills = 0, early = 0, good = 0, first = *started;
    for (uint32_t i = 0; i < nworkers; i++) {
        wseed[i] = (uint32_t)mix(seed, 100 + (*started)++);
        pid[i] = start_worker(sock, wseed[i]);
    }
    double t_end = now_s() + seconds;
    while (now_s() < t_end) {
        sleep_ms(10 + (unsigned)(rng_next(x) % 140));
        uint32_t v = (uint32_t)(rng_next(x) % nworkers);
        kill(pid[v], SIGKILL);
        int ws = 0;
        waitpid(pid[v], &ws, 0);
        if (!(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)) {
            early++;
            CHECK(0, "%s: worker %u ended on its own before the kill (exit %d)", what, wseed[v],
                  WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
        }
        kills++;
        wseed[v] = (uint32_t)mix(seed, 100 + (*started)++);
        pid[v] = start_worker(sock, wseed[v]);
    }
    for (uint32_t i = 0; i < nworkers; i++)
        kill(pid[i], SIGTERM);
    for (uint32_t i = 0; i < nworkers; i++) {
        int ws = 0;
        waitpid(pid[i], &ws, 0);
        int ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
        good += ok;
        CHECK(ok, "%s: survivor %u: exit %d%s", what, wseed[i], WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
              WIFSIGNALED(ws) ? " (killed by a signal)" : "");
    }
    printf("daemon chaos: %s: %u workers started, %u SIGKILLed, %u survivors verified every byte\n", what,
           *started - first, kills, good);
    CHECK(kills > 0 && early == 0, "%s: %u kills, %u workers that ended early", what, kills, early);
}

int main(int argc, char **argv)
{
    dt_name = "daemon chaos";
    if (argc < 2) {
        fprintf(stderr, "usage: chaos SOCKET [--seconds S] [--clients N] [--seed X]\n");
        return 2;
    }
    const char *sock = argv[1];
    double seconds = 5;
    uint32_t nworkers = 6;
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    if (getenv("VIDMM_TEST_SEED"))   /* the project's replay variable (docs/TESTING.md) */
        seed = strtoull(getenv("VIDMM_TEST_SEED"), NULL, 0);
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            nworkers = (uint32_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 0);
        else {
            fprintf(stderr, "chaos: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (nworkers < 1 || nworkers > MAX_WORKERS || !(seconds > 0 && seconds <= 3600)) {
        fprintf(stderr, "chaos: --clients 1-%d, --seconds 0-3600\n", MAX_WORKERS);
        return 2;
    }
    printf("daemon chaos: seed %llu (again: chaos SOCKET --seed %llu --seconds %g --clients %u)\n",
           (unsigned long long)seed, (unsigned long long)seed, seconds, nworkers);
    fflush(stdout);
    /* SIGTERM stays blocked here and across fork until a worker's handler
     * is in place: a stop request to a worker just started is not lost. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    struct vidmm_client *adm = NULL;
    CHECK_ST(vidmm_client_connect(sock, &adm), VIDMM_OK);
    if (!adm)
        return dt_summary();
    struct vidmm_client_admin_adapter base, end;
    memset(&base, 0, sizeof base);
    memset(&end, 0, sizeof end);
    CHECK(daemon_idle(adm, &base), "the daemon has no other client at the start (%u)", base.clients);
    uint64_t x = mix(seed, 1);
    uint32_t started = 0;
    run_round(sock, seed, &x, nworkers, seconds / 4 < 1 ? 1 : seconds / 4, &started, "warm-up");
    CHECK(daemon_idle(adm, &base), "every warm-up connection gone (%u clients)", base.clients);
    run_round(sock, seed, &x, nworkers, seconds, &started, "run");
    CHECK(daemon_idle(adm, &end), "every worker's connection gone (%u clients)", end.clients);
    uint32_t violations = 1;
    CHECK_ST(vidmm_client_debug_check(adm, &violations, NULL, NULL), VIDMM_OK);
    CHECK(violations == 0, "adapter check: %u violations", violations);
    CHECK(end.live_allocations == base.live_allocations, "live allocations %llu, after the warm-up %llu",
          (unsigned long long)end.live_allocations, (unsigned long long)base.live_allocations);
    CHECK(end.host_blocks == base.host_blocks, "host blocks %lld (%lld bytes), after the warm-up %lld (%lld bytes)",
          (long long)end.host_blocks, (long long)end.host_bytes, (long long)base.host_blocks,
          (long long)base.host_bytes);
    printf("daemon chaos: host blocks %lld after the warm-up, %lld at the end; %llu evictions, %llu restores in the "
           "run\n",
           (long long)base.host_blocks, (long long)end.host_blocks,
           (unsigned long long)(end.evictions - base.evictions), (unsigned long long)(end.restores - base.restores));
    vidmm_client_disconnect(adm);
    return dt_summary();
}
