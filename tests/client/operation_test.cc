// An all-reduce in flight on the client: when it may report Done (only once
// its result is known and no socket still touches the user's buffers), which
// results it accepts from a reducer, and what a timeout names.
#include "client/operation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "client/retention.h"
#include "protocol/partition.h"

namespace rs::client {
namespace {

using std::chrono::milliseconds;

// Two pieces of 8 float32 elements each: piece 0 to reducer 0, piece 1 to
// reducer 1.
std::shared_ptr<OperationImpl> TwoPieces(std::vector<float>& buf) {
  std::vector<protocol::PieceSpan> pieces = {{0, 0, 8, 0, 0}, {1, 8, 8, 1, 0}};
  return std::make_shared<OperationImpl>(7, buf.data(), buf.data(), 16, DataType::kFloat32, ReduceOp::kSum,
                                         /*epoch=*/0, std::move(pieces), 2, Clock::now());
}

// ClaimResult's verdict as a Status: ok when claimed; *ends: the piece is complete.
Status Claim(OperationImpl& op, uint32_t reducer, const protocol::PieceHeader& h, bool* ends = nullptr) {
  Status error;
  bool last = false;
  const OperationImpl::Claim claim = op.ClaimResult(reducer, h, &last, &error);
  if (ends != nullptr) *ends = last;
  switch (claim) {
    case OperationImpl::Claim::kClaimed:
      return Status::Ok();
    case OperationImpl::Claim::kStale:
      return Status(Code::kCancelled, "stale");
    case OperationImpl::Claim::kError:
      break;
  }
  return error;
}

protocol::PieceHeader ResultFor(uint32_t piece) {
  protocol::PieceHeader h;
  h.seq = 7;
  h.piece = piece;
  h.pieces = 2;
  h.dtype = DataType::kFloat32;
  h.op = ReduceOp::kSum;
  h.total_count = 16;
  h.offset = piece * 8;
  h.count = 8;
  return h;
}

TEST(Operation, DoneOnlyWhenEveryPieceIsBackAndNoSocketHoldsTheBuffers) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  EXPECT_FALSE(op->Done());
  OpLease read = OperationImpl::Lease(op);  // a socket is reading into recv
  ASSERT_TRUE(read);
  ASSERT_TRUE(Claim(*op, 0, ResultFor(0)).ok());
  EXPECT_FALSE(op->PieceDone(0));
  ASSERT_TRUE(Claim(*op, 1, ResultFor(1)).ok());
  EXPECT_TRUE(op->PieceDone(0));  // the last piece
  EXPECT_FALSE(op->Done()) << "a socket still holds the buffers";
  read.reset();
  EXPECT_TRUE(op->Done());
  EXPECT_TRUE(op->Wait(milliseconds(0)).ok());
  EXPECT_TRUE(op->status().ok());
}

// What REDUCER_COLLNET_TRACE records of each call: when it started, when
// its first result came in and when it was done, in that order.
TEST(Operation, RecordsWhenItStartedGotItsFirstResultAndWasDone) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  const OperationTimes before = op->times();
  EXPECT_NE(before.started, Clock::time_point{});
  EXPECT_EQ(before.first_result, Clock::time_point{}) << "no result yet";
  EXPECT_EQ(before.done, Clock::time_point{});
  ASSERT_TRUE(Claim(*op, 0, ResultFor(0)).ok());
  EXPECT_FALSE(op->PieceDone(0));
  const OperationTimes half = op->times();
  EXPECT_GE(half.first_result, half.started);
  EXPECT_EQ(half.done, Clock::time_point{});
  ASSERT_TRUE(Claim(*op, 1, ResultFor(1)).ok());
  EXPECT_TRUE(op->PieceDone(0));
  const OperationTimes after = op->times();
  EXPECT_EQ(after.first_result, half.first_result) << "the first result's time stays";
  EXPECT_GE(after.done, after.first_result);
}

TEST(Operation, FailureIsKeptAndNoLeaseIsGivenAfterIt) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  op->Finish(Status(Code::kPeerFailed, "rank 3 disconnected"));
  EXPECT_TRUE(op->Done());
  EXPECT_FALSE(OperationImpl::Lease(op)) << "no new I/O on buffers the caller may already have freed";
  op->Finish(Status(Code::kTimeout, "later error"));
  EXPECT_EQ(op->status().code(), Code::kPeerFailed);
  EXPECT_EQ(op->Wait(milliseconds(0)).message(), "rank 3 disconnected");
}

