// rs-train as users run it: one process per rank, configured from the
// environment a launcher sets, against real reducerd processes on
// 127.0.0.1. 4 ranks x 2 reducers train, the loss falls, the weights are
// identical on every rank, --verify matches bit for bit; a reducer killed
// mid-training is survived with failover (the default), bit for bit, and
// ends every rank naming it without; a killed rank ends every other rank
// with an error naming it, within the timeout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::seconds;

constexpr char kToken[] = "rs-train-test-token";
// Small enough for seconds under ASan; buckets of 32 KiB give several per step.
const std::vector<std::string> kSmallModel = {"--width", "128",          "--depth", "4",           "--input-dim",
                                              "32",      "--output-dim", "8",       "--bucket-mb", "0.03125"};

uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// The JSON lines of an output with "event" == `event`.
std::vector<nlohmann::json> Events(const std::string& output, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == event) out.push_back(j);
  }
  return out;
}

class RsTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = WriteTokenFile(kToken);
    for (int i = 0; i < 2; ++i) {
      reducers_.push_back(std::make_unique<ReducerProcess>(
          std::vector<std::string>{"--job-token-file", token_file_, "--op-timeout", "10s", "--join-timeout", "30s"}));
      ASSERT_TRUE(reducers_.back()->ok()) << reducers_.back()->Log();
      addrs_ += (i ? "," : "") + reducers_.back()->endpoint().ToString();
    }
    master_port_ = FreePort();
  }

  // Rank `rank` of `world`, configured the way torchrun or Vertex would.
  std::unique_ptr<ChildProcess> StartRank(uint32_t rank, uint32_t world, const std::vector<std::string>& args,
                                          bool rendezvous = true) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    if (!rendezvous) argv.insert(argv.end(), {"-u", "MASTER_ADDR", "-u", "MASTER_PORT"});
    argv.insert(argv.end(), {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
                             "REDUCER_ADDRS=" + addrs_, "REDUCER_JOB_TOKEN_FILE=" + token_file_});
    if (rendezvous) {
      argv.push_back("MASTER_ADDR=127.0.0.1");
      argv.push_back("MASTER_PORT=" + std::to_string(master_port_));
    } else {
      argv.push_back("REDUCER_SESSION=rs-train-test-" + std::to_string(master_port_));
    }
    argv.push_back(RS_TRAIN_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv);
  }

  std::vector<std::unique_ptr<ChildProcess>> StartRanks(uint32_t world, const std::vector<std::string>& args,
                                                        bool rendezvous = true) {
    std::vector<std::unique_ptr<ChildProcess>> ranks;
    for (uint32_t r = 0; r < world; ++r) ranks.push_back(StartRank(r, world, args, rendezvous));
    return ranks;
  }

  std::string token_file_;
  std::vector<std::unique_ptr<ReducerProcess>> reducers_;
  std::string addrs_;
  uint16_t master_port_ = 0;
};

TEST_F(RsTrainTest, FourRanksTwoReducersLearnAgreeAndMatchTheReference) {
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "100", "--verify", "--json", "--log-every", "10"});
  auto ranks = StartRanks(4, args);
  std::vector<std::string> hashes;
  for (uint32_t r = 0; r < 4; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
    const auto summary = Events(ranks[r]->Output(), "summary");
    ASSERT_EQ(summary.size(), 1u) << ranks[r]->Output();
    hashes.push_back(summary[0]["hash"]);
    EXPECT_EQ(summary[0]["checks"], 11) << "before step 1, then every 10 steps";
  }
  // The weights are bitwise identical on every rank...
  for (uint32_t r = 1; r < 4; ++r) EXPECT_EQ(hashes[r], hashes[0]) << "rank " << r;
  const nlohmann::json s = Events(ranks[0]->Output(), "summary")[0];
  // ... equal to the single-process rank-order reference at every step...
  EXPECT_TRUE(s["verified"].get<bool>()) << ranks[0]->Output();
  // ... and the model learns: the loss falls at least 4x in 100 steps (6.2x here; the CPU
  // arithmetic is reproducible bit for bit, so this is a fixed number, not a noisy one).
  EXPECT_GT(s["first_loss"].get<double>(), 4 * s["last_loss"].get<double>()) << ranks[0]->Output();
  // Progress lines: steps 1, 10, ..., 100 with their figures.
  const auto steps = Events(ranks[0]->Output(), "step");
  ASSERT_EQ(steps.size(), 11u);
  EXPECT_EQ(steps.back()["step"], 100);
  EXPECT_GT(steps.back()["allreduce_ms"].get<double>(), 0);
  EXPECT_GT(steps.back()["algbw_gbs"].get<double>(), 0);
  const auto start = Events(ranks[0]->Output(), "start");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_GT(start[0]["buckets"].get<int>(), 2);
  EXPECT_NE(start[0]["backend"].get<std::string>().find("2 reducers (REDUCER_ADDRS)"), std::string::npos);
}

