// A stream's send queue with no socket: what each write takes and in what
// order (urgent frames first, never inside a piece; a piece cut by a write
// slice finished before anything else; the send window), what a finished or
// failed write releases, and that whatever is dropped gives its operation's
// lease back while what a write in flight points into stays in place.
#include "client/send_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "client/wire_codec.h"
#include "protocol/crc32c.h"
#include "protocol/membership.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

using protocol::FrameType;

constexpr uint64_t kElems = 256;  // 1 KiB of float32 per piece
constexpr size_t kPieceHead = protocol::kHeaderBytes + protocol::kPieceHeaderBytes;
constexpr size_t kPieceFrameBytes = kPieceHead + kElems * sizeof(float);
constexpr size_t kMaxFrames = 16;  // FramedSocket::kMaxBatch

// One operation per piece, so that each piece's lease can be watched. Its
// elements all hold the seq, so the bytes that arrive can be checked.
class Source {
 public:
  explicit Source(uint64_t seq)
      : seq_(seq),
        data_(kElems, static_cast<float>(seq)),
        op_(std::make_shared<OperationImpl>(seq, data_.data(), data_.data(), kElems, DataType::kFloat32,
                                            ReduceOp::kSum, /*epoch=*/0,
                                            std::vector<protocol::PieceSpan>{{0, 0, kElems, 0, 0}}, 1,
                                            Clock::now())) {}

  // Its one piece, holding a lease on the operation. `wire`: a float32 sum
  // on a 16-bit wire, narrowed when it is written.
  PieceSend Piece(uint32_t epoch = 0, DataType wire = DataType::kFloat32, bool crc = false) {
    protocol::PieceHeader h;
    h.seq = seq_;
    h.pieces = 1;
    h.total_count = kElems;
    h.count = kElems;
    h.epoch = epoch;
    PieceSend s;
    if (wire != DataType::kFloat32) {
      h.flags = protocol::kPieceWideSum;
      s.wire = wire;
      s.header = h;
    }
    protocol::EncodePieceFrame(FrameType::kData, h, &s.head);
    s.data = reinterpret_cast<const uint8_t*>(data_.data());
    s.bytes = kElems * sizeof(float);
    s.epoch = epoch;
    s.crc = crc;
    s.lease = OperationImpl::Lease(op_);
    return s;
  }
  // Whether no queue entry or write holds the operation's lease any more:
  // it is failed (its result known, as when the client gives up), so it is
  // Done exactly when nothing holds it. Take every Piece first.
  bool Released() {
    op_->Finish(Status(Code::kCancelled, "test"));
    return op_->Done();
  }
  std::vector<float>& data() { return data_; }

 private:
  const uint64_t seq_;
  std::vector<float> data_;
  std::shared_ptr<OperationImpl> op_;
};

std::vector<PieceSend> Pieces(std::initializer_list<Source*> sources, uint32_t epoch = 0) {
  std::vector<PieceSend> out;
  for (Source* s : sources) out.push_back(s->Piece(epoch));
  return out;
}

std::vector<uint8_t> Heartbeat() { return protocol::EncodeHeartbeat({}); }

std::vector<uint8_t> Membership(protocol::MembershipKind kind, uint32_t epoch) {
  protocol::MembershipFrame frame;
  frame.kind = kind;
  frame.epoch = epoch;
  frame.live = protocol::ReducerSet(1, /*all=*/true);
  return protocol::EncodeMembership(frame);
}

void Append(const std::vector<asio::const_buffer>& buffers, std::vector<uint8_t>* bytes) {
  for (const asio::const_buffer& b : buffers) {
    const auto* p = static_cast<const uint8_t*>(b.data());
    bytes->insert(bytes->end(), p, p + b.size());
  }
}

