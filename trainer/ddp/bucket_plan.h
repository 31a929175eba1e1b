// How gradients are grouped for all-reduce, the way PyTorch DDP does it:
// parameter tensors in the order backward produces their gradients (last
// layer first) are packed into a bucket until it holds `cap_bytes` or more
// (the first bucket closes at `first_cap_bytes`, so communication starts
// early); a tensor is never split, so a bucket may pass its cap by the size
// of its last tensor.
// Because backward walks the flat buffer from its end, every bucket is one
// contiguous range of it. A bucket can be all-reduced as soon as the layer
// holding its earliest tensor has its gradients.
//
// Pure and immutable; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "trainer/model/mlp_layout.h"

namespace rs::trainer {

struct Bucket {
  size_t index = 0;   // 0 is all-reduced first
  size_t offset = 0;  // elements, in the flat gradient buffer
  size_t count = 0;
  int ready_after_layer = 0;  // complete once this layer's backward is done
};

class BucketPlan {
 public:
  // DDP's first bucket cap (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES).
  static constexpr size_t kFirstBucketBytes = size_t{1} << 20;

  // Sizes are of the float32 gradients; caps of 0 are taken as 1 byte (one
  // tensor per bucket).
  BucketPlan(const MlpLayout& layout, size_t cap_bytes, size_t first_cap_bytes = kFirstBucketBytes);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Buckets that become complete when `layer`'s gradients are done, in the
  // order to start them.
  const std::vector<size_t>& ReadyAfterLayer(int layer) const { return ready_[layer]; }
  size_t largest_count() const { return largest_; }

 private:
  std::vector<Bucket> buckets_;
  std::vector<std::vector<size_t>> ready_;
  size_t largest_ = 0;
};

}  // namespace rs::trainer
