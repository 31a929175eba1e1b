#!/usr/bin/env bash
# The GPU bundle (scripts/gpu_bundle.sh), made from this build, in a root that
# holds nothing but glibc (libc6's shared libraries and the loader),
# libstdc++, libgcc_s and the bundle: what a bare GPU machine has. Inside it
# (chroot, no env.sh, no shell): reducerd --version, rs-train --help,
# reducer-bench --help, iperf3 --version (the cpu step's) and the plugin
# loaded by path must work, and the loader must find every library of every
# file of the bundle, except CUDA's
# and NCCL's for rs-train's GPU module (the GPU machine brings those). Also:
# at most 64 MiB, stripped, env.sh usable under `set -eu` without a Python.
#
#   gpu_bundle_bare_root_test.sh SOURCE_DIR BUILD_DIR DLOPEN_TOOL
# Exit 77 with the reason where chroot cannot run here (not root).
set -euo pipefail

src=$1 build=$2 probe=$3
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "chroot needs root"
for tool in chroot unshare perl dpkg-query; do
  command -v "$tool" >/dev/null || skip "no $tool (glibc's files are taken from Debian's libc6 package)"
done
# In a mount namespace of its own: the root's /proc (which the loader reads
# to resolve a program's $ORIGIN, as on any machine) goes away with it.
if [ -z "${RS_BARE_ROOT_NS:-}" ]; then
  RS_BARE_ROOT_NS=1 exec unshare --mount --propagation private "$0" "$@" ||
    skip "unshare --mount failed (no CAP_SYS_ADMIN?)"
fi

failures=0
fail() { printf 'FAIL: %b\n' "$*" >&2; failures=$((failures + 1)); }
step() { echo "--- $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rs-bare-root.XXXXXX")
root=$tmp/root
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf --one-file-system "$tmp"' EXIT
trap 'exit 143' TERM INT
bundle=/opt/bundle  # as seen inside the root

