#!/bin/sh
# sweep.sh - every built-in scenario x every eviction policy x seeds 1..N,
# each run with the WDDM rules checker after every call (vidmm run
# --rules, the default).  A run passes when it exits 0: no device lost,
# no unexpected status, no read-back mismatch, no rule violation.
#
#   sweep.sh TOOL [SEEDS]     (SEEDS default 20; `make long` gives 500)
#
# Cheap settings keep `make test` fast: small segments (the scenarios size
# their data from them, so the over-commitment is the same) and few
# frames.  Two runs at a time.  A failing (scenario, policy) pair listed
# in tests/known_defects as sweep:SCENARIO:POLICY is a known defect: its
# failures are reported, not counted.  Prints each failing run as
# "sweep: FAIL scenario policy seed: outcome" (outcome: the first rule
# violated, or the scenario's first unexpected status), a table, the
# calls checked, and "sweep: N passed, M failed".
tool=${1:-build/vidmm}
seeds=${2:-20}
known=${VIDMM_KNOWN_DEFECTS:-tests/known_defects}

if [ "${SWEEP_ONE:-}" = 1 ]; then
  # One run: scenario policy seed -> "scenario policy seed calls outcome".
  s=$3; p=$4; n=$5
  case $s in
    desktop) opt="--segment 1=4M --segment 2=8M --frames 2" ;;
    game)    opt="--segment 1=8M --segment 2=16M --frames 2" ;;
    compute) opt="--segment 1=4M --segment 2=8M --frames 1" ;;
    igpu)    opt="--segment 1=16M --frames 2" ;;
  esac
  out=$("$tool" run "$s" --policy "$p" --seed "$n" $opt 2>&1 >/dev/null)
  rc=$?
  calls=$(echo "$out" | sed -n 's/^vidmm: rules checked after \([0-9]*\) calls.*/\1/p' | tail -n 1)
  if [ "$rc" -eq 0 ]; then
    what=ok
  elif echo "$out" | grep -q '^vidmm: rules:'; then
    what=$(echo "$out" | grep -A1 -m1 '^vidmm: rules:' | tail -n 1 | cut -d: -f1)
  else
    what=$(echo "$out" | grep -m1 'unexpected' | sed 's/^vidmm run: //; s/ /_/g')
    [ -n "$what" ] || what=exit-$rc
  fi
  echo "$s $p $n ${calls:-0} $what"
  exit 0
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for s in desktop game compute igpu; do
  for p in lru adaptive reuse belady; do
    n=1
    while [ "$n" -le "$seeds" ]; do echo "$s $p $n"; n=$((n + 1)); done
  done
done | SWEEP_ONE=1 xargs -P 2 -n 3 sh "$0" "$tool" "$seeds" > "$dir/results"

pass=0; fail=0; knownfail=0; calls=0
while read -r s p n c what; do
  calls=$((calls + c))
  if [ "$what" = ok ]; then
    pass=$((pass + 1))
  elif grep -q "^sweep:$s:$p\b" "$known" 2>/dev/null; then
    knownfail=$((knownfail + 1))
    echo "$s $p $n $what" >> "$dir/known"
  else
    fail=$((fail + 1))
    echo "sweep: FAIL $s $p $n: $what (rerun: $tool run $s --policy $p --seed $n, settings in tests/sweep.sh)"
  fi
done < "$dir/results"
echo "sweep: scenario x policy: failing seeds of $seeds (outcome: runs)"
sort -k1,1 -k2,2 -k3n "$dir/results" | awk '$5 != "ok" { k = $1 " " $2; seeds[k] = seeds[k] (seeds[k] ? "," : "") $3; out[k " " $5]++ }
  END { for (k in seeds) print "  " k ": seeds " seeds[k]; for (k in out) print "  " k ": " out[k] }' | sort
[ -f "$dir/known" ] && echo "sweep: $knownfail runs fail with known defects (tests/known_defects)"
echo "sweep: $((pass + fail + knownfail)) runs, $calls calls checked"
echo "sweep: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
