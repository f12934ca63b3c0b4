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
};
extern struct bench_options bench_opts;

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
};

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

void bench_alloc(void);

#endif
