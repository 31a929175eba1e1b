// A session with failover, driven directly: pieces of an epoch the ranks
// have left are refused (never mixed with the new epoch's), the completion
// watermark is kept and relayed, a report becomes a proposal, and an
// eviction closes the ranks' streams without a word.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/auth.h"
#include "server/core/session.h"

namespace rs::server {
namespace {

using protocol::MembershipFrame;
using protocol::MembershipKind;

class Member : public SessionMember {
 public:
  void SendReady() override {}
  void SendResult(const ResultPart& part) override { results.push_back(part); }
  void SendErrorAndClose(const Status& status) override { errors.push_back(status); }
  void SendControl(std::vector<uint8_t> frame) override { controls.push_back(std::move(frame)); }
  void CloseQuietly() override { ++quiet_closes; }
  std::vector<ResultPart> results;
  std::vector<Status> errors;
  std::vector<std::vector<uint8_t>> controls;
  int quiet_closes = 0;

  protocol::FrameType LastControlType() const {
    protocol::FrameHeader h;
    EXPECT_TRUE(protocol::DecodeHeader(controls.back(), 0, &h).ok());
    return h.type;
  }
};

class SessionFailoverTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 2;

  void SetUp() override {
    budget_ = MemoryBudget::Create(4 << 20);
    session_ = std::make_shared<Session>(protocol::SessionIdFromName("f"), kWorld, 1, budget_, SessionLimits{}, t0_,
                                         nullptr, protocol::kHelloFailover);
    for (uint32_t r = 0; r < kWorld; ++r) {
      members_.push_back(std::make_shared<Member>());
      protocol::Hello h;
      h.session = session_->id();
      h.rank = r;
      h.world = kWorld;
      h.flags = protocol::kHelloFailover;
      ASSERT_TRUE(session_->Join(h, members_[r]).ok());
    }
  }

  static protocol::PieceHeader Piece(uint64_t seq, uint32_t epoch, uint64_t watermark = 0) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.pieces = 1;
    h.total_count = 4;
    h.count = 4;
    h.epoch = epoch;
    h.watermark = watermark;
    return h;
  }

  Contribution Contribute(uint32_t rank, const protocol::PieceHeader& h, float value) {
    Contribution c = session_->BeginContribution(rank, members_[rank], 0, h, {}, t0_);
    if (c.kind == Contribution::Kind::kReceive) {
      const float v[4] = {value, value, value, value};
      std::memcpy(c.dest, v, sizeof(v));
      session_->EndContribution(rank, c.piece);
    }
    return c;
  }

  void Announce(uint32_t epoch, uint64_t start) {
    protocol::ReducerSet live(3, true);
    for (uint32_t r = 0; r < kWorld; ++r) {
      session_->OnMembership(r, MembershipFrame{MembershipKind::kAnnounce, epoch, start, live});
    }
  }

  Clock::time_point t0_ = Clock::now();
  std::shared_ptr<MemoryBudget> budget_;
  std::shared_ptr<Session> session_;
  std::vector<std::shared_ptr<Member>> members_;
};

TEST_F(SessionFailoverTest, PiecesOfAnEpochTheRanksLeftAreRefusedNotMixed) {
  // Rank 0's contribution to operation 5 in epoch 0 waits for rank 1...
  ASSERT_EQ(Contribute(0, Piece(5, 0), 1.0f).kind, Contribution::Kind::kReceive);
  EXPECT_GT(budget_->in_use(), 0u);
  // ...when the ranks move to epoch 1, redoing from operation 5.
  Announce(1, 5);
  EXPECT_EQ(session_->epoch(), 1u);
  EXPECT_EQ(budget_->in_use(), 0u);  // the old piece is gone
  // Rank 1's old-epoch copy, sent before it heard, is discarded.
  EXPECT_EQ(Contribute(1, Piece(5, 0), 100.0f).kind, Contribution::Kind::kDiscard);
  // The new epoch's pieces reduce only the new contributions.
  Contribute(0, Piece(5, 1), 2.0f);
  Contribute(1, Piece(5, 1), 3.0f);
  ASSERT_EQ(members_[0]->results.size(), 1u);
  float out[4];
  std::memcpy(out, members_[0]->results[0].data, sizeof(out));
  EXPECT_EQ(out[0], 5.0f);
  EXPECT_TRUE(session_->failure().ok());
}

