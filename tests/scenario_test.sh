#!/bin/sh
# scenario_test.sh - the regression scenarios and the scenario generator's
# fixed seeds, each run with the WDDM rules checker (vidmm run --rules).
#
#   tests/scenarios/*.scn          must run clean (exit 0)
#   tests/scenarios/pending/*.scn  minimal repros of known defects: the
#                                  first line names the rule they violate
#                                  ("# rule: NAME ..."); they must still
#                                  fail with it until the defect is fixed,
#                                  then move to tests/scenarios/ (a pending
#                                  scenario that passes is reported)
#   vidmm fuzz-scenarios --count N --seed 1: a failure whose outcome is
#                                  listed in tests/known_defects as gen:NAME
#                                  is a known defect, any other fails
#
# Usage: scenario_test.sh path/to/vidmm [COUNT].  Prints "scenarios: N
# passed, M failed".
tool=${1:-build/vidmm}
count=${2:-${SCENARIO_COUNT:-60}}
known=${VIDMM_KNOWN_DEFECTS:-tests/known_defects}
pass=0; fail=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for f in tests/scenarios/*.scn; do
  [ -f "$f" ] || continue
  if "$tool" run "$f" >/dev/null 2>"$dir/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "scenarios: FAIL $f"; sed -n 1,5p "$dir/err"; fi
done
for f in tests/scenarios/pending/*.scn; do
  [ -f "$f" ] || continue
  rule=$(sed -n '1s/^# rule: \([^ ]*\).*/\1/p' "$f")
  "$tool" run "$f" >/dev/null 2>"$dir/err"
  rc=$?
  got=$(grep -A1 -m1 '^vidmm: rules:' "$dir/err" | tail -n 1 | cut -d: -f1)
  if [ "$rc" -ne 0 ] && [ "$got" = "$rule" ]; then
    pass=$((pass + 1))
  elif [ "$rc" -eq 0 ]; then
    pass=$((pass + 1)); echo "scenarios: $f now passes: its defect is fixed, move it to tests/scenarios/"
  else
    fail=$((fail + 1)); echo "scenarios: FAIL $f: fails with '${got:-exit $rc}', its comment says '$rule'"
  fi
done
"$tool" fuzz-scenarios --count "$count" --seed 1 --calls 120 >"$dir/gen" 2>&1
grep -E '^fuzz-scenarios: [0-9]+ scenarios' "$dir/gen"
while read -r _ seed what; do
  [ -n "$seed" ] || continue
  if grep -q "^gen:$what\b" "$known" 2>/dev/null; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "scenarios: FAIL generated seed $seed: $what (vidmm gen --seed $seed --calls 120 > f; vidmm shrink f)"; fi
done <<EOT
$(grep -E '^fuzz-scenarios: seed [0-9]+ fails:' "$dir/gen" | sed 's/seed //; s/fails: //')
EOT
ok=$(grep -cE '^fuzz-scenarios: seed' "$dir/gen")
pass=$((pass + count - ok))
echo "scenarios: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
