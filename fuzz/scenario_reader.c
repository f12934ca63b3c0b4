/*
 * scenario_reader.c - libFuzzer harness for the scenario-file reader
 * (`vidmm run FILE`: the trace reader with results, header and sizes
 * optional): any bytes are a scenario file.  Invariants: fuzz/trace_fz.h
 * (refused or run; a file that says version 2 and ran was proven whole;
 * what ran, recorded, is a whole trace that the strict reader replays
 * exactly - the scenario language and the trace format agree).  Corpus:
 * fuzz/corpus/scenario_reader/ (tests/scenarios/ and hand-written files).
 */
#include "trace_fz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tfz_check(data, size, 0);
    return 0;
}
