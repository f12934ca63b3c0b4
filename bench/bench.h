/*
 * bench.h - shared declarations of the vidmm benchmark program.
 *
 * Each benchmark file exports one entry point, bench_<area>(void), which
 * main.c calls in turn.  Options parsed by main.c are in bench_opts (the
 * bench is a program, not the library, so a global is fine here).
 */
#ifndef VIDMM_BENCH_H
#define VIDMM_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct bench_options {
    int check;   /* --check: verify every result (range, alignment, overlap); slower */
    int quick;   /* --quick: fewer ops and runs, for smoke tests */
    const char *only; /* --only LIST: run only the named workloads, e.g. "A,D" */
    int cpu_time;     /* --cpu-time: bench_now_ns() reads the thread's CPU clock (a loaded host) */
    int b2_seeds;     /* --b2-seeds N: B2's churn seeds (0 = the default ten; at most 1000) */
};
extern struct bench_options bench_opts;

/* Workloads of the allocator benchmarks (struct bench_allocator.workloads). */
#define BENCH_W_A 0x1u
#define BENCH_W_B2 0x2u
#define BENCH_W_C 0x4u
#define BENCH_W_D 0x8u
#define BENCH_W_ALL 0xFu
/* A property, not a workload: an allocation may come back as several
 * extents (page sets, a buddy allocator's block list).  Such an adapter is
 * compared with vidmm's page pool only, and never reported on B2, whose
 * passes count contiguous blocks. */
#define BENCH_W_NONCONTIG 0x100u

/* Allocator adapter: every allocator under test is driven through this,
 * with identical pre-generated op traces. */
struct bench_allocator {
    const char *name;
    void *(*create)(uint64_t range, uint64_t min_chunk);
    void (*destroy)(void *);
    /* 0 on success, non-zero on failure (no room). */
    int (*alloc)(void *, uint64_t size, uint64_t align, int contiguous, uint64_t *offset,
                 uint64_t *cookie);
    void (*free)(void *, uint64_t cookie);
    /* Optional (NULL for contiguous allocators): report every extent of a
     * live allocation, so --check can verify page sets too. */
    void (*extents)(void *, uint64_t cookie, void (*fn)(void *ctx, uint64_t off, uint64_t size),
                    void *ctx);
    /* BENCH_W_* the adapter fits.  Last and optional, so adapters written
     * before it (positional initializers of six members) still compile and
     * get 0: the defaults of bench_fits(). */
    unsigned workloads;
};

/* Workload masks of a (BENCH_W_*).  workloads == 0 means "not declared":
 * every workload, contiguous, except for the few peers known by name
 * whose fixed glue cannot declare it (bench_util.c: gpu_buddy is
 * non-contiguous, VMA's LINEAR algorithm fits the FIFO ring D only). */
unsigned bench_fits(const struct bench_allocator *a);

/* ---- helpers (bench_util.c) ---- */

/* Monotonic time in nanoseconds. */
uint64_t bench_now_ns(void);
/* malloc, calloc (zeroed) and realloc that end the program with a message
 * when the host is out of memory; a size of 0 still gives a block. */
void *bench_xmalloc(size_t n);
void *bench_xcalloc(size_t n);
void *bench_xrealloc(void *p, size_t n);
/* qsort comparators (ascending). */
int bench_cmp_double(const void *a, const void *b);
int bench_cmp_u64(const void *a, const void *b);
/* Sort v[0..n) in place and return its median (the upper one for even n). */
double bench_median(double *v, int n);
/* Is workload name selected: no --only, or name is one of its
 * comma-separated entries (exactly). */
int bench_only(const char *name);
/* Count a failure (a --check violation, an allocation that must not have
 * failed): main() then exits with status 1, so `make bench` fails. */
void bench_fail(void);
int bench_failures(void);

void bench_alloc(void);

#endif
