#!/usr/bin/env bash
# Compiles our tuner declarations (nccl_plugin/abi/nccl_tuner_abi.h) against
# NCCL's own ext-tuner/example/nccl/tuner.h at the tag that introduced each
# version, and fails unless every table has NCCL's size, slot offsets and,
# per slot, the same number of parameters with the same sizes:
#   v1 v2.19.3-1, v2 v2.21.5-1, v3 v2.23.4-1, v4 v2.27.7-1.
# NCCL's headers are not in Debian and nothing is downloaded at build time,
# so this is not part of CI: run it by hand with an NCCL git checkout (it
# reads the headers with `git show`, nothing is copied into this tree).
#
#   tests/nccl_plugin/abi/check_tuner_headers.sh /path/to/nccl
#
# Exit: 0 all match, 1 a mismatch (the compiler names it), 77 no checkout.
set -euo pipefail
nccl=${1:-}
if [ -z "$nccl" ] || ! git -C "$nccl" rev-parse --git-dir >/dev/null 2>&1; then
  echo "usage: $0 NCCL_GIT_CHECKOUT (NVIDIA/nccl with its tags); skipping" >&2
  exit 77
fi
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cuda_include=${CUDA_INCLUDE:-/usr/local/cuda/include}  # nccl.h, which v2.19 / v2.21's tuner.h include

check() {
  local tag=$1 version=$2 dir="$work/$1"
  mkdir -p "$dir"
  for f in tuner.h common.h err.h; do
    git -C "$nccl" show "$tag:ext-tuner/example/nccl/$f" >"$dir/$f" 2>/dev/null || rm -f "$dir/$f"
  done
  cat >"$dir/check.cc" <<CC
#include <array>
#include <cstddef>
#include "tuner.h"
#include "nccl_plugin/abi/nccl_tuner_abi.h"

namespace {
template <typename R, typename... A>
constexpr std::array<size_t, sizeof...(A) + 1> Shape(R (*)(A...)) { return {sizeof(R), sizeof(A)...}; }
using Ours = rs::plugin::abi::TunerV$version;
using Theirs = ncclTuner_v${version}_t;
static_assert(sizeof(Ours) == sizeof(Theirs), "table size");
static_assert(offsetof(Ours, init) == offsetof(Theirs, init), "init offset");
static_assert(offsetof(Ours, getCollInfo) == offsetof(Theirs, getCollInfo), "getCollInfo offset");
static_assert(offsetof(Ours, destroy) == offsetof(Theirs, destroy), "destroy offset");
static_assert(Shape(decltype(Ours::init){}) == Shape(decltype(Theirs::init){}), "init parameters");
static_assert(Shape(decltype(Ours::getCollInfo){}) == Shape(decltype(Theirs::getCollInfo){}), "getCollInfo parameters");
static_assert(Shape(decltype(Ours::destroy){}) == Shape(decltype(Theirs::destroy){}), "destroy parameters");
}  // namespace
CC
  if g++ -std=c++20 -fsyntax-only -I "$dir" -I "$cuda_include" -I "$root" "$dir/check.cc"; then
    echo "ncclTunerPlugin_v$version matches ext-tuner/example/nccl/tuner.h at $tag"
  else
    echo "ncclTunerPlugin_v$version DIFFERS from NCCL's at $tag" >&2
    return 1
  fi
}

rc=0
check v2.19.3-1 1 || rc=1
check v2.21.5-1 2 || rc=1
check v2.23.4-1 3 || rc=1
check v2.27.7-1 4 || rc=1
exit $rc
