// What the kernel has measured on a connected TCP socket's path (TCP_INFO):
// the smallest round-trip time seen, the latest delivery-rate sample, and how
// long the connection has had data to send and, of that, how long it waited
// for the peer's receive window or for room in its own send buffer.
// Linux only (elsewhere it reports nothing). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace rs {

struct TcpPath {
  uint32_t min_rtt_us = 0;          // tcpi_min_rtt; 0: not measured yet
  uint64_t delivery_rate_bps = 0;   // tcpi_delivery_rate, bytes per second; 0: none yet
  // Since the connection opened, in the kernel's clock ticks (1 - 10 ms); all
  // 0 on a kernel older than 4.10. busy_us counts the time TCP had data
  // queued, the two waits included.
  uint64_t busy_us = 0;            // tcpi_busy_time
  // Bytes were queued, but the peer's advertised window had no room for
  // them: its receive buffer is small for the path, or the peer reads slowly.
  uint64_t rwnd_limited_us = 0;    // tcpi_rwnd_limited
  // Everything queued was sent and the congestion window had room, but the
  // writer could queue no more: the send buffer is full of unacknowledged
  // bytes, too small for the path's bandwidth-delay product.
  uint64_t sndbuf_limited_us = 0;  // tcpi_sndbuf_limited
};

// nullopt where TCP_INFO is not available (not a TCP socket, old kernel).
std::optional<TcpPath> ReadTcpPath(int fd);

}  // namespace rs
