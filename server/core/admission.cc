#include "server/core/admission.h"

#include <algorithm>

namespace rs::server {

const char* LimitName(Limit limit) {
  switch (limit) {
    case Limit::kMaxConnections: return "max_connections";
    case Limit::kMaxConnectionsPerSource: return "max_connections_per_source";
    case Limit::kMaxHandshakesPerSource: return "max_handshakes_per_source";
    case Limit::kMaxPendingSessions: return "max_pending_sessions";
    case Limit::kMaxPendingSessionsPerSource: return "max_pending_sessions_per_source";
  }
  return "unknown";
}

std::shared_ptr<Admission> Admission::Create(AdmissionLimits limits) {
  return std::shared_ptr<Admission>(new Admission(limits));
}

Admission::Ticket::Ticket(Ticket&& other) noexcept
    : owner_(std::move(other.owner_)), source_(std::move(other.source_)), in_handshake_(other.in_handshake_) {}

Admission::Ticket::~Ticket() {
  if (owner_ == nullptr) return;  // moved from
  if (in_handshake_) owner_->EndHandshake(source_, HandshakeEnd::kAbandoned, Code::kOk);
  owner_->Release(source_);
}

void Admission::Ticket::EndHandshake(HandshakeEnd how, Code code) {
  if (owner_ == nullptr || !in_handshake_) return;
  in_handshake_ = false;
  owner_->EndHandshake(source_, how, code);
}

Status Admission::Refuse(Limit limit, Limit* out, std::string message) {
  refused_[static_cast<size_t>(limit)].fetch_add(1, std::memory_order_relaxed);
  if (out != nullptr) *out = limit;
  return Status(Code::kResourceExhausted, std::move(message));
}

StatusOr<Admission::Ticket> Admission::Admit(const std::string& source, Limit* limit) {
  MutexLock lock(mu_);
  if (connections_ >= limits_.max_connections) {
    return Refuse(Limit::kMaxConnections, limit,
                  "this reducer already has " + std::to_string(connections_) +
                      " connections open (--max-connections)");
  }
  auto it = sources_.try_emplace(source).first;
  Source& s = it->second;
  if (s.connections >= limits_.max_connections_per_source) {
    DropIfIdleLocked(it);
    return Refuse(Limit::kMaxConnectionsPerSource, limit,
                  source + " already has " + std::to_string(s.connections) +
                      " connections open to this reducer (--max-connections-per-source)");
  }
  if (s.handshakes >= limits_.max_handshakes_per_source) {
    DropIfIdleLocked(it);
    return Refuse(Limit::kMaxHandshakesPerSource, limit,
                  source + " already has " + std::to_string(s.handshakes) +
                      " connections in the handshake with this reducer (--max-handshakes-per-source)");
  }
  ++s.connections;
  ++s.handshakes;
  ++connections_;
  ++handshakes_;
  return Ticket(shared_from_this(), source);
}

Status Admission::OpenPendingSession(const std::string& source, Limit* limit) {
  MutexLock lock(mu_);
  if (pending_sessions_ >= limits_.max_pending_sessions) {
    return Refuse(Limit::kMaxPendingSessions, limit,
                  "this reducer already has " + std::to_string(pending_sessions_) +
                      " sessions waiting for their ranks to join (--max-pending-sessions)");
  }
  auto it = sources_.try_emplace(source).first;
  Source& s = it->second;
  if (s.pending_sessions >= limits_.max_pending_sessions_per_source) {
    DropIfIdleLocked(it);
    return Refuse(Limit::kMaxPendingSessionsPerSource, limit,
                  source + " already opened " + std::to_string(s.pending_sessions) +
                      " sessions that wait for their ranks to join (--max-pending-sessions-per-source)");
  }
  ++s.pending_sessions;
  ++pending_sessions_;
  return Status::Ok();
}

void Admission::ClosePendingSession(const std::string& source) {
  MutexLock lock(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end() || it->second.pending_sessions == 0) return;
  --it->second.pending_sessions;
  --pending_sessions_;
  DropIfIdleLocked(it);
}

void Admission::Release(const std::string& source) {
  MutexLock lock(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  --it->second.connections;
  --connections_;
  DropIfIdleLocked(it);
}

void Admission::EndHandshake(const std::string& source, HandshakeEnd how, Code code) {
  switch (how) {
    case HandshakeEnd::kJoined:
      break;
    case HandshakeEnd::kRefused:
      handshakes_refused_[std::min(static_cast<size_t>(code), kErrorKinds - 1)].fetch_add(
          1, std::memory_order_relaxed);
      break;
    case HandshakeEnd::kTimedOut:
      timed_out_.fetch_add(1, std::memory_order_relaxed);
      break;
    case HandshakeEnd::kAbandoned:
      abandoned_.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  MutexLock lock(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  --it->second.handshakes;
  --handshakes_;
}

void Admission::DropIfIdleLocked(std::unordered_map<std::string, Source>::iterator it) {
  const Source& s = it->second;
  if (s.connections == 0 && s.handshakes == 0 && s.pending_sessions == 0) sources_.erase(it);
}

AdmissionSnapshot Admission::Snapshot() const {
  AdmissionSnapshot out;
  {
    MutexLock lock(mu_);
    out.connections = connections_;
    out.handshakes = handshakes_;
    out.pending_sessions = pending_sessions_;
  }
  for (size_t i = 0; i < kLimitKinds; ++i) out.refused[i] = refused_[i].load(std::memory_order_relaxed);
  for (size_t i = 0; i < kErrorKinds; ++i) {
    out.handshakes_refused[i] = handshakes_refused_[i].load(std::memory_order_relaxed);
  }
  out.handshakes_timed_out = timed_out_.load(std::memory_order_relaxed);
  out.handshakes_abandoned = abandoned_.load(std::memory_order_relaxed);
  out.accept_errors = accept_errors_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace rs::server
