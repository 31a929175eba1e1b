// "No silent fallback" (nccl_plugin/report/collnet_watch.h, tuner/collnet_usage.h):
// each way NCCL leaves the reducers unused without an error gives exactly
// one WARN line naming the fix, and a working set-up gives none. Drives the
// plugin core directly, with the environment as a map and the log captured.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "nccl_plugin/report/collnet_watch.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/plugin.h"
#include "nccl_plugin/report/report.h"
#include "nccl_plugin/tuner/collnet_usage.h"

namespace rs::plugin {
namespace {

using Route = CollNetUsage::Route;
using Vars = std::map<std::string, std::string>;

std::vector<std::string>* g_watch_warnings = nullptr;
std::vector<std::string>* g_infos = nullptr;
void CaptureWatchWarning(LogLevel level, const char*, int, const char* message) {
  if (level == LogLevel::kWarn && g_watch_warnings != nullptr) g_watch_warnings->emplace_back(message);
  if (level == LogLevel::kInfo && g_infos != nullptr) g_infos->emplace_back(message);
}

// Captures the WARN lines for the test's lifetime.
class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = GetLogSink();
    g_watch_warnings = &warnings_;
    g_infos = &infos_;
    SetLogSink(CaptureWatchWarning);
    SetReportLevel(ReportLevel::kOff);  // the stderr copy is checked on its own (ReportTest)
  }
  void TearDown() override {
    SetLogSink(previous_);
    g_watch_warnings = nullptr;
    g_infos = nullptr;
  }

