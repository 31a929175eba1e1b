#include "common/status.h"

namespace rs {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kProtocol: return "protocol error";
    case Code::kVersion: return "version mismatch";
    case Code::kAuth: return "authentication failed";
    case Code::kMismatch: return "rank mismatch";
    case Code::kTimeout: return "timeout";
    case Code::kPeerFailed: return "peer failed";
    case Code::kIo: return "I/O error";
    case Code::kResourceExhausted: return "resource exhausted";
    case Code::kCancelled: return "cancelled";
    case Code::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::Prefixed(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

}  // namespace rs
