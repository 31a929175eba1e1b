// A session's roster alone: the join rules, who is missing, who left and
// how, the order of each stream's pieces and whether every path is short.
#include "server/core/roster.h"

#include <gtest/gtest.h>

#include "tests/support/null_member.h"

namespace rs::server {
namespace {

using Kind = Roster::JoinOutcome::Kind;

class RosterTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kWorld = 3;
  static constexpr uint16_t kStreams = 2;

  static protocol::Hello HelloFor(uint32_t rank, uint16_t stream) {
    protocol::Hello h;
    h.rank = rank;
    h.stream = stream;
    h.world = kWorld;
    h.streams = kStreams;
    return h;
  }

  Kind Join(uint32_t rank, uint16_t stream) {
    return roster_.Join(HelloFor(rank, stream), std::make_shared<NullMember>()).kind;
  }

  void JoinAll() {
    for (uint32_t r = 0; r < kWorld; ++r) {
      for (uint16_t s = 0; s < kStreams; ++s) Join(r, s);
    }
    ASSERT_TRUE(roster_.ready());
  }

  static protocol::PieceHeader Header(uint32_t epoch, uint64_t seq, uint32_t piece) {
    protocol::PieceHeader h;
    h.epoch = epoch;
    h.seq = seq;
    h.piece = piece;
    return h;
  }