// A DATA payload as a name: "DATA 3" when its elements are the seq's (in
// float32 or a 16-bit wire type), "DATA 3 corrupt" when they are not.
std::string DescribeData(std::span<const uint8_t> payload) {
  protocol::PieceHeader h;
  Status st = protocol::DecodePieceHeader(payload.first(protocol::kPieceHeaderBytes),
                                          static_cast<uint32_t>(payload.size()), uint64_t{1} << 30, &h);
  if (!st.ok()) return "DATA undecodable: " + st.message();
  const uint8_t* elems = payload.data() + protocol::kPieceHeaderBytes;
  std::vector<float> values(h.count);
  if (h.dtype == DataType::kFloat32) {
    std::memcpy(values.data(), elems, h.count * sizeof(float));
  } else {
    std::vector<uint16_t> narrow(h.count);
    std::memcpy(narrow.data(), elems, h.count * sizeof(uint16_t));
    WidenPart(h.dtype, narrow.data(), values.data(), h.count);
  }
  const std::string name = "DATA " + std::to_string(h.seq);
  for (float v : values) {
    if (v != static_cast<float>(h.seq)) return name + " corrupt";
  }
  return name;
}

// What a socket would have carried: every write's bytes, in order.
class Wire {
 public:
  // One write: gathers, takes the bytes, reports it written. The frames
  // it took (0: nothing may go now).
  size_t Write(SendQueue& queue, WriteLimits limits = {}, size_t max_frames = kMaxFrames) {
    std::vector<asio::const_buffer> buffers;
    const size_t frames = queue.Gather(max_frames, limits, &buffers);
    last_write_ = bytes_.size();
    Append(buffers, &bytes_);
    last_write_ = bytes_.size() - last_write_;
    if (frames > 0) queue.Written(/*ok=*/true);
    return frames;
  }
  size_t bytes() const { return bytes_.size(); }
  size_t last_write() const { return last_write_; }
  // The frames carried: "HEARTBEAT", "DATA 3" (its seq), "MEMBERSHIP
  // announce 1" (kind, epoch); "cut" for a last frame not whole yet.
  std::vector<std::string> Frames() const {
    std::vector<std::string> frames;
    size_t pos = 0;
    while (pos < bytes_.size()) {
      protocol::FrameHeader h;
      if (bytes_.size() - pos < protocol::kHeaderBytes) return Cut(frames);
      Status st = protocol::DecodeHeader(std::span(bytes_).subspan(pos, protocol::kHeaderBytes), uint64_t{1} << 30,
                                         &h, "the test");
      if (!st.ok()) {
        frames.push_back("undecodable: " + st.message());
        return frames;
      }
      pos += protocol::kHeaderBytes;
      if (bytes_.size() - pos < h.payload_bytes) return Cut(frames);
      const std::span<const uint8_t> payload = std::span(bytes_).subspan(pos, h.payload_bytes);
      pos += h.payload_bytes;
      if (h.type == FrameType::kData) {
        frames.push_back(DescribeData(payload));
      } else if (h.type == FrameType::kMembership) {
        protocol::MembershipFrame m;
        if (!protocol::DecodeMembership(payload, &m).ok()) return Cut(frames);
        frames.push_back(std::string("MEMBERSHIP ") + protocol::MembershipKindName(m.kind) + " " +
                         std::to_string(m.epoch));
      } else {
        frames.push_back(protocol::FrameTypeName(h.type));
      }
    }
    return frames;
  }

 private:
  static std::vector<std::string> Cut(std::vector<std::string> frames) {
    frames.push_back("cut");
    return frames;
  }

  std::vector<uint8_t> bytes_;
  size_t last_write_ = 0;
};

using FrameList = std::vector<std::string>;

