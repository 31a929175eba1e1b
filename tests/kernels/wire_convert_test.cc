// Tests for the float32-sum-on-a-16-bit-wire kernels (NarrowFloat32,
// WidenToFloat32, SumToFloat32): on every SIMD target this CPU runs, each is
// held bit for bit to a scalar reference built on half.h, so every rank and
// every reducer computes the same bits whatever its CPU. NaNs are compared as
// NaNs with their sign (F16C quietens a signalling NaN on widening, the
// scalar code keeps it); the wire never carries a NaN, since NarrowFloat32
// reports it and the piece goes as float32.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/half.h"
#include "kernels/kernels.h"
#include "tests/support/simd_target_scope.h"

namespace rs::kernels {
namespace {

constexpr DataType kWireTypes[] = {DataType::kBfloat16, DataType::kFloat16};

std::string Describe(DataType wire) {
  return std::string(DataTypeName(wire)) + " on " + ReduceTargetName();
}

uint16_t ScalarNarrow(DataType wire, float x) {
  return wire == DataType::kFloat16 ? FloatToHalf(x) : FloatToBfloat16(x);
}

float ScalarWiden(DataType wire, uint16_t x) {
  return wire == DataType::kFloat16 ? HalfToFloat(x) : Bfloat16ToFloat(x);
}

bool WireIsFinite(DataType wire, uint16_t x) {
  const uint16_t exponent = wire == DataType::kFloat16 ? 0x7C00 : 0x7F80;
  return (x & exponent) != exponent;
}

bool SameFloat(float got, float want) {
  if (std::isnan(want)) return std::isnan(got) && std::signbit(got) == std::signbit(want);
  return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
}

bool SameWire(DataType wire, uint16_t got, uint16_t want) {
  return SameFloat(ScalarWiden(wire, got), ScalarWiden(wire, want)) &&
         (std::isnan(ScalarWiden(wire, want)) || got == want);
}

// Float32 inputs that exercise every rounding path: a sweep over all
// exponents, both formats' ties and their neighbours, the edges of the
// ranges, denormals of all three formats, NaN payloads and infinities.
std::vector<float> EdgeFloats() {
  std::vector<uint32_t> bits;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += 65521) bits.push_back(static_cast<uint32_t>(b));
  for (uint32_t h = 0; h < 0x7C00; h += 7) {  // float16: value, tie above it, its neighbours
    const double lo = HalfToFloat(static_cast<uint16_t>(h));
    const double hi = HalfToFloat(static_cast<uint16_t>(h + 1));
    const uint32_t mid = std::bit_cast<uint32_t>(static_cast<float>((lo + hi) / 2));
    for (uint32_t m : {mid - 1, mid, mid + 1}) bits.push_back(m);
  }
  for (uint32_t b = 0; b < 0x7F80; b += 5) {  // bfloat16 ties: low half 0x8000
    for (uint32_t low : {0x7FFFu, 0x8000u, 0x8001u}) bits.push_back((b << 16) | low);
  }
  for (uint32_t b : {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x33000000u, 0x33000001u,
                     0x387FC000u, 0x38800000u, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x47800000u,
                     0x7F7F7FFFu, 0x7F7F8000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7F801FFFu,
                     0x7FC00000u, 0x7FFFFFFFu}) {
    bits.push_back(b);
    bits.push_back(b | 0x80000000u);
  }
  std::vector<float> out;
  for (uint32_t b : bits) out.push_back(std::bit_cast<float>(b));
  return out;
}

// Gradient-like values (a spread of scales, both signs) with occasional
// exact specials, as one rank's piece.
std::vector<float> GradientLike(size_t count, std::mt19937_64& rng) {
  std::vector<float> out(count);
  for (float& x : out) {
    const uint64_t r = rng();
    const double unit = static_cast<double>(rng() >> 11) * 0x1p-53;
    x = static_cast<float>(((r & 1) ? -1.0 : 1.0) * std::ldexp(unit, static_cast<int>((r >> 8) % 40) - 30));
    if (r % 997 == 0) x = 0.0f;
    if (r % 1009 == 0) x = std::bit_cast<float>(static_cast<uint32_t>(rng() % 0x800000));  // denormal
  }
  return out;
}

TEST(WireConvertTest, NarrowMatchesTheScalarRoundingOnEveryTarget) {
  const std::vector<float> in = EdgeFloats();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    for (DataType wire : kWireTypes) {
      SCOPED_TRACE(Describe(wire));
      // Every length up to 40 reaches the partial tail at each offset; the
      // whole set spans many chunks.
      for (size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{17}, size_t{40}, in.size()}) {
        for (size_t first = 0; first + count <= in.size(); first += count == in.size() ? 1 : 997) {
          std::vector<uint16_t> out(count + 1, 0xA5A5);  // one guard element
          const bool fits = NarrowFloat32(wire, in.data() + first, out.data(), count);
          bool want_fits = true;
          for (size_t i = 0; i < count; ++i) {
            const uint16_t want = ScalarNarrow(wire, in[first + i]);
            want_fits = want_fits && WireIsFinite(wire, want);
            ASSERT_TRUE(SameWire(wire, out[i], want))
                << "input 0x" << std::hex << std::bit_cast<uint32_t>(in[first + i]) << ": got 0x"
                << out[i] << ", want 0x" << want;
          }
          ASSERT_EQ(out[count], 0xA5A5) << "wrote past the output";
          ASSERT_EQ(fits, want_fits) << "count " << count << " from " << first;
        }
      }
    }
  }
}

