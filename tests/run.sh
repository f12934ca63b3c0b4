#!/bin/sh
# run.sh - run the unit/integration test binary, the tool tests and the
# run/replay tests (trace_test.sh), the fuzz corpora (fuzz_replay.sh), the
# seed sweep of the built-in scenarios (sweep.sh), the scenario generator's
# fixed seeds and the regression scenarios (scenario_test.sh), the
# layering rule of src/LAYERS (layering.sh), the example driver and the
# driver conformance kit (drvcheck_test.sh), the exported symbols of
# libvidmm.so against the public headers (abi_check.sh), the docs' claims
# against the tool (docs_test.py: README demo excerpts, verbs, options),
# the statistics JSON against the GpuMemDump schema (stats_schema_test.sh),
# the D3DKMT front end's tests and sample client (docs/D3DKMT.md),
# vidmmd and libvidmm-client end to end (tests/daemon/run.sh, which also
# runs the D3DKMT tests and sample client through the remote backend), then
# print one combined summary line "N passed, M failed".
# Usage: tests/run.sh BUILD_DIR
b=${1:-build}
out=$(mktemp)
"$b/vidmm-tests" | tee "$out"
rc1=$?
sh tests/tool_test.sh "$b/vidmm" | tee -a "$out"
rc2=$?
sh tests/trace_test.sh "$b/vidmm" | tee -a "$out"
rc3=$?
sh tests/fuzz_replay.sh "$b" | tee -a "$out"
rc4=$?
sh tests/sweep.sh "$b/vidmm" 20 | tee -a "$out"
rc5=$?
sh tests/scenario_test.sh "$b/vidmm" | tee -a "$out"
rc6=$?
sh tests/layering.sh "$b" | tee -a "$out"
rc7=$?
sh tests/drvcheck_test.sh "$b" | tee -a "$out"
rc8=$?
sh tests/abi_check.sh "$b" | tee -a "$out"
rc9=$?
python3 tests/docs_test.py "$b/vidmm" | tee -a "$out"
rc10=$?
sh tests/stats_schema_test.sh "$b/vidmm" | tee -a "$out"
rc11=$?
# The D3DKMT front end: its conformance tests and the sample client.
"$b/vidmm-d3dkmt-tests" | tee -a "$out"
rc12=$?
if "$b/examples/d3dkmt_client/d3dkmt_client" >/dev/null; then echo "d3dkmt_client: 1 passed, 0 failed" | tee -a "$out"; rc13=0
else echo "d3dkmt_client: 0 passed, 1 failed" | tee -a "$out"; rc13=1; fi
sh tests/daemon/run.sh "$b" | tee -a "$out"
rc14=$?
p=$(grep -E '^([a-z]+: )?[0-9]+ passed, [0-9]+ failed' "$out" | sed -E 's/^[a-z]+: //' | awk '{s+=$1} END {print s+0}')
f=$(grep -E '^([a-z]+: )?[0-9]+ passed, [0-9]+ failed' "$out" | sed -E 's/^[a-z]+: //' | awk '{s+=$3} END {print s+0}')
rm -f "$out"
echo "total: $p passed, $f failed"
echo "$p passed, $f failed"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$rc3" -eq 0 ] && [ "$rc4" -eq 0 ] && [ "$rc5" -eq 0 ] && [ "$rc6" -eq 0 ] && [ "$rc7" -eq 0 ] && [ "$rc8" -eq 0 ] && [ "$rc9" -eq 0 ] && [ "$rc10" -eq 0 ] && [ "$rc11" -eq 0 ] && [ "$rc12" -eq 0 ] && [ "$rc13" -eq 0 ] && [ "$rc14" -eq 0 ] &&
  [ "$f" -eq 0 ]
