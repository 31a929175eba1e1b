// What the kernel has measured on a connected TCP socket's path (TCP_INFO):
// the smallest round-trip time seen and the latest delivery-rate sample.
// Linux only (elsewhere it reports nothing). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace rs {

struct TcpPath {
  uint32_t min_rtt_us = 0;          // tcpi_min_rtt; 0: not measured yet
  uint64_t delivery_rate_bps = 0;   // tcpi_delivery_rate, bytes per second; 0: none yet
};

// nullopt where TCP_INFO is not available (not a TCP socket, old kernel).
std::optional<TcpPath> ReadTcpPath(int fd);

}  // namespace rs
