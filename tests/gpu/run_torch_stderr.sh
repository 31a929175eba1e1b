#!/usr/bin/env bash
# What a user reads on stderr without NCCL_DEBUG (a step of run_all.sh, also
# runnable alone). NCCL prints nothing while NCCL_DEBUG is unset, so the
# plugin writes its own lines, "reduction_server[<host>:<pid>]: ...", and
# this checks them under real NCCL: WORLD ranks on one GPU (each its own
# NCCL node through NCCL_HOSTID, so each is a node head) run a small
# torch_allreduce.py job (broadcast, all_gather, all-reduces of 4 KiB to
# STDERR_MAX_BYTES (1 MiB) in float32 and bfloat16, every element checked,
# then a second process group) with only LD_PRELOAD=<plugin>, REDUCER_ADDRS
# and the job token, as a user would, in each configuration of CONFIGS:
#
#   used         WORLD reducers for WORLD nodes: every rank prints
#                "using WORLD reducers (...), float32 sums sent as float32;
#                communicator ...: ... all-reduce through the reducers at
#                every size" and no WARNING; every reducer ends a session
#                that carried data
#   few          WORLD/2 reducers (2 for 4 nodes): every rank prints
#                "WARNING: communicator ...: ... all-reduce through the
#                reducers below <size>, NCCL's own algorithms otherwise.
#                Fix: N reducers ...", and no "using" line
#   unreachable  REDUCER_ADDRS starts with 127.0.0.1:<a port bound, then
#                closed: nothing listens there>, then WORLD-1 live reducers;
#                REDUCER_CONNECT_TIMEOUT=CONNECT_TIMEOUT (5s): every rank
#                prints "WARNING: CollNet could not connect to the reducers
#                (...)" naming that address, no "using" line, and the job
#                still finishes, every element right (NCCL runs without
#                CollNet)
#   collnet-off  NCCL_COLLNET_ENABLE=0: every rank prints "WARNING:
#                NCCL_COLLNET_ENABLE is '0', not 1: ...", no "using" line
#
# In every configuration the job must finish within RUN_TIMEOUT (90 s) with
# every element right, and NCCL itself must print nothing (else NCCL_DEBUG
# leaked in). Each rank's stderr is kept apart from its stdout:
# CONFIG-rankR.log is stderr, CONFIG-rankR.out stdout. The step prints, per
# configuration, the plugin's lines (distinct, with the number of ranks that
# printed each) and a "config NAME: ok|FAILED: ..." line; every
# configuration runs even when one fails.
#
#   tests/gpu/run_torch_stderr.sh
#
# Programs: see gpu_env.sh. Logs go to LOGS, else OUT, else a temp dir.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

logs=$(rs_logs_dir)
world=${WORLD:-4}
few=$((world / 2))
configs=${CONFIGS:-used few unreachable collnet-off}
run_timeout=${RUN_TIMEOUT:-90}
connect_timeout=${CONNECT_TIMEOUT:-5s}
rs_need "$RS_REDUCERD" "$RS_PLUGIN"
((world >= 3)) || rs_fail "WORLD must be at least 3 (the 'few' configuration needs fewer reducers than nodes, at least 1)"
for c in $configs; do
  case $c in used | few | unreachable | collnet-off) ;; *) rs_fail "unknown configuration '$c' (used, few, unreachable, collnet-off)" ;; esac
done