TEST(SendQueue, UrgentFramesGoAheadOfEverythingQueued) {
  SendQueue queue;
  Source a(1), b(2);
  queue.Push(Pieces({&a, &b}));
  queue.PushControl(Membership(protocol::MembershipKind::kReport, 0));
  queue.PushUrgent(Heartbeat());
  Wire wire;
  EXPECT_EQ(wire.Write(queue), 4u);
  EXPECT_EQ(wire.Frames(), (FrameList{"HEARTBEAT", "DATA 1", "DATA 2", "MEMBERSHIP report 0"}));
  EXPECT_FALSE(queue.frames_queued());
  EXPECT_TRUE(a.Released()) << "a piece written gives its operation's lease back";
  EXPECT_TRUE(b.Released());
}

TEST(SendQueue, APieceCutByAWriteSliceIsFinishedBeforeAnythingElse) {
  SendQueue queue;
  Source a(1), b(2);
  queue.Push(Pieces({&a, &b}));
  const WriteLimits limits{/*window=*/0, /*slice=*/300};
  Wire wire;
  ASSERT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.last_write(), 300u);
  EXPECT_EQ(wire.Frames(), (FrameList{"cut"}));
  // A heartbeat now must not land inside the piece half written.
  queue.PushUrgent(Heartbeat());
  while (wire.bytes() < kPieceFrameBytes) {
    EXPECT_FALSE(a.Released()) << "its rest is still to be written from the operation's buffer";
    ASSERT_EQ(wire.Write(queue, limits), 1u) << "the rest of the piece, alone";
    EXPECT_LE(wire.last_write(), 300u);
  }
  EXPECT_EQ(wire.bytes(), kPieceFrameBytes);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1"}));
  EXPECT_TRUE(a.Released());
  // Then the heartbeat, ahead of the next piece.
  EXPECT_EQ(wire.Write(queue, limits), 2u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "HEARTBEAT", "cut"}));
  while (queue.frames_queued()) ASSERT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "HEARTBEAT", "DATA 2"}));
  EXPECT_TRUE(b.Released());
}

// An operation's own bound (PieceSend::slice, an eighth of its share of
// the stream) cuts an automatic slice down to the least the link's rate
// allows (WriteLimits::min_slice), and such a write is marked to leave as
// packets of its own. A slice the user set, or a bound that would not cut
// at least a quarter off the write, leaves the slice as it was.
TEST(SendQueue, AnOperationsOwnBoundCutsAnAutomaticSliceFiner) {
  struct Case {
    size_t piece_slice;
    WriteLimits limits;
    size_t first_write;
    bool fine;
    const char* why;
  };
  const Case cases[] = {
      {300, {0, 800, 100}, 300, true, "the operation's bound"},
      {300, {0, 800, 400}, 400, true, "not below the least the link allows"},
      {300, {0, 800, 0}, 800, false, "the user's slice: no bound counts"},
      {600, {0, 800, 100}, 600, true, "a bound that cuts a quarter off the write"},
      {700, {0, 800, 100}, 800, false, "a bound that would not cut a quarter off the write"},
      {0, {0, 800, 100}, 800, false, "a piece with no bound of its own"},
      {300, {0, 0, 100}, kPieceFrameBytes, false, "no slices at all (one stream): whole pieces"},
  };
  for (const Case& c : cases) {
    SendQueue queue;
    Source a(1);
    std::vector<PieceSend> sends;
    sends.push_back(a.Piece());
    sends.back().slice = c.piece_slice;
    queue.Push(std::move(sends));
    Wire wire;
    ASSERT_EQ(wire.Write(queue, c.limits), 1u) << c.why;
    EXPECT_EQ(wire.last_write(), c.first_write) << c.why;
    EXPECT_EQ(queue.cut_fine(), c.fine) << c.why;
    while (queue.frames_queued()) ASSERT_EQ(wire.Write(queue, c.limits), 1u) << c.why;
    EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1"})) << c.why << ": the piece arrives whole all the same";
  }
}

