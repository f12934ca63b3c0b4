#!/bin/sh
# tool_test.sh - end-to-end checks of the vidmm command-line tool.
# Usage: tool_test.sh path/to/vidmm.  Prints "N passed, M failed".
tool=${1:-build/vidmm}
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED tool: $1"; }
. tests/skip.sh

expect_rc() { # want_rc name cmd...
  want=$1; name=$2; shift 2
  "$@" >/tmp/vidmm_tool_out.$$ 2>&1
  rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$name (rc $rc, want $want)"; cat /tmp/vidmm_tool_out.$$; fi
}
expect_out() { # name pattern cmd...
  name=$1; pat=$2; shift 2
  if "$@" 2>&1 | grep -q -- "$pat"; then ok; else bad "$name (no '$pat')"; fi
}

for p in dgpu igpu wddm1 big; do
  expect_rc 0 "info $p" "$tool" info --adapter "$p"
done
expect_out "info shows paging segment" "paging buffers: segment 3" "$tool" info
expect_out "info shows host aperture" "host-aperture=16 MiB" "$tool" info
expect_out "wddm1 has an AGP segment" "AGP segment: 3" "$tool" info --adapter wddm1
expect_out "big preset is 80 GiB" "80 GiB" "$tool" info --adapter big
expect_out "info shows the GpuMmu geometry" "level 0 (leaf)" "$tool" info
expect_out "igpu has no GpuMmu" "GpuMmu: not used" "$tool" info --adapter igpu
expect_out "segment override" "512 MiB" "$tool" info --segment 2=512M
expect_rc 2 "bad segment size (not a page multiple)" "$tool" info --segment 2=100K
expect_rc 2 "bad segment spec" "$tool" info --segment banana
expect_rc 2 "unknown preset" "$tool" info --adapter nosuch
expect_rc 2 "unknown command" "$tool" frobnicate
expect_rc 2 "no command" "$tool"
expect_rc 0 "help" "$tool" --help
expect_out "version" "vidmm 0" "$tool" --version
expect_out "presets" "wddm1" "$tool" presets
expect_out "info --json format" '"format": "vidmm-info/1"' "$tool" info --json
if command -v python3 >/dev/null 2>&1; then
  if "$tool" info --json --adapter wddm1 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["segments"])==5 and d["segments"][3]["kind"]=="agp"'; then ok; else bad "info --json parses"; fi
else
  skipped "tool: info --json parses" "python3 is not installed" || bad "info --json parses (no python3)"
fi
expect_rc 0 "vamap" "$tool" vamap
expect_out "vamap shows a mapping" "texture+0x0" "$tool" vamap
expect_rc 0 "vamap on wddm1" "$tool" vamap --adapter wddm1
expect_rc 2 "vamap needs GpuMmu" "$tool" vamap --adapter igpu

# Every verb answers --help and `vidmm help VERB` on stdout with exit 0:
# its usage line, and the exit status table.  The verbs come from the
# tool's own list, so a new verb is covered without editing this file.
verbs=$("$tool" --help | sed -n '/^verbs:/,/^$/p' | awk 'NR > 1 && $1 !~ /^-/ && NF {print $1}')
[ -n "$verbs" ] && ok || bad "vidmm --help lists verbs"
for v in $verbs; do
  out=$("$tool" "$v" --help 2>/dev/null); rc=$?
  if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | head -1 | grep -q "^usage: vidmm $v" &&
     printf '%s\n' "$out" | grep -q "^exit status:" && printf '%s\n' "$out" | grep -q "^  2 *usage error"; then
    ok; else bad "$v --help (rc $rc)"; fi
  if [ "$("$tool" help "$v" 2>/dev/null)" = "$out" ]; then ok; else bad "help $v differs from $v --help"; fi
done
expect_rc 0 "--help after other arguments" "$tool" run desktop --frames 3 --help
expect_out "run --help lists the policies" "lru, adaptive" "$tool" run --help
expect_out "run --help lists the scenarios" "scenarios: desktop" "$tool" help run
expect_out "info --help lists the presets" "dgpu, igpu, wddm1 or big" "$tool" info --help
expect_rc 2 "help of an unknown verb" "$tool" help nosuch

