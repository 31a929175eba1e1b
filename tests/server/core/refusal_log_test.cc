// Rate-limited logging of refused connections: the first one at once, then
// at most one summary line per interval however many arrive.
#include "server/core/refusal_log.h"

#include <gtest/gtest.h>

namespace rs::server {
namespace {

using std::chrono::milliseconds;

TEST(RefusalLogTest, TheFirstRefusalIsLoggedInFull) {
  RefusalLog log(std::chrono::seconds(10));
  const auto t0 = Clock::now();
  EXPECT_EQ(log.Record("protocol error", "10.0.0.1:5000: refused: bad magic", t0),
            "10.0.0.1:5000: refused: bad magic");
  EXPECT_EQ(log.Flush(t0 + std::chrono::seconds(60)), std::nullopt);  // nothing was held back
}

TEST(RefusalLogTest, AFloodGivesOneSummaryLinePerInterval) {
  RefusalLog log(std::chrono::seconds(10));
  const auto t0 = Clock::now();
  ASSERT_TRUE(log.Record("protocol error", "first", t0).has_value());
  int lines = 0;
  std::string summary;
  // 10000 refusals over 25 s, flushed every 100 ms as the reducer's sweep does.
  for (int i = 1; i <= 10000; ++i) {
    const auto now = t0 + milliseconds(i * 25 / 10);
    const char* kind = i % 100 == 0 ? "handshake timeout" : "protocol error";
    if (auto line = log.Record(kind, "conn " + std::to_string(i), now)) {
      ++lines;
      summary = *line;
    }
    if (i % 40 == 0) {
      if (auto line = log.Flush(now)) {
        ++lines;
        summary = *line;
      }
    }
  }
  EXPECT_EQ(lines, 2);  // at 10 s and 20 s; the rest waits for the next interval
  EXPECT_NE(summary.find("more connections refused in the last"), std::string::npos) << summary;
  EXPECT_NE(summary.find("handshake timeout"), std::string::npos) << summary;
  EXPECT_NE(summary.find("protocol error"), std::string::npos) << summary;
  const auto rest = log.Flush(t0 + std::chrono::seconds(31));
  ASSERT_TRUE(rest.has_value());
  // Every refusal after the first is in exactly one summary.
  EXPECT_NE(rest->find("; the last: conn 10000"), std::string::npos) << *rest;
}

TEST(RefusalLogTest, CountsAddUp) {
  RefusalLog log(std::chrono::seconds(1));
  const auto t0 = Clock::now();
  ASSERT_TRUE(log.Record("a", "x", t0).has_value());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(log.Record("b", "y", t0 + milliseconds(10)).has_value());
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(log.Record("c", "z", t0 + milliseconds(20)).has_value());
  const auto line = log.Flush(t0 + std::chrono::seconds(1));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line, "7 more connections refused in the last 1.0 s (5 b, 2 c); the last: z");
}

}  // namespace
}  // namespace rs::server
