// CollNet end to end without NCCL or a GPU: four "nodes" (processes running
// nccl_collnet_rank, which drives the built plugin's CollNet table as NCCL's
// proxy would) all-reduce through two real reducerd processes, with the v7
// and the v8 table. A reducer killed mid-run is invisible to NCCL with
// failover on (every result still right), and with it off must make test()
// fail on every node instead of hanging.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/test_cluster.h"

namespace rs::plugin::test {
namespace {

using rs::testing::ChildProcess;
using rs::testing::ReducerProcess;
using std::chrono::seconds;

constexpr int kNodes = 4;
constexpr char kToken[] = "collnet-token";

class CollNetTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const std::string token_file = rs::testing::WriteTokenFile(kToken);
    for (int i = 0; i < 2; ++i) {
      reducers_.push_back(std::make_unique<ReducerProcess>(
          std::vector<std::string>{"--job-token-file", token_file, "--op-timeout", "5s"}));
      ASSERT_TRUE(reducers_.back()->ok()) << reducers_.back()->Log();
    }
    // The rank processes inherit the environment, as NCCL's would.
    const std::string addrs = "127.0.0.1:" + std::to_string(reducers_[0]->port()) + ",127.0.0.1:" +
                              std::to_string(reducers_[1]->port());
    setenv("REDUCER_ADDRS", addrs.c_str(), 1);
    setenv("REDUCER_JOB_TOKEN", kToken, 1);
    setenv("REDUCER_SOCKET_IFNAME", "lo", 1);
    setenv("REDUCER_OP_TIMEOUT_MS", "20000", 1);
    char tmpl[] = "/tmp/rs-collnet-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    for (const char* v : {"REDUCER_ADDRS", "REDUCER_JOB_TOKEN", "REDUCER_SOCKET_IFNAME", "REDUCER_OP_TIMEOUT_MS",
                          "REDUCER_FAILOVER"}) {
      unsetenv(v);
    }
  }

  std::vector<std::unique_ptr<ChildProcess>> StartNodes(const std::string& scenario) {
    std::vector<std::unique_ptr<ChildProcess>> nodes;
    for (int r = 0; r < kNodes; ++r) {
      nodes.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
          RS_COLLNET_RANK, RS_PLUGIN_SO, dir_, std::to_string(r), std::to_string(kNodes),
          std::to_string(GetParam()), scenario}));
    }
    return nodes;
  }

  std::vector<std::unique_ptr<ReducerProcess>> reducers_;
  std::string dir_;
};

TEST_P(CollNetTest, FourNodesAllReduceNcclChunksThroughTwoReducers) {
  auto nodes = StartNodes("allreduce");
  for (int r = 0; r < kNodes; ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(180)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find("56 all-reduces verified"), std::string::npos) << nodes[r]->Output();
  }
  // Both reducers carried the traffic: each closed one session that moved bytes.
  for (auto& reducer : reducers_) {
    EXPECT_EQ(reducer->Terminate(seconds(20)), 0);
    const std::string log = reducer->Log();
    EXPECT_TRUE(std::regex_search(log, std::regex("session [0-9a-f]+ ended: [1-9][0-9]* operations, [1-9][0-9]* pieces")))
        << log;
  }
}

TEST_P(CollNetTest, KilledReducerIsInvisibleToNcclWithFailover) {
  auto nodes = StartNodes("failover");
  for (auto& node : nodes) ASSERT_TRUE(node->WaitForOutput("running", seconds(60))) << node->Output();
  kill(reducers_[0]->pid(), SIGKILL);
  for (int r = 0; r < kNodes; ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(120)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find("300 all-reduces verified across the failover"), std::string::npos)
        << nodes[r]->Output();
    // It did fail over (the plugin logs the new epoch through NCCL's logger).
    EXPECT_NE(nodes[r]->Output().find("epoch 1 installed: reducers 127.0.0.1:" + std::to_string(reducers_[1]->port())),
              std::string::npos)
        << nodes[r]->Output();
  }
}

TEST_P(CollNetTest, WithFailoverOffAKilledReducerFailsEveryNode) {
  setenv("REDUCER_FAILOVER", "0", 1);
  auto nodes = StartNodes("failure");
  for (auto& node : nodes) ASSERT_TRUE(node->WaitForOutput("running", seconds(60))) << node->Output();
  kill(reducers_[0]->pid(), SIGKILL);
  for (int r = 0; r < kNodes; ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    // RemoteError (6) or SystemError (2): a peer or network failure, never a hang.
    const std::string out = nodes[r]->Output();
    EXPECT_TRUE(out.find("test returned 6") != std::string::npos || out.find("test returned 2") != std::string::npos)
        << out;
  }
}

TEST_P(CollNetTest, NodesWithOtherReducerSettingsAreRefusedByEveryNode) {
  std::vector<std::unique_ptr<ChildProcess>> nodes;
  for (int r = 0; r < kNodes; ++r) {
    // Node 2 opens 3 streams per reducer where the others open 2.
    if (r == 2) setenv("REDUCER_STREAMS", "3", 1);
    nodes.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        RS_COLLNET_RANK, RS_PLUGIN_SO, dir_, std::to_string(r), std::to_string(kNodes), std::to_string(GetParam()),
        "connect_fails"}));
    unsetenv("REDUCER_STREAMS");
  }
  for (int r = 0; r < kNodes; ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    // InvalidUsage (5): a configuration problem, reported the same way everywhere.
    EXPECT_NE(out.find("connect returned 5"), std::string::npos) << out;
    EXPECT_NE(out.find("node 2 ("), std::string::npos) << out;
    EXPECT_NE(out.find("other reducer settings than node 0"), std::string::npos) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, CollNetTest, ::testing::Values(7, 8),
                         [](const ::testing::TestParamInfo<int>& info) { return "v" + std::to_string(info.param); });

}  // namespace
}  // namespace rs::plugin::test
