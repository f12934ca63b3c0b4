#!/bin/sh
# layering_test.sh - tests/layering.sh's own test: it passes on a copy of
# today's sources, and fails, naming the file, on copies with one
# deliberate violation each - a file outside src/residency/ naming an
# allocation's `res` member, another module's members (quarantine,
# mmu, owned, va_map, entry), one including residency's fields header or
# its private state header, a fields header including model/, and a
# module including a module above it.  Prints "layering-fixtures: N
# passed, M failed".
# Usage: tests/layering_test.sh BUILD_DIR
b=$(cd "${1:-build}" && pwd)
root=$(pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED layering-fixtures: $1"; sed -n 1,10p "$t/out"; }

# A fresh copy of what layering.sh reads: src/, the graph in the docs.
copy() {
  rm -rf "$t/w"
  mkdir -p "$t/w/docs" "$t/w/tests"
  cp -R "$root/src" "$t/w/src"
  cp "$root/docs/ARCHITECTURE.md" "$t/w/docs/"
  cp "$root/tests/layering.sh" "$t/w/tests/"
}

# expect NAME ok|fail PATTERN: run layering.sh on the copy.
expect() {
  (cd "$t/w" && sh tests/layering.sh "$b") >"$t/out" 2>&1
  rc=$?
  if [ "$2" = ok ] && [ "$rc" -ne 0 ]; then bad "$1: exit status $rc, want 0"; return; fi
  if [ "$2" = fail ] && [ "$rc" -eq 0 ]; then bad "$1: passed, want a failure"; return; fi
  if ! grep -q -- "$3" "$t/out"; then bad "$1: no '$3' in its output"; return; fi
  ok
}

copy
expect "today's sources" ok "layering: [0-9]* passed, 0 failed"

copy
printf 'static int fixture(const struct vidmm_allocation *al) { return al->res.offered; }\n' >>"$t/w/src/submit/submit.c"
expect "a field of residency named in submit" fail "FAIL src/submit/submit.c names the member res, owned by src/residency"

copy
printf 'static int fixture(const struct vidmm_process *p) { return (int)p->res.demand[0]; }\n' >>"$t/w/src/observe/stats.c"
expect "a process's residency field named in observe" fail "FAIL src/observe/stats.c names the member res"

copy
printf 'static int fixture(const struct vidmm_adapter *a) { return a->quarantine.first != 0; }\n' >>"$t/w/src/tdr/tdr.c"
expect "the placement's quarantine named in tdr" fail "FAIL src/tdr/tdr.c names the member quarantine, owned by src/placement"

copy
printf 'static int fixture(const struct vidmm_process *p) { return p->mmu.root != 0; }\n' >>"$t/w/src/process/process.c"
expect "the MMU's page-table state named in process" fail "FAIL src/process/process.c names the member mmu, owned by src/mmu"

copy
printf 'static int fixture(const struct vidmm_allocation *al) { return al->owned.next != 0; }\n' >>"$t/w/src/adapter/check.c"
expect "residency's owned-list links named in adapter" fail "FAIL src/adapter/check.c names the member owned, owned by src/residency"

copy
printf 'static int fixture(const struct vidmm_allocation *al) { return al->va_map.processes != 0; }\n' >>"$t/w/src/allocation/share.c"
expect "process's mapping list named in allocation" fail "FAIL src/allocation/share.c names the member va_map, owned by src/process"

copy
printf 'static int fixture(const struct vidmm_adapter *a) { return (int)a->entry.lock_depth; }\n' >>"$t/w/src/fence/hang.c"
expect "the entry mechanism's state named in fence" fail "FAIL src/fence/hang.c names the entry mechanism's state"

copy
printf '/* al->res.offered in a comment is not a use */\n' >>"$t/w/src/submit/submit.c"
expect "a comment naming a field" ok "layering: [0-9]* passed, 0 failed"

copy
printf '#include "residency/residency_fields.h"\n' >>"$t/w/src/submit/submit.c"
expect "a fields header included outside model/objects.h" fail "FAIL src/submit/submit.c includes residency/residency_fields.h"

copy
printf '#include "residency/res_state.h"\n' >>"$t/w/src/tdr/tdr.c"
expect "a private state header included by another module" fail "FAIL src/tdr/tdr.c includes residency/res_state.h, private to src/residency"

copy
printf '#include "paging_process/state.h"\n' >>"$t/w/src/tdr/tdr.c"
expect "a state.h included by another module" fail "FAIL src/tdr/tdr.c includes paging_process/state.h, private"

copy
printf '#include "model/objects.h"\n' >>"$t/w/src/residency/residency_fields.h"
expect "a fields header including model/" fail "FAIL src/residency/residency_fields.h includes model/objects.h"

copy
printf '#include "residency/residency.h"\n' >>"$t/w/src/placement/placement.c"
expect "an include of a higher module" fail "FAIL include placement -> residency"

echo "layering-fixtures: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
