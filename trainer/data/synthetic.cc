#include "trainer/data/synthetic.h"

#include <cmath>

#include "trainer/data/rng.h"
#include "trainer/model/cpu_math.h"

namespace rs::trainer {
namespace {

// Weights uniform in [-3/sqrt(in), 3/sqrt(in)): each teacher output then has
// a variance near 1 for inputs uniform in [-1, 1).
std::vector<float> TeacherMatrix(uint64_t seed, uint64_t which, int in, int out) {
  std::vector<float> w(static_cast<size_t>(in) * static_cast<size_t>(out));
  const float bound = 3.0f / std::sqrt(static_cast<float>(in));
  Rng rng(seed, StreamId(2, which));
  for (float& v : w) v = rng.Uniform() * bound;
  return w;
}

}  // namespace

SyntheticData::SyntheticData(const MlpShape& shape, uint64_t seed)
    : input_dim_(shape.input_dim),
      output_dim_(shape.output_dim),
      seed_(seed),
      w1_(TeacherMatrix(seed, 0, shape.input_dim, kTeacherHidden)),
      b1_(TeacherMatrix(seed, 1, 1, kTeacherHidden)),
      w2_(TeacherMatrix(seed, 2, kTeacherHidden, shape.output_dim)),
      b2_(TeacherMatrix(seed, 3, 1, shape.output_dim)) {
  for (float& b : b1_) b *= 0.1f;
  for (float& b : b2_) b *= 0.1f;
}

void SyntheticData::MakeBatch(uint32_t rank, uint64_t step, int rows, Batch* out) const {
  const size_t n = static_cast<size_t>(rows);
  out->rows = rows;
  out->input_dim = input_dim_;
  out->output_dim = output_dim_;
  out->x.resize(n * static_cast<size_t>(input_dim_));
  out->y.resize(n * static_cast<size_t>(output_dim_));
  Rng rng(seed_, StreamId(3, rank, step));
  for (float& v : out->x) v = rng.Uniform();
  std::vector<float> hidden(n * kTeacherHidden);
  MatMul(n, kTeacherHidden, static_cast<size_t>(input_dim_),
         StridedMatrix{out->x.data(), static_cast<size_t>(input_dim_), 1}, w1_.data(), hidden.data(), b1_.data());
  for (float& h : hidden) h = h > 0.0f ? h : 0.0f;
  MatMul(n, static_cast<size_t>(output_dim_), kTeacherHidden, StridedMatrix{hidden.data(), kTeacherHidden, 1},
         w2_.data(), out->y.data(), b2_.data());
  for (float& y : out->y) y = y + rng.Uniform() * kNoise;
}

}  // namespace rs::trainer
