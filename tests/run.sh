#!/bin/sh
# run.sh - run every suite of `make test` and print one combined summary
# line "N passed, M failed" (docs/TESTING.md, "How tests/run.sh counts"):
# the runner's own test (run_test.sh), the unit/integration test binary,
# the tool tests and the run/replay tests (trace_test.sh), the fuzz
# corpora (fuzz_replay.sh), the seed sweep of the built-in scenarios
# (sweep.sh), the scenario generator's fixed seeds and the regression
# scenarios (scenario_test.sh), the layering rule of src/LAYERS
# (layering.sh), the example driver and the driver conformance kit
# (drvcheck_test.sh), the exported symbols of libvidmm.so against the
# public headers (abi_check.sh), the docs' claims against the tool
# (docs_test.py), the statistics JSON against the GpuMemDump schema
# (stats_schema_test.sh), the D3DKMT front end's tests and sample client
# (docs/D3DKMT.md), vidmmd and libvidmm-client end to end
# (tests/daemon/run.sh), the vkgpu driver on the Vulkan device present
# (tests/vkgpu/run.sh), the deterministic explorer (tests/sim/explore_test.sh).
#
# Each suite's own exit status counts, not that of the tee that shows its
# output.  A suite adds its last "[name: ]N passed, M failed" line to the
# total; it also counts one failure, named on a "run: FAILED" line, when
# it exits non-zero while claiming 0 failed, dies of a signal, or never
# prints its summary line (it crashed on the way).  A suite whose program
# or tool is missing is skipped with a warning on stderr, and is a failure
# under CI=true (tests/skip.sh).  Exit status 0 only when M is 0.
#
# Usage: tests/run.sh BUILD_DIR
#   VIDMM_RUN_SUITES="library docs"  runs only the suites named (all when
#                                    unset; run_test.sh uses it)
b=${1:-build}
. tests/skip.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
p=0
f=0
broken=
summary='^([a-z][a-z0-9_-]*: )?[0-9]+ passed, [0-9]+ failed$'

# A suite "breaks": one failure on top of its own count, and its name kept
# for the end of the run.
suite_broken() {
  echo "run: FAILED $1: $2"
  broken="$broken $1"
  f=$((f + 1))
}

# present NEED: a path (it has a slash) exists, or a command is on PATH.
present() {
  case $1 in
    */*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

# suite NAME NEED... -- COMMAND ARGS...: run one suite, its output shown
# as it comes and kept for its summary line, its status kept apart.
suite() {
  name=$1; shift
  case " ${VIDMM_RUN_SUITES:-$name} " in *" $name "*) ;; *) return 0 ;; esac
  missing=
  while [ "$1" != "--" ]; do
    present "$1" || missing="$missing $1"
    shift
  done
  shift
  if [ -n "$missing" ]; then
    echo "$name: skipped: missing$missing"
    skipped "suite $name" "missing$missing" || suite_broken "$name" "skipped under CI=true (missing$missing)"
    return 0
  fi
  rm -f "$t/rc"
  { "$@"; echo $? >"$t/rc"; } | tee "$t/out"
  rc=$(cat "$t/rc" 2>/dev/null || echo "unknown")
  line=$(grep -E "$summary" "$t/out" | tail -n 1 | sed -E 's/^[a-z][a-z0-9_-]*: //')
  if [ -z "$line" ]; then
    suite_broken "$name" "no summary line (exit status $rc): it crashed or stopped before its end"
    return 0
  fi
  sp=${line%% passed*}
  sf=${line#*passed, }; sf=${sf%% failed*}
  p=$((p + sp))
  f=$((f + sf))
  case $rc in
    0) ;;
    unknown) suite_broken "$name" "its exit status was lost" ;;
    *)
      if [ "$rc" -gt 128 ]; then
        suite_broken "$name" "died of signal $((rc - 128)) after its summary line ($line)"
      elif [ "$sf" -eq 0 ]; then
        suite_broken "$name" "exit status $rc although it reports 0 failed"
      fi ;;
  esac
}

# The sample D3DKMT client prints no summary of its own.
d3dkmt_client() {
  if "$b/examples/d3dkmt_client/d3dkmt_client" >/dev/null; then
    echo "d3dkmt_client: 1 passed, 0 failed"
  else
    echo "d3dkmt_client: 0 passed, 1 failed"; return 1
  fi
}

# Only when all suites run: run_test.sh itself calls run.sh with a list.
[ -z "${VIDMM_RUN_SUITES:-}" ] && suite runner -- sh tests/run_test.sh
suite library "$b/vidmm-tests" -- "$b/vidmm-tests"
suite tool "$b/vidmm" -- sh tests/tool_test.sh "$b/vidmm"
suite trace "$b/vidmm" -- sh tests/trace_test.sh "$b/vidmm"
suite fuzz "$b/fuzz/api_stream-replay" -- sh tests/fuzz_replay.sh "$b"
suite sweep "$b/vidmm" -- sh tests/sweep.sh "$b/vidmm" 20
suite scenarios "$b/vidmm" -- sh tests/scenario_test.sh "$b/vidmm"
suite layering "$b/libvidmm.a" nm join -- sh tests/layering.sh "$b"
suite layering-fixtures "$b/libvidmm.a" nm join -- sh tests/layering_test.sh "$b"
suite drvcheck "$b/vidmm" "$b/examples/minidrv/minidrv.so" -- sh tests/drvcheck_test.sh "$b"
suite abi "$b/libvidmm.so" nm readelf -- sh tests/abi_check.sh "$b"
suite docs python3 "$b/vidmm" -- python3 tests/docs_test.py "$b/vidmm"
suite stats-schema "$b/vidmm" -- sh tests/stats_schema_test.sh "$b/vidmm"
suite d3dkmt "$b/vidmm-d3dkmt-tests" -- "$b/vidmm-d3dkmt-tests"
suite d3dkmt_client "$b/examples/d3dkmt_client/d3dkmt_client" -- d3dkmt_client
suite daemon "$b/vidmmd" timeout -- sh tests/daemon/run.sh "$b"
# The deterministic explorer: shrunk reproductions, determinism, a fixed
# set of schedules (tests/sim/explore_test.sh).
suite explore "$b/vidmm-explore" -- sh tests/sim/explore_test.sh "$b"

# vkgpu on the Vulkan device present (built only where Vulkan is: Makefile);
# without it the suite is skipped, loudly (a failure under CI=true).
suite vkgpu "$b/vkgpu-tests" -- sh tests/vkgpu/run.sh "$b"

[ -n "$broken" ] && echo "run: suites that failed to run or to finish cleanly:$broken"
echo "total: $p passed, $f failed"
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
