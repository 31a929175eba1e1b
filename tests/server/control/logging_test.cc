// JSON log lines must stay valid JSON whatever a message quotes, and carry
// the `severity` Cloud Logging classifies them by.
#include "server/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>

namespace rs::server {
namespace {

TEST(LoggingTest, JsonEscapeHandlesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("rank \"3\" said C:\\x"), "rank \\\"3\\\" said C:\\\\x");
  EXPECT_EQ(JsonEscape("a\nb\tc"), "a\\nb\\tc");
  EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
}

TEST(LoggingTest, SeverityUsesCloudLoggingsNames) {
  EXPECT_EQ(CloudLoggingSeverity("trace"), "DEBUG");
  EXPECT_EQ(CloudLoggingSeverity("debug"), "DEBUG");
  EXPECT_EQ(CloudLoggingSeverity("info"), "INFO");
  EXPECT_EQ(CloudLoggingSeverity("warning"), "WARNING");
  EXPECT_EQ(CloudLoggingSeverity("error"), "ERROR");
  EXPECT_EQ(CloudLoggingSeverity("critical"), "CRITICAL");
}

TEST(LoggingTest, JsonLinesCarrySeverityAndLevel) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("logging_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  spdlog::set_default_logger(logger);
  ConfigureLogging("debug", "json");
  spdlog::warn("reducer {} is \"late\"", 3);
  spdlog::error("gone");
  spdlog::debug("detail");
  // ConfigureLogging set every logger's format: give them spdlog's default back.
  spdlog::set_default_logger(previous);
  spdlog::set_pattern("%+");
  spdlog::set_level(spdlog::level::info);

  std::istringstream lines(out.str());
  std::string warn, error, debug;
  ASSERT_TRUE(std::getline(lines, warn));
  ASSERT_TRUE(std::getline(lines, error));
  ASSERT_TRUE(std::getline(lines, debug));
  EXPECT_NE(warn.find(R"("severity":"WARNING","level":"warning")"), std::string::npos) << warn;
  EXPECT_NE(warn.find(R"("message":"reducer 3 is \"late\"")"), std::string::npos) << warn;
  EXPECT_NE(error.find(R"("severity":"ERROR")"), std::string::npos) << error;
  EXPECT_NE(debug.find(R"("severity":"DEBUG")"), std::string::npos) << debug;
  EXPECT_EQ(warn.front(), '{');
  EXPECT_EQ(warn.back(), '}');
}

}  // namespace
}  // namespace rs::server
