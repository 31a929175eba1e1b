#include "client/wire_codec.h"

#include <bit>

#include "common/half.h"

namespace rs::client {
namespace {

// All ones where `condition` holds: selects written as masks, since GCC
// leaves some ?: as branches and then vectorises nothing.
inline uint32_t Mask(bool condition) { return 0u - static_cast<uint32_t>(condition); }
inline uint32_t Select(uint32_t mask, uint32_t yes, uint32_t no) { return (yes & mask) | (no & ~mask); }

// half.h's conversions with every branch turned into a select, so that the
// compiler vectorises the loops below (client/CMakeLists.txt builds this
// file with -O3) and they run at the reducer's SIMD speed. The same integer
// steps as the Highway kernels (kernels.cc); wire_codec_test holds them to
// half.h bit for bit.
inline uint16_t NarrowToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7FFFFFFFu;
  const uint32_t nan = 0x7E00u | ((abs >> 13) & 0x3FFu);
  // Subnormal results: adding 0.5 (ulp 2^-24) makes the FPU round for us.
  const uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(abs) + 0.5f) - 0x3F000000u;
  const uint32_t normal = (abs - ((127u - 15u) << 23) + 0xFFFu + ((abs >> 13) & 1u)) >> 13;
  uint32_t h = Select(Mask(abs < 0x38800000u), subnormal, normal);
  h = Select(Mask(abs > 0x477FFFFFu), 0x7C00u, h);
  h = Select(Mask(abs > 0x7F800000u), nan, h);
  return static_cast<uint16_t>(sign | h);
}

inline uint16_t NarrowToBfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>(Select(Mask((bits & 0x7FFFFFFFu) > 0x7F800000u), quiet_nan, rounded));
}

inline float WidenHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = h & 0x7FFFu;
  const uint32_t exp = magnitude >> 10;
  const uint32_t shifted = magnitude << 13;
  // mantissa * 2^-24 is exact and a normal float32, so DAZ cannot zero it.
  const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(magnitude)) * 0x1p-24f);
  uint32_t bits = Select(Mask(exp == 0), subnormal, shifted + ((127u - 15u) << 23));
  bits = Select(Mask(exp == 31), shifted | 0x7F800000u, bits);
  return std::bit_cast<float>(sign | bits);
}

constexpr uint16_t Exponent(DataType wire) { return wire == DataType::kFloat16 ? 0x7C00 : 0x7F80; }

// The two loops, compiled once for each instruction set below: always
// inlined, so that each copy is vectorised for its caller's target.
[[gnu::always_inline]] inline bool NarrowLoop(DataType wire, const float* in, uint16_t* out, size_t count) {
  // Inf and NaN have every exponent bit set in both formats; an OR over the
  // loop keeps it branch-free.
  const uint16_t exponent = Exponent(wire);
  uint16_t all_ones = 0;
  if (wire == DataType::kFloat16) {
    for (size_t i = 0; i < count; ++i) {
      out[i] = NarrowToHalf(in[i]);
      all_ones |= static_cast<uint16_t>((out[i] & exponent) == exponent);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      out[i] = NarrowToBfloat16(in[i]);
      all_ones |= static_cast<uint16_t>((out[i] & exponent) == exponent);
    }
  }
  return all_ones == 0;
}

