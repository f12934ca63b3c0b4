#!/bin/sh
# same_behaviour.sh - proves a refactor changed no behaviour: the same
# runs on two builds of the tool must write byte-identical records.
#
#   tests/same_behaviour.sh OLD_TOOL NEW_TOOL [SEEDS]   (SEEDS default 5)
#
# For every built-in scenario x eviction policy x seed 1..SEEDS, and for
# SEEDS generated multi-process scenarios on both page sizes, each tool
# runs it with the rules checker and writes its trace (every call with
# its arguments, statuses, handles, addresses and placements), its JSON
# report and its end-of-run GpuMemDump snapshot; the recorded traces of
# tests/data/trace and the RMV sample are replayed the same way.  Any
# byte of difference is a failure, printed with the first differing
# lines.  Timings are not compared (they are not in these files).
# Prints "same_behaviour: N passed, M failed".
old=${1:?usage: same_behaviour.sh OLD_TOOL NEW_TOOL [SEEDS]}
new=${2:?usage: same_behaviour.sh OLD_TOOL NEW_TOOL [SEEDS]}
seeds=${3:-5}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0
fail=0

# Runs "$@" (a verb and its arguments) on both tools; compares outputs.
compare() {
  name=$1
  shift
  for side in old new; do
    eval tool=\$$side
    mkdir -p "$t/$side"
    "$tool" "$@" --record "$t/$side/trace" --snapshot "$t/$side/snap.json" \
      --format json -o "$t/$side/report.json" >"$t/$side/out" 2>&1
    echo "exit $?" >>"$t/$side/out"
  done
  ok=1
  for f in trace snap.json report.json out; do
    if ! cmp -s "$t/old/$f" "$t/new/$f"; then
      ok=0
      echo "same_behaviour: FAIL $name: $f differs"
      diff "$t/old/$f" "$t/new/$f" | head -n 6
    fi
  done
  if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
  rm -rf "$t/old" "$t/new"
}

for s in desktop game compute igpu; do
  for p in lru adaptive reuse; do
    n=1
    while [ $n -le "$seeds" ]; do
      case $s in
        igpu) opt="--segment 1=16M" ;;
        *) opt="--segment 1=8M --segment 2=16M" ;;
      esac
      compare "run $s $p seed $n" run "$s" --policy "$p" --seed "$n" --frames 3 $opt
      n=$((n + 1))
    done
  done
done
n=1
while [ $n -le "$seeds" ]; do
  for a in dgpu wddm1; do
    "$new" gen --seed "$n" --calls 400 --adapter "$a" >"$t/gen.scn" 2>/dev/null
    compare "generated $a seed $n" run "$t/gen.scn"
  done
  n=$((n + 1))
done
for f in tests/data/trace/*.scn; do
  compare "scenario file $f" run "$f"
done
for f in tests/data/rmv/*.rmv; do
  [ -f "$f" ] && compare "replay $f" replay "$f"
done
echo "same_behaviour: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
