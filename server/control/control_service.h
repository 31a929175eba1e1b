// The rs.control.v1.ReducerControl gRPC service: status, sessions, drain.
// Handlers read snapshots of the data plane (short locks, no I/O) and never
// wait on it; Drain only flips the reducer to draining and returns, main()
// does the waiting.
//
// Thread-safe: gRPC calls the handlers from its own thread pool, any number
// at once.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "proto/reducer_control.grpc.pb.h"
#include "server/control/stop_request.h"
#include "server/net/reducer_server.h"

namespace rs::server {

// The service's generated types (proto package rs.control.v1).
namespace v1 = ::rs::control::v1;

// Conversions, exposed for tests.
v1::ServerStatus ToProto(const ServerStats& stats);
v1::SessionInfo ToProto(const SessionSnapshot& session);
// 32 hex digits, any case -> lower case; empty if malformed.
std::string NormalizeSessionId(const std::string& text);

class ControlService final : public v1::ReducerControl::Service {
 public:
  struct Info {
    std::string version;
    std::chrono::milliseconds drain_timeout{0};
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  };
  // `begin_drain` runs on a Drain call before it makes the stop request and
  // returns: it must be quick and idempotent (flip health, stop accepting).
  ControlService(const ReducerServer& server, StopRequest& stop, std::function<void()> begin_drain, Info info);

  grpc::Status GetStatus(grpc::ServerContext* context, const v1::GetStatusRequest* request,
                         v1::ServerStatus* response) override;
  grpc::Status ListSessions(grpc::ServerContext* context, const v1::ListSessionsRequest* request,
                            v1::ListSessionsResponse* response) override;
  grpc::Status GetSession(grpc::ServerContext* context, const v1::GetSessionRequest* request,
                          v1::SessionInfo* response) override;
  grpc::Status Drain(grpc::ServerContext* context, const v1::DrainRequest* request,
                     v1::DrainResponse* response) override;

 private:
  const ReducerServer& server_;
  StopRequest& stop_;
  const std::function<void()> begin_drain_;
  const Info info_;
};

}  // namespace rs::server
