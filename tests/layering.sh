#!/bin/sh
# layering.sh - the layering rule of src/LAYERS, checked on the built
# objects and the sources.
#
# A call counts when an object of module M has an undefined symbol that
# an object of module N defines; an include counts when a file of M
# names "N/...".  Either must go to a module on an earlier line of
# src/LAYERS.  Every folder of src/ must be listed.  With --graph it
# prints the module graph instead (docs/ARCHITECTURE.md embeds it; the
# check also fails when that copy is stale).
# Usage: tests/layering.sh BUILD_DIR [--graph]
b=${1:-build}
mode=${2:-check}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# rank per module
grep -v '^#' src/LAYERS | grep -v '^$' | awk '{for (i = 1; i <= NF; i++) print $i, NR}' > "$t/rank"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "layering: FAIL $*"; }
for d in src/*/; do
  m=$(basename "$d")
  if grep -q "^$m " "$t/rank"; then ok; else bad "src/$m is in no layer of src/LAYERS"; fi
done
# symbols: defined (symbol module) and used (symbol module file)
# The objects of today's sources only (a build directory keeps the
# objects of files since moved or removed).
objs=""
for o in "$b"/src/*/*.o; do
  s=${o#"$b"/}
  [ -f "${s%.o}.c" ] && objs="$objs $o"
done
for o in $objs; do
  m=$(basename "$(dirname "$o")")
  nm -g --defined-only "$o" | awk -v m="$m" 'NF == 3 {print $3, m}'
done | sort -u > "$t/def"
for o in $objs; do
  m=$(basename "$(dirname "$o")")
  f=$(basename "$o" .o)
  nm -u "$o" | awk -v m="$m" -v f="$f" '{print $NF, m, f}'
done | sort > "$t/use"
join "$t/use" "$t/def" | awk '$2 != $4 {print $2, $4, $3, $1}' | sort -u > "$t/calls"
# includes: (module module file header)
for f in src/*/*.[ch]; do
  m=$(basename "$(dirname "$f")")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/\([^"]*\)".*/\1 \2/p' "$f" |
    while read -r n h; do
      [ "$n" = vidmm ] && continue
      [ "$n" = "$m" ] && continue
      # A module's fields header (N/*_fields.h: the members it keeps in
      # the shared objects, types only) is how model/objects.h embeds
      # them, and one fields header may build on another's types: not a
      # use of module N (checked apart below).
      case "$f:$h" in
        src/model/objects.h:*_fields.h|src/*/*_fields.h:*_fields.h) continue ;;
      esac
      echo "$m $n $(basename "$f") $n/$h"
    done
done | sort -u > "$t/incs"
rank() { awk -v m="$1" '$1 == m {print $2}' "$t/rank"; }
if [ "$mode" = --graph ]; then
  # One line per module, lowest first: what it uses (calls or includes).
  cat "$t/calls" "$t/incs" | awk '{print $1, $2}' | sort -u > "$t/edges"
  grep -v '^#' src/LAYERS | grep -v '^$' | while read -r line; do
    for m in $line; do
      uses=$(awk -v m="$m" '$1 == m {print $2}' "$t/edges" | tr '\n' ' ' | sed 's/ $//')
      printf '%-10s -> %s\n' "$m" "${uses:-(nothing)}"
    done
  done
  exit 0
fi
while read -r m n f s; do
  rm_=$(rank "$m"); rn=$(rank "$n")
  if [ -z "$rm_" ] || [ -z "$rn" ] || [ "$rn" -ge "$rm_" ]; then bad "call $m -> $n: $f.o uses $s"; else ok; fi
done < "$t/calls"
while read -r m n f h; do
  rm_=$(rank "$m"); rn=$(rank "$n")
  if [ -z "$rm_" ] || [ -z "$rn" ] || [ "$rn" -ge "$rm_" ]; then bad "include $m -> $n: $f includes $h"; else ok; fi
done < "$t/incs"
# Opaque state: a module's private state header (state.h, *_state.h) is
# included by that module's files only, and the adapter's pointer to the
# state is followed only there; other modules use the owner's accessors.
for f in src/*/*.[ch]; do
  m=$(basename "$(dirname "$f")")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/\(\([a-z_]*_\)\{0,1\}state\.h\)".*/\1 \2/p' "$f" |
    while read -r n h; do
      if [ "$n" = "$m" ]; then echo ok; else echo "bad $f includes $n/$h, private to src/$n"; fi
    done
done > "$t/private"
# Fields headers (N/*_fields.h): included by N's own files, by
# model/objects.h (which embeds the members) and by the fields header of
# a module above N; they hold types only, so they include no model/
# header (that would be a cycle through objects.h).
for f in src/*/*.[ch]; do
  m=$(basename "$(dirname "$f")")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/\([a-z_.]*\)".*/\1 \2/p' "$f" |
    while read -r n h; do
      case "$f" in
        *_fields.h) if [ "$n" = model ]; then echo "bad $f includes model/$h: a fields header holds types only"; continue; fi ;;
      esac
      case "$h" in *_fields.h) ;; *) continue ;; esac
      if [ "$n" = "$m" ] || [ "$f" = src/model/objects.h ]; then echo ok; continue; fi
      case "$f" in
        *_fields.h)
          rm_=$(awk -v x="$m" '$1 == x {print $2}' "$t/rank"); rn=$(awk -v x="$n" '$1 == x {print $2}' "$t/rank")
          if [ -n "$rm_" ] && [ -n "$rn" ] && [ "$rn" -lt "$rm_" ]; then echo ok; else echo "bad $f includes $n/$h from below"; fi ;;
        *) echo "bad $f includes $n/$h: only model/objects.h embeds src/$n's fields (use $n/$n.h)" ;;
      esac
    done
