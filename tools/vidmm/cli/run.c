/*
 * run.c - `vidmm run`, `vidmm replay` and `vidmm scenarios`.
 *
 *   vidmm run SCENARIO|FILE [adapter options] [--policy NAME] [--seed N]
 *             [--frames N] [--async] [output options]
 *   vidmm replay TRACE [output options]
 *   both: --progress | --no-progress: a progress bar on stderr (default:
 *         when stderr is a terminal), frames of a scenario, bytes of a file
 *   both: --rules (default) | --no-rules: the WDDM rules checker after
 *         every call; the first violation fails the run (a replay or a
 *         scenario file stops there)
 *   both: --driver NAME [--options STR]: a driver plug-in instead of
 *         softgpu (vkgpu, or FILE.so; docs/VKGPU.md); a replay takes the
 *         trace's own "driver" line unless told.  Calls the tool cannot
 *         make there answer NOT_APPLICABLE, said and counted; results
 *         stated by a trace of another driver are compared for the
 *         integrity checks only (docs/DECISIONS.md D80, D81)
 *   run:  --fail-driver OP:K[:once|sticky]: a failing driver
 *         (support/fault_driver.h) refuses OP at its K-th call (K 0:
 *         counts the calls only); the run's statuses are not judged, the
 *         state at the end is (structure, rules, aperture entries)
 *   output options: --record FILE  --format text|json|csv  -o FILE
 *                   --snapshot FILE  --timeline FILE  --html FILE  --fdinfo FILE
 *
 * run executes a built-in scenario (scenarios.c) or a scenario file (the
 * trace format, results optional); replay re-executes a trace and checks
 * every call's result against the recorded one.  Both go through the
 * recording layer, so both can record, and both print the same report
 * for the same calls: a synchronous replay's report is byte-identical to
 * the run's.  Replay's verdict (calls compared, mismatches) goes to
 * stderr for that reason.
 */
#include "cli.h"
#include "report/html.h"
#include "trace/replay.h"
#include "report/report.h"
#include "rmv/rmv.h"
#include "scenario/scenario.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The tool's options for run and replay (the one piece of mutable state
 * a command has besides its session). */
struct run_options {
    const char *what;            /* scenario name or file */
    const char *preset;
    struct cli_adapter_args seg; /* --segment as given, checked once the preset is known */
    uint64_t segment_size[SOFTGPU_MAX_SEGMENTS + 1];
    const char *policy;
    uint64_t seed;
    int seed_given;
    uint32_t frames;
    int async;
    const char *record, *output, *snapshot, *timeline, *html, *fdinfo, *memmap;
    enum report_format format;
    int progress;                /* -1 auto (stderr is a terminal), 0 off, 1 on */
    int rules;                   /* the rules checker after every call (--rules, the default) */
    int decode_only;             /* replay FILE.rmv --decode-only: read and check the file, print what it holds */
    int lenient;                 /* replay FILE.rmv --lenient: count the stream's anomalies instead of refusing */
    uint32_t local_scale;        /* replay FILE.rmv --local-scale N: local heaps divided by N (0: as recorded) */
    /* run --fail-driver OP:K[:once|sticky]: refuse op at its k-th call
     * (k 0: only count the calls); fail_op FAULT_OP_COUNT = not given. */
    enum fault_op fail_op;
    uint64_t fail_at;
    enum fault_mode fail_mode;
    const char *driver;          /* --driver NAME: a plug-in instead of softgpu (NULL: the trace's, else softgpu) */
    const char *driver_options;  /* --options STR for it (NULL: the trace's, else $VIDMM_DRIVER_OPTIONS) */
    const char *cmd;             /* "run" or "replay", for messages */
};

