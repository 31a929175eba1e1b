// The gRPC control plane of a real reducerd after real sessions: status and
// sessions report what the clients did, health follows drain, and a drain
// lets a running session finish before the daemon exits 0 by itself.
#include <gtest/gtest.h>

#include "protocol/auth.h"
#include "tests/support/control_helpers.h"

namespace rs::testing {
namespace {

using ::grpc::health::v1::HealthCheckResponse;

constexpr size_t kPlaneCount = 1 << 20;  // floats: 4 MiB, at least 4 pieces (1 MiB at most each)
constexpr int kPlaneOps = 5;

TEST(ControlPlaneIntegrationTest, StatusAndSessionsReportAFourRankRun) {
  ControlledReducer reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  const std::string id = protocol::SessionIdToString(protocol::SessionIdFromName("ctl-four"));
  const uint64_t bytes = 4ull * kPlaneOps * kPlaneCount * sizeof(float);
  {
    auto clients = JoinSession({reducer.process().endpoint()}, "ctl-four", 4);
    ASSERT_EQ(clients.size(), 4u);
    RunOps(clients, kPlaneOps, kPlaneCount);

    v1::ListSessionsResponse list;
    ASSERT_TRUE(reducer.ListSessions(&list).ok());
    ASSERT_EQ(list.sessions_size(), 1);
    const v1::SessionInfo& s = list.sessions(0);
    EXPECT_EQ(s.id(), id);
    EXPECT_EQ(s.state(), v1::SessionInfo::RUNNING);
    EXPECT_EQ(s.world_size(), 4u);
    EXPECT_EQ(s.ranks_joined(), 4u);
    EXPECT_EQ(s.streams_per_rank(), 2u);
    EXPECT_EQ(s.operations_completed(), static_cast<uint64_t>(kPlaneOps));
    EXPECT_GE(s.pieces_completed(), 4u * kPlaneOps);
    EXPECT_EQ(s.bytes_received(), bytes);

    v1::ServerStatus status;
    ASSERT_TRUE(reducer.GetStatus(&status).ok());
    EXPECT_EQ(status.state(), v1::ServerStatus::SERVING);
    EXPECT_EQ(status.sessions_active(), 1u);
    EXPECT_EQ(status.connections_active(), 8u);  // 4 ranks x 2 streams
    EXPECT_EQ(status.operations_completed(), static_cast<uint64_t>(kPlaneOps));
    EXPECT_EQ(status.pieces_completed(), s.pieces_completed());
    // 4 MiB operations, a few pieces per rank: every result went out in parts.
    EXPECT_EQ(status.pieces_in_parts(), status.pieces_completed());
    EXPECT_EQ(status.bytes_received(), bytes);
    EXPECT_EQ(status.bytes_sent(), bytes);
    EXPECT_EQ(status.data_address(), "127.0.0.1:" + std::to_string(reducer.process().port()));
  }
  // The clients said goodbye: the session is remembered as ended.
  v1::SessionInfo ended;
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(reducer.GetSession(id, &ended).ok());
    if (ended.state() != v1::SessionInfo::RUNNING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ended.state(), v1::SessionInfo::ENDED) << ended.failure();
  EXPECT_EQ(ended.world_size(), 4u);
  EXPECT_EQ(ended.operations_completed(), static_cast<uint64_t>(kPlaneOps));
  v1::ServerStatus status;
  ASSERT_TRUE(reducer.GetStatus(&status).ok());
  EXPECT_EQ(status.sessions_active(), 0u);
  EXPECT_EQ(status.sessions_started(), 1u);
  EXPECT_EQ(status.sessions_failed(), 0u);
}

TEST(ControlPlaneIntegrationTest, DrainLetsTheRunningSessionFinishThenTheDaemonExitsZero) {
  ControlledReducer reducer({"--drain-timeout", "60s"});
  ASSERT_TRUE(reducer.ok()) << reducer.process().Log();
  EXPECT_EQ(reducer.Health(), HealthCheckResponse::SERVING);
  auto clients = JoinSession({reducer.process().endpoint()}, "ctl-drain", 2);
  ASSERT_EQ(clients.size(), 2u);
  RunOps(clients, 1, 4096);

  v1::DrainResponse drain;
  grpc::Status st = reducer.Drain(&drain);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(drain.sessions_running(), 1u);
  EXPECT_EQ(drain.drain_timeout_seconds(), 60.0);
  EXPECT_EQ(reducer.Health(), HealthCheckResponse::NOT_SERVING);
  v1::ServerStatus status;
  ASSERT_TRUE(reducer.GetStatus(&status).ok());
  EXPECT_EQ(status.state(), v1::ServerStatus::DRAINING);

  // Draining twice is refused, and says why.
  st = reducer.Drain(&drain);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("already draining"), std::string::npos) << st.error_message();

  // No new session, but the running one goes on.
  client::ClientOptions late = Options({reducer.process().endpoint()}, "ctl-late", 0, 1);
  late.connect_timeout = std::chrono::seconds(2);  // it retries a refused connection until then
  EXPECT_FALSE(client::Client::Create(late).ok());
  RunOps(clients, 3, 4096);
  EXPECT_FALSE(WaitForExit(reducer.process().pid(), std::chrono::milliseconds(200)))
      << "the reducer exited while a session was running";

  clients.clear();  // goodbye: the last session ends
  ASSERT_TRUE(WaitForExit(reducer.process().pid(), std::chrono::seconds(30))) << reducer.process().Log();
  EXPECT_EQ(reducer.process().Terminate(), 0) << reducer.process().Log();
  EXPECT_NE(reducer.process().Log().find("drain requested over gRPC"), std::string::npos);
}

}  // namespace
}  // namespace rs::testing
