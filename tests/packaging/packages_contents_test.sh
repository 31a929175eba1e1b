#!/usr/bin/env bash
# What the .deb packages hold, read with dpkg-deb (no root needed): each
# program, library and configuration file where a user and NCCL look for it,
# the environment file marked as a configuration file (an upgrade keeps the
# user's edits), the maintainer scripts, and dependencies that say what the
# program really links: the plugin none of the control plane's libraries.
#
#   packages_contents_test.sh PACKAGE_DIR MULTIARCH [trainer] [python]
set -euo pipefail

dir=$1 multiarch=$2 want_trainer='' want_python=''
shift 2
for extra in "$@"; do
  case $extra in
    trainer) want_trainer=1 ;;
    python) want_python=1 ;;
    '') ;;
    *) echo "unknown package kind: $extra" >&2; exit 2 ;;
  esac
done
failures=0
fail() { printf 'FAIL: %b\n' "$*" >&2; failures=$((failures + 1)); }

one_deb() {
  local matches=("$dir"/"$1"_*.deb)
  [ ${#matches[@]} -eq 1 ] && [ -f "${matches[0]}" ] || { echo "expected one $1_*.deb in $dir, found: ${matches[*]}" >&2; exit 1; }
  echo "${matches[0]}"
}

# files PACKAGE -> the regular files it installs, one absolute path a line
files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {sub(/^\./, "", $6); print $6}' | sort; }

expect_files() {
  local deb=$1; shift
  local want got
  want=$(printf '%s\n' "$@" | sort)
  got=$(files "$deb")
  [ "$want" = "$got" ] || fail "$(basename "$deb") installs:\n$got\nexpected:\n$want"
}

server=$(one_deb reduction-server)
plugin=$(one_deb libnccl-net-reducer)

expect_files "$server" /etc/default/reducerd /usr/bin/reducerctl /usr/bin/reducerd \
  /usr/lib/systemd/system/reducerd.service
expect_files "$plugin" "/usr/lib/$multiarch/libnccl-net-reducer.so" /usr/bin/reducer-doctor

ctrl=$(mktemp -d)
trap 'rm -rf "$ctrl"' EXIT
dpkg-deb -e "$server" "$ctrl/server"
[ "$(cat "$ctrl/server/conffiles")" = /etc/default/reducerd ] || fail "/etc/default/reducerd is not a conffile"
for script in postinst prerm postrm; do
  [ -x "$ctrl/server/$script" ] || fail "reduction-server has no executable $script"
done
grep -q 'adduser --system' "$ctrl/server/postinst" || fail "postinst does not create the reducer user"

depends() { dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//'; }
server_deps=$(depends "$server")
for lib in adduser libc6 libgrpc++1.51 libprotobuf32 libssl3; do
  grep -qx "$lib" <<<"$server_deps" || fail "reduction-server does not depend on $lib: $server_deps"
done
plugin_deps=$(depends "$plugin" | sort | tr '\n' ' ')
# The plugin is loaded into training processes: the C/C++ runtime only
# (libcrypto is linked in), so that it installs on any base image with
# glibc 2.34+ (Debian 12, Ubuntu 22.04 and later); so is reducer-doctor.
[ "$plugin_deps" = "libc6 libgcc-s1 libstdc++6 " ] || fail "libnccl-net-reducer depends on: $plugin_deps"

if [ -n "$want_trainer" ]; then
  trainer=$(one_deb reduction-server-trainer)
  expect_files "$trainer" /usr/bin/rs-train
fi

# The Python package: the modules and the extension where Debian's python3
# finds them, a dependency on the Python it was built for, and importable
# from the unpacked files with the system's interpreter.
if [ -n "$want_python" ]; then
  python_deb=$(one_deb python3-reduction-server)
  pydir=/usr/lib/python3/dist-packages/reduction_server
  ext=$(files "$python_deb" | grep -x "$pydir/_core\.cpython-[0-9]*-.*\.so" || true)
  [ -n "$ext" ] || fail "python3-reduction-server has no $pydir/_core.cpython-*.so"
  expect_files "$python_deb" "$pydir/__init__.py" "$pydir/_errors.py" "$pydir/torch.py" ${ext:+"$ext"}
  depends "$python_deb" | grep -qx python3 || fail "python3-reduction-server does not depend on python3"
  # Importing as root writes __pycache__, which dpkg does not own: its prerm
  # removes it, so that a purge leaves nothing behind.
  dpkg-deb --info "$python_deb" prerm 2>/dev/null | grep -q __pycache__ ||
    fail "python3-reduction-server has no prerm that removes __pycache__"
  dpkg-deb -x "$python_deb" "$ctrl/pyroot"
  if readelf -S "$ctrl/pyroot$ext" | grep -q '\.debug_info'; then fail "$(basename "$ext") is not stripped"; fi
  names=$(cd / && PYTHONPATH="$ctrl/pyroot/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
    'import reduction_server as rs; print(" ".join(n for n, _, _ in rs.variables()))' 2>&1) ||
    fail "reduction_server from the package does not import: $names"
  grep -qw REDUCER_ADDRS <<<"$names" || fail "reduction_server.variables() lacks REDUCER_ADDRS: $names"
fi

# Stripped: no debug sections in what a user installs.
dpkg-deb -x "$server" "$ctrl/root"
dpkg-deb -x "$plugin" "$ctrl/root"
for bin in "$ctrl/root/usr/bin/reducerd" "$ctrl/root/usr/lib/$multiarch/libnccl-net-reducer.so" \
  "$ctrl/root/usr/bin/reducer-doctor"; do
  if readelf -S "$bin" | grep -q '\.debug_info'; then fail "$(basename "$bin") is not stripped"; fi
done

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
for deb in "$dir"/*.deb; do
  echo "$(basename "$deb"): $(stat -c %s "$deb") bytes; Depends: $(dpkg-deb -f "$deb" Depends)"
done
echo "packages hold what they should"
