// CollNet end to end without NCCL or a GPU: "nodes" (processes running
// nccl_collnet_rank, which drives the built plugin's CollNet table as NCCL
// 2.28's proxy would) all-reduce through two real reducerd processes.
//
// The handles reach connect() in NCCL's order: by the global rank of each
// node's head, with the node's index (nodes numbered by their first rank) as
// `rank`. With several GPUs per node that order differs from the node order,
// so the layouts below put heads on ranks that are not their node's lowest
// and interleave ranks across nodes. A reducer killed mid-run is invisible
// to NCCL with failover on (every result still right), and with it off must
// make test() fail on every node instead of hanging; nodes with other settings
// are refused by every node; a communicator destroyed and created again
// (also after the library is unloaded) works again.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <regex>
#include <sstream>

#include "tests/nccl_plugin/plugin_harness.h"
#include "tests/support/control_helpers.h"
#include "tests/support/test_cluster.h"

namespace rs::plugin::test {
namespace {

using rs::testing::ChildProcess;
using rs::testing::FreezeProcess;
using rs::testing::ReducerProcess;
using std::chrono::seconds;

constexpr char kToken[] = "collnet-token";

struct Layout {
  const char* name;
  std::vector<int> host_of_rank;  // like NCCL_HOSTID per global rank
  std::vector<int> head_of_host;  // the global rank that is each host's head
};

void PrintTo(const Layout& layout, std::ostream* os) { *os << layout.name; }

// 4 nodes of one GPU each: the handle order is the node order.
const Layout kFourSingle{"FourNodesOneGpuEach", {0, 1, 2, 3}, {0, 1, 2, 3}};
// 8 nodes of one GPU each: the client's automatic smallest piece is 32 KiB
// there (256 KiB / 8 nodes), so NCCL's 64 KiB chunks go as two pieces.
const Layout kEightSingle{"EightNodesOneGpuEach", {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
// 2 nodes of 4 GPUs, ranks interleaved; node 0's head is its highest rank.
const Layout kTwoByFour{"TwoNodesFourGpusInterleaved", {0, 1, 1, 0, 0, 1, 1, 0}, {7, 2}};
// 3 nodes of 3 GPUs, host labels not in node order, no head on a lowest rank.
const Layout kThreeByThree{"ThreeNodesThreeGpusInterleaved", {2, 0, 1, 2, 0, 1, 2, 0, 1}, {7, 5, 3}};

std::string Join(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

TEST(CollNetLayout, OrdersHandlesByHeadRankAsNcclDoes) {
  EXPECT_EQ(NcclCollNetLayout(kFourSingle.host_of_rank, kFourSingle.head_of_host).handle_order,
            (std::vector<int>{0, 1, 2, 3}));
  // Node 0 (host 0, head rank 7) comes after node 1 (head rank 2).
  const CollNetLayout two = NcclCollNetLayout(kTwoByFour.host_of_rank, kTwoByFour.head_of_host);
  EXPECT_EQ(two.head_rank, (std::vector<int>{7, 2}));
  EXPECT_EQ(two.handle_order, (std::vector<int>{1, 0}));
  // Nodes by first rank: host 2 (rank 0), host 0 (rank 1), host 1 (rank 2);
  // their heads 3, 7, 5.
  const CollNetLayout three = NcclCollNetLayout(kThreeByThree.host_of_rank, kThreeByThree.head_of_host);
  EXPECT_EQ(three.node_of_host, (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(three.head_rank, (std::vector<int>{3, 7, 5}));
  EXPECT_EQ(three.handle_order, (std::vector<int>{0, 2, 1}));
}

class CollNetTest : public ::testing::Test {
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
    setenv("REDUCER_OP_TIMEOUT", "20s", 1);
    setenv("NCCL_COLLNET_ENABLE", "1", 1);  // NCCL drives CollNet only then
    char tmpl[] = "/tmp/rs-collnet-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    for (const char* v : {"REDUCER_ADDRS", "REDUCER_JOB_TOKEN", "REDUCER_SOCKET_IFNAME", "REDUCER_OP_TIMEOUT", "NCCL_COLLNET_ENABLE",
                          "REDUCER_FAILOVER", "REDUCER_LIVENESS_TIMEOUT", "REDUCER_WIRE_DTYPE",
                          "REDUCER_COLLNET_TRACE"}) {
      unsetenv(v);
    }
  }

  // One process per node, each told the handle order NCCL would use.
  std::vector<std::unique_ptr<ChildProcess>> StartNodes(const Layout& layout, int version, const std::string& scenario,
                                                        int odd_node = -1) {
    const CollNetLayout l = NcclCollNetLayout(layout.host_of_rank, layout.head_of_host);
    std::vector<std::unique_ptr<ChildProcess>> nodes;
    for (size_t node = 0; node < l.head_rank.size(); ++node) {
      // A node with other settings: 3 streams per reducer where the others open 2.
      if (static_cast<int>(node) == odd_node) setenv("REDUCER_STREAMS", "3", 1);
      nodes.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{RS_COLLNET_RANK, RS_PLUGIN_SO, dir_, std::to_string(node), Join(l.handle_order),
                                   std::to_string(version), scenario}));
      unsetenv("REDUCER_STREAMS");
    }
    return nodes;
  }

  // Each reducer ended `sessions` sessions that moved data.
  void ExpectSessionsEnded(int sessions) {
    for (auto& reducer : reducers_) {
      EXPECT_EQ(reducer->Terminate(seconds(20)), 0);
      const std::string log = reducer->Log();
      const std::regex ended("session [0-9a-f]+ ended: [1-9][0-9]* operations, [1-9][0-9]* pieces");
      const auto n = std::distance(std::sregex_iterator(log.begin(), log.end(), ended), std::sregex_iterator());
      EXPECT_EQ(n, sessions) << log;
    }
  }

  std::vector<std::unique_ptr<ReducerProcess>> reducers_;
  std::string dir_;
};

class CollNetAllReduceTest : public CollNetTest, public ::testing::WithParamInterface<std::tuple<int, Layout>> {};

TEST_P(CollNetAllReduceTest, WholeChunksThroughTwoReducersEveryElementChecked) {
  const auto& [version, layout] = GetParam();
  auto nodes = StartNodes(layout, version, "allreduce");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(240)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find("120 all-reduces verified"), std::string::npos) << nodes[r]->Output();
  }
  ExpectSessionsEnded(1);
}

