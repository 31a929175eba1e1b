# shellcheck shell=bash
# Shared by the quick-start scripts: installs the Debian 12 packages the
# build needs, only when something is missing (so a second run is offline and
# instant). Source it, then call rs_install_deps [extra packages...]: the build
# packages plus the extras (the test command adds "${RS_TEST_PACKAGES[@]}").

# What building everything needs (CMake requires all of it at configure time).
RS_BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libasio-dev libssl-dev libhwy-dev libspdlog-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # control plane: gRPC + protobuf, the standard health.proto, prometheus-cpp
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc grpc-proto prometheus-cpp-dev
  # the .deb packages (`ninja packages`): cpack's dependency scan runs file and
  # dpkg-shlibdeps (dpkg-dev, with build-essential)
  file
  # the GPU bundle (scripts/gpu_bundle.sh): RUNPATH $ORIGIN on what it copies,
  # so its programs find their libraries even without its env.sh
  patchelf
  # the Python package (python/, python3-reduction-server): Python's headers
  # and pybind11; without them CMake leaves the package out
  python3-dev python3-pybind11
)

# What only the test suite needs on top (used by scripts/run_tests.sh).
# shellcheck disable=SC2034
RS_TEST_PACKAGES=(
  # the tests' HTTP client (tests/support/http_get.cc)
  libcurl4-openssl-dev
  # the control plane's TLS tests make throwaway certificates with the openssl
  # command (tests/support/test_certificates.cc)
  openssl
  # promtool and a real Prometheus server to scrape reducerd
  prometheus
  # the network-namespace harness (bench/netns) and its smoke test: ip/tc, the
  # ring peer (torch.distributed gloo), the plot, the line rate
  iproute2 python3-torch python3-matplotlib iperf3
  # images and the compose cluster (tests/docker, tests/packaging): podman
  # driven by docker-compose through its API socket, a base image made by
  # debootstrap (see tests/support/containers.sh), curl for the socket
  podman runc netavark aardvark-dns catatonit iptables docker-compose debootstrap curl
  # the deployment specs' test (tests/deploy): Kubernetes' API schemas, YAML
  python3-kubernetes python3-yaml
  # the Python package's tests (tests/python): `pip install ./python` offline
  # into a venv that sees python3-torch
  python3-venv python3-pip python3-setuptools
  # the sanitizer build, which also fuzzes: clang with libFuzzer and its
  # sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # a compiler cache (CMake's RS_CCACHE): a second run recompiles only what
  # changed
  ccache
  # the docs site: `mkdocs build --strict` from mkdocs.yml
  mkdocs
)

rs_install_deps() {
  local wanted=("${RS_BUILD_PACKAGES[@]}" "$@") missing=() pkg
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]}; run as root or install them first" >&2
    return 1
  fi
  echo "==> installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

rs_repo_root() {
  cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd
}
