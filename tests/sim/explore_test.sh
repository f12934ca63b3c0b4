#!/bin/sh
# explore_test.sh - the deterministic explorer's part of `make test`
# (docs/TESTING.md "Deterministic exploration"):
#   - every shrunk reproduction in tests/sim/repro/ replays clean (each
#     failed before the fix of the defect it reproduces);
#   - the same seed runs bit for bit the same, three times;
#   - EXPLORE_SCHEDULES (default 300) schedules from EXPLORE_SEED (default
#     a fixed one, so the run is the same on every machine) run clean,
#     then as many again with driver ops refused as events;
#     a failure prints its seed and its shrunk reproduction.
# Usage: tests/sim/explore_test.sh BUILD_DIR.  Prints one summary line,
# "explore: N passed, M failed".
b=${1:-build}
x="$b/vidmm-explore"
seed=${EXPLORE_SEED:-20261128}
schedules=${EXPLORE_SCHEDULES:-300}
out=$(mktemp)
# Known defects (tests/known_defects, lines "explore:RULE"): failures of
# those rules are reported and not counted until the fix lands.
allow=$(sed -n 's/^explore:\([^ ]*\).*/--allow \1/p' tests/known_defects 2>/dev/null | tr '\n' ' ')
pass=0
fail=0
check() {   # name, command...
    name=$1
    shift
    if "$@" > "$out" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "explore: FAIL $name"
        grep -v ' passed, [0-9]* failed' "$out" | tail -n 40
    fi
}
if [ ! -x "$x" ]; then
    echo "explore: $x is missing (make $x)"
    echo "explore: 0 passed, 1 failed"
    exit 1
fi
for f in tests/sim/repro/*.txt; do
    # shellcheck disable=SC2086
    check "replay $f" "$x" $allow --replay "$f"
done
check "same seed, same run" "$x" --seed "$seed" --same 3
# shellcheck disable=SC2086
check "$schedules schedules from seed $seed" "$x" $allow --seed "$seed" --schedules "$schedules" --seconds 600
# shellcheck disable=SC2086
check "$schedules schedules with driver failures" "$x" $allow --driver-failures --seed "$seed" \
    --schedules "$schedules" --seconds 600
grep -h '^explore: known defect' "$out" | head -n 5 || true
grep -h '^explore: [0-9]* schedules in' "$out" || true
rm -f "$out"
echo "explore: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
