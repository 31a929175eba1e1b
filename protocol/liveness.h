// Liveness of one stream: when to send a heartbeat and when the peer counts
// as gone. A reducer cannot answer a piece before every rank's copy is in,
// so a quiet stream is normal; what is not normal is a stream on which
// nothing at all arrives, because both ends send a HEARTBEAT whenever they
// have written nothing for a fifth of the timeout. A frozen process, a dead
// host or a cut link all look the same from here: no byte for `timeout`.
//
// Pure: the owner counts its own reads and writes (any progress, including
// part of a large frame) and passes them in with the time at every tick, so
// tests drive it with made-up times. Not thread-safe: one per stream, used on
// the stream's I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/socket_options.h"
#include "common/transfer_progress.h"

namespace rs::protocol {

class LivenessMonitor {
 public:
  // timeout 0: liveness is off (Tick never reports anything). Heartbeats go
  // at a fifth of `timeout`; silence is reported after `silence` (by
  // default `timeout`), which a side may lengthen to give the other end's
  // own detection time to act first.
  explicit LivenessMonitor(std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                           std::chrono::milliseconds silence = std::chrono::milliseconds(0));

  bool enabled() const { return timeout_.count() > 0; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::chrono::milliseconds silence() const { return silence_; }
  // How often the owner calls Tick: a tenth of the timeout (at least 10 ms),
  // so silence is reported between `timeout` and `timeout` + one tick.
  std::chrono::milliseconds tick_interval() const;
  // A heartbeat is due after this long without writing anything.
  std::chrono::milliseconds heartbeat_interval() const;

  // Starts watching at `now` with the owner's current counters.
  void Start(Clock::time_point now, uint64_t received, uint64_t sent);

  struct Verdict {
    bool send_heartbeat = false;
    bool silent = false;                 // nothing received for silent_for >= timeout
    std::chrono::milliseconds silent_for{0};
    // Nothing received for two heartbeat intervals (not while paused): the
    // peer is probably gone, though not yet reported. A stream closing now
    // need not wait for it to read a last frame.
    bool heartbeats_missed = false;
  };
  // `received` and `sent` only ever grow; any change since the last tick is
  // progress. After send_heartbeat the next one is due an interval later,
  // whether or not the owner could write it.
  Verdict Tick(Clock::time_point now, uint64_t received, uint64_t sent);

  // While paused (the owner stops reading on purpose, e.g. a reducer out of
  // memory), silence does not count; Resume restarts the clock.
  void Pause();
  void Resume(Clock::time_point now);
  bool paused() const { return paused_; }

 private:
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds silence_;
  bool started_ = false;
  bool paused_ = false;
  uint64_t received_ = 0;
  uint64_t sent_ = 0;
  Clock::time_point last_received_{};
  Clock::time_point last_sent_{};
};

// Moved to common/transfer_progress.h, where the framed-socket layer that
// both ends write through (common/framed_socket.h) uses them too.
using ::rs::CountProgress;
using ::rs::kMaxTransferBytes;

// "5.0 s": how the errors print a duration.
std::string FormatSeconds(std::chrono::milliseconds duration);

}  // namespace rs::protocol
