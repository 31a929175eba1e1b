// reducer-bench's traffic shapes against what NCCL 2.28.9 and PyTorch DDP
// actually issue (../shared/docs/nccl-abi.md; torch's bucket defaults).
#include "bench/workloads.h"
#include "bench/workload_flags.h"

#include <gtest/gtest.h>

#include <numeric>

namespace rs::bench {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// enqueue.cc: 256 KiB, halved while fewer than 64 chunks per channel (to
// 128 KiB), fewer than 8 (to 64 KiB), fewer than 1 (to 32 KiB).
TEST(CollNetShapeTest, ChunkFollowsNccl228Rule) {
  EXPECT_EQ(CollNetChunkBytes(1ull << 30, 4), 256 * KiB);  // 1024 chunks per channel
  EXPECT_EQ(CollNetChunkBytes(64 * 4 * 256 * KiB, 4), 256 * KiB);  // exactly 64 per channel
  EXPECT_EQ(CollNetChunkBytes(64 * 4 * 256 * KiB - 1, 4), 128 * KiB);
  EXPECT_EQ(CollNetChunkBytes(8 * 4 * 128 * KiB, 4), 128 * KiB);  // 8 per channel stops the second halving
  EXPECT_EQ(CollNetChunkBytes(8 * 4 * 128 * KiB - 1, 4), 64 * KiB);
  EXPECT_EQ(CollNetChunkBytes(4 * 64 * KiB, 4), 64 * KiB);  // one per channel stops the last
  EXPECT_EQ(CollNetChunkBytes(4 * KiB, 4), 32 * KiB);       // never below 32 KiB
  EXPECT_EQ(CollNetChunkBytes(0, 1), 32 * KiB);
}

// A 4 KiB all-reduce on one channel moves one whole 32 KiB chunk.
TEST(CollNetShapeTest, SmallAllReduceMovesAWholeChunk) {
  const CollNetShape s = ShapeCollNet(4 * KiB, 1, 0);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0], 32 * KiB);
  EXPECT_EQ(s.wire_bytes, 32 * KiB);
  EXPECT_EQ(s.max_inflight, 8u);
}

// 128 MiB on 8 channels: 64 chunks of 256 KiB per channel, so 2 MiB calls;
// half of it has too few chunks for 256 KiB and moves 1 MiB calls.
TEST(CollNetShapeTest, LargeAllReduceIsTwoMiBCalls) {
  const CollNetShape s = ShapeCollNet(128 * MiB, 8, 0);
  EXPECT_EQ(s.chunk_bytes, 256 * KiB);
  ASSERT_EQ(s.calls.size(), 64u);
  for (uint64_t c : s.calls) EXPECT_EQ(c, 2 * MiB);
  EXPECT_EQ(s.wire_bytes, 128 * MiB);
  EXPECT_EQ(s.max_inflight, 8u);
  const CollNetShape half = ShapeCollNet(64 * MiB, 8, 0);
  EXPECT_EQ(half.chunk_bytes, 128 * KiB);
  EXPECT_EQ(half.calls.size(), 64u);
  EXPECT_EQ(half.calls[0], 1 * MiB);
}

// Channels beyond 8 form more groups: one call per group per step, in step
// order, 8 steps in flight per group, 64 at most.
TEST(CollNetShapeTest, ChannelsGroupByEight) {
  const CollNetShape s = ShapeCollNet(10 * 256 * KiB * 100, 10, 256 * KiB);
  EXPECT_EQ(s.max_inflight, 16u);
  ASSERT_EQ(s.calls.size(), 200u);
  EXPECT_EQ(s.calls[0], 8 * 256 * KiB);
  EXPECT_EQ(s.calls[1], 2 * 256 * KiB);
  EXPECT_EQ(s.calls[2], 8 * 256 * KiB);
  EXPECT_EQ(ShapeCollNet(1 * MiB, 64, 0).max_inflight, 64u);
  EXPECT_EQ(ShapeCollNet(1 * MiB, 200, 0).channels, 64u);  // NCCL's MAXCHANNELS
}

// The padding past the data is whole chunks, never a partial call.
TEST(CollNetShapeTest, TailIsPaddedToWholeChunks) {
  const CollNetShape s = ShapeCollNet(3 * MiB + 4, 4, 256 * KiB);
  EXPECT_EQ(s.calls.size(), 4u);  // ceil((3 MiB + 4) / 1 MiB)
  EXPECT_EQ(s.wire_bytes, 4 * MiB);
  EXPECT_EQ(std::accumulate(s.calls.begin(), s.calls.end(), uint64_t{0}), s.wire_bytes);
  EXPECT_TRUE(ShapeCollNet(0, 4, 0).calls.empty());
}

// torch DDP: bucket_cap_mb=25 and a first bucket of 1 MiB.
TEST(DdpBucketsTest, TorchDefaults) {
  const auto b = DdpBuckets(100 * MiB, 25 * MiB, 1 * MiB, 4);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0], 1 * MiB);
  EXPECT_EQ(b[1], 25 * MiB);
  EXPECT_EQ(b[3], 25 * MiB);
  EXPECT_EQ(b[4], 24 * MiB);
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), uint64_t{0}), 100 * MiB);
}

TEST(DdpBucketsTest, WholeElementsOnly) {
  const auto b = DdpBuckets(10 * MiB + 6, 3 * MiB + 1, 5, 4);
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(b[0], 4u);  // a 5-byte cap holds one float32
  for (uint64_t x : b) EXPECT_EQ(x % 4, 0u);
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), uint64_t{0}), 10 * MiB + 4);
  EXPECT_EQ(DdpBuckets(1 * MiB, 2, 2, 8).size(), 1u * MiB / 8);  // caps below one element hold one
  EXPECT_TRUE(DdpBuckets(3, 25 * MiB, 1 * MiB, 4).empty());
}

TEST(WorkloadFlagsTest, PatternsAndSizeListsParse) {
  EXPECT_EQ(*ParsePattern("ddp"), Pattern::kDdp);
  EXPECT_EQ(*ParsePattern("collnet"), Pattern::kCollNet);
  EXPECT_EQ(PatternName(Pattern::kSweep), std::string("sweep"));
  auto bad = ParsePattern("ring");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--pattern"), std::string::npos);
  auto list = ParseSizeList("25M,64M");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<uint64_t>{25 * MiB, 64 * MiB}));
  EXPECT_FALSE(ParseSizeList("25M,0").ok());
  EXPECT_FALSE(ParseSizeList("").ok());
  EXPECT_FALSE(ParseSizeList("lots").ok());
}

// The DDP step's forward pass: a duration like --ddp-gap, none by default,
// and a bad value is an error that names the flag.
TEST(WorkloadFlagsTest, DdpForwardIsADurationNamedInErrors) {
  WorkloadFlags flags;
  WorkloadOptions options;
  ASSERT_TRUE(ParseWorkloadFlags(flags, &options).ok());
  EXPECT_EQ(options.ddp_forward.count(), 0);
  flags.ddp_forward = "1500ms";
  ASSERT_TRUE(ParseWorkloadFlags(flags, &options).ok());
  EXPECT_EQ(options.ddp_forward, std::chrono::milliseconds(1500));
  for (const char* bad : {"soon", "-1s"}) {
    flags.ddp_forward = bad;
    Status st = ParseWorkloadFlags(flags, &options);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("--ddp-forward"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace rs::bench