// NCCL hands the plugin float32; with REDUCER_WIRE_DTYPE=bfloat16 the float32
// sums (averages included) cross the network in bfloat16 and come back
// widened. The plan's values are small integers, exact in bfloat16, so every
// element still checks exactly; max, min, other types and the NaN tail (sent
// as float32) are untouched.
TEST_F(CollNetTest, Bfloat16OnTheWireThroughTwoReducersEveryElementChecked) {
  setenv("REDUCER_WIRE_DTYPE", "bfloat16", 1);  // the node processes inherit it
  auto nodes = StartNodes(kThreeByThree, 11, "allreduce");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(240)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find("120 all-reduces verified"), std::string::npos) << nodes[r]->Output();
  }
  ExpectSessionsEnded(1);
  for (auto& reducer : reducers_) {
    EXPECT_NE(reducer->Log().find("float32 sums as bfloat16 on the wire"), std::string::npos) << reducer->Log();
  }
}

// Splits one CSV line (no quoting in the trace).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// REDUCER_COLLNET_TRACE: each node head writes, when its communicator
// closes, one line per iallreduce call with the call's stages in order
// (bench/collnet_trace.py reads them), and says on stderr where it went.
TEST_F(CollNetTest, TraceHasOneLinePerCallWithItsStagesInOrder) {
  const std::string trace = dir_ + "/trace";
  ASSERT_EQ(mkdir(trace.c_str(), 0700), 0) << trace;
  setenv("REDUCER_COLLNET_TRACE", trace.c_str(), 1);  // the node processes inherit it
  auto nodes = StartNodes(kFourSingle, 11, "allreduce");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(240)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find("120 calls written to " + trace + "/collnet-"), std::string::npos)
        << nodes[r]->Output();
  }
  ExpectSessionsEnded(1);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(trace)) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 4u) << "one file per node head";
  for (const auto& file : files) {
    EXPECT_EQ(file.filename().string().rfind("collnet-", 0), 0u) << file;
    std::ifstream in(file);
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_NE(line.find("# reduction server CollNet trace: node "), std::string::npos) << line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_NE(line.find("120 calls, 0 left out"), std::string::npos) << line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line.rfind("# connected at ", 0), 0u) << "the system clock's time, to line the nodes up: " << line;
    ASSERT_TRUE(std::getline(in, line));
    ASSERT_EQ(line, "call_us,issued_us,first_result_us,done_us,seen_us,bytes,in_flight,pool_full_before,polls,ok");
    int calls = 0;
    while (std::getline(in, line)) {
      ++calls;
      const std::vector<std::string> f = Fields(line);
      ASSERT_EQ(f.size(), 10u) << line;
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(f[i].empty()) << "stage " << i << " missing: " << line;
        t.push_back(std::stod(f[i]));
      }
      // call <= first result <= done <= seen, and call <= issued <= seen. A
      // result may come back before the client's AllReduce has returned (it
      // copies the input for failover after the pieces went out).
      EXPECT_LE(t[0], t[2]) << line;
      EXPECT_LE(t[2], t[3]) << line;
      EXPECT_LE(t[3], t[4]) << line;
      EXPECT_LE(t[0], t[1]) << line;
      EXPECT_LE(t[1], t[4]) << line;
      EXPECT_GT(std::stoull(f[5]), 0u) << line;
      EXPECT_GE(std::stoi(f[6]), 1) << line;
      EXPECT_LE(std::stoi(f[6]), 64) << line;
      EXPECT_GE(std::stoi(f[8]), 1) << "test() was polled at least once: " << line;
      EXPECT_EQ(f[9], "1") << line;
    }
    EXPECT_EQ(calls, 120) << file;
  }
}

