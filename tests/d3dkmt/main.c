/*
 * main.c - the D3DKMT front end's conformance tests (a program of its
 * own: libvidmm-d3dkmt, libsoftgpu and libvidmm, no library internals).
 * Usage: vidmm-d3dkmt-tests [filter-substring]
 */
#include "harness/test.h"

#include <string.h>

void t_set_filter(const char *f);
int t_summary(void);
void suite_d3dkmt(void);

int main(int argc, char **argv)
{
    if (argc > 1)
        t_set_filter(argv[1]);
    suite_d3dkmt();
    return t_summary();
}
