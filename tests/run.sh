#!/bin/sh
# run.sh - run the unit/integration test binary and the tool tests, then
# print one combined summary line "N passed, M failed".
# Usage: tests/run.sh BUILD_DIR
b=${1:-build}
out=$(mktemp)
"$b/vidmm-tests" | tee "$out"
rc1=$?
sh tests/tool_test.sh "$b/vidmm" | tee -a "$out"
rc2=$?
p=$(grep -E '^(tool: )?[0-9]+ passed, [0-9]+ failed' "$out" | sed -E 's/^tool: //' | awk '{s+=$1} END {print s+0}')
f=$(grep -E '^(tool: )?[0-9]+ passed, [0-9]+ failed' "$out" | sed -E 's/^tool: //' | awk '{s+=$3} END {print s+0}')
rm -f "$out"
echo "total: $p passed, $f failed"
echo "$p passed, $f failed"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$f" -eq 0 ]
