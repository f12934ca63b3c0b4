/*
 * explore_main.c - vidmm-explore: runs many seeded schedules (explore.h),
 * each in a child process (a crash, a sanitizer report or a deadlock
 * ends only that child), and shrinks the first failure to the smallest
 * event list that still fails the same way (delta debugging: drop
 * chunks of halving size, then single events), printing it as a
 * reproduction that --replay takes back.
 *
 *   vidmm-explore [--seed S] [--schedules N] [--seconds T] [--events N]
 *                 [--driver-failures] [--no-shrink] [--expect-fail]
 *                 [--replay FILE] [--verbose] [--same N]
 *
 * --seed S runs schedules S, S+1, ...  (default: from the clock, printed).
 * --want PREFIX: stop only at a failure whose message starts with PREFIX
 * (the rule's name), counting the others.  --allow PREFIX (repeatable):
 * failures of that rule are a known defect, reported and not counted.
 * --expect-fail: exit 0 only when a failure is found (a defect finder's
 * regression check).  --same N: run schedule S N times and compare the
 * run hashes (the same seed gives the same run).  The last line reads
 * "explore: N passed, M failed" for tests/run.sh.
 */
#include "sim/explore.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 512u
#define CHILD_SECONDS 20u

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Run one schedule in a child; a crash or timeout is a failure too. */
static void run_child(uint64_t seed, const struct ex_event *ev, uint32_t n, const struct ex_options *o,
                      struct ex_result *r)
{
    int fd[2];
    memset(r, 0, sizeof *r);
    fflush(stdout);
    if (pipe(fd) != 0) {
        r->failed = 1;
        snprintf(r->msg, sizeof r->msg, "setup: pipe");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        alarm(CHILD_SECONDS);
        struct ex_result cr;
        ex_run(seed, ev, n, o, &cr);
        ssize_t wr = write(fd[1], &cr, sizeof cr);
        _exit(wr == (ssize_t)sizeof cr ? 0 : 2);
    }
    close(fd[1]);
    ssize_t got = pid > 0 ? read(fd[0], r, sizeof *r) : -1;
    close(fd[0]);
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (got == (ssize_t)sizeof *r && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    memset(r, 0, sizeof *r);
    r->failed = 1;
    r->at = n;
    if (pid > 0 && WIFSIGNALED(status))
        snprintf(r->msg, sizeof r->msg, "crash: signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (no progress for 20 s)" : "");
    else if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 3)
        snprintf(r->msg, sizeof r->msg, "deadlock: vidmm waits without a deadline and no engine can move");
    else
        snprintf(r->msg, sizeof r->msg, "crash: exit status %d (a sanitizer report above)",
                 pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* The failure's kind: its rule name (up to ':'). */
static int same_kind(const char *a, const char *b)
{
    size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
    return la == lb && !strncmp(a, b, la);
}

/* ddmin over the event list, keeping failures of the same kind. */
static uint32_t shrink(uint64_t seed, struct ex_event *ev, uint32_t n, const struct ex_options *o, const char *kind,
                       uint32_t *runs)
{
    struct ex_event tmp[MAX_EVENTS];
    struct ex_result r;
    for (uint32_t chunk = n / 2; chunk >= 1; chunk = chunk > 1 ? chunk / 2 : 0) {
        int removed = 1;
        while (removed) {
            removed = 0;
            for (uint32_t at = 0; at < n;) {
                uint32_t len = at + chunk <= n ? chunk : n - at, m = 0;
                for (uint32_t i = 0; i < n; i++)
                    if (i < at || i >= at + len)
                        tmp[m++] = ev[i];
                run_child(seed, tmp, m, o, &r);
                (*runs)++;
                if (r.failed && same_kind(r.msg, kind)) {
                    memcpy(ev, tmp, m * sizeof *ev);
                    n = r.at + 1 < m ? r.at + 1 : m;   /* what follows the failure is not needed */
                    removed = 1;
                } else {
                    at += len;
                }
            }
        }
    }
    return n;
}

static void print_events(const struct ex_event *ev, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        printf("  %s %u %u %u %u\n", ex_op_name(ev[i].op), ev[i].a, ev[i].b, ev[i].c, ev[i].id);
}

static uint32_t read_events(const char *path, struct ex_event *ev, uint64_t *seed)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    uint32_t n = 0;
    while (fgets(line, sizeof line, f) && n < MAX_EVENTS) {
        unsigned long long s;
        ev[n].id = (uint16_t)n;
        if (sscanf(line, " seed %llu", &s) == 1)
            *seed = s;
        else if (!ex_parse(line, &ev[n]))
            n++;
    }
    fclose(f);
    return n;
}

struct cli {
    uint64_t seed;
    int have_seed, shrink, expect_fail, same;
    uint32_t schedules, events;
    double seconds;
    const char *replay;
    const char *want;        /* keep exploring past failures of other kinds */
    const char *allow[8];    /* known defects (tests/known_defects): failures of these rules pass */
    int nallow;
    struct ex_options o;
};

static int parse_cli(int argc, char **argv, struct cli *c)
{
    memset(c, 0, sizeof *c);
    c->shrink = 1;
    c->schedules = 1000000;
    c->events = 160;
    c->seconds = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v) {
            c->seed = strtoull(v, NULL, 0);
            c->have_seed = 1;
            i++;
        } else if (!strcmp(a, "--schedules") && v) {
            c->schedules = (uint32_t)strtoul(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            c->seconds = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--events") && v) {
            c->events = (uint32_t)strtoul(v, NULL, 0);
            if (c->events > MAX_EVENTS)
                c->events = MAX_EVENTS;
            i++;
        } else if (!strcmp(a, "--replay") && v) {
            c->replay = v;
            i++;
        } else if (!strcmp(a, "--allow") && v && c->nallow < 8) {
            c->allow[c->nallow++] = v;
            i++;
        } else if (!strcmp(a, "--want") && v) {
            c->want = v;
            i++;
        } else if (!strcmp(a, "--same") && v) {
            c->same = atoi(v);
            i++;
        } else if (!strcmp(a, "--driver-failures")) {
            c->o.driver_failures = 1;
        } else if (!strcmp(a, "--no-shrink")) {
            c->shrink = 0;
        } else if (!strcmp(a, "--expect-fail")) {
            c->expect_fail = 1;
        } else if (!strcmp(a, "--verbose")) {
            c->o.verbose++;
        } else {
            fprintf(stderr, "usage: %s [--seed S] [--schedules N] [--seconds T] [--events N] [--driver-failures]\n"
                            "       [--no-shrink] [--expect-fail] [--replay FILE] [--same N] [--verbose]\n"
                            "       [--want RULE] [--allow RULE]...\n", argv[0]);
            return -1;
        }
    }
    if (!c->have_seed)
        c->seed = (uint64_t)time(NULL) * 2654435761u;
    return 0;
}

