// The partition every rank computes on its own: it must cover each element
// exactly once, respect the piece size, and spread work over the reducers.
#include "protocol/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

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

// An operation takes as long as its busiest reducer. 1 MiB in pieces of at
// most 168 KiB (the automatic size for 3 reducers) was 7 pieces, 3 of them on
// one reducer: 1 MiB all-reduces at 3 + 3 hosts took 1.35 x their bytes' time.
TEST(PartitionTest, EveryReducerGetsAsManyPiecesBeyondOneRound) {
  for (uint32_t reducers : {2u, 3u, 5u, 6u, 7u, 12u}) {
    for (uint64_t bytes : {uint64_t{1} << 20, uint64_t{4} << 20, uint64_t{1000003} * 4, uint64_t{64} << 20}) {
      const size_t max_piece = std::max<size_t>(64 << 10, (512 << 10) / reducers / 4096 * 4096);
      PartitionParams p{.count = bytes / 4, .elem_size = 4, .max_piece_bytes = max_piece,
                        .min_piece_bytes = 16 << 10, .reducers = reducers, .streams = 1, .seq = 7};
      auto pieces = Partition(p);
      ExpectCovers(pieces, p.count);
      std::vector<uint64_t> load(reducers, 0);
      for (const auto& s : pieces) {
        EXPECT_LE(s.count * 4, max_piece);
        load[s.reducer] += s.count;
      }
      EXPECT_EQ(pieces.size() % reducers, 0u) << bytes << " bytes over " << reducers << " reducers";
      const auto [least, most] = std::minmax_element(load.begin(), load.end());
      EXPECT_LE(*most - *least, 1u) << bytes << " bytes over " << reducers << " reducers";
    }
  }
  // Rounding up would cut pieces below the smallest piece: left as it was.
  auto pieces = Partition({.count = 5 << 10, .elem_size = 4, .max_piece_bytes = 4 << 10,
                           .min_piece_bytes = 4 << 10, .reducers = 4, .streams = 1, .seq = 0});
  EXPECT_EQ(pieces.size(), 5u);
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
