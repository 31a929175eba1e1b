// Socket options both ends of the data plane set. SetTcpLiveness: kernel-side
// liveness for a connected TCP socket, to back up the application's
// heartbeats with what the kernel can see: keepalive probes tuned to end
// within about the timeout on an idle connection and, where the peer always
// reads, TCP_USER_TIMEOUT (data left unacknowledged for twice the timeout
// aborts the connection, so a dead host or cut link fails pending writes even
// when the application is stuck). Linux only; elsewhere (and for a timeout of
// 0) it only turns keepalive on. ReceiveLowWater: fewer wake-ups for large
// reads.
//
// Threading: SetTcpLiveness is thread-safe; a ReceiveLowWater belongs to the
// one thread that reads its socket.
#pragma once

#include <chrono>
#include <cstddef>

#include "common/status.h"

namespace rs {

// Whether the peer may stop reading this socket on purpose, for longer than
// the liveness timeout. Linux applies TCP_USER_TIMEOUT to a zero window too:
// it aborts a connection whose window stayed shut that long even while the
// peer answers every probe. A worker's stream to a reducer is such a socket
// (a reducer whose piece memory is used up stops reading until a straggler
// catches up, as long as its --op-timeout allows), so it gets no
// TCP_USER_TIMEOUT: the heartbeats alone tell a dead reducer from a busy one.
enum class PeerReads {
  kAlways,     // a zero window that lasts is a dead or stuck peer
  kMayPause,   // a zero window may last as long as the peer likes
};

// `fd` is a connected TCP socket. Errors name the option that failed; callers
// may go on without it (the heartbeats still work).
Status SetTcpLiveness(int fd, std::chrono::milliseconds timeout, PeerReads peer);

// For a reader that is not reading (a mark set, or a stream closing): true
// when the bytes waiting unread in the socket (FIONREAD) changed since the
// last call, the arrivals its liveness check cannot otherwise see.
class ArrivalWatch {
 public:
  bool Changed(int fd);

 private:
  int queued_ = 0;  // at the last call
};

// The receive low-water mark (SO_RCVLOWAT) of one socket, kept at what the
// read in progress still needs: the kernel then wakes the reader once, when a
// piece has arrived whole (or its receive buffer is under pressure), instead
// of at every segment. On loopback and veth the wake-up is paid by the
// sending process, so both ends save. Small reads keep the mark at 1 (a
// frame header must never wait for bytes that will not come). Best effort:
// where the option fails nothing changes but the wake-ups.
class ReceiveLowWater {
 public:
  // Below this a read is not worth a system call.
  static constexpr size_t kMinBytes = 32 << 10;
  // The kernel caps the mark at half its largest receive buffer anyway.
  static constexpr size_t kMaxBytes = 4 << 20;

  ReceiveLowWater() = default;
  explicit ReceiveLowWater(int fd) : fd_(fd) {}

  // The read in progress still needs `remaining` bytes.
  void Expect(size_t remaining);
  // The read is over: back to waking for any byte.
  void Reset();
  // While a mark is set the reader is not woken as bytes trickle in, so its
  // liveness check cannot see them: true when the bytes waiting in the
  // socket changed since the last call (a slow link still counts as alive).
  bool ArrivedSinceLastAsked();

 private:
  void Apply(size_t bytes);
  int fd_ = -1;
  size_t current_ = 1;
  bool failed_ = false;
  ArrivalWatch arrivals_;
};

}  // namespace rs
