// A float32 sum on a bfloat16 wire keeps its failover copy narrowed
// (copy_behind.h, NarrowedCopy) and sends its pieces from it. What the
// reducers get must not change for it: every piece carries the bytes that
// narrowing the caller's input would give, a piece with a value the wire
// cannot hold goes as the same float32 fallback, whether it goes out first,
// after a restart (the caller's buffer overwritten by results meanwhile) or
// from a shadow; and the copy takes half the memory.
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "client/copy_behind.h"
#include "client/operation.h"
#include "client/send_queue.h"
#include "client/wire_codec.h"
#include "protocol/wire.h"

// Its own namespace: the unity build puts the client's tests in one file.
namespace rs::client::narrowed_copy_test {
namespace {

constexpr size_t kChunk = NarrowedCopy::kChunkElements;
constexpr uint64_t kCount = 3 * kChunk + kChunk / 2;  // a short last chunk
constexpr uint64_t kPiece = 5000;                     // pieces straddle the chunks

// Values that narrow, but for one Inf in chunk 1 and one float32 beyond
// bfloat16's range in chunk 2 (it rounds to Inf there).
std::vector<float> Input() {
  std::vector<float> in(kCount);
  for (uint64_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * 1e3);
  in[kChunk + 17] = INFINITY;
  in[2 * kChunk + kChunk - 3] = FLT_MAX;
  return in;
}

std::vector<protocol::PieceSpan> Spans() {
  std::vector<protocol::PieceSpan> spans;
  for (uint64_t at = 0, i = 0; at < kCount; at += kPiece, ++i) {
    spans.push_back({static_cast<uint32_t>(i), at, std::min(kPiece, kCount - at), 0, 0});
  }
  return spans;
}

std::shared_ptr<OperationImpl> Operation(const float* send, float* recv) {
  return std::make_shared<OperationImpl>(1, send, recv, kCount, DataType::kFloat32, ReduceOp::kSum, 0, Spans(), 1,
                                         Clock::now(), DataType::kBfloat16);
}

// Every piece of `op` through a send queue, as the client issues them
// (ClientImpl::IssueLocked): the bytes a socket would carry, and how many
// pieces went as float32 because a value did not fit.
std::vector<uint8_t> Send(const std::shared_ptr<OperationImpl>& op, uint64_t* fallbacks) {
  std::atomic<uint64_t> fell_back{0};
  SendQueue queue(&fell_back);
  std::vector<PieceSend> sends;
  for (const protocol::PieceSpan& p : op->pieces()) {
    protocol::PieceHeader h;
    h.seq = op->seq();
    h.piece = p.index;
    h.pieces = static_cast<uint32_t>(op->pieces().size());
    h.total_count = kCount;
    h.offset = p.offset;
    h.count = p.count;
    h.flags = protocol::kPieceWideSum;
    PieceSend s;
    s.wire = op->wire();
    s.header = h;
    s.data = op->narrowed() ? nullptr : op->source() + p.offset * sizeof(float);
    s.bytes = p.count * sizeof(float);
    protocol::EncodePieceFrame(protocol::FrameType::kData, h, &s.head);
    s.lease = OperationImpl::Lease(op);
    sends.push_back(std::move(s));
  }
  queue.Push(std::move(sends));
  std::vector<uint8_t> bytes;
  std::vector<asio::const_buffer> buffers;
  while (queue.Gather(16, {}, &buffers) > 0) {
    for (const asio::const_buffer& b : buffers) {
      const auto* at = static_cast<const uint8_t*>(b.data());
      bytes.insert(bytes.end(), at, at + b.size());
    }
    buffers.clear();
    queue.Written(true);
  }
  *fallbacks = fell_back.load();
  return bytes;
}

TEST(NarrowedCopyTest, ABfloat16WireKeepsHalfTheBytesOtherTypesAllOfThem) {
  std::vector<float> buf(16);
  auto narrow = std::make_shared<OperationImpl>(1, buf.data(), buf.data(), 16, DataType::kFloat32, ReduceOp::kSum,
                                                0, std::vector<protocol::PieceSpan>{}, 1, Clock::now(),
                                                DataType::kBfloat16);
  EXPECT_EQ(narrow->RetainedBytes(), 16 * sizeof(uint16_t));
  // float16's range is narrow enough for whole pieces not to fit: kept wide.
  for (DataType wire : {DataType::kFloat16, DataType::kFloat32}) {
    auto op = std::make_shared<OperationImpl>(1, buf.data(), buf.data(), 16, DataType::kFloat32, ReduceOp::kSum, 0,
                                              std::vector<protocol::PieceSpan>{}, 1, Clock::now(), wire);
    EXPECT_EQ(op->RetainedBytes(), 16 * sizeof(float)) << DataTypeName(wire);
  }
  // Not a float32 sum: nothing goes narrowed.
  auto max = std::make_shared<OperationImpl>(1, buf.data(), buf.data(), 16, DataType::kFloat32, ReduceOp::kMax, 0,
                                             std::vector<protocol::PieceSpan>{}, 1, Clock::now(),
                                             DataType::kBfloat16);
  EXPECT_EQ(max->RetainedBytes(), 16 * sizeof(float));
  std::vector<uint8_t> ring(16 * sizeof(float));
  max->RetainInto({ring.data(), nullptr});
  EXPECT_EQ(max->narrowed(), nullptr);
}

TEST(NarrowedCopyTest, PiecesGoOutAsNarrowingTheInputWouldFirstAfterARestartAndFromAShadow) {
  const std::vector<float> input = Input();

  // Without failover: narrowed from the caller's buffer as each piece goes.
  std::vector<float> plain_buf = input;
  uint64_t plain_fallbacks = 0;
  const std::vector<uint8_t> expected = Send(Operation(plain_buf.data(), plain_buf.data()), &plain_fallbacks);
  ASSERT_EQ(plain_fallbacks, 2u) << "the pieces holding the Inf and FLT_MAX go as float32";

  // With the copy kept narrowed: the first sends make the chunks they need
  // (the caller's copy has not run yet).
  std::vector<float> buf = input;
  std::vector<uint16_t> ring(kCount);
  auto op = Operation(buf.data(), buf.data());
  op->RetainInto({reinterpret_cast<uint8_t*>(ring.data()), nullptr});
  ASSERT_NE(op->narrowed(), nullptr);
  uint64_t fallbacks = 0;
  EXPECT_EQ(Send(op, &fallbacks), expected);
  EXPECT_EQ(fallbacks, plain_fallbacks);
  op->CopyInput();

  // In place: results overwrite the caller's buffer; a restart then sends
  // from the copy alone.
  for (float& v : buf) v = -7.0f;
  op->Restart(1, Spans());
  EXPECT_EQ(Send(op, &fallbacks), expected);
  EXPECT_EQ(fallbacks, plain_fallbacks);

  // A shadow (the operation done here, redone for the others) reads the
  // same copy.
  auto shadow = std::make_shared<OperationImpl>(1, ring.data(), nullptr, kCount, DataType::kFloat32, ReduceOp::kSum,
                                                2, Spans(), 1, Clock::now(), DataType::kBfloat16);
  shadow->HoldSourceLease(nullptr, op->narrowed());
  EXPECT_EQ(Send(shadow, &fallbacks), expected);
  EXPECT_EQ(fallbacks, plain_fallbacks);
}

// In place, as in copy_behind_test.cc: the I/O thread's results overwrite
// the caller's buffer, in reverse order, while the caller narrows it front
// to back. Every chunk is narrowed from the input, never from a result.
TEST(NarrowedCopyTest, InPlaceResultsNeverReachTheNarrowedCopy) {
  const std::vector<float> input = Input();
  std::vector<uint16_t> want(kCount);
  for (uint64_t at = 0; at < kCount; at += kChunk) {
    NarrowPiece(DataType::kBfloat16, input.data() + at, want.data() + at, std::min<uint64_t>(kChunk, kCount - at));
  }
  const std::vector<protocol::PieceSpan> spans = Spans();
  for (int round = 0; round < 10; ++round) {
    std::vector<float> buf = input;
    std::vector<uint16_t> ring(kCount, 0);
    auto op = Operation(buf.data(), buf.data());
    op->RetainInto({reinterpret_cast<uint8_t*>(ring.data()), nullptr});
    std::thread results([&] {
      for (size_t i = spans.size(); i-- > 0;) {
        op->BeforeResult(spans[i].offset * sizeof(float), spans[i].count * sizeof(float));
        for (uint64_t e = spans[i].offset; e < spans[i].offset + spans[i].count; ++e) buf[e] = -1.0f;
      }
    });
    op->CopyInput();
    results.join();
    ASSERT_EQ(ring, want) << "round " << round;
    // Where a chunk did not narrow, its input is kept beside it.
    std::vector<float> wide;
    EXPECT_EQ(op->narrowed()->Elements(kChunk + 10, 20, &wide), nullptr);
    EXPECT_TRUE(std::isinf(wide[7]));
    EXPECT_NE(op->narrowed()->Elements(0, kChunk, &wide), nullptr) << "chunk 0 narrowed whole";
  }
}

// Buffers that overlap in part: the copy is made before anything is sent,
// since a result may overwrite input at another offset than its own.
TEST(NarrowedCopyTest, PartlyOverlappingBuffersAreNarrowedBeforeAnythingIsSent) {
  std::vector<float> buf(2 * kCount);
  const std::vector<float> input = Input();
  std::copy(input.begin(), input.end(), buf.begin());
  std::vector<uint16_t> ring(kCount, 0);
  auto op = Operation(buf.data(), buf.data() + 100);
  op->RetainInto({reinterpret_cast<uint8_t*>(ring.data()), nullptr});
  std::fill(buf.begin(), buf.end(), 3.0f);  // every result in
  std::vector<float> plain_buf = input;
  uint64_t plain = 0, narrowed = 0;
  EXPECT_EQ(Send(op, &narrowed), Send(Operation(plain_buf.data(), plain_buf.data()), &plain));
  EXPECT_EQ(narrowed, plain);
}

}  // namespace
}  // namespace rs::client::narrowed_copy_test
