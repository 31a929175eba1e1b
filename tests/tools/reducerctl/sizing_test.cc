// `reducerctl plan` against the documented sizing examples
// (docs/control-plane.md, ../shared/docs/field.md and design.md).
#include "tools/reducerctl/sizing.h"

#include <gtest/gtest.h>

namespace rs::reducerctl {
namespace {

Plan MustPlan(uint32_t workers, double worker_gbps, double reducer_gbps, uint32_t reducers = 0) {
  auto p = ComputePlan({workers, worker_gbps, reducer_gbps, reducers});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Plan{};
}

// field.md: "5 GPU nodes at 100 Gbps need 16 reducers at 32 Gbps".
TEST(SizingTest, FiveNodesAt100GbpsNeedSixteenReducersAt32Gbps) {
  const Plan p = MustPlan(5, 100, 32);
  EXPECT_EQ(p.recommended_reducers, 16u);
  EXPECT_EQ(p.reducers, 16u);
  EXPECT_DOUBLE_EQ(p.worker_total_gbps, 500);
  EXPECT_DOUBLE_EQ(p.reducer_total_gbps, 512);
  EXPECT_FALSE(p.reducer_bound);
  EXPECT_DOUBLE_EQ(p.algbw_gbps, 100);       // the line rate: 12.5 GB/s
  EXPECT_DOUBLE_EQ(p.ring_algbw_gbps, 62.5);  // 100 * 5 / 8
  EXPECT_DOUBLE_EQ(p.speedup, 1.6);           // 2(n-1)/n
  // One reducer fewer falls short of the workers' total.
  const Plan fewer = MustPlan(5, 100, 32, 15);
  EXPECT_TRUE(fewer.reducer_bound);
  EXPECT_DOUBLE_EQ(fewer.algbw_gbps, 15 * 32 / 5.0);
}

// field.md's 4 ranks on 100 Gbps (Optcast: 5.21 GB/s, "about 42% of line
// rate") and design.md's "1.5x at 4 nodes, 1.75x at 8".
TEST(SizingTest, FourAndEightNodesAt100Gbps) {
  const Plan four = MustPlan(4, 100, 32);
  EXPECT_EQ(four.recommended_reducers, 13u);   // ceil(400 / 32)
  EXPECT_DOUBLE_EQ(four.algbw_gbps / 8, 12.5);  // GB/s: 5.21 GB/s is 42% of it
  EXPECT_NEAR(5.21 / (four.algbw_gbps / 8), 0.42, 0.005);
  EXPECT_DOUBLE_EQ(four.speedup, 1.5);
  EXPECT_DOUBLE_EQ(MustPlan(8, 100, 100).speedup, 1.75);
  EXPECT_EQ(MustPlan(8, 100, 100).recommended_reducers, 8u);
}

TEST(SizingTest, AnExactFitIsNotRoundedUp) {
  EXPECT_EQ(MustPlan(4, 100, 25).recommended_reducers, 16u);
  EXPECT_EQ(MustPlan(3, 0.1, 0.3).recommended_reducers, 1u);
  EXPECT_EQ(MustPlan(2, 10, 100).recommended_reducers, 1u);  // never zero
}

TEST(SizingTest, BadInputNamesTheFlag) {
  auto p = ComputePlan({1, 100, 32, 0});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--workers must be at least 2"), std::string::npos);
  p = ComputePlan({4, 0, 32, 0});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--worker-gbps"), std::string::npos);
  p = ComputePlan({4, 100, -1, 0});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--reducer-gbps"), std::string::npos);
}

}  // namespace
}  // namespace rs::reducerctl
