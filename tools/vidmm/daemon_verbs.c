/*
 * daemon_verbs.c - `vidmm ps`, `vidmm top` and `vidmm info --socket`:
 * the running vidmmd seen through its administration requests
 * (docs/DAEMON.md "Observing the daemon", docs/PROTOCOL.md
 * "Administration").  They are clients of libvidmm-client like any
 * program; the daemon answers them only for its own uid or root.  Plain
 * text and ANSI escapes (top on a terminal), no curses.
 */
#include "vidmm-client/client.h"
#include "vidmm/segment.h"

#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096

struct sample {
    struct vidmm_client_admin_adapter ad;
    struct vidmm_client_admin_process *p;
    uint32_t n;
};

static int connect_daemon(const char *verb, const char *path, struct vidmm_client **c)
{
    vidmm_status st = vidmm_client_connect(path, c);
    if (st < 0) {
        fprintf(stderr, "vidmm %s: cannot connect to vidmmd at %s: %s\n", verb,
                path ? path : "the default socket ($VIDMMD_SOCKET, $XDG_RUNTIME_DIR/vidmmd.sock, /tmp/vidmmd-UID.sock)",
                vidmm_client_status_str(st));
        return 1;
    }
    return 0;
}

/* Adapter totals and every connection (several requests past 511). */
static int take_sample(const char *verb, struct vidmm_client *c, struct sample *s)
{
    vidmm_status st = vidmm_client_admin_adapter(c, &s->ad);
    s->n = 0;
    uint32_t total = 0;
    while (st >= 0) {
        uint32_t got = 0;
        st = vidmm_client_admin_processes(c, s->n, s->p + s->n, MAX_PROCS - s->n, &got, &total);
        if (st < 0)
            break;
        s->n += got;
        if (got == 0 || s->n >= total || s->n >= MAX_PROCS)
            break;
    }
    if (st < 0) {
        fprintf(stderr, "vidmm %s: the daemon refused the administration request: %s%s\n", verb,
                vidmm_client_status_str(st),
                st == VIDMM_CLIENT_E_ACCESS_DENIED ? " (only the daemon's user or root may ask)" : "");
        return 1;
    }
    return 0;
}

/* Options every daemon verb takes: --socket PATH; top also --interval,
 * -n and --once.  Returns 0 or 2 (usage error). */
struct dopts {
    const char *socket;
    double interval;
    long count;          /* top: frames; 0 = until interrupted */
};

static int parse_dopts(const char *verb, int argc, char **argv, int first, struct dopts *o, int top)
{
    memset(o, 0, sizeof *o);
    o->interval = 1.0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--socket")) {
            if (!v)
                return cli_usage_error(verb, "--socket needs a value (the daemon's socket path)");
            o->socket = v;
            i++;
        } else if (top && !strcmp(a, "--once")) {
            o->count = 1;
        } else if (top && (!strcmp(a, "-n") || !strcmp(a, "--count"))) {
            char *end = NULL;
            errno = 0;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || errno || end == v || *end || n < 1 || n > 1000000)
                return cli_usage_error(verb, "%s %s: want a number of refreshes, 1-1000000", a, v ? v : "(missing)");
            o->count = n;
            i++;
        } else if (top && !strcmp(a, "--interval")) {
            char *end = NULL;
            errno = 0;
            double d = v ? strtod(v, &end) : 0;
            if (!v || errno || end == v || *end || !(d >= 0.05 && d <= 3600))
                return cli_usage_error(verb, "--interval %s: want seconds between refreshes, 0.05-3600",
                                       v ? v : "(missing)");
            o->interval = d;
            i++;
        } else {
            return cli_usage_error(verb, "unknown %s '%s'", a[0] == '-' ? "option" : "argument", a);
        }
    }
    return 0;
}

static void size_str(uint64_t v, char *buf, size_t n)
{
    if (v == 0)
        snprintf(buf, n, "0");
    else
        cli_format_size(v, buf, n);
}

/* ---- vidmm ps ------------------------------------------------------------ */

static void print_ps_header(FILE *f)
{
    fprintf(f, "%5s %8s %6s %-15s %6s %10s %10s %10s %10s %8s %8s %9s\n", "CONN", "PID", "UID", "COMM", "ALLOCS",
            "ALLOCATED", "LOCAL", "BUDGET", "NONLOCAL", "EVICT", "RESTORE", "REQUESTS");
}

static void print_ps_line(FILE *f, const struct vidmm_client_admin_process *p)
{
    char al[32], lu[32], lb[32], nu[32];
    size_str(p->allocated_bytes, al, sizeof al);
    size_str(p->usage[0], lu, sizeof lu);
    size_str(p->budget[0], lb, sizeof lb);
    size_str(p->usage[1], nu, sizeof nu);
    fprintf(f, "%5u %8u %6u %-15s %6u %10s %10s %10s %10s %8llu %8llu %9llu%s\n", p->connection, p->pid, p->uid,
            p->comm[0] ? p->comm : "?", p->allocations, al, lu, lb, nu, (unsigned long long)p->evictions,
            (unsigned long long)p->restores, (unsigned long long)p->requests,
            (p->flags & VIDMM_CLIENT_ADMIN_SELF) ? " (this query)"
            : (p->flags & VIDMM_CLIENT_ADMIN_REFUSED) ? " (refused)"
                                                      : "");
}

