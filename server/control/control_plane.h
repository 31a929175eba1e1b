// reducerd's control plane: the gRPC server (ReducerControl and the
// standard grpc.health.v1.Health, SERVING while sessions are accepted,
// NOT_SERVING once draining) and the Prometheus /metrics endpoint. Each runs
// on its own threads (gRPC's pool, the HTTP server's workers) and only reads
// snapshots of the data plane, so a slow client or scrape never stalls it.
//
// Threading: Create() and Shutdown() from main(); BeginDrain() from any
// thread, any number of times.
#pragma once

#include <memory>
#include <mutex>

#include "server/control/control_config.h"
#include "server/control/stop_request.h"
#include "common/status.h"
#include "server/net/reducer_server.h"

namespace grpc {
class Server;
}
namespace prometheus {
class Exposer;
}

namespace rs::server {

class ControlService;
class MetricsCollector;

class ControlPlane {
 public:
  // Starts what `config` enables (either or both may be off). Errors name
  // the flag and the address.
  static StatusOr<std::unique_ptr<ControlPlane>> Create(const ControlConfig& config, ReducerServer& server,
                                                        StopRequest& stop);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  uint16_t grpc_port() const { return grpc_port_; }        // 0 when off
  uint16_t metrics_port() const { return metrics_port_; }  // 0 when off

  // Health NOT_SERVING, and the data plane stops accepting sessions.
  void BeginDrain();
  // Stops serving (in-flight calls get a second to finish). Idempotent.
  void Shutdown();

 private:
  ControlPlane(ReducerServer& server, StopRequest& stop);
  Status StartGrpc(const ControlConfig& config);
  Status StartMetrics(const ControlConfig& config);

  ReducerServer& server_;
  StopRequest& stop_;
  std::unique_ptr<ControlService> service_;
  std::mutex mu_;                       // guards grpc_ against BeginDrain during Shutdown
  std::unique_ptr<grpc::Server> grpc_;
  std::shared_ptr<MetricsCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  uint16_t grpc_port_ = 0;
  uint16_t metrics_port_ = 0;
};

}  // namespace rs::server
