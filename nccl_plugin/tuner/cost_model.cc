#include "nccl_plugin/tuner/cost_model.h"

#include <algorithm>
#include <cstdio>

#include "common/units.h"

namespace rs::plugin {
namespace {

constexpr double kBytesPerUsPerGbps = 1e9 / 8 / 1e6;  // 125

}  // namespace

CostModel::CostModel(const CostModelParams& params) : params_(params) {
  link_bytes_per_us_ = std::max(params.link_gbps, 1e-3) * kBytesPerUsPerGbps;
  const double reducer_gbps = params.reducer_link_gbps > 0 ? params.reducer_link_gbps : params.link_gbps;
  reducer_bytes_per_us_ = std::max(reducer_gbps, 1e-3) * kBytesPerUsPerGbps;
}

size_t CostModel::CallBytes(size_t bytes) {
  return std::min(bytes, std::clamp(bytes / 8, kMinCallBytes, kMaxCallBytes));
}

double CostModel::ReducersUs(size_t bytes) const {
  const double s = static_cast<double>(bytes);
  const double n = std::max(params_.nodes, 1);
  const double r = std::max(params_.reducers, 1);
  const double transfer = std::max(s / link_bytes_per_us_, n * s / (r * reducer_bytes_per_us_));
  return 2 * kHopUs + kReducerTurnUs + transfer + static_cast<double>(CallBytes(bytes)) / link_bytes_per_us_;
}

double CostModel::RingUs(size_t bytes) const {
  const double s = static_cast<double>(bytes);
  const double n = std::max(params_.nodes, 1);
  const double ranks = std::max(params_.ranks, params_.nodes);
  return 2 * (n - 1) * kHopUs + 2 * (ranks - 1) / ranks * s / link_bytes_per_us_;
}

std::vector<size_t> CostModel::SwitchSizes(size_t lo, size_t hi) const {
  std::vector<size_t> out;
  if (lo < 1 || hi < lo) return out;
  size_t a = lo;
  while (a < hi) {
    const size_t b = a > hi / 2 ? hi : std::max(a * 2, a + 1);
    if (PreferReducers(a) != PreferReducers(b)) {
      // Smallest size in (a, b] decided like b.
      size_t l = a, h = b;
      while (h - l > 1) {
        const size_t m = l + (h - l) / 2;
        (PreferReducers(m) == PreferReducers(b) ? h : l) = m;
      }
      out.push_back(h);
    }
    a = b;
  }
  return out;
}

std::string CostModel::Describe() const {
  constexpr size_t kLo = 1, kHi = size_t{1} << 40;
  const std::vector<size_t> switches = SwitchSizes(kLo, kHi);
  char head[160];
  std::snprintf(head, sizeof(head), "%d node(s), %d rank(s), %d reducer(s), %.3g Gbit/s links: ", params_.nodes,
                params_.ranks, params_.reducers, params_.link_gbps);
  std::string out = head;
  bool reducers = PreferReducers(kLo);
  if (switches.empty()) {
    return out + (reducers ? "all-reduce through the reducers at every size"
                           : "NCCL's own algorithms at every size (the reducers would not be faster)");
  }
  out += "all-reduce through the reducers";
  size_t from = kLo;
  bool first = true;
  for (size_t i = 0; i <= switches.size(); ++i) {
    const size_t to = i < switches.size() ? switches[i] : 0;
    if (reducers) {
      out += first ? " " : ", ";
      out += to ? (from == kLo ? "below " + FormatBytes(to) : "from " + FormatBytes(from) + " to " + FormatBytes(to))
                : "from " + FormatBytes(from) + " up";
      first = false;
    }
    from = to;
    reducers = !reducers;
  }
  return out + ", NCCL's own algorithms otherwise";
}

}  // namespace rs::plugin
