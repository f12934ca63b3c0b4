/*
 * status_test.c - every status has a distinct name.
 */
#include "harness/test.h"
#include "vidmm/status.h"

#include <string.h>

static void names_distinct(void)
{
    for (int a = -23; a <= 2; a++)
        for (int b = a + 1; b <= 2; b++)
            T_CHECK(strcmp(vidmm_status_str((vidmm_status)a), vidmm_status_str((vidmm_status)b)) != 0);
    T_CHECK(strcmp(vidmm_status_str((vidmm_status)1234), "VIDMM_E_UNKNOWN") == 0);
}

void suite_status(void);
void suite_status(void)
{
    t_run("status.names_distinct", names_distinct);
}
