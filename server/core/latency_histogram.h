// A fixed-bucket histogram of durations for the data plane's per-piece
// timings (piece latency, straggler wait). Observing is a few relaxed atomic
// adds, no lock and no allocation, so I/O threads can record every piece;
// the control plane reads a snapshot when it is scraped.
//
// Thread-safe: Observe() and Snapshot() may be called from any thread. A
// snapshot taken while pieces complete may be a few observations behind in
// some buckets, but its count always equals the sum of its buckets.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace rs::server {

struct HistogramSnapshot {
  std::vector<double> upper_bounds;   // seconds, ascending; +Inf is implied
  std::vector<uint64_t> cumulative;   // per bound, observations <= bound
  uint64_t count = 0;                 // all observations (the +Inf bucket)
  double sum_seconds = 0;
};

class LatencyHistogram {
 public:
  // 100 us to 60 s: from a small piece on a quiet LAN to an op timeout.
  static constexpr std::array<double, 18> kBoundsSeconds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0, 30.0,  60.0};

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Negative durations (clock skew between injected times) count as zero.
  void Observe(std::chrono::nanoseconds duration);
  HistogramSnapshot Snapshot() const;

 private:
  // Per-bucket (not cumulative) counts; the last one is +Inf.
  std::array<std::atomic<uint64_t>, kBoundsSeconds.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace rs::server
