// All-reduce through real reducerd processes with the real client library:
// 4 ranks x 2 reducers, every dtype, sizes from empty to 16 MiB (64 MiB for
// float32). Results must be bitwise identical on every rank and equal to the
// inputs reduced in rank order, whatever the order in which contributions
// arrive.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "tests/support/test_cluster.h"
#include "tests/support/test_data.h"

namespace rs::testing {
namespace {

constexpr uint32_t kAllreduceWorld = 4;

class AllReduceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    token_file_ = new std::string(WriteTokenFile("integration-token"));
    for (int i = 0; i < 2; ++i) {
      // The second sends results in small parts: its 2 I/O threads then
      // release a piece's parts from both threads, and each rank must still
      // get them in order.
      std::vector<std::string> args = {"--job-token-file", *token_file_, "--op-timeout", "60s"};
      if (i == 1) args.insert(args.end(), {"--result-part", "4KiB"});
      reducers_[i] = new ReducerProcess(args);
    }
  }
  static void TearDownTestSuite() {
    for (auto*& r : reducers_) {
      delete r;
      r = nullptr;
    }
    delete token_file_;
  }
  void SetUp() override {
    for (auto* r : reducers_) ASSERT_TRUE(r->ok()) << r->Log();
  }

  static std::vector<client::Endpoint> Endpoints() { return {reducers_[0]->endpoint(), reducers_[1]->endpoint()}; }
  static client::ClientOptions RankOptions(const std::string& session, uint32_t rank) {
    return Options(Endpoints(), session, rank, kAllreduceWorld, "integration-token");
  }

  static ReducerProcess* reducers_[2];
  static std::string* token_file_;
};
ReducerProcess* AllReduceTest::reducers_[2] = {nullptr, nullptr};
std::string* AllReduceTest::token_file_ = nullptr;

struct Case {
  DataType dtype;
  ReduceOp op;
  size_t count;
};

// Runs every case on every rank (one session per call) and checks each
// result against the rank-order reference. Inputs and the reference are made
// once per case; with `shuffle`, ranks start each operation after a random
// delay so contributions arrive in a different order.
void RunCases(const std::vector<Case>& cases, const std::function<client::ClientOptions(uint32_t)>& options,
              uint64_t seed, bool shuffle, std::vector<std::vector<uint8_t>>* rank0_results = nullptr) {
  std::vector<std::unique_ptr<client::Client>> clients(kAllreduceWorld);
  RunRanks(kAllreduceWorld, [&](uint32_t rank) {
    auto c = client::Client::Create(options(rank));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients[rank] = std::move(c).value();
  });
  for (auto& c : clients) ASSERT_NE(c, nullptr);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& k = cases[i];
    std::vector<std::vector<uint8_t>> inputs;
    for (uint32_t r = 0; r < kAllreduceWorld; ++r) inputs.push_back(RandomInput(k.dtype, k.count, seed + 1000 * i + r));
    const auto want = RankOrderReference(k.dtype, k.op, k.count, inputs);
    std::vector<uint32_t> delays_us(kAllreduceWorld);
    for (auto& d : delays_us) d = shuffle ? rng() % 3000 : 0;
    RunRanks(kAllreduceWorld, [&](uint32_t rank) {
      std::vector<uint8_t> recv(inputs[rank].size() + 1);  // +1: an empty op still gets a valid pointer
      std::this_thread::sleep_for(std::chrono::microseconds(delays_us[rank]));
      auto op = clients[rank]->AllReduce(inputs[rank].data(), recv.data(), k.count, k.dtype, k.op);
      Status st = op->Wait(std::chrono::seconds(120));
      ASSERT_TRUE(st.ok()) << "rank " << rank << ": " << st.ToString();
      recv.pop_back();
      EXPECT_TRUE(recv == want) << "rank " << rank << " " << DataTypeName(k.dtype) << " " << ReduceOpName(k.op)
                                << " count " << k.count << ": result differs from the rank-order reduction";
      if (rank == 0 && rank0_results) rank0_results->push_back(std::move(recv));
    });
  }
}

// 16 MiB (plus a tail of 3 elements) already cuts every dtype into several
// pieces on each reducer and runs its kernel over whole vectors and a tail;
// 64 MiB, for float32 only (a training job's gradients), adds many pieces in
// flight per stream. 64 MiB of every dtype took about a minute in each
// build's suite, half of it making the inputs and the reference.
TEST_F(AllReduceTest, EveryDtypeAndSizeMatchesTheRankOrderReduction) {
  std::vector<Case> cases;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    const size_t elem = DataTypeSize(dtype);
    const size_t largest = dtype == DataType::kFloat32 ? size_t{64} << 20 : size_t{16} << 20;
    for (size_t count : {size_t{0}, size_t{1}, size_t{4099}, (size_t{1} << 20) / elem, largest / elem + 3}) {
      cases.push_back({dtype, ReduceOp::kSum, count});
    }
  }
  RunCases(cases, [](uint32_t r) { return RankOptions("every-dtype", r); }, 1, false);
}

TEST_F(AllReduceTest, EveryOpOnEveryDtype) {
  std::vector<Case> cases;
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (int o = 0; o < kNumReduceOps; ++o) cases.push_back({static_cast<DataType>(t), static_cast<ReduceOp>(o), 70001});
  }
  RunCases(cases, [](uint32_t r) { return RankOptions("every-op", r); }, 2, false);
}

