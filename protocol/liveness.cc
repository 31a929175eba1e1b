#include "protocol/liveness.h"

#include <algorithm>
#include <cstdio>

namespace rs::protocol {

LivenessMonitor::LivenessMonitor(std::chrono::milliseconds timeout, std::chrono::milliseconds silence)
    : timeout_(std::max(timeout, std::chrono::milliseconds(0))), silence_(std::max(silence, timeout_)) {}

std::chrono::milliseconds LivenessMonitor::tick_interval() const {
  return std::max(timeout_ / 10, std::chrono::milliseconds(10));
}

std::chrono::milliseconds LivenessMonitor::heartbeat_interval() const {
  return std::max(timeout_ / 5, std::chrono::milliseconds(10));
}

void LivenessMonitor::Start(Clock::time_point now, uint64_t received, uint64_t sent) {
  started_ = true;
  paused_ = false;
  received_ = received;
  sent_ = sent;
  last_received_ = now;
  last_sent_ = now;
}

LivenessMonitor::Verdict LivenessMonitor::Tick(Clock::time_point now, uint64_t received, uint64_t sent) {
  Verdict v;
  if (!enabled() || !started_) return v;
  if (received != received_) {
    received_ = received;
    last_received_ = now;
  }
  if (sent != sent_) {
    sent_ = sent;
    last_sent_ = now;
  }
  if (now - last_sent_ >= heartbeat_interval()) {
    v.send_heartbeat = true;
    last_sent_ = now;
  }
  if (!paused_) {
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_received_);
    v.heartbeats_missed = quiet >= 2 * heartbeat_interval();
    if (quiet >= silence_) {
      v.silent = true;
      v.silent_for = quiet;
    }
  }
  return v;
}

void LivenessMonitor::Pause() { paused_ = true; }

void LivenessMonitor::Resume(Clock::time_point now) {
  if (!paused_) return;
  paused_ = false;
  last_received_ = now;
}

std::string FormatSeconds(std::chrono::milliseconds duration) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(duration.count()) / 1000.0);
  return buf;
}

}  // namespace rs::protocol
