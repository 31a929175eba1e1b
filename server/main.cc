// reducerd: parses options, starts the data plane, waits for SIGTERM/SIGINT,
// drains and exits 0.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "server/core/kernels.h"
#include "server/core/units.h"
#include "server/net/reducer_server.h"
#include "server/options.h"

int main(int argc, char** argv) {
  auto options = rs::server::ParseOptions(argc, argv);
  if (!options.ok()) {
    if (options.status().code() == rs::Code::kCancelled) return 0;
    std::fprintf(stderr, "reducerd: %s\nRun 'reducerd --help' for the flags.\n",
                 options.status().message().c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(options->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ reducerd: %v");

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = rs::net::ReducerServer::Create(options->net);
  if (!server.ok()) {
    std::fprintf(stderr, "reducerd: %s\n", server.status().message().c_str());
    return 1;
  }
  const auto& cfg = (*server)->config();
  if (cfg.job_token.empty()) {
    spdlog::warn("no job token configured: any worker that can reach this port may join a session");
  }
  spdlog::info("{} I/O threads, memory limit {}, max piece {}, op timeout {} ms, kernels: {}",
               cfg.io_threads, rs::FormatBytes(cfg.memory_limit), rs::FormatBytes(cfg.max_piece_bytes),
               cfg.op_timeout.count(), rs::ReduceTargetName());
  // Scripts and tests read this line to learn the port.
  std::printf("reducerd listening on %s:%u\n", cfg.listen_host.c_str(), (*server)->port());
  std::fflush(stdout);
  if (!options->port_file.empty()) {
    std::ofstream(options->port_file) << (*server)->port() << "\n";
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("{} received: no new sessions; draining for up to {} ms", sig == SIGTERM ? "SIGTERM" : "SIGINT",
               options->drain_timeout.count());
  const size_t cut = (*server)->Drain(options->drain_timeout);
  if (cut > 0) spdlog::warn("{} sessions were still running at the end of the drain and were failed", cut);
  spdlog::info("stopped");
  return 0;
}
