#include "trainer/model/cpu_mlp.h"

#include "trainer/model/cpu_math.h"

namespace rs::trainer {

double CpuMlp::Forward(const float* params, const Batch& batch) {
  batch_ = &batch;
  const MlpShape& s = layout_.shape();
  const size_t rows = static_cast<size_t>(batch.rows);
  acts_.resize(static_cast<size_t>(s.depth) + 1);
  const float* in = batch.x.data();
  for (int l = 0; l < s.depth; ++l) {
    const size_t n_in = static_cast<size_t>(s.LayerIn(l)), n_out = static_cast<size_t>(s.LayerOut(l));
    std::vector<float>& out = acts_[l + 1];
    out.resize(rows * n_out);
    MatMul(rows, n_out, n_in, StridedMatrix{in, n_in, 1}, params + layout_.weight_offset(l), out.data(),
           params + layout_.bias_offset(l));
    if (l + 1 < s.depth) {
      for (float& v : out) v = v > 0.0f ? v : 0.0f;
    }
    in = out.data();
  }
  const std::vector<float>& y = acts_[s.depth];
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double diff = static_cast<double>(y[i]) - static_cast<double>(batch.y[i]);
    sum += diff * diff;
  }
  return y.empty() ? 0.0 : sum / static_cast<double>(y.size());
}

Status CpuMlp::Backward(const float* params, float* grads, const std::function<Status(int layer)>& layer_done) {
  const MlpShape& s = layout_.shape();
  const Batch& batch = *batch_;
  const size_t rows = static_cast<size_t>(batch.rows);
  // d(mean (y - t)^2)/dy = (y - t) * 2 / (rows * outputs).
  const std::vector<float>& y = acts_[s.depth];
  const float scale = 2.0f / static_cast<float>(y.size());
  grad_.resize(y.size());
  for (size_t i = 0; i < y.size(); ++i) grad_[i] = (y[i] - batch.y[i]) * scale;

  for (int l = s.depth - 1; l >= 0; --l) {
    const size_t n_in = static_cast<size_t>(s.LayerIn(l)), n_out = static_cast<size_t>(s.LayerOut(l));
    const float* in = l == 0 ? batch.x.data() : acts_[l].data();
    // dW[in][out] = in^T . grad (the input read transposed, in place).
    MatMul(n_in, n_out, rows, StridedMatrix{in, 1, n_in}, grad_.data(), grads + layout_.weight_offset(l), nullptr);
    float* db = grads + layout_.bias_offset(l);
    for (size_t j = 0; j < n_out; ++j) db[j] = 0.0f;
    for (size_t r = 0; r < rows; ++r) {
      const float* g = grad_.data() + r * n_out;
      for (size_t j = 0; j < n_out; ++j) db[j] = db[j] + g[j];
    }
    RS_RETURN_IF_ERROR(layer_done(l));
    if (l == 0) break;
    // d(in)[rows][in] = grad . W^T, computed as its transpose W . grad^T so
    // that the big matrix W is read in its stored order and only the small
    // [rows]-sized matrices are transposed.
    scratch_t_.resize(n_out * rows);
    Transpose(grad_.data(), rows, n_out, scratch_t_.data());
    scratch_in_t_.resize(n_in * rows);
    MatMul(n_in, rows, n_out, StridedMatrix{params + layout_.weight_offset(l), n_out, 1}, scratch_t_.data(),
           scratch_in_t_.data(), nullptr);
    grad_prev_.resize(rows * n_in);
    Transpose(scratch_in_t_.data(), n_in, rows, grad_prev_.data());
    const std::vector<float>& act = acts_[l];  // ReLU output: its gradient passes where it is positive
    for (size_t i = 0; i < grad_prev_.size(); ++i) grad_prev_[i] = act[i] > 0.0f ? grad_prev_[i] : 0.0f;
    grad_.swap(grad_prev_);
  }
  return Status::Ok();
}

}  // namespace rs::trainer
