// reducerctl's connection to one reducerd: the ReducerControl and
// grpc.health.v1.Health stubs on one channel, plaintext or TLS (with a client
// certificate for a reducer that requires mutual TLS), every call with a
// deadline. gRPC errors become Status values whose message says what to check
// (address, --grpc-listen, TLS on one side only, certificates) or repeats the
// reducer's own explanation.
//
// Thread-compatible: one thread at a time (reducerctl makes one call).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/reducer_control.grpc.pb.h"
#include "common/status.h"

namespace rs::reducerctl {

namespace v1 = ::rs::control::v1;
namespace health = ::grpc::health::v1;

// reducerctl's --tls-* flags. Any of the files given: TLS. No CA: gRPC's
// default roots verify the reducer's certificate.
struct TlsFiles {
  std::string ca_file;      // --tls-ca: the CA bundle that signed reducerd's certificate
  std::string cert_file;    // --tls-cert and --tls-key: this client's certificate
  std::string key_file;     //   and key, for a reducer with --grpc-tls-client-ca
  std::string server_name;  // --tls-server-name: the name to expect in reducerd's certificate

  bool enabled() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

class ControlClient {
 public:
  // Reads and checks the TLS files; an error (kInvalidArgument) names the
  // flag and the file. Connects lazily, on the first call.
  static StatusOr<std::unique_ptr<ControlClient>> Create(const std::string& target, std::chrono::milliseconds timeout,
                                                         const TlsFiles& tls = {});

  StatusOr<v1::ServerStatus> GetStatus();
  StatusOr<v1::ListSessionsResponse> ListSessions();
  StatusOr<v1::SessionInfo> GetSession(const std::string& id);
  StatusOr<v1::DrainResponse> Drain();
  StatusOr<health::HealthCheckResponse> CheckHealth();

 private:
  ControlClient(const std::string& target, std::chrono::milliseconds timeout, const TlsFiles& tls);

  template <typename Response, typename Request, typename Method>
  StatusOr<Response> Call(const Request& request, Method method);

  const std::string target_;
  const std::chrono::milliseconds timeout_;
  const TlsFiles tls_;  // for the explanations of failed connections
  std::unique_ptr<v1::ReducerControl::Stub> control_;
  std::unique_ptr<health::Health::Stub> health_;
};

}  // namespace rs::reducerctl
