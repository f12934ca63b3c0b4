/*
 * main.c - the vidmm command-line tool: the verb table (usage, help,
 * exit status), the adapter options, progress lines, and `vidmm info`.
 *
 *   vidmm VERB [options]        VERB: the verbs[] table below
 *   vidmm help [VERB] | vidmm VERB --help | vidmm --version
 *
 * The tool drives libvidmm on softgpu; it is a client of the public
 * headers only.  Exit status, for every verb (docs/vidmm.1, EXIT STATUS):
 * 0 success, 1 what was run failed, 2 usage error.  A usage error names
 * the argument, its value and what is allowed, so a script's author can
 * fix the command line without reading the source.
 */
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include "cli.h"
#include "scenario/scenario.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the verb table: help, usage errors, exit status ----------------- */

/* Which shared option blocks a verb's help prints. */
#define H_ADAPTER 1u                 /* --adapter, --segment */
#define H_RUN 2u                     /* --policy, --seed, --frames, --async */
#define H_OUTPUT 4u                  /* run and replay outputs, --rules */

struct verb {
    const char *name;
    const char *args;                /* after "vidmm NAME" in the usage line */
    const char *summary;             /* the line `vidmm --help` lists */
    const char *text;                /* what it does, and its own options */
    unsigned blocks;
    const char *fails;               /* what exit status 1 means for it */
    int (*run)(int argc, char **argv);
};

static int preset_segments(const char *preset, uint32_t *count, uint32_t page[SOFTGPU_MAX_SEGMENTS + 1]);
static int cmd_info(int argc, char **argv);
static int cmd_presets(int argc, char **argv);
static int cmd_scenarios(int argc, char **argv);
static int cmd_help(int argc, char **argv);

/* One entry per verb: `vidmm --help`, `vidmm help VERB`, `vidmm VERB
 * --help` and the dispatch all read it, so they cannot disagree; the
 * docs test compares the manual page's verbs with this list. */
