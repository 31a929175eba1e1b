// Admission counts IPv6 peers by /64 prefix: the addresses one host can
// take count as one source, and other prefixes stay apart.
#include "server/net/source_address.h"

#include <gtest/gtest.h>

namespace rs::server {
namespace {

std::string Source(const char* text) { return SourceOf(asio::ip::make_address(text)); }

TEST(SourceAddressTest, AnIpv4AddressIsItsOwnSource) {
  EXPECT_EQ(Source("10.0.0.7"), "10.0.0.7");
  EXPECT_NE(Source("10.0.0.7"), Source("10.0.0.8"));
  EXPECT_EQ(Source("::ffff:10.0.0.7"), "10.0.0.7");
}

TEST(SourceAddressTest, EveryAddressOfAnIpv6Slash64IsOneSource) {
  EXPECT_EQ(Source("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(Source("2001:db8:1:2:ffff:ffff:ffff:fffe"), Source("2001:db8:1:2::1"));
  EXPECT_EQ(Source("2001:db8:1:2:1234:5678:9abc:def0"), Source("2001:db8:1:2::1"));
  EXPECT_NE(Source("2001:db8:1:3::1"), Source("2001:db8:1:2::1"));
  EXPECT_EQ(Source("::1"), "::/64");
}

}  // namespace
}  // namespace rs::server
