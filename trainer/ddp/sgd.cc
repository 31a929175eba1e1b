#include "trainer/ddp/sgd.h"

#include "common/half.h"

namespace rs::trainer {

void AverageAndStep(float* params, float* momentum, float* grads, size_t n, uint32_t world, const SgdConfig& sgd) {
  const float ranks = static_cast<float>(world);
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i] / ranks;
    grads[i] = g;
    const float buf = sgd.momentum * momentum[i] + g;
    momentum[i] = buf;
    params[i] = params[i] - sgd.lr * buf;
  }
}

void ToBfloat16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBfloat16(in[i]);
}

void FromBfloat16(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Bfloat16ToFloat(in[i]);
}

}  // namespace rs::trainer
