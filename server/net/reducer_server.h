// The reducer's data plane: a TCP acceptor, a few I/O threads each with its
// own io_context, the registry of sessions, and a periodic sweep that fails
// sessions whose operations or joins time out. Admission control bounds the
// connections, handshakes and sessions waiting for their ranks (in all and
// per source address), so hostile or broken clients cannot exhaust file
// descriptors or memory; refusals are logged rate-limited.
//
// It also keeps what the control plane reports: reducer-wide counters, the
// live sessions and a short history of ended ones.
//
// Threading: Create() starts the threads; Drain() and Stop() may be called
// from any one thread; the destructor stops and joins everything. Methods
// used by connections (JoinSession, LeaveSession, ...) are thread-safe, and
// so are the observers (stats, Sessions, StopAccepting, accepting), which
// the control plane calls from its own threads: they hold the registry lock
// only to copy pointers, never across I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <asio.hpp>

#include "common/data_tls.h"
#include "common/thread_annotations.h"
#include "server/core/handshake.h"
#include "server/core/memory_budget.h"
#include "server/core/reducer_stats.h"
#include "server/core/refusal_log.h"
#include "server/core/session.h"
#include "server/net/server_config.h"

namespace rs::server {

struct ServerStats {
  AdmissionSnapshot admission;  // limits: refusals, handshakes, pending sessions
  uint64_t connections_accepted = 0;
  uint64_t connections_active = 0;
  uint64_t sessions_started = 0;
  uint64_t sessions_failed = 0;
  size_t sessions_active = 0;
  size_t memory_limit = 0;
  size_t memory_in_use = 0;
  size_t memory_peak = 0;
  uint64_t memory_waits = 0;
  bool accepting = true;
  ReducerStatsSnapshot totals;  // over every session since start
};

// One session as the control plane reports it.
struct SessionSnapshot {
  protocol::SessionId id{};
  SessionStats stats;
  Status failure;        // ok unless the session failed
  bool ended = false;    // every rank has left
  double age_seconds = 0;  // since it opened; for ended ones, how long it lasted
};

class ReducerServer {
 public:
  static StatusOr<std::unique_ptr<ReducerServer>> Create(ServerConfig config);
  ~ReducerServer();
  ReducerServer(const ReducerServer&) = delete;
  ReducerServer& operator=(const ReducerServer&) = delete;

  uint16_t port() const { return port_; }
  const ServerConfig& config() const { return config_; }
  const HandshakeConfig& handshake_config() const { return handshake_config_; }
  // Null unless config().tls.
  const std::shared_ptr<const DataTls>& data_tls() const { return data_tls_; }

  // Stops accepting new connections and sessions; running sessions go on.
  // Idempotent.
  void StopAccepting();
  bool accepting() const { return !stopping_; }
  // StopAccepting(), then waits up to `timeout` for sessions to end, fails
  // the rest with a clear error, then stops. Returns the sessions cut short.
  size_t Drain(std::chrono::milliseconds timeout);
  void Stop();

  ServerStats stats() const;
  // Live sessions, newest first, then the last kSessionHistory ended ones,
  // most recently ended first.
  std::vector<SessionSnapshot> Sessions() const;
  static constexpr size_t kSessionHistory = 16;

  // For connections.
  // The largest piece a session of `world` ranks and `wire` type may send:
  // one piece's every slot (PieceSlots) fits the memory limit. 0: none fits.
  uint64_t MaxPieceBytes(uint32_t world, DataType wire) const;
  // `source` is the stream's address: a session it opens counts against
  // that source's pending sessions until every rank has joined.
  StatusOr<std::shared_ptr<Session>> JoinSession(const protocol::Hello& hello,
                                                 std::shared_ptr<SessionMember> member, const std::string& source);
  void LeaveSession(const std::shared_ptr<Session>& session, uint32_t rank, uint16_t stream, Departure how,
                    const Status& why);
  asio::io_context& NextContext();
  ReducerStats& reducer_stats() { return *reducer_stats_; }
  void ConnectionClosed() { connections_active_.fetch_sub(1, std::memory_order_relaxed); }
  // Logs a refused connection, rate-limited (kind: "protocol", "timeout", ...).
  void LogRefusal(std::string_view kind, std::string line);

 private:
  explicit ReducerServer(ServerConfig config);
  Status Listen();
  void Accept();
  void Admit(asio::ip::tcp::socket socket);
  void ArmSweep();
  void EndPendingLocked(const protocol::SessionId& id) RS_REQUIRES(mu_);
  void LogResultParts(const std::string& id, const Session& session) const;

  ServerConfig config_;
  HandshakeConfig handshake_config_;
  std::shared_ptr<const DataTls> data_tls_;
  const std::shared_ptr<Admission> admission_;
  RefusalLog refusal_log_;
  std::shared_ptr<MemoryBudget> budget_;
  const std::shared_ptr<ReducerStats> reducer_stats_ = std::make_shared<ReducerStats>();
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::unique_ptr<asio::steady_timer> sweep_;
  std::unique_ptr<asio::steady_timer> accept_pause_;  // after accept() ran out of descriptors
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_context_{0};
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};

  mutable Mutex mu_;
  std::condition_variable sessions_changed_;
  std::map<protocol::SessionId, std::shared_ptr<Session>> sessions_ RS_GUARDED_BY(mu_);
  // Sessions not yet joined by every rank -> the source that opened them.
  std::map<protocol::SessionId, std::string> pending_ RS_GUARDED_BY(mu_);
  uint64_t sessions_started_ RS_GUARDED_BY(mu_) = 0;
  uint64_t sessions_failed_ RS_GUARDED_BY(mu_) = 0;
  std::deque<SessionSnapshot> ended_ RS_GUARDED_BY(mu_);  // newest first
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> connections_active_{0};
};

}  // namespace rs::server
