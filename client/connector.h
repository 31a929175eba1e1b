// A stream's way to a connected socket: the reducer's name looked up, each
// address it resolves to tried in turn, failed attempts retried as
// ConnectRetry says (connect_retry.h: refused or unroutable until the
// start-up grace ends, the rest until the connect deadline), the socket tuned
// before it connects, then TLS when asked for. It ends once, with the socket
// connected (and TLS's handshake done) or with why not. What the stream says
// on the connection (HELLO and on) is the stream's (reducer_stream.h).
//
// The socket is the FramedSocket's the owner holds: the connection is made
// in place, where the stream will read and write it.
//
// Threading: one thread, the socket's io_context's, calls everything here
// and runs every handler, the owner's callbacks included. Handlers keep the
// owner alive with Owner::KeepAlive, so the owner (which holds this)
// outlives every operation started here.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio.hpp>

#include "client/client.h"
#include "client/connect_retry.h"
#include "common/clock.h"
#include "common/data_tls.h"
#include "common/framed_socket.h"
#include "common/status.h"
#include "common/tcp_tuning.h"

namespace rs::client {

class Connector {
 public:
  class Owner {
   public:
    // An attempt ended: `failure` says why it failed (`error` is the OS's
    // message, or the resolver's), nullopt when it connected. Before any
    // other callback of that attempt.
    virtual void OnConnectAttempt(std::optional<ConnectFailure> failure, const std::string& error) = 0;
    // TCP is up, tuned (`tcp`) and without Nagle; TLS, when on, has not
    // started. The socket's own set-up goes here, before any byte of the
    // connection is sent.
    virtual void OnTcpConnected(const TcpTuningResult& tcp) = 0;
    // The end, once: ok when connected (with TLS, its handshake done).
    // Otherwise kIo when the connection could not be made or was lost during
    // TLS's handshake (`gave_up` says why the last attempt failed when no
    // attempt connected), and another code when TLS refused the peer. The
    // message names the reducer (Params::name).
    virtual void OnConnectEnded(const Status& status, std::optional<ConnectFailure> gave_up) = 0;
    virtual std::shared_ptr<void> KeepAlive() = 0;
  };

  struct Params {
    Endpoint endpoint;
    std::string name;  // in messages: "reducer 10.0.0.5:7450 (stream 1)"
    std::shared_ptr<const DataTls> tls;  // null: plain TCP
    TcpTuning tcp;
    Clock::time_point grace_end;  // refused or unroutable connects are retried until then
    Clock::time_point deadline;   // anything else until then
  };

  Connector(asio::io_context& io, FramedSocket& framed, Params params, Owner& owner);
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  // The first attempt. Once only.
  void Start();
  // No more attempts and no more callbacks: the pending lookup, retry or
  // connect is abandoned (the owner closes the socket).
  void Cancel();

 private:
  void Resolve();
  void ConnectTo(std::vector<asio::ip::tcp::endpoint> endpoints, size_t next, asio::error_code last_error);
  void Connected(const TcpTuningResult& tcp);
  void Retry(ConnectFailure failure, const std::string& why);

  FramedSocket& framed_;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer retry_timer_;
  const Params params_;
  Owner& owner_;
  ConnectRetry retry_;
  bool cancelled_ = false;
};

}  // namespace rs::client
