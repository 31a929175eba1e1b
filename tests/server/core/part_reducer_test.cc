// The reduction of a piece's slots, without a session: in rank order, and
// for a float32 sum on a 16-bit wire, in the wire type only when it fits.
#include "server/core/part_reducer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/half.h"

namespace rs::server {
namespace {

class PartReducerTest : public ::testing::Test {
 protected:
  // A piece of `count` elements of `dtype` (`wire` not kFloat32: a float32
  // sum on that wire), begun by `world` ranks each in `types[rank]`.
  std::shared_ptr<Piece> Begun(DataType dtype, uint64_t count, const std::vector<DataType>& types,
                               DataType wire = DataType::kFloat32) {
    protocol::PieceHeader h;
    h.dtype = dtype;
    h.op = ReduceOp::kSum;
    h.count = h.total_count = count;
    h.pieces = 1;
    if (wire != DataType::kFloat32) h.flags |= protocol::kPieceWideSum;
    const auto world = static_cast<uint32_t>(types.size());
    const size_t slot = Piece::SlotBytes(h);
    auto piece = std::make_shared<Piece>(h, 0, world, budget_->TryAllocate(slot * PieceSlots(world, wire)), slot,
                                         count, Clock::now());
    for (uint32_t r = 0; r < world; ++r) EXPECT_TRUE(piece->BeginLocked(r, types[r], nullptr));
    return piece;
  }

  template <typename T>
  static void Fill(Piece& piece, uint32_t rank, const std::vector<T>& values) {
    std::memcpy(piece.slot(rank), values.data(), values.size() * sizeof(T));
  }

  std::shared_ptr<MemoryBudget> budget_ = MemoryBudget::Create(1 << 20);
};

TEST_F(PartReducerTest, ContributionsAreSummedInRankOrder) {
  // In float32, 1e8 + 1 is 1e8: the order of the additions shows in the sum.
  const std::vector<DataType> f32(3, DataType::kFloat32);
  auto piece = Begun(DataType::kFloat32, 2, f32);
  Fill<float>(*piece, 0, {1e8f, 1e8f});
  Fill<float>(*piece, 1, {1.0f, -1e8f});
  Fill<float>(*piece, 2, {-1e8f, 1.0f});
  const ReducedPart out = ReducePart(*piece, DataType::kFloat32, {0, 2});
  ASSERT_EQ(out.dtype, DataType::kFloat32);
  float sums[2];
  std::memcpy(sums, out.data, sizeof(sums));
  EXPECT_EQ(sums[0], 0.0f) << "((1e8 + 1) - 1e8)";
  EXPECT_EQ(sums[1], 1.0f) << "((1e8 - 1e8) + 1)";
}

TEST_F(PartReducerTest, APartIsReducedWhereItLiesAndLeavesTheRestAlone) {
  const std::vector<DataType> f32(2, DataType::kFloat32);
  auto piece = Begun(DataType::kFloat32, 4, f32);
  Fill<float>(*piece, 0, {1, 2, 3, 4});
  Fill<float>(*piece, 1, {10, 20, 30, 40});
  const ReducedPart out = ReducePart(*piece, DataType::kFloat32, {2, 4});
  EXPECT_EQ(out.data, piece->slot(0) + 2 * sizeof(float));
  float all[4];
  std::memcpy(all, piece->slot(0), sizeof(all));
  EXPECT_EQ(all[0], 1.0f);  // not claimed, not touched
  EXPECT_EQ(all[2], 33.0f);
  EXPECT_EQ(all[3], 44.0f);
}

TEST_F(PartReducerTest, AWideSumThatFitsGoesInTheWireTypeWhateverTypeEachRankSent) {
  // Rank 1's values did not fit float16, so it sent them in float32.
  auto piece = Begun(DataType::kFloat32, 2, {DataType::kFloat16, DataType::kFloat32}, DataType::kFloat16);
  Fill<uint16_t>(*piece, 0, {FloatToHalf(1.5f), FloatToHalf(-30000.0f)});
  Fill<float>(*piece, 1, {2.0f, 70000.0f});
  const ReducedPart out = ReducePart(*piece, DataType::kFloat16, {0, 2});
  ASSERT_EQ(out.dtype, DataType::kFloat16);
  uint16_t sums[2];
  std::memcpy(sums, out.data, sizeof(sums));
  EXPECT_EQ(HalfToFloat(sums[0]), 3.5f);
  EXPECT_EQ(HalfToFloat(sums[1]), 40000.0f);
}

TEST_F(PartReducerTest, AWideSumThatDoesNotFitGoesInFloat32AndMakesNoInf) {
  const std::vector<DataType> f16(2, DataType::kFloat16);
  auto piece = Begun(DataType::kFloat32, 2, f16, DataType::kFloat16);
  Fill<uint16_t>(*piece, 0, {FloatToHalf(60000.0f), FloatToHalf(1.0f)});
  Fill<uint16_t>(*piece, 1, {FloatToHalf(60000.0f), FloatToHalf(2.0f)});
  const ReducedPart out = ReducePart(*piece, DataType::kFloat16, {0, 2});
  ASSERT_EQ(out.dtype, DataType::kFloat32);
  float sums[2];
  std::memcpy(sums, out.data, sizeof(sums));
  EXPECT_EQ(sums[0], 120000.0f);
  EXPECT_EQ(sums[1], 3.0f);
}

}  // namespace
}  // namespace rs::server
