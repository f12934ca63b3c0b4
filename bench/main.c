/*
 * main.c - the vidmm benchmark program: runs every benchmark in turn.
 * Usage: vidmm-bench [--check] [--quick] [--cpu-time] [--b2-seeds N]
 *                    [--only A,B2,C,D,E,paging,pte,G,MR,share,policy,RP,S,TDR,NP]
 */
#include "bench.h"
#include "evict_bench.h"
#include "paging_bench.h"
#include "policy_bench.h"
#include "pte_bench.h"
#include "residency_bench.h"
#include "scale_bench.h"
#include "submit_bench.h"
#include "tdr_bench.h"
#include "policy_real_bench.h"
#include "va_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_options bench_opts;

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            bench_opts.check = 1;
        else if (!strcmp(argv[i], "--quick"))
            bench_opts.quick = 1;
        else if (!strcmp(argv[i], "--cpu-time"))
            bench_opts.cpu_time = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            bench_opts.only = argv[++i];
        else if (!strcmp(argv[i], "--b2-seeds") && i + 1 < argc && atoi(argv[i + 1]) > 0 && atoi(argv[i + 1]) <= 1000)
            bench_opts.b2_seeds = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--check] [--quick] [--cpu-time] [--b2-seeds N (1-1000)] "
                    "[--only A,B2,C,D,E,paging,pte,G,MR,share,policy,RP,S,TDR,NP]\n",
                    argv[0]);
            return 2;
        }
    }
    bench_alloc();
    bench_evict(); /* honours --only E itself */
    if (!bench_opts.only || strstr(bench_opts.only, "paging"))
        bench_paging();
    if (!bench_opts.only || strstr(bench_opts.only, "pte"))
        bench_pte();
    bench_va(); /* honours --only G / va itself */
    bench_residency(); /* --only MR */
    bench_share(); /* --only share */
    bench_policy_real(); /* --only RP */
    bench_policy(); /* honours --only policy itself */
    bench_submit(); /* --only S */
    bench_tdr(); /* --only TDR */
    bench_scale(); /* --only NP */
    if (bench_failures()) {
        fflush(stdout);
        fprintf(stderr, "bench: %d failure(s): a --check violation or a failed run (see above)\n", bench_failures());
        return 1;
    }
    return 0;
}
