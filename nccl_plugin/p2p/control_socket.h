// The control socket of one point-to-point comm: a queue of outgoing control
// frames (each optionally followed by an inline payload that is sent from
// the caller's buffer, not copied) and a reader that assembles incoming
// frames and reads inline payloads straight into receive buffers. Everything
// is non-blocking: each call moves what the kernel accepts now.
//
// Thread-safety: none; the owning comm calls it under its own mutex.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <string>

#include "nccl_plugin/p2p/wire.h"
#include "nccl_plugin/p2p/socket.h"
#include "common/status.h"

namespace rs::plugin {

class ControlSocket {
 public:
  // `what` names the connection in error messages ("send comm to 10.0.0.2:4000").
  ControlSocket(Socket sock, std::string what);
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  const std::string& what() const { return what_; }

  // Queues a frame and `len` payload bytes from `payload`, which must stay
  // valid until *written turns true (set by Flush once all of it is sent).
  void Queue(const ControlFrame& frame, const void* payload, size_t len, bool* written);
  bool HasPendingWrites() const { return !writes_.empty(); }
  Status Flush();

  // ok(true) with *out filled once a whole frame has arrived.
  StatusOr<bool> ReadFrame(ControlFrame* out);
  // Reads the payload that follows the last frame into dst[0..len); ok(true)
  // once all of it is there. Call until true before reading the next frame.
  StatusOr<bool> ReadPayload(void* dst, size_t len);

 private:
  struct Write {
    std::array<uint8_t, sizeof(ControlFrame)> frame;
    const uint8_t* payload;
    size_t len;
    size_t sent;  // of frame + payload
    bool* written;
  };
  // Refills rx_ from the socket; returns bytes added (0: would block).
  StatusOr<size_t> Fill();

  Socket sock_;
  std::string what_;
  std::deque<Write> writes_;
  // Bytes read ahead of the current frame/payload: one recv often carries
  // several small frames, so reading in bulk saves system calls.
  std::array<uint8_t, 4096> rx_{};
  size_t rx_begin_ = 0;
  size_t rx_end_ = 0;
  size_t payload_done_ = 0;
};

}  // namespace rs::plugin