/* The library's policies, "lru, adaptive, belady or reuse", for messages. */
static void policy_names(char *buf, size_t n)
{
    const struct vidmm_eviction_policy *const *p = vidmm_policies();
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; p[i] && used < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%s", i == 0 ? "" : p[i + 1] ? ", " : " or ", p[i]->name);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

/* Long options of run and replay.  Codes: 'o' for -o/--output, else
 * >= 256.  Which verb accepts which is decided in parse_options, so a
 * misplaced one is named rather than ignored. */
enum {
    O_FORMAT = 256, O_JSON, O_RECORD, O_SNAPSHOT, O_TIMELINE, O_HTML, O_FDINFO, O_MEMMAP, O_RULES, O_NO_RULES,
    O_DECODE_ONLY, O_LENIENT, O_LOCAL_SCALE, O_PROGRESS, O_NO_PROGRESS, O_ADAPTER, O_SEGMENT, O_POLICY, O_SEED,
    O_FRAMES, O_ASYNC, O_FAIL_DRIVER, O_DRIVER, O_OPTIONS
};
static const struct option run_longs[] = {
    { "format", required_argument, NULL, O_FORMAT },     { "json", no_argument, NULL, O_JSON },
    { "output", required_argument, NULL, 'o' },          { "record", required_argument, NULL, O_RECORD },
    { "snapshot", required_argument, NULL, O_SNAPSHOT }, { "timeline", required_argument, NULL, O_TIMELINE },
    { "html", required_argument, NULL, O_HTML },         { "fdinfo", required_argument, NULL, O_FDINFO },
    { "memmap", required_argument, NULL, O_MEMMAP },     { "rules", no_argument, NULL, O_RULES },
    { "no-rules", no_argument, NULL, O_NO_RULES },       { "decode-only", no_argument, NULL, O_DECODE_ONLY },
    { "lenient", no_argument, NULL, O_LENIENT },         { "local-scale", required_argument, NULL, O_LOCAL_SCALE },
    { "progress", no_argument, NULL, O_PROGRESS },       { "no-progress", no_argument, NULL, O_NO_PROGRESS },
    { "adapter", required_argument, NULL, O_ADAPTER },   { "segment", required_argument, NULL, O_SEGMENT },
    { "policy", required_argument, NULL, O_POLICY },     { "seed", required_argument, NULL, O_SEED },
    { "frames", required_argument, NULL, O_FRAMES },     { "async", no_argument, NULL, O_ASYNC },
    { "fail-driver", required_argument, NULL, O_FAIL_DRIVER },
    { "driver", required_argument, NULL, O_DRIVER },     { "options", required_argument, NULL, O_OPTIONS },
    { NULL, 0, NULL, 0 },
};

/* The option's name for messages ("--seed"). */
static const char *long_name(int code)
{
    if (code == 'o')
        return "-o";
    for (size_t k = 0; run_longs[k].name; k++)
        if (run_longs[k].val == code)
            return run_longs[k].name;
    return "?";
}

/* An output file, checked before the run (a run of minutes must not end
 * in "cannot write"): "-" is stdout; otherwise its folder must exist and
 * be writable, and an existing file writable.  0, or 1 after the reason
 * with the system's words. */
static int output_ok(const char *cmd, const char *opt, const char *path)
{
    if (!path || !strcmp(path, "-"))
        return 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "vidmm %s: %s %s: cannot write there: folder '%s': %s\n", cmd, opt, path, dir,
                stat(dir, &sb) != 0 ? strerror(errno) : strerror(ENOTDIR));
        return 1;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "vidmm %s: %s %s: %s (want a file name)\n", cmd, opt, path, strerror(EISDIR));
        return 1;
    }
    if (access(stat(path, &sb) == 0 ? path : dir, W_OK) != 0) {
        fprintf(stderr, "vidmm %s: %s %s: cannot write: %s\n", cmd, opt, path, strerror(errno));
        return 1;
    }
    return 0;
}

static int outputs_ok(const char *cmd, const struct run_options *o)
{
    return output_ok(cmd, "--output", o->output) | output_ok(cmd, "--record", o->record) |
           output_ok(cmd, "--snapshot", o->snapshot) | output_ok(cmd, "--timeline", o->timeline) |
           output_ok(cmd, "--html", o->html) | output_ok(cmd, "--fdinfo", o->fdinfo) |
           output_ok(cmd, "--memmap", o->memmap);
}

