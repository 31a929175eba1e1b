// Everything that can go wrong between workers and reducers must end in a
// clear error on every rank, never a hang, and the reducer must go on
// serving fresh sessions afterwards.
#include <signal.h>

#include <gtest/gtest.h>

#include <asio.hpp>
#include <thread>

#include "protocol/wire.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kFailuresToken[] = "failures-token";

class FailuresTest : public ::testing::Test {
 public:
  void SetUp() override {
    token_file_ = WriteTokenFile(kFailuresToken);
    reducer_ = std::make_unique<ReducerProcess>(std::vector<std::string>{
        "--job-token-file", token_file_, "--op-timeout", "3s", "--join-timeout", "3s"});
    ASSERT_TRUE(reducer_->ok()) << reducer_->Log();
  }

  client::ClientOptions RankOptions(const std::string& session, uint32_t rank, uint32_t world,
                                    const std::string& token = kFailuresToken) {
    auto o = Options({reducer_->endpoint()}, session, rank, world, token);
    o.connect_timeout = seconds(15);
    o.op_timeout = seconds(15);
    return o;
  }

  uint16_t port() const { return reducer_->port(); }

  // A healthy 2-rank session must work after whatever the test broke.
  void ExpectFreshSessionWorks(const std::string& session) {
    RunRanks(2, [&](uint32_t rank) {
      auto c = client::Client::Create(RankOptions(session, rank, 2));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::vector<float> v(1000, 1.0f + rank);
      ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
      EXPECT_EQ(v[999], 3.0f);
    });
  }

  // Sends raw bytes to the reducer and returns the ERROR frame it answers with.
  protocol::ErrorFrame RawExchange(const std::vector<uint8_t>& bytes) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), reducer_->port()});
    asio::write(s, asio::buffer(bytes));
    std::array<uint8_t, protocol::kHeaderBytes> head;
    asio::read(s, asio::buffer(head));
    protocol::FrameHeader h;
    EXPECT_TRUE(protocol::DecodeHeader(head, 0, &h).ok());
    EXPECT_EQ(h.type, protocol::FrameType::kError);
    std::vector<uint8_t> payload(h.payload_bytes);
    asio::read(s, asio::buffer(payload));
    protocol::ErrorFrame err;
    EXPECT_TRUE(protocol::DecodeError(payload, &err).ok());
    return err;
  }

  std::string token_file_;
  std::unique_ptr<ReducerProcess> reducer_;
};

TEST_F(FailuresTest, WrongTokenIsRefusedAndTheOtherRanksLearnWhoIsMissing) {
  std::vector<Status> results(3);
  RunRanks(3, [&](uint32_t rank) {
    auto c = client::Client::Create(RankOptions("wrong-token", rank, 3, rank == 1 ? "not-the-token" : kFailuresToken));
    results[rank] = c.ok() ? Status() : c.status();
  });
  EXPECT_EQ(results[1].code(), Code::kAuth);
  EXPECT_NE(results[1].message().find("job token does not match"), std::string::npos) << results[1].message();
  for (uint32_t r : {0u, 2u}) {
    EXPECT_EQ(results[r].code(), Code::kTimeout) << results[r].ToString();
    EXPECT_NE(results[r].message().find("rank 1 never joined"), std::string::npos) << results[r].message();
  }
  ExpectFreshSessionWorks("after-wrong-token");
}

TEST_F(FailuresTest, MissingTokenIsExplained) {
  auto c = client::Client::Create(RankOptions("no-token", 0, 1, ""));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kAuth);
  EXPECT_NE(c.status().message().find("requires a job token"), std::string::npos) << c.status().message();
}

TEST_F(FailuresTest, WorkerWithATokenRefusesAReducerThatChecksNone) {
  // A downgrade: a worker holding the job's token must neither send its
  // gradients to nor trust sums from a reducer that lets any process in.
  ReducerProcess open_reducer({"--op-timeout", "3s", "--join-timeout", "3s"});
  ASSERT_TRUE(open_reducer.ok()) << open_reducer.Log();
  auto o = Options({open_reducer.endpoint()}, "downgrade", 0, 1, kFailuresToken);
  o.connect_timeout = seconds(15);
  auto c = client::Client::Create(o);
  ASSERT_FALSE(c.ok()) << "a worker with a token finished its join with a reducer that checks no token";
  EXPECT_EQ(c.status().code(), Code::kAuth) << c.status().ToString();
  const std::string& why = c.status().message();
  EXPECT_NE(why.find("reducer 127.0.0.1:" + std::to_string(open_reducer.port())), std::string::npos) << why;
  EXPECT_NE(why.find("does not check job tokens"), std::string::npos) << why;
  EXPECT_NE(why.find("--job-token-file"), std::string::npos) << why;
  // Without a token on either side the same reducer still serves.
  auto open = client::Client::Create(Options({open_reducer.endpoint()}, "open", 0, 1, ""));
  EXPECT_TRUE(open.ok()) << open.status().ToString();
}

