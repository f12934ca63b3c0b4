#!/bin/sh
# run.sh - vkgpu on whatever Vulkan device is present (lavapipe in CI):
# its own tests (tests/vkgpu/vkgpu_test.c), the driver conformance kit
# through the vkgpu.so plug-in, and the tool's info and demo on it; then,
# where build/lavapipe-backports holds lavapipe 25, the tests again on it
# with GpuMmu through sparse binding required, and the kit and the demo
# with GpuMmu paging (4 KiB and 64 KB pages).  The tool's scenarios,
# generated scenarios and a recorded trace run on vkgpu with the rules
# checker after every call (vk_scenarios below), on both.
# Prints "vkgpu: N passed, M failed".  Usage: tests/vkgpu/run.sh BUILD_DIR
b=${1:-build}
out=/tmp/vidmm_vkgpu.$$
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED vkgpu: $1"; cat "$out"; }

# The test binary prints its own "N passed, M failed".
if "$b/vkgpu-tests" >"$out" 2>&1; then ok; else bad "vkgpu-tests"; fi
grep -E "^(device|overcommit|device loss):" "$out"
if "$b/vidmm" drvcheck --driver vkgpu >"$out" 2>&1 && grep -q " 0 failed, 0 skipped" "$out"; then ok
else bad "drvcheck --driver vkgpu"; fi
tail -n 1 "$out"
if "$b/vidmm" info --driver vkgpu >"$out" 2>&1 && grep -q "driver 'vkgpu'" "$out" && grep -q "aperture" "$out"; then ok
else bad "info --driver vkgpu"; fi
if "$b/vidmm" demo --driver vkgpu >"$out" 2>&1 && grep -q "^demo ok" "$out"; then ok; else bad "demo --driver vkgpu"; fi
# vidmmd on vkgpu: a client over-commits it through the socket, every byte
# read back; the daemon's own checks clean at shutdown.
d=$(mktemp -d)
chmod 755 "$d"
as_user=""
[ "$(id -u)" -eq 0 ] && as_user="--user nobody"
"$b/vidmmd" --driver vkgpu $as_user --socket "$d/s" 2>"$d/log" &
dpid=$!
i=0
while [ ! -S "$d/s" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if "$b/tests/vkgpu/client/daemon_client" "$d/s" >"$out" 2>&1; then ok; else bad "a vidmmd client on vkgpu"; fi
cat "$out"
if "$b/vidmm" info --socket "$d/s" >"$out" 2>&1 && grep -q "aperture" "$out"; then ok; else bad "info --socket on vidmmd --driver vkgpu"; fi
kill -TERM $dpid 2>/dev/null
if wait $dpid && grep -q "vidmmd: clean" "$d/log"; then ok; else cp "$d/log" "$out"; bad "vidmmd --driver vkgpu shut down clean"; fi
rm -rf "$d"
# The scenarios on vkgpu (vidmm run|replay --driver vkgpu): every file of
# tests/scenarios, a few generated ones (seeded, seed printed), a built-in
# scenario recorded and replayed exactly, a softgpu trace of tests/data;
# the rules checker after every call, every byte read back compared.  A
# scenario vkgpu cannot express ends "not applicable" (exit 3) with its
# reason, which must be said; any other failure fails.  $1: extra
# options ("gpummu=1"), $2: a label.
vk_scenarios() {
  opts=${1:+--options $1}
  label=$2
  na=0
  for f in tests/scenarios/*.scn; do
    "$b/vidmm" run "$f" --driver vkgpu $opts >/dev/null 2>"$out"
    rc=$?
    if [ $rc -eq 3 ] && grep -q "not applicable on driver vkgpu" "$out"; then
      na=$((na + 1)); echo "vkgpu$label: $f: $(grep -m1 -E 'not made on|not applicable on' "$out" | cut -c1-160)"
    elif [ $rc -eq 0 ] && grep -q "rules checked after [1-9][0-9]* calls .* 0 violations" "$out" \
         && grep -q "rules not applicable on driver vkgpu" "$out"; then ok
    else bad "run $f --driver vkgpu $opts$label (exit $rc)"; fi
  done
  [ $na -le 3 ] && ok || bad "more than 3 scenarios not applicable$label ($na)"
  seed=${VKGPU_GEN_SEED:-1}
  echo "vkgpu$label: generated scenarios, seeds $seed-$((seed + 2)) (VKGPU_GEN_SEED=N picks others)"
  for s in $seed $((seed + 1)) $((seed + 2)); do
    "$b/vidmm" gen --seed "$s" --calls 120 >"$out.scn" 2>/dev/null
    if "$b/vidmm" run "$out.scn" --driver vkgpu $opts >/dev/null 2>"$out" && grep -q " 0 violations" "$out"
    then ok; else bad "generated scenario seed $s on vkgpu$label (vidmm gen --seed $s --calls 120)"; fi
  done
  # Recorded on vkgpu, replayed on vkgpu: every result the same, the
  # report byte for byte.
  if "$b/vidmm" run desktop --driver vkgpu $opts --record "$out.trace" >"$out.r1" 2>"$out" \
     && grep -q "^driver vkgpu" "$out.trace" && "$b/vidmm" replay "$out.trace" >"$out.r2" 2>"$out" \
     && grep -q " 0 differ (exact replay)" "$out" && cmp -s "$out.r1" "$out.r2"; then ok
  else bad "desktop recorded and replayed on vkgpu$label"; fi
  # The vkgpu trace replayed on softgpu: its fences are numbered otherwise
  # (a wait for one softgpu never submits must not hang), its bytes hold.
  if timeout 120 "$b/vidmm" replay "$out.trace" --driver softgpu >/dev/null 2>"$out" \
     && grep -q "a trace of another driver" "$out"; then ok
  else bad "desktop recorded on vkgpu$label replayed on softgpu"; fi
  # A trace written on softgpu: its integrity results hold on vkgpu.
  if "$b/vidmm" run tests/data/trace/heaps.scn --driver vkgpu $opts >/dev/null 2>"$out" && grep -q " 0 violations" "$out"
  then ok; else bad "tests/data/trace/heaps.scn on vkgpu$label"; fi
  rm -f "$out.scn" "$out.trace" "$out.r1" "$out.r2"
}
# Bytes that differ fail on vkgpu as on softgpu, though other stated
# results of a softgpu scenario are only the driver's outcomes there.
printf 'process P1\ndevice D1 P1\nqueue Q1 D1\ncreate2 A1 kind=texture size=1M cpu=1\nwrite A1 seed=5\nmake-resident D1 Q1 A1 = OK\ncheck A1 seed=6 = OK\n' >"$out.bad"
"$b/vidmm" run "$out.bad" --driver vkgpu >/dev/null 2>"$out"
if [ $? -eq 1 ] && grep -q "MISMATCH" "$out"; then ok; else bad "a wrong read-back on vkgpu fails the run"; fi
rm -f "$out.bad"
vk_scenarios "" ""
# Without GpuMmu (lavapipe 22.3) the GPU VA calls are refused by vidmm and
# said once by name; the GPU reads, which need softgpu's MMU walker, are
# not made and said.
"$b/vidmm" run tests/scenarios/evict-faults.scn --driver vkgpu >"$out.rep" 2>"$out"
if grep -q "map refused on driver vkgpu: it declares no GPU virtual addressing" "$out" \
   && grep -q "gpu-read not made on driver vkgpu" "$out" && grep -q "(physical)" "$out.rep"; then ok
else bad "GpuMmu absent and softgpu-only calls said by name on vkgpu"; fi
# A device that is not there is refused by name, nothing crashes.
VIDMM_VKGPU_DEVICE=no-such-gpu "$b/vidmm" info --driver vkgpu >"$out" 2>&1
if [ $? -eq 1 ] && grep -q "no-such-gpu" "$out"; then ok; else bad "VIDMM_VKGPU_DEVICE=no-such-gpu refused"; fi
# Lavapipe 25 (sparse binding), when `make lavapipe-backports` unpacked it
# (CI does): GpuMmu through sparse binding, required rather than skipped,
# and the conformance kit with it.
lvp=build/lavapipe-backports
if [ -e "$lvp/root/.done" ]; then
  env=$(sh tools/lavapipe-backports.sh "$lvp" 2>/dev/null)
  if [ -n "$env" ]; then
    eval "$env"
    export VK_DRIVER_FILES LD_LIBRARY_PATH
    if VKGPU_REQUIRE_SPARSE=1 "$b/vkgpu-tests" >"$out" 2>&1; then ok; else bad "vkgpu-tests on lavapipe 25"; fi
    grep -E "^(device|sparse):" "$out"
    if "$b/vidmm" drvcheck --driver vkgpu --options gpummu=1 >"$out" 2>&1 && grep -q " 0 failed, 0 skipped" "$out"
    then ok; else bad "drvcheck --driver vkgpu --options gpummu=1 on lavapipe 25"; fi
    # ---- GpuMmu paging on lavapipe 25: content moves as TRANSFER_VIRTUAL
    # through the paging process's sparse buffer, and 64 KB pages (page64:
    # 16 sparse blocks per page): the conformance kit and the demo's 3x
    # over-commitment, every byte read back.
    if "$b/vidmm" drvcheck --driver vkgpu --options gpummu=1,page64=1 >"$out" 2>&1 && grep -q " 0 failed, 0 skipped" "$out"
    then ok; else bad "drvcheck --driver vkgpu --options gpummu=1,page64=1 on lavapipe 25"; fi
    for o in gpummu=1 gpummu=1,page64=1; do
      if VIDMM_DRIVER_OPTIONS=$o "$b/vidmm" demo --driver vkgpu >"$out" 2>&1 && grep -q "^demo ok" "$out"; then ok
      else bad "demo --driver vkgpu with $o on lavapipe 25"; fi
    done
    # ---- end of GpuMmu paging
    vk_scenarios gpummu=1 " (lavapipe 25, gpummu=1)"
    "$b/vidmm" run tests/scenarios/evict-faults.scn --driver vkgpu --options gpummu=1 >"$out.rep" 2>"$out"
    if grep -q "(GpuMmu)" "$out.rep" && ! grep -q "refused on driver" "$out"; then ok
    else bad "scenario maps on vkgpu with gpummu=1 (lavapipe 25)"; fi
    unset VK_DRIVER_FILES LD_LIBRARY_PATH
  else
    bad "build/lavapipe-backports is there but unusable"
  fi
else
  echo "vkgpu: lavapipe 25 not unpacked (make lavapipe-backports): GpuMmu through sparse binding not run" >&2
  # Under CI=true a skip is a failure: CI unpacks it.
  [ "${CI:-}" = true ] && bad "lavapipe 25 absent under CI=true (make lavapipe-backports)"
fi
rm -f "$out" "$out.rep"
echo "vkgpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
