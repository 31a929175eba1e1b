// A reducer serves many jobs for weeks: a session that ends badly must leave
// nothing behind on it. After each way a session can end badly (a worker
// killed or frozen while the others' contributions wait in memory, ranks
// that fail over away from this reducer, ranks that give up on an operation
// and close), the reducer's gRPC status must show no session, no connection
// and no piece memory in use, it must hold no more file descriptors than
// after a clean session, and it must serve the next session.
#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/control_helpers.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kHygieneLiveness = milliseconds(1000);
constexpr size_t kHygieneCount = 1 << 20;  // floats: 4 MiB, pieces on every stream

class ReducerHygieneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reducer_ = std::make_unique<ControlledReducer>(
        std::vector<std::string>{"--memory-limit", "256MiB", "--op-timeout", "60s"});
    ASSERT_TRUE(reducer_->ok()) << reducer_->process().Log();
    CleanSession("first");  // whatever a first session opens for good
    v1::ServerStatus status;
    ASSERT_TRUE(reducer_->GetStatus(&status).ok());  // and the test's own gRPC connection
    baseline_fds_ = reducer_->process().OpenFileDescriptors();
  }

  // Waits (at most 30 s) until the reducer has no session and no
  // connection, then expects no piece memory in use.
  void ExpectNothingHeld(const std::string& after) {
    v1::ServerStatus status;
    for (int i = 0; i < 3000; ++i) {
      ASSERT_TRUE(reducer_->GetStatus(&status).ok());
      if (status.sessions_active() == 0 && status.connections_active() == 0) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(status.sessions_active(), 0u) << after;
    EXPECT_EQ(status.connections_active(), 0u) << after;
    EXPECT_EQ(status.memory_in_use_bytes(), 0u) << after;
    // Descriptors are closed as the connections go, a moment later at most.
    size_t fds = 0;
    for (int i = 0; i < 200; ++i) {
      fds = reducer_->process().OpenFileDescriptors();
      if (fds <= baseline_fds_) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_LE(fds, baseline_fds_) << after;
    CleanSession("after-" + after);
  }

  void CleanSession(const std::string& name) {
    auto clients = JoinSession({reducer_->process().endpoint()}, name, 2);
    ASSERT_EQ(clients.size(), 2u) << name;
    RunOps(clients, 3, kHygieneCount);
  }

  // Ranks 0-2 as threads, rank 3 as a process that stalls before its third
  // operation; `signal` hits it once the others' third operation waits in
  // the reducer's memory (which the test checks first).
  void LoseAWorkerWhileOthersWait(const std::string& session, int signal) {
    const std::string endpoint = reducer_->process().endpoint().ToString();
    ChildProcess victim({std::string(RS_BINARY_DIR) + "/tests/rs_test_worker", endpoint, session, "3", "4", "", "2",
                         std::to_string(kHygieneLiveness.count())});
    std::atomic<int> waiting{0};
    std::thread injector([&] {
      ASSERT_TRUE(victim.WaitForOutput("stalling before operation", seconds(30))) << victim.Output();
      v1::ServerStatus status;
      for (int i = 0; i < 3000 && status.memory_in_use_bytes() == 0; ++i) {
        if (waiting == 3) {
          ASSERT_TRUE(reducer_->GetStatus(&status).ok());
        }
        std::this_thread::sleep_for(milliseconds(10));
      }
      EXPECT_GT(status.memory_in_use_bytes(), 0u) << "the other ranks' contributions are not held";
      kill(victim.pid(), signal);
    });
    RunRanks(3, [&](uint32_t rank) {
      auto o = Options({reducer_->process().endpoint()}, session, rank, 4);
      o.liveness_timeout = kHygieneLiveness;
      auto c = client::Client::Create(o);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      std::vector<float> v(1 << 16, 1.0f);  // what the victim sends
      for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                        ->Wait(seconds(60))
                        .ok());
      }
      ++waiting;
      const Status st =
          (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
    });
    injector.join();
    victim.Kill();
  }

  std::unique_ptr<ControlledReducer> reducer_;
  size_t baseline_fds_ = 0;
};

TEST_F(ReducerHygieneTest, AWorkerKilledWhileTheOthersContributionsWait) {
  LoseAWorkerWhileOthersWait("killed-worker", SIGKILL);
  ExpectNothingHeld("killed-worker");
}

TEST_F(ReducerHygieneTest, AWorkerFrozenWhileTheOthersContributionsWait) {
  LoseAWorkerWhileOthersWait("frozen-worker", SIGSTOP);
  ExpectNothingHeld("frozen-worker");
}

// The ranks fail over away from this reducer while it is frozen with their
// pieces in memory; thawed, it finds its connections evicted or closed.
TEST_F(ReducerHygieneTest, RanksFailedOverAwayFromIt) {
  ReducerProcess other({"--op-timeout", "60s"});
  ASSERT_TRUE(other.ok()) << other.Log();
  std::atomic<int> done{0};
  std::atomic<bool> frozen{false};
  RunRanks(2, [&](uint32_t rank) {
    auto o = Options({reducer_->process().endpoint(), other.endpoint()}, "failed-over", rank, 2);
    o.liveness_timeout = kHygieneLiveness;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> v(kHygieneCount);
    for (int k = 0; k < 8; ++k) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((rank + 1) * k + i % 7);
      auto op = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum);
      if (k == 3 && ++done == 2) {
        EXPECT_TRUE(FreezeProcess(reducer_->process().pid()));
        frozen = true;
      }
      ASSERT_TRUE(op->Wait(seconds(60)).ok()) << op->status().ToString();
      for (size_t i = 0; i < v.size(); i += 4099) ASSERT_EQ(v[i], static_cast<float>(3 * k + 2 * (i % 7)));
    }
    EXPECT_EQ((*c)->stats().live_reducers, 1u);
  });
  EXPECT_TRUE(frozen);
  kill(reducer_->process().pid(), SIGCONT);
  ExpectNothingHeld("failed-over");
}

// Rank 0 gives up on an operation rank 1 never joins (its operation
// timeout) and closes while its pieces are in the reducer; rank 1 closes
// after it.
TEST_F(ReducerHygieneTest, ARankThatGivesUpOnAnOperationAndCloses) {
  std::atomic<bool> gave_up{false};
  RunRanks(2, [&](uint32_t rank) {
    auto o = Options({reducer_->process().endpoint()}, "gave-up", rank, 2);
    o.op_timeout = milliseconds(500);
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    if (rank == 0) {
      std::vector<float> v(kHygieneCount, 1.0f);
      const Status st =
          (*c)->AllReduce(v.data(), v.data(), kHygieneCount, DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      EXPECT_EQ(st.code(), Code::kTimeout) << st.ToString();
      gave_up = true;
    }
    for (int i = 0; i < 3000 && !gave_up; ++i) std::this_thread::sleep_for(milliseconds(10));
  });
  ExpectNothingHeld("gave-up");
}

}  // namespace
}  // namespace rs::testing
