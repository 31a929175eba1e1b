#!/usr/bin/env bash
# A real model, unmodified, through the plugin against NCCL's own sockets
# (steps model and fsdp of run_all.sh, also runnable alone): WORLD ranks on
# one GPU (each its own NCCL node through NCCL_HOSTID) take one training
# step of torchvision's ResNet-18 (random weights, nothing downloaded) with
# torch_model.py, three times:
#
#   socket        NCCL's own TCP transport, no plugin (NCCL_NET=Socket, no
#                 LD_PRELOAD): the reference
#   plugin        only LD_PRELOAD=<plugin>, REDUCER_ADDRS and the job token,
#                 as a user would; REDUCERS (WORLD) reducers
#   plugin-again  the same once more
#
#   tests/gpu/run_torch_model.sh ddp|fsdp
#
# ddp: DistributedDataParallel. Its gradient all-reduces go to the reducers
#   (CollNet, the plugin's tuner choosing); every reducer must end a session
#   that carried data in each plugin run.
# fsdp: FullyShardedDataParallel (FSDP1, full sharding). Its reduce-scatters
#   and all-gathers go over the plugin's point-to-point transport (NCCL's
#   rings); only the loss's all-reduce reaches the reducers.
# Passes when, in each run, every rank ends with the same parameters and
# gradients (one hash), the plugin runs used the plugin (NCCL's "Using
# network Reducer", every rank's stderr line "using N reducers") and the
# socket run did not; the plugin run is within model_compare.py's tolerance
# of the socket run (the reducers and NCCL's ring sum in different orders:
# not bit for bit; the bound and why are in model_compare.py); and the two
# plugin runs are bit for bit the same.
# Each run must end within RUN_TIMEOUT (120 s). BATCH (8) and IMAGE (112)
# size the batch. NCCL_DEBUG=INFO (INIT,NET,TUNING) for the evidence of
# which transport and algorithm ran; it changes nothing else. The tensors
# (about 300 MB a run) go to a temp folder removed at exit, never to LOGS.
# Programs: see gpu_env.sh; PYTHON needs torchvision (SKIPPED without it).
# Logs go to LOGS, else OUT, else a temp dir.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

wrap=${1:-}
case $wrap in ddp | fsdp) ;; *) echo "usage: $0 ddp|fsdp" >&2; exit 64 ;; esac
logs=$(rs_logs_dir)
world=${WORLD:-4}
nreducers=${REDUCERS:-$world}
run_timeout=${RUN_TIMEOUT:-120}
rs_need "$RS_REDUCERD" "$RS_PLUGIN"
"$PYTHON" -c 'import torchvision' 2>/dev/null || rs_skip "$PYTHON cannot import torchvision"

tensors=$(mktemp -d "${TMPDIR:-/tmp}/rs-model-XXXXXX")
trap 'rs_cleanup; rm -rf "$tensors"' EXIT
trap 'rs_cleanup; rm -rf "$tensors"; exit 143' TERM
trap 'rs_cleanup; rm -rf "$tensors"; exit 130' INT

rs_start_reducers "$nreducers" "$logs" --io-threads 2 --op-timeout 60s
echo "$nreducers reducers at $RS_ADDRS; $world ranks on one GPU, one NCCL node each; ResNet-18, $wrap, one step;" \
  "runs: socket plugin plugin-again; logs in $logs"

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world NCCL_SOCKET_IFNAME=lo REDUCER_SOCKET_IFNAME=lo
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING
export BATCH=${BATCH:-8} IMAGE=${IMAGE:-112}
using_re="^reduction_server\\[[^]]*:[0-9]+\\]: using $nreducers reducers? \\("

# data_sessions I: sessions of reducer I that carried data.
data_sessions() { grep -cE "session [0-9a-f]+ ended: [1-9][0-9]* operations" "$logs/reducer$1.log" || true; }

