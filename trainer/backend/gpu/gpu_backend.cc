#include "trainer/backend/gpu/gpu_backend.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "trainer/backend/gpu/gpu_kernels.h"
#include "trainer/backend/gpu/gpu_util.h"

namespace rs::trainer {
namespace {

using namespace gpu;  // NOLINT: the helpers of this backend

static_assert(sizeof(ncclUniqueId) <= sizeof(RendezvousBlob), "NCCL's unique id must fit the rendezvous blob");

// How often the host looks at a running all-reduce and at NCCL's error state.
constexpr auto kPoll = std::chrono::microseconds(50);

std::string NcclText(ncclComm_t comm, ncclResult_t r) {
  std::string text = ncclGetErrorString(r);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  }
  return text;
}

class GpuBackend final : public Backend {
 public:
  GpuBackend(const TrainOptions& o, const MlpLayout& layout) : o_(o), layout_(layout) {}
  ~GpuBackend() override;

  Status Init(const std::vector<float>& initial, const RendezvousBlob& id);

  std::string Describe() const override { return describe_; }
  Status SetBatch(const Batch& batch) override;
  StatusOr<double> ForwardBackward(const std::function<Status(int layer)>& layer_done) override;
  Status StartAllReduce(const Bucket& bucket) override;
  StatusOr<CommTiming> FinishAllReduces() override;
  Status ApplyUpdate(const SgdConfig& sgd) override;
  Status GetParameters(std::vector<float>* out) override;
  Status AllReduceSum(std::vector<uint64_t>* values) override {
    return SmallAllReduce(values->data(), values->size(), ncclUint64);
  }
  Status AllReduceSum(std::vector<double>* values) override {
    return SmallAllReduce(values->data(), values->size(), ncclFloat64);
  }

 private:
  Status Fail(Status st);
  // ncclSuccess, or ncclInProgress followed by a bounded wait; else Fail.
  Status Nccl(ncclResult_t r, const char* what, std::chrono::milliseconds timeout);
  // Waits for `event` while watching NCCL for asynchronous errors; bounded.
  Status WaitEvent(cudaEvent_t event, const std::string& what);
  Status Gemm(bool ta, bool tb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b, size_t ldb,
              float* c, size_t ldc);
  Status SmallAllReduce(void* values, size_t count, ncclDataType_t type);
  StatusOr<EventPtr> NewEvent(bool timing);

  const TrainOptions& o_;
  const MlpLayout layout_;
  std::string describe_;
  Status failure_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;

