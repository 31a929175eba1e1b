// `reducerctl doctor` as a user runs it in a training image: the built
// plugin, a stand-in libnccl.so.2 playing an NCCL release, real reducerd
// processes on 127.0.0.1, and nothing else in the environment. Each case
// the issue names gets the right verdict and exit status, and names what to
// change: all well, a wrong token, an unreachable reducer,
// NCCL_COLLNET_ENABLE=0, NCCL 2.27 (tuner or not, as the plugin's exports
// say), no NCCL, LD_PRELOAD as the whole set-up, nccl.conf, no plugin.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <regex>

#include "nccl_plugin/nccl_releases.h"
#include "tests/support/control_helpers.h"
#include "tests/support/sanitizer_preload.h"

namespace rs::testing {
namespace {

const std::string kCtl = std::string(RS_BINARY_DIR) + "/tools/reducerctl/reducerctl";
// The training images' copy: the same doctor without gRPC (doctor_cli.h).
const std::string kDoctor = std::string(RS_BINARY_DIR) + "/tools/reducerctl/reducer-doctor";
constexpr const char* kToken = "doctor-test-token";

class DoctorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    token_file_ = new std::string(WriteTokenFile(kToken));
    reducer_ = new ReducerProcess({"--job-token-file", *token_file_});
  }
  static void TearDownTestSuite() {
    delete reducer_;
    delete token_file_;
  }
  void SetUp() override { ASSERT_TRUE(reducer_->ok()) << reducer_->Log(); }

  std::string Addr() const { return "127.0.0.1:" + std::to_string(reducer_->port()); }

  // A training job's environment that uses the reducers, as a test starts from.
  std::vector<std::string> GoodEnv() const {
    return {"NCCL_NET_PLUGIN=" + std::string(RS_PLUGIN_SO), "NCCL_COLLNET_ENABLE=1", "REDUCER_ADDRS=" + Addr(),
            "REDUCER_JOB_TOKEN_FILE=" + *token_file_, "RS_STAND_IN_NCCL_VERSION=22809"};
  }

  // reducerctl doctor with exactly `env` (env -i), against the stand-in NCCL
  // (reducer-doctor instead with `program` = kDoctor).
  static CommandResult Doctor(const std::vector<std::string>& env, std::vector<std::string> args = {},
                              const std::string& program = kCtl) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=/nonexistent",
                                     "NCCL_CONF_FILE=/nonexistent/nccl.conf"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(program);
    if (program == kCtl) argv.push_back("doctor");
    argv.insert(argv.end(), {"--nccl", RS_STAND_IN_NCCL});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, std::chrono::seconds(30));
  }

  static std::vector<std::string> With(std::vector<std::string> env, const std::string& var) {
    const std::string name = var.substr(0, var.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.rfind(name, 0) == 0; });
    env.push_back(var);
    return env;
  }

  static std::string* token_file_;
  static ReducerProcess* reducer_;
};
std::string* DoctorTest::token_file_ = nullptr;
ReducerProcess* DoctorTest::reducer_ = nullptr;

bool Contains(const CommandResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

TEST_F(DoctorTest, AllWellMeansTheReducersWillBeUsed) {
  const CommandResult r = Doctor(GoodEnv());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(Contains(r, "OK    NCCL: NCCL 2.28.9")) << r.output;
  EXPECT_TRUE(Contains(r, "OK    plugin: ")) << r.output;
  EXPECT_TRUE(Contains(r, "takes ncclNetPlugin_v11 and ncclCollNetPlugin_v11")) << r.output;
  EXPECT_TRUE(Contains(r, "OK    algorithm: NCCL 2.28 asks the plugin's tuner (ncclTunerPlugin_v5)")) << r.output;
  EXPECT_TRUE(Contains(r, "OK    reducer " + Addr() + ": answers and accepts the job token")) << r.output;
  EXPECT_TRUE(Contains(r, "NOTE  nodes: CollNet needs at least 2 nodes")) << r.output;
  EXPECT_FALSE(Contains(r, "FAIL")) << r.output;
  EXPECT_TRUE(Contains(r, "\nreducers: WILL be used\n")) << r.output;

  const CommandResult json = Doctor(GoodEnv(), {"--json"});
  EXPECT_EQ(json.code, 0) << json.output;
  EXPECT_TRUE(Contains(json, "\"will_be_used\":true")) << json.output;
  EXPECT_TRUE(Contains(json, "{\"level\":\"OK\",\"name\":\"reducer " + Addr() + "\"")) << json.output;
}

TEST_F(DoctorTest, AWrongTokenIsNamedWithItsFix) {
  const CommandResult r = Doctor(With(GoodEnv(), "REDUCER_JOB_TOKEN_FILE=" + WriteTokenFile("another-job")));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "FAIL  reducer " + Addr() + ": refused: job token does not match")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: REDUCER_JOB_TOKEN_FILE (or REDUCER_JOB_TOKEN) must hold the same token")) << r.output;
  EXPECT_TRUE(Contains(r, "reducers: will NOT be used: reducer " + Addr())) << r.output;
}