# Usage errors exit 2 and name the argument, its value and what is allowed.
usage_err() { # name pattern cmd...
  name=$1; pat=$2; shift 2
  "$@" >/tmp/vidmm_tool_out.$$ 2>&1
  rc=$?
  if [ "$rc" -eq 2 ] && grep -q -- "$pat" /tmp/vidmm_tool_out.$$; then ok
  else bad "$name (rc $rc, want 2 and '$pat')"; cat /tmp/vidmm_tool_out.$$; fi
}
usage_err "unknown verb names it and the verbs" "no verb 'frobnicate' (info, demo" "$tool" frobnicate
usage_err "segment beyond the preset" "--segment 9=64M: no driver segment 9 (dgpu: 1-3)" "$tool" info --segment 9=64M
usage_err "segment beyond wddm1" "--segment 5=64M: no driver segment 5 (wddm1: 1-4)" "$tool" run desktop --adapter wddm1 --segment 5=64M
usage_err "segment 0" "segment 0 is system memory" "$tool" info --segment 0=64M
usage_err "segment size not a page multiple" "not a multiple of segment 2's 64 KiB page" "$tool" info --segment 2=100K
usage_err "segment size not a size" "size 'lots' is not a size" "$tool" info --segment 2=lots
usage_err "segment syntax" "--segment banana: want ID=SIZE" "$tool" vamap --segment banana
usage_err "unknown preset lists the presets" "--adapter nosuch: no such softgpu preset (dgpu, igpu, wddm1 or big)" "$tool" info --adapter nosuch
usage_err "missing value" "--adapter needs a value" "$tool" info --adapter
usage_err "unknown option" "unknown option '--frobnicate'" "$tool" info --frobnicate
usage_err "demo preset" "--adapter igpu: the demonstration runs on dgpu or big" "$tool" demo --adapter igpu
usage_err "vamap preset" "--adapter igpu: no GpuMmu page tables" "$tool" vamap --adapter igpu
usage_err "unknown policy lists the policies" "--policy nosuch: no such policy (lru, adaptive, belady or reuse)" "$tool" run game --policy nosuch
usage_err "bad format" "--format xml: no such format (text, json or csv)" "$tool" run game --format xml
usage_err "bad frames" "--frames 0: want a number of frames, 1-100000" "$tool" run game --frames 0
usage_err "bad seed" "--seed x1: not a number" "$tool" run game --seed x1
usage_err "unknown scenario lists them" "'nosuch': neither a built-in scenario (desktop, game" "$tool" run nosuch
usage_err "two scenarios" "'game': one scenario or file at a time" "$tool" run desktop game
usage_err "bad --fail-driver op" "--fail-driver nosuch:3: want OP:K" "$tool" run desktop --fail-driver nosuch:3
usage_err "bad --fail-driver mode" "--fail-driver submit_command:3:often: want OP:K" "$tool" run desktop --fail-driver submit_command:3:often
# A refused paging submission, once and from then on: the end state is sound.
expect_out "--fail-driver counts" "driver op submit_command: [1-9][0-9]* calls, 0 refused" "$tool" run desktop --frames 1 --fail-driver submit_command:0
expect_rc 0 "--fail-driver once" "$tool" run desktop --frames 1 --fail-driver submit_command:5:once
expect_rc 0 "--fail-driver sticky" "$tool" run desktop --frames 1 --fail-driver build_paging_buffer:40:sticky
# A restore into the aperture whose map and rollback were refused: the
# reset writes the aperture mapping again (gpu.aperture_entry_owned).
expect_rc 0 "--fail-driver aperture map rewritten by the reset" "$tool" run desktop --segment 1=4M --segment 2=8M --frames 2 --fail-driver submit_command:11:sticky
usage_err "replay adapter option" "--adapter: a replay takes the adapter" "$tool" replay x.trace --adapter big
usage_err "gen --calls range" "--calls 0: want 1-100000" "$tool" gen --calls 0
usage_err "gen adapter" "--adapter igpu: generated scenarios use dgpu or wddm1" "$tool" gen --adapter igpu
usage_err "gen has no --save" "unknown option '--save'" "$tool" gen --save /tmp
usage_err "fuzz: --seconds and --count" "--seconds and --count: give one" "$tool" fuzz-scenarios --seconds 1 --count 1
usage_err "shrink needs a file" "which scenario file?" "$tool" shrink
usage_err "scenarios takes no arguments" "takes no arguments, not 'x'" "$tool" scenarios x
usage_err "drvcheck group" "--groups query,foo: no group 'foo'" "$tool" drvcheck --groups query,foo
usage_err "drvcheck driver that cannot load" "--driver /nonexistent.so: cannot load it" "$tool" drvcheck --driver /nonexistent.so

