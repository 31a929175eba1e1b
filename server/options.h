// reducerd's command line: every flag has an environment-variable default
// (for containers), and is validated once into an immutable Options value.
// The flags, variables, defaults and old names come from the registry in
// reducerd_settings.h; this is the only place reducerd reads the environment.
// On Vertex AI (CLUSTER_SPEC, worker pool 2) the listening port comes from
// this replica's own entry, so the reducer container needs no arguments.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/status.h"
#include "server/control/control_config.h"
#include "server/core/server_defaults.h"
#include "server/net/server_config.h"

namespace rs::server {

struct Options {
  ServerConfig net;
  ControlConfig control;  // its drain_timeout is the one below
  std::chrono::milliseconds drain_timeout = kDefaultDrainTimeout.value;
  std::string log_level = kDefaultLogLevel.value;
  std::string log_format = kDefaultLogFormat.value;  // or "json"
  // Where to write the chosen ports, if set.
  std::string port_file;
  std::string grpc_port_file;
  std::string metrics_port_file;
  // Where the data-plane address came from when it was not a flag, a
  // variable or the default (on Vertex AI: "CLUSTER_SPEC workerpool2[1]
  // (host:2222)"), for main() to log; empty otherwise.
  std::string listen_origin;
  // How the I/O threads were chosen when --io-threads was not given, for
  // main() to log beside their number; empty otherwise.
  std::string io_threads_origin;
  // One line per deprecated name in use or setting ignored, for main() to
  // log as a warning once it has a logger.
  std::vector<std::string> notices;
};

// Parses argv, taking a flag's value from `env` when the flag is absent.
// Returns kCancelled after printing --help or --version (exit 0); any other
// error has a message naming the flag or variable and what it expects.
StatusOr<Options> ParseOptions(int argc, char** argv, const EnvLookup& env = ProcessEnv());

}  // namespace rs::server
