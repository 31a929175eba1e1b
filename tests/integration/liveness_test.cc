// Liveness in seconds: a frozen reducer or a frozen worker is named to every
// rank within the liveness timeout (plus a tick), long before any operation
// timeout, while a session that is merely idle or waiting for a straggler
// stays up. Real reducerd processes on 127.0.0.1; the frozen party is
// stopped with SIGSTOP (alive, silent, its sockets open: what a hung process,
// a dead host or a cut link look like from the other end).
#include <signal.h>

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kLiveness = milliseconds(2000);
// The bound docs/reliability.md promises (timeout plus a tenth) with room for a busy
// 2-core test machine under sanitizers.
constexpr auto kDetectionBound = kLiveness + seconds(2);

class LivenessTest : public ::testing::Test {
 public:
  void SetUp() override {
    // Operation timeouts far beyond the liveness bound: whatever is detected
    // here is detected by liveness.
    reducer_ = std::make_unique<ReducerProcess>(std::vector<std::string>{"--op-timeout", "120s"});
    ASSERT_TRUE(reducer_->ok()) << reducer_->Log();
  }

  client::ClientOptions RankOptions(const std::string& session, uint32_t rank, uint32_t world) {
    auto o = Options({reducer_->endpoint()}, session, rank, world);
    o.op_timeout = seconds(120);
    o.liveness_timeout = kLiveness;
    return o;
  }

  std::unique_ptr<ReducerProcess> reducer_;
};

TEST_F(LivenessTest, FrozenReducerIsNamedToEveryRankWithinTheBound) {
  std::vector<Status> errors(2);
  std::vector<std::chrono::steady_clock::duration> waited(2);
  std::atomic<int> joined{0};
  std::atomic<bool> frozen{false};
  std::chrono::steady_clock::time_point frozen_at;
  RunRanks(2, [&](uint32_t rank) {
    auto c = client::Client::Create(RankOptions("frozen-reducer", rank, 2));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    // The reducer is frozen once both ranks joined and before either sends.
    if (++joined == 2) {
      frozen_at = std::chrono::steady_clock::now();
      EXPECT_TRUE(FreezeProcess(reducer_->pid()));
      frozen = true;
    }
    const auto give_up = std::chrono::steady_clock::now() + seconds(60);  // the other rank failed to join
    while (!frozen && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    ASSERT_TRUE(frozen) << "the other rank never joined";
    std::vector<float> v(1 << 14, 1.0f);
    errors[rank] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                       ->Wait(seconds(60));
    waited[rank] = std::chrono::steady_clock::now() - frozen_at;
  });
  kill(reducer_->pid(), SIGCONT);
  const std::string name = "reducer 127.0.0.1:" + std::to_string(reducer_->port()) + " sent nothing for ";
  for (uint32_t r = 0; r < 2; ++r) {
    // With failover on (the default) the only reducer is gone: below the
    // minimum of one, and the message says what was observed.
    EXPECT_EQ(errors[r].code(), Code::kPeerFailed) << errors[r].ToString();
    EXPECT_NE(errors[r].message().find("only 0 of 1 reducers left"), std::string::npos) << errors[r].message();
    EXPECT_NE(errors[r].message().find(name), std::string::npos) << errors[r].message();
    EXPECT_NE(errors[r].message().find("heartbeats stopped"), std::string::npos) << errors[r].message();
    EXPECT_LT(waited[r], kDetectionBound);
  }
}

// Without failover (with it, the reducer gives the worker twice as long:
// FailoverTest.WorkerLossIsStillFatalWithTheCauseOnEveryRank).
TEST_F(LivenessTest, FrozenWorkerIsNamedByTheReducerWithinTheBound) {
  auto victim = std::make_unique<ChildProcess>(std::vector<std::string>{
      std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", "127.0.0.1:" + std::to_string(reducer_->port()),
      "frozen-worker", "2", "3", "", "1", std::to_string(kLiveness.count()), "nofailover"});
  std::chrono::steady_clock::time_point frozen_at;
  std::thread injector([&] {
    ASSERT_TRUE(victim->WaitForOutput("stalling before operation", seconds(30))) << victim->Output();
    frozen_at = std::chrono::steady_clock::now();
    kill(victim->pid(), SIGSTOP);
  });
  std::vector<Status> errors(2);
  std::vector<std::chrono::steady_clock::time_point> at(2);
  RunRanks(2, [&](uint32_t rank) {
    auto o = RankOptions("frozen-worker", rank, 3);
    o.failover = false;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> v(1 << 16, 1.0f);
    for (int i = 0; i < 2 && errors[rank].ok(); ++i) {
      errors[rank] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                         ->Wait(seconds(60));
    }
    at[rank] = std::chrono::steady_clock::now();
  });
  injector.join();
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].code(), Code::kPeerFailed) << errors[r].ToString();
    EXPECT_NE(errors[r].message().find("rank 2 ("), std::string::npos) << errors[r].message();
    EXPECT_NE(errors[r].message().find("sent nothing to reducer 127.0.0.1:" + std::to_string(reducer_->port())),
              std::string::npos)
        << errors[r].message();
    EXPECT_LT(at[r] - frozen_at, kDetectionBound);
  }
  kill(victim->pid(), SIGKILL);
}

