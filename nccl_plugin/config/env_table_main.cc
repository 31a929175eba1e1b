// Prints the plugin's environment-variable table from the registry, so the
// documentation (docs/reference/settings.md) is regenerated rather than
// edited by hand:
//   nccl_plugin_env_table > table.md
#include <cstdio>

#include "nccl_plugin/config/env_registry.h"

int main() {
  std::fputs(rs::plugin::EnvMarkdownTable().c_str(), stdout);
  return 0;
}
