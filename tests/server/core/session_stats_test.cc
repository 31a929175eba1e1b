// What the control plane reports about the data plane: the duration
// histogram, operation counting, and straggler attribution in a session
// driven with explicit times.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/auth.h"
#include "server/core/latency_histogram.h"
#include "server/core/recent_seq_set.h"
#include "server/core/reducer_stats.h"
#include "server/core/session.h"
#include "tests/support/null_member.h"

namespace rs::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::microseconds;

TEST(LatencyHistogramTest, BucketsAreCumulativeAndBoundsInclusive) {
  LatencyHistogram h;
  h.Observe(microseconds(100));   // exactly on the first bound: counts as <= 0.0001
  h.Observe(milliseconds(3));     // (0.0025, 0.005]
  h.Observe(milliseconds(-5));    // clock skew: zero
  h.Observe(std::chrono::minutes(5));  // beyond the last bound: +Inf only
  const HistogramSnapshot s = h.Snapshot();
  ASSERT_EQ(s.upper_bounds.size(), s.cumulative.size());
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.cumulative.front(), 2u);
  EXPECT_EQ(s.cumulative[4], 2u);  // le 0.0025
  EXPECT_EQ(s.cumulative[5], 3u);  // le 0.005
  EXPECT_EQ(s.cumulative.back(), 3u);
  EXPECT_NEAR(s.sum_seconds, 300.0031, 1e-9);
}

TEST(RecentSeqSetTest, CountsEachSequenceOnceInAnyOrder) {
  RecentSeqSet set;
  EXPECT_TRUE(set.Insert(5));
  EXPECT_FALSE(set.Insert(5));
  EXPECT_TRUE(set.Insert(3));   // older but inside the window
  EXPECT_TRUE(set.Insert(9));
  EXPECT_FALSE(set.Insert(3));
  EXPECT_TRUE(set.Insert(4));
}

TEST(RecentSeqSetTest, SlidingForwardForgetsOnlyWhatLeavesTheWindow) {
  RecentSeqSet set;
  const uint64_t w = RecentSeqSet::kWindow;
  EXPECT_TRUE(set.Insert(0));
  EXPECT_TRUE(set.Insert(w - 1));
  EXPECT_FALSE(set.Insert(0));           // still inside
  EXPECT_TRUE(set.Insert(w));            // slot of 0 reused for w
  EXPECT_FALSE(set.Insert(0));           // fell out: treated as seen, not counted twice
  EXPECT_FALSE(set.Insert(w - 1));
  EXPECT_TRUE(set.Insert(10 * w));       // a jump clears the whole window
  EXPECT_TRUE(set.Insert(10 * w - 1));
}

TEST(ReducerStatsTest, ErrorsCountByKindAndOutOfRangeCodesAsInternal) {
  ReducerStats stats;
  stats.CountError(Code::kAuth);
  stats.CountError(Code::kAuth);
  stats.CountError(Code::kOk);
  stats.CountError(static_cast<Code>(200));
  const auto s = stats.Snapshot();
  EXPECT_EQ(s.errors[static_cast<size_t>(Code::kAuth)], 2u);
  EXPECT_EQ(s.errors[static_cast<size_t>(Code::kOk)], 0u);
  EXPECT_EQ(s.errors[static_cast<size_t>(Code::kInternal)], 1u);
}

class StragglerTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 4;

  void SetUp() override {
    session_ = std::make_shared<Session>(protocol::SessionIdFromName("straggler"), kWorld, 1,
                                         MemoryBudget::Create(1 << 20), SessionLimits{}, t0_, stats_);
    for (uint32_t r = 0; r < kWorld; ++r) {
      members_.push_back(std::make_shared<NullMember>());
      protocol::Hello h;
      h.session = session_->id();
      h.rank = r;
      h.world = kWorld;
      ASSERT_TRUE(session_->Join(h, members_[r]).ok());
    }
  }

  // Every rank contributes piece `piece` of operation `seq`, in `order`;
  // contribution i completes at t0 + end_ms[i].
  void RunPiece(uint64_t seq, uint32_t piece, const std::vector<uint32_t>& order,
                const std::vector<int>& end_ms) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.piece = piece;
    h.pieces = 2;
    h.total_count = 32;
    h.offset = piece * 16;
    h.count = 16;
    for (size_t i = 0; i < order.size(); ++i) {
      Contribution c = session_->BeginContribution(order[i], members_[order[i]], 0, h, {}, t0_);
      ASSERT_EQ(c.kind, Contribution::Kind::kReceive) << c.status.ToString();
      std::memset(c.dest, 0, h.PayloadBytes());
      session_->EndContribution(order[i], c.piece, t0_ + milliseconds(end_ms[i]));
    }
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<ReducerStats> stats_ = std::make_shared<ReducerStats>();
  std::shared_ptr<Session> session_;
  std::vector<std::shared_ptr<NullMember>> members_;
};