TEST_F(SessionFailoverTest, AnEpochNotAnnouncedIsAProtocolError) {
  Contribution c = Contribute(0, Piece(0, 2), 1.0f);
  EXPECT_EQ(c.kind, Contribution::Kind::kFailed);
  EXPECT_EQ(session_->failure().code(), Code::kProtocol);
  EXPECT_NE(session_->failure().message().find("before announcing the epoch"), std::string::npos);
}

TEST_F(SessionFailoverTest, WatermarkIsTheLowestRankAndIsSentToRanksThatWaitForIt) {
  Contribute(0, Piece(0, 0, /*watermark=*/3), 1.0f);
  EXPECT_EQ(session_->watermark(), 0u);  // rank 1 has said nothing yet
  // Rank 1 waits for the watermark: it gets the current one at once...
  auto reply = session_->OnHeartbeat(1, protocol::Heartbeat{0, protocol::kHeartbeatWantWatermark, 2});
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->watermark, 2u);
  EXPECT_EQ(session_->watermark(), 2u);
  // ...and another heartbeat once it moves.
  members_[1]->controls.clear();
  session_->OnHeartbeat(1, protocol::Heartbeat{0, 0, 4});
  EXPECT_EQ(session_->watermark(), 3u);
  ASSERT_EQ(members_[1]->controls.size(), 1u);
  EXPECT_EQ(members_[1]->LastControlType(), protocol::FrameType::kHeartbeat);
  // Reports of another epoch do not count.
  session_->OnHeartbeat(0, protocol::Heartbeat{7, 0, 100});
  EXPECT_EQ(session_->watermark(), 3u);
}

TEST_F(SessionFailoverTest, AReportIsProposedToEveryRank) {
  protocol::ReducerSet live(3, true);
  live.Remove(2);
  session_->OnMembership(0, MembershipFrame{MembershipKind::kReport, 1, 7, live});
  for (auto& m : members_) {
    ASSERT_EQ(m->controls.size(), 1u);
    EXPECT_EQ(m->LastControlType(), protocol::FrameType::kMembership);
    protocol::MembershipFrame f;
    ASSERT_TRUE(protocol::DecodeMembership(std::span(m->controls[0]).subspan(protocol::kHeaderBytes), &f).ok());
    EXPECT_EQ(f.kind, MembershipKind::kPropose);
    EXPECT_EQ(f.live, live);
  }
}

TEST_F(SessionFailoverTest, EvictionClosesEveryStreamWithoutAnError) {
  ASSERT_EQ(Contribute(0, Piece(0, 0), 1.0f).kind, Contribution::Kind::kReceive);
  session_->OnMembership(1, MembershipFrame{MembershipKind::kEvict, 1, 0, protocol::ReducerSet(3)});
  for (auto& m : members_) {
    EXPECT_EQ(m->quiet_closes, 1);
    EXPECT_TRUE(m->errors.empty());
  }
  EXPECT_EQ(session_->failure().code(), Code::kCancelled);
  EXPECT_EQ(budget_->in_use(), 0u);
  // Streams leaving afterwards do not turn it into an error either.
  session_->Leave(0, 0, Departure::kLost, Status(Code::kIo, "reset"));
  for (auto& m : members_) EXPECT_TRUE(m->errors.empty());
}

