// The worker's wire type conversions must give exactly half.h's bits (which
// the reducers' SIMD kernels are held to as well), or a rank and a reducer
// would disagree: every 16-bit pattern widened, a sweep of float32 patterns
// with both formats' ties narrowed, NaN payloads included. Every build the
// CPU runs (AVX-512, AVX2, the baseline) is held to them.
#include "client/wire_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/half.h"

namespace rs::client {
namespace {

constexpr WireCodecImpl kImpls[] = {WireCodecImpl::kAvx512, WireCodecImpl::kAvx2, WireCodecImpl::kPortable};

class WireCodecTest : public ::testing::TestWithParam<WireCodecImpl> {
 protected:
  void SetUp() override {
    if (!WireCodecAvailable(GetParam())) GTEST_SKIP() << WireCodecImplName(GetParam()) << ": not on this CPU";
  }
  bool NarrowPiece(DataType wire, const float* in, uint16_t* out, size_t count) {
    return NarrowPieceUsing(GetParam(), wire, in, out, count);
  }
  void WidenPart(DataType wire, const uint16_t* in, float* out, size_t count) {
    WidenPartUsing(GetParam(), wire, in, out, count);
  }
};

INSTANTIATE_TEST_SUITE_P(Builds, WireCodecTest, ::testing::ValuesIn(kImpls),
                         [](const ::testing::TestParamInfo<WireCodecImpl>& info) {
                           return std::string(WireCodecImplName(info.param));
                         });

TEST(WireCodecChoiceTest, TheFastestBuildThisCpuRunsIsTheOneInUse) {
  for (WireCodecImpl impl : kImpls) {
    if (!WireCodecAvailable(impl)) continue;
    EXPECT_STREQ(WireCodecImplementation(), WireCodecImplName(impl));
    break;
  }
  EXPECT_TRUE(WireCodecAvailable(WireCodecImpl::kPortable));
}

TEST_P(WireCodecTest, WidensEveryPatternAsHalfHDoes) {
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

TEST_P(WireCodecTest, NarrowsAsHalfHDoesTiesAndNaNsIncluded) {
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

// The vector loops' heads and tails: every short length from every start
// within a cache line, and a non-finite value at each place of a piece.
TEST_P(WireCodecTest, EveryLengthAndStartGivesHalfHsBits) {
  std::vector<float> in(200);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = std::ldexp(static_cast<float>(i * 37 % 101) - 50.3f, static_cast<int>(i % 21) - 14);
  }
  for (DataType wire : {DataType::kFloat16, DataType::kBfloat16}) {
    for (size_t start = 0; start < 16; ++start) {
      for (size_t count = 0; count + start <= 150; ++count) {
        std::vector<uint16_t> out(count + 1, 0xABCD);
        ASSERT_TRUE(NarrowPiece(wire, in.data() + start, out.data(), count)) << start << " " << count;
        for (size_t i = 0; i < count; ++i) {
          const float x = in[start + i];
          const uint16_t want = wire == DataType::kFloat16 ? FloatToHalf(x) : FloatToBfloat16(x);
          ASSERT_EQ(out[i], want) << DataTypeName(wire) << " start " << start << " count " << count << " at " << i;
        }
        ASSERT_EQ(out[count], 0xABCD) << "wrote past the end";
        std::vector<float> wide(count + 1, -7.0f);
        WidenPart(wire, out.data(), wide.data(), count);
        for (size_t i = 0; i < count; ++i) {
          const float want = wire == DataType::kFloat16 ? HalfToFloat(out[i]) : Bfloat16ToFloat(out[i]);
          ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(want));
        }
        ASSERT_EQ(wide[count], -7.0f) << "wrote past the end";
      }
    }
    std::vector<float> piece(in.begin(), in.begin() + 100);
    std::vector<uint16_t> out(piece.size());
    for (size_t at = 0; at < piece.size(); ++at) {
      const float saved = piece[at];
      piece[at] = std::numeric_limits<float>::infinity();
      ASSERT_FALSE(NarrowPiece(wire, piece.data(), out.data(), piece.size())) << DataTypeName(wire) << " at " << at;
      piece[at] = saved;
    }
  }
}

TEST_P(WireCodecTest, APieceThatDoesNotFitGoesAsFloat32WithTheFittingValuesRounded) {
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
