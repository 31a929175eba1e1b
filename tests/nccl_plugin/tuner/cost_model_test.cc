// The cost model the tuner decides with (docs/performance.md): where the
// reducers beat NCCL's own algorithms over the same links, and where not.
#include "nccl_plugin/tuner/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/sizes.h"

namespace rs::plugin {
namespace {

CostModel Model(int nodes, int ranks, int reducers, double gbps) {
  CostModelParams p;
  p.nodes = nodes;
  p.ranks = ranks;
  p.reducers = reducers;
  p.link_gbps = gbps;
  return CostModel(p);
}

using rs::testing::kGiB;
using rs::testing::kKiB;
using rs::testing::kMiB;

TEST(CostModel, TwoNodesOfOneGpuNeverUseTheReducers) {
  // A ring of 2 moves S each way in 2 hops, as the reducers do, without the
  // reducers' turn-around: nothing to gain at any size.
  const CostModel m = Model(2, 2, 4, 100);
  for (size_t s = 1; s <= kGiB; s *= 2) EXPECT_FALSE(m.PreferReducers(s)) << s;
  EXPECT_TRUE(m.SwitchSizes(1, size_t{1} << 40).empty());
  EXPECT_NE(m.Describe().find("NCCL's own algorithms at every size"), std::string::npos) << m.Describe();
}

TEST(CostModel, EnoughReducersWinEverySizeFromFourNodes) {
  // R B_r >= n B: a node sends and receives S instead of 2(n-1)/n S, and
  // waits 2 hops instead of 2(n-1).
  for (double gbps : {10.0, 100.0}) {
    const CostModel m = Model(4, 4, 4, gbps);
    for (size_t s = 1; s <= kGiB; s *= 2) EXPECT_TRUE(m.PreferReducers(s)) << s << " at " << gbps;
    EXPECT_NE(m.Describe().find("through the reducers at every size"), std::string::npos) << m.Describe();
  }
  // Large operations approach the line rate: 1.5x a ring of 4 nodes.
  const CostModel m = Model(4, 4, 4, 100);
  EXPECT_NEAR(m.RingUs(kGiB) / m.ReducersUs(kGiB), 1.5, 0.01);
}

TEST(CostModel, TooFewReducersWinSmallSizesAndLoseLargeOnes) {
  // 8 nodes, 2 reducers with the nodes' link rate: the reducers carry 4x a
  // node's bytes each (bound B/4) against a ring's 8/14 B, but take 2 hops
  // instead of 14. Between 32 KiB and 256 KiB NCCL's first call is 32 KiB:
  //   60 + 4 S/B + 32768/B  <  280 + 1.75 S/B   <=>   S < (220 B - 32768) / 2.25
  const double bytes_per_us = 10.0 * 125;  // 10 Gbit/s
  const CostModel m = Model(8, 8, 2, 10);
  const auto expected = static_cast<size_t>(std::ceil((220 * bytes_per_us - 32768) / 2.25));
  ASSERT_GT(expected, 32 * kKiB);
  ASSERT_LT(expected, 256 * kKiB);
  EXPECT_EQ(m.SwitchSizes(1, size_t{1} << 40), (std::vector<size_t>{expected}));
  EXPECT_TRUE(m.PreferReducers(expected - 1));
  EXPECT_FALSE(m.PreferReducers(expected));
  EXPECT_FALSE(m.PreferReducers(kGiB));
  EXPECT_NE(m.Describe().find("through the reducers below 105.1 KiB, NCCL's own algorithms otherwise"),
            std::string::npos)
      << m.Describe();
}

TEST(CostModel, MoreReducersKeepTheReducersLonger) {
  size_t last = 0;
  for (int reducers : {1, 2, 3, 4}) {
    const std::vector<size_t> s = Model(8, 8, reducers, 10).SwitchSizes(1, size_t{1} << 40);
    ASSERT_EQ(s.size(), 1u) << reducers;
    EXPECT_GT(s[0], last) << reducers;
    last = s[0];
  }
  // From 8 reducers on (R B_r >= n B) there is no size where the ring wins.
  EXPECT_TRUE(Model(8, 8, 8, 10).SwitchSizes(1, size_t{1} << 40).empty());
  EXPECT_TRUE(Model(8, 8, 8, 10).PreferReducers(kGiB));
}

TEST(CostModel, FasterReducerLinksCountAsMoreReducers) {
  CostModelParams p;
  p.nodes = 8;
  p.ranks = 8;
  p.reducers = 2;
  p.link_gbps = 10;
  p.reducer_link_gbps = 40;  // 2 x 40 >= 8 x 10
  EXPECT_TRUE(CostModel(p).PreferReducers(kGiB));
}

TEST(CostModel, SeveralGpusPerNodeMakeTheRingCarryMore) {
  // 2 nodes of 8 GPUs: a ring over 16 ranks crosses each node's link with
  // about 2 S, the reducers with S: large operations go to the reducers.
  const CostModel m = Model(2, 16, 2, 100);
  EXPECT_FALSE(m.PreferReducers(4 * kKiB));
  EXPECT_TRUE(m.PreferReducers(kGiB));
}

}  // namespace
}  // namespace rs::plugin
