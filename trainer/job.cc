#include "trainer/job.h"

#include <cstdio>

#include "protocol/auth.h"
#include "trainer/backend/cpu_backend.h"
#include "trainer/backend/local_client.h"
#include "trainer/checks/reference.h"
#include "trainer/ddp/train_loop.h"

namespace rs::trainer {
namespace {

RendezvousConfig RendezvousFor(const TrainOptions& o) {
  RendezvousConfig c;
  c.host = o.master_host;
  c.port = o.master_port;
  c.rank = o.rank;
  c.world = o.world;
  c.settings = o.AgreedSettings();
  c.timeout = o.rendezvous_timeout;
  return c;
}

StatusOr<RendezvousBlob> RandomBlob() {
  RendezvousBlob blob{};
  const StatusOr<protocol::Nonce> n = protocol::RandomNonce();
  if (!n.ok()) return n.status();
  std::copy(n->begin(), n->end(), blob.begin());
  return blob;
}

// The CPU backend's session: a fresh random id from rank 0 when there is a
// rendezvous (or a single rank), else one derived from the session name.
StatusOr<protocol::SessionId> CpuSession(const TrainOptions& o, std::string* how) {
  protocol::SessionId id{};
  if (o.world > 1 && o.master_host.empty()) {
    *how = "session '" + o.session + "' (" + o.session_source + ")";
    return protocol::SessionIdFromName(o.session);
  }
  StatusOr<RendezvousBlob> mine = RandomBlob();
  if (!mine.ok()) return mine.status();
  StatusOr<RendezvousBlob> blob = Rendezvous(RendezvousFor(o), *mine);
  if (!blob.ok()) return blob.status();
  std::copy(blob->begin(), blob->begin() + id.size(), id.begin());
  *how = o.world > 1
             ? "rendezvous at " + o.master_host + ":" + std::to_string(o.master_port) + " (" + o.master_source + ")"
             : "one rank";
  return id;
}

StatusOr<std::unique_ptr<Backend>> MakeCpuBackend(const TrainOptions& o, const MlpLayout& layout,
                                                  std::vector<float> initial, std::string* how) {
  StatusOr<protocol::SessionId> session = CpuSession(o, how);
  if (!session.ok()) return session.status();
  CpuBackendOptions b;
  b.layout = layout;
  b.initial_params = std::move(initial);
  b.grad_dtype = o.grad_dtype;
  b.world = o.world;
  b.op_timeout = o.client.op_timeout;
  if (o.reducers.empty()) {
    b.client = MakeLocalClient();
    b.transport = "no reducers (one rank)";
  } else {
    client::ClientOptions c = o.client;
    c.reducers = o.reducers;
    c.session = *session;
    c.rank = o.rank;
    c.world = o.world;
    c.job_token = o.job_token;
    // A failure reaches the user once, as rs-train's own error line; the
    // warnings (a reducer lost, an epoch installed, a reducer back) as they happen.
    c.log = [](client::LogLevel level, const std::string& message) {  // the message names the rank
      if (level == client::LogLevel::kWarn) std::fprintf(stderr, "rs-train: %s\n", message.c_str());
    };
    StatusOr<std::unique_ptr<client::Client>> cl = client::Client::Create(c);
    if (!cl.ok()) return cl.status().Prefixed("joining the reducers");
    b.client = std::move(cl).value();
    b.failover = o.client.failover;
    b.reducers = o.reducers.size();
    b.transport = std::to_string(o.reducers.size()) + (o.reducers.size() == 1 ? " reducer" : " reducers") + " (" +
                  o.reducers_source + "), failover " + (o.client.failover ? "on" : "off");
    if (o.client.wire_dtype != DataType::kFloat32) {
      b.transport +=
          std::string(", float32 sums as ") + std::string(DataTypeName(o.client.wire_dtype)) + " on the wire";
    }
  }
  StatusOr<std::unique_ptr<CpuBackend>> backend = CpuBackend::Create(std::move(b));
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(std::move(backend).value());
}

StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const TrainOptions& o, const MlpLayout& layout,
                                                  std::vector<float> initial, const GpuHooks& gpu, std::string* how) {
  RendezvousBlob id{};
  if (o.rank == 0) {
    StatusOr<RendezvousBlob> made = gpu.make_id();
    if (!made.ok()) return made.status();
    id = *made;
  }
  StatusOr<RendezvousBlob> blob = Rendezvous(RendezvousFor(o), id);
  if (!blob.ok()) return blob.status();
  *how = o.world > 1 ? "NCCL id from the rendezvous at " + o.master_host + ":" + std::to_string(o.master_port) + " (" +
                           o.master_source + ")"
                     : "one rank";
  return gpu.create(o, layout, std::move(initial), *blob);
}

}  // namespace

Status RunJob(const TrainOptions& o, Reporter& reporter, const GpuHooks* gpu) {
  StatusOr<MlpLayout> layout = MlpLayout::Create(o.shape);
  if (!layout.ok()) return layout.status();
  const BucketPlan plan(*layout, o.bucket_bytes());
  const SyntheticData data(o.shape, o.seed);
  std::vector<float> initial = InitialParameters(*layout, o.seed);

  std::unique_ptr<Reference> reference;
  if (o.verify && o.rank == 0) {
    reference = std::make_unique<Reference>(
        ReferenceConfig{*layout, plan, o.seed, o.world, o.batch, o.grad_dtype, o.sgd, initial, o.client.wire_dtype});
  }
  std::string how;
  StatusOr<std::unique_ptr<Backend>> backend =
      o.backend == BackendKind::kGpu
          ? (gpu != nullptr
                 ? MakeGpuBackend(o, *layout, std::move(initial), *gpu, &how)
                 : StatusOr<std::unique_ptr<Backend>>(Status(Code::kInvalidArgument, "the GPU backend is not built")))
          : MakeCpuBackend(o, *layout, std::move(initial), &how);
  if (!backend.ok()) return backend.status();

  reporter.Start(StartInfo{o.world, (*backend)->Describe(), o.shape.ToString(), layout->num_params(),
                           plan.buckets().size(), o.bucket_mb, o.batch, o.seed, o.sgd.lr, o.sgd.momentum, o.steps, how,
                           o.verify, !(o.world == 1 && o.reducers.empty() && o.backend == BackendKind::kCpu)});
  TrainLoop loop(o, plan, data, **backend, reporter, reference.get());
  StatusOr<TrainSummary> summary = loop.Run();
  if (!summary.ok()) return summary.status();
  summary->failover = (*backend)->Failover();
  reporter.Summary(*summary);
  return Status::Ok();
}

}  // namespace rs::trainer
