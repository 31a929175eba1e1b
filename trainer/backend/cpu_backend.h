// The CPU backend: the model in host memory (CpuMlp), gradients all-reduced
// bucket by bucket through the client library to the reducers while
// backward goes on, averaged and applied with the shared SGD code. This is
// what the local cluster, the compose simulation and CI train with.
//
// Threading: one thread drives it (see backend.h); the client's I/O threads
// move the bytes.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "client/client.h"
#include "common/clock.h"
#include "trainer/backend/backend.h"
#include "trainer/model/cpu_mlp.h"

namespace rs::trainer {

struct CpuBackendOptions {
  MlpLayout layout;
  std::vector<float> initial_params;
  DataType grad_dtype = DataType::kFloat32;  // or kBfloat16
  uint32_t world = 1;
  // An all-reduce still unfinished this long after FinishAllReduces began
  // waiting fails the step (the client's own timeout, which names the
  // reducer, normally fires first).
  std::chrono::milliseconds op_timeout = client::kDefaultOpTimeout.value;
  std::unique_ptr<client::Client> client;
  bool failover = false;  // the client's failover is on (Failover() reports its stats)
  size_t reducers = 0;    // the reducers it started with
  std::string transport;  // for Describe(), e.g. "2 reducers (REDUCER_ADDRS)"
};

class CpuBackend final : public Backend {
 public:
  static StatusOr<std::unique_ptr<CpuBackend>> Create(CpuBackendOptions options);

  std::string Describe() const override;
  Status SetBatch(const Batch& batch) override;
  StatusOr<double> ForwardBackward(const std::function<Status(int layer)>& layer_done) override;
  Status StartAllReduce(const Bucket& bucket) override;
  StatusOr<CommTiming> FinishAllReduces() override;
  Status ApplyUpdate(const SgdConfig& sgd) override;
  Status GetParameters(std::vector<float>* out) override;
  Status AllReduceSum(std::vector<uint64_t>* values) override;
  Status AllReduceSum(std::vector<double>* values) override;
  std::optional<FailoverReport> Failover() const override;

 private:
  explicit CpuBackend(CpuBackendOptions options);
  // Notes the time of every in-flight all-reduce that has finished.
  void Poll();
  Status WaitOp(client::Operation& op, const std::string& what);

  struct InFlight {
    Bucket bucket;
    std::shared_ptr<client::Operation> op;
    bool done = false;
    Clock::time_point done_at;
  };

  CpuBackendOptions opts_;
  CpuMlp mlp_;
  std::vector<float> params_, grads_, momentum_;
  std::vector<uint16_t> staging_;  // bfloat16 gradients, same offsets as grads_
  Batch batch_;
  std::vector<InFlight> inflight_;
  Clock::time_point first_start_, backward_end_;
};

}  // namespace rs::trainer
