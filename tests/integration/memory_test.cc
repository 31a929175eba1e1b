// --memory-limit is a promise to the operator: however much the workers
// send, the reducer's resident memory stays within the limit plus a fixed
// overhead, and every operation still completes correctly (TCP flow control
// holds the senders back instead).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "tests/support/sizes.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

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

// Back-pressure outlasting the kernel's timeout. While a straggler holds the
// reducer's memory, the other rank's stream waits on a zero TCP window, and
// Linux aborts a connection whose zero window lasts longer than its
// TCP_USER_TIMEOUT even though the reducer answers every probe. The wait is
// the reducer's to bound (--op-timeout); here it is twice the kernel's 2 T
// with T = 1 s, and the operation must still complete, exactly.
TEST(MemoryTest, BackPressureLongerThanTheLivenessTimeoutIsNotALostReducer) {
  constexpr uint32_t kWorld = 2;
  constexpr size_t kCount = 32 * kMiB / sizeof(float);
  ReducerProcess reducer({"--memory-limit", "2MiB", "--op-timeout", "60s"});
  ASSERT_TRUE(reducer.ok()) << reducer.Log();
  RunRanks(kWorld, [&](uint32_t rank) {
    auto o = Options({reducer.endpoint()}, "memory-straggler", rank, kWorld);
    o.liveness_timeout = std::chrono::milliseconds(1000);
    o.send_window_bytes = 0;  // no window of its own: the reducer's memory is what holds rank 0 back
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> buf(kCount, static_cast<float>(rank + 1));
    // The straggler: the delay is the point of the test, not a wait for something.
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    const Status st =
        (*c)->AllReduce(buf.data(), buf.data(), kCount, DataType::kFloat32, ReduceOp::kSum)->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(st.ok()) << "rank " << rank << ": " << st.ToString();
    for (size_t j = 0; j < kCount; j += 4093) ASSERT_EQ(buf[j], 3.0f) << "element " << j;
    ASSERT_EQ(buf[kCount - 1], 3.0f);
  });
}

// A rank that gives up while its stream waits on that back-pressure: the
// ERROR frame queues behind a write the reducer does not read, while the
// reducer's heartbeats still arrive. The closing stream gives its writes
// twice the liveness timeout, then shuts, so the failed operation returns
// its error instead of waiting on the stuck write (its buffers are still
// being read from until then).
TEST(MemoryTest, AClosingStreamStuckBehindBackPressureGivesUpAfterTwiceTheTimeout) {
  constexpr uint32_t kWorld = 2;
  constexpr size_t kCount = 32 * kMiB / sizeof(float);
  ReducerProcess reducer({"--memory-limit", "2MiB", "--op-timeout", "60s"});
  ASSERT_TRUE(reducer.ok()) << reducer.Log();
  std::atomic<bool> rank0_done{false};
  RunRanks(kWorld, [&](uint32_t rank) {
    auto o = Options({reducer.endpoint()}, "closing-behind-back-pressure", rank, kWorld);
    o.liveness_timeout = std::chrono::milliseconds(1000);
    o.op_timeout = std::chrono::milliseconds(2000);  // rank 0 gives up after 2 s
    o.send_window_bytes = 0;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (rank == 1) {  // joined, never contributes; leaves once rank 0 is done
      for (int i = 0; i < 3000 && !rank0_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    std::vector<float> buf(kCount, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    const Status st =
        (*c)->AllReduce(buf.data(), buf.data(), kCount, DataType::kFloat32, ReduceOp::kSum)->Wait(std::chrono::seconds(30));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rank0_done = true;
    EXPECT_EQ(st.code(), Code::kTimeout) << st.ToString();
    EXPECT_NE(st.message().find("got no result within 2000 ms"), std::string::npos) << st.message();
    std::printf("the operation returned its error after %.2f s\n", took);
    // The 2 s operation timeout, then 2 s for the closing stream's writes.
    EXPECT_LT(took, 10.0);
  });
}

}  // namespace
}  // namespace rs::testing
