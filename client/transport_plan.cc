#include "client/transport_plan.h"

#include <algorithm>

namespace rs::client {

int AutoStreams(uint32_t /*reducers*/) { return 1; }

size_t AutoPieceBytes(uint32_t reducers) {
  constexpr size_t kRound = 512 << 10;
  constexpr size_t kPage = 4 << 10;
  const size_t per_reducer = kRound / std::max<uint32_t>(reducers, 1) / kPage * kPage;
  return std::clamp<size_t>(per_reducer, 64 << 10, kRound);
}

size_t AutoMinPieceBytes(uint32_t world) {
  constexpr size_t kPage = 4 << 10;
  const size_t per_rank = kReducerShareFloor / std::max<uint32_t>(world, 1) / kPage * kPage;
  return std::clamp<size_t>(per_rank, kPage, kMaxAutoMinPiece);
}

bool AutoTcpPacing(uint32_t world, int streams_per_reducer) {
  return uint64_t{world} * static_cast<uint64_t>(std::max(streams_per_reducer, 1)) >= kPacedFanIn;
}

size_t AutoSendWindow(size_t piece_bytes, uint64_t bandwidth_bytes_per_second, std::chrono::microseconds rtt) {
  const size_t floor = 4 * piece_bytes;
  if (bandwidth_bytes_per_second == 0 || rtt.count() <= 0) return std::min(floor, kMaxAutoWindow);
  const double bdp = static_cast<double>(bandwidth_bytes_per_second) * static_cast<double>(rtt.count()) / 1e6;
  const double want = 2.0 * static_cast<double>(piece_bytes) + 2.0 * bdp;
  const double capped = std::min(want, static_cast<double>(kMaxAutoWindow));
  return std::min(std::max(floor, static_cast<size_t>(capped)), kMaxAutoWindow);
}

namespace {

size_t WriteSliceTimeBytes(uint64_t bandwidth_bytes_per_second) {
  const double bytes = static_cast<double>(bandwidth_bytes_per_second) * 1e-6 *
                       static_cast<double>(kWriteSliceTime.count());
  return static_cast<size_t>(std::min(bytes, 1e12));
}

}  // namespace

size_t AutoWriteSlice(uint64_t bandwidth_bytes_per_second) {
  if (bandwidth_bytes_per_second == 0) return 0;
  return std::max(kMinWriteSlice, WriteSliceTimeBytes(bandwidth_bytes_per_second));
}

size_t MinOperationSlice(uint64_t bandwidth_bytes_per_second) {
  if (bandwidth_bytes_per_second == 0) return 0;
  return std::max(kMinOperationSlice, WriteSliceTimeBytes(bandwidth_bytes_per_second));
}

size_t OperationSlice(uint64_t stream_share_bytes) {
  return static_cast<size_t>(std::max<uint64_t>(kMinOperationSlice, stream_share_bytes / kOperationSlices));
}

void BusyRate::OnWrite(uint64_t unanswered_before, Clock::time_point now) {
  if (busy_ || unanswered_before != 0) return;
  busy_ = true;
  start_ = now;
  bytes_ = 0;
}

void BusyRate::OnAnswered(uint64_t bytes, uint64_t unanswered_after, Clock::time_point now) {
  if (!busy_) return;
  bytes_ += bytes;
  if (unanswered_after != 0) return;
  busy_ = false;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count();
  if (us <= 0) return;
  rates_[periods_++ % kPeriods] = bytes_ * 1'000'000 / static_cast<uint64_t>(us);
  fastest_ = *std::max_element(rates_.begin(), rates_.end());
}

SendWindow::SendWindow(std::optional<size_t> explicit_bytes, size_t piece_bytes)
    : automatic_(!explicit_bytes.has_value()),
      piece_bytes_(piece_bytes),
      bytes_(explicit_bytes.value_or(AutoSendWindow(piece_bytes, 0, {}))) {}

bool SendWindow::WantSample(std::chrono::steady_clock::time_point now) const {
  return !sampled_ || now - last_sample_ >= kSampleInterval;
}

void SendWindow::OnSample(const PathSample& sample, std::chrono::steady_clock::time_point now) {
  if (!sampled_) period_start_ = now;
  sampled_ = true;
  last_sample_ = now;
  if (now - period_start_ >= kBandwidthPeriod) {
    // A new period: what is older than two periods no longer counts.
    bw_previous_ = now - period_start_ >= 2 * kBandwidthPeriod ? 0 : bw_current_;
    bw_current_ = 0;
    period_start_ = now;
  }
  bw_current_ = std::max(bw_current_, sample.delivery_bytes_per_second);
  if (sample.min_rtt.count() > 0) rtt_ = sample.min_rtt;
  const uint64_t bandwidth = std::max(bw_current_, bw_previous_);
  if (sample.delivery_bytes_per_second != 0) {
    recent_[recent_count_++ % kTypicalSamples] = sample.delivery_bytes_per_second;
    std::array<uint64_t, kTypicalSamples> sorted = recent_;
    const size_t n = std::min(recent_count_, kTypicalSamples);
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.begin() + n);
    write_slice_ = AutoWriteSlice(sorted[n / 2]);
  }
  if (automatic_) bytes_ = AutoSendWindow(piece_bytes_, bandwidth, rtt_);
}

}  // namespace rs::client
