#include "trainer/data/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rs::trainer {
namespace {

const MlpShape kShape{12, 32, 3, 4};

TEST(SyntheticDataTest, ABatchIsAFunctionOfSeedRankAndStep) {
  const SyntheticData a(kShape, 5), b(kShape, 5);
  Batch x, y;
  a.MakeBatch(2, 17, 8, &x);
  b.MakeBatch(2, 17, 8, &y);
  EXPECT_EQ(x.x, y.x);
  EXPECT_EQ(x.y, y.y);
  EXPECT_EQ(x.rows, 8);
  EXPECT_EQ(x.x.size(), 8u * 12u);
  EXPECT_EQ(x.y.size(), 8u * 4u);
  for (auto [rank, step, seed] :
       {std::tuple{3u, 17ull, 5ull}, std::tuple{2u, 18ull, 5ull}, std::tuple{2u, 17ull, 6ull}}) {
    SyntheticData(kShape, seed).MakeBatch(rank, step, 8, &y);
    EXPECT_NE(x.x, y.x) << "rank " << rank << " step " << step << " seed " << seed;
  }
}

TEST(SyntheticDataTest, InputsAreUniformAndTargetsCarrySignal) {
  const SyntheticData data(kShape, 1);
  Batch b;
  data.MakeBatch(0, 0, 256, &b);
  double mean = 0, var_y = 0, mean_y = 0;
  for (float v : b.x) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    mean += v;
  }
  mean /= static_cast<double>(b.x.size());
  EXPECT_NEAR(mean, 0.0, 0.05);
  for (float v : b.y) mean_y += v;
  mean_y /= static_cast<double>(b.y.size());
  for (float v : b.y) var_y += (v - mean_y) * (v - mean_y);
  var_y /= static_cast<double>(b.y.size());
  // The teacher's outputs vary far more than the noise does (variance 1.3e-4).
  EXPECT_GT(var_y, 0.1);
}

}  // namespace
}  // namespace rs::trainer
