#!/bin/sh
# trace_test.sh - end-to-end checks of `vidmm run` and `vidmm replay`:
# every built-in scenario runs clean; record -> replay gives a
# byte-identical report (and trace, snapshot, timeline, HTML report); the
# HTML report is well-formed, self-contained and has its charts; a tampered
# result is detected; scenario files; the JSON outputs parse and agree
# with the run; CSV has its header; bad input gives the documented exit
# codes.  Usage: trace_test.sh path/to/vidmm.  Prints "trace: N passed,
# M failed".
tool=${1:-build/vidmm}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED trace: $1"; }
. tests/skip.sh
check() { # name cmd...: passes when cmd succeeds
  name=$1; shift
  if "$@" >"$dir/check.out" 2>&1; then ok; else bad "$name"; sed -n 1,20p "$dir/check.out"; fi
}
rc_is() { # want name cmd...
  want=$1; name=$2; shift 2
  "$@" >"$dir/rc.out" 2>&1
  rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$name (rc $rc, want $want)"; sed -n 1,20p "$dir/rc.out"; fi
}
# A recorded trace edited by hand no longer matches its end record: the
# tampering checks below make it a version-1 trace (no end record), as
# docs/TRACE_FORMAT.md says to, so that the replay's own comparison of
# results is what finds the change.
unseal() { sed '1s/^vidmm-trace 2$/vidmm-trace 1/;/^end calls=/d'; }
has() { # name file pattern
  if grep -q -- "$3" "$2"; then ok; else bad "$1 (no '$3' in $(basename "$2"))"; fi
}

# ---- every built-in scenario: clean run, exact replay -------------------
# A scenario that breaks a WDDM rule today (sweep:SCENARIO:lru in
# tests/known_defects) runs without the rules checker here, so its run and
# replay still go to the end and can be compared; its check-adapter lines
# (which always check the rules) may answer MISMATCH, and its exit status
# may be 1.  tests/sweep.sh is where the rules are swept.
want_rc() { if grep -q "^sweep:$1:lru\b" tests/known_defects 2>/dev/null; then echo 1; else echo 0; fi; }
rules_opt() { if [ "$(want_rc "$1")" -eq 1 ]; then echo --no-rules; fi; }
for s in desktop game compute igpu; do
  "$tool" run "$s" $(rules_opt "$s") --record "$dir/$s.trace" --snapshot "$dir/$s.snap" --timeline "$dir/$s.tl" \
    --html "$dir/$s.html" >"$dir/$s.run" 2>"$dir/$s.err"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq "$(want_rc "$s")" ]; then ok; else bad "run $s (rc $rc)"; cat "$dir/$s.err"; fi
  has "run $s: no mismatches" "$dir/$s.run" "read-backs: .* 0 mismatches"
  has "run $s: adapter clean" "$dir/$s.run" "after the last call: clean"
  has "trace $s has a header" "$dir/$s.trace" "^vidmm-trace 2$"
  check "trace $s ends with its end record" sh -c "tail -n 1 '$dir/$s.trace' | grep -q '^end calls=[0-9]* checksum=0x[0-9a-f]\{16\}$'"
  "$tool" replay "$s" >/dev/null 2>&1 && bad "replay of a scenario name must fail" || ok
  "$tool" replay "$dir/$s.trace" $(rules_opt "$s") --record "$dir/$s.retrace" --snapshot "$dir/$s.resnap" \
    --timeline "$dir/$s.retl" --html "$dir/$s.rehtml" >"$dir/$s.replay" 2>"$dir/$s.replay.err"
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq "$(want_rc "$s")" ]; then ok; else bad "replay $s (rc $rc)"; cat "$dir/$s.replay.err"; fi
  check "replay $s: report byte-identical" cmp "$dir/$s.run" "$dir/$s.replay"
  check "replay $s: re-recorded trace identical" cmp "$dir/$s.trace" "$dir/$s.retrace"
  check "replay $s: snapshot identical" cmp "$dir/$s.snap" "$dir/$s.resnap"
  check "replay $s: timeline identical" cmp "$dir/$s.tl" "$dir/$s.retl"
  check "replay $s: HTML report identical" cmp "$dir/$s.html" "$dir/$s.rehtml"
  has "replay $s: verdict" "$dir/$s.replay.err" "0 differ (exact replay)"
done
has "desktop over-commits (evictions)" "$dir/desktop.run" "^evictions: [1-9]"
has "desktop budget refusals" "$dir/desktop.run" "E_OVER_BUDGET"
has "desktop reclaims offers" "$dir/desktop.trace" "^reclaim Q2"
has "game flips every frame" "$dir/game.trace" "^flip 0 A2 = OK"
has "game: 30 frames" "$dir/game.run" ", 30 frames"
has "compute: the probe faults" "$dir/compute.run" "GPU accesses that faulted: 1"
has "compute: discards clean chunks" "$dir/compute.run" "discarded clean: [1-9]"
has "igpu runs in IoMmu mode" "$dir/igpu.run" "(IoMmu)"
check "IoMmu maps record no VA" sh -c "grep -q '^map' '$dir/igpu.trace' && ! grep '^map' '$dir/igpu.trace' | grep -q 'va='"