// A rank whose session fails for another reason (here a killed rank, found
// by its next operation) while one of its reducers has been frozen for a
// while closes at once: it does not wait for the frozen reducer to read its
// ERROR (the client's linger, 1 s).
TEST_F(LivenessTest, AFailedClientClosesWithoutWaitingForAFrozenReducer) {
  ReducerProcess frozen({"--op-timeout", "120s"});
  ASSERT_TRUE(frozen.ok()) << frozen.Log();
  constexpr auto kTimeout = milliseconds(5000);  // heartbeats every 1 s; silence reported at 5 s
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(reducer_->port()) + ",127.0.0.1:" + std::to_string(frozen.port());
  ChildProcess victim({std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", endpoints, "frozen-at-close", "1", "2",
                       "", "1", std::to_string(kTimeout.count()), "nofailover"});
  auto o = Options({reducer_->endpoint(), frozen.endpoint()}, "frozen-at-close", 0, 2);
  o.op_timeout = seconds(120);
  o.liveness_timeout = kTimeout;
  o.failover = false;
  auto c = client::Client::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> v(1 << 16, 1.0f);
  ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                  ->Wait(seconds(60))
                  .ok());
  ASSERT_TRUE(victim.WaitForOutput("stalling before operation", seconds(30))) << victim.Output();
  ASSERT_TRUE(FreezeProcess(frozen.pid()));
  // Past two missed heartbeats (2 s and a tick), well short of the 5 s timeout.
  std::this_thread::sleep_for(milliseconds(3000));
  victim.Kill();
  // Killed between operations, rank 1 may have left as a rank that ended
  // does (its connection closed at a frame boundary): rank 0 then learns of
  // it with its next operation, large enough to reach both reducers.
  std::vector<float> next(1 << 20, 1.0f);
  const Status failed = (*c)->AllReduce(next.data(), next.data(), next.size(), DataType::kFloat32, ReduceOp::kSum)
                            ->Wait(seconds(30));
  EXPECT_EQ(failed.code(), Code::kPeerFailed) << failed.ToString();
  const Status health = (*c)->health();
  EXPECT_EQ(health.code(), Code::kPeerFailed) << health.ToString();
  EXPECT_NE(health.message().find("rank 1 disconnected"), std::string::npos) << health.message();
  const auto closing = std::chrono::steady_clock::now();
  c->reset();
  const auto closed_in = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - closing);
  kill(frozen.pid(), SIGCONT);
  EXPECT_LT(closed_in.count(), 500) << "ms to close";
}

// A failing client gives its operations back their error only once no
// socket still writes from their buffers. A write stuck on a reducer that
// froze a moment ago (before it missed two heartbeats, so the client still
// sends it the ERROR frame) must not hold that up: before, Wait timed out
// with "still running" instead of the cause, and the NCCL plugin, which
// polls Done(), would have waited for ever. Rank 0 here runs a 48 MiB
// all-reduce (24 MiB to each reducer, more than loopback's buffers hold)
// with `liveness`, one reducer freezes, and rank 1, a process, is killed.
// The operation must fail naming rank 1; returns how long it took.
double FailWithAStuckWrite(const ReducerProcess& live, milliseconds liveness) {
  ReducerProcess frozen({"--op-timeout", "120s"});
  EXPECT_TRUE(frozen.ok()) << frozen.Log();
  const std::string endpoints =
      "127.0.0.1:" + std::to_string(live.port()) + ",127.0.0.1:" + std::to_string(frozen.port());
  ChildProcess victim({std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", endpoints, "stuck-at-failure", "1",
                       "2", "", "1", std::to_string(liveness.count()), "nofailover"});
  auto o = Options({live.endpoint(), frozen.endpoint()}, "stuck-at-failure", 0, 2);
  o.op_timeout = seconds(120);
  o.liveness_timeout = liveness;
  o.failover = false;
  o.send_window_bytes = size_t{64} << 20;  // every piece goes out at once
  auto c = client::Client::Create(o);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().ToString();
    return 0;
  }
  std::vector<float> v(12 << 20, 1.0f);
  Status st = (*c)->AllReduce(v.data(), v.data(), 1 << 16, DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
  if (!st.ok()) {
    ADD_FAILURE() << st.ToString();
    return 0;
  }
  EXPECT_TRUE(victim.WaitForOutput("stalling before operation", seconds(30))) << victim.Output();
  EXPECT_TRUE(FreezeProcess(frozen.pid()));
  const auto start = std::chrono::steady_clock::now();
  auto op = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum);
  std::this_thread::sleep_for(milliseconds(500));  // the pieces are out; the write to `frozen` is stuck
  victim.Kill();
  st = op->Wait(seconds(40));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  kill(frozen.pid(), SIGCONT);
  EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
  EXPECT_NE(st.message().find("rank 1 disconnected"), std::string::npos) << st.message();
  std::printf("the failed operation returned after %.2f s\n", took);
  return took;
}

