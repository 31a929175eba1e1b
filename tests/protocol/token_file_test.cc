// The one job-token file reader (protocol::ReadTokenFile) that reducerd, the
// plugin, reducer-bench and rs-train share: a file written by hand, by
// `openssl rand`, or mounted from a Kubernetes Secret gives the same token
// to every one of them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "protocol/auth.h"

namespace rs::protocol {
namespace {

std::string Write(const std::string& text) {
  char name[] = "/tmp/rs-token-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name, std::ios::binary) << text;
  return name;
}

TEST(TokenFileTest, BlanksAroundTheTokenAreIgnored) {
  for (const char* text : {"s3cret", "s3cret\n", "s3cret\r\n", "  s3cret \t\n\n", "\ns3cret"}) {
    const std::string path = Write(text);
    StatusOr<std::string> token = ReadTokenFile(path);
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    EXPECT_EQ(*token, "s3cret") << "file holding '" << text << "'";
    std::remove(path.c_str());
  }
  const std::string inner = Write("two words\n");
  EXPECT_EQ(ReadTokenFile(inner).value(), "two words");
  std::remove(inner.c_str());
}

TEST(TokenFileTest, AnEmptyOrMissingFileIsAnErrorNamingIt) {
  const std::string blank = Write(" \r\n");
  StatusOr<std::string> token = ReadTokenFile(blank);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().message(), "job token file '" + blank + "' is empty");
  std::remove(blank.c_str());
  token = ReadTokenFile(blank);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().message(), "cannot read job token file '" + blank + "'");
}

}  // namespace
}  // namespace rs::protocol
