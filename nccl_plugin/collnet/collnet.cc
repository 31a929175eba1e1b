#include "nccl_plugin/collnet/collnet.h"

#include <unistd.h>

#include <cstring>

#include "nccl_plugin/collnet/collnet_comm.h"
#include "nccl_plugin/log.h"
#include "protocol/auth.h"

namespace rs::plugin {

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
  // The reducer's kernels cover the full cross product (kernels/kernels.h).
  return static_cast<int>(type) < kNumDataTypes && static_cast<int>(op) < kNumReduceOps;
}

Status CollNet::Listen(int dev, void* handle, void** listen_comm) {
  if (dev != 0 || num_devices() == 0) {
    return Status(Code::kInvalidArgument, "CollNet device " + std::to_string(dev) + " does not exist");
  }
  if (handle == nullptr || listen_comm == nullptr) return Status(Code::kInvalidArgument, "NULL handle or comm");
  CollHandle h;
  const StatusOr<protocol::Nonce> nonce = protocol::RandomNonce();
  if (!nonce.ok()) return nonce.status().Prefixed("CollNet listen");
  std::memcpy(h.nonce, nonce->data(), sizeof(h.nonce));
  ConfigDigest(*config(), h.config_digest);
  gethostname(h.host, sizeof(h.host) - 1);
  std::memcpy(handle, &h, sizeof(h));
  *listen_comm = OpaqueObject::ToOpaque(new CollListenComm(h));
  return Status::Ok();
}

Status CollNet::CheckHandles(void* const* handles, int nranks, int rank, const CollListenComm& listen) const {
  if (handles == nullptr || nranks < 1 || rank < 0 || rank >= nranks) {
    return Status(Code::kInvalidArgument, "connect with rank " + std::to_string(rank) + " of " +
                                              std::to_string(nranks));
  }
  // Every rank runs the same checks over the same handles, so all fail alike.
  for (int i = 0; i < nranks; ++i) {
    CollHandle h;
    std::memcpy(&h, handles[i], sizeof(h));
    h.host[sizeof(h.host) - 1] = '\0';
    if (h.magic != CollHandle::kMagic || h.version != CollHandle::kVersion) {
      return Status(Code::kVersion, "node " + std::to_string(i) +
                                        "'s CollNet handle comes from another version of the reducer plugin");
    }
    CollHandle first;
    std::memcpy(&first, handles[0], sizeof(first));
    first.host[sizeof(first.host) - 1] = '\0';
    if (std::memcmp(h.config_digest, first.config_digest, sizeof(h.config_digest)) != 0) {
      return Status(Code::kMismatch,
                    "node " + std::to_string(i) + " (" + h.host + ") has other reducer settings than node 0 (" +
                        first.host + "): REDUCER_ADDRS/CLUSTER_SPEC, REDUCER_STREAMS and the piece sizes "
                        "must be the same on every node");
    }
  }
  if (std::memcmp(handles[rank], &listen.handle(), sizeof(CollHandle)) != 0) {
    return Status(Code::kInternal, "connect: handle " + std::to_string(rank) + " is not this rank's own");
  }
  return Status::Ok();
}

Status CollNet::Connect(void* const* handles, int nranks, int rank, void* listen_comm, void** coll_comm) {
  auto* listen = OpaqueObject::As<CollListenComm>(listen_comm);
  if (listen == nullptr || coll_comm == nullptr) {
    return Status(Code::kInternal, "CollNet connect without a CollNet listen comm");
  }
  *coll_comm = nullptr;
  RS_RETURN_IF_ERROR(CheckHandles(handles, nranks, rank, *listen));
  const CollNetConfig& cfg = *config();
  client::ClientOptions o;
  o.reducers = cfg.reducers;
  o.session = SessionIdFromHandles(handles, nranks);
  o.rank = static_cast<uint32_t>(rank);
  o.world = static_cast<uint32_t>(nranks);
  o.job_token = cfg.job_token;
  o.streams_per_reducer = cfg.streams_per_reducer;
  o.io_threads = cfg.io_threads;
  o.max_piece_bytes = cfg.max_piece_bytes;
  o.min_piece_bytes = cfg.min_piece_bytes;
  o.connect_timeout = cfg.connect_timeout;
  o.op_timeout = cfg.op_timeout;
  o.liveness_timeout = cfg.liveness_timeout;
  o.crc = cfg.crc;
  o.failover = cfg.failover;
  o.min_reducers = cfg.min_reducers;
  o.retention_bytes = cfg.retention_bytes;
  o.log = [](client::LogLevel level, const std::string& message) {
    if (level >= client::LogLevel::kWarn) {
      RS_PLOG_WARN("%s", message.c_str());
    } else if (level == client::LogLevel::kInfo) {
      RS_PLOG_INFO("%s", message.c_str());
    }
  };
  auto client = client::Client::Create(std::move(o));
  if (!client.ok()) return client.status().Prefixed("CollNet connect (node " + std::to_string(rank) + ")");
  RS_PLOG_INFO("CollNet connected: node %d of %d, session %s, %zu reducer(s)", rank, nranks,
               protocol::SessionIdToString(SessionIdFromHandles(handles, nranks)).c_str(), cfg.reducers.size());
  *coll_comm = OpaqueObject::ToOpaque(new CollComm(std::move(client).value()));
  return Status::Ok();
}

Status CollNet::RegMr(void* coll_comm, void* data, size_t size, void** mhandle) {
  if (OpaqueObject::As<CollComm>(coll_comm) == nullptr || mhandle == nullptr) {
    return Status(Code::kInternal, "CollNet regMr without a CollNet comm");
  }
  // Host memory needs no registration; overlapping ranges are fine.
  static char host_registration;
  *mhandle = &host_registration;
  return Status::Ok();
}

Status CollNet::DeregMr(void* coll_comm, void* mhandle) {
  if (OpaqueObject::As<CollComm>(coll_comm) == nullptr) {
    return Status(Code::kInternal, "CollNet deregMr without a CollNet comm");
  }
  return Status::Ok();
}

Status CollNet::IAllReduce(void* coll_comm, void* send, void* recv, size_t count, DataType type, ReduceOp op,
                           void** request) {
  auto* comm = OpaqueObject::As<CollComm>(coll_comm);
  if (comm == nullptr) return Status(Code::kInternal, "CollNet iallreduce without a CollNet comm");
  return comm->IAllReduce(send, recv, count, type, op, request);
}

Status CollNet::IFlush(void* coll_comm, void* data, size_t size, void** request) {
  if (OpaqueObject::As<CollComm>(coll_comm) == nullptr || request == nullptr) {
    return Status(Code::kInternal, "CollNet iflush without a CollNet comm");
  }
  *request = nullptr;  // host memory: nothing to flush
  return Status::Ok();
}

Status CollNet::Test(void* request, bool* done, size_t* size) { return CollComm::Test(request, done, size); }

Status CollNet::CloseColl(void* coll_comm) {
  auto* comm = OpaqueObject::As<CollComm>(coll_comm);
  if (comm == nullptr) return Status(Code::kInternal, "CollNet closeColl without a CollNet comm");
  delete comm;  // says goodbye to the reducers and joins the client's threads
  return Status::Ok();
}

Status CollNet::CloseListen(void* listen_comm) {
  auto* listen = OpaqueObject::As<CollListenComm>(listen_comm);
  if (listen == nullptr) return Status(Code::kInternal, "CollNet closeListen without a CollNet listen comm");
  delete listen;
  return Status::Ok();
}

}  // namespace rs::plugin
