// reducerd: parses options, starts the data plane and the control plane,
// waits for SIGTERM/SIGINT or a Drain call over gRPC, drains and exits 0.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "server/control/control_plane.h"
#include "server/control/stop_request.h"
#include "server/fd_limit.h"
#include "common/host_tuning.h"
#include "common/tcp_tuning.h"
#include "kernels/kernels.h"
#include "protocol/crc32c.h"
#include "common/units.h"
#include "server/logging.h"
#include "server/net/reducer_server.h"
#include "server/options.h"
#include "server/signal_watcher.h"

namespace {

// Scripts and tests read these lines (and the port files) to learn the ports.
void AnnouncePort(const char* what, const std::string& host, uint16_t port, const std::string& port_file) {
  std::printf("reducerd %s %s:%u\n", what, host.c_str(), port);
  std::fflush(stdout);
  if (!port_file.empty()) std::ofstream(port_file) << port << "\n";
}

// "host:port" -> host, for the announcement lines.
std::string HostOf(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

// One line on who may call the gRPC port, which can drain and stop this
// reducer: a warning when any client can.
void LogGrpcSecurity(const rs::server::GrpcTls& tls) {
  using Mode = rs::server::GrpcTls::Mode;
  switch (tls.mode()) {
    case Mode::kPlaintext:
      spdlog::info("gRPC control plane: plaintext, clients not authenticated: whoever can reach its port can drain "
                   "or stop this reducer (mutual TLS: --grpc-tls-cert, --grpc-tls-key, --grpc-tls-client-ca)");
      return;
    case Mode::kTls:
      spdlog::warn("gRPC control plane: TLS (certificate {}) without client certificates: any client that can "
                   "reach its port can drain or stop this reducer; --grpc-tls-client-ca turns on mutual TLS",
                   tls.cert_file);
      return;
    case Mode::kMutualTls:
      spdlog::info("gRPC control plane: mutual TLS (certificate {}): only clients presenting a certificate signed "
                   "by a CA in {} are served",
                   tls.cert_file, tls.client_ca_file);
      return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto options = rs::server::ParseOptions(argc, argv);
  if (!options.ok()) {
    if (options.status().code() == rs::Code::kCancelled) return 0;
    std::fprintf(stderr, "reducerd: %s\nRun 'reducerd --help' for the flags.\n",
                 options.status().message().c_str());
    return 2;
  }
  rs::server::ConfigureLogging(options->log_level, options->log_format);
  for (const std::string& notice : options->notices) spdlog::warn("{}", notice);
  if (!options->listen_origin.empty()) spdlog::info("listening address from {}", options->listen_origin);
  const auto fds = rs::server::ReserveFileDescriptors(options->net.limits.max_connections);
  if (!fds.warning.empty()) spdlog::warn("{}", fds.warning);
  for (const std::string& notice : rs::HostTuningNotices()) spdlog::info("{}", notice);
  options->net.limits.max_connections = fds.max_connections;

  // Before any thread starts, so that only the watcher receives them.
  rs::server::BlockStopSignals();
  signal(SIGPIPE, SIG_IGN);

  auto server = rs::server::ReducerServer::Create(options->net);
  if (!server.ok()) {
    std::fprintf(stderr, "reducerd: %s\n", server.status().message().c_str());
    return 1;
  }
  rs::server::StopRequest stop;
  auto control = rs::server::ControlPlane::Create(options->control, **server, stop);
  if (!control.ok()) {
    std::fprintf(stderr, "reducerd: %s\n", control.status().message().c_str());
    return 1;
  }
  rs::server::SignalWatcher signals(stop);

  const auto& cfg = (*server)->config();
  if (cfg.job_token.empty()) {
    spdlog::warn("no job token configured: any worker that can reach this port may join a session");
  }
  spdlog::info("data plane: {}", cfg.tls ? rs::DataTls::Describe()
                                         : "plain TCP (keep it on a private network, or start with --tls)");
  std::string parts = !cfg.result_part_bytes ? fmt::format("automatic ({} / a session's ranks, {} to {})",
                                                           rs::FormatBytes(rs::server::kResultPartShare),
                                                           rs::FormatBytes(rs::server::kMinAutoResultPart),
                                                           rs::FormatBytes(rs::server::kMaxAutoResultPart))
                      : *cfg.result_part_bytes == 0 ? "off"
                                                    : rs::FormatBytes(*cfg.result_part_bytes);
  if (cfg.result_part_bytes != 0 && cfg.whole_pieces_from != 0) {
    parts += " (whole pieces from " + std::to_string(cfg.whole_pieces_from) + " pieces per worker on paths up to " +
             std::to_string(rs::server::kWholePiecesMaxRtt.count() / 1000) + " ms)";
  }
  if (!options->io_threads_origin.empty()) spdlog::info("I/O threads: {}", options->io_threads_origin);
  spdlog::info("{} I/O threads, memory limit {}, max piece {}, result parts {}, op timeout {} ms, kernels: {}, "
               "CRC32C: {}",
               cfg.io_threads, rs::FormatBytes(cfg.memory_limit), rs::FormatBytes(cfg.max_piece_bytes), parts,
               cfg.op_timeout.count(), rs::kernels::ReduceTargetName(),
               cfg.crc ? rs::protocol::Crc32cImplementation() : "off");
  spdlog::info("limits: {} connections ({} per source, {} in the handshake per source), handshake timeout {} ms, "
               "{} pending sessions ({} per source)",
               cfg.limits.max_connections, cfg.limits.max_connections_per_source,
               cfg.limits.max_handshakes_per_source, cfg.handshake_timeout.count(), cfg.limits.max_pending_sessions,
               cfg.limits.max_pending_sessions_per_source);
  // What every connection to a worker will get from TCP; said once.
  const rs::TcpTuningResult tcp = rs::ProbeTcpTuning(cfg.tcp);
  if (auto line = rs::TcpTuningLineOnce(tcp)) spdlog::log(tcp.refused ? spdlog::level::warn : spdlog::level::info, "{}", *line);
  if ((*control)->grpc_port() != 0) {
    LogGrpcSecurity(options->control.grpc_tls);
    AnnouncePort("grpc on", HostOf(options->control.grpc_listen), (*control)->grpc_port(),
                 options->grpc_port_file);
  }
  if ((*control)->metrics_port() != 0) {
    AnnouncePort("metrics on", HostOf(options->control.metrics_listen), (*control)->metrics_port(),
                 options->metrics_port_file);
  }
  // Last: whoever waits for this line or the port file finds everything up.
  AnnouncePort("listening on", cfg.listen_host, (*server)->port(), options->port_file);

  const std::string reason = stop.Wait();
  spdlog::info("{}: no new sessions; draining for up to {} ms", reason, options->drain_timeout.count());
  (*control)->BeginDrain();
  const size_t cut = (*server)->Drain(options->drain_timeout);
  if (cut > 0) spdlog::warn("{} sessions were still running at the end of the drain and were failed", cut);
  (*control)->Shutdown();
  spdlog::info("stopped");
  return 0;
}
