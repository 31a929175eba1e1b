// A worker's ERROR text goes into the reducer's text log and to every other
// rank: it must not forge a log line, nor be unbounded.
#include "protocol/error_text.h"

#include <gtest/gtest.h>

namespace rs::protocol {
namespace {

TEST(ErrorTextTest, APeersErrorTextIsEscapedAndBounded) {
  EXPECT_EQ(PrintableErrorText("CUDA error: out of memory"), "CUDA error: out of memory");
  EXPECT_EQ(PrintableErrorText("bad\n[info] session ok\r\x1b[2J"), "bad\\x0a[info] session ok\\x0d\\x1b[2J");
  EXPECT_EQ(PrintableErrorText("C:\\x0a"), "C:\\\\x0a");  // an escape in the text stays visibly one
  EXPECT_EQ(PrintableErrorText(std::string(5000, 'a'), 1024), std::string(1024, 'a') + "...");
  EXPECT_EQ(PrintableErrorText(std::string("nul\0byte", 8)), "nul\\x00byte");
}

}  // namespace
}  // namespace rs::protocol
