/*
 * status_test.c - every status has a distinct name; every segment flag a
 * segment reports has its DXGK_SEGMENTFLAGS name, and nothing else has one.
 */
#include "harness/test.h"
#include "vidmm/driver.h"
#include "vidmm/segment.h"
#include "vidmm/status.h"

#include <string.h>

static void names_distinct(void)
{
    for (int a = -23; a <= 2; a++)
        for (int b = a + 1; b <= 2; b++)
            T_CHECK(strcmp(vidmm_status_str((vidmm_status)a), vidmm_status_str((vidmm_status)b)) != 0);
    T_CHECK(strcmp(vidmm_status_str((vidmm_status)1234), "VIDMM_E_UNKNOWN") == 0);
}

static void segment_flag_names(void)
{
    T_CHECK(strcmp(vidmm_segment_flag_name(VIDMM_SEGMENT_APERTURE), "Aperture") == 0);
    T_CHECK(strcmp(vidmm_segment_flag_name(VIDMM_SEGMENT_CPU_VISIBLE), "CpuVisible") == 0);
    T_CHECK(strcmp(vidmm_segment_flag_name(VIDMM_SEGMENT_POPULATED_FROM_SYSTEM), "PopulatedFromSystemMemory") == 0);
    T_CHECK(strcmp(vidmm_segment_flag_name(VIDMM_SEGMENT_USE_64KB_PAGES), "Use64KBPages") == 0);
    T_CHECK(strcmp(vidmm_segment_flag_name(VIDMM_SEGMENT_NON_LOCAL_BUDGET_GROUP), "NonLocalBudgetGroup") == 0);
    /* Not a single reported bit: no name. */
    T_CHECK(vidmm_segment_flag_name(0) == NULL);
    T_CHECK(vidmm_segment_flag_name(VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_CPU_VISIBLE) == NULL);
    T_CHECK(vidmm_segment_flag_name(VIDMM_SEGMENT_USE_BANKING) == NULL);
    T_CHECK(vidmm_segment_flag_name(VIDMM_SEGMENT_RESERVED_SYSMEM) == NULL);
    /* Thirteen named bits, each name distinct. */
    int named = 0;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        const char *n = vidmm_segment_flag_name(bit);
        if (!n)
            continue;
        named++;
        T_CHECK((bit & VIDMM_SEGMENT_KNOWN_FLAGS) != 0);
        for (uint32_t other = bit << 1; other; other <<= 1)
            T_CHECK(!vidmm_segment_flag_name(other) || strcmp(n, vidmm_segment_flag_name(other)) != 0);
    }
    T_EQ(named, 13);
    T_CHECK(strcmp(vidmm_segment_kind_str(VIDMM_SEGMENT_KIND_AGP), "agp") == 0);
}

void suite_status(void);
void suite_status(void)
{
    t_run("status.names_distinct", names_distinct);
    t_run("status.segment_flag_names", segment_flag_names);
}
