// rs-train must run from the launchers' environment alone, let flags win
// over it, and turn anything malformed into a usage error naming the flag
// or variable.
#include "trainer/config/options.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/client_settings.h"
#include "tests/support/client_settings_sample.h"
#include "tests/support/test_cluster.h"
#include "trainer/config/trainer_settings.h"

namespace rs::trainer {
namespace {

class OptionsTest : public ::testing::Test {
 protected:
  StatusOr<TrainOptions> Parse(std::vector<std::string> args, bool gpu_built = false) {
    args.insert(args.begin(), "rs-train");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    const EnvLookup env = [this](const char* name) -> const char* {
      asked_.insert(name);
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
    return ParseOptions(static_cast<int>(argv.size()), argv.data(), env, gpu_built);
  }

  // The message of a parse that must fail as a usage error.
  std::string UsageError(std::vector<std::string> args, bool gpu_built = false) {
    StatusOr<TrainOptions> o = Parse(std::move(args), gpu_built);
    EXPECT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument) << o.status().ToString();
    return o.status().message();
  }

  std::map<std::string, std::string> env_;
  std::set<std::string> asked_;  // every variable ParseOptions looked at
};

TEST_F(OptionsTest, TheLaunchersEnvironmentAloneIsEnough) {
  env_ = {{"RANK", "2"},
          {"WORLD_SIZE", "4"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"REDUCER_ADDRS", "10.0.0.5:7450,10.0.0.6:7450"},
          {"REDUCER_JOB_TOKEN", "secret"}};
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->rank, 2u);
  EXPECT_EQ(o->world, 4u);
  EXPECT_EQ(o->local_rank, 1);
  EXPECT_EQ(o->master_host, "10.0.0.1");
  EXPECT_EQ(o->master_port, 29500);
  ASSERT_EQ(o->reducers.size(), 2u);
  EXPECT_EQ(o->reducers[1].ToString(), "10.0.0.6:7450");
  EXPECT_EQ(o->reducers_source, "REDUCER_ADDRS");
  EXPECT_EQ(o->job_token, "secret");
  EXPECT_EQ(o->backend, BackendKind::kCpu);
  EXPECT_EQ(o->bucket_mb, 25.0);
}

TEST_F(OptionsTest, FlagsWinOverTheEnvironment) {
  env_ = {{"RANK", "2"},
          {"WORLD_SIZE", "4"},
          {"REDUCER_ADDRS", "10.0.0.5:7450"},
          {"REDUCER_STREAMS", "3"},
          {"REDUCER_OP_TIMEOUT", "5s"}};
  auto o = Parse({"--rank", "3", "--reducers", "127.0.0.1:1,127.0.0.1:2", "--op-timeout", "2m", "--steps", "7"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->rank, 3u);
  EXPECT_EQ(o->reducers.size(), 2u);
  EXPECT_EQ(o->client.streams_per_reducer, 3);                                      // from the environment
  EXPECT_EQ(o->client.op_timeout, std::chrono::milliseconds(120'000));  // the flag
  EXPECT_EQ(o->steps, 7u);
  EXPECT_TRUE(o->notices.empty());
}

TEST_F(OptionsTest, MalformedEnvironmentNamesTheVariable) {
  env_ = {{"RANK", "two"}, {"WORLD_SIZE", "4"}, {"REDUCER_ADDRS", "10.0.0.5:7450"}};
  EXPECT_EQ(UsageError({}), "RANK: 'two' is not a whole number");
  env_ = {{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"REDUCER_ADDRS", "10.0.0.5:7450"}};
  EXPECT_EQ(UsageError({}), "RANK=4 is not below WORLD_SIZE=4");
  EXPECT_EQ(UsageError({"--world", "2"}), "RANK=4 is not below --world 2");
  env_ = {{"REDUCER_ADDRS", "10.0.0.5"}};
  EXPECT_NE(UsageError({}).find("REDUCER_ADDRS: reducer address '10.0.0.5' is not HOST:PORT"), std::string::npos);
  env_ = {{"MASTER_ADDR", "x"}};
  EXPECT_NE(UsageError({}).find("MASTER_PORT"), std::string::npos);
  env_ = {{"MASTER_ADDR", "x"}, {"MASTER_PORT", "99999"}};
  EXPECT_EQ(UsageError({}), "MASTER_PORT: 99999 is outside [1, 65535]");
  env_ = {{"REDUCER_OP_TIMEOUT_MS", "soon"}};
  EXPECT_EQ(UsageError({}).rfind("REDUCER_OP_TIMEOUT_MS: ", 0), 0u);
  env_ = {{"REDUCER_JOB_TOKEN_FILE", "/nonexistent/token"}};
  EXPECT_NE(UsageError({}).find("REDUCER_JOB_TOKEN_FILE"), std::string::npos);
  env_ = {{"CLUSTER_SPEC", "{not json"}};
  EXPECT_NE(UsageError({}).find("CLUSTER_SPEC"), std::string::npos);
}

TEST_F(OptionsTest, BadFlagsAreUsageErrors) {
  EXPECT_NE(UsageError({"--no-such-flag"}).find("--no-such-flag"), std::string::npos);
  EXPECT_EQ(UsageError({"--backend", "tpu"}), "--backend 'tpu': use cpu or gpu");
  EXPECT_EQ(UsageError({"--grad-dtype", "int8"}), "--grad-dtype 'int8': use float32 or bfloat16");
  EXPECT_NE(UsageError({"--width", "0"}).find("width 0"), std::string::npos);
  EXPECT_NE(UsageError({"--bucket-mb", "0"}).find("--bucket-mb"), std::string::npos);
  EXPECT_NE(UsageError({"--op-timeout", "-3s"}).find("--op-timeout"), std::string::npos);
  EXPECT_NE(UsageError({"--rendezvous-timeout", "0s"}).find("--rendezvous-timeout"), std::string::npos);
  EXPECT_NE(UsageError({"--world", "3"}).find("no reducers"), std::string::npos);
}

TEST_F(OptionsTest, GpuSettingsAreCheckedUpFront) {
  EXPECT_NE(UsageError({"--backend", "gpu"}).find("built without CUDA"), std::string::npos);
  EXPECT_NE(UsageError({"--backend", "gpu", "--verify"}, true).find("--verify needs --backend cpu"), std::string::npos);
  EXPECT_NE(UsageError({"--backend", "gpu", "--world", "2"}, true).find("MASTER_ADDR"), std::string::npos);
  env_ = {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  auto o = Parse({"--backend", "gpu", "--world", "2"}, true);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->reducers.empty());  // the NCCL plugin finds the reducers itself
  // The plugin reads the client's settings from the environment: a flag for
  // one of them would be silently ignored, so it is refused.
  EXPECT_EQ(UsageError({"--backend", "gpu", "--world", "2", "--max-piece", "2MiB"}, true),
            "--max-piece is for --backend cpu; under --backend gpu the NCCL plugin reads REDUCER_MAX_PIECE from the "
            "environment instead");
  env_["REDUCER_FAILOVER"] = "0";  // the variable is the plugin's too: fine
  EXPECT_TRUE(Parse({"--backend", "gpu", "--world", "2"}, true).ok());
}

TEST_F(OptionsTest, VertexClusterSpecGivesRanksReducersAndTheRendezvous) {
  env_ = {{"CLUSTER_SPEC",
           R"({"cluster": {"workerpool0": ["chief:2222"], "workerpool1": ["w0:2222", "w1:2222", "w2:2222"],
               "workerpool2": ["r0:2222", "r1:2222"]}, "task": {"type": "workerpool1", "index": 1}})"}};
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->rank, 2u);
  EXPECT_EQ(o->world, 4u);
  EXPECT_EQ(o->master_host, "chief");
  EXPECT_EQ(o->master_port, 2222);
  ASSERT_EQ(o->reducers.size(), 2u);
  EXPECT_EQ(o->reducers_source, "CLUSTER_SPEC workerpool2");
  // RANK and WORLD_SIZE, MASTER_*, REDUCER_ADDRS win over it.
  env_["RANK"] = "0";
  env_["WORLD_SIZE"] = "1";
  env_["MASTER_ADDR"] = "m";
  env_["MASTER_PORT"] = "1234";
  env_["REDUCER_ADDRS"] = "x:1";
  o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->world, 1u);
  EXPECT_EQ(o->master_host, "m");
  EXPECT_EQ(o->reducers_source, "REDUCER_ADDRS");
}

TEST_F(OptionsTest, AReducerReplicaIsToldToRunReducerd) {
  env_ = {{"CLUSTER_SPEC", R"({"cluster": {"workerpool0": ["c:1"], "workerpool2": ["r:1"]},
                               "task": {"type": "workerpool2", "index": 0}})"}};
  EXPECT_NE(UsageError({}).find("run reducerd here"), std::string::npos);
}

TEST_F(OptionsTest, TorchrunsAgentStoreMovesTheRendezvousUpOnePort) {
  env_ = {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->master_port, 29501);
  o = Parse({"--master-port", "4000"});  // an explicit flag is taken as given
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->master_port, 4000);
}

