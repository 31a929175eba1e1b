// ReducerStream's way to a connected stream: name lookup, connect attempts
// (retried within the start-up grace, connect_retry.h), the socket's tuning,
// TLS when asked for, then HELLO. The rest of the stream: reducer_stream.cc.
#include "client/reducer_stream.h"

#include "common/host_tuning.h"
#include "common/socket_options.h"
#include "common/tcp_path.h"
#include "protocol/auth.h"

namespace rs::client {

void ReducerStream::Connect() {
  if (state_ == State::kClosed) return;
  resolver_.async_resolve(
      params_.endpoint.host, std::to_string(params_.endpoint.port),
      [self = shared_from_this()](const asio::error_code& ec, asio::ip::tcp::resolver::results_type results) {
        if (self->state_ == State::kClosed) return;
        if (ec) {
          self->RetryConnect(ConnectFailure::kUnresolved,
                             "cannot resolve '" + self->params_.endpoint.host + "': " + ec.message());
          return;
        }
        self->ConnectTo({results.begin(), results.end()}, 0, asio::error::host_not_found);
      });
}

// One resolved address after the other, as asio::async_connect would, but
// with the socket opened and tuned before it connects: a connection that
// starts on the host's bbr keeps bbr's pacing after a switch to cubic
// (common/tcp_tuning.h), so the choice must come first.
void ReducerStream::ConnectTo(std::vector<asio::ip::tcp::endpoint> endpoints, size_t next,
                              asio::error_code last_error) {
  if (next >= endpoints.size()) {
    RetryConnect(ClassifyConnectError(last_error), last_error.message());
    return;
  }
  const asio::ip::tcp::endpoint peer = endpoints[next];
  asio::error_code ec;
  asio::ip::tcp::socket& socket = framed_.socket();
  socket.close(ec);
  socket.open(peer.protocol(), ec);
  if (ec) {
    ConnectTo(std::move(endpoints), next + 1, ec);
    return;
  }
  const TcpTuningResult tcp = ApplyTcpTuning(socket.native_handle(), params_.tcp);
  socket.async_connect(peer, [self = shared_from_this(), endpoints = std::move(endpoints), next,
                               tcp](const asio::error_code& ec2) mutable {
    if (self->state_ == State::kClosed) return;
    if (ec2) {
      self->ConnectTo(std::move(endpoints), next + 1, ec2);
      return;
    }
    self->Connected(tcp);
  });
}

void ReducerStream::Connected(const TcpTuningResult& tcp) {
  owner_->OnConnectAttempt(params_.id, std::nullopt, "");
  const int fd = framed_.socket().native_handle();
  asio::error_code ignored;
  framed_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  if (auto line = TcpTuningLineOnce(tcp)) owner_->Log(tcp.refused ? LogLevel::kWarn : LogLevel::kInfo, *line);
  // Off with TLS (data_stream.h).
  low_water_ = params_.tls ? ReceiveLowWater() : ReceiveLowWater(fd);
  for (PathSampler::LogLine& line : path_.Connected(fd)) owner_->Log(line.level, line.message);
  // Best effort: the heartbeats work without it.
  (void)SetTcpLiveness(fd, params_.liveness_timeout,
                       PeerReads::kMayPause);  // out of memory, it stops reading
  if (!params_.tls) {
    SendHello();
    return;
  }
  framed_.stream().StartTls(params_.tls, [self = shared_from_this()](const Status& status) {
    if (self->state_ == State::kClosed) return;
    if (status.code() == Code::kIo) return self->Lose(status.Prefixed(self->Name()));
    if (!status.ok()) return self->Fail(status.Prefixed(self->Name()));
    self->SendHello();
  });
}

void ReducerStream::SendHello() {
  handshake_.emplace(Name(), params_.token, params_.hello);
  StatusOr<std::vector<uint8_t>> hello = handshake_->Start(protocol::RandomNonce());
  if (!hello.ok()) return Fail(hello.status());
  state_ = State::kHandshake;
  WriteControl(std::move(*hello));
  ReadFrame();
}

void ReducerStream::RetryConnect(ConnectFailure failure, const std::string& why) {
  owner_->OnConnectAttempt(params_.id, failure, why);
  const std::optional<std::chrono::milliseconds> wait = connect_retry_.After(failure, Clock::now());
  if (!wait) {
    Lose(Status(Code::kIo, "cannot connect to " + Name() + ": " + why + " (" + ConnectFailureHint(failure) + ")"));
    return;
  }
  asio::error_code ignored;
  framed_.socket().close(ignored);
  retry_timer_.expires_after(*wait);
  retry_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec) self->Connect();
  });
}

}  // namespace rs::client
