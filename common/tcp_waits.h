// Whether a TCP connection's own buffers, not its path, set its pace. The
// kernel counts, per connection, how long TCP had data to send (busy) and, of
// that, how long it waited either for the peer's receive window to take the
// bytes queued, or, with everything queued sent, for the writer to queue more
// while the send buffer was full of unacknowledged bytes (TcpPath). On a long, fast path a
// buffer ceiling below the bandwidth-delay product shows up as one of these
// waits; on a LAN neither happens. A TcpWaitWatch judges one connection's
// counters over periods of kJudgedBusy of busy time and reports a wait that
// took kReportShare or more of a period, at most once per kQuiet per cause.
// A connection's first period is not judged: its receive buffer starts small
// and grows within the first round trips (autotuning), which on a long path
// shows as receive-window waits of 10 % or so in that period alone.
//
// A value type with no clock or I/O of its own; not thread-safe (one per
// connection, on the thread that samples it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/tcp_path.h"

namespace rs {

enum class TcpWait {
  kReceiveWindow,  // the peer's advertised window was full
  kSendBuffer,     // this socket's send buffer was full
};

struct TcpWaitFinding {
  TcpWait cause = TcpWait::kReceiveWindow;
  double share = 0;                      // of the busy time in the period judged
  std::chrono::microseconds busy{0};     // the period's busy time
  std::chrono::microseconds min_rtt{0};  // 0: not measured
  uint64_t delivery_bytes_per_second = 0;  // the latest sample; 0: none
};

// Totals over a watch's life (every connection it has seen).
struct TcpWaitTotals {
  uint64_t busy_us = 0;
  uint64_t rwnd_limited_us = 0;
  uint64_t sndbuf_limited_us = 0;
};

class TcpWaitWatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kJudgedBusy{2'000'000};
  static constexpr double kReportShare = 0.20;
  static constexpr std::chrono::minutes kQuiet{10};

  // A new connection: its counters start again from 0. The totals stay.
  void Reconnected() { have_base_ = false; }
  // `path`: the connection's counters now. A finding when one is due (the
  // larger of the two waits, when both are).
  std::optional<TcpWaitFinding> OnSample(const TcpPath& path, Clock::time_point now);
  const TcpWaitTotals& totals() const { return totals_; }

 private:
  bool have_base_ = false;
  bool warmed_up_ = false;  // the connection's first period is over
  TcpPath last_{};    // the latest sample of this connection
  TcpPath period_{};  // the counters where the period being judged began
  TcpWaitTotals totals_{};
  std::optional<Clock::time_point> reported_[2];  // per cause
};

// One line for a log, after the connection's name: the wait, its share of
// the period, the path as measured, and the setting that lifts the ceiling.
// `peer`: what is at the other end ("the reducer", "rank 3");
// `send_buffer_bytes`: this socket's send buffer now (0: not known).
std::string DescribeTcpWait(const TcpWaitFinding& finding, const std::string& peer, uint64_t send_buffer_bytes);

// SO_SNDBUF of a socket, the kernel's current size (autotuned unless set);
// 0 where it cannot be read.
uint64_t SendBufferBytes(int fd);

}  // namespace rs
