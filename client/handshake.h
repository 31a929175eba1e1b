// The worker's side of a stream's handshake (HELLO, CHALLENGE, AUTH, WELCOME),
// as a state machine with no I/O, the mirror of the reducer's
// (server/core/handshake.h). The stream sends the frames it returns and
// feeds it the CHALLENGE and WELCOME it reads; READY, which the session
// sends once every rank has joined, is the stream's again. Tests drive it
// directly, and against the reducer's machine with no socket between them.
//
// What it refuses, with kAuth: a reducer that asks for a token this worker
// does not have, and one that asks for none while this worker has one (a
// downgrade: the worker would send gradients to, and trust sums from, a
// reducer any process can join; the probe, which sends no gradients, takes
// it and reports it instead); a WELCOME whose proof does not show the job's
// token. A frame it cannot decode, or one out of order, is kProtocol. Every
// error names the reducer (`peer`). The stream (reducer_stream.h) and the
// probe (reducer_probe.h) both run it.
//
// Threading: not thread-safe; the stream's thread owns it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/wire.h"

namespace rs::client {

class Handshake {
 public:
  enum class State { kStart, kAwaitChallenge, kAwaitWelcome, kDone, kFailed };
  // A reducer that checks no token while this worker has one.
  enum class Unchecked { kRefuse, kReport };

  // `peer` names the reducer in messages ("reducer 10.0.0.2:4000 (stream
  // 1)"); `token` is the job's token, empty for none; `hello` is this
  // stream's HELLO, its client nonce filled in by Start.
  Handshake(std::string peer, std::string token, protocol::Hello hello, Unchecked unchecked = Unchecked::kRefuse);

  // The HELLO to send first, with `nonce` (protocol::RandomNonce()) as its
  // client nonce; when the system could not give one, why.
  StatusOr<std::vector<uint8_t>> Start(StatusOr<protocol::Nonce> nonce);
  // Whether a frame of `type` is the handshake's to take now (CHALLENGE
  // first, then WELCOME). A frame that is not, and is not one the stream
  // takes in any state (ERROR), is out of order.
  bool Expects(protocol::FrameType type) const;
  // The CHALLENGE's payload: the AUTH frame to send next, or why the stream
  // must fail.
  StatusOr<std::vector<uint8_t>> OnChallenge(std::span<const uint8_t> payload);
  // The WELCOME's payload: Ok once the reducer has proved it holds the
  // job's token (when there is one); then max_piece_bytes() is its limit.
  Status OnWelcome(std::span<const uint8_t> payload);

  State state() const { return state_; }
  bool done() const { return state_ == State::kDone; }
  // The largest piece payload the reducer takes (WELCOME); 0 before.
  uint64_t max_piece_bytes() const { return max_piece_bytes_; }
  // Done, and the reducer proved it holds the job's token (false: this
  // worker has none, or Unchecked::kReport let a reducer without one in).
  bool token_checked() const { return done() && !token_.empty() && challenge_.token_required; }
  // The HELLO as sent (with its nonce, after Start).
  const protocol::Hello& hello() const { return hello_; }

 private:
  Status Fail(Status why);
  Status OutOfOrder(protocol::FrameType type);

  const std::string peer_;
  const std::string token_;
  const Unchecked unchecked_;
  protocol::Hello hello_;
  State state_ = State::kStart;
  protocol::Challenge challenge_;
  uint64_t max_piece_bytes_ = 0;
};

}  // namespace rs::client
