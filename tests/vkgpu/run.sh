#!/bin/sh
# run.sh - vkgpu on whatever Vulkan device is present (lavapipe in CI):
# its own tests (tests/vkgpu/vkgpu_test.c), the driver conformance kit
# through the vkgpu.so plug-in, and the tool's info and demo on it; then,
# where build/lavapipe-backports holds lavapipe 25, the tests again on it
# with GpuMmu through sparse binding required, and the kit and the demo
# with GpuMmu paging (4 KiB and 64 KB pages).
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
    unset VK_DRIVER_FILES LD_LIBRARY_PATH
  else
    bad "build/lavapipe-backports is there but unusable"
  fi
else
  echo "vkgpu: lavapipe 25 not unpacked (make lavapipe-backports): GpuMmu through sparse binding not run" >&2
  # Under CI=true a skip is a failure: CI unpacks it.
  [ "${CI:-}" = true ] && bad "lavapipe 25 absent under CI=true (make lavapipe-backports)"
fi
rm -f "$out"
echo "vkgpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
