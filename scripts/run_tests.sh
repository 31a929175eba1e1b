#!/usr/bin/env bash
# Builds everything and runs the whole test suite, twice: an optimized build,
# then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
# Then fuzzes each fuzz target (tests/fuzz/) for FUZZ_SECONDS under ASan +
# UBSan with libFuzzer (a clang build); a crash fails the run and names its
# reproducer. Installs its Debian packages first if any is missing.
# `.ci/run` calls this.
#
#   scripts/run_tests.sh               # all three
#   SANITIZE=0 scripts/run_tests.sh    # skip the sanitizer build
#   FUZZ=0 scripts/run_tests.sh        # skip fuzzing (FUZZ_SECONDS=25 per target)
#   TSAN=1 scripts/run_tests.sh        # also ThreadSanitizer (not in CI; about 11 min more on 2 cores)
#   BUILD_DIR=out scripts/run_tests.sh
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

# shellcheck source=scripts/lib/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/deps.sh"
root=$(rs_repo_root)
rs_install_deps "${RS_TEST_PACKAGES[@]}"

build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

run_suite() {
  local dir=$1; shift
  echo "==> configuring $dir ($*)"
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  echo "==> building $dir"
  ninja -C "$dir" -j "$jobs"
  echo "==> testing $dir"
  # --no-tests=error: a build configured without tests must not pass as green.
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" --timeout 900)
}

# Tests on explicitly: the main job configures the same folder without them.
run_suite "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=ON

if [ "${SANITIZE:-1}" != "0" ]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  run_suite "$build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_SANITIZE=address,undefined -DRS_BUILD_TESTS=ON \
  -DRS_BUILD_BENCH=OFF
fi
if [ "${TSAN:-0}" = "1" ]; then
  # A process with a race report exits 66 and fails its test. Suppressed:
  # races TSan reports inside Debian's uninstrumented gRPC, Abseil, protobuf
  # and spdlog (tests/tsan_suppressions.txt). Left out: three tests that
  # measure what TSan itself changes (resident memory: shadow memory; the
  # plugin's thread count: TSan's own thread; reducerctl's 5 s gRPC deadline
  # on a reducer slowed 5 - 15 times).
  export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$root/tests/tsan_suppressions.txt:second_deadlock_stack=1:history_size=4}
  dir="$build-tsan"
  echo "==> configuring $dir (ThreadSanitizer)"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_SANITIZE=thread -DRS_BUILD_TESTS=ON \
    -DRS_BUILD_BENCH=OFF >/dev/null
  echo "==> building $dir"
  ninja -C "$dir" -j "$jobs"
  echo "==> testing $dir"
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" --timeout 900 \
    -E '^(ScaleTest\.ThirtyTwoClientsFourReducersMixedSizes|PluginReload\.LoadUseCloseUnload50Times|ReducerctlTest\.StatusSessionsHealthAndDrainAgainstALiveReducer)$')
fi
if [ "${FUZZ:-1}" != "0" ]; then
  # Only the fuzz targets are built here (`ninja fuzzers`), with clang and
  # libFuzzer; the seed corpus is also replayed by fuzz_replay.* in both
  # builds above.
  dir="$build-fuzz"
  echo "==> configuring $dir (clang, libFuzzer, ASan + UBSan)"
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_FUZZ=ON \
    -DRS_SANITIZE=address,undefined -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=OFF \
    -DRS_FUZZ_SECONDS="${FUZZ_SECONDS:-25}" >/dev/null
  echo "==> building $dir"
  ninja -C "$dir" -j "$jobs" fuzzers
  echo "==> fuzzing each target for ${FUZZ_SECONDS:-25} s"
  (cd "$dir" && ctest --output-on-failure --no-tests=error -L '^fuzz$' -j "$jobs")
fi
echo "==> all tests passed"
