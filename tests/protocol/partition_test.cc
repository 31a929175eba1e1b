// The partition every rank computes on its own: it must cover each element
// exactly once, respect the piece size, and spread work over the reducers.
#include "protocol/partition.h"

#include <gtest/gtest.h>

#include <set>

namespace rs::protocol {
namespace {

void ExpectCovers(const std::vector<PieceSpan>& pieces, uint64_t count) {
  uint64_t next = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i].index, i);
    EXPECT_EQ(pieces[i].offset, next);
    EXPECT_GT(pieces[i].count, 0u);
    next += pieces[i].count;
  }
  EXPECT_EQ(next, count);
}

TEST(PartitionTest, EmptyOperationHasNoPieces) {
  EXPECT_TRUE(Partition({.count = 0}).empty());
}

TEST(PartitionTest, CoversEveryElementOnceWithinPieceLimit) {
  for (uint64_t count : {1ull, 7ull, 4099ull, 1000003ull, 16ull << 20}) {
    for (size_t elem : {1u, 2u, 4u, 8u}) {
      PartitionParams p{.count = count, .elem_size = elem, .max_piece_bytes = 1 << 20,
                        .min_piece_bytes = 64 << 10, .reducers = 3, .streams = 2, .seq = 5};
      auto pieces = Partition(p);
      ExpectCovers(pieces, count);
      for (const auto& s : pieces) {
        EXPECT_LE(s.count * elem, size_t{1} << 20);
        EXPECT_LT(s.reducer, 3u);
        EXPECT_LT(s.stream, 2u);
      }
    }
  }
}

TEST(PartitionTest, MediumOperationsReachEveryReducer) {
  // 512 KiB, below one piece, but large enough for 4 pieces of 64 KiB.
  auto pieces = Partition({.count = 128 << 10, .elem_size = 4, .max_piece_bytes = 1 << 20,
                           .min_piece_bytes = 64 << 10, .reducers = 4, .streams = 1, .seq = 0});
  std::set<uint32_t> reducers;
  for (const auto& s : pieces) reducers.insert(s.reducer);
  EXPECT_EQ(reducers.size(), 4u);
}

TEST(PartitionTest, SmallOperationsRotateOverReducers) {
  std::set<uint32_t> reducers;
  for (uint64_t seq = 0; seq < 4; ++seq) {
    auto pieces = Partition({.count = 256, .elem_size = 4, .reducers = 4, .seq = seq});
    ASSERT_EQ(pieces.size(), 1u);
    reducers.insert(pieces[0].reducer);
  }
  EXPECT_EQ(reducers.size(), 4u);
}

TEST(PartitionTest, IsDeterministic) {
  PartitionParams p{.count = 3'000'001, .elem_size = 2, .reducers = 5, .streams = 3, .seq = 77};
  auto a = Partition(p);
  auto b = Partition(p);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].offset, b[i].offset);
    EXPECT_EQ(a[i].reducer, b[i].reducer);
    EXPECT_EQ(a[i].stream, b[i].stream);
  }
}

}  // namespace
}  // namespace rs::protocol