[[gnu::always_inline]] inline void WidenLoop(DataType wire, const uint16_t* in, float* out, size_t count) {
  if (wire == DataType::kFloat16) {
    for (size_t i = 0; i < count; ++i) out[i] = WidenHalf(in[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = Bfloat16ToFloat(in[i]);
  }
}

using NarrowFn = bool (*)(DataType, const float*, uint16_t*, size_t);
using WidenFn = void (*)(DataType, const uint16_t*, float*, size_t);

bool NarrowPortable(DataType wire, const float* in, uint16_t* out, size_t count) {
  return NarrowLoop(wire, in, out, count);
}
void WidenPortable(DataType wire, const uint16_t* in, float* out, size_t count) { WidenLoop(wire, in, out, count); }

#if defined(__x86_64__) && defined(__GNUC__)
#define RS_WIRE_CODEC_X86 1
// x86-64's baseline, SSE2, has no instruction that packs 32-bit lanes into
// 16-bit ones without saturating, so the portable loops narrow at a fifth of
// these (kernels_bench's wire/narrow/*/client-*). Each build enables exactly
// the features Available() checks (not a whole x86-64-v3/v4 level: clang 14,
// Debian 12's, cannot check every feature of one at run time).
#define RS_WIRE_CODEC_AVX2 "avx2"
#define RS_WIRE_CODEC_AVX512 "avx2,avx512f,avx512bw,avx512vl"
[[gnu::target(RS_WIRE_CODEC_AVX2)]] bool NarrowAvx2(DataType wire, const float* in, uint16_t* out, size_t count) {
  return NarrowLoop(wire, in, out, count);
}
[[gnu::target(RS_WIRE_CODEC_AVX2)]] void WidenAvx2(DataType wire, const uint16_t* in, float* out, size_t count) {
  WidenLoop(wire, in, out, count);
}
[[gnu::target(RS_WIRE_CODEC_AVX512)]] bool NarrowAvx512(DataType wire, const float* in, uint16_t* out, size_t count) {
  return NarrowLoop(wire, in, out, count);
}
[[gnu::target(RS_WIRE_CODEC_AVX512)]] void WidenAvx512(DataType wire, const uint16_t* in, float* out, size_t count) {
  WidenLoop(wire, in, out, count);
}
#endif

bool Available(WireCodecImpl impl) {
  switch (impl) {
#ifdef RS_WIRE_CODEC_X86
    case WireCodecImpl::kAvx512:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    case WireCodecImpl::kAvx2:
      return __builtin_cpu_supports("avx2");
#else
    case WireCodecImpl::kAvx512:
    case WireCodecImpl::kAvx2:
      return false;
#endif
    case WireCodecImpl::kPortable:
      return true;
  }
  return false;
}

// A build's pair of loops; the portable pair where the CPU lacks it.
struct Build {
  NarrowFn narrow;
  WidenFn widen;
};

Build BuildOf(WireCodecImpl impl) {
#ifdef RS_WIRE_CODEC_X86
  if (impl == WireCodecImpl::kAvx512 && Available(impl)) return {NarrowAvx512, WidenAvx512};
  if (impl == WireCodecImpl::kAvx2 && Available(impl)) return {NarrowAvx2, WidenAvx2};
#endif
  return {NarrowPortable, WidenPortable};
}

WireCodecImpl Best() {
#ifdef RS_WIRE_CODEC_X86
  __builtin_cpu_init();  // this runs from a static initializer
#endif
  for (WireCodecImpl impl : {WireCodecImpl::kAvx512, WireCodecImpl::kAvx2}) {
    if (Available(impl)) return impl;
  }
  return WireCodecImpl::kPortable;
}

const WireCodecImpl kBest = Best();
const Build kBuild = BuildOf(kBest);

}  // namespace

bool NarrowPiece(DataType wire, const float* in, uint16_t* out, size_t count) {
  return kBuild.narrow(wire, in, out, count);
}

void WidenPart(DataType wire, const uint16_t* in, float* out, size_t count) { kBuild.widen(wire, in, out, count); }

void FallbackPiece(DataType wire, const uint16_t* narrowed, const float* in, float* out, size_t count) {
  const uint16_t exponent = Exponent(wire);
  for (size_t i = 0; i < count; ++i) {
    const float rounded = wire == DataType::kFloat16 ? WidenHalf(narrowed[i]) : Bfloat16ToFloat(narrowed[i]);
    out[i] = (narrowed[i] & exponent) == exponent ? in[i] : rounded;  // rare: not worth vectorising
  }
}

bool WireCodecAvailable(WireCodecImpl impl) { return Available(impl); }

bool NarrowPieceUsing(WireCodecImpl impl, DataType wire, const float* in, uint16_t* out, size_t count) {
  return BuildOf(impl).narrow(wire, in, out, count);
}

void WidenPartUsing(WireCodecImpl impl, DataType wire, const uint16_t* in, float* out, size_t count) {
  BuildOf(impl).widen(wire, in, out, count);
}

const char* WireCodecImplName(WireCodecImpl impl) {
  switch (impl) {
    case WireCodecImpl::kAvx512: return "avx512bw";
    case WireCodecImpl::kAvx2: return "avx2";
    case WireCodecImpl::kPortable: return "portable";
  }
  return "?";
}

const char* WireCodecImplementation() { return WireCodecImplName(kBest); }

}  // namespace rs::client
