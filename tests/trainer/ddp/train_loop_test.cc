// The training loop end to end in one process: 4 ranks as threads, each with
// the CPU backend and a real client, against 2 in-process reducers. What the
// ranks train must be the single-process reference bit for bit, the loss
// must fall, and a rank whose parameters drift, or a reference that
// disagrees, must stop every rank with an error saying so.
#include "trainer/ddp/train_loop.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "protocol/auth.h"
#include "server/net/reducer_server.h"
#include "trainer/backend/cpu_backend.h"

namespace rs::trainer {
namespace {

constexpr uint32_t kWorld = 4;

// Passes everything through, but reports rank `drift_rank`'s parameters
// with one bit flipped from step `drift_after` on.
class DriftingBackend final : public Backend {
 public:
  DriftingBackend(std::unique_ptr<Backend> inner, bool drift) : inner_(std::move(inner)), drift_(drift) {}
  std::string Describe() const override { return inner_->Describe(); }
  Status SetBatch(const Batch& b) override { return inner_->SetBatch(b); }
  StatusOr<double> ForwardBackward(const std::function<Status(int)>& f) override { return inner_->ForwardBackward(f); }
  Status StartAllReduce(const Bucket& b) override { return inner_->StartAllReduce(b); }
  StatusOr<CommTiming> FinishAllReduces() override { return inner_->FinishAllReduces(); }
  Status ApplyUpdate(const SgdConfig& s) override {
    ++steps_;
    return inner_->ApplyUpdate(s);
  }
  Status GetParameters(std::vector<float>* out) override {
    RS_RETURN_IF_ERROR(inner_->GetParameters(out));
    if (drift_ && steps_ >= 3) (*out)[5] = -(*out)[5];
    return Status::Ok();
  }
  Status AllReduceSum(std::vector<uint64_t>* v) override { return inner_->AllReduceSum(v); }
  Status AllReduceSum(std::vector<double>* v) override { return inner_->AllReduceSum(v); }

 private:
  std::unique_ptr<Backend> inner_;
  bool drift_;
  int steps_ = 0;
};

struct RankResult {
  Status status;
  TrainSummary summary;
  std::vector<float> params;
};

class TrainLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      server::ServerConfig config;
      config.listen_host = "127.0.0.1";
      config.op_timeout = std::chrono::seconds(20);
      auto s = server::ReducerServer::Create(config);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      reducers_.push_back({"127.0.0.1", (*s)->port()});
      servers_.push_back(std::move(s).value());
    }
    options_.world = kWorld;
    options_.shape = MlpShape{16, 48, 3, 4};
    options_.batch = 8;
    options_.steps = 12;
    options_.check_every = 4;
    options_.log_every = 100;
    options_.bucket_mb = 2.0 / 1024;  // 2 KiB: several buckets per step
  }

  // Trains every rank on its own thread; rank 0 gets `reference` if given.
  std::vector<RankResult> Train(const std::string& session, Reference* reference, int drift_rank = -1) {
    std::vector<RankResult> results(kWorld);
    auto layout = MlpLayout::Create(options_.shape);
    EXPECT_TRUE(layout.ok());
    const BucketPlan plan(*layout, options_.bucket_bytes());
    const SyntheticData data(options_.shape, options_.seed);
    std::vector<std::thread> threads;
    for (uint32_t rank = 0; rank < kWorld; ++rank) {
      threads.emplace_back([&, rank] {
        TrainOptions o = options_;
        o.rank = rank;
        client::ClientOptions c;
        c.reducers = reducers_;
        c.session = protocol::SessionIdFromName(session);
        c.rank = rank;
        c.world = kWorld;
        c.max_piece_bytes = 4096;  // many pieces across both reducers
        c.min_piece_bytes = 1024;
        c.connect_timeout = std::chrono::seconds(20);
        c.op_timeout = std::chrono::seconds(30);
        c.log = [](client::LogLevel, const std::string&) {};
        auto client = client::Client::Create(c);
        if (!client.ok()) {
          results[rank].status = client.status();
          return;
        }
        CpuBackendOptions b;
        b.layout = *layout;
        b.initial_params = InitialParameters(*layout, o.seed);
        b.grad_dtype = o.grad_dtype;
        b.world = kWorld;
        b.client = std::move(client).value();
        auto cpu = CpuBackend::Create(std::move(b));
        ASSERT_TRUE(cpu.ok());
        DriftingBackend backend(std::move(cpu).value(), static_cast<int>(rank) == drift_rank);
        FILE* devnull = std::fopen("/dev/null", "w");
        Reporter reporter(devnull, devnull, false, rank);
        TrainLoop loop(o, plan, data, backend, reporter, rank == 0 ? reference : nullptr);
        StatusOr<TrainSummary> s = loop.Run();
        results[rank].status = s.ok() ? Status::Ok() : s.status();
        if (s.ok()) results[rank].summary = *s;
        (void)backend.GetParameters(&results[rank].params);
        std::fclose(devnull);
      });
    }
    for (auto& t : threads) t.join();
    return results;
  }

  ReferenceConfig RefConfig() {
    auto layout = MlpLayout::Create(options_.shape);
    return ReferenceConfig{*layout,        BucketPlan(*layout, options_.bucket_bytes()),
                           options_.seed,  kWorld,
                           options_.batch, options_.grad_dtype,
                           options_.sgd,   InitialParameters(*layout, options_.seed)};
  }

  std::vector<std::unique_ptr<server::ReducerServer>> servers_;
  std::vector<client::Endpoint> reducers_;
  TrainOptions options_;
};

