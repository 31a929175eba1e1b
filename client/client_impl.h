// The Client behind client.h: the reducers' streams, the operations in
// flight and, with failover, the membership epochs (membership.h), the
// retained copies of contributions (retention.h) and the completion
// watermarks that tell when a copy may go. client_impl.cc holds connecting
// and the data path; client_failover.cc what happens when a reducer is lost
// or comes back.
//
// Threading: Create()/Connect() and the destructor on the owner's thread;
// AllReduce() from one thread at a time; the StreamOwner callbacks on the
// I/O threads. One mutex guards all shared state; streams are only ever
// posted to, so posting under it is fine, and it is released before calling
// Fail(). Lock order: this mutex, then an operation's.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/membership.h"
#include "client/operation.h"
#include "client/reducer_stream.h"
#include "client/retention.h"
#include "common/thread_annotations.h"

namespace rs::client {

class ClientImpl final : public Client, public StreamOwner {
 public:
  explicit ClientImpl(ClientOptions options);
  ~ClientImpl() override;

  Status Connect();

  std::shared_ptr<Operation> AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                                       ReduceOp op) override;
  Status health() const override;
  uint32_t rank() const override { return opts_.rank; }
  uint32_t world() const override { return opts_.world; }
  size_t num_reducers() const override { return opts_.reducers.size(); }
  ClientStats stats() const override;

