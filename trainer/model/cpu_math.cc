// MatMul (see cpu_math.h), compiled once per SIMD target by Highway's
// foreach_target.h. The micro-kernel keeps a 4-row x 2-vector tile of c in
// registers while it walks a block of k; the k blocks, column strips and row
// blocks around it are only for the caches. Columns left over after the last
// full strip take a scalar loop that does the same operations in the same
// order, so results do not depend on which path an element took.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "trainer/model/cpu_math.cc"
#include "trainer/model/cpu_math.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace rs::trainer {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 256 rows of b by one strip stay in L1 while every row block passes over them.
constexpr size_t kBlockK = 256;

// Rows [0, 4) of a and c (a points at row 0, c at row 0 column 0), columns
// [j, j + 2 lanes), k in [k0, k1).
HWY_INLINE void Tile4(StridedMatrix a, const float* b, size_t n, float* c, size_t j, size_t k0, size_t k1) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  float* r0 = c + j;
  float* r1 = r0 + n;
  float* r2 = r1 + n;
  float* r3 = r2 + n;
  auto c00 = hn::LoadU(d, r0), c01 = hn::LoadU(d, r0 + lanes);
  auto c10 = hn::LoadU(d, r1), c11 = hn::LoadU(d, r1 + lanes);
  auto c20 = hn::LoadU(d, r2), c21 = hn::LoadU(d, r2 + lanes);
  auto c30 = hn::LoadU(d, r3), c31 = hn::LoadU(d, r3 + lanes);
  const float* a0 = a.data;
  const float* a1 = a0 + a.row_stride;
  const float* a2 = a1 + a.row_stride;
  const float* a3 = a2 + a.row_stride;
  for (size_t k = k0; k < k1; ++k) {
    const float* bk = b + k * n + j;
    const auto b0 = hn::LoadU(d, bk);
    const auto b1 = hn::LoadU(d, bk + lanes);
    const size_t ak = k * a.col_stride;
    auto v = hn::Set(d, a0[ak]);
    c00 = hn::Add(c00, hn::Mul(v, b0));
    c01 = hn::Add(c01, hn::Mul(v, b1));
    v = hn::Set(d, a1[ak]);
    c10 = hn::Add(c10, hn::Mul(v, b0));
    c11 = hn::Add(c11, hn::Mul(v, b1));
    v = hn::Set(d, a2[ak]);
    c20 = hn::Add(c20, hn::Mul(v, b0));
    c21 = hn::Add(c21, hn::Mul(v, b1));
    v = hn::Set(d, a3[ak]);
    c30 = hn::Add(c30, hn::Mul(v, b0));
    c31 = hn::Add(c31, hn::Mul(v, b1));
  }
  hn::StoreU(c00, d, r0);
  hn::StoreU(c01, d, r0 + lanes);
  hn::StoreU(c10, d, r1);
  hn::StoreU(c11, d, r1 + lanes);
  hn::StoreU(c20, d, r2);
  hn::StoreU(c21, d, r2 + lanes);
  hn::StoreU(c30, d, r3);
  hn::StoreU(c31, d, r3 + lanes);
}

// One row, columns [j, j + 2 lanes).
HWY_INLINE void Tile1(StridedMatrix a, const float* b, size_t n, float* c, size_t j, size_t k0, size_t k1) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto c0 = hn::LoadU(d, c + j), c1 = hn::LoadU(d, c + j + lanes);
  for (size_t k = k0; k < k1; ++k) {
    const float* bk = b + k * n + j;
    const auto v = hn::Set(d, a.data[k * a.col_stride]);
    c0 = hn::Add(c0, hn::Mul(v, hn::LoadU(d, bk)));
    c1 = hn::Add(c1, hn::Mul(v, hn::LoadU(d, bk + lanes)));
  }
  hn::StoreU(c0, d, c + j);
  hn::StoreU(c1, d, c + j + lanes);
}

void MatMulImpl(size_t m, size_t n, size_t k, StridedMatrix a, const float* b, float* c, const float* init_row) {
  for (size_t i = 0; i < m; ++i) {
    if (init_row != nullptr) {
      std::memcpy(c + i * n, init_row, n * sizeof(float));
    } else {
      std::memset(c + i * n, 0, n * sizeof(float));
    }
  }
  const hn::ScalableTag<float> d;
  const size_t strip = 2 * hn::Lanes(d);
  const size_t n_strips = n - n % strip;
  const size_t m4 = m - m % 4;
  for (size_t k0 = 0; k0 < k; k0 += kBlockK) {
    const size_t k1 = std::min(k, k0 + kBlockK);
    for (size_t j = 0; j < n_strips; j += strip) {
      for (size_t i = 0; i < m4; i += 4) {
        Tile4(StridedMatrix{a.data + i * a.row_stride, a.row_stride, a.col_stride}, b, n, c + i * n, j, k0, k1);
      }
      for (size_t i = m4; i < m; ++i) {
        Tile1(StridedMatrix{a.data + i * a.row_stride, a.row_stride, a.col_stride}, b, n, c + i * n, j, k0, k1);
      }
    }
    for (size_t i = 0; i < m; ++i) {
      const float* ai = a.data + i * a.row_stride;
      for (size_t j = n_strips; j < n; ++j) {
        float acc = c[i * n + j];
        for (size_t kk = k0; kk < k1; ++kk) acc = acc + ai[kk * a.col_stride] * b[kk * n + j];
        c[i * n + j] = acc;
      }
    }
  }
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace rs::trainer
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rs::trainer {

HWY_EXPORT(MatMulImpl);
HWY_EXPORT(TargetNameImpl);

void MatMul(size_t m, size_t n, size_t k, StridedMatrix a, const float* b, float* c, const float* init_row) {
  HWY_DYNAMIC_DISPATCH(MatMulImpl)(m, n, k, a, b, c, init_row);
}

void Transpose(const float* in, size_t rows, size_t cols, float* out) {
  constexpr size_t kTile = 32;
  for (size_t r0 = 0; r0 < rows; r0 += kTile) {
    for (size_t c0 = 0; c0 < cols; c0 += kTile) {
      const size_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (size_t r = r0; r < r1; ++r) {
        for (size_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
}

const char* MathTargetName() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

}  // namespace rs::trainer
#endif  // HWY_ONCE
