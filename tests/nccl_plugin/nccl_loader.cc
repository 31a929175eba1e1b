#include "tests/nccl_plugin/nccl_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rs::plugin::test {
namespace {

constexpr size_t kMaxStrLen = 255;   // NCCL's MAX_STR_LEN
constexpr int kMaxExternalNets = 14;  // NCCL_NET_MAX_PLUGINS (16) less ib and socket

const char* TypeName(NcclPluginType type) { return type == NcclPluginType::kNet ? "NET" : "TUNER"; }
const char* Prefix(NcclPluginType type) { return type == NcclPluginType::kNet ? "libnccl-net" : "libnccl-tuner"; }

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// tryOpenLib: "not found" (ENOENT) is recognised from dlerror's text.
void* TryOpen(NcclPluginType type, const std::string& name, NcclLibOpen* out, bool* enoent) {
  *enoent = false;
  if (name.empty()) return nullptr;
  out->tried.push_back(name);
  const bool self = ::strncasecmp(name.c_str(), "STATIC_PLUGIN", name.size()) == 0;
  void* handle = ::dlopen(self ? nullptr : name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    const std::string text = std::string(err != nullptr ? err : "").substr(0, kMaxStrLen);
    *enoent = text.find(name) != std::string::npos && text.find("No such file or directory") != std::string::npos;
    if (!*enoent) out->info.push_back(std::string(TypeName(type)) + "/Plugin: " + name + ": " + text);
  }
  return handle;
}

void Opened(void* handle, const std::string& name, NcclLibOpen* out) {
  out->handle = handle;
  out->name = name;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) out->path = map->l_name;
}

template <typename... Versions>
int FirstTable(void* handle, const char* stem, Versions... versions) {
  for (int v : {versions...}) {
    if (::dlsym(handle, (stem + std::to_string(v)).c_str()) != nullptr) return v;
  }
  return 0;
}

}  // namespace

NcclLibOpen OpenPluginLib(NcclPluginType type, const char* lib_name) {
  NcclLibOpen out;
  const bool given = lib_name != nullptr && lib_name[0] != '\0';
  std::string name = given ? std::string(lib_name).substr(0, kMaxStrLen - 1) : std::string(Prefix(type)) + ".so";
  std::string not_found;
  bool enoent = false;
  void* handle = TryOpen(type, name, &out, &enoent);
  if (handle != nullptr) {
    Opened(handle, name, &out);
    return out;
  }
  if (enoent) not_found += " " + name;
  // Not a path, and not a library name ("lib" ... ".so"): the plugin's short name.
  const std::string value = given ? lib_name : "";
  if (given && value.find('/') == std::string::npos && (value.rfind("lib", 0) != 0 || !EndsWith(value, ".so"))) {
    name = (std::string(Prefix(type)) + "-" + value + ".so").substr(0, kMaxStrLen - 1);
    handle = TryOpen(type, name, &out, &enoent);
    if (handle != nullptr) {
      Opened(handle, name, &out);
      return out;
    }
    if (enoent) not_found += " " + name;
  }
  if (!not_found.empty()) out.info.push_back(std::string(TypeName(type)) + "/Plugin: Could not find:" + not_found);
  return out;
}

NcclNetLoad LoadNetPlugin(const char* nccl_net_plugin) {
  NcclNetLoad out;
  std::vector<std::string> entries;
  if (nccl_net_plugin != nullptr) {
    out.info.push_back(std::string("NCCL_NET_PLUGIN set by environment to ") + nccl_net_plugin);
    std::string list = ::strcasecmp(nccl_net_plugin, "none") == 0 ? "" : nccl_net_plugin;
    size_t pos = 0;
    while (pos < list.size()) {  // strtok_r: empty entries vanish
      const size_t end = std::min(list.find(',', pos), list.size());
      if (end > pos) {
        if (static_cast<int>(entries.size()) >= kMaxExternalNets) {
          out.info.push_back("NCCL_NET_PLUGIN list contains more than 13 plugins, ignoring the rest");
          break;
        }
        const std::string entry = list.substr(pos, end - pos);
        if (entry.size() + 1 <= kMaxStrLen) {
          entries.push_back(entry);
        } else {
          out.info.push_back("NCCL_NET_PLUGIN list contains a plugin name " + entry +
                             " longer than 255 characters, ignoring it.");
        }
      }
      pos = end + 1;
    }
  } else {
    entries.push_back("libnccl-net.so");
  }
  for (const std::string& entry : entries) {
    NcclLibOpen lib = OpenPluginLib(NcclPluginType::kNet, entry.c_str());
    out.tried.insert(out.tried.end(), lib.tried.begin(), lib.tried.end());
    out.info.insert(out.info.end(), lib.info.begin(), lib.info.end());
    if (lib.handle == nullptr) continue;
    const std::string shown = lib.path.empty() ? entry : lib.path;
    const int net = FirstTable(lib.handle, "ncclNetPlugin_v", 11, 10, 9, 8, 7, 6);
    if (net == 0) {
      out.info.push_back("External network plugin " + shown + " is unsupported");
      ::dlclose(lib.handle);
      continue;
    }
    out.net_version = net;
    out.coll_version = FirstTable(lib.handle, "ncclCollNetPlugin_v", 11, 10, 9, 8, 7, 6);
    out.info.push_back("Successfully loaded external network plugin " + shown);
    out.lib = std::move(lib);
    break;
  }
  return out;
}

NcclLibOpen OpenTunerLib(const char* nccl_tuner_plugin, const NcclNetLoad& net) {
  NcclLibOpen out;
  if (nccl_tuner_plugin != nullptr) {
    out.info.push_back(std::string("NCCL_TUNER_PLUGIN set by environment to ") + nccl_tuner_plugin);
    if (::strcasecmp(nccl_tuner_plugin, "none") == 0) return out;
  }
  NcclLibOpen lib = OpenPluginLib(NcclPluginType::kTuner, nccl_tuner_plugin);
  lib.info.insert(lib.info.begin(), out.info.begin(), out.info.end());
  out = std::move(lib);
  if (out.handle == nullptr && !net.lib.name.empty()) {
    // ncclGetNetPluginLib: the net library's name, opened again.
    out.tried.push_back(net.lib.name);
    if (void* handle = ::dlopen(net.lib.name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      out.handle = handle;
      out.name = net.lib.name;
      out.path = net.lib.path;
    }
  }
  return out;
}

int64_t NetPluginRefCount(const char* value) {
  if (value == nullptr || value[0] == '\0') return 0;
  errno = 0;
  const long long parsed = std::strtoll(value, nullptr, 0);
  return errno != 0 ? 0 : parsed;
}

}  // namespace rs::plugin::test
