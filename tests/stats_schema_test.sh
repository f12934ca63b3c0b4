#!/bin/sh
# stats_schema_test.sh - the library's statistics JSON
# (vidmm_adapter_stats_json, as `vidmm run --snapshot` writes it) is valid
# against the GpuMemDump schema that VMA and D3D12MA's visualiser reads
# (tests/data/gpumemdump/), for every built-in scenario and for the wddm1
# preset (an AGP segment); and the validator does refuse a dump with a key
# the schema does not allow at the top level.  Skipped, with a warning on
# stderr (a failure under CI=true: tests/skip.sh), when python3 or its
# jsonschema module (Debian: python3-jsonschema) is missing.
# Usage: tests/stats_schema_test.sh path/to/vidmm
tool=${1:-build/vidmm}
schema=tests/data/gpumemdump/GpuMemDump.schema.json
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "stats-schema: FAIL $*"; }
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import jsonschema' 2>/dev/null; then
  . tests/skip.sh
  if skipped stats-schema "python3 with jsonschema is not installed (apt-get install python3-jsonschema)"; then
    echo "stats-schema: 0 passed, 0 failed"
    exit 0
  fi
  echo "stats-schema: 0 passed, 1 failed"
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
validate() {
  python3 - "$1" "$schema" <<'EOF2'
import json, sys, jsonschema
doc = json.load(open(sys.argv[1])); schema = json.load(open(sys.argv[2]))
jsonschema.validators.validator_for(schema)(schema).validate(doc)
EOF2
}
for s in desktop game compute igpu; do
  if "$tool" run "$s" --no-rules --snapshot "$dir/$s.json" -o /dev/null 2>"$dir/err" && validate "$dir/$s.json" 2>>"$dir/err"; then
    ok
  else
    bad "$s: $(tail -n 3 "$dir/err")"
  fi
done
# An AGP segment (wddm1): the desktop scenario fails on it part way (it
# asks for moves wddm1 cannot make), but the snapshot after its last call
# is written all the same.
"$tool" run desktop --adapter wddm1 --no-rules --snapshot "$dir/wddm1.json" -o /dev/null 2>/dev/null
if grep -q '"kind": "agp"' "$dir/wddm1.json" 2>/dev/null && validate "$dir/wddm1.json" 2>"$dir/err"; then
  ok
else
  bad "wddm1: $(tail -n 3 "$dir/err" 2>/dev/null)"
fi
# The schema is strict where it says so: an extra top-level key fails.
python3 - "$dir/desktop.json" "$dir/extra.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1])); d["vidmm"] = {}
json.dump(d, open(sys.argv[2], "w"))
EOF2
if validate "$dir/extra.json" 2>/dev/null; then bad "an extra top-level key passed the schema"; else ok; fi
# Names and the extension: every allocation appears in General.vidmm with
# its process and residency, and by name in the pools.
if python3 - "$dir/desktop.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1])); v = d["General"]["vidmm"]
assert v["format"] == "vidmm-stats/1"
assert len(v["allocations"]) == v["live_allocations"] > 0
assert len(v["segments"]) == len(d["MemoryInfo"]) == len(d["DefaultPools"])
assert all(a["name"].startswith("A") and a["residency"] in ("resident", "evicted", "offered") for a in v["allocations"])
names = set()
for pool in d["DefaultPools"].values():
    for b in pool["Blocks"].values():
        names |= {s["Name"] for s in b["Suballocations"] if s["Type"] != "FREE"}
    names |= {x["Name"] for x in pool["DedicatedAllocations"]}
placed = {a["name"] for a in v["allocations"] if a["extents"]}
assert names == placed, (len(names), len(placed))
assert all("budget" in p["local"] and "usage" in p["non_local"] for p in v["processes"])
EOF2
then ok; else bad "desktop: the vidmm extension does not list what the pools show"; fi
echo "stats-schema: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