static const struct verb verbs[] = {
    { "info", "[--adapter PRESET] [--segment ID=SIZE]... [--prefault] [--json | --format F] | --driver NAME | --socket PATH",
      "print the adapter's segments as the manager sees them",
      "Print the adapter's segments (id, kind, GPU base, size, page, CPU visibility,\n"
      "commit limit, committed, flags), the paging-buffer segment and the GpuMmu\n"
      "geometry, then run the adapter's structure check.\n"
      "  --prefault          touch all simulated video memory at start\n"
      "  --json              print JSON (format vidmm-info/1) instead of a table\n"
      "  --driver NAME       instead of softgpu: vkgpu (a Vulkan device, docs/VKGPU.md;\n"
      "                      VIDMM_VKGPU_DEVICE picks it) or a driver plug-in FILE.so\n"
      "  --format FORMAT     text (default), json, or csv (the segment table)\n"
      "  --socket PATH       instead: the running vidmmd at PATH - the daemon, its\n"
      "                      connections and requests, host memory, residency totals,\n"
      "                      limits, and its adapter's segments (committed, free);\n"
      "                      --json: vidmm-daemon-info/1, csv: its segment table\n",
      H_ADAPTER, "the adapter could not be opened, or its structure check failed; with --socket:\n"
      "         no daemon answers at PATH, or it refused (only its user or root may ask)", cmd_info },
    { "demo", "[--adapter dgpu|big] [--segment ID=SIZE]... [--prefault] | --driver NAME",
      "run the demonstration scenario and print what happened",
      "One allocation of every placement class, CPU patterns, moves between\n"
      "segments, a flip, three processes over-committing memory twice, then hangs,\n"
      "resets, standby and resume.  Runs on the dgpu (default) or big preset.\n"
      "  --prefault          touch all simulated video memory at start\n"
      "  --driver NAME       instead: three times the memory segments of vkgpu (a Vulkan\n"
      "                      device) or a driver plug-in FILE.so, every byte read back\n",
      H_ADAPTER, "a step of the demonstration failed or a read-back differed", cli_demo },
    { "vamap", "[--adapter dgpu|wddm1|big] [--segment ID=SIZE]... [--prefault]",
      "build two processes' GPU VA spaces (GpuMmu) and dump them",
      "Two processes' GPU virtual address spaces before and after a move.  Needs a\n"
      "GpuMmu preset (dgpu, wddm1, big; igpu has no GPU page tables).\n"
      "  --prefault          touch all simulated video memory at start\n",
      H_ADAPTER, "building the address spaces failed", cli_vamap },
    { "run", "SCENARIO|FILE [options]",
      "run a built-in scenario or a scenario file, print a report",
      "Run a built-in scenario (vidmm scenarios) or a scenario file (the trace\n"
      "format, results optional), then print the report.  Command-line options\n"
      "override the scenario's or file's header.\n"
      "  --driver NAME       a driver plug-in instead of softgpu: vkgpu (a Vulkan device,\n"
      "                      sized like the scenario's memory) or FILE.so; calls the tool cannot\n"
      "                      make there answer NOT_APPLICABLE, counted; exit status 3: the\n"
      "                      scenario as a whole is not applicable there (docs/VKGPU.md)\n"
      "  --options STR       the plug-in's options (vkgpu: gpummu=1, cap=SIZE, device=N|NAME)\n",
      H_ADAPTER | H_RUN | H_OUTPUT,
      "a call met an unexpected status, a read-back differed, a rule was violated,\n"
      "         the file is malformed (FILE:LINE), or an output could not be written",
      cli_run },
    { "replay", "TRACE [options]",
      "re-execute a recorded trace (or import an .rmv), check, print the report",
      "Re-execute every call of a trace on the adapter its header names and compare\n"
      "each result with the recorded one (differences on stderr); a trace that is\n"
      "cut short, changed or appended to is refused (its end record disagrees).\n"
      "An AMD Radeon Memory Visualizer file (.rmv) is imported instead.  The adapter\n"
      "comes from the trace: adapter options are refused.\n"
      "  --driver NAME       replay on softgpu, vkgpu or a plug-in FILE.so instead of the trace's\n"
      "                      driver; a trace of another driver is held exactly to its integrity\n"
      "                      checks only, the other results are listed as the driver's outcomes\n"
      "  --options STR       the plug-in's options instead of the trace's\n"
      "  --decode-only       (.rmv) read and check the whole file, print what it holds, replay nothing\n"
      "  --lenient           (.rmv) count the streams' anomalies instead of refusing the file\n"
      "  --local-scale N     (.rmv) divide the file's local heaps by N (1-64): the same trace on a smaller card\n"
      "  --policy NAME       (.rmv) eviction policy; belady is told each allocation's next use from the file;\n"
      "                      (trace) replay under NAME too: results that differ are listed as that\n"
      "                      policy's outcomes, and both policies' paging is compared (stderr); the\n"
      "                      report is NAME's run\n",
      H_OUTPUT,
      "a result differed, a read-back or rule failed, the trace is missing, unreadable\n"
      "         or malformed, or an output could not be written",
      cli_replay },
    { "scenarios", "", "list the built-in scenarios",
      "List the built-in scenarios of vidmm run: name, preset, what it does.\n", 0, NULL, cmd_scenarios },
    { "presets", "", "list the softgpu presets", "List softgpu's adapter presets, one a line.\n", 0, NULL,
      cmd_presets },
    { "gen", "[--seed N] [--calls K] [--adapter dgpu|wddm1]",
      "write a random multi-process scenario file",
      "Write a random multi-process scenario file to stdout; the seed goes to stderr.\n"
      "  --seed N            the generator's seed (default: the time); same seed, same file\n"
      "  --calls K           calls after the setup, 1-100000 (default 120)\n"
      "  --adapter PRESET    dgpu (64 KiB pages, default) or wddm1 (4 KiB pages)\n",
      0, "the output could not be written", cli_gen },
    { "fuzz-scenarios", "[--seconds S | --count N] [--seed N] [--calls K] [--adapter dgpu|wddm1] [--save DIR]",
      "run generated scenarios with the rules checker, shrink failures",
      "Generate and run the scenarios of seeds N, N+1, ... with the rules checker.\n"
      "  --seconds S         run for S seconds (default 10)\n"
      "  --count N           run N scenarios instead\n"
      "  --seed N            first seed (default: the time)\n"
      "  --calls K           calls per scenario, 1-100000 (default 120)\n"
      "  --adapter PRESET    dgpu (default) or wddm1\n"
      "  --save DIR          shrink the first failure of each kind into DIR/gen-SEED-RULE.scn\n",
      0, "a generated scenario failed, or DIR could not be created", cli_fuzz_scenarios },
    { "shrink", "FILE", "reduce a failing scenario file to a minimal one (stdout)",
      "Reduce a failing scenario file to a minimal one that fails the same way\n"
      "(delta debugging over lines) and write it to stdout.\n",
      0, "FILE cannot be read, or it does not fail (nothing to shrink)", cli_shrink },
    { "drvcheck", "[--driver FILE.so|vkgpu] [--options STR] [--groups LIST] [-v]",
      "run the driver conformance kit on softgpu or a driver plug-in",
      "Run the driver conformance kit (docs/WRITING_A_DRIVER.md) on softgpu, or on\n"
      "the driver a shared object's vidmm_driver_entry constructs.\n"
      "  --driver FILE.so    the driver plug-in (default: softgpu); vkgpu: the Vulkan\n"
      "                      driver's plug-in (docs/VKGPU.md)\n"
      "  --options STR       given to the driver's constructor (softgpu: preset=NAME)\n"
      "  --groups LIST       comma-separated: query, describe, restart, paging, fences,\n"
      "                      reset, vidmm (default: all)\n"
      "  -v, --verbose       list passing checks too\n",
      0, "a check failed (exit status 2 also when FILE.so cannot be loaded)", cli_drvcheck },
    { "ps", "[--socket PATH] [--json | --format F]", "list the processes connected to the running vidmmd",
      "One line per connection to vidmmd (each is one vidmm process): connection\n"
      "number, pid, uid, command name, allocations and their bytes, local usage and\n"
      "budget, non-local usage, evictions and restores of its allocations, requests.\n"
      "  --socket PATH       the daemon's socket (default: $VIDMMD_SOCKET, else the first\n"
      "                      of $XDG_RUNTIME_DIR/vidmmd.sock, /tmp/vidmmd-UID.sock and\n"
      "                      /run/vidmmd/vidmmd.sock (the system service's) that exists)\n"
      "  --json              JSON (format vidmm-ps/1, docs/OUTPUTS.md)\n"
      "  --format FORMAT     text (default), json or csv (one row per connection)\n",
      0, "no daemon answers at PATH, or it refused (only its user or root may ask)", cli_ps },
    { "top", "[--socket PATH] [--interval S] [-n COUNT | --once] [--json | --format F]",
      "live view of vidmmd: per-process usage against budget, paging rates",
      "Refresh every S seconds: the daemon's totals, paging rates (evictions and\n"
      "restores per second, MiB/s), each segment's commitment, and per process its\n"
      "allocated bytes, local usage against its budget, non-local usage, evictions,\n"
      "restores and requests per second.  On a terminal the screen is redrawn (ANSI);\n"
      "otherwise frames follow one another, separated by a blank line.\n"
      "  --socket PATH       the daemon's socket (default as for vidmm ps)\n"
      "  --interval S        seconds between refreshes, 0.05-3600 (default 1)\n"
      "  -n, --count COUNT   stop after COUNT refreshes (default: until interrupted)\n"
      "  --once              one refresh (rates since the daemon started), for scripts\n"
      "  --json              a JSON object a line per refresh (format vidmm-top/1)\n"
      "  --format FORMAT     text (default), json, or csv (a row per process per refresh)\n",
      0, "no daemon answers at PATH, or it refused (only its user or root may ask)", cli_top },
    { "help", "[VERB]", "this list, or one verb's usage, options and exit status",
      "Print the list of verbs, or VERB's usage, options and exit status\n"
      "(the same as vidmm VERB --help).\n", 0, NULL, cmd_help },
};
#define NVERBS (sizeof verbs / sizeof verbs[0])

