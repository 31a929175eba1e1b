// The tuner as each NCCL release from 2.19 to 2.30 finds and calls it
// (nccl_releases.h): the library the release opens, the first tuner version
// it looks up, that version's signature and what NCCL does with the answer.
// With enough reducers every release runs a 64 MiB all-reduce on CollNet
// Chain (the reducers) without NCCL_ALGO; with too few, every release leaves
// it to NCCL's own algorithms. Plus what stderr says without NCCL_DEBUG.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "nccl_plugin/abi/nccl_tuner_abi.h"
#include "tests/nccl_plugin/nccl_releases.h"
#include "tests/nccl_plugin/plugin_harness.h"
#include "tests/support/sizes.h"

namespace rs::plugin::test {
namespace {

using rs::testing::kKiB;
using rs::testing::kMiB;

// The plugin loaded as `release` loads it: the net library by its path in
// NCCL_NET_PLUGIN (2.21+ accept one), the tuner library as the release
// opens it; `tuner_env` is NCCL_TUNER_PLUGIN (nullptr: unset).
class ReleaseSetup {
 public:
  ReleaseSetup(const NcclRelease& release, int reducers, const char* tuner_env,
               const char* collnet_enable = "1") {
    std::string addrs;
    for (int i = 0; i < reducers; ++i) addrs += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(7450 + i);
    for (const char* v : {"REDUCER_ADDRS", "CLUSTER_SPEC", "NCCL_ALGO", "NCCL_TUNER_PLUGIN",
                          "REDUCER_NIC_SPEED", "NCCL_COLLNET_NODE_THRESHOLD"}) {
      ::unsetenv(v);
    }
    ::setenv("REDUCER_ADDRS", addrs.c_str(), 1);
    ::setenv("REDUCER_SOCKET_IFNAME", "lo", 1);
    ::setenv("NCCL_COLLNET_ENABLE", collnet_enable, 1);
    std::string error;
    plugin_ = LoadedPlugin::Open(RS_PLUGIN_SO, &error);
    EXPECT_NE(plugin_, nullptr) << error;
    NcclNetLoad net = LoadNetPlugin(RS_PLUGIN_SO);
    EXPECT_NE(net.lib.handle, nullptr);
    tuner_lib_ = OpenTunerLibAt(release, tuner_env, RS_PLUGIN_SO, net);
    if (net.lib.handle != nullptr) ::dlclose(net.lib.handle);
  }
  ~ReleaseSetup() {
    tuner_.reset();
    if (tuner_lib_.handle != nullptr) ::dlclose(tuner_lib_.handle);
    for (const char* v : {"REDUCER_ADDRS", "REDUCER_SOCKET_IFNAME", "NCCL_COLLNET_ENABLE"}) ::unsetenv(v);
  }

  bool found_tuner_lib() const { return tuner_lib_.handle != nullptr; }
  // One communicator's tuner (nullptr with a test failure when none).
  const ReleaseTuner* Tuner(const NcclRelease& release, size_t nranks, size_t nnodes) {
    std::string error;
    tuner_ = ReleaseTuner::Create(release, tuner_lib_.handle, nranks, nnodes, &TestLogger, &error);
    EXPECT_NE(tuner_, nullptr) << release.name << ": " << error;
    return tuner_.get();
  }

