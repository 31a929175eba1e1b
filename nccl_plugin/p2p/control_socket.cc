#include "nccl_plugin/p2p/control_socket.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rs::plugin {

ControlSocket::ControlSocket(Socket sock, std::string what)
    : sock_(std::move(sock)), what_(std::move(what)) {}

void ControlSocket::Queue(const ControlFrame& frame, const void* payload, size_t len, bool* written) {
  Write w{};
  std::memcpy(w.frame.data(), &frame, sizeof(frame));
  w.payload = static_cast<const uint8_t*>(payload);
  w.len = len;
  w.sent = 0;
  w.written = written;
  *written = false;
  writes_.push_back(w);
}

Status ControlSocket::Flush() {
  while (!writes_.empty()) {
    Write& w = writes_.front();
    const size_t frame_bytes = w.frame.size();
    iovec iov[2];
    int n = 0;
    if (w.sent < frame_bytes) {
      iov[n++] = {w.frame.data() + w.sent, frame_bytes - w.sent};
      if (w.len > 0) iov[n++] = {const_cast<uint8_t*>(w.payload), w.len};
    } else {
      size_t off = w.sent - frame_bytes;
      iov[n++] = {const_cast<uint8_t*>(w.payload) + off, w.len - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t sent = ::sendmsg(sock_.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
      if (errno == EPIPE || errno == ECONNRESET) {
        return Status(Code::kPeerFailed, what_ + ": peer closed the connection");
      }
      return Status(Code::kIo, what_ + ": sendmsg: " + std::strerror(errno));
    }
    w.sent += static_cast<size_t>(sent);
    if (w.sent < frame_bytes + w.len) return Status::Ok();  // the kernel buffer is full
    *w.written = true;
    writes_.pop_front();
  }
  return Status::Ok();
}

StatusOr<size_t> ControlSocket::Fill() {
  if (rx_begin_ == rx_end_) rx_begin_ = rx_end_ = 0;
  if (rx_end_ == rx_.size()) {
    // Keep the partial frame, make room behind it.
    std::memmove(rx_.data(), rx_.data() + rx_begin_, rx_end_ - rx_begin_);
    rx_end_ -= rx_begin_;
    rx_begin_ = 0;
  }
  StatusOr<size_t> got = RecvSome(sock_.fd(), rx_.data() + rx_end_, rx_.size() - rx_end_, what_);
  if (!got.ok()) return got.status();
  rx_end_ += *got;
  return *got;
}

StatusOr<bool> ControlSocket::ReadFrame(ControlFrame* out) {
  while (rx_end_ - rx_begin_ < sizeof(ControlFrame)) {
    StatusOr<size_t> got = Fill();
    if (!got.ok()) return got.status();
    if (*got == 0) return false;
  }
  std::memcpy(out, rx_.data() + rx_begin_, sizeof(ControlFrame));
  rx_begin_ += sizeof(ControlFrame);
  payload_done_ = 0;
  return true;
}

StatusOr<bool> ControlSocket::ReadPayload(void* dst, size_t len) {
  auto* bytes = static_cast<uint8_t*>(dst);
  // First what was read ahead, then straight from the socket.
  size_t buffered = std::min(rx_end_ - rx_begin_, len - payload_done_);
  if (buffered > 0) {
    std::memcpy(bytes + payload_done_, rx_.data() + rx_begin_, buffered);
    rx_begin_ += buffered;
    payload_done_ += buffered;
  }
  while (payload_done_ < len) {
    StatusOr<size_t> got = RecvSome(sock_.fd(), bytes + payload_done_, len - payload_done_, what_);
    if (!got.ok()) return got.status();
    if (*got == 0) return false;
    payload_done_ += *got;
  }
  return true;
}

}  // namespace rs::plugin