  // StreamOwner, called on I/O threads.
  void OnStreamReady(StreamId id, uint64_t max_piece_bytes) override;
  void OnStreamLost(StreamId id, const Status& status) override;
  void OnStreamFailed(StreamId id, const Status& status) override;
  void OnStreamClosed() override;
  void OnConnectAttempt(StreamId id, std::optional<ConnectFailure> failure, const std::string& error) override;
  void OnHeartbeat(StreamId id, const protocol::Heartbeat& heartbeat) override;
  void OnMembership(StreamId id, const protocol::MembershipFrame& frame) override;
  bool OnWatermark(StreamId id, uint32_t epoch, uint64_t watermark) override;
  protocol::Heartbeat HeartbeatNow() override;
  std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) override;
  void OperationComplete(uint64_t seq) override;
  void Log(LogLevel level, const std::string& message) override;

 private:
  // One reducer of the list, and the streams to it.
  struct Slot {
    enum class State { kLive, kLost, kRejoining, kReady };
    State state = State::kLive;
    std::vector<std::shared_ptr<ReducerStream>> streams;
    uint64_t generation = 0;  // of `streams`
    size_t ready_streams = 0;
    Clock::time_point next_attempt{};     // kLost: when to try to rejoin
    Clock::time_point attempt_deadline{}; // kRejoining: give up then
  };
  struct OpEntry {
    std::shared_ptr<OperationImpl> op;
    bool issued = false;  // pieces sent (false: waiting for retention memory)
  };
  // The input of an operation this rank may have to give again.
  struct Retained {
    const uint8_t* data = nullptr;
    std::shared_ptr<const void> lease;  // for shadows that send from it (retention.h)
    std::shared_ptr<NarrowedCopy> narrowed;  // `data` kept in the wire type (copy_behind.h)
    uint64_t count = 0;
    DataType dtype = DataType::kFloat32;
    ReduceOp op = ReduceOp::kSum;
    bool done = false;  // completed on this rank
  };
  using Batches = std::map<std::pair<uint32_t, uint32_t>, std::vector<PieceSend>>;  // (reducer, stream)

  void Fail(const Status& status);
  // Messages logged under mu_ wait here until it is released (the user's
  // callback must never run under it): every entry point that may log
  // flushes after unlocking.
  void LogLocked(LogLevel level, std::string message) RS_REQUIRES(mu_);
  void FlushLogs();
  void RunIoLoop(asio::io_context& io);
  void ArmSweep();
  bool Current(StreamId id) const RS_REQUIRES(mu_);  // mu_ held: the callback is from the slot's current streams
  // Connecting (mu_ held): what each reducer not reached yet answered, for
  // the warnings and for the error that names every one of them.
  std::chrono::milliseconds Grace() const;  // ClientOptions::connect_grace, resolved
  std::string UnreachableLocked() const RS_REQUIRES(mu_);  // "10.0.0.5:7450 (Connection refused: ...), ..."; "" if none
  void WarnUnansweredLocked() RS_REQUIRES(mu_);            // reducers with no answer after kNoAnswerWarning

  // Data path (mu_ held).
  void OpenStreamsLocked(uint32_t reducer, Clock::time_point deadline) RS_REQUIRES(mu_);
  std::vector<protocol::PieceSpan> PartitionLocked(uint64_t seq, uint64_t count, DataType dtype) const RS_REQUIRES(mu_);
  void IssueLocked(const std::shared_ptr<OperationImpl>& op, Batches* batches) RS_REQUIRES(mu_);
  void PostLocked(Batches* batches) RS_REQUIRES(mu_);
  uint64_t WatermarkLocked() const RS_REQUIRES(mu_);  // every operation below it completed here, this epoch
  uint64_t ReportedLocked() const RS_REQUIRES(mu_);   // what this rank says it is (frozen during a change)
  std::shared_ptr<OperationImpl> FailedOp(uint64_t seq, const void* send, void* recv, size_t count, DataType dtype,
                                          ReduceOp op, const Status& status);

  // Failover (client_failover.cc, mu_ held). Each returns the status to
  // fail the session with, once mu_ is released.
  Status ApplyLocked(Membership::Actions actions, Clock::time_point now) RS_REQUIRES(mu_);
  void DropReducerLocked(uint32_t reducer, Clock::time_point now) RS_REQUIRES(mu_);
  Status InstallLocked(Clock::time_point now) RS_REQUIRES(mu_);
  void AdvanceGlobalLocked(uint64_t watermark) RS_REQUIRES(mu_);
  void IssuePendingLocked() RS_REQUIRES(mu_);
  void SendWatermarkLocked() RS_REQUIRES(mu_);
  Status SweepLocked(Clock::time_point now) RS_REQUIRES(mu_);
  void LostLocked(uint32_t reducer, const Status& why, Clock::time_point now, Status* fail) RS_REQUIRES(mu_);

  const ClientOptions opts_;
  std::vector<std::string> names_;  // reducers' addresses
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::unique_ptr<asio::steady_timer> sweep_;
  size_t next_context_ RS_GUARDED_BY(mu_) = 0;  // round-robin for new streams
  size_t piece_bytes_ = 0;   // fixed once ready
  int streams_ = 1;          // per reducer: the user's or the automatic one, set by Connect
  size_t piece_request_ = 0; // the user's piece size or the automatic one, set by Connect
  size_t min_piece_ = 0;     // the user's smallest piece or the automatic one, set by Connect
  bool tcp_pacing_ = false;  // the user's or the automatic choice, set by Connect

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool connected_ RS_GUARDED_BY(mu_) = false;  // Connect() succeeded
  // What connecting to each reducer met, during Connect() (guarded by mu_).
  struct Reach {
    bool connected = false;                 // a stream got through to it
    std::optional<ConnectFailure> failure;  // the last failed attempt's, while not connected
    std::string error;                      // the OS's message for it
    std::optional<ConnectFailure> warned;   // logged already (again when the kind changes)
  };
  std::vector<Reach> reach_ RS_GUARDED_BY(mu_);
  Clock::time_point grace_end_{};  // set by Connect before any stream starts
  size_t ready_streams_ RS_GUARDED_BY(mu_) = 0;  // during Connect()
  size_t open_streams_ RS_GUARDED_BY(mu_) = 0;   // created and not yet closed
  uint64_t max_piece_bytes_ RS_GUARDED_BY(mu_) = UINT64_MAX;
  Status health_ RS_GUARDED_BY(mu_);
  std::vector<Slot> slots_ RS_GUARDED_BY(mu_);  // one per reducer
  std::shared_ptr<const DataTls> data_tls_;  // set by Connect when opts_.tls
  uint64_t next_seq_ RS_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, OpEntry> ops_ RS_GUARDED_BY(mu_);  // not completed here (shadows included)
  // Every operation handed to the caller that may still be referenced: the
  // destructor finishes those not done yet, so that no caller waits on an
  // operation of a client that is gone. Expired ones are pruned as it grows.
  std::vector<std::weak_ptr<OperationImpl>> handed_out_ RS_GUARDED_BY(mu_);
  size_t prune_handed_out_at_ RS_GUARDED_BY(mu_) = 64;

  // Failover state, all guarded by mu_.
  std::optional<Membership> membership_ RS_GUARDED_BY(mu_);  // set when failover is on
  RetentionRing retention_;
  std::map<uint64_t, Retained> retained_ RS_GUARDED_BY(mu_);  // by seq, until the global watermark passes it
  std::deque<uint64_t> waiting_ RS_GUARDED_BY(mu_);  // ops waiting for retention memory, in order
  uint64_t global_watermark_ RS_GUARDED_BY(mu_) = 0;  // every operation below it completed on every rank
  ClientStats counters_ RS_GUARDED_BY(mu_);
  std::atomic<uint64_t> wire_fallbacks_{0};  // the streams count into it
  std::vector<std::pair<LogLevel, std::string>> pending_logs_ RS_GUARDED_BY(mu_);
};

}  // namespace rs::client
