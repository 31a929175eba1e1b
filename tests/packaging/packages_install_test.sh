#!/usr/bin/env bash
# The .deb packages installed into a clean Debian 12 root: a container of
# debian:bookworm-slim (made by debootstrap, see tests/support/containers.sh),
# where apt resolves their dependencies from Debian's mirror. Inside
# (in_clean_root.sh): reducerd --help, the plugin loaded by name the way NCCL
# loads it, the service's user and unit, reducerd run as the service runs it,
# then a purge that leaves nothing behind.
#
#   packages_install_test.sh PACKAGE_DIR DLOPEN_TOOL SCRATCH_DIR
# Exit 77 with the reason where containers cannot run here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
debs=$(cd "$1" && pwd) tool=$2 scratch=$3
# shellcheck source=tests/support/containers.sh
source "$here/../support/containers.sh"

ls "$debs"/*.deb >/dev/null || { echo "no .deb in $debs (the packages_build test makes them)" >&2; exit 1; }
rs_ct_init "$scratch"
rs_ct_base_image
name=rs-packages-test-$$
trap 'podman rm -f -t 0 "$name" >/dev/null 2>&1 || true' EXIT
trap 'exit 143' TERM INT
podman run --rm --name "$name" \
  -v "$debs:/debs:ro" -v "$tool:/tools/rs_dlopen_plugin:ro" -v "$here/in_clean_root.sh:/tools/in_clean_root.sh:ro" \
  docker.io/library/debian:bookworm-slim /tools/in_clean_root.sh
