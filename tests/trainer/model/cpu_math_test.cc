// The CPU products must compute every element as init + a0*b0 + a1*b1 + ...
// in k order, one rounding per product and per sum, whatever the shape: the
// cross-machine identity of the parameters and --verify rest on it.
#include "trainer/model/cpu_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "trainer/data/rng.h"

namespace rs::trainer {
namespace {

std::vector<float> Random(size_t n, uint64_t stream) {
  Rng rng(7, stream);
  std::vector<float> v(n);
  for (float& x : v) x = rng.Uniform() * 3.0f;
  return v;
}

// The defining order, one element at a time (volatile keeps the compiler
// from reassociating or fusing anything).
std::vector<float> Naive(size_t m, size_t n, size_t k, StridedMatrix a, const float* b, const float* init) {
  std::vector<float> c(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      volatile float acc = init ? init[j] : 0.0f;
      for (size_t kk = 0; kk < k; ++kk) {
        volatile float prod = a.data[i * a.row_stride + kk * a.col_stride] * b[kk * n + j];
        acc = acc + prod;
      }
      c[i * n + j] = acc;
    }
  }
  return c;
}

void ExpectBitwiseEqual(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "element " << i;
  }
}

struct Shape {
  size_t m, n, k;
};

class MatMulTest : public ::testing::TestWithParam<Shape> {};

TEST_P(MatMulTest, EveryElementIsTheInOrderSumBitForBit) {
  const auto [m, n, k] = GetParam();
  const std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2), bias = Random(n, 3);
  std::vector<float> c(m * n, -1.0f);
  MatMul(m, n, k, StridedMatrix{a.data(), k, 1}, b.data(), c.data(), bias.data());
  ExpectBitwiseEqual(c, Naive(m, n, k, StridedMatrix{a.data(), k, 1}, b.data(), bias.data()));
  // Without init, and with a read transposed through strides.
  const std::vector<float> at = Random(k * m, 4);
  MatMul(m, n, k, StridedMatrix{at.data(), 1, m}, b.data(), c.data(), nullptr);
  ExpectBitwiseEqual(c, Naive(m, n, k, StridedMatrix{at.data(), 1, m}, b.data(), nullptr));
}

// Row counts around the 4-row tile, column counts around the SIMD strips
// (up to 32 floats on AVX-512), k across the 256-row blocks.
INSTANTIATE_TEST_SUITE_P(Shapes, MatMulTest,
                         ::testing::Values(Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{4, 16, 9}, Shape{5, 33, 300},
                                           Shape{32, 64, 257}, Shape{7, 100, 513}, Shape{64, 8, 1}, Shape{2, 31, 0}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
                                  std::to_string(info.param.k);
                         });

TEST(TransposeTest, MovesEveryElement) {
  const size_t rows = 37, cols = 70;
  const std::vector<float> in = Random(rows * cols, 5);
  std::vector<float> out(rows * cols);
  Transpose(in.data(), rows, cols, out.data());
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) ASSERT_EQ(out[c * rows + r], in[r * cols + c]);
  }
}

TEST(MathTargetTest, NamesTheDispatchedTarget) { EXPECT_STRNE(MathTargetName(), ""); }

}  // namespace
}  // namespace rs::trainer
