#include "client/path_sampler.h"

#include "common/host_tuning.h"

namespace rs::client {

PathSampler::PathSampler(std::string peer, std::optional<size_t> send_window_bytes, size_t piece_bytes,
                         std::chrono::milliseconds rto_min)
    : peer_(std::move(peer)), rto_min_(rto_min), window_(send_window_bytes, piece_bytes) {
  window_now_ = window_.bytes();
}

std::vector<PathSampler::LogLine> PathSampler::Connected(int fd) {
  std::vector<LogLine> lines;
  waits_.Reconnected();
  rto_floor_ = RtoFloorFollower(rto_min_);
  if (auto line = RaiseRtoFloorAtConnect(fd, rto_floor_)) lines.push_back({LogLevel::kInfo, std::move(*line)});
  return lines;
}

std::vector<PathSampler::LogLine> PathSampler::Sample(int fd, Clock::time_point now) {
  if (!window_.WantSample(now)) return {};
  std::optional<TcpPath> path = ReadTcpPath(fd);
  if (!path) return {};
  return OnPath(*path, now, fd);
}

std::vector<PathSampler::LogLine> PathSampler::OnPath(const TcpPath& path, Clock::time_point now, int fd) {
  std::vector<LogLine> lines;
  window_.OnSample({std::chrono::microseconds(path.min_rtt_us), path.delivery_rate_bps}, now);
  window_now_.store(window_.bytes(), std::memory_order_relaxed);
  const std::chrono::microseconds min_rtt(path.min_rtt_us);
  if (std::optional<std::chrono::microseconds> floor = rto_floor_.OnPath(fd, min_rtt)) {
    if (auto line = RtoFloorLineOnce(*floor, min_rtt)) lines.push_back({LogLevel::kInfo, std::move(*line)});
  }
  if (auto warning = IdleRestartWarningOnce(min_rtt, [this] { return peer_; })) {
    lines.push_back({LogLevel::kWarn, std::move(*warning)});
  }
  std::optional<TcpWaitFinding> finding = waits_.OnSample(path, now);
  const TcpWaitTotals& totals = waits_.totals();
  busy_us_.store(totals.busy_us, std::memory_order_relaxed);
  rwnd_limited_us_.store(totals.rwnd_limited_us, std::memory_order_relaxed);
  sndbuf_limited_us_.store(totals.sndbuf_limited_us, std::memory_order_relaxed);
  if (finding) {
    lines.push_back({LogLevel::kWarn, peer_ + ": " + DescribeTcpWait(*finding, "the reducer", SendBufferBytes(fd))});
  }
  return lines;
}

}  // namespace rs::client
