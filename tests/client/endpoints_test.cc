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

// Kubernetes' indexed pods under a headless Service, written once with the
// count the JobSet sets: every name, in order, with the other items kept.
TEST(ParseEndpoints, RangesExpandToEveryIndex) {
  StatusOr<std::vector<Endpoint>> list = ParseEndpoints("train-reducers-0-{0..3}.train:7450, extra:1");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 5u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*list)[i].host, "train-reducers-0-" + std::to_string(i) + ".train");
    EXPECT_EQ((*list)[i].port, 7450);
  }
  EXPECT_EQ((*list)[4].host, "extra");
  StatusOr<std::vector<Endpoint>> one = ParseEndpoints("r-{7..7}:1");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().host, "r-7");
  StatusOr<std::vector<Endpoint>> ports = ParseEndpoints("r:{7450..7452}");
  ASSERT_TRUE(ports.ok());
  EXPECT_EQ(ports->back().port, 7452);
}

TEST(ParseEndpoints, BadRangesAreNamed) {
  for (const char* bad : {"r-{0..}:1", "r-{..3}:1", "r-{3}:1", "r-{a..b}:1", "r-{0..1}{0..1}:1", "r-{0..1:1",
                          "r-0..1}:1", "r-{-1..1}:1"}) {
    StatusOr<std::vector<Endpoint>> list = ParseEndpoints(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_NE(list.status().message().find(std::string("'") + bad + "': a range is written {FIRST..LAST}"),
              std::string::npos)
        << list.status().message();
  }
  for (const char* bad : {"r-{3..1}:1", "r-{0..5000}:1"}) {
    StatusOr<std::vector<Endpoint>> list = ParseEndpoints(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_NE(list.status().message().find("must run upwards"), std::string::npos) << list.status().message();
  }
  // A range that makes a bad address names the address.
  StatusOr<std::vector<Endpoint>> port = ParseEndpoints("r:{65535..65536}");
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("'r:65536' is not HOST:PORT"), std::string::npos);
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
