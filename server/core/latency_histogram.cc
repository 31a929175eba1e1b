#include "server/core/latency_histogram.h"

#include <algorithm>

namespace rs::server {

void LatencyHistogram::Observe(std::chrono::nanoseconds duration) {
  const int64_t ns = std::max<int64_t>(duration.count(), 0);
  const double seconds = static_cast<double>(ns) / 1e9;
  // Bucket i holds (bound[i-1], bound[i]], as Prometheus' "le" means.
  const auto it = std::lower_bound(kBoundsSeconds.begin(), kBoundsSeconds.end(), seconds);
  buckets_[static_cast<size_t>(it - kBoundsSeconds.begin())].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

HistogramSnapshot LatencyHistogram::Snapshot() const {
  HistogramSnapshot out;
  out.upper_bounds.assign(kBoundsSeconds.begin(), kBoundsSeconds.end());
  out.cumulative.reserve(kBoundsSeconds.size());
  uint64_t running = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    if (i < kBoundsSeconds.size()) out.cumulative.push_back(running);
  }
  out.count = running;
  out.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return out;
}

}  // namespace rs::server
