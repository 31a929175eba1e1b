// A stream's RESULT frames with no socket: where a result's elements go
// (the receive buffer, a staging buffer for a 16-bit wire, or the drain),
// that a result landed completes its piece and operation, that the CRC is
// checked, that the operation is asked for once and the session's
// watermark passed on once per value, and that every lease a result takes
// is given back, whatever the outcome.
#include "client/result_reader.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/wire_codec.h"
#include "protocol/crc32c.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

constexpr uint64_t kSeq = 7;
constexpr uint64_t kPieceElems = 8;
constexpr uint32_t kReducer = 1;
const char* const kHop = "reducer 10.0.0.5:7450 -> rank 3";

class FakeOwner : public ResultReader::Owner {
 public:
  std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) override {
    ++finds;
    auto it = ops.find(seq);
    return it == ops.end() ? nullptr : it->second;
  }
  bool OnWatermark(uint32_t epoch, uint64_t watermark) override {
    watermarks.emplace_back(epoch, watermark);
    return take_watermarks;
  }
  void OperationComplete(uint64_t seq) override { completed.push_back(seq); }

  std::map<uint64_t, std::shared_ptr<OperationImpl>> ops;
  int finds = 0;
  bool take_watermarks = true;
  std::vector<std::pair<uint32_t, uint64_t>> watermarks;
  std::vector<uint64_t> completed;
};

// Two pieces of kPieceElems float32 elements, both sent to kReducer.
// `wire`: a float32 sum on a 16-bit wire.
std::shared_ptr<OperationImpl> TwoPiecesToOneReducer(std::vector<float>& recv, DataType wire = DataType::kFloat32) {
  recv.assign(2 * kPieceElems, -1.0f);
  std::vector<protocol::PieceSpan> pieces = {{0, 0, kPieceElems, kReducer, 0},
                                             {1, kPieceElems, kPieceElems, kReducer, 0}};
  return std::make_shared<OperationImpl>(kSeq, recv.data(), recv.data(), 2 * kPieceElems, DataType::kFloat32,
                                         ReduceOp::kSum, /*epoch=*/0, std::move(pieces), 2, Clock::now(), wire);
}

protocol::PieceHeader ResultPartFor(uint32_t piece, uint64_t offset_in_piece = 0, uint64_t count = kPieceElems) {
  protocol::PieceHeader h;
  h.seq = kSeq;
  h.piece = piece;
  h.pieces = 2;
  h.total_count = 2 * kPieceElems;
  h.offset = piece * kPieceElems + offset_in_piece;
  h.count = count;
  return h;
}

// A RESULT as read: its piece header goes to Begin, then `elements` are
// copied where it says, then Land. Returns Begin's or Land's error.
class Delivery {
 public:
  explicit Delivery(ResultReader& reader) : reader_(reader) {}

  Status Begin(const protocol::PieceHeader& h) {
    std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> frame{};
    protocol::EncodePieceFrame(protocol::FrameType::kResult, h, &frame);
    part_ = {};
    return reader_.Begin(std::span(frame).subspan(protocol::kHeaderBytes),
                         static_cast<uint32_t>(protocol::kPieceHeaderBytes + h.PayloadBytes()), uint64_t{1} << 20,
                         &part_);
  }
  ResultReader::Part& part() { return part_; }
  Status Land(const void* elements, bool arrived = true) {
    std::memcpy(part_.into.data(), elements, part_.into.size());
    return reader_.Land(std::move(part_), arrived);
  }
  Status Deliver(const protocol::PieceHeader& h, const void* elements) {
    Status st = Begin(h);
    if (!st.ok()) return st;
    return Land(elements);
  }

 private:
  ResultReader& reader_;
  ResultReader::Part part_;
};

std::vector<float> Values(float first, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
  return v;
}

