#!/usr/bin/env bash
# Packs what a lent GPU machine needs into one folder of at most 64 MiB: that
# machine has no Debian packages, no compiler and no network, only glibc,
# libstdc++, a Python with PyTorch and NVIDIA's pip wheels (CUDA, NCCL).
#
#   scripts/gpu_bundle.sh [DIR]     default DIR: out/gpu-bundle (git-ignored)
#   BUILD_DIR=build scripts/gpu_bundle.sh    reuse a build that holds the programs
#
# Without BUILD_DIR, or where BUILD_DIR lacks the programs, it builds them
# (Release, in build-release). DIR then holds:
#   bin/        reducerd, rs-train, reducer-bench (stripped)
#   lib/        libnccl-net-reducer.so (needs only glibc, libstdc++, libgcc_s),
#               librs-train-gpu.so (rs-train's GPU module, when CUDA was found)
#   lib/deps/   every other library they need (gRPC, protobuf, OpenSSL, ...)
#   tests/gpu/  the GPU checks; run tests/gpu/run_all.sh there
#   bench/collnet_trace.py  what the perf step summarises CollNet's trace with
#   bench/cpu_scaling.sh, scripts/lib/  the cpu step's benchmark; bin/iperf3
#               (where this machine has one) for its line
#   env.sh      `source DIR/env.sh`: PATH, LD_LIBRARY_PATH (with the folders
#               of PyTorch's nvidia-* wheels), RS_BUNDLE, RS_PLUGIN
#   MANIFEST.txt  git revision, build type, what the machine needs, every file
# Programs and libraries carry RUNPATH $ORIGIN/../lib/deps (or $ORIGIN), so
# they start even without env.sh.

# shellcheck disable=SC2016,SC2119  # '$ORIGIN' is the loader's; rs_install_deps takes extras only
set -euo pipefail

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

dir=""
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu_bundle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      [ -z "$dir" ] || { echo "gpu_bundle.sh: one DIR only (see --help)" >&2; exit 2; }
      dir=$1 ;;
  esac
  shift
done

# shellcheck source=scripts/lib/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/deps.sh"
repo=$(rs_repo_root)
dir=${dir:-$repo/out/gpu-bundle}
build=${BUILD_DIR:-$repo/build-release}
limit_mib=64
started=$SECONDS
step() { echo "==> $*"; }
die() { echo "gpu_bundle.sh: $*" >&2; exit 1; }

# Where each piece lies in a build folder.
declare -A built=(
  [bin/reducerd]=server/reducerd
  [bin/rs-train]=trainer/rs-train
  [bin/reducer-bench]=bench/reducer-bench
  [lib/libnccl-net-reducer.so]=nccl_plugin/libnccl-net-reducer.so
)
gpu_module=trainer/librs-train-gpu.so

have_all() {
  local f
  for f in "${built[@]}"; do [ -x "$build/$f" ] || return 1; done
}

# ---- the programs -----------------------------------------------------------
# A build named by BUILD_DIR is taken as it is; the default one is brought
# up to date first.
if [ -n "${BUILD_DIR:-}" ] && have_all; then
  step "reusing $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || echo 'build type unknown'))"
  # Reused as it is: say so when sources changed after it was built.
  newer=$(find "$repo" \( -path "$repo/build*" -o -path "$repo/out" -o -path "$repo/.git" -o -path "$repo/tests" \) -prune -o \
    \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name CMakeLists.txt \) \
    -newer "$build/server/reducerd" -print 2>/dev/null | head -3)
  [ -z "$newer" ] || echo "    note: sources changed after $build was built (e.g. ${newer//$'\n'/, }); run ninja -C $build first if that matters"
else
  rs_install_deps
  if [ -f "$build/CMakeCache.txt" ]; then
    step "bringing $build up to date (configured as it is)"
  else
    step "configuring $build (Release)"
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRS_BUILD_TESTS=OFF -DRS_BUILD_BENCH=ON >/dev/null
  fi
  targets=(reducerd rs-train reducer-bench nccl_net_reducer)
  if ninja -C "$build" -t query rs_trainer_gpu >/dev/null 2>&1; then targets+=(rs_trainer_gpu); fi
  step "building ${targets[*]} (about 6 minutes on 2 cores the first time)"
  ninja -C "$build" "${targets[@]}"
  have_all || die "$build still lacks some of: ${built[*]} (RS_BUILD_BENCH=OFF there?)"
fi
for tool in readelf strip patchelf ldd; do
  command -v "$tool" >/dev/null || { rs_install_deps; break; }
done

