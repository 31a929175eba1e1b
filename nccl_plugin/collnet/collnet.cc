#include "nccl_plugin/collnet/collnet.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "nccl_plugin/log.h"
#include "nccl_plugin/report/report.h"
#include "protocol/auth.h"

namespace rs::plugin {
namespace {

CollHandle ReadHandle(const void* raw) {
  CollHandle h;
  std::memcpy(&h, raw, sizeof(h));
  h.host[sizeof(h.host) - 1] = '\0';
  return h;
}

}  // namespace

CollNet::CollNet(StatusOr<CollNetConfig> config, int link_mbps)
    : config_(std::move(config)), link_mbps_(link_mbps) {}

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
  const std::string streams =
      cfg.client.streams_per_reducer ? std::to_string(*cfg.client.streams_per_reducer) : "auto";
  RS_PLOG_INFO("CollNet: %zu reducer(s) from %s (first %s), %s stream(s) each, job token %s",
               cfg.reducers.size(), cfg.source.c_str(), first.c_str(), streams.c_str(),
               cfg.job_token.empty() ? "not set" : "set");
}

bool CollNet::ReduceSupported(DataType type, ReduceOp op) {
  // The reducer's kernels cover the full cross product (kernels/kernels.h).
  return static_cast<int>(type) < kNumDataTypes && static_cast<int>(op) < kNumReduceOps;
}

StatusOr<std::unique_ptr<CollListenComm>> CollNet::Listen(int dev, void* handle, uint64_t comm_id) const {
  if (dev != 0 || num_devices() == 0) {
    return Status(Code::kInvalidArgument, "CollNet device " + std::to_string(dev) + " does not exist");
  }
  if (handle == nullptr) return Status(Code::kInvalidArgument, "CollNet listen: NULL handle");
  CollHandle h;
  const StatusOr<protocol::Nonce> nonce = protocol::RandomNonce();
  if (!nonce.ok()) return nonce.status().Prefixed("CollNet listen");
  std::memcpy(h.nonce, nonce->data(), sizeof(h.nonce));
  ConfigDigest(*config(), h.config_digest);
  h.link_mbps = static_cast<uint32_t>(link_mbps_ > 0 ? link_mbps_ : 0);
  gethostname(h.host, sizeof(h.host) - 1);
  std::memcpy(handle, &h, sizeof(h));
  return std::make_unique<CollListenComm>(h, comm_id);
}

Status CollNet::CheckHandles(void* const* handles, int nranks, int rank) const {
  if (handles == nullptr || nranks < 1 || rank < 0 || rank >= nranks) {
    return Status(Code::kInvalidArgument, "connect with rank " + std::to_string(rank) + " of " +
                                              std::to_string(nranks));
  }
  // Every node runs the same checks over the same handles, so all fail
  // alike. No check compares a handle with this node's own: the handle at
  // index `rank` is not necessarily ours (NCCL orders handles by head rank).
  const CollHandle first = ReadHandle(handles[0]);
  for (int i = 0; i < nranks; ++i) {
    const CollHandle h = ReadHandle(handles[i]);
    // Nodes are named by their handle's position (NCCL's order, the same
    // everywhere) and host; NCCL's node numbers differ from positions.
    const std::string who = "the node of handle " + std::to_string(i) + " of " + std::to_string(nranks) + " (" +
                            h.host + ")";
    const std::string first_who = "the node of handle 0 (" + std::string(first.host) + ")";
    if (h.magic != CollHandle::kMagic || h.version != CollHandle::kVersion) {
      return Status(Code::kVersion, who + " runs another version of the reducer plugin");
    }
    if (std::memcmp(h.config_digest, first.config_digest, sizeof(h.config_digest)) != 0) {
      return Status(Code::kMismatch, who + " has other reducer settings than " + first_who +
                                         ": REDUCER_ADDRS/CLUSTER_SPEC, REDUCER_STREAMS and the piece sizes "
                                         "must be the same on every node");
    }
    if (h.link_mbps != first.link_mbps) {
      return Status(Code::kMismatch,
                    who + " reports a " + std::to_string(h.link_mbps) + " Mbit/s link, " + first_who + " " +
                        std::to_string(first.link_mbps) +
                        " Mbit/s: the choice between the reducers and NCCL's own algorithms depends on it and "
                        "must be the same on every rank; choose interfaces of one speed (REDUCER_SOCKET_IFNAME) "
                        "on every node");
    }
    for (int j = 0; j < i; ++j) {
      if (std::memcmp(ReadHandle(handles[j]).nonce, h.nonce, sizeof(h.nonce)) == 0) {
        return Status(Code::kInternal, "CollNet connect: handles " + std::to_string(j) + " and " +
                                           std::to_string(i) + " are the same handle");
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<CollComm>> CollNet::Connect(void* const* handles, int nranks, int rank,
                                                     const CollListenComm& listen) const {
  RS_RETURN_IF_ERROR(CheckHandles(handles, nranks, rank));
  const CollNetConfig& cfg = *config();
  const protocol::SessionId session = SessionIdFromHandles(handles, nranks);
  client::ClientOptions o = cfg.client;  // reducers, token and the shared settings
  o.session = session;
  // The node index NCCL passes: distinct on every node, so it serves as the
  // node's rank at the reducers (which sum in that order).
  o.rank = static_cast<uint32_t>(rank);
  o.world = static_cast<uint32_t>(nranks);
  o.log = [](client::LogLevel level, const std::string& message) {
    if (level >= client::LogLevel::kWarn) {
      ReportWarn(message);  // e.g. a reducer refusing connections: on stderr at once, not only in NCCL's log
    } else if (level == client::LogLevel::kInfo) {
      RS_PLOG_INFO("%s", message.c_str());
    }
  };
  auto client = client::Client::Create(std::move(o));
  if (!client.ok()) return client.status().Prefixed("CollNet connect (node " + std::to_string(rank) + ")");
  char comm[32] = "";
  if (listen.comm_id() != 0) std::snprintf(comm, sizeof(comm), ", communicator %016" PRIx64, listen.comm_id());
  const std::string what = "node " + std::to_string(rank) + " of " + std::to_string(nranks) + comm + ", session " +
                           protocol::SessionIdToString(session);
  RS_PLOG_INFO("CollNet connected: %s, %zu reducer(s)", what.c_str(), cfg.reducers.size());
  std::unique_ptr<CollTrace> trace = cfg.trace_dir.empty() ? nullptr : CollTrace::Open(cfg.trace_dir, what);
  return std::make_unique<CollComm>(std::move(client).value(), what, std::move(trace));
}

}  // namespace rs::plugin
