#!/bin/sh
# tool_test.sh - end-to-end checks of the vidmm command-line tool.
echo "tool tests: none yet"
