// The doctor's judgements without libraries or reducers: how NCCL_ALGO reads
// per release, when NCCL asks the plugin's tuner, which FAIL decides the
// verdict, and that every problem comes with the setting to change.
#include "tools/reducerctl/doctor_checks.h"

#include <gtest/gtest.h>

namespace rs::reducerctl {
namespace {

const plugin::NcclRelease& Release(int minor) { return *plugin::FindNcclRelease(plugin::NcclVersion{2, minor, 0}); }

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DoctorChecksTest, NcclAlgoBeforeTwoTwentyFourIsOneListForEveryCollective) {
  const auto& r = Release(23);
  EXPECT_TRUE(ReadNcclAlgo("CollNetChain", r).only_collnet);
  EXPECT_TRUE(ReadNcclAlgo("collnetchain", r).only_collnet);  // NCCL ignores case
  const AlgoAllowance some = ReadNcclAlgo("Ring,CollNetChain", r);
  EXPECT_TRUE(some.allows_collnet);
  EXPECT_FALSE(some.only_collnet);  // the tuner still chooses
  EXPECT_FALSE(ReadNcclAlgo("Ring", r).allows_collnet);
  EXPECT_FALSE(ReadNcclAlgo("^CollNetChain,CollNetDirect", r).allows_collnet);
  EXPECT_TRUE(ReadNcclAlgo("^Tree", r).allows_collnet);
  // 2.12 - 2.13 have one CollNet algorithm, named CollNet.
  EXPECT_TRUE(ReadNcclAlgo("CollNet", Release(13)).only_collnet);
  EXPECT_FALSE(ReadNcclAlgo("CollNetChain", Release(13)).allows_collnet);
}

TEST(DoctorChecksTest, NcclAlgoFromTwoTwentyFourNamesCollectives) {
  const auto& r = Release(27);
  EXPECT_TRUE(ReadNcclAlgo("allreduce:collnetchain", r).only_collnet);
  EXPECT_TRUE(ReadNcclAlgo("broadcast:ring;allreduce:collnetchain,ring", r).allows_collnet);
  EXPECT_FALSE(ReadNcclAlgo("broadcast:ring;allreduce:collnetchain,ring", r).only_collnet);
  EXPECT_FALSE(ReadNcclAlgo("allreduce:ring;broadcast:ring", r).allows_collnet);
  // All-reduce not named: NCCL_ALGO leaves it every algorithm.
  const AlgoAllowance untouched = ReadNcclAlgo("broadcast:ring", r);
  EXPECT_TRUE(untouched.allows_collnet);
  EXPECT_FALSE(untouched.only_collnet);
  EXPECT_TRUE(ReadNcclAlgo("CollNetChain", r).only_collnet);  // the old form still reads
}

PluginTables OurTables(std::vector<int> tuners) {
  PluginTables t;
  t.net = {11, 8, 7, 6, 5};
  t.collnet = {11, 7, 6, 5};
  t.tuner = std::move(tuners);
  t.net_name = "Reducer";
  return t;
}

TunerLookup NoTuner(const std::string& why) {
  TunerLookup t;
  t.problem = why;
  return t;
}

TEST(DoctorChecksTest, ThePluginsTunerIsEnough) {
  TunerLookup tuner;
  tuner.found = true;
  tuner.version = 5;
  tuner.in_net_plugin = true;
  const Check c = AlgorithmCheck(NcclSettings{}, {2, 28, 9}, Release(28), tuner, OurTables({5}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kOk) << c.text;
  EXPECT_TRUE(Has(c.text, "ncclTunerPlugin_v5")) << c.text;
}

TEST(DoctorChecksTest, NoTunerForThisReleaseSaysWhatToExportOrForce) {
  const Check c = AlgorithmCheck(NcclSettings{}, {2, 27, 5}, Release(27), NoTuner("no v4"), OurTables({5}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.text, "never chooses CollNet")) << c.text;
  EXPECT_TRUE(Has(c.fix, "ncclTunerPlugin_v4")) << c.fix;
  EXPECT_TRUE(Has(c.fix, "NCCL_ALGO=allreduce:collnetchain")) << c.fix;
}

TEST(DoctorChecksTest, TwoTwentyLooksForATunerOnlyWhereNcclTunerPluginSays) {
  const Check c =
      AlgorithmCheck(NcclSettings{}, {2, 20, 5}, Release(20), NoTuner("no libnccl-tuner.so"), OurTables({5, 1}),
                     "/opt/reducer/lib/libnccl-net-reducer.so");
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.fix, "NCCL_TUNER_PLUGIN=/opt/reducer/lib/libnccl-net-reducer.so")) << c.fix;
  EXPECT_TRUE(Has(c.fix, "NCCL_ALGO=CollNetChain")) << c.fix;
}

TEST(DoctorChecksTest, AnotherLibrarysTunerIsNotOurs) {
  TunerLookup tuner;
  tuner.found = true;
  tuner.version = 4;
  tuner.library = "/usr/lib/libnccl-tuner.so";
  const Check c = AlgorithmCheck(NcclSettings{}, {2, 27, 5}, Release(27), tuner, OurTables({4}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.text, "/usr/lib/libnccl-tuner.so")) << c.text;
}

