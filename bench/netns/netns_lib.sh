# shellcheck shell=bash
# Network-namespace cluster on one Linux machine (root). Sourced by run.sh.
#
# Topology: a switch namespace holding a bridge, and one namespace per host.
# Each host gets a link: eth0 inside the host, port p$i on the bridge. Every
# link is shaped in both directions to the rate with tbf (the host's egress on
# eth0, its ingress on the bridge port's egress). With a delay, each direction
# of each link is delayed by it (host to host one way: 2 x DELAY, a round trip
# 4 x DELAY), in one of two ways (NS_DELAY_IMPL):
#   netem      the link is a veth pair, netem below tbf on both ends;
#   userspace  for kernels without netem: the link is two tap devices joined by
#              rs-delay-line (bench/netns/delay_line.cc), one process for every
#              link, started by ns_setup and stopped by ns_teardown; tbf on
#              the taps as on the veth ends. NS_DELAY_LINE names its binary.
#   auto       (the default) netem where tc has it, else userspace.
# Without a delay the links are veth pairs. All addresses live only inside the
# namespaces created here (10.77.0.0/24 by default), so the machine's own
# network is never touched. ns_teardown removes everything; run.sh calls it
# from a trap.

NS_PREFIX=${NS_PREFIX:-rsb$$}
NS_SUBNET=${NS_SUBNET:-10.77.0}
NS_DELAY_IMPL=${NS_DELAY_IMPL:-auto}
NS_DELAY_LINE=${NS_DELAY_LINE:-}      # the rs-delay-line binary (userspace delays)
NS_DELAY_LOG=${NS_DELAY_LOG:-}        # its output; a temporary file when empty
NS_DELAY_LINE_ARGS=${NS_DELAY_LINE_ARGS:-}  # more rs-delay-line flags, e.g. --threads 1 --rt-priority 0
NS_DELAY_USED=""                      # how ns_setup delays links: "", netem or userspace
NS_DELAY_LINE_PID=""
# TCP congestion control in every host: Debian's default, whatever this
# machine's is (a namespace inherits the machine's; with bbr, 64 - 256 KiB
# operations through tbf took 4 - 10 ms against 1.7 - 3.2 ms with cubic;
# docs/performance.md). Empty: the machine's default.
NS_TCP_CC=${NS_TCP_CC-cubic}
# net.ipv4.tcp_slow_start_after_idle in every host: 1 (Linux's default) lets
# a connection idle for longer than its retransmission timeout start again
# from a smaller window; 0 keeps the window it had. Empty: a new namespace's
# own 1, whatever the machine's (it is not inherited).
NS_SLOW_START_AFTER_IDLE=${NS_SLOW_START_AFTER_IDLE-}
# Random loss: every host drops this share of the packets it receives on
# eth0, in percent (e.g. 1 or 0.1), with iptables' statistic match. Empty or
# 0: none. Both directions of every flow lose packets; the switch drops none.
NS_LOSS=${NS_LOSS-}
# The tbf queues, as the time their limit holds at the rate: NS_TBF_LATENCY
# on the switch's ports (the egress towards each host, where many senders
# meet: a switch's shallow buffer), NS_HOST_TBF_LATENCY on each host's own
# eth0 (its NIC). A real host's NIC hardly drops its own TCP's packets: TCP
# Small Queues hold each socket back, and the NIC's queue is thousands of
# packets deep. Here a host's 8 streams at 250 Mbit/s, given a 100 ms queue,
# queued up to 965 KB at its eth0, more than 25 ms hold (781 KB); with 25 ms
# the hosts' own egress lost 865 - 1121 packets per phase and the switch's
# ports none; with 100 ms, 0 - 1 in all (docs/performance.md, "Eight
# workers and eight reducers").
# Until 2026-11-29 both were 25 ms.
NS_TBF_LATENCY=${NS_TBF_LATENCY:-25ms}
NS_HOST_TBF_LATENCY=${NS_HOST_TBF_LATENCY:-100ms}
# The largest GSO packet of every veth end (gso_max_size), in bytes. Empty:
# the kernel's 64 KiB. The bridge and tbf forward a GSO packet whole, so a
# receiver gets each sender's 64 KiB at once where a real switch interleaves
# the senders' MTU-sized packets; smaller GSO packets come nearer that, at
# the cost of more packets (CPU). Tried on veths only, not with userspace
# delays (taps).
NS_GSO_BYTES=${NS_GSO_BYTES-}
# net.ipv4.tcp_rmem and tcp_wmem in every host (min, default, max): room for
# autotuning on long paths by default. Debian's own ("4096 131072 6291456",
# "4096 16384 4194304") or smaller ceilings show what a short buffer costs.
NS_TCP_RMEM_DEFAULT="4096 131072 16777216"
NS_TCP_WMEM_DEFAULT="4096 65536 16777216"
NS_TCP_RMEM=${NS_TCP_RMEM:-$NS_TCP_RMEM_DEFAULT}
NS_TCP_WMEM=${NS_TCP_WMEM:-$NS_TCP_WMEM_DEFAULT}
NS_NETEM=""                           # yes / no once probed
NS_TCP_CC_ADDED=""                    # what ns_allow_tcp_cc added to the machine's allowed list
NS_TCP_CC_NOTED=""                    # said so once (tests/fault/run.sh sets up every trial)
NS_HOSTS=()