# Belady without next-use hints says so instead of silently matching LRU.
expect_out "belady warns" "warning: policy belady has no next-use hints" "$tool" run igpu --frames 1 --policy belady
if "$tool" run igpu --frames 1 2>&1 | grep -q "belady"; then bad "no belady warning under lru"; else ok; fi

# Progress: on stderr when asked (or a terminal), never on stdout, never
# unasked into a pipe.
"$tool" run game --frames 4 --progress >/tmp/vidmm_tool_out.$$ 2>/tmp/vidmm_tool_err.$$
if grep -q "frames 3/4" /tmp/vidmm_tool_err.$$ && ! grep -q "frames 3/4" /tmp/vidmm_tool_out.$$; then ok; else bad "run --progress on stderr"; fi
"$tool" run game --frames 4 >/dev/null 2>/tmp/vidmm_tool_err.$$
if grep -q "%" /tmp/vidmm_tool_err.$$; then bad "no progress into a pipe unasked"; else ok; fi
"$tool" run game --frames 4 >/tmp/vidmm_tool_out.$$ 2>/dev/null
"$tool" run game --frames 4 --progress 2>/dev/null | cmp -s - /tmp/vidmm_tool_out.$$ && ok || bad "--progress changes the report"
rm -f /tmp/vidmm_tool_err.$$

# HTML report: the paging chart varies with the workload (bytes per
# interval of calls; per interval of the simulated clock every busy bar
# was the same height), and the usage charts draw data or say there is
# none.
if command -v python3 >/dev/null 2>&1; then
  "$tool" run desktop --html /tmp/vidmm_tool_html.$$ >/dev/null 2>&1
  if python3 - /tmp/vidmm_tool_html.$$ <<'PY'
import re, sys
h = open(sys.argv[1]).read()
svg = re.search(r'<svg[^>]*id="paging-bandwidth".*?</svg>', h, re.S).group(0)
tops = {}
for d in re.findall(r'<path class="series" fill[^>]*d="([^"]*)"', svg):
    for x, yt in re.findall(r'M([0-9.]+) [0-9.]+H[0-9.]+V([0-9.]+)H', d):
        tops[x] = min(tops.get(x, 1e9), float(yt))
peak = min(tops.values())
at_peak = sum(1 for v in tops.values() if v - peak < 1)
assert len(tops) >= 8 and len(set(round(v) for v in tops.values())) >= 5 and at_peak * 2 < len(tops), tops
assert 'No process used non-local memory during the run' in h
assert re.search(r'<svg[^>]*id="usage-local"', h)
PY
  then ok; else bad "HTML paging chart varies, usage charts show data or say none"; fi
  "$tool" run igpu --frames 3 --html /tmp/vidmm_tool_html.$$ >/dev/null 2>&1
  if grep -q 'id="usage-non-local"' /tmp/vidmm_tool_html.$$; then ok; else bad "igpu non-local usage chart"; fi
  rm -f /tmp/vidmm_tool_html.$$
else
  skipped "tool: HTML charts" "python3 is not installed" || bad "HTML charts (no python3)"
fi

# The memory map: well-formed SVG, one row per segment, each at its own
# scale (a row is 1000 px whatever the segment's size), every extent of a
# placed allocation drawn, the same bytes from run to run.
m=/tmp/vidmm_tool_memmap.$$
if "$tool" run desktop --memmap "$m.1" >/dev/null 2>&1 && "$tool" run desktop --memmap "$m.2" >/dev/null 2>&1 &&
   python3 - "$m.1" <<'PY'
import re, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
labels = [t.text for t in root.iter(ns + 'text')]
assert len(labels) == 3, labels                      # dgpu: segments 1-3
assert all(re.search(r'segment \d+ \(\w+\): .*1 px = ', l) for l in labels), labels
rows = [r for r in root.iter(ns + 'rect') if r.get('width') == '1000']
assert len(rows) == 3, len(rows)                     # each segment over the full width
allocs = [r for r in root.iter(ns + 'rect') if r.find(ns + 'title') is not None]
assert len(allocs) > 10, len(allocs)
for r in allocs:
    x, w = float(r.get('x')), float(r.get('width'))
    assert 10 <= x and x + w <= 1010.01, (x, w)      # inside its row
PY
then ok; else bad "--memmap: SVG rows, scales, extents"; fi
if cmp -s "$m.1" "$m.2"; then ok; else bad "--memmap differs between two runs of the same scenario"; fi
rm -f "$m.1" "$m.2"

