// reducer-bench's command line: flags in the style of nccl-tests, and the
// client settings under the names the NCCL plugin and reducerd use
// (--max-piece / REDUCER_MAX_PIECE, --io-threads / REDUCER_IO_THREADS, ...),
// from the registry BenchSettings(). A flag that is absent takes its value
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
  // Unset: the client chooses (client/transport_plan.h).
  std::optional<int> streams;
  std::optional<uint64_t> max_piece;
  uint64_t min_piece = 64 << 10;
  std::optional<uint64_t> send_window;  // 0: no limit
  std::optional<uint64_t> write_slice;  // 0: whole batches; unset: the client chooses
  int io_threads = 1;
  int inflight = 1;
  std::chrono::milliseconds op_timeout{90'000};
  std::chrono::milliseconds connect_timeout{90'000};
  std::chrono::milliseconds liveness{5'000};  // 0: off
  bool crc = false;
  DataType wire = DataType::kFloat32;  // --wire-dtype; kFloat32: off
  bool failover = true;
  uint32_t min_reducers = 1;
  uint64_t retention = 256 << 20;
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
