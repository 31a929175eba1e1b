#!/usr/bin/env bash
# Builds everything and runs the whole test suite. First the docs site
# (`mkdocs build --strict` from mkdocs.yml, into a temporary folder: a broken
# link or a page missing from the navigation fails in seconds). Then an
# optimized build (GCC) and its tests, then a clang build under
# AddressSanitizer + UndefinedBehaviorSanitizer with the fuzz targets in it
# (built beside the first tests, at idle priority, so it takes the CPU they
# leave): the same tests, then each fuzz target (tests/fuzz/) fuzzed for FUZZ_SECONDS
# with libFuzzer; a crash fails the run and names its reproducer. Clang also
# checks the lock annotations there (an error). Installs its Debian packages first
# if any is missing. Compiles through ccache when it is installed (its default
# place, ~/.cache/ccache), so a second run recompiles only what changed.
# Prints one `==> time: <phase> <seconds> s` line per phase and a total.
# `.ci/run` calls this.
#
#   scripts/run_tests.sh               # docs, then all three
#   DOCS=0 scripts/run_tests.sh        # skip the docs site
#   SANITIZE=0 scripts/run_tests.sh    # skip the sanitizer build (and fuzzing)
#   FUZZ=0 scripts/run_tests.sh        # skip fuzzing (FUZZ_SECONDS=10 per target)
#   BESIDE=0 scripts/run_tests.sh      # the sanitizer build after the first suite, not beside it
#   TSAN=1 scripts/run_tests.sh        # also ThreadSanitizer (not in CI; about 11 min more on 2 cores)
#   BUILD_DIR=out scripts/run_tests.sh
#   scripts/run_tests.sh 2>&1 | grep '^==> time:'   # where the time went
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  # The comment above, up to `set -euo pipefail`.
  sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi

# shellcheck source=scripts/lib/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/deps.sh"
root=$(rs_repo_root)

started=$SECONDS
site=""
ccache_before=""
bg_pid=""
bg_log=""
finish() {
  local rc=$?
  [ -z "$site" ] || rm -rf "$site"
  if [ -n "$bg_pid" ]; then
    # A build still running beside a suite that failed: ninja stops its compilers.
    kill "$bg_pid" 2>/dev/null || true
    wait "$bg_pid" 2>/dev/null || true
  fi
  [ -z "$bg_log" ] || rm -f "$bg_log"
  if [ -n "$ccache_before" ]; then
    echo "==> ccache: $(ccache_hits_misses "$ccache_before")"
  fi
  echo "==> time: total $((SECONDS - started)) s"
  return $rc
}
trap finish EXIT

# Runs a command and prints how long it took, in one greppable line.
timed() {
  local phase=$1 t0=$SECONDS
  shift
  "$@"
  echo "==> time: $phase $((SECONDS - t0)) s"
}

# ccache's hit and miss counters (the cache's own totals; with a baseline
# argument, what this run added to them).
ccache_hits_misses() {
  local hits misses
  read -r hits misses < <(ccache --print-stats | awk '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { print h + 0, m + 0 }')
  if [ -n "${1:-}" ]; then
    local base_hits base_misses
    read -r base_hits base_misses <<<"$1"
    echo "$((hits - base_hits)) hits, $((misses - base_misses)) misses"
  else
    echo "$hits $misses"
  fi
}

timed deps rs_install_deps "${RS_TEST_PACKAGES[@]}"
if command -v ccache >/dev/null; then
  ccache_before=$(ccache_hits_misses)
fi

build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

build_docs() {
  if [ ! -f "$root/mkdocs.yml" ]; then
    echo "docs: $root/mkdocs.yml is missing: the docs site is built from it (DOCS=0 skips this step)" >&2
    return 1
  fi
  site=$(mktemp -d)
  # Not --quiet: it hides the warnings that --strict turns into errors.
  mkdocs build --strict --config-file "$root/mkdocs.yml" --site-dir "$site"
}

configure() {
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
}

configure_tree() {
  local dir=$1
  shift
  echo "==> configuring $dir ($*)"
  timed "configure $(basename "$dir")" configure "$dir" "$@"
}

build_tree() {
  echo "==> building $1"
  timed "build $(basename "$1")" ninja -C "$1" -j "$jobs"
}

test_tree() {
  echo "==> testing $1"
  # --no-tests=error: a build configured without tests must not pass as green.
  # The fuzzers (label fuzz) run in a phase of their own, below.
  timed "test $(basename "$1")" ctest --test-dir "$1" --output-on-failure --no-tests=error -j "$jobs" \
    --timeout 900 -LE '^fuzz$'
}

# A tree built beside a suite, at idle priority: the suite's tests wait on
# sockets, timeouts and containers much of the time, and a build at
# SCHED_IDLE (chrt; nice 19 where that is refused) takes only the CPU they
# leave, so the tests keep theirs. Its output is printed when it ends.
start_build_beside() {
  local dir=$1 prio=(nice -n 19)
  if chrt --idle 0 true 2>/dev/null; then prio=(chrt --idle 0 nice -n 19); fi
  bg_log=$(mktemp)
  bg_started=$SECONDS
  echo "==> building $dir beside the next suite (${prio[*]}; its output once it ends)"
  "${prio[@]}" ninja -C "$dir" -j "$jobs" >"$bg_log" 2>&1 &
  bg_pid=$!
}

