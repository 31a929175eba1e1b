// ReducerStream against a scripted reducer on 127.0.0.1: what the worker
// writes must stay a sequence of whole frames whatever the stream is asked to
// do while a write is still under way. The scripted reducer does the
// handshake, then stops reading so that a large write stays in flight, and
// reads (and checks) every byte only once the test has acted.
#include "client/reducer_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "protocol/membership.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

using protocol::FrameType;

class RecordingOwner : public StreamOwner {
 public:
  void OnStreamReady(StreamId, uint64_t) override { Set(&ready_); }
  void OnStreamLost(StreamId, const Status& status) override { Record(status); }
  void OnStreamFailed(StreamId, const Status& status) override { Record(status); }
  void OnStreamClosed() override {}
  void OnConnectAttempt(StreamId, std::optional<ConnectFailure>, const std::string&) override {}
  void OnHeartbeat(StreamId, const protocol::Heartbeat&) override {}
  void OnMembership(StreamId, const protocol::MembershipFrame&) override {}
  bool OnWatermark(StreamId, uint32_t, uint64_t) override { return true; }
  protocol::Heartbeat HeartbeatNow() override { return {}; }
  std::shared_ptr<OperationImpl> FindOperation(uint64_t) override { return nullptr; }
  void OperationComplete(uint64_t) override {}
  void Log(LogLevel, const std::string&) override {}

  bool WaitReady() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return ready_ || !failure_.ok(); }) && ready_;
  }
  Status failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }
  Status WaitFailure() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return !failure_.ok(); });
    return failure_;
  }

 private:
  void Set(bool* flag) {
    std::lock_guard<std::mutex> lock(mu_);
    *flag = true;
    cv_.notify_all();
  }
  void Record(const Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.ok()) failure_ = status;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  Status failure_;
};

