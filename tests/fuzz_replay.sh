#!/bin/sh
# fuzz_replay.sh BUILD - replay every checked-in fuzz corpus
# (fuzz/corpus/<harness>/) through the plain-main replayers built by
# `make test`; prints one line "fuzz: N passed, M failed" (N = inputs
# replayed, M = harnesses that crashed) that run.sh sums.
b=${1:-build}
p=0; f=0
for r in "$b"/fuzz/*-replay; do
  [ -x "$r" ] || continue
  h=$(basename "$r" -replay)
  [ -d fuzz/corpus/"$h" ] || continue
  # A harness whose rule violations are a known defect (tests/known_defects)
  # reports them instead of crashing.
  known=
  grep -q "^fuzz\.$h\.rules\b" tests/known_defects 2>/dev/null && known=1
  # Its own exit status counts (a pipe into tail would hide it): a replay
  # that prints its summary and then fails, at exit or in a leak check,
  # has crashed too.
  FUZZ_RULES_KNOWN=$known "$r" -q fuzz/corpus/"$h" >"$b/fuzz/$h.out" 2>"$b/fuzz/$h.err"
  rc=$?
  line=$(tail -n 1 "$b/fuzz/$h.out")
  if [ -n "$known" ]; then
    v=$(grep -c '^fuzz: known defect' "$b/fuzz/$h.err")
    echo "fuzz: $h: $v inputs violate rules (known defect: fuzz.$h.rules in tests/known_defects)"
    grep -m1 -A1 '^fuzz: known defect' "$b/fuzz/$h.err"
  fi
  n=$(echo "$line" | sed -nE 's/^fuzz: ([0-9]+) passed.*/\1/p')
  if [ -n "$n" ] && [ "$rc" -eq 0 ]; then
    p=$((p + n))
  else
    echo "fuzz: $h replay crashed, exit status $rc (rerun: $r -v fuzz/corpus/$h)"
    f=$((f + 1))
  fi
done
echo "fuzz: $p passed, $f failed"
[ "$f" -eq 0 ]