TEST_F(StragglerTest, TheRankThatCompletesEachPieceIsCountedAndItsWaitRecorded) {
  RunPiece(0, 0, {0, 1, 2, 3}, {0, 1, 2, 40});
  RunPiece(0, 1, {1, 0, 2, 3}, {0, 0, 1, 50});
  RunPiece(1, 0, {3, 0, 1, 2}, {0, 1, 1, 2});
  const SessionStats s = session_->stats();
  EXPECT_EQ(s.last_arrivals, (std::vector<uint64_t>{0, 0, 1, 2}));
  EXPECT_EQ(s.pieces_completed, 3u);
  EXPECT_NEAR(s.straggler_wait_seconds, 0.040 + 0.050 + 0.002, 1e-9);

  const ReducerStatsSnapshot r = stats_->Snapshot();
  EXPECT_EQ(r.straggler_wait.count, 3u);
  // Two waits above 25 ms, one below 2.5 ms.
  const auto le = [&](double bound) {
    for (size_t i = 0; i < r.straggler_wait.upper_bounds.size(); ++i) {
      if (r.straggler_wait.upper_bounds[i] == bound) return r.straggler_wait.cumulative[i];
    }
    return uint64_t{999};
  };
  EXPECT_EQ(le(0.0025), 1u);
  EXPECT_EQ(le(0.025), 1u);
  EXPECT_EQ(le(0.05), 3u);
  EXPECT_EQ(r.piece_latency.count, 3u);
}

TEST(SlowestRanksTest, MostOftenLastFirstTiesByRankCapped) {
  SessionStats s;
  s.last_arrivals = {3, 0, 7, 3, 1};
  const auto top = SlowestRanks(s, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].rank, 2u);
  EXPECT_EQ(top[1].rank, 0u);
  EXPECT_EQ(top[2].rank, 3u);
  EXPECT_EQ(SlowestRanks(s, 100).size(), 4u);  // rank 1 was never last
  EXPECT_TRUE(SlowestRanks(SessionStats{}, 8).empty());
}

TEST_F(StragglerTest, OperationsCountOncePerSequenceAndBytesAddUp) {
  RunPiece(0, 0, {0, 1, 2, 3}, {0, 0, 0, 0});
  RunPiece(0, 1, {0, 1, 2, 3}, {0, 0, 0, 0});
  RunPiece(1, 1, {0, 1, 2, 3}, {0, 0, 0, 0});
  const SessionStats s = session_->stats();
  EXPECT_EQ(s.operations_completed, 2u);
  const uint64_t piece_bytes = 16 * sizeof(float);
  EXPECT_EQ(s.bytes_received, 3 * kWorld * piece_bytes);
  EXPECT_EQ(s.bytes_sent, 3 * kWorld * piece_bytes);
  const ReducerStatsSnapshot r = stats_->Snapshot();
  EXPECT_EQ(r.operations_completed, 2u);
  EXPECT_EQ(r.pieces_completed, 3u);
  EXPECT_EQ(r.bytes_received, s.bytes_received);
  EXPECT_EQ(r.bytes_sent, s.bytes_sent);
}

TEST_F(StragglerTest, AFailureIsCountedOnceByKind) {
  session_->Fail(Status(Code::kTimeout, "x"));
  session_->Fail(Status(Code::kMismatch, "y"));  // already failed: ignored
  const ReducerStatsSnapshot r = stats_->Snapshot();
  EXPECT_EQ(r.errors[static_cast<size_t>(Code::kTimeout)], 1u);
  EXPECT_EQ(r.errors[static_cast<size_t>(Code::kMismatch)], 0u);
}

}  // namespace
}  // namespace rs::server
