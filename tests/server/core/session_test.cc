// The session state machine, driven directly with fake streams and explicit
// clocks: joining, rank-order reduction, and every way a session fails.
#include "server/core/session.h"

#include <gtest/gtest.h>

#include <cstring>

#include "protocol/auth.h"
#include "protocol/crc32c.h"

namespace rs::server {
namespace {

class FakeMember : public SessionMember {
 public:
  void SendReady() override { ++ready; }
  void SendResult(const ResultPart& part) override { results.push_back(part); }
  void SendErrorAndClose(const Status& status) override { errors.push_back(status); }
  void SendControl(std::vector<uint8_t> frame) override { controls.push_back(std::move(frame)); }
  void CloseQuietly() override { ++quiet_closes; }
  int ready = 0;
  std::vector<ResultPart> results;
  std::vector<Status> errors;
  std::vector<std::vector<uint8_t>> controls;
  int quiet_closes = 0;
};

class SessionTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 3;

  void SetUp() override {
    budget_ = MemoryBudget::Create(4 << 20);
    SessionLimits limits;
    limits.op_timeout = std::chrono::seconds(5);
    limits.join_timeout = std::chrono::seconds(10);
    session_ = std::make_shared<Session>(protocol::SessionIdFromName("t"), kWorld, 1, budget_, limits, t0_);
    for (uint32_t r = 0; r < kWorld; ++r) members_.push_back(std::make_shared<FakeMember>());
  }

  protocol::Hello HelloFor(uint32_t rank) {
    protocol::Hello h;
    h.session = session_->id();
    h.rank = rank;
    h.world = kWorld;
    return h;
  }

  void JoinAll() {
    for (uint32_t r = 0; r < kWorld; ++r) ASSERT_TRUE(session_->Join(HelloFor(r), members_[r]).ok());
  }

  // A session of its own, `limits`, that every rank joined asking for
  // results in parts.
  std::shared_ptr<Session> JoinedTakingParts(const std::string& name, const SessionLimits& limits,
                                             std::shared_ptr<ReducerStats> stats = nullptr) {
    auto session = std::make_shared<Session>(protocol::SessionIdFromName(name), kWorld, 1, budget_, limits, t0_,
                                             std::move(stats));
    for (uint32_t r = 0; r < kWorld; ++r) {
      protocol::Hello hello = HelloFor(r);
      hello.session = session->id();
      hello.flags = protocol::kHelloResultParts;
      EXPECT_TRUE(session->Join(hello, members_[r]).ok());
    }
    return session;
  }

  static protocol::PieceHeader FloatPiece(uint64_t seq, uint64_t count) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.pieces = 1;
    h.dtype = DataType::kFloat32;
    h.total_count = count;
    h.count = count;
    return h;
  }

  // Sends one contribution of `values` from `rank`.
  Contribution Contribute(uint32_t rank, const protocol::PieceHeader& h, const std::vector<float>& values) {
    Contribution c = session_->BeginContribution(rank, members_[rank], 0, h, {}, t0_);
    if (c.kind == Contribution::Kind::kReceive) {
      std::memcpy(c.dest, values.data(), values.size() * sizeof(float));
      session_->EndContribution(rank, c.piece);
    }
    return c;
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<MemoryBudget> budget_;
  std::shared_ptr<Session> session_;
  std::vector<std::shared_ptr<FakeMember>> members_;
};

TEST_F(SessionTest, ReadyOnlyWhenEveryRankHasJoined) {
  ASSERT_TRUE(session_->Join(HelloFor(0), members_[0]).ok());
  ASSERT_TRUE(session_->Join(HelloFor(2), members_[2]).ok());
  EXPECT_EQ(members_[0]->ready, 0);
  EXPECT_EQ(session_->stats().ranks_joined, 2u);
  ASSERT_TRUE(session_->Join(HelloFor(1), members_[1]).ok());
  for (auto& m : members_) EXPECT_EQ(m->ready, 1);
}

TEST_F(SessionTest, ReducesInRankOrderWhateverTheArrivalOrder) {
  JoinAll();
  // Values whose float sum depends on the order of addition.
  const std::vector<std::vector<float>> in = {{1e8f, 1.0f}, {1.0f, -1e8f}, {-1e8f, 1e8f}};
  for (uint32_t r : {2u, 0u, 1u}) Contribute(r, FloatPiece(0, 2), in[r]);
  ASSERT_EQ(members_[0]->results.size(), 1u);
  const float* out = reinterpret_cast<const float*>(members_[0]->results[0].data);
  EXPECT_EQ(out[0], (1e8f + 1.0f) + -1e8f);
  EXPECT_EQ(out[1], (1.0f + -1e8f) + 1e8f);
  for (auto& m : members_) EXPECT_EQ(m->results.size(), 1u);
  EXPECT_EQ(session_->stats().pieces_completed, 1u);
  EXPECT_EQ(budget_->in_use(), budget_->in_use());  // result still held by the fakes
  for (auto& m : members_) m->results.clear();
  EXPECT_EQ(budget_->in_use(), 0u);  // released once every result is sent
}

TEST_F(SessionTest, ResultCarriesItsCrcWhenTheContributionsDid) {
  JoinAll();
  protocol::PieceHeader h = FloatPiece(4, 3);
  h.flags = protocol::kPieceCrc;  // the value is checked by the connection, not here
  for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, h, {1.5f, 2.5f, -3.0f});
  ASSERT_EQ(members_[0]->results.size(), 1u);
  const ResultPart& part = members_[0]->results[0];
  EXPECT_EQ(part.header.flags, protocol::kPieceCrc);
  EXPECT_EQ(part.header.crc, protocol::Crc32c(part.data, 3 * sizeof(float)));
  // Without a CRC in, none out.
  for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, FloatPiece(5, 3), {1, 2, 3});
  ASSERT_EQ(members_[0]->results.size(), 2u);
  EXPECT_EQ(members_[0]->results[1].header.flags, 0);
}

