#!/bin/sh
# fuzz/run.sh BUILD SECONDS HARNESS... - run each libFuzzer harness for
# SECONDS on its checked-in corpus (read only: new inputs go to a scratch
# directory, merged into fuzz/corpus/ only by hand, docs/FUZZING.md), one
# at a time, and print executions per harness.  Exits non-zero when a
# harness crashed; the crash input is left in the scratch directory.
b=$1; secs=$2; shift 2
scratch=${FUZZ_SCRATCH:-$b/fuzz-scratch}
rc=0
for h in "$@"; do
  mkdir -p "$scratch/$h" "$scratch/$h-crashes" fuzz/corpus/"$h"
  log="$scratch/$h.log"
  "$b/fuzz/$h-fuzzer" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$scratch/$h-crashes/" "$scratch/$h" fuzz/corpus/"$h" >"$log" 2>&1
  r=$?
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
  cov=$(grep -E '#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -n 1 | sed -E 's/.*cov: ([0-9]+).*/\1/')
  ft=$(grep -E '#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -n 1 | sed -E 's/.*ft: ([0-9]+).*/\1/')
  if [ $r -ne 0 ]; then
    echo "fuzz $h: CRASH after ${secs}s (exit $r); see $log and $scratch/$h-crashes/"
    grep -E 'ERROR|fuzz: |SUMMARY' "$log" | head -n 5
    rc=1
  else
    echo "fuzz $h: executions: ${execs:-?} in ${secs} s (${rate:-?} exec/s), cov ${cov:-?} edges, ft ${ft:-?}"
  fi
done
exit $rc
