/*
 * rmv_dec.h - the RMV decoder's state, shared by the containers
 * (rmv_decode.c) and the token streams (rmv_stream.c).  Not for the rest
 * of the tool.
 */
#ifndef VIDMM_TOOL_RMV_DEC_H
#define VIDMM_TOOL_RMV_DEC_H

#include "rmv.h"
#include "rmv_int.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* A set of 64-bit keys with a size each (open addressing; key 0 is
 * stored as the empty slot's complement, so any key fits). */
struct kset {
    uint64_t *key, *val;
    size_t cap, n;
};

/* Live virtual allocations, sorted by (process, address): a reference
 * or CPU map must fall inside one. */
struct vrange {
    uint64_t pid, va, size;
};

struct vas {
    struct vrange *r;
    size_t n, cap;
};

struct dec {
    const char *name;
    FILE *err;
    struct rmv_import *imp;
    struct rmv_evs *ev;          /* NULL: events not kept */
    struct vas vas;              /* live virtual allocations */
    struct kset resources;       /* (pid, resource id) */
    int lenient;                 /* anomalies counted, not refused */
    char *system_info;           /* the SystemInfo JSON, NUL-terminated (NULL: none) */
    int failed;
};

/* Report (the first failure only) on D->err and mark the decode failed;
 * returns 1. */
int rmv_fail(struct dec *D, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void rmv_kset_free(struct kset *s);
/* Decode one token stream: count every token, check every closed field,
 * keep the replayable ones.  off0 is the stream's first byte's place in
 * the file, for messages. */
int rmv_decode_stream(struct dec *D, const uint8_t *p, size_t n, struct rmv_stream_info *si, uint64_t off0);

#endif
