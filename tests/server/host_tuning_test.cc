// reducerd's start-up notices about the host's TCP settings.
#include "server/host_tuning.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace rs::server {
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

}  // namespace
}  // namespace rs::server
