// reducerctl's tables and JSON.
#include "tools/reducerctl/output.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tests/support/plan_input.h"

#include "tools/reducerctl/table.h"

namespace rs::reducerctl {
namespace {

TEST(TableTest, ColumnsAreAsWideAsTheirWidestCell) {
  Table t({"A", "LONG HEADER"});
  t.AddRow({"wide cell", "x"});
  EXPECT_EQ(t.Render(), "A          LONG HEADER\nwide cell  x\n");
}

TEST(OutputTest, SessionsTableNamesTheSlowestRankAndItsShare) {
  v1::ListSessionsResponse list;
  auto* s = list.add_sessions();
  s->set_id("00112233445566778899aabbccddeeff");
  s->set_state(v1::SessionInfo::RUNNING);
  s->set_world_size(4);
  s->set_ranks_joined(4);
  s->set_pieces_completed(200);
  auto* r = s->add_slowest_ranks();
  r->set_rank(3);
  r->set_last_arrivals(190);
  const std::string text = RenderSessions(list);
  EXPECT_NE(text.find("SLOWEST RANK"), std::string::npos);
  EXPECT_NE(text.find("running"), std::string::npos);
  EXPECT_NE(text.find("4/4"), std::string::npos);
  EXPECT_NE(text.find("3 (95%)"), std::string::npos) << text;
  EXPECT_EQ(RenderSessions(v1::ListSessionsResponse()), "no sessions\n");
}

// A session's results row says why they go out whole when an older client
// is the reason, and stays unsaid while it joins.
TEST(OutputTest, SessionSaysWhichRankKeepsItsResultsWhole) {
  v1::SessionInfo s;
  s.set_id("00112233445566778899aabbccddeeff");
  s.set_state(v1::SessionInfo::RUNNING);
  s.set_result_part_bytes(8 << 10);
  EXPECT_NE(RenderSession(s).find("in parts of at least 8 KiB"), std::string::npos) << RenderSession(s);
  s.set_result_part_bytes(0);
  EXPECT_NE(RenderSession(s).find("results         whole pieces\n"), std::string::npos) << RenderSession(s);
  s.set_rank_without_parts(3);
  EXPECT_NE(RenderSession(s).find("whole pieces: rank 3's client does not take parts (an older client)"),
            std::string::npos)
      << RenderSession(s);
  EXPECT_NE(ToJson(s).find("\"rank_without_parts\":3"), std::string::npos) << ToJson(s);
  s.set_state(v1::SessionInfo::JOINING);
  EXPECT_EQ(RenderSession(s).find("whole pieces"), std::string::npos) << RenderSession(s);
}

TEST(OutputTest, StatusSaysHowManyPiecesWentOutInParts) {
  v1::ServerStatus status;
  status.set_operations_completed(10);
  status.set_pieces_completed(640);
  status.set_pieces_in_parts(40);
  const std::string text = RenderStatus(status);
  EXPECT_NE(text.find("10 (640 pieces, 40 of them sent in parts)"), std::string::npos) << text;
  EXPECT_NE(ToJson(status).find("\"pieces_in_parts\":\"40\""), std::string::npos);
}

// The share of sending time a buffer held the results back, when there was
// any sending; an idle reducer shows no row.
TEST(OutputTest, StatusShowsWhatTcpWaitedForAsAShareOfSendingTime) {
  v1::ServerStatus status;
  EXPECT_EQ(RenderStatus(status).find("tcp waits"), std::string::npos);
  status.set_tcp_send_busy_seconds(80);
  status.set_tcp_receive_window_wait_seconds(2);
  status.set_tcp_send_buffer_wait_seconds(36);
  const std::string text = RenderStatus(status);
  EXPECT_NE(text.find("2.5 % for the ranks' receive windows, 45.0 % for the send buffer (of 1m20s sending results)"),
            std::string::npos)
      << text;
}

TEST(OutputTest, JsonUsesProtoFieldNamesAndPrintsZeros) {
  v1::ServerStatus status;
  status.set_bytes_received(12345);
  const std::string json = ToJson(status);
  EXPECT_NE(json.find("\"bytes_received\":\"12345\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"sessions_active\":\"0\""), std::string::npos) << json;
  v1::ServerStatus back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  EXPECT_EQ(back.bytes_received(), 12345u);
}

TEST(OutputTest, PlanJsonCarriesTheNumbers) {
  auto plan = ComputePlan(Inputs(5, 100, 32));
  ASSERT_TRUE(plan.ok());
  const std::string json = PlanJson(*plan);
  EXPECT_NE(json.find("\"recommended_reducers\":16"), std::string::npos) << json;
  EXPECT_NE(json.find("\"speedup\":1.6,"), std::string::npos) << json;
  EXPECT_NE(RenderPlan(*plan).find("1.60x over a ring"), std::string::npos);
}

TEST(OutputTest, PlanShowsTheCpuSide) {
  PlanInput in = Inputs(5, 100, 32);
  in.reducer_cores = 16;
  auto plan = ComputePlan(in);
  ASSERT_TRUE(plan.ok());
  const std::string text = RenderPlan(*plan);
  EXPECT_NE(text.find("16 reducers (NIC: 16, "), std::string::npos) << text;
  EXPECT_NE(text.find("CPU: 2, "), std::string::npos) << text;
  EXPECT_NE(text.find("16 x 16 = 256 cores"), std::string::npos) << text;
  const std::string json = PlanJson(*plan);
  EXPECT_NE(json.find("\"cpu_reducers\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"nic_reducers\":16,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cpu_bound\":false,"), std::string::npos) << json;
  // Without --reducer-cores the CPU is reported, not sized.
  const std::string plain = RenderPlan(*ComputePlan(Inputs(5, 100, 32)));
  EXPECT_NE(plain.find("--reducer-cores sizes the fleet"), std::string::npos) << plain;
}

// With --rtt the plan says how large the socket buffers must be allowed to
// grow, and the setting when Linux's defaults are short.
TEST(OutputTest, PlanSizesTheSocketBuffersForTheRoundTrip) {
  PlanInput in = Inputs(5, 100, 32);
  in.rtt_ms = 20;
  auto plan = ComputePlan(in);
  ASSERT_TRUE(plan.ok());
  const std::string text = RenderPlan(*plan);
  EXPECT_NE(text.find("6.25 Gbps = 0.7812 GB/s per connection; at a 20 ms round trip that is 14.9 MiB in flight, "
                      "so the buffers' ceilings need about 29.8 MiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("raise the third value of net.ipv4.tcp_wmem and tcp_rmem"), std::string::npos) << text;
  const std::string json = PlanJson(*plan);
  EXPECT_NE(json.find("\"buffer_ceiling_bytes\":31250000,\"default_buffers_suffice\":false}"), std::string::npos)
      << json;
  in.rtt_ms = 0.3;
  EXPECT_NE(RenderPlan(*ComputePlan(in)).find("Linux's defaults (4 MiB send, 6 MiB receive) suffice"),
            std::string::npos);
  // Without --rtt there is no such row.
  EXPECT_EQ(RenderPlan(*ComputePlan(Inputs(5, 100, 32))).find("socket buffers"), std::string::npos);
}

// The plan says where its count goes: Vertex AI's pool 2 and the JobSet's
// reducers, with the machine type.
TEST(OutputTest, PlanNamesTheReplicaCountsAndMachine) {
  PlanInput in = Inputs(4, 100, 0);
  in.reducer_machine = "n1-highcpu-16";
  auto plan = ComputePlan(in);
  ASSERT_TRUE(plan.ok());
  const std::string text = RenderPlan(*plan);
  EXPECT_NE(text.find("vertex       workerPoolSpecs[2]: replicaCount 13, machineSpec.machineType n1-highcpu-16\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("jobset       replicatedJobs \"reducers\": parallelism and completions 13, one per CPU node "
                      "(n1-highcpu-16); REDUCER_ADDRS train-reducers-0-{0..12}.train:7450"),
            std::string::npos)
      << text;
  EXPECT_NE(PlanJson(*plan).find("\"reducer_gbps\":32,\"reducer_machine\":\"n1-highcpu-16\",\"reducers\":13,"),
            std::string::npos)
      << PlanJson(*plan);
  // No machine named: the bandwidth it needs.
  const std::string plain = RenderPlan(*ComputePlan(Inputs(5, 100, 25)));
  EXPECT_NE(plain.find("machineSpec.machineType a type with 25 Gbps"), std::string::npos) << plain;
}

TEST(OutputTest, DurationsReadLikeAClock) {
  EXPECT_EQ(FormatSeconds(4.5), "4.5s");
  EXPECT_EQ(FormatSeconds(723), "12m03s");
  EXPECT_EQ(FormatSeconds(3 * 3600 + 7 * 60 + 5), "3h07m");
}

}  // namespace
}  // namespace rs::reducerctl
