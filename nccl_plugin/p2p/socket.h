// Thin RAII and helper layer over BSD sockets for the point-to-point
// transport: an owning descriptor, an address value type, and non-blocking
// primitives that turn errno into Status with the peer named. Every socket is
// created non-blocking and close-on-exec; sends never raise SIGPIPE.
//
// Thread-safety: Socket is a move-only owner (one owner thread at a time);
// the free functions are reentrant.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/tcp_tuning.h"

namespace rs::plugin {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  std::string ToString() const;      // "10.0.0.1:5000", "[fe80::1]:5000"
  std::string HostToString() const;  // "10.0.0.1", "fe80::1"
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Reset(); }
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Reset();

 private:
  int fd_ = -1;
};

// A listening socket bound to `addr` (port 0 picks a free port); *bound gets
// the real address.
StatusOr<Socket> Listen(const SockAddr& addr, SockAddr* bound);

// Starts a non-blocking connect; *connected says whether it finished at once.
// On failure *refused says whether it was ECONNREFUSED (worth a retry).
// `liveness`, `tcp`: SetStreamOptions'.
StatusOr<Socket> StartConnect(const SockAddr& peer, std::chrono::milliseconds liveness, const TcpTuning& tcp,
                              bool* connected, bool* refused);

// For a socket whose connect is in progress: ok(true) once connected,
// ok(false) while pending, an error when it failed (*refused set for
// ECONNREFUSED/ETIMEDOUT, which are worth a retry).
StatusOr<bool> ConnectFinished(const Socket& sock, bool* refused);

// Latency matters for control frames (TCP_NODELAY). A dead peer host or a
// cut link must fail the transfer, not leave NCCL waiting: keepalive probes
// after `liveness` / 2 idle, and TCP_USER_TIMEOUT at twice `liveness` (the
// kernel then also aborts a window shut that long, which here means a peer
// that stopped reading: data goes only to receives the peer has posted).
// `liveness` 0: the system's keepalive only. `tcp`: congestion control and
// the retransmission timeout's floor, as on the reducers' streams (the
// outcome logged once per process).
void SetStreamOptions(const Socket& sock, std::chrono::milliseconds liveness, const TcpTuning& tcp);

// Non-blocking transfers. Return the bytes moved, 0 when the socket would
// block; an orderly close by the peer is kPeerFailed, other failures kIo.
// `what` names the connection in error messages.
StatusOr<size_t> SendSome(int fd, const void* data, size_t len, const std::string& what);
StatusOr<size_t> RecvSome(int fd, void* data, size_t len, const std::string& what);

}  // namespace rs::plugin
