// reducerctl's connection to one reducerd: the ReducerControl and
// grpc.health.v1.Health stubs on one channel, every call with a deadline.
// gRPC errors become Status values whose message says what to check
// (address, --grpc-listen) or repeats the reducer's own explanation.
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

class ControlClient {
 public:
  ControlClient(const std::string& target, std::chrono::milliseconds timeout);

  StatusOr<v1::ServerStatus> GetStatus();
  StatusOr<v1::ListSessionsResponse> ListSessions();
  StatusOr<v1::SessionInfo> GetSession(const std::string& id);
  StatusOr<v1::DrainResponse> Drain();
  StatusOr<health::HealthCheckResponse> CheckHealth();

 private:
  template <typename Response, typename Request, typename Method>
  StatusOr<Response> Call(const Request& request, Method method);

  const std::string target_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<v1::ReducerControl::Stub> control_;
  std::unique_ptr<health::Health::Stub> health_;
};

}  // namespace rs::reducerctl
