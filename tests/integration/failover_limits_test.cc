// What failover does not save, and what it costs: below the minimum number
// of reducers the session fails saying so; losing a worker stays fatal, with
// the root cause on every rank; and when the memory for retained
// contributions is full, operations wait instead of failing.
#include <signal.h>

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/reducer_fleet.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kLimitsLiveness = milliseconds(1000);

class FailoverLimitsTest : public ReducerFleetTest {
 public:
  client::ClientOptions RankOptions(const std::string& session, uint32_t rank, uint32_t world) {
    auto o = Options(Endpoints(), session, rank, world);
    o.liveness_timeout = kLimitsLiveness;
    return o;
  }
};

TEST_F(FailoverLimitsTest, BelowTheMinimumOfReducersTheSessionFailsSayingSo) {
  Start(3);
  std::vector<Status> errors(3);
  std::atomic<int> joined{0};
  RunRanks(3, [&](uint32_t rank) {
    auto o = RankOptions("below-minimum", rank, 3);
    o.min_reducers = 2;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (++joined == 3) {
      kill(reducers_[0]->pid(), SIGKILL);
      kill(reducers_[2]->pid(), SIGKILL);
    }
    std::vector<float> v(300'000, 1.0f);
    for (int i = 0; i < 1000 && errors[rank].ok(); ++i) {
      errors[rank] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                         ->Wait(seconds(60));
    }
  });
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r].code(), Code::kPeerFailed) << errors[r].ToString();
    EXPECT_NE(errors[r].message().find("below the minimum of 2"), std::string::npos) << errors[r].message();
    EXPECT_NE(errors[r].message().find("127.0.0.1:" + std::to_string(reducers_[0]->port())), std::string::npos)
        << errors[r].message();
  }
}

// Rank 3 runs in its own process (the one the test kills or freezes).
std::unique_ptr<ChildProcess> StartLimitsVictim(const std::vector<client::Endpoint>& reducers,
                                                const std::string& session, int ops) {
  std::string list;
  for (const auto& e : reducers) list += (list.empty() ? "" : ",") + e.ToString();
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", list, session, "3", "4", "", std::to_string(ops),
      std::to_string(kLimitsLiveness.count())});
}

struct Loss {
  std::vector<Status> errors = std::vector<Status>(3);
  std::vector<std::chrono::steady_clock::time_point> at = std::vector<std::chrono::steady_clock::time_point>(3);
  std::chrono::steady_clock::time_point fault_at;
};

// `first`, when given, runs just before the victim is hit (another fault).
Loss LoseTheWorker(FailoverLimitsTest* t, const std::string& session, int signal,
                   const std::function<void()>& first = {}) {
  Loss loss;
  auto victim = StartLimitsVictim(t->Endpoints(), session, 3);
  std::thread injector([&] {
    ASSERT_TRUE(victim->WaitForOutput("stalling before operation", seconds(30))) << victim->Output();
    if (first) first();
    loss.fault_at = std::chrono::steady_clock::now();
    kill(victim->pid(), signal);
  });
  RunRanks(3, [&](uint32_t rank) {
    auto c = client::Client::Create(t->RankOptions(session, rank, 4));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> v(1 << 16, 1.0f);
    for (int i = 0; i < 4 && loss.errors[rank].ok(); ++i) {
      loss.errors[rank] = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                              ->Wait(seconds(60));
    }
    loss.at[rank] = std::chrono::steady_clock::now();
  });
  injector.join();
  kill(victim->pid(), SIGKILL);
  return loss;
}

TEST_F(FailoverLimitsTest, KilledWorkerIsStillFatalWithTheCauseOnEveryRank) {
  Start(2);
  const Loss loss = LoseTheWorker(this, "killed-worker", SIGKILL);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(loss.errors[r].code(), Code::kPeerFailed) << loss.errors[r].ToString();
    EXPECT_NE(loss.errors[r].message().find("rank 3 disconnected"), std::string::npos) << loss.errors[r].message();
    EXPECT_LT(loss.at[r] - loss.fault_at, seconds(3));
  }
}

TEST_F(FailoverLimitsTest, FrozenWorkerIsStillFatalWithTheCauseOnEveryRank) {
  Start(2);
  const Loss loss = LoseTheWorker(this, "frozen-worker", SIGSTOP);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(loss.errors[r].code(), Code::kPeerFailed) << loss.errors[r].ToString();
    EXPECT_NE(loss.errors[r].message().find("rank 3 ("), std::string::npos) << loss.errors[r].message();
    EXPECT_NE(loss.errors[r].message().find("sent nothing to reducer"), std::string::npos) << loss.errors[r].message();
    // With failover the reducers give a silent worker twice the liveness
    // timeout (its link to one reducer may be all that was cut).
    EXPECT_LT(loss.at[r] - loss.fault_at, 2 * kLimitsLiveness + seconds(2));
  }
}

// The coordinator is killed and a worker frozen at once: the epoch change
// waits for a report the frozen rank never sends. The reducers left still
// name the frozen rank within their bound, so no rank waits on the change.
TEST_F(FailoverLimitsTest, AWorkerFrozenDuringAFailoverIsStillFatalWithTheCause) {
  Start(3);
  const Loss loss = LoseTheWorker(this, "frozen-during-failover", SIGSTOP, [&] { kill(reducers_[0]->pid(), SIGKILL); });
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(loss.errors[r].code(), Code::kPeerFailed) << loss.errors[r].ToString();
    EXPECT_NE(loss.errors[r].message().find("rank 3 ("), std::string::npos) << loss.errors[r].message();
    EXPECT_NE(loss.errors[r].message().find("sent nothing to reducer"), std::string::npos) << loss.errors[r].message();
    EXPECT_LT(loss.at[r] - loss.fault_at, 2 * kLimitsLiveness + seconds(2));
  }
}

TEST_F(FailoverLimitsTest, FullRetentionMakesOperationsWaitNotFail) {
  Start(2);
  constexpr int kOps = 64;
  constexpr size_t kCount = 128 << 10;  // 512 KiB of float32 each
  RunRanks(3, [&](uint32_t rank) {
    auto o = RankOptions("retention", rank, 3);
    o.retention_bytes = 1 << 20;  // two operations' worth
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<std::vector<float>> bufs(kOps, std::vector<float>(kCount));
    std::vector<std::shared_ptr<client::Operation>> ops;
    for (int k = 0; k < kOps; ++k) {
      for (size_t i = 0; i < kCount; ++i) bufs[k][i] = static_cast<float>((rank + 1) * k + i % 3);
      ops.push_back((*c)->AllReduce(bufs[k].data(), bufs[k].data(), kCount, DataType::kFloat32, ReduceOp::kSum));
    }
    for (int k = 0; k < kOps; ++k) {
      ASSERT_TRUE(ops[k]->Wait(seconds(60)).ok()) << ops[k]->status().ToString();
      for (size_t i = 0; i < kCount; i += 4099) ASSERT_EQ(bufs[k][i], static_cast<float>(6 * k + 3 * (i % 3)));
    }
    const auto stats = (*c)->stats();
    EXPECT_GT(stats.retention_waits, 0u);
    EXPECT_LE(stats.retained_peak_bytes, size_t{1} << 20);
  });
}

}  // namespace
}  // namespace rs::testing
