// Interface selection: NCCL_SOCKET_IFNAME syntax, precedence and fallbacks,
// on made-up interface lists.
#include "nccl_plugin/p2p/net_interface.h"

#include <arpa/inet.h>

#include <cstring>

#include <gtest/gtest.h>

namespace rs::plugin {
namespace {

InterfaceCandidate If(const char* name, const char* ip, bool up = true) {
  InterfaceCandidate c;
  c.name = name;
  c.up = up;
  c.loopback = std::strncmp(name, "lo", 2) == 0;
  if (std::strchr(ip, ':') != nullptr) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&c.addr.storage);
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &a->sin6_addr);
    c.addr.len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&c.addr.storage);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a->sin_addr);
    c.addr.len = sizeof(sockaddr_in);
  }
  return c;
}

std::vector<std::string> Names(const StatusOr<std::vector<NetInterface>>& got) {
  std::vector<std::string> out;
  if (got.ok()) {
    for (const NetInterface& n : *got) out.push_back(n.name);
  }
  return out;
}

const std::vector<InterfaceCandidate> kHost = {
    If("lo", "127.0.0.1"),      If("lo", "::1"),         If("docker0", "172.17.0.1"),
    If("eth0", "fd00::5"),      If("eth0", "10.0.0.5"),  If("eth1", "10.1.0.5", /*up=*/false),
    If("ens5", "192.168.1.5"),  If("ib0", "10.2.0.5"),
};

TEST(IfSpec, NcclSyntax) {
  EXPECT_TRUE(IfSpecMatches("eth", "eth0"));
  EXPECT_TRUE(IfSpecMatches("ib,eth", "eth1"));
  EXPECT_FALSE(IfSpecMatches("eth", "ens5"));
  EXPECT_TRUE(IfSpecMatches("=eth0", "eth0"));
  EXPECT_FALSE(IfSpecMatches("=eth0", "eth01"));
  EXPECT_FALSE(IfSpecMatches("^docker,lo", "docker0"));
  EXPECT_FALSE(IfSpecMatches("^docker,lo", "lo"));
  EXPECT_TRUE(IfSpecMatches("^docker,lo", "eth0"));
  EXPECT_FALSE(IfSpecMatches("^=eth0", "eth0"));
  EXPECT_TRUE(IfSpecMatches("^=eth0", "eth01"));
  EXPECT_FALSE(IfSpecMatches(",", "eth0"));
}

TEST(SelectInterfaces, ExplicitSpecTakesEveryMatchingInterfaceThatIsUp) {
  StatusOr<std::vector<NetInterface>> got = SelectInterfaces(kHost, "eth,ens", "REDUCER_SOCKET_IFNAME");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Names(got), (std::vector<std::string>{"eth0", "ens5"}));  // eth1 is down
  EXPECT_EQ((*got)[0].addr.family(), AF_INET);  // IPv4 preferred
  EXPECT_EQ((*got)[0].addr.ToString(), "10.0.0.5:0");
  EXPECT_EQ(Names(SelectInterfaces(kHost, "lo", "X")), (std::vector<std::string>{"lo"}));
}

TEST(SelectInterfaces, ExplicitSpecMatchingNothingNamesTheVariable) {
  StatusOr<std::vector<NetInterface>> got = SelectInterfaces(kHost, "eth1", "NCCL_SOCKET_IFNAME");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("NCCL_SOCKET_IFNAME='eth1'"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("eth0"), std::string::npos) << got.status().message();
}

TEST(SelectInterfaces, AutomaticIsFirstNonLoopbackThenLoopback) {
  EXPECT_EQ(Names(SelectInterfaces(kHost, "", "")), (std::vector<std::string>{"eth0"}));  // docker0 skipped
  std::vector<InterfaceCandidate> only_lo = {If("lo", "127.0.0.1"), If("eth0", "10.0.0.5", false)};
  EXPECT_EQ(Names(SelectInterfaces(only_lo, "", "")), (std::vector<std::string>{"lo"}));
  std::vector<InterfaceCandidate> v6_only = {If("lo", "127.0.0.1"), If("eth0", "fd00::5")};
  StatusOr<std::vector<NetInterface>> got = SelectInterfaces(v6_only, "", "");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Names(got), (std::vector<std::string>{"eth0"}));
  EXPECT_EQ((*got)[0].addr.family(), AF_INET6);
  EXPECT_FALSE(SelectInterfaces({}, "", "").ok());
}

TEST(SelectInterfaces, SystemListHasLoopback) {
  std::vector<InterfaceCandidate> all = ListSystemInterfaces();
  StatusOr<std::vector<NetInterface>> got = SelectInterfaces(all, "lo", "test");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  NetInterface lo = (*got)[0];
  Describe(&lo);
  EXPECT_TRUE(lo.pci_path.empty());  // virtual
  EXPECT_GT(lo.speed_mbps, 0);
}

}  // namespace
}  // namespace rs::plugin
