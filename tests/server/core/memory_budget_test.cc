// The reducer's memory bound: what an operator sets with --memory-limit.
#include "server/core/memory_budget.h"

#include <gtest/gtest.h>

namespace rs::server {
namespace {

TEST(MemoryBudgetTest, NeverHandsOutMoreThanTheLimit) {
  auto budget = MemoryBudget::Create(1 << 20);
  std::vector<std::unique_ptr<PieceBuffer>> held;
  for (int i = 0; i < 16; ++i) {
    auto b = budget->TryAllocate(256 << 10);
    if (!b) break;
    held.push_back(std::move(b));
  }
  EXPECT_EQ(held.size(), 4u);
  EXPECT_EQ(budget->in_use(), 1u << 20);
  EXPECT_LE(budget->mapped(), 1u << 20);
  EXPECT_EQ(budget->TryAllocate(1), nullptr);
  EXPECT_EQ(budget->TryAllocate(2 << 20), nullptr);  // larger than the whole limit
}

TEST(MemoryBudgetTest, WakesAWaiterWhenMemoryIsReleased) {
  auto budget = MemoryBudget::Create(256 << 10);
  auto first = budget->TryAllocate(256 << 10);
  ASSERT_NE(first, nullptr);
  int woken = 0;
  EXPECT_EQ(budget->TryAllocate(64 << 10, [&] { ++woken; }), nullptr);
  EXPECT_EQ(woken, 0);
  EXPECT_EQ(budget->waits(), 1u);
  first.reset();
  EXPECT_EQ(woken, 1);
  EXPECT_NE(budget->TryAllocate(64 << 10), nullptr);
}

TEST(MemoryBudgetTest, RecyclesAndEvictsCachedBlocksWithinTheLimit) {
  auto budget = MemoryBudget::Create(1 << 20);
  uint8_t* first = nullptr;
  {
    auto b = budget->TryAllocate(512 << 10);
    first = b->data();
    b->data()[0] = 1;
  }
  auto again = budget->TryAllocate(512 << 10);
  EXPECT_EQ(again->data(), first);  // reused, not mapped afresh
  again.reset();
  // A different size evicts the cached block rather than exceed the limit.
  auto big = budget->TryAllocate(1 << 20);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(budget->mapped(), 1u << 20);
}

}  // namespace
}  // namespace rs::server
