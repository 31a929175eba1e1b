// The order in which a reduced part goes out to the ranks: every rank gets
// it, and pieces that reducers work on at the same time start at different
// ranks, so that a rank's link does not hear every reducer's part at once.
#include "server/core/piece.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

namespace rs::server {
namespace {

// Writes the rank of each SendResult call into one log shared by all ranks.
class FanOutRecorder : public SessionMember {
 public:
  FanOutRecorder(uint32_t rank, std::shared_ptr<std::vector<uint32_t>> log) : rank_(rank), log_(std::move(log)) {}
  void SendReady() override {}
  void SendResult(const ResultPart&) override { log_->push_back(rank_); }
  void SendErrorAndClose(const Status&) override {}
  void SendControl(std::vector<uint8_t>) override {}
  void CloseQuietly() override {}

 private:
  uint32_t rank_;
  std::shared_ptr<std::vector<uint32_t>> log_;
};

constexpr uint32_t kFanOutWorld = 4;

// The ranks, in the order they were sent the one part of piece `index` of
// operation `seq`, reduced whole.
std::vector<uint32_t> FanOutOrder(uint64_t seq, uint32_t index) {
  protocol::PieceHeader h;
  h.seq = seq;
  h.piece = index;
  h.pieces = index + 1;
  h.dtype = DataType::kFloat32;
  h.count = h.total_count = 16;
  const size_t slot = Piece::SlotBytes(h);
  std::shared_ptr<MemoryBudget> budget = MemoryBudget::Create(1 << 20);
  auto piece = std::make_shared<Piece>(h, 0, kFanOutWorld, budget->TryAllocate(slot * kFanOutWorld), slot, h.count,
                                       Clock::now());
  auto log = std::make_shared<std::vector<uint32_t>>();
  for (uint32_t r = 0; r < kFanOutWorld; ++r) {
    EXPECT_TRUE(piece->BeginLocked(r, DataType::kFloat32, std::make_shared<FanOutRecorder>(r, log)));
  }
  std::optional<Piece::Run> run;
  for (uint32_t r = 0; r < kFanOutWorld; ++r) run = piece->Claim(r, h.count);
  EXPECT_TRUE(run);
  if (!run) return {};
  piece->Release(run->begin, h, piece->slot(0), /*current_epoch=*/0);
  return *log;
}

TEST(PieceFanOut, EveryRankGetsThePartOnce) {
  for (uint32_t index = 0; index < 2 * kFanOutWorld; ++index) {
    std::vector<uint32_t> order = FanOutOrder(7, index);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 2, 3})) << "piece " << index;
  }
}

// Operation seq's piece i goes to reducer (seq + i) mod R
// (protocol::Partition): the pieces of one round, on different reducers,
// begin their answers at different ranks, and in turn after it.
TEST(PieceFanOut, PiecesOfOneRoundBeginAtDifferentRanks) {
  EXPECT_EQ(FanOutOrder(0, 0), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(FanOutOrder(0, 1), (std::vector<uint32_t>{1, 2, 3, 0}));
  EXPECT_EQ(FanOutOrder(0, 3), (std::vector<uint32_t>{3, 0, 1, 2}));
  EXPECT_EQ(FanOutOrder(5, 0), (std::vector<uint32_t>{1, 2, 3, 0})) << "seq counts as the partition's offset";
  std::vector<uint32_t> firsts;
  for (uint32_t index = 0; index < kFanOutWorld; ++index) firsts.push_back(FanOutOrder(9, index).at(0));
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(firsts, (std::vector<uint32_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace rs::server
