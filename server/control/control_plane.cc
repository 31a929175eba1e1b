#include "server/control/control_plane.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>

#include <exception>

#include "server/control/control_service.h"
#include "server/control/metrics_collector.h"

#ifndef RS_VERSION
#define RS_VERSION "unknown"
#endif

namespace rs::server {
namespace {

// The control plane needs few threads; bounding gRPC's pool keeps a burst of
// clients from taking CPU from the I/O threads.
constexpr int kMaxGrpcThreads = 4;
constexpr size_t kMetricsThreads = 2;

// gRPC's own TLS (OpenSSL underneath). With a client CA, a client without a
// certificate that CA signed fails the handshake and never reaches a method.
std::shared_ptr<grpc::ServerCredentials> Credentials(const GrpcTls& tls) {
  if (tls.mode() == GrpcTls::Mode::kPlaintext) return grpc::InsecureServerCredentials();
  const bool mutual = tls.mode() == GrpcTls::Mode::kMutualTls;
  grpc::SslServerCredentialsOptions options(mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_root_certs = tls.client_ca;
  options.pem_key_cert_pairs.push_back({tls.private_key, tls.cert_chain});
  return grpc::SslServerCredentials(options);
}

}  // namespace

ControlPlane::ControlPlane(ReducerServer& server, StopRequest& stop) : server_(server), stop_(stop) {}

StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Create(const ControlConfig& config,
                                                             ReducerServer& server, StopRequest& stop) {
  std::unique_ptr<ControlPlane> plane(new ControlPlane(server, stop));
  if (!config.grpc_listen.empty()) RS_RETURN_IF_ERROR(plane->StartGrpc(config));
  if (!config.metrics_listen.empty()) RS_RETURN_IF_ERROR(plane->StartMetrics(config));
  return plane;
}

Status ControlPlane::StartGrpc(const ControlConfig& config) {
  ControlService::Info info;
  info.version = RS_VERSION;
  info.drain_timeout = config.drain_timeout;
  service_ = std::make_unique<ControlService>(server_, stop_, [this] { BeginDrain(); }, info);

  // Must precede the builder: the default health service is process-wide.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.grpc_listen, Credentials(config.grpc_tls), &port);
  // gRPC sets SO_REUSEPORT by default: a second reducerd on the same port
  // would silently share it instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(service_.get());
  grpc::ResourceQuota quota("reducerd-control");
  quota.SetMaxThreads(kMaxGrpcThreads);
  builder.SetResourceQuota(quota);
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr || port == 0) {
    grpc_.reset();
    return Status(Code::kIo, "--grpc-listen: cannot listen on " + config.grpc_listen +
                                 " (address in use or not an address of this machine?)");
  }
  grpc_port_ = static_cast<uint16_t>(port);
  grpc_->GetHealthCheckService()->SetServingStatus(server_.accepting());
  return Status::Ok();
}

Status ControlPlane::StartMetrics(const ControlConfig& config) {
  collector_ = std::make_shared<MetricsCollector>(
      server_, MetricsLimits{config.metrics_max_sessions, config.metrics_max_ranks, config.metrics_session_ids});
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(config.metrics_listen, kMetricsThreads);
  } catch (const std::exception& e) {
    return Status(Code::kIo, "--metrics-listen: cannot listen on " + config.metrics_listen + ": " + e.what());
  }
  exposer_->RegisterCollectable(collector_);
  const auto ports = exposer_->GetListeningPorts();
  if (ports.empty()) return Status(Code::kIo, "--metrics-listen: no port bound for " + config.metrics_listen);
  metrics_port_ = static_cast<uint16_t>(ports.front());
  return Status::Ok();
}

void ControlPlane::BeginDrain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (grpc_) grpc_->GetHealthCheckService()->SetServingStatus(false);
  }
  server_.StopAccepting();
}

void ControlPlane::Shutdown() {
  // Not under mu_: in-flight handlers may need it to finish.
  if (grpc_) {
    grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    grpc_->Wait();
  }
  std::lock_guard<std::mutex> lock(mu_);
  grpc_.reset();
  // civetweb notices the stop within its 2 s poll quantum: exits are that slow.
  exposer_.reset();
}

ControlPlane::~ControlPlane() { Shutdown(); }

}  // namespace rs::server
