#!/usr/bin/env bash
# rs-train's GPU backend through the whole path on one GPU (a step of
# run_all.sh, also runnable alone): 2 reducers and WORLD rs-train ranks on
# the same GPU, each with its own NCCL_HOSTID so that NCCL treats them as
# WORLD nodes and sends all inter-node traffic through the plugin, CollNet
# Chain forced. Trains in float32, then with bfloat16 gradients; rs-train
# itself checks that the parameters stay identical on every rank. Then shows
# from NCCL's log that CollNet was used, and from the reducers' logs how much
# went through them.
#
#   tests/gpu/run_rs_train.sh
#
# Programs: see gpu_env.sh; rs-train's GPU module (librs-train-gpu.so) must
# sit beside rs-train or in ../lib (exit 77, skipped, when rs-train was built
# without CUDA). STEPS (20), WIDTH (4096), BUCKET_MB (25) and WORLD (4) set
# the run's size. Logs go to LOGS, else OUT, else a temp dir.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

logs=$(rs_logs_dir)
world=${WORLD:-4}
steps=${STEPS:-20}
width=${WIDTH:-4096}
bucket_mb=${BUCKET_MB:-25}
rs_need "$RS_REDUCERD" "$RS_TRAIN" "$RS_PLUGIN"
bin=$(dirname "$RS_TRAIN")
[ -e "$bin/librs-train-gpu.so" ] || [ -e "$bin/../lib/librs-train-gpu.so" ] ||
  rs_skip "rs-train has no GPU module (librs-train-gpu.so beside it or in ../lib): CMake found no CUDA where it was built"

rs_start_reducers 2 "$logs" --threads 4 --op-timeout 60s
echo "reducers at $RS_ADDRS; $world rs-train ranks on one GPU, one NCCL node each; logs in $logs"

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=0
export NCCL_NET_PLUGIN=$RS_PLUGIN NCCL_COLLNET_ENABLE=1 NCCL_ALGO=allreduce:collnetchain
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV NCCL_SOCKET_IFNAME=lo
export REDUCER_ADDRS=$RS_ADDRS REDUCER_JOB_TOKEN=$RS_TOKEN REDUCER_SOCKET_IFNAME=lo
unset LD_PRELOAD

status=0 failed=
for dtype in float32 bfloat16; do
  export MASTER_PORT=$((20000 + RANDOM % 20000))
  echo "--- --grad-dtype $dtype: $steps steps, width $width, buckets of $bucket_mb MiB"
  for r in $(seq 0 $((world - 1))); do
    RANK=$r NCCL_HOSTID=node$r rs_launch "$logs/$dtype-rank$r.log" "$RS_TRAIN" --backend gpu --steps "$steps" \
      --width "$width" --bucket-mb "$bucket_mb" --grad-dtype "$dtype" --log-every 10 --op-timeout 60s \
      --rendezvous-timeout 60s
  done
  rs_wait_ranks || { status=1; failed=$RS_FAILED_LOG; }
  grep -v -E "NCCL (INFO|WARN)" "$logs/$dtype-rank0.log" || true
  [ $status -eq 0 ] || break
done

echo "--- what NCCL says (rank 0, float32):"
grep "Using network\|NET/Reducer :\|Connected CollNet\|Connected Collnet" "$logs/float32-rank0.log" |
  sed 's/^.*NCCL \(INFO\|WARN\) //' || true
grep -h "NCCL WARN" "$logs"/*-rank*.log | sed 's/^.*NCCL WARN //' | sort | uniq -c | head -20 || true

rs_cleanup  # the reducers log each session's end once its ranks have gone
echo "--- what the reducers say:"
grep -h "session .* ended\|session .* failed" "$logs"/reducer*.log || echo "(no session ended: CollNet was not used)"

[ $status -eq 0 ] || rs_fail "$(rs_rank_failure "$failed")"
grep -q "Using network Reducer" "$logs/float32-rank0.log" || rs_fail "NCCL did not use the plugin (no 'Using network Reducer')"
grep -qE "ended: [1-9][0-9]* operations, [1-9][0-9]* pieces" "$logs"/reducer*.log ||
  rs_fail "no all-reduce went through the reducers"
echo "OK: trained in float32 and bfloat16 through the reducers; parameters identical on every rank"
