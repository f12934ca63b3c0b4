#!/bin/sh
# gpu_check.sh - `make gpu-check`: on whatever Vulkan device is present
# (VIDMM_VKGPU_DEVICE picks one: an index or part of its name), the
# driver conformance kit over vkgpu, vkgpu's tests (over-commitment with
# every byte read back, physical-mode submission, device loss), the tool's
# demo on it, and the vkgpu benchmark; then one summary.  A few minutes
# on a real GPU.  Usage: tests/vkgpu/gpu_check.sh BUILD_DIR
b=${1:-build}
log=${TMPDIR:-/tmp}/vidmm_gpu_check.$$
summary=""
failed=0
step() { # name cmd...
  name=$1; shift
  if "$@" >"$log" 2>&1; then r=ok; else r=FAILED; failed=$((failed + 1)); fi
  summary="$summary$(printf '%-12s %s' "$name" "$r"): $(grep -E 'passed|demo ok|FAILED|ratio|CHECK' "$log" | tail -n 1)
"
  cat "$log"
}
"$b/vidmm" info --driver vkgpu || { echo "gpu-check: no Vulkan device vkgpu can open"; exit 1; }
step conformance "$b/vidmm" drvcheck --driver vkgpu
step tests "$b/vkgpu-tests"
step demo "$b/vidmm" demo --driver vkgpu
make -s BUILD=build-bench OPT="-O2 -DNDEBUG" build-bench/vkgpu-bench >/dev/null
step benchmark build-bench/vkgpu-bench --check "${GPU_CHECK_RATIO:-0.9}"
rm -f "$log"
echo
echo "== gpu-check summary =="
printf '%s' "$summary"
echo "gpu-check: $((4 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
