// LD_PRELOAD as the whole set-up. When this library is preloaded, a load-time
// constructor (preload.cc) fills in the NCCL variables that make NCCL load
// and use it (NCCL_NET_PLUGIN, NCCL_COLLNET_ENABLE, NCCL_NET_PLUGIN_REF_COUNT,
// NCCL_TUNER_PLUGIN)
// where the user has not set them, and keeps a record of what it did for
// the plugin's first init to log. When the library is dlopen'ed (NCCL
// finding it through NCCL_NET_PLUGIN), the constructor does nothing.
//
// Thread-safety: the record is written once by the constructor, before main
// and before any thread exists, and only read afterwards.
#pragma once

namespace rs::plugin::abi {

// The value the constructor gives NCCL_NET_PLUGIN. Not the library's path:
// NCCL 2.12 - 2.20 only try "libnccl-net-<value>.so", which a path breaks.
// "reducer" makes every release (2.21+ after trying "reducer" itself) dlopen
// "libnccl-net-reducer.so", which the dynamic loader matches by soname to the
// library already preloaded, wherever it lies and whatever its file name.
inline constexpr const char* kPreloadNetPluginValue = "reducer";
// The value it gives NCCL_TUNER_PLUGIN: the soname, which every release
// passes to dlopen as is (2.21+ first) and which matches the preloaded library.
inline constexpr const char* kPreloadTunerPluginValue = "libnccl-net-reducer.so";

// Logs, once, at INFO through the plugin's log sink, what the constructor
// set and what it left ("LD_PRELOAD: set NCCL_NET_PLUGIN=reducer, ...;
// left the user's NCCL_COLLNET_ENABLE=0"). Logs nothing when the library was
// not preloaded. Called by InitLibrary after the sink is installed.
void LogPreloadOutcome();

}  // namespace rs::plugin::abi
