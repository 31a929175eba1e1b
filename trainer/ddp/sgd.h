// The update every rank applies after the all-reduce: the summed gradients
// are averaged over the ranks, then SGD with momentum in PyTorch's form
// (dampening 0, no Nesterov):  buf = momentum * buf + g;  p = p - lr * buf.
// Plain float32 operations in a fixed order (no fused multiply-add), so
// every rank, on any CPU, turns the same reduced gradients into the same
// parameters bit for bit. The CPU backend and the --verify reference share
// this code; the GPU backend has a kernel with the same formula.
//
// Also the float32 <-> bfloat16 conversions used when gradients travel as
// bfloat16 (round to nearest even, as the reducers do).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs::trainer {

struct SgdConfig {
  float lr = 0.1f;
  float momentum = 0.9f;
};

// grads[i] = grads[i] / world, then the momentum step on params.
void AverageAndStep(float* params, float* momentum, float* grads, size_t n, uint32_t world, const SgdConfig& sgd);

void ToBfloat16(const float* in, uint16_t* out, size_t n);
void FromBfloat16(const uint16_t* in, float* out, size_t n);

}  // namespace rs::trainer
