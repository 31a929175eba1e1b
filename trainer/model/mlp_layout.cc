#include "trainer/model/mlp_layout.h"

#include <cmath>

#include "trainer/data/rng.h"

namespace rs::trainer {

std::string MlpShape::ToString() const {
  std::string dims = std::to_string(input_dim);
  for (int l = 0; l < depth; ++l) dims += "-" + std::to_string(LayerOut(l));
  return std::to_string(depth) + (depth == 1 ? " layer " : " layers ") + dims;
}

StatusOr<MlpLayout> MlpLayout::Create(const MlpShape& shape) {
  struct Dim {
    const char* name;
    int value;
    int max;
  };
  for (const Dim& d : {Dim{"input dimension", shape.input_dim, kMaxDim}, Dim{"width", shape.width, kMaxDim},
                       Dim{"output dimension", shape.output_dim, kMaxDim}, Dim{"depth", shape.depth, kMaxDepth}}) {
    if (d.value < 1 || d.value > d.max) {
      return Status(Code::kInvalidArgument, std::string("model ") + d.name + " " + std::to_string(d.value) +
                                                " is outside [1, " + std::to_string(d.max) + "]");
    }
  }
  MlpLayout layout;
  layout.shape_ = shape;
  size_t offset = 0;
  for (int l = 0; l < shape.depth; ++l) {
    const size_t in = static_cast<size_t>(shape.LayerIn(l));
    const size_t out = static_cast<size_t>(shape.LayerOut(l));
    layout.tensors_.push_back(ParamTensor{l, false, offset, in * out});
    offset += in * out;
    layout.tensors_.push_back(ParamTensor{l, true, offset, out});
    offset += out;
    if (offset > kMaxParams) {
      return Status(Code::kInvalidArgument, "model " + shape.ToString() + " has more than 2^31 parameters");
    }
  }
  layout.num_params_ = offset;
  return layout;
}

std::string MlpLayout::Describe(size_t index) const {
  for (const ParamTensor& t : tensors_) {
    if (index < t.offset || index >= t.offset + t.count) continue;
    const size_t i = index - t.offset;
    if (t.is_bias) return "layer " + std::to_string(t.layer) + " bias [" + std::to_string(i) + "]";
    const size_t out = static_cast<size_t>(shape_.LayerOut(t.layer));
    return "layer " + std::to_string(t.layer) + " weight [" + std::to_string(i / out) + "][" + std::to_string(i % out) +
           "]";
  }
  return "index " + std::to_string(index) + " (outside the model)";
}

std::vector<float> InitialParameters(const MlpLayout& layout, uint64_t seed) {
  std::vector<float> params(layout.num_params());
  for (const ParamTensor& t : layout.tensors()) {
    // sqrt is correctly rounded, so the bound is the same everywhere.
    const float bound = 1.0f / std::sqrt(static_cast<float>(layout.shape().LayerIn(t.layer)));
    Rng rng(seed, StreamId(1, static_cast<uint64_t>(t.layer), t.is_bias ? 1 : 0));
    for (size_t i = 0; i < t.count; ++i) params[t.offset + i] = rng.Uniform() * bound;
  }
  return params;
}

}  // namespace rs::trainer
