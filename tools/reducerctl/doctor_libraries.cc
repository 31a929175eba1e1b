#include "tools/reducerctl/doctor_libraries.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <strings.h>

#include <algorithm>
#include <cstring>

namespace rs::reducerctl {
namespace {

// Newer than any NCCL known today, so a future table still shows up.
constexpr int kNewestTableScanned = 16;

bool StartsWith(const std::string& s, const std::string& head) { return s.rfind(head, 0) == 0; }
bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool EqualsIgnoringCase(const std::string& a, const char* b) { return ::strcasecmp(a.c_str(), b) == 0; }

// A plugin's short name ("reducer"), not a path or a library file name:
// NCCL then builds libnccl-<type>-<name>.so from it.
bool IsShortName(const std::string& value) {
  return value.find('/') == std::string::npos && !(StartsWith(value, "lib") && EndsWith(value, ".so"));
}

std::vector<int> Exported(const Library& library, const std::string& stem) {
  std::vector<int> versions;
  for (int v = kNewestTableScanned; v >= 1; --v) {
    if (library.Symbol(stem + std::to_string(v)) != nullptr) versions.push_back(v);
  }
  return versions;
}

// The pip wheels' NCCL (nvidia-nccl-cu12 / -cu13), which PyTorch finds
// through its own RPATH rather than the loader's path.
std::vector<std::string> PipNcclCopies() {
  static const char* const kPatterns[] = {
      "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
      "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
      "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
      "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
  };
  std::vector<std::string> found;
  for (const char* pattern : kPatterns) {
    glob_t g{};
    if (::glob(pattern, 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  return found;
}

StatusOr<NcclFound> AskVersion(std::unique_ptr<Library> library) {
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(library->Symbol("ncclGetVersion"));
  if (get == nullptr) {
    return Status(Code::kInvalidArgument, library->path() + " has no ncclGetVersion: not an NCCL library");
  }
  int code = 0;
  const int rc = get(&code);
  if (rc != 0 || code <= 0) {
    return Status(Code::kInvalidArgument, library->path() + ": ncclGetVersion failed (result " +
                                              std::to_string(rc) + ", version " + std::to_string(code) + ")");
  }
  NcclFound found;
  found.code = code;
  found.version = plugin::NcclVersionFromCode(code);
  found.library = std::move(library);
  return found;
}

}  // namespace

Library::Library(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {
  link_map* map = nullptr;
  if (::dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    path_ = map->l_name;
  } else {
    path_ = name_;
  }
}

Library::~Library() { ::dlclose(handle_); }

StatusOr<std::unique_ptr<Library>> Library::Open(const std::string& name) {
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    return Status(Code::kIo, err != nullptr ? err : name + ": cannot be loaded");
  }
  return std::unique_ptr<Library>(new Library(handle, name));
}

void* Library::Symbol(const std::string& symbol) const { return ::dlsym(handle_, symbol.c_str()); }

bool IsNotFound(const Status& open_error) {
  return open_error.message().find("No such file or directory") != std::string::npos;
}

StatusOr<NcclFound> FindNccl(const std::string& path) {
  std::vector<std::string> candidates;
  if (!path.empty()) {
    candidates.push_back(path);
  } else {
    candidates.push_back("libnccl.so.2");
    for (std::string& copy : PipNcclCopies()) candidates.push_back(std::move(copy));
  }
  std::string tried;
  for (const std::string& name : candidates) {
    StatusOr<std::unique_ptr<Library>> library = Library::Open(name);
    if (library.ok()) return AskVersion(std::move(library).value());
    tried += (tried.empty() ? "" : "; ") + (IsNotFound(library.status()) ? name + ": not found" : library.status().message());
  }
  return Status(Code::kInvalidArgument, tried);
}

PluginTables ReadTables(const Library& library) {
  PluginTables t;
  t.net = Exported(library, "ncclNetPlugin_v");
  t.collnet = Exported(library, "ncclCollNetPlugin_v");
  t.tuner = Exported(library, "ncclTunerPlugin_v");
  if (!t.net.empty()) {
    // Every version of the table begins with `const char* name`.
    const auto* table = static_cast<const char* const*>(library.Symbol("ncclNetPlugin_v" + std::to_string(t.net[0])));
    if (table != nullptr && table[0] != nullptr) t.net_name = table[0];
  }
  return t;
}

int NewestAccepted(const std::vector<int>& exported, const plugin::NcclRelease& release) {
  for (int v : exported) {
    if (release.AcceptsNet(v)) return v;
  }
  return 0;
}

NetPluginSearch FindNetPlugin(const plugin::NcclRelease& release, const std::optional<std::string>& nccl_net_plugin) {
  NetPluginSearch out;
  std::vector<std::string> entries;
  if (!nccl_net_plugin.has_value()) {
    entries.push_back("libnccl-net.so");
  } else if (release.net_plugin_list) {
    if (EqualsIgnoringCase(*nccl_net_plugin, "none")) {
      out.problems.push_back("NCCL_NET_PLUGIN=none: NCCL loads no external plugin");
      return out;
    }
    size_t pos = 0;
    while (pos <= nccl_net_plugin->size()) {
      const size_t end = std::min(nccl_net_plugin->find(',', pos), nccl_net_plugin->size());
      if (end > pos) entries.push_back(nccl_net_plugin->substr(pos, end - pos));
      pos = end + 1;
    }
  } else {
    entries.push_back(*nccl_net_plugin);
  }
  for (const std::string& entry : entries) {
    std::vector<std::string> names;
    if (!nccl_net_plugin.has_value()) {
      names.push_back(entry);
    } else {
      if (release.net_plugin_as_given) names.push_back(entry);
      if (!release.net_plugin_as_given || IsShortName(entry)) names.push_back("libnccl-net-" + entry + ".so");
    }
    for (const std::string& name : names) {
      out.tried.push_back(name);
      StatusOr<std::unique_ptr<Library>> library = Library::Open(name);
      if (!library.ok()) {
        out.problems.push_back(IsNotFound(library.status()) ? name + ": not found" : library.status().message());
        continue;
      }
      PluginTables tables = ReadTables(**library);
      if (NewestAccepted(tables.net, release) == 0) {
        out.problems.push_back((*library)->path() + " exports no net table this NCCL accepts (it has " +
                               plugin::TableList(tables.net) + "; NCCL takes " +
                               plugin::TableRange(release.net_newest, release.net_oldest) + ")");
        break;  // NCCL goes on with the next entry, not the next name
      }
      out.library = std::move(library).value();
      out.tables = std::move(tables);
      return out;
    }
  }
  return out;
}

TunerLookup FindTuner(const plugin::NcclRelease& release, const std::optional<std::string>& nccl_tuner_plugin,
                      const Library* net_plugin) {
  TunerLookup out;
  if (release.tuner_search == plugin::TunerSearch::kNone) {
    out.problem = "this NCCL has no tuner interface";
    return out;
  }
  const bool then_net = release.tuner_search == plugin::TunerSearch::kTunerLibraryThenNet;
  std::vector<std::string> names;
  if (nccl_tuner_plugin.has_value()) {
    if (then_net && EqualsIgnoringCase(*nccl_tuner_plugin, "none")) {
      out.problem = "NCCL_TUNER_PLUGIN=none turns NCCL's tuner plugin off";
      return out;
    }
    names.push_back(*nccl_tuner_plugin);
    if (then_net && IsShortName(*nccl_tuner_plugin)) names.push_back("libnccl-tuner-" + *nccl_tuner_plugin + ".so");
  } else if (then_net) {
    // 2.19 - 2.20 open nothing when NCCL_TUNER_PLUGIN is unset (misc/tuner.cc).
    names.push_back("libnccl-tuner.so");
  }
  std::unique_ptr<Library> own;
  for (const std::string& name : names) {
    out.tried.push_back(name);
    StatusOr<std::unique_ptr<Library>> library = Library::Open(name);
    if (library.ok()) {
      own = std::move(library).value();
      break;
    }
  }
  const Library* library = own.get();
  if (library == nullptr && then_net && net_plugin != nullptr) {
    out.tried.push_back(net_plugin->name());
    library = net_plugin;
  }
  if (library == nullptr) {
    std::string tried;
    for (const std::string& name : out.tried) tried += (tried.empty() ? "" : ", ") + name;
    out.problem = tried.empty() ? "NCCL_TUNER_PLUGIN is unset, and this NCCL takes a tuner from no other library"
                                : "no tuner library (tried " + tried + ")";
    return out;
  }
  out.library = library->path();
  out.in_net_plugin = net_plugin != nullptr && library->handle() == net_plugin->handle();
  for (int v : release.tuners) {
    if (library->Symbol("ncclTunerPlugin_v" + std::to_string(v)) != nullptr) {
      out.found = true;
      out.version = v;
      return out;
    }
  }
  out.problem = library->path() + " has none of the tuner tables this NCCL looks up (ncclTunerPlugin " +
                plugin::TableList(release.tuners) + "; it exports " + plugin::TableList(ReadTables(*library).tuner) +
                ")";
  return out;
}

std::vector<std::string> PreloadedNetPlugins(const std::string& ld_preload) {
  std::vector<std::string> found;
  constexpr const char* kSeparators = ": \t\n";
  size_t pos = ld_preload.find_first_not_of(kSeparators);
  while (pos != std::string::npos) {
    const size_t end = ld_preload.find_first_of(kSeparators, pos);
    const std::string entry = ld_preload.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    StatusOr<std::unique_ptr<Library>> library = Library::Open(entry);
    if (library.ok() && !ReadTables(**library).net.empty()) found.push_back(entry);
    pos = end == std::string::npos ? end : ld_preload.find_first_not_of(kSeparators, end);
  }
  return found;
}

}  // namespace rs::reducerctl
