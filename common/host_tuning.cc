#include "common/host_tuning.h"

#include <atomic>
#include <cstdio>
#include <fstream>

namespace rs {

std::optional<int> ReadSlowStartAfterIdle(const std::string& path) {
  std::ifstream in(path);
  int value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

std::vector<std::string> HostTuningNotices(const std::string& slow_start_after_idle_path) {
  std::vector<std::string> notices;
  const std::optional<int> value = ReadSlowStartAfterIdle(slow_start_after_idle_path);
  if (value && *value != 0) {
    notices.push_back(
        "net.ipv4.tcp_slow_start_after_idle is " + std::to_string(*value) +
        ": a connection idle for longer than its retransmission timeout (a training step's forward pass on a "
        "long path) restarts with a smaller window. To keep it, run "
        "sysctl -w net.ipv4.tcp_slow_start_after_idle=0 on the reducers and the workers (docs/guide/tuning.md)");
  }
  return notices;
}

std::optional<std::string> IdleRestartWarning(std::optional<int> slow_start_after_idle,
                                              std::chrono::microseconds min_rtt, const std::string& peer) {
  if (!slow_start_after_idle || *slow_start_after_idle == 0 || min_rtt < kIdleRestartRoundTrip) return std::nullopt;
  char rtt[32];
  std::snprintf(rtt, sizeof(rtt), "%.1f ms", static_cast<double>(min_rtt.count()) / 1e3);
  return "the round trip to " + peer + " is " + rtt + " and this host's net.ipv4.tcp_slow_start_after_idle is " +
         std::to_string(*slow_start_after_idle) +
         ": after every pause longer than the retransmission timeout (a training step's forward pass) the "
         "connections start again from a small window and take several round trips to reach the line rate. Run "
         "sysctl -w net.ipv4.tcp_slow_start_after_idle=0 on the workers and the reducers (docs/guide/tuning.md)";
}

std::optional<std::string> IdleRestartWarningOnce(std::chrono::microseconds min_rtt,
                                                  const std::function<std::string()>& peer) {
  static std::atomic<bool> warned{false};
  if (min_rtt < kIdleRestartRoundTrip || warned.load(std::memory_order_relaxed)) return std::nullopt;
  static const std::optional<int> setting = ReadSlowStartAfterIdle();
  if (!setting || *setting == 0 || warned.exchange(true)) return std::nullopt;
  return IdleRestartWarning(setting, min_rtt, peer());
}

}  // namespace rs
