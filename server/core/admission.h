// Admission control: the limits that keep a flood of connections, or
// connections that never finish their handshake, from exhausting the
// reducer's file descriptors and memory. It counts, in all and per source
// address, the open connections, those still in the handshake and the
// sessions still waiting for their ranks, refuses what would exceed a limit
// with a message naming the setting, and keeps the counters the control plane
// exports (refusals by limit, handshakes refused by kind, timed out,
// abandoned).
//
// Per-source limits are what let a legitimate job in while another address
// floods the port; a flood spread over many addresses is held only by the
// totals.
//
// No I/O. Thread-safe: every method may be called from any thread (one
// mutex, held for a few map operations).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "common/thread_annotations.h"
#include "server/core/reducer_stats.h"
#include "server/core/server_defaults.h"

namespace rs::server {

struct AdmissionLimits {
  size_t max_connections = kDefaultMaxConnections;
  size_t max_connections_per_source = kDefaultMaxConnectionsPerSource;
  size_t max_handshakes_per_source = kDefaultMaxHandshakesPerSource;
  size_t max_pending_sessions = kDefaultMaxPendingSessions;
  size_t max_pending_sessions_per_source = kDefaultMaxPendingSessionsPerSource;
};

// Which limit refused something; also the metric's label.
enum class Limit : uint8_t {
  kMaxConnections,
  kMaxConnectionsPerSource,
  kMaxHandshakesPerSource,
  kMaxPendingSessions,
  kMaxPendingSessionsPerSource,
};
inline constexpr size_t kLimitKinds = 5;
const char* LimitName(Limit limit);  // "max_connections", ...

// How a connection's handshake ended.
enum class HandshakeEnd : uint8_t { kJoined, kRefused, kTimedOut, kAbandoned };

struct AdmissionSnapshot {
  uint64_t connections = 0;        // open now
  uint64_t handshakes = 0;         // in the handshake now
  uint64_t pending_sessions = 0;   // opened, not yet joined by every rank
  std::array<uint64_t, kLimitKinds> refused{};          // by Limit
  std::array<uint64_t, kErrorKinds> handshakes_refused{};  // ERROR sent in the handshake, by Code
  uint64_t handshakes_timed_out = 0;
  uint64_t handshakes_abandoned = 0;  // the peer closed or reset mid-handshake
  uint64_t accept_errors = 0;         // accept() failed (e.g. out of file descriptors)
};

class Admission : public std::enable_shared_from_this<Admission> {
 public:
  static std::shared_ptr<Admission> Create(AdmissionLimits limits);
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  const AdmissionLimits& limits() const { return limits_; }

  // One admitted connection: holds its place in the counts until destroyed.
  // Movable; not thread-safe (it belongs to its connection's thread).
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket();
    const std::string& source() const { return source_; }
    // The handshake ended; `code` says why for kRefused. Idempotent: only
    // the first call counts. A ticket destroyed in the handshake counts as
    // abandoned.
    void EndHandshake(HandshakeEnd how, Code code = Code::kOk);

   private:
    friend class Admission;
    Ticket(std::shared_ptr<Admission> owner, std::string source)
        : owner_(std::move(owner)), source_(std::move(source)) {}
    std::shared_ptr<Admission> owner_;
    std::string source_;
    bool in_handshake_ = true;
  };

  // A new connection from `source` (an address, without port). Refused with
  // kResourceExhausted naming the limit; *limit says which.
  StatusOr<Ticket> Admit(const std::string& source, Limit* limit = nullptr);

  // A session opened by a stream from `source` waits for its ranks. Refused
  // like Admit. Every successful call is matched by one ClosePendingSession.
  Status OpenPendingSession(const std::string& source, Limit* limit = nullptr);
  void ClosePendingSession(const std::string& source);

  void CountAcceptError() { accept_errors_.fetch_add(1, std::memory_order_relaxed); }

  AdmissionSnapshot Snapshot() const;

 private:
  struct Source {
    size_t connections = 0;
    size_t handshakes = 0;
    size_t pending_sessions = 0;
  };
  explicit Admission(AdmissionLimits limits) : limits_(limits) {}
  Status Refuse(Limit limit, Limit* out, std::string message);
  void Release(const std::string& source);
  void EndHandshake(const std::string& source, HandshakeEnd how, Code code);
  void DropIfIdleLocked(std::unordered_map<std::string, Source>::iterator it) RS_REQUIRES(mu_);

  const AdmissionLimits limits_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Source> sources_ RS_GUARDED_BY(mu_);  // only sources with something open
  size_t connections_ RS_GUARDED_BY(mu_) = 0;
  size_t handshakes_ RS_GUARDED_BY(mu_) = 0;
  size_t pending_sessions_ RS_GUARDED_BY(mu_) = 0;

  std::array<std::atomic<uint64_t>, kLimitKinds> refused_{};
  std::array<std::atomic<uint64_t>, kErrorKinds> handshakes_refused_{};
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<uint64_t> abandoned_{0};
  std::atomic<uint64_t> accept_errors_{0};
};

}  // namespace rs::server