# ---- the folder -------------------------------------------------------------
# Only ever replaces a folder this script made (or an empty one).
if [ -e "$dir" ]; then
  [ -d "$dir" ] || die "$dir exists and is not a folder"
  if [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/MANIFEST.txt" ]; then
    die "$dir is not empty and holds no MANIFEST.txt (not a bundle): choose another DIR"
  fi
  rm -rf "$dir"
fi
mkdir -p "$dir/bin" "$dir/lib/deps" "$dir/tests"
dir=$(cd "$dir" && pwd)

step "copying the programs"
for dest in "${!built[@]}"; do
  cp "$build/${built[$dest]}" "$dir/$dest"
done
# iperf3 for the cpu step's line (bench/cpu_scaling.sh): the GPU machine has
# none. Optional: without it that column says n/a.
if command -v iperf3 >/dev/null; then
  cp "$(command -v iperf3)" "$dir/bin/"
else
  echo "    no iperf3 here: the cpu step will have no iperf3 figure to compare with"
fi
if [ -f "$build/$gpu_module" ]; then
  cp "$build/$gpu_module" "$dir/lib/"
else
  echo "    no $gpu_module in $build (built without CUDA): rs-train --backend gpu will not work"
fi

# The floor every machine has (glibc's libraries, the C++ runtime, GCC's
# support library) and what the GPU machine brings (the driver, and CUDA and
# NCCL from /usr/local/cuda or PyTorch's wheels): never copied.
floor_re='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|lib(c|m|pthread|dl|rt|resolv|util|anl|nsl|mvec)\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
gpu_re='^lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-ml)\.so'

step "collecting the libraries they need"
declare -A deps=()
for f in "$dir"/bin/* "$dir"/lib/*.so; do
  # ldd lists the whole tree of dependencies, resolved as the loader would
  # (without the caller's LD_LIBRARY_PATH, so the system's copies).
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [[ $name =~ $floor_re || $name =~ $gpu_re ]]; then continue; fi
    [ "$path" != "not" ] || die "$(basename "$f") needs $name, which this machine lacks"
    deps[$name]=$path
  done < <(env -u LD_LIBRARY_PATH ldd "$f")
done
for name in "${!deps[@]}"; do
  cp -L "${deps[$name]}" "$dir/lib/deps/$name"
done

step "stripping, setting RUNPATH"
for f in "$dir"/bin/* "$dir"/lib/*.so "$dir"/lib/deps/*; do
  [ -f "$f" ] || continue
  chmod u+w "$f"
  strip --strip-unneeded "$f"
done
for f in "$dir"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib/deps' "$f"; done
for f in "$dir"/lib/deps/*; do
  if [ -f "$f" ]; then patchelf --set-rpath '$ORIGIN' "$f"; fi
done
# The GPU module: CUDA and NCCL from env.sh's LD_LIBRARY_PATH (the wheels),
# else the toolkit's usual place (not the build machine's empty entry, the
# working directory).
if [ -f "$dir/lib/librs-train-gpu.so" ]; then
  patchelf --set-rpath '$ORIGIN/deps:/usr/local/cuda/lib64' "$dir/lib/librs-train-gpu.so"
fi
# The plugin keeps no RUNPATH: it needs nothing but the floor.

step "copying the GPU checks"
tar -C "$repo/tests" --exclude=__pycache__ --exclude='*.pyc' -cf - gpu | tar -C "$dir/tests" -xf -
mkdir -p "$dir/bench" "$dir/scripts/lib"
cp "$repo/bench/collnet_trace.py" "$dir/bench/"  # the perf step summarises REDUCER_COLLNET_TRACE with it
# The cpu step's benchmark, and the helpers it sources from ../scripts/lib.
cp "$repo/bench/cpu_scaling.sh" "$dir/bench/"
cp "$repo/scripts/lib/procs.sh" "$repo/scripts/lib/cpu_time.sh" "$dir/scripts/lib/"

# ---- env.sh -----------------------------------------------------------------
cat >"$dir/env.sh" <<'EOF'
# shellcheck shell=bash
# `source env.sh` (bash) sets up this bundle: RS_BUNDLE, PATH, RS_PLUGIN and
# LD_LIBRARY_PATH: the bundle's lib/ (not lib/deps: the programs find those
# through their RUNPATH, and on the library path the bundle's OpenSSL and zlib
# would replace the image's own for Python's ssl and hashlib), then the folders of PyTorch's
# nvidia-* pip wheels found through ${PYTHON:-python3} (CUDA runtime, cuBLAS,
# NCCL, for rs-train --backend gpu), then /usr/local/cuda/lib64. It never
# fails, also under `set -eu`: what it cannot find, it names on stderr.
RS_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export RS_BUNDLE
export RS_PLUGIN="$RS_BUNDLE/lib/libnccl-net-reducer.so"
export PATH="$RS_BUNDLE/bin${PATH:+:$PATH}"
_rs_path="$RS_BUNDLE/lib"
_rs_py=${PYTHON:-python3}
_rs_found=""
if command -v "$_rs_py" >/dev/null 2>&1; then
  # nvidia is a namespace package: each wheel adds a folder to its path.
  _rs_nv=$("$_rs_py" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null || true)
  if [ -n "$_rs_nv" ]; then
    while IFS= read -r _rs_d; do
      [ -n "$_rs_d" ] || continue
      _rs_path="$_rs_path:$_rs_d"
      _rs_found="$_rs_found $_rs_d"
    done < <(printf '%s\n' "$_rs_nv" | while IFS= read -r _rs_p; do
      [ -d "$_rs_p" ] && find "$_rs_p" -maxdepth 4 \( -name 'libcudart.so*' -o -name 'libcublas*.so*' \
        -o -name 'libnccl.so*' \) -printf '%h\n' 2>/dev/null
    done | sort -u)
  fi
  [ -n "$_rs_found" ] || echo "env.sh: $_rs_py has no nvidia-* wheels (CUDA, NCCL): not on LD_LIBRARY_PATH" >&2
else
  echo "env.sh: no $_rs_py (set PYTHON): the nvidia-* wheels' folders are not on LD_LIBRARY_PATH" >&2
fi
[ ! -d /usr/local/cuda/lib64 ] || _rs_path="$_rs_path:/usr/local/cuda/lib64"
export LD_LIBRARY_PATH="$_rs_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "env.sh: RS_BUNDLE=$RS_BUNDLE; CUDA/NCCL wheels:${_rs_found:- none}" >&2
unset _rs_path _rs_py _rs_found _rs_nv _rs_d _rs_p
EOF

# ---- MANIFEST.txt -----------------------------------------------------------
# The highest symbol versions any file binds to: the machine's glibc and
# libstdc++ must have them.
highest() {
  local f
  for f in "$dir"/bin/* "$dir"/lib/*.so "$dir"/lib/deps/*; do readelf -V -W "$f" 2>/dev/null; done |
    grep -oE "Name: $1_[0-9][0-9.]*" | sed 's/^Name: //' | sort -u -V | tail -1
}
glibc=$(highest GLIBC) glibcxx=$(highest GLIBCXX)
plugin_glibc=$(readelf -V -W "$dir/lib/libnccl-net-reducer.so" | grep -oE 'Name: GLIBC_[0-9][0-9.]*' | sed 's/^Name: //' | sort -u -V | tail -1)
rev=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] || rev="$rev with uncommitted changes"
{
  echo "Reduction Server GPU bundle"
  echo "revision:   $rev"
  echo "build:      $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || echo unknown) ($build)"
  echo "made:       $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m)"
  echo "needs:      x86-64 Linux, glibc with $glibc, libstdc++ with $glibcxx, libgcc_s"
  echo "            (the plugin alone: $plugin_glibc); for the GPU: the driver, CUDA 13 and NCCL 2"
  echo "            from PyTorch's nvidia-* wheels or /usr/local/cuda"
  echo "run:        $(basename "$dir")/tests/gpu/run_all.sh"
  echo
  echo "bytes      file"
  (cd "$dir" && find . -type f ! -name MANIFEST.txt -printf '%s %P\n' | sort -k2 | awk '{printf "%-10d %s\n", $1, $2}')
} >"$dir/MANIFEST.txt"
total=$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
files=$(find "$dir" -type f | wc -l)
echo "total:      $total bytes in $files files" >>"$dir/MANIFEST.txt"

mib=$(awk -v b="$total" 'BEGIN {printf "%.1f", b / 1048576}')
if [ "$total" -gt $((limit_mib * 1024 * 1024)) ]; then
  echo "gpu_bundle.sh: $dir is $mib MiB, over the $limit_mib MiB a GPU machine takes; the biggest files:" >&2
  (cd "$dir" && find . -type f -printf '%s %P\n' | sort -rn | head -8 | awk '{printf "  %6.1f MiB  %s\n", $1 / 1048576, $2}') >&2
  exit 1
fi

step "bundle ready in $((SECONDS - started)) s: $dir ($files files, $mib MiB of $limit_mib)"
cat <<EOF
    needs there: glibc with $glibc, libstdc++ with $glibcxx (see MANIFEST.txt)
    carry it to the GPU machine (the device tool: carry ["${dir#"$repo"/}"]), then run there:
      ${dir#"$repo"/}/tests/gpu/run_all.sh
EOF
