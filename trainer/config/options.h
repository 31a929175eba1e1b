// rs-train's settings, parsed once from the command line and the
// environment (through the registry in trainer_settings.h) into an immutable
// struct: a flag wins over an old flag, over its environment variable, over
// an old variable, over the default. Every problem is a usage error
// (kInvalidArgument, exit 2) naming the flag or variable: "RANK: 'x' is not
// a whole number", "RANK=4 is not below WORLD_SIZE=4". Old names still work;
// `notices` says which were used, for main() to print once.
//
// Thread-safety: TrainOptions is a value type; ParseOptions is reentrant.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/dtype.h"
#include "common/status.h"
#include "common/settings.h"
#include "trainer/ddp/sgd.h"
#include "trainer/model/mlp_layout.h"

namespace rs::trainer {

enum class BackendKind { kCpu, kGpu };

struct TrainOptions {
  BackendKind backend = BackendKind::kCpu;

  // Where this process stands in the job.
  uint32_t rank = 0;
  uint32_t world = 1;
  int local_rank = 0;
  // Rank 0's rendezvous; empty host: none (a single rank, or the CPU backend
  // naming its session after `session`).
  std::string master_host;
  uint16_t master_port = 0;
  std::string master_source;  // which flag or variable gave it, for messages
  std::chrono::milliseconds rendezvous_timeout{120'000};
  std::string session = "rs-train";
  std::string session_source = "REDUCER_SESSION";  // where it came from, for messages

  // The reducers (CPU backend; the GPU backend's NCCL plugin reads its own).
  std::vector<client::Endpoint> reducers;
  std::string reducers_source;
  std::string job_token;
  // The client's transport and reliability settings (client/client_settings.h;
  // docs/reliability.md), for the CPU backend; its op and connect timeouts
  // bound the GPU backend's NCCL calls too. Reducers, session, rank and token
  // are the fields above.
  client::ClientOptions client;

  // Model, data and training.
  MlpShape shape;
  int batch = 32;  // examples per rank and step
  uint64_t seed = 1;
  uint64_t steps = 100;
  SgdConfig sgd;
  double bucket_mb = 25;
  DataType grad_dtype = DataType::kFloat32;

  // Checks and output.
  uint64_t check_every = 10;  // 0: only before the first and after the last step
  bool verify = false;
  uint64_t log_every = 10;
  bool json = false;
  // One line per deprecated name in use ("REDUCER_PIECE_BYTES is deprecated;
  // use REDUCER_MAX_PIECE instead").
  std::vector<std::string> notices;

  size_t bucket_bytes() const { return static_cast<size_t>(bucket_mb * 1024 * 1024); }
  // Everything the ranks must agree on, one "name=value" per line; the
  // rendezvous compares it across ranks.
  std::string AgreedSettings() const;
};

// env: the environment (ProcessEnv(); tests pass a map). gpu_built: whether
// this binary has the GPU backend. --help prints the usage and returns
// kCancelled.
StatusOr<TrainOptions> ParseOptions(int argc, char** argv, const EnvLookup& env, bool gpu_built);

}  // namespace rs::trainer
