// The model the trainer trains: a multi-layer perceptron of `depth` linear
// layers (input_dim -> width -> ... -> width -> output_dim), ReLU between
// them, mean squared error at the end. Its width sets the gradient size.
//
// Every parameter lives in one flat float32 buffer (and every gradient in a
// buffer of the same layout), layer after layer: W0, b0, W1, b1, ... Each
// weight matrix is stored input-major, W[in][out] (row `i` holds the weights
// from input `i` to every output), so the forward product streams it row by
// row. Buckets of gradients are contiguous ranges of this buffer.
//
// Thread-safety: immutable value types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace rs::trainer {

struct MlpShape {
  int input_dim = 64;
  int width = 1024;
  int depth = 4;  // linear layers, at least 1
  int output_dim = 16;

  int LayerIn(int layer) const { return layer == 0 ? input_dim : width; }
  int LayerOut(int layer) const { return layer == depth - 1 ? output_dim : width; }
  // "4 layers 256-1024-1024-1024-16".
  std::string ToString() const;
};

// One parameter tensor: a layer's weights or its bias.
struct ParamTensor {
  int layer = 0;
  bool is_bias = false;
  size_t offset = 0;  // in elements, in the flat buffer
  size_t count = 0;
};

class MlpLayout {
 public:
  // Largest model accepted: 2^31 parameters (8 GiB of float32 gradients).
  static constexpr size_t kMaxParams = size_t{1} << 31;
  static constexpr int kMaxDim = 1 << 20;
  static constexpr int kMaxDepth = 1024;

  // kInvalidArgument naming the bad dimension, or a model over kMaxParams.
  static StatusOr<MlpLayout> Create(const MlpShape& shape);

  const MlpShape& shape() const { return shape_; }
  int depth() const { return shape_.depth; }
  size_t num_params() const { return num_params_; }
  size_t weight_offset(int layer) const { return tensors_[2 * layer].offset; }
  size_t bias_offset(int layer) const { return tensors_[2 * layer + 1].offset; }
  // W0, b0, W1, b1, ...: the flat buffer's order.
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  // "layer 2 weight [17][3]" for a flat index, for error messages.
  std::string Describe(size_t index) const;

 private:
  MlpShape shape_;
  size_t num_params_ = 0;
  std::vector<ParamTensor> tensors_;
};

// The starting parameters, the same on every rank and every machine: each
// layer's weights and bias uniform in [-1/sqrt(in), 1/sqrt(in)) (PyTorch's
// default for nn.Linear), drawn from `seed` with exact arithmetic.
std::vector<float> InitialParameters(const MlpLayout& layout, uint64_t seed);

}  // namespace rs::trainer