# ---- command submission: recorded, replayed, results checked ---------------
has "game: a virtual-mode context" "$dir/game.trace" "^context C1 D1 node=graphics mode=virtual = OK$"
has "game: command buffers recorded" "$dir/game.trace" "^cmdbuf B1 cmds=fill:V[0-9]*:1048576:0x9e3779b9,checksum:.* to=A[0-9]* offset=0 = OK size=152 sum=0x"
has "game: submits every frame" "$dir/game.trace" "^submit-virtual C1 va=V[0-9]* size=152 = OK fence=30$"
has "game: waits on the context fence" "$dir/game.trace" "^context-wait C1 fence=30 = OK$"
has "game: fence query" "$dir/game.trace" "^context-fence C1 = OK submitted=30 completed=30$"
has "compute: submits its chunks" "$dir/compute.trace" "^submit-virtual C1 va=V[0-9]* size=96 = OK fence=[0-9]"
has "desktop: a physical-mode context" "$dir/desktop.trace" "^context C1 D1 node=copy mode=physical = OK$"
has "desktop: first physical submission patches everything" "$dir/desktop.trace" \
  "^submit-physical C1 B1 allocs=A2,A3:write patches=1+4096@8,0+0@16,.* flags=- = OK fence=1 patched=6$"
has "desktop: a reused buffer is not patched again" "$dir/desktop.trace" "flags=reused = OK fence=2 patched=0$"
has "desktop: a moved ring is patched again" "$dir/desktop.trace" "flags=reused = OK fence=3 patched=2$"
for s in game compute desktop; do
  has "$s: GPU results all match" "$dir/$s.run" "^GPU results checked: [1-9][0-9]*, 0 mismatches$"
  check "$s: every checksum result equals the CPU's expectation" sh -c \
    "grep '^result ' '$dir/$s.trace' | awk '{ e=\$4; sub(/expect=/, \"\", e); v=\$NF; sub(/value=/, \"\", v);
       n++; if (e != v || \$6 != \"OK\") bad++ } END { exit !(n > 0 && bad == 0) }'"
done
has "game: report counts submissions" "$dir/game.run" "^submissions: 30 virtual, 0 physical, 0 failed; 150 commands built$"
has "desktop: report counts physical submissions" "$dir/desktop.run" "^submissions: 0 virtual, 12 physical, 0 failed"
has "desktop: report counts context waits" "$dir/desktop.run" "^context fence waits: 12;"
sed '0,/^submit-virtual \(.*\) = OK fence=3$/s//submit-virtual \1 = OK fence=4/' "$dir/game.trace" | unseal >"$dir/tsub.trace"
check "submission tamper changed a line" sh -c "! cmp -s '$dir/game.trace' '$dir/tsub.trace'"
rc_is 1 "replay detects a tampered submission fence" "$tool" replay "$dir/tsub.trace"
has "replay names the tampered submission" "$dir/rc.out" "submit-virtual: recorded 'OK fence=4', replay gave 'OK fence=3'"
sed '0,/flags=reused = OK fence=3 patched=2$/s//flags=reused = OK fence=3 patched=0/' "$dir/desktop.trace" | unseal >"$dir/tphys.trace"
rc_is 1 "replay detects a tampered patch count" "$tool" replay "$dir/tphys.trace"
has "replay names the tampered physical submission" "$dir/rc.out" "submit-physical: recorded 'OK fence=3 patched=0', replay gave 'OK fence=3 patched=2'"
sed '0,/^result \(A[0-9]* offset=8 expect=0x[0-9a-f]*\) = OK value=0x[0-9a-f]*$/s//result \1 = OK value=0x1/' \
  "$dir/compute.trace" | unseal >"$dir/tres.trace"
rc_is 1 "replay detects a tampered checksum result" "$tool" replay "$dir/tres.trace"
has "replay names the tampered result" "$dir/rc.out" "result: recorded 'OK value=0x1'"
sed '0,/^\(cmdbuf B1 cmds=fill:V[0-9]*:1048576:\)0x9e3779b9/s//\10x9e3779ba/' "$dir/game.trace" | unseal >"$dir/tcmd.trace"
rc_is 1 "replay detects a changed command (checksums differ)" "$tool" replay "$dir/tcmd.trace"
has "a changed command gives other bytes" "$dir/rc.out" "cmdbuf: recorded 'OK size=152 sum=0x"

# ---- JSON, snapshot and timeline: identical on replay, and they agree ----
# The JSON report of a replay is the run's (same calls): check it against
# the run's snapshot and timeline.
"$tool" replay "$dir/desktop.trace" --format json -o "$dir/d.json" 2>/dev/null
check "json report written" test -s "$dir/d.json"
"$tool" replay "$dir/igpu.trace" $(rules_opt igpu) --format json -o "$dir/i1.json" 2>/dev/null
"$tool" run igpu $(rules_opt igpu) --format json -o "$dir/i2.json" 2>/dev/null
check "json report identical on replay" cmp "$dir/i1.json" "$dir/i2.json"
if command -v python3 >/dev/null 2>&1; then
  check "JSON outputs parse and agree with the run" python3 - "$dir/d.json" "$dir/desktop.snap" "$dir/desktop.tl" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1])); snap = json.load(open(sys.argv[2])); tl = json.load(open(sys.argv[3]))
