// What this machine offers the data plane (the cores this process may use
// and the speed of the link its bytes leave by), and the one rule that turns
// them into a number of I/O threads, for the client and for reducerd alike.
//
// One I/O thread moves about kIoThreadBytesPerSecond each way (measured on
// its own core: bench/cpu_scaling.sh, docs/performance.md "Defaults that
// scale with the machine"), so a 100 Gbit/s node needs about nine and a
// 1 Gbit/s one needs one. The threads are capped at half the usable cores:
// the other half is the training process's (client) or the kernel's
// network stack (reducer). Where the link reports no speed (loopback, most
// virtual NICs), the cores alone decide, up to kUnknownLinkThreads.
//
// The readers take their file roots as arguments so tests can feed made-up
// trees; the rule is a pure function. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rs {

inline constexpr uint64_t kIoThreadBytesPerSecond = 1'500'000'000;
inline constexpr int kUnknownLinkThreads = 8;
inline constexpr int kMaxAutoIoThreads = 16;

// A cgroup's CPU limit in cores: cgroup v2's cpu.max ("QUOTA PERIOD" or
// "max PERIOD"), or cgroup v1's cfs_quota_us and cfs_period_us (-1: none).
// nullopt when there is no limit or the text is not understood.
std::optional<double> ParseCgroupV2CpuMax(std::string_view text);
std::optional<double> ParseCgroupV1Quota(std::string_view quota_us, std::string_view period_us);

// The cores this process may run on: its affinity mask (taskset, a
// container's cpuset), lowered to a cgroup CPU quota rounded up (docker
// --cpus, Kubernetes CPU limits). At least 1. `cgroup_root` holds cpu.max
// (v2) or cpu/cpu.cfs_quota_us (v1).
int UsableCores(const std::string& cgroup_root = "/sys/fs/cgroup");

// The speed an interface reports (/sys/class/net/IF/speed, in Mbit/s), in
// bits per second; nullopt where it reports none (loopback, a link that is
// down, most virtual devices report -1 or nothing).
std::optional<uint64_t> InterfaceBitsPerSecond(const std::string& name,
                                               const std::string& sysfs_net = "/sys/class/net");

// The interface holding `address` (numeric IPv4 or IPv6; a name: the one
// its first address routes through), or for a wildcard address (0.0.0.0,
// ::, empty) the fastest interface that is up, not loopback and reports a
// speed. nullopt when none matches.
std::optional<std::string> InterfaceForLocalAddress(const std::string& address,
                                                    const std::string& sysfs_net = "/sys/class/net");

// The interface the kernel routes to `host` through (a UDP socket connected
// to its first address: no packet is sent). nullopt when the name does not
// resolve or no route exists.
std::optional<std::string> InterfaceTowards(const std::string& host);

struct HostCapacity {
  int cores = 1;
  std::optional<uint64_t> link_bits_per_second;
  std::string link;  // "eth0 (/sys/class/net/eth0/speed)", "REDUCER_NIC_SPEED", or why it is unknown
};

// This machine as the rule sees it: its usable cores, and the speed of
// `nic` where it reports one; `if_none` says why there is no interface.
HostCapacity CapacityWith(const std::optional<std::string>& nic, const std::string& if_none);

struct IoThreadChoice {
  int threads = 1;
  int wanted = 1;      // before the caller's cap (`useful`)
  bool from_link = false;  // the link's speed decided `wanted` (not the cores alone)
  std::string reason;  // for the start-up log: the inputs and which one decided
};

// The rule above. `useful` caps the threads at what the caller can keep
// busy (the client's streams: a stream stays on one thread); `useful_what`
// names it and how to raise it, for the reason. useful <= 0: no cap.
IoThreadChoice AutoIoThreads(const HostCapacity& host, int useful = 0, std::string_view useful_what = "");

// "25 Gbit/s", "800 Mbit/s".
std::string FormatLinkSpeed(uint64_t bits_per_second);

}  // namespace rs
