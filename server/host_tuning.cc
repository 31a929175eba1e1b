#include "server/host_tuning.h"

#include <fstream>

namespace rs::server {

std::vector<std::string> HostTuningNotices(const std::string& slow_start_after_idle_path) {
  std::vector<std::string> notices;
  std::ifstream in(slow_start_after_idle_path);
  int value = 0;
  if (in >> value && value != 0) {
    notices.push_back(
        "net.ipv4.tcp_slow_start_after_idle is " + std::to_string(value) +
        ": a connection idle for longer than its retransmission timeout (a training step's forward pass on a "
        "long path) restarts with a smaller window. To keep it, run "
        "sysctl -w net.ipv4.tcp_slow_start_after_idle=0 on the reducers and the workers (README: Tuning the network)");
  }
  return notices;
}

}  // namespace rs::server