finish_build_beside() {
  local dir=$1 rc=0 waited=$SECONDS
  wait "$bg_pid" || rc=$?
  bg_pid=""
  cat "$bg_log"
  echo "==> $dir: built beside the suite, then alone for $((SECONDS - waited)) s" \
    "($((SECONDS - bg_started)) s in all)"
  echo "==> time: build $(basename "$dir") $((SECONDS - waited)) s"
  [ "$rc" = 0 ] || echo "==> building $dir failed (exit $rc): its output is above" >&2
  return $rc
}

# A folder configured with another C++ compiler (the sanitizer build was GCC
# before it was clang) is configured afresh: CMake refuses to switch.
forget_other_compiler() {
  local dir=$1 compiler=$2 cached
  cached=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$cached" ] && [ "$(readlink -f "$cached")" != "$(readlink -f "$(command -v "$compiler")")" ]; then
    echo "==> $dir was configured with $cached: configuring it afresh with $compiler"
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
}

# First: it takes seconds and fails fast.
if [ "${DOCS:-1}" != "0" ]; then
  echo "==> building the docs site (mkdocs build --strict)"
  timed docs build_docs
fi

# Tests on explicitly: the main job configures the same folder without them.
# -O2 -g1: the code the suite runs is what -O2 makes, with line tables and
# function names (enough for a backtrace or perf) but no variable locations,
# which took a quarter of compiling a file (connection.cc: 24.6 -> 18.3 CPU-s).
# RS_TEST_CODE_FLAGS: the test files' own code at -O1 -g1 (tests/CMakeLists.txt).
# RS_UNITY_TESTS: each test binary's files compiled 8 to a file, which halves
# their compile time (tests/CMakeLists.txt), here and in the sanitizer build.
configure_tree "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=ON -DRS_TEST_CODE_FLAGS="-O1 -g1" -DRS_UNITY_TESTS=ON
build_tree "$build"

sanitize=${SANITIZE:-1}
beside=0
if [ "$sanitize" != "0" ]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # One clang tree for the sanitizers and the fuzzers (-DRS_FUZZ=ON: the
  # fuzz targets are libFuzzer binaries, the libraries they link carry
  # coverage for them). It was two, a GCC one for the tests and a clang one
  # for the fuzzers, which compiled the libraries twice; and clang compiles
  # this code under the sanitizers in 30 - 50 % less CPU than GCC.
  # -g1: line tables and inlined frames, all an ASan or UBSan report prints,
  # without variable locations: about a fifth less compile time. -O1, as
  # AddressSanitizer's own documentation advises: it checks every access -O2
  # would. The test files' own code at -O0 and without the sanitizers
  # (tests/CMakeLists.txt): what runs under them is the product's code, its
  # libraries and programs, with the sanitizers' runtime (allocator, leak
  # checks) in every test process; instrumenting the test files themselves
  # doubled their compile time (an integration batch: 16.3 CPU-s, 8.6
  # without). The price: an inline function or template that a test file
  # and the product both use may run the test file's uninstrumented copy.
  fuzz_flags=(-DRS_FUZZ=OFF)
  if [ "${FUZZ:-1}" != "0" ]; then
    fuzz_flags=(-DRS_FUZZ=ON -DRS_FUZZ_SECONDS="${FUZZ_SECONDS:-10}")
  fi
  forget_other_compiler "$build-asan" clang++-14
  # (bash exports CC and CXX to the function and what it runs.)
  CC=clang-14 CXX=clang++-14 configure_tree "$build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DRS_SANITIZE=address,undefined -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=OFF \
    -DRS_TEST_CODE_FLAGS="-O0 -g1 -fno-sanitize=address,undefined" \
    -DRS_UNITY_TESTS=ON \
    "${fuzz_flags[@]}"
  if [ "${BESIDE:-1}" != "0" ]; then
    beside=1
    start_build_beside "$build-asan"
  fi
fi

test_tree "$build"

if [ "$sanitize" != "0" ]; then
  if [ "$beside" = 1 ]; then
    finish_build_beside "$build-asan"
  else
    build_tree "$build-asan"
  fi
  test_tree "$build-asan"
  if [ "${FUZZ:-1}" != "0" ]; then
    echo "==> fuzzing each target for ${FUZZ_SECONDS:-10} s"
    timed "fuzz $(basename "$build-asan")" ctest --test-dir "$build-asan" --output-on-failure --no-tests=error \
      -L '^fuzz$' -j "$jobs"
  fi
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
  name=$(basename "$dir")
  echo "==> configuring $dir (ThreadSanitizer)"
  timed "configure $name" configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_SANITIZE=thread -DRS_BUILD_TESTS=ON \
    -DRS_BUILD_BENCH=OFF
  echo "==> building $dir"
  timed "build $name" ninja -C "$dir" -j "$jobs"
  echo "==> testing $dir"
  timed "test $name" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" --timeout 900 \
    -E '^(ScaleTest\.ThirtyTwoClientsFourReducersMixedSizes|PluginReload\.LoadUseCloseUnload50Times|ReducerctlTest\.StatusSessionsHealthAndDrainAgainstALiveReducer)$'
fi
echo "==> all tests passed"
