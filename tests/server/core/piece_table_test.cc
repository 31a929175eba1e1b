// A session's table of pending pieces alone: finding the piece a header
// belongs to, making one from the memory budget (or waiting for it), taking
// out a finished piece and counting its operation once, which piece still
// waits for a rank or has waited too long, and letting go of the pieces on
// a failure, an epoch change and a teardown.
#include "server/core/piece_table.h"

#include <gtest/gtest.h>

#include "tests/support/null_member.h"

namespace rs::server {
namespace {

using std::chrono::seconds;

class PieceTableTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 3;
  // 64 KiB of float32: one budget granule per slot.
  static constexpr uint64_t kCount = MemoryBudget::kGranule / sizeof(float);

  static protocol::PieceHeader Header(uint64_t seq, uint32_t piece, uint16_t flags = 0) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.piece = piece;
    h.pieces = 4;
    h.total_count = 4 * kCount;
    h.offset = piece * kCount;
    h.count = kCount;
    h.flags = flags;
    return h;
  }

  // A piece of (seq, piece) first sent by rank 0 at t0_ + `after`, begun by
  // every rank.
  std::shared_ptr<Piece> Begun(uint64_t seq, uint32_t piece, Clock::duration after = {}) {
    auto p = table_.Create(0, Header(seq, piece), kCount, {}, t0_ + after);
    EXPECT_NE(p, nullptr);
    if (p == nullptr) return nullptr;
    for (uint32_t r = 0; r < kWorld; ++r) EXPECT_TRUE(p->BeginLocked(r, DataType::kFloat32, members_[r]));
    return p;
  }

