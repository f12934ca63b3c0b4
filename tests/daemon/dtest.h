/*
 * dtest.h - what the daemon's test programs share: checks counted into
 * "N passed, M failed", softgpu allocation descriptors, seeded byte
 * patterns, a make-resident that waits for its paging, and a private
 * daemon started for a benchmark.
 */
#ifndef VIDMMD_DTEST_H
#define VIDMMD_DTEST_H

#include "vidmm-client/client.h"
#include "vidmm/softgpu.h"
#include "vidmm/vidmm.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int dt_pass, dt_fail;
static const char *dt_name = "daemon";

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) {                                                         \
            dt_pass++;                                                      \
        } else {                                                            \
            dt_fail++;                                                      \
            printf("%s: FAIL %s:%d: %s: ", dt_name, __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                            \
            printf("\n");                                                   \
            fflush(stdout);                                                 \
        }                                                                   \
    } while (0)

#define CHECK_ST(expr, want)                                                \
    do {                                                                    \
        vidmm_status st_ = (expr);                                          \
        CHECK(st_ == (want), "%s: got %s, want %s", #expr, vidmm_status_str(st_), vidmm_status_str(want)); \
    } while (0)

static inline int dt_summary(void)
{
    printf("%s: %d passed, %d failed\n", dt_name, dt_pass, dt_fail);
    return dt_fail ? 1 : 0;
}

static inline struct softgpu_alloc_desc dt_desc(enum softgpu_alloc_kind kind, uint64_t size)
{
    struct softgpu_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.cpu_visible = 1;
    d.size = size;
    return d;
}

/* The byte at offset off of allocation i of seed seed. */
static inline uint8_t dt_pattern(uint32_t seed, uint32_t i, uint64_t off)
{
    uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull ^ (off >> 3);
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    return (uint8_t)(x >> (8 * (off & 7)));
}

static inline vidmm_status dt_fill(struct vidmm_client *c, vidmm_handle h, uint32_t seed, uint32_t i, uint64_t size)
{
    uint8_t *p = NULL;
    vidmm_status st = vidmm_client_allocation_lock(c, h, (void **)&p);
    if (st < 0)
        return st;
    for (uint64_t o = 0; o < size; o++)
        p[o] = dt_pattern(seed, i, o);
    return vidmm_client_allocation_unlock(c, h);
}

/* 1 when every byte matches, 0 when one does not, < 0 a status. */
static inline int dt_verify(struct vidmm_client *c, vidmm_handle h, uint32_t seed, uint32_t i, uint64_t size)
{
    uint8_t *p = NULL;
    vidmm_status st = vidmm_client_allocation_lock(c, h, (void **)&p);
    if (st < 0)
        return st;
    int ok = 1;
    for (uint64_t o = 0; o < size && ok; o++)
        ok = p[o] == dt_pattern(seed, i, o);
    st = vidmm_client_allocation_unlock(c, h);
    return st < 0 ? st : ok;
}

static inline vidmm_status dt_make_resident(struct vidmm_client *c, vidmm_handle dev, vidmm_handle q,
                                            const vidmm_handle *h, uint32_t n)
{
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.paging_queue = q;
    mr.allocations = h;
    mr.count = n;
    vidmm_status st = vidmm_client_make_resident(c, dev, &mr);
    if (st == VIDMM_E_OVER_BUDGET) {
        mr.flags = VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
        st = vidmm_client_make_resident(c, dev, &mr);
    }
    if (st == VIDMM_PENDING)
        st = vidmm_client_paging_queue_wait(c, q, mr.paging_fence_value, 10ull * 1000000000u);
    return st;
}

/* Start vidmmd (path) quietly on sock - as nobody when run as root, since
 * vidmmd refuses root without a user to drop to - and connect to it within
 * 2 s.  Returns the daemon's pid with *c connected, or -1 (the daemon
 * killed, a message naming who on stderr). */
static inline pid_t dt_start_daemon(const char *who, const char *path, const char *sock, struct vidmm_client **c)
{
    *c = NULL;
    pid_t d = fork();
    if (d < 0)
        return -1;
    if (d == 0) {
        if (geteuid() == 0)
            execl(path, path, "--socket", sock, "--quiet", "--user", "nobody", (char *)NULL);
        else
            execl(path, path, "--socket", sock, "--quiet", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && vidmm_client_connect(sock, c) < 0; i++) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (!*c) {
        fprintf(stderr, "%s: cannot connect to %s\n", who, path);
        kill(d, SIGTERM);
        return -1;
    }
    return d;
}

#endif
