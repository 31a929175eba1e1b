// A piece's records driven directly, without a session: who has begun and
// finished, which runs every rank has delivered, and the order its reduced
// parts reach the ranks in.
#include "server/core/piece.h"

#include <gtest/gtest.h>

namespace rs::server {
namespace {

class RecordingMember : public SessionMember {
 public:
  void SendReady() override {}
  void SendResult(const ResultPart& part) override { offsets.push_back(part.header.offset); }
  void SendErrorAndClose(const Status&) override {}
  void SendControl(std::vector<uint8_t>) override {}
  void CloseQuietly() override {}
  std::vector<uint64_t> offsets;  // of the parts received, in order
};

class PieceTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 3;

  // A float32 piece of `count` elements whose result goes out in parts of
  // `part` elements, begun by every rank.
  std::shared_ptr<Piece> Begun(uint64_t count, uint64_t part, uint32_t epoch = 0) {
    protocol::PieceHeader h;
    h.dtype = DataType::kFloat32;
    h.count = h.total_count = count;
    h.pieces = 1;
    h.epoch = epoch;
    const size_t slot = Piece::SlotBytes(h);
    auto piece = std::make_shared<Piece>(h, 0, kWorld, budget_->TryAllocate(slot * kWorld), slot, part, t0_);
    for (uint32_t r = 0; r < kWorld; ++r) {
      members_.push_back(std::make_shared<RecordingMember>());
      EXPECT_TRUE(piece->BeginLocked(r, DataType::kFloat32, members_[r]));
    }
    return piece;
  }

  // Releases `run` as reduced, with a header placing it in the piece.
  static Piece::Sent Release(Piece& piece, const Piece::Run& run, uint32_t current_epoch = 0) {
    protocol::PieceHeader h = piece.header();
    h.offset = run.begin;
    h.count = run.end - run.begin;
    return piece.Release(run.begin, h, piece.slot(0), current_epoch);
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<MemoryBudget> budget_ = MemoryBudget::Create(1 << 20);
  std::vector<std::shared_ptr<RecordingMember>> members_;
};

TEST_F(PieceTest, NothingIsClaimedWhileARankHasDeliveredNothing) {
  auto piece = Begun(100, 10);
  EXPECT_FALSE(piece->Claim(0, 100));
  EXPECT_FALSE(piece->Claim(1, 100));
  // The last rank's first elements make the run every rank has delivered.
  const auto run = piece->Claim(2, 40);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->begin, 0u);
  EXPECT_EQ(run->end, 40u);
}

TEST_F(PieceTest, ARunIsClaimedOnceAPartsWorthIsInOrTheRest) {
  auto piece = Begun(100, 30);
  ASSERT_FALSE(piece->Claim(0, 100));  // nothing yet: ranks 1, 2 have delivered nothing
  piece->Claim(1, 100);
  ASSERT_TRUE(piece->Claim(2, 30));
  EXPECT_FALSE(piece->Claim(2, 50)) << "20 elements are less than a part";
  EXPECT_FALSE(piece->Claim(2, 50)) << "no new elements";
  const auto rest = piece->Claim(2, 100);
  ASSERT_TRUE(rest) << "the rest of the piece goes even when shorter than a part";
  EXPECT_EQ(rest->begin, 30u);
  EXPECT_EQ(rest->end, 100u);
}

TEST_F(PieceTest, PartsReachEveryRankInOrderWhateverOrderTheyAreReducedIn) {
  auto piece = Begun(100, 50);
  piece->Claim(0, 100);
  piece->Claim(1, 100);
  const auto first = piece->Claim(2, 50);
  const auto second = piece->Claim(2, 100);
  ASSERT_TRUE(first && second);
  // The second part's reduction finished first: it waits for the first,
  // and whoever sends it counts it.
  EXPECT_EQ(Release(*piece, *second).bytes, 0u);
  for (const auto& m : members_) EXPECT_TRUE(m->offsets.empty());
  const Piece::Sent sent = Release(*piece, *first);
  for (const auto& m : members_) EXPECT_EQ(m->offsets, (std::vector<uint64_t>{0, 50}));
  EXPECT_EQ(sent.bytes, kWorld * 100 * sizeof(float)) << "both parts, to every rank";
  EXPECT_EQ(sent.float32_parts, 2u);
}

TEST_F(PieceTest, APieceOfAnEpochTheRanksLeftIsNotSent) {
  auto piece = Begun(10, 10, /*epoch=*/1);
  piece->Claim(0, 10);
  piece->Claim(1, 10);
  const auto run = piece->Claim(2, 10);
  ASSERT_TRUE(run);
  EXPECT_EQ(Release(*piece, *run, /*current_epoch=*/2).bytes, 0u) << "nothing went out";
  for (const auto& m : members_) EXPECT_TRUE(m->offsets.empty());
}

TEST_F(PieceTest, NoResultGoesOutOnceTheRepliesAreReleased) {
  auto piece = Begun(10, 10);
  piece->Claim(0, 10);
  piece->Claim(1, 10);
  const auto run = piece->Claim(2, 10);
  ASSERT_TRUE(run);
  piece->ReleaseReplies();  // the session failed
  EXPECT_EQ(Release(*piece, *run).bytes, 0u) << "nothing went out";
  for (const auto& m : members_) EXPECT_TRUE(m->offsets.empty());
}

TEST_F(PieceTest, TheLastRankToEndCompletesThePieceAndMissingRanksAreNamed) {
  auto piece = Begun(10, 10);
  EXPECT_FALSE(piece->BeginLocked(1, DataType::kFloat32, members_[1])) << "a second begin is refused";
  EXPECT_FALSE(piece->EndLocked(2, t0_ + std::chrono::seconds(1)));
  EXPECT_EQ(piece->MissingLocked(), (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(piece->EndedLocked(2));
  EXPECT_FALSE(piece->EndLocked(0, t0_ + std::chrono::seconds(2)));
  EXPECT_TRUE(piece->EndLocked(1, t0_ + std::chrono::seconds(3)));
  EXPECT_TRUE(piece->MissingLocked().empty());
  // The straggler's wait is measured from the first complete contribution.
  EXPECT_EQ(piece->first_end(), t0_ + std::chrono::seconds(1));
}

TEST_F(PieceTest, ADisagreementNamesBothRanksAndTheField) {
  auto piece = Begun(10, 10);
  protocol::PieceHeader other = piece->header();
  other.op = ReduceOp::kMax;
  EXPECT_EQ(piece->DisagreementLocked(piece->header(), 2), "");
  EXPECT_EQ(piece->DisagreementLocked(other, 2), "rank 2 sent op max for operation 0, rank 0 sent op sum");
}

}  // namespace
}  // namespace rs::server
