// What each NCCL release looks for in a plugin library, read in NCCL's
// sources (docs/engineering/nccl-interface.md, "Which tables" and "Tuner"):
// which net and CollNet table versions it accepts, which tuner versions it
// looks up (newest first) and in which library, how it reads
// NCCL_NET_PLUGIN, and which NCCL_ALGO value forces CollNet. Facts only, no
// NCCL types: `reducerctl doctor` judges a training image with them, and the
// plugin can tell what the NCCL that loaded it expects.
//
// Thread-safety: constant data; every function is pure.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace rs::plugin {

struct NcclVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string ToString() const;  // "2.28.9"
};

// ncclGetVersion's code: major * 10000 + minor * 100 + patch from NCCL 2.9,
// major * 1000 + minor * 100 + patch before (NCCL_VERSION_CODE in nccl.h).
NcclVersion NcclVersionFromCode(int code);

// Where NCCL looks for a tuner.
enum class TunerSearch {
  kNone,  // no tuner interface (before 2.19): CollNet only when NCCL_ALGO forces it
  // Only NCCL_TUNER_PLUGIN's library, as given; unset, none (2.19 - 2.20,
  // misc/tuner.cc at v2.19.3-1 and v2.20.5-1).
  kTunerLibraryOnly,
  // NCCL_TUNER_PLUGIN's library ("none": no tuner; a short name also as
  // libnccl-tuner-<name>.so), else libnccl-tuner.so, else the library the
  // net plugin came from (2.21+).
  kTunerLibraryThenNet,
};

struct NcclRelease {
  int first_minor = 0;  // the row covers 2.first_minor ... 2.last_minor
  int last_minor = 0;
  // ncclNetPlugin_vN and ncclCollNetPlugin_vN accepted, each looked up
  // newest first and on its own.
  int net_newest = 0;
  int net_oldest = 0;
  // ncclTunerPlugin_vN looked up, newest first (empty: no tuner interface).
  std::vector<int> tuners;
  TunerSearch tuner_search = TunerSearch::kNone;
  // NCCL_NET_PLUGIN may be a path or a library file name, tried as given
  // before libnccl-net-<value>.so (2.21+); before, only the latter.
  bool net_plugin_as_given = false;
  // NCCL_NET_PLUGIN is a comma list, each entry tried in turn, "none" for
  // no external plugin (read at 2.28.9; older rows take it as one name).
  bool net_plugin_list = false;
  // NCCL_ALGO may name collectives: "allreduce:collnetchain;broadcast:ring"
  // (2.24+); before, a list ("^" first to exclude) for all of them.
  bool algo_per_collective = false;
  // The names NCCL_ALGO gives the CollNet algorithms ("CollNet" on 2.12 -
  // 2.13; "CollNetDirect" and "CollNetChain" from 2.14), compared ignoring case.
  std::vector<std::string> collnet_algos;
  // The NCCL_ALGO value that makes every all-reduce use the reducers.
  std::string force_collnet;

  bool AcceptsNet(int version) const { return version >= net_oldest && version <= net_newest; }
};

// Every release the table knows (2.12 - 2.30), oldest first.
std::span<const NcclRelease> NcclReleases();

// The row for `version`; nullptr when the table does not know the release
// (not 2.x, or outside 2.12 - 2.30).
const NcclRelease* FindNcclRelease(const NcclVersion& version);

// "v7 ... v5", "v1": a list of table versions for messages.
std::string TableRange(int newest, int oldest);
std::string TableList(const std::vector<int>& versions);

}  // namespace rs::plugin