TEST_F(AllReduceTest, ShuffledArrivalOrderGivesBitwiseIdenticalResults) {
  const std::vector<Case> cases = {{DataType::kFloat32, ReduceOp::kSum, 1000003},
                                   {DataType::kBfloat16, ReduceOp::kSum, 300001},
                                   {DataType::kFloat16, ReduceOp::kSum, 4099},
                                   {DataType::kFloat64, ReduceOp::kSum, 262147}};
  std::vector<std::vector<uint8_t>> calm, shuffled;
  RunCases(cases, [](uint32_t r) { return RankOptions("calm", r); }, 3, false, &calm);
  // Different streams, piece sizes and random delays change who arrives first.
  RunCases(
      cases,
      [](uint32_t r) {
        auto o = RankOptions("shuffled", r);
        o.streams_per_reducer = 3;
        o.io_threads = 2;
        return o;
      },
      3, true, &shuffled);
  ASSERT_EQ(calm.size(), shuffled.size());
  for (size_t i = 0; i < calm.size(); ++i) EXPECT_TRUE(calm[i] == shuffled[i]) << "case " << i;
}

// A rank's streams write their pieces a slice at a time, cut anywhere: inside
// a frame's header, inside its elements, across frames. The reducers must
// see whole frames and the results must not change.
TEST_F(AllReduceTest, PiecesWrittenInSlicesGiveTheSameResults) {
  const std::vector<Case> small = {{DataType::kFloat32, ReduceOp::kSum, 4099}, {DataType::kFloat16, ReduceOp::kSum, 3001}};
  const std::vector<Case> large = {{DataType::kFloat32, ReduceOp::kSum, 1000003},
                                   {DataType::kBfloat16, ReduceOp::kMax, 300001}};
  for (const auto& [cases, slice] : {std::pair{small, size_t{7}}, std::pair{large, size_t{4093}}}) {
    std::vector<std::vector<uint8_t>> whole, sliced;
    RunCases(cases, [](uint32_t r) { return RankOptions("whole-writes", r); }, 4, false, &whole);
    RunCases(
        cases,
        [slice = slice](uint32_t r) {
          auto o = RankOptions("sliced-writes", r);
          o.write_slice_bytes = slice;
          o.streams_per_reducer = 2;
          return o;
        },
        4, true, &sliced);
    ASSERT_EQ(whole.size(), sliced.size());
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_TRUE(whole[i] == sliced[i]) << "slice " << slice << " case " << i;
  }
}

TEST_F(AllReduceTest, ManyOperationsInFlight) {
  constexpr int kOps = 48;
  constexpr size_t kCount = 100003;
  RunRanks(kAllreduceWorld, [&](uint32_t rank) {
    auto c = client::Client::Create(RankOptions("in-flight", rank));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::vector<std::vector<int32_t>> bufs(kOps, std::vector<int32_t>(kCount));
    std::vector<std::shared_ptr<client::Operation>> ops;
    for (int i = 0; i < kOps; ++i) {
      for (size_t j = 0; j < kCount; ++j) bufs[i][j] = static_cast<int32_t>(i * 7 + rank + j);
      // In place: send and receive share the buffer.
      ops.push_back((*c)->AllReduce(bufs[i].data(), bufs[i].data(), kCount, DataType::kInt32, ReduceOp::kSum));
    }
    for (int i = 0; i < kOps; ++i) {
      ASSERT_TRUE(ops[i]->Wait(std::chrono::seconds(60)).ok()) << ops[i]->status().ToString();
      for (size_t j = 0; j < kCount; j += 997) {
        ASSERT_EQ(bufs[i][j], static_cast<int32_t>(4 * (i * 7 + j) + 6)) << "op " << i << " element " << j;
      }
    }
  });
}

TEST_F(AllReduceTest, RootCauseReachesEveryRankThroughEveryReducer) {
  // Rank 1 disagrees on the dtype; only some reducers see that first-hand.
  // Whichever reducer tells a rank, the message must carry the root cause.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<Status> results(kAllreduceWorld);
    RunRanks(kAllreduceWorld, [&](uint32_t rank) {
      auto c = client::Client::Create(RankOptions("root-cause-" + std::to_string(attempt), rank));
      if (!c.ok()) {  // a slow rank may learn of the failure while joining
        results[rank] = c.status();
        return;
      }
      std::vector<uint8_t> buf(256 << 10);
      const DataType dtype = rank == 1 ? DataType::kFloat16 : DataType::kFloat32;
      results[rank] = (*c)->AllReduce(buf.data(), buf.data(), (64 << 10) / DataTypeSize(dtype), dtype,
                                      ReduceOp::kSum)->Wait(std::chrono::seconds(30));
    });
    for (uint32_t r = 0; r < kAllreduceWorld; ++r) {
      EXPECT_EQ(results[r].code(), Code::kMismatch) << "rank " << r << ": " << results[r].ToString();
      EXPECT_NE(results[r].message().find("rank 1 sent float16"), std::string::npos)
          << "rank " << r << ": " << results[r].message();
    }
  }
}

}  // namespace
}  // namespace rs::testing