assert rep["format"] == "vidmm-report/1"
# The report's own numbers are consistent.
assert rep["calls"]["total"] == sum(v["calls"] for v in rep["calls"]["by_verb"].values())
assert rep["calls"]["total"] == sum(rep["calls"]["by_status"].values())
assert rep["integrity"]["mismatches"] == 0 and rep["integrity"]["final_check"] == "clean"
sub = rep["submission"]
assert sub["physical"] == 12 and sub["virtual"] == 0 and sub["failed"] == 0
assert sub["context_fence_waits"] == 12 and sub["gpu_results"] == 24 and sub["gpu_result_mismatches"] == 0
assert sub["patch_locations_written"] + sub["patch_locations_skipped"] == 6 * 12
assert rep["allocations"]["live"] == rep["allocations"]["resident"] + rep["allocations"]["evicted"]
# Snapshot: GpuMemDump layout, one heap and pool per segment, blocks tile the segment.
assert snap["General"]["API"] == "Direct3D 12"
assert set(snap["MemoryInfo"]) == set(snap["DefaultPools"])
assert len(snap["MemoryInfo"]) == len(rep["segments"])
assert snap["General"]["vidmm"]["live_allocations"] == rep["allocations"]["live"]
names = set()
for seg in rep["segments"]:
    key = "Segment %d (%s)" % (seg["id"], seg["kind"])
    heap = snap["MemoryInfo"][key]
    assert heap["Size"] == seg["size"] and heap["Budget"]["UsageBytes"] == seg["committed"]
    pool = snap["DefaultPools"][key]
    for b in pool["Blocks"].values():
        at = 0
        for s in b["Suballocations"]:
            assert s["Offset"] == at, (key, s, at)
            assert s["Type"] in ("FREE", "BUFFER", "TEXTURE2D", "UNKNOWN")
            at += s["Size"]
            if s["Type"] != "FREE": names.add(s["Name"].split()[0])
        assert at == b["TotalBytes"] == seg["size"], key
        assert b["UnusedBytes"] == seg["free"]
    for d in pool["DedicatedAllocations"]:
        names.add(d["Name"].split()[0])
assert len(names) == rep["allocations"]["live"], (len(names), rep["allocations"])
# Timeline: Chrome trace events; one call slice per call, paging bytes and
# evictions add up to the report's.
ev = tl["traceEvents"]
calls = [e for e in ev if e.get("cat") == "call"]
assert len(calls) == rep["calls"]["total"]
assert sum(1 for e in calls if e["name"] == "make-resident") == rep["calls"]["by_verb"]["make-resident"]["calls"]
for op, v in rep["paging"]["operations"].items():
    got = sum(e["args"]["bytes"] for e in ev if e.get("cat") == "paging" and e["name"] == op)
    assert got == v["bytes"], (op, got, v)
inst = lambda n: sum(e["args"]["count"] for e in ev if e["ph"] == "i" and e["name"] == n)
assert inst("evict") + inst("discard") == rep["residency"]["evictions"]
assert inst("restore") == rep["residency"]["restores"]
assert any(e["ph"] == "C" and e["name"] == "local memory" for e in ev)
# No two slices overlap on one track (Perfetto's rule for JSON traces).
tracks = {}
for e in ev:
    if e["ph"] == "X": tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["dur"]))
for t, sl in tracks.items():
    sl.sort()
    for (a, d), (b, _) in zip(sl, sl[1:]):
        assert a + d <= b, t
EOF
else
  skipped "trace: JSON outputs parse and agree with the run" "python3 is not installed" || bad "JSON outputs parse and agree with the run (no python3)"
fi

# ---- HTML report: well-formed, self-contained, every chart drawn -----------
# tests/html_check.py parses it with html.parser and checks the structure;
# the headless-Chromium rendering check is tests/html_render_test.sh.
if command -v python3 >/dev/null 2>&1; then
  for s in desktop game compute igpu; do
    check "HTML report $s: well-formed, charts present" python3 tests/html_check.py "$dir/$s.html" "$dir/$s.run"
  done
  # Names come from trace files: everything is escaped, bad bytes replaced.
  printf 'scenario a<b>&"c'"'"'\nadapter dgpu\nprocess P1 name=<script>alert(1)</script>\nprocess P2 name=caf\303\251\377\001\ndevice D1 P1\nqueue Q1 D1\ncreate2 A1 kind=texture size=1M cpu=1 name=x<y&z\nmap V1 P1 A1\nmake-resident D1 Q1 A1 = OK\n' \
    >"$dir/esc.scn"
  rc_is 0 "HTML report of a scenario file with markup in its names" "$tool" run "$dir/esc.scn" --html "$dir/esc.html"
  check "HTML report: names escaped" python3 tests/html_check.py "$dir/esc.html" "$dir/rc.out"
  check "HTML report: no raw markup from names" sh -c "! grep -q '<script\\|<y&\\|<b>' '$dir/esc.html'"
  has "HTML report: escaped process name" "$dir/esc.html" "P1 &lt;script&gt;alert(1)&lt;/script&gt;"
  has "HTML report: escaped scenario name" "$dir/esc.html" "scenario a&lt;b&gt;&amp;&quot;c&#39;<"
  has "HTML report: UTF-8 kept, bad bytes replaced" "$dir/esc.html" "P2 café&#xFFFD;&#xFFFD;<"
else
  skipped "trace: HTML reports well-formed" "python3 is not installed" || bad "HTML reports well-formed (no python3)"
fi
rc_is 1 "--html to an unwritable path fails" "$tool" run igpu --frames 1 --html "$dir/no/such/dir/r.html"