  Roster roster_{"s1", kWorld, kStreams, 0, DataType::kFloat32};
};

TEST_F(RosterTest, ReadyWhenTheLastStreamOfTheLastRankJoins) {
  EXPECT_EQ(roster_.MissingRanks(), "ranks 0, 1, 2");
  EXPECT_EQ(Join(1, 0), Kind::kJoined);
  EXPECT_EQ(roster_.ranks_joined(), 1u);
  EXPECT_EQ(roster_.MissingRanks(), "ranks 0, 1, 2") << "rank 1 lacks its second stream";
  EXPECT_EQ(Join(1, 1), Kind::kJoined);
  EXPECT_EQ(roster_.MissingRanks(), "ranks 0, 2");
  for (uint32_t r : {0u, 2u}) EXPECT_EQ(Join(r, 0), Kind::kJoined);
  EXPECT_EQ(Join(0, 1), Kind::kJoined);
  EXPECT_FALSE(roster_.ready());
  EXPECT_EQ(roster_.MissingRanks(), "rank 2");
  EXPECT_EQ(Join(2, 1), Kind::kReady);
  EXPECT_TRUE(roster_.ready());
  EXPECT_EQ(roster_.joined(), kWorld * kStreams);
  EXPECT_EQ(roster_.Members().size(), kWorld * kStreams);
}

TEST_F(RosterTest, ATakenSlotOrARunningSessionRefusesOnlyTheJoiner) {
  ASSERT_EQ(Join(0, 0), Kind::kJoined);
  const Roster::JoinOutcome twice = roster_.Join(HelloFor(0, 0), std::make_shared<NullMember>());
  EXPECT_EQ(twice.kind, Kind::kRefused);
  EXPECT_EQ(twice.status.message(), "rank 0 stream 0 has already joined session s1 (two processes with the same rank?)");
  // A disagreeing HELLO for a taken slot is refused too, with why.
  protocol::Hello other = HelloFor(0, 0);
  other.world = 5;
  EXPECT_EQ(roster_.Join(other, std::make_shared<NullMember>()).kind, Kind::kRefused);
  EXPECT_EQ(roster_.joined(), 1u);

  JoinAll();
  const Roster::JoinOutcome late = roster_.Join(other, std::make_shared<NullMember>());
  EXPECT_EQ(late.kind, Kind::kRefused) << "a running session is never failed by a join";
  EXPECT_EQ(late.status.code(), Code::kMismatch);
  EXPECT_NE(late.status.message().find("already running with all its 3 ranks: rank 0 joined session s1 with "
                                       "world size 5"),
            std::string::npos)
      << late.status.message();
}

TEST_F(RosterTest, DisagreementBeforeTheSessionRunsFailsIt) {
  ASSERT_EQ(Join(0, 0), Kind::kJoined);
  protocol::Hello failover = HelloFor(1, 0);
  failover.flags = protocol::kHelloFailover;
  const Roster::JoinOutcome out = roster_.Join(failover, std::make_shared<NullMember>());
  EXPECT_EQ(out.kind, Kind::kDisagrees);
  EXPECT_EQ(out.status.message(),
            "rank 1 joined session s1 with failover on, but the session was opened with failover off: every rank "
            "must use the same setting");
  protocol::Hello wire = HelloFor(1, 0);
  wire.wire = DataType::kBfloat16;
  EXPECT_EQ(roster_.Join(wire, std::make_shared<NullMember>()).kind, Kind::kDisagrees);
  EXPECT_EQ(roster_.joined(), 1u) << "neither took a slot";
  // A rank outside the session, with its settings, is refused alone.
  EXPECT_EQ(Join(kWorld, 0), Kind::kRefused);
}

TEST_F(RosterTest, PartsOnlyWhenEveryHelloAsksForThem) {
  for (uint32_t r = 0; r < kWorld; ++r) {
    for (uint16_t s = 0; s < kStreams; ++s) {
      protocol::Hello h = HelloFor(r, s);
      h.flags = r == 2 && s == 1 ? 0u : uint32_t{protocol::kHelloResultParts};
      roster_.Join(h, std::make_shared<NullMember>());
      EXPECT_EQ(roster_.all_take_parts(), !(r == 2 && s == 1));
    }
  }
}

TEST_F(RosterTest, LeavingFreesTheSlotOnceAndTheFirstStreamLeftAnswers) {
  JoinAll();
  const auto first = roster_.FirstMember(1);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(roster_.Leave(1, 0));
  EXPECT_FALSE(roster_.Leave(1, 0)) << "left already";
  EXPECT_NE(roster_.FirstMember(1), nullptr);
  EXPECT_NE(roster_.FirstMember(1), first) << "rank 1's stream 1 answers now";
  EXPECT_TRUE(roster_.Leave(1, 1));
  EXPECT_EQ(roster_.FirstMember(1), nullptr);
  EXPECT_EQ(roster_.ranks_joined(), 2u);
  EXPECT_EQ(roster_.joined(), (kWorld - 1) * kStreams);
  EXPECT_TRUE(roster_.ready()) << "ready stays true";
  EXPECT_EQ(roster_.TakeMembers().size(), kWorld * kStreams);
  EXPECT_EQ(roster_.joined(), 0u);
  EXPECT_TRUE(roster_.Members().empty());
}

TEST_F(RosterTest, DeparturesAreKeptOnceAndClosedOnesNamed) {
  JoinAll();
  EXPECT_EQ(roster_.ClosedWithoutGoodbye(), "");
  roster_.Departed(0, Departure::kClosed, "connection closed by the worker");
  roster_.Departed(0, Departure::kGoodbye, "");  // a later stream's goodbye: the first departure stays
  roster_.Departed(1, Departure::kGoodbye, "");
  roster_.Departed(2, Departure::kClosed, "");
  ASSERT_NE(roster_.departure(0), nullptr);
  EXPECT_EQ(roster_.departure(0)->how, Departure::kClosed);
  EXPECT_EQ(roster_.departure(0)->why, "connection closed by the worker");
  EXPECT_EQ(roster_.ClosedWithoutGoodbye(), "ranks 0, 2");
  // A piece nobody has sent yet waits for every rank: the first that left
  // other than the sender is named.
  EXPECT_EQ(roster_.DepartedFrom(0, nullptr), 1u);
  EXPECT_EQ(roster_.DepartedFrom(1, nullptr), 0u);
}

TEST_F(RosterTest, ARankThatLeftAfterSendingItsPartIsNotWaitedFor) {
  JoinAll();
  protocol::PieceHeader h = Header(0, 0, 0);
  h.dtype = DataType::kFloat32;
  h.count = h.total_count = 1;
  h.pieces = 1;
  auto budget = MemoryBudget::Create(1 << 20);
  const size_t slot = Piece::SlotBytes(h);
  Piece piece(h, 0, kWorld, budget->TryAllocate(slot * kWorld), slot, 1, Clock::now());
  ASSERT_TRUE(piece.BeginLocked(1, DataType::kFloat32, std::make_shared<NullMember>()));
  piece.EndLocked(1, Clock::now());
  roster_.Departed(1, Departure::kGoodbye, "");
  EXPECT_EQ(roster_.DepartedFrom(2, &piece), std::nullopt) << "rank 1 sent its part before leaving";
  roster_.Departed(0, Departure::kGoodbye, "");
  EXPECT_EQ(roster_.DepartedFrom(2, &piece), 0u);
  EXPECT_EQ(roster_.DepartedFrom(0, &piece), std::nullopt) << "the asking rank is not waited for";
}

TEST_F(RosterTest, EachStreamSendsItsPiecesInOrder) {
  JoinAll();
  EXPECT_TRUE(roster_.OutOfOrder(0, 0, Header(0, 0, 0)).ok()) << "the first piece";
  roster_.Sent(0, 0, Header(0, 3, 1));
  EXPECT_TRUE(roster_.OutOfOrder(0, 0, Header(0, 3, 2)).ok());
  EXPECT_TRUE(roster_.OutOfOrder(0, 0, Header(1, 0, 0)).ok()) << "a new epoch starts again";
  EXPECT_TRUE(roster_.OutOfOrder(0, 1, Header(0, 0, 0)).ok()) << "streams are independent";
  const Status twice = roster_.OutOfOrder(0, 0, Header(0, 3, 1));
  EXPECT_EQ(twice.code(), Code::kProtocol);
  EXPECT_EQ(twice.message(), "rank 0 sent operation 3 piece 1 out of order or twice");
  EXPECT_FALSE(roster_.OutOfOrder(0, 0, Header(0, 2, 9)).ok());
}

TEST_F(RosterTest, PathsAreShortOnceEveryJoinedStreamReportedAShortRoundTrip) {
  JoinAll();
  for (uint32_t r = 0; r < kWorld; ++r) {
    for (uint16_t s = 0; s < kStreams; ++s) {
      EXPECT_FALSE(roster_.paths_short());
      roster_.ReportRoundTrip(r, s, 500);
    }
  }
  EXPECT_TRUE(roster_.paths_short());
  roster_.ReportRoundTrip(2, 1, kWholePiecesMaxRtt.count() + 1);
  EXPECT_FALSE(roster_.paths_short());
  roster_.Leave(2, 1);
  roster_.ReportRoundTrip(0, 0, 500);
  EXPECT_TRUE(roster_.paths_short()) << "a stream that left does not count";
  roster_.ReportRoundTrip(kWorld, 0, 1);  // outside the session: ignored
  roster_.ReportRoundTrip(0, kStreams, 1);
  EXPECT_TRUE(roster_.paths_short());
}

TEST(RankListTest, NamesAtMostSixteen) {
  EXPECT_EQ(RankList({4}), "rank 4");
  EXPECT_EQ(RankList({0, 2}), "ranks 0, 2");
  std::vector<uint32_t> many(20);
  for (uint32_t i = 0; i < many.size(); ++i) many[i] = i;
  EXPECT_EQ(RankList(many), "ranks 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, and 4 more");
}

}  // namespace
}  // namespace rs::server
