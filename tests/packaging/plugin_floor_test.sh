#!/usr/bin/env bash
# The NCCL plugin's library floor: it is dlopened into training images we do
# not control, so it may need nothing beyond glibc, libstdc++ and libgcc_s
# (libcrypto is linked in). A missing library would not fail the job: NCCL
# logs one INFO line and silently falls back to its own transports.
#
# Prints the highest glibc, libstdc++ and libgcc_s symbol versions the plugin
# requires: the "runs on" line of docs/guide/frameworks.md ("What the library
# needs") comes from them. reducer-doctor, which ships beside the plugin in
# the same package and images, is held to the same floor.
#
#   plugin_floor_test.sh PATH/libnccl-net-reducer.so|PATH/reducer-doctor
set -euo pipefail

plugin=${1:?usage: plugin_floor_test.sh PATH/libnccl-net-reducer.so|PATH/reducer-doctor}
name=$(basename "$plugin")
[ -f "$plugin" ] || { echo "no plugin at $plugin" >&2; exit 1; }

# glibc's own libraries (libc6), the C++ runtime and GCC's support library.
floor='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'

needed=$(readelf -d -W "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "readelf found no NEEDED entries in $plugin (not dynamically linked?)" >&2; exit 1; }
echo "NEEDED: $(paste -sd ' ' <<<"$needed")"
beyond=$(grep -vE "$floor" <<<"$needed" || true)
if [ -n "$beyond" ]; then
  echo "FAIL: $name needs libraries beyond glibc, libstdc++ and libgcc_s: $(paste -sd ' ' <<<"$beyond")" >&2
  echo "  (link them statically, as nccl_plugin/CMakeLists.txt does for nccl_net_reducer)" >&2
  exit 1
fi
if readelf -d -W "$plugin" | grep -qE '\((RPATH|RUNPATH)\)'; then
  echo "FAIL: $name carries a RUNPATH/RPATH (a build machine's folder): $(readelf -d -W "$plugin" | grep -E 'R(UN)?PATH')" >&2
  exit 1
fi

# The symbol versions it binds to; `sort -V` orders 2.9 before 2.34.
highest() { readelf -V -W "$plugin" | grep -oE "Name: $1_[0-9][0-9.]*" | sed 's/^Name: //' | sort -u -V | tail -1; }
glibc=$(highest GLIBC) glibcxx=$(highest GLIBCXX) cxxabi=$(highest CXXABI) gcc=$(highest GCC)
[ -n "$glibc" ] || { echo "FAIL: no GLIBC_ symbol versions found (readelf -V)" >&2; exit 1; }
echo "highest versions required: ${glibc} ${glibcxx:-no GLIBCXX} ${cxxabi:-no CXXABI} ${gcc:-no GCC}"
echo "$name: floor held: glibc, libstdc++ and libgcc_s only"