# ---- scenario files ---------------------------------------------------------
cat >"$dir/small.scn" <<'EOF'
# A hand-written scenario: header lines are optional.
adapter dgpu
segment 1 16M
segment 2 16M
process P1 name=app
device D1 P1
queue Q1 D1
create2 A1 kind=texture size=8M cpu=1 name=big-a
create2 A2 kind=texture size=8M cpu=1 name=big-b
create2 A3 kind=texture size=8M cpu=1 name=big-c
write A1 seed=11
write A2 seed=12
write A3 seed=13
map V1 P1 A1
map V2 P1 A2
map V3 P1 A3
frame 0
make-resident D1 Q1 A1,A2 = OK
wait Q1 fence=last
gpu-read P1 va=V1 seed=11 = OK
gpu-read P1 va=V2 size=4096 seed=12   # the first page only
evict D1 A1,A2 flags=not-written
frame 1
make-resident D1 Q1 A3,A1 = OK
gpu-read P1 va=V3 seed=13 = OK
gpu-read P1 va=V2 size=4096 seed=12 = E_PAGE_FAULT
check A2 seed=12 = OK
check-adapter = OK
EOF
rc_is 0 "scenario file runs" "$tool" run "$dir/small.scn" --record "$dir/small.trace"
has "scenario file: report" "$dir/rc.out" "scenario file"
rc_is 0 "a recorded scenario file replays" "$tool" replay "$dir/small.trace"
sed 's/^check A2 seed=12 = OK$/check A2 seed=12 = MISMATCH/' "$dir/small.scn" >"$dir/small-bad.scn"
rc_is 1 "scenario file: a wrong stated result fails" "$tool" run "$dir/small-bad.scn"
line=$(grep -n '^check A2' "$dir/small-bad.scn" | cut -d: -f1)
has "scenario file: says which line" "$dir/rc.out" "small-bad.scn:$line: check"
printf 'process P1\nmap V1 P1 A9\n' >"$dir/broken.scn"
rc_is 1 "scenario file: unknown id" "$tool" run "$dir/broken.scn"
has "scenario file: unknown id message" "$dir/rc.out" "broken.scn:2: expected a known A id: A9"
printf 'process P1\nfrobnicate P1\n' >"$dir/broken2.scn"
rc_is 1 "scenario file: unknown verb" "$tool" run "$dir/broken2.scn"

# ---- CSV ------------------------------------------------------------------
"$tool" replay "$dir/igpu.trace" --format csv -o "$dir/i.csv" 2>/dev/null
check "csv header" test "$(head -n 1 "$dir/i.csv")" = "section,object,metric,value"
has "csv has paging rows" "$dir/i.csv" "^paging,map-aperture,bytes,"
has "csv has process rows" "$dir/i.csv" "^process,P1:photos,non_local_usage,"
check "csv rows have 4 fields" awk -F, 'NF != 4 { exit 1 }' "$dir/i.csv"

# ---- tampering is detected -------------------------------------------------
sed '0,/^make-resident \(.*\) = OK$/s//make-resident \1 = E_OVER_BUDGET trim=4096/' "$dir/igpu.trace" \
  | unseal >"$dir/tampered.trace"
check "tamper really changed a line" sh -c "! cmp -s '$dir/igpu.trace' '$dir/tampered.trace'"
rc_is 1 "replay detects a tampered status" "$tool" replay "$dir/tampered.trace"
has "replay names the tampered line" "$dir/rc.out" "recorded 'E_OVER_BUDGET trim=4096', replay gave 'OK'"
sed '0,/va=0x10000$/s//va=0x20000/' "$dir/small.trace" | unseal >"$dir/tampered2.trace"
rc_is 1 "replay detects a changed GPU VA" "$tool" replay "$dir/tampered2.trace"
sed '0,/^write A1 seed=11 = OK$/s//write A1 seed=7 = OK/' "$dir/small.trace" | unseal >"$dir/tampered3.trace"
rc_is 1 "replay with other bytes fails the read-backs" "$tool" replay "$dir/tampered3.trace"
has "the read-back reports MISMATCH" "$dir/rc.out" "replay gave 'MISMATCH'"

# ---- AMD Radeon Memory Visualizer import -------------------------------------
# AMD's RMV sample capture (an RX 6600 session with 489 virtual
# allocations; MIT licence, tests/data/rmv/LICENSE.txt), or another
# capture named by VIDMM_RMV_SAMPLE.
rmv=${VIDMM_RMV_SAMPLE:-tests/data/rmv/sample_trace.rmv}
# The sample decoded alone (--decode-only: no adapter).
if [ -f "$rmv" ]; then
  rc_is 0 "rmv sample decodes" "$tool" replay "$rmv" --decode-only
  has "rmv sample: the adapter" "$dir/rc.out" "adapter: AMD Radeon RX 6600"
  has "rmv sample: the heap table" "$dir/rc.out" "local 268435456 bytes at 0x0, invisible 8304721920 bytes at 0x10000000, system 68623638528 bytes"
  has "rmv sample: the kernel driver's stream" "$dir/rc.out" "PageTableUpdate 18805 "
  has "rmv sample: its unmaps" "$dir/rc.out" "18331 update, 470 discard, 4 transfer; 8898 unmaps"
  has "rmv sample: the application's stream" "$dir/rc.out" "process 53892, thread 0, RMT 1.8, 1 chunk, 86036 bytes = 7409 tokens"
  for k in "ResourceReference 944" "ResourceBind 1188" "CpuMap 502" "VirtualFree 468" "VirtualAllocate 489" \
           "ResourceCreate 1216" "ResourceDestroy 936" "Userdata 468"; do
    has "rmv sample: $k" "$dir/rc.out" "$k"
  done
