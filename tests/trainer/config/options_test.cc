// rs-train must run from the launchers' environment alone, let flags win
// over it, and turn anything malformed into a usage error naming the flag
// or variable.
#include "trainer/config/options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/test_cluster.h"

namespace rs::trainer {
namespace {

class OptionsTest : public ::testing::Test {
 protected:
  StatusOr<TrainOptions> Parse(std::vector<std::string> args, bool gpu_built = false) {
    args.insert(args.begin(), "rs-train");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    const TrainerEnv env = TrainerEnv::FromLookup([this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
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
          {"REDUCER_OP_TIMEOUT_MS", "5000"}};
  auto o = Parse({"--rank", "3", "--reducers", "127.0.0.1:1,127.0.0.1:2", "--timeout", "2m", "--steps", "7"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->rank, 3u);
  EXPECT_EQ(o->reducers.size(), 2u);
  EXPECT_EQ(o->streams, 3);                                      // from the environment
  EXPECT_EQ(o->op_timeout, std::chrono::milliseconds(120'000));  // the flag
  EXPECT_EQ(o->steps, 7u);
}

TEST_F(OptionsTest, MalformedEnvironmentNamesTheVariable) {
  env_ = {{"RANK", "two"}, {"WORLD_SIZE", "4"}, {"REDUCER_ADDRS", "10.0.0.5:7450"}};
  EXPECT_EQ(UsageError({}), "RANK='two' is not an integer");
  env_ = {{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"REDUCER_ADDRS", "10.0.0.5:7450"}};
  EXPECT_EQ(UsageError({}), "RANK='4' is not below WORLD_SIZE='4'");
  env_ = {{"REDUCER_ADDRS", "10.0.0.5"}};
  EXPECT_NE(UsageError({}).find("REDUCER_ADDRS: reducer address '10.0.0.5' is not HOST:PORT"), std::string::npos);
  env_ = {{"MASTER_ADDR", "x"}};
  EXPECT_NE(UsageError({}).find("MASTER_PORT"), std::string::npos);
  env_ = {{"MASTER_ADDR", "x"}, {"MASTER_PORT", "99999"}};
  EXPECT_EQ(UsageError({}), "MASTER_PORT='99999' is outside [1, 65535]");
  env_ = {{"REDUCER_OP_TIMEOUT_MS", "soon"}};
  EXPECT_EQ(UsageError({}), "REDUCER_OP_TIMEOUT_MS='soon' is not an integer");
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
  EXPECT_NE(UsageError({"--timeout", "-3s"}).find("--timeout"), std::string::npos);
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

TEST_F(OptionsTest, AgreedSettingsCoverWhatRanksMustShare) {
  auto a = Parse({"--batch", "8"});
  auto b = Parse({"--batch", "16"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->AgreedSettings(), b->AgreedSettings());
  EXPECT_NE(a->AgreedSettings().find("batch=8\n"), std::string::npos);
  auto c = Parse({"--batch", "8", "--verify"});  // only rank 0 does anything with it
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(a->AgreedSettings(), c->AgreedSettings());
}

}  // namespace
}  // namespace rs::trainer