// A write that took pieces under the path's slice stops before a piece whose
// own bound it has already used up, rather than cutting it to nothing.
TEST(SendQueue, APieceWithATighterBoundStartsTheNextWrite) {
  SendQueue queue;
  Source a(1), b(2);
  std::vector<PieceSend> sends = Pieces({&a, &b});
  sends[1].slice = 500;
  queue.Push(std::move(sends));
  const WriteLimits limits{/*window=*/0, /*slice=*/4096, /*min_slice=*/100};
  Wire wire;
  ASSERT_EQ(wire.Write(queue, limits), 1u) << "the first piece alone: it took more than the second allows";
  EXPECT_EQ(wire.last_write(), kPieceFrameBytes);
  EXPECT_FALSE(queue.cut_fine());
  ASSERT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.last_write(), 500u);
  EXPECT_TRUE(queue.cut_fine());
  while (queue.frames_queued()) ASSERT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "DATA 2"}));
}

TEST(SendQueue, TheWindowHoldsPiecesBackUntilResultsAnswerThem) {
  SendQueue queue;
  Source a(1), b(2), c(3);
  queue.Push(Pieces({&a, &b, &c}));
  const WriteLimits limits{/*window=*/2 * kElems * sizeof(float) + 100, /*slice=*/0};
  Wire wire;
  EXPECT_EQ(wire.Write(queue, limits), 2u) << "two pieces fit the window, three do not";
  EXPECT_EQ(queue.unanswered_bytes(), 2 * kElems * sizeof(float));
  EXPECT_EQ(wire.Write(queue, limits), 0u) << "held back until a result answers";
  EXPECT_TRUE(queue.frames_queued());
  queue.Answered(kElems * sizeof(float));
  EXPECT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "DATA 2", "DATA 3"}));
}

TEST(SendQueue, AWindowSmallerThanAPieceStillLetsOnePieceGoAtATime) {
  SendQueue queue;
  Source a(1), b(2);
  queue.Push(Pieces({&a, &b}));
  const WriteLimits limits{/*window=*/100, /*slice=*/0};
  Wire wire;
  EXPECT_EQ(wire.Write(queue, limits), 1u) << "nothing unanswered: the first piece always goes";
  EXPECT_EQ(wire.Write(queue, limits), 0u);
  queue.Answered(1u << 30);  // more than was written: nothing is left unanswered, no wrap
  EXPECT_EQ(queue.unanswered_bytes(), 0u);
  EXPECT_EQ(wire.Write(queue, limits), 1u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "DATA 2"}));
}

TEST(SendQueue, DroppingKeepsWhatAWriteInFlightPointsInto) {
  SendQueue queue;
  Source a(1), b(2), c(3);
  queue.Push(Pieces({&a, &b, &c}));
  queue.PushUrgent(Heartbeat());
  std::vector<asio::const_buffer> buffers;
  ASSERT_EQ(queue.Gather(/*max_frames=*/2, {}, &buffers), 3u) << "the heartbeat, then two pieces";
  queue.PushUrgent(Heartbeat());
  queue.Drop(/*keep_partial=*/false);
  EXPECT_TRUE(c.Released()) << "a piece not being written gives its lease back at once";
  EXPECT_FALSE(a.Released()) << "the write in flight still reads from its buffer";
  EXPECT_FALSE(b.Released());
  // The write's buffers still point at the frames, unmoved.
  std::vector<uint8_t> bytes;
  Append(buffers, &bytes);
  ASSERT_EQ(bytes.size(), Heartbeat().size() + 2 * kPieceFrameBytes);
  queue.Written(/*ok=*/true);
  EXPECT_TRUE(a.Released());
  EXPECT_TRUE(b.Released());
  EXPECT_FALSE(queue.frames_queued()) << "the heartbeat queued after the write was dropped too";
}

