/*
 * test.h - the tiny test runner shared by every vidmm test.
 *
 * A test case is a void function; t_run() calls it and counts it passed
 * when no T_* check inside it failed.  Each suite file exports one
 * function, suite_<name>(), listed in tests/main.c.  The summary line at
 * the end reads "N passed, M failed".
 *
 * Randomised tests take their seed from t_seed(): it is printed once and
 * can be given back with VIDMM_TEST_SEED=<n> or "--seed <n>".
 */
#ifndef VIDMM_TEST_H
#define VIDMM_TEST_H

#include "splitmix.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

void t_fail(const char *file, int line, const char *expr);
void t_run(const char *name, void (*fn)(void));
uint64_t t_seed(void);
/* Scale factor for long randomised tests (VIDMM_TEST_SCALE, default 1). */
unsigned t_scale(void);
int t_current_failures(void);
/* VIDMM_TEST_NO_BIG=1: skip the 80 GiB "big" preset (valgrind cannot
 * reserve that much address space). */
int t_no_big(void);
/* 1 when id is listed in tests/known_defects (VIDMM_KNOWN_DEFECTS):
 * a check expected to fail until a known defect is fixed. */
int t_known_defect(const char *id);

#define T_CHECK(cond) \
    do { if (!(cond)) t_fail(__FILE__, __LINE__, #cond); } while (0)

#define T_EQ(a, b) \
    do { long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
         if (t_a_ != t_b_) { char t_m_[256]; \
             snprintf(t_m_, sizeof t_m_, "%s == %s (%lld != %lld)", #a, #b, t_a_, t_b_); \
             t_fail(__FILE__, __LINE__, t_m_); } } while (0)

#define T_EQ_U64(a, b) \
    do { uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b); \
         if (t_a_ != t_b_) { char t_m_[256]; \
             snprintf(t_m_, sizeof t_m_, "%s == %s (0x%" PRIx64 " != 0x%" PRIx64 ")", #a, #b, t_a_, t_b_); \
             t_fail(__FILE__, __LINE__, t_m_); } } while (0)

/* Status comparison printing names. */
#define T_ST(expr, want) \
    do { int t_s_ = (int)(expr), t_w_ = (int)(want); \
         if (t_s_ != t_w_) { char t_m_[256]; \
             snprintf(t_m_, sizeof t_m_, "%s -> %s, want %s", #expr, \
                      vidmm_status_str((vidmm_status)t_s_), vidmm_status_str((vidmm_status)t_w_)); \
             t_fail(__FILE__, __LINE__, t_m_); } } while (0)

/* Small deterministic PRNG (splitmix64) for randomised tests. */
static inline uint64_t t_rand(uint64_t *state)
{
    return splitmix64_next(state);
}
static inline uint64_t t_rand_range(uint64_t *state, uint64_t n) /* [0, n) */
{
    return n ? t_rand(state) % n : 0;
}

#endif
