// Scalar conversions between float32 and the two 16-bit float formats on the
// wire (IEEE binary16 "float16" and bfloat16), for code that handles single
// values: tests, benchmarks, the client's result checks. Narrowing rounds to
// nearest, ties to even; NaN stays NaN (quiet, sign and top payload bits
// kept); values beyond the format's range become Inf. The SIMD kernels
// (kernels.cc) implement the same rules and are tested against these.
// Thread-safe: pure functions.
#pragma once

#include <bit>
#include <cstdint>

namespace rs {

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float32 and, being a normal
    // float32, survives even if the caller runs with DAZ/FTZ set.
    bits = std::bit_cast<uint32_t>(static_cast<float>(mant) * 0x1p-24f);
  } else if (exp == 31) {
    bits = 0x7F800000u | (mant << 13);  // Inf or NaN, payload kept
  } else {
    bits = ((exp + (127 - 15)) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(sign | bits);
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7FFFFFFFu;
  uint32_t h;
  if (abs > 0x7F800000u) {
    // Truncating the payload could clear every mantissa bit and turn the NaN
    // into Inf; setting the quiet bit keeps it a NaN.
    h = 0x7E00u | ((abs >> 13) & 0x3FFu);
  } else if (abs >= 0x47800000u) {
    h = 0x7C00u;  // >= 2^16 (and Inf): beyond float16's largest finite + half ulp
  } else if (abs < 0x38800000u) {
    // Below 2^-14 the result is subnormal, with a fixed ulp of 2^-24. Adding
    // 0.5 (whose ulp is 2^-24) lets the FPU round to nearest-even for us; the
    // mantissa of the sum is then the float16 bit pattern (0x400 = 2^-14).
    const float sum = std::bit_cast<float>(abs) + 0.5f;
    h = std::bit_cast<uint32_t>(sum) - 0x3F000000u;
  } else {
    // Rebias the exponent, then round the 13 dropped bits to nearest-even; a
    // carry out of the mantissa correctly bumps the exponent (up to Inf).
    const uint32_t rebiased = abs - ((127u - 15u) << 23);
    h = (rebiased + 0xFFFu + ((abs >> 13) & 1u)) >> 13;
  }
  return static_cast<uint16_t>(sign | h);
}

inline float Bfloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t FloatToBfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    // The rounding add below would carry a NaN into Inf (or flip its sign).
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace rs