TEST_F(DoctorTest, TlsIsProbedAsTheWorkersSetItAndAMismatchIsNamed) {
  ReducerProcess tls_reducer({"--job-token-file", *token_file_, "--tls", "1"});
  ASSERT_TRUE(tls_reducer.ok()) << tls_reducer.Log();
  const std::string addr = "127.0.0.1:" + std::to_string(tls_reducer.port());
  const std::vector<std::string> env = With(GoodEnv(), "REDUCER_ADDRS=" + addr);
  const CommandResult ok = Doctor(With(env, "REDUCER_TLS=1"));
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_TRUE(Contains(ok, "OK    reducer " + addr + ": answers over TLS (REDUCER_TLS=1) and accepts the job token"))
      << ok.output;

  const CommandResult plain = Doctor(env);
  EXPECT_EQ(plain.code, 1) << plain.output;
  EXPECT_TRUE(Contains(plain, "connected without it: set REDUCER_TLS=1 on every worker")) << plain.output;
  EXPECT_TRUE(Contains(plain, "fix: export REDUCER_TLS=1 (the reducer has --tls)")) << plain.output;

  const CommandResult no_tls = Doctor(With(GoodEnv(), "REDUCER_TLS=1"));  // the plain reducer
  EXPECT_EQ(no_tls.code, 1) << no_tls.output;
  EXPECT_TRUE(Contains(no_tls, "no TLS on its data plane")) << no_tls.output;
  EXPECT_TRUE(Contains(no_tls, "fix: start every reducerd with --tls 1, or unset REDUCER_TLS")) << no_tls.output;
}

TEST_F(DoctorTest, AnUnreachableReducerIsNamedWithinSeconds) {
  const std::string nowhere = "127.0.0.1:" + std::to_string(FreePort());  // bound, then closed
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = Doctor(With(GoodEnv(), "REDUCER_ADDRS=" + Addr() + "," + nowhere));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "OK    reducer " + Addr())) << r.output;
  EXPECT_TRUE(Contains(r, "FAIL  reducer " + nowhere + ": connection refused")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: start reducerd there, or correct REDUCER_ADDRS")) << r.output;
  EXPECT_TRUE(Contains(r, "reducers: will NOT be used: reducer " + nowhere + ": connection refused")) << r.output;
}

