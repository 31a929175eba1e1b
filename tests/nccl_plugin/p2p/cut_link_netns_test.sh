#!/usr/bin/env bash
# The NCCL plugin's point-to-point transport on a link that is cut while it
# sends: two network namespaces joined by a veth pair, a receiver in one, the
# plugin's send lane (p2p_cut_link_sender) in the other with
# REDUCER_LIVENESS_TIMEOUT = 1 s. One second in, every packet reaching the
# receiver is dropped (iptables). The send must fail within twice the
# timeout plus slack for a busy machine, naming the cause; before the
# sockets had TCP_USER_TIMEOUT it waited for TCP's retries, about 15 minutes.
# Exit 0 on success, 1 on a failure, 77 (skipped, with the reason) where
# namespaces cannot be created.
set -euo pipefail

SENDER=${1:?usage: cut_link_netns_test.sh P2P_CUT_LINK_SENDER}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# shellcheck source=bench/netns/netns_lib.sh
source "$ROOT/bench/netns/netns_lib.sh"

if ! why=$(ns_can_create); then
  echo "SKIPPED: $why" >&2
  exit 77
fi
command -v iptables >/dev/null || { echo "SKIPPED: iptables is not installed" >&2; exit 77; }

A="rscutA$$" B="rscutB$$"
cleanup() {
  [[ -n ${receiver:-} ]] && kill "$receiver" 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

ip netns add "$A"
ip netns add "$B"
ip link add "${A}v" type veth peer name "${B}v"
ip link set "${A}v" netns "$A"
ip link set "${B}v" netns "$B"
ip -n "$A" addr add 10.98.0.1/24 dev "${A}v"
ip -n "$B" addr add 10.98.0.2/24 dev "${B}v"
for ns in "$A" "$B"; do
  ip -n "$ns" link set lo up
done
ip -n "$A" link set "${A}v" up
ip -n "$B" link set "${B}v" up

# The receiving rank: reads whatever arrives, for at most 60 s.
ip netns exec "$B" timeout 60 python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.98.0.2", 5701))
s.listen(1)
c, _ = s.accept()
while c.recv(1 << 20):
    pass
' &
receiver=$!
for _ in $(seq 50); do
  ip netns exec "$B" ss -ltn 2>/dev/null | grep -q ':5701 ' && break
  sleep 0.1
done

set +e
out=$(ip netns exec "$A" timeout 60 "$SENDER" 10.98.0.2 5701 1000 \
  "ip netns exec $B iptables -A INPUT -p tcp --dport 5701 -j DROP" 2>&1)
rc=$?
set -e
echo "$out"
((rc == 0)) || fail "the send did not fail within 30 s of the cut (exit $rc)"
[[ $out =~ failed\ ([0-9.]+)\ s\ after\ the\ cut ]] || fail "no failure line"
secs=${BASH_REMATCH[1]}
# 2 x 1 s, the retransmission that finds it spent, and room for a loaded machine.
awk -v s="$secs" 'BEGIN { exit !(s <= 6) }' || fail "the send failed only ${secs} s after the cut (bound 6 s)"
grep -q 'send comm to the cut peer' <<<"$out" || fail "the error does not name the connection"
grep -q 'acknowledged nothing for twice REDUCER_LIVENESS_TIMEOUT' <<<"$out" || fail "the error does not say why"
echo "ok: a cut link failed the point-to-point send after ${secs} s, naming the cause"
