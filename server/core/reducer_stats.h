// Reducer-wide counters of the data plane: bytes, pieces, operations, piece
// latency and straggler wait histograms, and errors by kind. Sessions record
// into one shared ReducerStats; the control plane (gRPC status, Prometheus)
// reads snapshots. Everything is a relaxed atomic so that recording costs the
// I/O threads a few uncontended-in-practice adds per piece, never a lock.
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "server/core/latency_histogram.h"
#include "common/status.h"

namespace rs::server {

inline constexpr size_t kErrorKinds = static_cast<size_t>(Code::kInternal) + 1;

struct ReducerStatsSnapshot {
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t pieces_completed = 0;
  uint64_t pieces_in_parts = 0;  // of pieces_completed: reduced with cut-through (Piece::in_parts)
  uint64_t operations_completed = 0;
  HistogramSnapshot piece_latency;
  HistogramSnapshot straggler_wait;
  std::array<uint64_t, kErrorKinds> errors{};  // indexed by Code; [kOk] stays 0
  // What TCP waited for on the connections to the ranks (TCP_INFO, sampled
  // at the liveness ticks, every second with liveness off, and when a
  // connection leaves): time with results to send, and of that, time
  // waiting for a rank's receive window or for room in the send buffer.
  uint64_t tcp_send_busy_us = 0;
  uint64_t tcp_rwnd_limited_us = 0;
  uint64_t tcp_sndbuf_limited_us = 0;
  // Float32 sums on a 16-bit wire (REDUCER_WIRE_DTYPE): the bytes their
  // contributions took on the wire, the float32 bytes they stand for, and
  // the pieces that went as float32 instead because a value did not fit the
  // wire type (contributions from the ranks, result parts from here).
  uint64_t wire_bytes_received = 0;
  uint64_t wire_float32_bytes_received = 0;
  uint64_t wire_fallback_contributions = 0;
  uint64_t wire_fallback_results = 0;
};

class ReducerStats {
 public:
  ReducerStats() = default;
  ReducerStats(const ReducerStats&) = delete;
  ReducerStats& operator=(const ReducerStats&) = delete;

  void AddReceived(uint64_t bytes) { bytes_received_.fetch_add(bytes, std::memory_order_relaxed); }
  // Result parts went out: `bytes` to all their ranks together.
  void AddSent(uint64_t bytes) { bytes_sent_.fetch_add(bytes, std::memory_order_relaxed); }
  // A piece was reduced and its result sent to every rank, in parts or
  // whole. latency: first contribution begun -> result ready; wait: first
  // contribution complete -> last contribution complete.
  void PieceCompleted(std::chrono::nanoseconds latency, std::chrono::nanoseconds wait, bool in_parts);
  void OperationCompleted() { operations_completed_.fetch_add(1, std::memory_order_relaxed); }
  // A float32 sum's contribution of `wire_bytes` (float32 size: `float32_bytes`)
  // arrived; `fallback` when it came as float32.
  void AddWireContribution(uint64_t wire_bytes, uint64_t float32_bytes, bool fallback) {
    wire_bytes_received_.fetch_add(wire_bytes, std::memory_order_relaxed);
    wire_float32_bytes_received_.fetch_add(float32_bytes, std::memory_order_relaxed);
    if (fallback) wire_fallback_contributions_.fetch_add(1, std::memory_order_relaxed);
  }
  // Float32 sums' result parts went out in float32 (a value did not fit
  // the wire type); their bytes are counted by AddSent.
  void AddWireFallbackResults(uint64_t parts) {
    if (parts != 0) wire_fallback_results_.fetch_add(parts, std::memory_order_relaxed);
  }
  void CountError(Code code);
  // Increments of a connection's TCP busy and wait times since its last sample.
  void AddTcpSendTimes(uint64_t busy_us, uint64_t rwnd_limited_us, uint64_t sndbuf_limited_us) {
    tcp_send_busy_us_.fetch_add(busy_us, std::memory_order_relaxed);
    tcp_rwnd_limited_us_.fetch_add(rwnd_limited_us, std::memory_order_relaxed);
    tcp_sndbuf_limited_us_.fetch_add(sndbuf_limited_us, std::memory_order_relaxed);
  }

  ReducerStatsSnapshot Snapshot() const;

 private:
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> pieces_completed_{0};
  std::atomic<uint64_t> pieces_in_parts_{0};
  std::atomic<uint64_t> operations_completed_{0};
  LatencyHistogram piece_latency_;
  LatencyHistogram straggler_wait_;
  std::array<std::atomic<uint64_t>, kErrorKinds> errors_{};
  std::atomic<uint64_t> tcp_send_busy_us_{0};
  std::atomic<uint64_t> tcp_rwnd_limited_us_{0};
  std::atomic<uint64_t> tcp_sndbuf_limited_us_{0};
  std::atomic<uint64_t> wire_bytes_received_{0};
  std::atomic<uint64_t> wire_float32_bytes_received_{0};
  std::atomic<uint64_t> wire_fallback_contributions_{0};
  std::atomic<uint64_t> wire_fallback_results_{0};
};

}  // namespace rs::server
