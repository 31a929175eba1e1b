// Float32 sums on a 16-bit wire, in the session: the ranks' pieces come in
// the wire type or (when they did not fit) in float32, are summed in rank
// order in float32 and rounded once; the result goes in the wire type when
// it fits, else in float32; every rank must have the same setting.
#include <gtest/gtest.h>

#include <cstring>

#include "common/half.h"
#include "protocol/auth.h"
#include "protocol/crc32c.h"
#include "server/core/session.h"

namespace rs::server {
namespace {

class FakeWireMember : public SessionMember {
 public:
  void SendReady() override {}
  void SendResult(const ResultPart& part) override { results.push_back(part); }
  void SendErrorAndClose(const Status& status) override { errors.push_back(status); }
  void SendControl(std::vector<uint8_t>) override {}
  void CloseQuietly() override {}
  std::vector<ResultPart> results;
  std::vector<Status> errors;
};

class SessionWireTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 3;

  void Open(DataType wire, const SessionLimits& limits = {}) {
    session_ = std::make_shared<Session>(protocol::SessionIdFromName("wire"), kWorld, 1, budget_, limits, t0_,
                                         stats_, protocol::kHelloResultParts, wire);
    for (uint32_t r = 0; r < kWorld; ++r) members_.push_back(std::make_shared<FakeWireMember>());
  }

  protocol::Hello HelloFor(uint32_t rank, DataType wire) {
    protocol::Hello h;
    h.session = session_->id();
    h.rank = rank;
    h.world = kWorld;
    h.flags = protocol::kHelloResultParts;
    h.wire = wire;
    return h;
  }

  void JoinAll(DataType wire) {
    for (uint32_t r = 0; r < kWorld; ++r) ASSERT_TRUE(session_->Join(HelloFor(r, wire), members_[r]).ok());
  }

  static protocol::PieceHeader WidePiece(uint64_t seq, uint64_t count, DataType type) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.pieces = 1;
    h.dtype = type;
    h.total_count = count;
    h.count = count;
    h.flags = protocol::kPieceWideSum | protocol::kPieceCrc;
    return h;
  }

  // Rank `rank` sends `values` narrowed to `type` (or as they are, float32).
  Contribution Contribute(uint32_t rank, uint64_t seq, DataType type, const std::vector<float>& values) {
    const protocol::PieceHeader h = WidePiece(seq, values.size(), type);
    Contribution c = session_->BeginContribution(rank, members_[rank], 0, h, {}, t0_);
    if (c.kind != Contribution::Kind::kReceive) return c;
    for (size_t i = 0; i < values.size(); ++i) {
      if (type == DataType::kFloat32) {
        std::memcpy(c.dest + 4 * i, &values[i], 4);
      } else {
        const uint16_t v = type == DataType::kBfloat16 ? FloatToBfloat16(values[i]) : FloatToHalf(values[i]);
        std::memcpy(c.dest + 2 * i, &v, 2);
      }
    }
    session_->EndContribution(rank, c.piece);
    return c;
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<MemoryBudget> budget_ = MemoryBudget::Create(4 << 20);
  std::shared_ptr<ReducerStats> stats_ = std::make_shared<ReducerStats>();
  std::shared_ptr<Session> session_;
  std::vector<std::shared_ptr<FakeWireMember>> members_;
};

TEST_F(SessionWireTest, SumsWidenedPiecesInRankOrderAndRoundsOnce) {
  Open(DataType::kBfloat16);
  JoinAll(DataType::kBfloat16);
  // Rank 1's piece came as float32 (as if a value had not fit): the
  // reducer takes either type from each rank. 1 + 3 * 2^-9 + 2^-9 is
  // 1 + 2^-7 in float32, one bfloat16 ulp above 1; arrival order is not
  // rank order.
  Contribute(2, 5, DataType::kBfloat16, {0x1p-9f, 3.0f});
  Contribute(0, 5, DataType::kBfloat16, {1.0f, 0.5f});
  Contribute(1, 5, DataType::kFloat32, {3 * 0x1p-9f, 1e-30f});
  for (const auto& m : members_) {
    ASSERT_EQ(m->results.size(), 1u);
    const ResultPart& part = m->results[0];
    EXPECT_EQ(part.header.dtype, DataType::kBfloat16);
    EXPECT_EQ(part.header.flags, protocol::kPieceWideSum | protocol::kPieceCrc);
    uint16_t out[2];
    std::memcpy(out, part.data, sizeof(out));
    EXPECT_EQ(Bfloat16ToFloat(out[0]), 1.0f + 0x1p-7f);
    EXPECT_EQ(out[1], FloatToBfloat16((0.5f + 1e-30f) + 3.0f));
    // The CRC covers the bytes that go on the wire.
    EXPECT_EQ(part.header.crc, protocol::Crc32c(part.data, 2 * sizeof(uint16_t)));
  }
  const ReducerStatsSnapshot s = stats_->Snapshot();
  EXPECT_EQ(s.wire_bytes_received, 2u * 2 + 2 * 4 + 2 * 2);
  EXPECT_EQ(s.wire_float32_bytes_received, 3u * 2 * 4);
  EXPECT_EQ(s.wire_fallback_contributions, 1u);
  EXPECT_EQ(s.wire_fallback_results, 0u);
  EXPECT_EQ(s.bytes_sent, 3u * 2 * 2);
}

TEST_F(SessionWireTest, AResultBeyondFloat16GoesAsFloat32NeverInf) {
  Open(DataType::kFloat16);
  JoinAll(DataType::kFloat16);
  // Each 60000 fits float16 (max 65504); their sum does not.
  for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, 1, DataType::kFloat16, {60000.0f, 1.0f});
  ASSERT_EQ(members_[0]->results.size(), 1u);
  const ResultPart& part = members_[0]->results[0];
  EXPECT_EQ(part.header.dtype, DataType::kFloat32);
  float out[2];
  std::memcpy(out, part.data, sizeof(out));
  EXPECT_EQ(out[0], 180000.0f);
  EXPECT_EQ(out[1], 3.0f);
  EXPECT_EQ(part.header.crc, protocol::Crc32c(part.data, sizeof(out)));
  EXPECT_EQ(stats_->Snapshot().wire_fallback_results, 1u);
}