int cli_ps(int argc, char **argv)
{
    struct dopts o;
    int rc = parse_dopts("ps", argc, argv, 2, &o, 0);
    if (rc)
        return rc;
    struct vidmm_client *c = NULL;
    if (connect_daemon("ps", o.socket, &c))
        return 1;
    struct sample s;
    s.p = calloc(MAX_PROCS, sizeof *s.p);
    if (!s.p) {
        vidmm_client_disconnect(c);
        return 1;
    }
    rc = take_sample("ps", c, &s);
    if (!rc) {
        print_ps_header(stdout);
        for (uint32_t i = 0; i < s.n; i++)
            print_ps_line(stdout, &s.p[i]);
    }
    free(s.p);
    vidmm_client_disconnect(c);
    return rc;
}

/* ---- vidmm info --socket ------------------------------------------------ */

static void print_daemon_totals(FILE *f, const struct vidmm_client_admin_adapter *a)
{
    char hb[32], ev[32], rs[32], ma[32], ml[32];
    size_str((uint64_t)(a->host_bytes < 0 ? 0 : a->host_bytes), hb, sizeof hb);
    size_str(a->bytes_evicted, ev, sizeof ev);
    size_str(a->bytes_restored, rs, sizeof rs);
    size_str(a->max_alloc_bytes, ma, sizeof ma);
    size_str(a->max_locked_bytes, ml, sizeof ml);
    fprintf(f, "daemon: vidmmd pid %u, uid %u, up %.1f s, WDDM %x.%x\n", a->daemon_pid, a->daemon_uid,
            (double)a->uptime_ns / 1e9, a->wddm_version >> 12, (a->wddm_version >> 8) & 0xF);
    fprintf(f, "connections: %u open, %llu served; %llu requests, %llu protocol errors, %llu refused by a limit\n",
            a->clients, (unsigned long long)a->connections, (unsigned long long)a->requests,
            (unsigned long long)a->protocol_errors, (unsigned long long)a->quota_refusals);
    fprintf(f, "host memory: %lld blocks, %s\n", (long long)a->host_blocks, hb);
    fprintf(f, "allocations: %llu live; %llu make-resident calls, %llu evictions (%s), %llu restores (%s), "
               "%llu paging buffers\n",
            (unsigned long long)a->live_allocations, (unsigned long long)a->make_resident_calls,
            (unsigned long long)a->evictions, ev, (unsigned long long)a->restores, rs,
            (unsigned long long)a->paging_buffers_submitted);
    fprintf(f, "limits: per connection %s allocated, %s locked, %u handles, %u requests in flight; "
               "%u connections per uid\n",
            ma, ml, a->max_handles, a->max_requests, a->max_connections_per_uid);
}

static void print_daemon_segments(FILE *f, const struct vidmm_client_admin_adapter *a)
{
    fprintf(f, "%-3s %-9s %-9s %10s %10s %10s %10s %6s\n", "id", "kind", "region", "size", "committed", "free",
            "commit", "page");
    for (uint32_t i = 0; i < a->segment_count; i++) {
        const struct vidmm_client_admin_segment *g = &a->segment[i];
        char sz[32], cm[32], fr[32], cl[32], pg[32];
        size_str(g->size, sz, sizeof sz);
        size_str(g->committed, cm, sizeof cm);
        size_str(g->free_bytes, fr, sizeof fr);
        size_str(g->commit_limit, cl, sizeof cl);
        size_str(g->page_size, pg, sizeof pg);
        fprintf(f, "%-3u %-9s %-9s %10s %10s %10s %10s %6s\n", g->id,
                vidmm_segment_kind_str((enum vidmm_segment_kind)g->kind), g->region, sz, cm, fr, cl, pg);
    }
}

int cli_info_daemon(const char *socket_path)
{
    struct vidmm_client *c = NULL;
    if (connect_daemon("info", socket_path, &c))
        return 1;
    struct vidmm_client_admin_adapter a;
    vidmm_status st = vidmm_client_admin_adapter(c, &a);
    vidmm_client_disconnect(c);
    if (st < 0) {
        fprintf(stderr, "vidmm info: the daemon refused the administration request: %s\n",
                vidmm_client_status_str(st));
        return 1;
    }
    print_daemon_totals(stdout, &a);
    print_daemon_segments(stdout, &a);
    return 0;
}

/* ---- vidmm top ----------------------------------------------------------- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct vidmm_client_admin_process *find_conn(const struct sample *s, uint32_t conn)
{
    for (uint32_t i = 0; s && i < s->n; i++)
        if (s->p[i].connection == conn)
            return &s->p[i];
    return NULL;
}

/* One frame: totals, paging rates since the previous frame (since the
 * daemon started for the first), one line per process. */