// A float32 sum on a 16-bit wire goes out in parts; parts reduced after the
// ranks left the piece's epoch are dropped, and bytes_sent counts only
// what went out (it once counted the dropped parts too).
TEST_F(SessionFailoverTest, PartsOfAnEpochTheRanksLeftAreNotCountedAsSent) {
  auto stats = std::make_shared<ReducerStats>();
  SessionLimits limits;
  limits.result_part_bytes = 2;  // one bfloat16 element a part
  limits.whole_pieces_from = 0;
  const uint32_t flags = protocol::kHelloFailover | protocol::kHelloResultParts;
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("stale"), kWorld, 1, budget_, limits, t0_,
                                           stats, flags, DataType::kBfloat16);
  for (uint32_t r = 0; r < kWorld; ++r) {
    protocol::Hello h;
    h.session = session->id();
    h.rank = r;
    h.world = kWorld;
    h.flags = flags;
    h.wire = DataType::kBfloat16;
    ASSERT_TRUE(session->Join(h, members_[r]).ok());
  }
  protocol::PieceHeader h = Piece(0, 0);
  h.dtype = DataType::kBfloat16;
  h.flags = protocol::kPieceWideSum;
  std::vector<Contribution> c(kWorld);
  for (uint32_t r = 0; r < kWorld; ++r) {
    c[r] = session->BeginContribution(r, members_[r], 0, h, {}, t0_);
    ASSERT_EQ(c[r].kind, Contribution::Kind::kReceive);
    std::memset(c[r].dest, 0, 4 * sizeof(uint16_t));
    session->ContributionProgress(r, c[r].piece, sizeof(uint16_t));
  }
  for (auto& m : members_) ASSERT_EQ(m->results.size(), 1u) << "element 0 is in from every rank";
  const uint64_t first_part = kWorld * sizeof(uint16_t);
  EXPECT_EQ(session->stats().bytes_sent, first_part);
  // The ranks move to epoch 1 while the piece is still being read.
  protocol::ReducerSet live(3, true);
  for (uint32_t r = 0; r < kWorld; ++r) {
    session->OnMembership(r, MembershipFrame{MembershipKind::kAnnounce, 1, 0, live});
  }
  ASSERT_EQ(session->epoch(), 1u);
  for (uint32_t r = 0; r < kWorld; ++r) session->ContributionProgress(r, c[r].piece, 3 * sizeof(uint16_t));
  for (uint32_t r = 0; r < kWorld; ++r) session->EndContribution(r, c[r].piece);
  for (auto& m : members_) EXPECT_EQ(m->results.size(), 1u) << "nothing of the old epoch goes out";
  EXPECT_EQ(session->stats().bytes_sent, first_part);
  EXPECT_EQ(stats->Snapshot().bytes_sent, first_part);
  EXPECT_TRUE(session->failure().ok()) << session->failure().ToString();
  // A piece left with its epoch keeps its members until it is freed, and
  // these members keep every part they got (a connection lets go of one once
  // it is written): let go, or the two hold each other past the test.
  for (auto& m : members_) m->results.clear();
}

TEST(SessionWithoutFailoverTest, MembershipFramesAreRefused) {
  auto budget = MemoryBudget::Create(1 << 20);
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("n"), 1, 1, budget, SessionLimits{},
                                           Clock::now());
  auto m = std::make_shared<Member>();
  protocol::Hello h;
  h.session = session->id();
  h.world = 1;
  ASSERT_TRUE(session->Join(h, m).ok());
  session->OnMembership(0, MembershipFrame{MembershipKind::kReport, 1, 0, protocol::ReducerSet(2, true)});
  EXPECT_EQ(session->failure().code(), Code::kProtocol);
  ASSERT_EQ(m->errors.size(), 1u);
  // A rank joining with failover on where the others have it off is named.
  auto s2 = std::make_shared<Session>(protocol::SessionIdFromName("n2"), 2, 1, budget, SessionLimits{},
                                      Clock::now());
  h.world = 2;
  ASSERT_TRUE(s2->Join(h, std::make_shared<Member>()).ok());
  protocol::Hello other = h;
  other.rank = 1;
  other.flags = protocol::kHelloFailover;
  Status st = s2->Join(other, std::make_shared<Member>());
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("failover on"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace rs::server
