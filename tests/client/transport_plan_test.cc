// The rule behind the client's automatic transport settings
// (client/transport_plan.h): what a user gets when they set nothing.
#include "client/transport_plan.h"

#include <gtest/gtest.h>

namespace rs::client {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

TEST(TransportPlan, OneStreamPerReducer) {
  for (uint32_t r : {1u, 2u, 4u, 64u}) EXPECT_EQ(AutoStreams(r), 1) << r << " reducers";
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

TEST(SendWindow, TheUsersWindowWinsAndNeverMoves) {
  SendWindow w(std::optional<size_t>(3 * kMiB), 128 * kKiB);
  EXPECT_FALSE(w.automatic());
  EXPECT_EQ(w.bytes(), 3 * kMiB);
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  EXPECT_FALSE(w.WantSample(t0));
  w.OnSample({milliseconds(80), 6'250'000}, t0);
  EXPECT_EQ(w.bytes(), 3 * kMiB);
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
