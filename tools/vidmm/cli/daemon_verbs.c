/*
 * daemon_verbs.c - `vidmm ps`, `vidmm top` and `vidmm info --socket`:
 * the running vidmmd seen through its administration requests
 * (docs/DAEMON.md "Observing the daemon", docs/PROTOCOL.md
 * "Administration").  They are clients of libvidmm-client like any
 * program; the daemon answers them only for its own uid or root.  Plain
 * text and ANSI escapes (top on a terminal), no curses; --json and
 * --format csv give the same figures to scripts, in the layouts
 * docs/OUTPUTS.md "The daemon's views" documents (vidmm-ps/1,
 * vidmm-daemon-info/1, vidmm-top/1).
 */
#include "vidmm-client/client.h"
#include "vidmm/segment.h"

#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 4096

struct sample {
    struct vidmm_client_admin_adapter ad;
    struct vidmm_client_admin_process *p;
    uint32_t n;
};

/* Connect, or say why not in the user's terms: no socket there (and how
 * to start vidmmd), not a socket, nobody listening, or the daemon's own
 * refusal. */
static int connect_daemon(const char *verb, const char *path, struct vidmm_client **c)
{
    char def[108];
    int given = path != NULL;
    if (!path)
        path = vidmm_client_default_socket(def, sizeof def);
    vidmm_status st = vidmm_client_connect(path, c);
    if (st >= 0)
        return 0;
    const char *which = given ? "" : " (the default: $VIDMMD_SOCKET, else the first of $XDG_RUNTIME_DIR/vidmmd.sock, "
                                     "/tmp/vidmmd-UID.sock and " VIDMM_CLIENT_SYSTEM_SOCKET " that exists)";
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        fprintf(stderr, "vidmm %s: no vidmmd socket at %s%s: %s\n", verb, path, which, strerror(e));
        if (e == ENOENT)
            fprintf(stderr, "vidmm %s: vidmmd is not running there; start it with `vidmmd --socket %s` "
                            "(or `vidmmd` for the default path), or, installed as a service, "
                            "`systemctl start vidmmd.socket`\n", verb, path);
    } else if (!S_ISSOCK(sb.st_mode)) {
        fprintf(stderr, "vidmm %s: %s%s is not a socket\n", verb, path, which);
    } else if (st == VIDMM_E_DEVICE_LOST) {
        fprintf(stderr, "vidmm %s: nobody listens at %s%s: a vidmmd that ended left it; start vidmmd again "
                        "(`vidmmd --socket %s`)\n", verb, path, which, path);
    } else {
        fprintf(stderr, "vidmm %s: vidmmd at %s refused the connection: %s\n", verb, path, vidmm_client_status_str(st));
    }
    return 1;
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

/* Options every daemon verb takes: --socket PATH, --json, --format; top
 * also --interval, -n and --once.  Returns 0 or 2 (usage error). */
struct dopts {
    const char *socket;
    double interval;
    long count;          /* top: frames; 0 = until interrupted */
    enum cli_format format;
};