TEST_F(RsTrainTest, Bfloat16OnTheWireStillMatchesTheReferenceBitForBit) {
  // --verify's reference rounds each rank's gradients and their sum to
  // bfloat16 as the client and the reducers do; the loss still falls.
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "30", "--verify", "--json", "--log-every", "10", "--wire-dtype", "bfloat16"});
  auto ranks = StartRanks(3, args);
  std::vector<std::string> hashes;
  for (uint32_t r = 0; r < 3; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
    const auto summary = Events(ranks[r]->Output(), "summary");
    ASSERT_EQ(summary.size(), 1u) << ranks[r]->Output();
    hashes.push_back(summary[0]["hash"]);
  }
  for (uint32_t r = 1; r < 3; ++r) EXPECT_EQ(hashes[r], hashes[0]) << "rank " << r;
  const nlohmann::json s = Events(ranks[0]->Output(), "summary")[0];
  EXPECT_TRUE(s["verified"].get<bool>()) << ranks[0]->Output();
  EXPECT_GT(s["first_loss"].get<double>(), s["last_loss"].get<double>()) << ranks[0]->Output();
  for (auto& reducer : reducers_) {
    EXPECT_EQ(reducer->Terminate(seconds(20)), 0);
    EXPECT_NE(reducer->Log().find("float32 sums as bfloat16 on the wire"), std::string::npos) << reducer->Log();
  }
}

TEST_F(RsTrainTest, TheEnvironmentAloneIsEnough) {
  // What the local cluster and the images run: no flags but --steps, no
  // rendezvous (the session named by REDUCER_SESSION), the default model.
  auto ranks = StartRanks(2, {"--steps", "3"}, /*rendezvous=*/false);
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
  }
  const std::string out = ranks[0]->Output();
  EXPECT_NE(out.find("rs-train: 2 ranks, cpu ("), std::string::npos) << out;
  EXPECT_NE(out.find("step      3/3  loss"), std::string::npos) << out;
  EXPECT_NE(out.find("checks: parameters identical on every rank at 2 checks"), std::string::npos) << out;
  EXPECT_NE(ranks[1]->Output().find("rank 1: done, 3 steps, parameters 0x"), std::string::npos) << ranks[1]->Output();
}

// A run that would go on for hours, until something breaks it.
std::vector<std::string> EndlessArgs() {
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "100000000", "--json", "--log-every", "1", "--op-timeout", "20s"});
  return args;
}

TEST_F(RsTrainTest, AKilledReducerIsSurvivedBitForBitWithFailover) {
  // 4 ranks x 2 reducers, failover on by default. To kill the reducer while
  // all-reduces are certainly in flight (not after the last step), rank 3 is
  // stopped first: the others then wait inside their next step's
  // all-reduces for its pieces, and the new epoch cannot be installed before
  // rank 3 runs again and reports.
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "40", "--verify", "--json", "--log-every", "1", "--check-every", "5"});
  auto ranks = StartRanks(4, args);
  ASSERT_TRUE(ranks[0]->WaitForOutput("\"step\":5,", seconds(120))) << ranks[0]->Output();
  ASSERT_EQ(kill(ranks[3]->pid(), SIGSTOP), 0);
  const std::string victim = reducers_[1]->endpoint().ToString();
  reducers_[1].reset();  // SIGKILL
  ASSERT_EQ(kill(ranks[3]->pid(), SIGCONT), 0);
  std::vector<std::string> hashes;
  for (uint32_t r = 0; r < 4; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
    const auto summary = Events(ranks[r]->Output(), "summary");
    ASSERT_EQ(summary.size(), 1u) << ranks[r]->Output();
    EXPECT_EQ(summary[0]["steps"], 40) << "rank " << r;
    EXPECT_EQ(summary[0]["checks"], 9) << "before step 1, then every 5 steps";
    hashes.push_back(summary[0]["hash"]);
    // Each rank went on with the one reducer left, in a new epoch.
    const nlohmann::json f = summary[0]["failover"];
    EXPECT_GE(f["epoch"].get<int>(), 1) << "rank " << r << ":\n" << ranks[r]->Output();
    EXPECT_EQ(f["live_reducers"], 1) << "rank " << r;
    EXPECT_EQ(f["reducers"], 2) << "rank " << r;
    // ... and said so when it happened, naming the reducer left.
    const std::string own = "rank " + std::to_string(r) + ": ";
    EXPECT_NE(ranks[r]->Output().find("rs-train: " + own + "epoch "), std::string::npos) << ranks[r]->Output();
    EXPECT_NE(ranks[r]->Output().find("installed: reducers "), std::string::npos) << ranks[r]->Output();
    EXPECT_EQ(ranks[r]->Output().find(own + own), std::string::npos) << "the rank named twice:\n" << ranks[r]->Output();
  }
  for (uint32_t r = 1; r < 4; ++r) EXPECT_EQ(hashes[r], hashes[0]) << "rank " << r;
  // The same parameters as the single-process reference at every step, the
  // redone all-reduces included.
  const nlohmann::json s = Events(ranks[0]->Output(), "summary")[0];
  EXPECT_TRUE(s["verified"].get<bool>()) << ranks[0]->Output();
  // The rank that noticed first (the others may learn it from the coordinator) names the lost reducer.
  std::string all;
  for (const auto& rank : ranks) all += rank->Output();
  EXPECT_NE(all.find(victim), std::string::npos) << all;
  EXPECT_NE(all.find("; failing over to the other reducers"), std::string::npos) << all;
}

