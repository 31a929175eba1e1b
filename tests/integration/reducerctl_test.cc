// The reducerctl and reducerd binaries as an operator runs them: tables and
// JSON against a live reducer, the sizing examples, and clear errors (exit
// codes and messages) for every kind of bad request.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "protocol/auth.h"
#include "tests/support/built_programs.h"
#include "tests/support/control_helpers.h"

namespace rs::testing {
namespace {

CommandResult Ctl(const ControlledReducer& reducer, std::vector<std::string> args) {
  args.insert(args.begin(), {kCtl, "--target", reducer.grpc_target()});
  return RunCommand(args);
}

bool OutputContains(const CommandResult& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(ReducerctlTest, PlanReproducesTheFieldSizingExample) {
  // field.md: 5 GPU nodes at 100 Gbps need 16 reducers at 32 Gbps.
  CommandResult r = RunCommand({kCtl, "plan", "--workers", "5", "--worker-gbps", "100", "--reducer-gbps", "32"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "16 reducers")) << r.output;
  EXPECT_TRUE(OutputContains(r, "100 Gbps = 12.5 GB/s per worker (the line rate)")) << r.output;
  EXPECT_TRUE(OutputContains(r, "1.60x over a ring")) << r.output;
  r = RunCommand({kCtl, "plan", "--workers", "4", "--worker-gbps", "100", "--reducer-gbps", "32", "--json"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"recommended_reducers\":13,")) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"algbw_gbps\":100,")) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"speedup\":1.5,")) << r.output;
}

// The cloud sizing again with the reducers' cores: 16 n1-highcpu-16 are
// needed for their NICs, 2 would do for their CPU at the measured rate.
TEST(ReducerctlTest, PlanCountsTheReducersCpu) {
  CommandResult r = RunCommand(
      {kCtl, "plan", "--workers", "5", "--worker-gbps", "100", "--reducer-gbps", "32", "--reducer-cores", "16"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "16 reducers (NIC: 16")) << r.output;
  EXPECT_TRUE(OutputContains(r, "CPU: 2")) << r.output;
  r = RunCommand({kCtl, "plan", "--workers", "8", "--worker-gbps", "100", "--reducer-gbps", "100", "--reducer-cores",
                  "4", "--gb-per-core-second", "1.8", "--reducers", "8", "--json"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"cpu_bound\":true")) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"algbw_gbps\":57.6,")) << r.output;
  r = RunCommand({kCtl, "plan", "--workers", "5", "--worker-gbps", "100", "--reducer-gbps", "32",
                  "--gb-per-core-second", "0"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(OutputContains(r, "--gb-per-core-second")) << r.output;
}

TEST(ReducerctlTest, MalformedFlagsAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {kCtl},
           {kCtl, "bogus"},
           {kCtl, "plan", "--workers", "five", "--worker-gbps", "100", "--reducer-gbps", "32"},
           {kCtl, "plan", "--workers", "5"},
           {kCtl, "plan", "--workers", "1", "--worker-gbps", "100", "--reducer-gbps", "32"},
           {kCtl, "status", "--timeout", "soon"}}) {
    const CommandResult r = RunCommand(args);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(OutputContains(r, "reducerctl")) << r.output;
  }
  const CommandResult r = RunCommand({kReducerd, "--grpc-listen", "nowhere:port"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(OutputContains(r, "--grpc-listen")) << r.output;
  for (const auto& args : std::vector<std::vector<std::string>>{{kReducerd, "--log-format", "xml"},
                                                                {kReducerd, "--metrics-listen", "127.0.0.1:99999"},
                                                                {kReducerd, "--metrics-max-ranks", "-1"}}) {
    const CommandResult bad = RunCommand(args);
    EXPECT_EQ(bad.code, 2) << args[1] << ": " << bad.output;
    EXPECT_TRUE(OutputContains(bad, args[1].substr(0, 9))) << bad.output;
  }
}

TEST(ReducerctlTest, AnUnreachableReducerIsAClearError) {
  const CommandResult r =
      RunCommand({kCtl, "--target", "127.0.0.1:" + std::to_string(FreePort()), "--timeout", "2s", "status"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(OutputContains(r, "cannot reach reducerd at 127.0.0.1:")) << r.output;
}

TEST(ReducerctlTest, StatusSessionsHealthAndDrainAgainstALiveReducer) {
  ControlledReducer reducer({"--log-format", "json"});
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  const std::string id = protocol::SessionIdToString(protocol::SessionIdFromName("ctl-cli"));
  auto clients = JoinSession({reducer.process().endpoint()}, "ctl-cli", 3);
  ASSERT_EQ(clients.size(), 3u);
  RunOps(clients, 2, 1000);

  CommandResult r = Ctl(reducer, {"status", "--json"});
  ASSERT_EQ(r.code, 0) << r.output;
  v1::ServerStatus status;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.output, &status).ok()) << r.output;
  EXPECT_EQ(status.operations_completed(), 2u);
  EXPECT_EQ(status.bytes_received(), 3u * 2 * 1000 * sizeof(float));

  r = Ctl(reducer, {"sessions"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, id + "  running  3/3")) << r.output;
  r = Ctl(reducer, {"sessions", "--id", id});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "3 of 3 connected")) << r.output;
  EXPECT_TRUE(OutputContains(r, "results         in parts of at least 20 KiB")) << r.output << "3 ranks: 20 KiB parts";

  r = Ctl(reducer, {"sessions", "--id", "abc"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(OutputContains(r, "is not 32 hex digits")) << r.output;
  r = Ctl(reducer, {"sessions", "--id", std::string(32, 'f')});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(OutputContains(r, "no session ffffffffffffffffffffffffffffffff on this reducer")) << r.output;

  r = Ctl(reducer, {"health"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "SERVING\n");
  r = Ctl(reducer, {"drain"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(OutputContains(r, "waiting for 1 running session")) << r.output;
  r = Ctl(reducer, {"health", "--json"});
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_TRUE(OutputContains(r, "\"status\":\"NOT_SERVING\"")) << r.output;
  r = Ctl(reducer, {"drain"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(OutputContains(r, "already draining")) << r.output;

  clients.clear();
  ASSERT_TRUE(WaitForExit(reducer.process().pid(), std::chrono::seconds(30))) << reducer.process().Log();
  EXPECT_EQ(reducer.process().Terminate(), 0);
  // JSON logs: one object per line, session start and end included.
  const std::string log = reducer.process().Log();
  EXPECT_NE(log.find("{\"time\":\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"message\":\"session " + id + " opened"), std::string::npos) << log;
  EXPECT_NE(log.find("\"message\":\"session " + id + " ended"), std::string::npos) << log;
}

}  // namespace
}  // namespace rs::testing