static const struct verb *verb_find(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (!strcmp(verbs[i].name, name))
            return &verbs[i];
    return NULL;
}

/* "a, b or c" from a NULL-terminated list. */
static void print_list(FILE *f, const char *const *names, const char *last_sep)
{
    for (size_t i = 0; names[i]; i++)
        fprintf(f, "%s%s", i == 0 ? "" : names[i + 1] ? ", " : last_sep, names[i]);
}

static void policy_list(FILE *f)
{
    const struct vidmm_eviction_policy *const *p = vidmm_policies();
    for (size_t i = 0; p[i]; i++)
        fprintf(f, "%s%s", i == 0 ? "" : p[i + 1] ? ", " : " or ", p[i]->name);
}

static void exit_status_help(FILE *f, const struct verb *v)
{
    fprintf(f, "exit status:\n  0      success\n");
    if (v && v->fails)
        fprintf(f, "  1      %s\n", v->fails);
    else if (!v)
        fprintf(f, "  1      what was run failed (see vidmm help VERB)\n");
    fprintf(f, "  2      usage error: unknown verb or option, missing or bad value (the message\n"
               "         names the argument, its value and what is allowed)\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vidmm VERB [options]\n       vidmm help VERB | vidmm VERB --help\n\nverbs:\n");
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(f, "  %-16s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "  --version        print the version\n\n");
    exit_status_help(f, NULL);
    fprintf(f, "\nThe manual: man ./docs/vidmm.1\n");
}

static void verb_help(FILE *f, const struct verb *v)
{
    fprintf(f, "usage: vidmm %s%s%s\n\n%s", v->name, v->args[0] ? " " : "", v->args, v->text);
    if (v->blocks & H_ADAPTER) {
        fprintf(f, "\nadapter options:\n  --adapter PRESET    softgpu preset: ");
        print_list(f, softgpu_preset_names(), " or ");
        fprintf(f, " (default dgpu)\n"
                   "  --segment ID=SIZE   resize driver segment ID, SIZE a multiple of its page, with\n"
                   "                      K, M, G or T (binary): 512M, 8G; IDs per preset:");
        /* From the driver's own segment query, so the help cannot drift
         * from softgpu. */
        for (const char *const *p = softgpu_preset_names(); *p; p++) {
            uint32_t count = 0, page[SOFTGPU_MAX_SEGMENTS + 1];
            if (!preset_segments(*p, &count, page))
                fprintf(f, "%s %s 1-%u", p == softgpu_preset_names() ? "" : ",", *p, count);
        }
        fputc('\n', f);
    }
    if (v->blocks & H_RUN) {
        fprintf(f, "\nrun options:\n  --policy NAME       eviction policy: ");
        policy_list(f);
        fprintf(f, " (default lru);\n"
                   "                      belady needs next-use hints, which neither scenarios nor\n"
                   "                      trace files give: it warns and evicts as lru does\n"
                   "  --seed N            the scenario's random seed (default 1)\n"
                   "  --frames N          frames (compute: passes), 1-100000 (default: the scenario's)\n"
                   "  --async             paging on softgpu's engine thread (not reproducible)\n"
                   "  --fail-driver OP:K[:once|sticky]  (run) the driver refuses OP (build_paging_buffer,\n"
                   "                      submit_command, ...) at its K-th call, once or from then on (K 0:\n"
                   "                      count its calls); the end state is judged, not the statuses\n"
                   "  --progress, --no-progress   progress on stderr (default: if it is a terminal)\n"
                   "scenarios:");
        for (const struct scenario *const *p = scenarios(); *p; p++)
            fprintf(f, " %s", (*p)->name);
        fputc('\n', f);
    }
    if (v->blocks & H_OUTPUT) {
        fprintf(f, "\noutputs:\n"
                   "  --record FILE       write every call to FILE (docs/TRACE_FORMAT.md)\n"
                   "  --format FORMAT     the report's format: text (default), json or csv\n"
                   "  --json              the same as --format json\n"
                   "  -o, --output FILE   write the report to FILE instead of stdout\n"
                   "  --snapshot FILE     GpuMemDump JSON statistics after the last call\n"
                   "  --fdinfo FILE       every live process's DRM fdinfo text after the last call\n"
                   "  --memmap FILE       SVG memory map after the last call, each segment at its own scale\n"
                   "  --timeline FILE     Chrome trace event JSON (Perfetto, chrome://tracing)\n"
                   "  --html FILE         HTML report with SVG charts (opens from a file)\n"
                   "  --rules, --no-rules the WDDM rules checker after every call (default on;\n"
                   "                      the first violation fails the run)\n");
        if (!(v->blocks & H_RUN))
            fprintf(f, "  --progress, --no-progress   progress on stderr (default: if it is a terminal)\n");
    }
    fputc('\n', f);
    exit_status_help(f, v);
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    if (argc > 3)
        return cli_usage_error("help", "one verb at a time, not '%s' too", argv[3]);
    const struct verb *v = verb_find(!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h") ? "help" : argv[2]);
    if (!v) {
        fprintf(stderr, "vidmm help: no verb '%s' (", argv[2]);
        for (size_t i = 0; i < NVERBS; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", verbs[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    verb_help(stdout, v);
    return 0;
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "vidmm %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(vidmm help %s lists the options)\n", verb);
    return 2;
}

void cli_getopt_begin(void)
{
    optind = 0;   /* glibc: a full re-initialisation (permutation state too) */
    opterr = 0;   /* the tool's own messages (cli_usage_error) */
}

int cli_getopt(const char *verb, int argc, char **argv, const char *shorts, const struct option *longs, int *rc)
{
    /* argv[1] (the verb) plays getopt's program name: it sees argv[1..]. */
    char sh[64];
    snprintf(sh, sizeof sh, ":%s", shorts);   /* ':' first: a missing value is told apart from an unknown option */
    int c = getopt_long(argc - 1, argv + 1, sh, longs, NULL);
    if (c != '?' && c != ':')
        return c;
    const char *opt = argv[optind];   /* argv + 1 is getopt's; optind - 1 there is argv[optind] here */
    char name[64];
    if (optopt && optopt < 256 && !(opt && opt[0] == '-' && opt[1] == '-'))
        snprintf(name, sizeof name, "-%c", optopt);
    else if (optopt >= 256 || (opt && opt[0] == '-'))
        snprintf(name, sizeof name, "%.*s", (int)(opt && strchr(opt, '=') ? strchr(opt, '=') - opt : 60), opt ? opt : "?");
    else
        snprintf(name, sizeof name, "?");
    if (c == ':')
        *rc = cli_usage_error(verb, "%s needs a value", name);
    else if (optopt && opt && opt[0] == '-' && opt[1] == '-' && strchr(opt, '='))   /* a known option given a value */
        *rc = cli_usage_error(verb, "%s takes no value ('%s')", name, opt);
    else
        *rc = cli_usage_error(verb, "unknown option '%s'", name);
    return '?';
}

int cli_parse_format(const char *verb, const char *value, enum cli_format *out)
{
    if (!strcmp(value, "text"))
        *out = CLI_FORMAT_TEXT;
    else if (!strcmp(value, "json"))
        *out = CLI_FORMAT_JSON;
    else if (!strcmp(value, "csv"))
        *out = CLI_FORMAT_CSV;
    else
        return cli_usage_error(verb, "--format %s: no such format (text, json or csv)", value);
    return 0;
}

int cli_operand_first(void)
{
    return optind + 1;   /* getopt's index into argv + 1 */
}

int cli_no_arguments(const char *verb, int argc, char **argv)
{
    if (argc > 2)
        return cli_usage_error(verb, "takes no arguments, not '%s'", argv[2]);
    return 0;
}

/* ---- adapter options ---------------------------------------------------- */

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno)
        return -1;
    uint64_t mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end || end == s || v == 0 || v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

int cli_add_segment(const char *verb, struct cli_adapter_args *a, const char *spec)
{
    char *eq;
    if (spec[0] < '0' || spec[0] > '9')
        return cli_usage_error(verb, "--segment %s: want ID=SIZE (ID a driver segment number, SIZE like 512M)",
                               spec);
    errno = 0;
    unsigned long id = strtoul(spec, &eq, 10);
    uint64_t size;
    if (errno || *eq != '=')
        return cli_usage_error(verb, "--segment %s: want ID=SIZE (ID a driver segment number, SIZE like 512M)",
                               spec);
    if (cli_parse_size(eq + 1, &size))
        return cli_usage_error(verb, "--segment %s: size '%s' is not a size (a positive number with K, M, G "
                                     "or T: 512M, 8G)", spec, eq + 1);
    if (a->n == sizeof a->spec / sizeof a->spec[0])
        return cli_usage_error(verb, "--segment %s: at most %zu --segment options", spec,
                               sizeof a->spec / sizeof a->spec[0]);
    a->spec[a->n] = spec;
    a->id[a->n] = id;
    a->size[a->n] = size;
    a->n++;
    return 0;
}

/* The preset's driver segments, from the driver's own segment query (no
 * adapter is opened): how many, and each one's page size. */
static int preset_segments(const char *preset, uint32_t *count, uint32_t page[SOFTGPU_MAX_SEGMENTS + 1])
{
    struct softgpu_config c;
    memset(&c, 0, sizeof c);
    c.preset = preset;
    c.synchronous = 1;
    struct softgpu *g;
    if (softgpu_create(&c, &g) < 0)
        return -1;
    const struct vidmm_driver_ops *ops = softgpu_driver_ops();
    struct vidmm_query_segment_out qo;
    struct vidmm_segment_descriptor d[SOFTGPU_MAX_SEGMENTS];
    memset(&qo, 0, sizeof qo);
    struct vidmm_query_adapter_info_args q = { VIDMM_QAI_QUERYSEGMENT, NULL, 0, &qo, sizeof qo };
    int bad = ops->query_adapter_info(g, &q) < 0 || qo.nb_segment > SOFTGPU_MAX_SEGMENTS;
    if (!bad) {
        qo.segment_descriptor = d;
        qo.segment_descriptor_stride = sizeof d[0];
        bad = ops->query_adapter_info(g, &q) < 0;
    }
    if (!bad) {
        *count = qo.nb_segment;
        for (uint32_t i = 0; i < qo.nb_segment; i++)
            page[i + 1] = d[i].page_size ? d[i].page_size
                                         : (d[i].flags & VIDMM_SEGMENT_USE_64KB_PAGES) ? 65536u : 4096u;
    }
    softgpu_destroy(g);
    return bad ? -1 : 0;
}

int cli_check_preset(const char *verb, const char *preset)
{
    for (const char *const *p = softgpu_preset_names(); *p; p++)
        if (!strcmp(*p, preset))
            return 0;
    fprintf(stderr, "vidmm %s: --adapter %s: no such softgpu preset (", verb, preset);
    print_list(stderr, softgpu_preset_names(), " or ");
    fprintf(stderr, ")\n(vidmm help %s lists the options)\n", verb);
    return 2;
}

int cli_check_adapter(const char *verb, const char *preset, const struct cli_adapter_args *a,
                      uint64_t size[SOFTGPU_MAX_SEGMENTS + 1])
{
    int rc = cli_check_preset(verb, preset);
    if (rc || !a->n)
        return rc;
    uint32_t count = 0, page[SOFTGPU_MAX_SEGMENTS + 1] = { 0 };
    if (preset_segments(preset, &count, page)) {
        fprintf(stderr, "vidmm %s: cannot create softgpu '%s' to check --segment\n", verb, preset);
        return 1;
    }
    for (uint32_t k = 0; k < a->n; k++) {
        unsigned long id = a->id[k];
        char ps[32];
        if (id == 0)
            return cli_usage_error(verb, "--segment %s: segment 0 is system memory, not a driver segment "
                                         "(%s: 1-%u)", a->spec[k], preset, count);
        if (id > count)
            return cli_usage_error(verb, "--segment %s: no driver segment %lu (%s: 1-%u)", a->spec[k], id, preset,
                                   count);
        cli_format_size(page[id], ps, sizeof ps);
        if (a->size[k] % page[id])
            return cli_usage_error(verb, "--segment %s: not a multiple of segment %lu's %s page", a->spec[k], id, ps);
        if (a->size[k] > (1ull << 40))
            return cli_usage_error(verb, "--segment %s: softgpu segments are at most 1 TiB", a->spec[k]);
        size[id] = a->size[k];
    }
    return 0;
}

int cli_parse_adapter_options(const char *verb, int argc, char **argv, int first, struct cli_options *o)
{
    struct cli_adapter_args seg;
    memset(o, 0, sizeof(*o));
    memset(&seg, 0, sizeof seg);
    o->config.preset = "dgpu";
    int rc = 0, info = !strcmp(verb, "info");
    enum { O_ADAPTER = 256, O_SEGMENT, O_PREFAULT, O_DRIVER, O_JSON, O_FORMAT, O_SOCKET };
    /* info alone takes --json, --format and --socket; every verb but vamap
     * takes --driver (a plug-in instead of softgpu, plugin.c). */
    static const struct option all[] = {
        { "adapter", required_argument, NULL, O_ADAPTER }, { "segment", required_argument, NULL, O_SEGMENT },
        { "prefault", no_argument, NULL, O_PREFAULT },     { "driver", required_argument, NULL, O_DRIVER },
        { "json", no_argument, NULL, O_JSON },
        { "format", required_argument, NULL, O_FORMAT },   { "socket", required_argument, NULL, O_SOCKET },
        { NULL, 0, NULL, 0 },
    };
    struct option longs[sizeof all / sizeof all[0]];
    size_t n = 0;
    for (size_t k = 0; all[k].name; k++)
        if (info || all[k].val < O_DRIVER || (all[k].val == O_DRIVER && strcmp(verb, "vamap")))
            longs[n++] = all[k];
    memset(&longs[n], 0, sizeof longs[n]);
    (void)first;
    cli_getopt_begin();
    for (int c; (c = cli_getopt(verb, argc, argv, "", longs, &rc)) != -1;) {
        switch (c) {
        case O_ADAPTER: o->config.preset = optarg; break;
        case O_SEGMENT:
            if ((rc = cli_add_segment(verb, &seg, optarg)) != 0)
                return rc;
            break;
        case O_PREFAULT: o->config.prefault = 1; break;
        case O_DRIVER: o->driver = optarg; break;
        case O_JSON: o->format = CLI_FORMAT_JSON; break;
        case O_FORMAT:
            if ((rc = cli_parse_format(verb, optarg, &o->format)) != 0)
                return rc;
            break;
        case O_SOCKET: o->socket = optarg; break;
        default: return rc;
        }
    }
    int op = cli_operand_first();
    if (op < argc)
        return cli_usage_error(verb, "unknown argument '%s'", argv[op]);
    o->json = o->format == CLI_FORMAT_JSON;
    if (o->socket)   /* the daemon's adapter is its own */
        return o->config.prefault || seg.n || strcmp(o->config.preset, "dgpu")
                   ? cli_usage_error(verb, "--socket: adapter options do not apply (the daemon's adapter is its own)")
                   : 0;
    return cli_check_adapter(verb, o->config.preset, &seg, o->config.segment_size);
}

/* ---- progress --------------------------------------------------------- */

int cli_progress_wanted(int option)
{
    return option < 0 ? isatty(2) : option;
}

void cli_progress(uint64_t done, uint64_t total, const char *unit, int *last_pct)
{
    if (!total)
        return;
    int pct = (int)(done >= total ? 100 : done * 100 / total);
    if (pct == *last_pct)
        return;
    *last_pct = pct;
    char bar[41];
    for (int i = 0; i < 40; i++)
        bar[i] = i < pct * 40 / 100 ? '#' : '.';
    bar[40] = '\0';
    fprintf(stderr, "\r[%s] %3d%% %s %" PRIu64 "/%" PRIu64, bar, pct, unit, done, total);
    fflush(stderr);
}

void cli_progress_end(int *last_pct)
{
    if (*last_pct >= 0)
        fprintf(stderr, "\r%*s\r", 72, "");
    *last_pct = -1;
}

int cli_open(struct cli_options *o, struct cli_session *s)
{
    memset(s, 0, sizeof(*s));
    vidmm_status st = softgpu_create(&o->config, &s->gpu);
    if (st < 0) {
        fprintf(stderr, "vidmm: cannot create softgpu '%s': %s\n", o->config.preset, vidmm_status_str(st));
        return 1;
    }
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof(ci));
    softgpu_fill_adapter_create_info(s->gpu, &ci);
    ci.error_message = s->error;
    ci.error_message_size = sizeof(s->error);
    st = vidmm_adapter_open(&ci, &s->adapter);
    if (st < 0) {
        fprintf(stderr, "vidmm: adapter open failed: %s: %s\n", vidmm_status_str(st), s->error);
        softgpu_destroy(s->gpu);
        return 1;
    }
    return 0;
}

void cli_close(struct cli_session *s)
{
    vidmm_adapter_close(s->adapter);
    softgpu_destroy(s->gpu);
}

void cli_format_size(uint64_t v, char *buf, size_t n)
{
    static const char *const unit[] = { "GiB", "MiB", "KiB" };
    for (int i = 0; i < 3; i++) {
        uint64_t u = 1ull << (30 - 10 * i);
        if (v < u)
            continue;
        if (v % u == 0)
            snprintf(buf, n, "%llu %s", (unsigned long long)(v / u), unit[i]);
        else
            snprintf(buf, n, "%.1f %s", (double)v / (double)u, unit[i]);
        return;
    }
    snprintf(buf, n, "%llu B", (unsigned long long)v);
}

void cli_segment_flag_names(uint32_t f, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *name = (f & bit) ? vidmm_segment_flag_name(bit) : NULL;
        if (!name)
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? "," : "", name);
        if (k < 0 || (size_t)k >= n - used)
            break;
        used += (size_t)k;
    }
    if (!used)
        snprintf(buf, n, "-");
}

