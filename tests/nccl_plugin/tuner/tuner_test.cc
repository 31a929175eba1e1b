// The tuner served from libnccl-net-reducer.so, driven the way NCCL 2.28
// drives it (src/init.cc, src/enqueue.cc): net and CollNet init, tuner init
// per communicator with its rank and node counts, then for each collective
// getCollInfo on NCCL's cost table followed by NCCL's own pick (the smallest
// entry >= 0). Checks the all-reduce sizes at which the pick switches
// between CollNet (the reducers) and NCCL's own algorithms, whatever NCCL's
// own estimates say.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "nccl_plugin/abi/nccl_tuner_abi.h"
#include "tests/nccl_plugin/plugin_harness.h"
#include "tests/support/sizes.h"

namespace rs::plugin::test {
namespace {

using Table = float[abi::kNumAlgorithms][abi::kNumProtocols];
using rs::testing::kGiB;
using rs::testing::kKiB;
using rs::testing::kMiB;

// NCCL's estimates for one size (microseconds), as tuning.cc would give them
// on these links: ring and tree in all protocols, CollNet Chain Simple only.
// `nccl_prefers_collnet` makes NCCL's own model favour CollNet or the ring.
void Unavailable(Table t) {
  for (int a = 0; a < abi::kNumAlgorithms; ++a) {
    for (int p = 0; p < abi::kNumProtocols; ++p) t[a][p] = abi::kAlgoProtoIgnore;
  }
}

void NcclTable(Table t, size_t bytes, bool nccl_prefers_collnet) {
  Unavailable(t);
  const float ring = 30.0f + static_cast<float>(bytes) / 1000.0f;
  for (int p = 0; p < abi::kNumProtocols; ++p) {
    t[abi::kAlgoRing][p] = ring * (p == abi::kProtoSimple ? 1.0f : 1.5f);
    t[abi::kAlgoTree][p] = ring * 1.2f;
  }
  t[abi::kAlgoCollNetChain][abi::kProtoSimple] = ring * (nccl_prefers_collnet ? 0.5f : 2.0f);
}

// NCCL's pick after the tuner (topoGetAlgoInfo): the cheapest entry >= 0.
int Pick(const Table t) {
  int best = -1;
  float min = 3.6e9f;
  for (int a = 0; a < abi::kNumAlgorithms; ++a) {
    for (int p = 0; p < abi::kNumProtocols; ++p) {
      if (t[a][p] >= 0 && t[a][p] < min) {
        min = t[a][p];
        best = a;
      }
    }
  }
  return best;
}

class Communicator {
 public:
  // Loads the plugin with `reducers` reducers configured (never contacted:
  // the tuner only needs the count) and CollNet enabled, and makes one
  // communicator; `max_local_ranks`: the most ranks on one node, as NCCL's
  // NVLink domain info passes it (0: the stand-in passes zeros).
  Communicator(int reducers, size_t nranks, size_t nnodes, int max_local_ranks = 0) {
    std::string addrs;
    for (int i = 0; i < reducers; ++i) addrs += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(7450 + i);
    for (const char* v : {"REDUCER_ADDRS", "CLUSTER_SPEC", "NCCL_SOCKET_IFNAME", "NCCL_COLLNET_NODE_THRESHOLD",
                          "REDUCER_NIC_SPEED"}) {
      ::unsetenv(v);
    }
    if (reducers > 0) ::setenv("REDUCER_ADDRS", addrs.c_str(), 1);
    ::setenv("REDUCER_SOCKET_IFNAME", "lo", 1);
    ::setenv("NCCL_COLLNET_ENABLE", "1", 1);
    std::string error;
    plugin_ = LoadedPlugin::Open(RS_PLUGIN_SO, &error);
    EXPECT_NE(plugin_, nullptr) << error;
    if (!plugin_) return;
    // NCCL: ncclNetInit (net, then CollNet) before the tuner.
    net_ = plugin_->Net(11);
    coll_ = plugin_->Coll(11);
    EXPECT_EQ(net_.init(&TestLogger), abi::Result::kSuccess);
    EXPECT_EQ(coll_.init(&TestLogger, 0xabc), abi::Result::kSuccess);
    abi::PropertiesV11 props{};
    EXPECT_EQ(net_.getProperties(0, &props), abi::Result::kSuccess);
    link_mbps_ = props.speed;
    tuner_ = plugin_->Tuner();
    // NCCL passes its NVLink domain info (we read the most ranks on one
    // node) and its tuner constants (we leave them).
    abi::NvlDomainInfoV5 nvl{static_cast<int>(nnodes), max_local_ranks, max_local_ranks};
    alignas(8) char constants[4096] = {};
    EXPECT_EQ(tuner_->init(&ctx_, 0xabc, nranks, nnodes, &TestLogger, &nvl,
                           reinterpret_cast<abi::TunerConstantsV5*>(constants)),
              abi::Result::kSuccess);
  }
  ~Communicator() {
    if (!plugin_) return;
    EXPECT_EQ(tuner_->finalize(ctx_), abi::Result::kSuccess);
    EXPECT_EQ(coll_.finalize(), abi::Result::kSuccess);
    EXPECT_EQ(net_.finalize(), abi::Result::kSuccess);
    ::unsetenv("REDUCER_ADDRS");
    ::unsetenv("REDUCER_SOCKET_IFNAME");
    ::unsetenv("NCCL_COLLNET_ENABLE");
  }