static int parse_dopts(const char *verb, int argc, char **argv, struct dopts *o, int top)
{
    memset(o, 0, sizeof *o);
    o->interval = 1.0;
    enum { O_SOCKET = 256, O_JSON, O_FORMAT, O_ONCE, O_INTERVAL };
    static const struct option ps_opts[] = {
        { "socket", required_argument, NULL, O_SOCKET }, { "json", no_argument, NULL, O_JSON },
        { "format", required_argument, NULL, O_FORMAT }, { NULL, 0, NULL, 0 },
    };
    static const struct option top_opts[] = {
        { "socket", required_argument, NULL, O_SOCKET }, { "json", no_argument, NULL, O_JSON },
        { "format", required_argument, NULL, O_FORMAT }, { "once", no_argument, NULL, O_ONCE },
        { "count", required_argument, NULL, 'n' },        { "interval", required_argument, NULL, O_INTERVAL },
        { NULL, 0, NULL, 0 },
    };
    int rc = 0;
    cli_getopt_begin();
    for (int c; (c = cli_getopt(verb, argc, argv, top ? "n:" : "", top ? top_opts : ps_opts, &rc)) != -1;) {
        char *end = NULL;
        errno = 0;
        switch (c) {
        case O_SOCKET: o->socket = optarg; break;
        case O_JSON: o->format = CLI_FORMAT_JSON; break;
        case O_FORMAT:
            if ((rc = cli_parse_format(verb, optarg, &o->format)) != 0)
                return rc;
            break;
        case O_ONCE: o->count = 1; break;
        case 'n': {
            long n = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || n < 1 || n > 1000000)
                return cli_usage_error(verb, "--count %s: want a number of refreshes, 1-1000000", optarg);
            o->count = n;
            break;
        }
        case O_INTERVAL: {
            double d = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(d >= 0.05 && d <= 3600))
                return cli_usage_error(verb, "--interval %s: want seconds between refreshes, 0.05-3600", optarg);
            o->interval = d;
            break;
        }
        default: return rc;
        }
    }
    if (cli_operand_first() < argc)
        return cli_usage_error(verb, "unknown argument '%s'", argv[cli_operand_first()]);
    return 0;
}

/* ---- JSON and CSV ------------------------------------------------------- */

/* A JSON string of a command name (comm is at most 15 bytes, from /proc):
 * quotes, backslashes and control bytes escaped. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A CSV field of a command name: quoted when it holds a comma, a quote or
 * a line break (RFC 4180). */
static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

#define PROC_FIELDS "connection,pid,uid,comm,allocations,allocated_bytes,local_usage,local_budget,nonlocal_usage," \
                    "nonlocal_budget,locked_bytes,evictions,restores,requests,self,refused"

/* rates (top): evictions, restores and requests per second, or NULL. */
static void json_process(FILE *f, const struct vidmm_client_admin_process *p, const double *rates)
{
    fprintf(f, "{\"connection\": %u, \"pid\": %u, \"uid\": %u, \"comm\": ", p->connection, p->pid, p->uid);
    json_str(f, p->comm);
    fprintf(f, ", \"allocations\": %u, \"allocated_bytes\": %" PRIu64 ", \"local_usage\": %" PRIu64
               ", \"local_budget\": %" PRIu64 ", \"nonlocal_usage\": %" PRIu64 ", \"nonlocal_budget\": %" PRIu64
               ", \"locked_bytes\": %" PRIu64 ", \"evictions\": %" PRIu64 ", \"restores\": %" PRIu64
               ", \"requests\": %" PRIu64 ", \"self\": %s, \"refused\": %s",
            p->allocations, p->allocated_bytes, p->usage[0], p->budget[0], p->usage[1], p->budget[1], p->locked_bytes,
            p->evictions, p->restores, p->requests, (p->flags & VIDMM_CLIENT_ADMIN_SELF) ? "true" : "false",
            (p->flags & VIDMM_CLIENT_ADMIN_REFUSED) ? "true" : "false");
    if (rates)
        fprintf(f, ", \"evictions_per_s\": %.3f, \"restores_per_s\": %.3f, \"requests_per_s\": %.3f", rates[0],
                rates[1], rates[2]);
    fputc('}', f);
}

static void csv_process(FILE *f, const struct vidmm_client_admin_process *p, const double *rates)
{
    fprintf(f, "%u,%u,%u,", p->connection, p->pid, p->uid);
    csv_str(f, p->comm);
    fprintf(f, ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
               ",%" PRIu64 ",%d,%d",
            p->allocations, p->allocated_bytes, p->usage[0], p->budget[0], p->usage[1], p->budget[1], p->locked_bytes,
            p->evictions, p->restores, p->requests, (p->flags & VIDMM_CLIENT_ADMIN_SELF) ? 1 : 0,
            (p->flags & VIDMM_CLIENT_ADMIN_REFUSED) ? 1 : 0);
    if (rates)
        fprintf(f, ",%.3f,%.3f,%.3f", rates[0], rates[1], rates[2]);
    fputc('\n', f);
}

