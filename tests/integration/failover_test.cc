// Reducer failover on loopback: real reducerd processes, ranks as threads
// with the real client. A reducer killed or frozen in the middle of a run
// with operations in flight is survived, and every result is bitwise
// identical to a run without the fault (the reducers sum in rank order, so
// redoing an operation on other reducers gives the same bits); a replacement
// reducer at the same address is taken back and carries work again.
// The fault-injection suite in network namespaces builds on these.
#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <regex>
#include <thread>

#include "common/half.h"
#include "tests/support/reducer_fleet.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kFailoverWorld = 4;
constexpr int kFailoverOps = 40;
constexpr int kInFlight = 6;
constexpr auto kFailoverLiveness = milliseconds(2000);

// Operation k: its element count and type. float32 and bfloat16, sizes from
// one piece to many, so that pieces land on every reducer.
size_t CountOf(int k) { return std::vector<size_t>{1000, 50'000, 262'144, 700'001}[k % 4]; }
DataType TypeOf(int k) { return k % 3 == 2 ? DataType::kBfloat16 : DataType::kFloat32; }

// Values of every magnitude, so that a sum in another order would round
// differently: bitwise equality means the same rank order.
std::vector<uint8_t> FailoverInput(uint32_t rank, int k) {
  const size_t n = CountOf(k);
  std::vector<uint8_t> bytes(n * DataTypeSize(TypeOf(k)));
  uint64_t x = 0x9E3779B97F4A7C15ull * (rank + 1) + 0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(k + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const float v = std::ldexp(static_cast<float>(x % 2001) - 1000.0f, static_cast<int>((x >> 20) % 40) - 20);
    if (TypeOf(k) == DataType::kFloat32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      const uint16_t b = FloatToBfloat16(v);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    }
  }
  return bytes;
}

struct RankRun {
  std::vector<std::vector<uint8_t>> results;  // per operation
  Status status;
  client::ClientStats stats;
  std::vector<std::string> logs;  // what the client's log callback got
};

// Runs kFailoverOps operations on every rank, kInFlight at a time, in place.
// `fault` runs once, on rank 0's thread, after its operation `fault_after`
// has completed (with later operations in flight).
std::vector<RankRun> RunFailoverJob(const std::vector<client::Endpoint>& reducers, const std::string& session,
                            int fault_after, const std::function<void()>& fault,
                            const std::function<void(client::ClientOptions&)>& tune = {}) {
  std::vector<RankRun> runs(kFailoverWorld);
  RunRanks(kFailoverWorld, [&](uint32_t rank) {
    RankRun& run = runs[rank];
    std::mutex log_mu;  // outlives the client, whose callback ends with it
    auto o = Options(reducers, session, rank, kFailoverWorld);
    o.liveness_timeout = kFailoverLiveness;
    o.log = [&run, &log_mu](client::LogLevel, const std::string& message) {
      std::lock_guard<std::mutex> lock(log_mu);
      run.logs.push_back(message);
    };
    if (tune) tune(o);
    auto c = client::Client::Create(o);
    if (!c.ok()) {
      run.status = c.status();
      return;
    }
    run.results.resize(kFailoverOps);
    std::deque<std::pair<int, std::shared_ptr<client::Operation>>> in_flight;
    auto finish_one = [&] {
      auto [k, op] = in_flight.front();
      in_flight.pop_front();
      Status st = op->Wait(seconds(60));
      if (!st.ok() && run.status.ok()) run.status = st;
      if (rank == 0 && k == fault_after && fault) fault();
    };
    for (int k = 0; k < kFailoverOps && run.status.ok(); ++k) {
      if (in_flight.size() == kInFlight) finish_one();
      run.results[k] = FailoverInput(rank, k);
      in_flight.emplace_back(k, (*c)->AllReduce(run.results[k].data(), run.results[k].data(), CountOf(k),
                                                TypeOf(k), ReduceOp::kSum));
    }
    while (!in_flight.empty()) finish_one();
    run.stats = (*c)->stats();
    c->reset();  // no log callback after this
  });
  return runs;
}

void ExpectBitwiseEqual(const std::vector<RankRun>& reference, const std::vector<RankRun>& faulty) {
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    ASSERT_TRUE(reference[r].status.ok()) << "reference rank " << r << ": " << reference[r].status.ToString();
    ASSERT_TRUE(faulty[r].status.ok()) << "rank " << r << ": " << faulty[r].status.ToString();
    for (int k = 0; k < kFailoverOps; ++k) {
      ASSERT_EQ(faulty[r].results[k].size(), reference[r].results[k].size());
      EXPECT_EQ(std::memcmp(faulty[r].results[k].data(), reference[r].results[k].data(),
                            reference[r].results[k].size()),
                0)
          << "rank " << r << " operation " << k << " differs from the run without the fault";
      // Every rank holds the same sum.
      EXPECT_EQ(faulty[r].results[k], faulty[0].results[k]) << "rank " << r << " operation " << k;
    }
  }
}

class FailoverTest : public ReducerFleetTest {
 protected:
  void ExpectTwoLossesSurvived(const std::string& session, const std::function<void(int)>& hit,
                               milliseconds gap);
};

TEST_F(FailoverTest, KilledReducerIsSurvivedWithBitwiseIdenticalResults) {
  Start(3);
  const auto reference = RunFailoverJob(Endpoints(), "killed-reference", -1, {});
  const auto faulty = RunFailoverJob(Endpoints(), "killed", 12, [&] { kill(reducers_[1]->pid(), SIGKILL); });
  ExpectBitwiseEqual(reference, faulty);
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    EXPECT_GE(faulty[r].stats.epoch, 1u) << "rank " << r << " never failed over";
    EXPECT_EQ(faulty[r].stats.live_reducers, 2u) << "rank " << r;
    EXPECT_LE(faulty[r].stats.retained_peak_bytes, size_t{256} << 20);
    // The client said what happened, each message naming the rank once.
    const std::string own = "rank " + std::to_string(r) + ": ";
    bool installed = false;
    for (const std::string& line : faulty[r].logs) {
      EXPECT_EQ(line.rfind(own, 0), 0u) << line;
      EXPECT_EQ(line.find(own + own), std::string::npos) << line;
      installed |= line.find("epoch 1 installed: reducers ") != std::string::npos;
    }
    EXPECT_TRUE(installed) << "rank " << r << " logged no new epoch";
    std::printf("rank %u: epoch %u, %zu live reducers, %llu operations redone, retained peak %zu KiB\n", r,
                faulty[r].stats.epoch, faulty[r].stats.live_reducers,
                static_cast<unsigned long long>(faulty[r].stats.operations_redone),
                faulty[r].stats.retained_peak_bytes >> 10);
  }
}