# The demo runs once (it pages about 3 GiB); its output is checked line by line.
"$tool" demo >/tmp/vidmm_demo_out.$$ 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "demo (rc $rc)"; tail -20 /tmp/vidmm_demo_out.$$; fi
demo_has() { if grep -q -- "$2" /tmp/vidmm_demo_out.$$; then ok; else bad "$1 (no '$2')"; fi; }
demo_has "demo integrity" "integrity: 21 of 21 read-backs matched; adapter check: clean"
demo_has "demo moves" "move texture"
demo_has "demo over-commits 2x" "(2.0x) =="
demo_has "demo over-commit integrity" ", 0 failures"
demo_has "demo evicts and restores" "restores ("
demo_has "demo budget refusals" "refused over budget"
demo_has "demo engine reset" "1 hang found, 1 engine reset, 0 adapter resets"
demo_has "demo adapter reset content" "editor's clean texture: restored; editor's CPU-written texture: lost, reads zero"
demo_has "demo page tables rebuilt" "rebuilt page tables: ok"
demo_has "demo standby and resume" "every byte back (GPU checksum and CPU read): yes"
demo_has "demo recovery integrity" "recovery integrity: 0 failures; adapter check: clean"
demo_has "demo final check" "adapter check after the demo: clean"
rm -f /tmp/vidmm_demo_out.$$

# ---- a new user's mistakes: GNU options, scenario-file typos, outputs ----
# GNU conventions (getopt_long): --name=value, -ovalue, -- before operands.
t=/tmp/vidmm_tool_pc.$$
mkdir -p "$t"
expect_rc 0 "--frames=2 and -oFILE" "$tool" run desktop --frames=2 "-o$t/r.txt"
if grep -q "2 frames" "$t/r.txt" 2>/dev/null; then ok; else bad "-oFILE did not get the 2-frame report"; fi
expect_rc 0 "-- before the scenario" "$tool" run --frames 1 -- desktop
expect_out "a known option given a value is named" "--async takes no value" "$tool" run desktop --async=1
expect_rc 2 "fuzz-scenarios --count 0 is refused" "$tool" fuzz-scenarios --count 0
expect_rc 2 "fuzz-scenarios --seconds 0 is refused" "$tool" fuzz-scenarios --seconds 0
# Outputs are checked before the run, with the system's reason.
expect_out "-o into a missing folder: before the run, with the reason" "No such file or directory" \
  "$tool" run desktop -o /nonexistent/dir/x.txt
if "$tool" run desktop -o /nonexistent/dir/x.txt 2>&1 | grep -q "rules checked"; then
  bad "-o into a missing folder: the run went ahead"; else ok; fi
expect_out "--html DIR is refused with the reason" "Is a directory" "$tool" run desktop --html "$t"
expect_out "run of a missing file gives the reason" "No such file or directory" "$tool" run "$t/none.scn"
if [ "$(id -u)" != 0 ]; then
  echo "adapter dgpu" > "$t/unreadable.scn"; chmod 000 "$t/unreadable.scn"
  expect_out "run of an unreadable file says Permission denied" "Permission denied" "$tool" run "$t/unreadable.scn"
fi
# Scenario files: unknown keys and values are errors with FILE:LINE and the valid set.
printf 'adapter dgpu\nprocess P1\ndevice D1 P1\ncreate2 A1 flags=- kind=texture size=1M cpuu=1\n' > "$t/k.scn"
expect_rc 1 "an unknown key fails the run" "$tool" run "$t/k.scn"
expect_out "the unknown key is named with FILE:LINE and the keys" "k.scn:4: unknown key 'cpuu' for create2 (.*cpu=" \
  "$tool" run "$t/k.scn"
