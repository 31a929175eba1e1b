// One worker TCP stream on the reducer. It drives the handshake (HELLO,
// CHALLENGE, AUTH, WELCOME: the I/O-free state machine in
// server/core/handshake.h), then reads DATA frames straight into the
// session's piece slots and writes RESULT frames straight from the reduced
// piece: no copy on either path. Once joined it watches the stream's
// liveness with the worker's timeout from HELLO (protocol/liveness.h):
// heartbeats when it has written nothing for a while, and a worker that
// sends nothing at all for the timeout fails the session naming the rank
// (silence while this side stops reading for memory does not count). Its
// bytes go through FramedSocket (common/framed_socket.h), as the worker's do:
// this class keeps the queue of frames and what they mean.
//
// Threading: a Connection lives on one io_context (one thread) for life; all
// of its handlers run there. The SessionMember methods are called by other
// threads and only post to that io_context.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <asio.hpp>

#include "common/framed_socket.h"
#include "common/socket_options.h"
#include "common/tcp_tuning.h"
#include "common/tcp_waits.h"
#include "common/thread_annotations.h"
#include "protocol/liveness.h"
#include "protocol/wire.h"
#include "server/core/admission.h"
#include "server/core/handshake.h"
#include "server/core/session.h"

namespace rs::server {

class ReducerServer;

class Connection final : public SessionMember,
                         public std::enable_shared_from_this<Connection>,
                         private FramedSocket::Owner {
 public:
  // `ticket` is the connection's place in the server's admission counts.
  Connection(ReducerServer& server, asio::ip::tcp::socket socket, Admission::Ticket ticket);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start();

  // SessionMember: thread-safe, post to this connection's thread.
  void SendReady() override;
  void SendResult(const ResultPart& part) override;
  void SendErrorAndClose(const Status& status) override;
  void SendControl(std::vector<uint8_t> frame) override;
  void CloseQuietly() override;

 private:
  enum class State { kHandshake, kJoined, kClosing };
  struct Outgoing {
    std::vector<uint8_t> bytes;               // control frames
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> piece_head{};
    std::shared_ptr<Piece> piece;             // RESULT: piece_head + the part's elements
    const uint8_t* data = nullptr;
    size_t data_bytes = 0;
  };

  // A CRC32C computed over a contribution while it arrives, a chunk at a
  // time right after the kernel copied it in (still in cache): checking it
  // costs about half as much as a pass over the finished piece.
  struct RunningCrc {
    const uint8_t* base = nullptr;
    size_t done = 0;
    uint32_t crc = 0;
    void Advance(size_t transferred);
  };
  // A completion condition: counts progress for liveness and advances `crc`.
  // Keeps the socket's receive low-water mark at what the read still needs,
  // or at a result part when the piece's result goes out in parts. Then
  // (`parts`) it reports the contribution's progress to the session each
  // time a read empties the socket, before it would wait for more.
  struct ReadProgress {
    uint64_t* counter;
    RunningCrc* crc;
    ReceiveLowWater* low_water;
    size_t total;
    Connection* parts = nullptr;
    size_t part_bytes = 0;
    size_t seen = 0;
    size_t asked = 0;  // the most the last read could return
    size_t operator()(const asio::error_code& ec, size_t transferred);
  };

  // Every read goes through Read(), then FramedSocket::Read: once closing,
  // completions drain (FramedSocket::DiscardReads) instead of going on.
  // `parts`: the read is a contribution whose progress the session wants.
  template <typename Handler>
  void Read(asio::mutable_buffer buffer, Handler&& handler, RunningCrc* crc = nullptr, bool parts = false);
  void CloseSocket();
  void ReadHeader();
  void OnHeader(const asio::error_code& ec);
  void ReadPayload(uint32_t bytes);
  void OnPayload();
  // With --tls: the worker's first byte tells TLS from a worker without it
  // (refused, naming REDUCER_TLS); then the TLS handshake, then HELLO.
  void AwaitTls();
  void OnTlsHandshake(const Status& status);
  void HandshakeStep(Handshake::Step step);
  void JoinSession();
  void OnHandshakeTimeout();
  // Counts and logs how the handshake ended (once): refused, timed out or abandoned.
  void EndHandshake(HandshakeEnd how, const Status& why);
  void OnPieceHeader();
  void TryBeginContribution();
  void OnContributionRead(const asio::error_code& ec);
  void OnContributionProgress(size_t bytes);
  void Discard(uint64_t bytes);  // reads and drops a stale piece's payload, then the next frame
  void OnJoinedFrame();
  // TCP's smallest round trip on this stream, to the session; a warning
  // when a buffer held the results back (common/tcp_waits.h).
  void SamplePath();
  // Adds the TCP times since the last sample to the reducer's totals; a
  // finding when a wait held the stream back (common/tcp_waits.h).
  std::optional<TcpWaitFinding> CountTcpTimes(const TcpPath& path);
  // CountTcpTimes for the last interval, when the stream leaves (its finding
  // is dropped: no warning about a connection that is going).
  void SampleTcpTimes();
  // With liveness off there are no ticks: the path is sampled on its own.
  void ArmPathSampling();
  static constexpr std::chrono::seconds kPathSampleInterval{1};
  void StartLiveness();
  void ArmLiveness();
  void OnLivenessTick();
  // A worker that takes none of its results for --op-timeout has stopped
  // reading (frozen with liveness off, or a client that does not read): it
  // fails the session, and this stream closes at once, since the worker
  // would not read the error either. Its results would otherwise hold their
  // piece memory, which every session on this reducer shares, for ever.
  // Checked at every liveness tick or path sample. False once failed.
  bool CheckResultsTaken();
  // With liveness off: fails the session once the worker has sent nothing
  // for --idle-timeout (not while this stream waits for memory). Checked
  // at every path sample. False once failed.
  bool CheckIdle();

  void TakeResults();  // moves results_in_ to the write queue, in order
  void Enqueue(Outgoing out);
  void EnqueueControl(std::vector<uint8_t> frame);
  // FramedSocket::Owner: write_queue_ to the socket.
  bool FramesQueued() const override { return !write_queue_.empty(); }
  size_t GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) override;
  void FramesWritten(const asio::error_code& ec) override;
  void SocketEnded() override { CloseSocket(); }
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  // Sends ERROR (or `last`, when given, instead), then closes.
  void Reject(const Status& status, std::vector<uint8_t> last = {});
  void CloseNow(const Status& why);
  void LeaveSession(Departure how, const Status& why);