// Results in parts (cut-through): what every rank has delivered is reduced
// and sent as soon as it is a part's worth, in order, each part the
// rank-order sum; the last part only once every contribution is complete.
TEST_F(SessionTest, ResultGoesOutInPartsAsEveryRankDeliversThem) {
  SessionLimits limits;
  limits.result_part_bytes = 2 * sizeof(float);
  auto session = JoinedTakingParts("parts", limits);
  ASSERT_EQ(session->result_part_bytes(), 2 * sizeof(float));
  protocol::PieceHeader h = FloatPiece(3, 6);
  h.total_count = 16;
  h.offset = 10;  // the piece's elements [10, 16) of the operation
  h.flags = protocol::kPieceCrc;
  const std::vector<std::vector<float>> in = {{1e8f, 1, 2, 3, 4, 5}, {1, -1e8f, 1, 1, 1, 1}, {-1e8f, 1e8f, 0, 0, 0, 7}};
  std::vector<Contribution> c(kWorld);
  for (uint32_t r = 0; r < kWorld; ++r) {
    c[r] = session->BeginContribution(r, members_[r], 0, h, {}, t0_);
    ASSERT_EQ(c[r].kind, Contribution::Kind::kReceive);
    std::memcpy(c[r].dest, in[r].data(), in[r].size() * sizeof(float));
  }
  session->ContributionProgress(0, c[0].piece, 4 * sizeof(float));
  session->ContributionProgress(1, c[1].piece, 3 * sizeof(float) + 1);  // a partial element counts for nothing
  EXPECT_TRUE(members_[0]->results.empty()) << "rank 2 has delivered nothing yet";
  session->ContributionProgress(2, c[2].piece, 1 * sizeof(float));
  EXPECT_TRUE(members_[0]->results.empty()) << "one element is less than a part";
  session->ContributionProgress(2, c[2].piece, 5 * sizeof(float));
  for (auto& m : members_) ASSERT_EQ(m->results.size(), 1u) << "elements [0, 3) are in from every rank";
  session->ContributionProgress(2, c[2].piece, 6 * sizeof(float));  // never the whole: EndContribution says so
  session->EndContribution(0, c[0].piece);
  session->EndContribution(2, c[2].piece);
  EXPECT_EQ(members_[0]->results.size(), 1u) << "rank 1 is still at element 3";
  session->EndContribution(1, c[1].piece);
  for (auto& m : members_) {
    ASSERT_EQ(m->results.size(), 2u);
    uint64_t next = 10;
    for (const ResultPart& part : m->results) {
      EXPECT_EQ(part.header.offset, next) << "parts in order, without gaps";
      EXPECT_EQ(part.header.seq, 3u);
      EXPECT_EQ(part.header.flags, protocol::kPieceCrc);
      EXPECT_EQ(part.header.crc, protocol::Crc32c(part.data, part.header.count * sizeof(float)));
      const float* out = reinterpret_cast<const float*>(part.data);
      for (uint64_t i = 0; i < part.header.count; ++i) {
        const uint64_t e = part.header.offset - 10 + i;
        EXPECT_EQ(out[i], (in[0][e] + in[1][e]) + in[2][e]) << "element " << e;
      }
      next += part.header.count;
    }
    EXPECT_EQ(next, 16u);
    EXPECT_EQ(m->results[0].header.count, 3u);
  }
  EXPECT_EQ(session->stats().pieces_completed, 1u);
  for (auto& m : members_) m->results.clear();
  c.clear();
  EXPECT_EQ(budget_->in_use(), 0u) << "the piece is freed once its last part is sent";
}

