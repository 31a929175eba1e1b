#!/usr/bin/env bash
# The harness's rate limits (tbf, netns_lib.sh) pass the largest GSO packet
# whole at every rate. A packet larger than tbf's bucket is segmented in
# software by tbf itself, and at 500 Mbit/s that work filled this machine's
# 2 cores and made the harness measure itself (1 MiB all-reduces 2.2x slower
# than with a bucket of two packets). Checks the bucket sizes from 1 Mbit/s
# to 100 Gbit/s, for the default and a larger (BIG TCP) GSO size, and on a
# real shaped topology every tbf's bucket against its device's GSO size, and
# its queue: 25 ms at the switch's ports, 100 ms at the hosts' own NICs.
# Exit 0 on success, 1 on a failure, 77 (skipped, with the reason) where
# namespaces cannot be created for the second part.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# shellcheck source=bench/netns/netns_lib.sh
source "$ROOT/bench/netns/netns_lib.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }
# A GSO packet as tbf counts it: its bytes plus every further segment's
# headers (at most 80 bytes each, 1448-byte segments).
gso_on_wire() { echo $(($1 + ($1 / 1448 + 1) * 80)); }

echo "== buckets from 1 Mbit/s to 100 Gbit/s hold two full GSO packets and 1 ms of traffic"
for rate in 1mbit 10mbit 100mbit 200mbit 500mbit 520mbit 1gbit 10gbit 100gbit; do
  bits=$(ns_rate_bits "$rate")
  for gso in 65536 185000; do
    burst=$(ns_burst_bytes "$bits" "$gso")
    ((burst >= 2 * gso)) || fail "$rate, GSO $gso: bucket $burst bytes is below two GSO packets"
    ((burst > $(gso_on_wire "$gso"))) || fail "$rate, GSO $gso: bucket $burst bytes is below one GSO packet"
    ((burst >= bits / 8 / 1000)) || fail "$rate: bucket $burst bytes is below 1 ms of traffic"
  done
done
[[ $(ns_burst_bytes 200000000) == 131072 ]] || fail "default GSO size: bucket $(ns_burst_bytes 200000000), expected 131072"

if ! why=$(ns_can_create); then
  echo "SKIPPED: $why" >&2
  exit 77
fi
ns_reap_stale
trap 'ns_teardown 2>/dev/null || true' EXIT

echo "== 2 hosts at 200 Mbit/s: every tbf's bucket passes its device's largest GSO packet"
ns_setup 2 200mbit ""
checked=0
for ((i = 0; i < 2; i++)); do
  for where in "$(ns_name "$i") eth0" "$(ns_switch) p$i"; do
    read -r ns dev <<<"$where"
    gso=$(ns_gso_bytes "$ns" "$dev")
    burst=$(ip netns exec "$ns" tc -j qdisc show dev "$dev" | grep -o '"burst":[0-9]*' | cut -d: -f2)
    [[ -n $burst ]] || fail "no tbf on $dev in $ns"
    ((burst > $(gso_on_wire "$gso"))) || fail "$dev in $ns: tbf bucket $burst bytes, GSO packets up to $gso bytes"
    # The queue: shallow at the switch's ports, where many senders meet;
    # deep at a host's own NIC, which must not drop what its own streams
    # queue (8 streams at 250 Mbit/s overflowed 25 ms there).
    lat=$(ip netns exec "$ns" tc -j qdisc show dev "$dev" | grep -o '"lat":[0-9]*' | cut -d: -f2)
    if [[ $dev == eth0 ]]; then
      ((lat == 100000)) || fail "$dev in $ns (a host's NIC): tbf queue of $lat us, expected 100 ms"
    else
      ((lat == 25000)) || fail "$dev in $ns (a switch port): tbf queue of $lat us, expected 25 ms"
    fi
    checked=$((checked + 1))
  done
done
((checked == 4)) || fail "checked $checked devices, expected 4"
echo "PASS"
