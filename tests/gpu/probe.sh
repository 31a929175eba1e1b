#!/usr/bin/env bash
# run_all.sh's first step: what this machine has (GPU, driver, Python,
# PyTorch, CUDA, NCCL), whether our programs find their libraries, and
# whether PyTorch sees a GPU. Exits 2 when it does not: nothing else can run.
# Prints key=value lines for the summary.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

echo "where=$RS_WHERE"
echo "cpus=$(nproc)"
if command -v nvidia-smi >/dev/null; then
  echo "gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
else
  echo "gpu=no nvidia-smi on PATH"
fi

# A library the loader cannot find shows here by name, before any step
# fails on it. librs-train-gpu.so needs CUDA's and NCCL's libraries, which
# env.sh finds in PyTorch's wheels.
gpu_module=$(dirname "$RS_TRAIN")/librs-train-gpu.so
[ -e "$gpu_module" ] || gpu_module=$(dirname "$RS_TRAIN")/../lib/librs-train-gpu.so
for f in "$RS_REDUCERD" "$RS_TRAIN" "$RS_PLUGIN" "$gpu_module"; do
  if [ ! -e "$f" ]; then
    echo "missing=$f"
  elif command -v ldd >/dev/null; then
    libs=$(ldd "$f" 2>&1 | awk '/not found/ {print $1}' | tr '\n' ' ')
    [ -z "$libs" ] || echo "unresolved=$(basename "$f"): $libs"
  fi
done

command -v "$PYTHON" >/dev/null || rs_fail "no Python at '$PYTHON' (set PYTHON=...)"
"$PYTHON" "$rs_gpu_dir/probe.py" || exit 2