// Unset, the smallest result part follows the ranks (--result-part's
// automatic choice): each piece's first part waits for world x part on the
// reducer's link, and its last goes out as world x part, so that product
// stays at 64 KiB, in whole pages, from 32 KiB (1 and 2 ranks) down to 8 KiB
// (from 8 ranks). A value set on the reducer wins.
TEST(ResultPartRule, FollowsTheRanksInWholePagesBetweenItsBounds) {
  EXPECT_EQ(AutoResultPartBytes(1), 32u << 10);
  EXPECT_EQ(AutoResultPartBytes(2), 32u << 10);
  EXPECT_EQ(AutoResultPartBytes(3), 20u << 10);
  EXPECT_EQ(AutoResultPartBytes(4), 16u << 10);
  EXPECT_EQ(AutoResultPartBytes(8), 8u << 10);
  EXPECT_EQ(AutoResultPartBytes(16), 8u << 10);
  EXPECT_EQ(AutoResultPartBytes(256), 8u << 10);
  uint64_t before = AutoResultPartBytes(1);
  for (uint32_t world = 1; world <= 300; ++world) {
    const uint64_t part = AutoResultPartBytes(world);
    EXPECT_EQ(part % 4096, 0u) << world;
    EXPECT_LE(part, before) << "never larger for more ranks: " << world;
    EXPECT_GE(part, kMinAutoResultPart) << world;
    EXPECT_LE(part, kMaxAutoResultPart) << world;
    if (part > kMinAutoResultPart) {
      EXPECT_LE(part * world, kResultPartShare) << world;
    }
    before = part;
  }
}

TEST(ResultPartRule, ASessionTakesItsPartFromItsRanksUnlessTheReducerSetsOne) {
  auto budget = MemoryBudget::Create(1 << 20);
  auto joined = [&](uint32_t world, const SessionLimits& limits) {
    auto session = std::make_shared<Session>(protocol::SessionIdFromName("w" + std::to_string(world)), world, 1,
                                             budget, limits, Clock::now());
    for (uint32_t r = 0; r < world; ++r) {
      protocol::Hello hello;
      hello.session = session->id();
      hello.rank = r;
      hello.world = world;
      hello.flags = protocol::kHelloResultParts;
      EXPECT_TRUE(session->Join(hello, std::make_shared<FakeMember>()).ok());
    }
    EXPECT_TRUE(session->ready());
    return session;
  };
  const SessionLimits automatic;
  EXPECT_EQ(joined(2, automatic)->result_part_bytes(), 32u << 10) << "the smallest jobs: as before";
  EXPECT_EQ(joined(4, automatic)->result_part_bytes(), 16u << 10);
  EXPECT_EQ(joined(8, automatic)->result_part_bytes(), 8u << 10);
  EXPECT_EQ(joined(16, automatic)->result_part_bytes(), 8u << 10);
  EXPECT_EQ(joined(16, automatic)->stats().result_part_bytes, 8u << 10) << "what reducerctl shows";
  SessionLimits set;
  set.result_part_bytes = 64 << 10;
  EXPECT_EQ(joined(16, set)->result_part_bytes(), 64u << 10);
  set.result_part_bytes = 0;
  EXPECT_EQ(joined(16, set)->result_part_bytes(), 0u) << "0: whole pieces";
}

TEST_F(SessionTest, PartsOnlyWhenEveryRankAsksForThem) {
  SessionLimits limits;
  limits.result_part_bytes = 4;
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("mixed"), kWorld, 1, budget_, limits, t0_);
  for (uint32_t r = 0; r < kWorld; ++r) {
    protocol::Hello hello = HelloFor(r);
    hello.session = session->id();
    hello.flags = r == 1 ? 0u : protocol::kHelloResultParts;  // rank 1: an older client
    ASSERT_TRUE(session->Join(hello, members_[r]).ok());
  }
  EXPECT_EQ(session->result_part_bytes(), 0u);
  const protocol::PieceHeader h = FloatPiece(0, 4);
  std::vector<Contribution> c(kWorld);
  for (uint32_t r = 0; r < kWorld; ++r) {
    c[r] = session->BeginContribution(r, members_[r], 0, h, {}, t0_);
    ASSERT_EQ(c[r].kind, Contribution::Kind::kReceive);
    session->ContributionProgress(r, c[r].piece, 3 * sizeof(float));
  }
  EXPECT_TRUE(members_[0]->results.empty());
  for (uint32_t r = 0; r < kWorld; ++r) session->EndContribution(r, c[r].piece);
  ASSERT_EQ(members_[0]->results.size(), 1u);
  EXPECT_EQ(members_[0]->results[0].header.count, 4u) << "the whole piece in one part";
}

