// The reducer list users write (REDUCER_ADDRS, --reducers, CLUSTER_SPEC
// entries) and how an endpoint is printed in messages.
#include <gtest/gtest.h>

#include "client/client.h"

namespace rs::client {
namespace {

TEST(ParseEndpoints, HostsPortsAndIpv6) {
  StatusOr<std::vector<Endpoint>> list = ParseEndpoints("10.0.0.5:7450, reducer-1:7451 ,[::1]:9");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].host, "10.0.0.5");
  EXPECT_EQ((*list)[0].port, 7450);
  EXPECT_EQ((*list)[1].host, "reducer-1");
  EXPECT_EQ((*list)[1].port, 7451);
  EXPECT_EQ((*list)[2].host, "::1");
  EXPECT_EQ((*list)[2].port, 9);
}

TEST(ParseEndpoints, EmptyItemsAreSkipped) {
  StatusOr<std::vector<Endpoint>> list = ParseEndpoints(",a:1,,b:2,");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->size(), 2u);
}

// The message names the entry that is wrong, so a long list can be fixed.
TEST(ParseEndpoints, BadEntriesAreNamed) {
  for (const char* bad : {"a:1,reducer-without-port", "a:1,b:0", "a:1,:7450", "a:1,::1:80", "a:1,b:99999"}) {
    StatusOr<std::vector<Endpoint>> list = ParseEndpoints(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_EQ(list.status().code(), Code::kInvalidArgument);
    const std::string item = std::string(bad).substr(4);
    EXPECT_NE(list.status().message().find("'" + item + "' is not HOST:PORT"), std::string::npos)
        << list.status().message();
  }
  for (const char* empty : {"", " ", ",,"}) {
    StatusOr<std::vector<Endpoint>> list = ParseEndpoints(empty);
    ASSERT_FALSE(list.ok()) << "'" << empty << "'";
    EXPECT_NE(list.status().message().find("no reducer addresses"), std::string::npos) << list.status().message();
  }
}

TEST(Endpoint, PrintsAsItIsWritten) {
  EXPECT_EQ((Endpoint{"10.0.0.5", 7450}).ToString(), "10.0.0.5:7450");
  EXPECT_EQ((Endpoint{"::1", 9}).ToString(), "[::1]:9");
  StatusOr<std::vector<Endpoint>> again = ParseEndpoints((Endpoint{"fe80::1", 7450}).ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->front().host, "fe80::1");
}

}  // namespace
}  // namespace rs::client
