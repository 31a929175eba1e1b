#include "trainer/backend/cpu_backend.h"

#include <algorithm>

#include "trainer/model/cpu_math.h"

namespace rs::trainer {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(CpuBackendOptions options) {
  if (options.client == nullptr) return Status(Code::kInvalidArgument, "CPU backend: no client");
  if (options.initial_params.size() != options.layout.num_params()) {
    return Status(Code::kInvalidArgument, "CPU backend: initial parameters do not match the model");
  }
  if (options.grad_dtype != DataType::kFloat32 && options.grad_dtype != DataType::kBfloat16) {
    return Status(Code::kInvalidArgument, "CPU backend: gradients travel as float32 or bfloat16");
  }
  return std::unique_ptr<CpuBackend>(new CpuBackend(std::move(options)));
}

CpuBackend::CpuBackend(CpuBackendOptions options)
    : opts_(std::move(options)),
      mlp_(opts_.layout),
      params_(std::move(opts_.initial_params)),
      grads_(params_.size()),
      momentum_(params_.size()) {
  if (opts_.grad_dtype == DataType::kBfloat16) staging_.resize(params_.size());
}

std::string CpuBackend::Describe() const {
  return std::string("cpu (") + MathTargetName() + "), " + std::string(DataTypeName(opts_.grad_dtype)) +
         " gradients, " + opts_.transport;
}

std::optional<FailoverReport> CpuBackend::Failover() const {
  if (!opts_.failover) return std::nullopt;
  const client::ClientStats st = opts_.client->stats();
  return FailoverReport{st.epoch, st.live_reducers, opts_.reducers, st.epochs_installed, st.operations_redone,
                        st.retained_peak_bytes};
}

Status CpuBackend::SetBatch(const Batch& batch) {
  batch_ = batch;
  return Status::Ok();
}

StatusOr<double> CpuBackend::ForwardBackward(const std::function<Status(int layer)>& layer_done) {
  const double loss = mlp_.Forward(params_.data(), batch_);
  Status st = mlp_.Backward(params_.data(), grads_.data(), [&](int layer) {
    Status s = layer_done(layer);
    Poll();
    return s;
  });
  backward_end_ = Clock::now();
  if (!st.ok()) return st;
  return loss;
}

Status CpuBackend::StartAllReduce(const Bucket& bucket) {
  const Clock::time_point now = Clock::now();
  if (inflight_.empty()) first_start_ = now;
  std::shared_ptr<client::Operation> op;
  if (opts_.grad_dtype == DataType::kBfloat16) {
    uint16_t* data = staging_.data() + bucket.offset;
    ToBfloat16(grads_.data() + bucket.offset, data, bucket.count);
    op = opts_.client->AllReduce(data, data, bucket.count, DataType::kBfloat16, ReduceOp::kSum);
  } else {
    float* data = grads_.data() + bucket.offset;
    op = opts_.client->AllReduce(data, data, bucket.count, DataType::kFloat32, ReduceOp::kSum);
  }
  inflight_.push_back(InFlight{bucket, std::move(op), false, {}});
  // An operation that failed at once (a session already failed) fails the step now.
  if (inflight_.back().op->Done() && !inflight_.back().op->status().ok()) return inflight_.back().op->status();
  return Status::Ok();
}

void CpuBackend::Poll() {
  const Clock::time_point now = Clock::now();
  for (InFlight& f : inflight_) {
    if (!f.done && f.op->Done()) {
      f.done = true;
      f.done_at = now;
    }
  }
}

Status CpuBackend::WaitOp(client::Operation& op, const std::string& what) {
  Status st = op.Wait(opts_.op_timeout + std::chrono::seconds(5));
  if (st.code() == Code::kTimeout && !op.Done()) {
    return Status(Code::kTimeout, what + " did not finish within " + std::to_string(opts_.op_timeout.count() / 1000) +
                                      " s (a reducer or a rank stopped answering?)");
  }
  return st;
}

StatusOr<CommTiming> CpuBackend::FinishAllReduces() {
  const Clock::time_point wait_start = Clock::now();
  CommTiming timing;
  Clock::time_point last_done = first_start_;
  for (InFlight& f : inflight_) {
    Status st = WaitOp(*f.op, "the all-reduce of gradient bucket " + std::to_string(f.bucket.index));
    if (!st.ok()) {
      inflight_.clear();
      return st;
    }
    if (!f.done) f.done_at = Clock::now();
    last_done = std::max(last_done, f.done_at);
    timing.bytes += f.bucket.count * DataTypeSize(opts_.grad_dtype);
    if (opts_.grad_dtype == DataType::kBfloat16) {
      FromBfloat16(staging_.data() + f.bucket.offset, grads_.data() + f.bucket.offset, f.bucket.count);
    }
  }
  const Clock::time_point end = Clock::now();
  timing.span_s = inflight_.empty() ? 0 : Seconds(last_done - first_start_);
  timing.wait_s = Seconds(end - std::max(wait_start, backward_end_));
  inflight_.clear();
  return timing;
}

Status CpuBackend::ApplyUpdate(const SgdConfig& sgd) {
  AverageAndStep(params_.data(), momentum_.data(), grads_.data(), params_.size(), opts_.world, sgd);
  return Status::Ok();
}

Status CpuBackend::GetParameters(std::vector<float>* out) {
  *out = params_;
  return Status::Ok();
}

Status CpuBackend::AllReduceSum(std::vector<uint64_t>* values) {
  auto op = opts_.client->AllReduce(values->data(), values->data(), values->size(), DataType::kUint64, ReduceOp::kSum);
  return WaitOp(*op, "the all-reduce of the parameter checksums");
}

Status CpuBackend::AllReduceSum(std::vector<double>* values) {
  auto op = opts_.client->AllReduce(values->data(), values->data(), values->size(), DataType::kFloat64, ReduceOp::kSum);
  return WaitOp(*op, "the all-reduce of the losses");
}

}  // namespace rs::trainer
