#include "client/connector.h"

#include <utility>

namespace rs::client {

Connector::Connector(asio::io_context& io, FramedSocket& framed, Params params, Owner& owner)
    : framed_(framed),
      resolver_(io),
      retry_timer_(io),
      params_(std::move(params)),
      owner_(owner),
      retry_(params_.grace_end, params_.deadline) {}

void Connector::Start() {
  if (!cancelled_) Resolve();
}

void Connector::Cancel() {
  cancelled_ = true;
  retry_timer_.cancel();
  resolver_.cancel();
}

void Connector::Resolve() {
  resolver_.async_resolve(
      params_.endpoint.host, std::to_string(params_.endpoint.port),
      [this, keep = owner_.KeepAlive()](const asio::error_code& ec, asio::ip::tcp::resolver::results_type results) {
        if (cancelled_) return;
        if (ec) {
          Retry(ConnectFailure::kUnresolved, "cannot resolve '" + params_.endpoint.host + "': " + ec.message());
          return;
        }
        ConnectTo({results.begin(), results.end()}, 0, asio::error::host_not_found);
      });
}

// One resolved address after the other, as asio::async_connect would, but
// with the socket opened and tuned before it connects: a connection that
// starts on the host's bbr keeps bbr's pacing after a switch to cubic
// (common/tcp_tuning.h), so the choice must come first.
void Connector::ConnectTo(std::vector<asio::ip::tcp::endpoint> endpoints, size_t next,
                          asio::error_code last_error) {
  if (next >= endpoints.size()) {
    Retry(ClassifyConnectError(last_error), last_error.message());
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
  socket.async_connect(peer, [this, keep = owner_.KeepAlive(), endpoints = std::move(endpoints), next,
                              tcp](const asio::error_code& ec2) mutable {
    if (cancelled_) return;
    if (ec2) {
      ConnectTo(std::move(endpoints), next + 1, ec2);
      return;
    }
    Connected(tcp);
  });
}

void Connector::Connected(const TcpTuningResult& tcp) {
  owner_.OnConnectAttempt(std::nullopt, "");
  asio::error_code ignored;
  framed_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  owner_.OnTcpConnected(tcp);
  if (!params_.tls) {
    owner_.OnConnectEnded(Status(), std::nullopt);
    return;
  }
  framed_.stream().StartTls(params_.tls, [this, keep = owner_.KeepAlive()](const Status& status) {
    if (cancelled_) return;
    owner_.OnConnectEnded(status.ok() ? status : status.Prefixed(params_.name), std::nullopt);
  });
}

void Connector::Retry(ConnectFailure failure, const std::string& why) {
  owner_.OnConnectAttempt(failure, why);
  const std::optional<std::chrono::milliseconds> wait = retry_.After(failure, Clock::now());
  if (!wait) {
    owner_.OnConnectEnded(Status(Code::kIo, "cannot connect to " + params_.name + ": " + why + " (" +
                                                ConnectFailureHint(failure) + ")"),
                          failure);
    return;
  }
  asio::error_code ignored;
  framed_.socket().close(ignored);
  retry_timer_.expires_after(*wait);
  retry_timer_.async_wait([this, keep = owner_.KeepAlive()](const asio::error_code& ec) {
    if (!ec && !cancelled_) Resolve();
  });
}

}  // namespace rs::client
