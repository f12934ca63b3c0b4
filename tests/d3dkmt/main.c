/*
 * main.c - the D3DKMT front end's conformance tests (a program of its
 * own: libvidmm-d3dkmt, libsoftgpu and libvidmm, no library internals).
 * Usage: vidmm-d3dkmt-tests [--remote SOCKET] [filter-substring]
 * --remote: every adapter is vidmmd's at SOCKET, through the remote
 * backend (tests/daemon/run.sh runs it so).
 */
#include "harness/test.h"

#include <string.h>

void t_set_filter(const char *f);
void t_set_label(const char *label);
int t_summary(void);
void suite_d3dkmt(void);
void d3dkmt_test_set_remote(const char *socket_path);

int main(int argc, char **argv)
{
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "--remote") == 0) {
        d3dkmt_test_set_remote(argv[2]);
        i = 3;
    }
    if (argc > i)
        t_set_filter(argv[i]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    t_set_label("d3dkmt");
    suite_d3dkmt();
    return t_summary();
}
