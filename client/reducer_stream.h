// One TCP stream from a worker to one reducer: connects (its Connector,
// connector.h, retries until the connect deadline, since reducers may start
// after workers), runs the handshake, then writes DATA frames from the operations' sources and reads
// RESULT frames straight into the receive buffers. From WELCOME on it watches
// the stream's liveness (liveness.h): it sends a HEARTBEAT when it has
// written nothing for a while, and reports the reducer lost when nothing at
// all has arrived for the liveness timeout. Heartbeats and other urgent
// control frames go ahead of queued pieces, so a full send window never
// silences the stream.
//
// With failover it also carries the membership protocol (membership.h): it
// passes MEMBERSHIP frames and the reducer's watermark to its owner, moves to
// a new epoch on Reset (dropping the old epoch's unsent pieces, announcing
// the epoch, then sending the restarted ones), and can evict its reducer.
// Failures come in two kinds: a lost connection (the reducer or the path to
// it is gone; failover may survive it) and a failure of the session
// reported by the reducer or a broken protocol (fatal). Its bytes go through
// FramedSocket (common/framed_socket.h), as the reducer's do. What it writes
// next, and in what order, comes from its SendQueue (send_queue.h); where a
// RESULT's elements go, and what is done once they are in, from its
// ResultReader (result_reader.h); the send window follows the path its
// PathSampler (path_sampler.h) measures. This class does the I/O and the
// protocol's states, and says when frames may go.
//
// Threading: a stream lives on one io_context thread; Start, Send, Reset,
// WriteUrgentFrame, Evict, Close and Abort may be called from any thread and
// post there. Owner callbacks are made on the stream's thread.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio.hpp>

#include "client/client.h"
#include "client/connect_retry.h"
#include "client/connector.h"
#include "client/handshake.h"
#include "client/operation.h"
#include "client/path_sampler.h"
#include "client/result_reader.h"
#include "client/send_queue.h"
#include "client/transport_plan.h"
#include "common/data_tls.h"
#include "common/framed_socket.h"
#include "common/socket_options.h"
#include "common/tcp_tuning.h"
#include "common/tcp_waits.h"
#include "protocol/liveness.h"
#include "protocol/membership.h"
#include "protocol/wire.h"

namespace rs::client {

// Which stream a callback comes from: streams to a reducer are replaced when
// it rejoins, and a replaced one's late callbacks must not count.
struct StreamId {
  uint32_t reducer = 0;     // index in the client's reducer list
  uint64_t generation = 0;  // of the reducer's set of streams
};

class StreamOwner {
 public:
  virtual ~StreamOwner() = default;
  virtual void OnStreamReady(StreamId id, uint64_t max_piece_bytes) = 0;
  // The connection is gone: closed, reset, silent past the liveness timeout,
  // unreachable, or the reducer is shutting down.
  virtual void OnStreamLost(StreamId id, const Status& status) = 0;
  // The reducer failed the session, or the stream broke the protocol.
  virtual void OnStreamFailed(StreamId id, const Status& status) = 0;
  virtual void OnStreamClosed() = 0;
  // A connect attempt ended: `failure` says why it failed (`error` is the
  // OS's message), nullopt when it connected. Before any other callback.
  virtual void OnConnectAttempt(StreamId id, std::optional<ConnectFailure> failure, const std::string& error) = 0;
  virtual void OnHeartbeat(StreamId id, const protocol::Heartbeat& heartbeat) = 0;
  virtual void OnMembership(StreamId id, const protocol::MembershipFrame& frame) = 0;
  // A RESULT carried the session's watermark for `epoch`. True when the
  // rank took it (it moved this rank's view, or was already covered by
  // it): the stream then passes on the same value no more (RESULT frames
  // repeat it, and this takes the client's lock). False when it was not
  // this stream's to give (a reducer not live, another epoch).
  virtual bool OnWatermark(StreamId id, uint32_t epoch, uint64_t watermark) = 0;
  // What this rank's heartbeats say now (its epoch and reported watermark).
  virtual protocol::Heartbeat HeartbeatNow() = 0;
  // The operation `seq`, if this rank still has it running. The streams
  // ask once per operation (ResultReader, result_reader.h), not per frame.
  virtual std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) = 0;
  virtual void OperationComplete(uint64_t seq) = 0;
  virtual void Log(LogLevel level, const std::string& message) = 0;
};

