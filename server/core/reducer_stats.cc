#include "server/core/reducer_stats.h"

namespace rs::server {

void ReducerStats::PieceCompleted(std::chrono::nanoseconds latency, std::chrono::nanoseconds wait,
                                  bool in_parts) {
  pieces_completed_.fetch_add(1, std::memory_order_relaxed);
  if (in_parts) pieces_in_parts_.fetch_add(1, std::memory_order_relaxed);
  piece_latency_.Observe(latency);
  straggler_wait_.Observe(wait);
}

void ReducerStats::CountError(Code code) {
  const auto index = static_cast<size_t>(code);
  // kOk is not an error; an out-of-range code (a peer's ERROR frame) is
  // counted as internal rather than dropped.
  if (index == 0) return;
  errors_[index < kErrorKinds ? index : static_cast<size_t>(Code::kInternal)].fetch_add(
      1, std::memory_order_relaxed);
}

ReducerStatsSnapshot ReducerStats::Snapshot() const {
  ReducerStatsSnapshot out;
  out.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  out.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  out.pieces_completed = pieces_completed_.load(std::memory_order_relaxed);
  out.pieces_in_parts = pieces_in_parts_.load(std::memory_order_relaxed);
  out.operations_completed = operations_completed_.load(std::memory_order_relaxed);
  out.piece_latency = piece_latency_.Snapshot();
  out.straggler_wait = straggler_wait_.Snapshot();
  for (size_t i = 0; i < kErrorKinds; ++i) out.errors[i] = errors_[i].load(std::memory_order_relaxed);
  out.tcp_send_busy_us = tcp_send_busy_us_.load(std::memory_order_relaxed);
  out.tcp_rwnd_limited_us = tcp_rwnd_limited_us_.load(std::memory_order_relaxed);
  out.tcp_sndbuf_limited_us = tcp_sndbuf_limited_us_.load(std::memory_order_relaxed);
  out.wire_bytes_received = wire_bytes_received_.load(std::memory_order_relaxed);
  out.wire_float32_bytes_received = wire_float32_bytes_received_.load(std::memory_order_relaxed);
  out.wire_fallback_contributions = wire_fallback_contributions_.load(std::memory_order_relaxed);
  out.wire_fallback_results = wire_fallback_results_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace rs::server