step "scripts/gpu_bundle.sh with BUILD_DIR=$build"
started=$SECONDS
BUILD_DIR=$build timeout 240 "$src/scripts/gpu_bundle.sh" "$root$bundle"
echo "bundle made in $((SECONDS - started)) s"
total=$(find "$root$bundle" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "bundle size: $total bytes ($(awk -v b="$total" 'BEGIN {printf "%.1f", b / 1048576}') MiB)"
[ "$total" -le $((64 * 1024 * 1024)) ] || fail "the bundle is over 64 MiB: $total bytes"
for f in reducerd rs-train reducer-bench; do
  [ -x "$root$bundle/bin/$f" ] || fail "no bin/$f in the bundle"
  if readelf -S "$root$bundle/bin/$f" | grep -q '\.debug_info'; then fail "bin/$f is not stripped"; fi
done
for f in env.sh MANIFEST.txt tests/gpu/run_all.sh lib/libnccl-net-reducer.so; do
  [ -f "$root$bundle/$f" ] || fail "no $f in the bundle"
done
[ -z "$(find "$root$bundle" -name __pycache__)" ] || fail "the bundle holds __pycache__ folders"

step "the root: glibc, libstdc++, libgcc_s"
# libc6's shared libraries and the loader, at the paths the package gives
# them (not its gconv or audit modules); no ld.so.cache, so the loader
# searches only its default folders.
mapfile -t glibc < <(dpkg-query -L libc6 | grep -E '^/(usr/)?lib(64|32)?(/[a-z0-9_]+-linux-gnu[a-z0-9_]*)?/[^/]+\.so(\.[0-9]+)*$')
[ ${#glibc[@]} -gt 0 ] || fail "dpkg-query -L libc6 lists no shared libraries"
libdir=""
for f in "${glibc[@]}"; do
  mkdir -p "$root$(dirname "$f")"
  cp -L "$f" "$root$f"
  case $f in */libc.so.6) libdir=$(dirname "$f") ;; esac
done
[ -n "$libdir" ] || { fail "libc6 has no libc.so.6"; exit 1; }
for lib in libstdc++.so.6 libgcc_s.so.1; do
  path=$(ldd "$build/server/reducerd" | awk -v n="$lib" '$1 == n {print $3}')
  [ -f "$path" ] || { fail "no $lib on this machine"; exit 1; }
  cp -L "$path" "$root$libdir/$lib"
done
cp "$probe" "$root/opt/dlopen_plugin"
echo "root: $(find "$root" -type f ! -path "$root$bundle/*" | wc -l) files besides the bundle"
mkdir -p "$root/proc"
mount -t proc proc "$root/proc" || skip "cannot mount /proc in the root"

# Runs a command in the root; it must succeed and no library may be missing.
in_root() {
  local out rc=0
  out=$(env -i timeout 30 "$(command -v chroot)" "$root" "$@" 2>&1) || rc=$?
  [ "$rc" -ne 125 ] || skip "chroot cannot run here: $out"
  printf '%s\n' "$out" | sed -n '1,4p' | sed 's/^/    /'
  [ "$rc" -eq 0 ] || fail "$* exited $rc in the bare root:\n$out"
  if grep -qiE 'not found|cannot open shared object' <<<"$out"; then fail "$*: a library is missing:\n$out"; fi
}

step "the programs and the plugin, in the root"
in_root "$bundle/bin/reducerd" --version
in_root "$bundle/bin/rs-train" --help
in_root "$bundle/bin/reducer-bench" --help
in_root /opt/dlopen_plugin "$bundle/lib/libnccl-net-reducer.so"
# The cpu step's iperf3, where the bundle has one (this machine had iperf3).
if command -v iperf3 >/dev/null; then
  in_root "$bundle/bin/iperf3" --version
  for f in bench/cpu_scaling.sh scripts/lib/procs.sh scripts/lib/cpu_time.sh; do
    [ -f "$root$bundle/$f" ] || fail "no $f in the bundle (the cpu step runs it)"
  done
fi

step "every file's libraries, listed by the root's loader"
loader=/lib64/ld-linux-x86-64.so.2
[ -e "$root$loader" ] || fail "no $loader in the root (libc6 lists it)"
# What ldd does, inside the root: the loader with LD_TRACE_LOADED_OBJECTS
# lists every library, "not found" for a missing one (its --list stops at the
# first). Set for the loader only, not for the host's chroot.
list_in_root() {
  # shellcheck disable=SC2016  # perl's variables
  timeout 30 perl -e 'my ($r, @cmd) = @ARGV; chroot($r) or die "chroot $r: $!\n"; chdir("/") or die;
    %ENV = (LD_TRACE_LOADED_OBJECTS => 1); exec { $cmd[0] } @cmd or die "exec $cmd[0]: $!\n"' \
    "$root" "$loader" "$1"
}
elves=0
while IFS= read -r f; do
  [ "$(head -c 4 "$root$bundle/$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  rc=0
  out=$(list_in_root "$bundle/$f" 2>&1) || rc=$?
  missing=$(awk '/=> not found/ {print $1}' <<<"$out" | sort | paste -sd ' ')
  if [ "$f" = lib/librs-train-gpu.so ]; then
    # Only CUDA's and NCCL's own libraries may be missing here.
    others=$(tr ' ' '\n' <<<"$missing" | grep -vE '^(lib(cudart|cublas|cublasLt|nccl)\.so\.[0-9]+)?$' || true)
    [ -z "$others" ] || fail "$f needs libraries beyond CUDA's and NCCL's that the root lacks: $others"
    echo "    $f: missing only ${missing:-nothing} (the GPU machine brings them)"
  elif [ -n "$missing" ] || [ "$rc" -ne 0 ]; then
    fail "$f in the bare root (rc $rc), missing: ${missing:-none}\n$out"
  fi
done < <(cd "$root$bundle" && find . -type f -printf '%P\n' | sort)
echo "    $elves ELF files listed"
[ "$elves" -ge 5 ] || fail "expected at least 5 ELF files in the bundle, found $elves"

step "env.sh under set -eu, without a Python"
out=$(env -i PATH=/usr/bin:/bin PYTHON=/nonexistent/python3 bash -c \
  "set -eu; source '$root$bundle/env.sh'; echo \"RS_PLUGIN=\$RS_PLUGIN\"; reducerd --version" 2>&1) ||
  fail "sourcing env.sh failed:\n$out"
grep -q "RS_PLUGIN=$root$bundle/lib/libnccl-net-reducer.so" <<<"$out" || fail "env.sh set no RS_PLUGIN:\n$out"
grep -q '^reducerd ' <<<"$out" || fail "reducerd is not on env.sh's PATH:\n$out"
grep -q 'no /nonexistent/python3' <<<"$out" || fail "env.sh did not say that the Python is missing:\n$out"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "the bundle runs in a root of glibc, libstdc++ and libgcc_s only ($total bytes)"
