#include "nccl_plugin/p2p/socket.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/socket_options.h"
#include "nccl_plugin/log.h"

namespace rs::plugin {
namespace {

// What ETIMEDOUT means on a connected stream with SetStreamOptions' settings.
Status TimedOut(const std::string& what) {
  return Status(Code::kPeerFailed, what + ": the peer acknowledged nothing for twice REDUCER_LIVENESS_TIMEOUT, or "
                                          "left keepalive probes unanswered (connection timed out): its host is "
                                          "down, the link to it cut, or it stopped reading");
}

Status Errno(const std::string& what, int err) {
  return Status(Code::kIo, what + ": " + std::strerror(err));
}

}  // namespace

uint16_t SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SockAddr::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::HostToString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host, sizeof(host));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host, sizeof(host));
  } else {
    return "(no address)";
  }
  return host;
}

std::string SockAddr::ToString() const {
  if (family() == AF_INET6) return "[" + HostToString() + "]:" + std::to_string(port());
  return HostToString() + ":" + std::to_string(port());
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = other.Release();
  }
  return *this;
}

int Socket::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

StatusOr<Socket> Listen(const SockAddr& addr, SockAddr* bound) {
  Socket sock(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Errno("socket()", errno);
  if (::bind(sock.fd(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    return Errno("bind(" + addr.ToString() + ")", errno);
  }
  // A deep backlog: all sockets of several comms may arrive before accept runs.
  if (::listen(sock.fd(), 512) != 0) return Errno("listen()", errno);
  bound->len = sizeof(bound->storage);
  if (::getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&bound->storage), &bound->len) != 0) {
    return Errno("getsockname()", errno);
  }
  return sock;
}

StatusOr<Socket> StartConnect(const SockAddr& peer, std::chrono::milliseconds liveness, const TcpTuning& tcp,
                              bool* connected, bool* refused) {
  *refused = false;
  Socket sock(::socket(peer.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Errno("socket()", errno);
  SetStreamOptions(sock, liveness, tcp);
  *connected = false;
  if (::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&peer.storage), peer.len) == 0) {
    *connected = true;
  } else if (errno != EINPROGRESS) {
    *refused = (errno == ECONNREFUSED);
    return Errno("connect(" + peer.ToString() + ")", errno);
  }
  return sock;
}

StatusOr<bool> ConnectFinished(const Socket& sock, bool* refused) {
  *refused = false;
  pollfd pfd{sock.fd(), POLLOUT, 0};
  int n = ::poll(&pfd, 1, 0);
  if (n < 0) return Errno("poll()", errno);
  if (n == 0) return false;
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return Errno("getsockopt()", errno);
  if (err != 0) {
    *refused = (err == ECONNREFUSED || err == ETIMEDOUT);
    return Errno("connect", err);
  }
  return true;
}

void SetStreamOptions(const Socket& sock, std::chrono::milliseconds liveness, const TcpTuning& tcp) {
  int one = 1;
  // Failures only cost performance or failure detection time; not fatal.
  (void)::setsockopt(sock.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const TcpTuningResult tuned = ApplyTcpTuning(sock.fd(), tcp);
  if (auto line = TcpTuningLineOnce(tuned)) {
    if (tuned.refused) {
      RS_PLOG_WARN("%s", line->c_str());
    } else {
      RS_PLOG_INFO("%s", line->c_str());
    }
  }
  (void)SetTcpLiveness(sock.fd(), liveness, PeerReads::kAlways);
}

StatusOr<size_t> SendSome(int fd, const void* data, size_t len, const std::string& what) {
  while (true) {
    ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    if (errno == EPIPE || errno == ECONNRESET) {
      return Status(Code::kPeerFailed, what + ": peer closed the connection (" + std::strerror(errno) + ")");
    }
    if (errno == ETIMEDOUT) return TimedOut(what);
    return Errno(what + ": send", errno);
  }
}

StatusOr<size_t> RecvSome(int fd, void* data, size_t len, const std::string& what) {
  while (true) {
    ssize_t n = ::recv(fd, data, len, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) {
      if (len == 0) return size_t{0};
      return Status(Code::kPeerFailed, what + ": peer closed the connection");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    if (errno == ECONNRESET) {
      return Status(Code::kPeerFailed, what + ": connection reset by peer");
    }
    if (errno == ETIMEDOUT) return TimedOut(what);
    return Errno(what + ": recv", errno);
  }
}

}  // namespace rs::plugin