  // Every rank has finished `piece`, as the session marks it.
  void EndAll(Piece& piece) {
    for (uint32_t r = 0; r < kWorld; ++r) piece.EndLocked(r, t0_);
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<MemoryBudget> budget_ = MemoryBudget::Create(16 * MemoryBudget::kGranule);
  PieceTable table_{kWorld, DataType::kFloat32, budget_};
  std::vector<std::shared_ptr<SessionMember>> members_{std::make_shared<NullMember>(), std::make_shared<NullMember>(),
                                                       std::make_shared<NullMember>()};
};

TEST_F(PieceTableTest, EveryRanksHeaderFindsThePieceOfItsOperationAndIndex) {
  EXPECT_EQ(table_.Find(Header(1, 0)), nullptr);
  auto p = Begun(1, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(table_.Find(Header(1, 0)), p);
  EXPECT_EQ(table_.Find(Header(1, 1)), nullptr) << "another piece of the operation";
  EXPECT_EQ(table_.Find(Header(2, 0)), nullptr) << "the same piece of another operation";
  EXPECT_EQ(table_.size(), 1u);
}

TEST_F(PieceTableTest, APieceTakesASlotPerRankFromTheBudget) {
  auto p = Begun(1, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(budget_->in_use(), kWorld * MemoryBudget::kGranule);
  EXPECT_EQ(p->header().seq, 1u);
  EXPECT_FALSE(p->in_parts()) << "made with its whole count as the part";
  // A float32 sum on a 16-bit wire: two more slots for its result.
  PieceTable wide{kWorld, DataType::kBfloat16, budget_};
  auto w = wide.Create(0, Header(1, 0, protocol::kPieceWideSum), kCount / 4, {}, t0_);
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->in_parts());
  EXPECT_EQ(budget_->in_use(), (kWorld + kWorld + 2) * MemoryBudget::kGranule);
}

TEST_F(PieceTableTest, WithoutMemoryNothingIsMadeAndTheWakeComesWhenMemoryIsBack) {
  std::vector<std::shared_ptr<Piece>> held;
  // 5 pieces of 3 granules take 15 of the 16: the next does not fit.
  for (uint64_t seq = 0; seq < 5; ++seq) held.push_back(Begun(seq, 0));
  bool woken = false;
  EXPECT_EQ(table_.Create(0, Header(5, 0), kCount, [&] { woken = true; }, t0_), nullptr);
  EXPECT_EQ(table_.Find(Header(5, 0)), nullptr) << "nothing pending for a piece without memory";
  EXPECT_FALSE(woken);
  // Completed, and its last reference gone: its memory goes back and wakes the waiter.
  EndAll(*held[0]);
  table_.Complete(*held[0]);
  held[0].reset();
  EXPECT_TRUE(woken);
}

TEST_F(PieceTableTest, ACompletedPieceIsPendingNoMoreAndItsOperationCountsOnce) {
  auto a = Begun(1, 0);
  auto b = Begun(1, 1);
  auto c = Begun(2, 0);
  EndAll(*b);
  EXPECT_TRUE(table_.Complete(*b)) << "the first piece of operation 1 to complete here";
  EXPECT_EQ(table_.Find(Header(1, 1)), nullptr);
  EndAll(*a);
  EXPECT_FALSE(table_.Complete(*a)) << "operation 1 counted already";
  EndAll(*c);
  EXPECT_TRUE(table_.Complete(*c));
  EXPECT_TRUE(table_.empty());
}

TEST_F(PieceTableTest, TheFirstPieceWaitingForARankIsTheEarliestItHasNotFinished) {
  auto late = Begun(2, 0);
  auto second = Begun(1, 1);
  auto first = Begun(1, 0);
  EXPECT_EQ(table_.FirstAwaiting(1), first.get());
  first->EndLocked(1, t0_);
  EXPECT_EQ(table_.FirstAwaiting(1), second.get());
  second->EndLocked(1, t0_);
  late->EndLocked(1, t0_);
  EXPECT_EQ(table_.FirstAwaiting(1), nullptr) << "rank 1 has finished every pending piece";
  EXPECT_EQ(table_.FirstAwaiting(0), first.get());
}

TEST_F(PieceTableTest, TheFirstPieceOlderThanALimitIsFoundInOperationOrder) {
  auto newer = Begun(1, 0, seconds(5));
  auto older = Begun(2, 0);
  EXPECT_EQ(table_.FirstOlderThan(t0_ + seconds(4), seconds(5)), nullptr);
  EXPECT_EQ(table_.FirstOlderThan(t0_ + seconds(5), seconds(5)), nullptr) << "exactly the limit is not past it";
  EXPECT_EQ(table_.FirstOlderThan(t0_ + seconds(8), seconds(5)), older.get());
  // Both past it: the earlier operation is named.
  EXPECT_EQ(table_.FirstOlderThan(t0_ + seconds(11), seconds(5)), newer.get());
}

TEST_F(PieceTableTest, AFailureLetsGoOfThePiecesAndOfTheMembersTheyAnswer) {
  auto p = Begun(1, 0);
  ASSERT_NE(p, nullptr);
  const long held_by_piece = members_[0].use_count();
  table_.FailAll();
  EXPECT_TRUE(table_.empty());
  EXPECT_EQ(members_[0].use_count(), held_by_piece - 1) << "the piece still holds its rank's member";
  // The last reference (a connection reading into it) still holds the memory.
  EXPECT_EQ(budget_->in_use(), kWorld * MemoryBudget::kGranule);
  p.reset();
  EXPECT_EQ(budget_->in_use(), 0u);
}

TEST_F(PieceTableTest, AnEpochChangeDropsThePiecesWithoutReleasingTheirReplies) {
  auto p = Begun(1, 0);
  ASSERT_NE(p, nullptr);
  const long held_by_piece = members_[0].use_count();
  table_.DropAll();
  EXPECT_TRUE(table_.empty());
  EXPECT_EQ(table_.Find(Header(1, 0)), nullptr);
  // A piece of the old epoch sends nothing (Piece::Release); its members go with it.
  EXPECT_EQ(members_[0].use_count(), held_by_piece);
  p.reset();
  EXPECT_EQ(budget_->in_use(), 0u);
}

TEST_F(PieceTableTest, ATeardownHandsEveryPieceOverInOrder) {
  auto b = Begun(2, 0);
  auto a = Begun(1, 3);
  const std::vector<std::shared_ptr<Piece>> taken = table_.TakeAll();
  EXPECT_TRUE(table_.empty());
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0], a);
  EXPECT_EQ(taken[1], b);
}

}  // namespace
}  // namespace rs::server
