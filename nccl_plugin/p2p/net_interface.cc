#include "nccl_plugin/p2p/net_interface.h"

#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>

namespace rs::plugin {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool IsLinkLocalV6(const SockAddr& addr) {
  if (addr.family() != AF_INET6) return false;
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr.storage);
  return IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr);
}

// Appends one NetInterface per interface name among `all` accepted by
// `want`, preferring the name's IPv4 address; keeps getifaddrs order.
template <typename Pred>
void Collect(const std::vector<InterfaceCandidate>& all, Pred want, std::vector<NetInterface>* out) {
  for (int family : {AF_INET, AF_INET6}) {
    for (const InterfaceCandidate& c : all) {
      if (out->size() >= kMaxInterfaces) return;
      if (!c.up || c.addr.family() != family || !want(c)) continue;
      bool seen = false;
      for (const NetInterface& n : *out) seen |= (n.name == c.name);
      if (seen) continue;
      NetInterface nic;
      nic.name = c.name;
      nic.addr = c.addr;
      out->push_back(std::move(nic));
    }
  }
}

}  // namespace

bool IfSpecMatches(std::string_view spec, std::string_view name) {
  bool exclude = false;
  bool exact = false;
  if (!spec.empty() && spec.front() == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    exact = true;
    spec.remove_prefix(1);
  }
  bool matched = false;
  while (!matched) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    if (!item.empty()) matched = exact ? (name == item) : StartsWith(name, item);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return exclude ? !matched : matched;
}

StatusOr<std::vector<NetInterface>> SelectInterfaces(const std::vector<InterfaceCandidate>& all,
                                                     std::string_view spec, std::string_view source) {
  std::vector<NetInterface> out;
  if (!spec.empty()) {
    Collect(all, [&](const InterfaceCandidate& c) { return IfSpecMatches(spec, c.name); }, &out);
    if (out.empty()) {
      std::vector<std::string> names;
      for (const InterfaceCandidate& c : all) {
        bool seen = false;
        for (const std::string& n : names) seen |= (n == c.name);
        if (c.up && !seen) names.push_back(c.name);
      }
      std::string up;
      for (const std::string& n : names) up += (up.empty() ? "" : ", ") + n;
      return Status(Code::kInvalidArgument, std::string(source) + "='" + std::string(spec) +
                                                "' matches no interface that is up (up: " +
                                                (up.empty() ? "none" : up) + ")");
    }
    return out;
  }
  // Automatic: one interface, so that a multi-homed host does not spread a
  // comm over networks that may not reach the peer.
  Collect(all, [](const InterfaceCandidate& c) { return !c.loopback && !StartsWith(c.name, "docker"); }, &out);
  if (out.empty()) Collect(all, [](const InterfaceCandidate& c) { return c.loopback; }, &out);
  if (out.empty()) return Status(Code::kInvalidArgument, "no network interface is up, not even loopback");
  out.resize(1);
  return out;
}

std::vector<InterfaceCandidate> ListSystemInterfaces() {
  std::vector<InterfaceCandidate> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceCandidate c;
    c.name = it->ifa_name;
    c.addr.len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&c.addr.storage, it->ifa_addr, c.addr.len);
    c.addr.set_port(0);
    if (IsLinkLocalV6(c.addr)) continue;
    c.up = (it->ifa_flags & IFF_UP) && (it->ifa_flags & IFF_RUNNING);
    c.loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
    out.push_back(std::move(c));
  }
  ::freeifaddrs(list);
  return out;
}

void Describe(NetInterface* nic) {
  const std::string base = "/sys/class/net/" + nic->name;
  char resolved[PATH_MAX];
  // NCCL places the NIC in its topology from this path; virtual interfaces
  // have no "device" link and report none.
  if (::realpath((base + "/device").c_str(), resolved) != nullptr &&
      std::strstr(resolved, "/pci") != nullptr) {
    nic->pci_path = resolved;
  }
  std::ifstream speed(base + "/speed");
  int mbps = 0;
  if (speed >> mbps && mbps > 0) nic->speed_mbps = mbps;
}

}  // namespace rs::plugin