static void json_segments(FILE *f, const struct vidmm_client_admin_adapter *a)
{
    fprintf(f, "\"segments\": [");
    for (uint32_t i = 0; i < a->segment_count; i++) {
        const struct vidmm_client_admin_segment *g = &a->segment[i];
        fprintf(f, "%s{\"id\": %u, \"kind\": \"%s\", \"region\": ", i ? ", " : "", g->id,
                vidmm_segment_kind_str((enum vidmm_segment_kind)g->kind));
        json_str(f, g->region);
        fprintf(f, ", \"size\": %" PRIu64 ", \"committed\": %" PRIu64 ", \"free\": %" PRIu64
                   ", \"commit_limit\": %" PRIu64 ", \"page_size\": %" PRIu64 "}",
                (uint64_t)g->size, (uint64_t)g->committed, (uint64_t)g->free_bytes, (uint64_t)g->commit_limit,
                (uint64_t)g->page_size);
    }
    fputc(']', f);
}

static void json_daemon(FILE *f, const struct vidmm_client_admin_adapter *a)
{
    fprintf(f, "\"daemon\": {\"pid\": %u, \"uid\": %u, \"uptime_ns\": %" PRIu64 ", \"wddm_version\": %u, "
               "\"clients\": %u, \"connections\": %" PRIu64 ", \"requests\": %" PRIu64 ", \"protocol_errors\": %"
               PRIu64 ", \"limit_refusals\": %" PRIu64 ", \"host_blocks\": %" PRId64 ", \"host_bytes\": %" PRId64
               ", \"live_allocations\": %" PRIu64 ", \"make_resident_calls\": %" PRIu64 ", \"evictions\": %" PRIu64
               ", \"bytes_evicted\": %" PRIu64 ", \"restores\": %" PRIu64 ", \"bytes_restored\": %" PRIu64
               ", \"paging_buffers\": %" PRIu64 "}",
            a->daemon_pid, a->daemon_uid, a->uptime_ns, a->wddm_version, a->clients, a->connections, a->requests,
            a->protocol_errors, a->quota_refusals, a->host_blocks, a->host_bytes, a->live_allocations,
            a->make_resident_calls, a->evictions, a->bytes_evicted, a->restores, a->bytes_restored,
            a->paging_buffers_submitted);
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
    int rc = parse_dopts("ps", argc, argv, &o, 0);
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
    if (!rc && o.format == CLI_FORMAT_JSON) {
        printf("{\"format\": \"vidmm-ps/1\", \"daemon_pid\": %u, \"processes\": [", s.ad.daemon_pid);
        for (uint32_t i = 0; i < s.n; i++) {
            fputs(i ? ",\n  " : "\n  ", stdout);
            json_process(stdout, &s.p[i], NULL);
        }
        printf("\n]}\n");
    } else if (!rc && o.format == CLI_FORMAT_CSV) {
        printf("%s\n", PROC_FIELDS);
        for (uint32_t i = 0; i < s.n; i++)
            csv_process(stdout, &s.p[i], NULL);
    } else if (!rc) {
        print_ps_header(stdout);
        for (uint32_t i = 0; i < s.n; i++)
            print_ps_line(stdout, &s.p[i]);
    }
    if (!rc && fflush(stdout))
        rc = 1;
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

int cli_info_daemon(const char *socket_path, enum cli_format format)
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
    if (format == CLI_FORMAT_JSON) {
        printf("{\"format\": \"vidmm-daemon-info/1\", ");
        json_daemon(stdout, &a);
        printf(",\n \"limits\": {\"max_alloc_bytes\": %" PRIu64 ", \"max_locked_bytes\": %" PRIu64
               ", \"max_handles\": %u, \"max_requests\": %u, \"max_connections_per_uid\": %u},\n ",
               a.max_alloc_bytes, a.max_locked_bytes, a.max_handles, a.max_requests, a.max_connections_per_uid);
        json_segments(stdout, &a);
        printf("}\n");
    } else if (format == CLI_FORMAT_CSV) {
        /* The table part: one row per segment. */
        printf("id,kind,region,size,committed,free,commit_limit,page_size\n");
        for (uint32_t i = 0; i < a.segment_count; i++) {
            const struct vidmm_client_admin_segment *g = &a.segment[i];
            printf("%u,%s,", g->id, vidmm_segment_kind_str((enum vidmm_segment_kind)g->kind));
            csv_str(stdout, g->region);
            printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", (uint64_t)g->size,
                   (uint64_t)g->committed, (uint64_t)g->free_bytes, (uint64_t)g->commit_limit, (uint64_t)g->page_size);
        }
    } else {
        print_daemon_totals(stdout, &a);
        print_daemon_segments(stdout, &a);
    }
    return fflush(stdout) ? 1 : 0;
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