  // A plugin on loopback with `vars` on top of a working set-up: reducers
  // configured, NCCL_COLLNET_ENABLE=1.
  static std::unique_ptr<Plugin> Make(Vars vars, int nccl_version = 0) {
    vars.emplace("REDUCER_ADDRS", "127.0.0.1:1,127.0.0.1:2");
    vars.emplace("NCCL_COLLNET_ENABLE", "1");
    vars.emplace("REDUCER_SOCKET_IFNAME", "lo");
    for (auto it = vars.begin(); it != vars.end();) it = it->second == "<unset>" ? vars.erase(it) : std::next(it);
    const Env env = Env::FromLookup([vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
    InterfaceCandidate lo;
    lo.name = "lo";
    auto* a = reinterpret_cast<sockaddr_in*>(&lo.addr.storage);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lo.addr.len = sizeof(sockaddr_in);
    lo.up = true;
    lo.loopback = true;
    std::unique_ptr<Plugin> plugin = Plugin::Create(env, {lo}, nccl_version);
    SetReportLevel(ReportLevel::kOff);  // Create set it from REDUCER_LOG
    return plugin;
  }

  // The tuner of one communicator; the test fails where there is none.
  static CollNetTuner* TunerOf(Plugin& plugin, const CommShape& comm) {
    StatusOr<CollNetTuner*> tuner = plugin.CreateTuner(comm);
    EXPECT_TRUE(tuner.ok()) << tuner.status().message();
    return tuner.ok() ? *tuner : nullptr;
  }

  static CommShape Comm(size_t ranks, size_t nodes, int max_local_ranks) {
    static uint64_t next_id = 0x1000;
    return CommShape{next_id++, ranks, nodes, max_local_ranks};
  }

  // The WARN lines that contain `text`.
  int Warnings(const std::string& text) const {
    int n = 0;
    for (const std::string& w : warnings_) n += w.find(text) != std::string::npos;
    return n;
  }
  std::string All() const {
    std::string out;
    for (const std::string& w : warnings_) out += "\n  " + w;
    return out;
  }

  // The INFO lines that contain `text`.
  int Infos(const std::string& text) const {
    int n = 0;
    for (const std::string& i : infos_) n += i.find(text) != std::string::npos;
    return n;
  }

  std::vector<std::string> warnings_;
  std::vector<std::string> infos_;
  LogSink previous_ = nullptr;
};

TEST_F(WatchTest, AWorkingSetupWarnsNothing) {
  std::unique_ptr<Plugin> plugin = Make({});
  CollNetTuner* tuner = TunerOf(*plugin, Comm(16, 2, 8));
  ASSERT_NE(tuner->usage(), nullptr);
  for (int i = 0; i < 3000; ++i) tuner->usage()->Record(size_t{1} << (i % 28), Route::kReducers);
  tuner->usage()->Finish();
  // Some sizes to NCCL's own algorithms, as the cost model decides: fine.
  CollNetTuner* mixed = TunerOf(*plugin, Comm(8, 8, 1));
  for (int i = 0; i < 3000; ++i) {
    mixed->usage()->Record(size_t{1} << (i % 28), i % 2 ? Route::kReducers : Route::kNccl);
  }
  EXPECT_TRUE(warnings_.empty()) << All();
}

TEST_F(WatchTest, NoReducersNoWarningWhateverNcclDoes) {
  std::unique_ptr<Plugin> plugin =
      Make({{"REDUCER_ADDRS", "<unset>"}, {"NCCL_COLLNET_ENABLE", "<unset>"}, {"REDUCER_NIC_SPEED", "100Mbit"}});
  CollNetTuner* tuner = TunerOf(*plugin, Comm(4, 1, 4));
  EXPECT_EQ(tuner->usage(), nullptr);
  TunerOf(*plugin, Comm(32, 2, 16));
  EXPECT_TRUE(warnings_.empty()) << All();
}

// (a) NCCL_COLLNET_ENABLE: unset, 0, or anything strtol does not read as 1.
TEST_F(WatchTest, CollNetNotEnabledWarnsOnceWithTheFix) {
  for (const char* value : {"<unset>", "0", "yes", "2"}) {
    SCOPED_TRACE(value);
    warnings_.clear();
    std::unique_ptr<Plugin> plugin = Make({{"NCCL_COLLNET_ENABLE", value}});
    // Every communicator is then explained: no further warning, nothing watched.
    CollNetTuner* tuner = TunerOf(*plugin, Comm(4, 1, 4));
    EXPECT_EQ(TunerOf(*plugin, Comm(32, 2, 16))->usage(), nullptr);
    EXPECT_EQ(TunerOf(*plugin, Comm(4, 4, 1))->usage(), nullptr);
    EXPECT_EQ(tuner->usage(), nullptr);
    ASSERT_EQ(warnings_.size(), 1u) << All();
    EXPECT_EQ(Warnings("NCCL_COLLNET_ENABLE is "), 1) << All();
    EXPECT_EQ(Warnings("Fix: NCCL_COLLNET_ENABLE=1 on every rank"), 1) << All();
  }
  // NCCL reads it with strtol, base 0: these are 1.
  for (const char* value : {"1", "0x1", " 1"}) {
    warnings_.clear();
    std::unique_ptr<Plugin> plugin = Make({{"NCCL_COLLNET_ENABLE", value}});
    EXPECT_TRUE(warnings_.empty()) << value << All();
  }
}

// (b) Fewer nodes than NCCL_COLLNET_NODE_THRESHOLD.
TEST_F(WatchTest, OneNodeWarnsOnceNamingNcclHostid) {
  std::unique_ptr<Plugin> plugin = Make({});
  EXPECT_EQ(TunerOf(*plugin, Comm(4, 1, 4))->usage(), nullptr);
  TunerOf(*plugin, Comm(2, 1, 2));
  TunerOf(*plugin, Comm(1, 1, 1));
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("has its 4 ranks on 1 node(s), fewer than NCCL_COLLNET_NODE_THRESHOLD=2"), 1) << All();
  EXPECT_EQ(Warnings("give each host its own NCCL_HOSTID"), 1) << All();
}

TEST_F(WatchTest, NodesBelowARaisedThresholdNameTheThreshold) {
  std::unique_ptr<Plugin> plugin = Make({{"NCCL_COLLNET_NODE_THRESHOLD", "4"}});
  EXPECT_EQ(TunerOf(*plugin, Comm(3, 3, 1))->usage(), nullptr);
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("Fix: NCCL_COLLNET_NODE_THRESHOLD=3 or lower"), 1) << All();
  // At the threshold: watched, no warning.
  warnings_.clear();
  EXPECT_NE(TunerOf(*plugin, Comm(4, 4, 1))->usage(), nullptr);
  EXPECT_TRUE(warnings_.empty()) << All();
}

