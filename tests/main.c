/*
 * main.c - runs every suite listed in suites.def and prints the summary.
 * Usage: vidmm-tests [--seed N] [filter-substring]
 */
#include "harness/test.h"

#include <stdlib.h>
#include <string.h>

void t_set_filter(const char *f);
void t_set_seed(uint64_t s);
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
    printf("seed %" PRIu64 "\n", t_seed());
#define SUITE(name) suite_##name();
#include "suites.def"
#undef SUITE
    return t_summary();
}