/* A process's rates over the frame (since the daemon started when it was
 * not in the previous frame); returns the span they cover. */
static double top_rates(const struct vidmm_client_admin_adapter *a, const struct vidmm_client_admin_process *p,
                        const struct vidmm_client_admin_process *q, double span, double r[3])
{
    double ps = q ? span : (double)a->uptime_ns / 1e9;
    if (ps <= 0)
        ps = 1e-9;
    r[0] = (double)(p->evictions - (q ? q->evictions : 0)) / ps;
    r[1] = (double)(p->restores - (q ? q->restores : 0)) / ps;
    r[2] = (double)(p->requests - (q ? q->requests : 0)) / ps;
    return ps;
}

/* One frame for scripts: JSON (one object a line, vidmm-top/1) or CSV
 * rows (one per process, the frame number first; the header once). */
static void print_top_machine(FILE *f, enum cli_format format, long frame, const struct sample *cur,
                              const struct sample *prev, double dt)
{
    const struct vidmm_client_admin_adapter *a = &cur->ad;
    double span = prev ? dt : (double)a->uptime_ns / 1e9;
    if (span <= 0)
        span = 1e-9;
    if (format == CLI_FORMAT_CSV) {
        if (frame == 0)
            fprintf(f, "frame,interval_s,%s,evictions_per_s,restores_per_s,requests_per_s\n", PROC_FIELDS);
        for (uint32_t i = 0; i < cur->n; i++) {
            double r[3], ps = top_rates(a, &cur->p[i], find_conn(prev, cur->p[i].connection), span, r);
            fprintf(f, "%ld,%.3f,", frame, ps);
            csv_process(f, &cur->p[i], r);
        }
        return;
    }
    fprintf(f, "{\"format\": \"vidmm-top/1\", \"frame\": %ld, \"interval_s\": %.3f, ", frame, span);
    json_daemon(f, a);
    fprintf(f, ", ");
    json_segments(f, a);
    fprintf(f, ", \"processes\": [");
    for (uint32_t i = 0; i < cur->n; i++) {
        double r[3];
        top_rates(a, &cur->p[i], find_conn(prev, cur->p[i].connection), span, r);
        fputs(i ? ", " : "", f);
        json_process(f, &cur->p[i], r);
    }
    fprintf(f, "]}\n");
}

int cli_top(int argc, char **argv)
{
    struct dopts o;
    int rc = parse_dopts("top", argc, argv, &o, 1);
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
        if (o.format != CLI_FORMAT_TEXT) {
            print_top_machine(stdout, o.format, frame, cur, prev, t - last);
            fflush(stdout);
            last = t;
            continue;
        }
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
