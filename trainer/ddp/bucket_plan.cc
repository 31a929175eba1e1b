#include "trainer/ddp/bucket_plan.h"

#include <algorithm>

namespace rs::trainer {

BucketPlan::BucketPlan(const MlpLayout& layout, size_t cap_bytes, size_t first_cap_bytes)
    : ready_(static_cast<size_t>(layout.depth())) {
  const std::vector<ParamTensor>& tensors = layout.tensors();
  Bucket open;
  bool has_open = false;
  auto close = [&] {
    open.index = buckets_.size();
    ready_[open.ready_after_layer].push_back(open.index);
    largest_ = std::max(largest_, open.count);
    buckets_.push_back(open);
    has_open = false;
  };
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (!has_open) {
      open = Bucket{0, it->offset + it->count, 0, it->layer};
      has_open = true;
    }
    // Tensors come in descending offsets, so the bucket grows downwards.
    open.offset = it->offset;
    open.count += it->count;
    open.ready_after_layer = it->layer;
    const size_t cap = std::max<size_t>(1, buckets_.empty() ? std::min(first_cap_bytes, cap_bytes) : cap_bytes);
    if (open.count * sizeof(float) >= cap) close();
  }
  if (has_open) close();
}

}  // namespace rs::trainer
