#!/usr/bin/env bash
# scripts/run_tests.sh's order and exits, with cmake, ninja, ctest,
# dpkg-query, chrt and nice replaced by stubs on PATH (nothing is built or
# installed): the sanitizer tree builds beside the optimized suite, asked for
# at idle priority; a failed suite fails the run and stops that build, leaving
# no process behind; a failed build beside the suite fails the run after the
# suite and says so; BESIDE=0 builds it after the suite. Each stub logs what
# it was asked to do.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stubs=$work/stubs
mkdir -p "$stubs"
events=$work/events

cat >"$stubs/cmake" <<'EOF'
#!/bin/bash
exit 0
EOF
cat >"$stubs/dpkg-query" <<'EOF'
#!/bin/bash
echo "install ok installed"
EOF
# chrt and nice log the priority asked for and run the command at the
# caller's: a real SCHED_IDLE build may not start for a minute beside a full
# ctest run on 2 cores, and the order is what this test checks.
cat >"$stubs/chrt" <<'EOF'
#!/bin/bash
[ "$1 $2" = "--idle 0" ] || exit 1
shift 2
[ "$1" = true ] || echo "prio chrt idle" >>"$STUB_EVENTS"
exec "$@"
EOF
cat >"$stubs/nice" <<'EOF'
#!/bin/bash
[ "$1 $2" = "-n 19" ] || exit 1
shift 2
echo "prio nice 19" >>"$STUB_EVENTS"
exec "$@"
EOF
# ninja -C DIR ...: the sanitizer tree's build says it started (a file the
# suite's stub waits for: it starts in the background and may come second),
# lasts until STUB_BUILD_FILE exists (a passing suite's stub creates it) or
# 20 s pass, then exits STUB_ASAN_BUILD_RC.
cat >"$stubs/ninja" <<'EOF'
#!/bin/bash
dir=$2
case $dir in
  *-asan)
    echo "build-asan start" >>"$STUB_EVENTS"
    trap 'echo "build-asan stopped" >>"$STUB_EVENTS"; exit 143' TERM
    touch "$STUB_BUILD_FILE.started"
    for _ in $(seq 1 200); do
      [ -e "$STUB_BUILD_FILE" ] && break
      sleep 0.1
    done
    echo "build-asan end" >>"$STUB_EVENTS"
    exit "${STUB_ASAN_BUILD_RC:-0}"
    ;;
  *) echo "build start" >>"$STUB_EVENTS"; exit 0 ;;
esac
EOF
# ctest --test-dir DIR ...: the optimized suite exits STUB_SUITE_RC; the
# sanitizer suite and the fuzzers pass.
cat >"$stubs/ctest" <<'EOF'
#!/bin/bash
dir=$2
case " $* " in
  *" -L "*) echo "fuzz" >>"$STUB_EVENTS"; exit 0 ;;
esac
case $dir in
  *-asan) echo "suite-asan" >>"$STUB_EVENTS"; exit 0 ;;
esac
echo "suite start" >>"$STUB_EVENTS"
if [ "${STUB_WAIT_BESIDE:-1}" = 1 ]; then
  for _ in $(seq 1 300); do
    [ -e "$STUB_BUILD_FILE.started" ] && break
    sleep 0.1
  done
fi
echo "suite end" >>"$STUB_EVENTS"
# A passing suite lets the build beside end; after a failed one the build
# runs on until run_tests.sh stops it (or its 20 s pass).
[ "${STUB_SUITE_RC:-0}" != 0 ] || touch "$STUB_BUILD_FILE"
exit "${STUB_SUITE_RC:-0}"
EOF
chmod +x "$stubs"/*

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# before EVENTS A B: event A was logged before event B.
before() {
  local list i a=-1 b=-1
  IFS=, read -r -a list <<<"$1"
  for i in "${!list[@]}"; do
    [[ ${list[i]} == "$2" && $a -lt 0 ]] && a=$i
    [[ ${list[i]} == "$3" ]] && b=$i
  done
  ((a >= 0 && b > a))
}

# run NAME [VAR=value ...]: run_tests.sh with the stubs; sets rc, out, ev.
run() {
  local name=$1
  shift
  rm -f "$events" "$work/built" "$work/built.started"
  out=$work/$name.out
  rc=0
  # The knobs set here, not inherited: CI's own run may have been started with any of them.
  env PATH="$stubs:$PATH" DOCS=0 SANITIZE=1 FUZZ=1 BESIDE=1 TSAN=0 JOBS=2 BUILD_DIR="$work/build" \
    STUB_EVENTS="$events" STUB_BUILD_FILE="$work/built" "$@" "$root/scripts/run_tests.sh" >"$out" 2>&1 || rc=$?
  ev=$(tr '\n' ',' <"$events")
  # Nothing of the run is left behind.
  if pgrep -f "$stubs/" >/dev/null; then
    fail "$name: a stub still runs after run_tests.sh ended"
    pkill -f "$stubs/" || true
  fi
}

run passing
[ "$rc" = 0 ] || fail "passing: exit $rc, want 0"
grep -q '^==> all tests passed' "$out" || fail "passing: no '==> all tests passed'"
grep -q 'beside the next suite' "$out" || fail "passing: the sanitizer build was not said to start beside the suite"
grep -q '^==> time: build build-asan [0-9]* s$' "$out" || fail "passing: no time line for the sanitizer build"
# The build beside started before the suite ended (it starts in the
# background, so either may log first), and its suite waited for it.
{ before "$ev" "prio chrt idle" "build-asan start" && before "$ev" "prio nice 19" "build-asan start"; } ||
  fail "passing: the sanitizer build was not started at idle priority (chrt --idle 0 nice -n 19): $ev"
before "$ev" "build start" "build-asan start" ||
  fail "passing: the sanitizer build began before the optimized one: $ev"
before "$ev" "build-asan start" "suite end" ||
  fail "passing: the sanitizer build did not run beside the suite: $ev"
before "$ev" "build-asan end" "suite-asan" ||
  fail "passing: the sanitizer suite did not wait for its build: $ev"
before "$ev" "suite-asan" "fuzz" ||
  fail "passing: fuzzing before the sanitizer suite: $ev"

run suite-fails STUB_SUITE_RC=1
[ "$rc" != 0 ] || fail "suite-fails: exit 0, want a failure"
case $ev in
  *"build-asan stopped"*) ;;
  *) fail "suite-fails: the build beside the failed suite was not stopped: $ev" ;;
esac
case $ev in
  *suite-asan*) fail "suite-fails: the sanitizer suite ran after a failed suite: $ev" ;;
esac

run build-fails STUB_ASAN_BUILD_RC=1
[ "$rc" != 0 ] || fail "build-fails: exit 0, want a failure"
grep -q 'build-asan failed (exit 1)' "$out" || fail "build-fails: the failed sanitizer build was not named"
case $ev in
  *suite-asan*) fail "build-fails: the sanitizer suite ran on a failed build: $ev" ;;
esac

run after BESIDE=0 STUB_WAIT_BESIDE=0
[ "$rc" = 0 ] || fail "after: exit $rc, want 0"
before "$ev" "suite end" "build-asan start" ||
  fail "after: with BESIDE=0 the sanitizer build must follow the suite: $ev"

if [ "$failures" -ne 0 ]; then
  echo "run_tests.sh: $failures check(s) failed; the last run's output:" >&2
  cat "$out" >&2
  exit 1
fi
echo "run_tests.sh: order, exits and the build beside the suite as expected"