TEST(ResultReader, ResultsLandInTheReceiveBufferAndTheLastOneCompletesTheOperation) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv);
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  Delivery d(reader);
  const std::vector<float> first = Values(100, kPieceElems);
  ASSERT_TRUE(d.Begin(ResultPartFor(0)).ok());
  EXPECT_TRUE(d.part().claimed);
  EXPECT_EQ(d.part().into.data(), static_cast<void*>(recv.data())) << "read straight into the receive buffer";
  ASSERT_TRUE(d.Land(first.data()).ok());
  EXPECT_TRUE(owner.completed.empty());
  EXPECT_FALSE(owner.ops[kSeq]->Done());
  // The second piece in two parts: the last one ends it.
  const std::vector<float> second = Values(200, kPieceElems);
  ASSERT_TRUE(d.Deliver(ResultPartFor(1, 0, 3), second.data()).ok());
  ASSERT_TRUE(d.Deliver(ResultPartFor(1, 3, kPieceElems - 3), second.data() + 3).ok());
  EXPECT_EQ(owner.completed, std::vector<uint64_t>{kSeq});
  EXPECT_TRUE(owner.ops[kSeq]->Done()) << "no lease left behind";
  EXPECT_TRUE(owner.ops[kSeq]->status().ok());
  EXPECT_EQ(std::vector<float>(recv.begin(), recv.begin() + kPieceElems), first);
  EXPECT_EQ(std::vector<float>(recv.begin() + kPieceElems, recv.end()), second);
  EXPECT_EQ(owner.finds, 1) << "the operation is asked for once, not per result";
  EXPECT_EQ(reader.header().PayloadBytes(), (kPieceElems - 3) * sizeof(float)) << "what the last result answered";
}

TEST(ResultReader, AResultOnASixteenBitWireIsWidenedIntoTheReceiveBuffer) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv, DataType::kBfloat16);
  ResultReader reader(kReducer, kHop, /*crc=*/true, owner);
  const std::vector<float> sums = Values(1, kPieceElems);  // exact in bfloat16
  std::vector<uint16_t> narrow(kPieceElems);
  ASSERT_TRUE(NarrowPiece(DataType::kBfloat16, sums.data(), narrow.data(), kPieceElems));
  protocol::PieceHeader h = ResultPartFor(0);
  h.dtype = DataType::kBfloat16;
  h.flags = protocol::kPieceWideSum | protocol::kPieceCrc;
  h.crc = protocol::Crc32c(narrow.data(), narrow.size() * sizeof(uint16_t));
  Delivery d(reader);
  ASSERT_TRUE(d.Begin(h).ok());
  EXPECT_EQ(d.part().into.size(), kPieceElems * sizeof(uint16_t)) << "the bytes as they come, in the wire type";
  EXPECT_NE(d.part().into.data(), static_cast<void*>(recv.data())) << "staged, then widened";
  ASSERT_TRUE(d.Land(narrow.data()).ok());
  EXPECT_EQ(std::vector<float>(recv.begin(), recv.begin() + kPieceElems), sums);
}

TEST(ResultReader, ACorruptedResultFailsNamingTheHopAndGivesItsLeaseBack) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv);
  ResultReader reader(kReducer, kHop, /*crc=*/true, owner);
  const std::vector<float> sums = Values(5, kPieceElems);
  protocol::PieceHeader h = ResultPartFor(1);
  h.flags = protocol::kPieceCrc;
  h.crc = protocol::Crc32c(sums.data(), sums.size() * sizeof(float)) ^ 1;
  Delivery d(reader);
  const Status st = d.Deliver(h, sums.data());
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find(std::string("CRC32C mismatch on hop ") + kHop + ": the result of operation 7 piece 1"),
            std::string::npos)
      << st.message();
  owner.ops[kSeq]->Finish(st);  // what the client does with the stream's failure
  EXPECT_TRUE(owner.ops[kSeq]->Done()) << "the result's lease went back with the failure";
}

TEST(ResultReader, TheCrcIsCheckedOnlyWhenAskedFor) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv);
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  const std::vector<float> sums = Values(5, kPieceElems);
  protocol::PieceHeader h = ResultPartFor(0);
  h.flags = protocol::kPieceCrc;
  h.crc = 12345;
  Delivery d(reader);
  EXPECT_TRUE(d.Deliver(h, sums.data()).ok());
}

