#!/bin/sh
# tests/daemon/run.sh BUILD - vidmmd and libvidmm-client end to end:
#  1. a daemon on a scratch socket and the client tests against it
#     (basic.c, hostile.c, share.c: a shared allocation across two forked
#     clients, multi.c: 8 processes at 2x over-commitment, then 4 with
#     one SIGKILLed mid-run; admin.c: the administration view
#     and vidmm ps/info/top; chaos.c: clients SIGKILLed at random and
#     replaced, survivors' bytes, host memory back to its baseline), then
#     SIGTERM: the daemon must exit 0 with "clean";
#  2. as root: the daemon runs as --user nobody (its uids and gids in
#     /proc), and refuses root without --user;
#  3. a daemon with small limits and limits.c against it;
#  4. socket activation: the listening socket handed over as LISTEN_FDS
#     (listen_exec.c), clients through it, and bad hand-overs refused;
#  5. the systemd units through systemd-analyze verify, when it exists;
#  6. a dgpu daemon at its default sizes that lets clients pin their
#     budgets (--allow-set-budget): api.c (the rest of the API over the
#     wire: contexts, submission, context waits, offer/reclaim, trim
#     events), the D3DKMT conformance tests through the remote backend
#     (vidmm-d3dkmt-tests --remote) and the sample D3DKMT client (--remote);
#     it too must shut down clean;
#  7. a daemon with room for 4,096 processes and many.c: 4,096 clients
#     connected at once (16 processes x 256), each with a resident
#     allocation read back; it must shut down clean;
#  8. the driver plug-in loader shared with the tool (support/plugin.c):
#     a missing file and a library without the entry symbol refused by
#     `vidmm info --driver` and `vidmmd --driver` in the same words, and
#     both on minidrv's plug-in (the daemon shutting down clean).
# DAEMON_CHAOS_SECONDS (default 6) is the chaos test's length (make long
# sets more); VIDMM_TEST_SEED replays a chaos seed.
# Before them all, wire.c checks the protocol's one table (daemon/proto.def)
# against the decoder and docs/PROTOCOL.md.
# Prints "daemon: N passed, M failed" (tests/run.sh sums it).
b=${1:-build}
chaos_seconds=${DAEMON_CHAOS_SECONDS:-6}
t=$(mktemp -d)
chmod 711 "$t"   # limits.c connects as another uid too
dpid=""
trap '[ -n "$dpid" ] && kill -TERM $dpid 2>/dev/null; rm -rf "$t"' EXIT
sock="$t/vidmmd.sock"
p=0; f=0
out="$t/out"
ok() { p=$((p + 1)); }
bad() { echo "daemon: FAIL $*"; f=$((f + 1)); }
wait_socket() {
  i=0
  while [ ! -S "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
run() {
  timeout 120 "$@" >"$out" 2>&1
  rc=$?
  # The D3DKMT tests' summary ("d3dkmt: N passed, M failed") gets the
  # prefix run.sh does not sum (it sums this script's own line).
  sed -E 's/^(d3dkmt: )?([0-9]+ passed, [0-9]+ failed)$/daemon remote: \2/' "$out" >"$out.1" && mv "$out.1" "$out"
  cat "$out"
  line=$(grep -E '^daemon [a-z]+: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
  if [ -z "$line" ]; then
    bad "$* (exit $rc, no summary)"
    return
  fi
  p=$((p + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
  f=$((f + $(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')))
  [ $rc -eq 0 ] || bad "$* exited $rc"
}
# SIGTERM to the daemon: exit 0 and "clean" in its log ($1).
stop_clean() {
  kill -TERM $dpid
  wait $dpid
  drc=$?
  dpid=""
  if [ $drc -eq 0 ] && grep -q '^vidmmd: clean$' "$1"; then ok; else
    bad "vidmmd exit $drc at SIGTERM; its log:"
    tail -n 20 "$1"
  fi
}
# As root (CI) the daemon must be given a user to drop to.
root=0
as_user=""
if [ "$(id -u)" -eq 0 ]; then root=1; as_user="--user nobody"; fi

# ---- 0. the wire table (daemon/proto.def), no daemon: every request,
# reply and record round-trips, and docs/PROTOCOL.md lists its fields.
run "$b/tests/daemon/wire" docs/PROTOCOL.md

# ---- 1. the main daemon: 24 MiB of local memory, 8 processes x 6 MiB
# over-commit it twice.  At most 200 processes at once (their root page
# tables would fit 253): basic's capacity test connects past that bound.
bound=200
"$b/vidmmd" --socket "$sock" $as_user --segment 1=8M --segment 2=16M --max-processes $bound 2>"$t/log" &
dpid=$!
wait_socket "$sock"
run "$b/tests/daemon/basic" "$sock" $bound
run "$b/tests/daemon/hostile" "$sock"
run "$b/tests/daemon/share" "$sock"
run "$b/tests/daemon/multi" "$sock" stress 8 6 1048576 30
run "$b/tests/daemon/multi" "$sock" kill 4 6 1048576 60
run "$b/tests/daemon/admin" "$sock" "$b/vidmm"
run "$b/tests/daemon/chaos" "$sock" --seconds "$chaos_seconds" --clients 6
run "$b/tests/daemon/api" "$sock" cross

# ---- 2. the user it runs as
if [ $root -eq 1 ]; then
  nuid=$(id -u nobody); ngid=$(id -g nobody)
  uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' /proc/$dpid/status)
  gids=$(awk '/^Gid:/ {print $2, $3, $4, $5}' /proc/$dpid/status)
  groups=$(awk '/^Groups:/ {$1 = ""; print}' /proc/$dpid/status | tr -d ' ')
  if [ "$uids" = "$nuid $nuid $nuid $nuid" ] && [ "$gids" = "$ngid $ngid $ngid $ngid" ] &&
     [ "$groups" = "$ngid" ]; then ok; else
    bad "vidmmd --user nobody runs with uids '$uids', gids '$gids', groups '$groups'"
  fi
  if [ "$(stat -c %u "$sock")" = "$nuid" ]; then ok; else bad "the socket is not nobody's"; fi
  "$b/vidmmd" --socket "$t/root.sock" 2>"$t/root.log"
  rrc=$?
  if [ $rrc -eq 2 ] && grep -q 'refusing to run as root' "$t/root.log" && [ ! -e "$t/root.sock" ]; then ok; else
    bad "vidmmd as root without --user: exit $rrc, $(cat "$t/root.log")"
  fi
else
  echo "daemon: not root: the --user privilege drop is not tested"
fi
stop_clean "$t/log"
# Every share's export file went with its last holder.
if grep -q '^vidmmd: sharing: .* 0 export files open at shutdown$' "$t/log"; then ok; else
  bad "export files left open at shutdown"; fi
ev=$(sed -nE 's/.* ([0-9]+) evictions.*/\1/p' "$t/log")
if [ "${ev:-0}" -gt 0 ]; then ok; else bad "no eviction: not over-committed"; fi
grep -E '^vidmmd: (shutdown|sharing|residency|submissions|leak report)' "$t/log"

# ---- 3. limits
lsock="$t/limits.sock"
"$b/vidmmd" --socket "$lsock" $as_user --segment 1=8M --segment 2=16M --max-alloc-bytes 1M --max-handles 12 \
  --max-requests 4 --max-connections-per-uid 3 2>"$t/limits.log" &
dpid=$!
wait_socket "$lsock"
run "$b/tests/daemon/limits" "$lsock" 1048576 12 4 3
stop_clean "$t/limits.log"

# ---- 4. socket activation
asock="$t/activated.sock"
"$b/tests/daemon/listen_exec" "$asock" "$b/vidmmd" $as_user --socket "$t/not-this.sock" 2>"$t/act.log" &
dpid=$!
wait_socket "$asock"
run "$b/tests/daemon/multi" "$asock" stress 2 3 65536 5
if "$b/vidmm" info --socket "$asock" | grep -q "^daemon: vidmmd pid $dpid,"; then ok; else
  bad "vidmm info through the activated socket does not name daemon $dpid"; fi
# The daemon's views for scripts (docs/OUTPUTS.md "The daemon's views"):
# JSON that parses, with its format and the fields the schema names;
# CSV with the schema's header.
jcheck() { # name want_format python_expression_on_d cmd...
  name=$1; fmt=$2; expr=$3; shift 3
  if "$@" >"$t/j.out" 2>"$t/j.err" && python3 -c "
import json, sys
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    d = json.loads(line) if sys.argv[2] == 'lines' else None
    break
d = d if d is not None else json.load(open(sys.argv[1]))
assert d['format'] == sys.argv[3], d['format']
assert $expr
" "$t/j.out" "$( [ "$fmt" = vidmm-top/1 ] && echo lines || echo whole)" "$fmt"; then ok; else
    bad "$name: $(head -c 300 "$t/j.out") $(cat "$t/j.err")"; fi
}
jcheck "ps --json" vidmm-ps/1 "any(p['self'] and p['comm'] for p in d['processes']) and 'local_budget' in d['processes'][0]" \
  "$b/vidmm" ps --socket "$asock" --json
jcheck "info --socket --json" vidmm-daemon-info/1 "d['daemon']['pid'] == $dpid and len(d['segments']) > 1" \
  "$b/vidmm" info --socket="$asock" --json
jcheck "top --once --json" vidmm-top/1 "'evictions_per_s' in d['processes'][0] and d['frame'] == 0" \
  "$b/vidmm" top --socket "$asock" --once --json
if "$b/vidmm" ps --socket "$asock" --format csv | head -n 1 |
   grep -q '^connection,pid,uid,comm,allocations,allocated_bytes,local_usage,local_budget,'; then ok; else
  bad "ps --format csv: no schema header"; fi
if [ "$("$b/vidmm" top --socket "$asock" -n 2 --interval 0.05 --format=csv | grep -c '^[01],')" -ge 2 ]; then ok; else
  bad "top --format csv: a row per process per refresh"; fi
if "$b/vidmm" info --socket "$asock" --format csv | head -n 1 | grep -q '^id,kind,region,size,committed,free'; then ok
else bad "info --socket --format csv: no segment header"; fi
if grep -q "socket from the service manager" "$t/act.log" && [ ! -e "$t/not-this.sock" ]; then ok; else
  bad "the daemon did not take the passed socket: $(head -n 1 "$t/act.log")"; fi
stop_clean "$t/act.log"
if [ -S "$asock" ]; then ok; else bad "the daemon removed the service manager's socket"; fi
# Two descriptors: refused.  LISTEN_PID of another process: not ours, the
# daemon binds its own --socket.
sh -c 'LISTEN_FDS=2 LISTEN_PID=$$ exec "$@"' sh "$b/vidmmd" $as_user --socket "$t/two.sock" 2>"$t/two.log"
trc=$?
if [ $trc -eq 2 ] && grep -q 'want exactly one socket' "$t/two.log"; then ok; else
  bad "LISTEN_FDS=2: exit $trc, $(cat "$t/two.log")"; fi
LISTEN_FDS=1 LISTEN_PID=1 "$b/vidmmd" $as_user --socket "$t/own.sock" 2>"$t/own.log" &
dpid=$!
wait_socket "$t/own.sock"
if [ -S "$t/own.sock" ] && "$b/vidmm" ps --socket "$t/own.sock" >/dev/null; then ok; else
  bad "LISTEN_PID of another process: the daemon did not serve its own socket"; fi
stop_clean "$t/own.log"

# ---- 5. the unit files, as make install writes them (ExecStart names
# this build's daemon), through systemd's own checker when it is here.
if command -v systemd-analyze >/dev/null 2>&1; then
  mkdir -p "$t/units"
  bindir=$(cd "$b" && pwd)
  for u in vidmmd.service vidmmd.socket; do
    sed "s|@BINDIR@|$bindir|g" "daemon/systemd/$u.in" > "$t/units/$u"
  done
  if (cd "$t/units" && systemd-analyze verify --man=no ./vidmmd.socket ./vidmmd.service) >"$t/verify.log" 2>&1; then
    ok; else bad "systemd-analyze verify: $(cat "$t/verify.log")"; fi
else
  . tests/skip.sh
  optional "daemon: systemd unit check" "systemd-analyze is not installed"
fi

# ---- 6. the rest of the API and the D3DKMT front end.
sock2="$t/vidmmd2.sock"
"$b/vidmmd" --socket "$sock2" $as_user --allow-set-budget 2>"$t/log2" &
dpid=$!
wait_socket "$sock2"
run "$b/tests/daemon/api" "$sock2"
run "$b/vidmm-d3dkmt-tests" --remote "$sock2"
if VIDMMD_SOCKET="$sock2" timeout 60 "$b/examples/d3dkmt_client/d3dkmt_client" --remote >"$out" 2>&1; then
  echo "daemon: d3dkmt_client --remote ok"; ok
else
  cat "$out"; bad "d3dkmt_client --remote"
fi
stop_clean "$t/log2"
grep -E '^vidmmd: (shutdown|submissions|leak report)' "$t/log2"

# ---- 7. 4,096 clients at once: local segments that hold that many
# processes' page tables (128 KiB of local segment per connection here:
# 2 x 320 MiB hold about 5,100), a process bound above it, and the per-uid
# limit lifted (every test process runs as one uid); docs/DAEMON.md
# "How many clients".
sock3="$t/vidmmd-many.sock"
"$b/vidmmd" --socket "$sock3" $as_user --segment 1=320M --segment 2=320M --max-processes 4608 \
  --max-connections-per-uid 4608 2>"$t/log3" &
dpid=$!
wait_socket "$sock3"
run "$b/tests/daemon/many" "$sock3" 16 256
stop_clean "$t/log3"
grep -E '^vidmmd: (shutdown|leak report)' "$t/log3"

# ---- 8. the driver plug-in loader the daemon shares with the tool
# (support/plugin.c): a path that is not there and a library without
# vidmm_driver_entry are refused by both with the same words after their
# own prefix ("vidmm info: ", "vidmmd: "), the tool with exit status 2,
# the daemon with 1; minidrv's plug-in runs under both, and the daemon
# on it shuts down clean.
. tests/skip.sh
so="$b/examples/minidrv/minidrv.so"
if [ ! -f "$so" ] || [ ! -f "$b/libvidmm.so" ]; then
  skipped "daemon: the plug-in loader" "$so or $b/libvidmm.so is not built (make test builds both)" || bad "plug-in loader skipped"
else
  for drv in "$t/no-such-plugin.so" "$b/libvidmm.so"; do
    "$b/vidmm" info --driver "$drv" >"$out" 2>&1
    trc=$?
    timeout 60 "$b/vidmmd" --socket "$t/plugin.sock" $as_user --driver "$drv" >"$out.d" 2>&1
    drc=$?
    tm=$(sed -n 's/^vidmm info: \(--driver \)/\1/p' "$out")
    dm=$(sed -n 's/^vidmmd: \(--driver \)/\1/p' "$out.d")
    case "$drv" in *no-such*) want="cannot load it: " ;; *) want="no vidmm_driver_entry in it" ;; esac
    if [ $trc -eq 2 ] && [ $drc -eq 1 ] && [ -n "$tm" ] && [ "$tm" = "$dm" ] && echo "$tm" | grep -q "$want"; then ok; else
      bad "--driver $drv: tool (exit $trc) and daemon (exit $drc) differ: '$tm' / '$dm'"
    fi
  done
  if "$b/vidmm" info --driver "$so" >"$out" 2>&1 && grep -q "driver 'minidrv'" "$out"; then ok; else
    cat "$out"; bad "vidmm info --driver minidrv.so"; fi
  sock4="$t/vidmmd-plugin.sock"
  "$b/vidmmd" --socket "$sock4" $as_user --driver "$so" 2>"$t/log4" &
  dpid=$!
  wait_socket "$sock4"
  if "$b/vidmm" info --socket "$sock4" >"$out" 2>&1 && grep -q "driver minidrv" "$t/log4"; then ok; else
    cat "$out" "$t/log4"; bad "vidmmd --driver minidrv.so serves"; fi
  stop_clean "$t/log4"
fi

echo "daemon: $p passed, $f failed"
[ "$f" -eq 0 ]
