#include "client/connect_retry.h"

#include <algorithm>

#include <asio/error.hpp>

namespace rs::client {

ConnectFailure ClassifyConnectError(const std::error_code& ec) {
  if (ec == asio::error::connection_refused) return ConnectFailure::kRefused;
  if (ec == asio::error::host_unreachable || ec == asio::error::network_unreachable) {
    return ConnectFailure::kUnreachable;
  }
  if (ec == asio::error::timed_out) return ConnectFailure::kNoAnswer;
  if (ec == asio::error::host_not_found || ec == asio::error::host_not_found_try_again ||
      ec == asio::error::no_data || ec == asio::error::service_not_found) {
    return ConnectFailure::kUnresolved;
  }
  return ConnectFailure::kOther;
}

const char* ConnectFailureHint(ConnectFailure failure) {
  switch (failure) {
    case ConnectFailure::kRefused: return "nothing listens there";
    case ConnectFailure::kUnreachable: return "no route to it";
    case ConnectFailure::kNoAnswer: return "a host down or not up yet, or a firewall dropping packets";
    case ConnectFailure::kUnresolved: return "the name does not resolve";
    case ConnectFailure::kOther: break;
  }
  return "cannot connect";
}

std::optional<std::chrono::milliseconds> ConnectRetry::After(ConnectFailure failure, Clock::time_point now) {
  if (EndsAfterGrace(failure) && now >= grace_end_) return std::nullopt;
  if (now + backoff_ >= deadline_) return std::nullopt;
  const std::chrono::milliseconds wait = backoff_;
  backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(1000));
  return wait;
}

}  // namespace rs::client
