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

// The text ends up in the control plane's protobuf strings (SessionInfo's
// failure), which must be UTF-8: one \xff in a rank's ERROR made every
// ListSessions fail to parse in reducerctl. Found by control_fuzz.
TEST(ErrorTextTest, TheTextIsUtf8WhateverTheBytes) {
  const std::string utf8 = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";  // kept as it is
  EXPECT_EQ(PrintableErrorText(utf8), utf8);
  EXPECT_EQ(PrintableErrorText("bad \xff byte"), "bad \\xff byte");
  EXPECT_EQ(PrintableErrorText("stray \xa9"), "stray \\xa9");
  EXPECT_EQ(PrintableErrorText("overlong \xc0\xaf"), "overlong \\xc0\\xaf");
  EXPECT_EQ(PrintableErrorText("surrogate \xed\xa0\x80"), "surrogate \\xed\\xa0\\x80");
  EXPECT_EQ(PrintableErrorText("C1 CSI \xc2\x9b"), "C1 CSI \\xc2\\x9b");
  // Cut inside a character: its bytes are escaped, not left half.
  EXPECT_EQ(PrintableErrorText("ab\xc3\xa9", 3), "ab\\xc3...");
}

}  // namespace
}  // namespace rs::protocol