TEST_F(FailoverTest, FrozenReducerIsSurvivedWithBitwiseIdenticalResults) {
  Start(3);
  const auto reference = RunFailoverJob(Endpoints(), "frozen-reference", -1, {});
  const auto faulty =
      RunFailoverJob(Endpoints(), "frozen", 12, [&] { EXPECT_TRUE(FreezeProcess(reducers_[2]->pid())); });
  // Thawed after the ranks dropped it: it must not disturb them (they no
  // longer listen) and must come back to serving.
  kill(reducers_[2]->pid(), SIGCONT);
  ExpectBitwiseEqual(reference, faulty);
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    EXPECT_GE(faulty[r].stats.epoch, 1u) << "rank " << r;
    EXPECT_EQ(faulty[r].stats.live_reducers, 2u) << "rank " << r;
  }
  const auto after = RunFailoverJob({reducers_[2]->endpoint()}, "after-thaw", -1, {});
  for (const RankRun& run : after) EXPECT_TRUE(run.status.ok()) << run.status.ToString();
}

// The ranks write their pieces in small slices, so the move to a new epoch
// finds pieces half written: each must be finished (the reducer discards
// it) before the epoch's announcement, or the reducers would read garbage.
TEST_F(FailoverTest, FrozenReducerIsSurvivedWithPiecesHalfWritten) {
  Start(3);
  const auto reference = RunFailoverJob(Endpoints(), "sliced-reference", -1, {});
  const auto faulty = RunFailoverJob(
      Endpoints(), "sliced-frozen", 12, [&] { EXPECT_TRUE(FreezeProcess(reducers_[2]->pid())); },
      [](client::ClientOptions& o) { o.write_slice_bytes = 3001; });
  kill(reducers_[2]->pid(), SIGCONT);
  ExpectBitwiseEqual(reference, faulty);
  for (uint32_t r = 0; r < kFailoverWorld; ++r) EXPECT_GE(faulty[r].stats.epoch, 1u) << "rank " << r;
}