TEST(SendQueue, APiecePartlyWrittenStaysToBeFinishedOnlyWhenTheStreamGoesOn) {
  for (bool keep_partial : {true, false}) {
    SCOPED_TRACE(keep_partial ? "keep_partial" : "closing");
    SendQueue queue;
    Source a(1), b(2);
    queue.Push(Pieces({&a, &b}));
    Wire wire;
    ASSERT_EQ(wire.Write(queue, {0, 300}), 1u);
    queue.Drop(keep_partial);
    EXPECT_TRUE(b.Released());
    EXPECT_EQ(a.Released(), !keep_partial);
    EXPECT_EQ(queue.frames_queued(), keep_partial);
    while (queue.frames_queued()) ASSERT_EQ(wire.Write(queue), 1u);
    EXPECT_EQ(wire.Frames(), keep_partial ? FrameList{"DATA 1"} : FrameList{"cut"});
    EXPECT_TRUE(a.Released());
  }
}

TEST(SendQueue, APieceDroppedUnwrittenLetsItsFailedOperationComplete) {
  SendQueue queue;
  Source a(1);
  queue.Push(Pieces({&a}));
  EXPECT_FALSE(a.Released()) << "failed, but a queued piece still points at the caller's buffer";
  queue.Drop(/*keep_partial=*/true);
  EXPECT_TRUE(a.Released()) << "the operation would otherwise never be Done";
  EXPECT_FALSE(queue.frames_queued());
}

TEST(SendQueue, AFailedWriteReleasesEverythingItTookEvenAPieceItCut) {
  SendQueue queue;
  Source a(1), b(2), c(3);
  queue.Push(Pieces({&a, &b, &c}));
  std::vector<asio::const_buffer> buffers;
  ASSERT_EQ(queue.Gather(kMaxFrames, {0, kPieceFrameBytes + 10}, &buffers), 2u);
  queue.Written(/*ok=*/false);
  EXPECT_TRUE(a.Released());
  EXPECT_TRUE(b.Released()) << "cut, but nothing more will be written";
  EXPECT_FALSE(c.Released());
  queue.Drop(/*keep_partial=*/false);  // what the stream does next
  EXPECT_TRUE(c.Released());
  EXPECT_FALSE(queue.frames_queued());
}

TEST(SendQueue, PiecesOfANewerEpochWaitForItsResetAndGoAfterItsOwn) {
  SendQueue queue;
  Source early(5), passed_over(6), old(7), redone(8);
  queue.Push(Pieces({&early}, /*epoch=*/2));
  queue.Push(Pieces({&passed_over}, /*epoch=*/1));
  Wire wire;
  EXPECT_EQ(wire.Write(queue), 0u) << "nothing may go before the epoch's announce";
  EXPECT_FALSE(queue.frames_queued());
  EXPECT_FALSE(early.Released());
  queue.Reset(2, Membership(protocol::MembershipKind::kAnnounce, 2), Pieces({&redone}, /*epoch=*/2));
  EXPECT_EQ(queue.epoch(), 2u);
  EXPECT_TRUE(passed_over.Released()) << "epoch 1 was passed over: its piece is redone in epoch 2";
  while (queue.frames_queued()) ASSERT_GT(wire.Write(queue), 0u);
  EXPECT_EQ(wire.Frames(), (FrameList{"MEMBERSHIP announce 2", "DATA 8", "DATA 5"}));
  EXPECT_TRUE(early.Released());
  queue.Push(Pieces({&old}, /*epoch=*/1));
  EXPECT_TRUE(old.Released()) << "an older epoch's piece is not sent";
  EXPECT_FALSE(queue.frames_queued());
}

