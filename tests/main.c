/*
 * main.c - runs every suite listed in suites.def and prints the summary
 * ("unit: N passed, M failed"), a line per suite as it ends.
 * Usage: vidmm-tests [--seed N] [filter-substring]
 * A filter that no test name contains is an error (exit status 2).
 */
#include "harness/test.h"

#include <stdlib.h>
#include <string.h>

void t_set_filter(const char *f);
void t_set_seed(uint64_t s);
void t_set_label(const char *label);
void t_suite_begin(const char *name);
void t_suite_end(void);
int t_summary(void);

#define SUITE(name) void suite_##name(void);
#include "suites.def"
#undef SUITE

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            t_set_seed(strtoull(argv[++i], NULL, 0));
        else
            t_set_filter(argv[i]);
    }
    /* Line-buffered even into a pipe: make test shows progress. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    t_set_label("unit");
    printf("seed %" PRIu64 "\n", t_seed());
#define SUITE(name) t_suite_begin(#name); suite_##name(); t_suite_end();
#include "suites.def"
#undef SUITE
    return t_summary();
}