void cli_print_segments(const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    fprintf(f, "%-3s %-9s %-14s %-10s %-6s %-7s %-10s %-10s %s\n", "id", "kind", "base", "size", "page", "cpu",
            "commit", "committed", "flags");
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        char size[32], page[32], limit[32], used[32], flags[512], cpu[16];
        cli_format_size(si.size, size, sizeof size);
        cli_format_size(si.page_size, page, sizeof page);
        cli_format_size(si.commit_limit, limit, sizeof limit);
        cli_format_size(si.committed, used, sizeof used);
        cli_segment_flag_names(si.flags, flags, sizeof flags);
        if (si.cpu_host_aperture)
            snprintf(cpu, sizeof cpu, "host-ap");
        else
            snprintf(cpu, sizeof cpu, "%s", si.cpu_visible ? "yes" : "no");
        fprintf(f, "%-3u %-9s 0x%012llx %-10s %-6s %-7s %-10s %-10s %s", id, vidmm_segment_kind_str(si.kind),
                (unsigned long long)si.base_address, size, page, cpu, limit, used, id == 0 ? "(implicit)" : flags);
        if (si.cpu_host_aperture) {
            char hs[32];
            cli_format_size((uint64_t)si.host_aperture_pages * si.page_size, hs, sizeof hs);
            fprintf(f, " host-aperture=%s", hs);
        }
        fputc('\n', f);
    }
    fprintf(f, "paging buffers: segment %u (%s), %u bytes each\n", ai.paging_buffer_segment_id,
            ai.paging_buffer_segment_id ? "aperture" : "system memory", ai.paging_buffer_size);
    fprintf(f, "aperture segment: %u%s", ai.aperture_segment_id, ai.agp_segment_id ? "" : "\n");
    if (ai.agp_segment_id)
        fprintf(f, ", AGP segment: %u\n", ai.agp_segment_id);
}

