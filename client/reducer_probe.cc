#include "client/reducer_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "client/handshake.h"
#include "common/data_tls.h"
#include "protocol/auth.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::FrameType;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// The probe's connection: its socket, and its TLS session when TLS is on.
struct Conn {
  int fd = -1;
  std::shared_ptr<const DataTls> tls;  // outlives ssl, whose callbacks use it
  SSL* ssl = nullptr;
};

// What a probe step runs against: the reducer's name for messages, the
// deadline of the whole exchange and the timeout it came from.
struct Exchange {
  std::string name;
  Clock::time_point deadline;
  std::chrono::milliseconds timeout;

  int RemainingMs() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
  }
  Status TimedOut(const std::string& what) const {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.3g s", static_cast<double>(timeout.count()) / 1000.0);
    return Status(Code::kTimeout, "reducer " + name + ": " + what + " within " + seconds);
  }
  Status Error(Code code, const std::string& what) const { return Status(code, "reducer " + name + ": " + what); }
};

// Waits for `events` on the socket until the deadline. False: timed out.
bool Wait(int fd, short events, const Exchange& x) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, x.RemainingMs());
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the call that follows report it
  }
}

std::string ConnectError(int err) {
  if (err == ECONNREFUSED) return "connection refused (nothing listens on that port)";
  if (err == EHOSTUNREACH || err == ENETUNREACH) return std::string(std::strerror(err)) + " (no route to it)";
  return std::strerror(err);
}

StatusOr<Socket> Connect(const Endpoint& endpoint, const Exchange& x) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint.port);
  const int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return x.Error(Code::kIo, std::string("cannot resolve the name: ") + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
  std::string last_error = "no address";
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (s.fd() < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = ConnectError(errno);
      continue;
    }
    if (!Wait(s.fd(), POLLOUT, x)) return x.TimedOut("no connection (a firewall, or a host that is down)");
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0) return s;
    last_error = ConnectError(err);
  }
  return x.Error(Code::kIo, last_error);
}

// One TLS call's outcome: >0 bytes, 0 to wait for `*events`, <0 failed (`*error` says why).
ssize_t TlsIo(SSL* ssl, int rc, size_t n, short* events, std::string* error) {
  if (rc == 1) return static_cast<ssize_t>(n);
  const int saved_errno = errno;
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
      *events = POLLIN;
      return 0;
    case SSL_ERROR_WANT_WRITE:
      *events = POLLOUT;
      return 0;
    case SSL_ERROR_ZERO_RETURN:
      *error = "";
      return -1;
    default: {
      const unsigned long e = ERR_get_error();
      ERR_clear_error();
      *error = e != 0 ? DataTls::DescribeFailure(e, DataTls::Role::kWorker)
                      : (saved_errno != 0 ? std::strerror(saved_errno) : "");
      return -1;
    }
  }
}

Status WriteAll(const Conn& c, const std::vector<uint8_t>& bytes, const Exchange& x) {
  size_t done = 0;
  while (done < bytes.size()) {
    short events = POLLOUT;
    std::string tls_error;
    ssize_t n = 0;
    if (c.ssl != nullptr) {
      size_t wrote = 0;
      const int rc = [&] {
        const SigpipeGuard quiet;
        return SSL_write_ex(c.ssl, bytes.data() + done, bytes.size() - done, &wrote);
      }();
      n = TlsIo(c.ssl, rc, wrote, &events, &tls_error);
      if (n < 0) return x.Error(Code::kIo, "send failed: " + (tls_error.empty() ? "closed" : tls_error));
    } else {
      n = ::send(c.fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return x.Error(Code::kIo, std::string("send failed: ") + std::strerror(errno));
      }
    }
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (!Wait(c.fd, events, x)) return x.TimedOut("could not send the handshake");
  }
  return Status::Ok();
}

Status ReadExact(const Conn& c, std::span<uint8_t> out, const Exchange& x, const std::string& awaited) {
  size_t done = 0;
  while (done < out.size()) {
    short events = POLLIN;
    ssize_t n = 0;
    if (c.ssl != nullptr) {
      size_t got = 0;
      std::string tls_error;
      const int rc = [&] {
        const SigpipeGuard quiet;
        return SSL_read_ex(c.ssl, out.data() + done, out.size() - done, &got);
      }();
      n = TlsIo(c.ssl, rc, got, &events, &tls_error);
      if (n < 0 && tls_error.empty()) return x.Error(Code::kIo, "closed the connection before its " + awaited);
      if (n < 0) return x.Error(Code::kIo, "receive failed: " + tls_error);
    } else {
      n = ::recv(c.fd, out.data() + done, out.size() - done, 0);
      if (n == 0) return x.Error(Code::kIo, "closed the connection before its " + awaited);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        return x.Error(Code::kIo, std::string("receive failed: ") + std::strerror(errno));
      }
      n = std::max<ssize_t>(n, 0);
    }
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (!Wait(c.fd, events, x)) return x.TimedOut("no " + awaited);
  }
  return Status::Ok();
}

// The TLS handshake (REDUCER_TLS), as a worker's stream makes it.
Status StartTls(Conn* c, const std::string& token, const Exchange& x) {
  auto tls = DataTls::Create(DataTls::Role::kWorker, token);
  if (!tls.ok()) return tls.status().Prefixed("REDUCER_TLS=1");
  c->tls = std::move(tls).value();
  c->ssl = c->tls->NewSession(c->fd);
  if (c->ssl == nullptr) return x.Error(Code::kInternal, "TLS: cannot start a session");
  for (;;) {
    short events = POLLIN;
    std::string tls_error;
    const int rc = [&] {
      const SigpipeGuard quiet;
      return SSL_do_handshake(c->ssl);
    }();
    const ssize_t n = TlsIo(c->ssl, rc, 1, &events, &tls_error);
    if (n > 0) return Status::Ok();
    if (n < 0) {
      return x.Error(tls_error.empty() || tls_error.rfind("TLS", 0) != 0 ? Code::kIo : Code::kAuth,
                     tls_error.empty() ? "closed the connection in the TLS handshake" : tls_error);
    }
    if (!Wait(c->fd, events, x)) return x.TimedOut("no TLS handshake");
  }
}

