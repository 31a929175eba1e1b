// Status and StatusOr: the error values every fallible call in the reducer,
// the client library and the plugin core returns. A Status carries a code that
// callers can branch on and a message written for the person reading the log.
// Value types; thread-compatible.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rs {

enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,   // the caller passed something unusable
  kProtocol = 2,          // a peer sent a malformed or unexpected frame
  kVersion = 3,           // protocol versions do not match
  kAuth = 4,              // job authentication failed
  kMismatch = 5,          // ranks disagree on dtype, op, count, sequence...
  kTimeout = 6,           // an operation did not complete in time
  kPeerFailed = 7,        // another rank or a reducer failed or disconnected
  kIo = 8,                // a socket or system call failed
  kResourceExhausted = 9, // a limit was reached
  kCancelled = 10,        // shut down while waiting
  kInternal = 11,         // a bug: "can't happen"
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "mismatch: rank 3 sent bfloat16 ..." style, for logs.
  std::string ToString() const;

  // Adds context in front of the message, keeping the code.
  Status Prefixed(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr needs an error status or a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

#define RS_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::rs::Status rs_status_ = (expr);   \
    if (!rs_status_.ok()) return rs_status_; \
  } while (0)

}  // namespace rs