TEST_F(FailoverTest, FailoverOffMakesReducerLossFatal) {
  Start(2);
  const auto faulty = RunFailoverJob(Endpoints(), "no-failover", 5, [&] { kill(reducers_[0]->pid(), SIGKILL); },
                             [](client::ClientOptions& o) { o.failover = false; });
  const std::string name = "reducer 127.0.0.1:" + std::to_string(reducers_[0]->port());
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    EXPECT_EQ(faulty[r].status.code(), Code::kPeerFailed) << faulty[r].status.ToString();
    EXPECT_NE(faulty[r].status.message().find(name), std::string::npos) << faulty[r].status.message();
  }
}

// Integer-valued floats: the exact sum of operation k is known.
float Value(uint32_t rank, int k, size_t i) { return static_cast<float>((rank + 1) * (k % 97) + i % 5); }

// A rank told by another that a reducer is lost (a proposal, before its own
// liveness check says so) stops using it and evicts it. If its writes to that
// reducer were stuck (a frozen process reads nothing, so the socket buffers
// fill), the pieces being written still lease the operation's buffers, and
// the operation cannot be Done until they are given back: the eviction must
// not wait on a write that never ends. Rank 0 notices the frozen reducer
// within half a second; rank 1, with a 10 s timeout, hears it from rank 0
// through the coordinator, and its reducer misses two heartbeats 4 s in.
TEST_F(FailoverTest, ARankToldOfALostReducerDoesNotWaitForItsStuckWrites) {
  Start(3);
  constexpr size_t kCount = 12 << 20;  // 48 MiB: 16 MiB to each reducer, more than loopback buffers hold
  std::vector<Status> errors(2);
  std::vector<double> seconds_taken(2, 0);
  std::atomic<int> warmed{0};
  std::atomic<bool> frozen{false};
  RunRanks(2, [&](uint32_t rank) {
    auto o = Options(Endpoints(), "stuck-writes", rank, 2);
    o.liveness_timeout = rank == 0 ? milliseconds(500) : seconds(10);
    o.send_window_bytes = size_t{64} << 20;  // the window lets every piece go out at once
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<float> v(kCount);
    for (size_t i = 0; i < v.size(); ++i) v[i] = Value(rank, 1, i);
    Status st = (*c)->AllReduce(v.data(), v.data(), 1 << 16, DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(30));
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < v.size(); ++i) v[i] = Value(rank, 2, i);
    // The last rank here freezes reducer 2; both then start the operation.
    if (++warmed == 2) {
      EXPECT_TRUE(FreezeProcess(reducers_[2]->pid()));
      frozen = true;
    }
    while (!frozen) std::this_thread::sleep_for(milliseconds(1));
    const auto start = std::chrono::steady_clock::now();
    st = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(40));
    seconds_taken[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok()) {
      errors[rank] = st;
      return;
    }
    for (size_t i = 0; i < v.size(); i += 4099) {
      ASSERT_EQ(v[i], Value(0, 2, i) + Value(1, 2, i)) << "rank " << rank << " element " << i;
    }
    EXPECT_EQ((*c)->stats().live_reducers, 2u) << "rank " << rank;
  });
  kill(reducers_[2]->pid(), SIGCONT);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(errors[r].ok()) << "rank " << r << ": " << errors[r].ToString();
    std::printf("rank %u: the operation took %.2f s\n", r, seconds_taken[r]);
  }
  // Two missed heartbeats (4 s), a liveness tick and the redo, far short of
  // the 40 s the wait allows.
  EXPECT_LT(seconds_taken[1], 10.0);
}