TEST_F(FailuresTest, AConflictingHelloIsRefusedAndTheRunningSessionGoesOn) {
  auto running = client::Client::Create(RankOptions("running", 0, 1));
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  // Another process with the token and the session's id, but world 2.
  auto late = client::Client::Create(RankOptions("running", 1, 2));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), Code::kMismatch) << late.status().ToString();
  EXPECT_NE(late.status().message().find("it is already running with all its 1 ranks"), std::string::npos)
      << late.status().message();
  EXPECT_NE(late.status().message().find("with world size 2"), std::string::npos) << late.status().message();
  std::vector<float> v(1000, 3.0f);
  ASSERT_TRUE((*running)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
  EXPECT_EQ(v[999], 3.0f);
}

TEST_F(FailuresTest, WrongProtocolVersionIsRefusedNamingBothVersions) {
  protocol::Hello hello;
  hello.world = 1;
  const protocol::ErrorFrame err = RawExchange(protocol::EncodeHello(hello, /*version=*/1));
  EXPECT_EQ(err.code, Code::kVersion);
  EXPECT_EQ(err.message, "protocol version 1 not supported, this reducer speaks 3");
  ExpectFreshSessionWorks("after-wrong-version");
}

TEST_F(FailuresTest, GarbageIsRefusedAsNotOurProtocol) {
  const std::string http = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  const protocol::ErrorFrame err = RawExchange(std::vector<uint8_t>(http.begin(), http.end()));
  EXPECT_EQ(err.code, Code::kProtocol);
  EXPECT_NE(err.message.find("bad magic"), std::string::npos) << err.message;
  ExpectFreshSessionWorks("after-garbage");
}

// Runs one all-reduce per rank where `dtype_of` / `count_of` may disagree.
std::vector<Status> MismatchedRun(FailuresTest* t, const std::string& session,
                                  const std::function<DataType(uint32_t)>& dtype_of,
                                  const std::function<size_t(uint32_t)>& count_of) {
  std::vector<Status> results(4);
  RunRanks(4, [&](uint32_t rank) {
    auto c = client::Client::Create(t->RankOptions(session, rank, 4));
    if (!c.ok()) {  // a slow rank may learn of the failure while joining
      results[rank] = c.status();
      return;
    }
    std::vector<double> buf(4096, 1.0);
    results[rank] = (*c)->AllReduce(buf.data(), buf.data(), count_of(rank), dtype_of(rank), ReduceOp::kSum)
                        ->Wait(seconds(30));
  });
  return results;
}

TEST_F(FailuresTest, DtypeMismatchFailsEveryRankNamingTheRanksAndTypes) {
  auto results = MismatchedRun(
      this, "dtype-mismatch", [](uint32_t r) { return r == 2 ? DataType::kBfloat16 : DataType::kFloat32; },
      [](uint32_t) { return 1000; });
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r].code(), Code::kMismatch) << "rank " << r << ": " << results[r].ToString();
    EXPECT_NE(results[r].message().find("rank 2"), std::string::npos) << results[r].message();
    EXPECT_NE(results[r].message().find("bfloat16"), std::string::npos) << results[r].message();
    EXPECT_NE(results[r].message().find("float32"), std::string::npos) << results[r].message();
  }
  ExpectFreshSessionWorks("after-dtype-mismatch");
}

TEST_F(FailuresTest, CountMismatchFailsEveryRankNamingTheCounts) {
  auto results = MismatchedRun(
      this, "count-mismatch", [](uint32_t) { return DataType::kFloat32; },
      [](uint32_t r) -> size_t { return r == 3 ? 999 : 1000; });
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r].code(), Code::kMismatch) << "rank " << r << ": " << results[r].ToString();
    EXPECT_NE(results[r].message().find("999 elements"), std::string::npos) << results[r].message();
    EXPECT_NE(results[r].message().find("1000 elements"), std::string::npos) << results[r].message();
  }
  ExpectFreshSessionWorks("after-count-mismatch");
}

TEST_F(FailuresTest, WorldSizeMismatchIsReported) {
  std::vector<Status> results(2);
  RunRanks(2, [&](uint32_t rank) {
    auto c = client::Client::Create(RankOptions("world-mismatch", rank, rank == 0 ? 2 : 3));
    results[rank] = c.ok() ? Status() : c.status();
  });
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), Code::kMismatch) << st.ToString();
    EXPECT_NE(st.message().find("world size"), std::string::npos) << st.message();
  }
  ExpectFreshSessionWorks("after-world-mismatch");
}

