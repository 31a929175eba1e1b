#!/usr/bin/env bash
# The plugin-only image (docker/Dockerfile, target plugin) as a user takes it
# into a training image of their own: builds it from this build's .deb
# (--target plugin-from-debs: the same layout as `plugin`, without compiling
# the project again in a container), checks that it holds the library,
# rs-launch, reducer-doctor and OpenSSL's licence and nothing else, then builds a plain Debian 12 image with
# `COPY --from=<plugin image> /opt/reducer /opt/reducer`, as docs/guide/deploying.md
# tells users to, and loads the plugin there by name as NCCL does
# (NCCL_NET_PLUGIN=reducer: dlopen("libnccl-net-reducer.so")) with
# LD_LIBRARY_PATH=/opt/reducer/lib; without it, the name must not resolve
# (the image has no other copy that the check could have found instead);
# rs-launch, which deploy/vertex/job.yaml's GPU pools run, is on its PATH,
# and so is reducer-doctor, which runs there (glibc and libstdc++ only) and
# finds the plugin where NCCL will (doctor_image runs its verdicts against
# reducers).
#
#   plugin_image_test.sh PACKAGE_DIR DLOPEN_TOOL SCRATCH_DIR
# Exit 77 with the reason where containers cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
debs=$(cd "$1" && pwd) tool=$2 scratch=$3
# shellcheck source=tests/support/containers.sh
source "$here/../support/containers.sh"

# (grep >/dev/null after a pipe, not grep -q: -q stops reading, and the
# writer's SIGPIPE would fail the pipe under pipefail.)
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
indent() { sed 's/^/  /'; }

