#!/bin/sh
# tool_test.sh - end-to-end checks of the vidmm command-line tool.
# Usage: tool_test.sh path/to/vidmm.  Prints "N passed, M failed".
tool=${1:-build/vidmm}
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED tool: $1"; }

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
expect_rc 1 "bad segment size (not a page multiple)" "$tool" info --segment 2=100K
expect_rc 2 "bad segment spec" "$tool" info --segment banana
expect_rc 1 "unknown preset" "$tool" info --adapter nosuch
expect_rc 2 "unknown command" "$tool" frobnicate
expect_rc 2 "no command" "$tool"
expect_rc 0 "help" "$tool" --help
expect_out "version" "vidmm 0" "$tool" --version
expect_out "presets" "wddm1" "$tool" presets
expect_out "info --json format" '"format": "vidmm-info/1"' "$tool" info --json
if command -v python3 >/dev/null 2>&1; then
  if "$tool" info --json --adapter wddm1 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["segments"])==5 and d["segments"][3]["kind"]=="agp"'; then ok; else bad "info --json parses"; fi
fi
expect_rc 0 "vamap" "$tool" vamap
expect_out "vamap shows a mapping" "texture+0x0" "$tool" vamap
expect_rc 0 "vamap on wddm1" "$tool" vamap --adapter wddm1
expect_rc 1 "vamap needs GpuMmu" "$tool" vamap --adapter igpu
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
rm -f /tmp/vidmm_tool_out.$$
echo "tool: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