TEST(DoctorChecksTest, NcclAlgoDecidesBeforeTheTuner) {
  NcclSettings forced;
  forced.algo = "allreduce:collnetchain";
  Check c = AlgorithmCheck(forced, {2, 27, 5}, Release(27), NoTuner("none"), OurTables({5}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kOk) << c.text;
  NcclSettings ring;
  ring.algo = "Ring";
  c = AlgorithmCheck(ring, {2, 28, 9}, Release(28), NoTuner("none"), OurTables({5}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.text, "NCCL_ALGO=Ring")) << c.text;
  EXPECT_TRUE(Has(c.fix, "NCCL_ALGO=allreduce:collnetchain")) << c.fix;
  // Before 2.19 there is no tuner at all: only NCCL_ALGO brings CollNet.
  c = AlgorithmCheck(NcclSettings{}, {2, 18, 3}, Release(18), NoTuner("none"), OurTables({}), "/p.so");
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.fix, "NCCL_ALGO=CollNetChain")) << c.fix;
}

TEST(DoctorChecksTest, CollNetMustBeEnabled) {
  plugin::NcclCollNetSettings off;
  Check c = CollNetEnableCheck(off);
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.text, "unset")) << c.text;
  EXPECT_EQ(c.fix, "export NCCL_COLLNET_ENABLE=1");
  plugin::NcclCollNetSettings on;
  on.enable_text = "1";
  on.enabled = true;
  EXPECT_EQ(CollNetEnableCheck(on).level, CheckLevel::kOk);
}

TEST(DoctorChecksTest, APluginOfAnotherNameIsNotTheReducers) {
  NetPluginSearch search;
  search.tables = OurTables({5});
  search.tables.net_name = "AWS Libfabric";
  auto library = Library::Open("libc.so.6");  // any library stands for the other plugin
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  search.library = std::move(library).value();
  Check c = PluginCheck(search, NcclSettings{}, Release(28), false);
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.text, "'AWS Libfabric' plugin")) << c.text;
  EXPECT_TRUE(Has(c.fix, "NCCL_NET_PLUGIN=reducer")) << c.fix;
}

TEST(DoctorChecksTest, APathInNcclNetPluginNeedsTwoTwentyOne) {
  NetPluginSearch none;
  none.problems = {"libnccl-net-/opt/reducer/lib/libnccl-net-reducer.so.so: not found"};
  NcclSettings path;
  path.net_plugin = "/opt/reducer/lib/libnccl-net-reducer.so";
  const Check c = PluginCheck(none, path, Release(20), false);
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_TRUE(Has(c.fix, "takes a plugin name only")) << c.fix;
}

TEST(DoctorChecksTest, EachReducerFailureSaysWhatToChange) {
  plugin::CollNetConfig config;
  config.source = "REDUCER_ADDRS";
  const client::Endpoint endpoint{"10.0.0.5", 7450};
  Check c = ReducerCheck(endpoint, Status(Code::kIo, "reducer 10.0.0.5:7450: connection refused"), config);
  EXPECT_EQ(c.level, CheckLevel::kFail);
  EXPECT_EQ(c.name, "reducer 10.0.0.5:7450");
  EXPECT_EQ(c.text, "connection refused");
  EXPECT_TRUE(Has(c.fix, "REDUCER_ADDRS")) << c.fix;
  c = ReducerCheck(endpoint, Status(Code::kAuth, "requires a job token and the worker has none"), config);
  EXPECT_TRUE(Has(c.fix, "REDUCER_JOB_TOKEN_FILE=")) << c.fix;
  config.job_token = "secret";
  c = ReducerCheck(endpoint, Status(Code::kAuth, "refused: job token does not match"), config);
  EXPECT_TRUE(Has(c.fix, "same token")) << c.fix;
  // Accepted without a check while the worker holds a token: a warning, not a failure.
  c = ReducerCheck(endpoint, client::ProbeResult{}, config);
  EXPECT_EQ(c.level, CheckLevel::kWarn);
  EXPECT_TRUE(Has(c.fix, "--job-token-file")) << c.fix;
}

TEST(DoctorChecksTest, TheFirstFailureDecidesAndWarningsDoNot) {
  std::vector<Check> checks = {{CheckLevel::kOk, "plugin", "fine", ""},
                               {CheckLevel::kWarn, "reducer a:1", "no token check", "x"},
                               {CheckLevel::kNote, "nodes", "2", ""}};
  Verdict v = Decide(checks);
  EXPECT_TRUE(v.will_be_used);
  EXPECT_EQ(v.line, "reducers: WILL be used");
  checks.push_back({CheckLevel::kFail, "CollNet", "NCCL_COLLNET_ENABLE=0 leaves CollNet off", "y"});
  checks.push_back({CheckLevel::kFail, "reducer b:2", "connection refused", "z"});
  v = Decide(checks);
  EXPECT_FALSE(v.will_be_used);
  EXPECT_TRUE(Has(v.line, "reducers: will NOT be used: CollNet: NCCL_COLLNET_ENABLE=0")) << v.line;
  EXPECT_TRUE(Has(v.line, "1 more")) << v.line;
}

}  // namespace
}  // namespace rs::reducerctl
