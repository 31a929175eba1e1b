// Flag values as operators write them.
#include "common/units.h"

#include <gtest/gtest.h>

namespace rs {
namespace {

TEST(UnitsTest, ParsesSizes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64KiB"), 64u << 10);
  EXPECT_EQ(*ParseSize("16M"), 16u << 20);
  EXPECT_EQ(*ParseSize("1 GiB"), 1ull << 30);
  EXPECT_EQ(*ParseSize("1.5k"), 1536u);
  EXPECT_FALSE(ParseSize("lots").ok());
  EXPECT_FALSE(ParseSize("-1").ok());
  EXPECT_FALSE(ParseSize("12XB").ok());
  EXPECT_NE(ParseSize("x").status().message().find("not a size"), std::string::npos);
}

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(ParseDuration("500ms")->count(), 500);
  EXPECT_EQ(ParseDuration("30s")->count(), 30000);
  EXPECT_EQ(ParseDuration("1.5m")->count(), 90000);
  EXPECT_EQ(ParseDuration("2H")->count(), 7'200'000);
  EXPECT_EQ(ParseDuration("0")->count(), 0);
  EXPECT_FALSE(ParseDuration("soon").ok());
  EXPECT_FALSE(ParseDuration("5 fortnights").ok());
  // Settings take whole milliseconds and no microseconds: "300us" must not
  // round to 0, which turns some of them off.
  EXPECT_FALSE(ParseDuration("300us").ok());
  // Round trips keep their fractions.
  EXPECT_EQ(ParseFineDuration("300us")->count(), 300);
  EXPECT_EQ(ParseFineDuration("0.25ms")->count(), 250);
  EXPECT_EQ(ParseFineDuration("20ms")->count(), 20'000);
  EXPECT_EQ(ParseFineDuration("0")->count(), 0);
  EXPECT_FALSE(ParseFineDuration("20").ok()) << "a round trip needs its unit too";
}

// "90000" is 90 s under the plugin's old REDUCER_OP_TIMEOUT_MS and 25 hours
// read as seconds: a number without a unit is refused, saying why.
TEST(UnitsTest, DurationsNeedAUnit) {
  for (const char* bare : {"2", "90000", "1.5"}) {
    StatusOr<std::chrono::milliseconds> d = ParseDuration(bare);
    ASSERT_FALSE(d.ok()) << bare;
    EXPECT_NE(d.status().message().find("has no unit"), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find("30s"), std::string::npos) << d.status().message();
  }
}

TEST(UnitsTest, ParsesHostPort) {
  auto a = ParseHostPort("127.0.0.1:7450");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7450);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  auto c = ParseHostPort(":9");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "0.0.0.0");
  EXPECT_FALSE(ParseHostPort("host").ok());
  EXPECT_FALSE(ParseHostPort("host:99999").ok());
  EXPECT_FALSE(ParseHostPort("::1:80").ok());
}

TEST(UnitsTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(4096), "4 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(12), "12 B");
}

}  // namespace
}  // namespace rs