  StreamPtr compute_, comm_stream_;
  CublasPtr cublas_;
  DevicePtr<float> params_, grads_, momentum_, x_, y_, grad_a_, grad_b_, terms_;
  DevicePtr<uint16_t> staging_;
  DevicePtr<double> loss_;
  DevicePtr<uint64_t> small_;
  std::vector<DevicePtr<float>> acts_;  // acts_[l]: output of layer l-1, [rows][LayerOut(l-1)]
  std::unique_ptr<double, PinnedFree> loss_host_;
  std::unique_ptr<uint64_t, PinnedFree> small_host_;
  EventPtr ready_, comm_start_, all_done_, backward_end_, loss_ready_, small_done_;
  size_t rows_ = 0;
  size_t small_count_ = 0;
  size_t started_ = 0;
  uint64_t started_bytes_ = 0;
};

StatusOr<EventPtr> GpuBackend::NewEvent(bool timing) {
  cudaEvent_t e = nullptr;
  RS_CUDA(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return EventPtr(e);
}

Status GpuBackend::Init(const std::vector<float>& initial, const RendezvousBlob& id) {
  int devices = 0;
  if (cudaError_t err = cudaGetDeviceCount(&devices); err != cudaSuccess || devices == 0) {
    return Status(Code::kIo, std::string("--backend gpu: no CUDA device (") +
                                 (err == cudaSuccess ? "none visible" : cudaGetErrorString(err)) + ")");
  }
  const int device = o_.local_rank % devices;
  RS_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  RS_CUDA(cudaGetDeviceProperties(&prop, device));
  for (StreamPtr* s : {&compute_, &comm_stream_}) {
    cudaStream_t stream = nullptr;
    RS_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    s->reset(stream);
  }
  cublasHandle_t handle = nullptr;
  RS_CUBLAS(cublasCreate(&handle));
  cublas_.reset(handle);
  RS_CUBLAS(cublasSetStream(handle, compute_.get()));

  const MlpShape& s = layout_.shape();
  rows_ = static_cast<size_t>(o_.batch);
  size_t widest = static_cast<size_t>(std::max({s.input_dim, s.width, s.output_dim}));
  const size_t n = layout_.num_params();
  struct Alloc {
    DevicePtr<float>* ptr;
    size_t count;
    const char* what;
  };
  for (const Alloc& a :
       {Alloc{&params_, n, "parameters"}, Alloc{&grads_, n, "gradients"}, Alloc{&momentum_, n, "momentum"},
        Alloc{&x_, rows_ * s.input_dim, "inputs"}, Alloc{&y_, rows_ * s.output_dim, "targets"},
        Alloc{&grad_a_, rows_ * widest, "activation grads"}, Alloc{&grad_b_, rows_ * widest, "activation grads"},
        Alloc{&terms_, rows_ * s.output_dim, "loss terms"}}) {
    StatusOr<DevicePtr<float>> p = DeviceAlloc<float>(a.count, a.what);
    if (!p.ok()) return p.status();
    *a.ptr = std::move(p).value();
  }
  acts_.resize(static_cast<size_t>(s.depth) + 1);
  for (int l = 1; l <= s.depth; ++l) {
    StatusOr<DevicePtr<float>> p = DeviceAlloc<float>(rows_ * static_cast<size_t>(s.LayerOut(l - 1)), "activations");
    if (!p.ok()) return p.status();
    acts_[l] = std::move(p).value();
  }
  if (o_.grad_dtype == DataType::kBfloat16) {
    StatusOr<DevicePtr<uint16_t>> p = DeviceAlloc<uint16_t>(n, "bfloat16 gradients");
    if (!p.ok()) return p.status();
    staging_ = std::move(p).value();
  }
  StatusOr<DevicePtr<double>> loss = DeviceAlloc<double>(1, "loss");
  if (!loss.ok()) return loss.status();
  loss_ = std::move(loss).value();
  small_count_ = static_cast<size_t>(o_.world) + 1;
  StatusOr<DevicePtr<uint64_t>> small = DeviceAlloc<uint64_t>(small_count_, "checks");
  if (!small.ok()) return small.status();
  small_ = std::move(small).value();
  void* host = nullptr;
  RS_CUDA(cudaMallocHost(&host, sizeof(double)));
  loss_host_.reset(static_cast<double*>(host));
  RS_CUDA(cudaMallocHost(&host, small_count_ * sizeof(uint64_t)));
  small_host_.reset(static_cast<uint64_t*>(host));
  for (auto [ev, timing] :
       {std::pair{&ready_, false}, std::pair{&comm_start_, true}, std::pair{&all_done_, true},
        std::pair{&backward_end_, true}, std::pair{&loss_ready_, false}, std::pair{&small_done_, false}}) {
    StatusOr<EventPtr> e = NewEvent(timing);
    if (!e.ok()) return e.status();
    *ev = std::move(e).value();
  }
  RS_CUDA(cudaMemcpy(params_.get(), initial.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  RS_CUDA(cudaMemset(momentum_.get(), 0, n * sizeof(float)));

  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof(uid));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait below is ours, and bounded
  RS_RETURN_IF_ERROR(
      Nccl(ncclCommInitRankConfig(&comm_, static_cast<int>(o_.world), uid, static_cast<int>(o_.rank), &config),
           "ncclCommInitRankConfig", o_.client.connect_timeout));
  int version = 0;
  ncclGetVersion(&version);
  describe_ = std::string("gpu (") + prop.name + ", device " + std::to_string(device) + " of " +
              std::to_string(devices) + "), NCCL " + std::to_string(version / 10000) + "." +
              std::to_string(version / 100 % 100) + "." + std::to_string(version % 100) + ", " +
              std::string(DataTypeName(o_.grad_dtype)) + " gradients";
  return Status::Ok();
}

GpuBackend::~GpuBackend() {
  if (comm_ == nullptr) return;
  if (!aborted_ && failure_.ok()) {
    ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    ncclResult_t state = ncclInProgress;
    while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(kPoll);
    }
    if (state == ncclSuccess) {
      ncclCommDestroy(comm_);
      return;
    }
  }
  if (!aborted_) ncclCommAbort(comm_);
}

Status GpuBackend::Fail(Status st) {
  if (comm_ != nullptr && !aborted_) {
    ncclCommAbort(comm_);  // unblocks NCCL's kernels and proxy threads
    aborted_ = true;
  }
  if (failure_.ok()) failure_ = st;
  return st;
}

Status GpuBackend::Nccl(ncclResult_t r, const char* what, std::chrono::milliseconds timeout) {
  if (!failure_.ok()) return failure_;
  if (r != ncclSuccess && r != ncclInProgress)
    return Fail(Status(Code::kPeerFailed, std::string(what) + ": " + NcclText(comm_, r)));
  const auto deadline = Clock::now() + timeout;
  while (r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = ncclCommGetAsyncError(comm_, &state);
    if (q != ncclSuccess) return Fail(Status(Code::kPeerFailed, std::string(what) + ": " + NcclText(comm_, q)));
    if (state == ncclSuccess) break;
    if (state != ncclInProgress)
      return Fail(Status(Code::kPeerFailed, std::string(what) + ": " + NcclText(comm_, state)));
    if (Clock::now() > deadline) {
      return Fail(Status(Code::kTimeout, std::string(what) + " did not finish within " +
                                             std::to_string(timeout.count() / 1000) + " s (a rank missing?)"));
    }
    std::this_thread::sleep_for(kPoll);
  }
  return Status::Ok();
}

Status GpuBackend::WaitEvent(cudaEvent_t event, const std::string& what) {
  const auto deadline = Clock::now() + o_.client.op_timeout;
  while (true) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return Status::Ok();
    if (e != cudaErrorNotReady) return Fail(CudaStatus(e, what.c_str()));
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      return Fail(Status(Code::kPeerFailed, what + ": NCCL failed: " + NcclText(comm_, state)));
    }
    if (Clock::now() > deadline) {
      return Fail(Status(Code::kTimeout, what + " did not finish within " +
                                             std::to_string(o_.client.op_timeout.count() / 1000) +
                                             " s (a reducer or a rank stopped answering?)"));
    }
    std::this_thread::sleep_for(kPoll);
  }
}

