/*
 * cli.h - pieces shared by the vidmm tool's commands.
 */
#ifndef VIDMM_CLI_H
#define VIDMM_CLI_H

#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <stdio.h>

struct cli_options {
    struct softgpu_config config;
    int json;
};

struct cli_session {
    struct softgpu *gpu;
    struct vidmm_adapter *adapter;
    char error[256];
};

int cli_parse_adapter_options(int argc, char **argv, int first, struct cli_options *o);
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
/* drvcheck.c: the driver conformance kit on softgpu or a plug-in driver. */
int cli_drvcheck(int argc, char **argv);

#endif
