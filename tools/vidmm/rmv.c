/*
 * rmv.c - AMD Radeon Memory Visualizer trace import (see rmv.h).
 * Placeholder until the importer lands: recognises nothing.
 */
#include "rmv.h"

int rmv_is_rmv_file(const char *path)
{
    (void)path;
    return 0;
}

int rmv_replay(const char *path, enum report_format fmt, const char *output)
{
    (void)path;
    (void)fmt;
    (void)output;
    return 2;
}
