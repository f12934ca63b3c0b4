/*
 * vidmm/version.h - the release and ABI versions of libvidmm.
 *
 * VIDMM_VERSION_* name the release (semantic versioning: while the major
 * version is 0, a minor release may change the API; CHANGELOG.md says
 * what changed).  VIDMM_ABI_VERSION is the layout generation of the
 * structures a caller passes in: a caller stores it in
 * vidmm_adapter_create_info.abi_version and a driver in
 * vidmm_driver_ops.abi_version, and the library reads and writes only
 * the members that existed at that generation (docs/ABI.md).  The shared
 * library's SONAME is libvidmm.so.VIDMM_VERSION_MAJOR.
 */
#ifndef VIDMM_VERSION_H
#define VIDMM_VERSION_H

#include <stdint.h>

#include "vidmm/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VIDMM_VERSION_MAJOR 0
#define VIDMM_VERSION_MINOR 2
#define VIDMM_VERSION_PATCH 0
#define VIDMM_VERSION_STRING "0.2.0"

/* (major << 16) | (minor << 8) | patch, for comparisons. */
#define VIDMM_MAKE_VERSION(major, minor, patch) (((uint32_t)(major) << 16) | ((uint32_t)(minor) << 8) | (uint32_t)(patch))
#define VIDMM_VERSION VIDMM_MAKE_VERSION(VIDMM_VERSION_MAJOR, VIDMM_VERSION_MINOR, VIDMM_VERSION_PATCH)

/* The structure layout generation of these headers.  1: the first;
 * 2: vidmm_adapter_create_info.max_processes; 3: the 64 KB scratch
 * windows in vidmm_paging_process_info.  The library accepts every
 * generation from 1 to this one (docs/ABI.md). */
#define VIDMM_ABI_VERSION 3u

/* The version of the library actually loaded (VIDMM_VERSION of the
 * headers it was built from): a program built against other headers can
 * tell. */
VIDMM_API uint32_t vidmm_version(void);

/* The same as "major.minor.patch". */
VIDMM_API const char *vidmm_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
