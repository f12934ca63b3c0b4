# skip.sh - sourced by tests/run.sh and the suite scripts: the one way to
# say that a suite, or a check within one, could not run because what it
# needs is missing (a built program, python3, a Python module, a tool).
# A skip must never pass unnoticed: it is a loud warning on stderr, and
# under CI=true, where the machine is meant to have everything, a failure.
#
#   skipped WHAT WHY   prints "WARNING: WHAT skipped: WHY" on stderr;
#                      returns 1 under CI=true (the caller counts a
#                      failure), 0 otherwise.
skipped() {
  echo "WARNING: $1 skipped: $2" >&2
  if [ "${CI:-}" = true ]; then
    echo "FAILED $1: skipped under CI=true: $2" >&2
    return 1
  fi
  return 0
}
#
#   optional WHAT WHY  the same warning, never a failure: for the tools a
#                      CI machine need not have (man and groff,
#                      systemd-analyze), whose checks are extras.
optional() {
  echo "WARNING: $1 skipped: $2" >&2
}