ns_name() { echo "${NS_PREFIX}-h$1"; }
ns_switch() { echo "${NS_PREFIX}-sw"; }
ns_addr() { echo "${NS_SUBNET}.$(($1 + 1))"; }

# tbf needs a bucket of at least one packet plus what arrives in a timer tick:
# 1 ms of traffic, and never less than two of the largest GSO packets the
# device hands it (GSO_BYTES, default 64 KiB; the packet's length as tbf
# counts it adds every segment's headers, so one GSO size is not enough). A
# GSO packet larger than the bucket is cut into MTU-sized packets in software
# by tbf itself: below about 520 Mbit/s a bucket of 64 KiB did that to every
# full-sized packet, and that segmentation, not the all-reduce, filled the
# machine's 2 cores (irq + softirq 136 % at 500 Mbit/s, 4 + 4 hosts).
# Usage: ns_burst_bytes BITS_PER_SECOND [GSO_BYTES]
ns_burst_bytes() {
  local bits=$1 gso=${2:-65536} burst
  burst=$((bits / 8 / 1000))
  ((burst < 2 * gso)) && burst=$((2 * gso))
  echo "$burst"
}

# The largest GSO packet a device in a namespace may carry (gso_max_size),
# 65536 where ip cannot tell.
ns_gso_bytes() {
  local ns=$1 dev=$2 size
  size=$(ip netns exec "$ns" ip -j -d link show dev "$dev" 2>/dev/null | grep -o '"gso_max_size":[0-9]*' | cut -d: -f2)
  echo "${size:-65536}"
}

# Turns "1gbit", "500mbit", "100kbit" into bits per second (0 for unshaped).
ns_rate_bits() {
  local rate=${1,,}
  case "$rate" in
    0 | none | "") echo 0 ;;
    *gbit) echo $((${rate%gbit} * 1000000000)) ;;
    *mbit) echo $((${rate%mbit} * 1000000)) ;;
    *kbit) echo $((${rate%kbit} * 1000)) ;;
    *) echo "unknown rate '$1'; use e.g. 1gbit, 500mbit or 0" >&2; return 1 ;;
  esac
}

# Shapes one device's egress: tbf at the rate with a queue of LATENCY, netem
# below it for a delay (DELAY empty when rs-delay-line delays the link).
ns_shape_dev() {
  local ns=$1 dev=$2 bits=$3 delay=$4 latency=$5
  if ((bits > 0)); then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "${bits}bit" \
      burst "$(ns_burst_bytes "$bits" "$(ns_gso_bytes "$ns" "$dev")")" latency "$latency"
    if [[ -n $delay && $delay != 0 ]]; then
      ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: netem delay "$delay" limit 100000
    fi
  elif [[ -n $delay && $delay != 0 ]]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 10: netem delay "$delay" limit 100000
  fi
}

# The socket buffers' ceilings inside a host namespace (NS_TCP_RMEM and
# NS_TCP_WMEM; per namespace, unlike net.core.*mem_max, which autotuning
# does not need),
# and NS_TCP_CC, which must take: a run must not measure another algorithm
# than it reports.
ns_tune() {
  local ns=$1
  ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_rmem="$NS_TCP_RMEM" net.ipv4.tcp_wmem="$NS_TCP_WMEM" >/dev/null || {
    echo "cannot set net.ipv4.tcp_rmem='$NS_TCP_RMEM' tcp_wmem='$NS_TCP_WMEM' (three sizes in bytes: min default max)" >&2
    return 1
  }
  if [[ -n $NS_SLOW_START_AFTER_IDLE ]]; then
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$NS_SLOW_START_AFTER_IDLE" >/dev/null || {
      echo "cannot set net.ipv4.tcp_slow_start_after_idle to '$NS_SLOW_START_AFTER_IDLE' (use 0 or 1)" >&2
      return 1
    }
  fi
  ns_add_loss "$ns" || return 1
  [[ -z $NS_TCP_CC ]] && return 0
  ns_allow_tcp_cc "$NS_TCP_CC"
  ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control="$NS_TCP_CC" >/dev/null 2>&1 || {
    echo "cannot set TCP congestion control '$NS_TCP_CC' (available: $(sysctl -n net.ipv4.tcp_available_congestion_control 2>/dev/null); allowed in namespaces: $(sysctl -n net.ipv4.tcp_allowed_congestion_control 2>/dev/null)); set NS_TCP_CC" >&2
    return 1
  }
}