TEST_F(DoctorTest, CollNetDisabledIsAFailureWithTheVariable) {
  const CommandResult r = Doctor(With(GoodEnv(), "NCCL_COLLNET_ENABLE=0"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "FAIL  CollNet: NCCL_COLLNET_ENABLE=0 leaves CollNet")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: export NCCL_COLLNET_ENABLE=1")) << r.output;
  EXPECT_TRUE(Contains(r, "reducers: will NOT be used: CollNet:")) << r.output;
}

// NCCL 2.27 finds a tuner in the plugin only if it exports one of the
// versions 2.27 looks up: the expectation follows the facts table and the
// library's real exports.
TEST_F(DoctorTest, Nccl227UsesTheReducersOnlyWithATunerItLooksUp) {
  void* plugin = ::dlopen(RS_PLUGIN_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << ::dlerror();
  int tuner = 0;
  for (int v : plugin::FindNcclRelease(plugin::NcclVersion{2, 27, 5})->tuners) {
    if (tuner == 0 && ::dlsym(plugin, ("ncclTunerPlugin_v" + std::to_string(v)).c_str()) != nullptr) tuner = v;
  }
  ::dlclose(plugin);

  const std::vector<std::string> env = With(GoodEnv(), "RS_STAND_IN_NCCL_VERSION=22705");
  const CommandResult r = Doctor(env);
  EXPECT_TRUE(Contains(r, "OK    NCCL: NCCL 2.27.5")) << r.output;
  EXPECT_TRUE(Contains(r, "takes ncclNetPlugin_v8 and ncclCollNetPlugin_v7")) << r.output;
  if (tuner != 0) {
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(Contains(r, "asks the plugin's tuner (ncclTunerPlugin_v" + std::to_string(tuner) + ")")) << r.output;
  } else {
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(Contains(r, "FAIL  algorithm: NCCL 2.27 finds no tuner")) << r.output;
    EXPECT_TRUE(Contains(r, "NCCL_ALGO=allreduce:collnetchain")) << r.output;
  }
  // Forcing CollNet works on 2.27 whatever the tuner.
  const CommandResult forced = Doctor(With(env, "NCCL_ALGO=allreduce:collnetchain"));
  EXPECT_EQ(forced.code, 0) << forced.output;
  EXPECT_TRUE(Contains(forced, "OK    algorithm: NCCL_ALGO=allreduce:collnetchain sends every all-reduce"))
      << forced.output;
}

// NCCL 2.19 - 2.20 take a plugin by name only, and look for a tuner
// (ncclTunerPlugin_v1) only in NCCL_TUNER_PLUGIN's library.
TEST_F(DoctorTest, Nccl220TakesANameAndATunerOnlyThroughNcclTunerPlugin) {
  const std::string so = RS_PLUGIN_SO;
  const std::vector<std::string> env = With(GoodEnv(), "RS_STAND_IN_NCCL_VERSION=22003");
  CommandResult r = Doctor(env);  // NCCL_NET_PLUGIN is the library's path
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "libnccl-net-" + so + ".so: not found")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: this NCCL takes a plugin name only: export NCCL_NET_PLUGIN=reducer")) << r.output;

  const std::vector<std::string> by_name =
      With(With(env, "NCCL_NET_PLUGIN=reducer"), "LD_LIBRARY_PATH=" + so.substr(0, so.rfind('/')));
  r = Doctor(by_name);
  EXPECT_TRUE(Contains(r, "OK    plugin: " + so + " (NCCL_NET_PLUGIN=reducer)")) << r.output;
  // 2.19 - 2.20 open nothing for a tuner without NCCL_TUNER_PLUGIN (misc/tuner.cc).
  EXPECT_TRUE(Contains(r, "FAIL  algorithm: NCCL 2.20 finds no tuner (NCCL_TUNER_PLUGIN is unset, and this NCCL takes a "
                          "tuner from no other library)"))
      << r.output;

  void* plugin = ::dlopen(RS_PLUGIN_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << ::dlerror();
  const bool v1 = ::dlsym(plugin, "ncclTunerPlugin_v1") != nullptr;
  ::dlclose(plugin);
  r = Doctor(With(by_name, "NCCL_TUNER_PLUGIN=" + so));
  EXPECT_EQ(r.code, v1 ? 0 : 1) << r.output;
  EXPECT_EQ(Contains(r, "OK    algorithm: NCCL 2.20 asks the plugin's tuner (ncclTunerPlugin_v1)"), v1) << r.output;
}

TEST_F(DoctorTest, NoNcclMeansThePluginCannotBeChecked) {
  std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  for (const std::string& e : GoodEnv()) argv.push_back(e);
  argv.insert(argv.end(), {kCtl, "doctor", "--nccl", "/nonexistent/libnccl.so.2"});
  const CommandResult r = RunCommand(argv, std::chrono::seconds(30));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "FAIL  NCCL: no NCCL found (/nonexistent/libnccl.so.2: not found)")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: run this in the training image, or give --nccl PATH")) << r.output;
  EXPECT_TRUE(Contains(r, "OK    plugin: ")) << r.output;  // still looked at
  EXPECT_TRUE(Contains(r, "OK    reducer " + Addr())) << r.output;
  EXPECT_TRUE(Contains(r, "reducers: will NOT be used: NCCL: no NCCL found")) << r.output;
}

// The training image's set-up in one variable: the preloaded plugin fills in
// NCCL_NET_PLUGIN and NCCL_COLLNET_ENABLE (nccl_plugin/abi/preload.h), in
// the doctor's process as in the job's.
TEST_F(DoctorTest, LdPreloadAloneIsEnough) {
  const CommandResult r = Doctor({"LD_PRELOAD=" + rs::testing::PreloadAfterSanitizers(RS_PLUGIN_SO),
                                  "REDUCER_ADDRS=" + Addr(),
                                  "REDUCER_JOB_TOKEN_FILE=" + *token_file_, "RS_STAND_IN_NCCL_VERSION=22809"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(Contains(r, "(NCCL_NET_PLUGIN=reducer, LD_PRELOAD)")) << r.output;
  EXPECT_TRUE(Contains(r, "OK    CollNet: NCCL_COLLNET_ENABLE=1")) << r.output;
}

// NCCL applies nccl.conf where the environment has no value; so does the doctor.
TEST_F(DoctorTest, NcclConfCountsWhereTheEnvironmentIsSilent) {
  std::vector<std::string> env = GoodEnv();
  std::erase(env, "NCCL_COLLNET_ENABLE=1");
  const std::string conf = WriteTokenFile("# the job's NCCL settings\nNCCL_COLLNET_ENABLE=1");  // a small file
  CommandResult r = Doctor(With(env, "NCCL_CONF_FILE=" + conf));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(Contains(r, "OK    CollNet: NCCL_COLLNET_ENABLE=1")) << r.output;
  r = Doctor(With(With(env, "NCCL_CONF_FILE=" + conf), "NCCL_COLLNET_ENABLE=0"));  // the environment wins
  EXPECT_EQ(r.code, 1) << r.output;
}

TEST_F(DoctorTest, NoPluginSaysHowToLoadIt) {
  const CommandResult r = Doctor(With(GoodEnv(), "NCCL_NET_PLUGIN=no-such-plugin"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(Contains(r, "FAIL  plugin: NCCL would load no network plugin (NCCL_NET_PLUGIN=no-such-plugin)"))
      << r.output;
  EXPECT_TRUE(Contains(r, "libnccl-net-no-such-plugin.so: not found")) << r.output;
  EXPECT_TRUE(Contains(r, "fix: export NCCL_NET_PLUGIN=reducer")) << r.output;
}

// reducer-doctor, the training images' program, is the same doctor: the same
// report (but for the probes' milliseconds), JSON and exit status, in every
// verdict; bad flags are usage errors in both.
TEST_F(DoctorTest, ReducerDoctorGivesReducerctlDoctorsReport) {
  const std::regex ms(R"(\(\d+ ms\))");
  const auto same = [&](const std::vector<std::string>& env, const std::vector<std::string>& args) {
    const CommandResult ctl = Doctor(env, args);
    const CommandResult doctor = Doctor(env, args, kDoctor);
    EXPECT_EQ(doctor.code, ctl.code) << doctor.output;
    EXPECT_EQ(std::regex_replace(doctor.output, ms, "(ms)"), std::regex_replace(ctl.output, ms, "(ms)"));
    return doctor;
  };
  EXPECT_EQ(same(GoodEnv(), {}).code, 0);
  EXPECT_EQ(same(GoodEnv(), {"--json"}).code, 0);
  EXPECT_EQ(same(With(GoodEnv(), "NCCL_COLLNET_ENABLE=0"), {}).code, 1);
  EXPECT_EQ(same(With(GoodEnv(), "REDUCER_ADDRS=127.0.0.1:" + std::to_string(FreePort())), {}).code, 1);

  const CommandResult bad = Doctor(GoodEnv(), {"--reducer-timeout", "0s"}, kDoctor);
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_TRUE(Contains(bad, "reducer-doctor: --reducer-timeout: '0s' is not a positive duration")) << bad.output;
  EXPECT_EQ(Doctor(GoodEnv(), {"--no-such-flag"}, kDoctor).code, 2);
}

}  // namespace
}  // namespace rs::testing
