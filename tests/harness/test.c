/*
 * test.c - runner state and summary for test.h.
 *
 * The counters are static here: the test runner is a program, not the
 * library, so the "no global state" rule of the core does not apply.
 */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_failures_in_case;
static int g_passed, g_failed;
static uint64_t g_seed;
static int g_seed_set;
static const char *g_filter;
static const char *g_label = "tests";
static const char *g_suite;
static int g_suite_passed, g_suite_failed;
static struct timespec g_suite_start;

void t_set_filter(const char *f);
void t_set_seed(uint64_t s);
void t_set_label(const char *label);
void t_suite_begin(const char *name);
void t_suite_end(void);
int t_summary(void);

void t_set_filter(const char *f) { g_filter = f; }
/* The word before the summary line ("unit: N passed, M failed"), so
 * every summary tests/run.sh sums says whose it is. */
void t_set_label(const char *label) { g_label = label; }

/* Progress while a long run is piped (make test): one line per suite that
 * ran a test, flushed at once.  Its wording ("N tests") is not the
 * summary's, so nothing sums it twice. */
void t_suite_begin(const char *name)
{
    g_suite = name;
    g_suite_passed = g_passed;
    g_suite_failed = g_failed;
    clock_gettime(CLOCK_MONOTONIC, &g_suite_start);
}

void t_suite_end(void)
{
    int ran = g_passed - g_suite_passed + g_failed - g_suite_failed;
    if (!g_suite || !ran)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double s = (double)(now.tv_sec - g_suite_start.tv_sec) + (double)(now.tv_nsec - g_suite_start.tv_nsec) / 1e9;
    printf("suite %s: %d tests, %d failing, %.1f s\n", g_suite, ran, g_failed - g_suite_failed, s);
    fflush(stdout);
    g_suite = NULL;
}
void t_set_seed(uint64_t s) { g_seed = s; g_seed_set = 1; }

void t_fail(const char *file, int line, const char *expr)
{
    if (g_failures_in_case < 10)
        fprintf(stderr, "  FAIL %s:%d: %s\n", file, line, expr);
    g_failures_in_case++;
}

int t_current_failures(void) { return g_failures_in_case; }

void t_run(const char *name, void (*fn)(void))
{
    if (g_filter && !strstr(name, g_filter))
        return;
    g_failures_in_case = 0;
    fn();
    if (g_failures_in_case) {
        g_failed++;
        fprintf(stderr, "FAILED %s (%d failed checks)\n", name, g_failures_in_case);
    } else {
        g_passed++;
        if (getenv("VIDMM_TEST_VERBOSE"))
            printf("ok %s\n", name);
    }
    fflush(stdout);   /* a piped run shows each result as it comes */
}

uint64_t t_seed(void)
{
    if (!g_seed_set) {
        const char *e = getenv("VIDMM_TEST_SEED");
        g_seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
        g_seed_set = 1;
    }
    return g_seed;
}

unsigned t_scale(void)
{
    const char *e = getenv("VIDMM_TEST_SCALE");
    unsigned s = e ? (unsigned)strtoul(e, NULL, 0) : 1;
    return s ? s : 1;
}

int t_no_big(void)
{
    const char *e = getenv("VIDMM_TEST_NO_BIG");
    return e && *e && *e != '0';
}

/* A filter that matches no test is a mistake (a typo in a suite name),
 * not a pass: rc 2 and the reason. */
int t_summary(void)
{
    printf("seed %" PRIu64 " (rerun with VIDMM_TEST_SEED=%" PRIu64 ")\n", t_seed(), t_seed());
    printf("%s: %d passed, %d failed\n", g_label, g_passed, g_failed);
    fflush(stdout);
    if (g_filter && g_passed + g_failed == 0) {
        fprintf(stderr, "%s: no test name contains '%s'\n", g_label, g_filter);
        return 2;
    }
    return g_failed ? 1 : 0;
}

/* Known defects: a check whose id is a line of tests/known_defects (or
 * the file VIDMM_KNOWN_DEFECTS names) is expected to fail until its
 * defect is fixed; the file's comment says which rule.  The shell tests
 * read the same file. */
int t_known_defect(const char *id)
{
    const char *path = getenv("VIDMM_KNOWN_DEFECTS");
    FILE *f = fopen(path && *path ? path : "tests/known_defects", "r");
    if (!f)
        return 0;
    char line[256];
    int found = 0;
    size_t n = strlen(id);
    while (!found && fgets(line, sizeof line, f))
        found = !strncmp(line, id, n) && (line[n] == '\0' || line[n] == '\n' || line[n] == ' ' || line[n] == '\t');
    fclose(f);
    return found;
}