# ns_add_loss NS: NS_LOSS percent of what NS receives on eth0 dropped at
# random (iptables INPUT, statistic match), before TCP sees it.
ns_add_loss() {
  local ns=$1 p
  [[ -z $NS_LOSS || $NS_LOSS == 0 ]] && return 0
  p=$(awk -v l="$NS_LOSS" 'BEGIN { if (l !~ /^[0-9.]+%?$/ || l + 0 >= 100) exit 1; printf "%.6f", (l + 0) / 100 }') || {
    echo "NS_LOSS='$NS_LOSS': give a percentage below 100, e.g. 1 or 0.1" >&2
    return 1
  }
  ip netns exec "$ns" iptables -A INPUT -i eth0 -m statistic --mode random --probability "$p" -j DROP || {
    echo "cannot add random loss with iptables in $ns (needs iptables with the statistic match)" >&2
    return 1
  }
}

# A namespace other than the machine's own may only make an algorithm its
# default when the machine allows it (net.ipv4.tcp_allowed_congestion_control;
# the kernel refuses with EPERM otherwise). The machine's boot default is
# always allowed, others only when listed: on a machine that boots with bbr,
# cubic is not. Adds an available algorithm to the list and says so (once);
# ns_teardown takes it back (ns_disallow_tcp_cc). NS_TCP_CC_MARKER records
# that a run of ours added it, so that runs at the same time share the loan:
# one that finds it allowed and marked takes it back too, and the last to end
# does (an algorithm allowed without the mark was allowed by someone else and
# stays).
NS_TCP_CC_MARKER=${NS_TCP_CC_MARKER:-/run/rs-netns-tcp-cc}
ns_allow_tcp_cc() {
  local cc=$1 allowed available
  allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control 2>/dev/null) || return 0
  available=$(sysctl -n net.ipv4.tcp_available_congestion_control 2>/dev/null) || return 0
  if [[ " $allowed " == *" $cc "* ]]; then
    [[ $(cat "$NS_TCP_CC_MARKER" 2>/dev/null) == "$cc" ]] && NS_TCP_CC_ADDED=$cc
    return 0
  fi
  [[ " $available " == *" $cc "* ]] || return 0
  if sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed $cc" >/dev/null 2>&1; then
    echo "$cc" >"$NS_TCP_CC_MARKER" 2>/dev/null && NS_TCP_CC_ADDED=$cc
    if [[ -z $NS_TCP_CC_NOTED ]]; then
      NS_TCP_CC_NOTED=yes
      echo "note: added $cc to net.ipv4.tcp_allowed_congestion_control (was: $allowed), so that the hosts'" \
        "namespaces may use it, until they are removed" >&2
    fi
  fi
}

# Takes back what ns_allow_tcp_cc added, once this run's namespaces are gone,
# unless a namespace left on the machine (another run's host) still uses it.
ns_disallow_tcp_cc() {
  local cc=$NS_TCP_CC_ADDED allowed kept=() a ns
  [[ -n $cc ]] || return 0
  NS_TCP_CC_ADDED=""
  [[ $(cat "$NS_TCP_CC_MARKER" 2>/dev/null) == "$cc" ]] || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    [[ $(ip netns exec "$ns" sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null) == "$cc" ]] && return 0
  done
  allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control 2>/dev/null) || return 0
  for a in $allowed; do [[ $a == "$cc" ]] || kept+=("$a"); done
  if sysctl -q -w net.ipv4.tcp_allowed_congestion_control="${kept[*]}" >/dev/null 2>&1; then
    rm -f "$NS_TCP_CC_MARKER"
  else
    echo "warning: could not take $cc back out of net.ipv4.tcp_allowed_congestion_control ($allowed)" >&2
  fi
}

# The congestion control the hosts run: NS_TCP_CC, or the machine's default.
ns_tcp_cc() { echo "${NS_TCP_CC:-$(sysctl -n net.ipv4.tcp_congestion_control 2>/dev/null)}"; }