TEST_F(LivenessTest, AFailedOperationReturnsItsErrorWhileAWriteToAFrozenReducerIsStuck) {
  // With a 10 s timeout, the frozen reducer misses two heartbeats 4 s in.
  // Those 4 s and a liveness tick, short of the 2 x 10 s that a closing
  // stream's writes get at most.
  EXPECT_LT(FailWithAStuckWrite(*reducer_, seconds(10)), 10.0);
}

TEST_F(LivenessTest, WithLivenessOffAStuckWriteIsGivenUpAfterTenSeconds) {
  // No heartbeats tell the frozen reducer apart: the closing stream's writes
  // get their fixed bound, 10 s, and not for ever.
  EXPECT_LT(FailWithAStuckWrite(*reducer_, milliseconds(0)), 20.0);
}

TEST_F(LivenessTest, IdleSessionsAndStragglersAreNotMistakenForSilence) {
  RunRanks(2, [&](uint32_t rank) {
    auto o = RankOptions("idle", rank, 2);
    o.liveness_timeout = milliseconds(300);
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    // Idle for several timeouts: heartbeats keep both directions alive.
    std::this_thread::sleep_for(milliseconds(1500));
    // Rank 1 is a straggler: rank 0's piece waits at the reducer meanwhile,
    // with nothing to send in either direction but heartbeats.
    if (rank == 1) std::this_thread::sleep_for(milliseconds(1500));
    std::vector<float> v(1 << 16, 1.0f + static_cast<float>(rank));
    Status st = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                    ->Wait(seconds(60));
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(v[0], 3.0f);
    EXPECT_TRUE((*c)->health().ok()) << (*c)->health().ToString();
  });
}


// Closing a client (the NCCL plugin's closeColl, which NCCL's abort calls
// with operations still in flight) finishes every operation it had not
// completed: a thread waiting on one returns, with the reason, instead of
// waiting out its timeout. Rank 1 never issues the operation, so rank 0's
// cannot complete; with `freeze`, one reducer is frozen first, so rank 0's
// write of a 48 MiB operation to it is stuck too.
void ExpectCloseFinishesTheOperation(const ReducerProcess& live, bool freeze) {
  ReducerProcess other({"--op-timeout", "120s"});
  ASSERT_TRUE(other.ok()) << other.Log();
  std::vector<std::unique_ptr<client::Client>> clients(2);
  RunRanks(2, [&](uint32_t rank) {
    auto o = Options({live.endpoint(), other.endpoint()}, freeze ? "closed-stuck" : "closed-in-flight", rank, 2);
    o.op_timeout = seconds(120);
    o.send_window_bytes = size_t{64} << 20;  // every piece goes out at once
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients[rank] = std::move(c).value();
  });
  ASSERT_TRUE(clients[0] && clients[1]);
  if (freeze) {
    ASSERT_TRUE(FreezeProcess(other.pid()));
  }
  std::vector<float> v(12 << 20, 1.0f);
  auto op = clients[0]->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum);
  Status waited;
  std::thread waiter([&] { waited = op->Wait(seconds(60)); });
  std::this_thread::sleep_for(milliseconds(500));  // the pieces are out
  const auto closing = std::chrono::steady_clock::now();
  clients[0].reset();
  waiter.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - closing).count();
  kill(other.pid(), SIGCONT);
  EXPECT_TRUE(op->Done());
  EXPECT_EQ(waited.code(), Code::kCancelled) << waited.ToString();
  EXPECT_NE(waited.message().find("the client was closed before operation 0 completed"), std::string::npos)
      << waited.message();
  EXPECT_LT(took, 10.0);  // the close's own bound (2 s), far from the wait's 60 s
  std::printf("the waiting thread returned %.2f s after the close began\n", took);
}

TEST_F(LivenessTest, ClosingTheClientFinishesAnOperationInFlight) { ExpectCloseFinishesTheOperation(*reducer_, false); }

TEST_F(LivenessTest, ClosingTheClientFinishesAnOperationStuckOnAFrozenReducer) {
  ExpectCloseFinishesTheOperation(*reducer_, true);
}

}  // namespace
}  // namespace rs::testing
