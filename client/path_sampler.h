// What one stream to a reducer learns of its TCP path, from TCP_INFO sampled
// as results arrive: the automatic send window and write slice follow it
// (SendWindow, transport_plan.h), the time TCP waited on a buffer is totalled
// and warned about when a buffer holds the stream back (tcp_waits.h), and
// the retransmission timeout's floor follows the path's round trip
// (RtoFloorFollower, tcp_tuning.h). ReducerStream (reducer_stream.h) reads
// the socket and logs what this returns; samples can also be fed to OnPath
// directly, so everything but the socket reads is tested without one.
//
// Threading: the stream's I/O thread calls everything but window_now() and
// tcp_waits(), which any thread may call (the client's metrics read them).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/transport_plan.h"
#include "common/clock.h"
#include "common/tcp_path.h"
#include "common/tcp_tuning.h"
#include "common/tcp_waits.h"

namespace rs::client {

class PathSampler {
 public:
  // A line for the stream's owner to log.
  struct LogLine {
    LogLevel level = LogLevel::kInfo;
    std::string message;
  };

  // `peer` names the stream in warnings ("reducer 10.0.0.5:7450 (stream
  // 1)"); `send_window_bytes` is the user's window (nullopt: automatic, see
  // SendWindow); `rto_min` the configured floor (TcpTuning::rto_min), which
  // a connection's floor starts from.
  PathSampler(std::string peer, std::optional<size_t> send_window_bytes, size_t piece_bytes,
              std::chrono::milliseconds rto_min);
  PathSampler(const PathSampler&) = delete;
  PathSampler& operator=(const PathSampler&) = delete;

  // A new connection on `fd`: TCP's counters start again from 0, and the
  // floor is raised at once from the handshake's round trip (why not later:
  // tcp_tuning.h).
  std::vector<LogLine> Connected(int fd);
  // Samples `fd`'s path when a sample is due (at most one per
  // SendWindow::kSampleInterval: results arrive far more often).
  std::vector<LogLine> Sample(int fd, Clock::time_point now);
  // One sample of the path. `fd`: the socket whose floor follows the path
  // and whose send buffer a warning names (-1: none).
  std::vector<LogLine> OnPath(const TcpPath& path, Clock::time_point now, int fd);
  bool due(Clock::time_point now) const { return window_.WantSample(now); }

  // The send window now (0: no limit) and the write slice (0: not known),
  // for the stream's writes.
  size_t window_bytes() const { return window_.bytes(); }
  size_t write_slice() const { return window_.write_slice(); }
  // window_bytes() as of the last sample; any thread.
  size_t window_now() const { return window_now_.load(std::memory_order_relaxed); }
  // What TCP waited for on the stream's connections, so far; any thread.
  TcpWaitTotals tcp_waits() const {
    return {busy_us_.load(std::memory_order_relaxed), rwnd_limited_us_.load(std::memory_order_relaxed),
            sndbuf_limited_us_.load(std::memory_order_relaxed)};
  }

 private:
  const std::string peer_;
  const std::chrono::milliseconds rto_min_;
  SendWindow window_;
  std::atomic<size_t> window_now_{0};
  TcpWaitWatch waits_;  // warns when a buffer holds the stream back
  // Reset per connection; inactive until the first (a configured floor of 0).
  RtoFloorFollower rto_floor_{std::chrono::milliseconds(0)};
  std::atomic<uint64_t> busy_us_{0};
  std::atomic<uint64_t> rwnd_limited_us_{0};
  std::atomic<uint64_t> sndbuf_limited_us_{0};
};

}  // namespace rs::client
