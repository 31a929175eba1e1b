// The ring that holds contributions for failover: operations go in and come
// out in order, it never exceeds its capacity unless told to overflow, and
// what it frees is reused.
#include "client/retention.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rs::client {
namespace {

TEST(RetentionRingTest, FillsReleasesInOrderAndWrapsAround) {
  RetentionRing ring(1000);
  uint8_t* a = ring.Allocate(0, 400, false);
  uint8_t* b = ring.Allocate(1, 400, false);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::memset(a, 1, 400);  // usable memory
  std::memset(b, 2, 400);
  EXPECT_EQ(ring.Allocate(2, 400, false), nullptr);  // full
  ring.ReleaseBelow(1);                               // operation 0 done everywhere
  uint8_t* c = ring.Allocate(2, 300, false);          // wraps into the space 0 had
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c, a);
  EXPECT_EQ(b[0], 2);  // untouched by the wrap
  EXPECT_LE(ring.in_use(), ring.capacity());
  ring.ReleaseBelow(3);
  EXPECT_EQ(ring.in_use(), 0u);
}

TEST(RetentionRingTest, OverflowOnlyWhenAskedOrTooLarge) {
  RetentionRing ring(1024);
  ASSERT_NE(ring.Allocate(0, 1000, false), nullptr);
  EXPECT_EQ(ring.Allocate(1, 500, false), nullptr);
  EXPECT_NE(ring.Allocate(1, 500, true), nullptr);   // during a failover
  EXPECT_NE(ring.Allocate(2, 5000, false), nullptr); // larger than the ring: its own
  EXPECT_EQ(ring.overflow_allocations(), 2u);
  EXPECT_GE(ring.peak(), 6000u);
  ring.ReleaseBelow(3);
  EXPECT_EQ(ring.in_use(), 0u);
}

// One operation at a time with the completions a few operations behind (what
// a training loop does): the copies stay within a few times what is kept at
// once, at the ring's start, instead of walking through its whole capacity
// (every fresh page is a page fault, and resident memory the rank pays for).
// The ring is never reported full meanwhile, and its padding is not counted
// as retained.
TEST(RetentionRingTest, ASteadyWorkloadStaysCompactAtTheStart) {
  constexpr size_t kOp = 1 << 20;
  RetentionRing ring(256 << 20);
  for (uint64_t seq = 0; seq < 1000; ++seq) {
    uint8_t* p = ring.Allocate(seq, kOp, false);
    ASSERT_NE(p, nullptr) << "operation " << seq;
    std::memset(p, static_cast<int>(seq), kOp);
    if (seq >= 3) ring.ReleaseBelow(seq - 2);  // 3 kept at once
    EXPECT_LE(ring.in_use(), 3 * kOp) << seq;
  }
  EXPECT_LE(ring.ring_high_water(), 48 * kOp) << "of 256 MiB";
  EXPECT_EQ(ring.overflow_allocations(), 0u);
}

// DDP: each step issues 1 MiB then four 25 MiB buckets at once, and the
// previous step's copies are freed only as the completions come back (here:
// the step before last, and the last step's first buckets, are gone when a
// new step starts). The ring never reports itself full: 101 MiB a step fits
// 256 MiB twice, and an early wrap must not make it look full.
TEST(RetentionRingTest, DdpBucketBurstsNeverFindTheRingFull) {
  constexpr size_t kMiB = 1 << 20;
  RetentionRing ring(256 * kMiB);
  const size_t buckets[] = {1 * kMiB, 25 * kMiB, 25 * kMiB, 25 * kMiB, 25 * kMiB};
  uint64_t seq = 0;
  for (int step = 0; step < 50; ++step) {
    for (size_t b : buckets) {
      ASSERT_NE(ring.Allocate(seq, b, false), nullptr) << "step " << step << ", operation " << seq;
      ++seq;
    }
    // All but the last bucket of this step completed everywhere.
    ring.ReleaseBelow(seq - 1);
  }
  EXPECT_EQ(ring.overflow_allocations(), 0u);
}

}  // namespace
}  // namespace rs::client
