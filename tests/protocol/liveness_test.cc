// The liveness rules every stream follows, on made-up times: a peer that
// sends anything (a heartbeat, part of a frame) is alive; one that sends
// nothing for the timeout is reported, with how long it was silent.
#include "protocol/liveness.h"

#include <gtest/gtest.h>

namespace rs::protocol {
namespace {

using std::chrono::milliseconds;

class LivenessTest : public ::testing::Test {
 protected:
  LivenessMonitor monitor_{milliseconds(5000)};
  Clock::time_point t0_ = Clock::now();
  Clock::time_point At(int ms) const { return t0_ + milliseconds(ms); }
};

TEST_F(LivenessTest, IntervalsFollowTheTimeout) {
  EXPECT_EQ(monitor_.tick_interval(), milliseconds(500));
  EXPECT_EQ(monitor_.heartbeat_interval(), milliseconds(1000));
  EXPECT_TRUE(monitor_.enabled());
}

TEST_F(LivenessTest, HeartbeatDueOnlyAfterAQuietInterval) {
  monitor_.Start(At(0), 0, 0);
  EXPECT_FALSE(monitor_.Tick(At(500), 0, 0).send_heartbeat);
  EXPECT_TRUE(monitor_.Tick(At(1000), 0, 0).send_heartbeat);
  // Not again right away, even though the owner wrote nothing yet.
  EXPECT_FALSE(monitor_.Tick(At(1500), 0, 0).send_heartbeat);
  EXPECT_TRUE(monitor_.Tick(At(2000), 0, 0).send_heartbeat);
  // Writing data resets the interval: a busy stream sends no heartbeats.
  EXPECT_FALSE(monitor_.Tick(At(2500), 0, 1).send_heartbeat);
  EXPECT_FALSE(monitor_.Tick(At(3400), 0, 2).send_heartbeat);
  EXPECT_FALSE(monitor_.Tick(At(4300), 0, 3).send_heartbeat);
}

TEST_F(LivenessTest, SilenceIsReportedAfterTheTimeoutWithItsLength) {
  monitor_.Start(At(0), 0, 0);
  EXPECT_FALSE(monitor_.Tick(At(4999), 0, 0).silent);
  const auto v = monitor_.Tick(At(5200), 0, 0);
  EXPECT_TRUE(v.silent);
  EXPECT_EQ(v.silent_for, milliseconds(5200));
}

TEST_F(LivenessTest, TwoMissedHeartbeatsAreFlaggedBeforeTheTimeout) {
  monitor_.Start(At(0), 0, 0);
  EXPECT_FALSE(monitor_.Tick(At(1999), 0, 0).heartbeats_missed);
  const auto v = monitor_.Tick(At(2000), 0, 0);
  EXPECT_TRUE(v.heartbeats_missed);
  EXPECT_FALSE(v.silent);
  EXPECT_FALSE(monitor_.Tick(At(2500), 1, 0).heartbeats_missed);  // a byte arrived
  monitor_.Pause();
  EXPECT_FALSE(monitor_.Tick(At(9000), 1, 0).heartbeats_missed);
}

TEST_F(LivenessTest, AnyProgressKeepsThePeerAlive) {
  monitor_.Start(At(0), 0, 0);
  uint64_t received = 0;
  // Part of one large frame every 4 s: slow, but alive.
  for (int t = 4000; t <= 40000; t += 4000) {
    ++received;
    EXPECT_FALSE(monitor_.Tick(At(t), received, 0).silent) << "at " << t << " ms";
  }
  EXPECT_TRUE(monitor_.Tick(At(45000), received, 0).silent);
}

TEST_F(LivenessTest, PausedSilenceDoesNotCount) {
  monitor_.Start(At(0), 0, 0);
  monitor_.Pause();
  EXPECT_FALSE(monitor_.Tick(At(60000), 0, 0).silent);
  monitor_.Resume(At(60000));
  EXPECT_FALSE(monitor_.Tick(At(64000), 0, 0).silent);
  EXPECT_TRUE(monitor_.Tick(At(65000), 0, 0).silent);
}

TEST_F(LivenessTest, SilenceMayBeGivenLongerThanTheTimeout) {
  LivenessMonitor patient(milliseconds(5000), milliseconds(10000));
  EXPECT_EQ(patient.heartbeat_interval(), milliseconds(1000));  // heartbeats as usual
  patient.Start(At(0), 0, 0);
  EXPECT_FALSE(patient.Tick(At(9000), 0, 0).silent);
  EXPECT_TRUE(patient.Tick(At(10000), 0, 0).silent);
}

TEST_F(LivenessTest, OffReportsNothing) {
  LivenessMonitor off(milliseconds(0));
  EXPECT_FALSE(off.enabled());
  off.Start(At(0), 0, 0);
  const auto v = off.Tick(At(3600 * 1000), 0, 0);
  EXPECT_FALSE(v.silent);
  EXPECT_FALSE(v.send_heartbeat);
}

TEST(FormatSecondsTest, OneDecimal) {
  EXPECT_EQ(FormatSeconds(milliseconds(5000)), "5.0 s");
  EXPECT_EQ(FormatSeconds(milliseconds(5250)), "5.2 s");
}

}  // namespace
}  // namespace rs::protocol
