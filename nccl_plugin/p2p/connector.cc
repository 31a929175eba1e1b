#include "nccl_plugin/p2p/connector.h"

#include <cstring>
#include <random>

#include "common/tcp_tuning.h"
#include "nccl_plugin/log.h"

namespace rs::plugin {

StatusOr<std::unique_ptr<Connector>> Connector::Create(const P2pHandle& handle, const P2pConfig& config) {
  if (handle.magic != kHandleMagic) {
    return Status(Code::kInvalidArgument, "connect: the handle was not written by this plugin's listen()");
  }
  if (handle.version != kP2pVersion) {
    return Status(Code::kVersion, "connect: peer runs transport version " + std::to_string(handle.version) +
                                      ", this plugin " + std::to_string(kP2pVersion));
  }
  SockAddr peer;
  peer.len = handle.addr_len;
  if (peer.len > sizeof(handle.addr) || peer.len < sizeof(sockaddr_in)) {
    return Status(Code::kInvalidArgument, "connect: handle holds a bad address length");
  }
  std::memcpy(&peer.storage, handle.addr, peer.len);
  if (peer.family() != AF_INET && peer.family() != AF_INET6) {
    return Status(Code::kInvalidArgument, "connect: handle holds an unknown address family");
  }
  return std::unique_ptr<Connector>(new Connector(peer, handle.listen_nonce, config));
}

Connector::Connector(const SockAddr& peer, uint64_t listen_nonce, const P2pConfig& config)
    : peer_(peer), listen_nonce_(listen_nonce), config_(config) {
  std::random_device rd;
  conn_id_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  deadline_ = std::chrono::steady_clock::now() + config_.connect_timeout;
}

StatusOr<std::unique_ptr<SendComm>> Connector::Step() {
  if (std::chrono::steady_clock::now() > deadline_) {
    return Status(Code::kTimeout, "connect to " + peer_.ToString() + ": not established within " +
                                      std::to_string(config_.connect_timeout.count()) +
                                      " ms (REDUCER_CONNECT_TIMEOUT)");
  }
  switch (stage_) {
    case Stage::kOpenSocket:
      RS_RETURN_IF_ERROR(OpenSocket());
      return std::unique_ptr<SendComm>();
    case Stage::kAwaitConnect:
      RS_RETURN_IF_ERROR(AwaitConnect());
      return std::unique_ptr<SendComm>();
    case Stage::kSendHello:
      RS_RETURN_IF_ERROR(SendHello());
      return std::unique_ptr<SendComm>();
    case Stage::kBuildComm:
      return SendComm::Create(std::move(control_), std::move(data_), config_.threads, peer_.ToString(),
                              config_.tcp.rto_min);
  }
  return Status(Code::kInternal, "connect: unknown stage");
}

Status Connector::OpenSocket() {
  bool connected = false;
  bool refused = false;
  StatusOr<Socket> sock = StartConnect(peer_, config_.liveness_timeout, config_.tcp, &connected, &refused);
  if (!sock.ok()) {
    // The listener exists (its handle reached us), so a refusal means a full
    // backlog: try again on the next call, within the deadline.
    if (refused) return Status::Ok();
    return sock.status();
  }
  current_ = std::move(sock).value();
  hello_ = HelloFrame{};
  hello_.magic = kHelloMagic;
  hello_.version = kP2pVersion;
  hello_.socket_index = static_cast<uint16_t>(index_);
  hello_.data_sockets = static_cast<uint16_t>(config_.data_sockets());
  hello_.listen_nonce = listen_nonce_;
  hello_.conn_id = conn_id_;
  hello_sent_ = 0;
  stage_ = connected ? Stage::kSendHello : Stage::kAwaitConnect;
  return Status::Ok();
}

Status Connector::AwaitConnect() {
  bool refused = false;
  StatusOr<bool> done = ConnectFinished(current_, &refused);
  if (!done.ok()) {
    if (!refused) return done.status().Prefixed("connect to " + peer_.ToString());
    current_.Reset();
    stage_ = Stage::kOpenSocket;  // retried until the deadline
    return Status::Ok();
  }
  if (*done) stage_ = Stage::kSendHello;
  return Status::Ok();
}

Status Connector::SendHello() {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&hello_);
  StatusOr<size_t> sent = SendSome(current_.fd(), bytes + hello_sent_, sizeof(hello_) - hello_sent_,
                                   "connect to " + peer_.ToString());
  if (!sent.ok()) return sent.status();
  hello_sent_ += *sent;
  if (hello_sent_ < sizeof(hello_)) return Status::Ok();
  if (index_ == 0) {
    control_ = std::move(current_);
  } else {
    // At once, while TCP's first estimate of the round trip's variation
    // stands (common/tcp_tuning.h); the send lane keeps following the path.
    RtoFloorFollower floor(config_.tcp.rto_min);
    if (auto line = RaiseRtoFloorAtConnect(current_.fd(), floor)) RS_PLOG_INFO("%s", line->c_str());
    data_.push_back(std::move(current_));
  }
  ++index_;
  stage_ = index_ <= static_cast<size_t>(config_.data_sockets()) ? Stage::kOpenSocket : Stage::kBuildComm;
  return Status::Ok();
}

}  // namespace rs::plugin