# The hosts' net.ipv4.tcp_slow_start_after_idle, as host 0 has it after
# ns_setup (NS_SLOW_START_AFTER_IDLE, or a new namespace's 1); empty when it
# cannot be read.
ns_slow_start_after_idle() {
  ip netns exec "$(ns_name 0)" sysctl -n net.ipv4.tcp_slow_start_after_idle 2>/dev/null || true
}

# 0 for no delay: empty, 0, 0ms, 0.0us...
ns_delay_is_zero() { [[ -z $1 || $1 =~ ^0+(\.0*)?(us|ms|s)?$ ]]; }

# 0 when tc's netem qdisc works here; probed once, in a scratch namespace
# (named like ours, so that ns_reap_stale removes it if this run is killed).
ns_netem_works() {
  if [[ -z $NS_NETEM ]]; then
    local probe="${NS_PREFIX}-netem"
    NS_NETEM=no
    if ip netns add "$probe" 2>/dev/null; then
      ip netns exec "$probe" tc qdisc add dev lo root netem delay 1ms 2>/dev/null && NS_NETEM=yes
      ip netns del "$probe" 2>/dev/null || true
    fi
  fi
  [[ $NS_NETEM == yes ]]
}

# ns_choose_delay DELAY: sets NS_DELAY_USED to how links get DELAY ("" for
# none, netem or userspace) from NS_DELAY_IMPL; fails, saying why, when that
# cannot be had.
ns_choose_delay() {
  NS_DELAY_USED=""
  ns_delay_is_zero "$1" && return 0
  case "$NS_DELAY_IMPL" in
    auto) if ns_netem_works; then NS_DELAY_USED=netem; else NS_DELAY_USED=userspace; fi ;;
    netem)
      ns_netem_works || {
        echo "NS_DELAY_IMPL=netem, but this kernel has no netem qdisc (tc qdisc add ... netem failed);" \
          "NS_DELAY_IMPL=auto or userspace delays links with rs-delay-line instead" >&2
        return 1
      }
      NS_DELAY_USED=netem
      ;;
    userspace) NS_DELAY_USED=userspace ;;
    *) echo "unknown NS_DELAY_IMPL '$NS_DELAY_IMPL'; use auto, netem or userspace" >&2; return 1 ;;
  esac
}

# ns_start_delay_line HOSTS DELAY: rs-delay-line creating eth0 in every host
# and p$i in the switch; returns once every tap exists (10 s at most).
ns_start_delay_line() {
  local hosts=$1 delay=$2 sw i args=() dir log tries
  if [[ -z $NS_DELAY_LINE || ! -x $NS_DELAY_LINE ]]; then
    echo "a delay of $delay on a kernel without netem needs rs-delay-line, and NS_DELAY_LINE='$NS_DELAY_LINE'" \
      "is not an executable (build it: ninja -C BUILD_DIR rs-delay-line)" >&2
    return 1
  fi
  sw=$(ns_switch)
  for ((i = 0; i < hosts; i++)); do args+=(--pair "$(ns_name "$i"):eth0=$sw:p$i"); done
  dir=$(mktemp -d /tmp/rs-delay-line.XXXXXX)
  log=${NS_DELAY_LOG:-$dir/delay-line.log}
  NS_DELAY_LOG=$log
  # shellcheck disable=SC2086  # NS_DELAY_LINE_ARGS is a list of flags
  "$NS_DELAY_LINE" --delay "$delay" --ready-file "$dir/ready" $NS_DELAY_LINE_ARGS "${args[@]}" >"$log" 2>&1 &
  NS_DELAY_LINE_PID=$!
  for ((tries = 0; tries < 100; tries++)); do
    [[ -e $dir/ready ]] && break
    kill -0 "$NS_DELAY_LINE_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -e $dir/ready ]]; then
    if kill -0 "$NS_DELAY_LINE_PID" 2>/dev/null; then
      echo "rs-delay-line did not create its taps within 10 s; its output:" >&2
    else
      echo "rs-delay-line failed; its output:" >&2
    fi
    cat "$log" >&2
    ns_stop_delay_line >/dev/null 2>&1
    rm -rf "$dir"
    return 1
  fi
  rm -rf "$dir"
}

