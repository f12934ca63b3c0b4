/*
 * trace_reader.c - libFuzzer harness for the trace reader in strict mode
 * (`vidmm replay FILE`): any bytes are a trace.  Invariants: fuzz/trace_fz.h
 * (refused or run; a version-2 trace that ran was proven whole by its end
 * record; what ran, recorded again, is a whole trace that replays
 * exactly).  Corpus: fuzz/corpus/trace_reader/ (recorded traces of the
 * built-in scenarios, cut short, changed, appended, long lines).
 */
#include "trace_fz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tfz_check(data, size, 1);
    return 0;
}