TEST_F(OptionsTest, TheTokenFileIsRead) {
  env_ = {{"REDUCER_JOB_TOKEN_FILE", testing::WriteTokenFile("from-file")}};
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->job_token, "from-file");
  env_["REDUCER_JOB_TOKEN"] = "from-env";  // the variable wins over the file variable
  o = Parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->job_token, "from-env");
}

TEST_F(OptionsTest, OnlyTheRegisteredVariablesAreRead) {
  env_ = {{"RANK", "0"}};
  ASSERT_TRUE(Parse({}).ok());
  std::set<std::string> registered;
  for (const SettingInfo& s : TrainerSettings()) {
    registered.insert(s.env);
    for (const SettingAlias& a : s.old_envs) registered.insert(a.name);
  }
  for (const std::string& name : asked_) EXPECT_EQ(registered.count(name), 1u) << name << " is not in the registry";
  EXPECT_EQ(asked_.count("REDUCER_FAILOVER"), 1u);
  EXPECT_EQ(asked_.count("REDUCER_PIECE_BYTES"), 1u);
}

TEST_F(OptionsTest, TheClientAndReliabilitySettingsHaveTheirDefaults) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->client.streams_per_reducer.has_value()) << "unset: the client chooses";
  EXPECT_FALSE(o->client.max_piece_bytes.has_value());
  EXPECT_FALSE(o->client.min_piece_bytes.has_value()) << "unset: the client chooses from the world size";
  EXPECT_FALSE(o->client.send_window_bytes.has_value());
  EXPECT_FALSE(o->client.write_slice_bytes.has_value());
  EXPECT_EQ(o->client.op_timeout, std::chrono::seconds(90));
  EXPECT_EQ(o->client.connect_timeout, std::chrono::seconds(60));
  EXPECT_EQ(o->client.liveness_timeout, std::chrono::seconds(5));
  EXPECT_TRUE(o->client.failover);
  EXPECT_FALSE(o->client.crc);
  EXPECT_EQ(o->client.min_reducers, 1u);
  EXPECT_EQ(o->client.retention_bytes, 256u << 20);
  EXPECT_EQ(o->session, "rs-train");
}

