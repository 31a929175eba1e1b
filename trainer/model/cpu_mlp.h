// The MLP's forward and backward passes on the CPU, for the CPU backend and
// the --verify reference (which must compute exactly what a rank computes,
// so both use this one class). Parameters and gradients are flat buffers in
// MlpLayout's order; all arithmetic is float32 through cpu_math.h, and the
// loss is summed in float64 in a fixed order.
//
// Thread-safety: one CpuMlp per thread (it keeps the activations of the last
// Forward for Backward).
#pragma once

#include <functional>
#include <vector>

#include "common/status.h"
#include "trainer/data/synthetic.h"
#include "trainer/model/mlp_layout.h"

namespace rs::trainer {

class CpuMlp {
 public:
  explicit CpuMlp(MlpLayout layout) : layout_(std::move(layout)) {}

  // Runs the model on the batch and returns the mean squared error over
  // every output of every example. Keeps what Backward needs; `batch` must
  // outlive the Backward call.
  double Forward(const float* params, const Batch& batch);

  // Writes d(loss)/d(params) of the last Forward into `grads` (every element
  // is written), layer by layer from the last to the first, and calls
  // layer_done(l) as soon as layer l's weight and bias gradients are final,
  // before the earlier layers are computed. Stops at the first error
  // layer_done returns, and returns it.
  Status Backward(const float* params, float* grads, const std::function<Status(int layer)>& layer_done);

  const MlpLayout& layout() const { return layout_; }

 private:
  MlpLayout layout_;
  const Batch* batch_ = nullptr;
  // acts_[l] is the input of layer l for l >= 1 (ReLU output of layer l-1);
  // layer 0's input is the batch. acts_[depth] is the model's output.
  std::vector<std::vector<float>> acts_;
  std::vector<float> grad_, grad_prev_, scratch_t_, scratch_in_t_;
};

}  // namespace rs::trainer
