#!/usr/bin/env bash
# The PyTorch DDP recipe (trainer/torch_ddp.py) on CPU with gloo: 2 ranks
# launched the way torchrun would (RANK, WORLD_SIZE, MASTER_ADDR,
# MASTER_PORT), 40 steps of a small model. The script itself exits non-zero
# unless the loss fell and every rank ended with the same parameters.
# Exits 77 (skipped) where PyTorch is not installed (Debian: python3-torch).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=$here/../../trainer/torch_ddp.py
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import torch.distributed' 2>/dev/null; then
  echo "SKIPPED: $python has no PyTorch (apt-get install python3-torch)"
  exit 77
fi
out=$(mktemp -d /tmp/rs-torch-ddp.XXXXXX)
trap 'rm -rf "$out"' EXIT
# A free port: bind port 0, read it back.
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
for rank in 0 1; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$rank OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo \
    timeout 120 "$python" "$script" --backend gloo --steps 40 --width 128 --input-dim 32 --output-dim 8 \
    >"$out/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$out/rank0.log"
if [ $status -ne 0 ]; then
  echo "FAILED; rank 1's output:" >&2
  cat "$out/rank1.log" >&2
  exit 1
fi
grep -q "parameters identical on every rank" "$out/rank0.log"
