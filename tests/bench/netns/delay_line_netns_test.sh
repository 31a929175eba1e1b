#!/usr/bin/env bash
# The harness's userspace link delay (rs-delay-line through netns_lib.sh,
# NS_DELAY_IMPL=userspace): 2 hosts, links 200 Mbit/s + 5 ms each direction.
# Checks what a harness user relies on: the links are the delay line's taps,
# a round trip between hosts takes 4 x DELAY (not less, not much more), TCP
# moves data and stays within the shaped rate, the delay line reports its
# frames without drops when stopped, leaves nothing behind, and names the
# cause of a bad start. Exit 0 on success, 1 on a failure, 77 (skipped, with
# the reason) where namespaces or tap devices cannot be created.
# Usage: delay_line_netns_test.sh PATH/TO/rs-delay-line
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
NS_DELAY_LINE=${1:?usage: $0 PATH/TO/rs-delay-line}
NS_DELAY_IMPL=userspace
# shellcheck source=bench/netns/netns_lib.sh
source "$ROOT/bench/netns/netns_lib.sh"

DELAY_MS=5
RATE_MBIT=200
# Above 4 x DELAY: serialisation of a ping at 200 Mbit/s is microseconds, the
# rest is wake-ups of the delay line on a busy machine.
RTT_SLACK_MS=15
WORK=$(mktemp -d /tmp/rs-delay-line-test.XXXXXX)
NS_DELAY_LOG=$WORK/delay-line.log

fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  ns_teardown 2>/dev/null || true
  rm -rf "$WORK"
}

# x >= lo and x < hi, as decimals.
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x < hi) }'; }

if ! why=$(ns_can_create); then
  echo "SKIPPED: $why" >&2
  exit 77
fi
[[ -c /dev/net/tun ]] || { echo "SKIPPED: no /dev/net/tun (tun driver) for the delay line's taps" >&2; exit 77; }
command -v iperf3 >/dev/null || { echo "SKIPPED: iperf3 is not installed (apt-get install iperf3)" >&2; exit 77; }
[[ -x $NS_DELAY_LINE ]] || fail "no rs-delay-line at $NS_DELAY_LINE"
ns_reap_stale
trap cleanup EXIT

echo "== a missing namespace is named, with exit status 1"
rc=0
err=$("$NS_DELAY_LINE" --delay 1ms --pair "${NS_PREFIX}-nosuch:eth0=${NS_PREFIX}-nosuch2:p0" 2>&1) || rc=$?
((rc == 1)) || fail "exit status $rc for a missing namespace, expected 1 ($err)"
[[ $err == *"no network namespace '${NS_PREFIX}-nosuch'"* ]] || fail "unclear error for a missing namespace: $err"

echo "== 2 hosts, ${RATE_MBIT} Mbit/s + ${DELAY_MS} ms per link direction, through rs-delay-line"
ns_setup 2 "${RATE_MBIT}mbit" "${DELAY_MS}ms"
[[ $NS_DELAY_USED == userspace && -n $NS_DELAY_LINE_PID ]] || fail "ns_setup did not start rs-delay-line"
ns_exec 0 ip -d link show eth0 | grep -q 'tun type tap' || fail "host 0's eth0 is not the delay line's tap"
ip netns exec "$(ns_switch)" ip link show p1 | grep -q 'master br0' || fail "p1 is not on the bridge"
ns_exec 1 tc qdisc show dev eth0 | grep -q tbf || fail "host 1's eth0 is not shaped"
cc=$(ns_exec 1 sysctl -n net.ipv4.tcp_congestion_control)
[[ $cc == "$(ns_tcp_cc)" ]] || fail "host 1 runs TCP $cc, not the harness's $(ns_tcp_cc)"

echo "== round trip host 0 -> host 1 -> host 0: 4 x ${DELAY_MS} ms"
lo=$((4 * DELAY_MS))
hi=$((4 * DELAY_MS + RTT_SLACK_MS))
if command -v ping >/dev/null; then
  # The first echo also waits for ARP (another round trip); the minimum is the path.
  out=$(ns_exec 0 ping -n -c 6 -i 0.2 -W 2 "$(ns_addr 1)") || fail "ping failed: $out"
  min=$(awk -F'[/ =]+' '/^rtt/ { print $6 }' <<<"$out")
  echo "ping min RTT ${min} ms"
  within "$min" "$lo" "$hi" || fail "ping min RTT $min ms, expected at least $lo and below $hi"
else
  echo "(ping is not installed: the RTT check uses TCP's own measure, from iperf3)"
fi

echo "== TCP: iperf3 host 0 -> host 1, 2 s"
ns_exec 1 timeout 20 iperf3 -s -1 -B "$(ns_addr 1)" -p 5201 >"$WORK/iperf-server.log" 2>&1 &
server=$!
for ((tries = 0; tries < 50; tries++)); do
  ns_exec 1 ss -Hltn "sport = :5201" | grep -q . && break
  sleep 0.1
done
ns_exec 0 timeout 20 iperf3 -c "$(ns_addr 1)" -p 5201 -t 2 -J >"$WORK/iperf.json" 2>"$WORK/iperf.err" ||
  fail "iperf3 failed: $(cat "$WORK/iperf.err" "$WORK/iperf.json")"
wait "$server" || true
read -r bytes seconds min_rtt_us < <(python3 - "$WORK/iperf.json" <<'EOF'
import json, sys
end = json.load(open(sys.argv[1]))["end"]
print(end["sum_received"]["bytes"], end["sum_received"]["seconds"], end["streams"][0]["sender"].get("min_rtt", -1))
EOF
)
echo "iperf3: $bytes bytes in $seconds s, TCP min RTT $min_rtt_us us"
((bytes > 0)) || fail "iperf3 moved no data"
# tbf still shapes the taps: never more than the rate (10 % for timing at the edges).
within "$bytes" 0 "$(awk -v s="$seconds" -v r="$RATE_MBIT" 'BEGIN { print s * r * 1e6 / 8 * 1.1 }')" ||
  fail "$bytes bytes in $seconds s is above ${RATE_MBIT} Mbit/s: the link is not shaped"
if ((min_rtt_us >= 0)); then
  within "$min_rtt_us" $((lo * 1000)) $((hi * 1000)) ||
    fail "TCP min RTT $min_rtt_us us, expected at least $((lo * 1000)) and below $((hi * 1000))"
fi

echo "== teardown: the delay line's summary; nothing left behind"
pid=$NS_DELAY_LINE_PID
ns_teardown 2>"$WORK/teardown.err"
cut -c1-400 "$WORK/teardown.err"
summary=$(grep '^rs-delay-line: stopped' "$NS_DELAY_LOG") || fail "no summary from rs-delay-line: $(cat "$NS_DELAY_LOG")"
frames=$(sed -E 's/.*total frames ([0-9]+).*/\1/' <<<"$summary")
drops=$(sed -E 's/.*total frames [0-9]+ bytes [0-9]+ drops ([0-9]+).*/\1/' <<<"$summary")
((frames > 1000)) || fail "the summary counts $frames frames for a 2 s transfer: $summary"
((drops == 0)) || fail "the delay line dropped $drops frames with a 64 MiB queue: $summary"
! kill -0 "$pid" 2>/dev/null || fail "rs-delay-line (pid $pid) still runs after ns_teardown"
! ip netns list | grep -q "^${NS_PREFIX}-" || fail "namespaces left behind: $(ip netns list | grep "^${NS_PREFIX}-")"
echo "PASS"