port=$((20000 + RANDOM % 20000))
for run in socket plugin plugin-again; do
  port=$((port + 1))
  # Each run's variables on the ranks' command line only.
  cfg=(env -u NCCL_NET -u NCCL_NET_PLUGIN -u NCCL_NET_PLUGIN_REF_COUNT -u NCCL_COLLNET_ENABLE -u NCCL_ALGO
    -u NCCL_PROTO -u NCCL_TUNER_PLUGIN -u LD_PRELOAD -u REDUCER_ADDRS -u REDUCER_JOB_TOKEN -u REDUCER_WIRE_DTYPE
    -u REDUCER_LOG -u REDUCER_REQUIRED "MASTER_PORT=$port" "MODEL_OUT=$tensors/$run")
  case $run in
    socket) cfg+=(NCCL_NET=Socket) ;;
    *) cfg+=("LD_PRELOAD=$RS_PLUGIN" "REDUCER_ADDRS=$RS_ADDRS" "REDUCER_JOB_TOKEN=$RS_TOKEN") ;;
  esac
  mkdir -p "$tensors/$run"
  before=()
  for i in $(seq 0 $((nreducers - 1))); do before+=("$(data_sessions "$i")"); done
  t0=$SECONDS
  for r in $(seq 0 $((world - 1))); do
    rs_launch "$logs/$run-rank$r.log" "${cfg[@]}" "RANK=$r" "NCCL_HOSTID=node$r" CUDA_VISIBLE_DEVICES=0 \
      "$PYTHON" "$rs_gpu_dir/torch_model.py" "$wrap"
  done
  if ! rs_wait_ranks_within "$run_timeout"; then
    ((RS_WAIT_HUNG == 0)) || rs_fail "$run: not done within $run_timeout s: $(rs_rank_failure "$RS_FAILED_LOG")"
    rs_fail "$run: $(rs_rank_failure "$RS_FAILED_LOG")"
  fi
  echo "=== $run: done after $((SECONDS - t0)) s; $(grep -m1 -o "Using network .*" "$logs/$run-rank0.log" || echo "no 'Using network' line")"
  grep -h "^RS_MODEL " "$logs/$run"-rank*.log | sort || true
  echo "all-reduces and reduce-scatters by algorithm, rank 0 (NCCL's TUNING lines):"
  awk '/ NCCL INFO / { for (i = 1; i < NF; i++) if (($i == "AllReduce:" || $i == "ReduceScatter:" || $i == "AllGather:") &&
                                                  $(i + 2) == "Bytes") n[$i " " $(i + 5) "/" $(i + 7)]++ }
       END { for (k in n) printf "  %s x%d\n", k, n[k] }' "$logs/$run-rank0.log" | sort
  # Every rank must end the step with the same parameters and gradients.
  n=$(cat "$logs/$run"-rank*.log | grep -c "^RS_MODEL " || true)
  [ "$n" -eq "$world" ] || rs_fail "$run: $n of $world ranks reported their result (RS_MODEL lines)"
  kinds=$(grep -h "^RS_MODEL " "$logs/$run"-rank*.log | grep -o "params=[0-9a-f]* grads=[0-9a-f]*" | sort -u | wc -l || true)
  [ "$kinds" -eq 1 ] || rs_fail "$run: the ranks ended the step with $kinds different parameter/gradient hashes (DDP and FSDP keep them equal)"
  echo "ranks $run: all $world with the same parameters and gradients after the step"
  if [ "$run" = socket ]; then
    grep -q "Using network Socket" "$logs/$run-rank0.log" || rs_fail "$run: NCCL did not say 'Using network Socket'"
    ! grep -qE "$using_re" "$logs/$run"-rank*.log || rs_fail "$run: the plugin spoke in a run without it"
    continue
  fi
  echo "what the plugin wrote to stderr (distinct lines, [host:pid] as [...], how many ranks):"
  cat "$logs/$run"-rank*.log | grep "^reduction_server\[" | sed -E 's/^reduction_server\[[^]]*\]/reduction_server[...]/' |
    sort | uniq -c | sed 's/^ */  /' | cut -c1-400 || echo "  (none)"
  grep -q "Using network Reducer" "$logs/$run-rank0.log" || rs_fail "$run: NCCL did not use the plugin (no 'Using network Reducer')"
  for r in $(seq 0 $((world - 1))); do
    grep -qE "$using_re" "$logs/$run-rank$r.log" ||
      rs_fail "$run: rank $r did not print 'using $nreducers reducers (...)' on stderr: CollNet not connected? $(grep -m1 "^reduction_server.*WARNING" "$logs/$run-rank$r.log" || true)"
  done
  # The reducers log a session's end once its ranks have gone.
  carried=0
  for _ in $(seq 20); do
    carried=0
    for i in $(seq 0 $((nreducers - 1))); do
      if (($(data_sessions "$i") > before[i])); then carried=$((carried + 1)); fi
    done
    ((carried < nreducers)) || break
    sleep 0.5
  done
  echo "reducers $run: $carried of $nreducers ended a session that carried data"
  if [ "$wrap" = ddp ]; then
    ((carried == nreducers)) || rs_fail "$run: $carried of $nreducers reducers carried data: DDP's gradients did not go through every reducer"
  fi
done

echo "--- socket -> plugin (within tolerance):"
"$PYTHON" "$rs_gpu_dir/model_compare.py" "$tensors/socket" "$tensors/plugin" | tee "$logs/compare-socket-plugin.txt" ||
  rs_fail "the plugin run is not within tolerance of the socket run: $(tail -1 "$logs/compare-socket-plugin.txt")"
echo "--- plugin -> plugin-again (bit for bit):"
"$PYTHON" "$rs_gpu_dir/model_compare.py" --exact "$tensors/plugin" "$tensors/plugin-again" | tee "$logs/compare-plugin-again.txt" ||
  rs_fail "the two plugin runs differ: $(tail -1 "$logs/compare-plugin-again.txt")"
rs_cleanup
echo "compare socket -> plugin: $(tail -1 "$logs/compare-socket-plugin.txt")"
echo "compare plugin -> plugin-again: $(tail -1 "$logs/compare-plugin-again.txt")"
echo "OK: ResNet-18, $wrap, one step: through the plugin within tolerance of NCCL's sockets, and bit for bit the same twice"