ls "$debs"/libnccl-net-reducer_*.deb >/dev/null || fail "no plugin .deb in $debs (the packages_build test makes them)"
# The build machine's record of the libcrypto.a linked into the plugin.
openssl_copyright=/usr/share/doc/libssl-dev/copyright
[ -f "$openssl_copyright" ] || fail "no $openssl_copyright (libssl-dev: the plugin links its libcrypto.a)"
rs_ct_init "$scratch"
plugin_image=localhost/rs-test/plugin:latest
user_image=localhost/rs-test/plugin-in-debian:latest
probe_ct=rs-plugin-image-test-$$
cleanup() {
  set +e
  podman rm -f -t 0 "$probe_ct" >/dev/null 2>&1
  podman rmi -f "$user_image" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 143' TERM INT

rs_ct_base_image
context=$scratch/plugin-context
rm -rf "$context" && mkdir -p "$context"
cp "$debs"/libnccl-net-reducer_*.deb "$context/"
cp "$openssl_copyright" "$context/openssl-copyright"
cp "$root/deploy/vertex/rs-launch" "$context/rs-launch"

build() { rs_image_build "$scratch" "$@" || fail "building $1 failed"; }
start=$(date +%s.%N)
build "$plugin_image" -f "$root/docker/Dockerfile" --target plugin-from-debs "$context"

# --- what the image holds: the library, rs-launch, reducer-doctor and the licence, nothing else
echo "==> the plugin image's files"
podman create --name "$probe_ct" "$plugin_image" none >/dev/null
podman export -o "$scratch/plugin-image.tar" "$probe_ct"
podman rm "$probe_ct" >/dev/null
listing=$(tar -tvf "$scratch/plugin-image.tar" | awk '$1 !~ /^d/ { print $1, $6 }' | sort)
expected=$(sort <<'LISTING'
-rw-r--r-- opt/reducer/lib/libnccl-net-reducer.so
-rwxr-xr-x opt/reducer/bin/rs-launch
-rwxr-xr-x opt/reducer/bin/reducer-doctor
-rw-r--r-- opt/reducer/share/licenses/openssl/Apache-2.0
-rw-r--r-- opt/reducer/share/licenses/openssl/copyright
LISTING
)
if [ "$listing" != "$expected" ]; then
  printf 'expected:\n%s\nfound:\n%s\n' "$expected" "$listing" >&2
  fail "the plugin image should hold exactly the library, rs-launch, reducer-doctor and OpenSSL's licence"
fi
tar -xOf "$scratch/plugin-image.tar" opt/reducer/share/licenses/openssl/copyright | grep '^Upstream-Name: OpenSSL' >/dev/null ||
  fail "the licence folder does not hold OpenSSL's copyright record"
tar -xOf "$scratch/plugin-image.tar" opt/reducer/share/licenses/openssl/Apache-2.0 | grep 'Apache License' >/dev/null ||
  fail "the licence folder does not hold the Apache License's text"
size=$(podman image inspect --format '{{.Size}}' "$plugin_image" | awk '{printf "%.1f MB", $1 / 1e6}')
indent <<<"$listing"

# --- a user's image: COPY --from into a plain Debian 12 ----------------------
# The lines docs/guide/deploying.md ("Images") gives for NGC's and Vertex AI's images.
cp "$tool" "$context/rs_dlopen_plugin"
build "$user_image" -f - "$context" <<DOCKERFILE
FROM debian:bookworm-slim
COPY --from=$plugin_image /opt/reducer /opt/reducer
ENV LD_LIBRARY_PATH=/opt/reducer/lib\${LD_LIBRARY_PATH:+:\${LD_LIBRARY_PATH}} \\
    PATH=/opt/reducer/bin:\${PATH} \\
    NCCL_NET_PLUGIN=reducer \\
    NCCL_NET_PLUGIN_REF_COUNT=1 \\
    NCCL_COLLNET_ENABLE=1
COPY rs_dlopen_plugin /usr/local/bin/
DOCKERFILE

echo "==> in plain Debian 12: the plugin loaded by name, as NCCL_NET_PLUGIN=reducer does"
# An empty entry in LD_LIBRARY_PATH would search the working directory.
env_path=$(podman run --rm --network none "$user_image" printenv LD_LIBRARY_PATH)
[ "$env_path" = /opt/reducer/lib ] || fail "LD_LIBRARY_PATH in the user's image is '$env_path', not /opt/reducer/lib"
# The probe opens lib<NCCL_NET_PLUGIN's value with nccl-net- before it>.so by name.
out=$(podman run --rm --network none "$user_image" sh -c 'exec rs_dlopen_plugin "libnccl-net-$NCCL_NET_PLUGIN.so"' 2>&1) ||
  { echo "$out" >&2; fail "the plugin does not load in plain Debian 12 from /opt/reducer/lib"; }
indent <<<"$out"
grep -qx 'loaded from /opt/reducer/lib/libnccl-net-reducer.so' <<<"$out" ||
  fail "the plugin was not loaded from /opt/reducer/lib"
# job.yaml's GPU pools run `rs-launch -- torchrun ...`: found on PATH.
launcher=$(podman run --rm --network none "$user_image" sh -c 'command -v rs-launch') ||
  fail "rs-launch is not on PATH in the user's image (job.yaml's GPU pools: rs-launch: not found)"
[ "$launcher" = /opt/reducer/bin/rs-launch ] || fail "rs-launch resolves to '$launcher', not /opt/reducer/bin/rs-launch"
echo "  rs-launch on PATH: $launcher"
# The self-check, typed as docs/guide/deploying.md says: on PATH, and it runs
# in plain Debian 12 and finds the plugin through LD_LIBRARY_PATH as NCCL
# does. (No NCCL and no reducers here: its verdict is "will NOT be used".)
doctor_out=$(podman run --rm --network none "$user_image" sh -c 'command -v reducer-doctor && reducer-doctor --version && { reducer-doctor; echo "exit $?"; }' 2>&1) ||
  { echo "$doctor_out" >&2; fail "reducer-doctor does not run in the user's image"; }
indent <<<"$doctor_out"
grep -qx /opt/reducer/bin/reducer-doctor <<<"$doctor_out" || fail "reducer-doctor is not /opt/reducer/bin/reducer-doctor on PATH"
grep -q '^OK    plugin: /opt/reducer/lib/libnccl-net-reducer.so' <<<"$doctor_out" ||
  fail "reducer-doctor did not find the plugin in /opt/reducer/lib"
grep -qx 'exit 1' <<<"$doctor_out" || fail "reducer-doctor should exit 1 without NCCL and reducers"
# The control: the base image has no copy of its own, so LD_LIBRARY_PATH is
# what made the name resolve above.
if podman run --rm --network none "$user_image" env -u LD_LIBRARY_PATH rs_dlopen_plugin >/dev/null 2>&1; then
  fail "the plugin loads without LD_LIBRARY_PATH: the check above proves nothing"
fi
end=$(date +%s.%N)
echo "plugin image: $size; built, copied into Debian 12 and loaded in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
echo "plugin image test passed"
