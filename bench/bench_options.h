// reducer-bench's command line: flags in the style of nccl-tests, and the
// client settings under the names the NCCL plugin and reducerd use
// (--max-piece / REDUCER_MAX_PIECE, --io-threads / REDUCER_IO_THREADS, ...),
// from the registry BenchSettings(), which takes the client's from their one
// list (client/client_settings.h). A flag that is absent takes its value
// from its environment variable; old names still work and are reported in
// `notices`. Parsed and checked once into an immutable Options value.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/workload_flags.h"
#include "client/client.h"
#include "common/dtype.h"
#include "common/settings.h"
#include "common/status.h"

namespace rs::bench {

struct Options {
  std::vector<client::Endpoint> reducers;
  uint32_t world = 1;
  uint32_t rank = 0;
  std::string session = "reducer-bench";
  std::string job_token;
  uint64_t min_bytes = 4 << 10;
  uint64_t max_bytes = 64 << 20;
  uint64_t step_factor = 2;
  std::vector<DataType> dtypes;
  ReduceOp op = ReduceOp::kSum;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  int inflight = 1;
  bool verbose = false;  // the client's info lines too, not only its warnings
  bool op_times = false;  // rank 0 prints each size's timed operations one by one
  // The client's transport and reliability settings (client/client_settings.h);
  // reducers, session, rank, world and token are the fields above.
  client::ClientOptions client;
  std::string csv;
  WorkloadOptions workload;  // --pattern and its settings (workload_flags.h)
  // One line per deprecated name in use, for main() to print once.
  std::vector<std::string> notices;
};

// The settings that have an environment variable or an old name.
const std::vector<SettingInfo>& BenchSettings();

// Returns kCancelled after printing --help (exit 0); any other error names
// the flag or variable and what it expects.
StatusOr<Options> ParseOptions(int argc, char** argv, const EnvLookup& env = ProcessEnv());

}  // namespace rs::bench
