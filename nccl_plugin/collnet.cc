#include "nccl_plugin/collnet.h"

#include "nccl_plugin/log.h"

namespace rs::plugin {
namespace {

Status NotImplemented(const char* what) {
  return Status(Code::kInternal, std::string("CollNet ") + what +
                                     " is not implemented yet in this build of the plugin; "
                                     "unset REDUCER_ADDRS/CLUSTER_SPEC or NCCL_COLLNET_ENABLE");
}

}  // namespace

CollNet::CollNet(StatusOr<CollNetConfig> config) : config_(std::move(config)) {}

int CollNet::num_devices() const {
  return config_.ok() && !config_->reducers.empty() ? 1 : 0;
}

void CollNet::LogSummary() const {
  if (!config_.ok()) {
    RS_PLOG_WARN("CollNet misconfigured, it will report an error to NCCL: %s",
                 config_.status().message().c_str());
    return;
  }
  const CollNetConfig& cfg = *config_;
  if (cfg.reducers.empty()) {
    if (cfg.off_is_warning) {
      RS_PLOG_WARN("CollNet off (0 devices): %s", cfg.off_reason.c_str());
    } else {
      RS_PLOG_INFO("CollNet off (0 devices): %s", cfg.off_reason.c_str());
    }
    return;
  }
  std::string first = cfg.reducers.front().host + ":" + std::to_string(cfg.reducers.front().port);
  RS_PLOG_INFO("CollNet: %zu reducer(s) from %s (first %s), %d stream(s) each, job token %s",
               cfg.reducers.size(), cfg.source.c_str(), first.c_str(), cfg.streams_per_reducer,
               cfg.job_token.empty() ? "not set" : "set");
}

bool CollNet::ReduceSupported(DataType type, ReduceOp op) {
  // The reducer's kernels cover the full cross product (server/core/kernels.h).
  return static_cast<int>(type) < kNumDataTypes && static_cast<int>(op) < kNumReduceOps;
}

// ---- TODO(collnet): everything below is a stub. ---------------------------

Status CollNet::Listen(int dev, void* handle, void** listen_comm) {
  // TODO(collnet): write {magic, version, nonce, address} into handle.
  return NotImplemented("listen");
}

Status CollNet::Connect(void* const* handles, int nranks, int rank, void* listen_comm, void** coll_comm) {
  // TODO(collnet): session id from all handles; rs::client::Client::Create.
  return NotImplemented("connect");
}

Status CollNet::RegMr(void* coll_comm, void* data, size_t size, void** mhandle) {
  // TODO(collnet): host memory needs no registration; return a token.
  return NotImplemented("regMr");
}

Status CollNet::DeregMr(void* coll_comm, void* mhandle) {
  // TODO(collnet)
  return NotImplemented("deregMr");
}

Status CollNet::IAllReduce(void* coll_comm, void* send, void* recv, size_t count, DataType type, ReduceOp op,
                           void** request) {
  // TODO(collnet): Client::AllReduce, request pool of >= kMinRequestPool.
  return NotImplemented("iallreduce");
}

Status CollNet::IFlush(void* coll_comm, void* data, size_t size, void** request) {
  // TODO(collnet): *request = nullptr once collComm is validated.
  return NotImplemented("iflush");
}

Status CollNet::Test(void* request, bool* done, size_t* size) {
  // TODO(collnet): poll Operation::Done()/status().
  return NotImplemented("test");
}

Status CollNet::CloseColl(void* coll_comm) {
  // TODO(collnet)
  return NotImplemented("closeColl");
}

Status CollNet::CloseListen(void* listen_comm) {
  // TODO(collnet)
  return NotImplemented("closeListen");
}

}  // namespace rs::plugin