TEST_F(WatchTest, ASubCommunicatorInsideANodeAfterAMultiNodeOneIsNoNews) {
  std::unique_ptr<Plugin> plugin = Make({});
  TunerOf(*plugin, Comm(16, 2, 8));
  TunerOf(*plugin, Comm(8, 1, 8));
  EXPECT_TRUE(warnings_.empty()) << All();
}

// (c) More than 8 ranks on one node: NCCL 2.28 offers no CollNet.
TEST_F(WatchTest, MoreThanEightRanksPerNodeWarnsOnce) {
  std::unique_ptr<Plugin> plugin = Make({});
  EXPECT_NE(TunerOf(*plugin, Comm(16, 2, 8))->usage(), nullptr);  // 8: still CollNet
  EXPECT_TRUE(warnings_.empty()) << All();
  EXPECT_EQ(TunerOf(*plugin, Comm(18, 2, 9))->usage(), nullptr);
  EXPECT_EQ(TunerOf(*plugin, Comm(32, 2, 16))->usage(), nullptr);
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("has 9 ranks on one node (18 ranks on 2 nodes), more than the 8"), 1) << All();
  EXPECT_EQ(Warnings("Fix: at most 8 GPUs per node in a communicator"), 1) << All();
}

TEST_F(WatchTest, WithoutNcclsNodeInfoTheAverageDecides) {
  std::unique_ptr<Plugin> plugin = Make({});
  EXPECT_NE(TunerOf(*plugin, Comm(16, 2, 0))->usage(), nullptr);
  EXPECT_EQ(TunerOf(*plugin, Comm(17, 2, 0))->usage(), nullptr);
  EXPECT_EQ(Warnings("has at least 9 ranks on one node"), 1) << All();
}

// (d) A device reported below 960 Mbit/s: NCCL's graph search finds no
// CollNet channel.
TEST_F(WatchTest, ASlowDeviceWarnsOnceNamingTheSettings) {
  for (const char* speed : {"959Mbit", "100Mbit", "0.5Gbit"}) {
    SCOPED_TRACE(speed);
    warnings_.clear();
    std::unique_ptr<Plugin> plugin = Make({{"REDUCER_NIC_SPEED", speed}});
    EXPECT_EQ(TunerOf(*plugin, Comm(4, 4, 1))->usage(), nullptr);
    TunerOf(*plugin, Comm(4, 1, 4));
    ASSERT_EQ(warnings_.size(), 1u) << All();
    EXPECT_EQ(Warnings("net device 0 (lo) reports"), 1) << All();
    EXPECT_EQ(Warnings("below the 960 Mbit/s NCCL needs for CollNet"), 1) << All();
    EXPECT_EQ(Warnings("REDUCER_SOCKET_IFNAME"), 1) << All();
    EXPECT_EQ(Warnings("REDUCER_NIC_SPEED="), 1) << All();
  }
  warnings_.clear();
  std::unique_ptr<Plugin> plugin = Make({{"REDUCER_NIC_SPEED", "960Mbit"}});
  DeviceProperties props = *plugin->Properties(0);
  EXPECT_EQ(props.speed_mbps, 960);  // what NCCL is told
  EXPECT_TRUE(warnings_.empty()) << All();
}

// (e) CollNet offered, but the tuner sends every all-reduce to NCCL.
TEST_F(WatchTest, NoAllReduceToTheReducersWarnsOnceWithTheSizes) {
  CollNetUsage usage(0xabcdef, 100);
  for (int i = 0; i < 60; ++i) usage.Record(1024, Route::kNccl);
  for (int i = 0; i < 39; ++i) usage.Record(8 << 20, Route::kNccl);
  EXPECT_TRUE(warnings_.empty()) << All();
  usage.Record(300u << 20, Route::kNotOffered);
  for (int i = 0; i < 500; ++i) usage.Record(8 << 20, Route::kNccl);
  usage.Finish();
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("communicator 0000000000abcdef: none of its first 100 all-reduces went to the reducers"), 1)
      << All();
  EXPECT_EQ(Warnings("By size: below 4 KiB: 60 to NCCL's own algorithms; 1 MiB - 16 MiB: 39 to NCCL's own "
                     "algorithms; 256 MiB and up: 1 with CollNet not offered by NCCL."),
            1)
      << All();
  EXPECT_EQ(Warnings("NCCL_ALGO=allreduce:collnetchain"), 1) << All();
  EXPECT_EQ(Warnings("NCCL_COMM_SPLIT_SHARE_RESOURCES=1"), 1) << All();
}

