/*
 * trace_fz.h - what the two reader harnesses (trace_reader.c: any bytes
 * as a trace for `vidmm replay`; scenario_reader.c: as a scenario file
 * for `vidmm run FILE`) share: reading the input through the tool's
 * reader (tools/vidmm/trace/trace_read.c, replay.c) from memory, on a small
 * adapter, and the invariants every input must keep.
 *
 *  - The reader either refuses the input (a message, nothing left open)
 *    or runs it; ASan and the replayer's leak check see the rest.
 *  - A version-2 input that ran to its end was proven whole: its end
 *    record was read and agreed (a reader that runs a trace without one
 *    would replay a cut trace as a shorter one).
 *  - What ran is recorded again (in memory), and that record is a whole
 *    version-2 trace that the strict reader accepts and replays with
 *    every result the same: what the writer writes, the reader reads
 *    back exactly, lines of any length included.
 *
 * The header is clamped before an adapter starts: synchronous softgpu,
 * every segment at most 16 MiB, 64 MiB of system memory, no rules
 * checker (the api_stream harness checks the rules; this one checks the
 * reader).  Messages go to stderr, silenced unless FUZZ_TRACE is set.
 */
#ifndef VIDMM_FUZZ_TRACE_FZ_H
#define VIDMM_FUZZ_TRACE_FZ_H

#include "fuzz.h"
#include "trace/replay.h"

#include <unistd.h>
#include <fcntl.h>

/* Segments per preset (softgpu/softgpu.c), so only those are clamped. */
static inline uint32_t tfz_segments(const char *preset)
{
    if (!strcmp(preset, "igpu"))
        return 1;
    if (!strcmp(preset, "wddm1"))
        return 4;
    return 3;
}

static inline void tfz_clamp(struct tr_header *h)
{
    uint32_t n = tfz_segments(h->preset);
    for (uint32_t id = 1; id <= SOFTGPU_MAX_SEGMENTS; id++) {
        if (id > n)
            continue;   /* an override of a segment the preset lacks: softgpu refuses it */
        if (!h->segment_size[id] || h->segment_size[id] > (16u << 20))
            h->segment_size[id] = 16u << 20;
    }
    if (h->system_memory > FZ_SYSTEM_MEMORY || !h->system_memory)
        h->system_memory = FZ_SYSTEM_MEMORY;
    h->synchronous = 1;
    if (h->mmu_levels > 4)
        h->mmu_levels = 0;
}

/* Read and run text (n bytes) with the reader in mode strict; when rec
 * is given, record what ran into *rec / *rec_len (malloc'ed).  Returns 1
 * when the input ran to its end (no malformed line, no fault), 0 when
 * refused; *mismatches: results that differed from the stated ones. */
static inline int tfz_run(const uint8_t *text, size_t n, int strict, char **rec, size_t *rec_len,
                          uint64_t *mismatches, int *unproven)
{
    *unproven = 0;
    if (rec) {
        *rec = NULL;
        *rec_len = 0;
    }
    *mismatches = 0;
    FILE *in = fmemopen((void *)(uintptr_t)text, n, "r");
    if (!in)
        return 0;
    struct replay r;
    struct tr_header h;
    if (replay_open_stream(&r, in, "fuzz", &h, strict))
        return 0;
    tfz_clamp(&h);
    FILE *out = rec ? open_memstream(rec, rec_len) : NULL;
    struct tr t;
    if (tr_open(&t, &h, out)) {
        if (out)
            fclose(out);
        replay_close(&r);
        return 0;
    }
    tr_enable_rules(&t, 0);
    tr_start(&t);
    int bad = replay_run(&r, &t);
    *unproven = !bad && r.version >= 2 && !r.ended;
    *mismatches = r.mismatches;
    int rec_bad = out ? tr_end_record(&t) : 0;
    tr_close(&t);
    replay_close(&r);
    if (out && fclose(out))
        rec_bad = 1;
    FUZZ_REQUIRE(!rec_bad, "recording in memory failed");
    return !bad;
}

/* Silence the reader's messages (stderr) unless tracing. */
static inline int tfz_quiet_begin(void)
{
    if (fz_tracing())
        return -1;
    fflush(stderr);
    int saved = dup(2), nul = open("/dev/null", O_WRONLY);
    if (nul >= 0) {
        dup2(nul, 2);
        close(nul);
    }
    return saved;
}

static inline void tfz_quiet_end(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* The whole check: run data in mode strict, then its record strictly. */
static inline void tfz_check(const uint8_t *data, size_t size, int strict)
{
    int saved = tfz_quiet_begin();
    char *rec;
    size_t rec_len;
    uint64_t mism;
    int unproven, unproven2 = 0;
    int ran = tfz_run(data, size, strict, &rec, &rec_len, &mism, &unproven);
    if (unproven) {
        tfz_quiet_end(saved);
        FUZZ_REQUIRE(0, "a version-2 input ran to its end without an agreeing end record");
    }
    if (ran) {
        /* The writer's own output: whole, version 2, replayed exactly. */
        FUZZ_REQUIRE(rec && rec_len > 0 && !memcmp(rec, "vidmm-trace 2\n", 14), "the record has no version-2 header");
        uint64_t again;
        int ok = tfz_run((const uint8_t *)rec, rec_len, 1, NULL, NULL, &again, &unproven2);
        tfz_quiet_end(saved);
        saved = -1;
        FUZZ_REQUIRE(!unproven2, "the record ran to its end without an agreeing end record");
        FUZZ_REQUIRE(ok, "the strict reader refused what the writer recorded");
        FUZZ_REQUIRE(again == 0, "the record replays with %llu different results", (unsigned long long)again);
    }
    tfz_quiet_end(saved);
    free(rec);
}

#endif
