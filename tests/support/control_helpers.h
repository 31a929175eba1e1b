// Helpers for the control-plane integration tests: a real reducerd with its
// gRPC service and /metrics on port 0, stubs to call it, sessions of real
// clients (optionally with one deliberately slow rank), and commands run to
// completion. Every wait is bounded.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/reducer_control.grpc.pb.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {

namespace v1 = ::rs::control::v1;
using HealthStatus = ::grpc::health::v1::HealthCheckResponse::ServingStatus;

class ControlledReducer {
 public:
  explicit ControlledReducer(std::vector<std::string> extra_args = {});
  ControlledReducer(const ControlledReducer&) = delete;
  ControlledReducer& operator=(const ControlledReducer&) = delete;

  bool ok() const { return process_->ok() && grpc_port_ != 0 && metrics_port_ != 0; }
  ReducerProcess& process() { return *process_; }
  uint16_t grpc_port() const { return grpc_port_; }
  uint16_t metrics_port() const { return metrics_port_; }
  std::string grpc_target() const { return "127.0.0.1:" + std::to_string(grpc_port_); }

  grpc::Status GetStatus(v1::ServerStatus* out);
  grpc::Status ListSessions(v1::ListSessionsResponse* out);
  grpc::Status GetSession(const std::string& id, v1::SessionInfo* out);
  grpc::Status Drain(v1::DrainResponse* out);
  HealthStatus Health();  // UNKNOWN if the call failed

 private:
  std::string dir_;
  std::unique_ptr<ReducerProcess> process_;
  uint16_t grpc_port_ = 0;
  uint16_t metrics_port_ = 0;
  std::unique_ptr<v1::ReducerControl::Stub> control_;
  std::unique_ptr<::grpc::health::v1::Health::Stub> health_;
};

// Every rank of session `name` joined to `reducers` (created concurrently:
// Create() returns once all have joined). Empty on failure (test failed).
// `tweak`, when given, changes every rank's options before it joins.
std::vector<std::unique_ptr<client::Client>> JoinSession(
    const std::vector<client::Endpoint>& reducers, const std::string& name, uint32_t world,
    const std::function<void(client::ClientOptions&)>& tweak = {});

// Each rank, on its own thread, runs `ops` float32 sums of `count` elements
// and checks the result. Rank `slow_rank` (if any) sleeps `delay` before
// each of its contributions: the deliberate straggler.
void RunOps(std::vector<std::unique_ptr<client::Client>>& clients, int ops, size_t count,
            int slow_rank = -1, std::chrono::milliseconds delay = {});

// The first value in a Prometheus text exposition line starting with
// `series` (name plus labels, e.g. `reducer_errors_total{kind="auth"}`).
// -1 if absent.
double ScrapeValue(const std::string& exposition, const std::string& series);

struct CommandResult {
  int code = -1;  // -1: did not finish in time
  std::string output;
};
CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// True once `pid` (a child of this process) has exited on its own, without
// reaping it, so that the caller can still collect its exit code.
bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// A free TCP port on 127.0.0.1 for programs that cannot take port 0.
uint16_t FreePort();

}  // namespace rs::testing