fi
# The full replay of the sample at the RX 6600's size (every process,
# 10 GiB of allocations that softgpu never has to touch: a few seconds).
if [ -f "$rmv" ] && command -v python3 >/dev/null 2>&1; then
  "$tool" replay "$rmv" --format json -o "$dir/rmv.json" --record "$dir/rmv.trace" 2>"$dir/rmv.err"
  rc=$?
  if [ "$rc" -eq 0 ]; then ok; else bad "rmv import (rc $rc)"; cat "$dir/rmv.err"; fi
  check "rmv sample: every process replayed, placement per process and heap" python3 - "$dir/rmv.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); imp = d["import"]
assert imp["container"] == "RDF" and imp["adapter"] == "AMD Radeon RX 6600", imp["adapter"]
s0, s1 = imp["streams"]
assert s0["tokens"]["PageTableUpdate"] == 18805 and s0["page_table_unmaps"] == 8898, s0
assert s1["process_id"] == 53892 and s1["tokens"]["VirtualAllocate"] == 489
a = imp["adapter_replayed"]
assert a["cpu_visible"] == 256 << 20 and a["invisible"] == 8304721920 and a["system"] == 68623638528 & ~0xfff, a
assert imp["replayed_processes"] == 2
p = {x["name"]: x for x in imp["processes"]}
app, un = p["pid53892"], p["unattributed"]
assert app["allocations"] == 489 and app["allocation_failures"] == 0 and app["frees"] == 468
assert app["references_add"] + app["references_remove"] == 944
for h in ("local", "invisible", "system"):   # the application: every mapping where the driver put it
    assert app["heaps"][h]["agree"] == app["heaps"][h]["maps"] > 0, (h, app["heaps"][h])
assert (app["heaps"]["local"]["maps"], app["heaps"]["invisible"]["maps"], app["heaps"]["system"]["maps"]) == (4, 669, 587)
assert un["allocations"] == imp["inferred"]["maps"] == 8641 and imp["inferred"]["preference"] == "invisible"
assert un["heaps"]["invisible"]["agree"] == un["heaps"]["invisible"]["maps"] == 8482
assert un["disagreements"]["preference"]["maps"] == 161 == 10 + 151
h = imp["heaps"]
assert sum(x["maps"] for x in h.values()) == 9903 == s0["tokens"]["PageTableUpdate"] - s0["page_table_unmaps"] - 4
assert sum(x["bytes_agree"] for x in h.values()) * 1000 >= 999 * sum(x["bytes"] for x in h.values())
assert imp["paging"]["evictions"] == 0
rep = d["report"]
assert rep["calls"]["by_verb"]["create2"]["calls"] == 9130 and rep["integrity"]["final_check"] == "clean"
EOF
  check "rmv sample: the import records as a whole trace" sh -c "tail -n 1 '$dir/rmv.trace' | grep -q '^end calls=35938 '"
  rc_is 0 "rmv sample: the recorded import replays exactly" "$tool" replay "$dir/rmv.trace" --no-rules
  has "rmv sample: the recorded import replays exactly (verdict)" "$dir/rc.out" "0 differ (exact replay)"
else
  skipped "trace: rmv sample: full replay" "needs python3 and $rmv" || bad "rmv sample: full replay (no python3 or no $rmv)"
fi
printf 'AMD_RDF \003\000\000\000' >"$dir/short.rmv"
rc_is 1 "a truncated rmv file is refused" "$tool" replay "$dir/short.rmv"
if command -v python3 >/dev/null 2>&1; then
  # Hand-made RDF files (tests/data/rmv/make_rdf.py): each decodes or is
  # refused as the format says.
  python3 tests/data/rmv/make_rdf.py "$dir"
  rc_is 1 "rmv: a SystemInfo chunk cut inside its JSON is refused" "$tool" replay "$dir/sysinfo.rmv" --decode-only
  has "rmv: ... saying why" "$dir/rc.out" "not one whole JSON value"
  check "rmv: no adapter name from outside the chunk" sh -c "! grep -q Outside '$dir/rc.out'"
  rc_is 1 "rmv: an RmtData header whose size disagrees with the index is refused" \
    "$tool" replay "$dir/hdrsize.rmv" --decode-only
  has "rmv: ... saying why" "$dir/rc.out" "says it holds 99 bytes of tokens"
  rc_is 1 "rmv: a work-graph ResourceCreate (payload unknown) is refused, not skipped by a guess" \
    "$tool" replay "$dir/workgraph.rmv" --decode-only
  has "rmv: ... saying why" "$dir/rc.out" "resource type 17, whose payload size"
  rc_is 0 "rmv: ResourceUpdate tokens of an RMT 1.9 stream decode" "$tool" replay "$dir/update.rmv" --decode-only
  has "rmv: ... and are counted" "$dir/rc.out" "ResourceUpdate 2"
  rc_is 0 "rmv: a stream in two chunks with a token across the cut decodes" "$tool" replay "$dir/split.rmv" --decode-only
  has "rmv: ... as one stream" "$dir/rc.out" "2 chunks, 33 bytes = 4 tokens of 33 bytes"
  rc_is 0 "rmv: an unknown chunk is named and counted" "$tool" replay "$dir/unknown.rmv" --decode-only
  has "rmv: ... as not read" "$dir/rc.out" "not read: 1 FutureChunk chunk, 5 bytes"
  rc_is 1 "rmv: a free of an address never allocated is refused" "$tool" replay "$dir/badfree.rmv" --decode-only
  has "rmv: ... naming --lenient" "$dir/rc.out" "VirtualFree of an address never allocated"
  rc_is 0 "rmv: --lenient counts it instead" "$tool" replay "$dir/badfree.rmv" --decode-only --lenient
  has "rmv: ... in the summary" "$dir/rc.out" "anomalies: 1 frees of unknown addresses"
  rc_is 1 "rmv: a chunk index entry one bit from RmtData is refused" "$tool" replay "$dir/onebit.rmv" --decode-only
  has "rmv: ... saying why" "$dir/rc.out" "one bit from 'RmtData'"
  rc_is 1 "rmv: bytes that belong to no chunk are refused" "$tool" replay "$dir/gap.rmv" --decode-only
  # Two process streams and the kernel driver's page-table updates: every
  # stream is its own vidmm process, the mapping no stream describes is an
  # allocation of the unattributed process, and placement is scored per
  # process and heap, with the cause of each disagreement.
  rc_is 0 "rmv: multi-process import" "$tool" replay "$dir/multi.rmv" --format json -o "$dir/multi.json" \
    --record "$dir/multi.trace"
  check "rmv: every process replayed, agreement per process and heap" python3 - "$dir/multi.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); imp = d["import"]