// whole_pieces_from: an operation of at least that many pieces per rank
// gets whole pieces even when the ranks take parts (on short paths); smaller
// ones get parts.
TEST_F(SessionTest, OperationsOfManyPiecesPerRankGetWholePieces) {
  SessionLimits limits;
  limits.result_part_bytes = sizeof(float);
  limits.whole_pieces_from = 2;
  auto stats = std::make_shared<ReducerStats>();
  auto session = JoinedTakingParts("whole", limits, stats);
  for (uint32_t r = 0; r < kWorld; ++r) session->ReportRoundTrip(r, 0, 100);  // 100 us: a short path
  // Operation 0: 2 * kWorld pieces, whole. Operation 1: one piece fewer, parts.
  for (const uint32_t pieces : {2 * kWorld, 2 * kWorld - 1}) {
    SCOPED_TRACE(std::to_string(pieces) + " pieces");
    protocol::PieceHeader h = FloatPiece(pieces == 2 * kWorld ? 0 : 1, 4);
    h.pieces = pieces;
    h.total_count = 4 * pieces;
    std::vector<Contribution> c(kWorld);
    for (uint32_t r = 0; r < kWorld; ++r) {
      c[r] = session->BeginContribution(r, members_[r], 0, h, {}, t0_);
      ASSERT_EQ(c[r].kind, Contribution::Kind::kReceive);
      const std::vector<float> in(4, static_cast<float>(r + 1));
      std::memcpy(c[r].dest, in.data(), sizeof(float) * in.size());
    }
    const bool whole = pieces == 2 * kWorld;
    EXPECT_EQ(c[0].piece->in_parts(), !whole);
    for (uint32_t r = 0; r < kWorld; ++r) session->ContributionProgress(r, c[r].piece, 2 * sizeof(float));
    EXPECT_EQ(members_[0]->results.size(), whole ? 0u : 1u) << "two elements are in from every rank";
    for (uint32_t r = 0; r < kWorld; ++r) session->EndContribution(r, c[r].piece);
    for (auto& m : members_) {
      ASSERT_EQ(m->results.size(), whole ? 1u : 2u);
      EXPECT_EQ(m->results.back().header.offset + m->results.back().header.count, 4u);
      const float* out = reinterpret_cast<const float*>(m->results.back().data);
      EXPECT_EQ(out[m->results.back().header.count - 1], 6.0f) << "1 + 2 + 3";
      m->results.clear();
    }
    EXPECT_EQ(stats->Snapshot().pieces_in_parts, whole ? 0u : 1u) << "the metric counts pieces sent in parts";
  }
  EXPECT_EQ(stats->Snapshot().pieces_completed, 2u);
}

