/*
 * version.c - the version of the library that is actually loaded, which
 * may differ from the headers a program was compiled with.
 */
#include "vidmm/version.h"

uint32_t vidmm_version(void)
{
    return VIDMM_VERSION;
}

const char *vidmm_version_string(void)
{
    return VIDMM_VERSION_STRING;
}