done >> "$t/private"
# Field ownership: the members a module keeps in the shared objects (the
# sub-structs of its fields header) are named by that module's files
# only; the others call its functions.  Comments are not code: the
# check reads the sources with /* ... */ comments on one line removed.
while read -r member owner; do
  for f in src/*/*.[ch]; do
    m=$(basename "$(dirname "$f")")
    [ "$m" = "$owner" ] && continue
    if sed 's:/\*.*\*/::g' "$f" | grep -Eq -- "(->|\.)$member\.[a-z_]"; then
      echo "bad $f names the member $member, owned by src/$owner (call src/$owner's functions)"
    else
      echo ok
    fi
  done
done >> "$t/private" <<'EOF_FIELDS'
res residency
quarantine placement
cpu_map allocation
sharing allocation
alloc_pool handle
debug observe
va_map process
va_spares process
mmu mmu
fault process
owned residency
EOF_FIELDS
while read -r field owner; do
  for f in src/*/*.[ch]; do
    m=$(basename "$(dirname "$f")")
    if grep -q -- "->$field->" "$f"; then
      if [ "$m" = "$owner" ]; then echo ok; else echo "bad $f follows ->$field->, opaque outside src/$owner"; fi
    fi
  done
done >> "$t/private" <<'EOF_OWNERS'
res residency
paging paging
fence fence
pp content
sub fence
EOF_OWNERS
# The entry mechanism's state (the adapter's `entry` member: lock
# nesting, pending reset, broken invariants) belongs to model/entry.c.
for f in src/*/*.[ch]; do
  if sed 's:/\*.*\*/::g' "$f" | grep -Eq -- '(->|\.)entry\.[a-z_]'; then
    if [ "$f" = src/model/entry.c ]; then echo ok; else echo "bad $f names the entry mechanism's state (model/entry.h's functions)"; fi
  fi
done >> "$t/private"
while read -r verdict rest; do
  if [ "$verdict" = ok ]; then ok; else bad "$rest"; fi
done < "$t/private"
# The library's internals stay its own: no component outside src/ names a
# module header of src/ ("model/objects.h"), and the Makefile compiles
# none of their files with -Isrc.  Only src/ and the white-box tests
# (tests/unit, the benchmarks that time internal structures, the
# explorer's build of src/) see them.  Each check is also run once on a
# planted violation, which it must report.
outside="softgpu vkgpu tools daemon client d3dkmt support examples fuzz"
mods=$(for d in src/*/; do basename "$d"; done | tr '\n' '|' | sed 's/|$//')
# src_includes DIR...: "FILE includes HEADER" for each include of src/.
src_includes() {
  find "$@" -name '*.[ch]' 2>/dev/null | sort | while read -r f; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
      grep -E "^(\.\./)*(src/|($mods)/)" | sed "s|^|$f includes |"
  done
}
# isrc_objects [VAR=VALUE]: the objects of those components whose
# compile command, as the Makefile gives it, has -Isrc.
isrc_objects() {
  o=$(for d in $outside; do find "$d" -name '*.c' 2>/dev/null; done | sort | sed "s|^\(.*\)\.c$|$b/\1.o|")
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -B BUILD="$b" "$@" $o 2>/dev/null |
    awk '/ -c / && / -Isrc( |$)/ { for (i = 1; i <= NF; i++) if ($i == "-o") print $(i + 1) }'
}
src_includes $outside > "$t/isrc_inc"
if [ -s "$t/isrc_inc" ]; then
  while read -r line; do bad "include of src/ outside src/: $line"; done < "$t/isrc_inc"
else ok; fi
mkdir -p "$t/planted/tools"
printf '#include "model/objects.h"\n' > "$t/planted/tools/planted.c"
if [ -n "$(src_includes "$t/planted")" ]; then ok; else bad "the include check misses a planted include of src/"; fi
# (Not on tests/layering_test.sh's copies of src/, which have no Makefile.)
if command -v make >/dev/null 2>&1 && [ -f Makefile ]; then
  isrc_objects > "$t/isrc_obj"
  if [ -s "$t/isrc_obj" ]; then
    while read -r o; do bad "-Isrc outside src/: the Makefile compiles $o with it"; done < "$t/isrc_obj"
  else ok; fi
  if [ -n "$(isrc_objects CFLAGS=-Isrc)" ]; then ok; else bad "the -Isrc check misses CFLAGS=-Isrc"; fi
fi
# The graph in docs/ARCHITECTURE.md is this one.
if [ -f docs/ARCHITECTURE.md ]; then
  sh "$0" "$b" --graph > "$t/graph"
  sed -n '/<!-- layers:begin -->/,/<!-- layers:end -->/p' docs/ARCHITECTURE.md | sed '1,2d;$d' | sed '$d' > "$t/doc"
  if cmp -s "$t/graph" "$t/doc"; then ok; else bad "docs/ARCHITECTURE.md's module graph is stale (tests/layering.sh $b --graph)"; fi
fi
echo "layering: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