TEST_F(RsTrainTest, TheTextSummarySaysItFailedOver) {
  // The same fault, read the way a person reads it: rank 0's summary line.
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "30", "--log-every", "1"});
  auto ranks = StartRanks(2, args);
  ASSERT_TRUE(ranks[0]->WaitForOutput("step      5/30", seconds(120))) << ranks[0]->Output();
  ASSERT_EQ(kill(ranks[1]->pid(), SIGSTOP), 0);
  reducers_[0].reset();  // the coordinator: the survivor takes over
  ASSERT_EQ(kill(ranks[1]->pid(), SIGCONT), 0);
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
  }
  const std::string out = ranks[0]->Output();
  EXPECT_NE(out.find("checks: parameters identical on every rank"), std::string::npos) << out;
  EXPECT_NE(out.find("  failover: 1 change of reducers survived (epoch 1), 1 of 2 reducers live at the end, "),
            std::string::npos)
      << out;
}

TEST_F(RsTrainTest, WithoutFailoverAKilledReducerEndsEveryRankNamingIt) {
  std::vector<std::string> args = EndlessArgs();
  args.insert(args.end(), {"--failover", "0"});
  auto ranks = StartRanks(4, args);
  ASSERT_TRUE(ranks[0]->WaitForOutput("\"step\":5,", seconds(120))) << ranks[0]->Output();
  const std::string victim = reducers_[1]->endpoint().ToString();
  reducers_[1].reset();  // SIGKILL
  // Every rank stops, non-zero, naming the reducer, within the 20 s
  // operation timeout (plus time to exit on a busy machine); in practice at
  // once, since the dead reducer's sockets close.
  for (uint32_t r = 0; r < 4; ++r) {
    const int code = ranks[r]->Wait(seconds(40));
    EXPECT_EQ(code, 1) << "rank " << r << " (-1: still running):\n" << ranks[r]->Output();
    EXPECT_NE(ranks[r]->Output().find(victim), std::string::npos) << "rank " << r << ":\n" << ranks[r]->Output();
  }
}

TEST_F(RsTrainTest, OldSettingNamesStillWorkAndSayWhatReplacesThem) {
  // A launcher written for the old names: --piece-bytes, REDUCER_OP_TIMEOUT_MS.
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "3", "--piece-bytes", "64K"});
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (uint32_t r = 0; r < 2; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env", "REDUCER_OP_TIMEOUT_MS=30000", "RANK=" + std::to_string(r),
                                     "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                     "MASTER_PORT=" + std::to_string(master_port_), "REDUCER_ADDRS=" + addrs_,
                                     "REDUCER_JOB_TOKEN_FILE=" + token_file_, RS_TRAIN_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    ranks.push_back(std::make_unique<ChildProcess>(argv));
  }
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ranks[r]->Wait(seconds(180)), 0) << "rank " << r << ":\n" << ranks[r]->Output();
    const std::string out = ranks[r]->Output();
    const std::string notice =
        "rs-train: rank " + std::to_string(r) + ": warning: --piece-bytes is deprecated; use --max-piece instead";
    ASSERT_NE(out.find(notice), std::string::npos) << out;
    EXPECT_EQ(out.find(notice), out.rfind(notice)) << "reported once:\n" << out;
    EXPECT_NE(out.find("REDUCER_OP_TIMEOUT_MS is deprecated; use REDUCER_OP_TIMEOUT instead"), std::string::npos)
        << out;
  }
}

