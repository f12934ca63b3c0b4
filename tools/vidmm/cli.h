/*
 * cli.h - pieces shared by the vidmm tool's commands.
 */
#ifndef VIDMM_CLI_H
#define VIDMM_CLI_H

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include "drvcheck.h"
#include "plugin.h"

#include <getopt.h>
#include <stdio.h>

/* The output formats of the tool's tables (--format, docs/OUTPUTS.md). */
enum cli_format { CLI_FORMAT_TEXT, CLI_FORMAT_JSON, CLI_FORMAT_CSV };

struct cli_options {
    struct softgpu_config config;
    int json;
    const char *driver;          /* --driver NAME: a plug-in instead of softgpu (plugin.c) */
    enum cli_format format;      /* info: --json / --format */
    const char *socket;          /* info --socket PATH: the running vidmmd */
};

/* --format VALUE: text, json or csv.  0, or 2 after a usage error. */
int cli_parse_format(const char *verb, const char *value, enum cli_format *out);

struct cli_session {
    struct softgpu *gpu;
    struct vidmm_adapter *adapter;
    char error[256];
};

/* --segment ID=SIZE arguments as given, checked against the preset once
 * every option is read (--adapter may come after --segment). */
struct cli_adapter_args {
    const char *spec[16];
    unsigned long id[16];
    uint64_t size[16];
    uint32_t n;
};

/* Exit status of a usage error: "vidmm VERB: message" on stderr naming
 * the argument, its value and what is allowed, and where the options are
 * listed.  Returns 2. */
int cli_usage_error(const char *verb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* getopt_long over a verb's arguments (argv[2..]), GNU conventions:
 * --name=value, -ovalue, options and operands in any order, -- ends the
 * options.  Call cli_getopt_begin once, then cli_getopt until it returns
 * -1; operands are then argv[cli_operand_first(argc)..argc-1] (getopt
 * moved them to the end).  An unknown option or a missing value is a
 * usage error naming it: cli_getopt returns '?' and *rc is 2.  Long
 * options' codes are the short letter or a value >= 256. */
void cli_getopt_begin(void);
int cli_getopt(const char *verb, int argc, char **argv, const char *shorts, const struct option *longs, int *rc);
int cli_operand_first(void);
/* 0, or a usage error when a verb that takes no arguments got some. */
int cli_no_arguments(const char *verb, int argc, char **argv);
/* A byte count: decimal or 0x hex, optional K/M/G/T (binary) suffix with
 * optional "iB"/"B"; not zero.  0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);
/* Syntax of one --segment value (0, or 2 after a usage error). */
int cli_add_segment(const char *verb, struct cli_adapter_args *a, const char *spec);
/* 0 when preset names a softgpu preset, else 2 after a usage error that
 * lists them. */
int cli_check_preset(const char *verb, const char *preset);
/* The preset, then each --segment against the preset's driver segments
 * (ID in range, SIZE a multiple of the segment's page, at most 1 TiB);
 * fills size[ID].  0, 2 after a usage error, 1 if softgpu cannot be
 * created to ask. */
int cli_check_adapter(const char *verb, const char *preset, const struct cli_adapter_args *a,
                      uint64_t size[SOFTGPU_MAX_SEGMENTS + 1]);
/* info, demo, vamap: --adapter, --segment, --prefault (and --json for
 * info).  0, or 2 after a usage error. */
int cli_parse_adapter_options(const char *verb, int argc, char **argv, int first, struct cli_options *o);
/* Progress on stderr (a 40-column bar, redrawn in place when the
 * percentage changes): option -1 means "if stderr is a terminal", so a
 * pipe or a log file never receives carriage returns unasked. */
int cli_progress_wanted(int option);
void cli_progress(uint64_t done, uint64_t total, const char *unit, int *last_pct);
/* Erase the bar (if one was drawn); *last_pct becomes -1. */
void cli_progress_end(int *last_pct);
int cli_open(struct cli_options *o, struct cli_session *s);
void cli_close(struct cli_session *s);
void cli_format_size(uint64_t v, char *buf, size_t n);
/* Segment flag names joined by ',' ("-" when none). */
void cli_segment_flag_names(uint32_t f, char *buf, size_t n);
void cli_print_segments(const struct vidmm_adapter *a, FILE *f);
void cli_print_gpummu(const struct vidmm_adapter *a, FILE *f);
int cli_demo(int argc, char **argv);
/* The over-commitment scenario of the demo; returns the failure count. */
int cli_demo_overcommit(struct cli_session *s, uint32_t invis_segment);
/* Hangs, engine and adapter reset, standby and resume; returns the failure count. */
int cli_demo_recovery(struct cli_session *s);
int cli_vamap(int argc, char **argv);
/* run.c: vidmm run, vidmm replay, vidmm scenarios. */
int cli_run(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_scenarios(void);
/* gen.c: the scenario generator, its fuzzing loop and the shrinker. */
int cli_gen(int argc, char **argv);
int cli_fuzz_scenarios(int argc, char **argv);
int cli_shrink(int argc, char **argv);
/* plugin.c: a driver plug-in (vidmm_driver_entry) instead of softgpu,
 * loaded by support/plugin.c as vidmmd loads it.  "vkgpu" names the
 * Vulkan driver's plug-in; any other value is a path. */
struct cli_plugin {
    struct vidmm_plugin plugin;
    struct vidmm_adapter *adapter;
    char error[256];
};
int cli_plugin_info(const char *driver);
int cli_plugin_demo(const char *driver);
/* drvcheck.c: the driver conformance kit on softgpu or a plug-in driver. */
int cli_drvcheck(int argc, char **argv);
/* daemon_verbs.c: the running vidmmd (docs/DAEMON.md "Observing the daemon"). */
int cli_ps(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_info_daemon(const char *socket_path, enum cli_format format);

#endif
