#include "trainer/ddp/bucket_plan.h"

#include <gtest/gtest.h>

namespace rs::trainer {
namespace {

MlpLayout Layout(MlpShape shape) {
  auto l = MlpLayout::Create(shape);
  EXPECT_TRUE(l.ok());
  return *l;
}

// Buckets together cover the gradient buffer exactly once, each a
// contiguous range, bucket 0 at the end of the buffer (the last layer,
// whose gradients backward produces first).
void ExpectTiling(const BucketPlan& plan, size_t params) {
  size_t end = params;
  for (const Bucket& b : plan.buckets()) {
    EXPECT_EQ(b.offset + b.count, end) << "bucket " << b.index;
    EXPECT_GT(b.count, 0u);
    end = b.offset;
  }
  EXPECT_EQ(end, 0u);
}

TEST(BucketPlanTest, PacksTensorsInBackwardOrderUpToTheCap) {
  // Layers: 100x200 (80000 B) + 200, 200x200 (160000 B) + 200, 200x10 + 10.
  const MlpLayout layout = Layout(MlpShape{100, 200, 3, 10});
  const BucketPlan plan(layout, /*cap_bytes=*/100'000, /*first_cap_bytes=*/10'000);
  ExpectTiling(plan, layout.num_params());
  ASSERT_EQ(plan.buckets().size(), 2u);
  // First bucket: layer 2's bias and weights (8040 B) then layer 1's bias
  // (800 B), closing only after layer 1's weights push it past 10000 B.
  EXPECT_EQ(plan.buckets()[0].count, 10u + 2000u + 200u + 40000u);
  EXPECT_EQ(plan.buckets()[0].ready_after_layer, 1);
  // Then layer 0's bias and weights (80800 B), below the cap: the last
  // bucket is whatever is left.
  EXPECT_EQ(plan.buckets()[1].count, 200u + 20000u);
  EXPECT_EQ(plan.buckets()[1].ready_after_layer, 0);
  EXPECT_EQ(plan.ReadyAfterLayer(2).size(), 0u);
  EXPECT_EQ(plan.ReadyAfterLayer(1), (std::vector<size_t>{0}));
  EXPECT_EQ(plan.ReadyAfterLayer(0), (std::vector<size_t>{1}));
  EXPECT_EQ(plan.largest_count(), 42210u);
}

TEST(BucketPlanTest, TinyCapGivesOneTensorPerBucket) {
  const MlpLayout layout = Layout(MlpShape{4, 8, 3, 2});
  const BucketPlan plan(layout, 1, 1);
  ExpectTiling(plan, layout.num_params());
  EXPECT_EQ(plan.buckets().size(), layout.tensors().size());
  for (int l = 0; l < 3; ++l) EXPECT_EQ(plan.ReadyAfterLayer(l).size(), 2u);
}

TEST(BucketPlanTest, HugeCapGivesOneBucketReadyAtTheEnd) {
  const MlpLayout layout = Layout(MlpShape{4, 8, 3, 2});
  const BucketPlan plan(layout, size_t{1} << 30, size_t{1} << 30);
  ASSERT_EQ(plan.buckets().size(), 1u);
  EXPECT_EQ(plan.buckets()[0].count, layout.num_params());
  EXPECT_EQ(plan.ReadyAfterLayer(0), (std::vector<size_t>{0}));
}

TEST(BucketPlanTest, FirstCapNeverExceedsTheCap) {
  const MlpLayout layout = Layout(MlpShape{64, 64, 4, 64});
  // A 1 KiB cap with the 1 MiB first-bucket default: the first bucket too
  // closes at 1 KiB (one bias + one 16 KiB weight matrix per bucket), rather
  // than taking the whole 65 KiB model.
  const BucketPlan plan(layout, 1024);
  EXPECT_EQ(plan.buckets().size(), 4u);
  EXPECT_EQ(plan.buckets()[0].count, 64u + 64u * 64u);
}

}  // namespace
}  // namespace rs::trainer
