#include "server/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "protocol/auth.h"
#include "common/units.h"
#include "common/cli_parse.h"

namespace rs::server {
namespace {

// Validates an optional HOST:PORT flag and writes it the way gRPC and the
// HTTP server take it ("[v6]:port" for IPv6). Empty stays empty (off).
StatusOr<std::string> ListenAddress(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::string();
  auto hp = ParseHostPort(text);
  if (!hp.ok()) return hp.status().Prefixed(flag);
  const bool v6 = hp->host.find(':') != std::string::npos;
  return (v6 ? "[" + hp->host + "]" : hp->host) + ":" + std::to_string(hp->port);
}

}  // namespace

StatusOr<Options> ParseOptions(int argc, char** argv) {
  CLI::App app{
      "reducerd: the Reduction Server's reducer daemon. Workers send it their pieces of each\n"
      "all-reduce; it sums them in rank order and sends the result back to every worker.\n"
      "Every flag can also be set through the environment variable shown with it."};
  app.set_version_flag("--version", "reducerd 0.1.0 (protocol 2)");

  std::string listen = "0.0.0.0:7450";
  int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u));
  std::string memory_limit = "1GiB";
  std::string max_piece = "4MiB";
  std::string token_file;
  std::string op_timeout = "60s";
  std::string join_timeout = "300s";
  std::string drain_timeout = "30s";
  std::string log_level = "info";
  std::string log_format = "text";
  std::string port_file;
  std::string grpc_listen;
  std::string metrics_listen;
  std::string grpc_port_file;
  std::string metrics_port_file;
  bool crc = true;
  size_t metrics_max_sessions = 16;
  size_t metrics_max_ranks = 8;

  app.add_option("--listen", listen, "Data-plane address HOST:PORT; port 0 picks a free port and prints it")
      ->envname("REDUCER_LISTEN")
      ->capture_default_str();
  app.add_option("--threads", threads, "I/O threads (each runs its own event loop and reduces its pieces)")
      ->envname("REDUCER_THREADS")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--memory-limit", memory_limit,
                 "Memory for piece buffers; when it is used up the reducer stops reading sockets")
      ->envname("REDUCER_MEMORY_LIMIT")
      ->capture_default_str();
  app.add_option("--max-piece", max_piece, "Largest piece a worker may send")
      ->envname("REDUCER_MAX_PIECE")
      ->capture_default_str();
  app.add_option("--job-token-file", token_file,
                 "File holding the job token; or set REDUCER_JOB_TOKEN. Without either, any worker is accepted")
      ->envname("REDUCER_JOB_TOKEN_FILE");
  app.add_option("--op-timeout", op_timeout,
                 "An operation still missing contributions after this long fails on every rank")
      ->envname("REDUCER_OP_TIMEOUT")
      ->capture_default_str();
  app.add_option("--join-timeout", join_timeout,
                 "A session whose ranks have not all joined after this long fails, naming the missing ranks")
      ->envname("REDUCER_JOIN_TIMEOUT")
      ->capture_default_str();
  app.add_option("--drain-timeout", drain_timeout,
                 "On SIGTERM/SIGINT, how long running sessions may take to finish")
      ->envname("REDUCER_DRAIN_TIMEOUT")
      ->capture_default_str();
  app.add_option("--crc", crc,
                 "Check the CRC32C workers send with each piece (when their own check is on) and send one with "
                 "each result (end-to-end integrity; a mismatch fails the session naming the hop). off: neither, "
                 "whatever the workers ask")
      ->envname("REDUCER_CRC")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error")
      ->envname("REDUCER_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--log-format", log_format, "text, or json: one JSON object per line")
      ->envname("REDUCER_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--port-file", port_file, "Write the listening port to this file once listening")
      ->envname("REDUCER_PORT_FILE");
  app.add_option("--grpc-listen", grpc_listen,
                 "Control plane (gRPC status, sessions, drain, health) on HOST:PORT; port 0 picks a free "
                 "port and prints it. Off unless set")
      ->envname("REDUCER_GRPC_LISTEN");
  app.add_option("--grpc-port-file", grpc_port_file, "Write the gRPC port to this file once listening")
      ->envname("REDUCER_GRPC_PORT_FILE");
  app.add_option("--metrics-listen", metrics_listen,
                 "Prometheus metrics at http://HOST:PORT/metrics; port 0 picks a free port and prints it. "
                 "Off unless set")
      ->envname("REDUCER_METRICS_LISTEN");
  app.add_option("--metrics-port-file", metrics_port_file, "Write the metrics port to this file once listening")
      ->envname("REDUCER_METRICS_PORT_FILE");
  app.add_option("--metrics-max-sessions", metrics_max_sessions,
                 "Sessions with per-session series (live ones first, then the most recently ended)")
      ->envname("REDUCER_METRICS_MAX_SESSIONS")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--metrics-max-ranks", metrics_max_ranks,
                 "Ranks per session in reducer_straggler_last_arrivals_total (those most often last)")
      ->envname("REDUCER_METRICS_MAX_RANKS")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();

  RS_RETURN_IF_ERROR(ParseCommandLine(app, argc, argv));

  Options out;
  auto hp = ParseHostPort(listen);
  if (!hp.ok()) return hp.status().Prefixed("--listen");
  out.net.listen_host = hp->host;
  out.net.listen_port = hp->port;
  out.net.io_threads = threads;
  out.net.crc = crc;

  auto mem = ParseSize(memory_limit);
  if (!mem.ok()) return mem.status().Prefixed("--memory-limit");
  out.net.memory_limit = *mem;
  auto piece = ParseSize(max_piece);
  if (!piece.ok()) return piece.status().Prefixed("--max-piece");
  if (*piece < 4096) return Status(Code::kInvalidArgument, "--max-piece must be at least 4KiB");
  out.net.max_piece_bytes = *piece;

  for (auto [flag, text, dest] : {std::tuple{"--op-timeout", &op_timeout, &out.net.op_timeout},
                                  std::tuple{"--join-timeout", &join_timeout, &out.net.join_timeout},
                                  std::tuple{"--drain-timeout", &drain_timeout, &out.drain_timeout}}) {
    auto d = ParseDuration(*text);
    if (!d.ok()) return d.status().Prefixed(flag);
    if (d->count() <= 0 && dest != &out.drain_timeout) {
      return Status(Code::kInvalidArgument, std::string(flag) + " must be positive");
    }
    *dest = *d;
  }

  if (!token_file.empty()) {
    auto token = protocol::ReadTokenFile(token_file);
    if (!token.ok()) return token.status().Prefixed("--job-token-file");
    out.net.job_token = *token;
  } else if (const char* env = std::getenv("REDUCER_JOB_TOKEN"); env != nullptr && *env != '\0') {
    out.net.job_token = env;
  }
  auto grpc = ListenAddress("--grpc-listen", grpc_listen);
  if (!grpc.ok()) return grpc.status();
  auto metrics = ListenAddress("--metrics-listen", metrics_listen);
  if (!metrics.ok()) return metrics.status();
  out.control.grpc_listen = *grpc;
  out.control.metrics_listen = *metrics;
  out.control.metrics_max_sessions = metrics_max_sessions;
  out.control.metrics_max_ranks = metrics_max_ranks;
  out.control.drain_timeout = out.drain_timeout;

  out.log_level = log_level;
  out.log_format = log_format;
  out.port_file = port_file;
  out.grpc_port_file = grpc_port_file;
  out.metrics_port_file = metrics_port_file;
  return out;
}

}  // namespace rs::server
