// reducerd's command line: every flag has an environment-variable default
// (for containers), and is validated once into an immutable Options value.
#pragma once

#include <chrono>
#include <string>

#include "server/core/status.h"
#include "server/net/server_config.h"

namespace rs::server {

struct Options {
  net::ServerConfig net;
  std::chrono::milliseconds drain_timeout{30'000};
  std::string log_level = "info";
  std::string port_file;  // where to write the chosen port, if set
};

// Parses argv. Returns kCancelled after printing --help or --version (exit 0);
// any other error has a message naming the flag.
StatusOr<Options> ParseOptions(int argc, char** argv);

}  // namespace rs::server
