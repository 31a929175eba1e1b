// The coordinating reducer's decisions, driven with hand-made reports:
// propose the intersection, decide once every rank agrees, start the epoch at
// the lowest watermark, bring a lagging rank up to date, refuse a split.
#include "server/core/failover_coordinator.h"

#include <gtest/gtest.h>

#include "server/core/watermark_tracker.h"

namespace rs::server {
namespace {

using protocol::MembershipFrame;
using protocol::MembershipKind;
using protocol::ReducerSet;

ReducerSet Set(std::initializer_list<uint32_t> members, uint32_t size = 4) {
  ReducerSet s(size);
  for (uint32_t m : members) s.Add(m);
  return s;
}

MembershipFrame Report(uint32_t epoch, ReducerSet live, uint64_t watermark) {
  return MembershipFrame{MembershipKind::kReport, epoch, watermark, std::move(live)};
}

TEST(FailoverCoordinatorTest, DecidesOnceEveryRankReportsTheSameSet) {
  FailoverCoordinator c(3);
  // Rank 1 lost reducer 2: the others hear of it through the proposal.
  auto a = c.OnReport(1, Report(1, Set({0, 1, 3}), 40));
  ASSERT_TRUE(a.to_all);
  EXPECT_EQ(a.to_all->kind, MembershipKind::kPropose);
  EXPECT_EQ(a.to_all->live, Set({0, 1, 3}));
  EXPECT_FALSE(c.OnReport(0, Report(1, Set({0, 1, 3}), 37)).to_all);  // nothing new to say
  // Rank 2 lost reducer 3 meanwhile: the proposal shrinks.
  a = c.OnReport(2, Report(1, Set({0, 1, 2}), 45));
  ASSERT_TRUE(a.to_all);
  EXPECT_EQ(a.to_all->kind, MembershipKind::kPropose);
  EXPECT_EQ(a.to_all->live, Set({0, 1}));
  EXPECT_FALSE(c.OnReport(0, Report(1, Set({0, 1}), 37)).to_all);
  EXPECT_FALSE(c.OnReport(1, Report(1, Set({0, 1}), 40)).to_all);
  a = c.OnReport(2, Report(1, Set({0, 1}), 45));
  ASSERT_TRUE(a.to_all);
  EXPECT_EQ(a.to_all->kind, MembershipKind::kInstall);
  EXPECT_EQ(a.to_all->epoch, 1u);
  EXPECT_EQ(a.to_all->live, Set({0, 1}));
  EXPECT_EQ(a.to_all->seq, 37u);  // the lowest watermark: everything below is done everywhere
  // A late report for the decided epoch gets the same install, to that rank only.
  a = c.OnReport(1, Report(1, Set({0, 1}), 99));
  EXPECT_FALSE(a.to_all);
  ASSERT_EQ(a.to_rank.size(), 1u);
  EXPECT_EQ(a.to_rank[0].first, 1u);
  EXPECT_EQ(a.to_rank[0].second.seq, 37u);
}

TEST(FailoverCoordinatorTest, AnnouncedEpochsAreRecordedAndAnswerLaggingRanks) {
  FailoverCoordinator c(2);
  // Rank 0 is an epoch behind; the epoch it asks about was decided elsewhere.
  auto a = c.OnReport(1, Report(2, Set({0, 3}), 80));  // rank 1 is already at epoch 1
  a = c.OnReport(0, Report(1, Set({0, 1, 3}), 50));    // rank 0 is not
  EXPECT_TRUE(a.to_rank.empty());                      // not known here yet
  a = c.OnAnnounce(1, MembershipFrame{MembershipKind::kAnnounce, 1, 55, Set({0, 1, 3})});
  ASSERT_TRUE(a.installed);
  EXPECT_EQ(a.installed->start, 55u);
  EXPECT_EQ(c.epoch(), 1u);
  ASSERT_EQ(a.to_rank.size(), 1u);  // the waiting rank gets its install
  EXPECT_EQ(a.to_rank[0].first, 0u);
  EXPECT_EQ(a.to_rank[0].second.kind, MembershipKind::kInstall);
  EXPECT_EQ(a.to_rank[0].second.epoch, 1u);
  // The same announcement again changes nothing.
  a = c.OnAnnounce(0, MembershipFrame{MembershipKind::kAnnounce, 1, 55, Set({0, 1, 3})});
  EXPECT_FALSE(a.installed);
  EXPECT_TRUE(a.error.ok());
}

TEST(FailoverCoordinatorTest, RanksWaitingHereGetAnInstallDecidedElsewhere) {
  FailoverCoordinator c(3);
  // Ranks 0 and 1 report here (their coordinator died); rank 2 had already
  // installed the epoch from it and announces it.
  c.OnReport(0, Report(1, Set({1, 2}), 20));
  c.OnReport(1, Report(1, Set({1, 2}), 25));
  auto a = c.OnAnnounce(2, MembershipFrame{MembershipKind::kAnnounce, 1, 18, Set({1, 2, 3})});
  ASSERT_TRUE(a.installed);
  ASSERT_EQ(a.to_rank.size(), 2u);
  for (const auto& [rank, frame] : a.to_rank) {
    EXPECT_LT(rank, 2u);
    EXPECT_EQ(frame.kind, MembershipKind::kInstall);
    EXPECT_EQ(frame.live, Set({1, 2, 3}));
    EXPECT_EQ(frame.seq, 18u);
  }
}

TEST(FailoverCoordinatorTest, DifferentInstallsOfOneEpochFailTheSession) {
  FailoverCoordinator c(2);
  ASSERT_TRUE(c.OnAnnounce(0, MembershipFrame{MembershipKind::kAnnounce, 1, 10, Set({0, 1})}).error.ok());
  auto a = c.OnAnnounce(1, MembershipFrame{MembershipKind::kAnnounce, 1, 10, Set({0, 2})});
  EXPECT_EQ(a.error.code(), Code::kMismatch);
  EXPECT_NE(a.error.message().find("different memberships for epoch 1"), std::string::npos) << a.error.message();
}

// A rank that announces epoch after epoch (a broken or hostile worker) must
// not grow the reducer's memory; the ranks only ever need recent epochs.
TEST(FailoverCoordinatorTest, TheEpochHistoryIsBounded) {
  FailoverCoordinator c(2);
  constexpr uint32_t kEpochs = 1000;
  for (uint32_t t = 1; t <= kEpochs; ++t) {
    const auto a = c.OnAnnounce(0, MembershipFrame{MembershipKind::kAnnounce, t, t, Set({0, 1})});
    ASSERT_TRUE(a.error.ok()) << a.error.ToString();
  }
  EXPECT_EQ(c.epoch(), kEpochs);
  const uint32_t oldest = kEpochs - FailoverCoordinator::kEpochHistory + 1;
  ASSERT_NE(c.Find(oldest), nullptr);
  EXPECT_EQ(c.Find(oldest)->start, oldest);
  EXPECT_EQ(c.Find(oldest - 1), nullptr);
  // A rank a few epochs behind still gets its install.
  auto a = c.OnReport(1, Report(kEpochs - 2, Set({0, 1}), 0));
  ASSERT_EQ(a.to_rank.size(), 1u);
  EXPECT_EQ(a.to_rank[0].second.epoch, kEpochs - 2);
  // One older than every remembered epoch fails the session, naming it.
  a = c.OnReport(1, Report(5, Set({0, 1}), 0));
  EXPECT_EQ(a.error.code(), Code::kProtocol);
  EXPECT_EQ(a.error.message(), "rank 1 reported for epoch 5, older than the 64 epochs this reducer remembers (from " +
                                   std::to_string(oldest) + ")");
  a = c.OnAnnounce(0, MembershipFrame{MembershipKind::kAnnounce, 7, 7, Set({0, 1})});
  EXPECT_EQ(a.error.code(), Code::kProtocol);
}

// Ranks waiting on an epoch's install are kept per epoch: bounded too.
TEST(FailoverCoordinatorTest, RanksWaitingOnInstallsAreBounded) {
  FailoverCoordinator c(2);
  ASSERT_TRUE(c.OnReport(0, Report(100000, Set({0, 1}), 0)).error.ok());  // the epoch being collected
  for (uint32_t t = 1; t <= FailoverCoordinator::kEpochHistory; ++t) {
    ASSERT_TRUE(c.OnReport(1, Report(t, Set({0, 1}), 0)).error.ok()) << t;
  }
  const auto a = c.OnReport(1, Report(FailoverCoordinator::kEpochHistory + 1, Set({0, 1}), 0));
  EXPECT_EQ(a.error.code(), Code::kProtocol);
  EXPECT_NE(a.error.message().find("while ranks already wait on 64 other epochs"), std::string::npos)
      << a.error.message();
}

TEST(FailoverCoordinatorTest, ReportsOfDifferentListSizesAreAMismatch) {
  FailoverCoordinator c(2);
  c.OnReport(0, Report(1, Set({0, 1}, 4), 1));
  auto a = c.OnReport(1, Report(1, Set({0, 1}, 5), 1));
  EXPECT_EQ(a.error.code(), Code::kMismatch);
}

TEST(WatermarkTrackerTest, IsTheLowestRankAndMovesOnlyWhenThatOneMoves) {
  WatermarkTracker w(3);
  EXPECT_EQ(w.watermark(), 0u);
  EXPECT_FALSE(w.Report(0, 5));
  EXPECT_FALSE(w.Report(1, 7));
  EXPECT_TRUE(w.Report(2, 4));
  EXPECT_EQ(w.watermark(), 4u);
  EXPECT_FALSE(w.Report(1, 3));  // never backwards
  EXPECT_TRUE(w.Report(2, 9));
  EXPECT_EQ(w.watermark(), 5u);
  w.Reset(20);
  EXPECT_EQ(w.watermark(), 20u);
  EXPECT_FALSE(w.Report(0, 25));
  EXPECT_FALSE(w.Report(1, 21));
  EXPECT_TRUE(w.Report(2, 22));
  EXPECT_EQ(w.watermark(), 21u);
}

}  // namespace
}  // namespace rs::server
