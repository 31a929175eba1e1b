#include "bench/workloads.h"

#include <algorithm>
#include <sstream>

#include "common/units.h"

namespace rs::bench {
namespace {

constexpr uint32_t kChannelsPerCall = 8;  // NCCL's COLLNET_GROUP_NSUBS
constexpr uint32_t kStepsInFlight = 8;    // NCCL_STEPS

}  // namespace

StatusOr<Pattern> ParsePattern(const std::string& name) {
  if (name == "sweep") return Pattern::kSweep;
  if (name == "collnet") return Pattern::kCollNet;
  if (name == "ddp") return Pattern::kDdp;
  return Status(Code::kInvalidArgument, "--pattern: unknown pattern '" + name + "'; use sweep, collnet or ddp");
}

const char* PatternName(Pattern pattern) {
  switch (pattern) {
    case Pattern::kSweep: return "sweep";
    case Pattern::kCollNet: return "collnet";
    case Pattern::kDdp: return "ddp";
  }
  return "?";
}

uint64_t CollNetChunkBytes(uint64_t user_bytes, uint32_t channels) {
  const uint64_t c = std::max<uint32_t>(channels, 1);
  uint64_t chunk = 256 << 10;
  while (user_bytes / (c * chunk) < 64 && chunk > (128 << 10)) chunk /= 2;
  while (user_bytes / (c * chunk) < 8 && chunk > (64 << 10)) chunk /= 2;
  while (user_bytes / (c * chunk) < 1 && chunk > (32 << 10)) chunk /= 2;
  return chunk;
}

CollNetShape ShapeCollNet(uint64_t user_bytes, uint32_t channels, uint64_t chunk_bytes) {
  CollNetShape shape;
  shape.user_bytes = user_bytes;
  shape.channels = std::clamp<uint32_t>(channels, 1, 64);
  shape.chunk_bytes = chunk_bytes > 0 ? chunk_bytes : CollNetChunkBytes(user_bytes, shape.channels);
  const uint32_t groups = (shape.channels + kChannelsPerCall - 1) / kChannelsPerCall;
  shape.max_inflight = groups * kStepsInFlight;
  if (user_bytes == 0) return shape;
  // Every channel runs the same number of steps: the loop over the buffer
  // moves channels x chunk bytes per step.
  const uint64_t per_step = uint64_t{shape.channels} * shape.chunk_bytes;
  const uint64_t steps = (user_bytes + per_step - 1) / per_step;
  for (uint64_t step = 0; step < steps; ++step) {
    for (uint32_t g = 0; g < groups; ++g) {
      const uint32_t in_group = std::min(kChannelsPerCall, shape.channels - g * kChannelsPerCall);
      shape.calls.push_back(uint64_t{in_group} * shape.chunk_bytes);
      shape.wire_bytes += shape.calls.back();
    }
  }
  return shape;
}

std::vector<uint64_t> DdpBuckets(uint64_t model_bytes, uint64_t bucket_bytes, uint64_t first_bucket_bytes,
                                 size_t elem_size) {
  std::vector<uint64_t> out;
  if (elem_size == 0) return out;
  const auto whole = [elem_size](uint64_t bytes) { return std::max<uint64_t>(bytes / elem_size, 1) * elem_size; };
  uint64_t left = model_bytes / elem_size * elem_size;
  uint64_t cap = whole(first_bucket_bytes);
  while (left > 0) {
    const uint64_t take = std::min(left, cap);
    out.push_back(take);
    left -= take;
    cap = whole(bucket_bytes);
  }
  return out;
}

StatusOr<std::vector<uint64_t>> ParseSizeList(const std::string& text) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    auto size = ParseSize(item);
    if (!size.ok()) return size.status();
    if (*size == 0) return Status(Code::kInvalidArgument, "a size of 0 bytes in '" + text + "'");
    out.push_back(*size);
  }
  if (out.empty()) return Status(Code::kInvalidArgument, "no size given");
  return out;
}

}  // namespace rs::bench
