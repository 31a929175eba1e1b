#include "trainer/checks/reference.h"

#include <bit>
#include <cstdio>

#include "kernels/kernels.h"

namespace rs::trainer {

Reference::Reference(ReferenceConfig config)
    : config_(std::move(config)),
      data_(config_.layout.shape(), config_.seed),
      mlp_(config_.layout),
      params_(std::move(config_.initial_params)),
      momentum_(params_.size()),
      sum_(params_.size()),
      grads_(config_.world, std::vector<float>(params_.size())) {
  if (config_.grad_dtype == DataType::kBfloat16) {
    grads_bf16_.assign(config_.world, std::vector<uint16_t>(config_.plan.largest_count()));
    sum_bf16_.resize(config_.plan.largest_count());
  }
  if (config_.wire != DataType::kFloat32) narrowed_.resize(config_.plan.largest_count());
}

void Reference::RoundAsOnTheWire(float* values, size_t count) {
  // Where a value does not fit, the wire carries it in float32 (kernels.h).
  kernels::NarrowFloat32(config_.wire, values, narrowed_.data(), count);
  kernels::WidenWhereFinite(config_.wire, narrowed_.data(), values, count);
}

double Reference::Step(uint64_t step) {
  double loss_sum = 0;
  for (uint32_t r = 0; r < config_.world; ++r) {
    data_.MakeBatch(r, step, config_.batch, &batch_);
    loss_sum += mlp_.Forward(params_.data(), batch_);
    (void)mlp_.Backward(params_.data(), grads_[r].data(), [](int) { return Status::Ok(); });
  }
  std::vector<const void*> inputs(config_.world);
  for (const Bucket& b : config_.plan.buckets()) {
    if (config_.grad_dtype == DataType::kBfloat16) {
      for (uint32_t r = 0; r < config_.world; ++r) {
        ToBfloat16(grads_[r].data() + b.offset, grads_bf16_[r].data(), b.count);
        inputs[r] = grads_bf16_[r].data();
      }
      kernels::Reduce(DataType::kBfloat16, ReduceOp::kSum, sum_bf16_.data(), inputs.data(), inputs.size(), b.count);
      FromBfloat16(sum_bf16_.data(), sum_.data() + b.offset, b.count);
    } else {
      const bool wire = config_.wire != DataType::kFloat32;
      for (uint32_t r = 0; r < config_.world; ++r) {
        if (wire) RoundAsOnTheWire(grads_[r].data() + b.offset, b.count);
        inputs[r] = grads_[r].data() + b.offset;
      }
      kernels::Reduce(DataType::kFloat32, ReduceOp::kSum, sum_.data() + b.offset, inputs.data(), inputs.size(),
                      b.count);
      if (wire) RoundAsOnTheWire(sum_.data() + b.offset, b.count);
    }
  }
  AverageAndStep(params_.data(), momentum_.data(), sum_.data(), params_.size(), config_.world, config_.sgd);
  // Summed in rank order, as the reported mean is.
  return loss_sum / config_.world;
}

Status Reference::Compare(const std::vector<float>& params, uint64_t step) const {
  if (params.size() != params_.size()) return Status(Code::kInternal, "--verify: parameter count differs");
  for (size_t i = 0; i < params.size(); ++i) {
    const uint32_t got = std::bit_cast<uint32_t>(params[i]), want = std::bit_cast<uint32_t>(params_[i]);
    if (got == want) continue;
    char buf[160];
    std::snprintf(buf, sizeof(buf), "is %.9g (0x%08x), the reference has %.9g (0x%08x)", params[i], got, params_[i],
                  want);
    return Status(Code::kMismatch, "--verify: after step " + std::to_string(step) + ", " + config_.layout.Describe(i) +
                                       " " + buf + ": the all-reduced gradients are not the rank-order sum");
  }
  return Status::Ok();
}

}  // namespace rs::trainer
