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
  line=$("$r" -q fuzz/corpus/"$h" | tail -n 1)
  n=$(echo "$line" | sed -nE 's/^fuzz: ([0-9]+) passed.*/\1/p')
  if [ -n "$n" ]; then
    p=$((p + n))
  else
    echo "fuzz: $h replay crashed (rerun: $r -v fuzz/corpus/$h)"
    f=$((f + 1))
  fi
done
echo "fuzz: $p passed, $f failed"
[ "$f" -eq 0 ]