TEST_F(RsTrainTest, AKilledRankEndsTheOthersNamingIt) {
  auto ranks = StartRanks(4, EndlessArgs());
  ASSERT_TRUE(ranks[0]->WaitForOutput("\"step\":5,", seconds(120))) << ranks[0]->Output();
  ranks[2]->Kill();
  for (uint32_t r : {0u, 1u, 3u}) {
    const int code = ranks[r]->Wait(seconds(40));
    EXPECT_EQ(code, 1) << "rank " << r << " (-1: still running):\n" << ranks[r]->Output();
    EXPECT_NE(ranks[r]->Output().find("rank 2"), std::string::npos) << "rank " << r << ":\n" << ranks[r]->Output();
  }
}

TEST_F(RsTrainTest, RanksWithOtherSettingsAreStoppedAtTheRendezvous) {
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "5"});
  auto rank0 = StartRank(0, 2, args);
  args.insert(args.end(), {"--batch", "16"});
  auto rank1 = StartRank(1, 2, args);
  for (ChildProcess* p : {rank0.get(), rank1.get()}) {
    EXPECT_EQ(p->Wait(seconds(60)), 1) << p->Output();
    EXPECT_NE(p->Output().find("'batch=16' where rank 0 has 'batch=32'"), std::string::npos) << p->Output();
  }
}

TEST_F(RsTrainTest, RanksThatDisagreeOnFailoverAreStoppedAtTheRendezvous) {
  std::vector<std::string> args = kSmallModel;
  args.insert(args.end(), {"--steps", "5"});
  auto rank0 = StartRank(0, 2, args);
  args.insert(args.end(), {"--failover", "0"});
  auto rank1 = StartRank(1, 2, args);
  for (ChildProcess* p : {rank0.get(), rank1.get()}) {
    EXPECT_EQ(p->Wait(seconds(60)), 1) << p->Output();
    EXPECT_NE(p->Output().find("'failover=0 min_reducers=1' where rank 0 has 'failover=1 min_reducers=1'"),
              std::string::npos)
        << p->Output();
  }
}

TEST_F(RsTrainTest, UsageErrorsExitTwoNamingTheProblem) {
  ChildProcess bad_flag({RS_TRAIN_BIN, "--no-such-flag"});
  EXPECT_EQ(bad_flag.Wait(seconds(30)), 2);
  EXPECT_NE(bad_flag.Output().find("--no-such-flag"), std::string::npos) << bad_flag.Output();
  ChildProcess bad_env({"/usr/bin/env", "RANK=first", "WORLD_SIZE=2", RS_TRAIN_BIN});
  EXPECT_EQ(bad_env.Wait(seconds(30)), 2);
  EXPECT_NE(bad_env.Output().find("RANK: 'first' is not a whole number"), std::string::npos) << bad_env.Output();
  ChildProcess bad_value({"/usr/bin/env", "REDUCER_FAILOVER=maybe", RS_TRAIN_BIN});
  EXPECT_EQ(bad_value.Wait(seconds(30)), 2);
  EXPECT_NE(bad_value.Output().find("rs-train: REDUCER_FAILOVER: 'maybe' is not a whole number"), std::string::npos)
      << bad_value.Output();
  ChildProcess no_unit({RS_TRAIN_BIN, "--op-timeout", "90"});
  EXPECT_EQ(no_unit.Wait(seconds(30)), 2);
  EXPECT_NE(no_unit.Output().find("--op-timeout: '90' has no unit"), std::string::npos) << no_unit.Output();
  ChildProcess help({RS_TRAIN_BIN, "--help"});
  EXPECT_EQ(help.Wait(seconds(30)), 0);
  EXPECT_NE(help.Output().find("REDUCER_ADDRS"), std::string::npos) << help.Output();
  EXPECT_NE(help.Output().find("--bucket-mb"), std::string::npos) << help.Output();
  for (const char* name : {"--max-piece", "REDUCER_MAX_PIECE", "--failover", "REDUCER_FAILOVER", "--op-timeout",
                           "--piece-bytes", "a lost reducer"}) {
    EXPECT_NE(help.Output().find(name), std::string::npos) << name << " missing from --help:\n" << help.Output();
  }
}

TEST_F(RsTrainTest, GpuBackendWithoutAGpuFailsAtOnceSayingWhy) {
  ChildProcess gpu({RS_TRAIN_BIN, "--backend", "gpu", "--steps", "1"});
  const int code = gpu.Wait(seconds(60));
  // 2 where the GPU backend was not built, 1 where it was but no GPU is
  // usable; never a hang or a crash.
  EXPECT_TRUE(code == 1 || code == 2) << code << ": " << gpu.Output();
  EXPECT_NE(gpu.Output().find("--backend gpu"), std::string::npos) << gpu.Output();
}

}  // namespace
}  // namespace rs::testing
