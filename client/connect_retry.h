// Whether a stream that could not connect to its reducer tries again, and
// when. What an attempt's error means decides it:
//
// - refused (nothing listens at the address) or unroutable (no route to the
//   host or its network): retried only within the start-up grace
//   (ClientOptions::connect_grace, a third of the connect timeout unless
//   set). Reducers started with the job listen within seconds of their
//   container starting; past the grace the address is wrong or reducerd is
//   not running there, and waiting for the whole connect timeout would only
//   hide it.
// - no answer (SYN unanswered: a host down or not up yet, a firewall that
//   drops), a name that does not resolve (yet: the DNS record of a pod
//   appears when the pod starts), anything else: retried until the connect
//   deadline.
//
// Waits double from 50 ms to 1 s. The first failure of each kind is for the
// owner to report at once (ClientImpl logs it), so that a user sees an
// unreachable reducer named within seconds, not when the job gives up.
//
// No I/O, and time is passed in: tests drive it directly.
// Thread-safety: none; a stream uses its own on its I/O thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <system_error>

#include "common/clock.h"

namespace rs::client {

enum class ConnectFailure {
  kRefused,      // ECONNREFUSED
  kUnreachable,  // EHOSTUNREACH, ENETUNREACH
  kNoAnswer,     // no answer yet, or ETIMEDOUT
  kUnresolved,   // the name did not resolve
  kOther,
};

ConnectFailure ClassifyConnectError(const std::error_code& ec);

// Why the failure matters, for the messages: "nothing listens there".
const char* ConnectFailureHint(ConnectFailure failure);

// A refused or unroutable reducer is given up only after the grace.
inline bool EndsAfterGrace(ConnectFailure failure) {
  return failure == ConnectFailure::kRefused || failure == ConnectFailure::kUnreachable;
}

// How long a connect attempt may go unanswered before the owner says so (it
// goes on until the connect deadline): Linux sends the SYN again after 1 s
// and 3 s, so an answer that has not come by then will not come soon.
inline constexpr std::chrono::milliseconds kNoAnswerWarning{3'000};

class ConnectRetry {
 public:
  ConnectRetry(Clock::time_point grace_end, Clock::time_point deadline)
      : grace_end_(grace_end), deadline_(deadline) {}

  // After an attempt that failed with `failure` at `now`: how long to wait
  // before the next one, or nullopt to give up.
  std::optional<std::chrono::milliseconds> After(ConnectFailure failure, Clock::time_point now);

 private:
  Clock::time_point grace_end_;
  Clock::time_point deadline_;
  std::chrono::milliseconds backoff_{50};
};

}  // namespace rs::client
