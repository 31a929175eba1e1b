#include "common/host_capacity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace rs {
namespace {

std::optional<std::string> ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<double> ParseNumber(std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return std::nullopt;
  while (*end == ' ' || *end == '\n' || *end == '\t') ++end;
  if (*end != '\0') return std::nullopt;
  return v;
}

int AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The cgroup v2 folders whose cpu.max limits this process: the mount's root
// (a container with its own cgroup namespace sees its cgroup there) and
// every folder on the path /proc/self/cgroup names ("0::/a/b").
std::vector<std::string> CgroupV2Folders(const std::string& root) {
  std::vector<std::string> out{root};
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    std::string folder = root;
    std::stringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '/')) {
      if (part.empty()) continue;
      folder += "/" + part;
      out.push_back(folder);
    }
  }
  return out;
}

std::optional<double> CgroupCores(const std::string& root) {
  std::optional<double> limit;
  const auto lower = [&](std::optional<double> v) {
    if (v && (!limit || *v < *limit)) limit = v;
  };
  for (const std::string& folder : CgroupV2Folders(root)) {
    if (auto text = ReadFirstLine(folder + "/cpu.max")) lower(ParseCgroupV2CpuMax(*text));
  }
  for (const char* v1 : {"/cpu", "/cpu,cpuacct"}) {
    auto quota = ReadFirstLine(root + v1 + "/cpu.cfs_quota_us");
    auto period = ReadFirstLine(root + v1 + "/cpu.cfs_period_us");
    if (quota && period) lower(ParseCgroupV1Quota(*quota, *period));
  }
  return limit;
}

// An interface's name for a local address; nullopt when no interface has it.
std::optional<std::string> InterfaceWithAddress(const sockaddr* want) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* it = list; it != nullptr && !found; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != want->sa_family) continue;
    if (want->sa_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      const auto* b = reinterpret_cast<const sockaddr_in*>(want);
      if (a->sin_addr.s_addr == b->sin_addr.s_addr) found = it->ifa_name;
    } else if (want->sa_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      const auto* b = reinterpret_cast<const sockaddr_in6*>(want);
      if (std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0) found = it->ifa_name;
    }
  }
  ::freeifaddrs(list);
  return found;
}

// The fastest interface that is up, not loopback, and reports a speed.
std::optional<std::string> FastestInterface(const std::string& sysfs_net) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> best;
  uint64_t best_bps = 0;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if ((it->ifa_flags & IFF_LOOPBACK) || !(it->ifa_flags & IFF_UP) || !(it->ifa_flags & IFF_RUNNING)) continue;
    const std::optional<uint64_t> bps = InterfaceBitsPerSecond(it->ifa_name, sysfs_net);
    if (bps && *bps > best_bps) {
      best_bps = *bps;
      best = it->ifa_name;
    }
  }
  ::freeifaddrs(list);
  return best;
}

}  // namespace

std::optional<double> ParseCgroupV2CpuMax(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view quota = text.substr(0, space);
  if (quota == "max") return std::nullopt;
  const std::optional<double> q = ParseNumber(quota);
  const std::optional<double> p = ParseNumber(text.substr(space + 1));
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return *q / *p;
}

std::optional<double> ParseCgroupV1Quota(std::string_view quota_us, std::string_view period_us) {
  const std::optional<double> q = ParseNumber(quota_us);
  const std::optional<double> p = ParseNumber(period_us);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;  // -1: no limit
  return *q / *p;
}

int UsableCores(const std::string& cgroup_root) {
  int cores = AffinityCores();
  if (const std::optional<double> quota = CgroupCores(cgroup_root)) {
    cores = std::min(cores, std::max(1, static_cast<int>(std::ceil(*quota - 1e-9))));
  }
  return std::max(cores, 1);
}

std::optional<uint64_t> InterfaceBitsPerSecond(const std::string& name, const std::string& sysfs_net) {
  if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  std::ifstream in(sysfs_net + "/" + name + "/speed");
  long long mbps = 0;
  if (!(in >> mbps) || mbps <= 0) return std::nullopt;
  return static_cast<uint64_t>(mbps) * 1'000'000;
}

std::optional<std::string> InterfaceForLocalAddress(const std::string& address, const std::string& sysfs_net) {
  sockaddr_storage ss{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    if (v4->sin_addr.s_addr == htonl(INADDR_ANY)) return FastestInterface(sysfs_net);
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)) return FastestInterface(sysfs_net);
  } else {
    return address.empty() ? FastestInterface(sysfs_net) : InterfaceTowards(address);
  }
  return InterfaceWithAddress(reinterpret_cast<const sockaddr*>(&ss));
}

std::optional<std::string> InterfaceTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || res == nullptr) return std::nullopt;
  std::optional<std::string> found;
  const int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      found = InterfaceWithAddress(reinterpret_cast<const sockaddr*>(&local));
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return found;
}

HostCapacity CapacityWith(const std::optional<std::string>& nic, const std::string& if_none) {
  HostCapacity host;
  host.cores = UsableCores();
  if (nic) {
    host.link_bits_per_second = InterfaceBitsPerSecond(*nic);
    host.link = *nic + (host.link_bits_per_second ? "" : " reports no speed");
  } else {
    host.link = if_none;
  }
  return host;
}

std::string FormatLinkSpeed(uint64_t bits_per_second) {
  const double g = static_cast<double>(bits_per_second) / 1e9;
  char text[32];
  if (g >= 1) {
    std::snprintf(text, sizeof(text), "%g Gbit/s", std::round(g * 10) / 10);
  } else {
    std::snprintf(text, sizeof(text), "%g Mbit/s", std::round(static_cast<double>(bits_per_second) / 1e6));
  }
  return text;
}

IoThreadChoice AutoIoThreads(const HostCapacity& host, int useful, std::string_view useful_what) {
  const int half = std::max(1, host.cores / 2);
  const std::string cores = "half of " + std::to_string(host.cores) + " usable core" + (host.cores == 1 ? "" : "s");
  IoThreadChoice out;
  if (host.link_bits_per_second) {
    const uint64_t bytes = *host.link_bits_per_second / 8;
    const int need = static_cast<int>(std::min<uint64_t>(
        (bytes + kIoThreadBytesPerSecond - 1) / kIoThreadBytesPerSecond, kMaxAutoIoThreads));
    out.threads = std::min(std::max(need, 1), half);
    out.from_link = true;
    out.reason = "the link (" + host.link + ", " + FormatLinkSpeed(*host.link_bits_per_second) + ") needs " +
                 std::to_string(std::max(need, 1)) + " at 1.5 GB/s each" +
                 (need > half ? ", held to " + cores : "; " + cores + " would allow " + std::to_string(half));
  } else {
    out.threads = std::min(half, kUnknownLinkThreads);
    out.reason = "the link's speed is unknown (" + host.link + "): " + cores +
                 (half > kUnknownLinkThreads ? ", at most " + std::to_string(kUnknownLinkThreads) : "");
  }
  out.threads = std::clamp(out.threads, 1, kMaxAutoIoThreads);
  out.wanted = out.threads;
  if (useful > 0 && out.threads > useful) {
    out.threads = useful;
    out.reason += "; capped at " + std::to_string(useful) + " by " + std::string(useful_what);
  }
  return out;
}

}  // namespace rs
