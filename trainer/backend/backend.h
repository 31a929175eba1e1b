// What the training loop needs from a device and its communication, behind
// one interface: the model's forward and backward passes with a hook as
// each layer's gradients are final, all-reduces of gradient buckets that
// overlap the rest of backward, the update, and a small blocking collective
// for the checks. CpuBackend works in host memory and all-reduces through
// the client library to the reducers; GpuBackend (built with CUDA and NCCL)
// runs cuBLAS and calls ncclAllReduce per bucket on its own stream.
//
// Threading: one thread drives a backend; its calls follow the order of a
// step: SetBatch, ForwardBackward (whose hook calls StartAllReduce),
// FinishAllReduces, ApplyUpdate.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/data/synthetic.h"
#include "trainer/ddp/bucket_plan.h"
#include "trainer/ddp/sgd.h"

namespace rs::trainer {

// One step's communication, as the backend measured it.
struct CommTiming {
  double span_s = 0;   // from the first bucket's all-reduce start to the last one's end
  double wait_s = 0;   // time the step was blocked on communication after backward finished
  uint64_t bytes = 0;  // bytes this rank all-reduced (as sent: bfloat16 counts 2 per element)
};

// What reducer failover did (client::ClientStats), for the summary.
struct FailoverReport {
  uint32_t epoch = 0;               // 0: no reducer was lost or taken back
  size_t live_reducers = 0;
  size_t reducers = 0;              // in the list the run started with
  uint64_t epochs_installed = 0;    // reducer losses and returns survived
  uint64_t operations_redone = 0;   // all-reduces sent again to the survivors
  size_t retained_peak_bytes = 0;   // most memory held for copies of inputs
};

class Backend {
 public:
  virtual ~Backend() = default;

  // One line for the start-up banner: device, SIMD target or GPU, transport.
  virtual std::string Describe() const = 0;
  // This step's examples (host memory).
  virtual Status SetBatch(const Batch& batch) = 0;
  // Forward and backward; calls layer_done(l) for l = depth-1 down to 0 as
  // soon as layer l's gradients are final (in device order), so the caller
  // can start buckets while backward goes on. Returns this rank's loss.
  virtual StatusOr<double> ForwardBackward(const std::function<Status(int layer)>& layer_done) = 0;
  // Starts summing the bucket's gradients across ranks. Never blocks on the
  // network; buckets are started in the same order on every rank.
  virtual Status StartAllReduce(const Bucket& bucket) = 0;
  // Waits for every started all-reduce (bounded by the configured timeout).
  virtual StatusOr<CommTiming> FinishAllReduces() = 0;
  // Averages the summed gradients over the ranks and applies SGD + momentum.
  virtual Status ApplyUpdate(const SgdConfig& sgd) = 0;
  // The parameters, in host memory and MlpLayout's order.
  virtual Status GetParameters(std::vector<float>* out) = 0;
  // Sums across ranks in place, blocking: the checks and the reported loss
  // travel the same path as the gradients.
  virtual Status AllReduceSum(std::vector<uint64_t>* values) = 0;
  virtual Status AllReduceSum(std::vector<double>* values) = 0;
  // With reducer failover on (CPU backend with reducers): what it did so
  // far. Empty otherwise (the GPU backend's plugin logs its own).
  virtual std::optional<FailoverReport> Failover() const { return std::nullopt; }
};

}  // namespace rs::trainer