/* Machine-readable form of `vidmm info`; "format" carries a version so
 * consumers can tell layouts apart. */
static void print_info_json(const char *preset, const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    fprintf(f, "{\n  \"format\": \"vidmm-info/1\",\n  \"vidmm_version\": \"%s\",\n", VIDMM_VERSION_STRING);
    fprintf(f, "  \"adapter\": {\"preset\": \"%s\", \"wddm_version\": \"0x%x\", \"gpummu\": %s, \"iommu\": %s, "
               "\"move_paging\": %s,\n    \"aperture_segment_id\": %u, \"agp_segment_id\": %u, "
               "\"paging_buffer_segment_id\": %u, \"paging_buffer_size\": %u},\n",
            preset, ai.wddm_version, (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? "true" : "false",
            (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? "true" : "false",
            (ai.physical_adapter_flags & VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED) ? "true" : "false",
            ai.aperture_segment_id, ai.agp_segment_id, ai.paging_buffer_segment_id, ai.paging_buffer_size);
    fprintf(f, "  \"segments\": [\n");
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        fprintf(f,
                "    {\"id\": %u, \"kind\": \"%s\", \"base_address\": %llu, \"size\": %llu, \"page_size\": %u, "
                "\"cpu_visible\": %s, \"cpu_host_aperture_bytes\": %llu, \"flags\": %u, \"commit_limit\": %llu, "
                "\"committed\": %llu, \"free\": %llu, \"largest_free\": %llu}%s\n",
                id, vidmm_segment_kind_str(si.kind), (unsigned long long)si.base_address,
                (unsigned long long)si.size, si.page_size, si.cpu_visible ? "true" : "false",
                (unsigned long long)si.host_aperture_pages * si.page_size, si.flags,
                (unsigned long long)si.commit_limit, (unsigned long long)si.committed,
                (unsigned long long)si.free_bytes, (unsigned long long)si.largest_free,
                id + 1 < ai.segment_count ? "," : "");
    }
    fprintf(f, "  ],\n  \"gpummu\": ");
    struct vidmm_gpummu_info g;
    if (vidmm_adapter_query_gpummu(a, &g) < 0) {
        fprintf(f, "null\n}\n");
        return;
    }
    fprintf(f, "{\"va_bits\": %u, \"update_mode\": %u, \"flags\": %u, \"leaf_64k_table_bytes\": %u, \"levels\": [",
            g.caps.virtual_address_bit_count, g.caps.page_table_update_mode, g.caps.flags,
            g.caps.leaf_page_table_size_for_64k_pages_in_bytes);
    for (uint32_t l = 0; l < g.level_count; l++)
        fprintf(f, "%s{\"level\": %u, \"index_bits\": %u, \"table_bytes\": %llu, \"segment\": %u, \"span\": %llu}",
                l ? ", " : "", l, g.level[l].page_table_index_bit_count,
                (unsigned long long)g.level[l].page_table_size_in_bytes, g.level[l].page_table_segment_id,
                (unsigned long long)g.leaf_span[l]);
    fprintf(f, "]}\n}\n");
}

/* The segment table as CSV, the JSON's segment fields as columns. */
static void print_info_csv(const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(a, &ai);
    fprintf(f, "id,kind,base_address,size,page_size,cpu_visible,cpu_host_aperture_bytes,flags,commit_limit,"
               "committed,free,largest_free\n");
    for (uint32_t id = 0; id < ai.segment_count; id++) {
        struct vidmm_segment_info si;
        vidmm_segment_query(a, id, &si);
        fprintf(f, "%u,%s,%llu,%llu,%u,%d,%llu,%u,%llu,%llu,%llu,%llu\n", id, vidmm_segment_kind_str(si.kind),
                (unsigned long long)si.base_address, (unsigned long long)si.size, si.page_size, si.cpu_visible ? 1 : 0,
                (unsigned long long)si.host_aperture_pages * si.page_size, si.flags,
                (unsigned long long)si.commit_limit, (unsigned long long)si.committed,
                (unsigned long long)si.free_bytes, (unsigned long long)si.largest_free);
    }
}

void cli_print_gpummu(const struct vidmm_adapter *a, FILE *f)
{
    struct vidmm_gpummu_info g;
    if (vidmm_adapter_query_gpummu(a, &g) < 0) {
        fprintf(f, "GpuMmu: not used by this adapter\n");
        return;
    }
    static const char *const mode[] = { "CPU_VIRTUAL", "GPU_VIRTUAL", "GPU_PHYSICAL" };
    char leaf64[32];
    cli_format_size(g.caps.leaf_page_table_size_for_64k_pages_in_bytes, leaf64, sizeof leaf64);
    fprintf(f, "GpuMmu: %u-bit GPU VA, %u page-table levels, updates %s, 64 KB-page leaf tables %s, flags 0x%x\n",
            g.caps.virtual_address_bit_count, g.level_count,
            g.caps.page_table_update_mode < 3 ? mode[g.caps.page_table_update_mode] : "?", leaf64, g.caps.flags);
    for (uint32_t l = g.level_count; l-- > 0;) {
        char size[32], span[32];
        cli_format_size(g.level[l].page_table_size_in_bytes, size, sizeof size);
        cli_format_size(g.leaf_span[l], span, sizeof span);
        fprintf(f, "  level %u%-7s %2u index bits, %-8s tables in segment %u, one table maps %s\n", l,
                l == 0 ? " (leaf)" : l + 1 == g.level_count ? " (root)" : "", g.level[l].page_table_index_bit_count,
                size, g.level[l].page_table_segment_id, span);
    }
}

static int cmd_info(int argc, char **argv)
{
    struct cli_options o;
    int rc = cli_parse_adapter_options("info", argc, argv, 2, &o);
    if (rc)
        return rc;
    if (o.driver)
        return cli_plugin_info(o.driver);
    if (o.socket)
        return cli_info_daemon(o.socket, o.format);

    struct cli_session s;
    if (cli_open(&o, &s))
        return 1;
    struct vidmm_adapter_info ai;
    vidmm_adapter_query_info(s.adapter, &ai);
    if (o.format == CLI_FORMAT_CSV) {   /* the segment table */
        print_info_csv(s.adapter, stdout);
        int bad = vidmm_adapter_check(s.adapter, NULL, 0);
        cli_close(&s);
        return bad ? 1 : 0;
    }
    if (o.json) {
        print_info_json(o.config.preset, s.adapter, stdout);
        int bad = vidmm_adapter_check(s.adapter, NULL, 0);
        cli_close(&s);
        return bad ? 1 : 0;
    }
    printf("adapter: softgpu preset '%s', WDDM %x.%x, caps:%s%s%s%s\n", o.config.preset, ai.wddm_version >> 12,
           (ai.wddm_version >> 8) & 0xF, (ai.memory_management_caps & VIDMM_CAPS_GPUMMU) ? " GpuMmu" : "",
           (ai.memory_management_caps & VIDMM_CAPS_IOMMU) ? " IoMmu" : "",
           (ai.physical_adapter_flags & VIDMM_ADAPTER_MOVE_PAGING_SUPPORTED) ? " MovePaging" : "",
           ai.memory_management_caps ? "" : " none");
    cli_print_segments(s.adapter, stdout);
    cli_print_gpummu(s.adapter, stdout);
    int errors = vidmm_adapter_check(s.adapter, NULL, 0);
    cli_close(&s);
    return errors ? 1 : 0;
}

static int cmd_presets(int argc, char **argv)
{
    int rc = cli_no_arguments("presets", argc, argv);
    if (rc)
        return rc;
    for (const char *const *p = softgpu_preset_names(); *p; p++)
        printf("%s\n", *p);
    return 0;
}

static int cmd_scenarios(int argc, char **argv)
{
    int rc = cli_no_arguments("scenarios", argc, argv);
    return rc ? rc : cli_scenarios();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("vidmm %s\n", VIDMM_VERSION_STRING);
        return 0;
    }
    const struct verb *v = verb_find(cmd);
    if (!v) {
        fprintf(stderr, "vidmm: no verb '%s' (", cmd);
        for (size_t i = 0; i < NVERBS; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", verbs[i].name);
        fprintf(stderr, "; vidmm help VERB tells more)\n");
        return 2;
    }
    /* --help anywhere after the verb: `vidmm run desktop --help` is how
     * one asks while writing a command line. */
    if (v->run != cmd_help)
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                verb_help(stdout, v);
                return 0;
            }
    return v->run(argc, argv);
}