// The rank in a separate process that the test kills or freezes.
std::unique_ptr<ChildProcess> StartVictim(uint16_t port, const std::string& session, int ops) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", "127.0.0.1:" + std::to_string(port), session, "3",
      "4", kFailuresToken, std::to_string(ops)});
}

struct SurvivorError {
  Status status;
  std::chrono::steady_clock::time_point at;
};

// Ranks 0-2 of a 4-rank session run `ops` + 1 all-reduces while `fault` acts
// on rank 3 (a separate process) once it stalls before operation `ops`.
// Returns each survivor's error and when it arrived.
std::vector<SurvivorError> RunSurvivors(FailuresTest* t, const std::string& session, int ops,
                                        const std::function<void(ChildProcess&)>& fault) {
  auto victim = StartVictim(t->port(), session, ops);
  std::vector<SurvivorError> errors(3);
  std::thread injector([&] {
    ASSERT_TRUE(victim->WaitForOutput("stalling before operation", seconds(30))) << victim->Output();
    // The survivors are now inside operation `ops`, waiting for rank 3.
    fault(*victim);
  });
  RunRanks(3, [&](uint32_t rank) {
    auto c = client::Client::Create(t->RankOptions(session, rank, 4));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> v(1 << 16, 1.0f);
    for (int i = 0; i <= ops; ++i) {
      Status st = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      if (!st.ok()) {
        errors[rank] = {st, std::chrono::steady_clock::now()};
        return;
      }
    }
  });
  injector.join();
  return errors;
}

TEST_F(FailuresTest, KilledWorkerIsNamedToTheOthersAtOnce) {
  std::chrono::steady_clock::time_point killed_at;
  auto errors = RunSurvivors(this, "killed", 3, [&](ChildProcess& victim) {
    killed_at = std::chrono::steady_clock::now();
    victim.Kill();
  });
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r].status.code(), Code::kPeerFailed) << "rank " << r << ": " << errors[r].status.ToString();
    EXPECT_NE(errors[r].status.message().find("rank 3 disconnected"), std::string::npos) << errors[r].status.message();
    // Within the reducer's --op-timeout (3 s): the disconnect is seen at once.
    EXPECT_LT(errors[r].at - killed_at, seconds(3));
  }
  ExpectFreshSessionWorks("after-kill");
}

TEST_F(FailuresTest, FrozenWorkerTimesOutNamingIt) {
  pid_t frozen = -1;
  auto errors = RunSurvivors(this, "frozen", 2, [&](ChildProcess& victim) {
    frozen = victim.pid();
    EXPECT_TRUE(FreezeProcess(frozen));  // alive but silent, like a hung GPU or a cut link
  });
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r].status.code(), Code::kTimeout) << "rank " << r << ": " << errors[r].status.ToString();
    EXPECT_NE(errors[r].status.message().find("rank 3 never contributed"), std::string::npos)
        << errors[r].status.message();
  }
}

// With failover off (with it on, FailoverTest covers losing a reducer).
TEST_F(FailuresTest, DeadReducerFailsEveryRank) {
  std::vector<Status> errors(2);
  std::atomic<int> joined{0};
  RunRanks(2, [&](uint32_t rank) {
    auto o = RankOptions("dead-reducer", rank, 2);
    o.failover = false;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (++joined == 2) kill(reducer_->pid(), SIGKILL);
    std::vector<float> v(1 << 16, 1.0f);
    for (int i = 0; i < 1000; ++i) {
      Status st = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(30));
      if (!st.ok()) {
        errors[rank] = st;
        return;
      }
    }
  });
  for (const Status& st : errors) {
    EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
    EXPECT_NE(st.message().find("reducer 127.0.0.1:" + std::to_string(reducer_->port())), std::string::npos)
        << st.message();
  }
}

TEST_F(FailuresTest, SigtermLetsTheRunningSessionFinishThenExitsZero) {
  std::atomic<bool> terminated{false};
  int exit_code = -2;
  RunRanks(2, [&](uint32_t rank) {
    auto c = client::Client::Create(RankOptions("drain", rank, 2));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (rank == 0) {
      kill(reducer_->pid(), SIGTERM);
      terminated = true;
    }
    std::vector<float> v(1 << 18, 1.0f);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(30)).ok());
    }
  });
  ASSERT_TRUE(terminated);
  exit_code = reducer_->Terminate(seconds(20));
  EXPECT_EQ(exit_code, 0) << reducer_->Log();
}

}  // namespace
}  // namespace rs::testing