# Stops rs-delay-line (SIGTERM, 5 s, then SIGKILL); its summary line goes to stderr.
ns_stop_delay_line() {
  local pid=$NS_DELAY_LINE_PID tries
  [[ -n $pid ]] || return 0
  NS_DELAY_LINE_PID=""
  kill -TERM "$pid" 2>/dev/null || true
  for ((tries = 0; tries < 50; tries++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -h '^rs-delay-line: stopped' "$NS_DELAY_LOG" >&2 2>/dev/null || true
}

# ns_setup HOSTS RATE DELAY: builds the switch and HOSTS hosts, 0..HOSTS-1.
ns_setup() {
  local hosts=$1 rate=$2 delay=$3 bits i ns sw netem_delay=""
  bits=$(ns_rate_bits "$rate") || return 1
  ns_choose_delay "$delay" || return 1
  [[ $NS_DELAY_USED != netem ]] || netem_delay=$delay
  sw=$(ns_switch)
  ip netns add "$sw"
  NS_HOSTS+=("$sw")
  ip netns exec "$sw" ip link add br0 type bridge
  ip netns exec "$sw" ip link set br0 up
  ip netns exec "$sw" ip link set lo up
  for ((i = 0; i < hosts; i++)); do
    ns=$(ns_name "$i")
    ip netns add "$ns"
    NS_HOSTS+=("$ns")
    [[ $NS_DELAY_USED == userspace ]] && continue
    ip link add "${NS_PREFIX}e$i" type veth peer name "${NS_PREFIX}p$i"
    ip link set "${NS_PREFIX}e$i" netns "$ns" name eth0
    ip link set "${NS_PREFIX}p$i" netns "$sw" name "p$i"
  done
  if [[ $NS_DELAY_USED == userspace ]]; then
    ns_start_delay_line "$hosts" "$delay" || return 1
  fi
  for ((i = 0; i < hosts; i++)); do
    ns=$(ns_name "$i")
    ip netns exec "$sw" ip link set "p$i" master br0 up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$(ns_addr "$i")/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ns_tune "$ns" || return 1
    if [[ -n $NS_GSO_BYTES ]]; then
      if ! ip netns exec "$ns" ip link set eth0 gso_max_size "$NS_GSO_BYTES" ||
        ! ip netns exec "$sw" ip link set "p$i" gso_max_size "$NS_GSO_BYTES"; then
        echo "NS_GSO_BYTES=$NS_GSO_BYTES: ip could not set gso_max_size on host $i's link" >&2
        return 1
      fi
    fi
    ns_shape_dev "$ns" eth0 "$bits" "$netem_delay" "$NS_HOST_TBF_LATENCY"
    ns_shape_dev "$sw" "p$i" "$bits" "$netem_delay" "$NS_TBF_LATENCY"
  done
}

# Deleting a namespace deletes its veth ends (and so their peers) and qdiscs;
# the taps go with rs-delay-line, which holds the namespaces until it exits.
# Then the machine's allowed congestion controls are as they were.
ns_teardown() {
  local ns
  ns_stop_delay_line
  for ns in "${NS_HOSTS[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  NS_HOSTS=()
  ns_disallow_tcp_cc
}

# Removes the namespaces of earlier runs that were killed before they could
# clean up (SIGKILL, a test timeout): names rsbPID-* whose PID is gone. A live
# run's namespaces are left alone.
ns_reap_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    [[ $ns =~ ^rsb([0-9]+)- ]] || continue
    pid=${BASH_REMATCH[1]}
    kill -0 "$pid" 2>/dev/null && continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null && echo "removed namespace $ns, left by an earlier run (pid $pid) that was killed" >&2
  done
  return 0
}

# ns_exec HOST CMD...: runs CMD inside host HOST's namespace.
ns_exec() {
  local host=$1
  shift
  ip netns exec "$(ns_name "$host")" "$@"
}

# ns_can_create: 0 when this process may create namespaces and veth pairs.
ns_can_create() {
  local probe="rsprobe$$"
  ((EUID == 0)) || { echo "not root"; return 1; }
  command -v ip >/dev/null || { echo "iproute2 (ip) is not installed"; return 1; }
  command -v tc >/dev/null || { echo "tc (iproute2) is not installed"; return 1; }
  ip netns add "$probe" 2>/dev/null || { echo "cannot create network namespaces here (ip netns add failed)"; return 1; }
  if ! ip link add "${probe}a" type veth peer name "${probe}b" 2>/dev/null; then
    ip netns del "$probe"
    echo "cannot create veth pairs here"
    return 1
  fi
  ip link del "${probe}a" 2>/dev/null || true
  # Running inside a namespace needs a mount namespace of its own, which
  # fails where / is not a mount point (a chroot, say).
  local exec_error
  if ! exec_error=$(ip netns exec "$probe" true 2>&1); then
    ip netns del "$probe"
    echo "cannot run commands inside a network namespace here (ip netns exec: ${exec_error})"
    return 1
  fi
  ip netns del "$probe"
  return 0
}
