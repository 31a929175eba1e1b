// A session's counters alone: each event counted once, in the session's
// counters and the reducer's alike; bytes sent only for what went out.
#include "server/core/session_counters.h"

#include <gtest/gtest.h>

#include "tests/support/null_member.h"

namespace rs::server {
namespace {

using std::chrono::milliseconds;

class SessionCountersTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 2;

  // A piece of `count` elements that every rank has begun, rank 1 in `type1`.
  std::shared_ptr<Piece> Begun(uint64_t count, uint32_t flags, DataType type1) {
    protocol::PieceHeader h;
    h.dtype = DataType::kBfloat16;
    h.count = h.total_count = count;
    h.pieces = 1;
    h.flags = static_cast<uint16_t>(flags);
    const size_t slot = Piece::SlotBytes(h);
    auto piece = std::make_shared<Piece>(h, 0, kWorld, budget_->TryAllocate(slot * (kWorld + 2)), slot, count,
                                         Clock::now());
    EXPECT_TRUE(piece->BeginLocked(0, DataType::kBfloat16, std::make_shared<NullMember>()));
    EXPECT_TRUE(piece->BeginLocked(1, type1, std::make_shared<NullMember>()));
    return piece;
  }

  std::shared_ptr<MemoryBudget> budget_ = MemoryBudget::Create(1 << 20);
  std::shared_ptr<ReducerStats> reducer_ = std::make_shared<ReducerStats>();
  SessionCounters counters_{kWorld, reducer_};
};

TEST_F(SessionCountersTest, ContributionsCountTheBytesTheyCameIn) {
  auto piece = Begun(8, protocol::kPieceWideSum, DataType::kFloat32);
  counters_.OnContributionBytes(*piece, 0);
  counters_.OnContributionBytes(*piece, 1);
  EXPECT_EQ(counters_.Snapshot().bytes_received, 8u * 2 + 8 * 4);
  const ReducerStatsSnapshot r = reducer_->Snapshot();
  EXPECT_EQ(r.bytes_received, 8u * 2 + 8 * 4);
  EXPECT_EQ(r.wire_bytes_received, 8u * 2 + 8 * 4);
  EXPECT_EQ(r.wire_float32_bytes_received, 2u * 8 * 4);
  EXPECT_EQ(r.wire_fallback_contributions, 1u) << "rank 1's came in float32";
}

TEST_F(SessionCountersTest, APlainPieceLeavesTheWireCountersAlone) {
  auto piece = Begun(8, 0, DataType::kBfloat16);
  counters_.OnContributionBytes(*piece, 1);
  counters_.OnResultPartsSent(*piece, Piece::Sent{2 * 16, 1});
  const ReducerStatsSnapshot r = reducer_->Snapshot();
  EXPECT_EQ(r.bytes_received, 16u);
  EXPECT_EQ(r.bytes_sent, 32u);
  EXPECT_EQ(r.wire_bytes_received, 0u);
  EXPECT_EQ(r.wire_fallback_results, 0u);
}

TEST_F(SessionCountersTest, BytesSentAreWhatWentOut) {
  auto piece = Begun(8, protocol::kPieceWideSum, DataType::kBfloat16);
  counters_.OnResultPartsSent(*piece, Piece::Sent{kWorld * 4 * 2, 0});
  counters_.OnResultPartsSent(*piece, Piece::Sent{});  // dropped: nothing went out
  counters_.OnResultPartsSent(*piece, Piece::Sent{kWorld * 4 * 4, 1});
  EXPECT_EQ(counters_.Snapshot().bytes_sent, kWorld * (8u + 16));
  const ReducerStatsSnapshot r = reducer_->Snapshot();
  EXPECT_EQ(r.bytes_sent, kWorld * (8u + 16));
  EXPECT_EQ(r.wire_fallback_results, 1u);
}

TEST_F(SessionCountersTest, ThePieceCompletedLastIsTheStragglers) {
  auto piece = Begun(8, 0, DataType::kBfloat16);
  counters_.OnPieceCompleted(*piece, 1, milliseconds(3), milliseconds(2));
  counters_.OnPieceCompleted(*piece, 1, milliseconds(3), milliseconds(-1));  // clock skew: no wait
  counters_.OnOperationCompleted();
  counters_.OnFailure(Code::kTimeout);
  const SessionCounts s = counters_.Snapshot();
  EXPECT_EQ(s.pieces_completed, 2u);
  EXPECT_EQ(s.operations_completed, 1u);
  EXPECT_EQ(s.last_arrivals, (std::vector<uint64_t>{0, 2}));
  EXPECT_NEAR(s.straggler_wait_seconds, 0.002, 1e-12);
  const ReducerStatsSnapshot r = reducer_->Snapshot();
  EXPECT_EQ(r.pieces_completed, 2u);
  EXPECT_EQ(r.pieces_in_parts, 0u);
  EXPECT_EQ(r.operations_completed, 1u);
  EXPECT_EQ(r.piece_latency.count, 2u);
  EXPECT_EQ(r.errors[static_cast<size_t>(Code::kTimeout)], 1u);
}

}  // namespace
}  // namespace rs::server
