// Admission control: the limits on connections, handshakes and sessions
// waiting for their ranks, in all and per source address, and the counters
// the metrics export.
#include "server/core/admission.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace rs::server {
namespace {

AdmissionLimits Small() {
  AdmissionLimits l;
  l.max_connections = 6;
  l.max_connections_per_source = 4;
  l.max_handshakes_per_source = 2;
  l.max_pending_sessions = 3;
  l.max_pending_sessions_per_source = 2;
  return l;
}

TEST(AdmissionTest, HandshakesPerSourceAreBoundedAndFreedWhenTheyEnd) {
  auto admission = Admission::Create(Small());
  std::vector<Admission::Ticket> held;
  for (int i = 0; i < 2; ++i) {
    auto t = admission->Admit("10.0.0.1");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    held.push_back(std::move(t).value());
  }
  Limit limit{};
  auto refused = admission->Admit("10.0.0.1", &limit);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "10.0.0.1 already has 2 connections in the handshake with this reducer (--max-handshakes-per-source)");
  EXPECT_EQ(limit, Limit::kMaxHandshakesPerSource);
  // Another address is not held back by this one.
  EXPECT_TRUE(admission->Admit("10.0.0.2").ok());

  // A stream that joined leaves the handshake but keeps its connection.
  held[0].EndHandshake(HandshakeEnd::kJoined);
  held[0].EndHandshake(HandshakeEnd::kRefused, Code::kProtocol);  // only the first end counts
  auto next = admission->Admit("10.0.0.1");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  const AdmissionSnapshot s = admission->Snapshot();
  EXPECT_EQ(s.connections, 3u);  // the 10.0.0.2 ticket was dropped at once
  EXPECT_EQ(s.handshakes, 2u);
  EXPECT_EQ(s.refused[static_cast<size_t>(Limit::kMaxHandshakesPerSource)], 1u);
  EXPECT_EQ(s.handshakes_refused[static_cast<size_t>(Code::kProtocol)], 0u);
}

TEST(AdmissionTest, ConnectionsAreBoundedPerSourceAndInAll) {
  auto admission = Admission::Create(Small());
  std::vector<Admission::Ticket> held;
  auto admit = [&](const std::string& source) {
    auto t = admission->Admit(source);
    if (!t.ok()) return t.status();
    t->EndHandshake(HandshakeEnd::kJoined);
    held.push_back(std::move(t).value());
    return Status::Ok();
  };
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(admit("10.0.0.1").ok());
  EXPECT_EQ(admit("10.0.0.1").message(),
            "10.0.0.1 already has 4 connections open to this reducer (--max-connections-per-source)");
  ASSERT_TRUE(admit("10.0.0.2").ok());
  ASSERT_TRUE(admit("10.0.0.3").ok());
  EXPECT_EQ(admit("10.0.0.4").message(), "this reducer already has 6 connections open (--max-connections)");
  held.clear();
  EXPECT_EQ(admission->Snapshot().connections, 0u);
  EXPECT_TRUE(admit("10.0.0.4").ok());
}

TEST(AdmissionTest, PendingSessionsAreBoundedPerSourceAndInAll) {
  auto admission = Admission::Create(Small());
  auto a = admission->Admit("10.0.0.1");
  auto b = admission->Admit("10.0.0.2");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(admission->OpenPendingSession("10.0.0.1").ok());
  EXPECT_TRUE(admission->OpenPendingSession("10.0.0.1").ok());
  Limit limit{};
  Status st = admission->OpenPendingSession("10.0.0.1", &limit);
  EXPECT_EQ(limit, Limit::kMaxPendingSessionsPerSource);
  EXPECT_EQ(st.message(),
            "10.0.0.1 already opened 2 sessions that wait for their ranks to join "
            "(--max-pending-sessions-per-source)");
  EXPECT_TRUE(admission->OpenPendingSession("10.0.0.2").ok());
  st = admission->OpenPendingSession("10.0.0.2", &limit);
  EXPECT_EQ(limit, Limit::kMaxPendingSessions);
  EXPECT_EQ(st.message(),
            "this reducer already has 3 sessions waiting for their ranks to join (--max-pending-sessions)");
  admission->ClosePendingSession("10.0.0.1");
  EXPECT_TRUE(admission->OpenPendingSession("10.0.0.2").ok());
  EXPECT_EQ(admission->Snapshot().pending_sessions, 3u);
}

TEST(AdmissionTest, HowHandshakesEndIsCounted) {
  auto admission = Admission::Create(Small());
  {
    auto refused = admission->Admit("10.0.0.1");
    refused->EndHandshake(HandshakeEnd::kRefused, Code::kAuth);
    auto timed_out = admission->Admit("10.0.0.1");
    timed_out->EndHandshake(HandshakeEnd::kTimedOut);
  }
  {
    auto abandoned = admission->Admit("10.0.0.1");  // destroyed in the handshake
  }
  const AdmissionSnapshot s = admission->Snapshot();
  EXPECT_EQ(s.handshakes_refused[static_cast<size_t>(Code::kAuth)], 1u);
  EXPECT_EQ(s.handshakes_timed_out, 1u);
  EXPECT_EQ(s.handshakes_abandoned, 1u);
  EXPECT_EQ(s.connections, 0u);
  EXPECT_EQ(s.handshakes, 0u);
}

TEST(AdmissionTest, ATicketMayOutliveTheServerThatIssuedIt) {
  std::optional<Admission::Ticket> ticket;
  {
    auto admission = Admission::Create(Small());
    ticket.emplace(std::move(admission->Admit("10.0.0.1")).value());
  }
  ticket.reset();  // must not touch freed memory (ASan)
}

}  // namespace
}  // namespace rs::server