// A process that exits with its communicator open (a PyTorch script without
// destroy_process_group) still writes its trace, at exit, and says so.
TEST_F(CollNetTest, TraceOfACommunicatorStillOpenAtExitIsWrittenThen) {
  const std::string trace = dir_ + "/trace";
  ASSERT_EQ(mkdir(trace.c_str(), 0700), 0) << trace;
  setenv("REDUCER_COLLNET_TRACE", trace.c_str(), 1);
  setenv("COLLNET_PERF_SIZES", "64K", 1);
  setenv("COLLNET_PERF_ITERS", "3", 1);
  setenv("COLLNET_PERF_EXIT_OPEN", "1", 1);
  // The nodes exit with their threads running, on purpose: LeakSanitizer
  // (the sanitizer build) cannot check such an exit.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan != nullptr ? asan : "";
  setenv("ASAN_OPTIONS", (saved + (saved.empty() ? "" : ":") + "detect_leaks=0").c_str(), 1);
  auto nodes = StartNodes(kFourSingle, 11, "perf");
  for (const char* v : {"COLLNET_PERF_SIZES", "COLLNET_PERF_ITERS", "COLLNET_PERF_EXIT_OPEN"}) unsetenv(v);
  if (asan != nullptr) {
    setenv("ASAN_OPTIONS", saved.c_str(), 1);
  } else {
    unsetenv("ASAN_OPTIONS");
  }
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(120)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    // 5 all-reduces (2 untimed) of one 128 KiB call each.
    EXPECT_NE(nodes[r]->Output().find("5 calls written to " + trace + "/collnet-"), std::string::npos)
        << nodes[r]->Output();
    EXPECT_NE(nodes[r]->Output().find(" at exit (the communicator was still open)"), std::string::npos)
        << nodes[r]->Output();
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(trace)) {
    ++files;
    std::ifstream in(entry.path());
    std::string header;
    std::getline(in, header);
    std::getline(in, header);
    EXPECT_NE(header.find("5 calls, 0 left out (at most 1048576 kept); written at exit, the communicator still open"),
              std::string::npos)
        << header;
  }
  EXPECT_EQ(files, 4u);
}

