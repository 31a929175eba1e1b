// The plugin's environment (Env) read from a map instead of the process's:
// for the tests of the settings the plugin takes from REDUCER_* variables.
#pragma once

#include <map>
#include <string>

#include "nccl_plugin/config/env_registry.h"

namespace rs::plugin {

inline Env EnvOf(const std::map<std::string, std::string>& vars) {
  return Env::FromLookup([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace rs::plugin
