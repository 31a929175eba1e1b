// The forwarding core of rs-delay-line: every frame read from one end of a
// link is written to the other end after a fixed delay, both directions.
// The ends are file descriptors that read and write one whole frame per call
// (tap devices, or SOCK_SEQPACKET sockets in tests), non-blocking. A
// constant delay makes each direction a FIFO, bounded in bytes (a frame that
// does not fit is dropped and counted). Links are spread over threads, each
// an epoll loop with a timerfd armed for its earliest frame due: writing a
// frame runs the receiving side's kernel work (bridge, tbf, the receiving
// host's TCP) in the writer, which is too much for one thread on a busy
// machine.
//
// Thread safety: Run() once, from one thread; Stats() after Run() returned.
// The link fds stay the caller's and must outlive the DelayLine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/netns/tap_device.h"
#include "common/status.h"

namespace rs::delay_line {

// "20ms", "500us", "0.02s", "0": microseconds resolved, at most 60 s; a unit
// is required except for 0 (tc reads a bare number as microseconds, people
// as milliseconds). Nanoseconds.
StatusOr<int64_t> ParseDelay(const std::string& text);

// How late frames were written after their due time, in power-of-two
// microsecond buckets (bucket 0: under 1 us; bucket i: [2^(i-1), 2^i) us).
struct Lateness {
  static constexpr int kBuckets = 28;
  uint64_t counts[kBuckets] = {};
  int64_t sum_ns = 0, max_ns = 0;
  uint64_t total = 0;

  void Add(int64_t ns);
  void Merge(const Lateness& o);
  // An upper bound of the q-quantile, in microseconds.
  int64_t QuantileUs(double q) const;
};

struct LinkEnds {
  int a = -1, b = -1;
  std::string a_name, b_name;  // for the statistics: "netns:ifname"
};

struct DirectionStats {
  std::string name;                    // "from->to"
  uint64_t frames = 0, bytes = 0;      // forwarded
  uint64_t drops = 0, drop_bytes = 0;  // did not fit in the queue
  uint64_t write_errors = 0;           // the kernel refused a frame (e.g. the device was down)
  int last_write_errno = 0;
  uint64_t max_queued_bytes = 0;
  uint64_t left_queued = 0;  // frames still waiting when stopped
  Lateness late;             // written after the due time: the delay line's own error
};

struct DelayLineOptions {
  int64_t delay_ns = 0;
  uint64_t queue_limit = uint64_t{64} << 20;  // bytes per direction
  int threads = 1;                            // at most one per link
  // SCHED_FIFO priority of the forwarding threads (0: ordinary scheduling).
  // It stands in for the kernel's packet processing, which runs ahead of
  // processes; as an ordinary process it waits behind them and frames leave late.
  int rt_priority = 0;
  // Told when rt_priority cannot be had (e.g. not permitted); Run goes on.
  std::function<void(const std::string&)> warn;
};

class Shard;

class DelayLine {
 public:
  static StatusOr<std::unique_ptr<DelayLine>> Create(const DelayLineOptions& o, const std::vector<LinkEnds>& links);
  ~DelayLine();
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;

  // Forwards until `stop_fd` becomes readable (a signalfd, an eventfd) or a
  // thread fails; returns that thread's error, else Ok.
  Status Run(int stop_fd);
  // Two per link, a->b then b->a, links in the order given.
  std::vector<DirectionStats> Stats() const;
  int threads() const { return static_cast<int>(shards_.size()); }

 private:
  DelayLine() = default;
  void StopAndJoin();

  DelayLineOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<std::pair<int, int>> link_slots_;  // link k: (shard, index of its first direction there)
  Fd stop_;                                      // eventfd: readable once the threads must stop
  Fd failed_;                                    // eventfd: a thread failed
  std::vector<std::thread> threads_;
};

}  // namespace rs::delay_line