  ReducerServer& server_;
  FramedSocket framed_;            // the socket: every read and write, and the close
  bool tls_handshake_ = false;     // the TLS handshake is running
  asio::steady_timer handshake_deadline_;
  asio::steady_timer liveness_timer_;
  const std::string peer_;
  const std::string self_;  // this reducer as the worker reached it, for messages
  Admission::Ticket ticket_;
  State state_ = State::kHandshake;
  Handshake handshake_;

  std::array<uint8_t, protocol::kHeaderBytes> header_buf_{};
  protocol::FrameHeader header_;
  std::vector<uint8_t> payload_;               // control frames and piece headers
  protocol::Hello hello_;                      // once joined

  std::shared_ptr<Session> session_;
  bool left_ = false;
  protocol::PieceHeader piece_header_;
  std::shared_ptr<Piece> piece_;               // the contribution being read
  RunningCrc piece_crc_;                       // over piece_'s bytes, when checked

  // Taken in SendResult under a piece's parts_mu_ (lock order:
  // server/core/session.h), so nothing is called while holding it.
  Mutex results_mu_;
  std::vector<ResultPart> results_in_ RS_GUARDED_BY(results_mu_);  // parts not yet queued, in order
  std::deque<Outgoing> write_queue_;
  size_t in_flight_ = 0;                       // frames of write_queue_ being written
  std::array<uint8_t, 4096> discard_buf_{};    // a stale piece's payload goes here
  ReceiveLowWater low_water_;                  // reset after every read

  protocol::LivenessMonitor liveness_;
  uint64_t received_progress_ = 0;  // read completions, partial ones included
  uint32_t reported_rtt_us_ = 0;    // the round trip last given to the session
  uint64_t taken_progress_ = 0;     // framed_.write_progress() at the last CheckResultsTaken
  Clock::time_point taken_at_{};    // when results last moved, or none were waiting
  uint64_t idle_progress_ = 0;      // received_progress_ at the last CheckIdle
  Clock::time_point idle_at_{};     // when the worker last sent a byte, as CheckIdle saw
  TcpWaitWatch waits_;              // sampled with the round trip
  RtoFloorFollower rto_floor_;      // sampled with the round trip
};

}  // namespace rs::server