// A trace directory that cannot be written is named on stderr at connect;
// the job goes on without a trace.
TEST_F(CollNetTest, TraceDirectoryThatCannotBeWrittenIsNamedAndTheJobGoesOn) {
  const std::string missing = dir_ + "/no-such-directory";
  setenv("REDUCER_COLLNET_TRACE", missing.c_str(), 1);
  auto nodes = StartNodes(kThreeByThree, 11, "tuner");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    EXPECT_NE(out.find("WARNING: REDUCER_COLLNET_TRACE: cannot create " + missing + "/collnet-"), std::string::npos)
        << out;
    EXPECT_NE(out.find("(No such file or directory); this communicator runs without a trace"), std::string::npos)
        << out;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CollNetAllReduceTest,
    ::testing::Values(std::make_tuple(11, kFourSingle), std::make_tuple(11, kTwoByFour),
                      std::make_tuple(11, kThreeByThree), std::make_tuple(7, kThreeByThree),
                      // NCCL 2.13 - 2.18 (v6) and 2.12 (v5)
                      std::make_tuple(6, kThreeByThree), std::make_tuple(5, kEightSingle)),
    [](const ::testing::TestParamInfo<std::tuple<int, Layout>>& info) {
      return "v" + std::to_string(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
    });

class CollNetVersionTest : public CollNetTest, public ::testing::WithParamInterface<int> {
 protected:
  // The failover scenario on 3 nodes of 3 ranks: `fault` hits reducer 0 once
  // every node runs. Every node must verify its 300 all-reduces and install
  // epoch 1 on reducer 1 alone (the plugin logs it through NCCL's logger).
  void ExpectFailoverSurvives(const std::function<void()>& fault) {
    auto nodes = StartNodes(kThreeByThree, GetParam(), "failover");
    for (auto& node : nodes) ASSERT_TRUE(node->WaitForOutput("running", seconds(60))) << node->Output();
    fault();
    const std::string installed = "epoch 1 installed: reducers 127.0.0.1:" + std::to_string(reducers_[1]->port());
    for (size_t r = 0; r < nodes.size(); ++r) {
      EXPECT_EQ(nodes[r]->Wait(seconds(120)), 0) << "node " << r << ":\n" << nodes[r]->Output();
      EXPECT_NE(nodes[r]->Output().find("300 all-reduces verified across the failover"), std::string::npos)
          << nodes[r]->Output();
      EXPECT_NE(nodes[r]->Output().find(installed), std::string::npos) << nodes[r]->Output();
    }
  }
};

TEST_P(CollNetVersionTest, KilledReducerIsInvisibleToNcclWithFailover) {
  ExpectFailoverSurvives([&] { kill(reducers_[0]->pid(), SIGKILL); });
}

// Frozen rather than killed: alive to the kernel, silent to the ranks.
// Each node must notice it (or hear of it from another), drop it, and go on.
TEST_P(CollNetVersionTest, FrozenReducerIsInvisibleToNcclWithFailover) {
  setenv("REDUCER_LIVENESS_TIMEOUT", "1s", 1);  // the node processes inherit it
  ExpectFailoverSurvives([&] { ASSERT_TRUE(FreezeProcess(reducers_[0]->pid())); });
  kill(reducers_[0]->pid(), SIGCONT);
}

TEST_P(CollNetVersionTest, WithFailoverOffAKilledReducerFailsEveryNode) {
  setenv("REDUCER_FAILOVER", "0", 1);
  auto nodes = StartNodes(kThreeByThree, GetParam(), "failure");
  for (auto& node : nodes) ASSERT_TRUE(node->WaitForOutput("running", seconds(60))) << node->Output();
  kill(reducers_[0]->pid(), SIGKILL);
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    // RemoteError (6) or SystemError (2): a peer or network failure, never a hang.
    const std::string out = nodes[r]->Output();
    EXPECT_TRUE(out.find("test returned 6") != std::string::npos || out.find("test returned 2") != std::string::npos)
        << out;
  }
}

// A node lost mid-run (its process killed or frozen) ends the job on every
// other node: their test() returns RemoteError (6) within `bound`, and the
// cause they log names the lost node's rank (CollNet's rank is the node's
// index). Failover saves only reducers.
void ExpectLostNodeNamed(const std::vector<std::unique_ptr<ChildProcess>>& nodes, int signal,
                         const std::string& cause, std::chrono::seconds bound) {
  for (auto& node : nodes) ASSERT_TRUE(node->WaitForOutput("running", seconds(60))) << node->Output();
  kill(nodes[2]->pid(), signal);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(nodes[r]->Wait(bound), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    EXPECT_NE(out.find("test returned 6"), std::string::npos) << out;
    EXPECT_NE(out.find(cause), std::string::npos) << out;
  }
  kill(nodes[2]->pid(), SIGKILL);
}