rs_start_reducers "$world" "$logs" --io-threads 2 --op-timeout 60s
IFS=, read -ra addrs <<<"$RS_ADDRS"
# A port nothing listens on: bound (never listened), then closed.
dead_port=$("$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()') || rs_fail "could not find a free port with $PYTHON"
dead=127.0.0.1:$dead_port
echo "$world reducers at $RS_ADDRS; $world ranks on one GPU, one NCCL node each; LD_PRELOAD only, NCCL_DEBUG unset;" \
  "configurations: $configs; logs in $logs"

export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world MIN_BYTES=4096 MAX_BYTES=${STDERR_MAX_BYTES:-1048576}
export NCCL_SOCKET_IFNAME=lo REDUCER_SOCKET_IFNAME=lo
# Nothing of NCCL's or the plugin's that a user would not set: the plugin,
# preloaded, sets the NCCL variables itself.
unset NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_DEBUG_FILE NCCL_ALGO NCCL_PROTO NCCL_NET NCCL_NET_PLUGIN \
  NCCL_NET_PLUGIN_REF_COUNT NCCL_COLLNET_ENABLE NCCL_TUNER_PLUGIN LD_PRELOAD REDUCER_LOG REDUCER_REQUIRED \
  REDUCER_CONNECT_TIMEOUT REDUCER_WIRE_DTYPE REDUCER_ADDRS REDUCER_JOB_TOKEN

prefix='^reduction_server\[[^]]*:[0-9]+\]: '
using_re="${prefix}using [0-9]+ reducers? \("
warning_re="${prefix}WARNING: "

# ranks_matching CONFIG ERE: how many ranks' stderr has a line matching ERE.
ranks_matching() {
  local r n=0
  for r in $(seq 0 $((world - 1))); do
    if grep -qE -- "$2" "$logs/$1-rank$r.log" 2>/dev/null; then n=$((n + 1)); fi
  done
  echo "$n"
}
# Sessions that carried data, per reducer, space-separated.
sessions_with_data() {
  local i
  for i in $(seq 0 $((world - 1))); do
    printf '%s ' "$(grep -cE "session [0-9a-f]+ ended: [1-9][0-9]* operations" "$logs/reducer$i.log" || true)"
  done
}

port=$((20000 + RANDOM % 20000))
bad=()
for c in $configs; do
  cfg=(env "LD_PRELOAD=$RS_PLUGIN" "REDUCER_JOB_TOKEN=$RS_TOKEN" "MASTER_PORT=$port" "MASTER_PORT2=$((port + 1))")
  case $c in
    used)
      cfg+=("REDUCER_ADDRS=$RS_ADDRS")
      what="$world reducers for $world nodes"
      ;;
    few)
      cfg+=("REDUCER_ADDRS=$(IFS=,; echo "${addrs[*]:0:$few}")")
      what="$few reducers for $world nodes"
      ;;
    unreachable)
      cfg+=("REDUCER_ADDRS=$dead,$(IFS=,; echo "${addrs[*]:0:$((world - 1))}")" "REDUCER_CONNECT_TIMEOUT=$connect_timeout")
      what="$dead (nothing listens there) and $((world - 1)) live reducers, REDUCER_CONNECT_TIMEOUT=$connect_timeout"
      ;;
    collnet-off)
      cfg+=("REDUCER_ADDRS=$RS_ADDRS" NCCL_COLLNET_ENABLE=0)
      what="$world reducers for $world nodes, NCCL_COLLNET_ENABLE=0"
      ;;
  esac
  echo "=== $c: $what"
  before=$(sessions_with_data)
  t0=$SECONDS
  for r in $(seq 0 $((world - 1))); do
    rs_launch_apart "$logs/$c-rank$r.out" "$logs/$c-rank$r.log" "${cfg[@]}" "RANK=$r" "NCCL_HOSTID=node$r" \
      CUDA_VISIBLE_DEVICES=0 "$PYTHON" "$rs_gpu_dir/torch_allreduce.py"
  done
  finished=1
  rs_wait_ranks_within "$run_timeout" || finished=0
  echo "ranks done after $((SECONDS - t0)) s; what they wrote to stderr from the plugin (distinct lines, [host:pid] as [...]," \
    "how many ranks):"
  cat "$logs/$c"-rank*.log | grep -E "$prefix" | sed -E 's/^reduction_server\[[^]]*\]/reduction_server[...]/' |
    sort | uniq -c | sed 's/^ */  /' | cut -c1-600 || echo "  (none)"
  others=$(cat "$logs/$c"-rank*.log | grep -cvE "$prefix" || true)
  echo "other stderr lines, all ranks: $others (in $c-rank*.log)"

  why=()
  if ((!finished)); then
    if ((RS_WAIT_HUNG)); then
      why+=("the job did not finish within $run_timeout s: $(rs_rank_failure "$RS_FAILED_LOG")")
    else
      why+=("$(rs_rank_failure "$RS_FAILED_LOG")")
    fi
  else
    # torch_allreduce.py exits 1 on a wrong element; its RS_CHECK lines say how many.
    wrong=$(cat "$logs/$c"-rank*.out | awk '
      /^RS_CHECK / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "wrong") s += kv[2] } n++ }
      END { print (n == 0 ? "no results" : s) }')
    [ "$wrong" = 0 ] || why+=("wrong elements: $wrong")
  fi
  n=$(cat "$logs/$c"-rank*.log "$logs/$c"-rank*.out | grep -c "NCCL INFO\|NCCL WARN" || true)
  [ "$n" = 0 ] || why+=("NCCL printed $n lines although NCCL_DEBUG is unset")
  using=$(ranks_matching "$c" "$using_re")
  warned=$(ranks_matching "$c" "$warning_re")
  # want: the line every rank must print (ERE after the prefix); said: the same for a person.
  shape="$world node\\(s\\), $world rank\\(s\\)"
  case $c in
    used)
      want="using $world reducers \\(127\\.0\\.0\\.1:[0-9]+.*\\), float32 sums sent as float32; communicator [0-9a-f]+: $shape,"
      want+=" $world reducer\\(s\\), .*: all-reduce through the reducers at every size"
      said="using $world reducers (...), float32 sums sent as float32; ... all-reduce through the reducers at every size"
      ;;
    few)
      want="WARNING: communicator [0-9a-f]+: $shape, $few reducer\\(s\\), .*: all-reduce through the reducers below .*,"
      want+=" NCCL's own algorithms otherwise\\. Fix: [0-9]+ reducers"
      said="WARNING: communicator ...: ..., $few reducer(s), ...: ... below <size>, NCCL's own algorithms otherwise. Fix: N reducers"
      ;;
    unreachable)
      want="WARNING: CollNet could not connect to the reducers \\(.*127\\.0\\.0\\.1:${dead_port}[^0-9]"
      said="WARNING: CollNet could not connect to the reducers (...$dead...)"
      ;;
    collnet-off)
      want="WARNING: NCCL_COLLNET_ENABLE is '0', not 1: NCCL leaves CollNet off"
      said="$want ..."
      ;;
  esac
  n=$(ranks_matching "$c" "$prefix$want")
  [ "$n" = "$world" ] || why+=("$n of $world ranks printed '$said'")
  if [ "$c" != used ]; then
    [ "$using" = 0 ] || why+=("$using rank(s) printed the 'using' line")
  else
    [ "$warned" = 0 ] || why+=("$warned rank(s) printed a WARNING")
    if ((finished)); then
      # The reducers log a session's end once its ranks have gone.
      for _ in $(seq 20); do
        after=$(sessions_with_data)
        more=0
        read -ra b <<<"$before"
        read -ra a <<<"$after"
        for i in "${!a[@]}"; do if ((a[i] > b[i])); then more=$((more + 1)); fi; done
        ((more < world)) || break
        sleep 0.5
      done
      ((more == world)) ||
        why+=("$more of $world reducers ended a session that carried data (per reducer, before: $before, after: $after)")
    fi
  fi
  first=$(grep -m1 -E "$prefix" "$logs/$c-rank0.log" | sed -E 's/^reduction_server\[[^]]*\]/reduction_server[...]/' || true)
  if ((${#why[@]})); then
    msg=$(printf '%s; ' "${why[@]}")
    echo "config $c: FAILED: ${msg%; }"
    bad+=("$c")
  else
    echo "config $c: ok: $what: the job finished, every element right; $using rank(s) printed 'using', $warned a WARNING"
  fi
  echo "  rank 0 said: ${first:-nothing}"
  port=$((port + 2))
done

rs_cleanup
((${#bad[@]} == 0)) || rs_fail "stderr not as expected in: ${bad[*]} (see each 'config' line)"
echo "OK: $configs: each configuration's lines on every rank's stderr, NCCL_DEBUG unset"