TEST_F(OptionsTest, TheClientAndReliabilitySettingsTakeUnitsFromFlagsAndVariables) {
  env_ = {{"REDUCER_ADDRS", "10.0.0.5:7450,10.0.0.6:7450,10.0.0.7:7450"},
          {"REDUCER_MAX_PIECE", "256KiB"},
          {"REDUCER_MIN_PIECE", "16K"},
          {"REDUCER_OP_TIMEOUT", "2m"},
          {"REDUCER_CONNECT_TIMEOUT", "1500ms"},
          {"REDUCER_LIVENESS_TIMEOUT", "0"},
          {"REDUCER_FAILOVER", "0"},
          {"REDUCER_CRC", "1"},
          {"REDUCER_MIN_REDUCERS", "2"},
          {"REDUCER_RETENTION", "1GiB"},
          {"REDUCER_IO_THREADS", "3"}};
  auto o = Parse({"--send-window", "0", "--streams", "4", "--write-slice", "128K"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 256u << 10);
  EXPECT_EQ(o->client.min_piece_bytes, 16u << 10);
  EXPECT_EQ(o->client.op_timeout, std::chrono::minutes(2));
  EXPECT_EQ(o->client.connect_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(o->client.liveness_timeout, std::chrono::milliseconds(0));
  EXPECT_FALSE(o->client.failover);
  EXPECT_TRUE(o->client.crc);
  EXPECT_EQ(o->client.min_reducers, 2u);
  EXPECT_EQ(o->client.retention_bytes, uint64_t{1} << 30);
  EXPECT_EQ(o->client.io_threads, 3);
  EXPECT_EQ(o->client.send_window_bytes, 0u);
  EXPECT_EQ(o->client.write_slice_bytes, 128u << 10);
  EXPECT_EQ(o->client.streams_per_reducer, 4);
  o = Parse({"--failover", "1", "--max-piece", "2MiB", "--liveness-timeout", "10s"});  // flags win
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->client.failover);
  EXPECT_EQ(o->client.max_piece_bytes, 2u << 20);
  EXPECT_EQ(o->client.liveness_timeout, std::chrono::seconds(10));
}

TEST_F(OptionsTest, DeprecatedNamesStillWorkAndAreReportedOnce) {
  // The old variables, with their old meaning: a bare number is milliseconds.
  env_ = {{"REDUCER_PIECE_BYTES", "256K"}, {"REDUCER_OP_TIMEOUT_MS", "5000"}, {"REDUCER_CONNECT_TIMEOUT_MS", "1500"}};
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 256u << 10);
  EXPECT_EQ(o->client.op_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(o->client.connect_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(o->notices, (std::vector<std::string>{
                            "REDUCER_PIECE_BYTES is deprecated; use REDUCER_MAX_PIECE instead",
                            "REDUCER_OP_TIMEOUT_MS is deprecated; use REDUCER_OP_TIMEOUT instead",
                            "REDUCER_CONNECT_TIMEOUT_MS is deprecated; use REDUCER_CONNECT_TIMEOUT instead",
                        }));
  // The old flags.
  env_.clear();
  o = Parse({"--piece-bytes", "128K", "--timeout", "30s"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 128u << 10);
  EXPECT_EQ(o->client.op_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o->notices, (std::vector<std::string>{"--piece-bytes is deprecated; use --max-piece instead",
                                                  "--timeout is deprecated; use --op-timeout instead"}));
  // A new name beside an old one wins, and the notice says the old one was ignored.
  env_ = {{"REDUCER_MAX_PIECE", "2MiB"}, {"REDUCER_PIECE_BYTES", "256K"}};
  o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 2u << 20);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_EQ(o->notices[0],
            "REDUCER_PIECE_BYTES is deprecated and was ignored: REDUCER_MAX_PIECE takes precedence (use "
            "REDUCER_MAX_PIECE instead)");
}

// Every one of the client's shared settings (client/client_settings.h) is
// a flag and a variable here, and a value given reaches the client.
TEST_F(OptionsTest, EverySharedClientSettingReachesTheClient) {
  for (const client::ClientSetting& shared : client::ClientSettings()) {
    bool found = false;
    for (const SettingInfo& info : TrainerSettings()) {
      found |= info.flag == shared.info.flag && info.env == shared.info.env;
    }
    EXPECT_TRUE(found) << shared.info.flag << " / " << shared.info.env;
  }
  env_ = rs::testing::ClientSettingsSample();
  env_["REDUCER_ADDRS"] = rs::testing::kSampleReducers;
  StatusOr<TrainOptions> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  rs::testing::ExpectClientSettingsSample(o->client);
}

TEST_F(OptionsTest, BadClientAndReliabilityValuesNameTheSettingAndTheFormat) {
  env_ = {{"REDUCER_FAILOVER", "yes"}};
  EXPECT_EQ(UsageError({}), "REDUCER_FAILOVER: 'yes' is not a whole number");
  env_ = {{"REDUCER_FAILOVER", "2"}};
  EXPECT_EQ(UsageError({}), "REDUCER_FAILOVER: 2 is outside [0, 1]");
  env_ = {{"REDUCER_MAX_PIECE", "1K"}};
  EXPECT_EQ(UsageError({}), "REDUCER_MAX_PIECE: '1K' is below the minimum, 4 KiB");
  env_ = {{"REDUCER_OP_TIMEOUT", "90000"}};  // a bare number is refused under the new name
  EXPECT_NE(UsageError({}).find("REDUCER_OP_TIMEOUT: '90000' has no unit"), std::string::npos);
  env_ = {{"REDUCER_RETENTION", "lots"}};
  EXPECT_EQ(UsageError({}).rfind("REDUCER_RETENTION: ", 0), 0u);
  env_.clear();
  EXPECT_EQ(UsageError({"--liveness-timeout", "50ms"}), "--liveness-timeout 50ms: use 0 (off) or at least 100ms");
  EXPECT_EQ(UsageError({"--reducers", "h:1,h:2", "--min-reducers", "3"}),
            "--min-reducers 3 is more than the 2 reducers of --reducers");
  EXPECT_EQ(UsageError({"--crc", "on"}), "--crc: 'on' is not a whole number");
}

TEST_F(OptionsTest, AgreedSettingsCoverWhatRanksMustShare) {
  auto a = Parse({"--batch", "8"});
  auto b = Parse({"--batch", "16"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->AgreedSettings(), b->AgreedSettings());
  EXPECT_NE(a->AgreedSettings().find("batch=8\n"), std::string::npos);
  auto c = Parse({"--batch", "8", "--verify"});  // only rank 0 does anything with it
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(a->AgreedSettings(), c->AgreedSettings());
  // The client settings the reducers compare across ranks.
  auto d = Parse({"--batch", "8", "--failover", "0"});
  auto e = Parse({"--batch", "8", "--max-piece", "512KiB"});
  auto f = Parse({"--batch", "8", "--crc", "1"});
  ASSERT_TRUE(d.ok() && e.ok() && f.ok());
  EXPECT_NE(d->AgreedSettings().find("failover=0 min_reducers=1\n"), std::string::npos) << d->AgreedSettings();
  EXPECT_NE(e->AgreedSettings().find("max_piece=524288 min_piece=auto\n"), std::string::npos) << e->AgreedSettings();
  for (const auto* other : {&d, &e, &f}) EXPECT_NE(a->AgreedSettings(), (*other)->AgreedSettings());
  // Only this rank's own resources: may differ.
  auto g = Parse({"--batch", "8", "--retention", "64MiB", "--io-threads", "2", "--op-timeout", "3m"});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(a->AgreedSettings(), g->AgreedSettings());
}

}  // namespace
}  // namespace rs::trainer
