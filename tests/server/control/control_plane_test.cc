// The control plane in one process over real sockets: a ReducerServer on
// 127.0.0.1:0, gRPC and /metrics on port 0, called through real stubs.
// Covers the bad requests (malformed and unknown session ids, drain twice)
// and the switch to draining (health, status, metrics, new sessions).
#include "server/control/control_plane.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/reducer_control.grpc.pb.h"
#include "tests/support/http_get.h"

namespace rs::server {
namespace {

namespace v1 = ::rs::control::v1;
using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerConfig net;
    net.listen_host = "127.0.0.1";
    net.io_threads = 1;
    net.memory_limit = 8 << 20;
    auto server = server::ReducerServer::Create(net);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    ControlConfig config;
    config.grpc_listen = "127.0.0.1:0";
    config.metrics_listen = "127.0.0.1:0";
    config.drain_timeout = std::chrono::seconds(7);
    auto plane = ControlPlane::Create(config, *server_, stop_);
    ASSERT_TRUE(plane.ok()) << plane.status().ToString();
    plane_ = std::move(plane).value();
    ASSERT_NE(plane_->grpc_port(), 0);
    ASSERT_NE(plane_->metrics_port(), 0);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(plane_->grpc_port()),
                                       grpc::InsecureChannelCredentials());
    control_ = v1::ReducerControl::NewStub(channel);
    health_ = Health::NewStub(channel);
  }

  // Runs one unary call with a deadline.
  template <typename Response, typename Request, typename Method>
  grpc::Status Call(Method method, const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return method(&context, request, response);
  }

  HealthCheckResponse::ServingStatus HealthStatus() {
    HealthCheckResponse response;
    const grpc::Status st = Call(
        [&](auto* c, const auto& req, auto* resp) { return health_->Check(c, req, resp); }, HealthCheckRequest(),
        &response);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return response.status();
  }

  grpc::Status Drain(v1::DrainResponse* response) {
    return Call([&](auto* c, const auto& req, auto* resp) { return control_->Drain(c, req, resp); },
                v1::DrainRequest(), response);
  }

  grpc::Status GetSession(const std::string& id, v1::SessionInfo* response) {
    v1::GetSessionRequest request;
    request.set_id(id);
    return Call([&](auto* c, const auto& req, auto* resp) { return control_->GetSession(c, req, resp); }, request,
                response);
  }

  std::unique_ptr<server::ReducerServer> server_;
  StopRequest stop_;
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<v1::ReducerControl::Stub> control_;
  std::unique_ptr<Health::Stub> health_;
};

TEST_F(ControlPlaneTest, StatusDescribesTheIdleReducer) {
  v1::ServerStatus status;
  const grpc::Status st = Call(
      [&](auto* c, const auto& req, auto* resp) { return control_->GetStatus(c, req, resp); },
      v1::GetStatusRequest(), &status);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(status.state(), v1::ServerStatus::SERVING);
  EXPECT_EQ(status.data_address(), "127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_EQ(status.memory_limit_bytes(), 8u << 20);
  EXPECT_EQ(status.sessions_active(), 0u);
  EXPECT_FALSE(status.version().empty());
}

TEST_F(ControlPlaneTest, MalformedAndUnknownSessionIdsAreClearErrors) {
  v1::SessionInfo info;
  grpc::Status st = GetSession("not-hex", &info);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("is not 32 hex digits"), std::string::npos) << st.error_message();

  // A long or binary id is quoted short and printable, its length named.
  st = GetSession(std::string(1 << 20, 'x') + "\n\x01", &info);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(st.error_message().size(), 200u);
  EXPECT_NE(st.error_message().find("... (1048578 bytes)' is not 32 hex digits"), std::string::npos)
      << st.error_message().substr(0, 200);
  st = GetSession("bad\tid", &info);
  EXPECT_NE(st.error_message().find("session id 'bad?id'"), std::string::npos) << st.error_message();

  st = GetSession("00112233445566778899AABBCCDDEEFF", &info);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(st.error_message().find("no session 00112233445566778899aabbccddeeff on this reducer"),
            std::string::npos)
      << st.error_message();
}

TEST_F(ControlPlaneTest, DrainFlipsHealthStatusAndMetricsAndASecondDrainIsRefused) {
  EXPECT_EQ(HealthStatus(), HealthCheckResponse::SERVING);
  v1::DrainResponse drain;
  grpc::Status st = Drain(&drain);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(drain.drain_timeout_seconds(), 7.0);
  EXPECT_TRUE(stop_.requested());
  EXPECT_NE(stop_.reason().find("drain requested over gRPC"), std::string::npos);

  // Before the first call returned, everything already says "draining".
  EXPECT_EQ(HealthStatus(), HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(server_->accepting());
  auto metrics = testing::HttpGet(plane_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_NE(metrics->find("\nreducer_draining 1\n"), std::string::npos);

  st = Drain(&drain);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("already draining (drain requested over gRPC by"), std::string::npos)
      << st.error_message();
}

TEST_F(ControlPlaneTest, ADrainAfterASignalSaysWhy) {
  ASSERT_TRUE(stop_.Request("SIGTERM received"));
  v1::DrainResponse drain;
  const grpc::Status st = Drain(&drain);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(st.error_message(), "the reducer is already draining (SIGTERM received)");
}

TEST_F(ControlPlaneTest, AnAddressInUseIsAnErrorNamingTheFlag) {
  ControlConfig config;
  config.grpc_listen = "127.0.0.1:" + std::to_string(plane_->grpc_port());
  StopRequest stop;
  auto plane = ControlPlane::Create(config, *server_, stop);
  ASSERT_FALSE(plane.ok());
  EXPECT_NE(plane.status().message().find("--grpc-listen: cannot listen on 127.0.0.1:"), std::string::npos);

  config.grpc_listen.clear();
  config.metrics_listen = "127.0.0.1:" + std::to_string(plane_->metrics_port());
  plane = ControlPlane::Create(config, *server_, stop);
  ASSERT_FALSE(plane.ok());
  EXPECT_NE(plane.status().message().find("--metrics-listen: cannot listen on"), std::string::npos);
}

}  // namespace
}  // namespace rs::server