  // getCollInfo on `t` as enqueue.cc calls it.
  abi::Result GetCollInfo(int coll, size_t bytes, Table t) const {
    int nchannels = 0;
    const abi::Result r = tuner_->getCollInfo(ctx_, coll, bytes, 1, reinterpret_cast<float**>(t),
                                              abi::kNumAlgorithms, abi::kNumProtocols, 0, &nchannels);
    EXPECT_EQ(nchannels, 0);  // channels left to NCCL
    return r;
  }
  // NCCL's pick for an all-reduce of `bytes`.
  int AllReducePick(size_t bytes, bool nccl_prefers_collnet) const {
    Table t;
    NcclTable(t, bytes, nccl_prefers_collnet);
    EXPECT_EQ(GetCollInfo(abi::kFuncAllReduce, bytes, t), abi::Result::kSuccess);
    return Pick(t);
  }
  // The smallest size from which NCCL no longer picks CollNet (bisection
  // over getCollInfo calls), or 0 when it picks CollNet up to `hi`.
  size_t FirstSizeWithoutCollNet(size_t lo, size_t hi) const {
    if (AllReducePick(hi, true) == abi::kAlgoCollNetChain) return 0;
    EXPECT_EQ(AllReducePick(lo, false), abi::kAlgoCollNetChain);
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (AllReducePick(mid, true) == abi::kAlgoCollNetChain ? lo : hi) = mid;
    }
    return hi;
  }

  bool ok() const { return plugin_ != nullptr; }
  int link_mbps() const { return link_mbps_; }