// Blocking reads with a deadline on the scripted reducer's side, so a stream
// that stops writing fails the test instead of hanging it.
class ScriptedReducer {
 public:
  explicit ScriptedReducer(asio::io_context& io) : acceptor_(io), socket_(io) {
    acceptor_.open(asio::ip::tcp::v4());
    // A small receive buffer (set before listen, so the accepted socket has
    // it): a write of a few MiB cannot complete until the test reads.
    acceptor_.set_option(asio::socket_base::receive_buffer_size(4096));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void Accept() {
    acceptor_.accept(socket_);
    timeval tv{20, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  // Reads one frame; false (with the reason in `why`) if the bytes are not one.
  bool ReadFrame(protocol::FrameHeader* header, std::vector<uint8_t>* payload, std::string* why) {
    std::array<uint8_t, protocol::kHeaderBytes> head{};
    if (!ReadAll(head.data(), head.size(), why)) return false;
    Status st = protocol::DecodeHeader(head, uint64_t{1} << 30, header, "the scripted reducer");
    if (!st.ok()) {
      *why = st.message();
      return false;
    }
    payload->resize(header->payload_bytes);
    return ReadAll(payload->data(), payload->size(), why);
  }
  void Write(const std::vector<uint8_t>& frame) { asio::write(socket_, asio::buffer(frame)); }
  // Accepts the stream and answers its handshake: HELLO, CHALLENGE, AUTH,
  // WELCOME (announcing max_piece_bytes), READY. False, with `why`, if the
  // stream's frames are not those.
  bool Handshake(uint64_t max_piece_bytes, std::string* why) {
    Accept();
    protocol::FrameHeader header;
    std::vector<uint8_t> payload;
    if (!ReadFrame(&header, &payload, why)) return false;
    if (header.type != FrameType::kHello) {
      *why = "expected HELLO";
      return false;
    }
    Write(protocol::EncodeChallenge({}));
    if (!ReadFrame(&header, &payload, why)) return false;
    if (header.type != FrameType::kAuth) {
      *why = "expected AUTH";
      return false;
    }
    protocol::Welcome welcome;
    welcome.max_piece_bytes = max_piece_bytes;
    Write(protocol::EncodeWelcome(welcome));
    Write(protocol::EncodeReady());
    return true;
  }
  void Close() {
    asio::error_code ignored;
    socket_.close(ignored);
  }

 private:
  bool ReadAll(uint8_t* data, size_t bytes, std::string* why) {
    asio::error_code ec;
    asio::read(socket_, asio::buffer(data, bytes), ec);
    if (ec) *why = "read: " + ec.message();
    return !ec;
  }

  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket socket_;
};

constexpr uint64_t kStreamPieceElems = 256 * 1024;  // 1 MiB of float32
constexpr uint32_t kPieces = 8;

// The stream's io_context on its own thread, stopped and joined however the
// test ends.
class IoThread {
 public:
  IoThread() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~IoThread() { Join(); }
  asio::io_context& io() { return io_; }
  void Join() {
    work_.reset();
    if (thread_.joinable()) thread_.join();
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

// Operation `seq` over `send` (float32, in place of a result buffer `recv`)
// cut into `pieces` equal pieces for one reducer, in `epoch`.
std::shared_ptr<OperationImpl> MakeOp(uint64_t seq, std::vector<float>& send, std::vector<float>& recv,
                                      uint32_t pieces, uint32_t epoch) {
  const uint64_t elems = send.size() / pieces;
  std::vector<protocol::PieceSpan> spans;
  for (uint32_t p = 0; p < pieces; ++p) spans.push_back({p, p * elems, elems, 0, 0});
  return std::make_shared<OperationImpl>(seq, send.data(), recv.data(), send.size(), DataType::kFloat32,
                                         ReduceOp::kSum, epoch, spans, 1, Clock::now());
}

// The DATA frames of every piece of `op` in `epoch`, each holding a lease.
std::vector<PieceSend> SendsOf(const std::shared_ptr<OperationImpl>& op, const std::vector<float>& send,
                               uint32_t epoch) {
  std::vector<PieceSend> sends;
  for (const protocol::PieceSpan& span : op->pieces()) {
    protocol::PieceHeader h;
    h.seq = op->seq();
    h.piece = span.index;
    h.pieces = static_cast<uint32_t>(op->pieces().size());
    h.total_count = send.size();
    h.offset = span.offset;
    h.count = span.count;
    h.epoch = epoch;
    PieceSend s;
    s.data = reinterpret_cast<const uint8_t*>(send.data() + h.offset);
    s.bytes = span.count * sizeof(float);
    s.epoch = epoch;
    protocol::EncodePieceFrame(FrameType::kData, h, &s.head);
    s.lease = OperationImpl::Lease(op);
    EXPECT_TRUE(s.lease);
    sends.push_back(std::move(s));
  }
  return sends;
}

// The start of a RESULT frame for all `count` float32 elements of operation
// `seq` (one piece): its heads and the first `bytes` of its data.
std::vector<uint8_t> ResultStart(uint64_t seq, uint64_t count, size_t bytes) {
  protocol::PieceHeader result;
  result.seq = seq;
  result.pieces = 1;
  result.total_count = count;
  result.count = count;
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head{};
  protocol::EncodePieceFrame(FrameType::kResult, result, &head);
  std::vector<uint8_t> start(head.begin(), head.end());
  start.resize(start.size() + bytes);
  return start;
}

// A stream to `reducer` on `io`, closed (without goodbye) however the test ends.
struct StartedStream {
  StartedStream(asio::io_context& io, const ScriptedReducer& reducer, RecordingOwner* owner, uint32_t flags) {
    StreamParams params;
    params.endpoint = Endpoint{"127.0.0.1", reducer.port()};
    params.hello.world = 1;
    params.hello.flags = flags;
    params.connect_deadline = Clock::now() + std::chrono::seconds(20);
    stream = std::make_shared<ReducerStream>(io, params, owner);
    stream->Start();
  }
  ~StartedStream() { stream->Close(/*bye=*/false); }
  std::shared_ptr<ReducerStream> stream;
};

TEST(ReducerStreamTest, ResetWhileAWriteIsInFlightKeepsFrameBoundaries) {
  // Declared before the stream's thread, so they outlive it on every path.
  asio::io_context test_io;
  ScriptedReducer reducer(test_io);
  RecordingOwner owner;
  // One operation of kPieces pieces, each piece's elements its index + 1.
  std::vector<float> send(kStreamPieceElems * kPieces), recv(send.size());
  for (uint32_t p = 0; p < kPieces; ++p) {
    std::fill_n(send.begin() + p * kStreamPieceElems, kStreamPieceElems, static_cast<float>(p + 1));
  }
  IoThread io_thread;
  asio::io_context& io = io_thread.io();

  StartedStream started(io, reducer, &owner, protocol::kHelloFailover);
  const auto& stream = started.stream;
  protocol::FrameHeader header;
  std::vector<uint8_t> payload;
  std::string why;
  constexpr uint64_t kMaxPiece = kStreamPieceElems * sizeof(float);
  ASSERT_TRUE(reducer.Handshake(kMaxPiece, &why)) << why;
  ASSERT_TRUE(owner.WaitReady()) << owner.failure().ToString();

  auto op = MakeOp(0, send, recv, kPieces, 0);
  auto sends_for = [&](uint32_t epoch) { return SendsOf(op, send, epoch); };

  // 8 MiB for a reader that does not read: the write is still under way
  // (most piece headers not yet handed to the kernel) when the stream runs
  // the Reset, which is posted after it. Then epoch 1's pieces follow.
  stream->Send(sends_for(0));
  protocol::MembershipFrame announce;
  announce.kind = protocol::MembershipKind::kAnnounce;
  announce.epoch = 1;
  announce.live = protocol::ReducerSet(1);
  announce.live.Add(0);
  stream->Reset(1, protocol::EncodeMembership(announce), sends_for(1));

  // Every byte must parse as whole frames: epoch 0's pieces already in the
  // write (at least the first), the announcement, then all of epoch 1's.
  uint32_t next_piece[2] = {0, 0};
  bool announced = false;
  while (next_piece[1] < kPieces) {
    ASSERT_TRUE(reducer.ReadFrame(&header, &payload, &why))
        << why << " (after " << next_piece[0] << " piece(s) of epoch 0, announced: " << announced << ", "
        << next_piece[1] << " of epoch 1)";
    if (header.type == FrameType::kMembership) {
      protocol::MembershipFrame frame;
      ASSERT_TRUE(protocol::DecodeMembership(payload, &frame).ok());
      ASSERT_EQ(frame.kind, protocol::MembershipKind::kAnnounce);
      ASSERT_FALSE(announced);
      announced = true;
      continue;
    }
    ASSERT_EQ(header.type, FrameType::kData);
    protocol::PieceHeader h;
    ASSERT_TRUE(protocol::DecodePieceHeader(payload, header.payload_bytes, kMaxPiece, &h).ok());
    ASSERT_EQ(h.epoch, announced ? 1u : 0u);
    ASSERT_EQ(h.piece, next_piece[h.epoch]) << "epoch " << h.epoch;
    ++next_piece[h.epoch];
    std::vector<float> expected(kStreamPieceElems, static_cast<float>(h.piece + 1));
    ASSERT_EQ(std::memcmp(payload.data() + protocol::kPieceHeaderBytes, expected.data(),
                          kStreamPieceElems * sizeof(float)),
              0)
        << "piece " << h.piece << " of epoch " << h.epoch;
  }
  EXPECT_GE(next_piece[0], 1u);  // the write under way was completed, not cut
  EXPECT_TRUE(announced);
  EXPECT_TRUE(owner.failure().ok()) << owner.failure().ToString();

  stream->Close(/*bye=*/false);
  io_thread.Join();
  op->Finish(Status::Ok());
  EXPECT_TRUE(op->Done());  // every lease went back
}

// A stream that gives up (Abort) must deliver everything it wrote, its
// reason last, even when bytes it will never read wait in its receive queue:
// closing a socket with unread input resets the connection, and the reset
// throws away what the kernel had not sent yet. Then the reducer saw a piece
// cut short and told the other ranks "rank N disconnected" instead of the
// reason (FailoverLimitsTest.BelowTheMinimum... failed so, 1 run in 60).
TEST(ReducerStreamTest, AnAbortedStreamDeliversWhatItWroteAndItsReasonWithInputUnread) {
  asio::io_context test_io;
  ScriptedReducer reducer(test_io);
  RecordingOwner owner;
  constexpr uint64_t kElems = 64 * 1024;
  constexpr uint32_t kCount = 4;
  std::vector<float> send(kElems * kCount, 2.5f), recv(send.size());
  IoThread io_thread;
  StartedStream started(io_thread.io(), reducer, &owner, 0);
  const auto& stream = started.stream;
  protocol::FrameHeader header;
  std::vector<uint8_t> payload;
  std::string why;
  ASSERT_TRUE(reducer.Handshake(4 << 20, &why)) << why;
  ASSERT_TRUE(owner.WaitReady()) << owner.failure().ToString();

  // Input the stream will not read: the head of a 1 MiB RESULT (for no
  // operation it knows) and 16 KiB of it, which it reads; then, once its
  // read waits for the rest (its low-water mark: no wake-up for less),
  // 16 KiB more, which stay in the kernel's queue.
  reducer.Write(ResultStart(99, 256 * 1024, 16 * 1024));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  reducer.Write(std::vector<uint8_t>(16 * 1024));

  auto op = MakeOp(0, send, recv, kCount, 0);
  stream->Send(SendsOf(op, send, 0));
  stream->Abort(Status(Code::kPeerFailed, "the made-up reason"));
  // Give the stream time to write everything into the kernel and close,
  // while this reducer (4 KiB receive buffer) has read none of it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  for (uint32_t p = 0; p < kCount; ++p) {
    ASSERT_TRUE(reducer.ReadFrame(&header, &payload, &why)) << why << " (piece " << p << ")";
    ASSERT_EQ(header.type, FrameType::kData);
  }
  ASSERT_TRUE(reducer.ReadFrame(&header, &payload, &why)) << why << " (the ERROR frame)";
  ASSERT_EQ(header.type, FrameType::kError);
  protocol::ErrorFrame error;
  ASSERT_TRUE(protocol::DecodeError(payload, &error).ok());
  EXPECT_EQ(error.message, "the made-up reason");
  reducer.Close();
  io_thread.Join();
  op->Finish(Status::Ok());
  EXPECT_TRUE(op->Done());  // every lease went back
}

// The owner moves to a new epoch on the stream's own thread and posts the
// Reset from there, where asio holds it until that handler returns; an
// operation issued meanwhile from the caller's thread can reach the stream
// first. Its pieces must wait for the Reset and follow its own, not be
// dropped by it (the operation then never completed: a silent hang in CI) nor
// go ahead of them (the reducer refused them as out of order).
TEST(ReducerStreamTest, PiecesOfAnEpochWhoseResetHasNotRunYetWaitForIt) {
  asio::io_context test_io;
  ScriptedReducer reducer(test_io);
  RecordingOwner owner;
  constexpr uint64_t kElems = 1024;
  std::vector<float> send(2 * kElems, 1.0f), recv(send.size());
  IoThread io_thread;
  StartedStream started(io_thread.io(), reducer, &owner, protocol::kHelloFailover);
  std::string why;
  ASSERT_TRUE(reducer.Handshake(1 << 20, &why)) << why;
  ASSERT_TRUE(owner.WaitReady()) << owner.failure().ToString();

  std::vector<std::shared_ptr<OperationImpl>> ops;
  auto sends_of = [&](uint64_t seq) {
    ops.push_back(MakeOp(seq, send, recv, 2, 1));
    return SendsOf(ops.back(), send, 1);
  };
  // Operation 8, issued in epoch 1, arrives before the Reset that redoes 7.
  started.stream->Send(sends_of(8));
  protocol::MembershipFrame announce;
  announce.kind = protocol::MembershipKind::kAnnounce;
  announce.epoch = 1;
  announce.live = protocol::ReducerSet(1);
  announce.live.Add(0);
  started.stream->Reset(1, protocol::EncodeMembership(announce), sends_of(7));

  protocol::FrameHeader header;
  std::vector<uint8_t> payload;
  ASSERT_TRUE(reducer.ReadFrame(&header, &payload, &why)) << why;
  ASSERT_EQ(header.type, FrameType::kMembership) << "the announcement first";
  const std::pair<uint64_t, uint32_t> want[] = {{7, 0}, {7, 1}, {8, 0}, {8, 1}};
  for (const auto& [seq, piece] : want) {
    ASSERT_TRUE(reducer.ReadFrame(&header, &payload, &why)) << why << " (waiting for operation " << seq << ")";
    ASSERT_EQ(header.type, FrameType::kData);
    protocol::PieceHeader h;
    ASSERT_TRUE(protocol::DecodePieceHeader(payload, header.payload_bytes, 1 << 20, &h).ok());
    EXPECT_EQ(h.seq, seq);
    EXPECT_EQ(h.piece, piece);
  }
  started.stream->Close(/*bye=*/false);
  io_thread.Join();
  for (auto& op : ops) {
    op->Finish(Status::Ok());
    EXPECT_TRUE(op->Done());  // every lease went back
  }
}

// An operation's pieces go to all the streams of an I/O thread in one
// handler (ClientImpl::PostLocked), so that the streams take turns from the
// first write. Each stream still writes its own pieces in order, and a
// stream that cannot write gives its pieces' leases back without holding up
// the others.
TEST(ReducerStreamTest, SendTogetherWritesEveryStreamInOrderAndFreesAClosedOnesPieces) {
  asio::io_context test_io;
  ScriptedReducer first(test_io), second(test_io), closed(test_io);
  RecordingOwner first_owner, second_owner, closed_owner;
  constexpr uint64_t kElems = 1024;
  std::vector<float> send(2 * kElems, 1.0f), recv(send.size());
  IoThread io_thread;
  StartedStream a(io_thread.io(), first, &first_owner, 0);
  StartedStream b(io_thread.io(), second, &second_owner, 0);
  StartedStream c(io_thread.io(), closed, &closed_owner, 0);
  std::string why;
  for (ScriptedReducer* reducer : {&first, &second, &closed}) ASSERT_TRUE(reducer->Handshake(1 << 20, &why)) << why;
  for (RecordingOwner* owner : {&first_owner, &second_owner, &closed_owner}) {
    ASSERT_TRUE(owner->WaitReady()) << owner->failure().ToString();
  }
  c.stream->Close(/*bye=*/false);

  std::vector<std::shared_ptr<OperationImpl>> ops;
  for (uint64_t seq : {1, 2, 3}) ops.push_back(MakeOp(seq, send, recv, 2, 0));
  ReducerStream::StreamSends together;
  together.emplace_back(a.stream, SendsOf(ops[0], send, 0));
  together.emplace_back(c.stream, SendsOf(ops[1], send, 0));
  together.emplace_back(b.stream, SendsOf(ops[2], send, 0));
  ReducerStream::SendTogether(io_thread.io(), std::move(together));

  for (const auto& [reducer, seq] : {std::pair{&first, 1}, std::pair{&second, 3}}) {
    for (uint32_t piece : {0u, 1u}) {
      protocol::FrameHeader header;
      std::vector<uint8_t> payload;
      ASSERT_TRUE(reducer->ReadFrame(&header, &payload, &why)) << why << " (operation " << seq << ")";
      ASSERT_EQ(header.type, FrameType::kData);
      protocol::PieceHeader h;
      ASSERT_TRUE(protocol::DecodePieceHeader(payload, header.payload_bytes, 1 << 20, &h).ok());
      EXPECT_EQ(h.seq, static_cast<uint64_t>(seq));
      EXPECT_EQ(h.piece, piece);
    }
  }
  a.stream->Close(/*bye=*/false);
  b.stream->Close(/*bye=*/false);
  io_thread.Join();
  for (auto& op : ops) {
    op->Finish(Status::Ok());
    EXPECT_TRUE(op->Done()) << "operation " << op->seq() << "'s leases were not all given back";
  }
}

// The operation a stream's results are for. Counts what the stream asks
// of it: in the client each of these takes the client's one lock.
class OwnerOf : public RecordingOwner {
 public:
  explicit OwnerOf(std::shared_ptr<OperationImpl> op) : op_(std::move(op)) {}
  std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) override {
    ++lookups_;
    return seq == op_->seq() ? op_ : nullptr;
  }
  bool OnWatermark(StreamId, uint32_t, uint64_t watermark) override {
    watermarks_.push_back(watermark);
    return true;
  }
  void OperationComplete(uint64_t seq) override { completed_.push_back(seq); }

  // Read once the stream's thread has stopped.
  int lookups() const { return lookups_; }
  const std::vector<uint64_t>& watermarks() const { return watermarks_; }
  const std::vector<uint64_t>& completed() const { return completed_; }

 private:
  std::shared_ptr<OperationImpl> op_;
  std::atomic<int> lookups_{0};
  std::vector<uint64_t> watermarks_;  // the stream's thread only
  std::vector<uint64_t> completed_;   // the stream's thread only
};

// A result is read straight into the caller's buffer, under a lease on its
// operation. A reducer lost halfway through one must not keep that lease:
// the client fails the operation, and it must then report Done, or the
// caller (a training step) waits for ever.
TEST(ReducerStreamTest, AResultCutShortGivesItsLeaseBackSoTheFailedOperationCompletes) {
  asio::io_context test_io;
  ScriptedReducer reducer(test_io);
  constexpr uint64_t kElems = 1024;
  std::vector<float> send(kElems, 1.0f), recv(send.size());
  auto op = MakeOp(5, send, recv, 1, 0);
  OwnerOf owner(op);
  IoThread io_thread;
  StartedStream started(io_thread.io(), reducer, &owner, 0);
  std::string why;
  ASSERT_TRUE(reducer.Handshake(1 << 20, &why)) << why;
  ASSERT_TRUE(owner.WaitReady()) << owner.failure().ToString();

  reducer.Write(ResultStart(5, kElems, kElems * sizeof(float) / 2));
  reducer.Close();

  // The stream reports the loss after the read's lease has gone back.
  EXPECT_EQ(owner.WaitFailure().code(), Code::kPeerFailed);
  op->Finish(Status(Code::kPeerFailed, "reducer 0 lost"));
  EXPECT_TRUE(op->Done()) << "the cut-short read still holds the receive buffer";
  EXPECT_EQ(op->Wait(std::chrono::milliseconds(0)).code(), Code::kPeerFailed);
}

// Every RESULT frame reaches the client's one lock only if it must: results
// in parts find their operation once, and the session's watermark, repeated
// in every frame, is passed on when it moves. With many I/O threads taking
// small parts, a lock per frame made them wait on each other.
TEST(ReducerStreamTest, AResultInPartsFindsItsOperationOnceAndPassesEachWatermarkOnce) {
  asio::io_context test_io;
  ScriptedReducer reducer(test_io);
  constexpr uint64_t kElems = 4096;
  constexpr uint64_t kParts = 8;
  constexpr uint64_t kPart = kElems / kParts;
  std::vector<float> send(kElems, 1.0f), recv(send.size());
  auto op = MakeOp(7, send, recv, 1, 0);
  OwnerOf owner(op);
  IoThread io_thread;
  StartedStream started(io_thread.io(), reducer, &owner, protocol::kHelloResultParts);
  std::string why;
  ASSERT_TRUE(reducer.Handshake(1 << 20, &why)) << why;
  ASSERT_TRUE(owner.WaitReady()) << owner.failure().ToString();

  for (uint64_t k = 0; k < kParts; ++k) {
    protocol::PieceHeader part;
    part.seq = 7;
    part.pieces = 1;
    part.total_count = kElems;
    part.offset = k * kPart;
    part.count = kPart;
    part.watermark = k < kParts / 2 ? 3 : 4;  // moves once, halfway
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head{};
    protocol::EncodePieceFrame(FrameType::kResult, part, &head);
    std::vector<uint8_t> frame(head.begin(), head.end());
    const std::vector<float> values(kPart, static_cast<float>(k));
    const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
    frame.insert(frame.end(), bytes, bytes + kPart * sizeof(float));
    reducer.Write(frame);
  }
  ASSERT_EQ(op->Wait(std::chrono::seconds(20)).code(), Code::kOk);
  started.stream->Close(/*bye=*/false);
  io_thread.Join();

  EXPECT_EQ(owner.lookups(), 1) << "the operation was looked up per RESULT frame";
  EXPECT_EQ(owner.watermarks(), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(owner.completed(), (std::vector<uint64_t>{7}));
  for (uint64_t i = 0; i < kElems; ++i) ASSERT_EQ(recv[i], static_cast<float>(i / kPart)) << "element " << i;
}

}  // namespace
}  // namespace rs::client
