#!/bin/sh
# abi_check.sh - libvidmm.so exports exactly the functions and data
# objects the public headers declare (nothing more, nothing less), all
# under the version
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
# Data objects: every `extern` object a public header declares (the
# policy objects of policy.h) is exported as data (R, D or B), and no
# other data leaks.  -aux-info lists functions only, hence the headers'
# text: one declaration per line, ending in the object's name.
grep -h '^VIDMM_API extern ' include/vidmm/*.h | grep -v '(' |
  sed -n 's/.*[ *]\([A-Za-z_][A-Za-z_0-9]*\) *;.*/\1/p' | sort -u > "$t/declared_data"
awk '$1 ~ /^[RDBGS]$/ {print $2}' "$t/dyn" | sed 's/@.*//' | sort -u > "$t/exported_data"
nd=$(wc -l < "$t/declared_data")
if [ "$nd" -ge 4 ]; then ok; else bad "only $nd data declarations (VIDMM_API extern) found in include/vidmm"; fi
comm -23 "$t/declared_data" "$t/exported_data" > "$t/missing_data"
comm -13 "$t/declared_data" "$t/exported_data" > "$t/extra_data"
if [ -s "$t/missing_data" ]; then bad "data declared but not exported: $(tr '\n' ' ' < "$t/missing_data")"; else ok; fi
if [ -s "$t/extra_data" ]; then bad "data exported but declared by no public header: $(tr '\n' ' ' < "$t/extra_data")"; else ok; fi
# No other symbol types leak (the version node itself is type A).
others=$(awk '$1 !~ /^[TRDBGSA]$/ {print $2}' "$t/dyn" | tr '\n' ' ')
if [ -z "$others" ]; then ok; else bad "exported symbols of other types: $others"; fi
# Every function and data object carries the version node.
unversioned=$(awk '$1 ~ /^[TRDBGS]$/ && $2 !~ /@@?VIDMM_/ {print $2}' "$t/dyn" | tr '\n' ' ')
if [ -z "$unversioned" ]; then ok; else bad "exported without a version node: $unversioned"; fi
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" = "libvidmm.so.$major" ]; then ok; else bad "SONAME '$soname', want libvidmm.so.$major"; fi
# The loaded library says the headers' version.
# The policy objects are linkable and are the ones vidmm_policies() lists.
cat > "$t/v.c" <<'EOC'
#include <stdio.h>
#include <string.h>
#include "vidmm/vidmm.h"
int main(void)
{
    const struct vidmm_eviction_policy *const *p = vidmm_policies();
    const struct vidmm_eviction_policy *want[] = { &vidmm_policy_lru, &vidmm_policy_adaptive,
                                                   &vidmm_policy_belady, &vidmm_policy_reuse };
    if (vidmm_version() != VIDMM_VERSION || strcmp(vidmm_version_string(), VIDMM_VERSION_STRING) != 0) {
        printf("library %s, headers %s\n", vidmm_version_string(), VIDMM_VERSION_STRING);
        return 1;
    }
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (size_t j = 0; p[j]; j++)
            found |= p[j] == want[i];
        if (!found) {
            printf("policy object %zu is not in vidmm_policies()\n", i);
            return 1;
        }
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
  bad "a program linked with -lvidmm (version, policy objects) fails: $(cat "$t/err")"
fi
echo "abi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
