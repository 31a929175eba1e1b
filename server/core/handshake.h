// The reducer's side of a worker stream's handshake (HELLO, CHALLENGE, AUTH,
// then WELCOME once the stream has joined its session), as an explicit state
// machine with no I/O. The connection feeds it each frame header and payload
// as they arrive and does what the returned Step says: read so many payload
// bytes, send a frame and read the next header, join the session, or refuse
// the stream with an error. Every frame is checked at its header, before its
// payload is read, so a peer still in the handshake can make the reducer
// buffer at most kMaxPayloadBytes.
//
// Threading: not thread-safe; the connection's thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/wire.h"

namespace rs::server {

struct HandshakeConfig {
  std::string job_token;  // empty: any worker is accepted
  // Most TCP streams a session may need on this reducer (world x streams per
  // rank): a HELLO asking for more could never become ready, and is refused
  // before it costs anything. `limit_name` says which setting sets it.
  uint64_t max_session_streams = std::numeric_limits<uint64_t>::max();
  std::string limit_name = "--max-connections";
};

class Handshake {
 public:
  // Handshake frames (HELLO, AUTH) are small; a larger one is refused
  // before it is read.
  static constexpr uint32_t kMaxPayloadBytes = 1024;

  enum class State { kAwaitHello, kAwaitAuth, kAwaitJoin, kDone, kFailed };

  struct Step {
    enum class Action {
      kReadPayload,  // read `payload_bytes`, then call OnPayload
      kReadHeader,   // send `reply` unless empty, read the next header, call OnHeader
      kJoin,         // authenticated: join hello()'s session, then Joined() or JoinRefused()
      kRefuse,       // send ERROR(`error`), then close
    };
    Action action = Action::kRefuse;
    uint32_t payload_bytes = 0;
    std::vector<uint8_t> reply;
    Status error;
  };

  // `server_nonce` is this stream's fresh challenge (protocol::RandomNonce()).
  Handshake(HandshakeConfig config, const protocol::Nonce& server_nonce);

  // The first step: read a header.
  static Step Start() { return Step{Step::Action::kReadHeader, 0, {}, Status::Ok()}; }

  // `header` holds protocol::kHeaderBytes bytes.
  Step OnHeader(std::span<const uint8_t> header);
  Step OnPayload(std::span<const uint8_t> payload);
  // After kJoin. Joined returns the WELCOME frame to send; the stream now
  // carries the session's frames and the handshake is done.
  std::vector<uint8_t> Joined(uint64_t max_piece_bytes);
  Step JoinRefused(const Status& why);
  // The stream did not finish the handshake within `limit`.
  Step TimedOut(std::chrono::milliseconds limit);

  State state() const { return state_; }
  bool done() const { return state_ == State::kDone; }
  // True once a HELLO was accepted: hello() names the session and rank.
  bool has_hello() const { return has_hello_; }
  const protocol::Hello& hello() const { return hello_; }

 private:
  Step Refuse(Status why);
  Step Read(uint32_t bytes) { return Step{Step::Action::kReadPayload, bytes, {}, Status::Ok()}; }

  const HandshakeConfig config_;
  const protocol::Nonce server_nonce_;
  State state_ = State::kAwaitHello;
  protocol::FrameHeader header_;
  protocol::Hello hello_;
  bool has_hello_ = false;
};

}  // namespace rs::server