TEST_F(SessionWireTest, ARankWithAnotherWireTypeFailsTheSessionNamingBoth) {
  Open(DataType::kFloat32);
  ASSERT_TRUE(session_->Join(HelloFor(0, DataType::kFloat32), members_[0]).ok());
  const Status st = session_->Join(HelloFor(2, DataType::kBfloat16), members_[2]);
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_EQ(st.message(), "rank 2 joined session " + protocol::SessionIdToString(session_->id()) +
                              " with wire type bfloat16, but the session was opened with wire type off: every "
                              "rank must use the same REDUCER_WIRE_DTYPE");
  ASSERT_EQ(members_[0]->errors.size(), 1u);
  EXPECT_EQ(members_[0]->errors[0].message(), st.message());
}

TEST_F(SessionWireTest, AWideSumOutsideTheSessionsWireTypeIsRefused) {
  Open(DataType::kBfloat16);
  JoinAll(DataType::kBfloat16);
  const Contribution c = Contribute(1, 2, DataType::kFloat16, {1.0f});
  EXPECT_EQ(c.kind, Contribution::Kind::kFailed);
  EXPECT_EQ(c.status.code(), Code::kProtocol);
  EXPECT_EQ(c.status.message(),
            "rank 1 sent operation 2 piece 0 as a float32 sum on a 16-bit wire in float16, but the session's wire "
            "type is bfloat16");
}

TEST_F(SessionWireTest, ResultPartsEachGoInTheTypeTheyFit) {
  SessionLimits limits;
  limits.result_part_bytes = 4;  // two float16 elements a part
  Open(DataType::kFloat16, limits);
  JoinAll(DataType::kFloat16);
  // Parts of 2 elements: [1, 2] fits, [40000, 40000] sums past 65504. Each
  // rank delivers the first part, then the rest.
  std::vector<Contribution> cs;
  for (uint32_t r = 0; r < kWorld; ++r) {
    cs.push_back(session_->BeginContribution(r, members_[r], 0, WidePiece(3, 4, DataType::kFloat16), {}, t0_));
    ASSERT_EQ(cs[r].kind, Contribution::Kind::kReceive);
    for (int i = 0; i < 4; ++i) {
      const uint16_t v = FloatToHalf(std::vector<float>{1.0f, 2.0f, 40000.0f, 40000.0f}[i]);
      std::memcpy(cs[r].dest + 2 * i, &v, 2);
    }
    session_->ContributionProgress(r, cs[r].piece, 4);
  }
  ASSERT_EQ(members_[1]->results.size(), 1u) << "the first part goes as soon as every rank delivered it";
  for (uint32_t r = 0; r < kWorld; ++r) session_->EndContribution(r, cs[r].piece);
  ASSERT_EQ(members_[1]->results.size(), 2u);
  const ResultPart& first = members_[1]->results[0];
  const ResultPart& second = members_[1]->results[1];
  EXPECT_EQ(first.header.dtype, DataType::kFloat16);
  EXPECT_EQ(first.header.offset, 0u);
  EXPECT_EQ(first.header.count, 2u);
  uint16_t small[2];
  std::memcpy(small, first.data, sizeof(small));
  EXPECT_EQ(HalfToFloat(small[0]), 3.0f);
  EXPECT_EQ(HalfToFloat(small[1]), 6.0f);
  EXPECT_EQ(second.header.dtype, DataType::kFloat32);
  EXPECT_EQ(second.header.offset, 2u);
  float large[2];
  std::memcpy(large, second.data, sizeof(large));
  EXPECT_EQ(large[0], 120000.0f);
  EXPECT_EQ(large[1], 120000.0f);
}

}  // namespace
}  // namespace rs::server