struct StreamParams {
  Endpoint endpoint;
  StreamId id;
  protocol::Hello hello;  // session, rank, world, stream, streams, flags
  std::string token;
  std::shared_ptr<const DataTls> tls;  // null: plain TCP
  Clock::time_point connect_deadline;
  // Refused or unroutable connects are retried until then (connect_retry.h).
  Clock::time_point connect_grace_end;
  std::optional<size_t> send_window_bytes;  // ClientOptions::send_window_bytes (nullopt: automatic)
  size_t piece_bytes = 0;                   // the session's piece size, for the automatic window
  std::chrono::milliseconds liveness_timeout{0};  // 0: off
  bool crc = false;  // CRC32C on pieces sent and results received
  // The rank has streams to several reducers (or several to one): write
  // pieces a slice at a time (AutoWriteSlice) so that they take turns on
  // its link instead of each queueing whole batches behind the others.
  bool interleave = false;
  size_t rank_streams = 1;  // the rank's streams to reducers, all told
  std::optional<size_t> write_slice_bytes;  // ClientOptions::write_slice_bytes (nullopt: automatic)
  TcpTuning tcp;                            // ClientOptions::tcp
  // Counts pieces of float32 sums sent as float32 (they did not fit the
  // wire type); outlives the stream.
  std::atomic<uint64_t>* wire_fallbacks = nullptr;
};

