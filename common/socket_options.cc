#include "common/socket_options.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace rs {
namespace {

Status Set(int fd, int level, int option, int value, const char* name) {
  if (setsockopt(fd, level, option, &value, sizeof(value)) != 0) {
    return Status(Code::kIo, std::string("setsockopt(") + name + "): " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status SetTcpLiveness(int fd, std::chrono::milliseconds timeout, PeerReads peer) {
  RS_RETURN_IF_ERROR(Set(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"));
  if (timeout.count() <= 0) return Status::Ok();
#ifdef __linux__
  const int ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT32_MAX));
  const int seconds = std::max(ms / 1000, 1);
  // Twice the timeout: the kernel backs the heartbeats up, it must not beat
  // them. At T a burst of loss (four lost sends of one segment in a row, about
  // 1 in 800 segments at 10 % loss each way) aborted a healthy connection.
  const int user_timeout = static_cast<int>(std::min<int64_t>(2 * int64_t{ms}, INT32_MAX));
  if (peer == PeerReads::kAlways) {
    RS_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, user_timeout, "TCP_USER_TIMEOUT"));
  }
  // Idle for half the timeout, then 3 probes spread over the other half.
  RS_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_KEEPIDLE, std::max(seconds / 2, 1), "TCP_KEEPIDLE"));
  RS_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_KEEPINTVL, std::max(seconds / 6, 1), "TCP_KEEPINTVL"));
  RS_RETURN_IF_ERROR(Set(fd, IPPROTO_TCP, TCP_KEEPCNT, 3, "TCP_KEEPCNT"));
#endif
  return Status::Ok();
}

void ReceiveLowWater::Expect(size_t remaining) {
  const size_t want = remaining < kMinBytes ? 1 : std::min(remaining, kMaxBytes);
  if (want != current_) Apply(want);
}

void ReceiveLowWater::Reset() {
  if (current_ != 1) Apply(1);
}

bool ArrivalWatch::Changed(int fd) {
  int queued = 0;
  if (fd < 0 || ioctl(fd, FIONREAD, &queued) != 0) return false;
  const bool changed = queued != queued_;
  queued_ = queued;
  return changed;
}

bool ReceiveLowWater::ArrivedSinceLastAsked() {
  if (current_ == 1) return false;  // no mark: every arrival wakes the reader
  return arrivals_.Changed(fd_);
}

void ReceiveLowWater::Apply(size_t bytes) {
  if (fd_ < 0 || failed_) return;
  if (!Set(fd_, SOL_SOCKET, SO_RCVLOWAT, static_cast<int>(bytes), "SO_RCVLOWAT").ok()) {
    failed_ = true;  // not supported here: reads still work, only wake more often
    return;
  }
  current_ = bytes;
}

}  // namespace rs
