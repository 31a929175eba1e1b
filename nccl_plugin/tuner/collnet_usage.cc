#include "nccl_plugin/tuner/collnet_usage.h"

#include <cinttypes>
#include <cstdio>

#include "common/units.h"
#include "nccl_plugin/report/report.h"

namespace rs::plugin {
namespace {

constexpr size_t kFirstClassBytes = 4 << 10;
constexpr const char* kRouteNames[CollNetUsage::kNumRoutes] = {"to the reducers", "to NCCL's own algorithms",
                                                               "with CollNet not offered by NCCL"};

size_t ClassStart(int c) { return c == 0 ? 0 : kFirstClassBytes << (4 * (c - 1)); }

}  // namespace

CollNetUsage::CollNetUsage(uint64_t comm_id, uint64_t check_after)
    : comm_id_(comm_id), check_after_(check_after > 0 ? check_after : 1) {}

int CollNetUsage::SizeClass(size_t bytes) {
  int c = 0;
  while (c + 1 < kNumSizeClasses && bytes >= ClassStart(c + 1)) ++c;
  return c;
}

void CollNetUsage::Record(size_t bytes, Route route) {
  counts_[SizeClass(bytes)][static_cast<int>(route)].fetch_add(1, std::memory_order_relaxed);
  const uint64_t seen = seen_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (seen == check_after_) Check(seen, /*at_end=*/false);
}

void CollNetUsage::Finish() {
  const uint64_t seen = seen_.load(std::memory_order_relaxed);
  if (seen > 0 && seen < check_after_) Check(seen, /*at_end=*/true);
}

uint64_t CollNetUsage::Count(int size_class, Route route) const {
  return counts_[size_class][static_cast<int>(route)].load(std::memory_order_relaxed);
}

std::string CollNetUsage::Histogram() const {
  std::string out;
  for (int c = 0; c < kNumSizeClasses; ++c) {
    std::string routes;
    for (int r = 0; r < kNumRoutes; ++r) {
      const uint64_t n = Count(c, static_cast<Route>(r));
      if (n > 0) routes += (routes.empty() ? "" : ", ") + std::to_string(n) + " " + kRouteNames[r];
    }
    if (routes.empty()) continue;
    const std::string range = c == 0 ? "below " + FormatBytes(ClassStart(1))
                              : c + 1 == kNumSizeClasses
                                  ? FormatBytes(ClassStart(c)) + " and up"
                                  : FormatBytes(ClassStart(c)) + " - " + FormatBytes(ClassStart(c + 1));
    out += (out.empty() ? "" : "; ") + range + ": " + routes;
  }
  return out;
}

void CollNetUsage::Check(uint64_t seen, bool at_end) {
  if (checked_.exchange(true, std::memory_order_relaxed)) return;
  uint64_t by_route[kNumRoutes] = {};
  for (int c = 0; c < kNumSizeClasses; ++c) {
    for (int r = 0; r < kNumRoutes; ++r) by_route[r] += Count(c, static_cast<Route>(r));
  }
  if (by_route[static_cast<int>(Route::kReducers)] > 0) return;
  char head[160];
  std::snprintf(head, sizeof(head),
                "communicator %016" PRIx64 ": none of its %s%" PRIu64 " all-reduces went to the reducers. By size: ",
                comm_id_, at_end ? "" : "first ", seen);
  std::string message = head + Histogram() + ".";
  if (by_route[static_cast<int>(Route::kNccl)] > 0) {
    message +=
        " The tuner's cost model found NCCL's own algorithms faster at these sizes (its INFO line 'tuner: ...' "
        "says where the reducers win; with 2 nodes of one GPU each they never do). Fix, to use the reducers "
        "anyway: NCCL_ALGO=allreduce:collnetchain; where the model finds the reducers too few, more reducers.";
  }
  if (by_route[static_cast<int>(Route::kNotOffered)] > 0) {
    message +=
        " NCCL offered no CollNet algorithm for some: CollNet is off for this communicator (a CollNet connect "
        "that failed: see the WARN lines before; NCCL_ALGO set without collnetchain; or a communicator split "
        "from one on the same nodes, which needs NCCL_COMM_SPLIT_SHARE_RESOURCES=1 for CollNet).";
  }
  ReportWarn(message);
}

}  // namespace rs::plugin
