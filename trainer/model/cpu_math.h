// Matrix products for the CPU model, written so that every element is
// computed by the same sequence of float32 operations on every CPU and SIMD
// width: out = init, then out += a(i,k) * b(k,j) for k = 0, 1, 2, ... in
// order, each product rounded before it is added (no fused multiply-add;
// the trainer is built with -ffp-contract=off). Blocking and vector width
// change which elements are computed together, never how one is computed.
// So the parameters come out bitwise identical on every rank whatever its
// CPU, and the --verify reference can recompute any rank's gradients
// exactly. Vectorised with Highway, dispatched at run time.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>

namespace rs::trainer {

// a(i, k) = data[i * row_stride + k * col_stride]: a row-major matrix, or
// (strides swapped) the transpose of one, without copying.
struct StridedMatrix {
  const float* data;
  size_t row_stride;
  size_t col_stride;
};

// c[m][n] (row-major, row stride n) = init + a[m][k] * b[k][n], where b is
// row-major with row stride n and init is init_row[j] for every row, or 0
// when init_row is null. c must not overlap a, b or init_row.
void MatMul(size_t m, size_t n, size_t k, StridedMatrix a, const float* b, float* c, const float* init_row);

// out[cols][rows] = in[rows][cols] transposed.
void Transpose(const float* in, size_t rows, size_t cols, float* out);

// The SIMD target the dispatcher picked ("AVX2"), for the start-up line.
const char* MathTargetName();

}  // namespace rs::trainer
