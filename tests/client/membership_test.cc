// A worker's membership steps, on made-up times: losing a reducer reports to
// the coordinator (the lowest live reducer that stays), a proposal drops what
// another rank lost, an install moves the epoch, below the minimum fails, a
// change that never completes fails at its deadline, and a reducer that is
// back is proposed again.
#include "client/membership.h"

#include <gtest/gtest.h>

namespace rs::client {
namespace {

using protocol::MembershipFrame;
using protocol::MembershipKind;
using protocol::ReducerSet;
using std::chrono::seconds;

ReducerSet Set(std::initializer_list<uint32_t> members) {
  ReducerSet s(4);
  for (uint32_t m : members) s.Add(m);
  return s;
}

class MembershipTest : public ::testing::Test {
 protected:
  Membership m_{{"r0:1", "r1:1", "r2:1", "r3:1"}, /*min_reducers=*/2, seconds(10)};
  Clock::time_point t0_ = Clock::now();
};

TEST_F(MembershipTest, LosingAReducerReportsToTheLowestSurvivor) {
  auto a = m_.OnLost(0, /*watermark=*/12, t0_, "reducer r0:1 sent nothing for 5.0 s");
  EXPECT_EQ(a.drop, std::vector<uint32_t>{0});
  ASSERT_EQ(a.sends.size(), 1u);
  EXPECT_EQ(a.sends[0].reducer, 1u);  // reducer 0 is gone: 1 coordinates
  EXPECT_EQ(a.sends[0].frame.kind, MembershipKind::kReport);
  EXPECT_EQ(a.sends[0].frame.epoch, 1u);
  EXPECT_EQ(a.sends[0].frame.seq, 12u);
  EXPECT_EQ(a.sends[0].frame.live, Set({1, 2, 3}));
  EXPECT_TRUE(m_.changing());
  // From the first report on, the watermark this rank gives is frozen.
  EXPECT_EQ(m_.ReportedWatermark(30), 12u);
  // Losing it again says nothing new.
  EXPECT_TRUE(m_.OnLost(0, 30, t0_).sends.empty());
}

TEST_F(MembershipTest, AProposalDropsWhatAnotherRankLostAndInstallMovesTheEpoch) {
  // This rank saw nothing; another rank lost reducer 2.
  auto a = m_.OnPropose(0, MembershipFrame{MembershipKind::kPropose, 1, 0, Set({0, 1, 3})}, 20, t0_);
  EXPECT_EQ(a.drop, std::vector<uint32_t>{2});
  ASSERT_EQ(a.sends.size(), 1u);
  EXPECT_EQ(a.sends[0].reducer, 0u);
  EXPECT_EQ(a.sends[0].frame.live, Set({0, 1, 3}));
  a = m_.OnInstall(0, MembershipFrame{MembershipKind::kInstall, 1, 18, Set({0, 1, 3})});
  EXPECT_TRUE(a.install);
  EXPECT_EQ(m_.epoch(), 1u);
  EXPECT_EQ(m_.start(), 18u);
  EXPECT_EQ(m_.live(), Set({0, 1, 3}));
  EXPECT_FALSE(m_.changing());
  EXPECT_EQ(m_.ReportedWatermark(30), 30u);  // thawed
  EXPECT_TRUE(m_.AfterInstall(18, t0_).sends.empty());
  // Stale frames are ignored.
  EXPECT_FALSE(m_.OnInstall(0, MembershipFrame{MembershipKind::kInstall, 1, 18, Set({0, 1, 3})}).install);
}

TEST_F(MembershipTest, AReducerLostDuringAChangeIsRemovedByTheNextOne) {
  m_.OnLost(3, 5, t0_);
  m_.OnInstall(0, MembershipFrame{MembershipKind::kInstall, 1, 5, Set({0, 1, 2})});
  // Lost reducer 2 while epoch 1 was being decided without it being known:
  // here it is lost after the install, so the next change starts at once.
  auto a = m_.OnLost(2, 9, t0_);
  ASSERT_EQ(a.sends.size(), 1u);
  EXPECT_EQ(a.sends[0].frame.epoch, 2u);
  EXPECT_EQ(a.sends[0].frame.live, Set({0, 1}));
}

TEST_F(MembershipTest, BelowTheMinimumFailsNamingTheLostAndWhy) {
  m_.OnLost(0, 1, t0_, "reducer r0:1 sent nothing for 5.0 s");
  m_.OnLost(1, 1, t0_);
  auto a = m_.OnLost(2, 1, t0_);
  ASSERT_FALSE(a.failure.ok());
  EXPECT_NE(a.failure.message().find("only 1 of 4 reducers left"), std::string::npos) << a.failure.message();
  EXPECT_NE(a.failure.message().find("below the minimum of 2"), std::string::npos) << a.failure.message();
  EXPECT_NE(a.failure.message().find("r0:1 (reducer r0:1 sent nothing for 5.0 s)"), std::string::npos)
      << a.failure.message();
}

TEST_F(MembershipTest, BelowTheMinimumNamesReducersLostInEarlierEpochsToo) {
  // Reducer 0 is lost and epoch 1 goes on without it; then 2 and 3 go too.
  m_.OnLost(0, 1, t0_, "reducer r0:1 was killed");
  m_.OnInstall(1, MembershipFrame{MembershipKind::kInstall, 1, 1, Set({1, 2, 3})});
  m_.AfterInstall(1, t0_);
  m_.OnLost(3, 2, t0_, "reducer r3:1 was killed");
  auto a = m_.OnLost(2, 2, t0_, "reducer r2:1 was killed");
  ASSERT_FALSE(a.failure.ok());
  EXPECT_NE(a.failure.message().find("only 1 of 4 reducers left"), std::string::npos) << a.failure.message();
  // "1 of 4 left" must account for all three: the one of epoch 0 as well.
  for (const char* why : {"r0:1 (reducer r0:1 was killed)", "r2:1 (reducer r2:1 was killed)",
                          "r3:1 (reducer r3:1 was killed)"}) {
    EXPECT_NE(a.failure.message().find(why), std::string::npos) << a.failure.message();
  }
}

TEST_F(MembershipTest, AChangeThatNeverCompletesFailsAtItsDeadline) {
  m_.OnLost(1, 1, t0_);
  EXPECT_TRUE(m_.Tick(t0_ + seconds(9)).failure.ok());
  auto a = m_.Tick(t0_ + seconds(11));
  ASSERT_FALSE(a.failure.ok());
  EXPECT_EQ(a.failure.code(), Code::kTimeout);
  EXPECT_NE(a.failure.message().find("reducer r0:1 did not hear from every rank"), std::string::npos)
      << a.failure.message();
}

TEST_F(MembershipTest, AReducerThatIsBackIsProposedOnceNoChangeIsUnderWay) {
  m_.OnLost(2, 1, t0_);
  // Back while the removal is still being decided: waits.
  EXPECT_TRUE(m_.OnReady(2, 1, t0_).sends.empty());
  m_.OnInstall(0, MembershipFrame{MembershipKind::kInstall, 1, 1, Set({0, 1, 3})});
  auto a = m_.AfterInstall(1, t0_);
  ASSERT_EQ(a.sends.size(), 1u);
  EXPECT_EQ(a.sends[0].frame.epoch, 2u);
  EXPECT_EQ(a.sends[0].frame.live, Set({0, 1, 2, 3}));
  EXPECT_EQ(a.sends[0].reducer, 0u);
}

TEST_F(MembershipTest, ARankAnEpochBehindAsksForTheInstallItMissed) {
  auto a = m_.OnPropose(1, MembershipFrame{MembershipKind::kPropose, 2, 0, Set({1, 2})}, 7, t0_);
  ASSERT_EQ(a.sends.size(), 1u);
  EXPECT_EQ(a.sends[0].reducer, 1u);
  EXPECT_EQ(a.sends[0].frame.epoch, 1u);
  EXPECT_TRUE(a.drop.empty());
}

}  // namespace
}  // namespace rs::client
