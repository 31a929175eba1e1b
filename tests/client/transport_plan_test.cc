// The rule behind the client's automatic transport settings
// (client/transport_plan.h): what a user gets when they set nothing.
#include "client/transport_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "protocol/partition.h"

namespace rs::client {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

TEST(TransportPlan, OneStreamPerReducer) {
  for (uint32_t r : {1u, 2u, 4u, 64u}) EXPECT_EQ(AutoStreams(r), 1) << r << " reducers";
}

// Paced when a reducer hears 16 streams or more: a job of 16 ranks, or
// fewer ranks with several streams each; a job of 8 is left as it was.
TEST(TransportPlan, StreamsArePacedFromSixteenPerReducer) {
  EXPECT_FALSE(AutoTcpPacing(1, 1));
  EXPECT_FALSE(AutoTcpPacing(8, 1));
  EXPECT_FALSE(AutoTcpPacing(15, 1));
  EXPECT_TRUE(AutoTcpPacing(16, 1));
  EXPECT_TRUE(AutoTcpPacing(256, 1));
  EXPECT_TRUE(AutoTcpPacing(8, 2));
  EXPECT_TRUE(AutoTcpPacing(4, 4));
  EXPECT_FALSE(AutoTcpPacing(4, 3));
}

TEST(TransportPlan, PiecesShareAboutHalfAMebibytePerRound) {
  EXPECT_EQ(AutoPieceBytes(1), 512 * kKiB);
  EXPECT_EQ(AutoPieceBytes(2), 256 * kKiB);
  EXPECT_EQ(AutoPieceBytes(4), 128 * kKiB);  // the harness's best at 1 Gbit/s, 4 + 4 hosts
  EXPECT_EQ(AutoPieceBytes(8), 64 * kKiB);
  EXPECT_EQ(AutoPieceBytes(32), 64 * kKiB);  // never below 64 KiB
  EXPECT_EQ(AutoPieceBytes(0), 512 * kKiB);  // defensive: treated as one
}

// Every rank must derive the same piece size: it may depend on nothing but
// the reducer count, so whole pages and the same answer every time.
TEST(TransportPlan, PieceSizeIsWholePagesAndDependsOnlyOnTheReducerCount) {
  for (uint32_t r = 1; r <= 100; ++r) {
    const size_t p = AutoPieceBytes(r);
    EXPECT_EQ(p % (4 * kKiB), 0u) << r;
    EXPECT_GE(p, 64 * kKiB) << r;
    EXPECT_LE(p, 512 * kKiB) << r;
    EXPECT_EQ(p, AutoPieceBytes(r)) << r;
    if (r > 1) {
      EXPECT_LE(p, AutoPieceBytes(r - 1)) << r;
    }
  }
}

// A reducer takes in one piece from every rank, so the smallest piece
// shrinks as the ranks grow: each reducer's share of a piece (ranks x
// piece) stays at 256 KiB, what 4 ranks always had with 64 KiB.
TEST(TransportPlan, SmallestPieceShrinksWithTheRanks) {
  EXPECT_EQ(AutoMinPieceBytes(1), 64 * kKiB);
  EXPECT_EQ(AutoMinPieceBytes(4), 64 * kKiB);  // as before for 4 ranks and fewer
  EXPECT_EQ(AutoMinPieceBytes(5), 48 * kKiB);  // 51.2 KiB, in whole pages
  EXPECT_EQ(AutoMinPieceBytes(8), 32 * kKiB);
  EXPECT_EQ(AutoMinPieceBytes(16), 16 * kKiB);
  EXPECT_EQ(AutoMinPieceBytes(64), 4 * kKiB);
  EXPECT_EQ(AutoMinPieceBytes(1000), 4 * kKiB);  // never below a page
  EXPECT_EQ(AutoMinPieceBytes(0), 64 * kKiB);    // defensive: treated as one
  for (uint32_t w = 2; w <= 300; ++w) {
    const size_t p = AutoMinPieceBytes(w);
    EXPECT_EQ(p % (4 * kKiB), 0u) << w;
    EXPECT_LE(p, AutoMinPieceBytes(w - 1)) << w;
    if (p > 4 * kKiB) {
      EXPECT_LE(w * p, kReducerShareFloor) << w;
    }
  }
}

// What it is for: 16 ranks' 256 KiB all-reduce over 16 reducers reaches
// every reducer (each takes in 16 x 16 KiB); with 64 KiB pieces it went to 4
// of them, each taking in 1 MiB.
TEST(TransportPlan, SixteenRanksSmallAllReduceReachesEveryReducer) {
  auto reducers_used = [](size_t min_piece) {
    const protocol::PartitionParams p{.count = 256 * kKiB / 4, .elem_size = 4,
                                      .max_piece_bytes = AutoPieceBytes(16), .min_piece_bytes = min_piece,
                                      .reducers = 16, .streams = 1, .seq = 3};
    std::set<uint32_t> used;
    for (const protocol::PieceSpan& s : protocol::Partition(p)) used.insert(s.reducer);
    return used.size();
  };
  EXPECT_EQ(reducers_used(AutoMinPieceBytes(16)), 16u);
  EXPECT_EQ(reducers_used(64 * kKiB), 4u);
}

TEST(TransportPlan, WindowIsFourPiecesWhenThePathIsShortOrUnknown) {
  EXPECT_EQ(AutoSendWindow(128 * kKiB, 0, microseconds(0)), 512 * kKiB);
  // 1 Gbit/s share of a stream (30 MB/s) over a LAN round trip of 100 us: 3 KB of BDP.
  EXPECT_EQ(AutoSendWindow(128 * kKiB, 30'000'000, microseconds(100)), 512 * kKiB);
  // Loopback: fast, but a round trip of 20 us.
  EXPECT_EQ(AutoSendWindow(256 * kKiB, 4'000'000'000, microseconds(20)), 1 * kMiB);
}

TEST(TransportPlan, WindowCoversTwiceTheBandwidthDelayProductOnLongPaths) {
  // 200 Mbit/s shared by 4 streams (6.25 MB/s each), 80 ms round trip: BDP 500 KB.
  EXPECT_EQ(AutoSendWindow(128 * kKiB, 6'250'000, milliseconds(80)), 2 * 128 * kKiB + 1'000'000);
  // Never more than the cap, however long the path.
  EXPECT_EQ(AutoSendWindow(128 * kKiB, 12'500'000'000, milliseconds(500)), kMaxAutoWindow);
}

// A rank's streams to several reducers write a slice at a time: half a
// millisecond of the path, at least 64 KiB, and whole batches until the
// bandwidth is known (loopback's GB/s make slices larger than any batch).
TEST(TransportPlan, WriteSliceIsHalfAMillisecondOfThePath) {
  EXPECT_EQ(AutoWriteSlice(0), 0u);
  EXPECT_EQ(AutoWriteSlice(25'000'000), kMinWriteSlice) << "200 Mbit/s: 12.5 KB, raised to the floor";
  EXPECT_EQ(AutoWriteSlice(125'000'000), kMinWriteSlice) << "1 Gbit/s: 62.5 KB";
  EXPECT_EQ(AutoWriteSlice(1'250'000'000), 625'000u) << "10 Gbit/s";
  EXPECT_EQ(AutoWriteSlice(5'000'000'000), 2'500'000u) << "loopback";
}

// An operation's bound on its writes: an eighth of its share of a stream,
// at least 8 KiB; and the least a write may be cut to, half a millisecond of
// the rank's link (at least 8 KiB, none while the rate is unknown). 1 MiB
// over 16 reducers gives 8 KiB writes on a 50 Mbit/s link and none cut on a
// 1 Gbit/s one, where such writes cost more CPU than they saved.
TEST(TransportPlan, AnOperationsWritesAreAnEighthOfItsShareDownToHalfAMillisecond) {
  EXPECT_EQ(OperationSlice(64 * kKiB), 8 * kKiB) << "1 MiB over 16 streams";
  EXPECT_EQ(OperationSlice(128 * kKiB), 16 * kKiB) << "1 MiB over 8 streams";
  EXPECT_EQ(OperationSlice(4 * kKiB), kMinOperationSlice) << "a small share: the floor";
  EXPECT_EQ(OperationSlice(16 * kMiB), 2 * kMiB) << "64 MiB over 4 streams: larger than any path's slice";
  EXPECT_EQ(MinOperationSlice(0), 0u) << "the rate is not known yet";
  EXPECT_EQ(MinOperationSlice(6'250'000), kMinOperationSlice) << "50 Mbit/s: 3.1 KB, raised to the floor";
  EXPECT_EQ(MinOperationSlice(125'000'000), 62'500u) << "1 Gbit/s";
  EXPECT_EQ(MinOperationSlice(12'500'000'000), 6'250'000u) << "100 Gbit/s: never cut";
}

// A stream's pace: each period with pieces unanswered, its bytes over its
// time; the fastest of the recent ones. Writes during a period do not start
// another; results while idle count for nothing.
TEST(BusyRate, IsTheFastestRecentPeriodWithPiecesOut) {
  BusyRate rate;
  auto t = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(rate.bytes_per_second(), 0u) << "no period has ended";
  rate.OnAnswered(1000, 0, t);
  EXPECT_EQ(rate.bytes_per_second(), 0u) << "a result with nothing out is no period";
  rate.OnWrite(0, t);
  rate.OnWrite(4096, t + milliseconds(5));  // more pieces in the same period
  rate.OnAnswered(500'000, 500'000, t + milliseconds(6));
  EXPECT_EQ(rate.bytes_per_second(), 0u) << "still pieces out";
  rate.OnAnswered(500'000, 0, t + milliseconds(10));
  EXPECT_EQ(rate.bytes_per_second(), 100'000'000u) << "1 MB in 10 ms";
  t += milliseconds(20);
  rate.OnWrite(0, t);
  rate.OnAnswered(100'000, 0, t + milliseconds(10));
  EXPECT_EQ(rate.bytes_per_second(), 100'000'000u) << "a slower period does not lower the fastest";
  for (size_t i = 0; i < BusyRate::kPeriods; ++i) {
    t += milliseconds(20);
    rate.OnWrite(0, t);
    rate.OnAnswered(200'000, 0, t + milliseconds(10));
  }
  EXPECT_EQ(rate.bytes_per_second(), 20'000'000u) << "the fast period is no longer recent";
}

// The slice follows the typical delivery rate: a burst through a shaper's
// bucket reads at GB/s on a 1 Gbit/s link and must not make the slices
// whole batches again (seen on the harness: most samples 20 - 40 MB/s, the
// largest 2.3 GB/s); a path that is fast all along (loopback) gets large ones.
TEST(SendWindow, WriteSliceFollowsTheTypicalRateNotItsPeaks) {
  SendWindow w(std::nullopt, 128 * kKiB);
  EXPECT_EQ(w.write_slice(), 0u) << "whole batches until the path is measured";
  auto t = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 40; ++i, t += milliseconds(5)) {
    w.OnSample({microseconds(100), i % 10 == 9 ? 2'300'000'000u : 30'000'000u}, t);
  }
  EXPECT_LE(w.write_slice(), 200'000u) << "a few peaks among many 30 MB/s samples";
  SendWindow fast(std::nullopt, 128 * kKiB);
  for (int i = 0; i < 40; ++i, t += milliseconds(5)) fast.OnSample({microseconds(20), 4'000'000'000u}, t);
  EXPECT_GE(fast.write_slice(), 1'900'000u);
}

TEST(SendWindow, TheUsersWindowWinsAndNeverMoves) {
  SendWindow w(std::optional<size_t>(3 * kMiB), 128 * kKiB);
  EXPECT_FALSE(w.automatic());
  EXPECT_EQ(w.bytes(), 3 * kMiB);
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  EXPECT_TRUE(w.WantSample(t0)) << "sampled for the write slice all the same";
  w.OnSample({milliseconds(80), 6'250'000}, t0);
  EXPECT_EQ(w.bytes(), 3 * kMiB);
  EXPECT_EQ(w.write_slice(), kMinWriteSlice) << "the slice follows the path whoever set the window";
  SendWindow unlimited(std::optional<size_t>(0), 128 * kKiB);
  EXPECT_EQ(unlimited.bytes(), 0u);  // 0: no limit, as before
}

TEST(SendWindow, AutomaticFollowsThePathAndForgetsOldBandwidth) {
  SendWindow w(std::nullopt, 128 * kKiB);
  EXPECT_TRUE(w.automatic());
  EXPECT_EQ(w.bytes(), 512 * kKiB);  // before any sample
  auto t = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  ASSERT_TRUE(w.WantSample(t));
  w.OnSample({milliseconds(80), 6'250'000}, t);
  EXPECT_EQ(w.bytes(), 2 * 128 * kKiB + 1'000'000);
  // Samples come at most every kSampleInterval.
  EXPECT_FALSE(w.WantSample(t + SendWindow::kSampleInterval / 2));
  EXPECT_TRUE(w.WantSample(t + SendWindow::kSampleInterval));
  // A lower sample (the rank was idle) does not shrink the window...
  t += milliseconds(500);
  w.OnSample({milliseconds(80), 3'000'000}, t);
  EXPECT_EQ(w.bytes(), 2 * 128 * kKiB + 1'000'000);
  // ...until the high one is more than two periods old.
  t += 2 * SendWindow::kBandwidthPeriod;
  w.OnSample({milliseconds(80), 3'000'000}, t);
  t += SendWindow::kBandwidthPeriod;
  w.OnSample({milliseconds(80), 3'000'000}, t);
  EXPECT_EQ(w.bytes(), 2 * 128 * kKiB + 480'000);
  // A sample without a round trip keeps the last one.
  w.OnSample({microseconds(0), 3'000'000}, t + milliseconds(10));
  EXPECT_EQ(w.bytes(), 2 * 128 * kKiB + 480'000);
  // Never below 4 pieces, however slow the path reads.
  t += 3 * SendWindow::kBandwidthPeriod;
  w.OnSample({milliseconds(80), 1'000}, t);
  t += SendWindow::kBandwidthPeriod;
  w.OnSample({milliseconds(80), 1'000}, t);
  EXPECT_EQ(w.bytes(), 4 * 128 * kKiB);
}

}  // namespace
}  // namespace rs::client