static int parse_options(const char *cmd, int argc, char **argv, struct run_options *o, int replay)
{
    memset(o, 0, sizeof(*o));
    o->cmd = cmd;
    o->progress = -1;
    o->rules = 1;
    o->fail_op = FAULT_OP_COUNT;
    int rc = 0;
    uint64_t n;
    char names[128];
    policy_names(names, sizeof names);
    cli_getopt_begin();
    for (int c; (c = cli_getopt(cmd, argc, argv, "o:", run_longs, &rc)) != -1;) {
        const char *v = optarg;
        /* Run's adapter and scenario options have no meaning to a replay
         * (its trace's header says them); the RMV ones none to a run. */
        int run_only = c == O_ADAPTER || c == O_SEGMENT || c == O_SEED || c == O_FRAMES || c == O_ASYNC ||
                       c == O_FAIL_DRIVER;
        int replay_only = c == O_DECODE_ONLY || c == O_LENIENT || c == O_LOCAL_SCALE;
        if (replay && run_only)
            return cli_usage_error(cmd, "--%s: a replay takes the adapter, policy and seed from the trace's header "
                                        "(vidmm run FILE takes them from the command line)", long_name(c));
        if (!replay && replay_only)
            return cli_usage_error(cmd, "unknown option '--%s' (a replay option)", long_name(c));
        switch (c) {
        case '?': return rc;
        case O_FORMAT:
            if (!strcmp(v, "text"))
                o->format = REPORT_TEXT;
            else if (!strcmp(v, "json"))
                o->format = REPORT_JSON;
            else if (!strcmp(v, "csv"))
                o->format = REPORT_CSV;
            else
                return cli_usage_error(cmd, "--format %s: no such format (text, json or csv)", v);
            break;
        case O_JSON: o->format = REPORT_JSON; break;
        case 'o': o->output = v; break;
        case O_RECORD: o->record = v; break;
        case O_SNAPSHOT: o->snapshot = v; break;
        case O_TIMELINE: o->timeline = v; break;
        case O_HTML: o->html = v; break;
        case O_FDINFO: o->fdinfo = v; break;
        case O_MEMMAP: o->memmap = v; break;
        case O_RULES: o->rules = 1; break;
        case O_NO_RULES: o->rules = 0; break;
        case O_DECODE_ONLY: o->decode_only = 1; break;
        case O_LENIENT: o->lenient = 1; break;
        case O_LOCAL_SCALE:
            if (tr_parse_u64(v, &n) || n == 0 || n > 64)
                return cli_usage_error(cmd, "--local-scale %s: want a divisor of the local heaps, 1-64", v);
            o->local_scale = (uint32_t)n;
            break;
        case O_PROGRESS: o->progress = 1; break;
        case O_NO_PROGRESS: o->progress = 0; break;
        case O_ADAPTER:
            if ((rc = cli_check_preset(cmd, v)) != 0)
                return rc;
            o->preset = v;
            break;
        case O_SEGMENT:
            if ((rc = cli_add_segment(cmd, &o->seg, v)) != 0)
                return rc;
            break;
        case O_POLICY:   /* replay: an RMV file's policy, or a trace's comparison run */
            if (!tr_policy_by_name(v))
                return cli_usage_error(cmd, "--policy %s: no such policy (%s)", v, names);
            o->policy = v;
            break;
        case O_SEED:
            if (tr_parse_u64(v, &o->seed))
                return cli_usage_error(cmd, "--seed %s: not a number (decimal or 0x hex)", v);
            o->seed_given = 1;
            break;
        case O_FRAMES:
            if (tr_parse_u64(v, &n) || n == 0 || n > 100000)
                return cli_usage_error(cmd, "--frames %s: want a number of frames, 1-100000", v);
            o->frames = (uint32_t)n;
            break;
        case O_ASYNC: o->async = 1; break;
        case O_DRIVER: o->driver = v; break;
        case O_OPTIONS:
            if (strlen(v) >= sizeof(((struct tr_header *)0)->driver_options) || strchr(v, ' '))
                return cli_usage_error(cmd, "--options %s: want KEY=VALUE[,KEY=VALUE]..., no blanks, under 256 "
                                            "characters", v);
            o->driver_options = v;
            break;
        case O_FAIL_DRIVER: {
            char op[40], mode[16] = "once";
            unsigned long long k = 0;
            if (sscanf(v, "%39[^:]:%llu:%15s", op, &k, mode) < 2 ||
                (o->fail_op = fault_driver_op_from_name(op)) == FAULT_OP_COUNT ||
                (strcmp(mode, "once") && strcmp(mode, "sticky")))
                return cli_usage_error(cmd, "--fail-driver %s: want OP:K[:once|sticky] with OP a driver op "
                                            "(build_paging_buffer, submit_command, ...)", v);
            o->fail_at = k;
            o->fail_mode = strcmp(mode, "sticky") ? FAULT_DRIVER_ONCE : FAULT_DRIVER_STICKY;
            break;
        }
        default: return cli_usage_error(cmd, "unknown option");
        }
    }
    for (int i = cli_operand_first(); i < argc; i++) {
        if (o->what)
            return cli_usage_error(cmd, "'%s': one %s at a time ('%s' was given first)", argv[i],
                                   replay ? "trace" : "scenario or file", o->what);
        o->what = argv[i];
    }
    if (o->driver && (strlen(o->driver) >= sizeof(((struct tr_header *)0)->driver) || strchr(o->driver, ' ')))
        return cli_usage_error(cmd, "--driver %s: want vkgpu, softgpu or a plug-in file without blanks", o->driver);
    if (o->driver_options && !o->driver && !replay)
        return cli_usage_error(cmd, "--options %s: options of which driver? (--driver NAME)", o->driver_options);
    if (!o->what)
        return replay ? cli_usage_error(cmd, "which trace? (vidmm replay FILE)")
                      : cli_usage_error(cmd, "which scenario or file? (vidmm scenarios lists the built-in ones)");
    return outputs_ok(cmd, o);
}

static FILE *open_out(const char *path)
{
    if (!path || !strcmp(path, "-"))
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "vidmm: cannot write '%s': %s\n", path, strerror(errno));
    return f;
}

