// The ring that holds contributions for failover: operations go in and come
// out in order, it never exceeds its capacity unless told to overflow, and
// what it frees is reused.
#include "client/retention.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace rs::client {
namespace {

TEST(RetentionRingTest, FillsReleasesInOrderAndWrapsAround) {
  RetentionRing ring(1000);
  uint8_t* a = ring.Allocate(0, 400, false).data;
  uint8_t* b = ring.Allocate(1, 400, false).data;
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::memset(a, 1, 400);  // usable memory
  std::memset(b, 2, 400);
  EXPECT_EQ(ring.Allocate(2, 400, false).data, nullptr);  // full
  ring.ReleaseBelow(1);                               // operation 0 done everywhere
  uint8_t* c = ring.Allocate(2, 300, false).data;     // wraps into the space 0 had
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c, a);
  EXPECT_EQ(b[0], 2);  // untouched by the wrap
  EXPECT_LE(ring.in_use(), ring.capacity());
  ring.ReleaseBelow(3);
  EXPECT_EQ(ring.in_use(), 0u);
}

TEST(RetentionRingTest, OverflowOnlyWhenAskedOrTooLarge) {
  RetentionRing ring(1024);
  ASSERT_NE(ring.Allocate(0, 1000, false).data, nullptr);
  EXPECT_EQ(ring.Allocate(1, 500, false).data, nullptr);
  EXPECT_NE(ring.Allocate(1, 500, true).data, nullptr);   // during a failover
  EXPECT_NE(ring.Allocate(2, 5000, false).data, nullptr); // larger than the ring: its own
  EXPECT_EQ(ring.overflow_allocations(), 2u);
  EXPECT_GE(ring.peak(), 6000u);
  ring.ReleaseBelow(3);
  EXPECT_EQ(ring.in_use(), 0u);
}

// An old-epoch piece can still be being written from an overflow copy when
// the watermark passes its operation: the copy stays, bytes intact, until
// the writer lets go of its lease, and only then is freed. (Freed by the
// watermark, as before, the writer read freed memory: the lease expired at
// ReleaseBelow, and ASan reports the read.)
TEST(RetentionRingTest, AnOverflowCopyLivesUntilItsLastLeaseGoes) {
  RetentionRing ring(1024);
  std::shared_ptr<const void> writer;  // what a piece being written holds, through its operation
  std::weak_ptr<const void> watch;
  const uint8_t* bytes = nullptr;
  {
    const RetainedCopy copy = ring.Allocate(0, 5000, false);  // larger than the ring: overflow
    ASSERT_NE(copy.data, nullptr);
    ASSERT_NE(copy.lease, nullptr);
    std::memset(copy.data, 0x5a, 5000);
    writer = copy.lease;
    watch = copy.lease;
    bytes = copy.data;
  }  // the client's own reference goes with the watermark
  ring.ReleaseBelow(1);  // every rank completed operation 0
  EXPECT_EQ(ring.in_use(), 0u);  // no longer retained ...
  ASSERT_FALSE(watch.expired()) << "freed while a writer still holds it";
  for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(bytes[i], 0x5a) << "byte " << i;  // ... but readable
  writer.reset();
  EXPECT_TRUE(watch.expired()) << "the last lease gone, the copy must be freed";
}

// A copy in the ring needs no lease: the ring's memory is mapped as long as
// the ring.
TEST(RetentionRingTest, ARingCopyHasNoLease) {
  RetentionRing ring(1024);
  const RetainedCopy copy = ring.Allocate(0, 100, false);
  ASSERT_NE(copy.data, nullptr);
  EXPECT_EQ(copy.lease, nullptr);
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
    uint8_t* p = ring.Allocate(seq, kOp, false).data;
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
      ASSERT_NE(ring.Allocate(seq, b, false).data, nullptr) << "step " << step << ", operation " << seq;
      ++seq;
    }
    // All but the last bucket of this step completed everywhere.
    ring.ReleaseBelow(seq - 1);
  }
  EXPECT_EQ(ring.overflow_allocations(), 0u);
}

}  // namespace
}  // namespace rs::client
