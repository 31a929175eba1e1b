#include "trainer/ddp/sgd.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/half.h"

namespace rs::trainer {
namespace {

TEST(SgdTest, AveragesThenAppliesPyTorchsMomentumRule) {
  std::vector<float> p = {1.0f, -2.0f}, m = {0.5f, 0.0f}, g = {8.0f, -4.0f};
  AverageAndStep(p.data(), m.data(), g.data(), 2, /*world=*/4, SgdConfig{0.5f, 0.75f});
  EXPECT_EQ(g, (std::vector<float>{2.0f, -1.0f}));  // averaged in place
  // buf = 0.75 * m + g; p -= 0.5 * buf
  EXPECT_EQ(m, (std::vector<float>{2.375f, -1.0f}));
  EXPECT_EQ(p, (std::vector<float>{1.0f - 1.1875f, -1.5f}));
}

TEST(SgdTest, Bfloat16ConversionsRoundToNearestEvenLikeTheReducers) {
  const std::vector<float> in = {1.0f, 1.00390625f, 1.01171875f, -3.1415926f, 1e-30f, 65504.0f};
  std::vector<uint16_t> bf(in.size());
  ToBfloat16(in.data(), bf.data(), in.size());
  std::vector<float> back(in.size());
  FromBfloat16(bf.data(), back.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(bf[i], FloatToBfloat16(in[i])) << in[i];
    EXPECT_EQ(back[i], Bfloat16ToFloat(bf[i])) << in[i];
  }
  EXPECT_EQ(back[1], 1.0f);       // halfway: ties to even (down)
  EXPECT_EQ(back[2], 1.015625f);  // halfway: ties to even (up)
}

}  // namespace
}  // namespace rs::trainer
