// The GPU backend's own kernels (everything but the matrix products, which
// are cuBLAS): bias and ReLU, the loss and its gradient, bias gradients, the
// SGD update and the bfloat16 conversions. Each launcher enqueues on
// `stream` and returns the launch error. Deterministic: no atomics; the loss
// is summed by one block in a fixed order.
//
// Thread-safety: launchers are reentrant; ordering is the stream's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rs::trainer::gpu {

// z[r][j] += bias[j], then ReLU when `relu`.
cudaError_t AddBiasRelu(float* z, const float* bias, size_t rows, size_t cols, bool relu, cudaStream_t stream);
// grad = (y - t) * scale; terms = (y - t)^2.
cudaError_t MseGrad(const float* y, const float* t, float* grad, float* terms, size_t n, float scale,
                    cudaStream_t stream);
// *out = sum of in[0..n) in float64, in a fixed order (one block).
cudaError_t SumToDouble(const float* in, size_t n, double* out, cudaStream_t stream);
// db[j] = sum over r of g[r][j].
cudaError_t BiasGrad(const float* g, float* db, size_t rows, size_t cols, cudaStream_t stream);
// g[i] = act[i] > 0 ? g[i] : 0.
cudaError_t ReluBackward(float* g, const float* act, size_t n, cudaStream_t stream);
// g = g / world; m = momentum * m + g; p = p - lr * m (ddp/sgd.h's formula).
cudaError_t SgdStep(float* p, float* m, float* g, size_t n, float world, float lr, float momentum, cudaStream_t stream);
cudaError_t ToBfloat16(const float* in, uint16_t* out, size_t n, cudaStream_t stream);
cudaError_t FromBfloat16(const uint16_t* in, float* out, size_t n, cudaStream_t stream);

}  // namespace rs::trainer::gpu
