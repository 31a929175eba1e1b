// A handshake-only check of one reducer, for `reducerctl doctor`: connect,
// HELLO, CHALLENGE, AUTH with the job token, WELCOME, READY, then BYE and a
// clean close. The probe is a one-rank session of its own (a random session
// id), so it never touches a job's sessions; the reducer logs it as a session
// that began and ended at once. Unlike a Client it does not retry: a reducer
// that refuses or does not answer within the timeout is reported at once,
// with the address and the cause a user can act on.
//
// Thread-safety: ProbeReducer is reentrant (blocking sockets of its own);
// probes of several reducers may run on several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "client/client.h"
#include "common/status.h"

namespace rs::client {

struct ProbeOptions {
  Endpoint endpoint;
  std::string job_token;  // empty: the worker has none
  bool tls = false;       // REDUCER_TLS: TLS 1.3 first, keyed by job_token
  // For the whole exchange: name lookup excepted, connect to close.
  std::chrono::milliseconds timeout{3'000};
};

struct ProbeResult {
  // The reducer checks job tokens (and accepted this one). False: it
  // accepts any worker, though this one holds a token.
  bool token_checked = false;
  uint64_t max_piece_bytes = 0;  // what the WELCOME announced
  std::chrono::milliseconds elapsed{0};
};

// Errors, each naming the reducer:
//   kIo       the name does not resolve, or the connection is refused
//             ("connection refused: nothing listens there") or fails;
//   kTimeout  no connection or no answer within the timeout;
//   kAuth     the token does not match, or the reducer wants a token and
//             the worker has none, or it cannot prove it holds the token,
//             or TLS is on at one end only (or keyed by another token);
//   kVersion  the reducer speaks another protocol version;
//   anything else the reducer refused the probe with (its ERROR frame).
StatusOr<ProbeResult> ProbeReducer(const ProbeOptions& options);

}  // namespace rs::client
