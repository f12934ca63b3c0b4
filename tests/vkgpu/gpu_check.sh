#!/bin/sh
# gpu_check.sh - `make gpu-check`: on whatever Vulkan device is present
# (VIDMM_VKGPU_DEVICE picks one: an index or part of its name), the
# driver conformance kit over vkgpu, vkgpu's tests (over-commitment with
# every byte read back, physical-mode submission, device loss), the tool's
# demo on it, the built-in scenarios with the rules checker after every
# call, and the vkgpu benchmark; where the device has sparse binding
# (every desktop GPU; NVIDIA's 64 KiB sparse blocks give vidmm 64 KB
# pages), the kit, the demo and a scenario again with GpuMmu through
# sparse binding; then one summary.  A few minutes on a real GPU.
# Usage: tests/vkgpu/gpu_check.sh BUILD_DIR
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
for sc in desktop game compute; do
  step "run $sc" "$b/vidmm" run "$sc" --driver vkgpu
done
# GpuMmu through sparse binding, where the device can: vkgpu refuses
# gpummu=1 by name on a device without it (said here, not counted).
if VIDMM_DRIVER_OPTIONS=gpummu=1 "$b/vidmm" info --driver vkgpu >"$log" 2>&1; then
  step "kit gpummu" "$b/vidmm" drvcheck --driver vkgpu --options gpummu=1
  step "demo gpummu" env VIDMM_DRIVER_OPTIONS=gpummu=1 "$b/vidmm" demo --driver vkgpu
  step "run gpummu" "$b/vidmm" run desktop --driver vkgpu --options gpummu=1
else
  echo "gpu-check: no GpuMmu on this device (sparse binding): $(tail -n 1 "$log")"
  summary="${summary}gpummu       not available on this device: $(head -n 1 "$log")
"
fi
make -s BUILD=build-bench OPT="-O2 -DNDEBUG" build-bench/vkgpu-bench >/dev/null
step benchmark build-bench/vkgpu-bench --check "${GPU_CHECK_RATIO:-0.9}"
rm -f "$log"
echo
echo "== gpu-check summary =="
printf '%s' "$summary"
steps=$(printf '%s' "$summary" | grep -c -E ' (ok|FAILED):')
echo "gpu-check: $((steps - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