TEST(Operation, ResultsThatDoNotMatchWhatWasSentAreRefused) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  EXPECT_EQ(Claim(*op, 1, ResultFor(0)).code(), Code::kProtocol) << "piece 0 went to reducer 0";
  protocol::PieceHeader wrong = ResultFor(0);
  wrong.dtype = DataType::kFloat16;
  EXPECT_EQ(Claim(*op, 0, wrong).code(), Code::kProtocol);
  wrong = ResultFor(0);
  wrong.piece = 5;
  Status never = Claim(*op, 0, wrong);
  EXPECT_EQ(never.code(), Code::kProtocol);
  EXPECT_NE(never.message().find("operation 7 piece 5, which was never sent"), std::string::npos) << never.message();
  ASSERT_TRUE(Claim(*op, 0, ResultFor(0)).ok());
  Status twice = Claim(*op, 0, ResultFor(0));
  EXPECT_EQ(twice.code(), Code::kProtocol);
  EXPECT_NE(twice.message().find("twice"), std::string::npos) << twice.message();
}

// A reducer may send a piece's result in parts (cut-through): each must start
// where the last ended, and only the last one completes the piece.
TEST(Operation, ResultInPartsCompletesThePieceWithItsLastPartOnly) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  auto part = [](uint64_t offset, uint64_t count) {
    protocol::PieceHeader h = ResultFor(1);
    h.offset = offset;
    h.count = count;
    return h;
  };
  bool ends = true;
  ASSERT_TRUE(Claim(*op, 1, part(8, 3), &ends).ok());
  EXPECT_FALSE(ends);
  Status gap = Claim(*op, 1, part(12, 2));
  EXPECT_EQ(gap.code(), Code::kProtocol) << "elements 11 and on come next";
  EXPECT_NE(gap.message().find("[12, 14), but the next ones owed are [11, 16)"), std::string::npos) << gap.message();
  EXPECT_EQ(Claim(*op, 1, part(8, 3)).code(), Code::kProtocol) << "a part received twice";
  EXPECT_EQ(Claim(*op, 1, part(11, 6)).code(), Code::kProtocol) << "past the piece's end";
  ASSERT_TRUE(Claim(*op, 1, part(11, 4), &ends).ok());
  EXPECT_FALSE(ends);
  EXPECT_EQ(op->PendingReducers(), (std::vector<uint32_t>{0, 1})) << "reducer 1 still owes element 15";
  ASSERT_TRUE(Claim(*op, 1, part(15, 1), &ends).ok());
  EXPECT_TRUE(ends);
  EXPECT_EQ(op->PendingReducers(), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Claim(*op, 1, part(15, 1)).code(), Code::kProtocol) << "the piece is complete";
}

// After a failover the operation is redone in a new epoch: results of the
// old one are ignored, not errors, and only the new epoch's pieces complete it.
TEST(Operation, ResultsOfAnEpochItLeftAreStaleNotErrors) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  ASSERT_TRUE(Claim(*op, 0, ResultFor(0)).ok());
  op->Restart(1, {{0, 0, 16, 1, 0}});  // all of it on reducer 1 now
  EXPECT_FALSE(op->PieceDone(0)) << "a piece of the old epoch completes nothing";
  EXPECT_EQ(Claim(*op, 1, ResultFor(1)).code(), Code::kCancelled) << "epoch 0 result after the restart";
  protocol::PieceHeader whole = ResultFor(0);
  whole.epoch = 1;
  whole.pieces = 1;
  whole.count = 16;
  ASSERT_TRUE(Claim(*op, 1, whole).ok());
  EXPECT_TRUE(op->PieceDone(1));
}

// What a client timeout message names: the reducers that still owe pieces.
TEST(Operation, PendingReducersAreThoseStillOwingPieces) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  EXPECT_EQ(op->PendingReducers(), (std::vector<uint32_t>{0, 1}));
  ASSERT_TRUE(Claim(*op, 1, ResultFor(1)).ok());
  EXPECT_EQ(op->PendingReducers(), (std::vector<uint32_t>{0}));
}

