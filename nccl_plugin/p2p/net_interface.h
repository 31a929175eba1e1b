// Choice of the network interfaces the point-to-point transport listens on,
// one plugin device per chosen interface. Order of precedence:
// REDUCER_SOCKET_IFNAME, then NCCL_SOCKET_IFNAME (NCCL's syntax: a
// comma-separated list of name prefixes, `=` for exact names, a leading `^`
// to exclude), then the first non-loopback interface that is up (docker
// bridges skipped), then loopback. An explicit list that matches nothing is a
// configuration error naming the variable and the interfaces available.
//
// The selection is a pure function over a candidate list so tests can feed
// made-up interfaces; ListSystemInterfaces/Describe read the real system.
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nccl_plugin/p2p/socket.h"
#include "common/status.h"

namespace rs::plugin {

struct InterfaceCandidate {
  std::string name;
  SockAddr addr;  // port 0
  bool up = false;
  bool loopback = false;
};

struct NetInterface {
  std::string name;
  SockAddr addr;
  std::string pci_path;  // sysfs path of the NIC; empty for virtual interfaces
  int speed_mbps = 10'000;
};

inline constexpr size_t kMaxInterfaces = 16;

// NCCL_SOCKET_IFNAME semantics for one interface name.
bool IfSpecMatches(std::string_view spec, std::string_view name);

// `spec` empty means the automatic choice; `source` names the variable the
// spec came from, for error messages. The result is never empty.
StatusOr<std::vector<NetInterface>> SelectInterfaces(const std::vector<InterfaceCandidate>& all,
                                                     std::string_view spec, std::string_view source);

// IPv4 and IPv6 addresses of the system's interfaces (getifaddrs), IPv6
// link-local addresses left out (they need a scope id to be reached).
std::vector<InterfaceCandidate> ListSystemInterfaces();

// Fills pci_path and speed_mbps from /sys/class/net when available.
void Describe(NetInterface* nic);

}  // namespace rs::plugin