// Whole pieces need every stream's round trip known and short: a long path
// (where a loss holds up a whole piece for a round trip) keeps parts.
TEST_F(SessionTest, LargeOperationsKeepPartsUnlessEveryPathIsShort) {
  SessionLimits limits;
  limits.result_part_bytes = sizeof(float);
  limits.whole_pieces_from = 1;
  ASSERT_EQ(kWholePiecesMaxRtt, std::chrono::milliseconds(2));
  auto session = JoinedTakingParts("rtt", limits);
  uint64_t seq = 0;
  auto in_parts = [&] {
    protocol::PieceHeader h = FloatPiece(seq++, 4);
    h.pieces = 100;
    h.total_count = 400;
    Contribution c = session->BeginContribution(0, members_[0], 0, h, {}, t0_);
    EXPECT_EQ(c.kind, Contribution::Kind::kReceive);
    return c.piece != nullptr && c.piece->in_parts();
  };
  EXPECT_TRUE(in_parts()) << "no round trip reported yet";
  session->ReportRoundTrip(0, 0, 150);
  session->ReportRoundTrip(1, 0, 2000);
  EXPECT_TRUE(in_parts()) << "rank 2 has not reported";
  session->ReportRoundTrip(2, 0, 80'000);
  EXPECT_TRUE(in_parts()) << "rank 2's path has an 80 ms round trip";
  session->ReportRoundTrip(2, 0, 300);
  EXPECT_FALSE(in_parts()) << "every path at most 2 ms";
  session->ReportRoundTrip(1, 0, 2001);
  EXPECT_TRUE(in_parts()) << "rank 1's round trip grew past 2 ms";
  session->DropMembers();
}

// A piece being received holds the streams it answers, and a stream holds
// the piece it is reading: a failed session, and one dropped at teardown,
// must let go of them, or a reducer keeps every such connection (and its
// buffers) forever.
TEST_F(SessionTest, FailedAndDroppedSessionsLetGoOfTheStreamsAPieceWouldAnswer) {
  for (const bool fail : {true, false}) {
    SCOPED_TRACE(fail ? "failed" : "dropped");
    auto session = std::make_shared<Session>(protocol::SessionIdFromName(fail ? "f" : "d"), kWorld, 1, budget_,
                                             SessionLimits{}, t0_);
    std::vector<std::weak_ptr<FakeMember>> gone;
    std::vector<Contribution> reading;  // what the streams' reads still hold
    {
      std::vector<std::shared_ptr<FakeMember>> members;
      for (uint32_t r = 0; r < kWorld; ++r) {
        members.push_back(std::make_shared<FakeMember>());
        gone.push_back(members[r]);
        protocol::Hello hello = HelloFor(r);
        hello.session = session->id();
        ASSERT_TRUE(session->Join(hello, members[r]).ok());
      }
      for (uint32_t r = 0; r + 1 < kWorld; ++r) {
        reading.push_back(session->BeginContribution(r, members[r], 0, FloatPiece(0, 4), {}, t0_));
        ASSERT_EQ(reading.back().kind, Contribution::Kind::kReceive);
      }
    }
    if (fail) session->Fail(Status(Code::kPeerFailed, "rank 2 is gone"));
    session->DropMembers();
    for (uint32_t r = 0; r < kWorld; ++r) EXPECT_TRUE(gone[r].expired()) << "rank " << r << "'s stream is kept";
  }
}

TEST_F(SessionTest, DtypeMismatchFailsEveryRankNamingBoth) {
  JoinAll();
  Contribute(0, FloatPiece(17, 4), {1, 2, 3, 4});
  protocol::PieceHeader bf = FloatPiece(17, 4);
  bf.dtype = DataType::kBfloat16;
  Contribution c = session_->BeginContribution(2, members_[2], 0, bf, {}, t0_);
  EXPECT_EQ(c.kind, Contribution::Kind::kFailed);
  for (auto& m : members_) {
    ASSERT_EQ(m->errors.size(), 1u);
    EXPECT_EQ(m->errors[0].code(), Code::kMismatch);
    EXPECT_EQ(m->errors[0].message(), "rank 2 sent bfloat16 for operation 17, rank 0 sent float32");
  }
  // Later contributions are refused with the same reason.
  EXPECT_EQ(Contribute(1, FloatPiece(18, 4), {1, 2, 3, 4}).status.message(), members_[0]->errors[0].message());
}

TEST_F(SessionTest, CountMismatchNamesTheCounts) {
  JoinAll();
  Contribute(1, FloatPiece(3, 8), std::vector<float>(8, 1));
  Contribute(0, FloatPiece(3, 6), std::vector<float>(6, 1));
  ASSERT_EQ(members_[2]->errors.size(), 1u);
  EXPECT_EQ(members_[2]->errors[0].message(), "rank 0 sent 6 elements for operation 3, rank 1 sent 8 elements");
}

// Ranks whose clients cut an operation differently (other piece sizes, or
// releases from before and after the even partition) meet in a piece's
// layout: the error names both and says what to check.
TEST_F(SessionTest, APartitionMismatchNamesBothLayouts) {
  JoinAll();
  protocol::PieceHeader even = FloatPiece(4, 4);
  even.total_count = 36;
  even.piece = 2;
  even.pieces = 9;
  even.offset = 8;
  Contribute(0, even, {1, 2, 3, 4});
  protocol::PieceHeader uneven = even;
  uneven.pieces = 7;
  uneven.offset = 10;
  uneven.count = 5;
  Contribution c = session_->BeginContribution(1, members_[1], 0, uneven, {}, t0_);
  EXPECT_EQ(c.kind, Contribution::Kind::kFailed);
  ASSERT_EQ(members_[2]->errors.size(), 1u);
  EXPECT_EQ(members_[2]->errors[0].code(), Code::kMismatch);
  EXPECT_EQ(members_[2]->errors[0].message(),
            "rank 1 sent piece 2/7 = elements [10, 15) for operation 4, rank 0 sent piece 2/9 = elements [8, 12) "
            "(the ranks partition differently: check that piece-size settings and client versions match)");
}

TEST_F(SessionTest, WorldSizeDisagreementFailsTheSession) {
  ASSERT_TRUE(session_->Join(HelloFor(0), members_[0]).ok());
  protocol::Hello h = HelloFor(1);
  h.world = 4;
  Status st = session_->Join(h, members_[1]);
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("world size 4"), std::string::npos) << st.message();
  ASSERT_EQ(members_[0]->errors.size(), 1u);
  EXPECT_EQ(members_[0]->errors[0].message(), st.message());
}

