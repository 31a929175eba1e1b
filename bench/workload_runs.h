// reducer-bench's collnet and ddp patterns (workloads.h) replayed through
// the client library: every element of the user's data checked, the time of
// a size (collnet) or of a training step (ddp) taken as the slowest rank's
// average, rank 0 printing one line per size or bucket cap and writing the
// CSV. The sweep pattern stays in reducer_bench.cc.
// Threading: one thread (main) drives a run; the client's I/O threads only
// write into the receive buffer of the operations in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/workload_flags.h"
#include "client/client.h"
#include "common/dtype.h"

namespace rs::bench {

// What the patterns share with the sweep's settings.
struct RunSettings {
  uint32_t rank = 0;
  uint32_t world = 1;
  size_t reducers = 0;
  std::vector<DataType> dtypes;
  ReduceOp op = ReduceOp::kSum;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  std::chrono::milliseconds timeout = client::kDefaultOpTimeout.value;
  std::string csv;              // rank 0 writes it; empty: none
  std::vector<uint64_t> sizes;  // collnet: the user's all-reduce sizes
  DataType wire = DataType::kFloat32;  // --wire-dtype, for --check
};

class WorkloadRun {
 public:
  // The run of options.pattern (collnet or ddp) with every buffer allocated,
  // so a rank without the memory fails before joining (throws std::bad_alloc).
  static std::unique_ptr<WorkloadRun> Create(const WorkloadOptions& options, const RunSettings& settings);
  virtual ~WorkloadRun() = default;

  // Prints what the pattern does (rank 0); call before joining.
  virtual void Describe() const = 0;
  // Runs every line; the process exit status: 0 when every operation
  // succeeded and every element was right, 1 otherwise. Destroy the client
  // before this object: operations abandoned after an error still write
  // into its buffers until then.
  virtual int Run(client::Client& client) = 0;
};

}  // namespace rs::bench