printf 'adapter dgpu\nprocess P1\ndevice D1 P1\nqueue Q1 D1 priorty=high\n' > "$t/q.scn"
expect_out "a misspelt queue key is named" "q.scn:4: unknown key 'priorty' for queue (priority=)" "$tool" run "$t/q.scn"
printf 'adapter dgpu\nprocess P1\ndevice D1 P1\nqueue Q1 D1 priority=high\n' > "$t/p.scn"
expect_out "a bad queue priority is named" "p.scn:4: queue priority: an integer" "$tool" run "$t/p.scn"
printf 'adapter dgpu\nprocess P1\ncolour=red\n' > "$t/c.scn"
expect_out "an unknown verb lists the verbs" "c.scn:3: unknown verb 'colour=red' (frame, " "$tool" run "$t/c.scn"
printf 'adapter dgpu\nprocess P1\ndevice D1 P1\ncreate2 A1 flags=- kind=textur size=1M\n' > "$t/t.scn"
expect_out "an unknown kind lists the kinds" "t.scn:4: unknown allocation kind 'textur' (kind=texture|" "$tool" run "$t/t.scn"
if [ -z "$("$tool" run "$t/t.scn" 2>/dev/null)" ]; then ok; else bad "a malformed file still printed a report"; fi
# The daemon's tools: a missing socket says so and how to start vidmmd.
expect_rc 1 "ps on a missing socket" "$tool" ps --socket "$t/none.sock"
expect_out "ps on a missing socket says how to start vidmmd" "vidmmd --socket $t/none.sock" "$tool" ps --socket "$t/none.sock"
expect_out "info --socket on a missing socket" "no vidmmd socket at" "$tool" info --socket "$t/none.sock"
expect_rc 2 "ps --format xml is refused" "$tool" ps --format xml
# With no socket named, the default search includes the system service's.
expect_out "the default search names the systemd socket" "/run/vidmmd/vidmmd.sock" \
  env VIDMMD_SOCKET= XDG_RUNTIME_DIR="$t" "$tool" ps
expect_out "info --format csv" "^id,kind,base_address,size" "$tool" info --format csv
# vidmmd: GNU options, --version, a bad option and a bad preset named.
vidmmd=$(dirname "$tool")/vidmmd
if [ -x "$vidmmd" ]; then
  expect_out "vidmmd --version" "^vidmmd 0" "$vidmmd" --version
  expect_rc 2 "vidmmd --bogus" "$vidmmd" --bogus
  expect_out "vidmmd --bogus is named" "unknown option '--bogus'" "$vidmmd" --bogus
  expect_out "vidmmd --preset xyz lists the presets" "no such softgpu preset (dgpu, igpu, wddm1, big)" \
    "$vidmmd" --preset xyz
fi
# A recorded trace under another eviction policy: the differences listed,
# the paging compared, exit status 0 (a refusal before).
"$tool" run desktop --record "$t/d.trace" >/dev/null 2>&1
expect_rc 0 "replay a trace under another policy" "$tool" replay "$t/d.trace" --policy adaptive
expect_out "the replay compares the policies' paging" "policy comparison, [0-9]* calls" \
  "$tool" replay "$t/d.trace" --policy adaptive
expect_out "the replay lists an outcome that differs with FILE:LINE" "d.trace:[0-9]*: make-resident: recorded" \
  "$tool" replay "$t/d.trace" --policy adaptive
expect_out "run of a trace under another policy points at the comparison" "vidmm replay .*--policy adaptive" \
  "$tool" run "$t/d.trace" --policy adaptive
rm -rf "$t"
# ---- end of the new user's mistakes ----

# ---- the test runner's own output (tests/main.c, tests/harness/test.c) ----
# A line per suite as it ends, flushed into a pipe; a labelled summary; a
# filter that matches no test is an error.
tests_bin=$(dirname "$tool")/vidmm-tests
if [ -x "$tests_bin" ]; then
  "$tests_bin" status > /tmp/vidmm_tool_out.$$ 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^suite status: [0-9]* tests, 0 failing' /tmp/vidmm_tool_out.$$ &&
     grep -q '^unit: [0-9]* passed, 0 failed$' /tmp/vidmm_tool_out.$$; then ok; else
    bad "vidmm-tests status: a suite line and a labelled summary (rc $rc)"; cat /tmp/vidmm_tool_out.$$; fi
  # Lines reach a pipe as they are written: head takes the seed and the
  # first suite's line and closes the pipe, and the whole run (minutes)
  # stops at its next line, a few seconds in.  Buffered, it would run on
  # to the end and timeout would stop it.
  first=$(timeout 60 sh -c "\"$tests_bin\" 2>/dev/null | head -n 2" | tail -n 1)
  case $first in "suite status:"*) ok ;; *) bad "no suite line through a pipe within 60 s: '$first'" ;; esac
  expect_rc 2 "vidmm-tests with a filter that matches no test" "$tests_bin" no_such_suite_xyz
  expect_out "vidmm-tests names the filter that matched nothing" "no test name contains 'no_such_suite_xyz'" \
    "$tests_bin" no_such_suite_xyz
fi
# ---- end of the runner's output checks ----
rm -f /tmp/vidmm_tool_out.$$
echo "tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
