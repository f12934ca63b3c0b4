#!/bin/sh
# abi_check.sh - libvidmm.so exports exactly the functions the public
# headers declare (nothing more, nothing less), all under the version
# script's node, with the SONAME of the header's major version, and the
# loaded library reports the headers' version (docs/ABI.md).
# Usage: tests/abi_check.sh BUILD_DIR
b=${1:-build}
cc=${CC:-cc}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "abi: FAIL $*"; }
ver=$(sed -n 's/^#define VIDMM_VERSION_STRING "\(.*\)"/\1/p' include/vidmm/version.h)
major=${ver%%.*}
so="$b/libvidmm.so.$ver"
if [ -f "$so" ]; then ok; else bad "$so missing (the header says version $ver)"; echo "abi: $pass passed, $fail failed"; exit 1; fi
# Every function the installed headers declare (gcc lists each prototype
# it saw with its file); softgpu.h belongs to libsoftgpu, not to this
# library.
echo '#include "vidmm/vidmm.h"' > "$t/all.c"
gcc -std=c11 -Iinclude -fsyntax-only -aux-info "$t/aux" "$t/all.c"
grep 'include/vidmm/' "$t/aux" | grep -v 'include/vidmm/softgpu.h' | grep -v ' static ' |
  sed 's|^/\*[^*]*\*/ ||' | sed -n 's/.*[ *]\([A-Za-z_][A-Za-z_0-9]*\) (.*/\1/p' | sort -u > "$t/declared"
nm -D --defined-only "$so" | awk '{print $2, $3}' > "$t/dyn"
awk '$1 == "T" {print $2}' "$t/dyn" | sed 's/@.*//' | sort -u > "$t/exported"
n=$(wc -l < "$t/declared")
if [ "$n" -gt 50 ]; then ok; else bad "only $n declarations found in include/vidmm"; fi
comm -23 "$t/declared" "$t/exported" > "$t/missing"
comm -13 "$t/declared" "$t/exported" > "$t/extra"
if [ -s "$t/missing" ]; then bad "declared but not exported: $(tr '\n' ' ' < "$t/missing")"; else ok; fi
if [ -s "$t/extra" ]; then bad "exported but declared by no public header: $(tr '\n' ' ' < "$t/extra")"; else ok; fi
# No data or other symbol types leak (the version node itself is type A).
others=$(awk '$1 != "T" && $1 != "A" {print $2}' "$t/dyn" | tr '\n' ' ')
if [ -z "$others" ]; then ok; else bad "exported non-function symbols: $others"; fi
# Every function carries the version node.
unversioned=$(awk '$1 == "T" && $2 !~ /@@?VIDMM_/ {print $2}' "$t/dyn" | tr '\n' ' ')
if [ -z "$unversioned" ]; then ok; else bad "exported without a version node: $unversioned"; fi
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" = "libvidmm.so.$major" ]; then ok; else bad "SONAME '$soname', want libvidmm.so.$major"; fi
# The loaded library says the headers' version.
cat > "$t/v.c" <<'EOC'
#include <stdio.h>
#include <string.h>
#include "vidmm/vidmm.h"
int main(void)
{
    if (vidmm_version() != VIDMM_VERSION || strcmp(vidmm_version_string(), VIDMM_VERSION_STRING) != 0) {
        printf("library %s, headers %s\n", vidmm_version_string(), VIDMM_VERSION_STRING);
        return 1;
    }
    return 0;
}
EOC
mkdir -p "$t/lib"
ln -s "$(cd "$(dirname "$so")" && pwd)/$(basename "$so")" "$t/lib/libvidmm.so.$major"
ln -s "libvidmm.so.$major" "$t/lib/libvidmm.so"
if $cc -std=c11 -Iinclude "$t/v.c" -o "$t/v" -L"$t/lib" -lvidmm -lpthread 2>"$t/err" && LD_LIBRARY_PATH="$t/lib" "$t/v"; then
  ok
else
  bad "a program linked with -lvidmm does not see version $ver: $(cat "$t/err")"
fi
echo "abi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