class ReducerStream final : public std::enable_shared_from_this<ReducerStream>,
                            private FramedSocket::Owner,
                            private Connector::Owner,
                            private ResultReader::Owner {
 public:
  ReducerStream(asio::io_context& io, StreamParams params, StreamOwner* owner);
  ReducerStream(const ReducerStream&) = delete;
  ReducerStream& operator=(const ReducerStream&) = delete;

  void Start();
  void Send(std::vector<PieceSend> sends);
  // Send for several streams of one I/O thread (`io`) in one handler: it
  // queues every stream's pieces, then starts their writes in the order
  // given, so that the rank's streams take turns on its link from an
  // operation's first write. Posted one stream at a time, the first stream
  // could write its whole share into its socket before the next stream's
  // pieces were posted: at 4 + 4 hosts, 1 MiB in 12 pieces, a rank did so
  // in 50 of 120 operations, which took 48 - 49 ms against 44 - 45 since.
  using StreamSends = std::vector<std::pair<std::shared_ptr<ReducerStream>, std::vector<PieceSend>>>;
  static void SendTogether(asio::io_context& io, StreamSends sends);
  asio::io_context& io() const { return io_; }
  // Moves to `epoch`: drops the unsent pieces of older epochs, writes
  // `announce` (the new epoch, for the reducer), then `sends`.
  void Reset(uint32_t epoch, std::vector<uint8_t> announce, std::vector<PieceSend> sends);
  // A control frame ahead of queued pieces (heartbeat, membership report).
  void WriteUrgentFrame(std::vector<uint8_t> frame);
  // Tells the reducer the ranks go on without it (`evict`), then closes.
  void Evict(std::vector<uint8_t> evict);
  // bye: say goodbye first (clean end of session); otherwise just close.
  void Close(bool bye);
  // Tells the reducer why this rank gives up (so it can pass the root cause
  // on to the other ranks), then closes.
  void Abort(const Status& why);

  const StreamId& id() const { return params_.id; }
  // The send window now (0: no limit); any thread.
  size_t send_window() const { return path_.window_now(); }
  std::string Name() const;  // "reducer 10.0.0.5:7450 (stream 1)"
  // What TCP waited for on this stream's connections, so far; any thread.
  TcpWaitTotals tcp_waits() const { return path_.tcp_waits(); }
  // Writes an operation's own bound cut below the path's slice
  // (transport_plan.h, OperationSlice), so far; any thread.
  uint64_t writes_cut_small() const { return writes_cut_small_.load(std::memory_order_relaxed); }

 private:
  // kHandshake: HELLO sent, until WELCOME (handshake_ says where it is).
  enum class State { kConnecting, kHandshake, kAwaitReady, kReady, kClosed };

  // Connector::Owner: each attempt goes to the owner; once TCP is up the
  // socket is set up for the stream (before TLS, as the options must precede
  // the connection's bytes); once connected, HELLO.
  void OnConnectAttempt(std::optional<ConnectFailure> failure, const std::string& error) override {
    owner_->OnConnectAttempt(params_.id, failure, error);
  }
  void OnTcpConnected(const TcpTuningResult& tcp) override;
  void OnConnectEnded(const Status& status, std::optional<ConnectFailure> gave_up) override;
  void SendHello();  // after the TCP (and TLS) handshake
  // Queues `sends` unless the stream cannot write them (their leases go
  // back); on the I/O thread. Whether they were queued.
  bool QueueSends(std::vector<PieceSend>& sends);
  template <typename Handler>
  void Read(asio::mutable_buffer buffer, Handler&& handler);
  void ReadFrame();
  void OnFrame();
  void OnHandshakeFrame();  // CHALLENGE or WELCOME
  void StartLiveness();
  void ArmLiveness();
  void OnLivenessTick();
  void ReadResult();
  // `part`'s lease (on the operation the result is for, empty if none) is
  // given back once the result is in place.
  void OnResultRead(ResultReader::Part part, const asio::error_code& ec);
  // ResultReader::Owner: the owner's, for this stream.
  std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) override { return owner_->FindOperation(seq); }
  bool OnWatermark(uint32_t epoch, uint64_t watermark) override {
    return owner_->OnWatermark(params_.id, epoch, watermark);
  }
  void OperationComplete(uint64_t seq) override { owner_->OperationComplete(seq); }
  void WriteControl(std::vector<uint8_t> frame);  // in order with the pieces
  void WriteUrgent(std::vector<uint8_t> frame);   // ahead of queued pieces
  // FramedSocket::Owner: the next write of sends_, within the send window
  // and, when the rank interleaves its streams, the write slice.
  bool FramesQueued() const override { return sends_.frames_queued(); }
  size_t GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) override;
  void FramesWritten(const asio::error_code& ec) override;
  void SocketEnded() override { Shutdown(); }
  // FramedSocket::Owner and Connector::Owner.
  std::shared_ptr<void> KeepAlive() override { return shared_from_this(); }
  void SampleWindow();  // the automatic window follows the path (path_sampler.h)
  void Fail(const Status& status);  // fatal for the session
  void Lose(const Status& status);  // the connection is gone
  void Shutdown();
  // Closes after `last` (BYE, ERROR or EVICT), written behind whatever is
  // being written. Bounded: a reducer that stops answering meanwhile (two
  // missed heartbeats) is shut at once, and the writes get CloseWriteLimit()
  // in all. A write stuck on a reducer that reads nothing would otherwise
  // hold the leases of its pieces, and their operations could never be Done.
  // Then FIN, reading and discarding until the reducer closes or
  // FramedSocket::kLinger passes, then Shutdown (FramedSocket).
  void CloseAfter(std::vector<uint8_t> last);
  std::chrono::milliseconds CloseWriteLimit() const;
  // CloseWriteLimit with liveness off: no heartbeats tell a frozen reducer
  // from a slow link, so a generous fixed bound.
  static constexpr std::chrono::milliseconds kCloseWriteLimitWithoutLiveness{10'000};

  asio::io_context& io_;
  FramedSocket framed_;  // the socket: every read and write, and the close
  asio::steady_timer liveness_timer_;
  StreamParams params_;
  StreamOwner* const owner_;
  State state_ = State::kConnecting;
  Connector connector_;  // the connection, in framed_'s socket, until HELLO

  std::array<uint8_t, protocol::kHeaderBytes> header_buf_{};
  protocol::FrameHeader header_;
  std::vector<uint8_t> payload_;
  std::optional<Handshake> handshake_;  // the connection's, from HELLO on
  uint64_t max_piece_bytes_ = 0;
  ResultReader results_;  // what RESULT frames mean, and where their elements go
  SendQueue sends_;  // what is written next, and in what order

  ReceiveLowWater low_water_;  // reset after every read
  PathSampler path_;           // sampled from TCP_INFO as results arrive
  BusyRate busy_rate_;         // for the least slice an operation's bound may cut to
  std::atomic<uint64_t> writes_cut_small_{0};
  protocol::LivenessMonitor liveness_;
  bool heartbeats_missed_ = false;  // at the last liveness tick: Abort and Evict do not wait for the reducer
  // While closing nothing is read: bytes arriving in the socket are the
  // reducer's sign of life.
  ArrivalWatch closing_arrivals_;
  uint64_t received_progress_ = 0;  // read completions, partial ones included
};

}  // namespace rs::client
