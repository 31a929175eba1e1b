#include "nccl_plugin/p2p/listen_comm.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "nccl_plugin/log.h"

namespace rs::plugin {

StatusOr<std::unique_ptr<ListenComm>> ListenComm::Create(const SockAddr& addr, const P2pConfig& config,
                                                          P2pHandle* handle) {
  SockAddr bound;
  StatusOr<Socket> sock = Listen(addr, &bound);
  if (!sock.ok()) return sock.status().Prefixed("listen on " + addr.ToString());
  // Accepted sockets inherit its congestion control (socket.h, SetStreamOptions).
  (void)ApplyTcpTuning(sock->fd(), config.tcp);
  std::random_device rd;
  const uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::memset(handle, 0, sizeof(*handle));
  handle->magic = kHandleMagic;
  handle->version = kP2pVersion;
  handle->addr_len = static_cast<uint16_t>(bound.len);
  handle->listen_nonce = nonce;
  static_assert(sizeof(handle->addr) >= sizeof(sockaddr_in6));
  std::memcpy(handle->addr, &bound.storage, std::min<size_t>(bound.len, sizeof(handle->addr)));
  return std::unique_ptr<ListenComm>(new ListenComm(std::move(sock).value(), bound, config, nonce));
}

ListenComm::ListenComm(Socket sock, SockAddr bound, const P2pConfig& config, uint64_t nonce)
    : sock_(std::move(sock)), bound_(bound), config_(config), nonce_(nonce) {}

StatusOr<ListenComm*> ListenComm::FromOpaque(void* opaque) {
  return OpaqueObject::Cast<ListenComm>(opaque, "a listen comm");
}

StatusOr<std::unique_ptr<RecvComm>> ListenComm::Accept() {
  std::lock_guard<std::mutex> lock(mu_);
  switch (stage_) {
    case Stage::kAcceptSocket:
      RS_RETURN_IF_ERROR(AcceptSocket());
      if (!pending_.empty()) stage_ = Stage::kReadHellos;
      return std::unique_ptr<RecvComm>();
    case Stage::kReadHellos:
      RS_RETURN_IF_ERROR(ReadHellos());
      stage_ = Stage::kAcceptSocket;
      for (const Group& g : groups_) {
        if (g.arrived == g.sockets.size()) stage_ = Stage::kBuildComm;
      }
      return std::unique_ptr<RecvComm>();
    case Stage::kBuildComm:
      stage_ = Stage::kAcceptSocket;
      return BuildComm();
  }
  return Status(Code::kInternal, "accept: unknown stage");
}

Status ListenComm::AcceptSocket() {
  // Take everything the kernel has queued: a connection's sockets tend to
  // arrive together.
  for (int i = 0; i < kMaxDataSockets + 1; ++i) {
    Pending p;
    p.peer.len = sizeof(p.peer.storage);
    int fd = ::accept4(sock_.fd(), reinterpret_cast<sockaddr*>(&p.peer.storage), &p.peer.len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) break;
      return Status(Code::kIo, "accept on " + bound_.ToString() + ": " + std::strerror(errno));
    }
    p.sock = Socket(fd);
    SetStreamOptions(p.sock, config_.liveness_timeout, config_.tcp);
    p.deadline = std::chrono::steady_clock::now() + config_.connect_timeout;
    pending_.push_back(std::move(p));
  }
  return Status::Ok();
}

Status ListenComm::ReadHellos() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    bool drop = false;
    auto* bytes = reinterpret_cast<uint8_t*>(&p.hello);
    StatusOr<size_t> got = RecvSome(p.sock.fd(), bytes + p.got, sizeof(p.hello) - p.got,
                                    "connection from " + p.peer.ToString());
    if (!got.ok()) {
      RS_PLOG_WARN("dropping incoming connection: %s", got.status().ToString().c_str());
      drop = true;
    } else {
      p.got += *got;
      if (p.got == sizeof(p.hello)) {
        const HelloFrame& h = p.hello;
        if (h.magic != kHelloMagic || h.version != kP2pVersion || h.listen_nonce != nonce_ ||
            h.data_sockets < 1 || h.data_sockets > kMaxDataSockets || h.socket_index > h.data_sockets) {
          RS_PLOG_WARN("dropping connection from %s: not a matching NET/Reducer peer (version %u)",
                       p.peer.ToString().c_str(), static_cast<unsigned>(h.version));
        } else {
          AddToGroup(p);
        }
        drop = true;  // moved into a group, or rejected
      } else if (now > p.deadline) {
        RS_PLOG_WARN("dropping connection from %s: no hello within %lld ms", p.peer.ToString().c_str(),
                     static_cast<long long>(config_.connect_timeout.count()));
        drop = true;
      }
    }
    if (drop) {
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return Status::Ok();
}

void ListenComm::AddToGroup(Pending& p) {
  const HelloFrame& h = p.hello;
  Group* group = nullptr;
  for (Group& g : groups_) {
    if (g.conn_id == h.conn_id) group = &g;
  }
  if (group == nullptr) {
    groups_.push_back(Group{h.conn_id, p.peer, std::vector<Socket>(h.data_sockets + 1u), 0});
    group = &groups_.back();
  }
  if (group->sockets.size() != h.data_sockets + 1u || group->sockets[h.socket_index].valid()) {
    RS_PLOG_WARN("dropping connection from %s: inconsistent socket %u of %u", p.peer.ToString().c_str(),
                 static_cast<unsigned>(h.socket_index), static_cast<unsigned>(h.data_sockets));
    return;
  }
  group->sockets[h.socket_index] = std::move(p.sock);
  ++group->arrived;
}

StatusOr<std::unique_ptr<RecvComm>> ListenComm::BuildComm() {
  for (size_t i = 0; i < groups_.size(); ++i) {
    Group& g = groups_[i];
    if (g.arrived != g.sockets.size()) continue;
    Socket control = std::move(g.sockets[0]);
    std::vector<Socket> data(std::make_move_iterator(g.sockets.begin() + 1),
                             std::make_move_iterator(g.sockets.end()));
    const std::string peer = g.peer.ToString();
    groups_.erase(groups_.begin() + static_cast<std::ptrdiff_t>(i));
    return RecvComm::Create(std::move(control), std::move(data), config_.threads, peer);
  }
  return std::unique_ptr<RecvComm>();
}

}  // namespace rs::plugin
