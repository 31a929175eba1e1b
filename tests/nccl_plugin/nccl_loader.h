// How NCCL 2.28.9 finds its plugin libraries, reproduced for the stand-in:
// which names it passes to dlopen, in which order, with which flags, and the
// INFO lines it logs on the way. Read from NCCL's sources at tag v2.28.9-1:
//   - src/plugin/plugin_open.cc, openPluginLib: the value as given, else
//     "libnccl-<type>.so"; then "libnccl-<type>-<value>.so" when the value is
//     neither a path (no '/') nor a library name ("lib...so"); each with
//     dlopen(RTLD_NOW | RTLD_LOCAL); a value that is a prefix of
//     "STATIC_PLUGIN" (case-insensitive) opens the executable itself;
//   - src/plugin/net.cc, initPluginLibsOnceFunc: NCCL_NET_PLUGIN is a comma
//     list ("none": no external plugin), at most 14 names of at most 254
//     characters; each entry's library is tried in turn until one has a net
//     table (ncclNetPlugin_v11 ... _v6), ncclNetPluginLoad;
//   - src/plugin/tuner.cc: NCCL_TUNER_PLUGIN's library ("none": no tuner),
//     else the net library, opened again by the name that found it;
//   - NCCL_NET_PLUGIN_REF_COUNT, the count the net library starts with (NCCL
//     unloads it, and forgets its name, when the count returns to 0).
// Environment values are passed in (nullptr: unset), as NCCL reads them at
// its first communicator.
//
// Thread-safety: the functions keep no state; dlopen's own rules apply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rs::plugin::test {

enum class NcclPluginType { kNet, kTuner };

struct NcclLibOpen {
  void* handle = nullptr;          // dlopen's handle (the caller dlcloses), or nullptr
  std::string name;                // the name that opened it (NCCL's libNames[type])
  std::string path;                // its link map name (ncclPluginLibPaths[type])
  std::vector<std::string> tried;  // every name given to dlopen, in order
  std::vector<std::string> info;   // NCCL's INFO lines, as it formats them
};

// openPluginLib(type, lib_name); lib_name may be nullptr.
NcclLibOpen OpenPluginLib(NcclPluginType type, const char* lib_name);

struct NcclNetLoad {
  NcclLibOpen lib;       // the library that has a net table, or no handle
  int net_version = 0;   // the table NCCL takes (11 ... 6), 0 when none
  int coll_version = 0;  // the CollNet table, 0 when none
  std::vector<std::string> tried;  // names tried across all entries
  std::vector<std::string> info;
};

// The external net plugin as NCCL's first communicator loads it, given
// NCCL_NET_PLUGIN's value.
NcclNetLoad LoadNetPlugin(const char* nccl_net_plugin);

// The tuner library given NCCL_TUNER_PLUGIN's value and the loaded net.
NcclLibOpen OpenTunerLib(const char* nccl_tuner_plugin, const NcclNetLoad& net);

// NCCL_NET_PLUGIN_REF_COUNT as NCCL reads it (strtoll base 0; default 0).
int64_t NetPluginRefCount(const char* value);

}  // namespace rs::plugin::test
