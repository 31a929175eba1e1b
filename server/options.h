// reducerd's command line: every flag has an environment-variable default
// (for containers), and is validated once into an immutable Options value.
#pragma once

#include <chrono>
#include <string>

#include "server/control/control_config.h"
#include "common/status.h"
#include "server/net/server_config.h"

namespace rs::server {

struct Options {
  ServerConfig net;
  ControlConfig control;  // its drain_timeout is the one below
  std::chrono::milliseconds drain_timeout{30'000};
  std::string log_level = "info";
  std::string log_format = "text";  // or "json"
  // Where to write the chosen ports, if set.
  std::string port_file;
  std::string grpc_port_file;
  std::string metrics_port_file;
};

// Parses argv. Returns kCancelled after printing --help or --version (exit 0);
// any other error has a message naming the flag.
StatusOr<Options> ParseOptions(int argc, char** argv);

}  // namespace rs::server
