#include "nccl_plugin/nccl_releases.h"

#include <array>

namespace rs::plugin {
namespace {

NcclRelease Row(int first, int last, int net_newest, int net_oldest, std::vector<int> tuners) {
  NcclRelease r;
  r.first_minor = first;
  r.last_minor = last;
  r.net_newest = net_newest;
  r.net_oldest = net_oldest;
  r.tuners = std::move(tuners);
  r.tuner_search = first >= 21   ? TunerSearch::kTunerLibraryThenNet
                   : first >= 19 ? TunerSearch::kTunerLibraryOnly
                                 : TunerSearch::kNone;
  // preload.h: NCCL 2.12 - 2.20 only try "libnccl-net-<value>.so".
  r.net_plugin_as_given = first >= 21;
  r.net_plugin_list = first >= 28;
  r.algo_per_collective = first >= 24;
  if (first <= 13) {
    r.collnet_algos = {"CollNet"};
    r.force_collnet = "CollNet";
  } else {
    r.collnet_algos = {"CollNetDirect", "CollNetChain"};
    r.force_collnet = first >= 24 ? "allreduce:collnetchain" : "CollNetChain";
  }
  return r;
}

// Net tables: nccl-interface.md ("Which tables"; 2.12 looks up v5, v4; 2.13
// - 2.18 v6 ... v4). NCCL_ALGO's names: frameworks.md ("Which NCCL you have"). Tuners: 2.19 - 2.20 v1 only, 2.21 v2, 2.22 - 2.23 v3
// and v2, 2.24 - 2.27 v4 ... v2, 2.28 - 2.29 v5 ... v2, 2.30 v6 ... v2
// (src/misc/tuner.cc, later src/plugin/tuner.cc, at each tag).
const std::array<NcclRelease, 11>& Table() {
  static const std::array<NcclRelease, 11> table = {
      Row(12, 12, 5, 4, {}),
      Row(13, 13, 6, 4, {}),  // NCCL_ALGO's one CollNet algorithm is still "CollNet"
      Row(14, 18, 6, 4, {}),
      Row(19, 19, 7, 5, {1}),
      Row(20, 20, 8, 5, {1}),
      Row(21, 21, 8, 5, {2}),
      Row(22, 23, 8, 5, {3, 2}),
      Row(24, 25, 9, 5, {4, 3, 2}),
      Row(26, 27, 10, 6, {4, 3, 2}),
      Row(28, 29, 11, 6, {5, 4, 3, 2}),
      Row(30, 30, 12, 6, {6, 5, 4, 3, 2}),
  };
  return table;
}

}  // namespace

std::string NcclVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

NcclVersion NcclVersionFromCode(int code) {
  NcclVersion v;
  if (code >= 20900) {
    v.major = code / 10000;
    v.minor = code % 10000 / 100;
    v.patch = code % 100;
  } else {
    v.major = code / 1000;
    v.minor = code % 1000 / 100;
    v.patch = code % 100;
  }
  return v;
}

std::span<const NcclRelease> NcclReleases() {
  return Table();
}

const NcclRelease* FindNcclRelease(const NcclVersion& version) {
  if (version.major != 2) return nullptr;
  for (const NcclRelease& r : NcclReleases()) {
    if (version.minor >= r.first_minor && version.minor <= r.last_minor) return &r;
  }
  return nullptr;
}

std::string TableRange(int newest, int oldest) {
  if (newest == oldest) return "v" + std::to_string(newest);
  return "v" + std::to_string(newest) + " ... v" + std::to_string(oldest);
}

std::string TableList(const std::vector<int>& versions) {
  std::string out;
  for (int v : versions) out += (out.empty() ? "v" : " v") + std::to_string(v);
  return out.empty() ? "none" : out;
}

}  // namespace rs::plugin