 private:
  std::unique_ptr<LoadedPlugin> plugin_;
  NetApi net_;
  CollApi coll_;
  const abi::TunerV5* tuner_ = nullptr;
  void* ctx_ = nullptr;
  int link_mbps_ = 0;
};

TEST(Tuner, EnoughReducersTakeEveryAllReduceEvenWhereNcclPrefersItsRing) {
  Communicator comm(/*reducers=*/4, /*ranks=*/4, /*nodes=*/4);
  ASSERT_TRUE(comm.ok());
  for (size_t s = 4 * kKiB; s <= kGiB; s *= 4) {
    EXPECT_EQ(comm.AllReducePick(s, /*nccl_prefers_collnet=*/false), abi::kAlgoCollNetChain) << s;
  }
}

TEST(Tuner, TwoNodesOfOneGpuKeepNcclsOwnAlgorithmsEvenWhereNcclPrefersCollNet) {
  Communicator comm(4, 2, 2);
  ASSERT_TRUE(comm.ok());
  for (size_t s = 4 * kKiB; s <= kGiB; s *= 4) {
    EXPECT_EQ(comm.AllReducePick(s, /*nccl_prefers_collnet=*/true), abi::kAlgoRing) << s;
  }
}

TEST(Tuner, TooFewReducersSwitchToNcclWhereTheCostModelSays) {
  // 8 nodes, 2 reducers (docs/performance.md, cost_model.h): the reducers up
  // to S* = (220 B - 32768) / 2.25 bytes, with B the link rate in bytes/us.
  Communicator comm(2, 8, 8);
  ASSERT_TRUE(comm.ok());
  const double bytes_per_us = comm.link_mbps() / 8.0;
  const auto expected = static_cast<size_t>(std::ceil((220 * bytes_per_us - 32768) / 2.25));
  ASSERT_GT(expected, 32 * kKiB) << "link of " << comm.link_mbps() << " Mbit/s: another regime of the model";
  ASSERT_LT(expected, 256 * kKiB) << "link of " << comm.link_mbps() << " Mbit/s: another regime of the model";
  EXPECT_EQ(comm.FirstSizeWithoutCollNet(4 * kKiB, kGiB), expected);
  EXPECT_EQ(comm.AllReducePick(expected - 1, false), abi::kAlgoCollNetChain);
  EXPECT_EQ(comm.AllReducePick(expected, true), abi::kAlgoRing);
  EXPECT_EQ(comm.AllReducePick(64 * kMiB, true), abi::kAlgoRing);
}

TEST(Tuner, LeavesWhatIsNotItsToDecide) {
  Communicator comm(2, 8, 8);
  ASSERT_TRUE(comm.ok());
  // Other collectives: untouched.
  Table t, before;
  NcclTable(t, kMiB, true);
  NcclTable(before, kMiB, true);
  EXPECT_EQ(comm.GetCollInfo(abi::kFuncAllGather, kMiB, t), abi::Result::kSuccess);
  EXPECT_EQ(std::memcmp(t, before, sizeof(t)), 0);
  // CollNet unavailable for this all-reduce (a type or op the reducers do
  // not take, CollNet off): never made available.
  NcclTable(t, kKiB, false);
  t[abi::kAlgoCollNetChain][abi::kProtoSimple] = abi::kAlgoProtoIgnore;
  EXPECT_EQ(comm.GetCollInfo(abi::kFuncAllReduce, kKiB, t), abi::Result::kSuccess);
  EXPECT_EQ(Pick(t), abi::kAlgoRing);
  // NCCL_ALGO=allreduce:collnetchain leaves only CollNet: kept even where the
  // ring would be faster, or NCCL would have no algorithm at all.
  Unavailable(t);
  t[abi::kAlgoCollNetChain][abi::kProtoSimple] = 5000;
  EXPECT_EQ(comm.GetCollInfo(abi::kFuncAllReduce, 64 * kMiB, t), abi::Result::kSuccess);
  EXPECT_EQ(Pick(t), abi::kAlgoCollNetChain);
}

TEST(Tuner, InactiveWithoutReducersOrWithOneNode) {
  for (auto [reducers, nodes] : {std::pair{0, 4}, std::pair{4, 1}}) {
    Communicator comm(reducers, 4, static_cast<size_t>(nodes));
    ASSERT_TRUE(comm.ok());
    // NCCL's own pick stands, whichever it is.
    EXPECT_EQ(comm.AllReducePick(kMiB, true), abi::kAlgoCollNetChain) << reducers << "/" << nodes;
    EXPECT_EQ(comm.AllReducePick(kMiB, false), abi::kAlgoRing) << reducers << "/" << nodes;
  }
}

TEST(Tuner, RefusesAContextThatIsNotOne) {
  Communicator comm(2, 8, 8);
  ASSERT_TRUE(comm.ok());
  std::string error;
  auto plugin = LoadedPlugin::Open(RS_PLUGIN_SO, &error);  // the same loaded library
  ASSERT_NE(plugin, nullptr) << error;
  Table t;
  NcclTable(t, kMiB, true);
  int junk[16] = {};
  int nchannels = 0;
  EXPECT_EQ(plugin->Tuner()->getCollInfo(junk, abi::kFuncAllReduce, kMiB, 1, reinterpret_cast<float**>(t),
                                         abi::kNumAlgorithms, abi::kNumProtocols, 0, &nchannels),
            abi::Result::kInternalError);
}

// "No silent fallback", through the library as NCCL 2.28 drives it: where
// every all-reduce takes NCCL's own algorithm although CollNet is there, the
// plugin says so once per communicator (tuner/collnet_usage.h); where the
// reducers take them, it says nothing. The messages' wording is checked in
// collnet_watch_test.cc.
constexpr int kWatchWindow = 1000;  // CollNetUsage::kCheckAfter

size_t SomeSize(int i) { return size_t{1} << (10 + i % 18); }  // 1 KiB to 128 MiB

TEST(TunerWatch, NoWarningWhileTheReducersTakeTheAllReduces) {
  ResetLogCounts();
  {
    Communicator comm(4, 4, 4, /*max_local_ranks=*/1);
    ASSERT_TRUE(comm.ok());
    for (int i = 0; i < 3 * kWatchWindow; ++i) {
      ASSERT_EQ(comm.AllReducePick(SomeSize(i), false), abi::kAlgoCollNetChain) << i;
    }
  }
  EXPECT_EQ(LogCount(abi::kLogWarn), 0);
}

TEST(TunerWatch, EveryAllReduceToNcclWarnsOnce) {
  // 2 nodes of one GPU: the cost model never prefers the reducers.
  ResetLogCounts();
  {
    Communicator comm(4, 2, 2, 1);
    ASSERT_TRUE(comm.ok());
    for (int i = 0; i < kWatchWindow - 1; ++i) ASSERT_EQ(comm.AllReducePick(SomeSize(i), true), abi::kAlgoRing);
    EXPECT_EQ(LogCount(abi::kLogWarn), 0);
    comm.AllReducePick(kMiB, true);
    EXPECT_EQ(LogCount(abi::kLogWarn), 1);
    for (int i = 0; i < 2 * kWatchWindow; ++i) comm.AllReducePick(SomeSize(i), true);
  }
  EXPECT_EQ(LogCount(abi::kLogWarn), 1);
}

TEST(TunerWatch, CollNetNeverOfferedWarnsOnce) {
  ResetLogCounts();
  {
    Communicator comm(4, 4, 4, 1);
    ASSERT_TRUE(comm.ok());
    for (int i = 0; i < 2 * kWatchWindow; ++i) {
      Table t;
      NcclTable(t, SomeSize(i), true);
      t[abi::kAlgoCollNetChain][abi::kProtoSimple] = abi::kAlgoProtoIgnore;  // CollNet off for this comm
      ASSERT_EQ(comm.GetCollInfo(abi::kFuncAllReduce, SomeSize(i), t), abi::Result::kSuccess);
    }
  }
  EXPECT_EQ(LogCount(abi::kLogWarn), 1);
}

TEST(TunerWatch, AShortCommunicatorIsCheckedWhenNcclFinalizesItsTuner) {
  ResetLogCounts();
  {
    Communicator comm(4, 2, 2, 1);
    ASSERT_TRUE(comm.ok());
    for (int i = 0; i < 10; ++i) comm.AllReducePick(SomeSize(i), true);
    // Other collectives do not count.
    Table t;
    NcclTable(t, kMiB, true);
    EXPECT_EQ(comm.GetCollInfo(abi::kFuncAllGather, kMiB, t), abi::Result::kSuccess);
    EXPECT_EQ(LogCount(abi::kLogWarn), 0);
  }
  EXPECT_EQ(LogCount(abi::kLogWarn), 1);
}

// NCCL 2.28 offers no CollNet with more than 8 ranks on a node; the plugin
// reads that count from the NVLink domain info NCCL passes to tuner init.
TEST(TunerWatch, MoreThanEightRanksOnANodeWarnAtTunerInit) {
  ResetLogCounts();
  { Communicator comm(4, 16, 2, 8); }
  EXPECT_EQ(LogCount(abi::kLogWarn), 0);
  {
    Communicator comm(4, 18, 2, 9);
    EXPECT_EQ(LogCount(abi::kLogWarn), 1);
    // Not watched as well: the warning has said why.
    for (int i = 0; i < kWatchWindow; ++i) comm.AllReducePick(SomeSize(i), true);
  }
  EXPECT_EQ(LogCount(abi::kLogWarn), 1);
}

}  // namespace
}  // namespace rs::plugin::test
