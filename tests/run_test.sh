#!/bin/sh
# run_test.sh - the test runner's own test: tests/run.sh against fake
# build directories whose "suites" are small shell scripts that crash
# (SIGSEGV before or after their summary line), exit non-zero while
# claiming 0 failed, report real failures, or are missing (a program, or
# python3 taken off PATH), with and without CI=true.  Each case checks the
# run's exit status, its last line "N passed, M failed" (the sum of the
# suites' counts, plus one per broken suite) and that it names the broken
# suite.  A second or so; run.sh runs it first.  Prints "runner: N passed,
# M failed".
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED runner: $1"; sed -n 1,20p "$t/out" "$t/err"; }

# fake DIR/PROGRAM BODY: an executable shell script.
fake() {
  mkdir -p "$(dirname "$1")"
  printf '#!/bin/sh\n%s\n' "$2" >"$1"
  chmod +x "$1"
}

# expect NAME RC LAST GREP SUITES [ENV=VALUE...]: run run.sh on $t/b with
# VIDMM_RUN_SUITES=SUITES; RC is "ok" (exit 0) or "fail"; its last line
# must be LAST and its stdout+stderr must contain GREP.
expect() {
  name=$1; want=$2; last=$3; pat=$4; suites=$5; shift 5
  # CI= first: the cases without CI=true must not inherit the caller's
  # (.ci/run exports CI=true); a case's own CI=true comes after it.
  env CI= VIDMM_RUN_SUITES="$suites" "$@" sh tests/run.sh "$t/b" >"$t/out" 2>"$t/err"
  rc=$?
  if [ "$want" = ok ] && [ "$rc" -ne 0 ]; then bad "$name: exit status $rc, want 0"; return; fi
  if [ "$want" = fail ] && [ "$rc" -eq 0 ]; then bad "$name: exit status 0, want a failure"; return; fi
  got=$(tail -n 1 "$t/out")
  if [ "$got" != "$last" ]; then bad "$name: last line '$got', want '$last'"; return; fi
  if ! cat "$t/out" "$t/err" | grep -q -- "$pat"; then bad "$name: no '$pat' in its output"; return; fi
  ok
}

# ---- a suite that crashes -------------------------------------------------
fake "$t/b/vidmm-tests" 'echo "suite a: 12 cases run"; kill -SEGV $$'
expect "SIGSEGV before the summary line" fail "0 passed, 1 failed" "run: FAILED library: no summary line" library
expect "SIGSEGV before the summary line, CI" fail "0 passed, 1 failed" "run: FAILED library" library CI=true
fake "$t/b/vidmm-tests" 'echo "5 passed, 0 failed"; kill -SEGV $$'
expect "SIGSEGV after the summary line" fail "5 passed, 1 failed" "died of signal 11" library
fake "$t/b/vidmm-tests" 'echo "5 passed, 0 failed"; exit 3'
expect "exit 3 claiming 0 failed" fail "5 passed, 1 failed" "exit status 3 although" library

# ---- counts: the total is the sum of the suites' own lines ------------------
fake "$t/b/vidmm-tests" 'echo "3 passed, 0 failed"; echo "5 passed, 0 failed"'
fake "$t/b/vidmm-d3dkmt-tests" 'echo "7 passed, 0 failed"'
fake "$t/b/examples/d3dkmt_client/d3dkmt_client" 'exit 0'
expect "three clean suites add up" ok "13 passed, 0 failed" "d3dkmt_client: 1 passed" "library d3dkmt d3dkmt_client"
fake "$t/b/vidmm-tests" 'echo "4 passed, 2 failed"; exit 1'
expect "failures reported are counted once" fail "12 passed, 2 failed" "total: 12 passed, 2 failed" \
  "library d3dkmt d3dkmt_client"

# ---- a suite that cannot run ----------------------------------------------
fake "$t/b/vidmm-tests" 'echo "5 passed, 0 failed"'
rm -f "$t/b/vidmm-d3dkmt-tests"
expect "missing program: a warning" ok "5 passed, 0 failed" "WARNING: suite d3dkmt skipped" "library d3dkmt"
expect "missing program under CI=true: a failure" fail "5 passed, 1 failed" "run: FAILED d3dkmt" \
  "library d3dkmt" CI=true
# python3 off PATH: a PATH of only the tools run.sh and the suites' skip
# paths use.
mkdir -p "$t/bin"
for c in sh mktemp rm cat grep tail sed tee env dirname; do
  ln -sf "$(command -v $c)" "$t/bin/$c"
done
fake "$t/b/vidmm" 'exit 0'
expect "no python3: docs skipped with a warning" ok "0 passed, 0 failed" "WARNING: suite docs skipped: missing python3" \
  docs PATH="$t/bin"
expect "no python3 under CI=true: docs fail" fail "0 passed, 1 failed" "run: FAILED docs" docs PATH="$t/bin" CI=true
expect "no python3 under CI=true: the schema check fails" fail "0 passed, 1 failed" \
  "WARNING: stats-schema skipped" stats-schema PATH="$t/bin" CI=true

echo "runner: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
