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

void t_set_filter(const char *f);
void t_set_seed(uint64_t s);
int t_summary(void);

void t_set_filter(const char *f) { g_filter = f; }
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

int t_summary(void)
{
    printf("seed %" PRIu64 " (rerun with VIDMM_TEST_SEED=%" PRIu64 ")\n", t_seed(), t_seed());
    printf("%d passed, %d failed\n", g_passed, g_failed);
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