assert imp["replayed_processes"] == 3, imp["replayed_processes"]
p = {x["name"]: x for x in imp["processes"]}
assert set(p) == {"pid1234", "pid5678", "unattributed"}, set(p)
assert p["pid1234"]["allocations"] == 2 and p["pid5678"]["allocations"] == 1 and p["unattributed"]["allocations"] == 1
h = p["pid1234"]["heaps"]
assert h["invisible"]["maps"] == 1 and h["invisible"]["agree"] == 1 and h["invisible"]["bytes_agree"] == 65536, h
assert h["system"]["maps"] == 1 and h["system"]["agree"] == 1, h
assert p["pid5678"]["heaps"]["local"]["agree"] == 1
u = p["unattributed"]
assert u["inferred"] and u["heaps"]["system"]["maps"] == 1 and u["heaps"]["system"]["agree"] == 0
assert u["heaps"]["system"]["vidmm"]["invisible"] == 1
assert u["disagreements"]["preference"]["maps"] == 1 and sum(w["maps"] for w in u["disagreements"].values()) == 1
assert imp["inferred"]["preference"] == "invisible,local", imp["inferred"]
a = imp["adapter_replayed"]
assert a["cpu_visible"] == 16 << 20 and a["invisible"] == 64 << 20 and a["system"] == 256 << 20, a
assert imp["heaps"]["local"]["agree"] == 1 and imp["heaps"]["system"]["maps"] == 2
assert d["report"]["calls"]["by_verb"]["create2"]["calls"] == 4
EOF
  check "rmv: the import records as a whole trace" sh -c "tail -n 1 '$dir/multi.trace' | grep -q '^end calls='"
  rc_is 0 "rmv: the recorded import replays exactly" "$tool" replay "$dir/multi.trace"
  has "rmv: the recorded import replays exactly (verdict)" "$dir/rc.out" "0 differ (exact replay)"
  rc_is 0 "rmv: a quarter of local memory, Belady's policy" "$tool" replay "$dir/multi.rmv" --local-scale 4 \
    --policy belady --format json -o "$dir/multi4.json"
  check "rmv: the smaller adapter and the hints" python3 -c "
