#!/bin/sh
# tests/daemon/run.sh BUILD - vidmmd and libvidmm-client end to end: a
# daemon started on a scratch socket, the client tests against it
# (basic.c, hostile.c, share.c: a shared allocation across two forked
# clients, multi.c: 8 processes at 2x over-commitment, then
# 4 with one SIGKILLed mid-run), then SIGTERM: the daemon must exit 0
# with "clean" (no allocation, host block or checker violation left).
# Prints "daemon: N passed, M failed" (run.sh sums it).
b=${1:-build}
t=$(mktemp -d)
trap 'kill -TERM $dpid 2>/dev/null; rm -rf "$t"' EXIT
sock="$t/vidmmd.sock"
p=0; f=0
out="$t/out"
# 24 MiB of local memory: 8 processes x 6 MiB over-commit it twice.
"$b/vidmmd" --socket "$sock" --segment 1=8M --segment 2=16M 2>"$t/log" &
dpid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
run() {
  timeout 60 "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  line=$(grep -E '^daemon [a-z]+: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
  if [ -z "$line" ]; then
    echo "daemon: FAIL $* (exit $rc, no summary)"
    f=$((f + 1))
    return
  fi
  p=$((p + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
  f=$((f + $(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')))
  [ $rc -eq 0 ] || { echo "daemon: FAIL $* exited $rc"; f=$((f + 1)); }
}
run "$b/tests/daemon/basic" "$sock"
run "$b/tests/daemon/hostile" "$sock"
run "$b/tests/daemon/share" "$sock"
run "$b/tests/daemon/multi" "$sock" stress 8 6 1048576 30
run "$b/tests/daemon/multi" "$sock" kill 4 6 1048576 60
kill -TERM $dpid
wait $dpid
drc=$?
if [ $drc -eq 0 ] && grep -q '^vidmmd: clean$' "$t/log"; then
  p=$((p + 1))
else
  echo "daemon: FAIL vidmmd exit $drc at SIGTERM; its log:"
  tail -n 20 "$t/log"
  f=$((f + 1))
fi
# Every share's export file went with its last holder.
if grep -q '^vidmmd: sharing: .* 0 export files open at shutdown$' "$t/log"; then p=$((p + 1)); else echo "daemon: FAIL export files left open at shutdown"; f=$((f + 1)); fi
ev=$(sed -nE 's/.* ([0-9]+) evictions.*/\1/p' "$t/log")
if [ "${ev:-0}" -gt 0 ]; then p=$((p + 1)); else echo "daemon: FAIL no eviction: not over-committed"; f=$((f + 1)); fi
grep -E '^vidmmd: (shutdown|sharing|residency|leak report)' "$t/log"
echo "daemon: $p passed, $f failed"
[ "$f" -eq 0 ]