TEST_F(WatchTest, AShortCommunicatorIsCheckedAtItsEnd) {
  CollNetUsage quiet(1, 100);
  quiet.Finish();  // nothing ran: nothing to say
  CollNetUsage served(2, 100);
  served.Record(1, Route::kNccl);
  served.Record(1 << 20, Route::kReducers);
  served.Finish();
  EXPECT_TRUE(warnings_.empty()) << All();
  CollNetUsage unused(3, 100);
  for (int i = 0; i < 7; ++i) unused.Record(64 << 10, Route::kNotOffered);
  unused.Finish();
  unused.Finish();
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("none of its 7 all-reduces went to the reducers. By size: 64 KiB - 1 MiB: 7 with CollNet "
                     "not offered by NCCL."),
            1)
      << All();
  EXPECT_EQ(Warnings("NCCL_ALGO=allreduce:collnetchain"), 0) << All();  // not the tuner's doing
}

// What it does, once per process, from a node head whose CollNet connected.
TEST_F(WatchTest, ANodeHeadSaysWhichReducersCarryWhichSizesOnce) {
  std::unique_ptr<Plugin> plugin = Make({{"REDUCER_ADDRS", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4"}});
  TunerOf(*plugin, Comm(4, 4, 1));
  EXPECT_TRUE(infos_.empty() || Infos("using ") == 0);  // not a head yet: its head says it
  plugin->watch().CollNetConnected();
  TunerOf(*plugin, Comm(4, 4, 1));
  TunerOf(*plugin, Comm(4, 4, 1));
  EXPECT_EQ(Infos("using 4 reducers (127.0.0.1:1, 127.0.0.1:2, 127.0.0.1:3, and 1 more), float32 sums sent as "
                  "float32; communicator"),
            1);
  EXPECT_EQ(Infos("all-reduce through the reducers at every size"), 1);
  EXPECT_EQ(Infos("REDUCER_LOG=warn hides this line"), 1);
  EXPECT_TRUE(warnings_.empty()) << All();
}

// (f) Too few reducers: the model sends large all-reduces to NCCL's ring.
TEST_F(WatchTest, TooFewReducersWarnSayingHowManyWouldCarryEverySize) {
  std::unique_ptr<Plugin> plugin = Make({});  // 2 reducers
  plugin->watch().CollNetConnected();
  TunerOf(*plugin, Comm(4, 4, 1));
  TunerOf(*plugin, Comm(4, 4, 1));
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("4 node(s), 4 rank(s), 2 reducer(s)"), 1) << All();
  EXPECT_EQ(Warnings("NCCL's own algorithms otherwise. Fix: 3 reducers with links as fast as the nodes'"), 1)
      << All();
  EXPECT_EQ(Infos("using "), 0);
}

// (g) CollNet connected, yet no tuner: NCCL never picks CollNet itself.
TEST_F(WatchTest, NoTunerWarnsAtTheFirstTransferWithTheReleasesFix) {
  struct Case {
    int version;
    const char* says;
  };
  for (const Case& c : {Case{22005, "NCCL 2.20.5 takes a tuner only from the library NCCL_TUNER_PLUGIN names. Fix: "
                                    "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so"},
                        Case{22705, "NCCL 2.27.5 loaded no tuner from the plugin"},
                        Case{0, "an unknown NCCL loaded no tuner from the plugin"}}) {
    SCOPED_TRACE(c.version);
    warnings_.clear();
    std::unique_ptr<Plugin> plugin = Make({}, c.version);
    plugin->watch().FirstTransfer();  // no CollNet yet: nothing to say, and the check is spent
    plugin->watch().CollNetConnected();
    plugin->watch().FirstTransfer();
    EXPECT_TRUE(warnings_.empty()) << All();
    std::unique_ptr<Plugin> fresh = Make({}, c.version);
    fresh->watch().CollNetConnected();
    fresh->watch().FirstTransfer();
    fresh->watch().FirstTransfer();
    ASSERT_EQ(warnings_.size(), 1u) << All();
    EXPECT_EQ(Warnings("CollNet is connected to 2 reducers (127.0.0.1:1, 127.0.0.1:2), but NCCL will not choose "
                       "it"),
              1)
        << All();
    EXPECT_EQ(Warnings(c.says), 1) << All();
  }
}

TEST_F(WatchTest, NoTunerIsNoNewsWhereATunerRanOrNcclAlgoForcesCollNet) {
  std::unique_ptr<Plugin> tuned = Make({});
  tuned->watch().CollNetConnected();
  TunerOf(*tuned, Comm(4, 4, 1));
  warnings_.clear();
  tuned->watch().FirstTransfer();
  EXPECT_TRUE(warnings_.empty()) << All();
  std::unique_ptr<Plugin> forced = Make({{"NCCL_ALGO", "allreduce:collnetchain"}});
  forced->watch().CollNetConnected();
  forced->watch().FirstTransfer();
  EXPECT_TRUE(warnings_.empty()) << All();
  EXPECT_EQ(Infos("NCCL_ALGO=allreduce:collnetchain sends every all-reduce NCCL can run on CollNet to them"), 1);
}

TEST_F(WatchTest, NcclAlgoForcingCollNetSaysSoInsteadOfTheModelsView) {
  std::unique_ptr<Plugin> plugin = Make({{"NCCL_ALGO", "CollNetChain,Ring"}});  // 2 reducers: too few
  plugin->watch().CollNetConnected();
  TunerOf(*plugin, Comm(4, 4, 1));
  EXPECT_TRUE(warnings_.empty()) << All();
  EXPECT_EQ(Infos("NCCL_ALGO=CollNetChain,Ring sends every all-reduce NCCL can run on CollNet to them"), 1);
}

TEST_F(WatchTest, AnotherTunerLibraryIsNamed) {
  std::unique_ptr<Plugin> plugin = Make({{"NCCL_TUNER_PLUGIN", "libnccl-tuner-gcp.so"}}, 22809);
  plugin->watch().CollNetConnected();
  plugin->watch().FirstTransfer();
  EXPECT_EQ(Warnings("NCCL_TUNER_PLUGIN=libnccl-tuner-gcp.so gives NCCL another tuner"), 1) << All();
}

// (e) A reducer unreachable: named, with what NCCL does instead.
TEST_F(WatchTest, AConnectFailureWarnsOnceNamingTheReducersAndTheChoice) {
  std::unique_ptr<Plugin> plugin = Make({});
  plugin->watch().ConnectFailed(Status(Code::kIo, "reducer 127.0.0.1:1: Connection refused"));
  plugin->watch().ConnectFailed(Status(Code::kIo, "reducer 127.0.0.1:1: Connection refused"));
  ASSERT_EQ(warnings_.size(), 1u) << All();
  EXPECT_EQ(Warnings("CollNet could not connect to the reducers (2 reducers (127.0.0.1:1, 127.0.0.1:2)): reducer "
                     "127.0.0.1:1: Connection refused. NCCL runs this communicator without CollNet"),
            1)
      << All();
  EXPECT_EQ(Warnings("REDUCER_REQUIRED=1 fails the job instead"), 1) << All();
  EXPECT_TRUE(plugin->watch().required_failure().ok());
}

TEST_F(WatchTest, RequiredTurnsEachCaseIntoAnErrorThatFailsTheNextTuner) {
  std::unique_ptr<Plugin> off = Make({{"REDUCER_REQUIRED", "1"}, {"NCCL_COLLNET_ENABLE", "0"}});
  EXPECT_TRUE(off->watch().failed());
  StatusOr<CollNetTuner*> tuner = off->CreateTuner(Comm(4, 4, 1));
  ASSERT_FALSE(tuner.ok());
  EXPECT_NE(tuner.status().message().find("REDUCER_REQUIRED=1 and the reducers will not be used: NCCL_COLLNET_ENABLE "
                                          "is '0'"),
            std::string::npos)
      << tuner.status().message();
  EXPECT_EQ(Warnings("REDUCER_REQUIRED=1: the job fails."), 1) << All();

  std::unique_ptr<Plugin> unreachable = Make({{"REDUCER_REQUIRED", "1"}});
  EXPECT_FALSE(unreachable->watch().failed());
  EXPECT_TRUE(unreachable->CreateTuner(Comm(4, 1, 4)).ok());  // a communicator inside a node: no failure
  unreachable->watch().ConnectFailed(Status(Code::kIo, "reducer 127.0.0.1:1: Connection refused"));
  EXPECT_TRUE(unreachable->watch().failed());
  EXPECT_FALSE(unreachable->CreateTuner(Comm(4, 4, 1)).ok());
}

TEST(AlgoForcesCollNet, ReadsNcclsSyntax) {
  for (const char* yes : {"CollNetChain", "collnetdirect,ring", "Ring,CollNetChain,Tree", "allreduce:collnetchain",
                          "allgather:ring;allreduce:CollNetChain,ring"}) {
    EXPECT_TRUE(AlgoForcesCollNet(yes)) << yes;
  }
  for (const char* no : {"", "ring", "^collnetchain,collnetdirect", "allreduce:^collnet",
                         "allgather:collnetdirect;allreduce:ring", "Tree"}) {
    EXPECT_FALSE(AlgoForcesCollNet(no)) << no;
  }
}

TEST(Report, StderrGetsOneLineUnlessReducerLogSaysOtherwise) {
  ASSERT_EQ(*ParseReportLevel(""), ReportLevel::kInfo);
  ASSERT_EQ(*ParseReportLevel("WARN"), ReportLevel::kWarn);
  ASSERT_EQ(*ParseReportLevel("off"), ReportLevel::kOff);
  EXPECT_FALSE(ParseReportLevel("loud").ok());
  for (ReportLevel level : {ReportLevel::kInfo, ReportLevel::kWarn, ReportLevel::kOff}) {
    SetReportLevel(level);
    ::testing::internal::CaptureStderr();
    ReportInfo("using 4 reducers");
    ReportWarn("CollNet could not reach the reducers");
    const std::string out = ::testing::internal::GetCapturedStderr();
    const bool info = out.find("]: using 4 reducers\n") != std::string::npos;
    const bool warn = out.find("]: WARNING: CollNet could not reach the reducers\n") != std::string::npos;
    EXPECT_EQ(info, level == ReportLevel::kInfo) << out;
    EXPECT_EQ(warn, level != ReportLevel::kOff) << out;
    if (level != ReportLevel::kOff) {
      EXPECT_EQ(out.rfind("reduction_server[", 0), 0u) << out;
    }
  }
  SetReportLevel(ReportLevel::kInfo);
}

TEST(CollNetUsage, SizeClassesAreFactorsOfSixteenFrom4KiB) {
  EXPECT_EQ(CollNetUsage::SizeClass(0), 0);
  EXPECT_EQ(CollNetUsage::SizeClass(4095), 0);
  EXPECT_EQ(CollNetUsage::SizeClass(4096), 1);
  EXPECT_EQ(CollNetUsage::SizeClass((64 << 10) - 1), 1);
  EXPECT_EQ(CollNetUsage::SizeClass(64 << 10), 2);
  EXPECT_EQ(CollNetUsage::SizeClass(1 << 20), 3);
  EXPECT_EQ(CollNetUsage::SizeClass(16 << 20), 4);
  EXPECT_EQ(CollNetUsage::SizeClass(256 << 20), 5);
  EXPECT_EQ(CollNetUsage::SizeClass(size_t{1} << 40), 5);
}

}  // namespace
}  // namespace rs::plugin