/* A failure of a rule listed with --allow: a known defect, reported and
 * not counted. */
static int allowed(const struct cli *c, const struct ex_result *r)
{
    for (int i = 0; i < c->nallow; i++)
        if (!strncmp(r->msg, c->allow[i], strlen(c->allow[i])))
            return 1;
    return 0;
}

/* The first failure: print it, shrink it, print the reproduction. */
static void report(const struct cli *c, uint64_t seed, struct ex_event *ev, uint32_t n, const struct ex_result *r)
{
    printf("explore: FAIL seed %llu after event %u of %u (%u engine steps): %s\n", (unsigned long long)seed, r->at,
           n, r->steps, r->msg);
    if (!c->shrink)
        return;
    uint32_t runs = 0;
    double t0 = now_s();
    uint32_t m = shrink(seed, ev, r->at + 1 < n ? r->at + 1 : n, &c->o, r->msg, &runs);
    struct ex_result again;
    run_child(seed, ev, m, &c->o, &again);
    printf("explore: shrunk to %u events in %u runs (%.1f s): %s\n", m, runs, now_s() - t0, again.msg);
    printf("explore: reproduction (save to a file, run with --replay FILE):\n  seed %llu\n",
           (unsigned long long)seed);
    print_events(ev, m);
}

static int replay(const struct cli *c)
{
    static struct ex_event ev[MAX_EVENTS];
    uint64_t seed = c->seed;
    uint32_t n = read_events(c->replay, ev, &seed);
    struct cli v = *c;
    v.o.verbose += 1;
    struct ex_result r;
    ex_run(seed, ev, n, &v.o, &r);   /* in this process: a debugger sees it */
    printf("explore: replay of %u events, seed %llu: %s%s\n", n, (unsigned long long)seed,
           r.failed ? r.msg : "clean", r.failed && allowed(c, &r) ? " (a known defect: not counted)" : "");
    int bad = r.failed && !allowed(c, &r);
    printf("explore: %d passed, %d failed\n", !bad, bad);
    return bad;
}

