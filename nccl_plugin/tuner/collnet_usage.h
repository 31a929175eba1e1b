// The last case of "no silent fallback" (report/collnet_watch.h): CollNet is
// available to a communicator, yet no all-reduce reaches the reducers. The
// tuner sees every all-reduce NCCL plans (getCollInfo, with its size) and,
// from the cost table after its own change, what NCCL will pick; this keeps
// a small histogram of that by size class and route. When none of the first
// kCheckAfter all-reduces (or, at the communicator's end, none of fewer)
// went to the reducers, it warns once for the communicator, saying which
// sizes went where and why.
//
// Per all-reduce it costs two relaxed atomic increments; the check runs
// once, on the thread whose all-reduce reaches the count.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rs::plugin {

class CollNetUsage {
 public:
  enum class Route : int {
    kReducers,    // NCCL picks CollNet
    kNccl,        // CollNet offered, NCCL picks its own (the tuner's choice)
    kNotOffered,  // NCCL offered no CollNet algorithm for it
  };
  static constexpr int kNumRoutes = 3;
  // Below 4 KiB, then x16 each: 64 KiB, 1 MiB, 16 MiB, 256 MiB, and above.
  static constexpr int kNumSizeClasses = 6;
  static constexpr uint64_t kCheckAfter = 1000;

  explicit CollNetUsage(uint64_t comm_id, uint64_t check_after = kCheckAfter);
  CollNetUsage(const CollNetUsage&) = delete;
  CollNetUsage& operator=(const CollNetUsage&) = delete;

  // One all-reduce of `bytes`, going `route`.
  void Record(size_t bytes, Route route);
  // At the communicator's end: the check, if it has not run yet.
  void Finish();

  uint64_t Count(int size_class, Route route) const;
  // "below 4 KiB: 12 to NCCL's own algorithms; 1 MiB - 16 MiB: 3 with CollNet
  // not offered", non-empty classes only.
  std::string Histogram() const;
  static int SizeClass(size_t bytes);

 private:
  void Check(uint64_t seen, bool at_end);

  const uint64_t comm_id_;
  const uint64_t check_after_;
  std::atomic<uint64_t> counts_[kNumSizeClasses][kNumRoutes] = {};
  std::atomic<uint64_t> seen_{0};
  std::atomic<bool> checked_{false};
};

}  // namespace rs::plugin