TEST_F(SessionTest, DuplicateRankIsRefusedWithoutFailingOthers) {
  ASSERT_TRUE(session_->Join(HelloFor(0), members_[0]).ok());
  auto imposter = std::make_shared<FakeMember>();
  Status st = session_->Join(HelloFor(0), imposter);
  EXPECT_NE(st.message().find("already joined"), std::string::npos);
  EXPECT_TRUE(members_[0]->errors.empty());
  EXPECT_TRUE(session_->failure().ok());
}

TEST_F(SessionTest, AConflictingHelloLeavesARunningSessionAlone) {
  JoinAll();
  // Anyone who learns the id may send HELLOs that disagree on every setting
  // the session checks, for a free rank, a taken one, or a rank it lacks.
  std::vector<protocol::Hello> hellos;
  for (uint32_t world : {kWorld, kWorld + 1, 1u}) {
    for (uint32_t rank : {0u, world - 1}) {
      protocol::Hello h = HelloFor(rank);
      h.world = world;
      hellos.push_back(h);
    }
  }
  protocol::Hello failover = HelloFor(1);
  failover.flags = protocol::kHelloFailover;
  hellos.push_back(failover);
  protocol::Hello wire = HelloFor(2);
  wire.wire = DataType::kBfloat16;
  hellos.push_back(wire);
  protocol::Hello streams = HelloFor(0);
  streams.streams = 2;
  streams.stream = 1;
  hellos.push_back(streams);
  for (const protocol::Hello& h : hellos) {
    auto late = std::make_shared<FakeMember>();
    const Status st = session_->Join(h, late);
    ASSERT_FALSE(st.ok()) << "rank " << h.rank << " of " << h.world;
    EXPECT_NE(st.message().find("already running with all its 3 ranks"), std::string::npos) << st.message();
    EXPECT_TRUE(late->errors.empty()) << "the connection, not the session, answers the late joiner";
  }
  EXPECT_TRUE(session_->failure().ok()) << session_->failure().ToString();
  for (auto& m : members_) EXPECT_TRUE(m->errors.empty());
  // The late joiner is told why: the settings that disagree.
  protocol::Hello h = HelloFor(1);
  h.world = 2;
  const Status st = session_->Join(h, std::make_shared<FakeMember>());
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("with world size 2 and 1 streams, but the session was opened with world size 3"),
            std::string::npos)
      << st.message();
  // And the session goes on.
  for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, FloatPiece(0, 1), {1.0f + r});
  ASSERT_EQ(members_[0]->results.size(), 1u);
  EXPECT_EQ(*reinterpret_cast<const float*>(members_[0]->results[0].data), 6.0f);
}

TEST_F(SessionTest, AConflictingHelloForATakenSlotLeavesAJoiningSessionAlone) {
  ASSERT_TRUE(session_->Join(HelloFor(0), members_[0]).ok());
  protocol::Hello h = HelloFor(0);
  h.world = 1;
  const Status st = session_->Join(h, std::make_shared<FakeMember>());
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("rank 0 stream 0 has already joined session"), std::string::npos) << st.message();
  EXPECT_TRUE(session_->failure().ok()) << session_->failure().ToString();
  EXPECT_TRUE(members_[0]->errors.empty());
}

