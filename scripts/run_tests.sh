#!/usr/bin/env bash
# Builds everything and runs the whole test suite. First the docs site
# (`mkdocs build --strict` from mkdocs.yml, into a temporary folder: a broken
# link or a page missing from the navigation fails in seconds). Then an
# optimized build (GCC) and its tests, then a clang build under
# AddressSanitizer + UndefinedBehaviorSanitizer with the fuzz targets in it:
# the same tests, then each fuzz target (tests/fuzz/) fuzzed for FUZZ_SECONDS
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
finish() {
  local rc=$?
  [ -z "$site" ] || rm -rf "$site"
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

run_suite() {
  local dir=$1 name
  shift
  name=$(basename "$dir")
  echo "==> configuring $dir ($*)"
  timed "configure $name" configure "$dir" "$@"
  echo "==> building $dir"
  timed "build $name" ninja -C "$dir" -j "$jobs"
  echo "==> testing $dir"
  # --no-tests=error: a build configured without tests must not pass as green.
  # The fuzzers (label fuzz) run in a phase of their own, below.
  timed "test $name" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" --timeout 900 \
    -LE '^fuzz$'
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
run_suite "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=ON -DRS_TEST_CODE_FLAGS="-O1 -g1" -DRS_UNITY_TESTS=ON

if [ "${SANITIZE:-1}" != "0" ]; then
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
  CC=clang-14 CXX=clang++-14 run_suite "$build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DRS_SANITIZE=address,undefined -DRS_BUILD_TESTS=ON -DRS_BUILD_BENCH=OFF \
    -DRS_TEST_CODE_FLAGS="-O0 -g1 -fno-sanitize=address,undefined" \
    -DRS_UNITY_TESTS=ON \
    "${fuzz_flags[@]}"
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