TEST_P(CollNetVersionTest, KilledNodeFailsEveryOtherNodeNamingIt) {
  ExpectLostNodeNamed(StartNodes(kThreeByThree, GetParam(), "failure"), SIGKILL, "rank 2 disconnected", seconds(30));
}

// Frozen: the reducers give a silent worker 2 T with failover on (2 s here).
TEST_P(CollNetVersionTest, FrozenNodeFailsEveryOtherNodeNamingIt) {
  setenv("REDUCER_LIVENESS_TIMEOUT", "1s", 1);  // the node processes inherit it
  ExpectLostNodeNamed(StartNodes(kThreeByThree, GetParam(), "failure"), SIGSTOP, "rank 2 (", seconds(10));
}

TEST_P(CollNetVersionTest, NodesWithOtherReducerSettingsAreRefusedByEveryNode) {
  auto nodes = StartNodes(kThreeByThree, GetParam(), "connect_fails", /*odd_node=*/2);
  // Node 2's handle is the second one connect gets (handle order 0, 2, 1).
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    // InvalidUsage (5): a configuration problem, reported the same way everywhere.
    EXPECT_NE(out.find("connect returned 5"), std::string::npos) << out;
    EXPECT_NE(out.find("the node of handle 1 of 3 ("), std::string::npos) << out;
    EXPECT_NE(out.find("has other reducer settings than the node of handle 0"), std::string::npos) << out;
  }
}

// With NCCL_DEBUG unset a user reads only stderr: each node head says there
// what the reducers carry, or why they carry less than configured.
TEST_P(CollNetVersionTest, EachNodeHeadSaysOnStderrWhatTheReducersCarry) {
  // 3 nodes, 2 reducers: the model sends large all-reduces to NCCL's ring.
  auto nodes = StartNodes(kThreeByThree, GetParam(), "tuner");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    EXPECT_NE(out.find("tuner picks ring"), std::string::npos) << out;
    EXPECT_NE(out.find("]: WARNING: communicator "), std::string::npos) << out;
    EXPECT_NE(out.find("3 node(s), 3 rank(s), 2 reducer(s)"), std::string::npos) << out;
    EXPECT_NE(out.find("Fix: 3 reducers with links as fast as the nodes'"), std::string::npos) << out;
  }
}

TEST_P(CollNetVersionTest, AnUnreachableReducerIsNamedOnStderrWithinSeconds) {
  // A port nothing listens on: connection refused.
  const int closed = rs::testing::FreePort();  // nothing listens there
  const std::string addrs = "127.0.0.1:" + std::to_string(reducers_[0]->port()) + ",127.0.0.1:" +
                            std::to_string(closed);
  setenv("REDUCER_ADDRS", addrs.c_str(), 1);
  setenv("REDUCER_CONNECT_TIMEOUT", "3s", 1);
  auto nodes = StartNodes(kThreeByThree, GetParam(), "connect_fails");
  unsetenv("REDUCER_CONNECT_TIMEOUT");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(60)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    const std::string out = nodes[r]->Output();
    EXPECT_NE(out.find("]: WARNING: CollNet could not connect to the reducers (2 reducers (127.0.0.1:"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("127.0.0.1:" + std::to_string(closed)), std::string::npos) << out;
    EXPECT_NE(out.find("REDUCER_REQUIRED=1 fails the job instead"), std::string::npos) << out;
  }
}

TEST_P(CollNetVersionTest, CommunicatorDestroyedAndCreatedAgainAlsoAfterUnload) {
  auto nodes = StartNodes(kTwoByFour, GetParam(), "recreate");
  for (size_t r = 0; r < nodes.size(); ++r) {
    EXPECT_EQ(nodes[r]->Wait(seconds(120)), 0) << "node " << r << ":\n" << nodes[r]->Output();
    for (int round = 0; round < 3; ++round) {
      const std::string line = "round " + std::to_string(round) + ": 64 all-reduces verified";
      EXPECT_NE(nodes[r]->Output().find(line), std::string::npos) << nodes[r]->Output();
    }
  }
  ExpectSessionsEnded(3);  // one session per communicator
}

INSTANTIATE_TEST_SUITE_P(Tables, CollNetVersionTest, ::testing::Values(7, 11),
                         [](const ::testing::TestParamInfo<int>& info) { return "v" + std::to_string(info.param); });

}  // namespace
}  // namespace rs::plugin::test
