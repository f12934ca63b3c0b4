#!/bin/sh
# layering_graph.sh - write the module graph of tests/layering.sh into
# docs/ARCHITECTURE.md (between the layers markers), after a change to
# the modules' calls or includes.  Usage: tests/layering_graph.sh BUILD_DIR
b=${1:-build}
g=$(mktemp)
sh tests/layering.sh "$b" --graph > "$g" || exit 1
awk -v g="$g" '
  /<!-- layers:begin -->/ { print; print "```"; while ((getline l < g) > 0) print l; print "```"; skip = 1; next }
  /<!-- layers:end -->/ { skip = 0 }
  !skip { print }
' docs/ARCHITECTURE.md > "$g.md" && mv "$g.md" docs/ARCHITECTURE.md
rm -f "$g"
