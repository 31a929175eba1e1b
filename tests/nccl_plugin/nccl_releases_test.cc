// The facts table of what each NCCL release looks for in a plugin, against
// the releases the field meets: PyTorch 2.2 - 2.14 ship NCCL 2.19 - 2.30
// (docs/guide/frameworks.md), and `reducerctl doctor` judges their images
// with these rows.
#include "nccl_plugin/nccl_releases.h"

#include <gtest/gtest.h>

namespace rs::plugin {
namespace {

const NcclRelease& Release(int minor) {
  const NcclRelease* r = FindNcclRelease(NcclVersion{2, minor, 0});
  EXPECT_NE(r, nullptr) << "2." << minor;
  static const NcclRelease kNone;
  return r != nullptr ? *r : kNone;
}

TEST(NcclReleasesTest, VersionCodesDecodeAsNcclWritesThem) {
  EXPECT_EQ(NcclVersionFromCode(22809).ToString(), "2.28.9");  // PyTorch 2.11's
  EXPECT_EQ(NcclVersionFromCode(22705).ToString(), "2.27.5");
  EXPECT_EQ(NcclVersionFromCode(23007).ToString(), "2.30.7");
  EXPECT_EQ(NcclVersionFromCode(2804).ToString(), "2.8.4");  // before 2.9: major * 1000
}

TEST(NcclReleasesTest, EveryReleaseFrom212To230HasExactlyOneRow) {
  for (int minor = 12; minor <= 30; ++minor) {
    int rows = 0;
    for (const NcclRelease& r : NcclReleases()) rows += minor >= r.first_minor && minor <= r.last_minor;
    EXPECT_EQ(rows, 1) << "2." << minor;
  }
  EXPECT_EQ(FindNcclRelease(NcclVersion{2, 11, 3}), nullptr);
  EXPECT_EQ(FindNcclRelease(NcclVersion{2, 31, 0}), nullptr);
  EXPECT_EQ(FindNcclRelease(NcclVersion{3, 0, 0}), nullptr);
}

TEST(NcclReleasesTest, NetTablesAcceptedPerRelease) {
  struct Want {
    int minor, newest, oldest;
  };
  for (const Want& w : {Want{19, 7, 5}, Want{20, 8, 5}, Want{23, 8, 5}, Want{24, 9, 5}, Want{25, 9, 5},
                        Want{26, 10, 6}, Want{27, 10, 6}, Want{28, 11, 6}, Want{29, 11, 6}, Want{30, 12, 6}}) {
    EXPECT_EQ(Release(w.minor).net_newest, w.newest) << "2." << w.minor;
    EXPECT_EQ(Release(w.minor).net_oldest, w.oldest) << "2." << w.minor;
  }
  // The tables the plugin exports (net v11, v8, v7; CollNet v11, v7) reach
  // every release from 2.19 on.
  for (int minor = 19; minor <= 30; ++minor) {
    const NcclRelease& r = Release(minor);
    EXPECT_TRUE(r.AcceptsNet(11) || r.AcceptsNet(8) || r.AcceptsNet(7)) << "2." << minor;
    EXPECT_TRUE(r.AcceptsNet(11) || r.AcceptsNet(7)) << "2." << minor;
  }
  EXPECT_FALSE(Release(27).AcceptsNet(11));
  EXPECT_FALSE(Release(26).AcceptsNet(5));
}

TEST(NcclReleasesTest, TunersLookedUpNewestFirstAndWhere) {
  EXPECT_EQ(Release(18).tuners, std::vector<int>{});
  EXPECT_EQ(Release(18).tuner_search, TunerSearch::kNone);
  EXPECT_EQ(Release(19).tuners, std::vector<int>{1});
  EXPECT_EQ(Release(20).tuner_search, TunerSearch::kTunerLibraryOnly);  // NCCL_TUNER_PLUGIN only
  EXPECT_EQ(Release(21).tuners, std::vector<int>{2});
  EXPECT_EQ(Release(21).tuner_search, TunerSearch::kTunerLibraryThenNet);  // then the net plugin's library
  EXPECT_EQ(Release(23).tuners, (std::vector<int>{3, 2}));
  EXPECT_EQ(Release(24).tuners, (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(Release(27).tuners, (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(Release(28).tuners, (std::vector<int>{5, 4, 3, 2}));
  EXPECT_EQ(Release(29).tuners, (std::vector<int>{5, 4, 3, 2}));
  EXPECT_EQ(Release(30).tuners, (std::vector<int>{6, 5, 4, 3, 2}));
}

TEST(NcclReleasesTest, HowNcclAlgoAndNcclNetPluginRead) {
  EXPECT_EQ(Release(13).force_collnet, "CollNet");
  EXPECT_EQ(Release(14).force_collnet, "CollNetChain");
  EXPECT_EQ(Release(18).force_collnet, "CollNetChain");
  EXPECT_EQ(Release(19).force_collnet, "CollNetChain");
  EXPECT_EQ(Release(27).force_collnet, "allreduce:collnetchain");
  EXPECT_FALSE(Release(23).algo_per_collective);
  EXPECT_TRUE(Release(24).algo_per_collective);
  // A path in NCCL_NET_PLUGIN works from 2.21; before, only a name.
  EXPECT_FALSE(Release(20).net_plugin_as_given);
  EXPECT_TRUE(Release(21).net_plugin_as_given);
}

TEST(NcclReleasesTest, TableVersionsReadInMessages) {
  EXPECT_EQ(TableRange(8, 5), "v8 ... v5");
  EXPECT_EQ(TableRange(1, 1), "v1");
  EXPECT_EQ(TableList({5, 4}), "v5 v4");
  EXPECT_EQ(TableList({}), "none");
}

}  // namespace
}  // namespace rs::plugin
