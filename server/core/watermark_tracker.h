// The session's completion watermark on one reducer: each rank reports the
// operation below which everything has completed on it (on DATA frames and
// heartbeats); the session's watermark is the lowest of them, so below it
// every operation has completed on every rank and the workers may drop the
// copies they keep for a failover. Values only grow within an epoch; an
// installed epoch starts everyone at its first operation.
//
// Pure; not thread-safe (the session calls it under its mutex). Updating a
// rank costs O(1) unless it was the last one holding the minimum back, then
// O(world) once.
#pragma once

#include <cstdint>
#include <vector>

namespace rs::server {

class WatermarkTracker {
 public:
  explicit WatermarkTracker(uint32_t world) : values_(world, 0), at_min_(world) {}

  // Every rank at `start` (a new epoch).
  void Reset(uint64_t start) {
    std::fill(values_.begin(), values_.end(), start);
    min_ = start;
    at_min_ = static_cast<uint32_t>(values_.size());
  }

  // Returns true when the session's watermark moved.
  bool Report(uint32_t rank, uint64_t value) {
    if (rank >= values_.size() || value <= values_[rank]) return false;
    const bool was_min = values_[rank] == min_;
    values_[rank] = value;
    if (!was_min || --at_min_ > 0) return false;
    min_ = UINT64_MAX;
    for (uint64_t v : values_) min_ = std::min(min_, v);
    at_min_ = 0;
    for (uint64_t v : values_) at_min_ += v == min_ ? 1 : 0;
    return true;
  }

  uint64_t watermark() const { return min_; }

 private:
  std::vector<uint64_t> values_;
  uint64_t min_ = 0;
  uint32_t at_min_;  // ranks whose value equals min_
};

}  // namespace rs::server
