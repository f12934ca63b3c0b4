/*
 * rmv.c - libFuzzer harness for the RMV importer's decoder
 * (tools/vidmm/rmv/rmv_decode.c, rmv_stream.c): any bytes are an RMV
 * file.  The decoder must either refuse them or return a summary whose books
 * balance: every stream's token bytes add up to the stream's bytes (a token
 * read at the wrong place cannot), the per-stream counts add up to the
 * totals, and the replayable events it hands on are in time order.  Whatever
 * it accepts is decoded a second time, leniently, and must read the same
 * (leniency only counts anomalies, it does not change what is read).
 */
#include "fuzz.h"
#include "rmv/rmv.h"
#include "rmv/rmv_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct rmv_import imp, again;
    void *state = NULL;
    if (rmv_decode(data, size, "fuzz", &imp, &state, NULL, 0) != 0) {
        FUZZ_REQUIRE(state == NULL, "the decode summary does not balance");
        return 0;
    }
    FUZZ_REQUIRE(imp.streams >= 1 && imp.streams <= RMV_MAX_STREAMS, "the decode summary does not balance");
    uint64_t totals[RMV_TOKEN_TYPES] = { 0 };
    for (uint32_t s = 0; s < imp.streams; s++) {
        const struct rmv_stream_info *si = &imp.stream[s];
        uint64_t bytes = 0;
        for (int k = 0; k < RMV_TOKEN_TYPES; k++) {
            bytes += si->token_bytes[k];
            totals[k] += si->tokens[k];
        }
        FUZZ_REQUIRE(bytes == si->bytes, "the decode summary does not balance");
        FUZZ_REQUIRE(si->tokens[RMV_TK_RESERVED] == 0, "the decode summary does not balance");
        FUZZ_REQUIRE(si->bytes <= size, "the decode summary does not balance");
    }
    for (int k = 0; k < RMV_TOKEN_TYPES; k++)
        FUZZ_REQUIRE(totals[k] == imp.tokens[k], "the decode summary does not balance");
    const struct rmv_evs *v = state;
    for (size_t i = 1; v && i < v->n; i++)
        FUZZ_REQUIRE(v->e[i - 1].ts <= v->e[i].ts, "the decode summary does not balance");
    rmv_free_state(state);
    FUZZ_REQUIRE(rmv_decode(data, size, "fuzz", &again, NULL, NULL, 1) == 0, "the decode summary does not balance");
    FUZZ_REQUIRE(again.streams == imp.streams, "the decode summary does not balance");
    for (uint32_t s = 0; s < imp.streams; s++)
        FUZZ_REQUIRE(!memcmp(again.stream[s].tokens, imp.stream[s].tokens, sizeof imp.stream[s].tokens), "the decode summary does not balance");
    return 0;
}
