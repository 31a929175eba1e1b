#!/usr/bin/env bash
# Runs inside a clean Debian 12 container (packages_install_test.sh): installs
# the packages from /debs with apt as a user would, checks what they set up,
# runs reducerd the way reducerd.service does, loads the plugin the way NCCL
# does, runs reducer-doctor against that reducerd, then purges everything and
# checks it is gone.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
step() { echo "--- $*"; }

step "apt-get install /debs/*.deb"
apt-get update -qq
apt-get install -y -qq --no-install-recommends /debs/*.deb systemd >/dev/null

step "reducerd --help, reducerctl"
reducerd --help | sed -n 1,3p  # reads it all: head would end reducerd with SIGPIPE
reducerd --version
reducerctl plan --workers 2 --worker-gbps 100 --reducer-gbps 32 | grep -q 'recommended  7 reducers'

if ls /debs/reduction-server-trainer_*.deb >/dev/null 2>&1; then
  step "rs-train"
  rs-train --help | sed -n 1,2p
fi

if ls /debs/python3-reduction-server_*.deb >/dev/null 2>&1; then
  step "the Python package: import reduction_server"
  python3 -c 'import reduction_server as rs; print(rs.__file__, len(rs.variables()), "settings")'
fi

step "the plugin, loaded by name from the loader path"
/tools/rs_dlopen_plugin

step "the service's user, folders and unit"
id reducer
[ "$(stat -c '%a %U:%G' /etc/reducer)" = "750 root:reducer" ]
systemd-analyze verify /usr/lib/systemd/system/reducerd.service

step "reducerd as the service runs it: the reducer user, /etc/default/reducerd"
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" >/etc/reducer/job-token
chgrp reducer /etc/reducer/job-token && chmod 0640 /etc/reducer/job-token
sed -i 's|^#REDUCER_JOB_TOKEN_FILE=|REDUCER_JOB_TOKEN_FILE=|' /etc/default/reducerd
mkdir -p /run/reducerd && chown reducer:reducer /run/reducerd
# The unit's EnvironmentFile, then loopback addresses for this test.
setpriv --reuid=reducer --regid=reducer --init-groups env $(grep -E '^[A-Z_]+=' /etc/default/reducerd) \
  REDUCER_LISTEN=127.0.0.1:0 REDUCER_GRPC_LISTEN=127.0.0.1:0 REDUCER_METRICS_LISTEN=127.0.0.1:0 \
  REDUCER_GRPC_PORT_FILE=/run/reducerd/grpc-port REDUCER_PORT_FILE=/run/reducerd/port \
  reducerd >/run/reducerd/log 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ -s /run/reducerd/port ] && break
  kill -0 "$pid" 2>/dev/null || { cat /run/reducerd/log; exit 1; }
  sleep 0.1
done
[ -s /run/reducerd/port ] || { echo "reducerd did not start"; cat /run/reducerd/log; exit 1; }
reducerctl --target "127.0.0.1:$(cat /run/reducerd/grpc-port)" health
# The plugin package's self-check against it: the plugin where NCCL finds it
# and the reducer accepting the token; no NCCL here, so its verdict is no.
code=0
NCCL_NET_PLUGIN=reducer NCCL_COLLNET_ENABLE=1 REDUCER_ADDRS="127.0.0.1:$(cat /run/reducerd/port)" \
  REDUCER_JOB_TOKEN_FILE=/etc/reducer/job-token reducer-doctor >/run/reducerd/doctor 2>&1 || code=$?
cat /run/reducerd/doctor
[ "$code" = 1 ] || { echo "reducer-doctor exited $code without NCCL, not 1"; exit 1; }
grep -q '^OK    plugin: ' /run/reducerd/doctor || { echo "reducer-doctor did not find the plugin"; exit 1; }
grep -q '^OK    reducer 127\.0\.0\.1:[0-9]*: answers and accepts the job token' /run/reducerd/doctor ||
  { echo "reducer-doctor: the reducer did not accept the token"; exit 1; }
grep -q 'no job token' /run/reducerd/log && { echo "the token file was not used"; exit 1; }
kill -TERM "$pid"
wait "$pid"
cat /run/reducerd/log

step "apt-get purge"
apt-get purge -y -qq reduction-server libnccl-net-reducer \
  $(dpkg-query -W -f '${Package}\n' reduction-server-trainer python3-reduction-server 2>/dev/null) >/dev/null
for gone in /usr/bin/reducerd /usr/bin/reducerctl /usr/bin/reducer-doctor /etc/default/reducerd /etc/reducer \
  /usr/lib/systemd/system/reducerd.service /usr/lib/python3/dist-packages/reduction_server; do
  [ ! -e "$gone" ] || { echo "$gone is still there after purge"; exit 1; }
done
if /tools/rs_dlopen_plugin 2>/dev/null; then echo "the plugin still loads after purge"; exit 1; fi
echo "--- clean root: installed, ran, purged"