static void print_top(FILE *f, const struct sample *cur, const struct sample *prev, double dt)
{
    const struct vidmm_client_admin_adapter *a = &cur->ad;
    double span = prev ? dt : (double)a->uptime_ns / 1e9;
    if (span <= 0)
        span = 1e-9;
    uint64_t e0 = prev ? prev->ad.evictions : 0, r0 = prev ? prev->ad.restores : 0;
    uint64_t be0 = prev ? prev->ad.bytes_evicted : 0, br0 = prev ? prev->ad.bytes_restored : 0;
    uint64_t q0 = prev ? prev->ad.requests : 0;
    char hb[32];
    size_str((uint64_t)(a->host_bytes < 0 ? 0 : a->host_bytes), hb, sizeof hb);
    fprintf(f, "vidmmd pid %u, up %.1f s: %u processes, %llu allocations, host %s in %lld blocks\n", a->daemon_pid,
            (double)a->uptime_ns / 1e9, a->clients, (unsigned long long)a->live_allocations, hb,
            (long long)a->host_blocks);
    fprintf(f, "paging (%s): %.1f evictions/s (%.2f MiB/s), %.1f restores/s (%.2f MiB/s), %.0f requests/s\n",
            prev ? "last interval" : "since start", (double)(a->evictions - e0) / span,
            (double)(a->bytes_evicted - be0) / span / 1048576.0, (double)(a->restores - r0) / span,
            (double)(a->bytes_restored - br0) / span / 1048576.0, (double)(a->requests - q0) / span);
    for (uint32_t i = 0; i < a->segment_count; i++) {
        const struct vidmm_client_admin_segment *g = &a->segment[i];
        if (g->id == 0 || !g->size)
            continue;
        char sz[32], cm[32];
        size_str(g->size, sz, sizeof sz);
        size_str(g->committed, cm, sizeof cm);
        fprintf(f, "  %-9s %10s of %-10s committed (%3.0f%%)\n", g->region, cm, sz,
                100.0 * (double)g->committed / (double)g->size);
    }
    fprintf(f, "\n%5s %8s %-15s %10s %10s %10s %5s %10s %8s %8s %8s\n", "CONN", "PID", "COMM", "ALLOCATED", "LOCAL",
            "BUDGET", "%BUD", "NONLOCAL", "EVICT/s", "REST/s", "REQ/s");
    for (uint32_t i = 0; i < cur->n; i++) {
        const struct vidmm_client_admin_process *p = &cur->p[i];
        const struct vidmm_client_admin_process *q = find_conn(prev, p->connection);
        double ps = q ? span : (double)a->uptime_ns / 1e9;
        if (ps <= 0)
            ps = 1e-9;
        char al[32], lu[32], lb[32], nu[32];
        size_str(p->allocated_bytes, al, sizeof al);
        size_str(p->usage[0], lu, sizeof lu);
        size_str(p->budget[0], lb, sizeof lb);
        size_str(p->usage[1], nu, sizeof nu);
        fprintf(f, "%5u %8u %-15s %10s %10s %10s %4.0f%% %10s %8.1f %8.1f %8.0f%s\n", p->connection, p->pid,
                p->comm[0] ? p->comm : "?", al, lu, lb,
                p->budget[0] ? 100.0 * (double)p->usage[0] / (double)p->budget[0] : 0.0, nu,
                (double)(p->evictions - (q ? q->evictions : 0)) / ps, (double)(p->restores - (q ? q->restores : 0)) / ps,
                (double)(p->requests - (q ? q->requests : 0)) / ps,
                (p->flags & VIDMM_CLIENT_ADMIN_SELF) ? " (top)" : "");
    }
}

int cli_top(int argc, char **argv)
{
    struct dopts o;
    int rc = parse_dopts("top", argc, argv, 2, &o, 1);
    if (rc)
        return rc;
    struct vidmm_client *c = NULL;
    if (connect_daemon("top", o.socket, &c))
        return 1;
    struct sample s[2];
    s[0].p = calloc(MAX_PROCS, sizeof *s[0].p);
    s[1].p = calloc(MAX_PROCS, sizeof *s[1].p);
    if (!s[0].p || !s[1].p) {
        free(s[0].p);
        free(s[1].p);
        vidmm_client_disconnect(c);
        return 1;
    }
    /* Redraw in place only on a terminal; a pipe gets frames one after
     * another, separated by a blank line. */
    int tty = isatty(1);
    double last = 0;
    rc = 0;
    for (long frame = 0; o.count == 0 || frame < o.count; frame++) {
        struct sample *cur = &s[frame & 1], *prev = frame ? &s[(frame + 1) & 1] : NULL;
        if (frame) {
            double wait = o.interval;
            struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
        double t = mono_s();
        if ((rc = take_sample("top", c, cur)) != 0)
            break;
        if (tty)
            fputs("\033[H\033[2J", stdout);
        else if (frame)
            fputc('\n', stdout);
        print_top(stdout, cur, prev, t - last);
        fflush(stdout);
        last = t;
    }
    free(s[0].p);
    free(s[1].p);
    vidmm_client_disconnect(c);
    return rc;
}