TEST_F(FailoverTest, ReplacementReducerAtTheSameAddressIsTakenBack) {
  Start(2);
  const uint16_t port = reducers_[1]->port();
  std::atomic<int> phase{0};  // 0: before the kill, 1: killed, 2: replaced, 3: taken back everywhere
  std::atomic<uint32_t> back{0};
  std::atomic<int> last_op{INT32_MAX};  // every rank must run the same operations
  std::vector<Status> errors(kFailoverWorld);
  std::vector<int> ops_after_back(kFailoverWorld, 0);
  std::unique_ptr<ReducerProcess> replacement;
  std::thread operator_thread([&] {
    while (phase < 1) std::this_thread::sleep_for(milliseconds(5));
    kill(reducers_[1]->pid(), SIGKILL);
    reducers_[1].reset();
    replacement = std::make_unique<ReducerProcess>(std::vector<std::string>{"--op-timeout", "60s"}, port);
    phase = 2;
  });
  RunRanks(kFailoverWorld, [&](uint32_t rank) {
    auto o = Options(Endpoints(), "replacement", rank, kFailoverWorld);
    o.liveness_timeout = kFailoverLiveness;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const auto deadline = std::chrono::steady_clock::now() + seconds(90);
    bool counted = false;
    for (int k = 0; k <= last_op && std::chrono::steady_clock::now() < deadline; ++k) {
      std::vector<float> v(200'000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = Value(rank, k, i);
      Status st = (*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait(seconds(60));
      if (!st.ok()) {
        errors[rank] = st;
        return;
      }
      for (size_t i = 0; i < v.size(); i += 1009) {
        float want = 0;
        for (uint32_t r = 0; r < kFailoverWorld; ++r) want += Value(r, k, i);
        ASSERT_EQ(v[i], want) << "rank " << rank << " operation " << k;
      }
      if (rank == 0 && k == 10) phase = std::max(phase.load(), 1);
      const auto stats = (*c)->stats();
      if (!counted && phase >= 2 && stats.live_reducers == 2 && stats.epoch >= 2) {
        counted = true;
        ++back;
      }
      if (counted) ++ops_after_back[rank];
      if (back == kFailoverWorld) {
        // The ranks are within an operation of each other (each waits for
        // its result): 20 more from here is the same last one for all.
        int unset = INT32_MAX;
        last_op.compare_exchange_strong(unset, k + 20);
      }
    }
    if (last_op == INT32_MAX) errors[rank] = Status(Code::kTimeout, "the replacement was not taken back within 90 s");
  });
  operator_thread.join();
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    EXPECT_TRUE(errors[r].ok()) << "rank " << r << ": " << errors[r].ToString();
    EXPECT_GE(ops_after_back[r], 10) << "rank " << r;
  }
  // The replacement carried pieces once it was back.
  ASSERT_NE(replacement, nullptr);
  EXPECT_EQ(replacement->Terminate(seconds(20)), 0);
  const std::string log = replacement->Log();
  EXPECT_TRUE(std::regex_search(log, std::regex("session [0-9a-f]+ ended: [1-9][0-9]* operations, [1-9][0-9]* pieces")))
      << log;
}


// Two reducers lost one after the other, the coordinator (reducer 0) first,
// so the second loss hits the ranks while they move to the first new epoch,
// or their reports of the first loss wait on a coordinator that is itself
// lost. `hit` runs on rank 0's thread after its operation 8; `then` on
// another thread `gap` later. Every rank must finish on the two survivors
// with the bits of a run without faults.
void FailoverTest::ExpectTwoLossesSurvived(const std::string& session, const std::function<void(int)>& hit,
                                           milliseconds gap) {
  Start(4);
  const auto reference = RunFailoverJob(Endpoints(), session + "-reference", -1, {});
  std::thread second;
  const auto faulty = RunFailoverJob(Endpoints(), session, 8, [&] {
    hit(0);
    second = std::thread([&hit, gap] {
      std::this_thread::sleep_for(gap);
      hit(1);
    });
  });
  if (second.joinable()) second.join();
  for (int i = 0; i < 2; ++i) kill(reducers_[i]->pid(), SIGCONT);
  ExpectBitwiseEqual(reference, faulty);
  for (uint32_t r = 0; r < kFailoverWorld; ++r) {
    EXPECT_EQ(faulty[r].stats.live_reducers, 2u) << "rank " << r;
    std::printf("rank %u: epoch %u, %llu operations redone\n", r, faulty[r].stats.epoch,
                static_cast<unsigned long long>(faulty[r].stats.operations_redone));
  }
}

// Killed 3 ms apart: the ranks notice the first at once and are agreeing on
// (or installing, or redoing in) epoch 1 when the second goes.
TEST_F(FailoverTest, ASecondReducerKilledDuringTheFirstFailoverIsSurvived) {
  ExpectTwoLossesSurvived("two-killed", [&](int i) { kill(reducers_[i]->pid(), SIGKILL); }, milliseconds(3));
}

// Frozen 0.75 T apart: the operations stall on reducer 0, so the job is still
// running when reducer 1, the next coordinator, freezes; 0.25 - 0.35 T later
// the ranks notice reducer 0 and report to reducer 1, which never answers,
// until they notice it too and report to reducer 2 (one epoch drops both).
TEST_F(FailoverTest, ReportsToAFrozenCoordinatorAreMadeAgainToTheNextOne) {
  ExpectTwoLossesSurvived("two-frozen", [&](int i) { EXPECT_TRUE(FreezeProcess(reducers_[i]->pid())); },
                          kFailoverLiveness * 3 / 4);
}

}  // namespace
}  // namespace rs::testing