import json, sys
i = json.load(open(sys.argv[1]))['import']
a = i['adapter_replayed']
assert a['cpu_visible'] == 4 << 20 and a['invisible'] == 16 << 20 and a['policy'] == 'belady', a
assert i['paging']['next_use_hints'] > 0, i['paging']" "$dir/multi4.json"
  # A trace under another policy is a comparison run (differences are that
  # policy's outcomes), no longer a usage error.
  rc_is 0 "--policy on a trace compares policies" "$tool" replay "$dir/game.trace" --policy belady --no-progress
  rc_is 2 "--local-scale is for RMV files" "$tool" replay "$dir/game.trace" --local-scale 2
  if [ -f "$rmv" ]; then
    # Copies of the sample with one flipped bit each: every copy is refused
    # with a message, or decodes to the same chunks and token counts (a
    # flipped address or id bit that breaks nothing cannot be told from
    # data; RMV has no checksum).  Seeded; VIDMM_RMV_FLIP_SEED repeats a run.
    seed=${VIDMM_RMV_FLIP_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
    echo "trace: rmv bit flips: seed $seed (VIDMM_RMV_FLIP_SEED=$seed repeats)"
    check "rmv: 72 bit-flipped copies of the sample are refused or decode consistently (seed $seed)" \
      python3 tests/data/rmv/flip_check.py "$tool" "$rmv" "$seed" 72 "$dir"
    cat "$dir/check.out" | tail -n 1
    # A flip in a PageTableUpdate's physical address: it lies in no heap.
    python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[95246] ^= 0x08; open(sys.argv[2], "wb").write(d)' \
      "$rmv" "$dir/ptu-flip.rmv"
    rc_is 1 "rmv: a PageTableUpdate outside every heap is refused" "$tool" replay "$dir/ptu-flip.rmv" --decode-only
    has "rmv: ... named" "$dir/rc.out" "PageTableUpdate of physical memory in no local heap"
    rc_is 0 "rmv: ... counted with --lenient" "$tool" replay "$dir/ptu-flip.rmv" --decode-only --lenient
    has "rmv: ... in the summary" "$dir/rc.out" "1 page-table updates outside every local heap"
    # Flips of a TimeDelta's size field to no delta bytes: the next byte
    # continued the stream as another TimeDelta, or as a PageTableUpdate.
    for at in 421071 452538; do
      python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[int(sys.argv[3])] ^= 0x10; open(sys.argv[2], "wb").write(d)' \
        "$rmv" "$dir/delta-flip.rmv" "$at"
      rc_is 1 "rmv: a TimeDelta without delta bytes is refused (byte $at)" "$tool" replay "$dir/delta-flip.rmv" --decode-only
      has "rmv: ... named" "$dir/rc.out" "TimeDelta token at byte $at has no delta bytes"
    done
  fi
else
  skipped "trace: rmv: generated captures" "python3 is not installed" || bad "rmv: generated captures (no python3)"
fi

# ---- options and errors -----------------------------------------------------
rc_is 0 "scenarios lists" "$tool" scenarios
has "scenarios lists compute" "$dir/rc.out" "^compute"
rc_is 2 "unknown scenario" "$tool" run nosuch
rc_is 2 "run without a scenario" "$tool" run
rc_is 2 "bad --format" "$tool" run game --format xml
rc_is 2 "replay refuses adapter options" "$tool" replay "$dir/game.trace" --adapter big
rc_is 1 "replay of a non-trace" "$tool" replay "$dir/small.scn"
rc_is 1 "replay of a missing file" "$tool" replay "$dir/nosuch.trace"
# Inputs that are no trace are refused while reading the header, before
# an adapter runs (no --record output is written), naming the cause.
mkdir -p "$dir/adir"
for cmd in run replay; do
  rc_is 1 "$cmd of a directory" "$tool" $cmd "$dir/adir" --record "$dir/adir.trace"
  has "$cmd of a directory names it" "$dir/rc.out" "is a directory"
  check "$cmd of a directory starts no adapter" test ! -e "$dir/adir.trace"
  rc_is 1 "$cmd of /dev/zero" "$tool" $cmd /dev/zero
  has "$cmd of /dev/zero names binary data" "$dir/rc.out" "binary data"
done
# A line has any length up to 256 MiB (a list naming every allocation a
# trace can name is 160 MiB): a 1.1 MB line is read (and refused as no
# verb), a line over 256 MiB is refused as no trace, before an adapter runs.
head -c 1100000 /dev/zero | tr '\0' a >"$dir/longline.trace"
rc_is 1 "run of a 1.1 MB line" "$tool" run "$dir/longline.trace"
has "a 1.1 MB line is read whole" "$dir/rc.out" "unknown verb"
head -c 270000000 /dev/zero | tr '\0' a | "$tool" run /dev/stdin --record "$dir/longline.out" >"$dir/rc.out" 2>&1
[ $? -eq 1 ] && ok || bad "run of a 270 MB line (rc $?)"
has "a line over 256 MiB is named" "$dir/rc.out" "line longer than 256 MiB"
check "a line over 256 MiB starts no adapter" test ! -s "$dir/longline.out"
# Under an address-space limit (skipped where the tool cannot run under
# one, as with ASan's shadow memory) /dev/zero still fails cleanly.
if sh -c 'ulimit -v 1000000 && exec "$0" info >/dev/null 2>&1' "$tool"; then
  rc_is 1 "replay of /dev/zero under a memory limit" sh -c 'ulimit -v 1000000 && exec "$0" replay /dev/zero' "$tool"
  has "replay of /dev/zero under a memory limit names the cause" "$dir/rc.out" "binary data"
fi
# A header error closes the file (valgrind lists descriptors open at exit).
printf 'vidmm-trace 99\n' >"$dir/badver.trace"
printf 'vidmm-trace 1\nsegment 99 1M\n' >"$dir/badseg.trace"
rc_is 1 "unsupported trace version" "$tool" replay "$dir/badver.trace"
has "unsupported trace version named" "$dir/rc.out" "unsupported trace format version"
if command -v valgrind >/dev/null 2>&1; then
  for t in badver badseg; do
    valgrind -q --track-fds=yes "$tool" replay "$dir/$t.trace" >"$dir/vg.out" 2>&1
    check "header error in $t.trace leaves no file open" sh -c "! grep -q 'descriptor.*$t.trace' '$dir/vg.out'"
  done
else
  skipped "trace: header errors leave no file open" "valgrind is not installed" || bad "header errors leave no file open (no valgrind)"
fi
# ---- proving a trace whole (format version 2's end record) ---------------
# Long lines: make-resident, evict and make-resident again of 700 and of
# 10,000 allocations (ids from A1301: the 700 list is over 4 KiB), recorded
# and replayed exactly.  wddm1's 4 KiB pages keep 11,300 allocations light.
for n in 700 10000; do
  awk -v n=$n 'BEGIN { print "process P1 name=many"; print "device D1 P1"; print "queue Q1 D1"; m = n + 1300
    for (i = 1; i <= m; i++) print "create A" i " kind=constant size=4K"
    l = ""; for (i = 1301; i <= m; i++) l = l (i > 1301 ? "," : "") "A" i
    print "make-resident D1 Q1 " l; print "evict D1 " l; print "make-resident D1 Q1 " l; print "check-adapter" }' \
    >"$dir/many$n.scn"
  rc_is 0 "record a make-resident of $n allocations" "$tool" run "$dir/many$n.scn" --adapter wddm1 --no-rules \
    --record "$dir/many$n.trace"
  check "the $n-allocation list is one line over 4 KiB" \
    sh -c "awk 'length(\$0) > 4096 { n++ } END { exit !(n >= 3) }' '$dir/many$n.trace'"
  rc_is 0 "replay a make-resident of $n allocations" "$tool" replay "$dir/many$n.trace" --no-rules
  has "the $n-allocation replay is exact" "$dir/rc.out" "0 differ (exact replay)"
