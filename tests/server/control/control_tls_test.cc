// The control plane's TLS in one process: a ControlPlane with reducerd's
// certificate (and, for mutual TLS, a client CA) on 127.0.0.1:0, called over
// real channels with and without client certificates. A refused client never
// reaches a method: its Drain leaves the reducer serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/pem_file.h"
#include "proto/reducer_control.grpc.pb.h"
#include "server/control/control_plane.h"
#include "tests/support/test_certificates.h"

namespace rs::server {
namespace {

namespace v1 = ::rs::control::v1;

std::string Pem(const std::string& path, PemContent content) {
  auto text = ReadPemFile(path, content);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

class ControlPlaneTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(certs_.error(), "");
    ServerConfig net;
    net.listen_host = "127.0.0.1";
    net.io_threads = 1;
    net.memory_limit = 8 << 20;
    auto server = ReducerServer::Create(net);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  void Start(bool mutual) {
    ControlConfig config;
    config.grpc_listen = "127.0.0.1:0";
    config.grpc_tls.cert_chain = Pem(certs_.server_cert(), PemContent::kCertificates);
    config.grpc_tls.private_key = Pem(certs_.server_key(), PemContent::kPrivateKey);
    if (mutual) config.grpc_tls.client_ca = Pem(certs_.ca(), PemContent::kCertificates);
    auto plane = ControlPlane::Create(config, *server_, stop_);
    ASSERT_TRUE(plane.ok()) << plane.status().ToString();
    plane_ = std::move(plane).value();
  }

  // TLS credentials that trust the test CA, with the client certificate given (if any).
  std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string& cert = "", const std::string& key = "") {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = Pem(certs_.ca(), PemContent::kCertificates);
    if (!cert.empty()) {
      options.pem_cert_chain = Pem(cert, PemContent::kCertificates);
      options.pem_private_key = Pem(key, PemContent::kPrivateKey);
    }
    return grpc::SslCredentials(options);
  }

  grpc::Status Drain(const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    auto stub = v1::ReducerControl::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(plane_->grpc_port()), credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::DrainResponse response;
    return stub->Drain(&context, v1::DrainRequest(), &response);
  }

  testing::TestCertificates certs_;
  std::unique_ptr<ReducerServer> server_;
  StopRequest stop_;
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneTlsTest, MutualTlsServesOnlyClientsWithACertificateOfItsCa) {
  Start(/*mutual=*/true);
  EXPECT_EQ(Drain(grpc::InsecureChannelCredentials()).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Drain(Tls()).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Drain(Tls(certs_.stranger_cert(), certs_.stranger_key())).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(stop_.requested());
  EXPECT_TRUE(server_->accepting());

  const grpc::Status st = Drain(Tls(certs_.client_cert(), certs_.client_key()));
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(stop_.requested());
  EXPECT_FALSE(server_->accepting());
}

TEST_F(ControlPlaneTlsTest, ServerOnlyTlsServesAnyTlsClientButNoPlaintextOne) {
  Start(/*mutual=*/false);
  EXPECT_EQ(Drain(grpc::InsecureChannelCredentials()).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(stop_.requested());
  const grpc::Status st = Drain(Tls());
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(stop_.requested());
}

}  // namespace
}  // namespace rs::server
