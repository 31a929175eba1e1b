// --memory-limit is a promise to the operator: however much the workers
// send, the reducer's resident memory stays within the limit plus a fixed
// overhead, and every operation still completes correctly (TCP flow control
// holds the senders back instead).
#include <gtest/gtest.h>

#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(MemoryTest, SixtyFourConcurrentOperationsStayWithinTheLimit) {
  constexpr uint32_t kWorld = 2;
  constexpr int kOps = 64;
  constexpr size_t kCount = 16 * kMiB / sizeof(float);
  constexpr size_t kLimit = 64 * kMiB;
  ReducerProcess reducer({"--memory-limit", "64MiB", "--max-piece", "1MiB"});
  ASSERT_TRUE(reducer.ok()) << reducer.Log();
  const size_t baseline = reducer.PeakRss();

  RunRanks(kWorld, [&](uint32_t rank) {
    auto o = Options({reducer.endpoint()}, "memory", rank, kWorld);
    o.max_piece_bytes = kMiB;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<std::vector<float>> bufs(kOps);
    std::vector<std::shared_ptr<client::Operation>> ops;
    for (int i = 0; i < kOps; ++i) {
      bufs[i].assign(kCount, static_cast<float>(i + rank));
      ops.push_back((*c)->AllReduce(bufs[i].data(), bufs[i].data(), kCount, DataType::kFloat32, ReduceOp::kSum));
    }
    for (int i = 0; i < kOps; ++i) {
      ASSERT_TRUE(ops[i]->Wait(std::chrono::seconds(120)).ok()) << ops[i]->status().ToString();
      const float want = static_cast<float>(2 * i + 1);
      for (size_t j = 0; j < kCount; j += 4093) ASSERT_EQ(bufs[i][j], want) << "op " << i << " element " << j;
      ASSERT_EQ(bufs[i][kCount - 1], want);
    }
  });

  const size_t peak = reducer.PeakRss();
  // The fixed overhead covers socket buffers, thread stacks and, in
  // sanitizer builds, the shadow of the piece buffers (1/8 of the limit).
  const size_t overhead = 24 * kMiB + kLimit / 8;
  EXPECT_LE(peak, baseline + kLimit + overhead)
      << "peak RSS " << peak / kMiB << " MiB, baseline " << baseline / kMiB << " MiB, limit " << kLimit / kMiB
      << " MiB";
  std::printf("reducer peak RSS %zu MiB (baseline %zu MiB, limit %zu MiB)\n", peak / kMiB, baseline / kMiB,
              kLimit / kMiB);
}

}  // namespace
}  // namespace rs::testing
