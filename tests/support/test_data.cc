#include "tests/support/test_data.h"

#include <cstring>
#include <cmath>

#include "common/half.h"
#include "kernels/kernels.h"

namespace rs::testing {

namespace {

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A float with random sign and mantissa and an exponent within 2^-8..2^8:
// mixed magnitudes, so the order of addition shows in the low bits.
float RandomFloat(uint64_t bits) {
  const uint32_t exponent = 127 - 8 + static_cast<uint32_t>((bits >> 32) % 17);
  const uint32_t f = (static_cast<uint32_t>(bits >> 63) << 31) | (exponent << 23) |
                     (static_cast<uint32_t>(bits) & 0x7fffff);
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

}  // namespace

std::vector<uint8_t> RandomInput(DataType dtype, size_t count, uint64_t seed) {
  const size_t elem = DataTypeSize(dtype);
  std::vector<uint8_t> out(count * elem);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bits = SplitMix(state);
    uint8_t* p = out.data() + i * elem;
    switch (dtype) {
      case DataType::kFloat32: {
        const float f = RandomFloat(bits);
        std::memcpy(p, &f, 4);
        break;
      }
      case DataType::kFloat64: {
        const double d = static_cast<double>(RandomFloat(bits)) * (1.0 + std::ldexp(static_cast<double>(bits & 0xffff), -40));
        std::memcpy(p, &d, 8);
        break;
      }
      case DataType::kFloat16: {
        const uint16_t h = FloatToHalf(RandomFloat(bits));
        std::memcpy(p, &h, 2);
        break;
      }
      case DataType::kBfloat16: {
        const uint16_t h = FloatToBfloat16(RandomFloat(bits));
        std::memcpy(p, &h, 2);
        break;
      }
      default:
        std::memcpy(p, &bits, elem);  // little-endian: the low bytes
        break;
    }
  }
  return out;
}

std::vector<uint8_t> RankOrderReference(DataType dtype, ReduceOp op, size_t count,
                                        const std::vector<std::vector<uint8_t>>& inputs) {
  std::vector<uint8_t> out(count * DataTypeSize(dtype));
  std::vector<const void*> ptrs;
  for (const auto& in : inputs) ptrs.push_back(in.data());
  if (count > 0) kernels::Reduce(dtype, op, out.data(), ptrs.data(), ptrs.size(), count);
  return out;
}

}  // namespace rs::testing