/* The same seed, N times: the runs must agree bit for bit. */
static int same(const struct cli *c)
{
    static struct ex_event ev[MAX_EVENTS];
    uint32_t n = ex_generate(c->seed, &c->o, ev, c->events);
    struct ex_result first, r;
    run_child(c->seed, ev, n, &c->o, &first);
    int bad = 0;
    for (int i = 1; i < c->same; i++) {
        run_child(c->seed, ev, n, &c->o, &r);
        bad += r.hash != first.hash || r.steps != first.steps || r.failed != first.failed;
    }
    printf("explore: seed %llu run %d times: hash %016llx, %u steps, %s\n", (unsigned long long)c->seed, c->same,
           (unsigned long long)first.hash, first.steps, bad ? "RUNS DIFFER" : "identical");
    printf("explore: %d passed, %d failed\n", !bad, bad != 0);
    return bad != 0;
}

int main(int argc, char **argv)
{
    struct cli c;
    if (parse_cli(argc, argv, &c))
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (c.replay)
        return replay(&c);
    if (c.same)
        return same(&c);
    printf("explore: seed %llu (--seed %llu to run these schedules again)\n", (unsigned long long)c.seed,
           (unsigned long long)c.seed);
    static struct ex_event ev[MAX_EVENTS];
    double t0 = now_s();
    uint64_t steps = 0, events = 0;
    uint32_t done = 0, others = 0;
    int failed = 0;
    for (; done < c.schedules && now_s() - t0 < c.seconds; done++) {
        uint64_t seed = c.seed + done;
        uint32_t n = ex_generate(seed, &c.o, ev, c.events);
        struct ex_result r;
        run_child(seed, ev, n, &c.o, &r);
        steps += r.steps;
        events += r.events;
        if (r.failed && allowed(&c, &r)) {
            printf("explore: known defect, seed %llu: %.*s\n", (unsigned long long)seed,
                   (int)strcspn(r.msg, "\n"), r.msg);
            others++;
            continue;
        }
        if (r.failed && c.want && strncmp(r.msg, c.want, strlen(c.want))) {
            printf("explore: other failure, seed %llu: %.*s\n", (unsigned long long)seed,
                   (int)strcspn(r.msg, "\n"), r.msg);
            others++;
            continue;
        }
        if (r.failed) {
            double t = now_s() - t0;
            printf("explore: found after %u schedules, %.2f s\n", done + 1, t);
            report(&c, seed, ev, n, &r);
            failed = 1;
            done++;
            break;
        }
    }
    double t = now_s() - t0;
    if (others)
        printf("explore: %u schedules failed otherwise (%s)\n", others, c.want ? c.want : "known defects");
    printf("explore: %u schedules in %.1f s (%.1f schedules/s), %.1f events and %.1f engine steps per schedule\n",
           done, t, t > 0 ? done / t : 0.0, done ? (double)events / done : 0.0, done ? (double)steps / done : 0.0);
    if (c.expect_fail) {
        printf("explore: %d passed, %d failed\n", failed, !failed);
        return failed ? 0 : 1;
    }
    printf("explore: %d passed, %d failed\n", !failed, failed);
    return failed;
}