TEST_F(SessionTest, AWaitForMemoryEndsAtTwiceTheOperationTimeoutNamingIt) {
  JoinAll();
  // Other sessions hold the whole budget: no piece of this one is pending,
  // its ranks' connections stop reading, and only the timeout can end it.
  auto held = budget_->TryAllocate(budget_->limit());
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(session_->BeginContribution(1, members_[1], 0, FloatPiece(9, 4), [] {}, t0_).kind,
            Contribution::Kind::kWaitForMemory);
  // Memory held by stuck pieces or untaken results goes back after one
  // operation timeout: the wait gets two.
  session_->CheckTimeouts(t0_ + std::chrono::seconds(10));
  EXPECT_TRUE(session_->failure().ok()) << "failed before twice the operation timeout";
  session_->CheckTimeouts(t0_ + std::chrono::seconds(11));
  const Status st = session_->failure();
  EXPECT_EQ(st.code(), Code::kTimeout) << st.ToString();
  EXPECT_NE(st.message().find("operation 9 (piece 0) timed out after 10 s (twice --op-timeout) on this reducer: "
                              "rank 1's piece waited for memory all that time"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("--memory-limit"), std::string::npos) << st.message();
  for (auto& m : members_) ASSERT_EQ(m->errors.size(), 1u);
}

TEST_F(SessionTest, TimeoutNamesTheRanksThatNeverContributed) {
  JoinAll();
  Contribute(1, FloatPiece(9, 2), {1, 2});
  session_->CheckTimeouts(t0_ + std::chrono::seconds(4));
  EXPECT_TRUE(members_[0]->errors.empty());
  session_->CheckTimeouts(t0_ + std::chrono::seconds(6));
  ASSERT_EQ(members_[1]->errors.size(), 1u);
  EXPECT_EQ(members_[1]->errors[0].code(), Code::kTimeout);
  EXPECT_NE(members_[1]->errors[0].message().find("operation 9 (piece 0) timed out after 5 s on this reducer: "
                                                   "ranks 0, 2 never contributed"),
            std::string::npos)
      << members_[1]->errors[0].message();
  EXPECT_EQ(budget_->in_use(), 0u);  // the abandoned piece's memory is back
}

TEST_F(SessionTest, JoinTimeoutNamesTheMissingRanks) {
  ASSERT_TRUE(session_->Join(HelloFor(1), members_[1]).ok());
  session_->CheckTimeouts(t0_ + std::chrono::seconds(11));
  ASSERT_EQ(members_[1]->errors.size(), 1u);
  EXPECT_NE(members_[1]->errors[0].message().find("ranks 0, 2 never joined"), std::string::npos)
      << members_[1]->errors[0].message();
}

TEST_F(SessionTest, LostRankFailsTheOthersAtOnce) {
  JoinAll();
  session_->Leave(2, 0, Departure::kLost, Status(Code::kIo, "connection reset by peer"));
  ASSERT_EQ(members_[0]->errors.size(), 1u);
  EXPECT_EQ(members_[0]->errors[0].code(), Code::kPeerFailed);
  EXPECT_EQ(members_[0]->errors[0].message(), "rank 2 disconnected from the reducer (connection reset by peer)");
  EXPECT_TRUE(members_[2]->errors.empty());
}

TEST_F(SessionTest, CleanGoodbyeEndsTheSessionQuietly) {
  JoinAll();
  Contribute(0, FloatPiece(0, 1), {1});
  Contribute(1, FloatPiece(0, 1), {1});
  Contribute(2, FloatPiece(0, 1), {1});
  EXPECT_FALSE(session_->Leave(0, 0, Departure::kGoodbye, Status()));
  EXPECT_FALSE(session_->Leave(1, 0, Departure::kGoodbye, Status()));
  EXPECT_TRUE(session_->Leave(2, 0, Departure::kGoodbye, Status()));
  EXPECT_TRUE(session_->failure().ok());
  for (auto& m : members_) EXPECT_TRUE(m->errors.empty());
}

// A rank that leaves after its last operation, cleanly, fails nobody; a
// rank that starts another operation then learns which rank left.
TEST_F(SessionTest, ARankThatLeftIsNamedWhenAnotherStartsAnOperation) {
  for (Departure how : {Departure::kGoodbye, Departure::kClosed}) {
    members_.clear();
    SetUp();  // a fresh session for each
    JoinAll();
    for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, FloatPiece(0, 1), {1});
    EXPECT_FALSE(session_->Leave(0, 0, how, Status(Code::kIo, "connection closed by the worker")));
    EXPECT_TRUE(session_->failure().ok()) << session_->failure().ToString();
    for (auto& m : members_) EXPECT_TRUE(m->errors.empty());
    Contribution c = Contribute(2, FloatPiece(1, 1), {1});
    EXPECT_EQ(c.status.code(), Code::kPeerFailed);
    const std::string expect = how == Departure::kGoodbye
                                   ? "rank 0 left the session (it closed its client after its last operation) "
                                     "before operation 1"
                                   : "rank 0 disconnected from the reducer (connection closed by the worker) "
                                     "after its last operation, before operation 1";
    EXPECT_EQ(c.status.message(), expect);
    for (uint32_t r : {1u, 2u}) {
      ASSERT_EQ(members_[r]->errors.size(), 1u) << "rank " << r;
      EXPECT_EQ(members_[r]->errors[0].message(), expect);
    }
  }
}