// The next frame other than a heartbeat; an ERROR frame becomes its status.
Status ReadFrame(const Conn& c, const Exchange& x, const std::string& awaited, FrameType* type,
                 std::vector<uint8_t>* payload) {
  for (;;) {
    std::array<uint8_t, protocol::kHeaderBytes> head{};
    RS_RETURN_IF_ERROR(ReadExact(c, head, x, awaited));
    protocol::FrameHeader header;
    Status st = protocol::DecodeHeader(head, 0, &header, "this reducerctl");
    if (st.code() == Code::kVersion) {
      return x.Error(Code::kVersion, "speaks protocol version " + std::to_string(header.version) +
                                         ", this reducerctl " + std::to_string(protocol::kProtocolVersion) +
                                         ": workers and reducers must come from the same release");
    }
    if (!st.ok()) return st.Prefixed("reducer " + x.name);
    payload->resize(header.payload_bytes);
    RS_RETURN_IF_ERROR(ReadExact(c, *payload, x, awaited));
    if (header.type == FrameType::kHeartbeat) continue;
    if (header.type == FrameType::kError) {
      protocol::ErrorFrame error;
      RS_RETURN_IF_ERROR(protocol::DecodeError(*payload, &error).Prefixed("reducer " + x.name));
      return x.Error(error.code, "refused: " + error.message);
    }
    *type = header.type;
    return Status::Ok();
  }
}

Status Expect(FrameType got, FrameType want, const Exchange& x) {
  if (got == want) return Status::Ok();
  return x.Error(Code::kProtocol, std::string("sent ") + protocol::FrameTypeName(got) + " where " +
                                      protocol::FrameTypeName(want) + " belongs");
}

// BYE, then FIN, then read until the reducer closes too: closing with
// unread input would reset the connection.
void SayGoodbye(const Conn& c, const Exchange& x) {
  if (!WriteAll(c, protocol::EncodeBye(), x).ok()) return;
  ::shutdown(c.fd, SHUT_WR);
  std::array<uint8_t, 256> sink{};
  for (int reads = 0; reads < 64 && Wait(c.fd, POLLIN, x); ++reads) {
    const ssize_t n = ::recv(c.fd, sink.data(), sink.size(), 0);  // TLS records or not: discarded
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
  }
}

// HELLO for a session of one, CHALLENGE, AUTH, WELCOME (the stream's own
// handshake.h, which reports a reducer that checks no token rather than
// refusing it), then READY and goodbye.
StatusOr<ProbeResult> RunHandshake(const Conn& c, const ProbeOptions& options, const Exchange& x) {
  protocol::Hello hello;
  StatusOr<protocol::Nonce> session = protocol::RandomNonce();
  if (!session.ok()) return session.status();
  std::copy_n(session->begin(), hello.session.size(), hello.session.begin());
  hello.rank = 0;
  hello.world = 1;
  Handshake handshake("reducer " + x.name, options.job_token, hello, Handshake::Unchecked::kReport);
  StatusOr<std::vector<uint8_t>> hello_frame = handshake.Start(protocol::RandomNonce());
  if (!hello_frame.ok()) return hello_frame.status();
  RS_RETURN_IF_ERROR(WriteAll(c, *hello_frame, x));

  FrameType type{};
  std::vector<uint8_t> payload;
  RS_RETURN_IF_ERROR(ReadFrame(c, x, "CHALLENGE (an answer to HELLO)", &type, &payload));
  RS_RETURN_IF_ERROR(Expect(type, FrameType::kChallenge, x));
  StatusOr<std::vector<uint8_t>> auth = handshake.OnChallenge(payload);
  if (!auth.ok()) return auth.status();
  RS_RETURN_IF_ERROR(WriteAll(c, *auth, x));

  RS_RETURN_IF_ERROR(ReadFrame(c, x, "WELCOME (an answer to the job token)", &type, &payload));
  RS_RETURN_IF_ERROR(Expect(type, FrameType::kWelcome, x));
  RS_RETURN_IF_ERROR(handshake.OnWelcome(payload));
  ProbeResult result;
  result.max_piece_bytes = handshake.max_piece_bytes();
  result.token_checked = handshake.token_checked();
  RS_RETURN_IF_ERROR(ReadFrame(c, x, "READY (a one-rank session starts at once)", &type, &payload));
  RS_RETURN_IF_ERROR(Expect(type, FrameType::kReady, x));
  SayGoodbye(c, x);
  return result;
}

}  // namespace

StatusOr<ProbeResult> ProbeReducer(const ProbeOptions& options) {
  const Clock::time_point start = Clock::now();
  const Exchange x{options.endpoint.ToString(), start + options.timeout, options.timeout};
  StatusOr<Socket> socket = Connect(options.endpoint, x);
  if (!socket.ok()) return socket.status();
  Conn conn;
  conn.fd = socket->fd();
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(nullptr, SSL_free);
  if (options.tls) {
    Status st = StartTls(&conn, options.job_token, x);
    ssl.reset(conn.ssl);
    if (!st.ok()) return st;
  }
  StatusOr<ProbeResult> result = RunHandshake(conn, options, x);
  if (result.ok()) result->elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace rs::client