TEST(WireConvertTest, WidenIsExactForEveryPatternOnEveryTarget) {
  std::vector<uint16_t> in(0x10000);
  for (uint32_t h = 0; h <= 0xFFFF; ++h) in[h] = static_cast<uint16_t>(h);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    for (DataType wire : kWireTypes) {
      SCOPED_TRACE(Describe(wire));
      for (size_t first : {size_t{0}, size_t{1}, size_t{3}}) {  // misaligned starts too
        const size_t count = in.size() - first;
        std::vector<float> out(count + 1, 42.0f);
        WidenToFloat32(wire, in.data() + first, out.data(), count);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(SameFloat(out[i], ScalarWiden(wire, in[first + i])))
              << "pattern 0x" << std::hex << in[first + i];
        }
        ASSERT_EQ(out[count], 42.0f) << "wrote past the output";
      }
    }
  }
}

// One rank's piece as the reducer receives it: in the wire type or, if it
// did not narrow, in float32.
struct Piece {
  DataType type;
  std::vector<uint16_t> wire;
  std::vector<float> f32;
  const void* data() const { return type == DataType::kFloat32 ? static_cast<const void*>(f32.data()) : wire.data(); }
  float At(DataType wire_type, size_t i) const {
    return type == DataType::kFloat32 ? f32[i] : ScalarWiden(wire_type, wire[i]);
  }
};

void CheckSum(DataType wire, size_t n, size_t count, bool mixed, uint64_t seed) {
  SCOPED_TRACE(Describe(wire) + ", " + std::to_string(n) + " inputs, count " + std::to_string(count) +
               (mixed ? ", some float32" : ""));
  std::mt19937_64 rng(seed);
  std::vector<Piece> pieces;
  for (size_t k = 0; k < n; ++k) {
    Piece piece;
    piece.f32 = GradientLike(count, rng);
    piece.type = (mixed && rng() % 3 == 0) ? DataType::kFloat32 : wire;
    if (piece.type == wire) {
      piece.wire.resize(count);
      for (size_t i = 0; i < count; ++i) piece.wire[i] = ScalarNarrow(wire, piece.f32[i]);
    }
    pieces.push_back(std::move(piece));
  }
  std::vector<const void*> inputs;
  std::vector<DataType> types;
  for (const Piece& piece : pieces) {
    inputs.push_back(piece.data());
    types.push_back(piece.type);
  }
  std::vector<float> out(count + 1, 42.0f);
  SumToFloat32(wire, out.data(), inputs.data(), types.data(), n, count);
  for (size_t i = 0; i < count; ++i) {
    float want = pieces[0].At(wire, i);  // rank order, float32 throughout
    for (size_t k = 1; k < n; ++k) want += pieces[k].At(wire, i);
    ASSERT_TRUE(SameFloat(out[i], want)) << "element " << i << ": got " << out[i] << ", want " << want;
  }
  ASSERT_EQ(out[count], 42.0f) << "wrote past the output";
  if (mixed) return;
  // With every input in the wire type, widen-sum-narrow is what the
  // reducer's bfloat16/float16 sum kernel computes.
  std::vector<uint16_t> narrowed(count);
  NarrowFloat32(wire, out.data(), narrowed.data(), count);
  std::vector<uint16_t> reduced(count);
  Reduce(wire, ReduceOp::kSum, reduced.data(), inputs.data(), n, count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameWire(wire, narrowed[i], reduced[i])) << "element " << i;
  }
  bool finite = true;
  for (uint16_t r : reduced) finite = finite && WireIsFinite(wire, r);
  EXPECT_EQ(AllFinite(wire, reduced.data(), count), finite);
}

TEST(WireConvertTest, SumAddsWidenedPiecesInRankOrderOnEveryTarget) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    uint64_t seed = 1;
    for (DataType wire : kWireTypes) {
      for (size_t n : {1, 2, 3, 9, 17}) {
        for (size_t count : {1, 7, 37, 20011}) {
          CheckSum(wire, n, count, false, seed++);
          CheckSum(wire, n, count, true, seed++);
        }
      }
      CheckSum(wire, 4, 33013, true, seed++);  // several chunks
    }
  }
}

