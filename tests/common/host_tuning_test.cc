// The host's TCP settings: reducerd's start-up notices, and the warning both
// ends give once a long path shows the idle restart will cost time.
#include "common/host_tuning.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace rs {
namespace {

class HostTuningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/host_tuning_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::remove(path().c_str());
    rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/tcp_slow_start_after_idle"; }
  void Write(const std::string& text) const { std::ofstream(path()) << text; }

  std::string dir_;
};

// Linux's default: the operator is told, with the setting to change and how.
TEST_F(HostTuningTest, SlowStartAfterIdleOnIsReportedWithTheFix) {
  Write("1\n");
  const auto notices = HostTuningNotices(path());
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("net.ipv4.tcp_slow_start_after_idle is 1"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("sysctl -w net.ipv4.tcp_slow_start_after_idle=0"), std::string::npos) << notices[0];
}

TEST_F(HostTuningTest, ATunedHostGetsNoNotice) {
  Write("0\n");
  EXPECT_TRUE(HostTuningNotices(path()).empty());
}

// Where the setting cannot be read there is nothing to say, and no error.
TEST_F(HostTuningTest, AnUnreadableSettingIsSkipped) {
  EXPECT_TRUE(HostTuningNotices(path()).empty());  // no such file
  Write("not a number\n");
  EXPECT_TRUE(HostTuningNotices(path()).empty());
}

// The warning once a path shows the setting will cost time: on, and a round
// trip of 5 ms or more. A LAN's round trip, a tuned host or an unreadable
// setting say nothing.
TEST(IdleRestartWarning, OnlyAnOnSettingWithALongRoundTripIsWorthAWarning) {
  using std::chrono::microseconds;
  const auto warning = IdleRestartWarning(1, microseconds(40'100), "reducer 10.0.0.5:7450");
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("the round trip to reducer 10.0.0.5:7450 is 40.1 ms"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("sysctl -w net.ipv4.tcp_slow_start_after_idle=0"), std::string::npos) << *warning;
  EXPECT_TRUE(IdleRestartWarning(1, kIdleRestartRoundTrip, "rank 1"));
  EXPECT_FALSE(IdleRestartWarning(1, microseconds(4'999), "rank 1"));
  EXPECT_FALSE(IdleRestartWarning(1, microseconds(120), "rank 1"));
  EXPECT_FALSE(IdleRestartWarning(0, microseconds(80'000), "rank 1"));
  EXPECT_FALSE(IdleRestartWarning(std::nullopt, microseconds(80'000), "rank 1"));
}

TEST_F(HostTuningTest, TheSettingIsReadAsANumber) {
  Write("1\n");
  EXPECT_EQ(ReadSlowStartAfterIdle(path()), 1);
  Write("0\n");
  EXPECT_EQ(ReadSlowStartAfterIdle(path()), 0);
  Write("on\n");
  EXPECT_EQ(ReadSlowStartAfterIdle(path()), std::nullopt);
}

}  // namespace
}  // namespace rs
