#include <cuda_bf16.h>

#include <algorithm>

#include "trainer/backend/gpu/gpu_kernels.h"

namespace rs::trainer::gpu {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(size_t n) { return static_cast<unsigned>(std::min<size_t>((n + kThreads - 1) / kThreads, 8192)); }

// Grid-stride loop over [0, n).
#define RS_FOR_EACH(i, n)                                                              \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += gridDim.x * static_cast<size_t>(blockDim.x))

__global__ void AddBiasReluKernel(float* z, const float* bias, size_t rows, size_t cols, bool relu) {
  RS_FOR_EACH(i, rows * cols) {
    const float v = z[i] + bias[i % cols];
    z[i] = relu && !(v > 0.0f) ? 0.0f : v;
  }
}

__global__ void MseGradKernel(const float* y, const float* t, float* grad, float* terms, size_t n, float scale) {
  RS_FOR_EACH(i, n) {
    const float d = y[i] - t[i];
    grad[i] = d * scale;
    terms[i] = d * d;
  }
}

__global__ void SumToDoubleKernel(const float* in, size_t n, double* out) {
  __shared__ double part[kThreads];
  double acc = 0;
  for (size_t i = threadIdx.x; i < n; i += kThreads) acc += static_cast<double>(in[i]);
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) part[threadIdx.x] += part[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

__global__ void BiasGradKernel(const float* g, float* db, size_t rows, size_t cols) {
  RS_FOR_EACH(j, cols) {
    float acc = 0.0f;
    for (size_t r = 0; r < rows; ++r) acc += g[r * cols + j];
    db[j] = acc;
  }
}

__global__ void ReluBackwardKernel(float* g, const float* act, size_t n) {
  RS_FOR_EACH(i, n) {
    if (!(act[i] > 0.0f)) g[i] = 0.0f;
  }
}

__global__ void SgdStepKernel(float* p, float* m, float* g, size_t n, float world, float lr, float momentum) {
  RS_FOR_EACH(i, n) {
    const float avg = __fdiv_rn(g[i], world);
    g[i] = avg;
    const float buf = __fadd_rn(__fmul_rn(momentum, m[i]), avg);
    m[i] = buf;
    p[i] = __fsub_rn(p[i], __fmul_rn(lr, buf));
  }
}

__global__ void ToBfloat16Kernel(const float* in, uint16_t* out, size_t n) {
  RS_FOR_EACH(i, n) { out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i])); }
}

__global__ void FromBfloat16Kernel(const uint16_t* in, float* out, size_t n) {
  RS_FOR_EACH(i, n) { out[i] = __uint_as_float(static_cast<unsigned>(in[i]) << 16); }
}

}  // namespace

cudaError_t AddBiasRelu(float* z, const float* bias, size_t rows, size_t cols, bool relu, cudaStream_t stream) {
  AddBiasReluKernel<<<Blocks(rows * cols), kThreads, 0, stream>>>(z, bias, rows, cols, relu);
  return cudaGetLastError();
}

cudaError_t MseGrad(const float* y, const float* t, float* grad, float* terms, size_t n, float scale,
                    cudaStream_t stream) {
  MseGradKernel<<<Blocks(n), kThreads, 0, stream>>>(y, t, grad, terms, n, scale);
  return cudaGetLastError();
}

cudaError_t SumToDouble(const float* in, size_t n, double* out, cudaStream_t stream) {
  SumToDoubleKernel<<<1, kThreads, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

cudaError_t BiasGrad(const float* g, float* db, size_t rows, size_t cols, cudaStream_t stream) {
  BiasGradKernel<<<Blocks(cols), kThreads, 0, stream>>>(g, db, rows, cols);
  return cudaGetLastError();
}

cudaError_t ReluBackward(float* g, const float* act, size_t n, cudaStream_t stream) {
  ReluBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(g, act, n);
  return cudaGetLastError();
}

cudaError_t SgdStep(float* p, float* m, float* g, size_t n, float world, float lr, float momentum,
                    cudaStream_t stream) {
  SgdStepKernel<<<Blocks(n), kThreads, 0, stream>>>(p, m, g, n, world, lr, momentum);
  return cudaGetLastError();
}

cudaError_t ToBfloat16(const float* in, uint16_t* out, size_t n, cudaStream_t stream) {
  ToBfloat16Kernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t FromBfloat16(const uint16_t* in, float* out, size_t n, cudaStream_t stream) {
  FromBfloat16Kernel<<<Blocks(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace rs::trainer::gpu
