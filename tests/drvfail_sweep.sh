#!/bin/sh
# drvfail_sweep.sh - every built-in scenario and generated scenarios with
# a driver op refused at each of its calls, once and from that call on
# (vidmm run --fail-driver, support/fault_driver.h).  A run passes
# when the state at its end, with the driver working again, is sound:
# the structure checker, the rules (library rules, the GPU's view with
# gpu.entry_reaches_owned) and the aperture's entries.  The drvfail suite
# does the same, with a content check, on its own scenario
# (tests/unit/drvfail_test.c); this is its long-tier counterpart.
#
#   drvfail_sweep.sh TOOL [STRIDE] [GENERATED]
#     STRIDE     k = 1, 1+STRIDE, ... and the last call (default 1: every call)
#     GENERATED  scenario files from `vidmm gen --seed 1..N` (default 10)
#
# The paging ops (build_paging_buffer, submit_command) are swept in both
# modes, every other op the scenario calls once per call.  Two runs at a
# time.  Prints each failing run as "drvfail: FAIL scenario op k mode:
# verdict" and "drvfail: N runs (scenario x op x k x mode), M failed".
tool=${1:-build/vidmm}
stride=${2:-1}
generated=${3:-10}

if [ "${DRVFAIL_ONE:-}" = 1 ]; then
  # One run: name op k mode -> "name op k mode verdict".
  name=$4; op=$5; k=$6; mode=$7
  case $name in
    desktop) what=desktop; opt="--segment 1=4M --segment 2=8M --frames 2" ;;
    game)    what=game; opt="--segment 1=8M --segment 2=16M --frames 2" ;;
    compute) what=compute; opt="--segment 1=4M --segment 2=8M --frames 1" ;;
    igpu)    what=igpu; opt="--segment 1=16M --frames 2" ;;
    *)       what=$DRVFAIL_DIR/$name.scn; opt= ;;
  esac
  out=$("$tool" run "$what" $opt --fail-driver "$op:$k:$mode" 2>&1 >/dev/null | grep '^vidmm run: driver op')
  case $out in
    *"state sound"*) v=ok ;;
    "") v=no-verdict ;;
    *) v=$(echo "$out" | sed 's/.*FAILED: //' | cut -c1-160 | tr ' ' '_') ;;
  esac
  echo "$name $op $k $mode $v"
  exit 0
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names="desktop game compute igpu"
n=1
while [ "$n" -le "$generated" ]; do
  "$tool" gen --seed "$n" > "$dir/gen$n.scn" 2>/dev/null && names="$names gen$n"
  n=$((n + 1))
done

# Calls of every op each scenario makes with nothing refused.
ops="build_paging_buffer submit_command describe_allocation destroy_allocation map_cpu_host_aperture
unmap_cpu_host_aperture set_root_page_table get_root_page_table_size submit_command_virtual
submit_command_physical patch"
for s in $names; do
  case $s in
    desktop) what=desktop; opt="--segment 1=4M --segment 2=8M --frames 2" ;;
    game)    what=game; opt="--segment 1=8M --segment 2=16M --frames 2" ;;
    compute) what=compute; opt="--segment 1=4M --segment 2=8M --frames 1" ;;
    igpu)    what=igpu; opt="--segment 1=16M --frames 2" ;;
    *)       what=$dir/$s.scn; opt= ;;
  esac
  for op in $ops; do
    c=$("$tool" run "$what" $opt --fail-driver "$op:0" 2>&1 >/dev/null |
        sed -n 's/^vidmm run: driver op [a-z_]*: \([0-9]*\) calls.*/\1/p')
    [ -n "$c" ] && [ "$c" -gt 0 ] || continue
    k=1
    while [ "$k" -le "$c" ]; do
      echo "$s $op $k once"
      case $op in build_paging_buffer|submit_command) echo "$s $op $k sticky" ;; esac
      if [ "$k" -lt "$c" ] && [ $((k + stride)) -gt "$c" ]; then k=$c; else k=$((k + stride)); fi
    done
  done
done > "$dir/plan"

DRVFAIL_DIR=$dir DRVFAIL_ONE=1 xargs -P 2 -n 4 sh "$0" "$tool" "$stride" "$generated" < "$dir/plan" > "$dir/results"
runs=$(wc -l < "$dir/results")
failed=$(grep -vc ' ok$' "$dir/results")
grep -v ' ok$' "$dir/results" | head -n 40 | sed 's/^/drvfail: FAIL /'
echo "drvfail: $runs runs (scenario x op x k x mode; $(echo "$names" | wc -w) scenarios, stride $stride), $failed failed"
[ "$failed" -eq 0 ]
