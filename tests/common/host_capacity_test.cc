// The machine's shape and the I/O threads both ends choose from it when the
// user sets none: a 100 Gbit/s node must not be capped by one thread, a
// container's CPU limit must be respected, and the log must say why.
#include "common/host_capacity.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rs {
namespace {

HostCapacity Host(int cores, std::optional<uint64_t> bps, std::string link = "eth0") {
  HostCapacity h;
  h.cores = cores;
  h.link_bits_per_second = bps;
  h.link = std::move(link);
  return h;
}

constexpr uint64_t kGbit = 1'000'000'000;

TEST(AutoIoThreadsTest, OneThreadPerOneAndAHalfGigabytesOfLink) {
  EXPECT_EQ(AutoIoThreads(Host(64, 100 * kGbit)).threads, 9);  // 12.5 GB/s
  EXPECT_EQ(AutoIoThreads(Host(64, 200 * kGbit)).threads, kMaxAutoIoThreads);
  EXPECT_EQ(AutoIoThreads(Host(64, 25 * kGbit)).threads, 3);
  EXPECT_EQ(AutoIoThreads(Host(64, 10 * kGbit)).threads, 1);
  EXPECT_EQ(AutoIoThreads(Host(64, 1 * kGbit)).threads, 1);
}

TEST(AutoIoThreadsTest, HalfTheCoresAtMost) {
  const IoThreadChoice c = AutoIoThreads(Host(8, 100 * kGbit));
  EXPECT_EQ(c.threads, 4);
  EXPECT_NE(c.reason.find("needs 9"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("held to half of 8 usable cores"), std::string::npos) << c.reason;
  EXPECT_EQ(AutoIoThreads(Host(1, 100 * kGbit)).threads, 1);
}

TEST(AutoIoThreadsTest, AnUnknownLinkLeavesItToTheCores) {
  const IoThreadChoice c = AutoIoThreads(Host(16, std::nullopt, "lo reports no speed"));
  EXPECT_EQ(c.threads, 8);
  EXPECT_NE(c.reason.find("speed is unknown (lo reports no speed)"), std::string::npos) << c.reason;
  EXPECT_EQ(AutoIoThreads(Host(64, std::nullopt)).threads, kUnknownLinkThreads);
  EXPECT_EQ(AutoIoThreads(Host(2, std::nullopt)).threads, 1);
}

// A stream stays on one thread: more threads than streams would idle, and
// the reason says how to get more.
TEST(AutoIoThreadsTest, NoMoreThreadsThanTheCallerCanUse) {
  const IoThreadChoice c = AutoIoThreads(Host(64, 100 * kGbit), 2, "2 streams in all");
  EXPECT_EQ(c.threads, 2);
  EXPECT_NE(c.reason.find("capped at 2 by 2 streams in all"), std::string::npos) << c.reason;
  EXPECT_EQ(c.wanted, 9);  // the client warns when the cap halves what the link wants
  EXPECT_TRUE(c.from_link);
  EXPECT_FALSE(AutoIoThreads(Host(64, std::nullopt), 2, "2 streams").from_link);  // no warning on loopback
  EXPECT_EQ(AutoIoThreads(Host(64, 100 * kGbit), 0).threads, 9);
}

TEST(CgroupQuotaTest, ParsesCgroupV2AndV1) {
  EXPECT_EQ(ParseCgroupV2CpuMax("max 100000"), std::nullopt);
  EXPECT_DOUBLE_EQ(*ParseCgroupV2CpuMax("200000 100000"), 2.0);
  EXPECT_DOUBLE_EQ(*ParseCgroupV2CpuMax("150000 100000\n"), 1.5);
  EXPECT_EQ(ParseCgroupV2CpuMax("garbage"), std::nullopt);
  EXPECT_EQ(ParseCgroupV2CpuMax("0 100000"), std::nullopt);
  EXPECT_EQ(ParseCgroupV1Quota("-1", "100000"), std::nullopt);
  EXPECT_DOUBLE_EQ(*ParseCgroupV1Quota("400000", "100000"), 4.0);
  EXPECT_EQ(ParseCgroupV1Quota("x", "100000"), std::nullopt);
}

class HostFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/host_capacity_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(dir_ + "/" + relative).parent_path());
    std::ofstream(dir_ + "/" + relative) << text;
  }
  std::string dir_;
};

int AffinityCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

// docker --cpus 1.5 or a Kubernetes limit of 1500m: 2 cores' worth of
// threads, never more than the affinity mask allows.
TEST_F(HostFilesTest, ACgroupQuotaLowersTheCores) {
  Write("cpu.max", "150000 100000\n");
  EXPECT_EQ(UsableCores(dir_), std::min(2, AffinityCount()));
}

TEST_F(HostFilesTest, ACgroupV1QuotaLowersTheCores) {
  Write("cpu/cpu.cfs_quota_us", "100000\n");
  Write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(UsableCores(dir_), 1);
}

TEST_F(HostFilesTest, NoQuotaLeavesTheAffinityMask) {
  Write("cpu.max", "max 100000\n");
  EXPECT_EQ(UsableCores(dir_), AffinityCount());
}

TEST_F(HostFilesTest, AnInterfaceSpeedIsReadInMegabits) {
  Write("eth7/speed", "25000\n");
  Write("veth1/speed", "-1\n");
  EXPECT_EQ(InterfaceBitsPerSecond("eth7", dir_), 25 * kGbit);
  EXPECT_EQ(InterfaceBitsPerSecond("veth1", dir_), std::nullopt);  // virtual: no speed
  EXPECT_EQ(InterfaceBitsPerSecond("missing", dir_), std::nullopt);
  EXPECT_EQ(InterfaceBitsPerSecond("../eth7", dir_), std::nullopt);
}

// The client's route to a reducer on this host leaves by loopback, which
// reports no speed: the cores decide, as the log says.
TEST(InterfaceTowardsTest, LoopbackForALocalReducer) {
  const std::optional<std::string> nic = InterfaceTowards("127.0.0.1");
  ASSERT_TRUE(nic.has_value());
  EXPECT_EQ(InterfaceForLocalAddress("127.0.0.1"), nic);
  EXPECT_EQ(InterfaceBitsPerSecond(*nic), std::nullopt);
  EXPECT_EQ(InterfaceTowards("no-such-host.invalid"), std::nullopt);
}

TEST(FormatLinkSpeedTest, ReadsAsAUserWritesIt) {
  EXPECT_EQ(FormatLinkSpeed(100 * kGbit), "100 Gbit/s");
  EXPECT_EQ(FormatLinkSpeed(2'500'000'000), "2.5 Gbit/s");
  EXPECT_EQ(FormatLinkSpeed(800'000'000), "800 Mbit/s");
}

}  // namespace
}  // namespace rs