TEST_F(TrainLoopTest, FourRanksTrainExactlyTheRankOrderReference) {
  for (DataType dtype : {DataType::kFloat32, DataType::kBfloat16}) {
    options_.grad_dtype = dtype;
    Reference reference(RefConfig());
    std::vector<RankResult> results = Train(std::string("exact-") + std::string(DataTypeName(dtype)), &reference);
    for (uint32_t r = 0; r < kWorld; ++r) {
      ASSERT_TRUE(results[r].status.ok()) << "rank " << r << ": " << results[r].status.ToString();
      EXPECT_EQ(results[r].params, reference.params()) << DataTypeName(dtype) << " rank " << r;
      EXPECT_EQ(results[r].summary.final_hash, results[0].summary.final_hash);
      EXPECT_EQ(results[r].summary.checks, 4u);  // before step 1, after steps 4, 8 and 12
    }
    EXPECT_TRUE(results[0].summary.verified);
    EXPECT_LT(results[0].summary.last_loss, results[0].summary.first_loss);
    EXPECT_GT(results[0].summary.grad_bytes, 0u);
  }
}

TEST_F(TrainLoopTest, ADriftingRankStopsEveryRankNamingIt) {
  std::vector<RankResult> results = Train("drift", nullptr, /*drift_rank=*/2);
  for (uint32_t r = 0; r < kWorld; ++r) {
    EXPECT_EQ(results[r].status.code(), Code::kMismatch) << "rank " << r << ": " << results[r].status.ToString();
    EXPECT_NE(results[r].status.message().find("after step 4 the parameters of rank 2 ("), std::string::npos)
        << results[r].status.message();
  }
}

TEST_F(TrainLoopTest, AReferenceThatDisagreesStopsEveryRank) {
  ReferenceConfig cfg = RefConfig();
  cfg.sgd.lr *= 1.5f;  // not what the ranks do
  Reference reference(cfg);
  std::vector<RankResult> results = Train("disagree", &reference);
  for (uint32_t r = 0; r < kWorld; ++r) {
    EXPECT_EQ(results[r].status.code(), Code::kMismatch) << "rank " << r;
    EXPECT_NE(results[r].status.message().find("--verify: after step 1 "), std::string::npos)
        << results[r].status.message();
  }
}

}  // namespace
}  // namespace rs::trainer