// A connection that closes while this reducer has a piece pending ended in
// the middle of an operation: the session fails at once, as it always did.
TEST_F(SessionTest, ClosedDuringAnOperationFailsAtOnce) {
  JoinAll();
  Contribute(1, FloatPiece(0, 1), {1});
  session_->Leave(0, 0, Departure::kClosed, Status(Code::kIo, "connection closed by the worker"));
  ASSERT_EQ(members_[1]->errors.size(), 1u);
  EXPECT_EQ(members_[1]->errors[0].message(),
            "rank 0 disconnected from the reducer (connection closed by the worker)");
}

// Ranks closing without goodbye between operations end the session well,
// and the reducer can say which ones did (its "ended" log line).
TEST_F(SessionTest, ClosedBetweenOperationsEndsTheSessionAndIsNamed) {
  JoinAll();
  for (uint32_t r = 0; r < kWorld; ++r) Contribute(r, FloatPiece(0, 1), {1});
  EXPECT_FALSE(session_->Leave(0, 0, Departure::kClosed, Status()));
  EXPECT_FALSE(session_->Leave(1, 0, Departure::kGoodbye, Status()));
  EXPECT_TRUE(session_->Leave(2, 0, Departure::kClosed, Status()));
  EXPECT_TRUE(session_->failure().ok()) << session_->failure().ToString();
  EXPECT_EQ(session_->ClosedWithoutGoodbye(), "ranks 0, 2");
  for (auto& m : members_) EXPECT_TRUE(m->errors.empty());
}

// Closed before every rank had joined: not an end, a failure (the others
// would otherwise wait for the join timeout).
TEST_F(SessionTest, ClosedBeforeTheSessionIsReadyFailsIt) {
  ASSERT_TRUE(session_->Join(HelloFor(0), members_[0]).ok());
  ASSERT_TRUE(session_->Join(HelloFor(1), members_[1]).ok());
  session_->Leave(0, 0, Departure::kClosed, Status(Code::kIo, "connection closed by the worker"));
  EXPECT_EQ(session_->failure().message(), "rank 0 disconnected from the reducer (connection closed by the worker)");
}

TEST_F(SessionTest, WaitsForMemoryInsteadOfAllocating) {
  auto tiny = MemoryBudget::Create(128 << 10);
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("m"), 2, 1, tiny, SessionLimits{}, t0_);
  auto a = std::make_shared<FakeMember>();
  auto b = std::make_shared<FakeMember>();
  protocol::Hello h;
  h.session = session->id();
  h.world = 2;
  ASSERT_TRUE(session->Join(h, a).ok());
  h.rank = 1;
  ASSERT_TRUE(session->Join(h, b).ok());
  // Each piece takes 2 slots of 32 KiB = one 64 KiB granule: two fit.
  const uint64_t count = (32 << 10) / 4;
  auto c0 = session->BeginContribution(0, a, 0, FloatPiece(0, count), {}, t0_);
  auto c1 = session->BeginContribution(0, a, 0, FloatPiece(1, count), {}, t0_);
  bool woken = false;
  auto c2 = session->BeginContribution(0, a, 0, FloatPiece(2, count), [&] { woken = true; }, t0_);
  EXPECT_EQ(c0.kind, Contribution::Kind::kReceive);
  EXPECT_EQ(c1.kind, Contribution::Kind::kReceive);
  EXPECT_EQ(c2.kind, Contribution::Kind::kWaitForMemory);
  EXPECT_LE(tiny->in_use(), 128u << 10);
  // Rank 1 completes piece 0; once its result is sent the memory comes back.
  session->EndContribution(0, c0.piece);
  auto d0 = session->BeginContribution(1, b, 0, FloatPiece(0, count), {}, t0_);
  ASSERT_EQ(d0.kind, Contribution::Kind::kReceive);
  session->EndContribution(1, d0.piece);
  c0.piece.reset();
  d0.piece.reset();
  a->results.clear();
  b->results.clear();
  EXPECT_TRUE(woken);
  EXPECT_EQ(session->BeginContribution(0, a, 0, FloatPiece(2, count), {}, t0_).kind,
            Contribution::Kind::kReceive);
}

}  // namespace
}  // namespace rs::server
