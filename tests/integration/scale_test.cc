// Scale on loopback: 32 worker clients (threads, each with its own client and
// I/O thread) against 4 reducers, mixed message sizes and two data types with
// every operation in flight at once. Every element of every result is
// checked, and each reducer's resident memory stays within its limit: 32
// ranks' pieces must not make a reducer allocate past --memory-limit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "tests/support/sizes.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

constexpr uint32_t kScaleWorld = 32;
constexpr int kReducers = 4;
constexpr size_t kLimit = 32 * kMiB;
// Element counts: one element, a small message, odd counts that do not divide
// into pieces evenly, and messages of several pieces per reducer.
constexpr size_t kCounts[] = {1, 1024, 100'003, 262'144, 1'000'001, 64, 3 * 262'144 + 5};

// Rank r contributes (r + 1) * (j % 7 + 1) at element j; small integers, so
// the float32 sum is exact too.
template <typename T>
T ScaleInput(uint32_t rank, size_t j) {
  return static_cast<T>((rank + 1) * (j % 7 + 1));
}
template <typename T>
T ScaleExpected(size_t j) {
  return static_cast<T>(kScaleWorld * (kScaleWorld + 1) / 2 * (j % 7 + 1));
}

struct Buffers {
  std::vector<float> f;
  std::vector<int32_t> i;
};

TEST(ScaleTest, ThirtyTwoClientsFourReducersMixedSizes) {
  std::vector<std::unique_ptr<ReducerProcess>> reducers;
  std::vector<client::Endpoint> endpoints;
  for (int i = 0; i < kReducers; ++i) {
    reducers.push_back(std::make_unique<ReducerProcess>(
        std::vector<std::string>{"--memory-limit", "32MiB", "--max-piece", "256KiB"}));
    ASSERT_TRUE(reducers.back()->ok()) << reducers.back()->Log();
    endpoints.push_back(reducers.back()->endpoint());
  }
  std::vector<size_t> baseline;
  for (auto& r : reducers) baseline.push_back(r->PeakRss());

  size_t bytes_per_rank = 0;
  for (size_t n : kCounts) bytes_per_rank += n * (sizeof(float) + sizeof(int32_t));
  const auto start = std::chrono::steady_clock::now();
  RunRanks(kScaleWorld, [&](uint32_t rank) {
    auto o = Options(endpoints, "scale", rank, kScaleWorld);
    o.max_piece_bytes = 256 << 10;
    o.streams_per_reducer = 1;
    o.connect_timeout = std::chrono::seconds(60);
    o.op_timeout = std::chrono::seconds(120);
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << "rank " << rank << ": " << c.status().ToString();
    std::vector<Buffers> bufs(std::size(kCounts));
    std::vector<std::shared_ptr<client::Operation>> ops;
    for (size_t k = 0; k < std::size(kCounts); ++k) {
      const size_t n = kCounts[k];
      bufs[k].f.resize(n);
      bufs[k].i.resize(n);
      for (size_t j = 0; j < n; ++j) {
        bufs[k].f[j] = ScaleInput<float>(rank, j);
        bufs[k].i[j] = ScaleInput<int32_t>(rank, j);
      }
      ops.push_back((*c)->AllReduce(bufs[k].f.data(), bufs[k].f.data(), n, DataType::kFloat32, ReduceOp::kSum));
      ops.push_back((*c)->AllReduce(bufs[k].i.data(), bufs[k].i.data(), n, DataType::kInt32, ReduceOp::kSum));
    }
    for (auto& op : ops) ASSERT_TRUE(op->Wait(std::chrono::seconds(180)).ok()) << op->status().ToString();
    for (size_t k = 0; k < std::size(kCounts); ++k) {
      size_t wrong = 0;
      for (size_t j = 0; j < kCounts[k]; ++j) {
        wrong += bufs[k].f[j] != ScaleExpected<float>(j);
        wrong += bufs[k].i[j] != ScaleExpected<int32_t>(j);
      }
      ASSERT_EQ(wrong, 0u) << "rank " << rank << ", " << kCounts[k] << " elements";
    }
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (int i = 0; i < kReducers; ++i) {
    const size_t peak = reducers[i]->PeakRss();
    // Socket buffers of 32 connections, thread stacks, and in sanitizer
    // builds the shadow of the piece buffers.
    const size_t overhead = 32 * kMiB + kLimit / 8;
    EXPECT_LE(peak, baseline[i] + kLimit + overhead)
        << "reducer " << i << ": peak RSS " << peak / kMiB << " MiB, baseline " << baseline[i] / kMiB << " MiB";
    std::printf("reducer %d: peak RSS %zu MiB (baseline %zu MiB, limit %zu MiB)\n", i, peak / kMiB,
                baseline[i] / kMiB, kLimit / kMiB);
    EXPECT_EQ(reducers[i]->Terminate(), 0) << reducers[i]->Log();
  }
  std::printf("%u clients x %d reducers: %zu operations of %.1f MiB per rank in %.2f s (%.1f MiB/s per rank)\n",
              kScaleWorld, kReducers, 2 * std::size(kCounts), bytes_per_rank / double(kMiB), seconds,
              bytes_per_rank / double(kMiB) / seconds);
}

}  // namespace
}  // namespace rs::testing