TEST(Operation, WaitThatRunsOutSaysSoWithoutFailingTheOperation) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  Status st = op->Wait(milliseconds(0));
  EXPECT_EQ(st.code(), Code::kTimeout);
  EXPECT_NE(st.message().find("operation 7 still running"), std::string::npos) << st.message();
  EXPECT_FALSE(op->Done());
  EXPECT_TRUE(op->status().ok()) << "the wait timed out, not the operation";
}

TEST(Operation, NothingToReduceIsDoneAtOnce) {
  OperationImpl op(1, nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 0, {}, 2, Clock::now());
  EXPECT_TRUE(op.Done());
  EXPECT_TRUE(op.status().ok());
}

// An operation restarted in a new epoch sends from its retained copy. When
// every rank then completes it, the watermark releases the copy, but a piece
// of it from the epoch left may still be being written from the copy (the
// write holds an I/O lease on the operation): an overflow copy stays intact
// until that write ends, then goes, even while the caller keeps the handle.
TEST(Operation, ItsOverflowCopyOutlivesTheWatermarkUntilItsLastWriteEnds) {
  std::vector<float> buf(16);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i + 1);
  RetentionRing ring(32);  // smaller than the 64-byte input: the copy overflows
  auto op = TwoPieces(buf);
  std::weak_ptr<const void> watch;
  {
    const RetainedCopy copy = ring.Allocate(op->seq(), buf.size() * sizeof(float), false);
    ASSERT_NE(copy.lease, nullptr);
    watch = copy.lease;
    op->RetainInto(copy);
  }
  op->CopyInput();
  OpLease write = OperationImpl::Lease(op);  // a piece of epoch 0 being written
  ASSERT_TRUE(write);
  op->Restart(1, {{0, 0, 8, 0, 0}, {1, 8, 8, 1, 0}});
  const uint8_t* source = op->source();
  std::fill(buf.begin(), buf.end(), -1.0f);  // the caller reuses its buffer
  op->Finish(Status::Ok());                  // completed here ...
  ring.ReleaseBelow(op->seq() + 1);          // ... and on every rank
  ASSERT_FALSE(watch.expired()) << "freed by the watermark while a write still reads it";
  const auto* kept = reinterpret_cast<const float*>(source);
  for (size_t i = 0; i < buf.size(); ++i) EXPECT_EQ(kept[i], static_cast<float>(i + 1)) << "element " << i;
  EXPECT_FALSE(op->Done());
  write.reset();  // the write ends
  EXPECT_TRUE(op->Done());
  EXPECT_TRUE(watch.expired()) << "nothing reads the copy any more: it must go, though the handle is kept";
}

// Whatever holds a lease (a piece queued on a stream, a read in flight) may
// be dropped on any path without its result: the operation must still
// become Done once it has a result, or the training job hangs. And a lease
// gives back one count only, however it is moved or reset, or the operation
// would report Done while a socket still writes from the caller's buffer.
TEST(Operation, LeasesDroppedWithoutAResultEachGiveBackOneCountOnce) {
  std::vector<float> buf(16);
  auto op = TwoPieces(buf);
  std::vector<OpLease> pieces;
  pieces.push_back(OperationImpl::Lease(op));
  pieces.push_back(OperationImpl::Lease(op));
  OpLease reading = OperationImpl::Lease(op);
  ASSERT_TRUE(pieces[0] && pieces[1] && reading);
  op->Finish(Status(Code::kPeerFailed, "reducer 1 lost"));
  EXPECT_FALSE(op->Done()) << "three sockets still hold the buffers";

  OpLease moved = std::move(pieces[0]);
  EXPECT_FALSE(pieces[0]) << "a moved-from lease holds nothing";
  pieces.clear();           // the moved-from one gives back nothing, the other its one count
  reading.reset();
  reading.reset();  // twice: nothing more
  EXPECT_FALSE(op->Done()) << "`moved` still holds the buffers";
  OpLease other;
  other = std::move(moved);
  EXPECT_FALSE(op->Done()) << "a move hands the lease on without giving it back";

  other = OpLease();  // assigning over a lease gives it back
  EXPECT_TRUE(op->Done());
  EXPECT_EQ(op->Wait(milliseconds(0)).code(), Code::kPeerFailed);
}

TEST(Operation, NoLeaseOnNoOperation) {
  EXPECT_FALSE(OperationImpl::Lease(nullptr)) << "a result for an operation this client does not know";
}

}  // namespace
}  // namespace rs::client
