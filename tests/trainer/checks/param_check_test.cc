#include "trainer/checks/param_check.h"

#include <gtest/gtest.h>

#include <bit>
#include <vector>

namespace rs::trainer {
namespace {

TEST(ParameterHashTest, AnySingleBitChangesIt) {
  std::vector<float> p(37);
  for (size_t i = 0; i < p.size(); ++i) p[i] = 0.25f * static_cast<float>(i) - 3.0f;
  const uint64_t base = ParameterHash(p.data(), p.size());
  EXPECT_EQ(base, ParameterHash(p.data(), p.size()));
  for (size_t i = 0; i < p.size(); ++i) {
    for (int bit : {0, 13, 31}) {
      std::vector<float> q = p;
      q[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(q[i]) ^ (1u << bit));
      ASSERT_NE(ParameterHash(q.data(), q.size()), base) << "element " << i << " bit " << bit;
    }
  }
  // Bit patterns, not values: -0 is not +0.
  std::vector<float> zero = {0.0f}, neg = {-0.0f};
  EXPECT_NE(ParameterHash(zero.data(), 1), ParameterHash(neg.data(), 1));
  // Length matters.
  EXPECT_NE(ParameterHash(p.data(), 36), base);
}

std::vector<uint64_t> Sum(const std::vector<std::vector<uint64_t>>& parts) {
  std::vector<uint64_t> out(parts[0].size());
  for (const auto& p : parts) {
    for (size_t i = 0; i < p.size(); ++i) out[i] += p[i];
  }
  return out;
}

TEST(EvaluateCheckTest, EqualHashesPass) {
  std::vector<std::vector<uint64_t>> parts;
  for (uint32_t r = 0; r < 4; ++r) parts.push_back(CheckContribution(r, 4, 0xABCDEF, 0));
  EXPECT_TRUE(EvaluateCheck(Sum(parts), 4, 10).ok());
}

TEST(EvaluateCheckTest, NamesEveryRankThatDrifted) {
  std::vector<std::vector<uint64_t>> parts;
  for (uint32_t r = 0; r < 4; ++r) parts.push_back(CheckContribution(r, 4, r == 1 || r == 3 ? 0x1111 : 0x2222, 0));
  const Status st = EvaluateCheck(Sum(parts), 4, 20);
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("after step 20 the parameters of ranks 1 (0x0000000000001111), 3"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("rank 0's (0x0000000000002222)"), std::string::npos) << st.message();
}

TEST(EvaluateCheckTest, ReportsRankZerosFailedVerification) {
  std::vector<std::vector<uint64_t>> parts;
  // Only rank 0's verify slot counts: the others contribute 0 there.
  for (uint32_t r = 0; r < 3; ++r) parts.push_back(CheckContribution(r, 3, 7, r == 0 ? 13 : 99));
  const Status st = EvaluateCheck(Sum(parts), 3, 20);
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("--verify: after step 13 "), std::string::npos) << st.message();
}

}  // namespace
}  // namespace rs::trainer