// Row-major c[m][n] = op(a)[m][k] . op(b)[k][n], as cuBLAS's column-major
// c^T = op(b)^T . op(a)^T; lda/ldb/ldc are the stored row strides.
Status GpuBackend::Gemm(bool ta, bool tb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
                        size_t ldb, float* c, size_t ldc) {
  const float one = 1.0f, zero = 0.0f;
  RS_CUBLAS(cublasSgemm(cublas_.get(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                        static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one, b, static_cast<int>(ldb),
                        a, static_cast<int>(lda), &zero, c, static_cast<int>(ldc)));
  return Status::Ok();
}

Status GpuBackend::SetBatch(const Batch& batch) {
  if (static_cast<size_t>(batch.rows) != rows_) return Status(Code::kInternal, "GPU backend: batch size changed");
  RS_CUDA(cudaMemcpyAsync(x_.get(), batch.x.data(), batch.x.size() * sizeof(float), cudaMemcpyHostToDevice,
                          compute_.get()));
  RS_CUDA(cudaMemcpyAsync(y_.get(), batch.y.data(), batch.y.size() * sizeof(float), cudaMemcpyHostToDevice,
                          compute_.get()));
  // The copies read pageable host memory the caller may reuse.
  RS_CUDA(cudaStreamSynchronize(compute_.get()));
  return Status::Ok();
}

StatusOr<double> GpuBackend::ForwardBackward(const std::function<Status(int layer)>& layer_done) {
  if (!failure_.ok()) return failure_;
  const MlpShape& s = layout_.shape();
  cudaStream_t stream = compute_.get();
  float* p = params_.get();
  float* g = grads_.get();
  const float* in = x_.get();
  for (int l = 0; l < s.depth; ++l) {
    const size_t n_in = static_cast<size_t>(s.LayerIn(l)), n_out = static_cast<size_t>(s.LayerOut(l));
    float* out = acts_[l + 1].get();
    RS_RETURN_IF_ERROR(
        Gemm(false, false, rows_, n_out, n_in, in, n_in, p + layout_.weight_offset(l), n_out, out, n_out));
    RS_CUDA(AddBiasRelu(out, p + layout_.bias_offset(l), rows_, n_out, l + 1 < s.depth, stream));
    in = out;
  }
  const size_t n_y = rows_ * static_cast<size_t>(s.output_dim);
  float* grad = grad_a_.get();
  float* grad_next = grad_b_.get();
  RS_CUDA(MseGrad(acts_[s.depth].get(), y_.get(), grad, terms_.get(), n_y, 2.0f / static_cast<float>(n_y), stream));
  RS_CUDA(SumToDouble(terms_.get(), n_y, loss_.get(), stream));
  RS_CUDA(cudaMemcpyAsync(loss_host_.get(), loss_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream));
  RS_CUDA(cudaEventRecord(loss_ready_.get(), stream));
  for (int l = s.depth - 1; l >= 0; --l) {
    const size_t n_in = static_cast<size_t>(s.LayerIn(l)), n_out = static_cast<size_t>(s.LayerOut(l));
    const float* act_in = l == 0 ? x_.get() : acts_[l].get();
    RS_RETURN_IF_ERROR(
        Gemm(true, false, n_in, n_out, rows_, act_in, n_in, grad, n_out, g + layout_.weight_offset(l), n_out));
    RS_CUDA(BiasGrad(grad, g + layout_.bias_offset(l), rows_, n_out, stream));
    RS_RETURN_IF_ERROR(layer_done(l));
    if (l == 0) break;
    RS_RETURN_IF_ERROR(
        Gemm(false, true, rows_, n_in, n_out, grad, n_out, p + layout_.weight_offset(l), n_out, grad_next, n_in));
    RS_CUDA(ReluBackward(grad_next, acts_[l].get(), rows_ * n_in, stream));
    std::swap(grad, grad_next);
  }
  RS_CUDA(cudaEventRecord(backward_end_.get(), stream));
  RS_CUDA(cudaEventSynchronize(loss_ready_.get()));
  return *loss_host_ / static_cast<double>(n_y);
}

Status GpuBackend::StartAllReduce(const Bucket& bucket) {
  if (!failure_.ok()) return failure_;
  cudaStream_t comm = comm_stream_.get();
  // The communication stream waits for this bucket's gradients only.
  RS_CUDA(cudaEventRecord(ready_.get(), compute_.get()));
  RS_CUDA(cudaStreamWaitEvent(comm, ready_.get(), 0));
  if (started_ == 0) RS_CUDA(cudaEventRecord(comm_start_.get(), comm));
  float* grads = grads_.get() + bucket.offset;
  if (o_.grad_dtype == DataType::kBfloat16) {
    uint16_t* staged = staging_.get() + bucket.offset;
    RS_CUDA(ToBfloat16(grads, staged, bucket.count, comm));
    RS_RETURN_IF_ERROR(Nccl(ncclAllReduce(staged, staged, bucket.count, ncclBfloat16, ncclSum, comm_, comm),
                            "ncclAllReduce", o_.client.op_timeout));
    RS_CUDA(FromBfloat16(staged, grads, bucket.count, comm));
    started_bytes_ += bucket.count * 2;
  } else {
    RS_RETURN_IF_ERROR(Nccl(ncclAllReduce(grads, grads, bucket.count, ncclFloat32, ncclSum, comm_, comm),
                            "ncclAllReduce", o_.client.op_timeout));
    started_bytes_ += bucket.count * 4;
  }
  ++started_;
  return Status::Ok();
}

StatusOr<CommTiming> GpuBackend::FinishAllReduces() {
  CommTiming timing;
  if (started_ == 0) return timing;
  if (!failure_.ok()) return failure_;
  const size_t buckets = started_;
  timing.bytes = started_bytes_;
  started_ = 0;
  started_bytes_ = 0;
  RS_CUDA(cudaEventRecord(all_done_.get(), comm_stream_.get()));
  RS_CUDA(cudaStreamWaitEvent(compute_.get(), all_done_.get(), 0));
  RS_RETURN_IF_ERROR(WaitEvent(all_done_.get(), "the all-reduce of " + std::to_string(buckets) + " gradient buckets"));
  RS_CUDA(cudaEventSynchronize(backward_end_.get()));
  float span_ms = 0, exposed_ms = 0;
  RS_CUDA(cudaEventElapsedTime(&span_ms, comm_start_.get(), all_done_.get()));
  RS_CUDA(cudaEventElapsedTime(&exposed_ms, backward_end_.get(), all_done_.get()));
  timing.span_s = span_ms / 1e3;
  timing.wait_s = std::max(0.0f, exposed_ms) / 1e3;
  return timing;
}

Status GpuBackend::ApplyUpdate(const SgdConfig& sgd) {
  if (!failure_.ok()) return failure_;
  RS_CUDA(SgdStep(params_.get(), momentum_.get(), grads_.get(), layout_.num_params(), static_cast<float>(o_.world),
                  sgd.lr, sgd.momentum, compute_.get()));
  RS_CUDA(cudaStreamSynchronize(compute_.get()));
  return Status::Ok();
}

Status GpuBackend::GetParameters(std::vector<float>* out) {
  out->resize(layout_.num_params());
  RS_CUDA(cudaStreamSynchronize(compute_.get()));
  RS_CUDA(cudaMemcpy(out->data(), params_.get(), out->size() * sizeof(float), cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status GpuBackend::SmallAllReduce(void* values, size_t count, ncclDataType_t type) {
  if (!failure_.ok()) return failure_;
  if (count > small_count_) return Status(Code::kInternal, "GPU backend: check vector too long");
  cudaStream_t comm = comm_stream_.get();
  const size_t bytes = count * 8;  // uint64 and float64 only
  std::memcpy(small_host_.get(), values, bytes);
  RS_CUDA(cudaMemcpyAsync(small_.get(), small_host_.get(), bytes, cudaMemcpyHostToDevice, comm));
  RS_RETURN_IF_ERROR(Nccl(ncclAllReduce(small_.get(), small_.get(), count, type, ncclSum, comm_, comm), "ncclAllReduce",
                          o_.client.op_timeout));
  RS_CUDA(cudaMemcpyAsync(small_host_.get(), small_.get(), bytes, cudaMemcpyDeviceToHost, comm));
  RS_CUDA(cudaEventRecord(small_done_.get(), comm));
  RS_RETURN_IF_ERROR(WaitEvent(small_done_.get(), "the all-reduce of the checks"));
  std::memcpy(values, small_host_.get(), bytes);
  return Status::Ok();
}

}  // namespace

StatusOr<RendezvousBlob> MakeNcclId() {
  ncclUniqueId uid;
  if (ncclResult_t r = ncclGetUniqueId(&uid); r != ncclSuccess) {
    return Status(Code::kIo, std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  }
  RendezvousBlob blob{};
  std::memcpy(blob.data(), &uid, sizeof(uid));
  return blob;
}

StatusOr<std::unique_ptr<Backend>> CreateGpuBackend(const TrainOptions& options, const MlpLayout& layout,
                                                    std::vector<float> initial, const RendezvousBlob& id) {
  auto backend = std::make_unique<GpuBackend>(options, layout);
  RS_RETURN_IF_ERROR(backend->Init(initial, id));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace rs::trainer
