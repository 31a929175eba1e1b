#include "server/core/session_counters.h"

#include <algorithm>

namespace rs::server {

SessionCounters::SessionCounters(uint32_t world, std::shared_ptr<ReducerStats> reducer)
    : world_(world), reducer_(std::move(reducer)), last_arrivals_(new std::atomic<uint64_t>[world]()) {}

void SessionCounters::OnContributionBytes(const Piece& piece, uint32_t rank) {
  const uint64_t bytes = piece.contribution_bytes(rank);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  reducer_->AddReceived(bytes);
  if (piece.wide_sum()) {
    reducer_->AddWireContribution(bytes, piece.header().count * sizeof(float),
                                  piece.type(rank) == DataType::kFloat32);
  }
}

void SessionCounters::OnResultPartsSent(const Piece& piece, const Piece::Sent& sent) {
  if (sent.bytes == 0) return;
  bytes_sent_.fetch_add(sent.bytes, std::memory_order_relaxed);
  reducer_->AddSent(sent.bytes);
  // A wide sum's part goes in float32 only when a value did not fit the wire type.
  if (piece.wide_sum()) reducer_->AddWireFallbackResults(sent.float32_parts);
}

void SessionCounters::OnPieceCompleted(const Piece& piece, uint32_t last_rank, std::chrono::nanoseconds latency,
                                       std::chrono::nanoseconds wait) {
  // `last_rank` completed the piece: it is the one everybody waited for.
  last_arrivals_[last_rank].fetch_add(1, std::memory_order_relaxed);
  straggler_wait_ns_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(wait.count(), 0)),
                               std::memory_order_relaxed);
  pieces_completed_.fetch_add(1, std::memory_order_relaxed);
  reducer_->PieceCompleted(latency, wait, piece.in_parts());
}

void SessionCounters::OnOperationCompleted() {
  operations_completed_.fetch_add(1, std::memory_order_relaxed);
  reducer_->OperationCompleted();
}

SessionCounts SessionCounters::Snapshot() const {
  SessionCounts out;
  out.operations_completed = operations_completed_.load(std::memory_order_relaxed);
  out.pieces_completed = pieces_completed_.load(std::memory_order_relaxed);
  out.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  out.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  out.straggler_wait_seconds = static_cast<double>(straggler_wait_ns_.load(std::memory_order_relaxed)) * 1e-9;
  out.last_arrivals.resize(world_);
  for (uint32_t r = 0; r < world_; ++r) out.last_arrivals[r] = last_arrivals_[r].load(std::memory_order_relaxed);
  return out;
}

}  // namespace rs::server