done
g="$dir/game.trace"
# Each refusal: exit 1, the cause named, and (for a file) no adapter started.
refused() { # name file pattern [run]
  rc_is 1 "$1 refused" "$tool" ${4:-replay} "$2" --record "$dir/refused.out"
  has "$1 named" "$dir/rc.out" "$3"
  check "$1 starts no adapter" test ! -e "$dir/refused.out"
  rm -f "$dir/refused.out"
}
head -n -1 "$g" >"$dir/cut.trace"
refused "a trace cut at a line boundary" "$dir/cut.trace" "trace cut short"
refused "a cut trace, run as a file" "$dir/cut.trace" "trace cut short" run
lines=$(wc -l <"$g")
{ head -n $((lines - 40)) "$g"; tail -n 1 "$g"; } >"$dir/lost.trace"
refused "a trace that lost lines" "$dir/lost.trace" "lines were lost or added"
sed 's/^end calls=\([0-9]*\)/end calls=1\1/' "$g" >"$dir/count.trace"
refused "an end record with another count" "$dir/count.trace" "lines were lost or added"
sed '0,/seed=/s/seed=\([0-9]\)/seed=9\1/' "$g" >"$dir/changed.trace"
refused "a changed byte" "$dir/changed.trace" "checksum mismatch"
cat "$g" "$g" >"$dir/twice.trace"
refused "bytes after the end record" "$dir/twice.trace" "bytes after the end record"
sed 1d "$g" >"$dir/nover.trace"
refused "a trace without its version line" "$dir/nover.trace" "no version line"
sed 's/^end calls=.*/end calls=3/' "$g" >"$dir/badend.trace"
refused "a malformed end record" "$dir/badend.trace" "bad end record"
{ head -n 20 "$g"; printf 'create A999 kind=tex\000ture size=4K\n'; tail -n +21 "$g"; } >"$dir/nul.trace"
refused "a NUL inside a trace" "$dir/nul.trace" "binary data"
sed '1s/.*/vidmm-trace 3/' "$g" >"$dir/v3.trace"
refused "a later format version" "$dir/v3.trace" "unsupported trace format version"
# A pipe is proven as it is executed: refused at its end, nonzero exit.
rc_is 1 "a cut trace through a pipe" sh -c 'cat "$1" | "$0" replay /dev/stdin' "$tool" "$dir/cut.trace"
has "a cut trace through a pipe named" "$dir/rc.out" "trace cut short"
rc_is 0 "a whole trace through a pipe" sh -c 'cat "$1" | "$0" replay /dev/stdin' "$tool" "$g"
# A recorded trace shrinks as a scenario (its version line and end record
# set aside): the game runs clean, so there is nothing to shrink.
rc_is 1 "shrink of a recorded trace" "$tool" shrink "$g"
has "shrink reads a recorded trace as a scenario" "$dir/rc.out" "does not fail (ok)"
# Version 1 (no end record) is still read, with a note that it cannot be
# proven whole.
sed '1s/.*/vidmm-trace 1/;$d' "$g" >"$dir/v1.trace"
rc_is 0 "a version-1 trace replays" "$tool" replay "$dir/v1.trace"
has "a version-1 trace is noted as unproven" "$dir/rc.out" "cannot be proven whole"
# ---- trace language: CPU lock/unlock, the over-budget protocol ------------
for s in lock over-budget-trim-retry device-alloc heaps; do
  rc_is 0 "scenario $s: every stated result holds" "$tool" run tests/data/trace/$s.scn --record "$dir/$s.trace"
  rc_is 0 "scenario $s: its record replays exactly" "$tool" replay "$dir/$s.trace"
  has "scenario $s: exact replay" "$dir/rc.out" "0 differ (exact replay)"
done
has "lock: a locked allocation is not moved" "$dir/lock.trace" "^move A1 segment=2 = E_BUSY$"
has "over budget: the bytes to trim" "$dir/over-budget-trim-retry.trace" "= E_OVER_BUDGET trim=4194304$"
has "device allocation: recorded on its device" "$dir/device-alloc.trace" "^create2 A1 device=D1 "
has "heaps: a custom heap's properties recorded" "$dir/heaps.trace" "kind=heap size=1048576 align=0 heap=custom cpu-page=not-available pool=L1 = OK$"
has "heaps: a placed resource recorded with its VA" "$dir/heaps.trace" "^place V2 P1 A1 offset=65536 size=131072 align=65536 = OK va=0x20000$"
has "heaps: a placement off its alignment refused" "$dir/heaps.trace" "^place V4 P1 A1 offset=4096 size=4096 align=65536 = E_INVALID_ARG$"
has "device allocation: another process cannot name it" "$dir/device-alloc.trace" "^make-resident D2 Q2 flags=- A1 = E_INVALID_HANDLE$"
rc_is 2 "unknown policy" "$tool" run game --policy nosuch
rc_is 2 "igpu scenario needs igpu" "$tool" run igpu --adapter dgpu
rc_is 0 "game on wddm1" "$tool" run game --adapter wddm1 --frames 3
rc_is 0 "asynchronous run (paging on the engine thread)" "$tool" run desktop --async --frames 3
rc_is 0 "another seed" "$tool" run desktop --seed 7 --frames 4
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
  check "man page renders" sh -c "MANWIDTH=80 man -l docs/vidmm.1 2>&1 | grep -q 'vidmm replay'"
else
  optional "trace: man page renders" "man or groff is not installed"
fi
[ -f docs/vidmm.1 ] && ok || bad "docs/vidmm.1 exists"

echo "trace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