 private:
  std::unique_ptr<LoadedPlugin> plugin_;
  NcclLibOpen tuner_lib_;
  std::unique_ptr<ReleaseTuner> tuner_;
};

// 2.19 - 2.20 find a tuner only through NCCL_TUNER_PLUGIN: the path here,
// as the preloaded library's soname would do for a user (preload_test).
const char* TunerEnvFor(const NcclRelease& release) {
  return release.tuner_lib == NcclRelease::TunerLib::kEnvOnly ? RS_PLUGIN_SO : nullptr;
}

TEST(TunerReleases, ExportsEveryTunerVersionNcclLooksUpBut6) {
  std::string error;
  auto plugin = LoadedPlugin::Open(RS_PLUGIN_SO, &error);
  ASSERT_NE(plugin, nullptr) << error;
  for (int v = 1; v <= 5; ++v) {
    EXPECT_NE(plugin->Symbol(("ncclTunerPlugin_v" + std::to_string(v)).c_str()), nullptr) << v;
  }
  // 2.30 looks up v6 first and takes v5 when it is absent (its v5 adapter
  // sets no getChunkSize): v6 would add nothing the reducers use.
  EXPECT_EQ(plugin->Symbol("ncclTunerPlugin_v6"), nullptr);
}

TEST(TunerReleases, EnoughReducersTakeA64MiBAllReduceOnEveryRelease) {
  for (const NcclRelease& release : NcclReleases()) {
    SCOPED_TRACE(release.name);
    ReleaseSetup setup(release, /*reducers=*/4, TunerEnvFor(release));
    ASSERT_TRUE(setup.found_tuner_lib());
    const ReleaseTuner* tuner = setup.Tuner(release, 4, 4);
    ASSERT_NE(tuner, nullptr);
    EXPECT_EQ(tuner->version(), release.tuner_versions.front() == 6 ? 5 : release.tuner_versions.front());
    EXPECT_EQ(tuner->AllReduceAlgorithm(64 * kMiB, true), abi::kAlgoCollNetChain);
    EXPECT_EQ(tuner->AllReduceAlgorithm(256 * kKiB, true), abi::kAlgoCollNetChain);
    // CollNet not supported for this type or op: never chosen.
    EXPECT_EQ(tuner->AllReduceAlgorithm(64 * kMiB, false), abi::kAlgoRing);
  }
}

TEST(TunerReleases, TooFewReducersLeaveLargeAllReducesToNcclOnEveryRelease) {
  for (const NcclRelease& release : NcclReleases()) {
    SCOPED_TRACE(release.name);
    ReleaseSetup setup(release, /*reducers=*/2, TunerEnvFor(release));
    const ReleaseTuner* tuner = setup.Tuner(release, 4, 4);
    ASSERT_NE(tuner, nullptr);
    EXPECT_EQ(tuner->AllReduceAlgorithm(64 * kMiB, true), abi::kAlgoRing);
    // Small ones still go to the reducers (fewer hops).
    EXPECT_EQ(tuner->AllReduceAlgorithm(4 * kKiB, true), abi::kAlgoCollNetChain);
  }
}

TEST(TunerReleases, Nccl219And220FindTheTunerOnlyThroughNcclTunerPlugin) {
  for (const NcclRelease& release : NcclReleases()) {
    if (release.tuner_lib != NcclRelease::TunerLib::kEnvOnly) continue;
    SCOPED_TRACE(release.name);
    ReleaseSetup unset(release, 4, nullptr);
    EXPECT_FALSE(unset.found_tuner_lib());
  }
  // 2.21 on: the net plugin's library serves it without the variable.
  for (const NcclRelease& release : NcclReleases()) {
    if (release.tuner_lib == NcclRelease::TunerLib::kEnvOnly) continue;
    SCOPED_TRACE(release.name);
    ReleaseSetup unset(release, 4, nullptr);
    EXPECT_TRUE(unset.found_tuner_lib());
  }
}

TEST(TunerReleases, BadInputIsAnErrorOrLeftAloneNeverACrash) {
  for (const NcclRelease& release : NcclReleases()) {
    SCOPED_TRACE(release.name);
    ReleaseSetup setup(release, 4, TunerEnvFor(release));
    // Zero nodes and ranks: an inactive tuner, NCCL's own choice.
    const ReleaseTuner* none = setup.Tuner(release, 0, 0);
    ASSERT_NE(none, nullptr);
    EXPECT_EQ(none->AllReduceAlgorithm(64 * kMiB, true), abi::kAlgoRing);
    const ReleaseTuner* tuner = setup.Tuner(release, 4, 4);
    ASSERT_NE(tuner, nullptr);
    float table[abi::kNumAlgorithms * abi::kNumProtocols];
    for (float& c : table) c = 1.0f;
    int algorithm = -1, protocol = -1;
    if (tuner->version() <= 2) {
      // NULL outputs: an error, nothing written.
      EXPECT_NE(tuner->RawGetCollInfo(abi::kFuncAllReduce, kMiB, 1, nullptr, 0, 0, nullptr, &protocol),
                abi::Result::kSuccess);
      EXPECT_NE(tuner->RawGetCollInfo(abi::kFuncAllReduce, kMiB, 1, nullptr, 0, 0, &algorithm, nullptr),
                abi::Result::kSuccess);
      EXPECT_EQ(protocol, -1);
      EXPECT_EQ(algorithm, -1);
    } else {
      // A table of a shape it does not know: left as it is.
      EXPECT_EQ(tuner->RawGetCollInfo(abi::kFuncAllReduce, kMiB, 0, table, 2, abi::kNumProtocols, nullptr, nullptr),
                abi::Result::kSuccess);
      EXPECT_EQ(tuner->RawGetCollInfo(abi::kFuncAllReduce, kMiB, 0, table, abi::kNumAlgorithms, 1, nullptr, nullptr),
                abi::Result::kSuccess);
      for (float c : table) EXPECT_EQ(c, 1.0f);
      // NULL table: an error.
      EXPECT_NE(tuner->RawGetCollInfo(abi::kFuncAllReduce, kMiB, 0, nullptr, abi::kNumAlgorithms,
                                      abi::kNumProtocols, nullptr, nullptr),
                abi::Result::kSuccess);
    }
    // Sizes at the extremes decide without trouble.
    for (size_t bytes : {size_t{0}, size_t{1}, ~size_t{0}}) {
      EXPECT_GE(tuner->AllReduceAlgorithm(bytes, true), 0) << bytes;
    }
  }
}

// What a user sees on stderr with NCCL_DEBUG unset (the stand-in's logger
// prints only WARN lines; the plugin's own stderr line is separate).
std::string StderrOfLoad(const char* reducer_log) {
  const NcclRelease& release = NcclReleases().front();
  ::testing::internal::CaptureStderr();
  {
    if (reducer_log != nullptr) ::setenv("REDUCER_LOG", reducer_log, 1);
    ReleaseSetup setup(release, 4, TunerEnvFor(release), /*collnet_enable=*/"0");
    setup.Tuner(release, 4, 4);
  }
  ::unsetenv("REDUCER_LOG");
  return ::testing::internal::GetCapturedStderr();
}

TEST(TunerReleases, CollNetDisabledIsOneWarningOnStderrAndReducerLogOffSilencesIt) {
  const std::string out = StderrOfLoad(nullptr);
  EXPECT_NE(out.find("reduction_server["), std::string::npos) << out;
  EXPECT_NE(out.find("WARNING: NCCL_COLLNET_ENABLE is '0', not 1"), std::string::npos) << out;
  EXPECT_NE(out.find("Fix: NCCL_COLLNET_ENABLE=1"), std::string::npos) << out;
  const std::string quiet = StderrOfLoad("off");
  EXPECT_EQ(quiet.find("reduction_server["), std::string::npos) << quiet;
}

}  // namespace
}  // namespace rs::plugin::test