static int close_out(FILE *f, const char *path)
{
    if (f == stdout) {
        if (fflush(f) == 0)
            return 0;
        fprintf(stderr, "vidmm: error writing the standard output: %s\n", strerror(errno));
        return 1;
    }
    if (fclose(f)) {
        fprintf(stderr, "vidmm: error writing '%s': %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* What a run collects while its calls go by, for the outputs written
 * after the last one. */
struct collect {
    struct tr_buf timeline;      /* --timeline: events */
    struct html_series *series;  /* --html: time series */
    uint64_t frames;             /* a built-in scenario's frames when progress is drawn, else 0 */
    int last_pct;                /* the progress bar's last percentage, -1 = none drawn */
    struct vidmm_plugin plugin;  /* the plug-in driver the run is on (plugin.lib NULL: softgpu) */
};

/* After every call: the HTML report's series and a built-in scenario's
 * progress in frames (one observer slot serves both). */
static void run_observe(struct tr *t, const struct tr_tick *k, void *ctx)
{
    struct collect *c = ctx;
    if (c->series)
        html_observe(t, k, c->series);
    if (c->frames)
        cli_progress(t->frames ? t->frames - 1 : 0, c->frames, "frames", &c->last_pct);   /* done: before the one running */
}

/* The plug-in driver, if one was started (after tr_close). */
static void plugin_stop(struct collect *c)
{
    if (c->plugin.lib)
        vidmm_plugin_stop(&c->plugin);
}

/* After tr_close: the plug-in driver goes too. */
static void collect_free(struct collect *c)
{
    plugin_stop(c);
    tr_buf_free(&c->timeline);
    html_series_free(c->series);
    c->series = NULL;
}

/* Report, snapshot, timeline and HTML report after the last call; 1 if a
 * file could not be written. */
static int outputs(struct tr *t, const struct run_options *o, struct collect *c)
{
    struct tr_buf *timeline = &c->timeline;
    int bad = 0;
    FILE *f = open_out(o->output);
    if (f) {
        report_write(t, o->format, f);
        bad |= close_out(f, o->output);
    } else {
        bad = 1;
    }
    if (o->snapshot) {
        f = open_out(o->snapshot);
        if (f) {
            snapshot_write(t, f);
            bad |= close_out(f, o->snapshot);
        } else {
            bad = 1;
        }
    }
    if (o->memmap) {
        f = open_out(o->memmap);
        if (f) {
            memmap_write(t, f);
            bad |= close_out(f, o->memmap);
        } else {
            bad = 1;
        }
    }
    if (o->fdinfo) {
        f = open_out(o->fdinfo);
        if (f) {
            fdinfo_write(t, f);
            bad |= close_out(f, o->fdinfo);
        } else {
            bad = 1;
        }
    }
    if (o->timeline) {
        if (timeline->oom) {
            fprintf(stderr, "vidmm: out of memory collecting the timeline\n");
            bad = 1;
        } else if ((f = open_out(o->timeline)) != NULL) {
            timeline_write(t, timeline, f);
            bad |= close_out(f, o->timeline);
        } else {
            bad = 1;
        }
    }
    if (o->html) {
        if (!c->series || html_series_oom(c->series)) {
            fprintf(stderr, "vidmm: out of memory collecting the HTML report's series\n");
            bad = 1;
        } else if ((f = open_out(o->html)) != NULL) {
            html_write(t, c->series, f);
            bad |= close_out(f, o->html);
        } else {
            bad = 1;
        }
    }
    return bad;
}

/* Open the record file, the session, the timeline and the HTML series,
 * and start the clock. */
static int start(struct tr *t, const struct tr_header *h, const struct run_options *o, FILE **rec,
                 struct collect *c, uint64_t progress_frames)
{
    memset(c, 0, sizeof(*c));
    c->frames = progress_frames;
    c->last_pct = -1;
    *rec = NULL;
    struct tr_header hd = *h;
    if (hd.driver[0]) {
        /* The plug-in the header names, constructed with its options. */
        char who[32];
        snprintf(who, sizeof who, "vidmm %s", o->cmd);
        if (vidmm_plugin_start_options(who, hd.driver, hd.driver_options[0] ? hd.driver_options : NULL, &c->plugin) !=
            VIDMM_PLUGIN_OK)
            return 1;
        hd.plugin = &c->plugin.drv;
        h = &hd;
    }
    if (o->record) {
        *rec = fopen(o->record, "w");
        if (!*rec) {
            fprintf(stderr, "vidmm: cannot write '%s': %s\n", o->record, strerror(errno));
            plugin_stop(c);
            return 1;
        }
    }
    if (tr_open(t, h, *rec)) {
        if (*rec)
            fclose(*rec);
        plugin_stop(c);
        return 1;
    }
    if (tr_enable_rules(t, o->rules)) {
        fprintf(stderr, "vidmm: out of memory for the rules checker\n");
        tr_close(t);
        plugin_stop(c);
        if (*rec)
            fclose(*rec);
        return 1;
    }
    if (o->timeline)
        tr_enable_timeline(t, &c->timeline);
    if (o->html) {
        /* Out of memory here is reported when the report is due, as for
         * the timeline: the run itself goes on. */
        c->series = html_series_new(t);
    }
    if (c->series || c->frames)
        tr_set_observer(t, run_observe, c);
    tr_start(t);
    return 0;
}

static int finish_record(struct tr *t, FILE *rec, const char *path)
{
    if (!rec)
        return 0;
    errno = 0;
    int bad = tr_end_record(t);   /* the end record, then the verdict */
    if (fclose(rec))
        bad = 1;
    if (bad)
        fprintf(stderr, "vidmm: error writing the record file '%s': %s\n", path,
                errno ? strerror(errno) : "a write failed");
    return bad;
}

/* On stderr, so a run's report stays the replay's.  On a plug-in driver
 * also what was not checked and not made there, by name. */
static void rules_summary(const struct tr *t)
{
    if (t->rules)
        fprintf(stderr, "vidmm: rules checked after %" PRIu64 " calls (%" PRIu64 " with an MMU walk), %" PRIu64
                        " violations%s\n",
                t->rules_checks, t->rules_gpu_walks, t->rules_violations,
                t->rules_violations ? " (the run stopped checking at the first)" : "");
    if (t->rules && t->rules_not_applicable) {
        char names[512];
        rc_softgpu_only_names(names, sizeof names);
        fprintf(stderr, "vidmm: rules not applicable on driver %s (they read softgpu's MMU and GART), left out of "
                        "%" PRIu64 " checks: %s\n", tr_driver_name(t), t->rules_not_applicable, names);
    }
    uint64_t na = 0;
    for (int v = 0; v < TV_COUNT; v++)
        na += t->not_applicable[v];
    if (na) {
        fprintf(stderr, "vidmm: %" PRIu64 " calls not made on driver %s (NOT_APPLICABLE):", na, tr_driver_name(t));
        for (int v = 0; v < TV_COUNT; v++)
            if (t->not_applicable[v])
                fprintf(stderr, " %s %" PRIu64, tr_verb_names[v], t->not_applicable[v]);
        fputc('\n', stderr);
    }
}

/* Bytes of the memory segments of the softgpu adapter h describes (its
 * preset and segment sizes); 0 if it cannot be made. */
static uint64_t softgpu_memory_bytes(const struct tr_header *h)
{
    struct softgpu_config c;
    memset(&c, 0, sizeof c);
    c.preset = h->preset;
    memcpy(c.segment_size, h->segment_size, sizeof c.segment_size);
    c.synchronous = 1;
    struct softgpu *g;
    if (softgpu_create(&c, &g) < 0)
        return 0;
    struct vidmm_query_segment_out qo;
    struct vidmm_segment_descriptor d[SOFTGPU_MAX_SEGMENTS];
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    const struct vidmm_driver_ops *ops = softgpu_driver_ops();
    uint64_t bytes = 0;
    if (ops->query_adapter_info(g, &q) >= 0 && qo.nb_segment <= SOFTGPU_MAX_SEGMENTS) {
        qo.segment_descriptor = d;
        qo.segment_descriptor_stride = sizeof d[0];
        if (ops->query_adapter_info(g, &q) >= 0)
            for (uint32_t i = 0; i < qo.nb_segment; i++)
                if (!(d[i].flags & VIDMM_SEGMENT_APERTURE))
                    bytes += d[i].size;
    }
    softgpu_destroy(g);
    return bytes;
}

/* The driver a run or replay is on, into the header: --driver (softgpu:
 * none), else the trace's "driver" line; its options: --options, else
 * the trace's, else $VIDMM_DRIVER_OPTIONS.  vkgpu without cap= takes as
 * much memory as the scenario's softgpu adapter has, so a scenario
 * written to over-commit 4 MiB still does (docs/DECISIONS.md D81); the
 * options used are recorded, so a replay builds the same adapter. */
static void choose_driver(struct tr_header *h, const struct run_options *o)
{
    if (o->driver) {
        snprintf(h->driver, sizeof h->driver, "%s", strcmp(o->driver, "softgpu") ? o->driver : "");
        h->driver_options[0] = '\0';
    }
    if (!h->driver[0]) {
        h->driver_options[0] = '\0';
        return;
    }
    const char *env = getenv("VIDMM_DRIVER_OPTIONS");
    if (o->driver_options)
        snprintf(h->driver_options, sizeof h->driver_options, "%s", o->driver_options);
    else if (!h->driver_options[0] && env && !strchr(env, ' '))
        snprintf(h->driver_options, sizeof h->driver_options, "%s", env);
    uint64_t mem = softgpu_memory_bytes(h);
    if (!strcmp(h->driver, "vkgpu") && !strstr(h->driver_options, "cap=") && mem) {
        size_t len = strlen(h->driver_options);
        snprintf(h->driver_options + len, sizeof h->driver_options - len, "%scap=%" PRIu64 "K", len ? "," : "",
                 (uint64_t)(((mem + 65535) & ~(uint64_t)65535) >> 10));
    }
}

/* A replay's driver (choose_driver) and whether the trace was written for
 * another one. */
static int replay_driver(struct replay *r, struct tr_header *h, const struct run_options *o)
{
    char written_for[sizeof h->driver];
    snprintf(written_for, sizeof written_for, "%s", h->driver);
    choose_driver(h, o);
    r->foreign_driver = strcmp(written_for, h->driver) != 0;
    if (o->driver_options && !h->driver[0])
        return cli_usage_error("replay", "--options %s: %s replays on softgpu, which takes no options (--driver NAME)",
                               o->driver_options, o->what);
    return 0;
}

/* Belady's policy evicts the allocation used furthest in the future; it
 * knows that only from next-use hints (vidmm_allocation_set_next_use),
 * which neither the built-in scenarios nor trace files give.  Without
 * them every allocation looks never used again and the choice falls to
 * LRU order: a user comparing policies must be told, not shown two equal
 * columns. */
static void belady_warning(const char *cmd, const struct tr_header *h)
{
    if (!strcmp(h->policy, "belady"))
        fprintf(stderr, "vidmm %s: warning: policy belady has no next-use hints here (scenarios and traces do "
                        "not give them), so it evicts in LRU order: expect the lru policy's results\n", cmd);
}

/* run --fail-driver: the scenario ran with the driver refusing; its
 * statuses and read-backs are not the designed ones and are not judged.
 * With the driver working again (a hang poll runs any reset a refusal
 * left scheduled), the structure checker, the rules (library and GPU
 * view) and the aperture's entries must hold: no entry reaches free or
 * foreign memory.  Prints the op's calls and the verdict on stderr. */
static int fail_verdict(struct tr *t, struct fault_driver *fd, const struct run_options *o)
{
    uint64_t calls = fault_driver_calls(fd, o->fail_op), refused = fault_driver_refused(fd, o->fail_op);
    fault_driver_disarm(fd);
    (void)vidmm_adapter_detect_hangs(t->adapter, NULL);
    char rep[2048] = "";
    int e = vidmm_adapter_check(t->adapter, rep, sizeof rep);
    if (!e)
        e = tr_check_rules_now(t, rep, sizeof rep);
    if (!e)
        e = rc_check_aperture(t->adapter, t->gpummu ? t->gpu : NULL, rep, sizeof rep);
    struct rc_objects obj;
    if (!e && !tr_rules_objects(t, &obj))
        e = rc_check_unmapped(t->adapter, t->gpummu ? t->gpu : NULL, &obj, 1u << 16, rep, sizeof rep);
    fprintf(stderr, "vidmm run: driver op %s: %" PRIu64 " calls, %" PRIu64 " refused (from call %" PRIu64 ", %s): %s%s\n",
            fault_driver_op_name(o->fail_op), calls, refused, o->fail_at,
            o->fail_mode == FAULT_DRIVER_STICKY ? "sticky" : "once", e ? "FAILED: " : "state sound", rep);
    return e != 0;
}

int cli_run(int argc, char **argv)
{
    struct run_options o;
    int rc = parse_options("run", argc, argv, &o, 0);
    if (rc)
        return rc;
    struct tr_header h;
    tr_header_defaults(&h);
    const struct scenario *sc = scenario_find(o.what);
    struct replay r;
    memset(&r, 0, sizeof r);
    if (sc) {
        snprintf(h.preset, sizeof h.preset, "%s", sc->preset);
        memcpy(h.segment_size, sc->segment_size, sizeof h.segment_size);
        snprintf(h.scenario, sizeof h.scenario, "%s", sc->name);
    } else if (access(o.what, F_OK) == 0 || errno != ENOENT) {
        /* A file (or a path the system refuses to say about): read it, or
         * say why not in the system's words. */
        if (access(o.what, R_OK) != 0) {
            fprintf(stderr, "vidmm run: cannot read '%s': %s\n", o.what, strerror(errno));
            return 1;
        }
        if (replay_open(&r, o.what, &h, 0))
            return 1;
    } else {
        fprintf(stderr, "vidmm run: '%s': neither a built-in scenario (", o.what);
        for (const struct scenario *const *p = scenarios(); *p; p++)
            fprintf(stderr, "%s%s", p == scenarios() ? "" : ", ", (*p)->name);
        fprintf(stderr, ") nor a file (%s)\n(vidmm help run lists the options)\n", strerror(ENOENT));
        return 2;
    }
    /* Command-line options override the scenario's or file's header. */
    if (o.preset) {
        snprintf(h.preset, sizeof h.preset, "%s", o.preset);
        if (sc && strcmp(o.preset, sc->preset))
            memset(h.segment_size, 0, sizeof h.segment_size);
    }
    if (o.seg.n) {
        /* Against the preset the run will use: the option's, else the
         * scenario's or the file's. */
        rc = cli_check_adapter("run", h.preset, &o.seg, o.segment_size);
        if (rc) {
            replay_close(&r);
            return rc;
        }
    }
    for (uint32_t id = 1; id <= SOFTGPU_MAX_SEGMENTS; id++)
        if (o.segment_size[id])
            h.segment_size[id] = o.segment_size[id];
    if (o.policy)
        snprintf(h.policy, sizeof h.policy, "%s", o.policy);
    if (o.seed_given)
        h.seed = o.seed;
    if (o.async)
        h.synchronous = 0;
    if (sc && !strcmp(sc->name, "igpu") && strcmp(h.preset, "igpu")) {
        replay_close(&r);
        return cli_usage_error("run", "--adapter %s: the igpu scenario runs on the igpu preset only", h.preset);
    }
    if (sc && strcmp(sc->name, "igpu") && !strcmp(h.preset, "igpu")) {
        replay_close(&r);
        return cli_usage_error("run", "--adapter igpu: scenario %s needs a GpuMmu adapter (dgpu, wddm1 or big)",
                               sc->name);
    }
    char written_for[sizeof h.driver];
    snprintf(written_for, sizeof written_for, "%s", h.driver);
    choose_driver(&h, &o);
    r.foreign_driver = strcmp(written_for, h.driver) != 0;
    if (h.driver[0] && !strcmp(h.preset, "igpu")) {
        /* An integrated GPU in IoMmu mode with no local memory is softgpu's
         * igpu preset; a plug-in has its own segments and vkgpu declares
         * no IoMmu: the scenario would test something else. */
        fprintf(stderr, "vidmm run: %s not applicable on driver %s: it is written for softgpu's igpu preset (IoMmu, "
                        "no local memory), which the driver's own adapter is not (exit status 3)\n", o.what, h.driver);
        replay_close(&r);
        return 3;
    }
    belady_warning("run", &h);
    if (!sc)
        r.progress = cli_progress_wanted(o.progress);

    struct tr t;
    FILE *rec;
    struct collect c;
    uint64_t frames = sc && cli_progress_wanted(o.progress) ? (o.frames ? o.frames : sc->frames) : 0;
    struct fault_driver fd;
    if (o.fail_op != FAULT_OP_COUNT) {
        h.fault = &fd;
        o.rules = 0;   /* checked once the driver works again (fail_verdict) */
    }
    if (start(&t, &h, &o, &rec, &c, frames)) {
        replay_close(&r);
        return 1;
    }
    if (h.fault) {
        fault_driver_reset_counts(&fd);
        fault_driver_arm(&fd, o.fail_op, o.fail_at, o.fail_mode, VIDMM_E_DRIVER_FAILURE);
    }
    int errors = 0, malformed = 0;
    if (sc) {
        struct scenario_params p = { h.seed, o.frames };
        errors = sc->run(&t, &p, stderr);
        cli_progress_end(&c.last_pct);
    } else {
        errors = malformed = replay_run(&r, &t);
        if (r.driver_outcomes)
            fprintf(stderr, "vidmm run: %" PRIu64 " stated results differ as outcomes of driver %s (written for "
                            "%s; listed above, not compared)\n", r.driver_outcomes, h.driver[0] ? h.driver : "softgpu",
                    written_for[0] ? written_for : "softgpu");
        if (r.mismatches) {
            fprintf(stderr, "vidmm run: %" PRIu64 " of %" PRIu64 " stated results differ\n", r.mismatches,
                    r.checked);
            if (o.policy)   /* the usual cause: outcomes of another policy */
                fprintf(stderr, "vidmm run: to compare policies on a recorded trace, vidmm replay %s --policy %s "
                                "lists the differences and compares paging\n", o.what, o.policy);
            errors++;
        }
    }
    if (h.fault)
        errors = fail_verdict(&t, &fd, &o);
    /* A malformed file (reported with its line) gets no report: what ran
     * is not what the file meant. */
    if (malformed)
        fprintf(stderr, "vidmm run: %s is malformed (above): no report written\n", o.what);
    int bad = malformed ? 0 : outputs(&t, &o, &c);
    bad |= finish_record(&t, rec, o.record);
    if (!h.fault && (t.check_failures || t.adapter_check_failures || t.rules_violations))
        errors++;
    rules_summary(&t);
    tr_close(&t);
    collect_free(&c);
    int na = r.not_applicable;
    if (na)
        fprintf(stderr, "vidmm run: %s not applicable on driver %s (above; exit status 3)\n", o.what, h.driver);
    replay_close(&r);
    return errors || bad ? 1 : na ? 3 : 0;
}

/* `vidmm replay FILE.rmv`: import an AMD Radeon Memory Visualizer
 * trace (rmv.c).  The import summary comes first, then the usual report
 * (JSON: one object with both; CSV: "rmv" rows, then the report). */
static int replay_rmv(const struct run_options *o)
{
    struct rmv_import *imp = calloc(1, sizeof(*imp));
    struct tr_header h;
    void *state = NULL;
    if (!imp || rmv_load(o->what, o->lenient, o->local_scale, imp, &h, &state)) {
        free(imp);
        return 1;
    }
    if (o->policy)
        snprintf(h.policy, sizeof h.policy, "%s", o->policy);
    if (o->decode_only) {
        /* Only the decoder's verdict and summary: no adapter, no replay. */
        rmv_free_state(state);
        FILE *df = open_out(o->output);
        int dbad = !df;
        if (df) {
            rmv_decode_report(imp, df);
            dbad |= close_out(df, o->output);
        }
        free(imp);
        return dbad;
    }
    struct tr t;
    FILE *rec;
    struct collect c;
    if (start(&t, &h, o, &rec, &c, 0)) {
        rmv_replay(NULL, imp, state);
        free(imp);
        return 1;
    }
    int failed = rmv_replay(&t, imp, state);
    FILE *f = open_out(o->output);
    int bad = !f;
    if (f) {
        if (o->format == REPORT_JSON) {
            fprintf(f, "{\"format\": \"vidmm-rmv-import/1\",\n");
            rmv_report(imp, o->format, f);
            fprintf(f, "\"report\": ");
            report_write(&t, o->format, f);
            fprintf(f, "}\n");
        } else if (o->format == REPORT_CSV) {
            report_write(&t, o->format, f);
            rmv_report(imp, o->format, f);
        } else {
            rmv_report(imp, o->format, f);
            report_write(&t, o->format, f);
        }
        bad |= close_out(f, o->output);
    }
    struct run_options rest = *o;
    rest.output = NULL;
    if (rest.snapshot || rest.timeline || rest.html || rest.fdinfo || rest.memmap) {
        /* Snapshot, timeline and HTML as for any run; the report is written. */
        rest.output = "/dev/null";
        bad |= outputs(&t, &rest, &c);
    }
    bad |= finish_record(&t, rec, o->record);
    tr_close(&t);
    collect_free(&c);
    free(imp);
    return failed || bad ? 1 : 0;
}

/* What a replay moved, for the comparison of two policies. */
struct paging_figures {
    struct vidmm_residency_stats rs;
    uint64_t paging_buffers;
    uint64_t executed, differ;
};

static void paging_figures_take(const struct tr *t, const struct replay *r, struct paging_figures *f)
{
    struct vidmm_adapter_info ai;
    memset(f, 0, sizeof *f);
    vidmm_residency_get_stats(t->adapter, &f->rs);
    if (vidmm_adapter_query_info(t->adapter, &ai) >= 0)
        f->paging_buffers = ai.paging_buffers_submitted;
    f->executed = r->executed;
    f->differ = r->mismatches;
}

/* One replay of the trace at o->what under policy (NULL: the recorded
 * one).  The outputs only for the run that asks (write_outputs); the
 * figures and the run's verdict (0 ok, 1 a malformed line, a failed
 * check, a rule violated, an output not written). */
static int replay_once(const struct run_options *o, const char *policy, int write_outputs, struct tr_header *h,
                       struct paging_figures *f)
{
    struct replay r;
    if (replay_open(&r, o->what, h, 1))
        return 1;
    if (replay_driver(&r, h, o)) {
        replay_close(&r);
        return 1;
    }
    if (policy)
        snprintf(h->policy, sizeof h->policy, "%s", policy);
    struct run_options quiet = *o;
    if (!write_outputs)
        quiet.record = quiet.output = quiet.snapshot = quiet.timeline = quiet.html = quiet.fdinfo = quiet.memmap = NULL;
    r.progress = cli_progress_wanted(o->progress);
    struct tr t;
    FILE *rec;
    struct collect c;
    if (start(&t, h, &quiet, &rec, &c, 0)) {
        replay_close(&r);
        return 1;
    }
    int bad = replay_run(&r, &t);
    paging_figures_take(&t, &r, f);
    if (write_outputs && !bad) {
        bad |= outputs(&t, &quiet, &c);
        bad |= finish_record(&t, rec, quiet.record);
    } else if (rec) {
        fclose(rec);
    }
    bad |= t.check_failures || t.adapter_check_failures || t.rules_violations;
    rules_summary(&t);
    tr_close(&t);
    collect_free(&c);
    replay_close(&r);
    return bad;
}

/* `vidmm replay TRACE --policy NAME`: the calls replayed under another
 * eviction policy.  Results that differ from the trace's are outcomes of
 * the other policy, not faults: each is listed (the first 20, with
 * FILE:LINE) and counted, and the paging of both policies is compared
 * (the recorded one from a replay under it, which must be exact).  The
 * report and the other outputs are the other policy's run. */
static int replay_compare(const struct run_options *o)
{
    struct tr_header h0, h1;
    struct paging_figures a, b;
    fprintf(stderr, "vidmm replay: %s under its recorded policy (the baseline)\n", o->what);
    int bad = replay_once(o, NULL, 0, &h0, &a);
    if (bad)
        return 1;
    if (!strcmp(h0.policy, o->policy))
        fprintf(stderr, "vidmm replay: the trace was recorded under %s already: both runs are the same\n", o->policy);
    fprintf(stderr, "vidmm replay: %s under %s (results that differ are its outcomes, listed below)\n", o->what,
            o->policy);
    memset(&h1, 0, sizeof h1);
    bad = replay_once(o, o->policy, 1, &h1, &b);
    if (!strcmp(o->policy, "belady"))
        belady_warning("replay", &h1);
    fprintf(stderr, "\nvidmm replay: policy comparison, %" PRIu64 " calls\n", b.executed);
    fprintf(stderr, "  %-28s %16s %16s\n", "", h0.policy, o->policy);
#define ROW(name, x) fprintf(stderr, "  %-28s %16" PRIu64 " %16" PRIu64 "\n", name, a.x, b.x)
    ROW("results differing from trace", differ);
    ROW("evictions", rs.evictions);
    ROW("bytes evicted", rs.bytes_evicted);
    ROW("restores", rs.restores);
    ROW("bytes restored", rs.bytes_restored);
    ROW("discards", rs.discards);
    ROW("relocations", rs.relocations);
    ROW("bytes relocated", rs.bytes_relocated);
    ROW("make-resident over budget", rs.over_budget);
    ROW("trim notifications", rs.trim_notifications);
    ROW("paging buffers", paging_buffers);
#undef ROW
    if (a.differ) {
        fprintf(stderr, "vidmm replay: the trace does not replay exactly under its own policy (%" PRIu64
                        " results differ): the comparison has no baseline\n", a.differ);
        return 1;
    }
    return bad ? 1 : 0;
}

int cli_replay(int argc, char **argv)
{
    struct run_options o;
    int rc = parse_options("replay", argc, argv, &o, 1);
    if (rc)
        return rc;
    if (rmv_is_rmv_file(o.what) && o.driver)
        return cli_usage_error("replay", "--driver %s: an RMV file is replayed on softgpu (its heaps become a "
                                         "softgpu adapter), not %s", o.driver, o.what);
    if (rmv_is_rmv_file(o.what))
        return replay_rmv(&o);
    if (o.decode_only)
        return cli_usage_error("replay", "--decode-only is for RMV files, not %s", o.what);
    if (o.local_scale)
        return cli_usage_error("replay", "--local-scale is for RMV files (a trace names its adapter), not %s", o.what);
    if (o.policy)
        return replay_compare(&o);
    struct tr_header h;
    struct replay r;
    if (replay_open(&r, o.what, &h, 1))
        return 1;
    if ((rc = replay_driver(&r, &h, &o)) != 0) {
        replay_close(&r);
        return rc;
    }
    belady_warning("replay", &h);
    r.progress = cli_progress_wanted(o.progress);
    struct tr t;
    FILE *rec;
    struct collect c;
    if (start(&t, &h, &o, &rec, &c, 0)) {
        replay_close(&r);
        return 1;
    }
    int failed = replay_run(&r, &t);
    int bad = outputs(&t, &o, &c);
    bad |= finish_record(&t, rec, o.record);
    if (!failed)
        fprintf(stderr, "vidmm replay: %" PRIu64 " calls re-executed, %" PRIu64 " results compared, %" PRIu64
                        " differ%s\n",
                r.executed, r.checked, r.mismatches,
                r.mismatches ? "" : r.foreign_driver ? " (the integrity results exact)" : " (exact replay)");
    if (r.foreign_driver)
        fprintf(stderr, "vidmm replay: on driver %s, a trace of another driver: %" PRIu64 " other results differ as "
                        "its outcomes (listed above, not compared); %" PRIu64 " calls it recorded NOT_APPLICABLE skipped\n",
                h.driver[0] ? h.driver : "softgpu", r.driver_outcomes, r.skipped_na);
    if (t.check_failures || t.adapter_check_failures)
        fprintf(stderr, "vidmm replay: integrity checks failed (%" PRIu64 " read-backs, %" PRIu64 " adapter checks)\n",
                t.check_failures, t.adapter_check_failures);
    rules_summary(&t);
    int result = failed || bad || r.mismatches || t.check_failures || t.adapter_check_failures || t.rules_violations
                     ? 1 : r.not_applicable ? 3 : 0;
    tr_close(&t);
    collect_free(&c);
    replay_close(&r);
    return result;
}

int cli_scenarios(void)
{
    for (const struct scenario *const *p = scenarios(); *p; p++)
        printf("%-8s %-5s %s\n", (*p)->name, (*p)->preset, (*p)->summary);
    return 0;
}
