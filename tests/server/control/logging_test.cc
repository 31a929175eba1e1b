// JSON log lines must stay valid JSON whatever a message quotes.
#include "server/logging.h"

#include <gtest/gtest.h>

namespace rs::server {
namespace {

TEST(LoggingTest, JsonEscapeHandlesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("rank \"3\" said C:\\x"), "rank \\\"3\\\" said C:\\\\x");
  EXPECT_EQ(JsonEscape("a\nb\tc"), "a\\nb\\tc");
  EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
}

}  // namespace
}  // namespace rs::server
