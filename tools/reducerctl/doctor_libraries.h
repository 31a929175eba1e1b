// The libraries `reducerctl doctor` looks at, found and opened the way NCCL
// finds them: NCCL itself (libnccl.so.2, asked for its version), the net
// plugin (NCCL_NET_PLUGIN's rules for the release found; the tables it
// exports) and the tuner (NCCL_TUNER_PLUGIN's library, libnccl-tuner.so,
// then the net plugin's). Every library is opened with RTLD_NOW |
// RTLD_LOCAL as NCCL opens plugins, so what fails to load here fails there.
// The search rules per release are nccl_plugin/nccl_releases.h's.
//
// Thread-safety: the functions keep no state; dlopen's own rules apply.
// A Library is owned by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "nccl_plugin/nccl_releases.h"

namespace rs::reducerctl {

// An open library, closed on destruction.
class Library {
 public:
  // dlopen(name, RTLD_NOW | RTLD_LOCAL); the error is dlerror's text.
  static StatusOr<std::unique_ptr<Library>> Open(const std::string& name);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  void* handle() const { return handle_; }
  const std::string& name() const { return name_; }  // as given to dlopen
  const std::string& path() const { return path_; }  // the file the loader took
  void* Symbol(const std::string& symbol) const;

 private:
  Library(void* handle, std::string name);
  void* handle_;
  std::string name_;
  std::string path_;
};

// dlerror's text said the file does not exist (NCCL keeps quiet about those).
bool IsNotFound(const Status& open_error);

struct NcclFound {
  std::unique_ptr<Library> library;
  plugin::NcclVersion version;
  int code = 0;  // as ncclGetVersion returned it
};

// `path` (--nccl) when given, else libnccl.so.2 on the loader's path, else
// the copy a pip-installed PyTorch brings (nvidia/nccl/lib under the usual
// site-packages folders). kInvalidArgument naming what was tried when none
// loads or ncclGetVersion is missing or fails.
StatusOr<NcclFound> FindNccl(const std::string& path);

// The tables a library exports, each list newest first.
struct PluginTables {
  std::vector<int> net;      // ncclNetPlugin_vN
  std::vector<int> collnet;  // ncclCollNetPlugin_vN
  std::vector<int> tuner;    // ncclTunerPlugin_vN
  std::string net_name;      // the newest net table's name slot ("Reducer" for ours)
};
PluginTables ReadTables(const Library& library);

// The newest version in `exported` that `release` accepts for net and
// CollNet tables; 0 when none.
int NewestAccepted(const std::vector<int>& exported, const plugin::NcclRelease& release);

struct NetPluginSearch {
  std::unique_ptr<Library> library;  // what NCCL takes its net table from, or null
  PluginTables tables;
  std::vector<std::string> tried;  // names given to dlopen, in order
  // Why the others were passed over: load errors, "no table it accepts".
  std::vector<std::string> problems;
};

// NCCL_NET_PLUGIN (nullopt: unset) as `release` reads it: the first library
// that loads and exports a net table the release accepts.
NetPluginSearch FindNetPlugin(const plugin::NcclRelease& release, const std::optional<std::string>& nccl_net_plugin);

struct TunerLookup {
  bool found = false;
  int version = 0;          // the ncclTunerPlugin_vN NCCL takes
  bool in_net_plugin = false;  // from the same library as the net table
  std::string library;      // where it was found or last looked
  std::vector<std::string> tried;
  std::string problem;      // why none was found, for the message
};

// The tuner as `release` finds it, given NCCL_TUNER_PLUGIN and the net
// plugin NCCL loaded (null: none).
TunerLookup FindTuner(const plugin::NcclRelease& release, const std::optional<std::string>& nccl_tuner_plugin,
                      const Library* net_plugin);

// The LD_PRELOAD entries (split as ld.so splits them) that export a net
// table: a preloaded NCCL plugin.
std::vector<std::string> PreloadedNetPlugins(const std::string& ld_preload);

}  // namespace rs::reducerctl
