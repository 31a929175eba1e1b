// The worker's wire type conversions must give exactly half.h's bits (which
// the reducers' SIMD kernels are held to as well), or a rank and a reducer
// would disagree: every 16-bit pattern widened, a sweep of float32 patterns
// with both formats' ties narrowed, NaN payloads included.
#include "client/wire_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "common/half.h"

namespace rs::client {
namespace {

TEST(WireCodecTest, WidensEveryPatternAsHalfHDoes) {
  std::vector<uint16_t> in(0x10000);
  for (uint32_t h = 0; h <= 0xFFFF; ++h) in[h] = static_cast<uint16_t>(h);
  std::vector<float> out(in.size());
  WidenPart(DataType::kFloat16, in.data(), out.data(), in.size());
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), std::bit_cast<uint32_t>(HalfToFloat(in[h]))) << std::hex << h;
  }
  WidenPart(DataType::kBfloat16, in.data(), out.data(), in.size());
  for (uint32_t h = 0; h <= 0xFFFF; ++h) ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), h << 16) << std::hex << h;
}

TEST(WireCodecTest, NarrowsAsHalfHDoesTiesAndNaNsIncluded) {
  std::vector<float> in;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += 4099) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // float16 ties and their neighbours
    const uint32_t mid = std::bit_cast<uint32_t>(static_cast<float>(
        (double{HalfToFloat(static_cast<uint16_t>(h))} + HalfToFloat(static_cast<uint16_t>(h + 1))) / 2));
    for (uint32_t m : {mid - 1, mid, mid + 1}) in.push_back(std::bit_cast<float>(m));
  }
  for (uint32_t b = 0; b < 0x8000; ++b) in.push_back(std::bit_cast<float>((b << 16) | 0x8000u));  // bfloat16 ties
  for (DataType wire : {DataType::kFloat16, DataType::kBfloat16}) {
    std::vector<uint16_t> out(in.size());
    NarrowPiece(wire, in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const uint16_t want = wire == DataType::kFloat16 ? FloatToHalf(in[i]) : FloatToBfloat16(in[i]);
      ASSERT_EQ(out[i], want) << DataTypeName(wire) << " of 0x" << std::hex << std::bit_cast<uint32_t>(in[i]);
    }
  }
}

TEST(WireCodecTest, APieceThatDoesNotFitGoesAsFloat32WithTheFittingValuesRounded) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> in = {1.0f + 0x1p-12f, 1e5f, -inf, 0.1f};
  std::vector<uint16_t> narrowed(in.size());
  EXPECT_FALSE(NarrowPiece(DataType::kFloat16, in.data(), narrowed.data(), in.size()));
  EXPECT_TRUE(NarrowPiece(DataType::kFloat16, in.data(), narrowed.data(), 1));  // the first alone fits
  EXPECT_FALSE(NarrowPiece(DataType::kBfloat16, in.data(), narrowed.data(), in.size()));  // -inf
  NarrowPiece(DataType::kFloat16, in.data(), narrowed.data(), in.size());
  std::vector<float> out(in.size());
  FallbackPiece(DataType::kFloat16, narrowed.data(), in.data(), out.data(), in.size());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1e5f);
  EXPECT_EQ(out[2], -inf);
  EXPECT_EQ(out[3], HalfToFloat(FloatToHalf(0.1f)));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(NarrowPiece(DataType::kBfloat16, &nan, narrowed.data(), 1));
}

}  // namespace
}  // namespace rs::client