TEST(ResultReader, AResultNoOperationTakesIsDrained) {
  FakeOwner owner;
  std::vector<float> recv;
  auto failed = TwoPiecesToOneReducer(recv);
  failed->Finish(Status(Code::kPeerFailed, "gave up"));
  owner.ops[kSeq] = failed;
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  const std::vector<float> sums = Values(5, kPieceElems);
  Delivery d(reader);
  ASSERT_TRUE(d.Begin(ResultPartFor(0)).ok());
  EXPECT_FALSE(d.part().lease) << "no new I/O on buffers the caller may have freed";
  EXPECT_FALSE(d.part().claimed);
  EXPECT_EQ(d.part().into.size(), kPieceElems * sizeof(float)) << "the bytes are read all the same";
  EXPECT_NE(d.part().into.data(), static_cast<void*>(recv.data()));
  ASSERT_TRUE(d.Land(sums.data()).ok());
  EXPECT_EQ(recv[0], -1.0f) << "the receive buffer is untouched";
  // An operation this rank does not know (completed, or never issued).
  protocol::PieceHeader unknown = ResultPartFor(0);
  unknown.seq = 99;
  ASSERT_TRUE(d.Deliver(unknown, sums.data()).ok());
  EXPECT_TRUE(owner.completed.empty());
}

TEST(ResultReader, AResultThatDoesNotMatchWhatWasSentFailsAndHoldsNothing) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv);
  ResultReader reader(kReducer + 1, kHop, /*crc=*/false, owner);  // the pieces went to kReducer
  Delivery d(reader);
  const Status st = d.Begin(ResultPartFor(0));
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("does not match what was sent"), std::string::npos) << st.message();
  owner.ops[kSeq]->Finish(st);
  EXPECT_TRUE(owner.ops[kSeq]->Done());
}

TEST(ResultReader, AHeaderThatDoesNotDecodeFails) {
  FakeOwner owner;
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  ResultReader::Part part;
  std::vector<uint8_t> header(protocol::kPieceHeaderBytes, 0xff);
  EXPECT_FALSE(reader.Begin(header, static_cast<uint32_t>(protocol::kPieceHeaderBytes + 32), 1 << 20, &part).ok());
  EXPECT_EQ(owner.finds, 0);
}

TEST(ResultReader, AReadCutShortGivesTheLeaseBackAndCompletesNothing) {
  FakeOwner owner;
  std::vector<float> recv;
  owner.ops[kSeq] = TwoPiecesToOneReducer(recv);
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  Delivery d(reader);
  ASSERT_TRUE(d.Begin(ResultPartFor(0)).ok());
  ASSERT_TRUE(d.part().lease);
  ASSERT_TRUE(reader.Land(std::move(d.part()), /*arrived=*/false).ok());
  EXPECT_TRUE(owner.completed.empty());
  owner.ops[kSeq]->Finish(Status(Code::kPeerFailed, "lost the reducer"));
  EXPECT_TRUE(owner.ops[kSeq]->Done()) << "the failed operation is not held by the cut read";
}

TEST(ResultReader, TheWatermarkIsPassedOnOncePerValueTheOwnerTakes) {
  FakeOwner owner;
  ResultReader reader(kReducer, kHop, /*crc=*/false, owner);
  Delivery d(reader);
  const std::vector<float> sums = Values(0, kPieceElems);
  auto result = [&](uint32_t epoch, uint64_t watermark) {
    protocol::PieceHeader h = ResultPartFor(0);
    h.seq = 50;  // no such operation: drained, the watermark counts all the same
    h.epoch = epoch;
    h.watermark = watermark;
    ASSERT_TRUE(d.Deliver(h, sums.data()).ok());
  };
  result(0, 0);  // none
  result(0, 5);
  result(0, 5);
  result(1, 5);  // the same value in another epoch is news
  using Seen = std::vector<std::pair<uint32_t, uint64_t>>;
  EXPECT_EQ(owner.watermarks, (Seen{{0, 5}, {1, 5}}));
  owner.take_watermarks = false;  // not this stream's to give: asked again next time
  result(1, 6);
  result(1, 6);
  EXPECT_EQ(owner.watermarks, (Seen{{0, 5}, {1, 5}, {1, 6}, {1, 6}}));
}

}  // namespace
}  // namespace rs::client