TEST(SendQueue, ResetDropsQueuedPiecesButKeepsControlFramesAndFinishesACutPiece) {
  SendQueue queue;
  Source a(1), b(2), redone(3);
  queue.Push(Pieces({&a}));
  queue.PushControl(Membership(protocol::MembershipKind::kReport, 0));
  queue.Push(Pieces({&b}));
  Wire wire;
  ASSERT_EQ(wire.Write(queue, {0, 300}), 1u);
  EXPECT_GT(queue.unanswered_bytes(), 0u);
  queue.Reset(1, Membership(protocol::MembershipKind::kAnnounce, 1), Pieces({&redone}, /*epoch=*/1));
  EXPECT_TRUE(b.Released()) << "not begun: it is redone in the new epoch";
  EXPECT_FALSE(a.Released()) << "half written: the rest must follow, or the stream's frames break";
  EXPECT_EQ(queue.unanswered_bytes(), 0u) << "the old epoch's pieces will not be answered";
  while (queue.frames_queued()) ASSERT_GT(wire.Write(queue), 0u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 1", "MEMBERSHIP report 0", "MEMBERSHIP announce 1", "DATA 3"}));
}

TEST(SendQueue, SkipToFollowsTheEpochAndDropsTheEarlyPieces) {
  SendQueue queue;
  Source early(1), now(2);
  queue.Push(Pieces({&early}, /*epoch=*/1));
  queue.SkipTo(1);
  EXPECT_EQ(queue.epoch(), 1u);
  EXPECT_TRUE(early.Released());
  queue.SkipTo(0);
  EXPECT_EQ(queue.epoch(), 1u) << "never back";
  queue.Push(Pieces({&now}, /*epoch=*/1));
  Wire wire;
  EXPECT_EQ(wire.Write(queue), 1u);
  EXPECT_EQ(wire.Frames(), (FrameList{"DATA 2"}));
}

TEST(SendQueue, AWideSumGoesNarrowedWithItsCrcAndAValueThatDoesNotFitSendsFloat32) {
  std::atomic<uint64_t> fallbacks{0};
  SendQueue queue(&fallbacks);
  Source fits(1), inf(2);
  inf.data()[7] = std::numeric_limits<float>::infinity();
  std::vector<PieceSend> sends;
  sends.push_back(fits.Piece(0, DataType::kBfloat16, /*crc=*/true));
  sends.push_back(inf.Piece(0, DataType::kBfloat16));
  queue.Push(std::move(sends));
  std::vector<asio::const_buffer> buffers;
  ASSERT_EQ(queue.Gather(kMaxFrames, {}, &buffers), 2u);
  std::vector<uint8_t> bytes;
  Append(buffers, &bytes);
  queue.Written(/*ok=*/true);
  ASSERT_EQ(bytes.size(), 2 * kPieceHead + kElems * sizeof(uint16_t) + kElems * sizeof(float));
  protocol::PieceHeader h;
  ASSERT_TRUE(protocol::DecodePieceHeader(std::span(bytes).subspan(protocol::kHeaderBytes, protocol::kPieceHeaderBytes),
                                          static_cast<uint32_t>(protocol::kPieceHeaderBytes + kElems * 2),
                                          uint64_t{1} << 30, &h)
                  .ok());
  EXPECT_EQ(h.dtype, DataType::kBfloat16);
  EXPECT_EQ(h.flags, protocol::kPieceWideSum | protocol::kPieceCrc);
  EXPECT_EQ(h.crc, protocol::Crc32c(bytes.data() + kPieceHead, kElems * sizeof(uint16_t)))
      << "the CRC covers the bytes as they went";
  const size_t second = kPieceHead + kElems * sizeof(uint16_t);
  ASSERT_TRUE(protocol::DecodePieceHeader(
                  std::span(bytes).subspan(second + protocol::kHeaderBytes, protocol::kPieceHeaderBytes),
                  static_cast<uint32_t>(protocol::kPieceHeaderBytes + kElems * sizeof(float)), uint64_t{1} << 30, &h)
                  .ok());
  EXPECT_EQ(h.dtype, DataType::kFloat32) << "the wire never carries an Inf it made";
  EXPECT_EQ(fallbacks.load(), 1u);
  EXPECT_EQ(queue.unanswered_bytes(), kElems * sizeof(uint16_t) + kElems * sizeof(float))
      << "the window counts the bytes that went";
}

}  // namespace
}  // namespace rs::client