TEST(WireConvertTest, SumMayWriteOverAFloat32FirstInput) {
  std::vector<float> first = {1.0f, -2.0f, 0x1p-30f, 3.5f, 0.0f};
  const std::vector<float> original = first;
  std::vector<uint16_t> second;
  for (float x : {0.5f, 0.25f, 1.0f, -3.5f, -0.0f}) second.push_back(FloatToBfloat16(x));
  const void* inputs[] = {first.data(), second.data()};
  const DataType types[] = {DataType::kFloat32, DataType::kBfloat16};
  SumToFloat32(DataType::kBfloat16, first.data(), inputs, types, 2, first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i], original[i] + Bfloat16ToFloat(second[i])) << i;
  }
}

// What a user relies on: the reducer rounds once, so many small
// contributions are not lost as they are when a ring rounds after each add.
TEST(WireConvertTest, ManySmallContributionsSurviveOneRounding) {
  for (DataType wire : kWireTypes) {
    SCOPED_TRACE(DataTypeName(wire));
    // A quarter of the wire type's ulp at 1.0, from 8 ranks, on top of 1.0.
    const float quarter_ulp = wire == DataType::kBfloat16 ? 0x1p-9f : 0x1p-12f;
    std::vector<std::vector<uint16_t>> pieces(9, std::vector<uint16_t>(100));
    for (size_t i = 0; i < 100; ++i) pieces[0][i] = ScalarNarrow(wire, 1.0f);
    for (size_t k = 1; k < 9; ++k) {
      ASSERT_TRUE(NarrowFloat32(wire, std::vector<float>(100, quarter_ulp).data(), pieces[k].data(), 100));
    }
    std::vector<const void*> inputs;
    for (const auto& piece : pieces) inputs.push_back(piece.data());
    const std::vector<DataType> types(9, wire);
    std::vector<float> sum(100);
    SumToFloat32(wire, sum.data(), inputs.data(), types.data(), 9, 100);
    std::vector<uint16_t> result(100);
    ASSERT_TRUE(NarrowFloat32(wire, sum.data(), result.data(), 100));
    for (uint16_t r : result) EXPECT_EQ(ScalarWiden(wire, r), 1.0f + 8 * quarter_ulp);
  }
}

TEST(WireConvertTest, NarrowReportsWhatTheWireCannotCarry) {
  const auto fits = [](DataType wire, float x) {
    std::vector<float> in(33, 1.0f);  // the value in the tail and, below, in the body
    in[32] = x;
    std::vector<uint16_t> out(33);
    const bool tail = NarrowFloat32(wire, in.data(), out.data(), in.size());
    std::swap(in[0], in[32]);
    const bool body = NarrowFloat32(wire, in.data(), out.data(), in.size());
    EXPECT_EQ(tail, body) << x;
    return tail;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DataType wire : kWireTypes) {
    EXPECT_FALSE(fits(wire, inf));
    EXPECT_FALSE(fits(wire, -inf));
    EXPECT_FALSE(fits(wire, nan));
    EXPECT_TRUE(fits(wire, 0x1p-149f));  // a float32 denormal: rounds to zero or a denormal
    EXPECT_TRUE(fits(wire, -0.0f));
  }
  EXPECT_TRUE(fits(DataType::kFloat16, 65504.0f));
  EXPECT_TRUE(fits(DataType::kFloat16, 65519.996f));  // rounds down to 65504
  EXPECT_FALSE(fits(DataType::kFloat16, 65520.0f));   // the tie rounds to Inf
  EXPECT_FALSE(fits(DataType::kFloat16, -1e6f));
  EXPECT_TRUE(fits(DataType::kBfloat16, 1e38f));
  EXPECT_FALSE(fits(DataType::kBfloat16, std::numeric_limits<float>::max()));  // rounds to Inf
  EXPECT_TRUE(fits(DataType::kBfloat16, std::bit_cast<float>(0x7F7F7FFFu)));
}

TEST(WireConvertTest, AFallbackKeepsTheRoundingOfEveryValueThatFits) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> in = {1.0f + 0x1p-12f, 70000.0f, -inf, 3.14159f, 65519.0f};
  std::vector<uint16_t> narrowed(in.size());
  ASSERT_FALSE(NarrowFloat32(DataType::kFloat16, in.data(), narrowed.data(), in.size()));
  std::vector<float> values = in;
  WidenWhereFinite(DataType::kFloat16, narrowed.data(), values.data(), values.size());
  EXPECT_EQ(values[0], 1.0f);  // rounded, as on the wire
  EXPECT_EQ(values[1], 70000.0f);  // beyond float16: exact
  EXPECT_EQ(values[2], -inf);
  EXPECT_EQ(values[3], HalfToFloat(FloatToHalf(3.14159f)));
  EXPECT_EQ(values[4], 65504.0f);
}

}  // namespace
}  // namespace rs::kernels
