/*
 * vidmm/export.h - VIDMM_API, the mark on every function libvidmm.so
 * exports.
 *
 * The library is built with hidden visibility, so only what carries the
 * mark is exported; the linker version script (src/libvidmm.map) tags
 * those symbols with the ABI's version node.  For a program that
 * includes the headers the mark is empty: nothing compiler-specific
 * reaches it (docs/ABI.md).
 */
#ifndef VIDMM_EXPORT_H
#define VIDMM_EXPORT_H

#if defined(VIDMM_BUILDING_LIBRARY) && (defined(__GNUC__) || defined(__clang__))
#define VIDMM_API __attribute__((visibility("default")))
#else
#define VIDMM_API
#endif

#endif
