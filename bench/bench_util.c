/*
 * bench_util.c - the helpers every benchmark file uses (bench.h): the
 * clock, allocation that ends the program when the host is out of memory
 * (a benchmark has no way to go on without its tables), medians, and the
 * --only selection.  One copy, so the files time and summarise alike.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t bench_now_ns(void)
{
    /* --cpu-time: the thread's CPU clock, so time other jobs take on the
     * pinned core is not counted (their cache pollution still is). */
    struct timespec ts;
    clock_gettime(bench_opts.cpu_time ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *oom_check(void *p)
{
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    return p;
}

void *bench_xmalloc(size_t n)
{
    return oom_check(malloc(n ? n : 1));
}

void *bench_xcalloc(size_t n)
{
    return oom_check(calloc(1, n ? n : 1));
}

void *bench_xrealloc(void *p, size_t n)
{
    return oom_check(realloc(p, n));
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

int bench_only(const char *name)
{
    const char *p = bench_opts.only;
    size_t n = strlen(name);
    if (!p)
        return 1;
    while (p) {
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
            return 1;
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return 0;
}

unsigned bench_fits(const struct bench_allocator *a)
{
    /* The peer kit's glue is positional and predates the member; these
     * are the adapter names it uses for the two peers that do not fit
     * every workload. */
    static const struct {
        const char *name;
        unsigned w;
    } known[] = {
        { "gpu_buddy", BENCH_W_A | BENCH_W_C | BENCH_W_D | BENCH_W_NONCONTIG },
        { "vma_linear", BENCH_W_D },
    };
    if (a->workloads)
        return a->workloads;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(a->name, known[i].name))
            return known[i].w;
    return BENCH_W_ALL;
}

static int failures;

void bench_fail(void)
{
    failures++;
}

int bench_failures(void)
{
    return failures;
}
